"""simnet calibrate: nccl-tests logs as printed, the fit, and profiles that topologies name."""

import re

import numpy as np
import pytest
import yaml

from simnet import InputError, topology_from_dict
from simnet.io.nccltests import parse_log
from simnet.model.calibration import Calibration, load_calibration, other_hardware
from simnet.run.calibrate import fit, points_of
from simnet.run.simulate import simulate
from simnet.tuning import tables

HEADER = """# nccl-tests version 2.17.6 nccl-headers=22501 nccl-library=22501
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 16777216 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
{devices}#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
"""
FOOTER = """# Out of bounds values : 0 OK
# Avg bus bandwidth    : 1.234
#
# Collective test concluded: all_reduce_perf
"""


def write_log(times: dict[int, float], ranks: int, gpus_per_host: int = 2) -> str:
    """An all_reduce_perf log in the current layout, with the times (us) we choose, of ranks
    ``gpus_per_host`` to a host."""
    devices = "".join(f"#  Rank {r:2d} Group  0 Pid {100 + r:6d} on node{r // gpus_per_host} device "
                      f"{r % gpus_per_host:2d} [0000:0f:00] NVIDIA H100 80GB HBM3\n" for r in range(ranks))
    rows = []
    for size, time in times.items():
        algbw = size / time / 1e3
        busbw = algbw * 2 * (ranks - 1) / ranks
        rows.append(f"{size:12d}  {size // 4:12d}     float     sum      -1  {time:7.2f}  {algbw:6.2f}  {busbw:6.2f}"
                    f"       0  {time * 1.01:7.2f}  {algbw / 1.01:6.2f}  {busbw / 1.01:6.2f}       0")
    return HEADER.format(devices=devices) + "\n".join(rows) + "\n" + FOOTER


def test_the_parser_reads_every_layout_as_printed():
    text = "\n".join([
        "[1,0]<stdout>:#  Rank  0 Group  0 Pid  11 on a device  0 [0x1a] NVIDIA A100-SXM4-40GB",
        "[1,0]<stdout>:#  Rank  1 Group  0 Pid  12 on b device  0 [0x1a] NVIDIA A100-SXM4-40GB",
        "a:12:34 [0] NCCL INFO Channel 00/02 : 0 1",
        "[1,0]<stdout>:        1024           256     float     sum      -1    29.75    0.03    0.06      0    29.45"
        "    0.03    0.07      0",
        "0:     1048576        262144     float     sum      -1    71.93   14.58   27.33    N/A    71.47   14.67   27.51"
        "    N/A",
        "           8             2   float     sum    167.5    0.00    0.00  2e-07    167.1    0.00    0.00  1e-07",
        "           0             0     float     sum      -1     0.10    0.00    0.00      0     0.10    0.00    0.00"
        "      0",
        # kubectl logs --timestamps, and mpirun --timestamp-output (as NVIDIA/nccl #1368 prints it)
        "2025-06-18T10:11:12.123456789Z     2097152        524288     float     sum      -1    80.10   26.18   49.09"
        "      0    79.90   26.25   49.21      0",
        "Thu Jul 18 15:41:05 2024<stdout>:     4194304       1048576     float     sum      -1    120.0   34.95   65.53"
        "      0    119.5   35.10   65.81      0",
    ])
    log = parse_log(text, "mixed.log")
    assert log.ranks == 2
    assert [(r.size_bytes, r.time_us, r.inplace_time_us) for r in log.rows] == [
        (1024, 29.75, 29.45), (1048576, 71.93, 71.47), (8, 167.5, 167.1), (2097152, 80.1, 79.9),
        (4194304, 120.0, 119.5)]  # size 0 rows are dropped
    assert log.rows[0].best_us == 29.45


def test_an_unreadable_row_is_one_line_naming_it():
    text = write_log({1024: 30.0}, 2).replace("float     sum      -1    30.00", "float     sum      -1    fast")
    with pytest.raises(InputError, match=r"x.log:\d+: not an nccl-tests row"):
        parse_log(text, "x.log")
    with pytest.raises(InputError, match="no nccl-tests rows found"):
        parse_log("# nothing here\n", "empty.log")
    # a garbled size is refused like a garbled time, not dropped (the fit would lose a row
    # without a word); a time of zero or below is no measurement
    garbled = write_log({1024: 30.0, 2048: 31.0}, 2).replace("        1024           256", "        10x4           256")
    with pytest.raises(InputError, match=r"x.log:\d+: not an nccl-tests row \(.*'10x4"):
        parse_log(garbled, "x.log")
    for bad in ("-30.00", "0.00"):
        text = write_log({1024: 30.0}, 2).replace("-1    30.00", f"-1    {bad}")
        with pytest.raises(InputError, match=r"x.log:\d+: time: -?0?\S* us is not a time a collective takes"):
            parse_log(text, "x.log")
    # a column gone from a current row (12 fields, its root -1 where the old layout has a time):
    # it was read as the old layout and refused as 'time: -1 us' (fuzz round i #248)
    short = write_log({1024: 30.0}, 2)
    row = next(line for line in short.splitlines() if line.strip().startswith("1024"))
    cut = " ".join(row.split()[:7] + row.split()[8:])  # the out-of-place busbw gone
    with pytest.raises(InputError, match=r"x.log:\d+: a column is missing: the row has the current layout's root"):
        parse_log(short.replace(row, cut), "x.log")
    # a type or reduction nccl-tests has not (common.cu test_typenames, test_opnames) was fitted (round j #265/#266)
    for was, now, says in (("float     sum", "float     xor", "redop: 'xor' is no reduction nccl-tests prints"),
                           ("float     sum", "float128  sum", "type: 'float128' is no type nccl-tests prints")):
        with pytest.raises(InputError, match=rf"x.log:\d+: {says}"):
            parse_log(short.replace(was, now), "x.log")


def _pairs():
    """2 hosts x 2 H100, a 400 Gb/s NIC per GPU: small and quick to simulate."""
    return topology_from_dict({"name": "pairs", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                             "gpus_per_host": 2}})


def test_calibration_recovers_what_logs_were_made_with():
    # a system whose network steps cost 12 us more and whose links run at 80 % of NCCL's
    # figures: its logs on one host (2 ranks) and on both (4 ranks), fitted, predict it within
    # 5 % and give the network step and the rate back (the start-up and in-host step
    # latencies trade against each other: both add to every size of these small rings)
    topo = _pairs()
    truth = Calibration(network_step_latency=12e-6, bandwidth=0.8)
    sizes = [8, 1024, 65536, 2**20, 2**22, 2**24]
    logs = []
    for ranks in (2, 4):
        times = {s: simulate(topo, "auto", s, gpus=ranks, calibration=truth, env={}).time_s * 1e6 for s in sizes}
        logs.append(parse_log(write_log(times, ranks), f"made{ranks}.log"))
    result = fit(topo, points_of(logs, topo))
    assert result.rank_counts == [2, 4] and result.warning is None
    assert result.geomean(result.errors_before) > 0.15
    assert result.geomean(result.errors_after) <= 0.05
    fitted = result.calibration
    assert fitted.network_step_latency == pytest.approx(12e-6, abs=3e-6)
    assert fitted.bandwidth_at(2**22) * fitted.network_bandwidth == pytest.approx(0.8, rel=0.1)


def test_one_rank_count_fits_the_start_up_latency_and_keeps_nccls_steps():
    # every row of a 4-rank log takes the same steps: 12 us more per network step looks the
    # same as 12 us x steps more at the start, so the fit takes the start and leaves the
    # steps at NCCL's figures (fitted freely, a profile from one node count predicted other
    # node counts worse than none did: docs/validation_calibrated.md)
    topo = _pairs()
    truth = Calibration(network_step_latency=12e-6)
    sizes = [8, 1024, 65536, 2**20]
    times = {s: simulate(topo, "auto", s, gpus=4, calibration=truth, env={}).time_s * 1e6 for s in sizes}
    result = fit(topo, points_of([parse_log(write_log(times, 4), "one.log")], topo))
    assert result.warning and result.rank_counts == [4]
    assert result.calibration.intra_step_latency == 0 and result.calibration.network_step_latency == 0
    assert result.calibration.base_latency > 10e-6 and result.geomean(result.errors_after) <= 0.05


