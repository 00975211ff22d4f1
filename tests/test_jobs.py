"""Many jobs on one fabric. Expected slowdowns are derived on paper from the ideal model.

The fabric: 2 racks x 2 single-GPU hosts, 100 Gb/s NICs (B = 12.5 GB/s), one spine, each
ToR's uplink 100 Gb/s: 2:1 oversubscribed. A 2-GPU ring across the racks is 2 steps of
S/2 bytes each way over a route of 6 links of 1 us: alone T = 2 (6 us + S/2 / B). Two such
rings from the same racks cross the same uplinks in the same direction and get half each:
T = 2 (6 us + S/2 / (B/2)).
"""

import csv
import json
import time

import numpy as np
import pytest

import simnet
from simnet import topology_from_dict
from simnet.report.paths import PLOT_FILES
from simnet.run.jobs import run_jobs
from simnet.spec.jobs import place_jobs

S = 64 * 2**20
B = 12.5e9
L = 6e-6
FABRIC = {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 1, "spines": 1,
          "nic_bandwidth": "100 Gb/s", "uplink_bandwidth": "100 Gb/s"}


def _fabric(**changes):
    return topology_from_dict({"name": "fabric", "generate": {**FABRIC, **changes}})


def test_two_rings_across_one_oversubscribed_uplink_each_get_half_of_it():
    result = run_jobs(_fabric(), [
        {"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 MiB"},
        {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "64 MiB"}], model="ideal")
    alone, together = 2 * (L + S / 2 / B), 2 * (L + S / 2 / (B / 2))
    for job in result.jobs:
        assert job["alone_s"] == pytest.approx(alone, rel=1e-9)
        assert job["together_s"] == pytest.approx(together, rel=1e-9)
    assert result.interference["a"]["b"] == result.interference["b"]["a"] == pytest.approx(together / alone)
    assert result.shared_links[0]["jobs"] == ["a", "b"] and "spine0" in result.shared_links[0]["link"]


def test_jobs_that_share_no_link_do_not_slow_each_other():
    """Same racks but full uplinks (1:1): each ring's flows have their own links."""
    result = run_jobs(_fabric(uplink_bandwidth="200 Gb/s"), [
        {"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 MiB"},
        {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "64 MiB"}], model="ideal")
    assert [job["slowdown"] for job in result.jobs] == [pytest.approx(1.0), pytest.approx(1.0)]


def test_repeats_follow_the_period_or_run_back_to_back():
    alone = 2 * (L + S / 2 / B)
    spaced = run_jobs(_fabric(), [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 MiB",
                                   "start": "1 ms", "repeat": 3, "period": "50 ms"}], model="ideal")
    assert spaced.jobs[0]["finished_s"] == pytest.approx(1e-3 + 2 * 50e-3 + alone, rel=1e-9)
    packed = run_jobs(_fabric(), [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 MiB",
                                   "repeat": 3}], model="ideal")
    assert packed.jobs[0]["finished_s"] == pytest.approx(3 * alone, rel=1e-9)


@pytest.mark.timeout(60)
def test_runs_far_longer_than_their_period_go_back_to_back_without_polling_every_period():
    """Links of 100 s, a 1 ms period: each run starts when the one before ends (three runs,
    three times one), and the watch for repeated cycles does not step through the 10^5
    periods of each run; with 1-day links the runs pass the horizon and are refused, as one
    run is (this spun for hours when the network was polled every period)."""
    from simnet.errors import CannotSimulate

    job = {"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "1 MiB"}
    once = run_jobs(_fabric(link_latency="100 s"), [job], model="ideal").jobs[0]["finished_s"]
    thrice = run_jobs(_fabric(link_latency="100 s"), [{**job, "repeat": 3, "period": "1 ms"}], model="ideal")
    assert thrice.jobs[0]["finished_s"] == pytest.approx(3 * once, rel=1e-12)
    with pytest.raises(CannotSimulate, match="horizon"):
        run_jobs(_fabric(link_latency="86400 s"), [{**job, "repeat": 3, "period": "1 ms"}], model="ideal")


def test_placements_pack_spread_or_draw_with_a_seed():
    topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2,
                                                         "gpus_per_host": 2}})
    packed, spread = place_jobs(topo, [{"name": "p", "gpus": 4, "size": "64 MiB"},
                                       {"name": "s", "gpus": 4, "placement": "spread", "size": "64 MiB"}])
    assert packed == ["r0h0-gpu0", "r0h0-gpu1", "r0h1-gpu0", "r0h1-gpu1"]
    assert spread == ["r1h0-gpu0", "r1h0-gpu1", "r1h1-gpu0", "r1h1-gpu1"]  # what the first job left
    (alone,) = place_jobs(topo, [{"name": "s", "gpus": 4, "placement": "spread", "size": "64 MiB"}])
    assert alone == ["r0h0-gpu0", "r0h1-gpu0", "r1h0-gpu0", "r1h1-gpu0"]  # racks take turns, then hosts
    draws = [place_jobs(topo, [{"name": "r", "gpus": 3, "placement": f"random({seed})", "size": "64 MiB"}])[0]
             for seed in (1, 1, 2)]
    assert draws[0] == draws[1] != draws[2]


def test_the_cli_prints_jobs_and_the_matrix_and_plots_it(cli, tmp_path, figures):
    path = tmp_path / "jobs.yaml"
    path.write_text("name: j\nmodel: ideal\ntopology:\n  name: fabric\n  generate: " + json.dumps(FABRIC) + "\n"
                    "jobs:\n  - {name: a, hosts: [r0h0, r1h0], algorithm: ring, size: 64 MiB}\n"
                    "  - {name: b, hosts: [r0h1, r1h1], algorithm: ring, size: 64 MiB}\n")
    result = cli("run", path, "--json", tmp_path / "j.json", "--plot", tmp_path / "plots")
    assert result.exit_code == 0, result.stderr
    assert "interference" in result.stdout and "2.00x" in result.stdout  # (6 us + 5.37 ms) / (6 us + 2.68 ms)
    document = json.loads((tmp_path / "j.json").read_text())
    assert document["interference"]["a"]["b"] == pytest.approx((L + S / B) / (L + S / 2 / B))
    assert set(figures) <= set(PLOT_FILES)  # the names the file options may not take
    image = figures["interference.png"].axes[0].images[0].get_array()
    assert image[0, 1] == pytest.approx(document["interference"]["a"]["b"])
    again = cli("run", path, "--json", "-").stdout
    assert json.loads(again) == document  # deterministic
    # fuzz 31f: with --json - the plot was skipped without a word, and with one job --plot drew nothing
    figures.clear()
    piped = cli("run", path, "--json", "-", "--plot", tmp_path / "piped")
    assert json.loads(piped.stdout) == document and "interference.png" in figures
    path.write_text(path.read_text().split("  - {name: b")[0])
    one = cli("run", path, "--plot", tmp_path / "one")
    assert one.exit_code == 2 and one.stderr.strip() == (
        f"{path}: --plot draws how jobs slow each other, and this scenario has one job: add another (or a background "
        "job), or leave --plot out")
    assert not (tmp_path / "one").exists()


