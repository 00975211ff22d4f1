"""Sweeps and capacity planning: the step model, plots, Dask, resume after SIGKILL, compare."""

import csv
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import matplotlib.image as mpimg
import pytest
from matplotlib.markers import MarkerStyle

from simnet.errors import InputError
from simnet.run.compare import compare_rows, pareto_front
from simnet.run.sweep.executors import DaskExecutor, LocalExecutor
from simnet.run.sweep.plan import plan_sweep
from simnet.run.sweep.run import run_sweep
from simnet.run.sweep.store import LOCK, load_records
from simnet.spec.scenario import load_scenario, scenario_from_dict
from simnet.units import format_time
from simnet.workloads.ddp import StepModel

SCENARIO = """name: small-sweep
model: ideal
topology:
  name: box
  generate: {{kind: nvswitch, gpus: 8, gpu_bandwidth: {bandwidth}, latency: {latency}}}
size: 64 MiB
algorithms: [ring]
workload: {{compute_time: 100 ms, gradient_size: 64 MiB}}
sweep: {{gpus: [1, 2, 4, 8]}}
"""


def write(tmp_path, bandwidth="10 GB/s", latency="1 us", name="s.yaml"):
    path = tmp_path / name
    path.write_text(SCENARIO.format(bandwidth=bandwidth, latency=latency))
    return path


def sweep_records(path, out, executor=None):
    records, _ = run_sweep(plan_sweep(load_scenario(path)), out, executor or LocalExecutor(2))
    return {r["gpus"]: r for r in records}


def test_speedup_is_n_when_communication_is_free(tmp_path):
    """At 1 PB/s (simnet's top of range is 10,000 Tb/s) and no latency the 64 MiB ring over 8
    GPUs takes 2 * 7/8 * 64 MiB / 1e15 B/s = 0.12 us: at most 1.2e-6 of the 100 ms step."""
    records = sweep_records(write(tmp_path, bandwidth="1000 TB/s", latency="0 s"), tmp_path / "out")
    for n, record in records.items():
        assert record["speedup"] == pytest.approx(n, rel=1.2e-6)
        assert record["efficiency"] == pytest.approx(1.0, rel=1.2e-6)


def test_speedup_matches_the_ring_closed_form(tmp_path):
    records = sweep_records(write(tmp_path), tmp_path / "out")
    size, compute, bandwidth, latency = 64 * 2**20, 0.1, 10e9, 2e-6
    for n, record in records.items():
        ring = 2 * (n - 1) * (latency + size / (n * bandwidth)) if n > 1 else 0.0
        assert record["iteration_time_s"] == pytest.approx(compute + ring, rel=1e-6)
        assert record["speedup"] == pytest.approx(n * compute / (compute + ring), rel=1e-6)


def test_buckets_overlap_the_backward_pass():
    model = StepModel(compute_s=0.3, gradient_bytes=10 * 2**20, bucket_bytes=2**20, backward_fraction=0.5)
    fast = model.iteration_time({2**20: 0.001})
    assert fast == pytest.approx(0.3 + 0.001)  # only the last bucket's AllReduce shows
    slow = model.iteration_time({2**20: 0.05})  # communication-bound: 10 x 50 ms from the first bucket on
    assert slow == pytest.approx(0.15 + 0.015 + 10 * 0.05)


def test_speedup_plot_shows_ideal_line_and_the_region_below_one(tmp_path, cli, figures):
    path = tmp_path / "slow.yaml"
    # a slow link: 8 GPUs step slower than 1, so a curve dips into the shaded region
    path.write_text(SCENARIO.format(bandwidth="100 MB/s", latency="1 us"))
    out = tmp_path / "plots"
    result = cli("sweep", path, "--out", out, "--workers", "2")
    assert result.exit_code == 0, result.stderr
    assert "speedup" in result.stdout
    assert mpimg.imread(out / "speedup.png").shape[0] > 300
    records = sorted(load_records(out / "results.jsonl"), key=lambda r: r["gpus"])
    ax = figures["speedup.png"].axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    ideal = lines["ideal (speedup = N)"]
    assert list(ideal.get_xdata()) == list(ideal.get_ydata()) == [1, 2, 4, 8]  # the diagonal
    ring = next(line for label, line in lines.items() if label.startswith("ring"))
    assert list(ring.get_xdata()) == [r["gpus"] for r in records]
    assert list(ring.get_ydata()) == pytest.approx([r["speedup"] for r in records])
    assert ax.get_xscale() == ax.get_yscale() == "log"  # log-log: ideal is a straight line
    shade = next(p for p in ax.patches if p.get_label().startswith("slower than 1 GPU"))
    assert shade.get_y() + shade.get_height() == pytest.approx(1)  # shaded up to speedup 1 (data units)
    assert shade.get_y() <= min(r["speedup"] for r in records)
    assert records[-1]["speedup"] < 1  # and 8 GPUs really are in it
    assert (out / "iteration_time.png").exists() and (out / "results.csv").exists()


def test_sweep_plot_writes_auto_s_pick_beside_each_point(tmp_path, cli, root, figures):
    # one DGX H100 at 64 MiB: NCCL rings 2 GPUs and runs NVLS over 8
    path = tmp_path / "auto.yaml"
    path.write_text(f"name: picks\ntopology: {root / 'topologies/dgx_h100.yaml'}\nsize: 64 MiB\n"
                    "algorithms: [auto]\nsweep: {gpus: [2, 8]}\n")
    out = tmp_path / "out"
    swept = cli("sweep", path, "--out", out, "--workers", "1")
    assert swept.exit_code == 0
    picks = [(r["gpus"], r["sizes"][0]["ran"]) for r in sorted(load_records(out / "results.jsonl"),
                                                               key=lambda r: r["gpus"])]
    assert len({pick for _, pick in picks}) == 2
    for _, pick in picks:  # the table names each point's pick too, as run's does
        assert f"auto -> {pick}" in swept.stdout
    for ax in figures["busbw.png"].axes:
        assert [line.get_label() for line in ax.get_lines()] == ["auto"]
        assert [(t.xy[0], t.get_text()) for t in ax.texts] == picks


