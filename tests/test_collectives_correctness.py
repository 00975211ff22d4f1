"""Every schedule computes an AllReduce: replayed on real numbers, every rank ends with the sum."""

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from simnet import topology_from_dict
from simnet.engine.replay import replay
from simnet.schedule.algorithms.hierarchical import INNER_ALGORITHMS
from simnet.schedule.algorithms.ring import PiecedRings
from simnet.schedule.algorithms.tree import btree_parents, dtree_parents, tree_depth
from simnet.schedule.catalog import ALGORITHMS, algorithms_for, build_schedule
from simnet.schedule.kinds import COLLECTIVES
from simnet.schedule.transfers import COPY, REDUCE, ScheduleBuilder
from simnet.schedule.verify import AllReduceMismatch, check_allreduce, check_collective

# 4 racks x 4 hosts x 8 GPUs = 128 ranks; hosts, racks, NVLS and SHARP switches, and a ps node
CLUSTER = topology_from_dict({
    "name": "cluster",
    "generate": {"kind": "leaf_spine", "racks": 4, "hosts_per_rack": 4, "gpus_per_host": 8, "sharp": True},
    "nodes": [{"id": "ps0", "kind": "ps"}, {"id": "ps1", "kind": "ps"}],
    "links": [{"a": "ps0", "b": "spine0", "bandwidth": "100 Gb/s", "latency": "1 us"},
              {"a": "ps1", "b": "spine1", "bandwidth": "100 Gb/s", "latency": "1 us"}],
})
# uneven groups: hosts of 3, 1, 4 and 2 GPUs
UNEVEN = topology_from_dict({
    "name": "uneven",
    "nodes": [{"id": f"h{h}g{g}", "kind": "gpu", "host": f"h{h}", "rack": f"r{h % 2}"}
              for h, size in enumerate((3, 1, 4, 2)) for g in range(size)] + [{"id": "sw", "kind": "switch"}],
    "links": [{"a": f"h{h}g{g}", "b": "sw", "bandwidth": "10 GB/s", "latency": "1 us"}
              for h, size in enumerate((3, 1, 4, 2)) for g in range(size)],
})
SIZES = list(range(1, 34)) + [64, 100]
ACROSS_HOSTS = {"nvls_tree", "collnet_direct", "collnet_chain"}  # NCCL runs these across nodes only
NVLS = {"nvls", "nvls_tree"}  # NCCL sets NVLS up on no node holding one GPU of the run (ncclNvlsInit)


def _refused(name, ranks) -> str | None:
    """What NCCL's own limits refuse ``name`` on ``ranks`` for (words of the refusal), or None."""
    hosts = CLUSTER.groups("host", ranks)
    if name in NVLS and len(ranks) > 1 and min(len(gpus) for gpus in hosts.values()) < 2:
        return "where a node holds one GPU"
    return "runs across hosts" if name in ACROSS_HOSTS and len(hosts) < 2 else None


def _assert_refused(name, ranks, size, **options):
    with pytest.raises(ValueError, match=_refused(name, ranks)):
        build_schedule(name, CLUSTER, size, ranks=ranks, **options)


TIMED = {1, 2, 3, 5, 8, 9, 16, 17, 33}  # one to five hosts, whole and partial
RUNS = [(name, n) for name in sorted(ALGORITHMS) for n in SIZES]  # the first n GPUs of CLUSTER


@pytest.mark.parametrize("name, n", [run for run in RUNS if not _refused(run[0], CLUSTER.gpus[:run[1]])])
def test_every_algorithm_is_an_allreduce(name, n):
    schedule = build_schedule(name, CLUSTER, 4096 + n, ranks=CLUSTER.gpus[:n], chunk_size=512, channels=3)
    # dependency orders always; the real timed order of a replay too for a spread of sizes
    check_allreduce(schedule, timed=replay(schedule, CLUSTER) if n in TIMED else None)


@pytest.mark.parametrize("name, n", [run for run in RUNS if _refused(run[0], CLUSTER.gpus[:run[1]])])
def test_an_algorithm_nccl_cannot_run_on_these_ranks_is_refused(name, n):
    _assert_refused(name, CLUSTER.gpus[:n], 4096 + n, chunk_size=512, channels=3)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(ALGORITHMS)), n=st.integers(1, 40), size=st.integers(0, 5000),
       chunk=st.sampled_from([None, 1, 7, 64, 1000]), channels=st.integers(1, 4),
       inner=st.sampled_from(sorted(INNER_ALGORITHMS)), group_by=st.sampled_from(["host", "rack"]),  # CLUSTER's labels
       servers=st.integers(1, 3), ps_nodes=st.booleans(), start=st.integers(0, 60))
