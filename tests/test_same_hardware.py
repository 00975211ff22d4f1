"""Same hardware, same answer: a generated topology written out node by node
(``simnet topo export --format yaml``), its switches, NICs and links in any order and links
either way round, is the same network, and simnet predicts the same for it: the same
algorithm, protocol and time for NCCL's pick and for ring and tree. So is a rail fabric
written with its GPUs cabled straight to their leaves, without NIC nodes."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simnet
from simnet.topology.export import topology_as_dict
from simnet.topology.loader import topology_from_dict

GENERATED = st.one_of(
    st.builds(lambda gpus, gpu: {"kind": "nvswitch", "gpus": gpus, "gpu": gpu, "nic_bandwidth": "400 Gb/s"},
              st.sampled_from([2, 4, 8]), st.sampled_from(["a100", "h100", "b200"])),
    st.builds(lambda racks, hosts, gpus, per, over, transport: {
        "kind": "leaf_spine", "racks": racks, "hosts_per_rack": hosts, "gpus_per_host": gpus, "nic_per": per,
        "oversubscription": over, "transport": transport},
        st.integers(1, 2), st.integers(1, 2), st.sampled_from([2, 4]), st.sampled_from(["gpu", "host"]),
        st.sampled_from([1, 2]), st.sampled_from(["ib", "roce"])),
    st.builds(lambda units, nodes, rails: {"kind": "rail_optimized", "units": units, "nodes_per_unit": nodes,
                                           "gpus_per_node": 4, "rails": rails, "switch_radix": 16},
              st.integers(1, 2), st.sampled_from([2, 4]), st.sampled_from([2, 4])),
    st.builds(lambda gpus, per: {"kind": "pcie", "gpus": gpus, "gpus_per_switch": per},
              st.sampled_from([2, 4]), st.sampled_from([1, 2])),
)


def _rewritten(generated: dict, draw) -> dict:
    """The generated topology node by node, its switches, NICs and links shuffled (the GPUs
    keep their order: it is their rank order) and some links written b -> a."""
    written = topology_as_dict(topology_from_dict({"name": "t", "generate": generated}))
    gpus = [node for node in written["nodes"] if node["kind"] == "gpu"]
    written["nodes"] = gpus + draw(st.permutations([node for node in written["nodes"] if node["kind"] != "gpu"]))
    links = draw(st.permutations(written["links"]))
    flips = draw(st.lists(st.booleans(), min_size=len(links), max_size=len(links)))
    written["links"] = [{**link, "a": link["b"], "b": link["a"]} if flip and not link.get("directed") else link
                        for link, flip in zip(links, flips)]
    return yaml.safe_load(yaml.safe_dump(written))  # as a file holds it


@pytest.mark.timeout(300)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=GENERATED, size=st.sampled_from([64 * 1024, 16 * 2**20]), data=st.data())
def test_a_generated_topology_written_node_by_node_gives_the_same_answer(generated, size, data):
    generated_topology = topology_from_dict({"name": "t", "generate": generated})
    written = topology_from_dict(_rewritten(generated, data.draw))
    assert written.gpus == generated_topology.gpus
    for algorithm in ("auto", "ring", "tree"):
        expected = simnet.simulate(generated_topology, algorithm, size)
        got = simnet.simulate(written, algorithm, size)
        assert (got.algorithm, got.protocol) == (expected.algorithm, expected.protocol), algorithm
        assert got.time_s == pytest.approx(expected.time_s, rel=1e-9), algorithm


def _rail_pair(with_nics: bool, gpus: int = 4, transport: str | None = None) -> dict:
    """Two hosts of ``gpus`` H100s on NVSwitch, GPU g of each on rail leaf g (one spine above):
    each GPU through its own NIC node (1 us over PCIe, 1 us to the leaf), or cabled straight
    to its leaf (2 us), as a user may write the same fabric; ``transport`` on the NICs, or on
    the GPUs that are their own."""
    speaks = {"transport": transport} if transport else {}
    nodes = [{"id": f"leaf{r}", "kind": "switch"} for r in range(gpus)] + [{"id": "spine", "kind": "switch"}]
    links = [{"a": f"leaf{r}", "b": "spine", "bandwidth": "3.2 Tb/s", "latency": "1 us"} for r in range(gpus)]
    for h in range(2):
        nodes.append({"id": f"h{h}-nvs", "kind": "switch", "host": f"h{h}", "nvls": True})
        for g in range(gpus):
            gpu = f"h{h}-gpu{g}"
            nodes.append({"id": gpu, "kind": "gpu", "host": f"h{h}", "gpu": "h100", **({} if with_nics else speaks)})
            links.append({"a": gpu, "b": f"h{h}-nvs", "bandwidth": "450 GB/s", "latency": "0.25 us"})
            if with_nics:
                nodes.append({"id": f"h{h}-nic{g}", "kind": "nic", "host": f"h{h}", **speaks})
                links += [{"a": gpu, "b": f"h{h}-nic{g}", "bandwidth": "64 GB/s", "latency": "1 us"},
                          {"a": f"h{h}-nic{g}", "b": f"leaf{g}", "bandwidth": "400 Gb/s", "latency": "1 us"}]
            else:
                links.append({"a": gpu, "b": f"leaf{g}", "bandwidth": "400 Gb/s", "latency": "2 us"})
    return {"name": "rails", "nodes": nodes, "links": links}


@pytest.mark.parametrize("algorithm, transport", [("auto", None), ("ring", None), ("tree", None),
                                                  ("nvls_tree", None), ("auto", "efa")])
def test_gpus_cabled_straight_to_their_leaves_are_their_own_nics(algorithm, transport):
    """Each such GPU is a rail of its own, as with a NIC node, speaking the transport it names:
    before, a host without NIC nodes had no rails, every channel left through one GPU, and a
    256 MiB ring took 7.5x as long (nvls_tree 230x)."""
    with_nics, straight = (topology_from_dict(_rail_pair(w, transport=transport)) for w in (True, False))
    assert straight.rails(straight.gpus[:4]) == [(g, g) for g in straight.gpus[:4]]
    for size in (2**20, 2**28):
        expected, got = simnet.simulate(with_nics, algorithm, size), simnet.simulate(straight, algorithm, size)
        assert (got.algorithm, got.protocol) == (expected.algorithm, expected.protocol)
        assert got.time_s == pytest.approx(expected.time_s, rel=1e-9)


def test_a_transport_on_a_gpu_that_is_not_its_own_nic_is_refused():
    """Only a GPU cabled straight to the network speaks for itself; behind a NIC, the NIC's counts."""
    from simnet import InputError

    topology = _rail_pair(True)
    topology["nodes"][-2]["transport"] = "roce"  # the last host's last GPU, which has a NIC node
    with pytest.raises(InputError, match=r"nodes\[\d+\]\.transport: 'h1-gpu3' is no NIC of its own"):
        topology_from_dict(topology)