def test_dask_local_cluster_gives_the_same_results_as_the_local_pool(tmp_path):
    path = write(tmp_path)
    local = sweep_records(path, tmp_path / "local")
    dask = sweep_records(path, tmp_path / "dask", DaskExecutor("local", workers=2))
    assert local == dask


def test_resume_after_sigkill_loses_nothing_and_recomputes_nothing(tmp_path, root):
    path = tmp_path / "big.yaml"
    path.write_text(f"""name: resume
topology: {root / 'topologies/two_racks.yaml'}
model: ideal
sizes: [1 MiB, 64 MiB]
algorithms: [ring, double_binary_tree, halving_doubling]
sweep: {{gpus: [8, 16, 24, 32]}}
""")  # 12 points of a few tenths of a second each: a kill after 3 lands part-way
    out = tmp_path / "out"
    results = out / "results.jsonl"
    command = [sys.executable, "-m", "simnet", "sweep", str(path), "--out", str(out), "--workers", "2"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not results.exists() or results.read_text().count("\n") < 3):
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    # its workers hold the sweep's lock (inherited) until the kernel has closed their files too, a moment after
    # the sweep itself is reaped: a resume before then is told the folder is in use (a loaded CI machine saw it)
    with (out / LOCK).open("a+") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(handle, fcntl.LOCK_UN)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, "the killed sweep's workers never let go of its lock"
                time.sleep(0.02)
    before = load_records(results)
    assert 3 <= len(before) < 12, "the sweep should be killed part-way"
    with results.open("a") as handle:
        handle.write('{"key": "torn line from a killed wri')  # what a kill during a write leaves
    finished = {r["key"] for r in before}
    records, computed = run_sweep(plan_sweep(load_scenario(path)), out, LocalExecutor(2))
    assert computed == 12 - len(finished)
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    keys = [r["key"] for r in lines]
    assert len(keys) == len(set(keys)) == 12  # complete, nothing twice, the torn line gone
    assert finished <= set(keys)
    again, computed = run_sweep(plan_sweep(load_scenario(path)), out, LocalExecutor(1))
    assert computed == 0 and again == records


def test_a_changed_scenario_is_refused(tmp_path, cli):
    path = write(tmp_path)
    out = tmp_path / "out"
    assert cli("sweep", path, "--out", out, "--workers", "1").exit_code == 0
    path.write_text(path.read_text().replace("compute_time: 100 ms", "compute_time: 200 ms"))
    result = cli("sweep", path, "--out", out)
    assert result.exit_code == 2
    assert "holds a sweep of other inputs: the scenario or its topology changed; use another --out" in result.stderr


def test_a_changed_topology_file_is_refused_even_when_the_scenario_is_not(tmp_path, cli):
    topology = tmp_path / "box.yaml"
    topology.write_text("name: box\ngenerate: {kind: nvswitch, gpus: 4, gpu_bandwidth: 10 GB/s}\n")
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: box.yaml\nsize: 1 MiB\nalgorithms: [ring]\n")
    out = tmp_path / "out"
    assert cli("sweep", path, "--out", out, "--workers", "1").exit_code == 0
    topology.write_text(topology.read_text().replace("10 GB/s", "20 GB/s"))
    result = cli("sweep", path, "--out", out, "--workers", "1")
    assert result.exit_code == 2 and "holds a sweep of other inputs: the scenario or its topology changed" in \
        result.stderr


def test_set_sweeps_a_dotted_parameter_and_grows_topologies(tmp_path, cli):
    path = write(tmp_path)
    out = tmp_path / "out"
    result = cli("sweep", path, "--out", out, "--gpus", "8,16", "--set",
                 "topology.generate.gpu_bandwidth=5GB/s,20GB/s", "--workers", "2")
    assert result.exit_code == 0, result.stderr
    records = load_records(out / "results.jsonl")
    assert {(r["gpus"], r["set"]["topology.generate.gpu_bandwidth"]) for r in records} == {
        (8, "5GB/s"), (8, "20GB/s"), (16, "5GB/s"), (16, "20GB/s")}  # 16 GPUs: the box grew
    by = {(r["gpus"], r["set"]["topology.generate.gpu_bandwidth"]): r for r in records}
    assert by[(8, "5GB/s")]["iteration_time_s"] > by[(8, "20GB/s")]["iteration_time_s"]
    bad = cli("sweep", path, "--out", tmp_path / "bad", "--set", "topology.generate.gpu_bandwidth=fast")
    assert bad.exit_code == 2 and "'fast' is not a bandwidth" in bad.stderr
    assert not (tmp_path / "bad").exists()  # nothing written half-way


def test_pareto_front_keeps_cheaper_options_that_are_not_slower():
    def option(name, cost, time_s):
        return (name, cost, [{"algorithm": "ring", "gpus": 8, "set": {}, "iteration_time_s": time_s,
                              "speedup": 8 * 0.1 / time_s, "sizes": [{"size_bytes": 1, "time_s": time_s,
                                                                      "busbw_GBps": 1.0, "bottleneck": None}]}])

    rows = compare_rows([option("cheap", 1e6, 0.2), option("same-speed-dearer", 2e6, 0.2),
                         option("a-hair-faster-dearer", 2.5e6, 0.1995), option("fast", 3e6, 0.1),
                         option("slow-dear", 4e6, 0.3)])
    front = {r["option"] for r in pareto_front(rows)}
    assert front == {"cheap", "fast"}  # 0.25 % faster is within the model's resolution: not worth 1.5 M$
    assert rows[0]["per_cost"] == pytest.approx((8 * 0.1 / 0.2) / 1.0)