def test_rows_of_one_size_fit_the_start_up_latency_and_keep_nccls_rates(tmp_path, cli, root):
    """Fuzz round ay, F1: one 1 MiB row (of the shipped 2-node log) fitted every size's rate
    factor (0.97) and the network's (0.85) beside the start-up latency, which one time cannot
    tell apart, and moved the 1 GiB prediction 21 % off that log's own measured 4.497 ms
    without a word. Rows of one size keep NCCL's rates and say so."""
    log = (root / "validation/logs/h100_ndr_issue309_2node.log").read_text().splitlines()
    header = [line for line in log if line.startswith("#")]
    row = next(line for line in log if line.split()[:1] == ["1048576"])
    (tmp_path / "one.log").write_text("\n".join([*header, row]) + "\n")
    topology = root / "validation/logs/h100_ndr_8node.yaml"
    result = cli("calibrate", tmp_path / "one.log", "-t", topology, "--gpus", "16", "-o", tmp_path / "one.cal.yaml")
    assert result.exit_code == 0, result.stderr
    assert "warning one size: every row moved 1 MiB" in " ".join(result.stdout.split())
    profile = yaml.safe_load((tmp_path / "one.cal.yaml").read_text())
    assert profile["calibration"]["network_bandwidth"] == 1.0
    assert set(profile["calibration"]["bandwidth"].values()) == {1.0}
    assert "network_bandwidth" in profile["fitted"]["held"]
    from simnet import simulate

    measured = 4.497e-3  # the log's own 1 GiB row (out-of-place), which the fit never saw
    calibrated = simulate(topology, "auto", 2**30, gpus=16, calibration=tmp_path / "one.cal.yaml")
    assert abs(calibrated.time_s / measured - 1) < 0.05, calibrated.time_s


def test_a_size_no_row_reaches_is_held_towards_its_default_never_pushed_past_its_neighbour():
    """Rows of 64 MiB to 1 GiB on one host say nothing of the 64 KiB and 1 MiB factors (a
    factor answers only within 16x of its size) nor of the network (there is none). The fit
    minimises |log-time residual|^2 + P |y|^2 + M sum (y[k+1] - y[k])^2 over y = (factor - 1)
    / 0.5 (the prior P towards the defaults, the smoothing M between neighbouring factors).
    Where the residual does not depend on y1 (64 KiB) and y2 (1 MiB), its minimum has
        d/dy1: P y1 + M (y1 - y2) = 0            ->  y1 / y2 = M / (M + P)
        d/dy2: P y2 + M (2 y2 - y1 - y3) = 0     ->  y2 / y3 = M / (M + P + M P / (M + P))
    (y3: 16 MiB, which the 64 MiB row reaches). Both ratios lie in (0, 1): each factor the
    rows miss sits between its default and its neighbour's, nearer the default the further
    it is from the data. With P = 1e-4 and M = 3e-2 they are 0.99668 and 0.99339."""
    from simnet.run import calibrate
    from simnet.run.calibrate import CalibrationPoint

    topo = _pairs()
    truth = Calibration(bandwidth=0.8)
    points = [CalibrationPoint("made.log", 2, s, simulate(topo, "auto", s, gpus=2, calibration=truth, env={}).time_s
                               * 1e6, i) for i, s in enumerate((2**26, 2**28, 2**30))]
    fitted = fit(topo, points).calibration
    assert fitted.network_bandwidth == 1.0
    y1, y2, y3 = ((fitted.bandwidth_at(size) - 1) / 0.5 for size in (2**16, 2**20, 2**24))
    assert y3 < 0  # the data: slower than NCCL's figures
    prior, smooth = calibrate._PRIOR, calibrate._SMOOTH
    assert 0 < y1 / y2 < 1 and 0 < y2 / y3 < 1
    assert y1 / y2 == pytest.approx(smooth / (smooth + prior), abs=2e-4)
    assert y2 / y3 == pytest.approx(smooth / (smooth + prior + smooth * prior / (smooth + prior)), abs=2e-4)


def test_profiles_are_named_by_topologies_and_scenarios(tmp_path, cli):
    profile = tmp_path / "slow.cal.yaml"
    profile.write_text(yaml.safe_dump({"calibration": {"base_latency": "10 us", "bandwidth": 0.5}}))
    topology = tmp_path / "pairs.yaml"
    topology.write_text("name: pairs\ncalibration: slow.cal.yaml\n"
                        "generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, gpus_per_host: 2}\n")
    plain = simulate(_pairs(), "ring", 8)
    slow = simulate(topology, "ring", 8)
    assert 10e-6 <= slow.time_s - plain.time_s <= 10e-6 + 1e-7  # (8 B at half the rate: some ns more)
    assert simulate(topology, "ring", 2**28).time_s > 1.9 * simulate(_pairs(), "ring", 2**28).time_s
    # a calibrated number says so: in the result (and its JSON) and in the table's title;
    # the line-rate model takes no profile and names none
    assert slow.calibration.endswith("slow.cal.yaml") and slow.to_dict()["calibration"] == slow.calibration
    assert plain.calibration is None and "calibration" not in plain.to_dict()
    assert simulate(topology, "ring", 8, model="ideal").calibration is None
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\ntopology: pairs.yaml\nsize: 1 MiB\nalgorithms: [ring]\n")
    shown = cli("run", scenario)
    assert shown.exit_code == 0 and "model nccl, calibrated by " in shown.stdout and "slow.cal.yaml" in shown.stdout
    bad = tmp_path / "bad.cal.yaml"
    bad.write_text("calibration:\n  bandwidth: 7\n")
    with pytest.raises(InputError, match=r"bad.cal.yaml:2: calibration.bandwidth: 7 must be at most 2"):
        load_calibration(bad)


def test_the_cli_fits_and_writes_a_profile(tmp_path, cli):
    topo_file = tmp_path / "pairs.yaml"
    topo_file.write_text("name: pairs\ngenerate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, gpus_per_host: 2}\n")
    log = tmp_path / "mine.log"
    log.write_text(write_log({8: 40.0, 65536: 60.0, 2**20: 120.0}, 4))
    out = tmp_path / "mine.cal.yaml"
    result = cli("calibrate", log, "-t", topo_file, "-o", out, "--plot", tmp_path / "fit.png")
    assert result.exit_code == 0, result.stderr
    assert "geometric mean" in result.stdout and "mine.log:" in result.stdout
    # one log, one rank count: the fit cannot separate a network step from the start-up
    # latency, and the user is told before trusting the profile at another node count
    assert "warning one rank count: every row ran on 4 ranks" in " ".join(result.stdout.split())
    fitted = yaml.safe_load(out.read_text())["fitted"]
    assert fitted["ranks"] == [4] and fitted["held"] == ["intra_step_latency", "network_step_latency"]
    assert "network_step_latency 0 us (held)" in " ".join(result.stdout.split())
    assert load_calibration(out).base_latency != 0
    assert (tmp_path / "fit.png").stat().st_size > 10_000
    # a topology naming a profile: the fit says it starts from NCCL's model without it (fuzz 31e: unsaid)
    (tmp_path / "old.cal.yaml").write_text("calibration:\n  base_latency: 5 us\n")
    topo_file.write_text(topo_file.read_text() + "calibration: old.cal.yaml\n")
    again = cli("calibrate", log, "-t", topo_file, "-o", tmp_path / "again.cal.yaml")
    assert again.exit_code == 0 and f"names the profile {tmp_path / 'old.cal.yaml'}; the fit starts from NCCL's own " \
        "model, without it" in " ".join(again.stdout.split()), again.stdout
    assert "key_unread" not in again.stdout
    # a topology key that built nothing is said, as simnet run says it (round aa F6: unsaid)
    (tmp_path / "spined.yaml").write_text(topo_file.read_text().replace("gpus_per_host: 2}", "gpus_per_host: 2, "
                                                                        "spines: 3}"))
    spined = cli("calibrate", log, "-t", tmp_path / "spined.yaml", "-o", tmp_path / "spined.cal.yaml")
    assert spined.exit_code == 0 and "warning key_unread: generate.spines" in " ".join(spined.stdout.split())
    bad = cli("calibrate", tmp_path / "missing.log", "-t", topo_file)
    assert bad.exit_code == 2 and "cannot read file: No such file or directory" in bad.stderr
    same = cli("calibrate", log, "-t", topo_file, "-o", tmp_path / "x.png", "--plot", tmp_path / "x.png")
    assert same.exit_code == 2 and same.stderr == "--output and --plot must name different files\n"
    assert not (tmp_path / "x.png").exists()


