"""Hypothesis strategies several test files share."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from simnet import topology_from_dict
from simnet.engine.faults import Fault


@st.composite
def small_fabrics(draw) -> dict:
    """A topology document: 2-5 GPUs, each cabled to one of 1-3 switches in a chain, links
    of random rates (2-40 GB/s) and latencies (0-3 us). A document, not a ``Topology``:
    hypothesis prints the failing case, and a document prints as it was written."""
    gpus, switches = draw(st.integers(2, 5)), draw(st.integers(1, 3))
    nodes = [{"id": f"g{i}", "kind": "gpu"} for i in range(gpus)] + [{"id": f"s{i}", "kind": "switch"}
                                                                       for i in range(switches)]
    links = [{"a": f"g{i}", "b": f"s{draw(st.integers(0, switches - 1))}",
              "bandwidth": f"{draw(st.integers(2, 20))} GB/s", "latency": f"{draw(st.integers(0, 3))} us"}
             for i in range(gpus)]
    links += [{"a": f"s{i}", "b": f"s{i + 1}", "bandwidth": f"{draw(st.integers(2, 40))} GB/s", "latency": "1 us"}
              for i in range(switches - 1)]
    return {"name": "random", "nodes": nodes, "links": links}


@st.composite
def two_way_fabrics(draw) -> dict:
    """2-5 GPUs, each cabled to one of two leaves, both leaves to each of 2-3 spines: every
    route between leaves has a spine to spare when one goes down."""
    gpus, spines = draw(st.integers(2, 5)), draw(st.integers(2, 3))
    nodes = [{"id": f"g{i}", "kind": "gpu"} for i in range(gpus)] + [
        {"id": name, "kind": "switch"} for name in ["l0", "l1", *(f"s{i}" for i in range(spines))]]
    links = [{"a": f"g{i}", "b": f"l{draw(st.integers(0, 1))}", "bandwidth": f"{draw(st.integers(2, 20))} GB/s",
              "latency": f"{draw(st.integers(0, 3))} us"} for i in range(gpus)]
    links += [{"a": leaf, "b": f"s{i}", "bandwidth": f"{draw(st.integers(2, 40))} GB/s", "latency": "1 us"}
              for leaf in ("l0", "l1") for i in range(spines)]
    return {"name": "two ways", "nodes": nodes, "links": links}


@st.composite
def faults_on(draw, written: dict) -> list[Fault]:
    """0-2 faults that slow random links (or take them down) at 0 or later, and on fabrics
    with spines to spare, sometimes a spine down while flows cross it."""
    links = written["links"]
    faults = []
    for index in range(draw(st.integers(0, 2))):
        chosen = draw(st.lists(st.integers(0, len(links) * 2 - 1), min_size=1, max_size=3, unique=True))
        share = draw(st.sampled_from([0.0, 0.2, 0.5, 0.9, 1.0]))
        faults.append(Fault(draw(st.sampled_from([0.0, 1e-5, 1e-4, 1e-3])), np.array(chosen),
                            np.full(len(chosen), share), "slower", index))
    if written["name"] == "two ways" and draw(st.booleans()):  # a spine down while flows cross it
        topo = topology_from_dict(written)
        spine = draw(st.sampled_from([node["id"] for node in written["nodes"] if node["id"].startswith("s")]))
        down = np.array([i for i, (a, b) in enumerate(topo.links) if spine in (a, b)])
        at = draw(st.sampled_from([0.0, 1e-6, 5e-6, 2e-5, 1e-4]))
        faults.insert(draw(st.integers(0, len(faults))), Fault(at, down, np.zeros(len(down)), "spine down"))
    return faults