def test_the_pareto_front_weighs_the_work_an_option_does_not_its_step_time():
    # fuzz 31ao S1: options at one cost, one with a 3.3x longer step that carries 4x the
    # tokens (22 % more tokens/s), was judged dominated on step time alone; and a 64-GPU
    # workload option (twice the GPUs' batches per iteration) lost to 32 GPUs at the same
    # iteration time because the 32 cost less
    def step(name, cost, step_s, tokens):
        return (name, cost, [{"algorithm": "ring", "gpus": 64, "set": {}, "step_s": step_s,
                              "tokens_per_s": tokens / step_s, "mfu": 0.3, "sizes": []}])

    rows = compare_rows([step("few-micro-batches", 3e6, 0.45, 131_072), step("many-micro-batches", 3e6, 1.49, 524_288)])
    assert [r["option"] for r in pareto_front(rows)] == ["many-micro-batches"]  # 351,865 against 291,271 tokens/s

    def iteration(name, cost, gpus, time_s):
        return (name, cost, [{"algorithm": "ring", "gpus": gpus, "set": {}, "iteration_time_s": time_s,
                              "speedup": gpus * 0.6 / time_s, "sizes": [{"size_bytes": 1, "time_s": 0.01,
                                                                         "busbw_GBps": 1.0, "bottleneck": None}]}])

    rows = compare_rows([iteration("64 GPUs", 3e6, 64, 0.6001), iteration("32 GPUs", 1.6e6, 32, 0.6001),
                         iteration("32 GPUs, dear", 3.2e6, 32, 0.6001)])
    assert {r["option"] for r in pareto_front(rows)} == {"64 GPUs", "32 GPUs"}  # twice the work for 1.4 M$ more


def test_compare_plots_what_an_option_does_per_second_where_options_differ_in_gpus(tmp_path, cli, figures):
    path = tmp_path / "g.yaml"
    path.write_text(SCENARIO.format(bandwidth="10 GB/s", latency="1 us").replace("sweep: {gpus: [1, 2, 4, 8]}\n", "")
                    + "variants:\n  - {name: eight, cost: 2 M$}\n  - {name: four, set: {gpus: 4}, cost: 1 M$}\n")
    result = cli("compare", path, "-o", tmp_path / "g.png")
    assert result.exit_code == 0, result.stderr
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.startswith("│")}
    assert rows["eight"].rstrip().endswith("* │") and rows["four"].rstrip().endswith("* │")
    ax = figures["g.png"].axes[0]
    assert ax.get_ylabel() == "GPU batches/s (GPUs / iteration time)"
    assert ax.get_title() == "small-sweep: cost against GPU batches/s (GPUs / iteration time)"  # not "time"
    at = {t.get_text(): t.xy[1] for t in ax.texts}
    iteration = {name: float(rows[name].split("│")[4].strip().split()[0]) / 1e3 for name in ("eight", "four")}
    assert at["eight"] == pytest.approx(8 / iteration["eight"], rel=1e-3)  # the table's iteration times, in ms
    assert at["four"] == pytest.approx(4 / iteration["four"], rel=1e-3)


def test_the_pareto_front_s_tolerance_does_not_chain():
    # fuzz round aq L1: each option within 1 % of the next cheaper one, 2.5 % from first to last:
    # D was dropped by C, itself dropped by B, itself by A; C is 1.7 % faster than A
    def option(name, cost, time_s):
        return (name, cost, [{"algorithm": "ring", "gpus": 8, "set": {}, "iteration_time_s": time_s,
                              "speedup": 8 * 0.1 / time_s, "sizes": [{"size_bytes": 1, "time_s": time_s,
                                                                      "busbw_GBps": 1.0, "bottleneck": None}]}])

    rows = compare_rows([option("A", 1e6, 0.6002), option("B", 2e6, 0.5952), option("C", 3e6, 0.5902),
                         option("D", 4e6, 0.5852)])
    assert [r["option"] for r in pareto_front(rows)] == ["A", "C"]  # D is within 1 % of C, B of A


def test_compare_cli_on_variants(tmp_path, cli, root, figures):
    path = tmp_path / "v.yaml"
    path.write_text(SCENARIO.format(bandwidth="10 GB/s", latency="1 us") + """variants:
  - {name: slow, set: {topology.generate.gpu_bandwidth: 5 GB/s}, cost: 1 M$}
  - {name: fast, set: {topology.generate.gpu_bandwidth: 50 GB/s}, cost: 2 M$}
  - {name: fast-but-dear, set: {topology.generate.gpu_bandwidth: 50 GB/s}, cost: 3 M$}
""")
    png = tmp_path / "compare.png"
    result = cli("compare", path, "-o", png)
    assert result.exit_code == 0, result.stderr
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.startswith("│")}
    assert rows["slow"].rstrip().endswith("* │") and rows["fast"].rstrip().endswith("* │")
    assert not rows["fast-but-dear"].rstrip().endswith("* │")
    assert [rows[o].split("│")[2].strip() for o in ("slow", "fast")] == ["1.00 M$", "2.00 M$"]  # as prices are quoted
    assert mpimg.imread(png).shape[0] > 300
    ax = figures["compare.png"].axes[0]
    labels = {t.get_text(): t.xy for t in ax.texts}
    assert sorted(labels) == ["fast", "fast-but-dear", "slow"]
    assert [labels[name][0] for name in ("slow", "fast", "fast-but-dear")] == [1, 2, 3]  # cost, M$
    assert labels["fast"][1] == labels["fast-but-dear"][1] < labels["slow"][1]  # same network, same time
    front = next(line for line in ax.get_lines() if line.get_label().startswith("Pareto front"))
    assert list(front.get_xdata()) == [1, 2]  # slow and fast; the dear twin is dominated
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= labels["slow"][1]  # from zero: gaps look their size


