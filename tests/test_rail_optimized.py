"""The rail-optimized fabric generator and the SuperPOD / NVL72 presets built on it.

Expected switch counts come from NVIDIA's DGX SuperPOD reference architectures (H100
edition Table 4, B200 edition "Larger DGX SuperPOD component counts"), not from simnet.
"""

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from simnet import load_topology, simulate, topology_from_dict
from simnet.topology.generators import RailOptimizedParams, generate


def _switches(nodes) -> Counter:
    roles = Counter()
    for node in nodes:
        for role in ("leaf", "spine", "core"):
            if node.kind == "switch" and role in node.id:
                roles[role] += 1
    return roles


# SUs -> (leaf, spine, core) switches of 64-port NDR InfiniBand, 32 DGX of 8 GPUs per SU
@pytest.mark.parametrize("units, leaf, spine, core", [
    (1, 8, 4, 0), (2, 16, 8, 0), (4, 32, 16, 0),    # DGX SuperPOD H100 RA, Table 4
    (8, 64, 32, 0), (16, 128, 128, 64), (32, 256, 256, 128), (64, 512, 512, 256),  # B200 RA, larger builds
])
def test_switch_counts_match_nvidia_reference_architectures(units, leaf, spine, core):
    nodes, _ = generate({"kind": "rail_optimized", "units": units})
    assert _switches(nodes) == Counter({"leaf": leaf, "spine": spine, "core": core} if core else
                                       {"leaf": leaf, "spine": spine})
    assert sum(n.kind == "gpu" for n in nodes) == units * 256


def _tier_bandwidth(links, lower: str, upper: str) -> float:
    return sum(link.bandwidth for link in links if lower in link.a and upper in link.b)


@pytest.mark.parametrize("units", [4, 16])
def test_every_tier_carries_what_the_nics_bring_at_one_to_one(units):
    """Non-blocking: each tier's uplinks sum to the NICs' bandwidth (the RA's equal cable counts)."""
    _, links = generate({"kind": "rail_optimized", "units": units})
    nics = _tier_bandwidth(links, "nic", "leaf")
    assert nics == pytest.approx(units * 256 * 50e9)
    assert _tier_bandwidth(links, "leaf", "spine") == pytest.approx(nics)
    if units > 8:
        assert _tier_bandwidth(links, "spine", "core") == pytest.approx(nics)


def test_oversubscription_thins_each_tier():
    # 2:1 leaves leave 48 ports down per 3:1 spine: pods of 6 units; 12 units fill 2 pods
    params = {"kind": "rail_optimized", "units": 12, "leaf_oversubscription": 2, "spine_oversubscription": 3}
    _, links = generate(params)
    nics = _tier_bandwidth(links, "nic", "leaf")
    assert _tier_bandwidth(links, "leaf", "spine") == pytest.approx(nics / 2)
    model = RailOptimizedParams.model_validate(params)
    assert (model.spine_down(), model.spine_up(), model.pods()) == (48, 16, 2)  # 64 ports at 3:1
    assert _tier_bandwidth(links, "spine", "core") == pytest.approx(nics / 2 * 16 / 48)


# many draws are refused (spine_oversubscription where one spine tier reaches every leaf, more rails than
# GPUs, ...) and filtered out: expected here, so the filtering health check is off (it failed at random)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(units=st.integers(1, 12), nodes=st.integers(1, 6), gpus=st.integers(1, 8), rails=st.integers(1, 8),
       planes=st.integers(1, 3), radix=st.integers(4, 64), oversub=st.sampled_from([1.0, 1.5, 4.0]))
def test_footprint_counts_exactly_what_is_built(units, nodes, gpus, rails, planes, radix, oversub):
    params = {"kind": "rail_optimized", "units": units, "nodes_per_unit": nodes, "gpus_per_node": gpus,
              "rails": rails, "planes": planes, "switch_radix": radix, "leaf_oversubscription": oversub,
              "spine_oversubscription": oversub}
    try:
        model = RailOptimizedParams.model_validate(params)
    except ValidationError:
        assume(False)
    built_nodes, built_links = generate(params)
    assert model.footprint() == (units * nodes * gpus, len(built_nodes) + len(built_links))
    ids = [n.id for n in built_nodes]
    assert len(ids) == len(set(ids))


