"""NICs as NCCL uses them: a GPU with several NICs deals its channels over all of them, so
the same NIC bandwidth written as 8 x 400 Gb/s, 16 x 200 Gb/s or 32 x 100 Gb/s carries a
large ring in the same time, every NIC carries its share, NCCL's cost model and the
simulation count the same NICs, and a run that leaves NICs unused says so."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simnet
from simnet.topology.loader import topology_from_dict
from simnet.tuning.search import system_of


def _pair(nics: int, bandwidth: str):
    """Two 8-GPU H100 hosts under one leaf, 3.2 Tb/s of NICs each."""
    return topology_from_dict({"name": f"{nics}x", "generate": {
        "kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 8, "gpu": "h100",
        "nics_per_host": nics, "nic_bandwidth": bandwidth, "spines": 1}})


def _nic_bytes(result) -> dict[str, float]:
    return {link.src: link.bytes for link in result.links if "nic" in link.src and "tor" in link.dst}


@pytest.mark.parametrize("nics, bandwidth", [(16, "200 Gb/s"), (32, "100 Gb/s")])
def test_nics_written_out_carry_a_large_ring_as_fused_ones(nics, bandwidth):
    """1 GiB is bandwidth-bound: the hosts' NIC bandwidth is the same 400 GB/s either way and
    NCCL opens a channel per NIC at the same total rate (8 x 48 GB/s or 16 x 24 or 32 x 12),
    so the ring's time agrees within 2 % (it was 1.9x and 3.8x slower written out)."""
    fused = simnet.simulate(_pair(8, "400 Gb/s"), "ring", 2**30)
    written = simnet.simulate(_pair(nics, bandwidth), "ring", 2**30)
    assert written.time_s == pytest.approx(fused.time_s, rel=0.02)


@pytest.mark.parametrize("nics, bandwidth", [(8, "400 Gb/s"), (16, "200 Gb/s")])
def test_every_nic_carries_its_share_of_a_ring(nics, bandwidth):
    """A ring over 16 GPUs on 2 hosts: each host's NICs send its half of 2 (N-1)/N x S...
    all of them, equally (to within one channel's rounding), and NCCL's model counts them all."""
    topo = _pair(nics, bandwidth)
    result = simnet.simulate(topo, "ring", 2**28)
    sent = _nic_bytes(result)
    assert len(sent) == 2 * nics
    assert max(sent.values()) == pytest.approx(min(sent.values()), rel=0.01)
    assert system_of(topo).nics == nics
    assert not [w for w in result.warnings if w.kind == "nic_idle"]


def test_a_run_that_leaves_nics_unused_warns():
    """hierarchical runs one ring between the hosts' leaders: most NICs carry nothing."""
    result = simnet.simulate(_pair(16, "200 Gb/s"), "hierarchical", 2**28, inner="ring")
    (idle,) = [w for w in result.warnings if w.kind == "nic_idle"]
    used = {end for link in result.links if link.bytes for end in (link.src, link.dst) if "nic" in end}
    assert 0 < 32 - len(used) < 32
    assert f"{32 - len(used)} of the 32 NICs of the GPUs that sent across hosts" in idle.message  # all did, two each


@pytest.mark.parametrize("algorithm", ["ps", "binary_tree"])
def test_nics_of_gpus_that_send_nothing_across_hosts_are_not_said_idle(algorithm):
    """Fuzz round v (G_p5x): a parameter server or a binary tree over two p5s uses the network
    from a few GPUs only. Written out (4 x 100G EFA per GPU) every other GPU's four NICs were
    said idle, by name (one 400G device each) nothing: the same hardware, the same idle
    NICs. Idle NICs are said only of GPUs that use some of theirs (here all four, striped)."""
    def pair(**hosts):
        return topology_from_dict({"name": "p", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                             **hosts}})

    written = pair(gpus_per_host=8, gpu="h100", nics_per_host=32, nic_bandwidth="100 Gb/s", transport="efa")
    for topo in (written, pair(server="p5.48xlarge")):
        result = simnet.simulate(topo, algorithm, 2**26)
        assert not [w for w in result.warnings if w.kind == "nic_idle"], topo.name