@pytest.mark.parametrize("jobs, where, message", [
    ("[{name: a, hosts: [r0h0, r1h0], size: 1 MiB}, {name: b, hosts: [r1h0, r1h1], size: 1 MiB}]",
     "jobs[1]", "r1h0-gpu0 already belongs to job 'a'; jobs may not share a GPU"),
    ("[{name: a, hosts: [r9h9], size: 1 MiB}]", "jobs[0].hosts", "no host 'r9h9' with GPUs in fabric"),
    ("[{name: a, gpus: [r0h0-gpu0, gpu7], size: 1 MiB}]", "jobs[0].gpus", "'gpu7' is not a GPU of fabric"),
    ("[{name: a, gpus: 9, size: 1 MiB}]", "jobs[0].gpus", "9 GPUs asked, 4 of 4 are free"),
    # fuzz 31g #123: a placement not spelt right was said of the job, not of its placement
    ("[{name: a, gpus: 2, placement: scattered, size: 1 MiB}]", "jobs[0].placement",
     "'scattered': expected packed, spread or random(seed)"),
    ("[{name: a, gpus: 2, placement: 'random( 3)', size: 1 MiB}]", "jobs[0].placement", "'random( 3)': expected"),
    ("[{name: a, gpus: 2, size: 1 MiB}, {name: a, gpus: 2, size: 1 MiB}]", "jobs[1].name", "'a' names two jobs"),
    ("[{name: a, hosts: [r0h0], size: 1 MiB}]", "jobs[0]", "a job needs at least 2 GPUs"),
    ("[{name: a, gpus: 2, size: 1 MiB, algorithm: rings}]", "jobs[0].algorithm", "unknown algorithm 'rings'"),
    # fuzz 31d: an algorithm its GPUs cannot run named the file alone
    ("[{name: a, gpus: 2, size: 1 MiB, algorithm: nvls}]", "jobs[0].algorithm", "NCCL runs no NVLS where a node holds one GPU"),
])
def test_a_bad_job_is_one_line_naming_file_line_and_field(cli, tmp_path, jobs, where, message):
    path = tmp_path / "jobs.yaml"
    path.write_text("name: j\ntopology:\n  name: fabric\n  generate: " + json.dumps(FABRIC) + f"\njobs: {jobs}\n")
    result = cli("run", path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{path}:5: {where}: ") and message in result.stderr, result.stderr


@pytest.mark.parametrize("jobs, args, where, message", [
    ("[{name: a, gpus: 2, size: 1 MiB}]", ["-g", "1"], "jobs[0].gpus", "2 GPUs asked, 1 of 1 are free (with --gpus 1)"),
    ("[{name: a, gpus: [r0h0-gpu0, r1h1-gpu0], size: 1 MiB}]", ["-g", "2"], "jobs[0].gpus",
     "'r1h1-gpu0' is not among the run's 2 GPUs"),
    ("[{name: a, gpus: [r0h0-gpu0, r1h1-gpu0], size: 1 MiB}]\ngpus: 3", [], "jobs[0].gpus",
     "'r1h1-gpu0' is not among the run's 3 GPUs"),
    ("[{name: a, gpus: [r0h0-gpu0, r0h0-gpu0, r0h1-gpu0], size: 1 MiB}]", [], "jobs[0].gpus",
     "'r0h0-gpu0' is listed twice"),
    ("[{name: a, hosts: [r0h0, r1h0, r0h0], size: 1 MiB}]", [], "jobs[0].hosts", "'r0h0' is listed twice")])
def test_jobs_run_on_the_run_s_gpus_or_are_refused_on_their_line(cli, tmp_path, jobs, args, where, message):
    """Fuzz findings: `run -g 1` with a 2-GPU job named no line; a job naming a GPU outside
    gpus: or -g ran on it; a GPU named twice in a job ran once."""
    path = tmp_path / "jobs.yaml"
    path.write_text("name: j\ntopology:\n  name: fabric\n  generate: " + json.dumps(FABRIC) + f"\njobs: {jobs}\n")
    result = cli("run", path, *args)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{path}:5: {where}: ") and message in result.stderr, result.stderr


@pytest.mark.parametrize("placement", ["jobs", "scenario"])
def test_a_placement_that_leaves_a_later_job_s_named_gpus_free_runs_and_is_not_said_moot(cli, tmp_path, placement):
    """Fuzz round ap S1: judging whether a spread placement changed anything placed its job
    packed, which takes the GPUs a later job names: exit 70 (JobError) on a valid file."""
    spread = "placement: spread, " if placement == "jobs" else ""
    path = tmp_path / "jobs.yaml"
    path.write_text("name: j\ntopology:\n  name: fabric\n  generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 2, "
                    "gpus_per_host: 4}\n" + ("placement: spread\n" if placement == "scenario" else "")
                    + f"jobs:\n  - {{name: a, gpus: 4, {spread}size: 1 MiB}}\n"
                    "  - {name: c, gpus: [r0h0-gpu3, r1h0-gpu3], size: 1 MiB}\n")
    result = cli("run", path, "--json", tmp_path / "out.json")
    assert result.exit_code == 0, result.stderr
    assert "changed nothing" not in result.stdout + result.stderr  # spread decided that c's GPUs were free
    jobs = json.loads((tmp_path / "out.json").read_text())["jobs"]
    assert [(job["gpus"], job["first_gpu"], job["hosts"]) for job in jobs] == [(4, "r0h0-gpu0", 4),
                                                                                (2, "r0h0-gpu3", 2)]  # a spread


def test_background_traffic_at_full_load_takes_its_fair_half_of_a_shared_uplink():
    """Noise between the racks' other hosts at 100% load keeps one flow each way on the
    uplinks the ring crosses: the ring gets at most half (slowdown <= 2, the fair share) and
    nearly half: the noise pauses only for a route's latency between its periods."""
    result = run_jobs(_fabric(), [
        {"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 MiB"},
        {"name": "noise", "background": {"pattern": "uniform", "load": "100%", "seed": 1}}], model="ideal")
    ring, noise = result.jobs
    assert (noise["gpus"], noise["algorithm"]) == (2, "background uniform")  # the GPUs left: r0h1, r1h1
    two_rings = (L + S / B) / (L + S / 2 / B)
    assert 1.95 < ring["slowdown"] <= two_rings + 1e-9
    assert noise["runs"] > 1  # repeated for as long as the ring ran


@pytest.mark.parametrize("job, message", [
    ("{name: n, background: {pattern: uniform, load: 130%}}", "is not a load"),
    ("{name: n, background: {pattern: bursty, load: 30%}}", "'bursty' is not one of 'uniform', 'all_to_all' or 'incast'"),
    ("{name: n, size: 1 MiB, background: {pattern: uniform, load: 30%}}", "a background job makes its own traffic"),
])
def test_a_bad_background_job_is_one_line(cli, tmp_path, job, message):
    path = tmp_path / "jobs.yaml"
    path.write_text("name: j\ntopology:\n  name: fabric\n  generate: " + json.dumps(FABRIC) + f"\njobs: [{job}]\n")
    result = cli("run", path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


@pytest.mark.parametrize("start, refused", [("1 s", True), ("1 us", False)])
def test_background_traffic_that_starts_after_the_other_jobs_ended_is_refused_on_its_line(cli, tmp_path, start,
                                                                                          refused):
    """Fuzz round y F1: a background job starting after every other job had ended ran no
    period, and the run stopped on an internal ValueError said as the file's fault (exit 2,
    "max() arg is an empty sequence", two numpy warnings). A 64 MiB ring of two over 100 Gb/s
    takes over S/B = 5.4 ms, so noise from 1 us on overlaps it; from 1 s on it never runs."""
    path = tmp_path / "jobs.yaml"
    path.write_text("name: j\ntopology:\n  name: fabric\n  generate: " + json.dumps(FABRIC) + "\njobs:\n"
                    "  - {name: a, hosts: [r0h0, r1h0], algorithm: ring, size: 64 MiB}\n"
                    f"  - {{name: n, background: {{pattern: uniform, load: 50%, seed: 1}}, start: {start}}}\n")
    result = cli("run", path)
    if refused:
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"{path}:7: jobs[1].start: 1.000 s: background traffic runs only while the "
                                        "other jobs run"), result.stderr
    else:
        assert result.exit_code == 0 and not result.stderr, result.stderr


def test_compare_refuses_a_file_of_jobs_beside_a_file_of_one_collective(cli, tmp_path):
    """Fuzz round au, L5: one column ranked a 4-GPU AllReduce (98.71 us) against the slowest of
    two 2-GPU jobs (61.80 us), both on the Pareto front, without a word."""
    (tmp_path / "A.yaml").write_text("name: A\ntopology: {name: t, generate: {kind: nvswitch, gpus: 4, gpu: h100}}\n"
                                     "sizes: [16 MiB]\nalgorithms: [ring]\ncost: 1 M$\n")
    (tmp_path / "B.yaml").write_text("name: B\ntopology: {name: t2, generate: {kind: nvswitch, gpus: 8, gpu: h100}}\n"
                                     "cost: 2 M$\njobs: [{name: a, gpus: 2, size: 16 MiB}, {name: b, gpus: 2, "
                                     "size: 16 MiB}]\n")
    result = cli("compare", tmp_path / "A.yaml", tmp_path / "B.yaml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 'B.yaml'}:4: jobs: B runs jobs, ranked by its slowest beside the "
                                    "others, and A one collective over its GPUs")


def test_compare_ranks_placements_by_the_slowest_job(cli, tmp_path):
    """Two 2-GPU jobs. Packed, each keeps to its rack: a ring over one ToR, 4 links of 1 us,
    T = 2 (4 us + S/2 / B). Spread, each crosses the 2:1 uplink the other crosses too:
    T = 2 (6 us + S/2 / (B/2))."""
    path = tmp_path / "placement.yaml"
    path.write_text("name: p\nmodel: ideal\ntopology:\n  name: fabric\n  generate: " + json.dumps(FABRIC) + "\n"
                    "jobs:\n  - {name: A, gpus: 2, algorithm: ring, size: 64 MiB}\n"
                    "  - {name: B, gpus: 2, algorithm: ring, size: 64 MiB}\n"
                    "variants:\n  - {name: packed, set: {placement: packed}}\n"
                    "  - {name: spread, set: {placement: spread}}\n")
    from simnet.run.compare import compare_scenarios
    from simnet.spec.scenario import load_scenario

    result = cli("compare", path, "-o", tmp_path / "c.png")
    assert result.exit_code == 0, result.stderr
    assert "jobs (slowest A)" in result.stdout
    rows = {row["option"]: row for row in compare_scenarios([load_scenario(path)])}
    assert rows["packed"]["merit_s"] == pytest.approx(2 * (4e-6 + S / 2 / B), rel=1e-9)
    assert rows["spread"]["merit_s"] == pytest.approx(2 * (L + S / 2 / (B / 2)), rel=1e-9)


def _skips_on_simpy(monkeypatch) -> list[int]:
    """Jobs replayed on the SimPy network (whose skip over repeated cycles the compiled one
    lacks); the list returned hears how many stretches each skip takes."""
    from simnet.engine.accounting import LinkStats

    monkeypatch.setattr("simnet.engine.replay._jobs_run_compiled",
                        lambda asked, runs, faulted=False, alone_ps=None, fresh=False: False)
    skipped = []
    repeat = LinkStats.repeat_since
    monkeypatch.setattr(LinkStats, "repeat_since", lambda self, before, times: skipped.append(times) or
                        repeat(self, before, times))
    return skipped


@pytest.mark.parametrize("jobs, skips", [
    # two rings sharing the oversubscribed uplinks, periods 1 and 1.5 ms (a 3 ms cycle), b late by 0.2 ms
    ([{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "4 MiB", "repeat": 40, "period": "1 ms"},
      {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "4 MiB", "repeat": 30,
       "period": "1.5 ms", "start": "0.2 ms"}], True),
    # a ring beside background traffic on the same uplinks
    ([{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "4 MiB", "repeat": 40, "period": "1 ms"},
      {"name": "noise", "hosts": ["r0h1", "r1h1"], "background": {"pattern": "uniform", "load": "50%"},
       "period": "0.5 ms"}], True),
    # runs longer than their period: each starts when the one before ends, a cycle of one run each
    ([{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 MiB", "repeat": 8, "period": "1 ms"},
      {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "64 MiB", "repeat": 8, "period": "1 ms"}],
     True),
    # never idle while both run: runs outlast their 7 and 11 us periods, back to back on the shared uplinks,
    # their phases never repeating; once b is done, a's runs alone repeat
    ([{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 KiB", "repeat": 60, "period": "7 us"},
      {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "1 MiB", "repeat": 12, "period": "11 us"}],
     True),
    # b starts 30 ms in: a's runs repeat alone before it (a job yet to start is no part of the state), then beside b
    ([{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "4 MiB", "repeat": 60, "period": "1 ms"},
      {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "4 MiB", "repeat": 20,
       "period": "1.5 ms", "start": "30.3 ms"}], True),
    # a runs late beside b (180 us a run against a 120 us period), then alone (96 us) catches up a run at a time:
    # its idle states repeat run after run, but only until it is back on its period (skipping all the runs whose
    # state repeats, ignoring that bound, ends a 0.1 ms early)
    ([{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "1 MiB", "repeat": 200, "period": "120 us"},
      {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "64 MiB"}], True)])
def test_repeated_cycles_are_taken_from_one_replayed_cycle_exactly(jobs, skips, monkeypatch, fabric=None,
                                                                   model="ideal"):
    """Repeated runs settle into cycles (the periods' least common multiple, back-to-back
    runs, a job left alone); the cycles skipped give every run the time to the picosecond,
    and the links the statistics, that replaying them all gives (byte counts to float
    rounding)."""
    skipped = _skips_on_simpy(monkeypatch)
    fabric = fabric or _fabric()
    fast = run_jobs(fabric, jobs, model=model)
    assert bool(skipped) == skips
    monkeypatch.setattr("simnet.engine.replay._may_skip", lambda runs, faulted=False: False)  # replay every cycle
    slow = run_jobs(fabric, jobs, model=model)
    assert json.dumps(fast.to_dict(), sort_keys=True) == json.dumps(slow.to_dict(), sort_keys=True)
    for name in ("saturated_ps", "busy_ps", "either_saturated_ps", "peak", "max_flows"):
        assert (getattr(fast.together, name) == getattr(slow.together, name)).all(), name
    assert fast.together.bytes == pytest.approx(slow.together.bytes, rel=1e-12)


def test_a_job_yet_to_start_leaves_the_others_cycles_to_skip(monkeypatch):
    """A job that starts later was part of the state (its distance ahead shrank at every idle
    instant), so the jobs already running replayed every run until it started: a's 30 runs
    before b's start at 30.3 ms. Now a job yet to start is no part of the state and bounds the
    skip: the together replay skips a stretch before b starts and one after (exactness: the
    parametrized test above, the same jobs)."""
    skipped = _skips_on_simpy(monkeypatch)
    jobs = [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "4 MiB", "repeat": 60,
             "period": "1 ms"},
            {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "4 MiB", "repeat": 20,
             "period": "1.5 ms", "start": "30.3 ms"}]
    result = run_jobs(_fabric(), jobs, model="ideal")
    together = skipped[2:]  # after a alone and b alone
    assert len(together) == 2 and together[0] <= 30, skipped  # first: stretches of a's 1 ms before b starts
    assert result.jobs[0]["runs"] == 60 and result.jobs[1]["runs"] == 20


def test_repeated_cycles_without_latency_are_found_and_exact(monkeypatch):
    """Links of no latency deliver a run's last data inside the network's settling of that
    instant: the cycles are looked for once it has settled (not from inside it, where the
    network is never idle), and found."""
    jobs = [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "1 MiB", "repeat": 50,
             "period": "120 us"},
            {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "4 MiB", "repeat": 30,
             "period": "100 us"}]
    test_repeated_cycles_are_taken_from_one_replayed_cycle_exactly(jobs, True, monkeypatch,
                                                                   _fabric(link_latency="0 s"))


def test_runs_that_free_their_flows_in_another_order_each_time_still_repeat(monkeypatch):
    """Fuzz round y F13: a periodic NVLSTree job (idle between runs) freed its flows' slots in
    an order that differed run after run, so no two idle states were equal and every run was
    replayed (300 runs: 83 s, against a ring's 0.8 s). Once every flow is done the slots are
    handed out as a fresh network's: the runs repeat from the second on, to the picosecond."""
    jobs = [{"name": "a", "gpus": 8, "algorithm": "nvls_tree", "size": "16 MiB", "repeat": 12, "period": "1 ms"}]
    fabric = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                           "gpus_per_host": 4}})
    test_repeated_cycles_are_taken_from_one_replayed_cycle_exactly(jobs, True, monkeypatch, fabric, model="nccl")


