"""The compiled fluid network (simnet.engine.compiled) is the SimPy one: every start, send
and delivery to the picosecond and every link statistic to the bit, on random networks and
schedules (queues, dependencies, joins, caps, software latencies, launch offsets,
reductions, late ranks, faults that slow links or take them down, timelines) and on real
schedules."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import faults_on, small_fabrics, two_way_fabrics

from simnet import topology_from_dict
from simnet.engine import accounting, clock, compiled, maxmin
from simnet.engine import replay as replay_module
from simnet.engine.faults import Fault
from simnet.engine.fluid import Cut
from simnet.engine.replay import JobRun, replay, replay_jobs
from simnet.model.timing import Timing
from simnet.run.nccl_env import nccl_env
from simnet.run.point import Setup
from simnet.schedule.transfers import COPY, REDUCE, ScheduleBuilder
from simnet.topology.graph import PS_PER_SECOND

STATISTICS = ("bytes", "peak", "saturated_ps", "busy_ps", "either_saturated_ps", "max_flows", "flows", "load",
              "in_force")


def test_the_compiled_network_keeps_the_simpy_network_s_constants():
    assert (compiled.PS, compiled.SLACK, compiled.TIE, compiled.SATURATED, compiled.HORIZON) == (
        PS_PER_SECOND, clock.WHOLE_PS_SLACK, maxmin.TIE, accounting.SATURATED, clock.HORIZON_PS)
    assert compiled.STATE == replay_module._Runner.STATE


def _both(schedule, topo, **kwargs):
    """The replay on the SimPy network and on the compiled one."""
    return replay(schedule, topo, compiled=False, **kwargs), replay(schedule, topo, compiled=True, **kwargs)


def _both_or_cut(schedule, topo, **kwargs):
    """``_both``, or (None, None) when both engines stop with the same ``Cut`` (links down
    that leave a route none)."""
    messages = []
    for engine in (False, True):
        try:
            replay(schedule, topo, compiled=engine, **kwargs)
        except Cut as exc:
            messages.append(str(exc))
    if messages:
        assert len(messages) == 2 and messages[0] == messages[1]
        return None, None
    return _both(schedule, topo, **kwargs)


def _assert_identical(simpy_run, compiled_run):
    for name in ("start_ps", "sent_ps", "delivered_ps"):
        assert np.array_equal(getattr(simpy_run, name), getattr(compiled_run, name)), name
    assert simpy_run.duration_ps == compiled_run.duration_ps
    assert (simpy_run.rerouted, simpy_run.rerouted_bytes) == (compiled_run.rerouted, compiled_run.rerouted_bytes)
    _assert_same_statistics(simpy_run.stats, compiled_run.stats, max(simpy_run.duration_ps, 1))


def _assert_same_statistics(one, other, duration):
    """Every link statistic of two runs of ``duration`` ps (> 0) the same to the bit, and
    their timelines, if kept."""
    for name in STATISTICS:
        assert np.array_equal(getattr(one, name), getattr(other, name)), name
    assert np.array_equal(one.mean_capacity(duration), other.mean_capacity(duration))
    if one.timeline is not None:
        assert len(one.timeline) == len(other.timeline)
        for (when, links, loads), (when2, links2, loads2) in zip(one.timeline, other.timeline):
            assert when == when2 and np.array_equal(links, links2) and np.array_equal(loads, loads2)


@st.composite
def _runs(draw):
    """A small network of GPUs on switches (a chain, or leaves with spines to spare);
    connections of queued pieces (some waiting for pieces of other connections, some joins
    on one GPU, some of no bytes) with random caps, software latencies and reductions; and
    the replay's options: a launch offset, late ranks, a per-message overhead, a reduction
    rate, faults that slow links or take them down, a timeline."""
    written = draw(st.one_of(small_fabrics(), two_way_fabrics()))
    gpus = sum(node["kind"] == "gpu" for node in written["nodes"])
    schedule, timing = draw(_timed_schedules(gpus))
    options = {"timing": timing, "timeline": draw(st.booleans()),
               "message_overhead": draw(st.sampled_from([0.0, 0.0, 1e-6])),
               "reduce_bandwidth": draw(st.sampled_from([None, None, 5e9])),
               "start_delay": {f"g{i}": draw(st.sampled_from([0.0, 1e-6, 5e-5])) for i in range(gpus)}
               if draw(st.booleans()) else None}
    options["faults"] = draw(faults_on(written))
    return written, schedule, options


@st.composite
def _timed_schedules(draw, gpus: int):
    """Connections of queued pieces between ``gpus`` GPUs (some waiting for pieces of other
    connections, some joins on one GPU, some of no bytes, copies and reductions) and their
    ``Timing``: random caps, software latencies, launch latency and wire factor."""
    b = ScheduleBuilder("random", [f"g{i}" for i in range(gpus)], 10**7)
    caps, delays, made = [], [], []
    for channel in range(draw(st.integers(1, 6))):
        src, dst = draw(st.integers(0, gpus - 1)), draw(st.integers(0, gpus - 1))
        cap = draw(st.sampled_from([np.inf, 1e9, 3e9, 7e9, 15e9]))
        ahead = -1
        for _ in range(draw(st.integers(1, 4))):
            nbytes = draw(st.sampled_from([0, 1, 4096, 10**5, 10**6, 10**7]))
            deps = draw(st.lists(st.sampled_from(made), max_size=2, unique=True)) if made else []
            (ahead,) = b.add([src], [dst], 0, nbytes, draw(st.sampled_from([COPY, REDUCE])), deps=deps,
                             after_sent=[ahead], channel=[channel])
            made.append(ahead)
            caps.append(cap)
            delays.append(draw(st.sampled_from([0, 0, 500_000, 3_000_000])))
    timing = Timing(rate_cap=np.array(caps) if draw(st.booleans()) else None,
                    delay_ps=np.array(delays, dtype=np.int64) if draw(st.booleans()) else None,
                    start_ps=draw(st.sampled_from([0, 0, 2_000_000])),
                    wire_factor=draw(st.sampled_from([1.0, 1.0, 2.0, 120 / 128])))
    return b.build(), timing


@settings(max_examples=60, deadline=None)
@given(case=_runs())
def test_the_compiled_network_is_the_simpy_network_to_the_bit(case):
    written, schedule, options = case
    runs = _both_or_cut(schedule, topology_from_dict(written), **options)
    if runs[0] is not None:
        _assert_identical(*runs)


@pytest.mark.parametrize("algorithm", ["ring", "tree", "nvls_tree", "hierarchical", "halving_doubling", "ps",
                                       "direct", "pat"])
def test_real_schedules_under_nccl_s_model_run_the_same_compiled(algorithm):
    """NCCL's timing of real schedules (caps, per-step latencies, LL's wire bytes) on an
    oversubscribed two-rack fabric, one leaf's uplinks slowed mid-run and ranks joining
    late: the same on both networks."""
    topo = topology_from_dict({"name": "ls", "generate": {  # (PAT at one GPU per node, as NCCL runs it)
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 8 if algorithm == "pat" else 2,
        "gpus_per_host": 1 if algorithm == "pat" else 4, "spines": 2, "gpu": "h100", "oversubscription": 2}})
    collective = "all_gather" if algorithm == "pat" else "allreduce"
    point = Setup(topo, collective, "nccl", nccl_env({}), None)
    _, schedule, timing = point.prepare(algorithm, 2**22, {})
    uplinks = np.array([topo.link_index[("tor0", "spine0")], topo.link_index[("tor0", "spine1")]])
    faults = [Fault(2e-5, uplinks, np.full(len(uplinks), 0.4), "leaf uplinks at 40 %")]
    late = {gpu: 1e-5 * (i % 3) for i, gpu in enumerate(topo.gpus)}
    _assert_identical(*_both(schedule, topo, timing=timing, faults=faults, start_delay=late, timeline=True))


def test_a_replay_over_its_simpy_budget_starts_over_compiled_and_answers_the_same(monkeypatch):
    """A replay that chose SimPy by default and took ``SIMPY_BUDGET`` on it starts over on the
    compiled network (SimPy costs 4-200 us a transfer: a 20,000-transfer hierarchical took 3.9 s
    where loading numba and replaying compiled take about 0.7): the same replay to the bit, with
    faults, late ranks and a timeline."""
    topo = topology_from_dict({"name": "ls", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 4, "spines": 2, "gpu": "h100",
        "oversubscription": 2}})
    _, schedule, timing = Setup(topo, "allreduce", "nccl", nccl_env({}), None).prepare("hierarchical", 2**26, {})
    uplinks = np.array([topo.link_index[("tor0", "spine0")]])
    kwargs = {"timing": timing, "faults": [Fault(2e-5, uplinks, np.full(1, 0.4), "an uplink at 40 %")],
              "start_delay": {gpu: 1e-5 * (i % 3) for i, gpu in enumerate(topo.gpus)}, "timeline": True}
    asked = []
    monkeypatch.setattr(replay_module, "_runs_compiled", lambda engine, transfers: asked.append(engine) or bool(engine))
    monkeypatch.setattr(replay_module, "SIMPY_BUDGET", 0.0)
    started_over = replay(schedule, topo, **kwargs)
    assert asked == [None, True]  # SimPy by default, over budget at once, then the compiled network
    _assert_identical(replay(schedule, topo, compiled=False, **kwargs), started_over)


@pytest.mark.parametrize("algorithm", ["ring", "tree", "hierarchical", "direct"])
def test_a_spine_down_mid_run_moves_the_same_flows_on_both_networks(algorithm):
    """One spine goes down while NCCL's schedule runs and a leaf's uplink to another slows
    later: the flows crossing it move to the surviving spine with the bytes they had left,
    the same flows on both networks (the same count and bytes moved), every time and link
    statistic the same; the spine's links carry nothing after it went down."""
    topo = topology_from_dict({"name": "ls", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 4, "spines": 2, "gpu": "h100"}})
    _, schedule, timing = Setup(topo, "allreduce", "nccl", nccl_env({}), None).prepare(algorithm, 2**22, {})
    healthy = replay(schedule, topo, timing=timing, compiled=False, timeline=True)
    spine, other = sorted(("spine0", "spine1"), key=lambda name: -healthy.stats.bytes[topo.link_index[("tor0", name)]])
    up = topo.link_index[("tor0", spine)]
    busy = next(when for when, links, loads in healthy.stats.timeline  # while flows cross it
                if when >= healthy.duration_ps / 4 and (loads[links == up] > 0).any())
    spine = np.array([topo.link_index[pair] for pair in ((f"tor{r}", spine) for r in (0, 1))] +
                     [topo.link_index[(spine, f"tor{r}")] for r in (0, 1)])
    faults = [Fault((busy + 1000) / 1e12, spine, np.zeros(len(spine)), "the busier spine down"),
              Fault(healthy.time / 2, np.array([topo.link_index[("tor1", other)]]), np.array([0.5]), "slower", 1)]
    simpy_run, compiled_run = _both(schedule, topo, timing=timing, faults=faults, timeline=True)
    _assert_identical(simpy_run, compiled_run)
    assert compiled_run.rerouted > 0 and compiled_run.rerouted_bytes > 0
    after = [loads[np.isin(links, spine)] for when, links, loads in compiled_run.stats.timeline
             if when > busy]
    assert after and all((load == 0).all() for load in after)