def test_a_nic_a_fault_took_down_is_not_said_idle():
    """Fuzz round w F8: with one of a p5's 32 EFA NICs down from the start, every run warned
    ``nic_idle`` of it, remedy "compare -a ring" on the ring itself: it was down, not left
    unused (the conditions say so). A NIC another GPU's channels leave unused still is."""
    topo = topology_from_dict({"name": "p", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1,
                                                         "gpus_per_host": 8, "gpu": "h100", "nics_per_host": 32,
                                                         "nic_bandwidth": "100 Gb/s", "transport": "efa"}})
    for algorithm in ("ring", "tree"):
        result = simnet.simulate(topo, algorithm, 2**26, faults=[{"at": "0 s", "node": "r0h0-nic0", "down": True}])
        assert not [w for w in result.warnings if w.kind == "nic_idle"], algorithm
        assert [f["what"] for f in result.conditions["faults"]]  # said among the conditions


@settings(max_examples=12, deadline=None)
@given(hosts=st.integers(2, 3), gpus=st.sampled_from([2, 4, 8]), per_gpu=st.sampled_from([2, 4]))
def test_the_same_nic_bandwidth_written_out_per_gpu_carries_a_large_ring_alike(hosts, gpus, per_gpu):
    """A property over host counts, GPUs per host and NICs per GPU: k NICs of b/k on each GPU
    carry a 1 GiB ring as one NIC of b does (bandwidth-bound: the same NIC bandwidth per GPU,
    every NIC used), to 2 %."""
    def fabric(nics_per_gpu: int):
        return topology_from_dict({"name": "f", "generate": {
            "kind": "leaf_spine", "racks": 1, "hosts_per_rack": hosts, "gpus_per_host": gpus, "gpu": "h100",
            "nics_per_host": gpus * nics_per_gpu, "nic_bandwidth": f"{400 // nics_per_gpu} Gb/s", "spines": 1}})

    one = simnet.simulate(fabric(1), "ring", 2**30)
    written = simnet.simulate(fabric(per_gpu), "ring", 2**30)
    assert written.time_s == pytest.approx(one.time_s, rel=0.02)


def _switch_pair(wired_to_gpus: bool) -> dict:
    """Two hosts of two H100s on an NVSwitch, 2 x 400 Gb/s NICs each, under one leaf: the NICs
    behind one PCIe switch with both GPUs (``wired_to_gpus=False``, as in a DGX A100 or H100
    tray) or each NIC on its own GPU's PCIe link."""
    nodes, links = [{"id": "leaf", "kind": "switch"}], []
    for h in range(2):
        nodes += [{"id": f"h{h}-nvs", "kind": "switch", "host": f"h{h}"}]
        if not wired_to_gpus:
            nodes += [{"id": f"h{h}-pcie", "kind": "switch", "host": f"h{h}"}]
        for g in range(2):
            gpu, nic = f"h{h}-gpu{g}", f"h{h}-nic{g}"
            nodes += [{"id": gpu, "kind": "gpu", "host": f"h{h}", "gpu": "h100"}, {"id": nic, "kind": "nic", "host": f"h{h}"}]
            links += [{"a": gpu, "b": f"h{h}-nvs", "bandwidth": "450 GB/s", "latency": "0.25 us"},
                      {"a": nic, "b": "leaf", "bandwidth": "400 Gb/s", "latency": "1 us"}]
            if wired_to_gpus:
                links += [{"a": gpu, "b": nic, "bandwidth": "64 GB/s", "latency": "1 us"}]
            else:  # the same 1 us GPU -> NIC, above NVLink's 0.5 us GPU -> GPU, so peers talk over NVLink
                links += [{"a": gpu, "b": f"h{h}-pcie", "bandwidth": "64 GB/s", "latency": "0.5 us"},
                          {"a": nic, "b": f"h{h}-pcie", "bandwidth": "64 GB/s", "latency": "0.5 us"}]
    return {"name": "pair", "nodes": nodes, "links": links}


