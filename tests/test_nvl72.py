"""Multi-node NVLink and the newest GPUs: an NVL72 rack is one NCCL node however it is
written (one 72-GPU host, 18 trays of 4, or node by node), its GPUs sit on Arm Grace hosts,
and the GPU table holds NCCL's own per-link figures (NVIDIA/nccl src/graph/topo.h)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simnet
from simnet.errors import InputError
from simnet.topology.hardware import GPUS, NET, NVLINK, pcie_bandwidth
from simnet.topology.loader import load_topology, topology_from_dict
from simnet.tuning.search import system_of

NCCL_NVLINK_GBPS = {70: 20.0, 80: 20.0, 89: 0.0, 90: 20.6, 100: 40.1, 103: 40.1}
"""topo.h: SM70_NVLINK_BW 20.0, SM80 20.0, SM90 20.6, SM100 40.1 (ncclTopoNVLinkBw: cc >= 100);
an L40S (SM89) has no NVLink at all."""


@pytest.mark.parametrize("name", sorted(name for name, gpu in GPUS.items() if not gpu.amd))
def test_every_gpu_carries_nccls_per_link_figure(name):
    gpu = GPUS[name]
    assert gpu.nccl_link_rate == pytest.approx(NCCL_NVLINK_GBPS[gpu.compute_capability] * 1e9)
    assert gpu.source and gpu.bf16_flops > 0


def test_blackwell_nvlink_is_1_8_tb_per_s_both_ways():
    # NVLink 5: 18 links, 1.8 TB/s bidirectional per GPU (B200/B300/GB200/GB300 datasheets)
    for name in ("b200", "b300", "gb200", "gb300"):
        assert GPUS[name].nvlink_bandwidth == pytest.approx(900e9)
    assert GPUS["v100"].nvlink_bandwidth == pytest.approx(150e9)  # NVLink 2: 300 GB/s bidirectional
    assert {name for name, gpu in GPUS.items() if gpu.host_cpu == "arm"} == {"gb200", "gb300"}


def _racks(racks: int, gpus: int, tray: int | None, gpu: str = "gb200", nics_per_gpu: int = 1):
    params = {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": racks, "gpus_per_host": gpus, "gpu": gpu,
              "nics_per_host": gpus * nics_per_gpu, "nic_bandwidth": "400 Gb/s", "spines": 1}
    if tray is not None:
        params["gpus_per_tray"] = tray
    return topology_from_dict({"name": f"nvl-{tray}", "generate": params})


def _node_by_node(topology):
    """The same graph written out node by node, as a user would: ids and labels, links with
    units and no ``type`` (inferred), the rack's NVLink switch marked ``nvls``."""
    keys = ("host", "rack", "gpu", "transport", "nvls")
    nodes = [{"id": n, "kind": data["kind"], **{k: data[k] for k in keys if data.get(k) is not None}}
             for n, data in topology.graph.nodes(data=True)]
    seen, links = set(), []
    for u, v, data in topology.graph.edges(data=True):
        if frozenset((u, v)) in seen:
            continue
        seen.add(frozenset((u, v)))
        links.append({"a": u, "b": v, "bandwidth": f"{data['bandwidth']!r} B/s", "latency": f"{data['latency']!r} s"})
    return topology_from_dict({"name": "written", "nodes": nodes, "links": links})


def test_an_nvl72_rack_is_one_nccl_node_written_as_trays():
    """NCCL's MNNVL clique: the 72 GPUs of a rack count as one node, with all 72 NICs."""
    topo = load_topology("topologies/gb200_nvl72_2racks.yaml")
    system = system_of(topo)
    assert (system.ranks, system.nodes, system.nics, system.cpu) == (144, 2, 72, "arm")
    assert len(topo.groups("host")) == 36 and len(topo.groups("node")) == 2
    assert system.nvlink_bw == pytest.approx(18 * 40.1)  # 18 links at SM100_NVLINK_BW