def test_every_option_combination_is_an_allreduce(name, n, size, chunk, channels, inner, group_by, servers,
                                                  ps_nodes, start):
    ranks = CLUSTER.gpus[start: start + n]  # groups of unequal size when start is not host-aligned
    if chunk is not None:
        # at most 64 pieces of ``chunk`` per channel, more than a ring of 32 ranks has steps: more
        # pieces are cut and sent alike and only cost time (1-byte pieces of 5,000 bytes, or 7-byte
        # ones on 36 ranks of a hierarchical, built ~400,000 transfers: 10-20 s to build and run)
        size %= 64 * chunk * channels + 1
        note(f"size {size} (at most 64 pieces of {chunk} bytes per channel)")
    options = {"chunk_size": chunk, "channels": channels, "inner": inner, "group_by": group_by,
               "ps_servers": min(servers, 2 if ps_nodes else n)}
    if name == "ps" and not ps_nodes:
        options["ps_server"] = ranks[: options["ps_servers"]]
    if _refused(name, ranks):  # checked, not skipped: a skip here would skip the whole property
        _assert_refused(name, ranks, size, **options)
        return
    check_allreduce(build_schedule(name, CLUSTER, size, ranks=ranks, **options))


@pytest.mark.parametrize("inner", sorted(INNER_ALGORITHMS))
@pytest.mark.parametrize("group_by", ["host", "rack"])
def test_hierarchical_with_unequal_groups(inner, group_by):
    schedule = build_schedule("hierarchical", UNEVEN, 1000, inner=inner, group_by=group_by, chunk_size=64)
    check_allreduce(schedule)
    assert schedule.info["groups"] == (4 if group_by == "host" else 2)


def test_pieced_rings_refuse_a_ready_for_a_round_no_piece_starts_in():
    """Review 80, L3: a ``ready`` for a round where no piece starts was dropped in silence, so
    nothing waited for it."""
    b = ScheduleBuilder("t", ["a", "b", "c"], 30)
    bounds = np.array([[0, 5, 10, 15], [15, 20, 25, 30]])
    rings = PiecedRings(b, np.arange(3), bounds, REDUCE, 0, stagger=2)
    rings.emit(0, ready=np.full(3, -1))  # piece 0 starts in round 0
    with pytest.raises(ValueError, match="round 1 starts no piece"):
        rings.emit(1, ready=np.full(3, -1))


def test_parameter_server_defaults_to_the_ps_node_then_rank_0():
    assert build_schedule("ps", CLUSTER, 10).info["servers"] == ["ps0"]
    assert build_schedule("ps", CLUSTER, 10, ps_servers=2).info["servers"] == ["ps0", "ps1"]
    assert build_schedule("ps", UNEVEN, 10).info["servers"] == ["h0g0"]
    with pytest.raises(ValueError, match="only 2 parameter servers"):
        build_schedule("ps", CLUSTER, 10, ps_servers=3)


def test_the_check_catches_a_missing_dependency():
    schedule = build_schedule("ring", CLUSTER, 800, ranks=CLUSTER.gpus[:4])
    schedule.dep_ptr = np.zeros_like(schedule.dep_ptr)  # forget every dependency
    schedule.dep_idx = schedule.dep_idx[:0]
    with pytest.raises(AllReduceMismatch, match="wrong allreduce data"):
        check_allreduce(schedule)


def _pair():
    return topology_from_dict({"name": "pair", "generate": {"kind": "full_mesh", "gpus": 2,
                                                            "bandwidth": "1 GB/s", "latency": "1 us"}})


def _overwrite_behind_after_sent():
    """An overwrite W (b -> a, 10 bytes) lands long before R reads a, because R queues behind
    a slow transfer X on a's connection (after_sent): right in dependency order, wrong in time."""
    b = ScheduleBuilder("hazard", ["gpu0", "gpu1"], 100_000)
    x = b.add(0, 1, 10, 100_000, REDUCE)  # slow: ~100 us on 1 GB/s
    w = b.add(1, 0, 0, 10, COPY)  # W: a[0:10] := b's, fast (~1 us)
    r = b.add(0, 1, 0, 10, REDUCE, after_sent=x)  # R: b[0:10] += a[0:10], meant to read a's own data
    b.add(1, 0, 10, 100_000, COPY, deps=[x])
    b.add(1, 0, 0, 10, COPY, deps=[r, w])
    return b.build()


def test_the_timed_check_catches_an_overwrite_that_lands_before_a_queued_read():
    schedule = _overwrite_behind_after_sent()
    check_allreduce(schedule)  # dependency order alone reads before the overwrite lands: looks right
    timed = replay(schedule, _pair())
    assert timed.delivered_ps[1] < timed.start_ps[2]  # W is in a's buffer before R reads it
    with pytest.raises(AllReduceMismatch, match="order: timed"):
        check_allreduce(schedule, timed=timed)