def test_jobs_whose_schedules_do_not_fit_together_are_refused_before_any_replay(monkeypatch):
    """Each job's schedule fits the memory simnet may use, both together do not: one line
    naming the jobs, before anything is replayed."""
    from simnet.errors import CannotSimulate
    from simnet.schedule.transfers import TRANSFER_BYTES

    jobs = [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 MiB"},
            {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "64 MiB"}]
    seen = []
    run_jobs(_fabric(), jobs[:1], model="ideal", progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 2), (1, 2), (2, 2)]  # alone, then together
    fabric, one = _fabric(), 4 * TRANSFER_BYTES  # a 2-GPU ring under ideal: 2 steps each way, 4 transfers
    monkeypatch.setenv("SIMNET_MEMORY", f"{int(1.5 * one)} B")
    replays = []
    monkeypatch.setattr("simnet.run.jobs.replay_jobs", lambda *args, **kwargs: replays.append(1))
    with pytest.raises(CannotSimulate, match="the schedules of jobs a, b held together"):
        run_jobs(fabric, jobs, model="ideal")
    assert not replays


def test_a_hierarchical_job_that_cannot_fit_beside_the_others_is_refused_before_its_variants_run(monkeypatch):
    """Left by fuzz round ak (M4's fix): a hierarchical job without inner simulated both of its
    variants to pick the faster, and only then found its schedule would not fit beside the jobs
    before it. Its smaller variant is counted first: refused in one line, nothing simulated."""
    from simnet.errors import CannotSimulate
    from simnet.schedule.catalog import build_schedule
    from simnet.schedule.transfers import count_transfers, transfer_bytes

    fabric = _fabric()
    jobs = [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 MiB"},
            {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "hierarchical", "size": "64 MiB"}]
    ring = 4 * transfer_bytes("ring")  # a 2-GPU ring under ideal: 4 transfers
    sub = fabric.subset([g for g in fabric.gpus if fabric.label(g, "host") in ("r0h1", "r1h1")])
    least = min(count_transfers(lambda i=inner: build_schedule("hierarchical", sub, 2**26, inner=i))
                for inner in ("tree", "ring"))
    monkeypatch.setenv("SIMNET_MEMORY", f"{ring + least * transfer_bytes('hierarchical') - 1} B")
    simulated = []
    monkeypatch.setattr("simnet.run.point.Setup.simulate", lambda *args, **kwargs: simulated.append(args))
    with pytest.raises(CannotSimulate, match=f"the schedules of jobs a, b held together \\(at least {4 + least:,}"):
        run_jobs(fabric, jobs, model="ideal")
    assert not simulated


