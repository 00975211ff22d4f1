"""Lane programs: NCCL's rings replayed lane by lane must be the fluid engine's run, exactly.

The fluid engine times every transfer with max-min sharing; ``replay_lanes`` takes the
longest path through the same dependencies when no link can be oversubscribed. Both run
the same ``LaneProgram`` (expanded for the fluid engine), so any difference is a bug in
one of them: completion time within 1e-6 relative (a picosecond of rounding per
transfer at most), the same bytes on every link, the same saturated time.
"""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simnet import simulate
from simnet.engine.lanes import replay_lanes
from simnet.engine.replay import replay
from simnet.model.interface import lane_timing, plan, timing
from simnet.schedule.catalog import algorithms_for, build_program
from simnet.schedule.lanes import LaneProgram
from simnet.schedule.verify import check_collective
from simnet.topology.loader import load_topology, topology_from_dict

FUNCTIONS = {"allreduce": "AllReduce", "reduce_scatter": "ReduceScatter", "all_gather": "AllGather"}


def both(topo, collective, size, model="nccl", reduce_bandwidth=None, algorithm="ring", steady=False, **options):
    """(fluid replay, lane replay or None) of NCCL's ``algorithm`` of ``collective`` (the lanes
    as steady lanes with ``steady``)."""
    decided = plan(model, topo, algorithm, size, options, algorithms_for(collective)[algorithm].options,
                   function=FUNCTIONS[collective])
    program = build_program(algorithm, topo, size, collective=collective, **decided.options)
    schedule = program.to_schedule()
    fluid = replay(schedule, topo, timing=timing(decided, schedule, topo), reduce_bandwidth=reduce_bandwidth)
    lanes = replay_lanes(program, topo, lane_timing(decided, program, topo), reduce_bandwidth=reduce_bandwidth,
                         steady=steady)
    return fluid, lanes


def assert_same_run(fluid, lanes):
    assert lanes is not None and lanes.engine == "lanes"
    assert lanes.duration_ps == fluid.duration_ps  # both end a flow at the first whole ps after its last byte
    np.testing.assert_allclose(lanes.stats.bytes, fluid.stats.bytes, rtol=1e-12)
    # saturation is exact; a link's peak and most flows at once are bounds where lanes share it
    np.testing.assert_allclose(lanes.stats.saturated_ps, fluid.stats.saturated_ps, atol=len(fluid.schedule))
    assert (lanes.stats.peak >= fluid.stats.peak - 1e-9).all()
    assert (lanes.stats.max_flows >= fluid.stats.max_flows).all()
    alone = lanes.stats.max_flows == 1
    np.testing.assert_allclose(lanes.stats.peak[alone], fluid.stats.peak[alone], rtol=1e-9)
    assert (fluid.stats.max_flows[alone] == 1).all()


@pytest.fixture(scope="module")
def racks():
    return load_topology(Path(__file__).parent.parent / "topologies/two_racks.yaml").subset(24)  # 3 hosts of 8


@pytest.mark.parametrize("collective", list(FUNCTIONS))
@pytest.mark.parametrize("size", [8, 1_000_003, 2**26])
def test_nccl_ring_lane_by_lane_is_the_fluid_run(racks, collective, size):
    assert_same_run(*both(racks, collective, size))


@settings(max_examples=10, deadline=None)
@given(size=st.integers(1, 2**24), channels=st.integers(1, 6), chunk=st.sampled_from([None, 4096, 65536]),
       reduce=st.sampled_from([None, 2e10]), collective=st.sampled_from(list(FUNCTIONS)))
def test_any_ring_lane_by_lane_is_the_fluid_run(racks, size, channels, chunk, reduce, collective):
    """Uneven parts, pieces that differ by a byte, channel groups of different piece
    counts, reductions that cost time: the two replays still agree."""
    fluid, lanes = both(racks, collective, size, reduce_bandwidth=reduce, channels=channels, chunk_size=chunk)
    assert_same_run(fluid, lanes)


@pytest.mark.parametrize("size", [8, 1_000_003, 2**26])
def test_nccl_tree_lane_by_lane_is_the_fluid_run(racks, size):
    """Trees wait on the same chunk of other lanes (children, parents): replayed in waves.
    Several channels' lanes cross each GPU's NVLink port and could fill it: their times
    are checked instant by instant, and that link's statistics come out exact."""
    fluid, lanes = both(racks, "allreduce", size, algorithm="tree")
    assert_same_run(fluid, lanes)
    np.testing.assert_allclose(lanes.stats.saturated_ps, fluid.stats.saturated_ps, atol=len(fluid.schedule))


