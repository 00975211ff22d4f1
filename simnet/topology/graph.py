"""``Topology``: the networkx graph of a cluster plus ranks, grouping labels and routes.

Edges are directed: a full-duplex link is two edges, each with ``bandwidth`` (bytes/s,
that direction's capacity) and ``latency`` (seconds, one way). Every directed link also
has a dense index (``link_index``) so the network can keep per-link state in numpy
arrays (``capacity``, ``latency_ps``).

Routing: shortest path by total latency, ties broken by hop count, then among equal-cost
next hops (``routing``): ``ecmp`` (the default, as Ethernet switches hash) picks one by a
stable hash of ``(src, dst, flow)``, so a connection always takes the same path and
results repeat; ``by_destination`` (as InfiniBand's subnet manager routes a fat tree:
OpenSM's fat-tree engine, ``doc/current-routing.txt``, which makes "shift" patterns
congestion-free) picks by the destination alone, the digits of its number (its port's
place in leaf order, like a LID) choosing the way down, D-mod-k: every connection to one
destination takes the same path, and destinations under one leaf spread over the spines.
Only switches, NICs and host bridges forward traffic; GPUs and parameter servers are
endpoints (a path never goes *through* a GPU).

>>> from simnet.topology.loader import topology_from_dict
>>> topo = topology_from_dict({"name": "demo", "generate": {"kind": "nvswitch", "gpus": 4}})
>>> topo.route("gpu0", "gpu3")
[('gpu0', 'nvswitch'), ('nvswitch', 'gpu3')]
>>> topo.path_latency("gpu0", "gpu3")
1e-06
"""

from __future__ import annotations

import copy
import heapq
import zlib
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

import networkx as nx
import numpy as np

from simnet.topology.hardware import LINK_TYPES, NET, NVLINK, PCIE

__all__ = ["Topology", "FORWARDING_KINDS", "GROUP_LEVELS", "PS_PER_SECOND"]

T = TypeVar("T")

FORWARDING_KINDS = frozenset({"switch", "nic", "host"})
GROUP_LEVELS = ("host", "rack", "region")
PS_PER_SECOND = 10**12
"""Latencies and simulated times are kept as integer picoseconds so equal sums are equal."""
HOP_BITS = 20
HOP_MASK = (1 << HOP_BITS) - 1  # routes are far shorter than a million hops


@dataclass
class RouteCache:
    """Routes already computed, keyed by endpoints, and other facts of the network
    (``Topology.derived``): pure functions of a frozen graph, so topologies that share the
    graph (``Topology.subset``) share them safely."""

    routes: dict = field(default_factory=dict)
    dags: dict = field(default_factory=dict)
    facts: dict = field(default_factory=dict)


