"""Write a topology for other graph tools: GraphML, GEXF (Gephi) or node-link JSON."""

from __future__ import annotations

import io
import json
from pathlib import Path

import networkx as nx

from simnet.topology.graph import Topology

__all__ = ["export_graph", "export_text", "export_topology"]


def export_graph(topo: Topology) -> nx.DiGraph:
    """A copy of the graph with GraphML-safe attributes: no None, ``rank`` on GPUs.

    Edges keep ``bandwidth`` (bytes/s) and ``latency`` (s) and gain ``bandwidth_gbps``.
    """
    graph = nx.DiGraph(name=topo.name)
    ranks = {gpu: i for i, gpu in enumerate(topo.gpus)}
    for node, data in topo.graph.nodes(data=True):
        attrs = {k: v for k, v in data.items() if v is not None}
        if node in ranks:
            attrs["rank"] = ranks[node]
        graph.add_node(node, **attrs)
    for u, v, data in topo.graph.edges(data=True):
        graph.add_edge(u, v, bandwidth=data["bandwidth"], latency=data["latency"],
                       bandwidth_gbps=data["bandwidth"] * 8 / 1e9)
    return graph


def export_text(topo: Topology, fmt: str) -> str:
    """``topo`` as ``graphml``, ``gexf`` or ``json`` (node-link) text."""
    graph = export_graph(topo)
    if fmt in ("graphml", "gexf"):  # as networkx writes a file: with its XML declaration, UTF-8
        buffer = io.BytesIO()
        (nx.write_graphml if fmt == "graphml" else nx.write_gexf)(graph, buffer)
        return buffer.getvalue().decode("utf-8")
    if fmt == "json":
        return json.dumps(nx.node_link_data(graph, edges="links"), indent=1) + "\n"
    raise ValueError(f"unknown export format {fmt!r}")


def export_topology(topo: Topology, path: str | Path, fmt: str) -> Path:
    """Write ``topo`` to ``path`` as ``export_text`` gives it, whole: into a file beside it,
    then renamed, so a failed export leaves no half a file."""
    path = Path(path)
    text = export_text(topo, fmt)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
    return path