@settings(max_examples=8, deadline=None)
@given(size=st.integers(1, 2**24), channels=st.integers(1, 4), chunk=st.sampled_from([None, 65536, 2**20]),
       reduce=st.sampled_from([None, 2e10]))
def test_any_tree_lane_by_lane_is_the_fluid_run_or_refused(racks, size, channels, chunk, reduce):
    """Where NCCL's ceilings let the channels' lanes exceed a link together, the lanes
    must either prove it never happened at any instant (and agree with the fluid run)
    or leave the run to the fluid engine."""
    fluid, lanes = both(racks, "allreduce", size, algorithm="tree", reduce_bandwidth=reduce, channels=channels,
                        chunk_size=chunk)
    if lanes is not None:
        assert_same_run(fluid, lanes)


def test_links_that_could_be_oversubscribed_are_refused_by_the_exact_lanes(racks):
    """At line rate NCCL's rings share every GPU's NVLink port between channels: max-min
    sharing binds, so the exact lanes refuse. The ring's pace is its NICs' here, each alone
    on its link, so the lower bound (every lane at its own rate) and the upper bound (an
    equal split of every shared port) end on the same picosecond: ``simulate`` answers the
    fluid run's completion from them."""
    fluid, lanes = both(racks, "allreduce", 2**26, model="ideal")
    assert lanes is None
    result = simulate(racks, "ring", 2**26, model="ideal")
    assert result.replay.engine == "lanes-bounds-meet" and result.replay.duration_ps == fluid.duration_ps
    assert not [w for w in result.warnings if w.kind == "upper_bound"]
    _, lanes = both(racks, "allreduce", 2**26, model="ideal", channels=1)  # one ring: nothing shared
    assert lanes is not None


def test_simulate_takes_the_lanes_and_the_timeline_takes_the_fluid_engine(racks):
    quick = simulate(racks, "ring", 2**26)
    full = simulate(racks, "ring", 2**26, timeline=True)
    assert (quick.replay.engine, full.replay.engine) == ("lanes", "fluid")
    assert quick.time_s == pytest.approx(full.time_s, rel=1e-6)
    assert {(link.src, link.dst): link.bytes for link in quick.links} == \
        pytest.approx({(link.src, link.dst): link.bytes for link in full.links}, rel=1e-12)
    # the same bottleneck (by its figures: links that tie exactly may be listed in either order)
    assert (quick.links[0].saturated_fraction, quick.links[0].mean_utilization) == \
        pytest.approx((full.links[0].saturated_fraction, full.links[0].mean_utilization), rel=1e-6)
    assert quick.channels == full.channels and quick.protocol == full.protocol


@pytest.mark.parametrize("collective", list(FUNCTIONS))
def test_the_expanded_program_computes_the_collective(racks, collective):
    program = build_program("ring", racks, 6007, collective=collective, channels=3, chunk_size=512)
    check_collective(program.to_schedule(), collective)


def test_a_ring_of_512_gpus_takes_its_closed_form():
    """One NVSwitch of 512 GPUs at 100 GB/s and 1 us per link (2 us per hop), one ring,
    S = 512 x 64 KiB: 2(N-1)(L + S/(N*B)) = 1022 x (2 us + 65536 B / 100 GB/s) =
    1022 x 2.65536 us = 2.71377792 ms. The fluid engine would time 523,264 transfers.
    (At 1,024 GPUs the same holds; routing the star's 1,024 sources took 4 of its 5 s.)"""
    topo = topology_from_dict({"name": "wide", "generate": {"kind": "nvswitch", "gpus": 512,
                                                            "gpu_bandwidth": "100 GB/s", "latency": "1 us"}})
    result = simulate(topo, "ring", 512 * 65536, model="ideal", channels=1)
    assert result.replay.engine == "lanes"
    assert result.time_s == pytest.approx(1022 * 2.65536e-6, rel=1e-9)
    assert result.busbw_GBps == pytest.approx(2 * 511 / 512 * 512 * 65536 / (1022 * 2.65536e-6) / 1e9)