def _table(stdout: str) -> list[list[str]]:
    """A rich table's header and rows as cells."""
    return [[cell.strip() for cell in line[1:-1].split(line[-1] if line[-1] in "┃│" else "│")]
            for line in stdout.splitlines() if line[:1] in "┃│"]


def test_options_that_time_different_sizes_are_ranked_at_a_size_they_share(tmp_path, cli):
    # the column said "AllReduce 1 MiB" over the other file's 4 MiB time, and ranked one
    # option's 1 MiB against the other's 4 MiB: now both at the largest size both ran (the
    # same box at the same size takes the same time), and options sharing none are refused
    for name, sizes in (("one", "[1 MiB]"), ("four", "[1 MiB, 4 MiB]"), ("only4", "[4 MiB]")):
        (tmp_path / f"{name}.yaml").write_text(f"name: {name}\nmodel: ideal\ntopology: {{name: box, generate: "
                                               f"{{kind: nvswitch, gpus: 4}}}}\nsizes: {sizes}\nalgorithms: [ring]\n")
    result = cli("compare", tmp_path / "one.yaml", tmp_path / "four.yaml", "-o", tmp_path / "c.png")
    assert result.exit_code == 0, result.stderr
    header, *rows = _table(result.stdout)
    column = header.index("AllReduce 1 MiB")
    assert [row[0] for row in rows] == ["one", "four"] and rows[0][column] == rows[1][column]
    apart = cli("compare", tmp_path / "one.yaml", tmp_path / "only4.yaml", "-o", tmp_path / "d.png")
    assert apart.exit_code == 2 and "runs none of the sizes of the options before it" in apart.stderr
    assert not (tmp_path / "d.png").exists()
    out = tmp_path / "sweep"
    swept = cli("sweep", tmp_path / "one.yaml", "--gpus", "2", "--set", "sizes=1 MiB,4 MiB", "--out", out,
                "--workers", "1")
    assert swept.exit_code == 0, swept.stderr
    header, *rows = _table(swept.stdout)
    assert header[2:4] == ["size", "AllReduce"] and sorted(row[2] for row in rows) == ["1 MiB", "4 MiB"]


def test_compare_needs_variants_or_several_files(tmp_path, cli):
    result = cli("compare", write(tmp_path))
    assert result.exit_code == 2 and "compare needs variants" in result.stderr


def test_plan_crosses_every_axis():
    scenario = scenario_from_dict({"name": "p", "topology": {"name": "t", "generate": {"kind": "nvswitch"}},
                                   "size": "1 MiB", "algorithms": ["ring", "tree"],
                                   "sweep": {"gpus": [2, 4], "options.chunk_size": ["64 KiB", "256 KiB"]}})
    plan = plan_sweep(scenario)
    assert len(plan.points) == 2 * 2 * 2
    assert len({p.key for p in plan.points}) == 8
    assert Path(plan.base).exists()


def test_a_point_too_large_for_memory_stops_the_sweep_in_one_line_keeping_the_others(tmp_path, cli):
    from simnet.schedule.catalog import build_schedule
    from simnet.schedule.transfers import transfer_bytes

    path = write(tmp_path)  # NCCL's Tree: a schedule of transfers (a ring is replayed lane by lane, without one);
    # exact: under model: ideal a run the fluid network cannot hold is otherwise its lanes' lower bound
    path.write_text(path.read_text().replace("[ring]", "[tree]") + "options: {chunk_size: 64 KiB, exact: true}\n")
    eight = len(build_schedule("tree", load_scenario(path).topology, 64 * 2**20, chunk_size=64 * 2**10))
    out = tmp_path / "out"
    result = cli("sweep", path, "--out", out, "--workers", "1", env={"SIMNET_MEMORY": f"{eight * transfer_bytes('tree') - 1} B"})
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "s.yaml: the point at 8 GPUs: tree over 8 GPUs at 64 MiB needs" in result.stderr
    assert sorted(r["gpus"] for r in load_records(out / "results.jsonl")) == [1, 2, 4]