def test_servers_without_rack_labels_are_a_rack_each():
    """Two servers of two GPUs, no rack labels: a spread job of two GPUs takes one GPU of
    each server, and a job on one server spans one host and one rack (it said a rack per GPU)."""
    topo = topology_from_dict({"name": "two servers", "nodes": [
        {"id": f"g{i}", "kind": "gpu", "host": f"h{i // 2}"} for i in range(4)] + [{"id": "s", "kind": "switch"}],
        "links": [{"a": f"g{i}", "b": "s", "bandwidth": "100 Gb/s", "latency": "1 us"} for i in range(4)]})
    (spread,) = place_jobs(topo, [{"name": "a", "gpus": 2, "placement": "spread", "size": "1 MiB"}])
    assert sorted(topo.label(g, "host") for g in spread) == ["h0", "h1"]
    result = run_jobs(topo, [{"name": "a", "gpus": ["g0", "g1"], "algorithm": "ring", "size": "1 MiB"}],
                      model="ideal")
    assert (result.jobs[0]["hosts"], result.jobs[0]["racks"]) == (1, 1)


def test_a_fault_slows_every_replay_of_the_jobs_and_the_healthy_run_says_its_cost():
    """Faults apply to jobs as to a scenario's collectives (they were refused beside jobs).
    The uplink tor0-spine0 at 50 % from the start carries B/2 each way, so either ring alone
    runs at B/2, T = 2 (6 us + S/2 / (B/2)), and the two together at B/4 each; on the healthy
    fabric together is the two rings' B/2 each (the module docstring's)."""
    fault = [{"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "50%"}]
    result = run_jobs(_fabric(), [
        {"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 MiB"},
        {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "64 MiB"}], model="ideal",
        faults=fault)
    for job in result.jobs:
        assert job["alone_s"] == pytest.approx(2 * (L + S / 2 / (B / 2)), rel=1e-9)
        assert job["together_s"] == pytest.approx(2 * (L + S / 2 / (B / 4)), rel=1e-9)
        assert job["healthy_s"] == pytest.approx(2 * (L + S / 2 / (B / 2)), rel=1e-9)
    assert result.to_dict()["faults"] == [{"at_s": 0.0, "what": "link tor0-spine0 at 50%", "links": 2}]
    assert not any(w.kind == "fault_unfelt" for w in result.warnings)


def test_a_job_alone_under_a_fault_answers_as_its_collective_run_as_a_scenario():
    """Same hardware, same answer: a job's time alone under a fault mid-run (the uplink at
    20 % from 30 us: part of the run at each rate) is the scenario's run of the same
    AllReduce under that fault, to the picosecond."""
    from simnet import simulate

    topo = _fabric()
    fault = [{"at": "30 us", "link": ["tor0", "spine0"], "bandwidth": "20%"}]
    result = run_jobs(topo, [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "4 MiB"}],
                      model="ideal", faults=fault)
    run = simulate(topo, "ring", 4 * 2**20, gpus=["r0h0-gpu0", "r1h0-gpu0"], model="ideal", faults=fault)
    assert result.jobs[0]["alone_s"] == run.time_s
    assert run.time_s > run.conditions["healthy_s"]


def test_a_spine_down_moves_the_jobs_flows_to_the_other_spine():
    """Two spines: healthy, routing sends both rings' flows rack 0 -> rack 1 over spine1 and
    back over spine0, one 100 Gb/s uplink each way shared by the two (B/2 each). spine0
    down from the start moves the way back onto spine1 too, whose link with tor0 runs at
    50 %: each way B/4 per ring, T = 2 (6 us + S/2 / (B/4)); alone B/2."""
    result = run_jobs(_fabric(spines=2), [
        {"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 MiB"},
        {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "64 MiB"}], model="ideal",
        faults=[{"at": "0 s", "node": "spine0", "down": True},
                {"at": "0 s", "link": ["tor0", "spine1"], "bandwidth": "50%"}])
    for job in result.jobs:
        assert job["alone_s"] == pytest.approx(2 * (L + S / 2 / (B / 2)), rel=1e-9)
        assert job["together_s"] == pytest.approx(2 * (L + S / 2 / (B / 4)), rel=1e-9)
        assert job["healthy_s"] == pytest.approx(2 * (L + S / 2 / (B / 2)), rel=1e-9)
    assert {link["link"].split("->")[1] for link in result.shared_links} | {
        link["link"].split("->")[0] for link in result.shared_links} >= {"spine1"}
    assert not any("spine0" in link["link"] for link in result.shared_links)


def test_a_fault_after_the_jobs_ended_is_said_to_change_nothing():
    result = run_jobs(_fabric(), [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "1 MiB"}],
                      model="ideal", faults=[{"at": "1 s", "link": ["tor0", "spine0"], "bandwidth": "10%"}])
    assert result.jobs[0]["together_s"] == result.jobs[0]["healthy_s"]
    assert [w.kind for w in result.warnings] == ["fault_unfelt"]