def test_plots_and_trace_of_a_run_too_large_to_keep_its_transfers(cli, root, tmp_path, figures):
    """With too little memory for the ring's 63,488 transfers (one rack: no uplink that ECMP could
    ask for more than it carries), ``run --plot --trace`` still answers (by lanes): the plots
    that need no timeline, a note for the heatmap, a trace that says it skipped the run."""
    import json

    trace = tmp_path / "t.json"
    result = cli("run", root / "scenarios/cross_rack.yaml", "-a", "ring", "-s", "1 GiB", "-g", "32", "--plot",
                 tmp_path / "plots", "--trace", trace, env={"SIMNET_MEMORY": "15 MB"})
    assert result.exit_code == 0, result.output
    assert "no link_heatmap.png: ring at 1 GiB was replayed connection by connection" in result.output
    assert {"time_vs_size.png", "busbw_vs_size.png", "link_utilization.png"} <= set(figures)
    assert "link_heatmap.png" not in figures
    note = "ring: left out, over 2,000,000 transfers (or replayed without keeping them)"
    assert json.loads(trace.read_text())["otherData"]["thinned or left out"] == [note]
    assert f"trace: {note}" in " ".join(result.output.split())


@pytest.mark.parametrize("collective", list(FUNCTIONS))
@pytest.mark.parametrize("size", [8, 2**16, 1_000_003, 14 * 2**20, 2**24, 2**26])
def test_steady_lanes_bound_the_fluid_run_from_above(racks, collective, size):
    """At line rate the channels share every GPU's NVLink port (the lanes refuse, above).
    At an equal split of every link among all the lanes crossing it, no link is ever asked
    for more than it carries and no transfer runs faster than the fluid engine runs it, so
    the time is an upper bound (measured here: up to 29 % above, AllReduce of 14 MiB)."""
    fluid, steady = both(racks, collective, size, model="ideal", steady=True)
    assert steady.engine == "lanes-steady"
    assert fluid.duration_ps <= steady.duration_ps <= 1.3 * fluid.duration_ps
    np.testing.assert_allclose(steady.stats.bytes, fluid.stats.bytes, rtol=1e-12)
    assert (steady.stats.peak <= 1 + 1e-9).all()
    if size >= 2**16:  # then every lane moves enough to be slowed by the GPU's port into its NVSwitch
        assert steady.shared_link is not None and racks.kind(racks.links[steady.shared_link][1]) == "switch"


def test_steady_lanes_stay_an_upper_bound_where_max_min_is_not_monotone():
    """Max-min rates are not monotone in the set of active flows: lane A leaving P's port lets
    B speed up there, and B then takes more of R's port from C, which feeds E. Max-min rates
    with every lane active would finish before the fluid engine; the equal split must not."""
    gpus = ["P", "Q1", "Q2", "R", "S"]
    topo = topology_from_dict({"name": "star", "nodes": [{"id": g, "kind": "gpu"} for g in gpus]
                               + [{"id": "sw", "kind": "switch"}],
                               "links": [{"a": g, "b": "sw", "bandwidth": "1 GB/s", "latency": "1 ns"} for g in gpus]})
    at = {g: i for i, g in enumerate(gpus)}
    # lanes: A P->Q1, B P->R, C S->R (after E), D P->Q2, E R->S (after C)
    src = np.array([at["P"], at["P"], at["S"], at["P"], at["R"]])
    dst = np.array([at["Q1"], at["R"], at["R"], at["Q2"], at["S"]])
    flows = np.array([1, 1, 100, 1, 100])
    each = np.array([80 * 10**6, 80 * 10**6, 10**6, 1000, 10**6])

    def pieces(q):
        return np.zeros(5, dtype=np.int64), np.where(flows > q, each, 0).astype(np.int64), np.zeros(5, dtype=np.int8)

    program = LaneProgram("star", gpus, gpus, 80 * 10**6, src=src, dst=dst, channel=np.zeros(5, dtype=np.int64),
                          flows=flows, after=np.array([-1, -1, 4, -1, 2]), lag=np.array([1, 1, 1, 1, 0]),
                          per_step=np.ones(5, dtype=np.int64), pieces=pieces,
                          carried_bytes=(each * flows).astype(float))
    fluid = replay(program.to_schedule(), topo)
    assert replay_lanes(program, topo) is None  # P's and R's ports are shared beyond capacity
    assert replay_lanes(program, topo, steady=True).duration_ps >= fluid.duration_ps


