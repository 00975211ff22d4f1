"""Loading topologies: the graph contract (docs/architecture.md), generators, routing."""

from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simnet import load_topology, topology_from_dict
from simnet.topology.generators import GENERATORS

TOPOLOGIES = sorted((Path(__file__).parent.parent / "topologies").glob("*.yaml"))


def _two_gpu(**link):
    return {"name": "t", "nodes": [{"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"},
                                   {"id": "sw", "kind": "switch"}],
            "links": [{"a": "g0", "b": "sw", "bandwidth": "400 Gb/s", "latency": "1 us", **link},
                      {"a": "g1", "b": "sw", "bandwidth": "100 Gb/s", "latency": "2 us"}]}


def test_full_duplex_link_is_two_directed_edges_in_si_units():
    topo = topology_from_dict(_two_gpu())
    assert isinstance(topo.graph, nx.DiGraph)
    assert topo.graph.edges["g0", "sw"]["bandwidth"] == 50e9
    assert topo.graph.edges["sw", "g0"]["bandwidth"] == 50e9
    assert topo.graph.edges["g0", "sw"]["latency"] == pytest.approx(1e-6)
    assert topo.path_latency("g0", "g1") == pytest.approx(3e-6)
    assert topo.path_bandwidth("g0", "g1") == 12.5e9


def test_directed_link_is_one_edge():
    data = _two_gpu(directed=True)
    data["links"].append({"a": "sw", "b": "g0", "bandwidth": "1 GB/s", "latency": "5 us", "directed": True})
    topo = topology_from_dict(data)
    assert topo.graph.edges["g0", "sw"]["bandwidth"] == 50e9
    assert topo.graph.edges["sw", "g0"]["bandwidth"] == 1e9


def test_rank_order_is_file_order_unless_explicit():
    data = {"name": "r", "nodes": [{"id": "a", "kind": "gpu"}, {"id": "b", "kind": "gpu", "rank": 0},
                                   {"id": "c", "kind": "gpu"}, {"id": "sw", "kind": "switch"}],
            "links": [{"a": n, "b": "sw", "bandwidth": "1 GB/s", "latency": "1 us"} for n in "abc"]}
    assert topology_from_dict(data).gpus == ["b", "a", "c"]


def test_generated_and_explicit_parts_combine():
    data = {"name": "mix", "generate": {"kind": "nvswitch", "gpus": 2, "prefix": "n0-", "host": "n0"},
            "nodes": [{"id": "extra", "kind": "gpu", "host": "n1"}],
            "links": [{"a": "extra", "b": "n0-nvswitch", "bandwidth": "25 GB/s", "latency": "3 us"}]}
    topo = topology_from_dict(data)
    assert topo.gpus == ["n0-gpu0", "n0-gpu1", "extra"]
    assert topo.groups("host") == {"n0": ["n0-gpu0", "n0-gpu1"], "n1": ["extra"]}


