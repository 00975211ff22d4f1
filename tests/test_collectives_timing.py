"""Timing: the closed forms each algorithm states (`simnet algorithms`) on contention-free
topologies, and contention effects."""

import math
from pathlib import Path

import numpy as np
import pytest

from simnet import topology_from_dict
from simnet.engine.replay import replay
from simnet.schedule.algorithms.tree import btree_parents, dtree_parents, tree_depth
from simnet.schedule.catalog import build_schedule

B = 10e9  # bytes/s per direction
LINK_LATENCY = 1e-6


def switch(n: int):
    """N GPUs on one switch: path latency L = 2 us, bandwidth B per direction."""
    return topology_from_dict({"name": "switch", "generate": {"kind": "nvswitch", "gpus": n,
                                                              "gpu_bandwidth": "10 GB/s", "latency": "1 us"}})


def mesh(n: int):
    """N GPUs, a dedicated link per pair: L = 1 us, B."""
    return topology_from_dict({"name": "mesh", "generate": {"kind": "full_mesh", "gpus": n,
                                                            "bandwidth": "10 GB/s", "latency": "1 us"}})


def simulate(name, topo, size, **options):
    return replay(build_schedule(name, topo, size, **options), topo).time


RING_N = [2, 3, 5, 8, 12, 16, 31]


@pytest.mark.parametrize("n", RING_N)
@pytest.mark.parametrize("topology", [switch, mesh])
def test_ring_closed_form(n, topology):
    topo = topology(n)
    size = n * 3 * 2**20
    latency = topo.path_latency(topo.gpus[0], topo.gpus[1])
    expected = 2 * (n - 1) * (latency + size / (n * B))
    assert simulate("ring", topo, size) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n, k, piece_bytes", [(4, 2, 2**16), (5, 8, 2**16), (8, 16, 2**16), (8, 4, 2**12),
                                                (3, 3, 30000)])