def test_a_fault_that_cuts_a_route_stops_both_networks_with_the_same_line():
    topo = topology_from_dict({"name": "ls", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 2, "spines": 1}})
    _, schedule, timing = Setup(topo, "allreduce", "nccl", nccl_env({}), None).prepare("ring", 2**22, {})
    uplink = np.array([topo.link_index[("tor0", "spine0")]])
    schedule_runs = _both_or_cut(schedule, topo, timing=timing, faults=[Fault(1e-5, uplink, np.zeros(1), "down")])
    assert schedule_runs == (None, None)


def test_a_run_that_outgrows_its_buffers_starts_again_with_them_doubled(monkeypatch):
    """Buffers of one entry each: every one fills, the run starts again with it doubled
    until it fits, and the answer is the same."""
    monkeypatch.setattr(compiled, "FIRST_SIZES", dict.fromkeys(compiled.FIRST_SIZES, 1))
    topo = topology_from_dict({"name": "ls", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 2, "spines": 1}})
    point = Setup(topo, "allreduce", "nccl", nccl_env({}), None)
    _, schedule, timing = point.prepare("ring", 2**20, {})
    _assert_identical(*_both(schedule, topo, timing=timing, timeline=True, reduce_bandwidth=1e10))
    jobs = [JobRun(schedule, timing, repeat=3), JobRun(schedule, timing, start_ps=10**6, repeat=2)]
    _assert_same_jobs(*_jobs_on_both(jobs, topo))


