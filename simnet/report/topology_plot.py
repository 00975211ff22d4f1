"""A picture of a topology: GPUs at the bottom grouped by host and rack, the fabric above.

Layers are hop distance from the GPUs (GPUs, then NICs/NVSwitches, then ToRs, then spines,
then gateways). GPUs keep rank order left to right; every other node sits above the mean
position of the nodes below it that it connects to. Link colour and width encode
bandwidth (log scale), with a colour bar in Gb/s.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np

from simnet.report.figures import pyplot
from simnet.topology.model import Topology

__all__ = ["layout", "draw_topology"]

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
    """Draw ``topo`` to a PNG (or any format matplotlib knows from the suffix)."""
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
    ax.legend(loc="upper left", fontsize=8, frameon=False, title="node kind (count)", title_fontsize=8)
    ax.set_yticks([])
    ax.set_xticks([])
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_ylim(-1.3, max(p[1] for p in pos.values()) + 0.6)
    ax.set_title(title or f"{topo.name}: {len(topo.gpus)} GPUs (labels are ranks), "
                 f"{len(undirected)} links", fontsize=11)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


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
    colourbar.ax.yaxis.set_minor_formatter(ScalarFormatter())