def test_generators_can_be_listed():
    data = {"name": "two", "generate": [{"kind": "nvswitch", "gpus": 2, "prefix": "a-"},
                                        {"kind": "nvswitch", "gpus": 2, "prefix": "b-"}],
            "links": [{"a": "a-nvswitch", "b": "b-nvswitch", "bandwidth": "1 GB/s", "latency": "1 us"}]}
    assert len(topology_from_dict(data).gpus) == 4


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.name)
def test_every_library_topology_loads_and_routes(path):
    """Loads with no key it says changed nothing (a shipped file writes none: the GB300 racks'
    routing under one spine did), and routes GPU to GPU through forwarding nodes only."""
    topo = load_topology(path)
    assert topo.unread == ()
    for a in topo.gpus[:: max(1, len(topo.gpus) // 64)]:  # every GPU of the small ones, 64 of the large
        for b in topo.gpus[:4]:
            if a != b:
                route = topo.route(a, b)
                assert route[0][0] == a and route[-1][1] == b
                assert all(topo.kind(u) != "gpu" for u, _ in route[1:])  # GPUs never forward


SMALL = [p for p in TOPOLOGIES if "16su" not in p.name and "64su" not in p.name]


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.name)
def test_routes_through_the_core_are_those_a_full_search_finds(path):
    """A GPU behind one switch of the fabric's core is routed from that switch's search
    (shared by every GPU behind it) and two small searches at the ends: every pair's
    equal-cost route graph is the one a full Dijkstra from the source finds."""
    from simnet.topology.routing import _ancestors

    topo = load_topology(path)
    ends = topo.gpus + topo.parameter_servers
    shortcut = 0
    for src in ends[:: max(1, len(ends) // 24)]:
        _, full = topo.shortest_paths(src)
        for dst in ends[:: max(1, len(ends) // 48)]:
            if dst != src:
                shortcut += topo.router._dag_through_core(src, dst) is not None
                assert _ancestors(topo.router._shortest_dag(src, dst), dst) == _ancestors(full, dst), (src, dst)
    if path.stem in ("superpod_h100_1su", "two_racks", "gb200_nvl72_1su", "cross_region"):
        assert shortcut > 0  # the shortcut was taken, not only the full search


def test_leaf_spine_counts_labels_and_oversubscription():
    topo = topology_from_dict({"name": "ls", "generate": {
        "kind": "leaf_spine", "racks": 3, "hosts_per_rack": 2, "gpus_per_host": 4, "spines": 2,
        "nic_bandwidth": "400 Gb/s", "oversubscription": 2}})
    assert len(topo.gpus) == 24
    assert len(topo.groups("host")) == 6 and len(topo.groups("rack")) == 3
    # 2 hosts x 4 NICs x 50 GB/s down, 2:1 -> 200 GB/s up over 2 spines = 100 GB/s per uplink
    assert topo.graph.edges["tor0", "spine1"]["bandwidth"] == pytest.approx(100e9)
    cross_rack = topo.route("r0h0-gpu0", "r2h1-gpu3")
    assert [u for u, _ in cross_rack] == ["r0h0-gpu0", "r0h0-nic0", "tor0", cross_rack[3][0], "tor2", "r2h1-nic3"]
    assert topo.route("r0h0-gpu0", "r0h0-gpu3") == [("r0h0-gpu0", "r0h0-nvswitch"), ("r0h0-nvswitch", "r0h0-gpu3")]


def test_nic_per_host_shares_one_nic():
    topo = topology_from_dict({"name": "h", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                         "gpus_per_host": 2, "nic_per": "host"}})
    assert topo.route("r0h0-gpu1", "r0h1-gpu0")[1] == ("r0h0-nic", "tor0")


def test_ecmp_spreads_flows_over_spines_deterministically():
    spec = {"name": "e", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 8,
                                      "spines": 4}}
    topo = topology_from_dict(spec)
    spines = {topo.route("r0h0-gpu0", "r1h0-gpu0", flow)[2][1] for flow in range(64)}
    assert spines == {"spine0", "spine1", "spine2", "spine3"}
    again = topology_from_dict(spec)
    for flow in range(16):
        assert topo.route("r0h0-gpu1", "r1h0-gpu5", flow) == again.route("r0h0-gpu1", "r1h0-gpu5", flow)


def test_routing_prefers_low_latency_then_fewer_hops():
    link = lambda a, b, lat: {"a": a, "b": b, "bandwidth": "1 GB/s", "latency": lat}  # noqa: E731
    data = {"name": "p", "nodes": [{"id": "a", "kind": "gpu"}, {"id": "b", "kind": "gpu"},
                                   {"id": "s1", "kind": "switch"}, {"id": "s2", "kind": "switch"},
                                   {"id": "s3", "kind": "switch"}],
            # a-s1-b: 10 us over 2 hops; a-s2-s3-b: 3 us over 3 hops
            "links": [link("a", "s1", "5 us"), link("s1", "b", "5 us"),
                      link("a", "s2", "1 us"), link("s2", "s3", "1 us"), link("s3", "b", "1 us")]}
    assert [v for _, v in topology_from_dict(data).route("a", "b")] == ["s2", "s3", "b"]
    data["links"][2]["latency"] = "8 us"  # now 10 us both ways: the 2-hop path wins the tie
    assert [v for _, v in topology_from_dict(data).route("a", "b")] == ["s1", "b"]


@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_each_generator_builds_with_defaults(kind):
    topo = topology_from_dict({"name": kind, "generate": {"kind": kind}})
    assert topo.gpus
    assert all(d["bandwidth"] > 0 for _, _, d in topo.graph.edges(data=True))


def test_cross_region_wan_link_dominates_latency():
    topo = load_topology(Path(__file__).parent.parent / "topologies" / "cross_region.yaml")
    a, b = topo.groups("region")["region0"][0], topo.groups("region")["region1"][0]
    assert topo.path_latency(a, b) > 35e-3
    assert ("region0-gw", "region1-gw") in topo.route(a, b)


def test_ps_star_has_parameter_server():
    topo = load_topology(Path(__file__).parent.parent / "topologies" / "ps_star.yaml")
    assert topo.parameter_servers == ["ps0"]
    assert len(topo.gpus) == 16


def test_subset_keeps_routes_and_selects_ranks():
    topo = load_topology(Path(__file__).parent.parent / "topologies" / "two_racks.yaml")
    sub = topo.subset(16)
    assert sub.gpus == topo.gpus[:16] and sub.graph is topo.graph
    with pytest.raises(ValueError, match="out of range"):
        topo.subset(65)


def test_a_gpu_of_no_named_generation_is_said_under_nccl():
    """Two GPUs written without gpu: run as NCCL's model takes them (compute capability
    8.0, NVLink at 20 of 25 GB/s) and the run says so; named, or under ideal, nothing is said."""
    from simnet import simulate

    def pair(**gpu):
        return topology_from_dict({"name": "pair", "nodes": [{"id": f"g{i}", "kind": "gpu", "host": "h", **gpu}
                                                              for i in range(2)],
                                   "links": [{"a": "g0", "b": "g1", "bandwidth": "25 GB/s", "latency": "1 us"}]})

    warned = [w for w in simulate(pair(), "ring", 2**20).warnings if w.kind == "gpu_unnamed"]
    assert len(warned) == 1 and "2 of 2 GPUs" in warned[0].message and "8.0" in warned[0].message
    assert not [w for w in simulate(pair(gpu="a100"), "ring", 2**20).warnings if w.kind == "gpu_unnamed"]
    assert not [w for w in simulate(pair(), "ring", 2**20, model="ideal").warnings if w.kind == "gpu_unnamed"]


def test_a_topology_prints_in_hypothesis_and_ipython():
    """hypothesis shows a failing case by printing its values, and its dataclass printer read
    the ``make_router`` InitVar, which is no attribute: a case holding a Topology failed as
    AttributeError and hid the case. A topology prints as its name and size."""
    from hypothesis.vendor.pretty import pretty

    topo = topology_from_dict({"name": "pair", "generate": {"kind": "full_mesh", "gpus": 2}})
    assert pretty({"case": topo}) == "{'case': <Topology 'pair': 2 GPUs, 2 nodes, 2 directed links>}"


def _paths_from(topo, src: str) -> nx.DiGraph:
    """The links a route from ``src`` may take (out of ``src``, then through switches and NICs
    only), weighted by (latency, hops): built once per source, not once per pair."""
    from simnet.topology.routing import HOP_BITS

    graph = nx.DiGraph()
    for (u, v), i in topo.link_index.items():
        if (u == src or u in topo.forwarding) and topo.graph.has_edge(u, v):
            graph.add_edge(u, v, cost=(int(topo.latency_ps[i]) << HOP_BITS) + 1)
    return graph


def _equal_cost_links(graph: nx.DiGraph, src: str, dst: str) -> set[tuple[str, str]]:
    """The links on every shortest (latency, hops) path from ``src`` to ``dst`` in ``graph``
    (``_paths_from(topo, src)``), by networkx's own search (the reference)."""
    return {edge for path in nx.all_shortest_paths(graph, src, dst, weight="cost") for edge in zip(path, path[1:])}


@settings(max_examples=25, deadline=None)
@given(generate=st.one_of(
    st.builds(lambda gpus: {"kind": "nvswitch", "gpus": gpus}, st.integers(2, 40)),
    st.builds(lambda gpus: {"kind": "ps_star", "workers": gpus}, st.integers(2, 24)),
    st.builds(lambda gpus: {"kind": "full_mesh", "gpus": gpus, "gpu": "mi300x"}, st.integers(2, 8)),
    st.builds(lambda gpus, per: {"kind": "pcie", "gpus": gpus, "gpus_per_switch": per},
              st.sampled_from([2, 4, 8]), st.sampled_from([1, 2, 4])),
    st.builds(lambda racks, hosts, spines: {"kind": "leaf_spine", "racks": racks, "hosts_per_rack": hosts,
                                            "gpus_per_host": 2, "spines": spines},
              st.integers(1, 3), st.integers(1, 2), st.integers(1, 3)),
    st.builds(lambda racks, spines: {"kind": "leaf_spine", "racks": racks, "hosts_per_rack": 1, "gpus_per_host": 1,
                                     "spines": spines}, st.integers(2, 12), st.integers(1, 2)),  # a leaf per GPU
    st.builds(lambda units, nodes: {"kind": "rail_optimized", "units": units, "nodes_per_unit": nodes,
                                    "gpus_per_node": 4, "switch_radix": 8}, st.integers(1, 4), st.sampled_from([2, 4]))))
def test_every_route_graph_is_the_one_networkx_finds(generate):
    """Whatever shortcuts the router takes (a core switch's kept search, skipping dead ends
    and the endpoints a search cannot pass through), each pair's equal-cost route graph is
    the one networkx's all-shortest-paths finds on (latency, hops) through switches and NICs."""
    from simnet.topology.routing import _ancestors

    topo = topology_from_dict({"name": "t", "generate": generate})
    ends = topo.gpus + topo.parameter_servers
    for src in ends:
        graph = _paths_from(topo, src)
        for dst in ends:
            if src != dst:
                dag = _ancestors(topo.router._shortest_dag(src, dst), dst)
                assert {(u, v) for v, us in dag.items() for u in us} == _equal_cost_links(graph, src, dst), (src, dst)


@settings(max_examples=60, deadline=None)
@given(edges=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=30), both_ways=st.booleans(),
       kinds=st.lists(st.sampled_from(["switch", "nic", "gpu"]), min_size=12, max_size=12))
def test_the_fabric_s_reach_is_its_strongly_connected_components_and_what_they_reach(edges, both_ways, kinds):
    """The loader's search for what each forwarding node reaches (a plain search where every
    link runs both ways) agrees with networkx's condensation of the forwarding nodes."""
    from simnet.topology.loader import _fabric_reach

    graph = nx.DiGraph()
    graph.add_nodes_from((i, {"kind": kind}) for i, kind in enumerate(kinds))
    graph.add_edges_from((u, v) for u, v in edges if u != v)
    if both_ways:
        graph.add_edges_from([(v, u) for u, v in graph.edges])
    component, reach = _fabric_reach(graph)
    fabric = graph.subgraph(n for n, kind in graph.nodes(data="kind") if kind != "gpu")
    assert set(component) == set(fabric)
    for u in fabric:
        for v in fabric:
            reached = component[v] in reach[component[u]]
            assert reached == nx.has_path(fabric, u, v), (u, v)
