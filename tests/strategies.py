"""Hypothesis strategies several test files share."""

from __future__ import annotations

from hypothesis import strategies as st


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