def test_a_fault_felt_alone_but_not_together_is_not_said_to_change_nothing():
    """The review of round m's fixes: job A's own NIC at 75 % is its bottleneck alone
    (T = 2 (6 us + S/2 / (0.75 B))), but together both rings share the 2:1 uplink at B/2 each,
    the healthy together time; jobs said "the faults changed nothing" though A's time alone
    and its slowdown moved. Said only where alone and together are both the healthy ones."""
    result = run_jobs(_fabric(), [
        {"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "64 MiB"},
        {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "64 MiB"}], model="ideal",
        faults=[{"at": "0 s", "link": ["r0h0-nic0", "tor0"], "bandwidth": "75%"}])
    a, b = result.jobs
    assert a["alone_s"] == pytest.approx(2 * (L + S / 2 / (0.75 * B)), rel=1e-9)
    assert b["alone_s"] == pytest.approx(2 * (L + S / 2 / B), rel=1e-9)
    assert a["together_s"] == a["healthy_s"] == pytest.approx(2 * (L + S / 2 / (B / 2)), rel=1e-9)
    assert not [w for w in result.warnings if w.kind == "fault_unfelt"]


def test_a_fault_that_cuts_off_gpus_no_job_holds_is_taken(cli, tmp_path):
    """The review: a NIC down on a host no job uses was refused ("the run would hang") as if
    the job needed it; only each job's GPUs need routes to each other. One that cuts a job's
    GPUs off is one line on the fault's line, exit 2."""
    for hosts, code in ((["r0h1", "r1h1"], 0), (["r0h0", "r1h0"], 2)):
        (tmp_path / "s.yaml").write_text(json.dumps({
            "name": "s", "topology": {"name": "fabric", "generate": FABRIC}, "model": "ideal",
            "jobs": [{"name": "b", "hosts": hosts, "algorithm": "ring", "size": "1 MiB"}],
            "faults": [{"at": "0 s", "link": ["r0h0-nic0", "tor0"], "down": True}]}))
        result = cli("run", tmp_path / "s.yaml")
        assert result.exit_code == code, result.stderr
        if code:
            assert result.stderr.count("\n") == 1 and "faults[0]" in result.stderr and "cuts" in result.stderr


def test_job_keys_that_change_nothing_are_refused_or_said(cli, tmp_path):
    """Fuzz round y F2, F3, F6: ``placement: packed`` beside named GPUs (``spread`` there is
    refused), a ``period`` shorter than every run of the job (each starts as the one before
    ends, as without one) and a ``uniform`` background job's ``seed`` on two GPUs (each one's
    only partner is the other) changed nothing without a word."""
    def run(jobs: str):
        path = tmp_path / "jobs.yaml"
        path.write_text("name: j\ntopology:\n  name: fabric\n  generate: " + json.dumps(FABRIC) + f"\njobs:\n{jobs}")
        return cli("run", path, "--json", "-")

    named = run("  - {name: a, hosts: [r0h0, r1h0], placement: packed, size: 1 MiB}\n")
    assert named.exit_code == 2 and ":6: jobs[0]: placement chooses which GPUs a count of them takes" in named.stderr, named.stderr
    ring = "  - {name: a, hosts: [r0h0, r1h0], algorithm: ring, size: 64 MiB, repeat: 3"
    plain, short, long = (json.loads(run(f"{ring}{period}}}\n").stdout) for period in ("", ", period: 1 us",
                                                                                       ", period: 20 ms"))
    assert short["jobs"] == plain["jobs"] != long["jobs"]  # S/B = 5.4 ms a run: 1 us never waits, 20 ms does
    assert [w["link"] for w in short.get("warnings", [])] == ["jobs[0].period"]
    # said as the file's other keys are (round z #12): its file and line, 1 us as written
    assert short["warnings"][0]["message"].startswith(f"jobs[0].period ({tmp_path / 'jobs.yaml'}:6): 1.000 us: ")
    assert not long.get("warnings")
    noise = "  - {name: n, gpus: [r0h1-gpu0, r1h1-gpu0], background: {pattern: uniform, load: 50%"
    seeded = [json.loads(run(f"{ring}}}\n{noise}{seed}}}}}\n").stdout) for seed in ("", ", seed: 1", ", seed: 2")]
    assert seeded[0]["jobs"] == seeded[1]["jobs"] == seeded[2]["jobs"]
    assert [w["link"] for w in seeded[1]["warnings"]] == ["jobs[1].background.seed"]


def test_a_period_only_the_job_alone_waits_for_is_said_to_change_nothing(cli, tmp_path):
    """Fuzz round ac F5: a period longer than the job's runs alone (2.13 ms) but shorter than
    its runs beside background traffic (2.99 ms) left every number the same, without a word:
    the wait was judged on the replay of the job alone, whose runs' durations do not move with
    it. Judged where times are said (together, in pairs; alone only under faults)."""
    def run(period: str):
        path = tmp_path / "p.yaml"
        path.write_text(
            "name: p\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 2, gpus_per_host: 2, "
            "nic_bandwidth: 100 Gb/s, oversubscription: 2}}\njobs:\n"
            f"  - {{name: a, gpus: 4, placement: spread, algorithm: ring, size: 16 MiB, repeat: 3{period}}}\n"
            "  - {name: noise, background: {pattern: uniform, load: 30%, seed: 3}}\n")  # (every 1 ms)
        ran = cli("run", path, "--json", "-")
        assert ran.exit_code == 0, ran.stderr
        return json.loads(ran.stdout)

    plain, between, beyond = run(""), run(", period: 2.5 ms"), run(", period: 3.1 ms")
    assert between["jobs"] == plain["jobs"] and [w["link"] for w in between["warnings"]] == ["jobs[0].period"]
    assert beyond["jobs"] != plain["jobs"] and not beyond.get("warnings")


def test_one_job_is_said_in_the_singular(cli, tmp_path):
    """Fuzz round ac F10: the table's title said "1 jobs"."""
    (tmp_path / "j.yaml").write_text("name: lf\ntopology: {name: t, generate: {kind: nvswitch, gpus: 4}}\n"
                                     "jobs: [{name: a, gpus: 4, size: 1 MiB}]\n")
    ran = cli("run", tmp_path / "j.yaml")
    assert ran.exit_code == 0 and "lf: 1 job on t, model nccl" in ran.stdout


def test_a_hierarchical_job_runs_the_variant_a_run_of_its_gpus_takes(root):
    """Fuzz round ak: ``hierarchical`` without ``inner`` runs, as one collective, the faster of
    NCCL's tree and a ring between groups; as a job it ran the builder's tree without a word
    (0.782 ms alone against the run's 0.778 ms, the ring's, on the same 16 GPUs). A job takes
    the variant faster alone and says which."""
    from simnet import load_topology, simulate

    topo = load_topology(root / "topologies/two_racks.yaml")
    hosts = ["r0h0", "r1h0"]
    gpus = [g for g in topo.gpus if topo.graph.nodes[g]["host"] in hosts]
    run = simulate(topo, "hierarchical", 64 * 2**20, gpus=gpus)
    result = run_jobs(topo, [{"name": "a", "hosts": hosts, "algorithm": "hierarchical", "size": "64 MiB"},
                             {"name": "b", "gpus": ["r0h1-gpu0", "r0h1-gpu1"], "algorithm": "ring", "size": "1 KiB"}])
    job = result.jobs[0]
    assert run.variants["inner"]["ring"] != run.variants["inner"]["tree"]  # (the choice counts here)
    assert (job["inner"], job["alone_s"]) == (run.options["inner"], run.time_s)
    assert "inner" not in result.jobs[1]


@pytest.mark.parametrize("start", ["0 s", "5 us"])
def test_a_hierarchical_job_under_a_fault_runs_the_variant_a_run_under_it_takes(root, start):
    """Fuzz round at, M1: the variant was chosen on the healthy fabric, where tree and ring tie
    on these GPUs (412.130 us), so under an uplink at 25 % the job ran the tree, 994.4 us alone,
    where the run under the same fault takes the ring, 847.0 us. The job takes the variant
    faster under the faults as they stand from its start on (a fault before it is in force)."""
    from simnet import load_topology, simulate

    topo = load_topology(root / "topologies/two_racks.yaml")
    hosts = ["r0h0", "r1h0"]
    gpus = [g for g in topo.gpus if topo.graph.nodes[g]["host"] in hosts]
    fault = {"at": "0 s", "link": ["tor1", "spine0"], "bandwidth": "25%"}
    run = simulate(topo, "hierarchical", 64 * 2**20, gpus=gpus, faults=[fault])
    result = run_jobs(topo, [{"name": "a", "hosts": hosts, "algorithm": "hierarchical", "size": "64 MiB",
                              "start": start},
                             {"name": "b", "hosts": ["r0h1", "r0h2"], "algorithm": "ring", "size": "64 MiB"}],
                      faults=[fault])
    job = result.jobs[0]
    assert run.variants["inner"]["ring"] < run.variants["inner"]["tree"]
    assert (job["inner"], job["alone_s"]) == (run.options["inner"], pytest.approx(run.time_s, abs=1e-12))


@pytest.mark.parametrize("pattern, senders_into_one", [("incast", 3), ("uniform", None), ("all_to_all", None)])
def test_background_traffic_offers_load_from_every_gpu(pattern, senders_into_one):
    """Fuzz round ar, M6: an ``incast`` background job at ``load: 100%`` offered its target
    its line rate in all (each of 3 senders a third), so the incast never overloaded it, where
    the README says every GPU offers ``load`` to the one target. Every GPU offers ``load`` of its
    route's bandwidth a period: the incast's target is asked for (GPUs - 1) x that."""
    from simnet.run.jobs import background_schedule
    from simnet.spec.jobs import BackgroundSpec

    topology = topology_from_dict({"name": "f", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2,
                                                             "gpus_per_host": 1, "nic_bandwidth": "100 Gb/s"}})
    spec = BackgroundSpec(pattern=pattern, load="50%", seed=1)
    schedule = background_schedule(topology, spec, 1e-3)
    line = 100e9 / 8 * 1e-3  # bytes a GPU's NIC carries in a 1 ms period
    sent = np.bincount(schedule.src, weights=schedule.nbytes, minlength=4)
    assert sent == pytest.approx(np.full(4, 0.5 * line) if senders_into_one is None else
                                 np.where(sent > 0, 0.5 * line, 0.0), abs=3)  # whole bytes per transfer
    if senders_into_one is not None:
        into = np.bincount(schedule.dst, weights=schedule.nbytes, minlength=4)
        assert into.max() == pytest.approx(senders_into_one * 0.5 * line, abs=3)