@settings(max_examples=10, deadline=None)
@given(racks=st.integers(1, 3), gpus=st.sampled_from([8, 16]), tray=st.sampled_from([1, 2, 4]),
       algorithm=st.sampled_from(["auto", "ring", "tree", "nvls_tree"]), size=st.sampled_from([2**16, 2**22]))
def test_trays_one_host_or_node_by_node_give_one_answer(racks, gpus, tray, algorithm, size):
    """Same hardware, same answer: racks of trays, of one host each, and the trays written
    node by node give the same time, algorithm and protocol (0.1 % on the same graph), and
    group the GPUs into the same racks (fuzz round ad F6: trays made each server its rack,
    one host left both in the leaf's, so hierarchical by rack ran 644 against 2,700 us)."""
    if algorithm == "nvls_tree" and racks == 1:
        algorithm = "nvls"  # NCCL runs NVLSTree across nodes only
    one_host = _racks(racks, gpus, None)
    trays = _racks(racks, gpus, tray)
    plain = simnet.simulate(one_host, algorithm, size)
    by_rack = simnet.simulate(one_host, "hierarchical", size, group_by="rack")

    def racks_of(topology) -> set:
        return {frozenset(gpus) for gpus in topology.groups("rack").values()}

    for written in (trays, _node_by_node(trays)):
        result = simnet.simulate(written, algorithm, size)
        assert (result.algorithm, result.protocol) == (plain.algorithm, plain.protocol)
        assert result.time_s == pytest.approx(plain.time_s, rel=1e-3)
        assert racks_of(written) == racks_of(one_host)
        assert simnet.simulate(written, "hierarchical", size, group_by="rack").time_s == pytest.approx(
            by_rack.time_s, rel=1e-3)


def _cable(host_a: str, host_b: str):
    return topology_from_dict({"name": "pair", "nodes": [
        {"id": "a", "kind": "gpu", "host": host_a}, {"id": "b", "kind": "gpu", "host": host_b}],
        "links": [{"a": "a", "b": "b", "bandwidth": "100 Gb/s", "latency": "1 us"}]})


def test_a_cable_between_two_hosts_gpus_is_their_network():
    apart, together = _cable("h0", "h1"), _cable("h0", "h0")
    assert apart.link_type[apart.link_index[("a", "b")]] == NET
    assert together.link_type[together.link_index[("a", "b")]] == NVLINK
    assert len(apart.groups("node")) == 2 and len(together.groups("node")) == 1


def test_a_gpu_without_nvlink_gets_none():
    with pytest.raises(InputError, match="l40s has no NVLink"):
        topology_from_dict({"name": "x", "generate": {"kind": "nvswitch", "gpu": "l40s"}})
    with pytest.raises(InputError, match="is an NVLink, but g0 is an l40s"):
        topology_from_dict({"name": "x", "nodes": [{"id": "g0", "kind": "gpu", "gpu": "l40s"},
                                                   {"id": "g1", "kind": "gpu", "gpu": "l40s"}],
                            "links": [{"a": "g0", "b": "g1", "bandwidth": "32 GB/s", "latency": "1 us"}]})
    box = topology_from_dict({"name": "x", "generate": {"kind": "pcie", "gpu": "l40s"}})
    assert box.capacity.max() == pytest.approx(pcie_bandwidth(4))  # Gen4 x16 (L40S datasheet)
    assert system_of(box).nvlink_bw == 0


def test_trays_must_divide_the_server():
    with pytest.raises(InputError, match="gpus_per_tray: 5 does not divide the 72 GPUs"):
        topology_from_dict({"name": "x", "generate": {"kind": "nvswitch", "gpus": 72, "gpu": "gb200",
                                                      "gpus_per_tray": 5}})


@pytest.mark.parametrize("nics, refused", [({"nics_per_host": 1}, "nics_per_host: 1 NIC for the 2 trays"),
                                           ({"nics_per_host": 3}, "nics_per_host: 3 NICs for the 2 trays"),
                                           ({"nic_per": "host"}, "nic_per: 1 NIC for the 2 trays"),
                                           ({"nics_per_host": 2}, None), ({"nics_per_host": 6}, None)])
