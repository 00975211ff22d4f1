"""Several groups of GPUs running one collective at once (``simulate_groups``, what a
training step's tensor-, data- and pipeline-parallel groups do): whether the groups run
together lane by lane, or on the fluid network in independent parts with identical parts
replayed once, every group's time is the one a single fluid replay of all of them gives."""

import importlib

import numpy as np
import pytest

from simnet import topology_from_dict
from simnet.engine.replay import JobRun, replay_apart, replay_jobs
from simnet.run.groups import _groups_by_lanes, simulate_groups
from simnet.run.nccl_env import nccl_env
from simnet.run.point import Setup
from simnet.topology.graph import PS_PER_SECOND

replay_module = importlib.import_module("simnet.engine.replay")  # the package exports a function of that name


def fabric(uplink: str = "1.6 Tb/s"):
    """2 racks x 2 hosts x 4 H100, a 400G NIC per GPU, ``uplink`` per leaf-spine link."""
    return topology_from_dict({"name": "f", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 4, "gpu": "h100",
        "nic_per": "gpu", "nic_bandwidth": "400 Gb/s", "uplink_bandwidth": uplink, "spines": 1}})


def plans(topo, groups, collective, size, algorithm):
    """What ``simulate_groups`` decides for each group before replaying them."""
    out = []
    for i, gpus in enumerate(groups):
        point = Setup(topo.subset(gpus), collective, "nccl", nccl_env({}), None)
        out.append((i, point, algorithm, point.plan(algorithm, size, {})))
    return out


def joint(topo, groups, collective, size, algorithm):
    """Reference: every group's explicit schedule on one fluid network; completion ps each."""
    runs = []
    for _, point, chosen, _ in plans(topo, groups, collective, size, algorithm):
        _, schedule, timing = point.prepare(chosen, size, {})
        runs.append(JobRun(schedule, timing))
    times, stats = replay_jobs(runs, topo, capacity=runs[0].timing.capacity)
    joint.filled = stats.saturated_ps > 0  # (the links that filled, for the tests that ask)
    return [end for (_, end), in times]


def rails(topo, per_host=4):
    """GPU i of every host: the data-parallel groups of tensor-parallel hosts."""
    return [topo.gpus[i::per_host] for i in range(per_host)]


@pytest.mark.parametrize("algorithm", ["ring", "tree"])
def test_groups_replayed_together_by_lanes_take_the_times_of_one_fluid_replay(algorithm):
    topo = fabric()
    groups = rails(topo)
    by_lanes = _groups_by_lanes(plans(topo, groups, "allreduce", 2**22, algorithm), topo, 2**22)
    assert by_lanes is not None  # a 400G NIC per GPU, 4 x 400G uplinks: no link shared beyond capacity
    ends, filled = by_lanes
    assert ends == joint(topo, groups, "allreduce", 2**22, algorithm) and np.array_equal(filled, joint.filled)
    result = simulate_groups(topo, groups, "allreduce", 2**22, algorithm=algorithm)
    assert result.times_s == [t / PS_PER_SECOND for t in ends]


def test_groups_of_different_sizes_replay_together_by_lanes():
    topo = fabric()
    groups = [topo.gpus[0:4], topo.gpus[4:6], topo.gpus[8:16]]
    ends, filled = _groups_by_lanes(plans(topo, groups, "all_gather", 2**20, "ring"), topo, 2**20)
    assert ends == joint(topo, groups, "all_gather", 2**20, "ring") and np.array_equal(filled, joint.filled)


def test_lanes_that_would_share_a_link_beyond_capacity_go_to_the_fluid_network():
    topo = fabric(uplink="100 Gb/s")  # four rails' rings cross one thin uplink per leaf
    groups = rails(topo)
    assert _groups_by_lanes(plans(topo, groups, "allreduce", 2**22, "ring"), topo, 2**22) is None
    reference = joint(topo, groups, "allreduce", 2**22, "ring")
    times = simulate_groups(topo, groups, "allreduce", 2**22, algorithm="ring").times_s
    assert times == pytest.approx([t / PS_PER_SECOND for t in reference], rel=1e-9)
    alone = simulate_groups(topo, groups[:1], "allreduce", 2**22, algorithm="ring").time_s
    assert min(times) > 1.5 * alone  # the uplink really is shared