@pytest.mark.parametrize("generated", [
    {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 3, "gpus_per_host": 2, "spines": 2},
    {"kind": "rail_optimized", "units": 2, "nodes_per_unit": 2, "gpus_per_node": 2, "switch_radix": 8}])
def test_spread_without_rack_labels_takes_racks_from_the_cabling(generated):
    """Fuzz round as, L1: a file written node by node without the optional rack: labels took
    every host for a rack of its own, so spread took other GPUs (a job beside it 691.3 ->
    781.4 us) and the jobs table said 6 racks of a two-ToR fabric. Unlabelled, a host's rack
    is the switches it is cabled to (its ToR, or its SU's rail leaves), as the generator's."""
    from simnet.spec.jobs import rack_of
    from simnet.topology.export import topology_as_dict

    labelled = topology_from_dict({"name": "f", "generate": generated})
    written = topology_as_dict(labelled)
    written["nodes"] = [{k: v for k, v in node.items() if k != "rack" and not (k == "host" and node["kind"] == "switch")}
                        for node in written["nodes"]]  # (review 79, M3: an NVSwitch written without its host too)
    bare = topology_from_dict(written)
    jobs = [{"name": "a", "gpus": 4, "placement": "spread", "size": "1 MiB"},
            {"name": "b", "gpus": 2, "placement": "random(7)", "size": "1 MiB"}]
    assert place_jobs(bare, jobs) == place_jobs(labelled, jobs)
    assert len({rack_of(bare, g) for g in bare.gpus}) == len({rack_of(labelled, g) for g in labelled.gpus}) == 2


def test_a_sweep_of_jobs_over_a_fault_key_that_moves_nothing_says_so(cli, tmp_path):
    """Fuzz round au, L7: every job's times were the same at both values of faults.0.at, but
    the records echoed the fault's at_s, so the axis was never said to change nothing."""
    path = tmp_path / "jobs.yaml"
    path.write_text("name: J\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, "
                    "gpus_per_host: 2, gpu: h100, oversubscription: 4}}\njobs:\n"
                    "  - {name: a, gpus: 2, placement: spread, size: 16 MiB, algorithm: ring}\n"
                    "  - {name: b, gpus: 2, placement: spread, size: 16 MiB, algorithm: ring}\n"
                    "faults: [{at: 10 us, link: [tor0, spine0], bandwidth: 50%}]\n")
    result = cli("sweep", path, "--set", "faults.0.at=0us,5us", "--out", tmp_path / "out", "--workers", "1")
    assert result.exit_code == 0, result.stderr
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert len({json.dumps(r["jobs"], sort_keys=True) for r in records}) == 1  # (the premise: nothing moved)
    assert "faults.0.at changed nothing along this sweep" in result.stdout + result.stderr



