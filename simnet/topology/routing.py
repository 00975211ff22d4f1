"""Routes over a ``Topology``: which links a connection from one node to another takes.

Shortest path by total latency, ties broken by hop count, then among equal-cost next hops
(the topology's ``routing``): ``ecmp`` (the default, as Ethernet switches hash) picks one
by a stable hash of ``(src, dst, flow)`` and the hop's network links from the destination
(choices ordered by their links' rate and latency, then their place in the fabric, ``_looks``,
then name), so a connection always takes
the same path and results repeat; ``by_destination`` (as InfiniBand's subnet manager routes a fat tree:
OpenSM's fat-tree engine, ``doc/current-routing.txt``, which makes "shift" patterns
congestion-free) picks by the destination alone, the digits of its number (its port's
place in leaf order, like a LID) choosing the way down, D-mod-k: every connection to one
destination takes the same path, and destinations under one leaf spread over the spines.
Either way the connections of one pair leaving or entering a GPU with several NICs take
consecutive NICs (connection ``flow`` the ``flow``-th after the pair's own first, by hash),
as NCCL binds each channel to one NIC of its GPU, and those entering a NIC with several
ports (planes) consecutive ports, as NCCL splits each send over a NIC's ports.
Only the topology's ``forwarding`` nodes (switches, NICs, host bridges) forward traffic;
GPUs and parameter servers are endpoints (a path never goes *through* a GPU).

A ``Router`` serves one topology with one set of links up (``Topology.without`` builds
another) and keeps every route and search it computed; the topology asks it through
``Topology.route_indices`` and friends, views with other ranks (``Topology.subset``) share it.

>>> from simnet.topology.loader import topology_from_dict
>>> topo = topology_from_dict({"name": "demo", "generate": {"kind": "nvswitch", "gpus": 4}})
>>> router = Router(topo)
>>> [topo.links[i] for i in router.route_indices("gpu0", "gpu3")]
[('gpu0', 'nvswitch'), ('nvswitch', 'gpu3')]
>>> router.shortest_paths("gpu0", stop="gpu3")[0]["gpu3"]  # (latency ps, hops)
(500000, 2)
"""

from __future__ import annotations

import heapq
import zlib
from collections import ChainMap
from collections.abc import Callable, Mapping
from typing import TypeVar

import networkx as nx
import numpy as np

from simnet.topology.graph import Topology
from simnet.topology.hardware import NET

__all__ = ["Router"]

T = TypeVar("T")

HOP_BITS = 20
HOP_MASK = (1 << HOP_BITS) - 1  # routes are far shorter than a million hops


