"""``simnet run`` as a user types it: the table, JSON, CSV, plots, trace, auto and NCCL_ALGO."""

import csv
import io
import json

import matplotlib.image as mpimg
import numpy as np
import pytest
import yaml

import simnet
from simnet import load_topology, topology_from_dict
from simnet.report.paths import PLOT_FILES
from simnet.run.scenario import run_scenario
from simnet.run.simulate import simulate


def root_path():
    from pathlib import Path

    return Path(__file__).resolve().parent.parent


@pytest.fixture
def scenario(tmp_path, root):
    path = tmp_path / "s.yaml"
    path.write_text(f"""name: small
topology: {root / 'topologies/ps_star.yaml'}
sizes: [1 MiB, 16 MiB]
algorithms: [ring, tree, ps]
""")
    return path


def test_table_shows_every_run_and_marks_winners(cli, scenario):
    result = cli("run", scenario)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for header in ("size", "algorithm", "time", "algbw GB/s", "busbw GB/s", "bottleneck link"):
        assert header in out
    assert out.count("* ring") == 2  # ring wins both sizes on a star
    assert "1 MiB" in out and "16 MiB" in out
    assert "warning nic_overload (ps, 16 MiB): ps0 port" in out
    assert "16 flows shared 3.125 GB/s" in out
    # one warning per algorithm and kind, at the largest size, naming the other sizes
    assert out.count("warning nic_overload (ps") == 1 and "(also at 1 MiB: --json lists every one)" in out


def test_a_run_no_link_limited_names_its_busiest_link_not_a_0_percent_bottleneck(cli, tmp_path):
    # NCCL's ring in one H100 box runs at its per-channel ceiling (12 channels x 30 GB/s):
    # no link ever fills, so there is no saturated bottleneck to name
    path = tmp_path / "box.yaml"
    path.write_text("name: box\ntopology: {name: box, generate: {kind: nvswitch, gpus: 8, gpu: h100}}\n"
                    "size: 1 GiB\nalgorithms: [ring]\n")
    result = cli("run", path, "--json", tmp_path / "r.json", "--csv", tmp_path / "r.csv")
    assert result.exit_code == 0, result.stderr
    assert "none; busiest gpu" in result.stdout and "(0%)" not in result.stdout
    # fuzz round at, L4: the JSON and CSV named the busiest link the bottleneck the table says it is not
    run = json.loads((tmp_path / "r.json").read_text())["runs"][0]
    assert run["bottleneck"] is None and run["busiest"] == run["links"][0]["src"] + "->" + run["links"][0]["dst"]
    row = next(csv.DictReader((tmp_path / "r.csv").open()))
    assert (row["bottleneck"], row["busiest"]) == ("", run["busiest"])