def test_a_sweep_of_jobs_names_no_bottleneck_where_no_shared_link_filled(cli, tmp_path, root):
    """Fuzz round ay, F2: a sweep (table, results.jsonl, results.csv) of two spread jobs on
    two_racks named tor0->spine1 its bottleneck, where `run` said that most fought-over link
    was saturated 0 % of the shared run: a bottleneck is a link that filled (README: null where
    none was saturated 1 % of the run, the busiest beside it). (compare's column reads the
    sweep's records.)"""
    (tmp_path / "s.yaml").write_text(
        f"name: sj\ntopology: {root / 'topologies/two_racks.yaml'}\nplacement: spread\njobs:\n"
        "  - {name: a, gpus: 16, algorithm: ring, size: 64 MiB}\n  - {name: b, gpus: 16, algorithm: tree, size: 64 MiB}\n")
    run = cli("run", tmp_path / "s.yaml", "--json", tmp_path / "r.json")
    assert run.exit_code == 0, run.stderr
    (top, *_) = json.loads((tmp_path / "r.json").read_text())["shared_links"]
    assert top["saturated_fraction"] < 0.01  # the case: shared, never filled
    swept = cli("sweep", tmp_path / "s.yaml", "--set", "jobs.0.size=16MiB,32MiB", "--out", tmp_path / "o",
                "--workers", "1")
    assert swept.exit_code == 0, swept.stderr
    assert f"none; busiest {top['link']}" in swept.stdout
    sizes = [json.loads(line)["sizes"][0] for line in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert all(s["bottleneck"] is None and s["busiest"] == top["link"] for s in sizes), sizes
    rows = list(csv.DictReader((tmp_path / "o" / "results.csv").open()))
    assert all(r["bottleneck"] == "" and r["busiest"] == top["link"] for r in rows), rows


def test_background_traffic_that_never_meets_a_job_leaves_their_interference_at_one(root):
    """Fuzz round ay, F9: background traffic starting after job a ended (and before b began)
    never ran beside a in their pair's replay, whose mean of no runs was NaN: exit 70 on the
    JSON. Jobs that never met slow each other by 1.00x."""
    topology = simnet.load_topology(root / "topologies/two_racks.yaml")
    result = run_jobs(topology, [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "16 MiB"},
                                 {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "16 MiB",
                                  "start": "10 ms"},
                                 {"name": "n", "background": {"pattern": "uniform", "load": "5%"}, "start": "9 ms"}])
    assert result.interference["a"]["n"] == result.interference["n"]["a"] == 1.0
    assert all(np.isfinite(v) for row in result.interference.values() for v in row.values())


def test_background_traffic_too_long_to_replay_is_refused_before_any_replay(root, tmp_path, cli):
    """Fuzz round ay, F7: background traffic of 1 ms periods beside a job repeated every 10 h
    replayed 36 M periods (days; killed after 120 s). Refused in one line on its period,
    before any replay, with the count; a period that leaves few periods runs."""
    head = (f"name: j\ntopology: {root / 'topologies/two_racks.yaml'}\njobs:\n"
            "  - {name: a, hosts: [r0h0, r1h0], algorithm: ring, size: 16 MiB, repeat: 2, period: 10 h}\n")
    (tmp_path / "s.yaml").write_text(head + "  - {name: n, background: {pattern: uniform, load: 30%, seed: 3}}\n")
    started = time.monotonic()
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 's.yaml'}:5: jobs[1].period: 1 ms: background traffic")
    assert "36,000,001 of its periods" in result.stderr and time.monotonic() - started < 30
    (tmp_path / "s.yaml").write_text(head.replace("10 h", "100 ms") +
                                     "  - {name: n, background: {pattern: uniform, load: 30%, seed: 3}}\n")
    assert cli("run", tmp_path / "s.yaml").exit_code == 0


@pytest.mark.parametrize("hosts, size", [(("[r0h0, r1h0]", "[r0h1, r1h1]"), "16 MiB"),
                                         # review 93, HIGH 1: runs of 0.62 ms each, together longer than a period
                                         (("[r0h0, r0h1]", "[r1h0, r1h1]"), "80 MiB")])
def test_periods_that_rarely_fall_into_step_are_refused_before_the_replay(root, tmp_path, cli, hosts, size):
    """Fuzz round ay, F8: two jobs of 10,000 runs every 1.000001 and 1.000002 ms fall into
    step again only every 1,000.003000002 s (their least common multiple, by hand), longer
    than the 10 s they run: no stretch repeats and every run is replayed (estimated 6,000 s,
    killed). Refused in one line on the first job's ``repeat``, before the shared replay,
    each job's runs alone shorter than its period however long they are together."""
    head = f"name: j\ntopology: {root / 'topologies/two_racks.yaml'}\njobs:\n"
    (tmp_path / "s.yaml").write_text(
        head + f"  - {{name: a, hosts: {hosts[0]}, algorithm: ring, size: {size}, repeat: 10000, period: 1.000001 ms}}\n"
        f"  - {{name: b, hosts: {hosts[1]}, algorithm: ring, size: {size}, repeat: 10000, period: 1.000002 ms}}\n")
    started = time.monotonic()
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 's.yaml'}:4: jobs[0].repeat: 10,000: ")
    assert "a every 1.000001 ms, b every 1.000002 ms" in result.stderr and "every 1000.003000002 s" in result.stderr
    assert time.monotonic() - started < 30


def test_jobs_under_faults_with_too_many_runs_are_refused_before_any_replay(root):
    """Under faults every run is replayed (no repeated stretch is looked for on a changing
    fabric): 10,000 runs of two 16-GPU rings were minutes of work alone, before the shared
    replay. Refused before any replay, on the job's ``repeat``."""
    from simnet.spec.jobs import JobError

    topology = simnet.load_topology(root / "topologies/two_racks.yaml")
    jobs = [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "16 MiB", "repeat": 10000,
             "period": "1 ms"},
            {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "16 MiB", "repeat": 10000,
             "period": "1.25 ms"}]
    seen = []
    with pytest.raises(JobError, match=r"10,000: under faults every run of the jobs is replayed") as refused:
        run_jobs(topology, jobs, faults=[{"at": "1 ms", "link": ["tor0", "spine0"], "bandwidth": "50%"}],
                 progress=lambda done, total: seen.append(done))
    assert refused.value.loc == (0, "repeat") and not seen  # nothing replayed


def test_jobs_whose_runs_cannot_repeat_take_the_network_that_replays_them_fastest(root):
    """Where no stretch of runs can repeat in time (periods of 1.000001 and 1.000002 ms),
    the SimPy network's skip saves nothing and every run is replayed: on the compiled
    network (~20x faster where jobs share links), not SimPy's (2,000 runs each: 40 s against
    ~15 min); periods falling into step every 5 ms keep the skip."""
    from simnet.engine.replay import JOBS_REPLAYED_UP_TO, JobRun, _jobs_run_compiled
    from simnet.model.timing import Timing
    from simnet.schedule.catalog import build_schedule

    topology = simnet.load_topology(root / "topologies/two_racks.yaml")
    ring = build_schedule("ring", topology.subset([g for g in topology.gpus if g.startswith(("r0h0", "r1h0"))]),
                          16 * 2**20)
    runs = 2000
    assert 2 * runs * len(ring) > JOBS_REPLAYED_UP_TO  # beyond which the skip was always taken
    alone = [(200_000_000, 200_000_000)] * 2  # 0.2 ms a run alone
    for periods, compiled in (((1_000_001_000, 1_000_002_000), True), ((1_000_000_000, 1_250_000_000), False)):
        jobs = [JobRun(ring, Timing(), 0, runs, period) for period in periods]
        assert _jobs_run_compiled(None, jobs, False, alone) == compiled


