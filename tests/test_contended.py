"""Lanes that share a link beyond its capacity: answered exactly when the bounds meet.

Every lane at its own rate (its ceiling or its narrowest link) is a lower bound on every
time of the fluid run, since max-min sharing never gives a flow more than that; every lane
at an equal split of each link it shares is an upper bound (``replay_lanes``' docstring).
When the two completion times are the same picosecond, so is the fluid run's. The fluid
engine, on the expanded programs, is the reference.
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
from simnet.topology.graph import PS_PER_SECOND
from simnet.topology.loader import load_topology, topology_from_dict

FUNCTIONS = {"allreduce": "AllReduce", "reduce_scatter": "ReduceScatter", "all_gather": "AllGather"}


def test_a_collision_off_the_critical_path_takes_the_closed_form():
    """A: P -> R and B: Q -> R, 1 MB each, every port 1 GB/s and 1 ns: together they ask R's
    port for 2 GB/s, so max-min halves them (both delivered at 2 ms + 2 ns) and the exact
    lanes refuse. C: X -> Y, 1 MB over X's 0.1 GB/s port, shares nothing: 10 ms + 2 ns. The
    completion is C's however A and B share: 10^10 + 2,000 ps, both bounds and the fluid run."""
    gpus = ["P", "Q", "R", "X", "Y"]
    speed = {"X": "0.1 GB/s"}
    topo = topology_from_dict({"name": "star", "nodes": [{"id": g, "kind": "gpu"} for g in gpus]
                               + [{"id": "sw", "kind": "switch"}],
                               "links": [{"a": g, "b": "sw", "bandwidth": speed.get(g, "1 GB/s"), "latency": "1 ns"}
                                         for g in gpus]})
    size = 10**6

    def pieces(q):
        return np.zeros(3, dtype=np.int64), np.full(3, size, dtype=np.int64), np.zeros(3, dtype=np.int8)

    program = LaneProgram("collide", gpus, gpus, size, src=np.array([0, 1, 3]), dst=np.array([2, 2, 4]),
                          channel=np.zeros(3, dtype=np.int64), flows=np.array([1, 1, 1]), after=np.array([-1, -1, -1]),
                          lag=np.array([1, 1, 1]), per_step=np.ones(3, dtype=np.int64), pieces=pieces)
    assert replay_lanes(program, topo) is None
    met = replay_lanes(program, topo, accept="makespan")
    fluid = replay(program.to_schedule(), topo)
    assert met.engine == "lanes-bounds-meet"
    assert met.duration_ps == fluid.duration_ps == 10**10 + 2_000
    assert fluid.delivered_ps[:2].tolist() == [2 * 10**9 + 2_000] * 2
    assert (met.lanes_done_ps >= fluid.delivered_ps).all()  # per lane the upper bound's, here A's and B's exact too
    np.testing.assert_allclose(met.stats.bytes, fluid.stats.bytes, rtol=1e-12)


@pytest.fixture(scope="module")
def hosts():
    return load_topology(Path(__file__).parent.parent / "topologies/two_racks.yaml").subset(16)  # 2 hosts of 8


@settings(max_examples=8, deadline=None)
@given(size=st.integers(2**12, 2**26), channels=st.sampled_from([None, 1, 2, 4]),
       chunk=st.sampled_from([None, 65536, 2**20]), algorithm=st.sampled_from(["ring", "tree"]),
       collective=st.sampled_from(list(FUNCTIONS)))
def test_the_bounds_hold_and_meet_only_on_the_fluid_run(hosts, size, channels, chunk, algorithm, collective):
    """At line rate (``model: ideal``) the channels' lanes share every GPU's NVLink port. Whatever
    the lanes answer is the fluid run's completion to the picosecond, or, asked for a bound,
    at or above it."""
    if algorithm == "tree":
        collective = "allreduce"
    options = {k: v for k, v in (("channels", channels), ("chunk_size", chunk)) if v is not None}
    decided = plan("ideal", hosts, algorithm, size, options, algorithms_for(collective)[algorithm].options,
                   function=FUNCTIONS[collective])
    program = build_program(algorithm, hosts, size, collective=collective, **decided.options)
    schedule = program.to_schedule()
    fluid = replay(schedule, hosts, timing=timing(decided, schedule, hosts))
    answer = replay_lanes(program, hosts, lane_timing(decided, program, hosts), accept="bound")
    if answer.engine == "lanes-steady":
        assert answer.duration_ps >= fluid.duration_ps
    else:
        assert answer.duration_ps == fluid.duration_ps
    np.testing.assert_allclose(answer.stats.bytes, fluid.stats.bytes, rtol=1e-12)