def test_ring_pipelined_closed_form(n, k, piece_bytes):
    topo = switch(n)
    size = n * k * piece_bytes
    latency, piece = 2 * LINK_LATENCY, piece_bytes / B
    expected = (2 * n - 3) * max(latency + piece, k * piece) + k * piece + latency
    assert simulate("ring", topo, size, chunk_size=size // (n * k)) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n", [1, 2, 4, 7, 16])
@pytest.mark.parametrize("servers", [1, 2])
def test_parameter_server_closed_form(n, servers):
    topo = topology_from_dict({"name": "ps", "generate": {"kind": "ps_star", "workers": n, "servers": servers,
                                                          "worker_bandwidth": "100 Gb/s", "ps_bandwidth": "25 Gb/s",
                                                          "latency": "5 us"}})
    size = 2**24 * servers
    b_ps = 25e9 / 8
    expected = 2 * 10e-6 + 2 * n * size / (servers * b_ps)
    assert simulate("ps", topo, size, ps_servers=servers) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n", [2, 3, 6, 9, 16])
def test_naive_closed_form(n):
    size = 2**22
    assert simulate("naive", switch(n), size) == pytest.approx(2 * LINK_LATENCY + (n - 1) * size / B, rel=1e-6)


@pytest.mark.parametrize("n", [2, 4, 8, 16, 32])
def test_halving_doubling_closed_form(n):
    size = n * 2**18
    lg = int(math.log2(n))
    expected = 2 * lg * 2 * LINK_LATENCY + 2 * (n - 1) / n * size / B
    assert simulate("halving_doubling", switch(n), size) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n", [3, 5, 6, 7, 9, 10, 11, 12, 13, 15, 17, 24])  # fuzz round am: 5, 9, 10, 11 were 40 % over
def test_halving_doubling_folds_by_halves_for_other_n(n):
    # Rabenseifner's fold: halves exchanged (L + S/2B), the reduced lower half sent on
    # (L + S/2B); the power-of-two part on p = 2^floor(lg N); the result copied back (L + S/B)
    size = n * 2**18
    latency, p = 2 * LINK_LATENCY, 1 << (n.bit_length() - 1)
    fold = 2 * latency + size / B
    exchange = 2 * int(math.log2(p)) * latency + 2 * (p - 1) / p * size / B
    expected = fold + exchange + latency + size / B
    assert simulate("halving_doubling", switch(n), size) == pytest.approx(expected, rel=1e-6)
    # each member of a folding pair reduced half the buffer: the pair moved 1.5 S, not S, before the exchange
    schedule = build_schedule("halving_doubling", switch(n), size)
    fold_bytes = schedule.nbytes[(schedule.step == 0) & (schedule.src != schedule.dst)].sum()
    assert fold_bytes == (n - p) * 1.5 * size


@pytest.mark.parametrize("n", [2, 4, 8, 16, 32])
def test_recursive_doubling_closed_form(n):
    size = 2**22
    expected = int(math.log2(n)) * (2 * LINK_LATENCY + size / B)
    assert simulate("recursive_doubling", switch(n), size) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n, k", [(2, 1), (3, 4), (8, 1), (8, 16), (13, 8), (32, 32)])
def test_binary_tree_closed_form(n, k):
    size = k * 2**18
    depth = tree_depth(btree_parents(n))
    assert depth == math.ceil(math.log2(n))
    piece = size / (k * B)
    expected = 2 * depth * (LINK_LATENCY + piece) + (k - 1) * piece
    assert simulate("binary_tree", mesh(n), size, chunk_size=size // k) == pytest.approx(expected, rel=1e-6)


def _tree_links(parents):
    return {frozenset((v, int(p))) for v, p in enumerate(parents) if p >= 0}


def _alone(n, k):
    """(size, time of the slower tree running alone) for k pieces of each half."""
    size = 2 * k * 2**18
    piece = size / (2 * k * B)
    depth = max(tree_depth(p) for p in dtree_parents(n))
    return size, 2 * depth * (LINK_LATENCY + piece) + (k - 1) * piece


@pytest.mark.parametrize("n, k", [(7, 2), (9, 4), (21, 3)])
def test_double_binary_tree_runs_each_tree_as_if_alone(n, k):
    # on a full mesh each tree edge is its own link; for these N the two trees never need
    # one link in the same direction at the same time, so each runs as if alone
    size, alone = _alone(n, k)
    assert simulate("double_binary_tree", mesh(n), size, chunk_size=size // (2 * k)) == pytest.approx(alone, rel=1e-9)


@pytest.mark.parametrize("n, k", [(3, 2), (4, 4), (16, 8)])
def test_double_binary_tree_with_shared_links(n, k):
    # these trees use a link in the same direction at once: slower than alone, never worse
    # than running one tree after the other
    size, alone = _alone(n, k)
    trees = dtree_parents(n)
    assert _tree_links(trees[0]) & _tree_links(trees[1])
    time = simulate("double_binary_tree", mesh(n), size, chunk_size=size // (2 * k))
    assert alone * (1 + 1e-3) < time < 2 * alone


@pytest.mark.parametrize("hosts, per_host", [(2, 4), (3, 8), (4, 2)])
def test_hierarchical_closed_form_with_inner_ring(hosts, per_host):
    topo = topology_from_dict({"name": "h", "generate": {
        "kind": "leaf_spine", "racks": 1, "hosts_per_rack": hosts, "gpus_per_host": per_host,
        "nvlink_bandwidth": "100 GB/s", "nvlink_latency": "0.5 us", "nic_bandwidth": "10 GB/s",
        "pcie_bandwidth": "50 GB/s", "pcie_latency": "0.5 us", "link_latency": "1 us"}})
    size = hosts * per_host * 2**20
    intra = 2 * (per_host - 1) * (1e-6 + size / (per_host * 100e9))
    inter = 2 * (hosts - 1) * (3e-6 + size / (per_host * hosts * 10e9))
    # one piece: the phases run one after the other
    assert simulate("hierarchical", topo, size, inner="ring", chunk_size=size) == pytest.approx(intra + inter, rel=1e-6)


def test_reduce_bandwidth_and_message_overhead_add_where_they_belong():
    topo = switch(4)
    size = 4 * 2**20
    schedule = build_schedule("ring", topo, size)
    base = replay(schedule, topo).time
    # each of the 3 reduce-scatter steps adds S/N / reduce_bandwidth; all-gather copies cost nothing
    slower = replay(schedule, topo, reduce_bandwidth=1e9).time
    assert slower - base == pytest.approx(3 * size / 4 / 1e9, rel=1e-6)
    # every one of the 6 steps waits for one message overhead
    assert replay(schedule, topo, message_overhead=3e-6).time - base == pytest.approx(6 * 3e-6, rel=1e-6)


# -------------------------------------------------------------------- contention

def test_ring_follows_the_oversubscribed_link():
    topo = topology_from_dict({"name": "slow", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 2, "spines": 1,
        "nic_bandwidth": "400 Gb/s", "uplink_bandwidth": "40 Gb/s"}})
    n = len(topo.gpus)
    size = 2**30
    slow = 40e9 / 8
    assert simulate("ring", topo, size) == pytest.approx(2 * (n - 1) / n * size / slow, rel=1e-3)


def test_parameter_server_nic_carries_2ns_while_ring_links_carry_2_n_minus_1_over_n():
    topo = topology_from_dict({"name": "ps", "generate": {"kind": "ps_star", "workers": 8}})
    size = 2**24
    ps_run = replay(build_schedule("ps", topo, size), topo)
    ps_in = ps_run.stats.bytes[topo.link_index[("switch", "ps0")]]
    ps_out = ps_run.stats.bytes[topo.link_index[("ps0", "switch")]]
    assert ps_in + ps_out == 2 * 8 * size
    ring_run = replay(build_schedule("ring", topo, size), topo)
    for worker in topo.gpus:
        for link in ((worker, "switch"), ("switch", worker)):
            assert ring_run.stats.bytes[topo.link_index[link]] == pytest.approx(2 * 7 / 8 * size, rel=1e-6)
    assert ps_run.time > 3 * ring_run.time


@pytest.mark.parametrize("hosts, gain", [(2, 0.6), (4, 0.85)])
def test_hierarchical_beats_flat_ring_when_hosts_share_one_nic(hosts, gain):
    # the host NIC carries 2(G-1)/G * S for hierarchical against 2(N-1)/N * S for the flat ring
    topo = topology_from_dict({"name": "one-nic", "generate": {
        "kind": "leaf_spine", "racks": 1, "hosts_per_rack": hosts, "gpus_per_host": 8, "nic_per": "host",
        "nic_bandwidth": "100 Gb/s"}})
    size = 2**28
    flat = simulate("ring", topo, size)
    for inner in ("tree", "ring", "binary_tree"):
        assert simulate("hierarchical", topo, size, inner=inner) < gain * flat


def test_replay_is_deterministic():
    topo = topology_from_dict({"name": "ls", "generate": {"kind": "leaf_spine", "racks": 2, "spines": 3}})
    schedule = build_schedule("double_binary_tree", topo, 2**24, chunk_size=2**20)
    first, second = replay(schedule, topo), replay(schedule, topo)
    assert np.array_equal(first.delivered, second.delivered)
    assert np.array_equal(first.stats.bytes, second.stats.bytes)


def test_reduction_cost_lands_on_every_reducing_round_of_recursive_doubling():
    # lg N rounds, each a full-buffer REDUCE: lg(N) * (L + S/B + S/R) with reductions at R B/s
    n, size, reduce_bandwidth = 8, 2**22, 5e9
    expected = 3 * (2 * LINK_LATENCY + size / B + size / reduce_bandwidth)
    schedule = build_schedule("recursive_doubling", switch(n), size)
    assert replay(schedule, switch(n), reduce_bandwidth=reduce_bandwidth).time == pytest.approx(expected, rel=1e-6)


def test_reduction_cost_on_a_tree_is_paid_per_level_on_the_critical_path():
    # a piece is reduced at each of the D levels it climbs (c/R each); the broadcast copies
    # cost nothing; reductions of different pieces overlap (each transfer's reduction runs at
    # R on its own), so the pieces still follow one link time c/B apart:
    # 2D(L + c/B) + D*c/R + (k-1)*c/B on a full mesh
    n, k, reduce_bandwidth = 8, 4, 2.5e9
    size = k * 2**18
    piece = size / k
    depth = tree_depth(btree_parents(n))
    expected = 2 * depth * (LINK_LATENCY + piece / B) + depth * piece / reduce_bandwidth + (k - 1) * piece / B
    schedule = build_schedule("binary_tree", mesh(n), size, chunk_size=size // k)
    assert replay(schedule, mesh(n), reduce_bandwidth=reduce_bandwidth).time == pytest.approx(expected, rel=1e-6)


def test_cross_rack_all_to_all_congests_the_uplink_and_says_so():
    from simnet.run.simulate import simulate as run

    # 2 racks x 2 single-GPU hosts, one 10 Gb/s uplink per ToR: each rank sends S to the two
    # ranks of the other rack, so 4 flows of S share each uplink direction: 4 S / B_up
    topo = topology_from_dict({"name": "thin", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 1, "spines": 1,
        "nic_bandwidth": "100 Gb/s", "uplink_bandwidth": "10 Gb/s", "link_latency": "1 us"}})
    size = 2**24
    result = run(topo, "naive", size, model="ideal")
    path_latency = topo.path_latency(topo.gpus[0], topo.gpus[2])
    assert result.time_s == pytest.approx(path_latency + 4 * size / (10e9 / 8), rel=1e-6)
    congested = {w.link: w for w in result.warnings if w.kind == "link_congestion"}
    assert {"tor0->spine0", "spine0->tor0", "tor1->spine0", "spine0->tor1"} <= set(congested)
    assert "4 flows shared 1.25 GB/s" in congested["tor0->spine0"].message
    assert "Remedy" in congested["tor0->spine0"].message
    assert result.bottleneck.name in congested


@pytest.mark.parametrize("per_host", [1, 2])
def test_a_remedy_names_only_what_can_run_here(per_host):
    """Fuzz round at, L1: link_congestion said "compare pat" on hosts of 8 GPUs, where the same
    run skipped pat (one GPU per node), and hierarchical's "a coarser group_by (rack, region)"
    on a fabric without regions, where group_by: region is refused."""
    from simnet.run.simulate import simulate as run

    topo = topology_from_dict({"name": "thin", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": per_host, "spines": 1,
        "nic_bandwidth": "100 Gb/s", "uplink_bandwidth": "10 Gb/s"}})

    def remedies(algorithm, collective):
        result = run(topo, algorithm, 2**24, model="ideal", collective=collective)
        said = [w.message.split("Remedy: ")[1] for w in result.warnings if w.kind == "link_congestion"]
        assert said
        return said

    assert all(("pat" in r) == (per_host == 1) for r in remedies("direct", "reduce_scatter"))
    # review 83: with one GPU a node, hierarchical's groups are single GPUs: it sends what a flat ring does
    assert all(("hierarchical" in r) == (per_host > 1) for r in remedies("direct", "allreduce"))
    assert all("group_by (rack)" in r and "region" not in r for r in remedies("hierarchical", "allreduce"))
    racked = run(topo, "hierarchical", 2**24, model="ideal", group_by="rack")  # nothing coarser is labelled
    assert all("group_by" not in w.message for w in racked.warnings)


def test_hierarchical_refuses_a_level_no_gpu_is_labelled_with():
    # two_racks labels hosts and racks, not regions: grouping by region would make every GPU a
    # group of its own and run the flat inner algorithm under hierarchical's name
    from simnet import load_topology, simulate
    from simnet.errors import Unsupported

    topo = load_topology(Path(__file__).resolve().parent.parent / "topologies/two_racks.yaml")
    with pytest.raises(Unsupported, match="no GPU of two-racks has a region label"):
        simulate(topo, "hierarchical", 2**20, gpus=16, group_by="region", inner="tree")