def test_a_parameter_server_behind_its_own_nic_gets_one_warning_for_that_machine():
    # rank 0 serves: its GPU-to-NIC cable and the NIC's uplink are one machine's port, one warning
    topo = simnet.topology_from_dict({"name": "pairs", "generate": {
        "kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 8}})
    warnings = simulate(topo, "ps", 2**24).warnings
    overloads = [w for w in warnings if w.kind == "nic_overload"]
    assert len(overloads) == 1 and overloads[0].message.startswith("r0h0-nic0 port: 8 flows")  # the other host's 8


def test_json_matches_design_schema(cli, scenario, tmp_path):
    path = tmp_path / "out.json"
    assert cli("run", scenario, "--json", path).exit_code == 0
    data = json.loads(path.read_text())
    assert data["simnet"] == simnet.__version__ and data["scenario"] == "small"
    assert len(data["runs"]) == 6
    for run in data["runs"]:
        for key in ("algorithm", "gpus", "size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "links", "warnings"):
            assert key in run
        assert run["algbw_GBps"] == pytest.approx(run["size_bytes"] / run["time_s"] / 1e9)
        assert run["busbw_GBps"] == pytest.approx(run["algbw_GBps"] * 2 * 15 / 16)
        for link in run["links"]:
            assert set(link) == {"src", "dst", "capacity_Bps", "bytes", "mean_utilization", "peak_utilization",
                                 "port_saturated_fraction",
                                 "saturated_fraction", "max_flows", "mean_capacity_Bps"}
            assert 0 <= link["mean_utilization"] <= 1 + 1e-9 and 0 <= link["saturated_fraction"] <= 1
        for warning in run["warnings"]:
            assert set(warning) == {"kind", "link", "message"}
    ps = [r for r in data["runs"] if r["algorithm"] == "ps"]
    assert all(r["warnings"][0]["kind"] == "nic_overload" for r in ps)


def test_json_to_stdout_keeps_other_outputs_off_stdout(cli, scenario, tmp_path):
    result = cli("run", scenario, "--json", "-", "--csv", tmp_path / "o.csv")
    assert json.loads(result.stdout)["scenario"] == "small"
    assert "wrote" in result.stderr and (tmp_path / "o.csv").exists()


def test_csv_is_the_flat_table(cli, scenario, tmp_path):
    path = tmp_path / "out.csv"
    cli("run", scenario, "--csv", path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert len(rows) == 6 and rows[0]["algorithm"] == "ring" and float(rows[0]["time_s"]) > 0


def test_overrides(cli, scenario, tmp_path):
    path = tmp_path / "o.json"
    cli("run", scenario, "-a", "naive", "-s", "4 MiB", "-g", "4", "--json", path)
    runs = json.loads(path.read_text())["runs"]
    assert [(r["algorithm"], r["size_bytes"], r["gpus"]) for r in runs] == [("naive", 4 * 2**20, 4)]
    bad = cli("run", scenario, "-s", "4 MB/s")
    assert bad.exit_code == 2 and "--size: '4 MB/s' is not a size" in bad.stderr
    bad = cli("run", scenario, "-g", "99")
    assert bad.exit_code == 2 and "--gpus: 99 is out of range" in bad.stderr


def test_plots_draw_the_results(cli, scenario, tmp_path, figures):
    """Each figure holds the numbers of the run it claims to show (read from the figure's
    artists, not counted in pixels)."""
    out = tmp_path / "plots"
    json_path = tmp_path / "r.json"
    assert cli("run", scenario, "--plot", out, "--json", json_path).exit_code == 0
    runs = json.loads(json_path.read_text())["runs"]
    names = sorted(p.name for p in out.iterdir())
    assert names == ["busbw_vs_size.png", "link_heatmap.png", "link_utilization.png", "time_vs_size.png"]
    assert set(names) <= set(PLOT_FILES)  # the names the file options may not take
    assert all(mpimg.imread(out / name).shape[0] > 300 for name in names)  # real images on disk
    for name, field in (("time_vs_size.png", "time_s"), ("busbw_vs_size.png", "busbw_GBps")):
        lines = {line.get_label(): line for line in figures[name].axes[0].get_lines()}
        assert sorted(lines) == ["ps", "ring", "tree"]
        for algorithm, line in lines.items():
            mine = sorted((r["size_bytes"], r[field]) for r in runs if r["algorithm"] == algorithm)
            assert list(line.get_xdata()) == [size for size, _ in mine]
            assert list(line.get_ydata()) == pytest.approx([value for _, value in mine])
    # the featured run: ring, the fastest at the largest size; its busiest links, worst first
    ring = next(r for r in runs if r["algorithm"] == "ring" and r["size_bytes"] == 16 * 2**20)
    bars = figures["link_utilization.png"].axes[0]
    shown = [t.get_text() for t in bars.get_yticklabels()][::-1]
    assert shown == [f"{link['src']}->{link['dst']}" for link in ring["links"][:len(shown)]]
    means = [patch.get_width() for patch in bars.patches[:len(shown)]][::-1]
    assert means == pytest.approx([link["mean_utilization"] * 100 for link in ring["links"][:len(shown)]])
    heat = figures["link_heatmap.png"].axes[0].get_images()[0].get_array()
    # each worker, cabled straight to the switch, is its own NIC: NCCL's ring runs at its search's speed for a
    # 25 GbE port, 3 GB/s of 3.125 (search.cc speedArrayInter), on the busiest worker link
    assert heat.shape[0] == len(shown) and heat.max() == pytest.approx(100 * 3.0 / 3.125)


def test_auto_is_one_series_with_its_pick_beside_each_point(cli, tmp_path, root, figures):
    # one DGX H100: NCCL picks ring at 1 MiB and NVLS at 64 MiB; auto stays one line
    path = tmp_path / "box.yaml"
    path.write_text(f"name: box\ntopology: {root / 'topologies/dgx_h100.yaml'}\nsizes: [1 MiB, 64 MiB]\n"
                    "algorithms: [auto, ring]\n")
    json_path = tmp_path / "r.json"
    assert cli("run", path, "--plot", tmp_path / "plots", "--json", json_path).exit_code == 0
    auto = sorted((r["size_bytes"], r["algorithm"], r["busbw_GBps"]) for r in json.loads(json_path.read_text())["runs"]
                  if "auto" in r)
    assert len({pick for _, pick, _ in auto}) == 2
    for name in ("time_vs_size.png", "busbw_vs_size.png"):
        ax = figures[name].axes[0]
        assert [line.get_label() for line in ax.get_lines()] == ["auto", "ring"]
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["auto", "ring"]
        assert list(ax.get_lines()[0].get_xdata()) == [size for size, _, _ in auto]
        assert [(t.xy[0], t.get_text()) for t in ax.texts] == [(size, pick) for size, pick, _ in auto]
    busbw = figures["busbw_vs_size.png"].axes[0]
    assert [t.xy[1] for t in busbw.texts] == pytest.approx([value for _, _, value in auto])


def test_files_into_the_plot_folder_simnet_makes_are_written_there(cli, scenario, tmp_path):
    """--json, --csv and --trace may name files in the --plot folder that simnet makes
    (round ac: refused, 'folder does not exist'); a refused run leaves no folder behind."""
    out = tmp_path / "outs" / "p"
    ran = cli("run", scenario, "-a", "ring", "--plot", out, "--trace", out / "x.json", "--json", out / "r.json",
              "--csv", out / "r.csv")
    assert ran.exit_code == 0, ran.stderr
    assert {"x.json", "r.json", "r.csv", "time_vs_size.png"} <= {p.name for p in out.iterdir()}
    assert json.loads((out / "r.json").read_text())["runs"][0]["algorithm"] == "ring"
    refused = cli("run", scenario, "-a", "nosuch", "--plot", tmp_path / "q", "--json", tmp_path / "q" / "r.json")
    assert refused.exit_code == 2 and not (tmp_path / "q").exists()
    deeper = cli("run", scenario, "--plot", tmp_path / "d", "--json", tmp_path / "d" / "sub" / "r.json")
    assert deeper.exit_code == 2 and "folder" in deeper.stderr and not (tmp_path / "d").exists()


def test_plot_figures_carry_the_data(scenario):
    from simnet.report.plots import featured_run, utilization_matrix
    from simnet.spec.scenario import load_scenario

    results = run_scenario(load_scenario(scenario))
    best = featured_run(results)
    assert best.algorithm == "ring" and best.size_bytes == 16 * 2**20
    traced = simulate(best.replay.topology, "ring", best.size_bytes, timeline=True)
    top = [traced.replay.topology.link_index[(link.src, link.dst)] for link in traced.links[:4]]
    matrix, edges = utilization_matrix(traced, top, bins=50)
    assert edges[-1] == pytest.approx(traced.time_s)
    # the bins average back to each link's mean utilisation
    for row, link in zip(matrix, traced.links[:4]):
        assert row.mean() == pytest.approx(link.mean_utilization, rel=1e-6)


def test_trace_slices_are_the_replayed_times(cli, scenario, tmp_path):
    path = tmp_path / "t.json"
    assert cli("run", scenario, "--trace", path, "-a", "ring").exit_code == 0
    slices = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"]
    traced = simulate(load_topology(root_path() / "topologies/ps_star.yaml"), "ring", 16 * 2**20, timeline=True)
    replayed = traced.replay
    real = np.flatnonzero(replayed.schedule.src != replayed.schedule.dst)
    assert len(slices) == len(real)
    durations = (replayed.delivered - replayed.start)[real] * 1e6
    expected = sorted(zip((replayed.start[real] * 1e6).tolist(), durations.tolist()))
    got = sorted((e["ts"], e["dur"]) for e in slices)
    assert np.allclose(got, expected, rtol=0, atol=1e-9)
    assert max(ts + dur for ts, dur in got) == pytest.approx(traced.time_s * 1e6, rel=1e-12)


def test_a_trace_over_its_budget_merges_each_connections_transfers_and_says_so(cli, scenario, tmp_path,
                                                                                 monkeypatch):
    """Past MAX_SLICES a run's transfers of one connection and step become one slice (first
    start to last delivery): the bytes each rank sends and the run's span are kept, the file
    stays small (the headline's was 80 MB) and the CLI says what was merged."""
    from simnet.report import trace

    monkeypatch.setattr(trace, "MAX_SLICES", 200)
    path = tmp_path / "t.json"
    result = cli("run", scenario, "--trace", path, "-a", "ring")
    assert result.exit_code == 0, result.stderr
    traced = simulate(load_topology(root_path() / "topologies/ps_star.yaml"), "ring", 16 * 2**20, timeline=True)
    real = np.flatnonzero(traced.replay.schedule.src != traced.replay.schedule.dst)
    document = json.loads(path.read_text())
    slices = [e for e in document["traceEvents"] if e["ph"] == "X"]
    assert len(real) > 200 >= len(slices)
    (note,) = document["otherData"]["thinned or left out"]
    assert f"ring: {len(real):,} transfers drawn as {len(slices):,} slices" in note
    assert note in " ".join(result.stdout.split())
    assert sum(e["args"]["transfers"] for e in slices) == len(real)
    schedule = traced.replay.schedule
    assert sum(e["args"]["bytes"] for e in slices) == int((schedule.hi - schedule.lo)[real].sum())
    assert max(e["ts"] + e["dur"] for e in slices) == pytest.approx(traced.time_s * 1e6, rel=1e-12)
    assert min(e["ts"] for e in slices) == pytest.approx(float(traced.replay.start[real].min()) * 1e6, abs=1e-9)


def test_trace_is_valid_chrome_trace(cli, scenario, tmp_path):
    path = tmp_path / "t.json"
    assert cli("run", scenario, "--trace", path).exit_code == 0
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    assert {e["cat"] for e in slices} == {"ring", "tree", "ps"}
    for e in slices:
        assert e["dur"] >= 0 and e["ts"] >= 0 and isinstance(e["tid"], int)
        assert {"step", "chunk", "bytes", "peer"} <= set(e["args"])
    # slices on one track never overlap (Chrome's format needs nesting per thread)
    by_track = {}
    for e in slices:
        by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_track.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-6 for a, b in zip(spans, spans[1:]))
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "rank 0: worker0" in names
    counters = [e for e in events if e["ph"] == "C"]
    assert counters and all(0 <= e["args"]["utilisation"] <= 100.001 for e in counters)


def test_auto_is_what_nccl_picks_with_the_fastest_beside_it(cli, tmp_path, root):
    from simnet.tuning import predict, search, tables

    topo = load_topology(root / "topologies/two_racks.yaml").subset(16)  # two hosts
    size = 64 * 2**20
    result = simulate(topo, "auto", size)
    # the row is NCCL's own pick: its cost model's argmin over (algorithm, protocol)
    choice = predict.pick(search.system_of(topo), size)
    assert (result.algorithm, result.protocol) == (tables.SIMNET_NAMES[choice.algorithm], choice.protocol)
    # every candidate NCCL could run here was simulated on its own, and the fastest is named
    assert set(result.auto["candidates"]) == {"ring", "tree", "nvls_tree"}
    alone = {name: simulate(topo, name, size).time_s for name in result.auto["candidates"]}
    assert result.auto["candidates"] == alone
    assert result.time_s == alone[result.algorithm]
    assert result.auto["fastest"] == min(alone, key=alone.get)
    path = tmp_path / "a.yaml"
    path.write_text(f"name: a\ntopology: {root / 'topologies/two_racks.yaml'}\nsize: 64 MiB\nalgorithms: [auto]\n"
                    "gpus: 16\n")
    out = cli("run", path).stdout
    assert f"auto -> {result.algorithm}" in out
    if result.auto["fastest"] != result.algorithm:
        assert f"faster: NCCL_ALGO={tables.NCCL_NAMES[result.auto['fastest']]}" in out


@pytest.mark.parametrize("gain, hinted", [(1.005, False), (1.009, False), (1.02, True)])
def test_auto_names_a_faster_algorithm_only_beyond_the_model_s_resolution(root, gain, hinted):
    # "ring 1.00x faster" was printed for half a percent: within what compare counts as a tie,
    # auto's pick is the fastest, in the JSON as in the table
    from dataclasses import replace

    from simnet.report.tables import _algorithm_cell
    from simnet.run.compare import PARETO_TOLERANCE
    from simnet.run.point import SAME_TIME, fastest_of

    assert PARETO_TOLERANCE == SAME_TIME == 0.01
    picked = simulate(load_topology(root / "topologies/dgx_h100.yaml"), "auto", 2**26)
    assert picked.algorithm == "nvls"
    candidates = {**picked.auto["candidates"], "ring": picked.time_s / gain}
    fastest = fastest_of(candidates, "nvls")
    assert fastest == ("ring" if hinted else "nvls")
    run = replace(picked, auto={**picked.auto, "fastest": fastest, "fastest_hint": f"NCCL_ALGO={fastest}",
                                "candidates": candidates})
    hint = f"auto -> nvls (ring {gain:.2f}x faster: NCCL_ALGO=ring)"
    assert _algorithm_cell(run) == (hint if hinted else "auto -> nvls")


def test_under_ideal_auto_gives_no_nccl_algo_advice(cli, root):
    """At line rate NVLS beats NCCL's pick on one DGX H100 at 64 KiB by 11x; that ranking is
    the ideal model's, not NCCL's, so the table says so instead of advising NCCL_ALGO=NVLS."""
    result = cli("run", root / "scenarios/single_node.yaml", "--model", "ideal", "-s", "64 KiB", "-a", "auto")
    assert result.exit_code == 0, result.stderr
    line = " ".join(result.stdout.split())
    assert "auto -> ring (nvls" in line and "faster at line rate)" in line and "NCCL_ALGO=" not in line


def test_nccl_algo_beside_named_algorithms_only_is_said_to_change_nothing(cli, tmp_path):
    """Fuzz 31f: NCCL_ALGO=Tree beside ``algorithms: [ring]`` ran ring without a word: NCCL_ALGO
    restricts auto's pick, and no auto ran. With auto among the algorithms auto reads it."""
    path = tmp_path / "a.yaml"
    path.write_text("name: a\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\nsize: 1 MiB\n"
                    "algorithms: [ring]\n")
    named = cli("run", path, "--json", "-", env={"NCCL_ALGO": "Tree"})
    said = [w["message"] for w in json.loads(named.stdout)["runs"][0]["warnings"] if w["kind"] == "key_unread"]
    assert said == ["NCCL_ALGO=Tree restricts what auto picks, and this run names ring, no auto, so it changed "
                    "nothing here (add auto to the algorithms to see NCCL's pick under it)"]
    with_auto = cli("run", path, "-a", "ring", "-a", "auto", "--json", "-", env={"NCCL_ALGO": "Tree"})
    ring, auto = json.loads(with_auto.stdout)["runs"]
    # fuzz o (#255): the ring beside auto runs as named, so it says so; auto's pick moved (ring -> tree): not
    assert [w["message"] for w in ring["warnings"] if w["kind"] == "key_unread"] == [
        "NCCL_ALGO=Tree changed nothing here: it restricts what auto picks, and ring runs as named"]
    assert auto["algorithm"] == "tree" and not [w for w in auto["warnings"] if w["kind"] == "key_unread"]


def test_nccl_algo_and_proto_force_and_exclude(cli, tmp_path, root, monkeypatch):
    path = tmp_path / "a.yaml"
    path.write_text(f"name: a\ntopology: {root / 'topologies/dgx_h100.yaml'}\nsize: 64 MiB\nalgorithms: [auto]\n")
    forced = cli("run", path, env={"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL128"})
    assert forced.exit_code == 0, forced.stderr
    assert "auto -> ring" in forced.stdout and "NCCL_ALGO=Ring NCCL_PROTO=LL128 applied" in forced.stdout
    assert "LL128" in forced.stdout
    box = load_topology(root / "topologies/dgx_h100.yaml")
    monkeypatch.setenv("NCCL_ALGO", "^nvls")  # simnet's names are NCCL's too
    result = simulate(box, "auto", 2**26)
    assert set(result.auto["candidates"]) == {"ring", "tree"} and result.algorithm in ("ring", "tree")
    monkeypatch.delenv("NCCL_ALGO")
    bad = cli("run", path, env={"NCCL_ALGO": "Butterfly"})
    assert bad.exit_code == 2 and "NCCL_ALGO='Butterfly': unknown name 'Butterfly'" in bad.stderr
    pcie = tmp_path / "p.yaml"
    pcie.write_text(f"name: p\ntopology: {root / 'topologies/pcie_8gpu.yaml'}\nsize: 1 MiB\nalgorithms: [auto]\n")
    missing = cli("run", pcie, env={"NCCL_ALGO": "NVLS"})
    assert missing.exit_code == 2 and "NVLS needs an NVSwitch that reduces (nvls: true" in missing.stderr
    # an algorithm that cannot run here is named where it was asked for: the file's line, or -a
    named = tmp_path / "n.yaml"
    named.write_text(f"name: n\ntopology: {root / 'topologies/dgx_a100.yaml'}\nsize: 1 MiB\nalgorithms: [nvls]\n")
    in_file = cli("run", named)
    assert in_file.exit_code == 2 and in_file.stderr.startswith(f"{named}:4: algorithms: NVLS needs an NVSwitch")
    by_option = cli("run", pcie, "-a", "nvls_tree")
    assert by_option.exit_code == 2 and by_option.stderr.startswith(f"{pcie}: --algorithm: nvls_tree runs across")
    assert len(missing.stderr.strip().splitlines()) == 1


def test_nccl_nvls_enable_0_takes_nvls_away_as_in_nccl(cli, tmp_path, root):
    """NCCL_NVLS_ENABLE=0 (NeMo's recipes set it) turns NVLink SHARP off: on a DGX H100 at
    64 MiB NCCL's pick is NVLS; without it, neither NVLS nor NVLSTree is a candidate."""
    box = load_topology(root / "topologies/dgx_h100.yaml")
    assert simulate(box, "auto", 2**26).algorithm == "nvls"
    off = simulate(box, "auto", 2**26, env={"NCCL_NVLS_ENABLE": "0"})
    assert set(off.auto["candidates"]) == {"ring", "tree"} and off.algorithm in ("ring", "tree")
    assert simulate(box, "auto", 2**26, env={"NCCL_NVLS_ENABLE": "1"}).algorithm == "nvls"
    from simnet.run.nccl_env import nccl_system

    assert nccl_system(box, {"NCCL_NVLS_ENABLE": ""}).nvls and not nccl_system(box, {"NCCL_NVLS_ENABLE": "0 "}).nvls
    path = tmp_path / "a.yaml"
    path.write_text(f"name: a\ntopology: {root / 'topologies/dgx_h100.yaml'}\nsize: 64 MiB\nalgorithms: [auto]\n")
    run = cli("run", path, env={"NCCL_NVLS_ENABLE": "0"})
    assert run.exit_code == 0, run.stderr
    assert "NCCL_NVLS_ENABLE=0 applied: NCCL would choose among tree, ring" in run.stdout
    assert f"auto -> {off.algorithm}" in run.stdout
    forced = cli("run", path, env={"NCCL_NVLS_ENABLE": "0", "NCCL_ALGO": "NVLS"})
    assert forced.exit_code == 2 and len(forced.stderr.strip().splitlines()) == 1
    assert simulate(box, "auto", 2**26, env={"NCCL_NVLS_ENABLE": "0x0"}).algorithm != "nvls"  # strtoll reads hex
    assert simulate(box, "auto", 2**26, env={"NCCL_NVLS_ENABLE": "-1"}).algorithm == "nvls"  # not 0: on
    bad = cli("run", path, env={"NCCL_NVLS_ENABLE": "false"})  # NCCL would read 0: a typo simnet names
    assert bad.exit_code == 2 and "NCCL_NVLS_ENABLE='false': not an integer" in bad.stderr
    # NVLS off is off for an algorithm named too (it ran, and was starred fastest): refused
    # when named, skipped with the reason under `all`
    named = cli("run", path, "-a", "nvls", env={"NCCL_NVLS_ENABLE": "0"})
    assert named.exit_code == 2 and "NCCL_NVLS_ENABLE=0 turns NVLink SHARP off, as in NCCL: no nvls" in named.stderr
    every = cli("run", path, "-a", "all", env={"NCCL_NVLS_ENABLE": "0"})
    assert every.exit_code == 0 and "skipped nvls (all): NCCL_NVLS_ENABLE=0" in " ".join(every.stdout.split())


def test_nccl_collnet_enable_0_takes_sharp_away_as_in_nccl(cli, tmp_path):
    """With SHARP switches, simnet takes CollNet to be on (NCCL_COLLNET_ENABLE=1 with NCCL's
    SHARP plugin); NCCL_COLLNET_ENABLE=0, NCCL's own default, takes CollNet and NVLS across
    hosts away from auto, refuses them when named and skips them under `all`. At 1 MiB auto
    weighs the same candidates as at 64 MiB, in a fifth of the time."""
    from simnet.run.nccl_env import nccl_system

    spec = {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpu": "h100", "sharp": True}
    fabric = topology_from_dict({"name": "sharp", "generate": spec})
    on = simulate(fabric, "auto", 2**20)
    assert nccl_system(fabric, {}).collnet and not nccl_system(fabric, {"NCCL_COLLNET_ENABLE": "0"}).collnet
    assert {"collnet_direct", "collnet_chain"} & set(on.auto["candidates"])
    off = simulate(fabric, "auto", 2**20, env={"NCCL_COLLNET_ENABLE": "0"})
    assert not {"collnet_direct", "collnet_chain"} & set(off.auto["candidates"])
    assert off.algorithm not in ("collnet_direct", "collnet_chain", "nvls")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "topology": {"name": "sharp", "generate": spec},
                                    "size": "1 MiB", "algorithms": ["auto"]}))
    run = cli("run", path, env={"NCCL_COLLNET_ENABLE": "0"})
    assert run.exit_code == 0 and "NCCL_COLLNET_ENABLE=0 applied" in run.stdout
    for named in ("collnet_direct", "nvls"):
        refused = cli("run", path, "-a", named, env={"NCCL_COLLNET_ENABLE": "0"})
        assert refused.exit_code == 2 and f"turns network SHARP (CollNet) off, as in NCCL: no {named}" in refused.stderr
    every = cli("run", path, "-a", "all", env={"NCCL_COLLNET_ENABLE": "0"})
    assert every.exit_code == 0 and "skipped collnet_chain (all): NCCL_COLLNET_ENABLE=0" in " ".join(every.stdout.split())


def test_nccl_list_syntax():
    from simnet.tuning.predict import parse_nccl_list
    from simnet.tuning.tables import ALGORITHMS, PROTOCOLS

    assert parse_nccl_list("RING,tree", ALGORITHMS, "NCCL_ALGO") == {"Ring", "Tree"}
    assert parse_nccl_list("^Tree", ALGORITHMS, "NCCL_ALGO") == set(ALGORITHMS) - {"Tree"}
    assert parse_nccl_list("nvlstree,COLLNETDIRECT", ALGORITHMS, "NCCL_ALGO") == {"NVLSTree", "CollNetDirect"}
    # NCCL compares names without case (strcasecmp, tuning.cc parseList), nothing more: simnet's
    # nvls_tree is no name of NCCL's, which would refuse the run (fuzz k #243: it ran as NVLSTree)
    with pytest.raises(ValueError, match="unknown name 'nvls_tree' to NCCL, which calls it NVLSTree"):
        parse_nccl_list("nvls_tree,collnet_direct", ALGORITHMS, "NCCL_ALGO")
    assert parse_nccl_list("", PROTOCOLS, "NCCL_PROTO") == set(PROTOCOLS)
    assert parse_nccl_list("^LL128;allreduce:LL", PROTOCOLS, "NCCL_PROTO") == {"LL"}  # AllReduce's own section
    assert parse_nccl_list("broadcast:LL", PROTOCOLS, "NCCL_PROTO") == set(PROTOCOLS)  # other functions only
    with pytest.raises(ValueError, match="unknown name 'Butterfly'"):
        parse_nccl_list("Butterfly", ALGORITHMS, "NCCL_ALGO")


def test_results_dataframe_when_pandas_is_there(scenario):
    pd = pytest.importorskip("pandas")
    from simnet.report.export import results_dataframe
    from simnet.spec.scenario import load_scenario

    frame = results_dataframe(run_scenario(load_scenario(scenario)))
    assert isinstance(frame, pd.DataFrame) and len(frame) == 6
    assert np.isclose(frame["busbw_GBps"], frame["algbw_GBps"] * 30 / 16).all()


def test_one_gpu_moves_nothing_and_says_so(cli, tmp_path, root):
    # over one GPU an AllReduce is a no-op: every size and algorithm (auto too) reports the
    # size asked for, time 0 and no bandwidth, no winner is starred, and --plot writes nothing
    path = tmp_path / "one.yaml"
    path.write_text(f"name: one\ntopology: {root / 'topologies/ps_star.yaml'}\nsizes: [1.4 GB, 4 MB]\n"
                    "algorithms: [ring, ps, auto]\nworkload: {compute_time: 100 ms, gradient_size: 4 MB}\n")
    result = cli("run", path, "-g", "1", "--plot", tmp_path / "plots", "--csv", tmp_path / "one.csv")
    assert result.exit_code == 0, result.stderr
    assert "AllReduce on 1 GPU " in result.stdout and "* " not in result.stdout
    assert "nothing to plot or trace: over one GPU no data moves" in result.stdout
    assert not (tmp_path / "plots").exists()
    # fuzz round au, L2: 0 B over several GPUs gave the same reason
    zero = tmp_path / "zero.yaml"
    zero.write_text("name: zero\ntopology: {name: t, generate: {kind: nvswitch, gpus: 4}}\nsizes: [0 B]\n"
                    "algorithms: [ring]\n")
    empty = cli("run", zero, "--plot", tmp_path / "plots")
    assert "nothing to plot or trace: a run of 0 B moves no data" in empty.stdout, empty.stdout
    rows = list(csv.DictReader(io.StringIO((tmp_path / "one.csv").read_text())))
    assert {(r["size_bytes"], r["algorithm"], float(r["time_s"])) for r in rows} == {
        (size, algorithm, 0.0) for size in ("1400000000", "4000000") for algorithm in ("ring", "ps", "auto")}
    assert all(r["busbw_GBps"] == "" for r in rows)


def test_progress_in_a_log_is_plain_periodic_lines(monkeypatch, capsys):
    from simnet.cli import console

    monkeypatch.setattr(console, "PLAIN_EVERY_S", 0.0)
    with console.progress("sweep") as update:
        update(0, 4)
        update(1, 4, "2 running")
        update(4, 4)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("sweep: 1/4 done, 2 running; ") and lines[0].endswith(" s elapsed")
    assert lines[1].startswith("sweep: 4/4 done; ") and lines[1].endswith("about 0 s left")


def test_a_part_s_own_time_left_is_not_contradicted_by_the_parts_pace(monkeypatch, capsys):
    """Review 93: jobs said "2/3 done, this run 4%, about 243 s left; 10 s elapsed, about 10 s
    left": the pace of the replays done (two short ones alone) against the shared replay's own
    estimate. A status that says its part's time left is the estimate."""
    from simnet.cli import console

    clock = iter([0.0, 1.0, 2.0, 10.0])
    monkeypatch.setattr(console.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(console, "PLAIN_EVERY_S", 0.0)
    with console.progress("simulating jobs") as update:
        update(1, 3)
        update(2, 3)
        update(2, 3, "this run 4%, about 243 s left")
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == "simulating jobs: 2/3 done, this run 4%, about 243 s left; 10 s elapsed"


def test_time_left_follows_the_pace_after_the_first_point(monkeypatch, capsys):
    """Fuzz finding (31f): calibrate said "1/288 done; 11 s elapsed, about 3182 s left" on a
    fit that then took seconds: its first point carried numba's compile. With a first point of
    10 s and then 1 s each, 2 of 10 done 11 s in leaves 8 points at 1 s: about 8 s."""
    from simnet.cli import console

    clock = iter([0.0, 10.0, 11.0])
    monkeypatch.setattr(console.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(console, "PLAIN_EVERY_S", 0.0)
    with console.progress("calibrate") as update:
        update(1, 10)
        update(2, 10)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["calibrate: 1/10 done; 10 s elapsed", "calibrate: 2/10 done; 11 s elapsed, about 8 s left"]


@pytest.mark.parametrize("command", ["run-jobs", "sweep", "calibrate"])
def test_nccl_variables_that_leave_nccl_nothing_are_one_line_everywhere(cli, tmp_path, root, command):
    """NCCL_ALGO=NVLS with NVLS turned off leaves NCCL nothing to run on a DGX H100: every
    command says so in one line with exit code 2 (not an internal error) and writes nothing."""
    from test_calibrate import write_log  # the nccl-tests log writer of the calibrate tests

    topology = root / "topologies/dgx_h100.yaml"
    env = {"NCCL_ALGO": "NVLS", "NCCL_NVLS_ENABLE": "0"}
    out = tmp_path / "out"
    if command == "run-jobs":
        path = tmp_path / "j.yaml"
        path.write_text(f"name: j\ntopology: {topology}\njobs: [{{name: A, gpus: 8, algorithm: auto, size: 64 MiB}}]\n")
        result = cli("run", path, "--json", out, env=env)
    elif command == "sweep":
        path = tmp_path / "s.yaml"
        path.write_text(f"name: s\ntopology: {topology}\nsize: 64 MiB\nalgorithms: [auto]\nsweep: {{gpus: [8]}}\n")
        result = cli("sweep", path, "--out", out, "--workers", "1", env=env)
    else:
        path = tmp_path / "box.log"
        path.write_text(write_log({2**26: 400.0}, 8, gpus_per_host=8))
        result = cli("calibrate", path, "-t", topology, "-o", out, env=env)
    assert result.exit_code == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "NCCL_ALGO=NVLS leaves nothing NCCL could run" in \
        result.stderr and "NCCL_PROTO=" not in result.stderr  # unset: not named (fuzz k #118)
    assert not out.exists() or not any(out.iterdir())


def test_all_runs_what_the_topology_can_and_says_what_it_skipped(cli, tmp_path, root):
    # one DGX H100: NVLSTree and CollNet run across hosts only, so `all` skips them with
    # NCCL's reason and runs every other algorithm; naming one of them is still refused
    path = tmp_path / "all.yaml"
    path.write_text(f"name: every\ntopology: {root / 'topologies/dgx_h100.yaml'}\nsizes: [1 MiB]\nalgorithms: all\n")
    result = cli("run", path, "--json", tmp_path / "all.json")
    assert result.exit_code == 0, result.stderr
    data = json.loads((tmp_path / "all.json").read_text())
    ran = [run["algorithm"] for run in data["runs"]]
    assert set(data["skipped"]) == {"nvls_tree", "collnet_direct", "collnet_chain"}
    assert "ring" in ran and "nvls" in ran and not set(ran) & set(data["skipped"])
    assert "skipped nvls_tree (all): nvls_tree runs across hosts" in " ".join(result.stdout.split())
    same = cli("run", root / "scenarios/single_node.yaml", "-a", "all", "-s", "1 MiB")
    assert same.exit_code == 0 and "skipped collnet_chain (all)" in same.stdout
    named = cli("run", path, "-a", "nvls_tree")
    assert named.exit_code == 2 and "nvls_tree runs across hosts" in named.stderr


def test_nvls_is_skipped_where_a_node_holds_one_gpu_of_the_run_as_nccl_has_none(cli, tmp_path, root):
    """Fuzz round ar, M1: over one GPU of each of four H100 hosts (NVLS NVSwitches all),
    `all` answered nvls_tree (2.822 ms beside the ring's 2.129) and the nvls skip advised it,
    while NCCL sets NVLS up only on nodes holding two GPUs of the communicator or more
    (ncclNvlsInit, src/transport/nvls.cc) and NCCL_ALGO=NVLSTree was refused for want of an
    NVSwitch that reduces. Both are skipped for that reason, and the refusal gives it."""
    path = tmp_path / "lone.yaml"
    path.write_text(f"name: lone\ntopology: {root / 'topologies/two_racks.yaml'}\n"
                    "gpus: [r0h0-gpu0, r0h1-gpu0, r0h2-gpu0, r0h3-gpu0]\nsizes: [64 MiB]\nalgorithms: all\n")
    result = cli("run", path, "--json", tmp_path / "all.json")
    assert result.exit_code == 0, result.stderr
    data = json.loads((tmp_path / "all.json").read_text())
    assert {"nvls", "nvls_tree"} <= set(data["skipped"]) and "ring" in {run["algorithm"] for run in data["runs"]}
    said = " ".join(result.stdout.split())
    assert "skipped nvls_tree (all): NCCL runs no NVLS where a node holds one GPU of the communicator" in said
    assert "use nvls_tree" not in said
    forced = cli("run", path, "-a", "auto", env={"NCCL_ALGO": "NVLSTree"})
    assert forced.exit_code == 2 and "NVLSTree needs two GPUs of the communicator on every node" in forced.stderr


@pytest.mark.parametrize("algorithm", ["collnet_direct", "collnet_chain"])
def test_collnet_is_refused_on_hosts_of_more_than_eight_gpus_as_nccl_skips_it(algorithm):
    """Fuzz round ar, M1: on two hosts of 16 H100 under SHARP switches `all` answered both
    CollNets, which NCCL skips where a node holds more than NCCL_MAX_DIRECT_ARITY + 1 = 8 GPUs
    of the communicator (src/enqueue.cc), as NCCL_ALGO=CollNetDirect here already said."""
    from simnet.errors import Unsupported

    sixteen = topology_from_dict({"name": "cn", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                             "gpus_per_host": 16, "gpu": "h100", "sharp": True}})
    with pytest.raises(Unsupported, match="hosts of at most 8 GPUs each"):
        simnet.simulate(sixteen, algorithm, 2**20)
    assert simnet.simulate(sixteen.subset([*sixteen.gpus[:8], *sixteen.gpus[16:24]]), algorithm, 2**20).time_s > 0
    # review 77, H2: nine GPUs on one node and seven on the other average eight a node, and NCCL's model
    # offered CollNet that the builder refuses: auto failed. NCCL holds it to the most on one node (maxLocalRanks)
    uneven = sixteen.subset([*sixteen.gpus[:9], *sixteen.gpus[16:23]])
    with pytest.raises(Unsupported, match="hosts of at most 8 GPUs each"):
        simnet.simulate(uneven, algorithm, 2**20)
    assert simnet.simulate(uneven, "auto", 2**20).algorithm not in ("collnet_direct", "collnet_chain")


def test_a_sweep_of_all_skips_an_algorithm_only_where_it_cannot_run(cli, tmp_path, root):
    # two racks of 4 hosts: at 8 GPUs (one host) NVLSTree cannot run, at 16 it can
    out, path = tmp_path / "sweep", tmp_path / "racks.yaml"
    path.write_text(f"name: racks\ntopology: {root / 'topologies/two_racks.yaml'}\nsizes: [1 MiB]\nalgorithms: [ring]\n")
    result = cli("sweep", path, "--gpus", "8,16", "-a", "all", "--out", out, "--workers", "1")
    assert result.exit_code == 0, result.stderr
    assert "skipped nvls_tree at 8 GPUs (all)" in " ".join(result.stdout.split())
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    nvls_tree = {r["gpus"]: r for r in records if r["algorithm"] == "nvls_tree"}
    assert "skipped" in nvls_tree[8] and nvls_tree[16]["sizes"] and "skipped" not in nvls_tree[16]
    rows = list(csv.DictReader(io.StringIO((out / "results.csv").read_text())))
    assert ("nvls_tree", "8") not in {(r["algorithm"], r["gpus"]) for r in rows}
    # the same folder, other algorithms: the sweep resumes (the algorithms are not part of
    # its identity); a point skipped under `all` and now named is tried again, and refused
    again = cli("sweep", path, "--gpus", "8,16", "-a", "ring", "-a", "tree", "--out", out, "--workers", "1")
    assert again.exit_code == 0 and "points already done" in again.stdout, again.stderr
    named = cli("sweep", path, "--gpus", "8", "-a", "nvls_tree", "--out", out, "--workers", "1")
    assert named.exit_code == 2 and "nvls_tree runs across hosts" in named.stderr


def test_compare_says_which_algorithms_of_all_an_option_could_not_run(cli, tmp_path, root):
    one, two = tmp_path / "one.yaml", tmp_path / "two.yaml"
    one.write_text(f"name: one\ntopology: {root / 'topologies/dgx_h100.yaml'}\nsize: 1 MiB\nalgorithms: all\n")
    two.write_text(f"name: two\ntopology: {root / 'topologies/two_racks.yaml'}\ngpus: 16\nsize: 1 MiB\n"
                   "algorithms: [ring]\n")
    result = cli("compare", one, two, "-o", tmp_path / "c.png")
    assert result.exit_code == 0, result.stderr
    assert "skipped nvls_tree for one (all): nvls_tree runs across hosts" in " ".join(result.stdout.split())


def test_a_size_listed_twice_is_run_and_shown_once(scenario):
    # sweeps already de-duplicate; a run printed the same rows twice and counted past its total
    spec = simnet.load_scenario(scenario).replace(sizes=[2**20, 2**20])
    seen = []
    results = run_scenario(spec, progress=lambda done, total: seen.append((done, total)))
    assert [(r.size_bytes, r.algorithm) for r in results.runs] == [(2**20, a) for a in ("ring", "tree", "ps")]
    assert seen[-1] == (3, 3)


def test_progress_in_a_log_says_how_far_a_long_run_is_before_the_first_is_done(monkeypatch, capsys):
    from simnet.cli import console

    monkeypatch.setattr(console, "PLAIN_EVERY_S", 0.0)
    with console.progress("simulating") as update:
        update(0, 1)
        update(0, 1, "this run 40%, about 30 s left")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("simulating: 0/1 done, this run 40%, about 30 s left; ")
    assert lines[0].endswith(" s elapsed")


def test_a_sweep_in_a_log_says_it_is_checking_its_points_before_the_first_runs(monkeypatch, cli, tmp_path):
    """Fuzz finding (31g): a sweep of 10^5 valid points checked every one (about 8 minutes)
    before the first ran, printing nothing, as if hung. Now each checked scenario is a
    progress status: with plain lines at every update, a line per scenario checked, two here
    (2 and 4 GPUs)."""
    from simnet.cli import console

    monkeypatch.setattr(console, "PLAIN_EVERY_S", 0.0)
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: t, generate: {kind: nvswitch, gpus: 4, gpu: h100}}\nsize: 1 MiB\n"
                    "algorithms: [ring]\nsweep: {gpus: [2, 4], options.chunk_size: [64 KiB]}\n")
    result = cli("sweep", path, "--out", tmp_path / "out", "--workers", "1")
    assert result.exit_code == 0, result.stderr
    checked = [line for line in result.stderr.splitlines() if "scenarios" in line]
    assert [line.split(", ")[1].split(";")[0] for line in checked] == ["checked 1 of 2 scenarios",
                                                                       "checked 2 of 2 scenarios"]


def test_a_run_of_several_replays_counts_them_and_never_seems_to_go_back(monkeypatch, capsys):
    """A 4,096-GPU hierarchical with stragglers said "this run 57%" and then "this run 50%,
    about 5 s left": the run's second replay (the healthy one its cost is told against). Each
    replay of a run is counted as it starts, and the status says which."""
    from simnet.cli import console
    from simnet.cli.run import _progress_told
    from simnet.engine.progress import Reporter

    monkeypatch.setattr(console, "PLAIN_EVERY_S", 0.0)
    with _progress_told("simulating") as told:
        told(0, 1)
        for total, done in ((100, 57), (100, 50), (10, 9)):
            Reporter(total, every_s=0.0)(done)
    statuses = [line.split(";")[0] for line in capsys.readouterr().err.splitlines() if "%" in line]
    assert statuses == ["simulating: 0/1 done, this run 57%", "simulating: 0/1 done, this run's replay 2 50%",
                        "simulating: 0/1 done, this run's replay 3 90%"]


def test_a_training_step_is_a_step_of_the_progress_of_its_own(tmp_path):
    """Review: the training step's replays were counted as replays of the scenario's last run
    ("this run's replay 2" at 1/1 done, or at 0/0 for a training step alone). The step is
    now a step of the progress: its replays are its own."""
    from simnet.engine.progress import listening

    path = tmp_path / "t.yaml"
    path.write_text("name: t\ntopology: {name: box, generate: {kind: nvswitch}}\nsizes: [1 MiB]\n"
                    "algorithms: [ps]\ntraining: {model: llama3_8b, parallelism: {tp: 8, micro_batches: 2}, "
                    "efficiency: 0.5}\n")
    spec = simnet.load_scenario(path)
    told, started = [], []
    with listening(lambda share, left_s: None, lambda: started.append(told[-1] if told else None)):
        run_scenario(spec, progress=lambda done, total: told.append((done, total)))
    assert told == [(0, 2), (1, 2), (2, 2)]
    assert started and all(at in ((0, 2), (1, 2)) for at in started)  # each replay under a step not yet done


def test_gpus_that_keep_every_gpu_of_the_scenario_are_said_to_change_nothing(cli, scenario, tmp_path):
    """Fuzz round ag: ``-g N`` equal to the scenario's GPUs (its gpus: list, or the whole
    topology) ran as without it, unsaid; said, in the JSON too; a smaller N is not said."""
    whole = json.loads(cli("run", scenario, "-a", "ring", "-s", "1 MiB", "--json", "-").stdout)
    same = cli("run", scenario, "-a", "ring", "-s", "1 MiB", "-g", str(whole["runs"][0]["gpus"]), "--json", "-")
    document = json.loads(same.stdout)
    assert [w["link"] for w in document["warnings"] if w["kind"] == "key_unread"] == ["--gpus"]
    assert document["runs"][0]["time_s"] == whole["runs"][0]["time_s"]
    fewer = json.loads(cli("run", scenario, "-a", "ring", "-s", "1 MiB", "-g", "2", "--json", "-").stdout)
    assert "--gpus" not in [w["link"] for w in fewer.get("warnings", [])]


@pytest.mark.parametrize("how", ["variant", "file"])
def test_compare_refuses_options_one_of_which_runs_at_line_rate(cli, tmp_path, how):
    """Fuzz round ar, M3: two options of one fabric, one of them ``model: ideal``, were ranked
    side by side (8.083 against 8.420 ms, only the ideal one on the Pareto front) with no word
    of the model: ideal is NCCL's lower bound, not other hardware. Refused on the line that
    sets it; options all at line rate still compare."""
    fabric = "{name: f, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 2, gpus_per_host: 1}}"
    head = f"name: c\ntopology: {fabric}\nsizes: [1 MiB]\nalgorithms: [ring]\n"
    if how == "variant":
        (tmp_path / "c.yaml").write_text(head + "variants:\n  - {name: A, cost: 1 M$}\n"
                                                "  - {name: B, set: {model: ideal}, cost: 1 M$}\n")
        result = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
        where = f"{tmp_path / 'c.yaml'}:7: variants[1].set.model: option B runs model: ideal"
    else:
        (tmp_path / "a.yaml").write_text(head)
        (tmp_path / "b.yaml").write_text(head.replace("name: c", "name: b") + "model: ideal\n")
        result = cli("compare", tmp_path / "a.yaml", tmp_path / "b.yaml", "-o", tmp_path / "c.png")
        where = f"{tmp_path / 'b.yaml'}:5: model: option b runs model: ideal"
    assert result.exit_code == 2 and result.stderr.startswith(where) and result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / "c.png").exists()
    (tmp_path / "i.yaml").write_text(head + "model: ideal\nvariants:\n  - {name: A}\n  - {name: B, set: {gpus: 2}}\n")
    assert cli("compare", tmp_path / "i.yaml", "-o", tmp_path / "i.png").exit_code == 0