def test_two_lanes_that_overfill_one_link_go_to_the_fluid_engine():
    """The least sharing there is: P -> R and Q -> R, one transfer of S each, every port
    C = 1 GB/s and 1 ns. Each lane alone runs at C, so the two together ask R's port for
    2C. Max-min gives each C/2: both are delivered at S / (C/2) + 2 ns = 2 ms + 2 ns (the
    lanes at their own rates would say 1 ms: they must refuse, not answer that)."""
    gpus = ["P", "Q", "R"]
    topo = topology_from_dict({"name": "star", "nodes": [{"id": g, "kind": "gpu"} for g in gpus]
                               + [{"id": "sw", "kind": "switch"}],
                               "links": [{"a": g, "b": "sw", "bandwidth": "1 GB/s", "latency": "1 ns"} for g in gpus]})
    size, capacity = 10**6, 1e9

    def pieces(q):
        return np.zeros(2, dtype=np.int64), np.full(2, size, dtype=np.int64), np.zeros(2, dtype=np.int8)

    program = LaneProgram("into_r", gpus, gpus, size, src=np.array([0, 1]), dst=np.array([2, 2]),
                          channel=np.zeros(2, dtype=np.int64), flows=np.array([1, 1]), after=np.array([-1, -1]),
                          lag=np.array([1, 1]), per_step=np.ones(2, dtype=np.int64), pieces=pieces)
    assert replay_lanes(program, topo) is None
    fluid = replay(program.to_schedule(), topo)
    assert fluid.time == pytest.approx(size / (capacity / 2) + 2e-9, rel=1e-9)
    np.testing.assert_allclose(fluid.delivered, fluid.time, rtol=1e-9)
    # the bounds, 1 ms + 2 ns (own rates) and 2 ms + 2 ns (the equal split), do not meet: no answer
    assert replay_lanes(program, topo, accept="makespan") is None
    bound = replay_lanes(program, topo, accept="bound")
    assert bound.engine == "lanes-steady" and bound.duration_ps == fluid.duration_ps


def test_steady_lanes_are_the_exact_lanes_when_no_link_binds(racks):
    fluid, steady = both(racks, "allreduce", 2**26, steady=True)
    assert steady.duration_ps == fluid.duration_ps and steady.shared_link is None


@pytest.fixture(scope="module")
def oversubscribed():
    """Two racks of one 8-B200 host, a 400G NIC per GPU, the ToRs' uplinks 4:1 oversubscribed:
    NCCL's ring takes 8 channels of 48 GB/s (each GPU forwards 7 over NVLink, 336 of its
    722 GB/s, NVIDIA/nccl v2.30.7 search.cc:80-170), 384 GB/s out of a rack through a 100 GB/s
    uplink, so its lanes refuse under ``model: nccl``. (NCCL's search never asks a GPU's
    NVLink port for more than it has, so the port itself no longer serves.)"""
    return topology_from_dict({"name": "over", "routing": "by_destination", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 8, "gpu": "b200",
        "nic_bandwidth": "400 Gb/s", "transport": "ib", "oversubscription": 4, "spines": 1}})


def test_simulate_bounds_only_nccl_rings_too_large_to_replay_exactly(racks, oversubscribed, monkeypatch):
    monkeypatch.setattr("simnet.run.point.MAX_EXACT", 100)
    bound = simulate(oversubscribed, "ring", 2**22)
    assert bound.replay.engine == "lanes-steady"
    warning = bound.warnings[0]
    assert warning.kind == "upper_bound" and "upper bound" in warning.message
    assert warning.link == "tor0->spine0"  # the rack's oversubscribed uplink
    # the fluid network would not finish such a ring: a timeline does not send it there
    assert simulate(oversubscribed, "ring", 2**22, timeline=True).replay.engine == "lanes-steady"
    # auto says so when a candidate it did not pick could only be bounded
    auto = simulate(oversubscribed, "auto", 2**22)
    assert auto.algorithm != "ring" and [w.kind for w in auto.warnings].count("candidate_upper_bound") == 1
    # the exact lanes take the racks' ring under nccl: a timeline still gets the fluid network;
    # model: ideal is the exact reference (bounded, from below, only where the fluid network could not hold it)
    # and a tree is bounded loosely: neither is bounded here
    assert simulate(racks, "ring", 2**24, timeline=True).replay.engine == "fluid"
    assert simulate(racks, "ring", 2**24, model="ideal").replay.engine == "fluid"
    assert simulate(racks, "tree", 2**24, model="ideal").replay.engine == "fluid"


