"""A picture of a topology: GPUs at the bottom grouped by host and rack, the fabric above.

Layers are hop distance from the GPUs (GPUs, then NICs/NVSwitches, then ToRs, then spines,
then gateways). GPUs keep rank order left to right; every other node sits above the mean
position of the nodes below it that it connects to. Link colour and width encode
bandwidth (log scale), with a colour bar in Gb/s.

A large fabric (more than ``SUMMARY_NODES`` nodes) is drawn summarised: the host of rank 0
expanded (its GPUs and NICs folded by role when it has more than 16 GPUs), the other hosts
of its rack one box, the first racks one box each and the rest one box, and switches of
one role (``spine7``, ``pod3-spine7`` -> ``spine#``, ``pod#-spine#``) one node with their
count; a line between two groups stands for all their links, labelled with how many, its
colour and width the mean bandwidth of one of them.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np

from simnet.report.figures import pyplot, save
from simnet.topology.graph import Topology

__all__ = ["layout", "draw_topology", "summarise", "SUMMARY_NODES"]

SUMMARY_NODES = 400
"""Topologies with more nodes than this are drawn summarised (see the module docstring)."""

_MAX_RACKS = 8
"""Racks drawn one box each in a summary (besides rank 0's); the rest share one box."""

_MAX_EXPANDED = 16
"""Rank 0's host shows its GPUs one by one up to this many; beyond, one node per role."""

_KIND_STYLE = {
    "gpu": ("#76b900", "s"),
    "ps": ("#d62728", "D"),
    "nic": ("#1f77b4", "o"),
    "switch": ("#555555", "o"),
    "host": ("#9467bd", "o"),
}


def layout(topo: Topology) -> dict[str, tuple[float, float]]:
    """(x, y) per node: y is the hop layer from the GPUs, x spreads each layer evenly;
    parameter servers sit on top, above the switches they attach to."""
    undirected = topo.graph.to_undirected(as_view=True)
    endpoints = topo.gpus + topo.parameter_servers
    layer = nx.multi_source_dijkstra_path_length(undirected, endpoints, weight=lambda *_: 1)
    for node in topo.nodes:  # unreachable leftovers go to the top
        layer.setdefault(node, max(layer.values(), default=0) + 1)
    x: dict[str, float] = {}
    gap = 0
    previous_host = None
    for i, gpu in enumerate(topo.gpus):
        host = topo.label(gpu, "host")
        if previous_host is not None and host != previous_host:
            gap += 0.6
        previous_host = host
        x[gpu] = i + gap
    width = max(x.values(), default=0.0)
    for depth in range(0, max(layer.values()) + 1):
        members = [n for n in topo.nodes if layer[n] == depth and n not in x]
        if not members:
            continue
        centre = {}
        for node in members:
            below = [x[m] for m in undirected[node] if m in x]
            centre[node] = float(np.mean(below)) if below else width / 2
        members.sort(key=lambda n: (centre[n], topo.node_index[n]))
        min_gap = min(1.5, max(width, 1.0) / len(members))
        for node, pos in zip(members, _spread(np.array([centre[n] for n in members]), min_gap)):
            x[node] = float(pos)
    top = max(layer.values()) + 1
    for node in topo.parameter_servers:  # servers above the fabric, over the switches they hang off
        layer[node] = top
        x[node] = float(np.mean([x[m] for m in undirected[node]])) if len(undirected[node]) else width / 2
    return {n: (x[n], float(layer[n])) for n in topo.nodes}


def _spread(wanted: np.ndarray, min_gap: float) -> np.ndarray:
    """Positions as close to ``wanted`` (sorted) as possible, at least ``min_gap`` apart."""
    pos = wanted.copy()
    for i in range(1, len(pos)):
        pos[i] = max(pos[i], pos[i - 1] + min_gap)
    return pos - (pos.mean() - wanted.mean())


def draw_topology(topo: Topology, path: str | Path, title: str | None = None) -> Path:
    """Draw ``topo`` to a PNG (or any format matplotlib knows from the suffix); summarised
    when it has more than ``SUMMARY_NODES`` nodes."""
    if len(topo.nodes) > SUMMARY_NODES:
        return _draw_summary(topo, summarise(topo), path, title)
    plt = pyplot()
    from matplotlib.patches import FancyBboxPatch

    pos = layout(topo)
    layer_sizes = Counter(y for _, y in pos.values())
    rank = {gpu: i for i, gpu in enumerate(topo.gpus)}
    many = len(topo.gpus) > 64
    fig_width = min(max(8.0, len(topo.gpus) * 0.35), 40.0)
    fig, ax = plt.subplots(figsize=(fig_width, 6.5))
    xs = np.array([p[0] for p in pos.values()])
    ax.set_xlim(xs.min() - 1.5, xs.max() + 1.5)

    # host and rack boxes around the GPUs
    for level, pad, colour in (("rack", 0.55, "#fdf1dc"), ("host", 0.35, "#e8f4e0")):
        groups = topo.groups(level)
        if len(groups) == len(topo.gpus) and level == "host" and len(topo.gpus) > 1:
            continue  # one GPU per host: boxes add nothing
        for label, members in groups.items():
            if label in members:
                continue  # no label at this level
            lo = min(pos[m][0] for m in members) - pad
            hi = max(pos[m][0] for m in members) + pad
            height = 0.5 if level == "host" else 0.8
            ax.add_patch(FancyBboxPatch((lo, -height / 2 - (0.15 if level == "rack" else 0)), hi - lo, height,
                                        boxstyle="round,pad=0.02", facecolor=colour, edgecolor="#999999",
                                        linewidth=0.6, zorder=0))
            if not many or level == "rack":
                ax.text((lo + hi) / 2, -height / 2 - (0.3 if level == "rack" else 0.1), label,
                        ha="center", va="top", fontsize=7 if level == "host" else 9,
                        color="#444444")

    undirected = {}
    for (u, v), bandwidth in zip(topo.links, topo.capacity):
        key = (u, v) if topo.node_index[u] < topo.node_index[v] else (v, u)
        undirected[key] = max(undirected.get(key, 0.0), float(bandwidth))
    if undirected:  # one GPU alone has no links to draw
        _draw_links(fig, ax, pos, undirected)

    for kind, (colour, marker) in _KIND_STYLE.items():
        members = [n for n in topo.nodes if topo.kind(n) == kind]
        if not members:
            continue
        ax.scatter([pos[n][0] for n in members], [pos[n][1] for n in members], s=18 if many else 60,
                   c=colour, marker=marker, zorder=2, edgecolors="white", linewidths=0.5,
                   label=f"{kind} ({len(members)})")
        for n in members:
            crowded = layer_sizes[pos[n][1]] > 16
            if kind == "gpu" and not many:
                ax.annotate(str(rank[n]), pos[n], xytext=(0, -3), textcoords="offset points",
                            ha="center", va="top", fontsize=6, zorder=3)
            elif kind != "gpu" and not crowded:
                ax.annotate(n, pos[n], xytext=(0, 7), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7, zorder=3)
    ax.set_ylim(-1.3, max(p[1] for p in pos.values()) + 0.6)
    return _save(fig, ax, title or f"{topo.name}: {len(topo.gpus)} GPUs (labels are ranks), "
                 f"{len(undirected)} links", path)


def _save(fig, ax, title: str, path: str | Path, legend: str = "node kind (count)") -> Path:
    """Legend, bare axes and title; write the figure to ``path`` and close it."""
    ax.legend(loc="upper left", fontsize=8, frameon=False, title=legend, title_fontsize=8)
    ax.set_yticks([])
    ax.set_xticks([])
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title(title, fontsize=11)
    path = Path(path)
    save(pyplot(), fig, path, dpi=130)
    return path


def _role(node: str) -> str:
    """A switch's role: its id with every number replaced by ``#`` (``pod3-spine7`` -> ``pod#-spine#``)."""
    return re.sub(r"\d+", "#", node)


def summarise(topo: Topology) -> nx.Graph:
    """The topology condensed into groups, for drawing large fabrics.

    Nodes of the result are group names with attributes ``kind`` (a node kind, or
    ``hosts`` / ``racks`` for boxes of many), ``members`` (topology nodes in the group)
    and ``gpus`` (GPUs among them); edges carry ``links`` (how many links join the two
    groups) and ``bandwidth`` (their summed capacity one way, B/s). Links inside a group
    are not drawn.

    >>> from simnet import load_topology
    >>> groups = summarise(load_topology("topologies/superpod_h100_16su.yaml"))
    >>> [(n, d["gpus"]) for n, d in groups.nodes(data=True) if d["kind"] in ("hosts", "racks")][:3]
    [('31 more hosts', 248), ('su1', 256), ('su2', 256)]
    >>> groups.edges["pod#-spine# x128", "core#-# x64"]["links"]  # each spine to its 2 cores
    256
    """
    first = topo.gpus[0]
    host, rack = topo.graph.nodes[first].get("host"), topo.graph.nodes[first].get("rack")
    rackless = {topo.graph.nodes[g].get("host") for g in topo.gpus if topo.graph.nodes[g].get("rack") is None}
    rackless -= {None, host}
    other_racks = [r for r in dict.fromkeys(topo.graph.nodes[g].get("rack") for g in topo.gpus)
                   if r not in (rack, None)]
    boxed = set(other_racks[:_MAX_RACKS])
    neighbours = {topo.graph.nodes[g].get("host") for g in topo.groups("rack")[topo.label(first, "rack")]} - {host}
    unlabelled = [g for g in topo.gpus if not _labelled(topo, g)]
    roles = Counter(_role(n) for n in topo.nodes if not _labelled(topo, n))
    own = Counter(_role(n) for n in topo.nodes if topo.graph.nodes[n].get("host") == host)
    own = own if host is not None and len(topo.groups("host")[host]) > _MAX_EXPANDED else Counter()
    group: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for node, data in topo.graph.nodes(data=True):
        if data["kind"] == "ps":  # parameter servers are what a picture of a star is about
            name, kind = node, "ps"
        elif data.get("host") is not None and data["host"] == host:
            name, kind = node if own[_role(node)] <= 1 else \
                f"{_role(node)} x{own[_role(node)]}", data["kind"]
        elif data.get("rack") is not None and data["rack"] == rack and data.get("host") is not None:
            name, kind = f"{len(neighbours)} more hosts", "hosts"
        elif data.get("rack") is not None and data["rack"] != rack:
            name = data["rack"] if data["rack"] in boxed else f"{len(other_racks) - len(boxed)} more racks"
            kind = "racks"
        elif data.get("host") is not None:  # a host outside any rack
            name, kind = (data["host"] if len(rackless) <= _MAX_RACKS else f"{len(rackless)} more hosts"), "hosts"
        elif data["kind"] == "gpu" and node != first and len(unlabelled) > _MAX_EXPANDED:
            name, kind = f"{len(unlabelled) - 1} more GPUs", "hosts"
        elif roles[_role(node)] > 1 and not _labelled(topo, node):
            name, kind = f"{_role(node)} x{roles[_role(node)]}", data["kind"]
        else:
            name, kind = node, data["kind"]
        group[node] = name
        kinds[name] = kind
    summary = nx.Graph()
    for name, kind in kinds.items():
        summary.add_node(name, kind=kind, members=0, gpus=0)
    for node, name in group.items():
        summary.nodes[name]["members"] += 1
        summary.nodes[name]["gpus"] += topo.kind(node) == "gpu"
    for (u, v), bandwidth in zip(topo.links, topo.capacity):
        a, b = group[u], group[v]
        if a == b or topo.node_index[u] > topo.node_index[v] and topo.graph.has_edge(v, u):
            continue  # inside a group, or the reverse direction of a link already counted
        if summary.has_edge(a, b):
            summary.edges[a, b]["links"] += 1
            summary.edges[a, b]["bandwidth"] += float(bandwidth)
        else:
            summary.add_edge(a, b, links=1, bandwidth=float(bandwidth))
    return summary


def _labelled(topo: Topology, node: str) -> bool:
    data = topo.graph.nodes[node]
    return data.get("host") is not None or data.get("rack") is not None


def _draw_summary(topo: Topology, summary: nx.Graph, path: str | Path, title: str | None) -> Path:
    """Draw a ``summarise`` graph: groups holding GPUs at the bottom, the fabric above."""
    plt = pyplot()
    host = topo.label(topo.gpus[0], "host")
    bottom = [n for n, gpus in summary.nodes(data="gpus") if gpus]
    boxes = [n for n in bottom if summary.nodes[n]["kind"] in ("hosts", "racks")]
    expanded = [n for n in bottom if n not in boxes]  # layers count hops from rank 0's own GPUs
    layer = nx.multi_source_dijkstra_path_length(summary, expanded or bottom, weight=lambda *_: 1)
    layer.update({n: 0 for n in boxes})
    for node in summary:
        layer.setdefault(node, max(layer.values()) + 1)
    x: dict[str, float] = {}
    for n in bottom:  # boxes carry two lines of label: give them more room
        x[n] = (x[bottom[bottom.index(n) - 1]] + (1.8 if n in boxes else 1.0)) if x else 0.0
    width = max(max(x.values()), 1.0)
    for depth in range(1, max(layer.values()) + 1):
        members = [n for n in summary if layer[n] == depth]
        centre = {n: float(np.mean([x[m] for m in summary[n] if m in x] or [width / 2])) for n in members}
        members.sort(key=lambda n: (centre[n], n))
        gap = min(1.5, width / len(members))
        for node, pos in zip(members, _spread(np.array([centre[n] for n in members]), gap)):
            x[node] = float(pos)
    pos = {n: (x[n], float(layer[n])) for n in summary}
    fig, ax = plt.subplots(figsize=(min(max(10.0, width * 0.45), 40.0), 7.0))
    ax.set_xlim(min(x.values()) - 1.5, max(x.values()) + 1.5)
    if summary.number_of_edges():
        _draw_links(fig, ax, pos, {(u, v): d["bandwidth"] / d["links"] for u, v, d in summary.edges(data=True)})
    fans = {n: {summary.edges[n, m]["links"] for m in summary[n] if pos[m][1] > pos[n][1]} for n in summary}
    fans = {n: counts.pop() for n, counts in fans.items()
            if len(counts) == 1 and sum(pos[m][1] > pos[n][1] for m in summary[n]) > 3}
    for (u, v), links in nx.get_edge_attributes(summary, "links").items():
        (x0, y0), (x1, y1) = lower, _ = sorted([pos[u], pos[v]], key=lambda p: p[1])
        if links > 1 and (u if pos[u] == lower else v) not in fans:
            ax.annotate(f"x{links}", (x0 + 0.3 * (x1 - x0), y0 + 0.3 * (y1 - y0)), fontsize=6, color="#333333",
                        ha="center", va="center", zorder=3,
                        bbox=dict(boxstyle="round,pad=0.1", facecolor="white", edgecolor="none", alpha=0.7))
    style = dict(_KIND_STYLE, hosts=("#b5d99c", "s"), racks=("#f2c078", "s"))
    for kind, (colour, marker) in style.items():
        members = [n for n, k in summary.nodes(data="kind") if k == kind]
        if not members:
            continue
        total = sum(summary.nodes[n]["members"] for n in members)  # topology nodes they stand for
        big = kind in ("hosts", "racks")
        ax.scatter([pos[n][0] for n in members], [pos[n][1] for n in members], s=160 if big else 60, c=colour,
                   marker=marker, zorder=2, edgecolors="#555555" if big else "white", linewidths=0.5,
                   label=f"{kind} ({total})")
        for n in members:
            text = f"{n}\n{summary.nodes[n]['gpus']} GPUs" if big else n.removeprefix(f"{host}-")
            if n in fans and fans[n] > 1:
                text += f"\nx{fans[n]} per line up"
            if kind != "gpu" or n in fans or summary.nodes[n]["members"] > 1:
                ax.annotate(text, pos[n], xytext=(0, 9 if not big else -12), textcoords="offset points",
                            ha="left" if not big else "center", va="bottom" if not big else "top", fontsize=6,
                            zorder=3, rotation=30 if not big else 0)
    ax.set_ylim(-1.3, max(p[1] for p in pos.values()) + 0.6)
    return _save(fig, ax, title or f"{topo.name}: {len(topo.gpus):,} GPUs, {len(topo.nodes):,} nodes, "
                 f"summarised around rank 0 ({topo.gpus[0]})", path,
                 legend="node kind (topology nodes drawn or folded in)")


def _draw_links(fig, ax, pos: dict, undirected: dict) -> None:
    """Links coloured and sized by bandwidth (log scale), with a colour bar in Gb/s."""
    from matplotlib.collections import LineCollection
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import NullLocator, ScalarFormatter

    segments = [(pos[u], pos[v]) for u, v in undirected]
    bandwidth = np.array(list(undirected.values())) * 8 / 1e9  # Gb/s
    norm = LogNorm(vmin=bandwidth.min(), vmax=max(bandwidth.max(), bandwidth.min() * 1.01))
    widths = 0.6 + 2.4 * (np.log(bandwidth) - np.log(norm.vmin)) / max(np.log(norm.vmax / norm.vmin), 1e-9)
    lines = LineCollection(segments, array=bandwidth, cmap="viridis", norm=norm, linewidths=widths, zorder=1)
    ax.add_collection(lines)
    colourbar = fig.colorbar(lines, ax=ax, pad=0.01, fraction=0.03)
    colourbar.set_label("link bandwidth per direction (Gb/s)")
    if bandwidth.min() == bandwidth.max():  # one bandwidth: one tick, no log-scale minor ticks
        colourbar.set_ticks([bandwidth.min()])
        colourbar.ax.yaxis.set_minor_locator(NullLocator())
    colourbar.ax.yaxis.set_major_formatter(ScalarFormatter())
    if norm.vmax / norm.vmin < 20:  # a narrow range has few major ticks: label the minor ones too
        colourbar.ax.yaxis.set_minor_formatter(ScalarFormatter())