def test_each_tray_has_nics_of_its_own(nics, refused):
    """Fuzz 31f: ``gpus_per_tray: 4`` of 8 with ``nics_per_host: 1`` (or ``nic_per: host``)
    cabled the second tray's GPUs over PCIe to the first tray's NIC, a host each: no
    hardware is built so. The trays share a server's NICs evenly, each its own."""
    params = {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpu": "gb200", "gpus_per_host": 8,
              "gpus_per_tray": 4, **nics}
    if refused:
        with pytest.raises(InputError, match=refused):
            topology_from_dict({"name": "x", "generate": params})
        return
    topo = topology_from_dict({"name": "x", "generate": params})
    for gpu in topo.gpus:  # every GPU's NICs are on its own tray
        host = topo.graph.nodes[gpu]["host"]
        assert all(topo.graph.nodes[nic]["host"] == host for nic, _ in topo.rails([gpu]))


def test_nccls_arm_hosts_skip_the_x86_nvlstree_correction():
    """tuning.cc applies treeCorrectionFactor to NVLSTree below 1 GiB only on x86 hosts: the
    same two racks of Blackwell GPUs predict NVLSTree faster on Grace than on an x86 host."""
    from simnet.tuning.predict import sized_bandwidth

    grace = system_of(_racks(2, 8, 4, gpu="gb200"))
    x86 = system_of(_racks(2, 8, 4, gpu="b200"))
    assert (grace.cpu, x86.cpu) == ("arm", "intel")
    size = 2**22
    assert sized_bandwidth(grace, "NVLSTree", "Simple", size) > sized_bandwidth(x86, "NVLSTree", "Simple", size)


# ---------------------------------------------------------------- NCCL's graphs on an NVL72 clique
def test_a_rings_channels_across_nodes_are_held_by_the_gpus_nvlink():
    """NCCL's search takes a channel's speed off a GPU's NVLink for every channel that GPU
    forwards to the next GPU of its node (NVIDIA/nccl v2.30.7 src/graph/search.cc:80-170),
    and only a channel's last GPU hands it to a NIC instead. On paper: 8 H100 with 8 NICs,
    8 channels of 48 GB/s, each GPU forwarding 7 (7 x 48 = 336 <= 18 x 20.6 = 370.8); on
    72 GPUs of 18 x 40.1 = 721.8 GB/s, 15 of 48 (15 x 48 = 720, 16 x 48 = 768 too many) or
    16 of 45.1 (721.6)."""
    from simnet.tuning.search import nvlink_ring_channels

    assert nvlink_ring_channels(48, 18 * 20.6, 8) == 8
    assert nvlink_ring_channels(48, 18 * 40.1, 72) == 15
    assert nvlink_ring_channels(45.1, 18 * 40.1, 72) == 16
    assert nvlink_ring_channels(48, 18 * 40.1, 1) == 32  # one GPU per node: no NVLink hop


def test_an_nvl72_racks_ring_and_tree_have_the_channels_nccls_search_finds():
    """Two NVL72 racks, 72 NICs of 400G each: not one channel per NIC (32, MAXCHANNELS/2)
    but what the GPUs' NVLink carries. Pass 1 of the search (search.cc:1165-1257) finds 15
    channels at 48 GB/s (720 GB/s, short of the GPU's 721.8 totalBw, :1198), so it tries
    45.1 (45.1/48 > 0.49, :1241): 16 channels, 721.6 GB/s, kept for being more
    (ncclTopoCompareGraphs, :455-460); 42 gives 17 x 42 = 714, 40 18 x 40 = 720, 30 24 x
    30 = 720, 24 30 x 24 = 720, none more, and 22/45.1 < 0.49 ends it. Tree searches with
    the ring's channel count (init.cc:1178-1183); 16 x 80 GB/s would not fit the NVLink, so
    pass 2 leaves its intra speed. The communicator duplicates them: 32 channels."""
    from simnet.tuning.search import Graph, comm_channels, graph

    system = system_of(load_topology("topologies/gb200_nvl72_2racks.yaml"))
    assert graph(system, "Ring") == Graph(16, 45.1, 45.1)
    assert (graph(system, "Tree").channels, graph(system, "Tree").bw_intra) == (16, 45.1)
    assert comm_channels(system) == 32