def test_workers_die_with_the_sweep_process_and_release_its_pipes(tmp_path, root):
    """kill -9 of the sweep alone (not its process group): its workers must not live on,
    computing and holding stdout open (``simnet sweep ... | tee log`` would never end)."""
    import select

    path = tmp_path / "big.yaml"
    path.write_text(f"""name: orphans
topology: {root / 'topologies/two_racks.yaml'}
model: ideal
sizes: [64 MiB]
algorithms: [ring, double_binary_tree, halving_doubling]
sweep: {{gpus: [16, 32, 48, 64]}}
""")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "simnet", "sweep", str(path), "--out", str(out), "--workers", "2"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    children_file = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.05)
        workers = [int(p) for p in children_file.read_text().split()]
    assert len(workers) == 2, "the sweep should have started its two workers"
    process.kill()
    process.wait()

    def alive(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.05)
    survivors = [pid for pid in workers if alive(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors
    ready, _, _ = select.select([process.stdout], [], [], 10)
    assert ready and process.stdout.read() is not None  # EOF: nobody holds the pipe any more
    process.stdout.close()


def test_a_second_sweep_on_the_same_out_is_refused_while_the_first_runs(tmp_path, cli):
    from simnet.run.sweep.store import locked

    path = write(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    with locked(out, "first"):
        result = cli("sweep", path, "--out", out, "--workers", "1")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert f"{out} is in use by another sweep (process {os.getpid()})" in result.stderr
    assert not (out / "results.jsonl").exists()
    assert cli("sweep", path, "--out", out, "--workers", "1").exit_code == 0  # released


def test_duplicate_gpu_counts_algorithms_and_values_are_one_point_each(tmp_path, cli):
    path = write(tmp_path)
    out = tmp_path / "out"
    result = cli("sweep", path, "--out", out, "--workers", "1", "--gpus", "4,4,2", "-a", "ring", "-a", "ring",
                 "--set", "workload.compute_time=100 ms,100 ms")
    assert result.exit_code == 0, result.stderr
    assert sorted(r["gpus"] for r in load_records(out / "results.jsonl")) == [2, 4]


def test_nccl_variables_are_part_of_the_sweep_and_reach_every_worker(tmp_path, cli, root):
    path = tmp_path / "auto.yaml"
    path.write_text(f"""name: auto
topology: {root / 'topologies/dgx_h100.yaml'}
size: 64 MiB
algorithms: [auto]
sweep: {{gpus: [8]}}
""")
    out = tmp_path / "out"
    records, _ = run_sweep(plan_sweep(load_scenario(path), env={"NCCL_ALGO": "Ring"}), out, LocalExecutor(1))
    assert [s["ran"] for s in records[0]["sizes"]] == ["ring"]
    result = cli("sweep", path, "--out", out, env={"NCCL_ALGO": "Tree"})  # not a resume of the Ring sweep
    assert result.exit_code == 2 and "holds a sweep of other inputs: NCCL_ALGO was ring, now tree" in result.stderr


def test_a_sweep_written_by_other_code_of_the_same_version_is_not_resumed(tmp_path, monkeypatch):
    """Review (2026-12-06): records written by another checkout of simnet 0.2.0 (EFA routed by
    ECMP then, by destination now) were resumed as done: "4 points already done, 0 computed
    now", old answers under new code. The sweep's identity holds a digest of simnet's code."""
    import simnet.run.sweep.plan as plan_module
    from simnet.errors import InputError

    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: t, generate: {kind: nvswitch, gpus: 4}}\nsize: 1 MiB\n"
                    "algorithms: [ring]\nsweep: {gpus: [2, 4]}\n")
    out = tmp_path / "out"
    run_sweep(plan_sweep(load_scenario(path)), out, LocalExecutor(1))
    again, _ = run_sweep(plan_sweep(load_scenario(path)), out, LocalExecutor(1))  # the same code: resumed
    assert len(again) == 2
    monkeypatch.setattr(plan_module, "code_digest", lambda: "other-code")
    with pytest.raises(InputError, match=r"holds a sweep of other inputs: simnet 0\.2\.0\+\w+ wrote it, this is "
                                         r"0\.2\.0\+other-code"):
        run_sweep(plan_sweep(load_scenario(path)), out, LocalExecutor(1))


@pytest.mark.parametrize("bad, line", [('[1, 2]\n', 2), ('{"gpus": 4}\n', 2), ('{"key": \n', 2)])
def test_a_damaged_results_line_is_refused_never_dropped_with_the_good_ones(tmp_path, cli, bad, line):
    path = write(tmp_path)
    out = tmp_path / "out"
    assert cli("sweep", path, "--out", out, "--workers", "1", "--gpus", "2,4").exit_code == 0
    results = out / "results.jsonl"
    good = results.read_text().splitlines(keepends=True)
    results.write_text(good[0] + bad + good[1])
    result = cli("sweep", path, "--out", out, "--workers", "1", "--gpus", "2,4")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert f"results.jsonl:{line}: line {line} is not" in result.stderr
    assert results.read_text() == good[0] + bad + good[1]  # nothing cut


def test_a_damaged_sweep_json_is_one_line(tmp_path, cli):
    path = write(tmp_path)
    out = tmp_path / "out"
    assert cli("sweep", path, "--out", out, "--workers", "1", "--gpus", "2").exit_code == 0
    (out / "sweep.json").write_text("{not json")
    result = cli("sweep", path, "--out", out, "--workers", "1", "--gpus", "2")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "sweep.json is damaged" in result.stderr


def test_a_sweep_refused_by_the_lock_never_deletes_the_holders_folder(tmp_path, monkeypatch):
    """B makes a fresh --out; before B locks it, A takes the lock and starts writing. B is
    refused and must leave A's folder and files alone."""
    import fcntl

    import simnet.run.sweep.run as run_module

    path = write(tmp_path)
    out = tmp_path / "out"
    real_locked = run_module.locked
    holder = {}

    def a_gets_there_first(folder, source):
        holder["file"] = (folder / ".lock").open("a+")
        fcntl.flock(holder["file"], fcntl.LOCK_EX | fcntl.LOCK_NB)
        (folder / "results.jsonl").write_text("")  # A's results file, about to grow
        return real_locked(folder, source)

    monkeypatch.setattr(run_module, "locked", a_gets_there_first)
    with pytest.raises(InputError, match="is in use by another sweep"):
        run_sweep(plan_sweep(load_scenario(path)), out, LocalExecutor(1))
    assert (out / ".lock").exists() and (out / "results.jsonl").exists()
    holder["file"].close()


def test_the_topologys_calibration_profile_is_part_of_the_sweep(tmp_path, cli):
    """A topology in its own folder names its profile relative to itself; points use that
    profile, and changing it makes the sweep another sweep."""
    (tmp_path / "topo").mkdir()
    (tmp_path / "topo/t.yaml").write_text("name: box\ngenerate: {kind: nvswitch, gpus: 4}\ncalibration: p.cal.yaml\n")
    profile = tmp_path / "topo/p.cal.yaml"
    profile.write_text("calibration: {base_latency: 1 us}\n")
    path = tmp_path / "s.yaml"
    path.write_text("name: cal\ntopology: topo/t.yaml\nsize: 1 MiB\nalgorithms: [ring]\nsweep: {gpus: [2, 4]}\n")
    out = tmp_path / "out"
    first = cli("sweep", path, "--out", out, "--workers", "1")
    assert first.exit_code == 0, first.stderr
    profile.write_text("calibration: {base_latency: 1 us}\n# refitted\n")
    again = cli("sweep", path, "--out", out, "--workers", "1")
    assert again.exit_code == 2 and "holds a sweep of other inputs: a calibration profile it reads changed" in \
        again.stderr


def test_training_and_jobs_points_apply_the_planned_nccl_variables(tmp_path, monkeypatch, root):
    """A worker applies the NCCL variables the sweep was planned with, whatever its own
    environment: with NCCL_NVLS_ENABLE=0 planned, a DGX H100's TP AllReduce and a job's
    auto pick leave NVLS out even where the worker's environment would allow it."""
    from simnet.run.sweep.evaluate import evaluate_point
    from simnet.run.sweep.plan import Point

    topology = root / "topologies/dgx_h100.yaml"
    training = tmp_path / "t.yaml"
    training.write_text(f"name: t\ntopology: {topology}\n"
                        "training: {model: llama3_8b, efficiency: 0.5, parallelism: {tp: 8, micro_batches: 1}}\n")
    jobs = tmp_path / "j.yaml"
    jobs.write_text(f"name: j\ntopology: {topology}\njobs: [{{name: A, gpus: 8, algorithm: auto, size: 64 MiB}}]\n")
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)

    def tp_algorithm(env):
        record = evaluate_point(plan_sweep(load_scenario(training), env=env), Point((), None, "auto"))
        return next(c["algorithm"] for c in record["training"]["collectives"] if c["kind"] == "tp")

    def job_algorithm(env):
        return evaluate_point(plan_sweep(load_scenario(jobs), env=env), Point((), None, "auto"))["jobs"][0]["algorithm"]

    assert tp_algorithm({}) == job_algorithm({}) == "nvls"
    assert tp_algorithm({"NCCL_NVLS_ENABLE": "0"}) != "nvls" and job_algorithm({"NCCL_NVLS_ENABLE": "0"}) != "nvls"