def test_a_profile_names_its_logs_and_topology_from_its_own_folder(tmp_path, cli, monkeypatch):
    """Run from one folder writing the profile into another, the profile's ``fitted`` paths
    lead from the profile to the files (round ac F10: they were the shell's, which moving to
    the profile's folder breaks), as a topology's ``calibration:`` is read."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "pairs.yaml").write_text("name: pairs\ngenerate: {kind: leaf_spine, racks: 1, "
                                                  "hosts_per_rack: 2, gpus_per_host: 2}\n")
    (tmp_path / "data" / "mine.log").write_text(write_log({8: 40.0, 65536: 60.0, 2**20: 120.0}, 4))
    (tmp_path / "profiles").mkdir()
    monkeypatch.chdir(tmp_path)
    result = cli("calibrate", "data/mine.log", "-t", "data/pairs.yaml", "-o", "profiles/mine.cal.yaml")
    assert result.exit_code == 0, result.stderr
    fitted = yaml.safe_load((tmp_path / "profiles" / "mine.cal.yaml").read_text())["fitted"]
    assert fitted["topology"] == "../data/pairs.yaml" and fitted["logs"] == ["../data/mine.log"]
    assert (tmp_path / "profiles" / fitted["logs"][0]).read_text().startswith("#")


def test_logs_without_device_lines_take_their_rank_counts_in_order(tmp_path, cli):
    # rows copied from a thread rarely keep the '#  Rank N' lines: --gpus once per log lets
    # two node counts be fitted together (what separates a step's latency from the start)
    topo_file = tmp_path / "pairs.yaml"
    topo_file.write_text("name: pairs\ngenerate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, gpus_per_host: 2}\n")
    logs = []
    for ranks, times in ((2, {8: 20.0, 2**20: 60.0}), (4, {8: 40.0, 2**20: 120.0})):
        path = tmp_path / f"r{ranks}.log"
        path.write_text("".join(line + "\n" for line in write_log(times, ranks).splitlines() if "Rank" not in line))
        logs.append(path)
    out = tmp_path / "both.cal.yaml"
    result = cli("calibrate", *logs, "-t", topo_file, "--gpus", "2", "--gpus", "4", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert yaml.safe_load(out.read_text())["fitted"]["ranks"] == [2, 4] and "one rank count" not in result.stdout
    wrong = cli("calibrate", *logs, "-t", topo_file, "--gpus", "2", "--gpus", "4", "--gpus", "4", "-o", out)
    assert wrong.exit_code == 2 and wrong.stderr.startswith("--gpus: given 3 times for 2 logs")


@pytest.mark.parametrize("log, system, which", [
    ("xe9680_2node_issue309.log", "h100-2n-ndr-xe9680", "qoofyk, description"),
    ("h100_ndr_issue309_2node.log", "h100-ndr-8nodecluster", "2 of 8 nodes, default"),
    ("h100_ndr_issue309_4node.log", "h100-ndr-8nodecluster", "4 of 8 nodes")])
def test_the_shipped_logs_are_the_rows_the_validation_quotes(root, log, system, which):
    from simnet import load_topology
    from simnet.io.nccltests import read_log
    from tools.validation.validate import load_points

    shipped = {r.size_bytes: r.best_us for r in read_log(root / "validation/logs" / log).rows}
    quoted = {p.size_bytes: p.time_us for p in load_points() if p.system == system and which in p.source}
    common = shipped.keys() & quoted.keys()
    assert len(common) >= 5 and {s: shipped[s] for s in common} == {s: quoted[s] for s in common}
    for topology in ("xe9680_2node.yaml", "h100_ndr_8node.yaml"):
        load_topology(root / "validation/logs" / topology)


def test_the_fit_times_what_nccl_ran_under_the_logged_variables(tmp_path, cli):
    """A DGX H100 log made with NCCL_NVLS_ENABLE=0 (as NeMo's recipes run): 64 MiB ran
    without NVLS, so the fit times that, not the NVLS pick; in the environment of `simnet
    calibrate` the variable is read as `simnet run` reads it."""
    topology = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": "h100"}})
    log = parse_log(write_log({2**26: 400.0}, 8, gpus_per_host=8), "box.log")
    points = points_of([log], topology, None)
    assert fit(topology, points, iterations=1).runs[0][0] == "nvls"
    assert fit(topology, points, iterations=1, env={"NCCL_NVLS_ENABLE": "0"}).runs[0][0] in ("ring", "tree")
    path, topo_file = tmp_path / "box.log", tmp_path / "box.yaml"
    path.write_text(write_log({2**26: 400.0}, 8, gpus_per_host=8))
    topo_file.write_text("name: box\ngenerate: {kind: nvswitch, gpus: 8, gpu: h100}\n")
    result = cli("calibrate", path, "-t", topo_file, "-o", tmp_path / "c.yaml", env={"NCCL_NVLS_ENABLE": "0"})
    assert result.exit_code == 0, result.stderr
    assert "nvls" not in result.stdout
    assert yaml.safe_load((tmp_path / "c.yaml").read_text())["fitted"]["nccl_variables"] == {"NCCL_NVLS_ENABLE": "0"}
    bad = cli("calibrate", path, "-t", topo_file, "-o", tmp_path / "d.yaml", env={"NCCL_ALGO": "Butterfly"})
    assert bad.exit_code == 2 and bad.stderr.strip() == ("NCCL_ALGO='Butterfly': unknown name 'Butterfly'; expected "
                                                          + ", ".join(tables.ALGORITHMS))


def test_the_fit_times_each_row_under_every_logged_variable_and_says_those_none_reads():
    """Fuzz round ad F10: the fit picked each row's algorithm under the logged variables but
    timed it without them, so NCCL_MAX_NCHANNELS=2 (a ring of 2 channels, not NCCL's 8) left
    the profile as without it, and a variable no row's decision read was not said. Timed as
    NCCL ran it: the before-fit prediction moves with the channels; said where no row reads it."""
    topology = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": "h100"}})
    points = points_of([parse_log(write_log({2**26: 400.0}, 8, gpus_per_host=8), "box.log")], topology, None)
    plain = fit(topology, points, iterations=1, env={"NCCL_NVLS_ENABLE": "0"})
    narrow = fit(topology, points, iterations=1, env={"NCCL_NVLS_ENABLE": "0", "NCCL_MAX_NCHANNELS": "2"})
    assert narrow.before_us[0] > 1.5 * plain.before_us[0]  # the ring's 8 channels' bandwidth on 2
    assert [w.link for w in narrow.unread] == [] and [w.link for w in plain.unread] == []
    p2p = fit(topology, points, iterations=1, env={"NCCL_NVLS_ENABLE": "0", "NCCL_MIN_P2P_NCHANNELS": "4"})
    assert [w.link for w in p2p.unread] == ["NCCL_MIN_P2P_NCHANNELS"] and p2p.before_us == plain.before_us
    assert "changed nothing in the fit" in p2p.unread[0].message


def test_a_log_of_a_max_on_floats_is_fitted_without_nvls():
    """NVLink SHARP sums floats but takes no max of them (src/include/device.h:587-599
    ncclNvlsSupported, v2.30.7: float and double sum only; 32/64-bit integers, half and bfloat16
    also min and max), so NCCL leaves NVLS out of such an AllReduce's pick (enqueue.cc:426).
    The DGX H100 log of the test above, its 64 MiB row a sum of floats: NCCL ran NVLS; the same
    row a max of floats, or a sum of int8: not NVLS; a max of bfloat16: NVLS again."""
    assert [tables.nvls_reduces(*case) for case in (("float", "sum"), ("float", "max"), ("double", "prod"),
                                                    ("bfloat16", "max"), ("int32", "min"), ("int8", "sum"),
                                                    ("half", "avg"))] == [True, False, False, True, True, False, False]
    topology = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": "h100"}})
    text = write_log({2**26: 400.0}, 8, gpus_per_host=8)
    runs = {}
    for dtype, op in (("float", "sum"), ("float", "max"), ("int8", "sum"), ("bfloat16", "max")):
        values = 2**26 // {"float": 4, "int8": 1, "bfloat16": 2}[dtype]  # the count the size holds
        log = parse_log(text.replace(f"{2**26 // 4:12d}     float     sum", f"{values:12d}  {dtype:>8}  {op:>6}"),
                        "box.log")
        assert (log.rows[0].dtype, log.rows[0].op) == (dtype, op)
        runs[dtype, op] = fit(topology, points_of([log], topology, None), iterations=1).runs[0][0]
    assert runs[("float", "sum")] == runs[("bfloat16", "max")] == "nvls"
    assert runs[("float", "max")] in ("ring", "tree") and runs[("int8", "sum")] in ("ring", "tree")


def test_a_log_of_two_tests_is_refused_at_the_second():
    """nccl-tests runs one test a binary; two tables in one file (all_reduce_perf, then
    all_gather_perf) were read as the first alone, the second dropped without a word."""
    two = write_log({2**20: 30.0}, 2) + write_log({2**20: 30.0}, 2).replace("all_reduce_perf", "all_gather_perf")
    second = two.splitlines().index("# Collective test starting: all_gather_perf") + 1
    with pytest.raises(InputError, match=rf"x.log:{second}: a second test, all_gather_perf, after all_reduce_perf "
                                         r"\(line 2\): give each test its own log"):
        parse_log(two, "x.log")


def test_only_allreduce_logs_are_fitted():
    # an all_gather_perf log looks like an AllReduce table: its header names the test, and its
    # rows say redop none; a reduce_perf row names a root. Fitting either as an AllReduce would
    # give link rates above line rate, so calibrate refuses them, naming the line
    topo = _pairs()
    gather = write_log({2**20: 30.0}, 2).replace("all_reduce_perf", "all_gather_perf")
    with pytest.raises(InputError, match=r"ag.log:2: this log is from all_gather_perf;"):
        points_of([parse_log(gather, "ag.log")], topo)
    unnamed = write_log({2**20: 30.0, 2**21: 40.0}, 2).replace("# Collective test starting: all_reduce_perf\n", "")
    rows = unnamed.replace("float     sum      -1    40.00", "float    none      -1    40.00")
    with pytest.raises(InputError, match=r"x.log:\d+: redop none .*: not an all_reduce_perf row"):
        points_of([parse_log(rows, "x.log")], topo)
    rooted = unnamed.replace("float     sum      -1    40.00", "float     sum       0    40.00")
    with pytest.raises(InputError, match=r"x.log:\d+: root 0 \(a rooted collective\)"):
        points_of([parse_log(rooted, "x.log")], topo)
    # --gpus may fill in missing device lines, never contradict them
    with pytest.raises(InputError, match="device lines list 2 ranks, --gpus says 4"):
        points_of([parse_log(write_log({2**20: 30.0}, 2), "x.log")], topo, 4)


def test_a_profile_knows_its_machine_and_a_run_on_another_warns(tmp_path, cli):
    """The profile records the machine of its fit (GPU generation, NVLink, the NIC path and
    transport, not the node count); a run on the same machine with more nodes is quiet, a run
    of an H100 profile on B200s with 200 Gb/s NICs says the corrections may not hold."""
    from simnet.run.simulate import simulate

    topo_file = tmp_path / "pairs.yaml"
    topo_file.write_text("name: pairs\ngenerate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, gpus_per_host: 2}\n")
    log = tmp_path / "mine.log"
    log.write_text(write_log({8: 40.0, 65536: 60.0, 2**20: 120.0}, 4))
    out = tmp_path / "mine.cal.yaml"
    assert cli("calibrate", log, "-t", topo_file, "-o", out).exit_code == 0
    assert yaml.safe_load(out.read_text())["fitted"]["hardware"] == {
        "compute_capability": 90, "nvlink_GBps": 370.8, "nic_GBps": 48.0, "transport": "ib"}
    profile = load_calibration(out)
    more = topology_from_dict({"name": "more", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 4,
                                                            "gpus_per_host": 2}})
    assert not [w for w in simulate(more, "ring", 2**20, calibration=profile).warnings
                if w.kind == "calibration_other_hardware"]
    other = topology_from_dict({"name": "b200", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                             "gpus_per_host": 2, "gpu": "b200",
                                                             "nic_bandwidth": "200 Gb/s"}})
    (warning,) = [w for w in simulate(other, "ring", 2**20, calibration=profile).warnings
                  if w.kind == "calibration_other_hardware"]
    assert "compute_capability 90 there, 100 here" in warning.message and "nic_GBps 48.0 there" in warning.message


def test_an_ideal_run_says_it_left_the_calibration_out():
    # a profile corrects NCCL's model; the line-rate model has nothing for it to correct
    from simnet.run.simulate import simulate

    profile = Calibration(base_latency=5e-6, source="mine.cal.yaml")
    ideal = simulate(_pairs(), "ring", 2**20, model="ideal", calibration=profile)
    assert ideal.calibration is None and ideal.time_s == simulate(_pairs(), "ring", 2**20, model="ideal").time_s
    assert any(w.kind == "calibration_unused" and "mine.cal.yaml refines model: nccl or rccl only" in w.message
               for w in ideal.warnings)
    # fuzz round ak: auto's answer reused the candidate's run, which said it already: said once
    pick = simulate(_pairs(), "auto", 2**16, model="ideal").algorithm
    known = {pick: simulate(_pairs(), pick, 2**16, model="ideal", calibration=profile)}
    auto = simulate(_pairs(), "auto", 2**16, model="ideal", calibration=profile, reuse=known)
    assert [w.kind for w in auto.warnings].count("calibration_unused") == 1


def test_a_saturation_the_calibration_makes_says_so():
    # a profile that finds the network 1.5x NCCL's figure lifts NVLSTree's ceiling until the
    # NVLink ports fill: the port warning then says the fitted rates are in it (the same run
    # uncalibrated warns of nothing)
    from simnet.run.simulate import simulate

    topo = topology_from_dict({"name": "2n", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                          "gpus_per_host": 8}})
    assert not simulate(topo, "nvls_tree", 2**30).warnings
    fitted = simulate(topo, "nvls_tree", 2**30, calibration=Calibration(network_bandwidth=1.5, source="x.cal.yaml"))
    ports = [w for w in fitted.warnings if w.kind == "nic_overload"]
    assert ports and all("the network's 1.50x, links at most at line rate: the saturation is the fit's" in w.message
                         for w in ports)


def test_a_fitted_factor_never_runs_a_link_above_its_line_rate():
    # the parameter server's port is the whole story of its time: NCCL's model runs its PCIe
    # hop at 0.76 of line rate (48 of 63 GB/s), below the 400G NIC's 50 GB/s. A profile can
    # slow the network down (0.5: twice the time), and lift the rates only up to the line
    # rates: then the NIC binds, as in the line-rate model (no software costs, 1e-3 here)
    topo = topology_from_dict({"name": "2n", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                          "gpus_per_host": 2}})
    plain = simulate(topo, "ps", 2**28).time_s
    line_rate = simulate(topo, "ps", 2**28, model="ideal").time_s
    lifted = simulate(topo, "ps", 2**28, calibration=Calibration(bandwidth=1.5, network_bandwidth=1.5,
                                                                 source="up.cal.yaml"))
    faster = lifted.time_s
    slowed = simulate(topo, "ps", 2**28, calibration=Calibration(network_bandwidth=0.5))
    slower = slowed.time_s
    # and the cut is said: the NIC's cable at 1.5 x 1.5 x 400 Gb/s would be 900 Gb/s
    cut = [w for w in lifted.warnings if w.kind == "calibration_capped"]
    assert len(cut) == 1 and "tor0" in cut[0].link and "-nic0" in cut[0].link
    assert "up.cal.yaml's bandwidth 1.5x and network_bandwidth 1.5x at 256 MiB" in cut[0].message
    assert "900 Gb/s against its 400 Gb/s" in cut[0].message and "a link runs at most at line rate" in cut[0].message
    assert not [w for w in slowed.warnings if w.kind == "calibration_capped"]
    # two remote workers push, then pull, 256 MiB each through the server's port
    assert plain == pytest.approx(4 * 2**28 / 48e9, rel=0.01)
    assert faster == pytest.approx(line_rate, rel=3e-3) and line_rate == pytest.approx(4 * 2**28 / 50e9, rel=0.01)
    assert slower == pytest.approx(4 * 2**28 / 25e9, rel=0.01)


def test_a_factor_above_the_wire_on_links_that_never_fill_is_not_said_to_be_cut():
    """Review 84, H1: a factor that would take a link above its line rate is cut only where
    the link fills. A 16 MiB tree over two 8-GPU hosts fills no NIC: 1.5 and 1.9 on the
    network each count in full (faster still at 1.9), and nothing is said of a cut."""
    topo = topology_from_dict({"name": "2n", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                          "gpus_per_host": 8}})
    runs = [simulate(topo, "tree", 2**24, calibration=Calibration(network_bandwidth=f)) for f in (1.0, 1.5, 1.9)]
    assert runs[0].time_s > runs[1].time_s > runs[2].time_s
    assert not any(w.kind == "calibration_capped" for run in runs for w in run.warnings)


# rccl-tests all_reduce_perf on 8x MI300X, one rank per GPU (the ROCm blog on RCCL and xGMI,
# ROCm/rocm-blogs @c263176, as in validation/rccl_tests_public.yaml: the 1 MiB .. 1 GiB out-of-place rows)
MI300X_ROWS = """#  Rank  {r} Group  0 Pid  {p} on node0 device  {r} [0000:{r:02x}:00] AMD Instinct MI300X"""


def _rccl_log(rows: dict[int, float]) -> str:
    devices = "\n".join(MI300X_ROWS.format(r=r, p=100 + r) for r in range(8))
    body = "\n".join(f"{size} {size // 4} float sum -1 {us} {size / us / 1e3:.2f} {size / us / 1e3 * 1.75:.2f} 0 "
                     f"{us} {size / us / 1e3:.2f} {size / us / 1e3 * 1.75:.2f} 0" for size, us in rows.items())
    return f"# Using devices\n{devices}\n{body}\n"


def test_an_rccl_tests_log_fits_the_rccl_model_and_is_refused_on_other_gpus(tmp_path, cli):
    """rccl-tests prints nccl-tests' table with AMD device lines: simnet calibrate reads it and
    fits the RCCL model on an MI300X mesh (the fit is closer to the log than out of the box);
    on an H100 box the same log is refused in one line, naming the device."""
    rows = {2**20: 27.13, 2**24: 148.8, 2**27: 797.4, 2**30: 5971.0}  # us, as the blog prints them
    (tmp_path / "mi300x.log").write_text(_rccl_log(rows))
    (tmp_path / "mesh.yaml").write_text("name: mesh\ngenerate: {kind: full_mesh, gpus: 8, gpu: mi300x}\n")
    (tmp_path / "h100.yaml").write_text("name: box\ngenerate: {kind: nvswitch, gpus: 8, gpu: h100}\n")
    fitted = cli("calibrate", tmp_path / "mi300x.log", "-t", tmp_path / "mesh.yaml", "-o", tmp_path / "m.cal.yaml")
    assert fitted.exit_code == 0, fitted.stderr
    from simnet import load_topology

    mesh = load_topology(tmp_path / "mesh.yaml")

    def error(calibration=None) -> float:  # geometric-mean factor off the log's times (RCCL runs Ring here)
        logs = [np.log(simulate(mesh, "ring", size, calibration=calibration).time_s / (us * 1e-6))
                for size, us in rows.items()]
        return float(np.exp(np.mean(np.abs(logs))))

    assert simulate(mesh, "ring", 2**20).model == "rccl"
    assert error(tmp_path / "m.cal.yaml") < error()
    assert load_calibration(tmp_path / "m.cal.yaml").base_latency != 0.0
    other = cli("calibrate", tmp_path / "mi300x.log", "-t", tmp_path / "h100.yaml", "-o", tmp_path / "h.cal.yaml")
    assert other.exit_code == 2 and "'AMD Instinct MI300X', the topology's GPUs are h100" in other.stderr


def test_the_fit_keeps_every_launch_latency_at_zero_or_above_and_a_profile_below_is_refused(tmp_path):
    """Fuzz leftover: rows faster than NCCL's launch latency allows pushed base_latency to
    -20 us, and the nccl model clamped the launch at 0 without a word (the profile said
    -20 us, the runs took -6.6). The fit's lower bound is now the model's own launch latency
    of what the rows ran; a profile that takes a launch below zero is refused in one line."""
    from simnet.run.calibrate import launch_latencies
    from simnet.run.nccl_env import nccl_system

    topo = _pairs()
    launches = launch_latencies(nccl_system(topo, {}))
    assert launches[("Ring", "LL")] == 6.6 and launches[("NVLSTree", "Simple")] == 0.0  # NVLS launches in no time
    sizes = [8, 1024, 65536]
    times = {s: simulate(topo, "auto", s, gpus=4, env={}).time_s * 1e6 - 15 for s in sizes}
    result = fit(topo, points_of([parse_log(write_log(times, 4), "fast.log")], topo))
    assert result.calibration.base_latency == 0 and "base_latency" in result.at_bound
    for p in result.points:  # the profile it fitted runs every row, auto's every candidate with it
        simulate(topo, "auto", p.size_bytes, gpus=4, env={}, calibration=result.calibration)
    box = topology_from_dict({"name": "pcie", "generate": {"kind": "pcie", "gpus": 4}})
    assert min(launch_latencies(nccl_system(box, {})).values()) == 6.6  # no NVLS: Ring/LL's launch is the least
    times = {s: simulate(box, "auto", s, env={}).time_s * 1e6 - 15 for s in sizes}
    fitted = fit(box, points_of([parse_log(write_log(times, 4, gpus_per_host=4), "box.log")], box)).calibration
    assert -6.6e-6 < fitted.base_latency < -6.5e-6
    for s in sizes:
        simulate(box, "auto", s, env={}, calibration=fitted)
    (tmp_path / "neg.cal.yaml").write_text("calibration:\n  intra_step_latency: 0 us\n  base_latency: -20 us\n")
    with pytest.raises(InputError, match=r"^\S*neg.cal.yaml:3: calibration.base_latency: -20 us takes the launch "
                                         r"latency of Ring/LL \(6.6 us in NCCL's model here\) below zero.*at least "
                                         r"-6.6 us") as caught:
        simulate(topo, "ring", 1024, gpus=4, env={}, calibration=str(tmp_path / "neg.cal.yaml"))
    assert "\n" not in str(caught.value)
    with pytest.raises(InputError, match=r"NVLSTree/Simple \(0 us in NCCL's model here\).*at least 0 us \(") as caught:
        simulate(topo, "nvls_tree", 2**20, env={}, calibration=str(tmp_path / "neg.cal.yaml"))  # not -0 (round aa)


def test_a_step_latency_below_zero_is_refused_and_the_fit_stays_above_the_model_s_least(tmp_path):
    """A profile's negative intra/network step latency that takes a step below zero was
    clamped at 0 without a word (as base_latency's launch was). Now it is refused in one
    line, and the fit's lower bounds are the least step latency NCCL's model has on the
    fitted machine (``step_latency_floors``), so a fitted profile runs every candidate."""
    from simnet.run.calibrate import step_latency_floors
    from simnet.run.nccl_env import nccl_system

    topo = _pairs()
    floors = step_latency_floors(nccl_system(topo, {}))
    assert set(floors) == {"intra_step_latency", "network_step_latency"} and floors["network_step_latency"] > 0
    (tmp_path / "neg.cal.yaml").write_text("calibration:\n  network_step_latency: -50 us\n")
    with pytest.raises(InputError, match=r"^\S*neg.cal.yaml:2: calibration.network_step_latency: -50 us takes "
                                         r"Ring/\w+'s per-step latency over the network below zero") as caught:
        simulate(topo, "ring", 2**20, gpus=4, env={}, calibration=str(tmp_path / "neg.cal.yaml"))
    assert "\n" not in str(caught.value)
    sizes = [8, 1024, 65536, 2**20]
    times = {s: simulate(topo, "auto", s, gpus=4, env={}).time_s * 1e6 * 0.3 for s in sizes}  # far faster rows
    fitted = fit(topo, points_of([parse_log(write_log(times, 4), "fast.log")], topo)).calibration
    assert fitted.intra_step_latency >= -floors["intra_step_latency"] * 1e-6
    assert fitted.network_step_latency >= -floors["network_step_latency"] * 1e-6
    for s in sizes:  # every row, auto's every candidate, runs with the profile it fitted
        simulate(topo, "auto", s, gpus=4, env={}, calibration=fitted)


FOUR = {"name": "c", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 2,
                                  "spines": 1, "nic_bandwidth": "400 Gb/s"}}


def test_a_row_faster_than_the_links_carry_is_refused_naming_it(tmp_path):
    """Every rank's whole buffer must leave each host (in any form, by any algorithm): two
    hosts of 2 x 400 Gb/s NICs (100 GB/s out of each) move 1 MiB in no less than 1048576 /
    100e9 s = 10.49 us. A log saying 5.31 us was not measured on this machine."""
    log = tmp_path / "a.log"
    log.write_text(write_log({65536: 2.57, 1048576: 5.31, 16777216: 400.0}, 4))
    with pytest.raises(InputError) as refused:
        points_of([parse_log(log.read_text(), str(log))], topology_from_dict(FOUR))
    assert str(refused.value) == (f"{log}:15: 1 MiB in 5.31 us is faster than this topology's links carry: every "
                                  "rank's buffer must leave host r0h0 over 100 GB/s, at least 10.49 us; fit a log of "
                                  "the machine the topology describes (or check its bandwidths)")
    log.write_text(write_log({65536: 2.57, 1048576: 10.6, 16777216: 400.0}, 4))
    assert len(points_of([parse_log(log.read_text(), str(log))], topology_from_dict(FOUR))) == 3  # slower than the floor: fitted


@pytest.mark.parametrize(("device", "hosts", "message"), [
    ("NVIDIA H100 80GB HBM3", [0, 1, 0, 1], "the log's device lines put ranks 0, 2 on host node0, the topology's first "
     "4 GPUs share hosts otherwise"),
    ("NVIDIA GH200 480GB", [0, 0, 1, 1], "the log's device lines name 'NVIDIA GH200 480GB', the topology's GPUs are "
     "h100: fit"),
    ("NVIDIA H100 PCIe", [0, 0, 1, 1], "the log's device lines name 'NVIDIA H100 PCIe', the topology's GPUs are h100 "
     "on NVLink: fit"),
])
def test_a_log_of_another_machine_is_refused(tmp_path, device, hosts, message):
    """Ranks 0 and 2 on one host where the topology puts 0 and 1 together (the same host
    count), a Grace Hopper or a PCIe card where the topology has SXM GPUs on NVLink."""
    text = write_log({1048576: 60.0}, 4)
    for rank, host in enumerate(hosts):  # (each rank its own device of its host, as NCCL requires)
        text = text.replace(f"Rank {rank:2d} Group  0 Pid {100 + rank:6d} on node{rank // 2} device {rank % 2:2d}",
                            f"Rank {rank:2d} Group  0 Pid {100 + rank:6d} on node{host} device "
                            f"{hosts[:rank].count(host):2d}")
    log = tmp_path / "a.log"
    log.write_text(text.replace("NVIDIA H100 80GB HBM3", device))
    with pytest.raises(InputError, match=re.escape(message)) as refused:
        points_of([parse_log(log.read_text(), str(log))], topology_from_dict(FOUR))
    # on the line of rank 0's device line (fuzz 31d: the log was named, not the line)
    assert refused.value.line == next(k for k, line in enumerate(text.splitlines(), 1) if "Rank  0" in line)


def test_a_log_of_the_other_vendor_s_library_is_refused_on_its_version_line():
    """Fuzz 31f: an rccl-tests log whose device lines name no GPU (rccl-tests prints them
    empty on some systems) was fitted on an H100 box, and an nccl-tests log on an MI300X
    mesh: the program's version line says which library ran."""
    unnamed = write_log({1048576: 60.0, 16777216: 400.0}, 4, gpus_per_host=4).replace("NVIDIA H100 80GB HBM3", "")
    rccl = unnamed.replace("# nccl-tests version 2.17.6 nccl-headers=22501 nccl-library=22501",
                           "rccl-tests: Version develop:5272cd1")
    mesh = topology_from_dict({"name": "m", "generate": {"kind": "full_mesh", "gpu": "mi300x", "gpus": 4}})
    h100 = topology_from_dict({"name": "b", "generate": {"kind": "nvswitch", "gpu": "h100", "gpus": 4}})
    with pytest.raises(InputError, match=re.escape("r.log:1: the log is rccl-tests' output, the topology's GPUs are "
                                                   "h100: NVIDIA GPUs, which run NCCL")):
        points_of([parse_log(rccl, "r.log")], h100)
    with pytest.raises(InputError, match=re.escape("n.log:1: the log is nccl-tests' output, the topology's GPUs are "
                                                   "mi300x: AMD Instinct GPUs, which run RCCL")):
        points_of([parse_log(unnamed, "n.log")], mesh)
    assert len(points_of([parse_log(rccl, "r.log")], mesh)) == 2  # each on its own machine: fitted
    assert len(points_of([parse_log(unnamed, "n.log")], h100)) == 2


def test_a_garbled_row_or_device_list_is_refused_naming_its_line(tmp_path):
    """Fuzz findings (31e): a row whose busbw contradicts its own time (the rank count was
    checked on the largest row only), a #wrong of -1 (only digits were read), and two
    ranks on one host's device 0 (NCCL runs one rank per GPU) were fitted."""
    good = write_log({1048576: 60.0, 16777216: 400.0}, 4)
    row = next(line for line in good.splitlines() if line.lstrip().startswith("1048576"))
    number = good.splitlines().index(row) + 1
    busbw = row.split()[7]
    for garbled, says in [(row.replace(f" {busbw} ", " 40.00 ", 1), "busbw: 40 GB/s is 2.289 x this row's algbw"),
                          (row.rstrip()[:-1] + "-1", "#wrong: '-1' is no count of wrong results")]:
        with pytest.raises(InputError, match=re.escape(f"x.log:{number}: {says}")):
            points_of([parse_log(good.replace(row, garbled), "x.log")], topology_from_dict(FOUR))
    # a printed algbw that is not size over time, out of place or in place (round ac: fitted on the time alone)
    algbw, inplace_algbw = row.split()[6], row.split()[10]  # 1 MiB in 60 us: 17.48 GB/s; in place 60.6 us: 17.30
    for garbled, says in [(row.replace(f" {algbw} ", " 999.10 ", 1), "algbw: 999.1 GB/s, where its size over its "
                           "time (1048576 B in 60 us) is 17.48 GB/s"),
                          (row.replace(f" {inplace_algbw} ", " 17.48 ", 1), "algbw: 17.48 GB/s, where its size over "
                           "its time (1048576 B in 60.6 us) is 17.3 GB/s")]:
        with pytest.raises(InputError, match=re.escape(f"x.log:{number}: {says}")):
            parse_log(good.replace(row, garbled), "x.log")
    twice = good.replace("on node0 device  1", "on node0 device  0")
    with pytest.raises(InputError, match=re.escape("#  Rank 1: on node0 device 0, as rank 0 is (line 6): NCCL runs "
                                                   "one rank per GPU")):
        parse_log(twice, "x.log")


def test_a_row_whose_size_is_not_its_count_of_values_is_refused():
    """Fuzz finding (31c): ``1048576  1  float`` (1 MiB of one 4-byte value) was fitted; an
    all_reduce_perf row's size is its count times the type's bytes (nccl-tests common.cu)."""
    text = write_log({1048576: 60.0}, 4).replace(f"{1048576:12d}  {1048576 // 4:12d}", f"{1048576:12d}  {1:12d}")
    with pytest.raises(InputError, match=r"x.log:\d+: count: 1 float values are 4 B, not the row's size 1048576 B"):
        parse_log(text, "x.log")


def test_a_log_no_correction_brings_near_is_refused_and_no_profile_written(tmp_path, cli):
    """Fuzz finding (31c): a log 100x slower than the topology was fitted with every bandwidth
    factor at its floor (0.1) and 124 % error left, and the profile written; a fit that leaves
    over 50 % error with a parameter at its bound is refused in one line, nothing written."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(FOUR))
    times = {65536: 3000.0, 1048576: 12000.0, 16777216: 100000.0, 268435456: 1500000.0}
    (tmp_path / "a.log").write_text(write_log(times, 4))
    result = cli("calibrate", tmp_path / "a.log", "-t", tmp_path / "c.yaml", "-o", tmp_path / "p.cal.yaml")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "at the edge of their range: these logs are not of the machine" in result.stderr
    assert not (tmp_path / "p.cal.yaml").exists() and result.stdout == ""


@pytest.mark.parametrize("edit, said", [
    (("hardware:", "hardwre:"), "fitted.hardwre: unknown key 'hardwre'; did you mean 'hardware'?"),
    (("transport: ib", "transport: ib\n    colour: red"), "fitted.hardware.colour: unknown key 'colour'"),
    (("nic_GBps: 48.0", "nic_GBps: '48 GB/s'"), "fitted.hardware.nic_GBps: '48 GB/s' is not a number"),
    (("compute_capability: 90", "compute_capability: true"), "fitted.hardware.compute_capability: "),
    (("nvlink_GBps: 370.8", "nvlink_GBps: .nan"), "fitted.hardware.nvlink_GBps: nan is not a finite number"),
    # fuzz round ay F6: NaN was said to be "at most 2.0" (it is no number to compare)
    (("network_bandwidth: 1.006", "network_bandwidth: .nan"), "calibration.network_bandwidth: nan is not a finite"),
    (("64 KiB: 0.9743", "64 KiB: .nan"), "calibration.bandwidth.64 KiB: nan is not a finite number")])
def test_a_profile_s_record_of_its_machine_is_read_strictly(tmp_path, root, edit, said):
    """Fuzz round ad F12: ``fitted:`` took any key, so a misspelt ``hardwre`` dropped the check
    of the machine without a word, and ``nic_GBps: '48 GB/s'`` on the same machine warned of
    another one. Refused in one line naming the key, as the calibration section's keys are."""
    text = (root / "validation/calibrated/h100-ndr-309-2n.cal.yaml").read_text()
    assert edit[0] in text
    (tmp_path / "p.cal.yaml").write_text(text.replace(edit[0], edit[1]))
    with pytest.raises(InputError, match=re.escape(said)):
        load_calibration(tmp_path / "p.cal.yaml")
    assert load_calibration(root / "validation/calibrated/h100-ndr-309-2n.cal.yaml").hardware


@pytest.mark.parametrize("edit, warned", [
    (("nvlink_GBps: 370.8", "nvlink_GBps: 370.80001"), False),
    (("transport: ib", "transport: ib\n    gcn_arch: gfx942"), True)])
def test_a_profile_s_machine_is_compared_as_it_is_rounded(tmp_path, root, edit, warned):
    """Fuzz round ae F6: a profile's NVLink figure off in its sixth digit warned of another
    machine (values compared as written), and an MI300X's gcn_arch on an NVIDIA machine was
    ignored. Rates compare to their written rounding; an AMD profile on NVIDIA GPUs is another."""
    from simnet import load_topology

    text = (root / "validation/calibrated/h100-ndr-309-2n.cal.yaml").read_text()
    (tmp_path / "p.cal.yaml").write_text(text.replace(*edit))
    topology = load_topology(root / "validation/logs/h100_ndr_8node.yaml")
    assert (other_hardware(load_calibration(tmp_path / "p.cal.yaml"), topology) is not None) == warned
    with pytest.raises(InputError, match=re.escape("fitted.hardware.transport: 'IB' is not one of 'ib'")):
        (tmp_path / "q.cal.yaml").write_text(text.replace("transport: ib", "transport: IB"))
        load_calibration(tmp_path / "q.cal.yaml")


def test_runs_count_alike_however_they_are_filed(root, tmp_path, cli):
    """Fuzz round ai: the same runs in one log met at the median of each size, but split over
    two logs they were two points each (factors 6-10 % apart), and a renamed copy of a log got
    past the "given twice" refusal. A size on one rank count is one point at the median of
    its runs in every log; a copy (the very bytes) is refused."""
    from simnet import load_topology

    text = (root / "validation" / "logs" / "xe9680_2node_issue309.log").read_text()
    topology = load_topology(root / "validation" / "logs" / "xe9680_2node.yaml")
    filed = {"one": [parse_log(text + text, "both.log")], "two": [parse_log(text, "a.log"), parse_log(text, "b.log")],
             "once": [parse_log(text, "a.log")]}  # the job run twice: one log of both runs, or a log per run
    points = {how: sorted((p.ranks, p.size_bytes, p.measured_us) for p in points_of(logs, topology, 16))
              for how, logs in filed.items()}
    assert points["one"] == points["two"] == points["once"]
    (tmp_path / "a.log").write_text(text)
    (tmp_path / "copy.log").write_text(text)
    copied = cli("calibrate", tmp_path / "a.log", tmp_path / "copy.log", "-t",
                 root / "validation" / "logs" / "xe9680_2node.yaml", "--gpus", 16, "-o", tmp_path / "x.cal.yaml")
    assert copied.exit_code == 2 and "holds the very bytes of" in copied.stderr and not (tmp_path / "x.cal.yaml").exists()


@pytest.mark.parametrize("terms", ["base_latency: 0 us\n  network_bandwidth: 1",
                                   "bandwidth: {64 KiB: 1, 1 GiB: 1.0}\n  intra_step_latency: 0 s"])
def test_a_profile_of_neutral_terms_alone_is_refused_as_an_empty_one_is(tmp_path, terms):
    """Fuzz round ak (L2): ``calibration: {}`` is refused (it changes nothing), but a section of
    terms each at the value that changes nothing (latencies 0, factors 1) was taken in silence,
    the run the one without it. Refused alike, on the section's line; one such term beside a
    term that counts is taken."""
    from simnet.errors import InputError
    from simnet.model.calibration import load_calibration

    (tmp_path / "n.cal.yaml").write_text(f"calibration:\n  {terms}\n")
    with pytest.raises(InputError, match=r"n\.cal\.yaml:2: calibration: every term of this calibration section"):
        load_calibration(tmp_path / "n.cal.yaml")
    (tmp_path / "c.cal.yaml").write_text(f"calibration:\n  {terms}\n  base_latency: 5 us\n".replace(
        "  base_latency: 0 us\n", ""))
    assert load_calibration(tmp_path / "c.cal.yaml").base_latency == pytest.approx(5e-6)
    # review 67: simnet calibrate's own profile (fitted: beside it) may find nothing to correct: loaded
    fitted = "fitted: {hardware: {compute_capability: 90, nic_GBps: 48.0, nvlink_GBps: 370.8, transport: ib}}"
    (tmp_path / "f.cal.yaml").write_text(f"calibration:\n  {terms}\n{fitted}\n")
    assert load_calibration(tmp_path / "f.cal.yaml").base_latency == 0.0


def test_jobs_say_a_factor_the_wire_cut_short():
    """Review 84, M1: a jobs run whose profile lifts the network past its line rate where a
    NIC fills said nothing, where simnet run of the same ring does."""
    from simnet.run.jobs import run_jobs

    topo = topology_from_dict({"name": "2n", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                          "gpus_per_host": 2, "gpu": "h100",
                                                          "pcie_bandwidth": "200 GB/s"}})
    jobs = [{"name": "a", "gpus": 4, "size": "256 MiB", "algorithm": "ring"}]
    said = [[w for w in run_jobs(topo, jobs, calibration=Calibration(network_bandwidth=f)).warnings
             if w.kind == "calibration_capped"] for f in (1.9, 0.5)]
    alone = simulate(topo, "ring", 2**28, calibration=Calibration(network_bandwidth=1.9)).warnings
    assert len(said[0]) == 1 and "of the jobs' run together above line rate" in said[0][0].message
    assert said[0][0].link in {w.link for w in alone if w.kind == "calibration_capped"} and not said[1]