def test_runs_the_skip_cannot_take_are_stopped_not_replayed_for_hours(monkeypatch):
    """Review 93, HIGH 1: runs back to back beside each other (periods shorter than the runs)
    keep the network busy, so no repeated stretch is found and SimPy replayed every run (the
    F8 periods with 80 MiB rings: 720 s left after 40 s). The SimPy replay stops once its work
    on the runs after each job's first passes twice what is refused before a replay (here
    made small), in one line on the repeat of the job with most left."""
    from simnet.spec.jobs import JobError

    monkeypatch.setattr("simnet.engine.replay.JOBS_WORK_AT_MOST", 2_000)  # 200 SimPy transfers
    _skips_on_simpy(monkeypatch)
    jobs = [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "1 MiB", "repeat": 400,
             "period": "1 us"},
            {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "700 KiB", "repeat": 300,
             "period": "1 us"}]  # (alike, they would end together, leaving the network idle in one state each run)
    with pytest.raises(JobError, match=r"^400: after \d+ runs replayed no stretch of them repeated .* and [\d,]+ of "
                                       "the jobs' runs were left") as stopped:
        run_jobs(_fabric(), jobs, model="ideal")
    assert stopped.value.loc == (0, "repeat")


def test_work_no_common_period_explains_is_refused_in_plain_words(monkeypatch):
    """Review 93, MEDIUM 1: a refusal whose work does not come from periods that rarely fall
    into step (here runs back to back, with no period, on the compiled network) was explained
    by the periods' least common multiple, of none: "every 1 ps"."""
    from simnet.spec.jobs import JobError

    monkeypatch.setattr("simnet.run.jobs.JOBS_WORK_AT_MOST", 50)
    monkeypatch.setattr("simnet.engine.replay._runs_compiled", lambda asked, transfers, fresh=False: asked is not False)
    jobs = [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "1 MiB", "repeat": 40},
            {"name": "b", "hosts": ["r0h1", "r1h1"], "algorithm": "ring", "size": "1 MiB", "repeat": 40}]
    with pytest.raises(JobError, match=r"^40: the replays of the jobs together take every run one by one: work worth "
                                       r"about 0 M transfers") as refused:
        run_jobs(_fabric(), jobs, model="ideal")
    assert "least common multiple" not in str(refused.value)


@pytest.mark.parametrize("job, refused", [
    # fuzz round az F15: on the background's own 1 ms period its periods repeat with the job's: answered
    ("{name: a, gpus: [r0h0-gpu0, r1h0-gpu0], algorithm: ring, size: 16 MiB, repeat: 10000, period: 1 ms}", False),
    # az F6: beside runs back to back (22 ms each alone, no period) its periods keep no step with them: refused
    ("{name: a, gpus: [r0h0-gpu0, r1h0-gpu0], algorithm: ring, size: 1 GiB, repeat: 2000}", True)])
def test_background_traffic_is_refused_by_the_periods_replayed_not_by_those_it_offers(root, tmp_path, cli, job,
                                                                                      refused):
    """Background traffic was refused past 2 M transfers of its periods while the other jobs'
    periods ran, whatever the skip over repeated stretches took (10,000 runs every 1 ms beside
    it: refused, though 500 answered in 1.4 s), and counted one period beside a job with no
    period (2,000 runs of 22 ms: hours). Its periods count as the replay takes them."""
    (tmp_path / "s.yaml").write_text(
        f"name: j\ntopology: {root / 'topologies/two_racks.yaml'}\njobs:\n  - {job}\n"
        "  - {name: noise, background: {pattern: all_to_all, load: 10%, seed: 3}}\n")
    started = time.monotonic()
    result = cli("run", tmp_path / "s.yaml")
    assert time.monotonic() - started < 60
    if refused:
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"{tmp_path / 's.yaml'}:5: jobs[1].period: 1 ms: background traffic")
    else:
        assert result.exit_code == 0, result.stderr


def test_runs_whose_last_starts_past_the_horizon_are_refused_on_their_repeat():
    """Fuzz round az F7: 200 runs a day apart (each value in its range) overflowed the
    engine's int64 picoseconds, exit 70; 100 were refused as 'a bandwidth far too low'. The
    last run's start is known before any replay: 199 days, past the 11.6 days simnet holds."""
    from simnet.spec.jobs import JobError

    jobs = [{"name": "a", "hosts": ["r0h0", "r1h0"], "algorithm": "ring", "size": "1 MiB", "repeat": 200,
             "period": "24 h"}]
    with pytest.raises(JobError, match=r"^200: its last run would start 17193600 s in .* past the 1000000 s") as past:
        run_jobs(_fabric(), jobs, model="ideal")
    assert past.value.loc == (0, "repeat")


def test_jobs_back_to_back_within_the_budget_take_the_compiled_network(root):
    """Review 95, H1: runs back to back beside each other (0.64 ms alone every 0.5 ms) were
    sent to SimPy, whose skip needs an idle network, and stopped after 185 s; the compiled
    network answers in 35 s. Whether such a network is ever idle in one state again no
    estimate tells, so within the budget every run is replayed compiled."""
    from simnet.engine.replay import JOBS_REPLAYED_UP_TO, JOBS_WORK_AT_MOST, JobRun, _jobs_run_compiled
    from simnet.model.timing import Timing
    from simnet.schedule.catalog import build_schedule

    topology = simnet.load_topology(root / "topologies/two_racks.yaml")
    ring = build_schedule("ring", topology.subset([g for g in topology.gpus if g.startswith(("r0h0", "r1h0"))]),
                          16 * 2**20)
    jobs = [JobRun(ring, Timing(), 0, 2000, period) for period in (500_000_000, 700_000_000)]
    assert JOBS_REPLAYED_UP_TO < 2 * 2000 * len(ring) <= JOBS_WORK_AT_MOST
    assert _jobs_run_compiled(None, jobs, False, [(640_000_000, 640_000_000)] * 2)
    assert not _jobs_run_compiled(None, jobs, False, [(200_000_000, 200_000_000)] * 2)  # on their periods: skip


def test_the_compiled_network_s_stop_counts_no_first_run():
    """Review 95, H3: the compiled network's stop counted the first runs' transfers, which no
    skip could take: jobs of one run each delivering over twice the budget were stopped as
    'no stretch repeated'."""
    from simnet.engine.replay import JOBS_WORK_AT_MOST, JobRun, RepeatsTooLong, _stop_past_the_work
    from simnet.model.timing import Timing
    from simnet.schedule.transfers import COPY, ScheduleBuilder

    builder = ScheduleBuilder("ring", ["gpu0", "gpu1"], 2)
    builder.add(src=[0, 1], dst=[1, 0], lo=0, hi=1, op=COPY)
    once = JobRun(builder.build(), Timing(), 0, 1, 0)
    _stop_past_the_work([once, once], 2 * JOBS_WORK_AT_MOST + 4, 0)  # (their first runs: 4 transfers)
    with pytest.raises(RepeatsTooLong):
        _stop_past_the_work([once, once], 2 * JOBS_WORK_AT_MOST + 5, 0)
