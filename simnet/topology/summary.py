"""Facts about a topology a person checks before trusting it: counts, bandwidths, worst path."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from simnet.topology.graph import PS_PER_SECOND, Topology
from simnet.topology.hardware import NET

__all__ = ["TopologySummary", "summarize", "worst_path", "EXACT_WORST_PATH_GPUS", "SAMPLED_SOURCES"]

EXACT_WORST_PATH_GPUS = 256
"""Up to this many GPUs the worst path is searched from every GPU; above, from a sample."""

SAMPLED_SOURCES = 16
"""Above ``EXACT_WORST_PATH_GPUS``: search from one GPU per host, at most this many hosts
spread evenly over the rank order (so over racks and regions); one search costs a
shortest-path tree of the whole graph."""


@dataclass(frozen=True)
class TopologySummary:
    """Counts and extremes of a topology; bandwidths in bytes/s, latency in seconds."""

    name: str
    gpus: int
    hosts: int
    nvlink_domains: int  # multi-host NVLink domains (NVL72 racks), which NCCL counts as one node each
    racks: int
    regions: int
    kinds: dict[str, int]
    links: int
    directed_links: int
    min_bandwidth: float | None  # None: no links (one GPU)
    max_bandwidth: float | None
    worst_latency: float
    worst_hops: int
    worst_pair: tuple[str, str]
    worst_exact: bool


def _farthest_gpu(topo: Topology, src: str, gpus: set[str]) -> tuple[int, int, str]:
    """(latency ps, hops, gpu) of the GPU farthest from src along shortest routes."""
    cost, _ = topo.shortest_paths(src)
    return max(((lat, hops, node) for node, (lat, hops) in cost.items() if node in gpus and node != src),
               default=(0, 0, src))


def worst_path(topo: Topology) -> tuple[float, int, tuple[str, str], bool]:
    """Largest GPU-to-GPU route latency (s), its hops, the pair, and whether it is exact
    (searched from every GPU) or sampled (see ``SAMPLED_SOURCES``)."""
    exact = len(topo.gpus) <= EXACT_WORST_PATH_GPUS
    sources = topo.gpus if exact else list({topo.label(g, "host"): g for g in topo.gpus}.values())
    if not exact and len(sources) > SAMPLED_SOURCES:
        sources = [sources[i * len(sources) // SAMPLED_SOURCES] for i in range(SAMPLED_SOURCES)]
    gpus = set(topo.gpus)
    latency, hops, pair = 0, 0, (topo.gpus[0], topo.gpus[0])
    for src in sources:
        lat, h, dst = _farthest_gpu(topo, src, gpus)
        if (lat, h) > (latency, hops):
            latency, hops, pair = lat, h, (src, dst)
    return latency / PS_PER_SECOND, hops, pair, exact


def summarize(topo: Topology) -> TopologySummary:
    """Everything ``simnet topo check`` prints."""
    kinds = Counter(kind for _, kind in topo.graph.nodes(data="kind"))
    undirected = {frozenset(edge) for edge in topo.links}
    latency, hops, pair, exact = worst_path(topo)
    return TopologySummary(
        name=topo.name,
        gpus=len(topo.gpus),
        hosts=len(topo.groups("host")),
        nvlink_domains=len(set(topo.groups("node")) - set(topo.groups("host"))),
        racks=len({topo.graph.nodes[g].get("rack") for g in topo.gpus} - {None}),
        regions=len({topo.graph.nodes[g].get("region") for g in topo.gpus} - {None}),
        kinds=dict(kinds),
        links=len(undirected),
        directed_links=len(topo.links),
        min_bandwidth=float(topo.capacity.min()) if len(topo.links) else None,
        max_bandwidth=float(topo.capacity.max()) if len(topo.links) else None,
        worst_latency=latency,
        worst_hops=hops,
        worst_pair=pair,
        worst_exact=exact,
    )


def network_switches_inside_a_host(topo: Topology) -> list[tuple[str, str]]:
    """(switch, host) for each switch that only GPUs of one host attach to and whose links
    to them are network links (``Topology.link_type``): an NVSwitch written with no host
    label, no ``nvls`` and no link ``type`` is read so (``Topology.inferred_type``), and the
    host's GPUs then talk at the network's pace (fuzz round az, F10: 1.7-6.8x slower)."""
    found = []
    for switch in topo.graph.nodes:
        if topo.kind(switch) != "switch":
            continue
        near = set(topo.graph.successors(switch)) | set(topo.graph.predecessors(switch))
        hosts = {topo.graph.nodes[n].get("host") for n in near}
        if not near or any(topo.kind(n) != "gpu" for n in near) or len(hosts) != 1 or None in hosts:
            continue
        ends = [(n, switch) for n in near if (n, switch) in topo.link_index]
        if ends and all(topo.link_type[topo.link_index[end]] == NET for end in ends):
            found.append((switch, hosts.pop()))
    return found

