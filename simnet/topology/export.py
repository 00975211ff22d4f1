"""Write a topology out: node by node as simnet's own YAML (a generated fabric to edit by
hand), or for other graph tools as GraphML, GEXF (Gephi) or node-link JSON."""

from __future__ import annotations

import io
import json
from pathlib import Path

import networkx as nx
import yaml

from simnet.io.files import write_text
from simnet.topology.graph import Topology
from simnet.topology.hardware import LINK_TYPES as LINK_NAMES
from simnet.topology.loader import default_routing, routes_choose

__all__ = ["export_graph", "export_text", "export_topology", "topology_as_dict"]

_NODE_KEYS = ("host", "rack", "region", "gpu", "transport", "net_latency", "nvls", "sharp")


def topology_as_dict(topo: Topology) -> dict:
    """``topo`` node by node, as a topology file states it: loaded back (``topology_from_dict``)
    it is the same network, GPUs in the same rank order. A link whose two directions agree is
    written once; bandwidths in B/s and latencies in s, exactly; a calibration profile by its
    absolute path.

    >>> from simnet.topology.loader import topology_from_dict
    >>> pair = topology_from_dict({"name": "pair", "generate": {"kind": "full_mesh", "gpus": 2}})
    >>> topology_as_dict(pair)["links"]
    [{'a': 'gpu0', 'b': 'gpu1', 'bandwidth': '64000000000 B/s', 'latency': '2.5e-07 s', 'type': 'nvlink'}]
    """
    ranks = {gpu: i for i, gpu in enumerate(topo.gpus)}
    nodes = []
    for node, data in topo.graph.nodes(data=True):
        entry = {"id": node, "kind": data["kind"]}
        entry.update({key: data[key] for key in _NODE_KEYS if data.get(key) is not None})
        if "net_latency" in entry:
            entry["net_latency"] = f"{_exact(entry['net_latency'])} s"
        if node in ranks:
            entry["rank"] = ranks[node]
        nodes.append(entry)
    links = []
    for u, v, data in topo.graph.edges(data=True):
        kind = topo.link_type[topo.link_index[(u, v)]]
        link = {"a": u, "b": v, "bandwidth": f"{_exact(data['bandwidth'])} B/s",
                "latency": f"{_exact(data['latency'])} s", "type": LINK_NAMES[kind]}
        back = topo.graph.edges[v, u] if topo.graph.has_edge(v, u) else None
        if back is not None and (back["bandwidth"], back["latency"]) == (data["bandwidth"], data["latency"]) \
                and topo.link_type[topo.link_index[(v, u)]] == kind:
            if topo.node_index[u] < topo.node_index[v]:
                links.append(link)
            continue
        links.append({**link, "directed": True})
    # a routing the file's default gives, or that no route chooses by, is left out: written, a run would say so
    routing = topo.routing if topo.routing != default_routing(topo) and routes_choose(topo) else None
    spec = {"name": topo.name, "description": topo.description, "routing": routing,
            "calibration": str(Path(topo.calibration).resolve()) if topo.calibration else None,
            "nodes": nodes, "links": links}
    return {key: value for key, value in spec.items() if value not in ("", None, [])}  # (a lone GPU has no links)


def _exact(value: float) -> str:
    """The shortest text that reads back as ``value`` (``1e-06``, ``64000000000``)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


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
    """``topo`` as ``yaml`` (``topology_as_dict``), ``graphml``, ``gexf`` or ``json`` (node-link) text."""
    if fmt == "yaml":
        return yaml.safe_dump(topology_as_dict(topo), sort_keys=False, width=200, default_flow_style=None)
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
    return write_text(path, export_text(topo, fmt))