def test_jobs_of_a_profile_by_size_answer_alike_in_either_order():
    """Fuzz round av, S2: every job ran at the first job's size's factor, so listing a 1 GiB job
    after a 1 MiB one slowed it 1.78x. Each job's links run at its own size's rates (the
    1 GiB job as alone, at its own), a link both cross at the higher, and that is said."""
    from simnet.run.jobs import run_jobs

    topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                         "gpus_per_host": 4, "gpu": "h100", "nic_per": "host"}})
    by_size = Calibration(bandwidth={2**20: 0.5, 2**32: 1.0})
    # two hosts' halves each, through each host's one NIC (recursive doubling has no NCCL ceiling: its links'
    # rates alone set its pace)
    small = {"name": "small", "gpus": [*topo.gpus[0:2], *topo.gpus[4:6]], "size": "64 MiB",
             "algorithm": "recursive_doubling"}
    large = {"name": "large", "gpus": [*topo.gpus[2:4], *topo.gpus[6:8]], "size": "1 GiB", "algorithm": "ring"}
    first, second = (run_jobs(topo, jobs, calibration=by_size) for jobs in ([small, large], [large, small]))
    times = [{job["name"]: (job["alone_s"], job["together_s"]) for job in run.jobs} for run in (first, second)]
    assert times[0] == times[1]
    for job, size in ((small, 2**26), (large, 2**30)):  # alone, each as a run of it alone (review 86, H4)
        alone = simulate(topo, job["algorithm"], size, gpus=job["gpus"], calibration=by_size).time_s
        assert times[0][job["name"]][0] == pytest.approx(alone, rel=1e-9)
    assert [w.kind for w in first.warnings].count("calibration_shared") == 1