@dataclass(eq=False)
class Topology:
    """A loaded topology. ``gpus`` lists the ranks in order (rank i is ``gpus[i]``).

    The graph is frozen (``networkx.freeze``): a topology never changes once built, which
    is what lets views of it with other ranks share its arrays and route cache.
    """

    name: str
    graph: nx.DiGraph
    gpus: list[str]
    description: str = ""
    source: str | None = None
    calibration: str | None = None  # path of the calibration profile the topology names
    routing: str = "ecmp"  # how a route picks among equal-cost next hops (see ``route_indices``)
    cache: RouteCache = field(default_factory=RouteCache, repr=False)

    def __post_init__(self) -> None:
        nx.freeze(self.graph)
        self.nodes: list[str] = list(self.graph.nodes)
        self.node_index = {n: i for i, n in enumerate(self.nodes)}
        self.links: list[tuple[str, str]] = list(self.graph.edges)
        self.link_index = {edge: i for i, edge in enumerate(self.links)}
        self.capacity = np.array([self.graph.edges[e]["bandwidth"] for e in self.links], dtype=float)
        self.latency_ps = np.array([round(self.graph.edges[e]["latency"] * PS_PER_SECOND) for e in self.links],
                                   dtype=np.int64)
        self.reverse = np.array([self.link_index.get((v, u), -1) for u, v in self.links], dtype=np.int64)
        self.link_type = np.array([self._type_of(u, v) for u, v in self.links], dtype=np.int8)
        forwards = {n for n, kind in self.graph.nodes(data="kind") if kind in FORWARDING_KINDS}
        self._adjacency = {
            u: sorted((self.node_index[v], v, int(self.latency_ps[self.link_index[(u, v)]])) for v in self.graph[u])
            for u in self.nodes
        }
        self._forwards = forwards
        self.down: frozenset[int] = frozenset()  # directed link indices that carry nothing (see ``without``)
        self._index_routes()

    def _index_routes(self) -> None:
        """Dead ends and onward hops of the links that are up (what the route search reads)."""
        self._dead_ends = self._find_dead_ends()
        self._core = frozenset(n for n in self._forwards if n not in self._dead_ends)
        up = {(u, v) for u, hops in self._adjacency.items() for _, v, _ in hops}
        # a link up one way only can make a "dead end" (one way out) a way between core
        # switches, which the search through the core would not see
        self._two_way = all((v, u) in up for u, v in up)
        self._onward = {u: [hop for hop in hops if not self._dead_end_from(u, hop[1])]
                        for u, hops in self._adjacency.items()}

    def _find_dead_ends(self) -> dict[str, tuple[str | None, frozenset[str]]]:
        """Forwarding nodes with at most one forwarding neighbour (a NIC between its GPU and
        its leaf, an NVSwitch among GPUs): ``node -> (that neighbour or None, the endpoints
        behind it)``. Entered from that neighbour, such a node leads only to its endpoints,
        so a search for another destination need not go in (what keeps routing on a
        16,384-GPU fabric to its ~1,300 switches instead of every NIC)."""
        dead_ends = {}
        for node in self._forwards:
            ahead = {v for _, v, _ in self._adjacency[node]}
            onward = [v for v in ahead if v in self._forwards]
            if len(onward) <= 1:
                dead_ends[node] = (onward[0] if onward else None, frozenset(ahead - set(onward)))
        return dead_ends

    def _dead_end_from(self, u: str, v: str) -> bool:
        """Entered from ``u``, ``v`` leads only to its own endpoints."""
        return v in self._dead_ends and self._dead_ends[v][0] in (u, None)

    def _type_of(self, u: str, v: str) -> int:
        """The link's class (``hardware.NVLINK``, ``PCIE`` or ``NET``): its ``type`` when the
        file gives one, else inferred from its ends (see ``docs/topologies.md``)."""
        given = self.graph.edges[u, v].get("type")
        if given is not None:
            return LINK_TYPES.index(given)
        kinds = {self.kind(u), self.kind(v)}
        if "host" in kinds or kinds == {"gpu", "nic"}:
            return PCIE
        if kinds == {"gpu"}:
            return NVLINK
        if kinds == {"gpu", "switch"}:
            switch = u if self.kind(u) == "switch" else v
            if self._is_gpu_fabric(switch):
                return NVLINK
            return PCIE if self._in_host(switch) else NET
        if kinds == {"switch"} and self._in_host(u) and self._in_host(v):
            return PCIE
        return NET

    def _in_host(self, switch: str) -> bool:
        """A switch inside a server: it has a host label or hangs off a host bridge."""
        if self.graph.nodes[switch].get("host") is not None:
            return True
        return any(self.kind(n) == "host" for n in self.graph.successors(switch))

    def _is_gpu_fabric(self, switch: str) -> bool:
        """A switch inside one host that only GPUs attach to (an NVSwitch), or one marked nvls."""
        data = self.graph.nodes[switch]
        if data.get("nvls"):
            return True
        neighbours = set(self.graph.successors(switch)) | set(self.graph.predecessors(switch))
        return data.get("host") is not None and all(self.kind(n) == "gpu" for n in neighbours)

    # -------------------------------------------------------------- hardware
    def gpu_model(self, gpu: str) -> str | None:
        """The GPU generation of a GPU node (``a100``, ``h100``, ...), if the topology says."""
        return self.graph.nodes[gpu].get("gpu")

    def transport(self, nic: str) -> str:
        """The transport a NIC speaks (``ib`` unless the topology says otherwise)."""
        return self.graph.nodes[nic].get("transport") or "ib"

    def rails(self, gpus: list[str]) -> list[tuple[str, str]]:
        """The network rails of one host's ``gpus``: ``(nic, gpu)`` pairs, one per NIC the
        GPUs reach over PCIe without the network, with the GPU closest to it, in NIC order.

        Channel c of a multi-node collective enters and leaves the host through rail
        ``c mod len(rails)``; an empty list means the host has no NIC of its own.
        """
        rails = []
        members = set(gpus)
        for nic in self._nics_near(gpus):
            inside = self.derived("nodes_of_host", _nodes_of_host).get(self.graph.nodes[nic].get("host"), set()) \
                | members | {nic}
            cost, _ = self.shortest_paths(nic, within=inside)  # a rail stays in its host: search there first
            if not members & cost.keys():  # hosts labelled only in part
                cost, _ = self.shortest_paths(nic)
            near = min((c, self.node_index[g], g) for g, c in cost.items() if g in members)
            rails.append((nic, near[2]))
        return rails

    def _nics_near(self, gpus: list[str]) -> list[str]:
        """NICs attached to these GPUs by PCIe (directly or through PCIe switches / host bridges)."""
        found: dict[str, None] = {}
        seen = set(gpus)
        frontier = list(gpus)
        while frontier:
            node = frontier.pop()
            for nxt in self.graph.successors(node):
                if nxt in seen or self.link_type[self.link_index[(node, nxt)]] != PCIE:
                    continue
                seen.add(nxt)
                if self.kind(nxt) == "nic":
                    found[nxt] = None
                elif self.kind(nxt) in ("switch", "host"):
                    frontier.append(nxt)
        return sorted(found, key=self.node_index.__getitem__)

    # ----------------------------------------------------------------- labels
    def kind(self, node: str) -> str:
        """The node's kind: gpu, switch, nic, host or ps."""
        return self.graph.nodes[node]["kind"]

    def label(self, node: str, level: str) -> str:
        """The node's grouping label at ``level`` (host, rack, region); never empty.

        A node without that label forms a group of its own, named after it.
        """
        if level not in GROUP_LEVELS:
            raise ValueError(f"group level must be one of {', '.join(GROUP_LEVELS)}, not {level!r}")
        return self.graph.nodes[node].get(level) or node

    def groups(self, level: str, gpus: list[str] | None = None) -> dict[str, list[str]]:
        """GPUs grouped by their label at ``level``, groups and members in rank order."""
        result: dict[str, list[str]] = {}
        for gpu in self.gpus if gpus is None else gpus:
            result.setdefault(self.label(gpu, level), []).append(gpu)
        return result

    @cached_property
    def parameter_servers(self) -> list[str]:
        """Nodes of kind ``ps`` in file order."""
        return [n for n, kind in self.graph.nodes(data="kind") if kind == "ps"]

    # ---------------------------------------------------------------- routing
    def shortest_paths(self, src: str, stop: str | None = None, within: set[str] | None = None) -> tuple[dict, dict]:
        """Dijkstra from ``src`` on (latency ps, hops), forwarding only through switches/NICs.

        Returns ``(cost, preds)``: the (latency ps, hops) of every node settled and all its
        equal-cost predecessors. With ``stop`` the search ends once that node is settled
        and skips dead ends that cannot lead to it; with ``within`` it never leaves those
        nodes.
        """
        near_stop: set[str] = set()  # nodes with a dead end towards stop: they must look into it
        if stop is not None:
            entries = [stop] + [v for v in self.graph.predecessors(stop) if v in self._dead_ends]
            near_stop = {u for v in entries for u in self.graph.predecessors(v)}

        def hops_of(u: str) -> list:
            if u != src and u not in self._forwards:
                return []  # endpoints never forward
            if stop is None:
                hops = self._adjacency[u]
            elif u in near_stop:
                hops = [hop for hop in self._adjacency[u] if hop[1] == stop or not self._dead_end_from(u, hop[1])
                        or stop in self._dead_ends[hop[1]][1]]
            else:
                hops = self._onward[u]  # dead ends off u lead only to other endpoints
            return hops if within is None else [hop for hop in hops if hop[1] in within]

        return self._dijkstra({src: (0, 0)}, hops_of, stop)

    def _dijkstra(self, seeds: dict[str, tuple[int, int]], hops_of: Callable[[str], list],
                  stop: str | None = None) -> tuple[dict, dict]:
        """Dijkstra on (latency ps, hops) from ``seeds`` (node: its cost) along the links
        ``hops_of(node)`` lists (``_adjacency`` entries): ``(cost, preds)`` of every node
        settled (until ``stop``, if given) and all its equal-cost predecessors."""
        # a cost is one integer, latency << HOP_BITS | hops: compared as the (latency, hops) pair
        best = {node: lat << HOP_BITS | hops for node, (lat, hops) in seeds.items()}
        preds: dict[str, list[str]] = {node: [] for node in seeds}
        done: dict[str, int] = {}
        heap = [(cost, self.node_index[node], node) for node, cost in best.items()]
        heapq.heapify(heap)
        index = self.node_index
        while heap:
            cost, _, u = heapq.heappop(heap)
            if u in done:
                continue
            done[u] = cost
            if u == stop:
                break
            for _, v, link_lat in hops_of(u):
                reach = cost + (link_lat << HOP_BITS) + 1
                known = best.get(v)
                if known is None or reach < known:
                    best[v] = reach
                    preds[v] = [u]
                    heapq.heappush(heap, (reach, index[v], v))
                elif reach == known and u not in preds[v]:
                    preds[v].append(u)
        return {node: (cost >> HOP_BITS, cost & HOP_MASK) for node, cost in done.items()}, preds

    def _shortest_dag(self, src: str, dst: str) -> Mapping[str, list[str]]:
        """All equal-cost predecessors on shortest (latency, hops) paths from src to dst
        (of every node on those paths; maybe of others too)."""
        key = (src, dst)
        dags = self.cache.dags
        if key not in dags:
            dag = self._dag_through_core(src, dst)
            if dag is None:
                done, preds = self.shortest_paths(src, stop=dst)
                if dst not in done:
                    raise nx.NetworkXNoPath(f"no path from {src} to {dst}")
                dag = _ancestors(preds, dst)
            dags[key] = dag
        return dags[key]

    # The fabric's *core* is its forwarding nodes that are no dead end (on a rail-optimized
    # fabric, its leaf, spine and core switches). Everything else is an endpoint or a dead
    # end, which a path never crosses between two core nodes. An endpoint whose only way
    # into the core is one switch b (a GPU behind its NIC's leaf) reaches every core node at
    # its cost to b plus b's, by the same equal-cost predecessors: one search from b over
    # the core (kept) serves every source behind b, and two small searches finish the ends.
    def _is_core(self, node: str) -> bool:
        return node in self._core

    def _dag_through_core(self, src: str, dst: str) -> Mapping[str, list[str]] | None:
        """``_shortest_dag`` through the core (see above), or None when it does not apply:
        a link up one way only, an end in the core, a source with several ways in, or ends
        that meet outside it."""
        if not self._two_way or self._is_core(src) or self._is_core(dst):
            return None
        reached, pocket, exits = self._pocket(src)
        region, entries, sources = self._approach(dst)
        if len(exits) != 1 or src in sources or dst in reached or not region.isdisjoint(reached):
            return None
        (b, (b_lat, b_hops)), = exits.items()
        cost, core_preds = self._core_search(b)
        seeds = {t: (b_lat + cost[t][0], b_hops + cost[t][1]) for t in entries if t in cost}
        done, preds = self._dijkstra(
            seeds, lambda u: [hop for hop in self._adjacency[u] if hop[1] in region] if u in self._forwards else [],
            stop=dst)  # endpoints never forward; the seeds' own predecessors are in the core's search
        if dst not in done:
            raise nx.NetworkXNoPath(f"no path from {src} to {dst}")
        return ChainMap({n: p for n, p in preds.items() if n not in seeds}, pocket, core_preds)  # shared, not copied

    def _pocket(self, src: str) -> tuple[set[str], dict[str, list[str]], dict[str, tuple[int, int]]]:
        """(nodes reached from ``src`` outside the core, their equal-cost predecessors, the
        core nodes where paths enter the core with their cost): kept per source."""
        pockets = self.cache.facts.setdefault("pockets", {})
        if src not in pockets:
            done, preds = self._dijkstra(
                {src: (0, 0)},
                lambda u: self._adjacency[u] if u == src or (u in self._forwards and not self._is_core(u)) else [])
            exits = {u: c for u, c in done.items() if self._is_core(u)}  # the core is searched from its entry
            pockets[src] = (set(done) - exits.keys(), preds, exits)
        return pockets[src]

    def _approach(self, dst: str) -> tuple[set[str], set[str], set[str]]:
        """(``dst`` and the dead ends it is reached through from the core, the core nodes
        with a link into them, the endpoints with a link into them): kept per destination."""
        approaches = self.cache.facts.setdefault("approaches", {})
        if dst not in approaches:
            incoming = self.derived("incoming", _incoming)
            region, entries, sources = {dst}, set(), set()
            stack = [dst]
            while stack:
                for u in incoming.get(stack.pop(), ()):
                    if self._is_core(u):
                        entries.add(u)
                    elif u not in self._forwards:
                        sources.add(u)
                    elif u not in region:
                        region.add(u)
                        stack.append(u)
            approaches[dst] = (region, entries, sources)
        return approaches[dst]

    def _core_search(self, b: str) -> tuple[dict[str, tuple[int, int]], dict[str, list[str]]]:
        """Cost from core node ``b`` to every core node over the core, and their equal-cost
        predecessors: kept per node."""
        searches = self.cache.facts.setdefault("core_searches", {})
        if b not in searches:
            core = self.derived("core_adjacency", lambda topo: {
                u: [hop for hop in topo._adjacency[u] if hop[1] in topo._core] for u in topo._core})
            searches[b] = self._dijkstra({b: (0, 0)}, core.__getitem__)
        return searches[b]

    def derived(self, key: str, compute: Callable[[Topology], T]) -> T:
        """``compute(self)``, computed once per network and kept: for facts of the network
        alone (not of its ranks), which every ``subset`` shares (a training step asks them
        once per group of GPUs)."""
        facts = self.cache.facts
        if key not in facts:
            facts[key] = compute(self)
        return facts[key]

    def route_indices(self, src: str, dst: str, flow: int = 0) -> tuple[int, ...]:
        """Directed link indices of the route from ``src`` to ``dst`` for connection ``flow``
        (``flow`` matters to ``ecmp`` routing only; see the module docstring)."""
        key = (src, dst, flow)
        routes = self.cache.routes
        cached = routes.get(key)
        if cached is not None:
            return cached
        if src == dst:
            routes[key] = ()
            return ()
        preds = self._shortest_dag(src, dst)
        by_destination = self.routing == "by_destination"
        place = self._destination_number(dst) if by_destination else 0
        path = [dst]
        node = dst
        while node != src:
            choices = preds[node]
            if len(choices) > 1:
                choices = sorted(choices, key=self.node_index.__getitem__)
                if by_destination and all(self.kind(c) == "switch" for c in choices):
                    # between switches: the destination's number, digit by digit from its end
                    # (D-mod-k); a host's choice of NIC stays the sender's, spread by connection
                    node = choices[place % len(choices)]
                    place //= len(choices)
                elif all(self.kind(c) == "nic" for c in choices):
                    # a GPU's NICs (or the peer's): NCCL binds each channel to one of them,
                    # connection i to NIC i mod k, so every NIC carries its share
                    node = choices[flow % len(choices)]
                else:
                    digest = zlib.crc32(f"{src}\0{dst}\0{flow}\0{node}".encode())
                    node = choices[digest % len(choices)]
            else:
                node = choices[0]
            path.append(node)
        path.reverse()
        route = tuple(self.link_index[(u, v)] for u, v in zip(path, path[1:]))
        routes[key] = route
        return route

    def _destination_number(self, dst: str) -> int:
        """``dst``'s place among the endpoints ordered by the first core switch they hang off
        (their leaf), then as listed: the number InfiniBand's subnet manager gives the
        ports of a fat tree in order (a LID), whose digits pick a destination's way down."""
        numbers = self.derived("destination_numbers", _destination_numbers)
        return numbers[dst]

    def route_matrix(self, src: list[str], dst: list[str], flow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Routes of many connections at once: ``(paths, latency_ps)``, ``paths[i]`` the link
        indices of ``src[i] -> dst[i]`` on connection ``flow[i]`` padded with ``len(links)``,
        ``latency_ps[i]`` its summed link latency."""
        return self.padded([self.route_indices(s, d, f) for s, d, f in zip(src, dst, np.asarray(flow).tolist())])

    def padded(self, routes: list[tuple[int, ...]], width: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """``(paths, latency_ps)`` of ``routes`` (link index tuples): a matrix at least
        ``width`` wide, padded with ``len(links)``, and each route's summed link latency."""
        paths = np.full((len(routes), max([width, *map(len, routes)])), len(self.links), dtype=np.int64)
        for i, route in enumerate(routes):
            paths[i, : len(route)] = route
        return paths, self.derived("padded_latency", lambda topo: np.append(topo.latency_ps, 0))[paths].sum(axis=1)

    def route(self, src: str, dst: str, flow: int = 0) -> list[tuple[str, str]]:
        """The directed links ``[(u, v), ...]`` a transfer from src to dst follows."""
        return [self.links[i] for i in self.route_indices(src, dst, flow)]

    def path_latency(self, src: str, dst: str, flow: int = 0) -> float:
        """One-way latency of the route in seconds."""
        return int(sum(self.latency_ps[i] for i in self.route_indices(src, dst, flow))) / PS_PER_SECOND

    def path_bandwidth(self, src: str, dst: str, flow: int = 0) -> float:
        """Bottleneck bandwidth of the route in bytes/s (inf for src == dst)."""
        route = self.route_indices(src, dst, flow)
        return float(self.capacity[list(route)].min()) if route else float("inf")

    def link_name(self, index: int) -> str:
        """``"u->v"`` for a directed link index."""
        u, v = self.links[index]
        return f"{u}->{v}"

    def without(self, down: set[int] | frozenset[int]) -> Topology:
        """The same network with directed links ``down`` (indices; added to those already
        down) carrying nothing: routes
        avoid them; nodes, link indices and capacities stay as they are (a failure is the
        network model's business). Its route cache is its own."""
        view = copy.copy(self)
        view.down = self.down | frozenset(down)
        view.cache = RouteCache()
        view._adjacency = {u: [hop for hop in hops if self.link_index[(u, hop[1])] not in view.down]
                           for u, hops in self._adjacency.items()}
        view._index_routes()
        return view

    def subset(self, gpus: list[str] | int | None) -> Topology:
        """The same network with only the given GPUs as ranks (first N, or ids in order)."""
        if gpus is None:
            return self
        if isinstance(gpus, int):
            if not 1 <= gpus <= len(self.gpus):
                raise ValueError(f"gpus: {gpus} is out of range; this topology has {len(self.gpus)} GPUs")
            chosen = self.gpus[:gpus]
        else:
            unknown = [g for g in gpus if g not in self.node_index or self.kind(g) != "gpu"]
            if unknown:
                raise ValueError(f"gpus: {unknown[0]!r} is not a GPU of {self.name}")
            seen: set[str] = set()
            for g in gpus:
                if g in seen:
                    raise ValueError(f"gpus: {g!r} is listed twice")
                seen.add(g)
            if not gpus:
                raise ValueError("gpus: an empty list; name at least one GPU")
            chosen = list(gpus)
        if chosen == self.gpus:
            return self
        sub = copy.copy(self)  # the same frozen graph, arrays and route cache; other ranks
        sub.gpus = chosen
        return sub


def _nodes_of_host(topology: Topology) -> dict[str, set[str]]:
    """Every node carrying a ``host`` label, by that label."""
    hosts: dict[str, set[str]] = {}
    for node, host in topology.graph.nodes(data="host"):
        if host:
            hosts.setdefault(host, set()).add(node)
    return hosts


def _destination_numbers(topology: Topology) -> dict[str, int]:
    """``_destination_number`` of every node: the endpoints first, in order of their leaf
    (the first switch their traffic enters, past a NIC that joins two planes), so the GPUs
    under one leaf take consecutive numbers; then the dead ends (NICs); then the core."""
    index = topology.node_index

    def leaf(node: str) -> int:
        entries = topology._approach(node)[1] if node not in topology._core else ()
        switches = [s for e in entries for s in ([e] if topology.kind(e) == "switch" else
                                                  [p for p in topology.graph.predecessors(e)
                                                   if topology.kind(p) == "switch"])]
        return min((index[s] for s in switches), default=index[node])

    def key(node: str) -> tuple[int, int, int]:
        group = 2 if node in topology._core else int(node in topology._forwards)
        return group, leaf(node), index[node]

    return {n: i for i, n in enumerate(sorted(topology.nodes, key=key))}


def _incoming(topology: Topology) -> dict[str, list[str]]:
    """Every node's predecessors over the links that are up."""
    incoming: dict[str, list[str]] = {}
    for u, hops in topology._adjacency.items():
        for _, v, _ in hops:
            incoming.setdefault(v, []).append(u)
    return incoming


def _ancestors(preds: Mapping[str, list[str]], dst: str) -> dict[str, list[str]]:
    """The part of a shortest-path predecessor map that leads to ``dst``: what routes to
    ``dst`` need, a few nodes per pair instead of every node the search settled (an
    all-to-all over N GPUs caches N^2 of these)."""
    kept: dict[str, list[str]] = {}
    stack = [dst]
    while stack:
        node = stack.pop()
        if node not in kept:
            kept[node] = preds[node]
            stack.extend(preds[node])
    return kept