def test_jobs_of_many_flows_of_no_bytes_at_once_find_them_slots():
    """Flows of no bytes take a slot for the instant they start in: 200 at once, each on a
    connection of its own, besides a job that moves bytes, replay as on SimPy."""
    topo, schedule = _one_transfer()
    b = ScheduleBuilder("empty", ["g0", "g1"], 0)
    for channel in range(200):
        b.add([0], [1], 0, 0, COPY, channel=[channel])
    jobs = [JobRun(b.build(), Timing(), repeat=2), JobRun(schedule, Timing(), repeat=2)]
    _assert_same_jobs(*_jobs_on_both(jobs, topo))


def test_a_flow_past_the_horizon_stops_both_networks_with_the_same_line():
    topo = topology_from_dict({"name": "slow", "nodes": [{"id": "a", "kind": "gpu"}, {"id": "b", "kind": "gpu"}],
                               "links": [{"a": "a", "b": "b", "bandwidth": "1 Kb/s", "latency": "1 us"}]})
    b = ScheduleBuilder("slow", ["a", "b"], 10**12)
    b.add([0], [1], 0, 10**12, COPY)  # 8e9 s at 125 B/s
    schedule = b.build()
    messages = []
    for engine in (False, True):
        with pytest.raises(clock.BeyondHorizon) as refused:
            replay(schedule, topo, compiled=engine)
        messages.append(str(refused.value))
    assert messages[0] == messages[1]