def test_compare_refuses_mixed_models_before_checking_any_option_s_memory(cli, tmp_path, monkeypatch):
    """Review 79, L1: a line's mistake in the files (an option at model: ideal beside one that
    is not) is said before any option's memory is checked, which on a large comparison takes
    long or is refused first."""
    import simnet.run.compare as compare

    def no_memory(*args, **kwargs):
        raise AssertionError("the memory was checked before the files were")

    monkeypatch.setattr(compare, "check_point_fits", no_memory)
    fabric = "{name: f, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 2, gpus_per_host: 1}}"
    (tmp_path / "c.yaml").write_text(f"name: c\ntopology: {fabric}\nsizes: [1 MiB]\nalgorithms: [ring]\nvariants:\n"
                                     "  - {name: A}\n  - {name: B, set: {model: ideal}}\n")
    result = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
    assert result.exit_code == 2 and "option B runs model: ideal" in result.stderr, result.stderr


@pytest.mark.parametrize("servers, ps_servers", [(1, 1), (2, 1), (2, 2)])
def test_a_parameter_server_s_remedy_is_one_the_topology_can_run(cli, tmp_path, servers, ps_servers):
    """Fuzz round ax, F9: scenarios/ps_overload.yaml's nic_overload said "shard the server
    (options.ps_servers: K)", which its one kind: ps node refuses for any K >= 2. The remedy
    now says to add servers where every one of the topology's already serves, and bounds K by
    them where some are idle; following it runs."""
    star = f"{{name: s, generate: {{kind: ps_star, workers: 8, servers: {servers}}}}}"
    (tmp_path / "s.yaml").write_text(f"name: p\ntopology: {star}\nsizes: [4 MiB]\nalgorithms: [ps]\n"
                                     f"options: {{ps_servers: {ps_servers}}}\n")
    result = cli("run", tmp_path / "s.yaml", "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.stderr
    said = [w["message"] for w in json.loads((tmp_path / "r.json").read_text())["runs"][0]["warnings"]
            if w["kind"] == "nic_overload"]
    assert said, "a parameter server's port carries every worker's gradient"
    if ps_servers == servers:
        assert all("add more, a ps_star's generate.servers: K" in m for m in said), said
        more = star.replace(f"servers: {servers}", f"servers: {servers + 1}")
        (tmp_path / "s.yaml").write_text(f"name: p\ntopology: {more}\nsizes: [4 MiB]\nalgorithms: [ps]\n"
                                         f"options: {{ps_servers: {servers + 1}}}\n")
    else:
        assert all(f"options.ps_servers: K, up to the topology's {servers} parameter servers" in m for m in said)
        (tmp_path / "s.yaml").write_text(f"name: p\ntopology: {star}\nsizes: [4 MiB]\nalgorithms: [ps]\n"
                                         f"options: {{ps_servers: {servers}}}\n")
    assert cli("run", tmp_path / "s.yaml").exit_code == 0


@pytest.mark.parametrize("keys, variable, line", [
    ("size: 1 MiB\n", "NCCL_ALGO=PAT", "3: size: "),
    ("collective: all_gather\nsize: 1 MiB\n", "NCCL_ALGO=Tree", "3: collective: "),
    ("sizes: [1 MiB]\nalgorithms: [auto]\n", "NCCL_ALGO=PAT", "4: algorithms: ")])
def test_nccl_algo_leaving_nothing_is_said_on_the_line_that_asks_for_the_collective(root, tmp_path, cli, monkeypatch,
                                                                                    keys, variable, line):
    """Review 93, MEDIUM 2: a scenario that writes no `algorithms` (auto by default) was refused
    under NCCL_ALGO on that key at its `name:` line; said on the line that asks NCCL for the
    collective (`collective:`, else its sizes)."""
    (tmp_path / "s.yaml").write_text(f"name: t\ntopology: {root / 'topologies/two_racks.yaml'}\n{keys}")
    monkeypatch.setenv(*variable.split("="))
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 's.yaml'}:{line}{variable} leaves nothing NCCL could run")