class Router:
    """The routes of ``topology`` over its links up (``Topology.neighbours``): pure
    functions of a frozen graph, kept once computed. Reads nothing of the topology's ranks,
    so views of it with other ranks share one router.
    """

    def __init__(self, topology: Topology):
        self.topology = topology
        index, link_index, latency = topology.node_index, topology.link_index, topology.latency_ps
        self._forwards = topology.forwarding
        # per node, its links up as (index of the far end, far end, latency ps), in node order
        self._adjacency = {u: [(index[v], v, int(latency[link_index[(u, v)]])) for v in topology.neighbours(u)]
                           for u in topology.nodes}
        self._routes: dict[tuple[str, str, int], tuple[int, ...]] = {}
        self._dags: dict[tuple[str, str], Mapping[str, list[str]]] = {}
        self._facts: dict = {}
        self._dead_ends = self._find_dead_ends()
        self._core = frozenset(n for n in self._forwards if n not in self._dead_ends)
        up = {(u, v) for u, hops in self._adjacency.items() for _, v, _ in hops}
        # a link up one way only can make a "dead end" (one way out) a way between core
        # switches, which the search through the core would not see
        self._two_way = all((v, u) in up for u, v in up)
        self._onward = {u: [hop for hop in hops if not self._dead_end_from(u, hop[1])]
                        for u, hops in self._adjacency.items()}
        # towards a known destination only forwarding nodes lead on (endpoints never forward),
        # and of those only the ones that lead somewhere other than back: a spine with thousands
        # of leaves, each with one GPU, pushes none of them into a search for another one
        forwarding = {u: [hop for hop in hops if hop[1] in self._forwards] for u, hops in self._onward.items()}
        self._onward_leading = {u: [hop for hop in hops if any(w != u for _, w, _ in forwarding[hop[1]])]
                                for u, hops in forwarding.items()}
        self._hop_to = {u: {hop[1]: hop for hop in hops} for u, hops in self._adjacency.items()}

    def _fact(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()``, once per router."""
        if key not in self._facts:
            self._facts[key] = compute()
        return self._facts[key]

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

    # ---------------------------------------------------------------- search
    def shortest_paths(self, src: str, stop: str | None = None, within: set[str] | None = None) -> tuple[dict, dict]:
        """Dijkstra from ``src`` on (latency ps, hops), forwarding only through switches/NICs.

        Returns ``(cost, preds)``: the (latency ps, hops) of every node settled and all its
        equal-cost predecessors. With ``stop`` the search ends once that node is settled
        and skips the dead ends and endpoints that cannot lead to it; with ``within`` it never leaves those
        nodes.
        """
        graph = self.topology.graph
        last: set[str] = set()  # stop, the dead ends into it and the nodes into those: its last hops
        if stop is not None:
            entries = [stop] + [v for v in graph.predecessors(stop) if v in self._dead_ends]
            last = set(entries) | {u for v in entries for u in graph.predecessors(v) if u in self._forwards}

        def hops_of(u: str) -> list:
            if u != src and u not in self._forwards:
                return []  # endpoints never forward
            if stop is None:
                hops = self._adjacency[u]
            else:  # the rest lead only to other endpoints (or back to u)
                ways = self._hop_to[u]
                near = [ways[v] for v in last if v in ways] if len(last) < len(ways) else \
                    [hop for v, hop in ways.items() if v in last]
                hops = self._onward_leading[u] + near
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
        index = self.topology.node_index
        heap = [(cost, index[node], node) for node, cost in best.items()]
        heapq.heapify(heap)
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
        dags = self._dags
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
        if not self._two_way or not self._core or self._is_core(src) or self._is_core(dst):
            return None  # (no core: one switch among its endpoints, whose pocket would be all of them)
        reached, pocket, exits = self._pocket(src)
        region, entries, sources = self._approach(dst)
        if len(exits) != 1 or src in sources or dst in reached or not region.isdisjoint(reached):
            return None
        (b, (b_lat, b_hops)), = exits.items()
        if self._fact("endpoints_behind", self._endpoints_behind).get(b, 0) < 2 and \
                b not in self._facts.get("core_searches", {}):
            return None  # no other source would share b's search over the whole core: one towards dst is less
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
        pockets = self._facts.setdefault("pockets", {})
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
        approaches = self._facts.setdefault("approaches", {})
        if dst not in approaches:
            incoming = self._fact("incoming", self._incoming)
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
        searches = self._facts.setdefault("core_searches", {})
        if b not in searches:
            core = self._fact("core_adjacency", lambda: {
                u: [hop for hop in self._adjacency[u] if hop[1] in self._core] for u in self._core})
            searches[b] = self._dijkstra({b: (0, 0)}, core.__getitem__)
        return searches[b]

    def _endpoints_behind(self) -> dict[str, int]:
        """Per core node, the endpoints whose way into the core may be it alone: those
        linked to it and those behind the dead ends it leads into."""
        behind: dict[str, int] = {}
        for u in self._core:
            for _, v, _ in self._adjacency[u]:
                if v not in self._forwards:
                    behind[u] = behind.get(u, 0) + 1
                elif v in self._dead_ends and self._dead_ends[v][0] == u:
                    behind[u] = behind.get(u, 0) + len(self._dead_ends[v][1])
        return behind

    def _incoming(self) -> dict[str, list[str]]:
        """Every node's predecessors over the links that are up."""
        incoming: dict[str, list[str]] = {}
        for u, hops in self._adjacency.items():
            for _, v, _ in hops:
                incoming.setdefault(v, []).append(u)
        return incoming

    # ---------------------------------------------------------------- routes
    def route_indices(self, src: str, dst: str, flow: int = 0) -> tuple[int, ...]:
        """Directed link indices of the route from ``src`` to ``dst`` for connection ``flow``
        (``flow`` matters to ``ecmp`` routing only; see the module docstring)."""
        key = (src, dst, flow)
        routes = self._routes
        cached = routes.get(key)
        if cached is not None:
            return cached
        if src == dst:
            routes[key] = ()
            return ()
        topology = self.topology
        preds = self._shortest_dag(src, dst)
        by_destination = topology.routing == "by_destination"
        place = self._destination_number(dst) if by_destination else 0
        path = [dst]
        node = dst
        network_hops = 0  # links of the network crossed from the destination back to ``node``
        while node != src:
            choices = preds[node]
            if len(choices) > 1:
                # by what the link from each carries, then its latency, then name: the same whatever order the
                # file lists them in, and whatever it names them where their links differ
                # (the rate it runs at: a PCIe link's spellings, 63 or 64 GB/s, are one)
                # and where those are alike, by the node's place in the fabric (``_looks``: what lies
                # beyond it), so a name decides only between nodes alike from everywhere
                looks = self._looks()
                choices = sorted(choices, key=lambda u: (-topology.capacity[topology.link_index[(u, node)]],
                                                         topology.latency_ps[topology.link_index[(u, node)]],
                                                         looks[u], u))
                ports = topology.ports(node) if topology.kind(node) in ("nic", "gpu") else ()
                if ports and all(c in ports for c in choices):
                    # the ports of the receiving NIC (its planes): NCCL splits every send of a NIC over
                    # its ports (Topology.ports), so the P stripes of one connection (consecutive
                    # flows, schedule.channels) take consecutive ports, from a start of the pair's
                    # own (under by_destination, the destination's digit, as for a switch)
                    start = place if by_destination else zlib.crc32(f"{self._pair(src, dst)}\0port".encode())
                    node = choices[(start + flow) % len(choices)]
                    place //= len(choices)
                elif by_destination and all(topology.kind(c) == "switch" for c in choices):
                    # between switches: the destination's number, digit by digit from its end
                    # (D-mod-k); a host's choice of NIC stays the sender's, spread by connection
                    node = choices[place % len(choices)]
                    place //= len(choices)
                elif all(topology.kind(c) == "nic" for c in choices):
                    # NICs of the sender (or the receiver): NCCL binds each channel of a GPU to one
                    # of its NICs (Topology.nic_binding), so consecutive connections of one pair
                    # take consecutive NICs of that GPU (and pairs start at a NIC of their own, as
                    # a hash would spread them)
                    # (the stripes of one connection over a NIC's ports, ports_per_nic flows in a row,
                    # share its NIC)
                    own = [nic for end in (src, dst) for nic in topology.nic_binding(end) if nic in choices] or choices
                    node = own[(zlib.crc32(self._pair(src, dst).encode()) + flow // topology.ports_per_nic) % len(own)]
                else:  # ECMP: a hash of the connection and the hop (how many network links from the
                    # destination: a NIC written as a node or its GPU cabled straight, the same), not of names
                    digest = zlib.crc32(f"{self._pair(src, dst)}\0{flow}\0{network_hops}".encode())
                    node = choices[digest % len(choices)]
            else:
                node = choices[0]
            network_hops += topology.link_type[topology.link_index[(node, path[-1])]] == NET
            path.append(node)
        path.reverse()
        route = tuple(topology.link_index[(u, v)] for u, v in zip(path, path[1:]))
        routes[key] = route
        return route

    def _pair(self, src: str, dst: str) -> str:
        """What a connection's hash reads of its ends: a GPU's place among the network's GPUs
        (their rank order, which every writing of the network keeps), another node's id. So the
        routes, and the answers, do not change when the nodes are renamed, as a switch's hash of
        a flow's addresses does not care what its operator calls the hosts."""
        keys = self._fact("hash_keys", lambda: {gpu: f"#{i}" for gpu, i in self._gpu_places().items()})
        return f"{keys.get(src, src)}\0{keys.get(dst, dst)}"

    def _looks(self) -> dict[str, int]:
        """``_places_in_fabric`` of the network with every link up, once for it and every view
        of it with links down (a detour's ties broken as the healthy fabric's: review 68), and
        once per set of ``Topology.marks`` (a fault's links told apart by it)."""
        whole, key = self.topology.whole, ("looks", self.topology.marks)
        if key not in whole:
            whole[key] = self._places_in_fabric()
        return whole[key]

    def _places_in_fabric(self) -> dict[str, int]:
        """Each node's place in the fabric as a number, whatever it is named: GPUs start from
        their place in the rank order, other nodes from their kind; each round a node takes in
        the places of its neighbours with the rate each way and the latency of the link to
        each, until a round tells no more nodes apart (Weisfeiler-Lehman colour refinement,
        a neighbourhood's multiset summed as 64-bit hashes). Nodes of one number look alike
        from everywhere, to the rates and latencies of the links beyond; numbers follow the
        descriptions' sorted hashes, never names. Switches still alike then are told apart, in order: a
        class of twins (the same neighbours by the same links: a two-tier fabric's spines, one
        core group's switches) by name, where no answer can tell which is which; else the first
        class by number (a three-tier fabric's spines of one pod, spine j joined to core group
        j) by name, and refinement in order (each number the place of its sorted description)
        lines up the other pods' spines with the same core groups, whatever they are named.
        In a network ``Topology.marked`` (by its faults) the nodes still alike are told apart by
        their links' marks before their names (a faulted spine among its healthy twins); nothing
        else moves, so its routes are the unmarked network's up to swapping nodes alike from
        everywhere, and every time the same."""
        topology = self.topology
        index, capacity, reverse = topology.node_index, topology.capacity, topology.reverse
        pairs = np.array([(index[u], index[v]) for u, v in topology.links], dtype=np.int64).reshape(-1, 2)
        # per link: its rate, the rate of the link back (-1: none) and its latency
        described = np.stack([capacity, np.where(reverse >= 0, capacity[reverse], -1.0),
                              topology.latency_ps.astype(float)], axis=1)
        kinds = sorted({topology.kind(n) for n in topology.nodes})
        places = self._gpu_places()
        looks = np.unique(np.array([(kinds.index(topology.kind(n)), places.get(n, -1)) for n in topology.nodes],
                                   dtype=np.int64).reshape(-1, 2), axis=0, return_inverse=True)[1].reshape(-1)
        ends = _ends(pairs, described)
        looks = _refined(looks, *ends)
        owner, other, seen, _ = ends
        # a node's marks (``Topology.marked``): the marks of the links it sends and receives on, sorted
        signs: list[tuple] = [() for _ in topology.nodes]
        for link, mark in topology.marks:
            for end in pairs[link]:
                signs[end] = (*signs[end], mark)
        signs = [tuple(sorted(sign)) for sign in signs]
        return dict(zip(topology.nodes, _told_apart(topology, looks, owner, other, seen, signs).tolist()))

    def _gpu_places(self) -> dict[str, int]:
        """Each GPU's place among the network's GPUs in their rank order
        (``Topology.network_gpus``, which every writing of the network keeps, whatever order
        the file lists them in, and every view of it, whatever ranks the view runs)."""
        return self._fact("gpu_places", lambda: {gpu: i for i, gpu in enumerate(self.topology.network_gpus)})

    def _destination_number(self, dst: str) -> int:
        """``dst``'s place among the endpoints ordered by the first core switch they hang off
        (their leaf), then as listed: the number InfiniBand's subnet manager gives the
        ports of a fat tree in order (a LID), whose digits pick a destination's way down."""
        return self._fact("destination_numbers", self._destination_numbers)[dst]

    def _destination_numbers(self) -> dict[str, int]:
        """``_destination_number`` of every node: the endpoints first, in order of their leaf
        (the first switch their traffic enters, past a NIC that joins two planes), so the GPUs
        under one leaf take consecutive numbers; then the dead ends (NICs); then the core.
        Endpoints and their leaves are ordered by rank (GPUs in the network's rank order,
        ``_gpu_places``, then parameter servers as listed; a leaf by the first endpoint under
        it), not by where the file lists switches: names and order do not count
        (docs/topologies.md)."""
        topology = self.topology
        index = topology.node_index
        rank = self._gpu_places()

        def entered(node: str) -> list[str]:  # the switches its traffic enters first
            entries = self._approach(node)[1] if node not in self._core else ()
            return [s for e in entries for s in ([e] if topology.kind(e) == "switch" else
                                                  [p for p in topology.graph.predecessors(e)
                                                   if topology.kind(p) == "switch"])]

        def group(node: str) -> int:
            return 2 if node in self._core else int(node in self._forwards)

        def place(node: str) -> int:  # GPUs by rank, then the other nodes as listed
            return rank[node] if node in rank else len(rank) + index[node]

        first: dict[str, int] = {}  # each leaf's first endpoint, by place
        for node in sorted((n for n in topology.nodes if not group(n)), key=place):
            for switch in entered(node):
                first.setdefault(switch, place(node))

        def key(node: str) -> tuple[int, int, int]:
            if group(node):
                return group(node), min((index[s] for s in entered(node)), default=index[node]), index[node]
            return 0, min((first[s] for s in entered(node)), default=place(node)), place(node)

        return {n: i for i, n in enumerate(sorted(topology.nodes, key=key))}


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


def _ends(pairs: np.ndarray, described: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every link (``pairs`` of node indices, one row of ``described`` each) seen from both
    ends: (owner, other end, a hash of the link's description and of which end it is), by
    owner, and where each owner's entries start."""
    link = np.unique(described, axis=0, return_inverse=True)[1].reshape(-1)
    owner = np.concatenate([pairs[:, 0], pairs[:, 1]])
    other = np.concatenate([pairs[:, 1], pairs[:, 0]])
    seen = _mixed(np.concatenate([2 * link, 2 * link + 1]).astype(np.uint64))
    order = np.argsort(owner, kind="stable")
    owner, other, seen = owner[order], other[order], seen[order]
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if len(owner) else np.zeros(0, np.int64)
    return owner, other, seen, starts


def _refined(looks: np.ndarray, owner: np.ndarray, other: np.ndarray, seen: np.ndarray,
             starts: np.ndarray) -> np.ndarray:
    """``looks`` refined until a round tells no more nodes apart: each round a node takes in
    its neighbours' looks with the links to them (``_ends``)."""
    while True:
        around = np.zeros(len(looks), dtype=np.uint64)
        if len(owner):
            around[owner[starts]] = np.add.reduceat(_mixed(seen ^ looks[other].astype(np.uint64)), starts)
        finer = np.unique(_mixed(_mixed(looks.astype(np.uint64)) ^ around), return_inverse=True)[1].reshape(-1)
        if finer.max(initial=0) == looks.max(initial=0):
            return looks
        looks = finer


def _told_apart(topology: Topology, looks: np.ndarray, owner: np.ndarray, other: np.ndarray,
                seen: np.ndarray, signs: list[tuple]) -> np.ndarray:
    """``looks`` (refined) with the switches still alike told apart (``Router._looks``): the
    twins of every class of twins at once, else the first class, by their ``signs`` (the
    marks on their links) and then name, then refined in order."""
    switches = np.array([topology.kind(n) == "switch" for n in topology.nodes], dtype=bool)
    numbers, counts = np.unique(looks[switches], return_counts=True)
    if not (counts > 1).any():
        return looks
    ends: list[list[tuple[int, int]]] = [[] for _ in topology.nodes]  # per node: (link, far end)
    for u, v, link in zip(owner.tolist(), other.tolist(), seen.tolist()):
        ends[u].append((link, v))
    neighbours = [tuple(sorted(e)) for e in ends]
    while (counts > 1).any():
        classes = [sorted(np.flatnonzero(switches & (looks == n)).tolist(), key=lambda u: (signs[u], topology.nodes[u]))
                   for n in numbers[counts > 1]]
        twins = [c for c in classes if len({neighbours[u] for u in c}) == 1]
        told = np.full(len(looks), -1, dtype=np.int64)
        # a class the faults' marks split (its switches alike but for them), where none are twins: split by
        # the marks alone, then refined, so which of the rest comes first is not decided by name before the
        # marks have lined them up (review 79: a spine renamed in a pod the fault misses moved its routes)
        split = [c for c in classes if len({signs[u] for u in c}) > 1]
        if not twins and split:
            distinct = sorted({signs[u] for u in split[0]})
            told[split[0]] = [distinct.index(signs[u]) for u in split[0]]
        else:
            for members in twins or classes[:1]:
                told[members] = np.arange(len(members))
        looks = np.unique(np.stack([looks, told], axis=1), axis=0, return_inverse=True)[1].reshape(-1)
        while True:  # in order: a number is the place of its node's sorted description
            described = [(looks[u], tuple(sorted((link, looks[v]) for link, v in ends[u]))) for u in range(len(looks))]
            place = {d: i for i, d in enumerate(sorted(set(described)))}
            finer = np.array([place[d] for d in described], dtype=np.int64)
            if finer.max(initial=0) == looks.max(initial=0):
                break
            looks = finer
        numbers, counts = np.unique(looks[switches], return_counts=True)
    return looks


def _mixed(values: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each value (splitmix64's finaliser): what a neighbourhood's sum of
    them tells apart, whatever order the neighbours come in."""
    with np.errstate(over="ignore"):
        values = values + np.uint64(0x9E3779B97F4A7C15)
        values = (values ^ (values >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        values = (values ^ (values >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return values ^ (values >> np.uint64(31))