def test_jobs_say_a_factor_cut_short_only_of_links_that_ran_at_it():
    """Review 86, H2: job a's 1.5x at 64 KiB was said cut short on NIC links only job b (at
    0.5x) crosses; neither job's own run says it, and now the jobs do not."""
    from simnet.run.jobs import run_jobs

    topo = topology_from_dict({"name": "2n", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                          "gpus_per_host": 4, "gpu": "h100"}})
    profile = Calibration(bandwidth={2**16: 1.5, 2**20: 1.5, 2**28: 0.5, 2**30: 0.5}, source="p.cal.yaml")
    a = {"name": "a", "gpus": topo.gpus[0:2], "size": "64 KiB", "algorithm": "ring"}
    b = {"name": "b", "gpus": [topo.gpus[2], topo.gpus[6]], "size": "256 MiB", "algorithm": "recursive_doubling"}
    alone = [simulate(topo, job["algorithm"], size, gpus=job["gpus"], calibration=profile).warnings
             for job, size in ((a, 2**16), (b, 2**28))]
    assert not any(w.kind == "calibration_capped" for said in alone for w in said)
    for jobs in ([a, b], [b, a]):
        assert not any(w.kind == "calibration_capped" for w in run_jobs(topo, jobs, calibration=profile).warnings)