def test_two_gpus_behind_one_pcie_switch_with_two_nics_take_one_each():
    """NCCL (src/graph/topo.cc ncclTopoGetLocalNetType): the two GPUs share the switch's two
    NICs, so GPU dev % 2 picks one each; simnet bound both NICs to the first GPU, which then
    carried every channel of its host while the second GPU's PCIe link sat idle."""
    shared = topology_from_dict(_switch_pair(wired_to_gpus=False))
    assert shared.rails(["h0-gpu0", "h0-gpu1"]) == [("h0-nic0", "h0-gpu0"), ("h0-nic1", "h0-gpu1")]
    own = topology_from_dict(_switch_pair(wired_to_gpus=True))
    for algorithm in ("ring", "tree"):
        assert simnet.simulate(shared, algorithm, 2**28).time_s == pytest.approx(
            simnet.simulate(own, algorithm, 2**28).time_s, rel=0.02), algorithm


def _bridge_pair(label_switch: bool = True) -> dict:
    """Two hosts, each 4 H100s and 4 NICs on one PCIe switch under the host bridge (every NIC
    equally near every GPU); the switch labelled with its host or only hanging off its bridge."""
    nodes, links = [{"id": "leaf", "kind": "switch"}], []
    for h in "AB":
        nodes += [{"id": f"{h}rc", "kind": "host", "host": h},
                  {"id": f"{h}psw", "kind": "switch", **({"host": h} if label_switch else {})}]
        links.append({"a": f"{h}psw", "b": f"{h}rc", "bandwidth": "64 GB/s", "latency": "0.5 us"})
        for i in range(4):
            nodes += [{"id": f"{h}g{i}", "kind": "gpu", "gpu": "h100", "host": h},
                      {"id": f"{h}nic{i}", "kind": "nic", "host": h}]
            links += [{"a": f"{h}g{i}", "b": f"{h}psw", "bandwidth": "64 GB/s", "latency": "0.5 us"},
                      {"a": f"{h}nic{i}", "b": f"{h}psw", "bandwidth": "64 GB/s", "latency": "0.5 us"},
                      {"a": f"{h}nic{i}", "b": "leaf", "bandwidth": "400 Gb/s", "latency": "1 us"}]
    return {"name": "bridge", "nodes": nodes, "links": links}


def test_a_run_on_part_of_a_host_sends_through_the_nics_its_rails_name():
    """The channel layout (rails) and the routes agree on which NICs a subset's GPUs use: the
    binding of the whole host (routes are shared by every subset), here NIC 0 and 2 for GPUs 0
    and 1 (dev % 4, mirrored); before, rails named four NICs while the routes used two."""
    topo = topology_from_dict(_bridge_pair())
    part = topo.subset(["Ag0", "Ag1", "Bg0", "Bg1"])
    assert part.rails(["Ag0", "Ag1"]) == [("Anic0", "Ag0"), ("Anic2", "Ag1")]
    sent = {link.src for link in simnet.simulate(part, "ring", 2**26).links if link.dst == "leaf" and link.bytes}
    assert sent == {"Anic0", "Anic2", "Bnic0", "Bnic2"}


def test_a_nic_on_a_pcie_switch_off_its_host_bridge_is_a_rail_labelled_or_not():
    """A PCIe switch inside a server need not carry the host label: hanging off the host's
    bridge says where it is, for its NICs as for its GPUs."""
    for label_switch in (True, False):
        topo = topology_from_dict(_bridge_pair(label_switch))
        assert len(topo.rails(["Ag0", "Ag1", "Ag2", "Ag3"])) == 4, label_switch


def test_a_latency_bound_run_with_idle_nics_does_not_warn():
    """At 8 B NCCL runs one channel and most NICs carry nothing, as on the machine; the time is
    latency, so idle NICs change nothing and ``nic_idle`` (whose remedy is to use them) stays
    quiet. Before, every small ring and tree on hosts of 2 NICs per GPU warned."""
    result = simnet.simulate(_pair(16, "200 Gb/s"), "ring", 8)
    assert len(_nic_bytes(result)) < 32
    assert not [w for w in result.warnings if w.kind == "nic_idle"]