def test_a_sweep_whose_points_would_not_fit_the_memory_is_refused_before_it_is_planned(tmp_path, monkeypatch):
    """Fuzz round g: ten axes of ten values planned 10^7 points for 52 s before ending in
    "out of memory" (10^10 would have filled the machine). The product is counted first."""
    from simnet.errors import CannotSimulate

    monkeypatch.setenv("SIMNET_MEMORY", "1 MiB")
    (tmp_path / "s.yaml").write_text(
        "name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\nsizes: [1 MiB]\nalgorithms: [ring]\n"
        f"sweep: {{options.channels: {list(range(1, 41))}, options.chunk_size: "
        f"[{', '.join(f'{k} KiB' for k in range(64, 104))}]}}\n")
    with pytest.raises(CannotSimulate, match=r"a sweep of 1,600 points .* sweep fewer values"):
        plan_sweep(load_scenario(tmp_path / "s.yaml"))


def test_a_bad_axis_value_is_said_before_the_axes_product_is_planned(tmp_path, cli, monkeypatch):
    """Fuzz round g: a typo in one of several axes was said only after every point of their
    product was planned (10^6 points: minutes). Each value is checked alone first."""
    from simnet.run.sweep import plan

    def no_point(*args, **kwargs):
        raise AssertionError("a point was planned before the axis values were checked")

    monkeypatch.setattr(plan, "Point", no_point)
    (tmp_path / "s.yaml").write_text(
        "name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\nsizes: [1 MiB]\nalgorithms: [ring]\n"
        "sweep:\n  options.channels: [1, 2, 3, 4]\n  topology.generate.gpu_bandwith: [100 GB/s, 200 GB/s]\n")
    result = cli("sweep", tmp_path / "s.yaml", "--out", tmp_path / "o", "--set", "options.chunk_size=64KiB,128KiB")
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 's.yaml'}:7: sweep.topology.generate.gpu_bandwith: "), result.stderr
    assert not (tmp_path / "o").exists()


def test_a_point_its_algorithm_cannot_run_is_refused_on_the_algorithms_line(tmp_path, cli):
    """Fuzz round aa F7: NVLSTree at a sweep point of one host (NCCL runs it across hosts only)
    was refused naming the file alone; on the line of ``algorithms:`` that names it."""
    path = tmp_path / "nv.yaml"
    path.write_text("name: nv\ntopology: {name: b, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, "
                    "gpus_per_host: 4}}\nsizes: [1 MiB]\nalgorithms: [ring, nvls_tree]\n")
    result = cli("sweep", path, "--gpus", "8,4", "--out", tmp_path / "out", "--workers", "1")
    assert result.exit_code == 2 and result.stderr.startswith(
        f"{path}:4: algorithms: the point at 4 GPUs: nvls_tree runs across hosts"), result.stderr