@pytest.fixture(scope="module")
def three_tier():
    """3 units of 2 servers x 4 GPUs on 8-port switches: 12 leaves > 8 ports, so pods and a core."""
    topo = topology_from_dict({"name": "t", "generate": {
        "kind": "rail_optimized", "units": 3, "nodes_per_unit": 2, "gpus_per_node": 4, "switch_radix": 8}})
    return topo


def test_same_rail_is_one_leaf_other_rails_cross_the_spine_other_pods_the_core(three_tier):
    hops = {dst: [v for _, v in three_tier.route("su0h0-gpu1", dst)] for dst in
            ("su0h1-gpu1", "su0h1-gpu2", "su2h0-gpu1")}
    assert hops["su0h1-gpu1"] == ["su0h0-nic1", "su0-leaf1", "su0h1-nic1", "su0h1-gpu1"]
    assert [n.split("-")[-1].rstrip("0123456789") for n in hops["su0h1-gpu2"]] == \
        ["nic", "leaf", "spine", "leaf", "nic", "gpu"]
    assert [n.split("-")[-2 if n.startswith("core") else -1].rstrip("0123456789") for n in hops["su2h0-gpu1"]] \
        == ["nic", "leaf", "spine", "core", "spine", "leaf", "nic", "gpu"]


def test_planes_split_each_nic_over_independent_fabrics():
    nodes, links = generate({"kind": "rail_optimized", "units": 1, "nodes_per_unit": 2, "gpus_per_node": 2,
                             "planes": 2, "nic_bandwidth": "800 Gb/s"})
    ports = [link for link in links if link.a == "su0h0-nic1"]
    assert [(p.b, p.bandwidth) for p in ports] == [("su0-leaf1-p0", 50e9), ("su0-leaf1-p1", 50e9)]
    spines = [n.id for n in nodes if "spine" in n.id]
    assert spines and all(s.endswith(("-p0", "-p1")) for s in spines)
    assert not [link for link in links if "-p0" in link.a + link.b and "-p1" in link.a + link.b]


def test_an_ideal_ring_uses_the_spine_only_between_units():
    """A ring's rank order walks one unit, then the next: within a unit every hop between
    servers stays on one rail's leaf; the ring crosses between the 2 units twice, each
    crossing 2 spine links carrying 2(N-1)/N x S (8 (N-1)/N x S in all)."""
    size = 8 * 2**20
    for units, crossings in ((1, 0), (2, 2)):
        topo = topology_from_dict({"name": "t", "generate": {
            "kind": "rail_optimized", "units": units, "nodes_per_unit": 2, "gpus_per_node": 4}})
        n = len(topo.gpus)
        result = simulate(topo, "ring", size, model="ideal")
        spine = sum(link.bytes for link in result.links if "spine" in link.src + link.dst)
        assert spine == pytest.approx(crossings * 2 * 2 * (n - 1) / n * size, rel=1e-9)


@pytest.mark.parametrize("params, line, message", [
    ({"nodes_per_unit": 64}, 3, "a leaf needs 64 ports down and 64 up, more than switch_radix 64"),
    ({"gpus_per_node": 4, "rails": 8}, 5, "generate.rails: 8 is more than the 4 NICs of a server"),  # on its line
    ({"units": 5, "nodes_per_unit": 2, "gpus_per_node": 2, "switch_radix": 4}, 3,
     "5 pods need a fourth switch tier"),
])
def test_impossible_wiring_is_one_line_naming_the_file(cli, tmp_path, params, line, message):
    path = tmp_path / "fabric.yaml"
    lines = "".join(f"  {key}: {value}\n" for key, value in params.items())
    path.write_text(f"name: f\ngenerate:\n  kind: rail_optimized\n{lines}")
    result = cli("topo", "check", path)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"{path}:{line}:")
    assert message in result.stderr


