"""rich tables for topologies (and, later, results)."""

from __future__ import annotations

from collections import Counter

from rich.table import Table

from simnet import units
from simnet.topology.model import PS_PER_SECOND, Topology

__all__ = ["ranks_table", "link_classes_table"]


def ranks_table(topo: Topology, limit: int = 64) -> Table:
    """One row per GPU in rank order (first ``limit``), with its grouping labels."""
    table = Table(title=f"{topo.name}: {len(topo.gpus)} GPUs (ranks)")
    for column in ("rank", "gpu", "host", "rack", "region"):
        table.add_column(column, justify="right" if column == "rank" else "left")
    for rank, gpu in enumerate(topo.gpus[:limit]):
        data = topo.graph.nodes[gpu]
        table.add_row(str(rank), gpu, *(data.get(k) or "-" for k in ("host", "rack", "region")))
    if len(topo.gpus) > limit:
        table.add_row("...", f"{len(topo.gpus) - limit} more", "", "", "")
    return table


def link_classes_table(topo: Topology) -> Table:
    """Links grouped by (kind -> kind, bandwidth, latency), with how many of each."""
    classes = Counter(
        (topo.kind(u), topo.kind(v), float(topo.capacity[i]), int(topo.latency_ps[i]))
        for i, (u, v) in enumerate(topo.links))
    table = Table(title=f"{topo.name}: {len(topo.links)} directed links")
    for column in ("from", "to", "bandwidth", "GB/s", "latency", "count"):
        table.add_column(column, justify="right" if column in ("GB/s", "count") else "left")
    for (a, b, bandwidth, latency), count in sorted(classes.items(), key=lambda kv: (-kv[0][2], kv[0][:2])):
        table.add_row(a, b, units.format_bandwidth(bandwidth), f"{bandwidth / 1e9:.4g}",
                      units.format_time(latency / PS_PER_SECOND), str(count))
    return table