def test_jobs_say_what_a_run_says_of_their_calibration_profile():
    """Fuzz round av, M8: jobs ran under the profile and said none of what a run of the same
    AllReduce says of it: a network term no route of one box crosses, and under model: ideal
    that it ran without it."""
    from simnet.run.jobs import run_jobs

    box = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": "h100"}})
    profile = Calibration(base_latency=20e-6, network_bandwidth=0.5, source="x.cal.yaml")
    jobs = [{"name": name, "gpus": 4, "size": "256 MiB", "algorithm": "ring"} for name in ("a", "b")]
    said = {(w.kind, w.link) for w in run_jobs(box, jobs, calibration=profile).warnings}
    run = {(w.kind, w.link) for w in simulate(box, "ring", 2**28, gpus=4, calibration=profile).warnings}
    assert ("key_unread", "x.cal.yaml: network_bandwidth") in run & said
    ideal = run_jobs(box, jobs, model="ideal", calibration=profile).warnings
    assert [w.kind for w in ideal].count("calibration_unused") == 1


def test_a_training_step_says_a_factor_the_wire_cut_short():
    """Fuzz round av, M6: a step under bandwidth 1.6 and 2.0 answered alike to the bit, the
    wire cutting both at line rate where its exchanges filled NVLink, without a word, where a
    run of the same AllReduce says calibration_capped."""
    from simnet.run.training import step_time
    from simnet.spec.workloads import Training

    box = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": "h100"}})
    spec = Training.model_validate({"model": "llama3_8b", "parallelism": {"tp": 2}, "efficiency": 0.5})
    steps = {f: step_time(box, spec.transformer(), spec.layout(), efficiency=0.5, calibration=Calibration(bandwidth=f))
             for f in (1.6, 2.0, 0.5)}
    assert steps[1.6].step_s == steps[2.0].step_s  # cut at line rate both
    assert [w.kind for w in steps[2.0].warnings] == ["calibration_capped"] and not steps[0.5].warnings