def test_every_order_catches_a_read_that_waits_for_the_send_not_the_delivery():
    from simnet.schedule.verify import run_in_time_order

    b = ScheduleBuilder("early", ["gpu0", "gpu1"], 10)
    x = b.add(1, 0, 0, 10, REDUCE)  # a += b
    b.add(0, 1, 0, 10, COPY, after_sent=x)  # b := a, read when x's last byte leaves, before x lands
    schedule = b.build()
    with pytest.raises(AllReduceMismatch):
        check_allreduce(schedule)
    timed = replay(schedule, _pair())
    inputs = np.array([[3], [4]])
    assert run_in_time_order(schedule, timed.start_ps, timed.delivered_ps, inputs)[1, 0] == 3  # not 7


def test_the_check_catches_a_missing_piece():
    b = ScheduleBuilder("broken", ["a", "b"], 100)
    b.add(0, 1, 0, 50, 1)
    b.add(1, 0, 0, 50, 1)
    with pytest.raises(AllReduceMismatch, match=r"bytes \[50, 100\)"):
        check_allreduce(b.build())


def test_the_check_catches_a_broadcast_that_waits_for_only_one_of_two_reductions():
    b = ScheduleBuilder("hub", ["a", "b", "c"], 10)
    from_a = b.add(0, 1, 0, 10, 1)
    b.add(2, 1, 0, 10, 1)
    b.add(1, [0, 2], 0, 10, 0, deps=[from_a])  # should also wait for c's contribution
    with pytest.raises(AllReduceMismatch):
        check_allreduce(b.build())


@pytest.mark.parametrize("n", range(1, 70))
def test_nccl_trees_are_trees_and_complementary(n):
    first, second = dtree_parents(n)
    assert (first == btree_parents(n)).all()
    for parents in (first, second):
        assert (parents < 0).sum() == 1
        assert tree_depth(parents) <= max(1, int(np.ceil(np.log2(n)))) if n > 1 else True
        assert all(np.sum(parents == v) <= 2 for v in range(n))
    if n % 2 == 0 and n > 2:
        interior = [set(np.unique(p[p >= 0]).tolist()) for p in (first, second)]
        assert not (interior[0] & interior[1])  # no rank is interior in both trees


# two hosts of 8 GPUs, each GPU's two 200 Gb/s EFA NICs grouped by the plugin into one device
EFA = topology_from_dict({"name": "efa", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                       "gpus_per_host": 8, "gpu": "h100", "transport": "efa",
                                                       "nics_per_host": 16, "nic_bandwidth": "200 Gb/s"}})


EFA_ALONE = topology_from_dict({"name": "efa1", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 4,
                                                              "gpus_per_host": 1, "gpu": "h100", "transport": "efa",
                                                              "nics_per_host": 2, "nic_bandwidth": "200 Gb/s"}})


@pytest.mark.parametrize("collective, name", [(c, a) for c in COLLECTIVES for a in algorithms_for(c)])
def test_every_schedule_striped_over_efa_nics_computes_its_collective(collective, name):
    """Sends across hosts cut into one stripe per NIC of the sender's EFA device (as the
    plugin stripes them) still compute the collective, in dependency order and in the
    replay's real order; and an algorithm that does not lay its sends over NICs itself is
    striped: every GPU sending across hosts sends through both NICs of its device."""
    efa = EFA_ALONE if name == "pat" else EFA  # (PAT at one GPU per node, where NCCL runs it)
    try:
        schedule = build_schedule(name, efa, 4096 + 17, collective=collective, chunk_size=512, channels=3)
    except ValueError as exc:  # nvls on two hosts, ...: refused as NCCL refuses it
        pytest.skip(str(exc))
    check_collective(schedule, collective, timed=replay(schedule, efa))
    if not algorithms_for(collective)[name].stripes:
        nodes = np.array(schedule.nodes)
        host = np.array([efa.label(n, "node") for n in schedule.nodes])
        across = host[schedule.src] != host[schedule.dst]
        assert across.any()
        used: dict[str, set[str]] = {}
        for a, b, c in zip(nodes[schedule.src[across]], nodes[schedule.dst[across]], schedule.channel[across]):
            used.setdefault(str(a), set()).update(v for _, v in efa.route(str(a), str(b), int(c))
                                                  if efa.kind(v) == "nic" and efa.label(v, "node") == host[
                                                      schedule.nodes.index(str(a))])
        assert all(len(nics) == 2 for nics in used.values()), used