def test_a_set_collective_is_judged_beside_the_algorithms_a_names(tmp_path, cli):
    """Fuzz round ah: ``sweep --set collective=all_gather -a ring`` on a file of ``algorithms:
    [ring, tree]`` was refused (no tree for AllGather) though -a replaces the file's algorithms,
    as ``-c all_gather -a ring`` showed by running. Each point's collective is judged beside
    the algorithms that run; without -a, the file's tree is still refused."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: t, generate: {kind: nvswitch, gpus: 4}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring, tree]\n")
    swept = cli("sweep", tmp_path / "s.yaml", "--set", "collective=all_gather", "-a", "ring", "--out", tmp_path / "a",
                "--workers", "1")
    assert swept.exit_code == 0, swept.stderr
    record = json.loads((tmp_path / "a" / "results.jsonl").read_text().splitlines()[0])
    assert record["collective"] == "all_gather" and record["algorithm"] == "ring"
    refused = cli("sweep", tmp_path / "s.yaml", "--set", "collective=all_gather", "--out", tmp_path / "b",
                  "--workers", "1")
    assert refused.exit_code == 2 and "unknown algorithm 'tree' for all_gather" in refused.stderr


def test_a_sweep_of_jobs_plots_their_times_and_no_busbw(tmp_path, cli, figures):
    """Fuzz round ai (LOW): a sweep of a jobs scenario drew busbw.png's bandwidth panel at 0 GB/s
    for every point (a point of jobs has no one collective's busbw: its value is null) and a
    log time axis over less than a decade with no tick labelled. Now the time panel alone,
    each point's slowest job, on a linear axis with labelled ticks."""
    (tmp_path / "j.yaml").write_text(
        "name: j\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 4}}\n"
        "jobs:\n  - {name: a, gpus: 4, placement: spread, algorithm: ring, size: 4 MiB}\n"
        "  - {name: b, gpus: 4, algorithm: ring, size: 4 MiB}\n")
    swept = cli("sweep", tmp_path / "j.yaml", "--set", "jobs.0.size=1MiB,4MiB", "--out", tmp_path / "o",
                "--workers", "1")
    assert swept.exit_code == 0, swept.stderr
    (ax,) = figures["busbw.png"].axes
    records = load_records(tmp_path / "o" / "results.jsonl")
    assert all(r["sizes"][0]["busbw_GBps"] is None for r in records)
    assert sorted(y for line in ax.get_lines() for y in line.get_ydata()) == sorted(
        r["sizes"][0]["time_s"] for r in records)
    assert ax.get_yscale() == "linear" and "slowest job" in ax.get_ylabel()
    assert any(label.get_text() for label in ax.get_yticklabels())


def test_a_lower_bound_marks_its_rates_csv_and_plots_too(tmp_path, cli, figures):
    """Fuzz round al left: a point whose time is a lower bound showed its busbw, speedup and
    efficiency unmarked (upper bounds, all three), and results.csv had no column to tell it by.
    The table marks them ``≤`` (the iteration time and exposed communication ``≥``), the CSV
    names ``lower_bound`` in its warnings columns, and each plot draws a hollow triangle on the
    bound pointing where the value lies, in a legend."""
    import csv

    path = tmp_path / "s.yaml"
    path.write_text("name: s\nmodel: ideal\nsizes: [16 MiB]\nalgorithms: [ring]\ntopology: {name: rail, generate: "
                    "{kind: rail_optimized, nodes_per_unit: 4, gpus_per_node: 8}}\n"
                    "workload: {compute_time: 100 us, gradient_size: 16 MiB}\n")
    out = tmp_path / "out"
    swept = cli("sweep", path, "--gpus", "8,32", "--out", out, "--workers", "1", env={"SIMNET_MEMORY": "1 MiB"})
    assert swept.exit_code == 0, swept.stderr
    exact, low = sorted(load_records(out / "results.jsonl"), key=lambda r: r["gpus"])
    assert exact["sizes"][0]["warnings"] == [] and low["sizes"][0]["warnings"] == ["lower_bound"]  # 8 GPUs: one box
    row = next(line for line in swept.stdout.splitlines() if line.strip("│ ").startswith("32 "))
    assert [cell.strip() for cell in row.split("│")[3:9]] == [
        f"≥ {format_time(low['iteration_time_s'])}", f"≤ {low['speedup']:.2f}", f"≤ {low['efficiency']:.0%}",
        f"≥ {format_time(low['communication_exposed_s'])}", f"≥ {format_time(low['sizes'][0]['time_s'])}",
        f"≤ {low['sizes'][0]['busbw_GBps']:.2f}"]
    assert "and ≤ the upper bound it makes of a rate" in swept.stdout
    rows = {int(r["gpus"]): r for r in csv.DictReader((out / "results.csv").open())}
    assert (rows[8]["warnings"], rows[32]["warnings"], rows[32]["bucket_warnings"]) == ("", "lower_bound",
                                                                                        "lower_bound")
    for name, panel, marker, says in (("busbw.png", 0, "v", "at most"), ("busbw.png", 1, "^", "at least"),
                                      ("speedup.png", 0, "v", "at most"), ("iteration_time.png", 0, "^", "at least")):
        ax = figures[name].axes[panel]
        (triangle,) = [c for c in ax.collections if c.get_label().startswith(says)]
        assert triangle.get_offsets()[:, 0].tolist() == [32]  # on the bounded point only
        assert any(text.get_text() == triangle.get_label() for text in ax.get_legend().get_texts())
        style = MarkerStyle(marker)  # pointing where the value lies: up from a lower bound, down from an upper
        assert triangle.get_paths()[0].vertices.tolist() == style.get_path().transformed(
            style.get_transform()).vertices.tolist()


def test_a_lower_bound_is_marked_in_the_sweep_and_computed_again_with_more_memory(tmp_path, cli):
    """Fuzz round al: under ``model: ideal`` a point the fluid network could not hold in the
    memory it had (SIMNET_MEMORY, or a worker's share) was shown as the time, unmarked, and a
    rerun with the memory to replay it resumed the bound as final (85.26 us against the exact
    96.54 us). The table marks it ``≥``, and a rerun computes it again."""
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nmodel: ideal\nsizes: [16 MiB]\nalgorithms: [ring]\ntopology: {name: rail, generate: "
                    "{kind: rail_optimized, nodes_per_unit: 4, gpus_per_node: 8}}\n")
    out = tmp_path / "out"
    bounded = cli("sweep", path, "--gpus", "32", "--out", out, "--workers", "1", env={"SIMNET_MEMORY": "1 MiB"})
    assert bounded.exit_code == 0, bounded.stderr
    (low,) = load_records(out / "results.jsonl")
    assert "lower_bound" in low["sizes"][0]["warnings"]
    assert "≥ " in bounded.stdout and "≥ marks a lower bound" in bounded.stdout
    again = cli("sweep", path, "--gpus", "32", "--out", out, "--workers", "1")
    assert again.exit_code == 0, again.stderr
    (exact,) = load_records(out / "results.jsonl")
    assert "bounded from below for want of memory; computed again" in again.stdout + again.stderr
    assert exact["sizes"][0]["warnings"] == [] and exact["sizes"][0]["time_s"] > low["sizes"][0]["time_s"]
    assert "≥" not in again.stdout
    # review 67: a bounded point this sweep does not run keeps its record
    cli("sweep", path, "--gpus", "32", "--out", tmp_path / "two", "--workers", "1", env={"SIMNET_MEMORY": "1 MiB"})
    other = cli("sweep", path, "--gpus", "16", "--out", tmp_path / "two", "--workers", "1")
    assert other.exit_code == 0, other.stderr
    assert sorted(r["gpus"] for r in load_records(tmp_path / "two" / "results.jsonl")) == [16, 32]


def test_an_axis_along_which_nothing_moves_is_said_once(tmp_path, cli):
    """Fuzz round am, L3: ``--set topology.generate.transport=ib,roce`` gave two identical points,
    unsaid (the point at ib, the default written, says nothing of its own), while a nic_bandwidth
    axis beside it moves every point. Said of the axis along which no point moves, and only it."""
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, "
                    "gpus_per_host: 4, gpu: h100}}\nsizes: [4 MiB]\nalgorithms: [ring]\n")
    swept = cli("sweep", path, "--set", "topology.generate.transport=ib,roce", "--set",
                "topology.generate.nic_bandwidth=100Gb/s,400Gb/s", "--out", tmp_path / "o", "--workers", "1")
    assert swept.exit_code == 0, swept.stderr
    records = load_records(tmp_path / "o" / "results.jsonl")
    for bandwidth in ("100Gb/s", "400Gb/s"):  # true: ib and roce answer alike at each bandwidth
        pair = [r for r in records if r["set"]["topology.generate.nic_bandwidth"] == bandwidth]
        assert len(pair) == 2 and pair[0]["sizes"][0]["time_s"] == pair[1]["sizes"][0]["time_s"]
    said = [line for line in swept.stdout.splitlines() if "changed nothing along this sweep" in line]
    assert len(said) == 1 and "topology.generate.transport changed nothing along this sweep" in said[0]