def test_a_profile_fitted_under_other_nccl_variables_says_so(tmp_path):
    """Fuzz round av, L13: a profile fitted under NCCL_ALGO=Ring records it (fitted.nccl_variables)
    and was applied to runs of NCCL's own picks without a word, where one fitted on another
    machine is warned."""
    (tmp_path / "r.cal.yaml").write_text(yaml.safe_dump({"calibration": {"base_latency": "2 us"},
                                                          "fitted": {"nccl_variables": {"NCCL_ALGO": "Ring"}}}))
    profile = load_calibration(tmp_path / "r.cal.yaml")
    box = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": "h100"}})

    def said(env):
        run = simulate(box, "ring", 2**24, calibration=profile, env=env)
        return [w.message for w in run.warnings if w.kind == "calibration_other_environment"]

    (message,) = said({})
    assert "fitted under NCCL variables NCCL_ALGO=Ring, this run has none" in message
    assert not said({"NCCL_ALGO": "Ring"})


@pytest.mark.parametrize("size", ["nan", "-1048576"])
def test_a_row_whose_size_is_no_size_is_refused_not_passed_over(size):
    """Fuzz round az F5: a row whose size read `nan` or `-16777216` was taken for prose and
    left out of the fit without a word (4 points fitted of 5); refused on its line, as any
    other garbled row."""
    text = write_log({65536: 30.0, 1048576: 60.0}, 4)
    row = next(line for line in text.splitlines() if line.split() and line.split()[0] == "1048576")
    with pytest.raises(InputError, match=rf"x.log:\d+: size: '{size}' is no size nccl-tests prints"):
        parse_log(text.replace(row, row.replace("1048576", size, 1)), "x.log")
