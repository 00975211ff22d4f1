"""What practitioners say about AllReduce, checked on simulated output.

Each test states a claim from the literature or NCCL's documentation and asserts it holds
in simnet's model, with the numbers that make it true.
"""

import pytest

from simnet import load_topology, topology_from_dict
from simnet.runner import simulate


def _star(workers: int):
    return topology_from_dict({"name": f"star-{workers}", "generate": {
        "kind": "ps_star", "workers": workers, "worker_bandwidth": "25 Gb/s", "ps_bandwidth": "25 Gb/s"}})


def test_parameter_server_nic_is_the_bottleneck_and_grows_linearly_while_ring_stays_flat():
    size = 64 * 2**20
    ps = {n: simulate(_star(n), "ps", size) for n in (4, 8, 16)}
    ring = {n: simulate(_star(n), "ring", size) for n in (4, 8, 16)}
    for n, result in ps.items():
        assert result.bottleneck.src == "ps0" or result.bottleneck.dst == "ps0"
        overload = [w for w in result.warnings if w.kind == "nic_overload" and "ps0" in w.link]
        # incast is N flows into one port: warned from OVERLOAD_FLOWS (8) flows on, not below
        assert bool(overload) == (n >= 8)
    assert ps[8].time_s / ps[4].time_s == pytest.approx(2.0, rel=0.01)
    assert ps[16].time_s / ps[8].time_s == pytest.approx(2.0, rel=0.01)
    # ring: 2(N-1)/N * S per port, 1.5 S at N=4 and 1.875 S at N=16
    assert ring[16].time_s / ring[4].time_s == pytest.approx(1.875 / 1.5, rel=0.01)
    assert ps[16].time_s > 8 * ring[16].time_s


def test_ring_moves_2_n_minus_1_over_n_of_the_data_per_rank():
    topo = load_topology("topologies/two_racks.yaml")
    size = 2**28
    result = simulate(topo, "ring", size)
    n = len(topo.gpus)
    for gpu in topo.gpus:
        out = [link for link in result.links if link.src == gpu]
        assert sum(link.bytes for link in out) == pytest.approx(2 * (n - 1) / n * size, rel=1e-6)


def _cluster(gpus: int, gpus_per_host: int = 8, **extra):
    hosts = gpus // gpus_per_host
    racks = max(1, hosts // 8)
    return topology_from_dict({"name": f"c{gpus}", "generate": {
        "kind": "leaf_spine", "racks": racks, "hosts_per_rack": hosts // racks, "gpus_per_host": gpus_per_host,
        **extra}})


def test_tree_latency_grows_with_log_n_ring_with_n_so_tree_wins_small_messages_at_256_gpus():
    size = 64 * 2**10
    ring = {n: simulate(_cluster(n), "ring", size).time_s for n in (64, 256)}
    tree = {n: simulate(_cluster(n), "tree", size).time_s for n in (64, 256)}
    # 4x the GPUs: ring's 2(N-1) steps grow ~4x; tree's levels grow 8/6 (its hops also get
    # longer, 256 GPUs span 4 racks where 64 fit in one)
    assert ring[256] / ring[64] > 3.0
    assert tree[256] / tree[64] < 2.0
    assert tree[256] < ring[256] / 3


def test_across_racks_with_many_hops_and_high_latency_tree_beats_ring():
    topo = _cluster(64, gpus_per_host=1, link_latency="10 us")  # every neighbour is across the fabric
    size = 4 * 2**20
    ring, tree = simulate(topo, "ring", size), simulate(topo, "tree", size)
    assert tree.time_s < ring.time_s * 0.7


def test_hierarchical_beats_ring_and_tree_on_multi_host_clusters_for_large_messages():
    topo = load_topology("topologies/two_racks.yaml")
    size = 2**28
    times = {a: simulate(topo, a, size, chunk_size=4 * 2**20).time_s for a in ("ring", "tree", "hierarchical")}
    assert times["hierarchical"] < 0.5 * min(times["ring"], times["tree"])


def test_with_a_slow_network_adding_gpus_makes_training_slower():
    # 1 GbE office: one 8-GPU box (NVLink inside) against two boxes joined by 1 Gb/s
    def boxes(count):
        return topology_from_dict({"name": f"{count}x8", "generate": {
            "kind": "leaf_spine", "racks": 1, "hosts_per_rack": count, "gpus_per_host": 8,
            "nic_per": "host", "nic_bandwidth": "1 Gb/s"}})

    gradient, compute = 400 * 2**20, 0.3  # a 100M-parameter fp32 model, 300 ms of compute per step
    throughput = {}
    for count in (1, 2):
        step = compute + simulate(boxes(count), "ring", gradient).time_s
        throughput[8 * count] = 8 * count / step  # samples per second, one sample per GPU per step
    assert throughput[16] < throughput[8]
