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

from simnet.engine.lanes import replay_lanes
from simnet.engine.replay import replay
from simnet.model.interface import lane_timing, plan, timing
from simnet.schedule.catalog import algorithms_for, build_program
from simnet.schedule.lanes import LaneProgram
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