class _Taken(Exception):
    """Raised by ``_taken``."""


def _taken(*args, **kwargs):
    """Stands for ``compiled.run``: says the compiled network was taken."""
    raise _Taken


def _one_transfer():
    """Two GPUs on two switches, 1 MB from one to the other: (topology, schedule)."""
    topo = topology_from_dict({"name": "two ways", "nodes": [
        {"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"}, {"id": "s0", "kind": "switch"},
        {"id": "s1", "kind": "switch"}], "links": [
        {"a": g, "b": s, "bandwidth": "1 GB/s", "latency": "1 us"} for g in ("g0", "g1") for s in ("s0", "s1")]})
    b = ScheduleBuilder("one", ["g0", "g1"], 10**6)
    b.add([0], [1], 0, 10**6, COPY)
    return topo, b.build()


def test_large_schedules_take_the_compiled_network_links_down_or_not(monkeypatch):
    """From ``COMPILED_FROM`` transfers the compiled network runs, faults that take links
    down included (routes move on it as on the SimPy network)."""
    topo, schedule = _one_transfer()
    monkeypatch.setattr(compiled, "run", _taken)
    monkeypatch.setattr(replay_module, "COMPILED_FROM", 1)
    with pytest.raises(_Taken):
        replay(schedule, topo)
    down = [Fault(0.0, np.array([topo.link_index[("g0", "s0")], topo.link_index[("g0", "s1")]][:1]), np.zeros(1),
                  "down")]
    with pytest.raises(_Taken):
        replay(schedule, topo, faults=down)


def test_jobs_take_the_compiled_network_unless_they_repeat_past_its_bounds(monkeypatch):
    """Jobs of ``COMPILED_FROM`` transfers in all runs take the compiled network; jobs that
    repeat past ``JOBS_REPLAYED_UP_TO`` transfers in all, or a job alone past
    ``ALONE_REPLAYED_UP_TO`` runs, stay on SimPy, whose skip over repeated cycles may
    replay few of them."""
    topo, schedule = _one_transfer()
    monkeypatch.setattr(compiled, "run", _taken)
    monkeypatch.setattr(replay_module, "COMPILED_FROM", 1)
    jobs = [JobRun(schedule, Timing()), JobRun(schedule, Timing(), repeat=2)]
    for taken in (jobs, jobs[1:]):
        with pytest.raises(_Taken):
            replay_jobs(taken, topo)
    monkeypatch.setattr(replay_module, "ALONE_REPLAYED_UP_TO", 1)
    runs, _ = replay_jobs(jobs[1:], topo)
    assert [len(job) for job in runs] == [2]
    monkeypatch.setattr(replay_module, "JOBS_REPLAYED_UP_TO", 2)  # 3 transfers in all
    runs, _ = replay_jobs(jobs, topo)
    assert [len(job) for job in runs] == [1, 2]