@pytest.fixture(scope="module")
def rail():
    """One scalable unit of the rail-optimized generator: 32 H100 hosts, a NIC per GPU, a leaf per rail."""
    return topology_from_dict({"name": "rail", "generate": {"kind": "rail_optimized", "units": 1}})


def _piece_through_a_nic(topo, size, channels):
    """(ps one ring piece takes on a GPU's NIC route, that route's latency ps): a ring of N
    GPUs moves size / (channels * N) bytes per step and channel; GPU 0 of host 0 and of host
    1 share rail 0, so their route is one NIC, one leaf, one NIC."""
    paths, latency = topo.route_matrix([topo.gpus[0]], [topo.gpus[8]], [0])
    nic = int(topo.capacity[paths[0][paths[0] < len(topo.links)]].min())
    piece = size // (channels * len(topo.gpus))
    assert piece * channels * len(topo.gpus) == size
    return -(-piece * PS_PER_SECOND // nic), int(latency[0])


@pytest.mark.parametrize("gpus", [32, 128])
def test_an_ideal_ring_on_a_rail_fabric_is_its_closed_form_by_its_bounds_and_on_the_fluid_network(rail, gpus):
    """Under ``model: ideal`` NCCL's 8 rings each ask 7 of every GPU's NVLink ports for the
    port's line rate: the collision is real (the exact lanes refuse), but the ring is paced by
    its NICs, each alone on its rail. Its time is then the closed form of docs/model.md,
    2(N-1)/N * S / B plus the route's latency: 2(N-1) pieces of S / (8 N) bytes one after
    another through a NIC, then the NIC route's latency. The lanes' lower and upper bounds meet
    there, and the fluid network (a timeline forces it) ends on the same picosecond."""
    topo, size = rail.subset(gpus), 2**30
    decided = plan("ideal", topo, "ring", size, {}, algorithms_for("allreduce")["ring"].options)
    program = build_program("ring", topo, size, **decided.options)
    assert replay_lanes(program, topo, lane_timing(decided, program, topo)) is None  # contended
    by_bounds = simulate(topo, "ring", size, model="ideal")
    fluid = simulate(topo, "ring", size, model="ideal", timeline=True)
    assert (by_bounds.replay.engine, fluid.replay.engine) == ("lanes-bounds-meet", "fluid")
    piece_ps, latency_ps = _piece_through_a_nic(topo, size, by_bounds.channels)
    assert by_bounds.replay.duration_ps == fluid.replay.duration_ps == 2 * (gpus - 1) * piece_ps + latency_ps
    assert all(w.kind != "upper_bound" for w in by_bounds.warnings)


def test_an_ideal_ring_whose_bounds_do_not_meet_takes_the_fluid_network_even_past_the_steady_gate(rail, monkeypatch):
    """At 1 MiB the ring's pieces are small, the NVLink collisions reach its NICs and the
    bounds stay apart: ``model: ideal`` answers with the fluid network, the exact reference,
    even with the steady-lanes gate at zero transfers (it bounds ``model: nccl`` rings only).
    The bounds bracket that answer."""
    monkeypatch.setattr("simnet.run.point.MAX_EXACT", 0)
    topo, size = rail.subset(32), 2**20
    answer = simulate(topo, "ring", size, model="ideal")
    assert answer.replay.engine == "fluid"
    decided = plan("ideal", topo, "ring", size, {}, algorithms_for("allreduce")["ring"].options)
    program = build_program("ring", topo, size, **decided.options)
    schedule = program.to_schedule()
    fluid = replay(schedule, topo, timing=timing(decided, schedule, topo))
    assert answer.replay.duration_ps == fluid.duration_ps
    upper = replay_lanes(program, topo, lane_timing(decided, program, topo), accept="bound")
    assert upper.engine == "lanes-steady" and upper.duration_ps > fluid.duration_ps
    assert replay_lanes(program, topo, lane_timing(decided, program, topo), accept="makespan") is None


@settings(max_examples=4, deadline=None)
@given(size=st.integers(2**16, 2**30), channels=st.sampled_from([None, 2, 4]))
def test_model_ideal_is_the_fluid_run_whichever_engine_answers(rail, size, channels):
    """Whatever answers an ideal ring on the rail fabric (the exact lanes, the bounds where
    they meet, or the fluid network), it is the fluid network's completion to the picosecond."""
    topo = rail.subset(32)
    options = {"channels": channels} if channels else {}
    quick = simulate(topo, "ring", size, model="ideal", **options)
    fluid = simulate(topo, "ring", size, model="ideal", timeline=True, **options)
    assert quick.replay.engine in ("lanes", "lanes-bounds-meet", "fluid") and fluid.replay.engine == "fluid"
    assert quick.replay.duration_ps == fluid.replay.duration_ps