def test_the_sweep_table_says_no_bottleneck_where_run_s_does(tmp_path, cli):
    """Fuzz round an, L1: where no link ever filled, run's table said "none; busiest X (0% busy)"
    and the sweep's table named X the bottleneck. Both say it alike now."""
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: t, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, "
                    "gpus_per_host: 4, gpu: h100}}\nsizes: [4 KiB]\nalgorithms: [tree]\n")
    ran = cli("run", path)
    swept = cli("sweep", path, "--gpus", "8", "--out", tmp_path / "o", "--workers", "1")
    assert ran.exit_code == swept.exit_code == 0, swept.stderr
    (said,) = [line.split("│")[-2].strip() for line in ran.stdout.splitlines() if "none; busiest" in line]
    assert [line.split("│")[-2].strip() for line in swept.stdout.splitlines() if "│" in line and " 8 " in line] == [said]


def test_a_sweep_names_no_bottleneck_where_no_link_filled_and_a_key_once_however_written(cli, tmp_path):
    """Review 83: results.jsonl and results.csv still named the busiest link the bottleneck where
    none was saturated (run's JSON says null and busiest); and --set sizes.0 beside sizes[0]
    passed the "given twice" check, one of them dropped."""
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: t, generate: {kind: nvswitch, gpus: 8, gpu: h100}}\nsizes: [1 GiB]\n"
                    "algorithms: [ring]\n")
    out = tmp_path / "out"
    assert cli("sweep", path, "--gpus", "8", "--out", out, "--workers", "1").exit_code == 0
    size = json.loads((out / "results.jsonl").read_text().splitlines()[0])["sizes"][0]
    assert size["bottleneck"] is None and size["busiest"].startswith("gpu")
    row = next(csv.DictReader((out / "results.csv").open()))
    assert (row["bottleneck"], row["busiest"]) == ("", size["busiest"])
    twice = cli("sweep", path, "--set", "sizes.0=1MiB", "--set", "sizes[0]=2MiB", "--out", tmp_path / "o2")
    assert twice.exit_code == 2 and "--set: sizes.0 is given twice" in twice.stderr



def test_a_swept_yes_no_is_labelled_as_a_file_writes_it():
    """Fuzz round aw, L3: rows and results.csv said pxn=True / pxn=False, Python's spelling,
    where a file writes true and false."""
    from simnet.report.sweep_report import series_label

    label = series_label({"algorithm": "direct", "set": {"options.pxn": True, "training.dtype": "bf16"}})
    assert "pxn=true" in label and "dtype=bf16" in label and "True" not in label
    # whole however long (review 88, M6: cut at 60 characters, two layouts read alike)
    layout = {"tp": 8, "pp": 4, "micro_batches": 16, "micro_batch_size": 1, "virtual_stages": 2, "fsdp": False}
    assert series_label({"algorithm": "auto", "set": {"training.parallelism": layout}}).endswith(
        "parallelism={tp: 8, pp: 4, micro_batches: 16, micro_batch_size: 1, virtual_stages: 2, fsdp: false}")