@pytest.mark.parametrize("compiled_network", [False, True])
@pytest.mark.parametrize("as_a_job", [False, True])
def test_a_listener_hears_how_far_a_replay_is(compiled_network, as_a_job, monkeypatch):
    """With a listener in force, a replay reports the share of its transfers delivered (as
    a job repeated: of its runs), rising to 1, with the time it expects to take still;
    without one, nothing."""
    from simnet.engine import progress

    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    monkeypatch.setattr(compiled, "PAUSE_INSTANTS", 4)
    topo = topology_from_dict({"name": "ls", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 2, "spines": 1}})
    _, schedule, timing = Setup(topo, "allreduce", "nccl", nccl_env({}), None).prepare("ring", 2**20, {})
    heard = []
    with progress.listening(lambda share, left_s: heard.append((share, left_s))):
        if as_a_job:
            replay_jobs([JobRun(schedule, timing, repeat=8, period_ps=10**9)], topo, compiled=compiled_network)
        else:
            replay(schedule, topo, timing=timing, compiled=compiled_network)
    shares = [share for share, _ in heard]
    assert len(shares) > 3 and shares == sorted(shares) and 0 < shares[0] and shares[-1] <= 1
    # no time left is said until the share has moved since the first report (no pace before)
    assert all((left_s is None) == (share == shares[0]) for share, left_s in heard)
    assert all(left_s >= 0 for _, left_s in heard if left_s is not None)


def test_a_compiled_replay_that_starts_over_reports_no_share_twice(monkeypatch):
    """Review 68: nothing failed without the compiled network's call to ``Reporter.again``. With
    buffers of 2 entries the replay starts over as it grows them; the shares a listener hears
    never go back, and it did start over."""
    from simnet.engine import progress

    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    monkeypatch.setattr(compiled, "PAUSE_INSTANTS", 4)
    monkeypatch.setattr(compiled, "FIRST_SIZES", dict.fromkeys(compiled.FIRST_SIZES, 2))
    again = []
    original = progress.Reporter.again
    monkeypatch.setattr(progress.Reporter, "again", lambda self: (again.append(1), original(self)))
    topo = topology_from_dict({"name": "ls", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 2, "spines": 1}})
    _, schedule, timing = Setup(topo, "allreduce", "nccl", nccl_env({}), None).prepare("ring", 2**20, {})
    heard = []
    with progress.listening(lambda share, left_s: heard.append(share)):
        replay(schedule, topo, timing=timing, compiled=True)
    assert again and len(heard) > 3 and heard == sorted(heard)