def _apart_counting(monkeypatch, topo, groups, collective, algorithm):
    """``replay_apart`` of the groups' 16 MiB runs: (each group's end, jobs per fluid replay)."""
    runs = [JobRun(*point.prepare(chosen, 2**24, {})[1:])
            for _, point, chosen, _ in plans(topo, groups, collective, 2**24, algorithm)]
    calls = []
    real = replay_module.replay_jobs
    monkeypatch.setattr(replay_module, "replay_jobs", lambda jobs, *a, **k: calls.append(len(jobs)) or real(jobs, *a, **k))
    return replay_apart(runs, topo, capacity=runs[0].timing.capacity), calls


def test_independent_identical_groups_are_replayed_once(monkeypatch):
    """Tensor-parallel groups, one per host: no link in common, alike up to names."""
    topo = fabric()
    groups = [topo.gpus[i:i + 4] for i in range(0, 16, 4)]
    (ends, filled), calls = _apart_counting(monkeypatch, topo, groups, "allreduce", "nvls")
    assert calls == [1]
    assert ends == joint(topo, groups, "allreduce", 2**24, "nvls")
    # the links that filled: every group's, though three took the first's replay
    assert np.array_equal(filled, joint.filled)


def test_groups_linked_by_shared_links_are_replayed_together(monkeypatch):
    """Stage-to-stage sends between racks over thin uplinks: one part, contended."""
    topo = fabric(uplink="100 Gb/s")
    groups = [[topo.gpus[i], topo.gpus[8 + i]] for i in range(8)]  # rack 0 -> rack 1
    (ends, filled), calls = _apart_counting(monkeypatch, topo, groups, "send_recv", "direct")
    assert sorted(calls) == [8]
    assert ends == pytest.approx(joint(topo, groups, "send_recv", 2**24, "direct"), rel=1e-9)
    assert np.array_equal(filled, joint.filled) and filled.any()  # (the uplinks fill)
    # eight 400G sends share one 100G uplink per direction: at least 32x one send at line rate
    assert min(ends) / PS_PER_SECOND > 8 * 2**24 / 12.5e9


def test_groups_of_one_gpu_take_no_time_and_keep_their_place():
    topo = fabric()
    result = simulate_groups(topo, [topo.gpus[0:1], topo.gpus[4:8]], "allreduce", 2**20)
    assert result.times_s[0] == 0.0 and result.times_s[1] > 0


def test_identical_parts_mark_their_own_links_filled(monkeypatch):
    """Pairs across two hosts' NICs, one pair per GPU and rack: eight parts alike, replayed
    once. The links that filled are each pair's own (its NICs' cables), as one joint replay
    finds, though seven took the first's replay."""
    topo = fabric()
    gpus = topo.gpus
    groups = [[gpus[rack * 8 + i], gpus[rack * 8 + 4 + i]] for rack in (0, 1) for i in range(4)]
    (ends, filled), calls = _apart_counting(monkeypatch, topo, groups, "send_recv", "direct")
    assert calls == [1]
    assert ends == joint(topo, groups, "send_recv", 2**24, "direct")
    assert np.array_equal(filled, joint.filled) and filled.sum() == 32  # each pair's 2 NICs, up and down


def test_groups_of_other_shapes_name_what_ran_in_the_slowest():
    """Fuzz round av, L12: groups of other shapes pick otherwise (one host: its own pick; one
    spanning hosts: another), and the exchange named the first group's pick beside the
    slowest group's time. It names what ran where the time is said."""
    from simnet.run.simulate import simulate

    topo = fabric()
    gpus = topo.gpus
    groups = [gpus[0:4], [gpus[4], gpus[5], gpus[8], gpus[9]]]  # one host; two hosts of two racks
    together = simulate_groups(topo, groups, "allreduce", 2**26)
    alone = [simulate(topo, "auto", 2**26, gpus=group) for group in groups]
    slowest = max(alone, key=lambda run: run.time_s)
    assert alone[0].algorithm != alone[1].algorithm  # (else there is one pick to name)
    assert (together.algorithm, together.protocol) == (slowest.algorithm, slowest.protocol)
    assert together.time_s == pytest.approx(slowest.time_s, rel=1e-9)