def test_presets_say_what_they_are(root):
    one = load_topology(root / "topologies/superpod_h100_1su.yaml")
    assert len(one.gpus) == 256 and len(one.groups("host")) == 32
    nvl = load_topology(root / "topologies/gb200_nvl72_1su.yaml")
    assert len(nvl.gpus) == 576 and {len(g) for g in nvl.groups("node").values()} == {72}  # an NVLink domain a rack
    assert {len(g) for g in nvl.groups("host").values()} == {4}  # 18 trays of 4 GPUs each
    assert {nvl.gpu_model(g) for g in nvl.gpus} == {"gb200"}
    nvlink = nvl.capacity[nvl.link_index[("su0h0-gpu0", "su0h0-nvswitch")]]
    assert nvlink == 900e9  # 1.8 TB/s per GPU, both directions together
    assert nvl.rails(nvl.groups("node")["su0h0"])[17] == ("su0h0-nic17", "su0h0-gpu17")


def test_large_fabrics_draw_summarised(cli, root, tmp_path, figures):
    from matplotlib.collections import LineCollection, PathCollection

    result = cli("topo", "draw", root / "topologies/superpod_h100_16su.yaml", "-o", tmp_path / "pod.png")
    assert result.exit_code == 0, result.stderr
    ax = figures["pod.png"].axes[0]
    markers = {c.get_label().split(" (")[0]: len(c.get_offsets()) for c in ax.collections
               if isinstance(c, PathCollection)}
    # rank 0's server expanded (8 GPUs, 8 NICs), its 31 neighbours one box, 8 racks boxed + "7 more racks"
    assert markers == {"gpu": 8, "nic": 8, "switch": 1 + 8 + 2, "hosts": 1, "racks": 9}
    texts = {t.get_text() for t in ax.texts}
    assert "31 more hosts\n248 GPUs\nx31 per line up" in texts and "7 more racks\n1792 GPUs" in texts
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    widths = np.asarray(lines.get_array())  # colour: mean bandwidth per link, Gb/s
    assert widths.min() == pytest.approx(400) and widths.max() == pytest.approx(6400)  # spine-core: 16 cables


def test_routing_skips_dead_ends_without_changing_a_route(three_tier):
    """The search for one destination skips NICs and NVSwitches that lead only to other
    GPUs; every pair's equal-cost route graph equals the one a full search finds."""
    from simnet.topology.routing import _ancestors

    for src in three_tier.gpus[::3]:
        _, full = three_tier.shortest_paths(src)
        for dst in three_tier.gpus:
            if dst != src:
                assert _ancestors(three_tier.router._shortest_dag(src, dst), dst) == _ancestors(full, dst)


def _flows_per_link(topo, pairs):
    """How many of the connections ``pairs`` cross each directed link."""
    count = np.zeros(len(topo.links), dtype=int)
    for src, dst in pairs:
        count[list(topo.route_indices(src, dst))] += 1
    return count


@pytest.mark.parametrize("routing", ["by_destination", "ecmp"])
def test_infiniband_destination_routing_makes_every_shift_congestion_free(routing):
    """OpenSM's fat-tree routing (doc/current-routing.txt) is built so that a "shift", every
    port sending to the port a fixed distance away, meets no congestion: here every one of
    the 63 shifts over 64 GPUs of a three-tier rail-optimized fabric. Hashing each flow
    onto a path (Ethernet's ECMP) promises nothing of the kind; here most shifts collide."""
    topo = topology_from_dict({"name": "t", "routing": routing, "generate": {
        "kind": "rail_optimized", "units": 4, "nodes_per_unit": 4, "gpus_per_node": 4, "switch_radix": 8}})
    gpus = topo.gpus
    nic = topo.capacity[topo.link_index[("su0h0-nic0", "su0-leaf0")]]
    congested = 0
    for shift in range(1, len(gpus)):
        count = _flows_per_link(topo, [(g, gpus[(i + shift) % len(gpus)]) for i, g in enumerate(gpus)])
        congested += bool((count * nic > topo.capacity * (1 + 1e-9)).any())  # more flows than fit at NIC rate
    if routing == "by_destination":
        assert congested == 0
    else:
        assert congested > len(gpus) // 2


def test_destination_routing_takes_one_path_per_destination_whatever_the_connection():
    topo = topology_from_dict({"name": "t", "routing": "by_destination", "generate": {
        "kind": "rail_optimized", "units": 4, "nodes_per_unit": 4, "gpus_per_node": 4, "switch_radix": 8}})
    dst = "su3h2-gpu1"
    down = {tuple(topo.route(src, dst, flow)[-3:]) for src in ("su0h0-gpu1", "su1h3-gpu1", "su2h1-gpu1")
            for flow in range(4)}
    assert len(down) == 1  # the last hops into the destination's pod are the destination's own