def test_a_plot_says_why_a_bounded_ring_has_no_link_heatmap(oversubscribed, monkeypatch):
    from types import SimpleNamespace

    from simnet.report.plots import heatmap_missing

    monkeypatch.setattr("simnet.run.point.MAX_EXACT", 100)
    bound = simulate(oversubscribed, "ring", 2**22, timeline=True)
    why = heatmap_missing(SimpleNamespace(runs=[bound]))
    assert "too many to replay their sharing exactly: an upper bound" in why


def test_the_exact_option_never_bounds(oversubscribed, monkeypatch):
    """``exact: true`` sends a ring too large to replay exactly to the fluid network (which
    would take seconds here: stopped at its door) instead of bounding it."""
    class FluidCalled(Exception):
        pass

    def fluid(*args, **kwargs):
        raise FluidCalled

    monkeypatch.setattr("simnet.run.point.MAX_EXACT", 100)
    assert simulate(oversubscribed, "ring", 2**22).replay.engine == "lanes-steady"
    monkeypatch.setattr("simnet.run.point.replay", fluid)
    with pytest.raises(FluidCalled):
        simulate(oversubscribed, "ring", 2**22, exact=True)


# ------------------------------------------------------------------ in the switches: NVLS, NVLSTree, CollNet
def tiny(hosts, gpus, sharp=False):
    """``hosts`` H100 hosts of ``gpus`` GPUs on one ToR (NVLS in each NVSwitch; SHARP in the ToR with ``sharp``)."""
    return topology_from_dict({"name": "tiny", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": hosts,
                                                            "gpus_per_host": gpus, "spines": 1, "sharp": sharp}})


BUILT_BEFORE = {
    ("nvls_tree", 2, 2, False, 4, "ideal"): 16500049, ("nvls_tree", 2, 2, False, 4, "nccl"): 125624062,
    ("nvls_tree", 3, 2, False, 6, "ideal"): 27000089, ("nvls_tree", 3, 2, False, 6, "nccl"): 216826218,
    ("nvls", 1, 4, False, 4, "ideal"): 3000010, ("nvls", 1, 4, False, 4, "nccl"): 87500225,
    ("nvls", 3, 2, True, 6, "ideal"): 17083382, ("nvls", 3, 2, True, 6, "nccl"): 69041874,
    ("collnet_direct", 3, 2, True, 5, "ideal"): 26500080, ("collnet_direct", 3, 2, True, 5, "nccl"): 90425759,
    ("collnet_chain", 3, 3, True, 8, "ideal"): 17944511, ("collnet_chain", 3, 3, True, 8, "nccl"): 128700543,
}
"""(algorithm, hosts, GPUs per host, SHARP, the first N GPUs, model): the fluid engine's
completion (ps) of 1,000,003 B on 2 channels in 64 KiB chunks, as the schedules built
transfer by transfer (zero-byte joins at the switches and tree roots) ran before these
algorithms were lane programs (commit 434edc2). Hosts of 2, 2 and 1 GPUs (N = 5 of 3 x 2)
take the single-GPU host's path (CollNet's; NCCL sets no NVLS up there, so NVLSTree over
them, pinned too until fuzz round ar, is refused). NVLSTree under ``nccl`` was pinned again when NCCL's
ceiling for it took its kernel's loop fill (f539280: 96.2, 154.4, 152.6 us before): the
expanded schedule's run at the new ceilings, which its lanes must equal. CollNet under ``nccl``
likewise when NCCL's own chunk became enqueue.cc's (32 KiB here, not 512 KiB: the 64 KiB given
is coarser than NCCL's by 2, and the ceiling takes the fill that costs; 211.7 and 441.2 us before), and
again when the replay laid out only the channels NCCL runs (5 of the 12 the option opens for Direct and 3 of 18 for
Chain at this size: one ring of the search each, not 2 at a share of their rate; 98.5 and 149.5 us before)."""