def test_nccl_picks_nvlstree_for_1_gib_across_two_nvl72_racks():
    """NCCL's model (tuning.cc v2.30.7) on two GB200 racks, on paper: Tree/Simple
    bus 16 x 45.1 x 0.92 = 663.9 GB/s (under 16 x perChMaxTreeBw 42.8), algBw half of it,
    latency 8.4 + 2 x (71 x 4.0 + 1 x 14) = 604.4 us: 1 GiB in 3839 us. NVLSTree: 32
    channels of 20 GB/s, 20 x 0.74 x 31/32 x 2 = 28.7 each (under 2 x 45.1 and the 96 cap),
    bus 917.6, algBw x 144/286 = 462.0, latency 25 + 2 x 20.9: 2391 us. NVLSTree wins
    (with 32 ring channels Tree's 2172 us would have)."""
    from simnet.tuning.predict import pick, predict

    system = system_of(load_topology("topologies/gb200_nvl72_2racks.yaml"))
    size = 2**30
    tree_bw = 16 * 45.1 * 0.92 / 2
    assert predict(system, "Tree", "Simple", size) == pytest.approx((604.4 + size / (1000 * tree_bw)) * 1e-6, rel=1e-4)
    nvls_bw = 32 * 20 * 0.74 * 31 / 32 * 2 * 144 / 286
    assert predict(system, "NVLSTree", "Simple", size) == pytest.approx((25 + 2 * 20.9 + size / (1000 * nvls_bw)) * 1e-6,
                                                                        rel=1e-4)
    assert pick(system, size).algorithm == "NVLSTree"


def test_nccls_tree_runs_a_chain_through_every_gpu_of_a_clique():
    """NCCL's Tree inside a node is a chain through all its local ranks (connect.cc:41-62,
    v2.30.7: tree.up = treeIntra[i-1], tree.down[0] = treeIntra[i+1]), and an MNNVL clique
    is one node (topo.cc:1887-1891 fuses the clique's topologies; init.cc:1285-1300 counts
    nodes by the ring's first rank): on two racks of 72 a chunk climbs 71 NVLink hops and
    one between the racks' heads, and comes back down, 2 x 72 = 144 hops per channel."""
    from simnet.schedule.algorithms.tree import tree_program

    topo = load_topology("topologies/gb200_nvl72_2racks.yaml")
    program = tree_program(topo, list(topo.gpus), 2**24, channels=2)
    hops = {h for h, _, _ in program.info["pipeline"].values()}
    between = {b for _, _, b in program.info["pipeline"].values()}
    assert hops == {144} and between == {2}


@settings(max_examples=12, deadline=None)
@given(first=st.integers(0, 16), second=st.integers(0, 16))
def test_any_trays_of_a_rack_are_one_nccl_node_whichever_view_asks_first(first, second):
    """Fuzz round y F17: the NVLink domain of a rack written as trays was found among the
    ranks of the first view that asked, and kept for the network: two identical jobs on
    trays 0-1 and 2-3 took 0.219 ms and 244.7 ms (trays 2-3 seen as two nodes over the
    network, at 1/6000 of NVLink's rate), in whichever order they were listed. Every view's
    GPUs share one node, and two views of the same shape answer alike."""
    topo = topology_from_dict({"name": "t", "generate": {"kind": "nvswitch", "server": "gb200-nvl72"}})
    views = [topo.subset([f"gpu{4 * tray + i}" for tray in (start, start + 1) for i in range(4)])
             for start in (first, second)]
    assert [len(view.groups("node")) for view in views] == [1, 1]
    assert simnet.simulate(views[0], "ring", 2**24).time_s == simnet.simulate(views[1], "ring", 2**24).time_s