def test_a_routing_simnet_does_not_know_is_one_line():
    from simnet.errors import InputError

    with pytest.raises(InputError, match="routing"):
        topology_from_dict({"name": "t", "routing": "adaptive", "generate": {"kind": "nvswitch", "gpus": 2}})


def _node(node_id, kind):
    return {"id": node_id, "kind": kind}


def _cable(a, b, latency="1 us", **extra):
    return {"a": a, "b": b, "bandwidth": "50 GB/s", "latency": latency, **extra}


def test_a_one_way_link_between_switches_is_routed_as_a_full_search_finds():
    """Switch M has one way out, so it looks like a dead end, yet it carries traffic from
    leaf L1 to leaf L2 (one-way links): the search through the core must not be used."""
    from simnet.topology.routing import _ancestors

    topo = topology_from_dict({"name": "d", "nodes": [
        _node("g1", "gpu"), _node("g2", "gpu"), _node("nic1", "nic"), _node("nic2", "nic"),
        _node("L1", "switch"), _node("L2", "switch"), _node("S", "switch"), _node("M", "switch")], "links": [
        _cable("g1", "nic1"), _cable("g2", "nic2"), _cable("nic1", "L1"), _cable("nic2", "L2"),
        _cable("L1", "S", "5 us"), _cable("L2", "S", "5 us"),
        _cable("L1", "M", directed=True), _cable("M", "L2", directed=True)]})
    assert _ancestors(topo.router._shortest_dag("g1", "g2"), "g2") == _ancestors(topo.shortest_paths("g1")[1], "g2")
    assert [v for _, v in topo.route("g1", "g2")] == ["nic1", "L1", "M", "L2", "nic2", "g2"]


def test_destination_routing_leaves_the_hosts_choice_of_nic_to_the_connection():
    """The subnet manager's rule governs the switches; a GPU with two NICs spreads its
    connections (NCCL's channels) over both, as under ECMP."""
    nodes = [_node("g0", "gpu"), _node("g1", "gpu"), _node("nicA", "nic"), _node("nicB", "nic"),
             _node("nicC", "nic"), _node("L0", "switch"), _node("L1", "switch"), _node("S0", "switch"),
             _node("S1", "switch")]
    links = [_cable("g0", "nicA"), _cable("g0", "nicB"), _cable("nicA", "L0"), _cable("nicB", "L0"),
             _cable("g1", "nicC"), _cable("nicC", "L1"), _cable("L0", "S0"), _cable("L0", "S1"),
             _cable("L1", "S0"), _cable("L1", "S1")]
    topo = topology_from_dict({"name": "t", "routing": "by_destination", "nodes": nodes, "links": links})
    first = {topo.route("g0", "g1", channel)[0][1] for channel in range(8)}
    middle = {topo.route("g0", "g1", channel)[2][1] for channel in range(8)}
    assert first == {"nicA", "nicB"} and len(middle) == 1  # NICs by connection, the spine by destination


def test_destination_routing_reaches_switches_and_two_planes():
    """Routes to a reducing switch (SHARP) have a destination number too; with two planes
    (a NIC on two leaves) destinations are still numbered in leaf order, and every shift
    stays congestion-free."""
    planes = topology_from_dict({"name": "t", "routing": "by_destination", "generate": {
        "kind": "rail_optimized", "units": 4, "nodes_per_unit": 4, "gpus_per_node": 4, "switch_radix": 8,
        "planes": 2, "sharp": True}})
    assert simulate(planes.subset(8), "collnet_direct", 2**20).time_s > 0
    gpus = planes.gpus
    nic = planes.capacity[planes.link_index[("su0h0-nic0", "su0-leaf0-p0")]]
    for shift in (1, 5, len(gpus) // 2):
        count = _flows_per_link(planes, [(g, gpus[(i + shift) % len(gpus)]) for i, g in enumerate(gpus)])
        assert (count * nic <= planes.capacity * (1 + 1e-9)).all(), shift