def test_the_time_left_follows_the_pace_since_the_first_report(monkeypatch):
    """Fuzz round ak: a replay whose set-up took long said "about 263,178 s left" of a minute's
    run, extrapolating from its start. The pace counts from the first report: set up for 100 s,
    1 of 100 transfers done then, 2 a second later: 98 s left (from the start: 4,949 s)."""
    from simnet.engine import progress

    clock = iter([0.0, 100.0, 101.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    heard = []
    with progress.listening(lambda share, left_s: heard.append((share, left_s))):
        report = progress.Reporter(100, every_s=0.0)
        report(1)
        report(2)
    assert heard == [(0.01, None), (0.02, 98.0)]


def test_a_replay_started_over_never_seems_to_go_back(monkeypatch):
    """Fuzz round ak's binary tree of 1 B pieces: "this run 13%", then "4%", as the compiled
    network started over with a larger calendar. A replay started over reports again once past
    where it had come, its pace counted from there: 50 of 100 done, over, 10 (unsaid), 60 at
    200 s, 70 at 201 s: 3 s left (10 a second, 30 to go)."""
    from simnet.engine import progress

    clock = iter([0.0, 100.0, 150.0, 200.0, 201.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    heard = []
    with progress.listening(lambda share, left_s: heard.append((share, left_s))):
        report = progress.Reporter(100, every_s=0.0)
        report(50)
        report.again()
        for done in (10, 60, 70):
            report(done)
    assert heard == [(0.5, None), (0.6, None), (0.7, 3.0)]


def test_jobs_of_no_transfers_run_on_any_engine_as_their_issue_times():
    """Review finding: jobs that carry no transfer got no runs on the compiled network (it
    told jobs from one schedule by its per-transfer job index, empty here), and no jobs at all
    raised. Each run of such a job ends as it is issued: 3 runs 10 ps apart, and 0 and 5 ps."""
    topo = topology_from_dict({"name": "t", "nodes": [{"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"}],
                               "links": [{"a": "g0", "b": "g1", "bandwidth": "10 GB/s", "latency": "1 us"}]})
    empty = ScheduleBuilder("x", ["g0", "g1"], 10).build()
    for engine in (None, True, False):
        assert replay_jobs([JobRun(empty, Timing(), repeat=3, period_ps=10)], topo, compiled=engine)[0] == [
            [(0, 0), (10, 10), (20, 20)]]
        assert replay_jobs([JobRun(empty, Timing()), JobRun(empty, Timing(), start_ps=5)], topo,
                           compiled=engine)[0] == [[(0, 0)], [(5, 5)]]
        assert replay_jobs([], topo, compiled=engine)[0] == []


@pytest.mark.parametrize("engine", [False, True])
def test_a_background_run_due_after_every_foreground_job_ended_is_not_issued(engine):
    """Review finding: a background job repeats "for as long as some other job is still
    running", but its run planned while the foreground ran and due after it ended was still
    issued (both engines), its bytes in the link statistics. The foreground here runs three
    1 MB copies back to back over 10 GB/s (about 100 us each, ends near 305 us); the background
    (10 kB every 250 us) runs at 0 and 250 us, and not at 500 us."""
    topo = topology_from_dict({"name": "t", "nodes": [{"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"}],
                               "links": [{"a": "g0", "b": "g1", "bandwidth": "10 GB/s", "latency": "1 us"}]})
    big, small = ScheduleBuilder("x", ["g0", "g1"], 10**6), ScheduleBuilder("y", ["g0", "g1"], 10**4)
    big.add([0], [1], 0, 10**6, COPY)
    small.add([0], [1], 0, 10**4, COPY)
    jobs = [JobRun(big.build(), Timing(), repeat=3), JobRun(small.build(), Timing(), repeat=0, period_ps=25 * 10**7)]
    with mock.patch.object(replay_module, "_may_skip", lambda jobs, faulted=False: False):
        runs, stats = replay_jobs(jobs, topo, compiled=engine)
    assert 25 * 10**7 < runs[0][-1][1] < 50 * 10**7  # the foreground ends between the 2nd and 3rd due
    assert [start for start, _ in runs[1]] == [0, 25 * 10**7]
    assert stats.bytes[topo.link_index[("g0", "g1")]] == 3 * 10**6 + 2 * 10**4


def test_jobs_replayed_on_simpy_count_toward_loading_the_compiled_network(monkeypatch):
    """Review finding: a process's SimPy replays of one schedule count toward SIMPY_SECONDS,
    after which every replay takes the compiled network; its SimPy jobs replays did not, so
    many small run_jobs calls never switched."""
    spent = [0.0]
    monkeypatch.setattr(replay_module, "_spent_on_simpy", spent)
    topo = topology_from_dict({"name": "t", "nodes": [{"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"}],
                               "links": [{"a": "g0", "b": "g1", "bandwidth": "10 GB/s", "latency": "1 us"}]})
    b = ScheduleBuilder("x", ["g0", "g1"], 1000)
    b.add(np.array([0]), np.array([1]), np.array([0]), np.array([1000]), np.array([COPY]))
    replay_jobs([JobRun(b.build(), Timing(), repeat=2)], topo, compiled=False)
    assert spent[0] > 0


def test_a_job_of_thousands_of_runs_is_heard_rising_on_the_compiled_network(monkeypatch):
    """Review finding: the compiled replay kept its runs in a buffer of 1,024 and, when full,
    started over with it doubled, so a listener heard a job of 3,000 runs fall back (0.68 to
    0.34) and its first runs were replayed again. The buffer now holds the runs asked."""
    from simnet.engine import progress

    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    monkeypatch.setattr(compiled, "PAUSE_INSTANTS", 64)
    topo = topology_from_dict({"name": "t", "nodes": [{"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"}],
                               "links": [{"a": "g0", "b": "g1", "bandwidth": "10 GB/s", "latency": "1 us"}]})
    b = ScheduleBuilder("x", ["g0", "g1"], 1000)
    b.add(np.array([0]), np.array([1]), np.array([0]), np.array([1000]), np.array([COPY]))
    heard = []
    with progress.listening(lambda share, left_s: heard.append(share)):
        runs, _ = replay_jobs([JobRun(b.build(), Timing(), repeat=3000, period_ps=10**6)], topo, compiled=True)
    assert len(runs[0]) == 3000 and len(heard) > 2 and heard == sorted(heard)


@st.composite
def _jobs(draw):
    """A small network (as ``_runs``) and 1-3 jobs on it, each a random schedule and timing
    (``_timed_schedules``) first issued at 0 or later and run once to three times on a
    period shorter or longer than its runs, or in the background on a period (its runs move
    on in time while the others run); whether to keep a timeline; faults (``strategies.faults_on``)."""
    written = draw(st.one_of(small_fabrics(), two_way_fabrics()))
    gpus = sum(node["kind"] == "gpu" for node in written["nodes"])
    jobs = []
    for _ in range(draw(st.integers(1, 3))):
        schedule, timing = draw(_timed_schedules(gpus))
        repeat = draw(st.sampled_from([0, 1, 1, 2, 3]))
        periods = [10**8, 10**9] if repeat == 0 else [0, 10**6, 5 * 10**6, 4 * 10**7]
        jobs.append(JobRun(schedule, timing, start_ps=draw(st.sampled_from([0, 0, 10**6, 3 * 10**6])),
                           repeat=repeat, period_ps=draw(st.sampled_from(periods))))
    return written, jobs, draw(st.booleans()), draw(faults_on(written))


def _jobs_on_both(jobs, topo, **kwargs):
    """``replay_jobs`` on the SimPy network replaying every run (no skip over repeated
    cycles, as the compiled network) and on the compiled one: (runs, stats) each; or (None,
    None) when both stop with the same ``Cut`` (links down that leave a route none)."""
    answers, messages = [], []
    for engine in (False, True):
        try:
            with mock.patch.object(replay_module, "_may_skip", lambda jobs, faulted=False: False):
                answers.append(replay_jobs(jobs, topo, compiled=engine, **kwargs))
        except Cut as exc:
            messages.append(str(exc))
    if messages:
        assert len(messages) == 2 and messages[0] == messages[1]
        return None, None
    return tuple(answers)


def _assert_same_jobs(simpy_jobs, compiled_jobs):
    (simpy_runs, simpy_stats), (compiled_runs, compiled_stats) = simpy_jobs, compiled_jobs
    assert compiled_runs == simpy_runs
    _assert_same_statistics(simpy_stats, compiled_stats, max([end for runs in simpy_runs for _, end in runs] + [1]))


@settings(max_examples=50, deadline=None)
@given(case=_jobs())
def test_jobs_on_the_compiled_network_run_as_on_the_simpy_network_to_the_bit(case):
    """Every run's issue and end to the picosecond and every link statistic to the bit:
    queues kept across a job's runs, runs issued on their period or at the end of the run
    before, launch latencies, background jobs repeating while the others run, faults that
    slow links or take a spine down while the jobs' flows cross it."""
    written, jobs, timeline, faults = case
    both = _jobs_on_both(jobs, topology_from_dict(written), timeline=timeline, faults=faults)
    if both[0] is not None:
        _assert_same_jobs(*both)


def test_real_jobs_sharing_uplinks_run_the_same_compiled():
    """NCCL's Ring and Tree of two jobs spread over both racks of an 8:1 oversubscribed
    leaf-spine (their flows share the uplinks), repeated on a period shorter than their
    runs, the Tree's first issued later, and a third job's Ring in the background: the same
    on both networks."""
    topo = topology_from_dict({"name": "ls", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 4, "spines": 2, "gpu": "h100",
        "oversubscription": 8}})
    gpus = topo.gpus
    jobs = []
    for group, algorithm, size, options in ((gpus[0::3], "ring", 2**22, {"repeat": 3, "period_ps": 10**7}),
                                            (gpus[1::3], "tree", 2**21, {"repeat": 2, "start_ps": 3 * 10**6}),
                                            (gpus[2::3], "ring", 2**20, {"repeat": 0, "period_ps": 10**8})):
        _, schedule, timing = Setup(topo.subset(group), "allreduce", "nccl", nccl_env({}), None).prepare(
            algorithm, size, {})
        jobs.append(JobRun(schedule, timing, **options))
    simpy_jobs, compiled_jobs = _jobs_on_both(jobs, topo, capacity=jobs[0].timing.capacity, timeline=True)
    _assert_same_jobs(simpy_jobs, compiled_jobs)
    runs = compiled_jobs[0]
    assert [len(job) for job in runs[:2]] == [3, 2] and len(runs[2]) > 1
    assert len({end - start for start, end in runs[2]}) > 1  # the background's runs take longer as others join it