@pytest.mark.parametrize("case", list(BUILT_BEFORE), ids=lambda case: "-".join(map(str, case)))
def test_in_network_programs_replay_as_the_schedules_built_before(case):
    """NVLS, NVLSTree and CollNet are lane programs: a lane from each GPU into its NVSwitch,
    the switch to the head, a tree or SHARP's aggregation tree between the heads, the head
    back into the switch, the switch to each GPU, all on chunk j at once. Expanded, each
    replays on the fluid engine to the picosecond as before and computes the AllReduce.
    Under NCCL's ceilings no link is asked for more than it carries and the lanes take the
    run, exactly; at line rate every channel's lanes share each GPU's port into its switch
    (max-min binds) and the run goes to the fluid engine."""
    algorithm, hosts, gpus, sharp, ranks, model = case
    topo = tiny(hosts, gpus, sharp).subset(ranks)
    options = {"channels": 2, "chunk_size": 65536}
    fluid, lanes = both(topo, "allreduce", 1_000_003, model=model, algorithm=algorithm, **options)
    assert fluid.duration_ps == BUILT_BEFORE[case]
    check_collective(fluid.schedule, "allreduce")
    if model == "nccl":
        assert_same_run(fluid, lanes)
    else:
        assert lanes is None or (algorithm, hosts) == ("nvls", 1)  # one host's NVLS: one lane each way per GPU
    run = simulate(topo, algorithm, 1_000_003, model=model, **options).replay
    assert run.duration_ps == fluid.duration_ps and run.engine == ("fluid" if lanes is None else "lanes")


def test_nvls_tree_moves_each_chunk_through_the_switches_and_the_heads():
    """Two hosts of two GPUs (a0 a1 | b0 b1, switches A and B), one chunk, channel 0 (tree 0:
    host a the root). Up (step 0): every GPU adds its chunk into its switch, the switch
    sends the sum to the head (GPU 0), b0 adds it into a0 once both heads hold their host's
    sum. Down (step 1): a0 has the total once b0's sum is in: it copies it to b0 and into
    A, which copies it to a0 and a1; b0 into B, to b0 and b1. As the schedule built
    transfer by transfer had it, its zero-byte joins (at A and B, at a0) resolved."""
    schedule = build_program("nvls_tree", tiny(2, 2), 2**20, channels=1, chunk_size=2**20).to_schedule()
    name = {"r0h0-gpu0": "a0", "r0h0-gpu1": "a1", "r0h1-gpu0": "b0", "r0h1-gpu1": "b1", "r0h0-nvswitch": "A",
            "r0h1-nvswitch": "B"}

    def label(t):
        ends = name[schedule.nodes[schedule.src[t]]] + "->" + name[schedule.nodes[schedule.dst[t]]]
        return ends, "+" if schedule.op[t] else "=", int(schedule.step[t])

    got = {label(t): sorted(label(d)[0] for d in schedule.deps(t)) for t in np.flatnonzero(schedule.channel == 0)}
    assert got == {
        ("a0->A", "+", 0): [], ("a1->A", "+", 0): [], ("b0->B", "+", 0): [], ("b1->B", "+", 0): [],
        ("A->a0", "=", 0): ["a0->A", "a1->A"], ("B->b0", "=", 0): ["b0->B", "b1->B"],
        ("b0->a0", "+", 0): ["A->a0", "B->b0"],
        ("a0->b0", "=", 1): ["A->a0", "b0->a0"], ("a0->A", "=", 1): ["A->a0", "b0->a0"],
        ("A->a0", "=", 1): ["a0->A"], ("A->a1", "=", 1): ["a0->A"],
        ("b0->B", "=", 1): ["a0->b0"], ("B->b0", "=", 1): ["b0->B"], ("B->b1", "=", 1): ["b0->B"]}
    assert len(schedule) == 2 * len(got)  # channel 1 (tree 1, host b the root) the same, mirrored


def test_nvls_tree_of_one_chunk_takes_its_closed_form_on_paper():
    """Line rate, the same two hosts, S = 1 MiB on NCCL's 2 channels (one per tree) of one
    chunk c = S/2 each: both channels' chunks go into each switch and on to its head at once,
    sharing each port (2c/B per hop), cross between the heads alone on their NICs (opposite
    ways), and come back out of the root's switch while the other host's copy is on the wire
    (c/B per hop): 4 L + 2 * 2c/B + 2 (L_net + c/B_net) + 2 c/B, with L = 0.25 us a GPU to
    its NVSwitch at B = 450 GB/s, L_net = 4 us head to head over PCIe, NIC and ToR at
    B_net = 50 GB/s. (NCCL's chunks stream through the switch; these are stored and forwarded.)"""
    size, c, nvlink, net = 2**20, 2**19, 450e9, 50e9
    result = simulate(tiny(2, 2), "nvls_tree", size, model="ideal", channels=1, chunk_size=size)
    expected = 4 * 0.25e-6 + 2 * 2 * c / nvlink + 2 * (4e-6 + c / net) + 2 * c / nvlink
    assert result.time_s == pytest.approx(expected, abs=6e-12)  # each of the 6 hops ends on a whole picosecond
