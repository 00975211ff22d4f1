"""``Topology``: the networkx graph of a cluster, its ranks and grouping labels.

Edges are directed: a full-duplex link is two edges, each with ``bandwidth`` (bytes/s,
that direction's capacity) and ``latency`` (seconds, one way). Every directed link also
has a dense index (``link_index``) so the network can keep per-link state in numpy
arrays (``capacity``, ``latency_ps``). Only switches, NICs and host bridges forward
traffic (``forwarding``); GPUs and parameter servers are endpoints.

Routes are the business of the topology's router (``simnet.topology.routing.Router``,
given when the topology is built, ``make_router``): ``route``, ``route_indices``,
``shortest_paths`` and the path sums here ask it. This module never imports it.

>>> from simnet.topology.loader import topology_from_dict
>>> topo = topology_from_dict({"name": "demo", "generate": {"kind": "nvswitch", "gpus": 4}})
>>> topo.route("gpu0", "gpu3")
[('gpu0', 'nvswitch'), ('nvswitch', 'gpu3')]
>>> topo.path_latency("gpu0", "gpu3")
5e-07
>>> topo.neighbours("nvswitch")[:2], "nvswitch" in topo.forwarding
(['gpu0', 'gpu1'], True)
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import InitVar, dataclass, field
from functools import cached_property
from typing import Protocol, TypeVar

import networkx as nx
import numpy as np

from simnet.topology.hardware import LINK_TYPES, NET, NVLINK, PCIE, pcie_bandwidth, pcie_generation_of, pcie_spelling_of

__all__ = ["Topology", "Routes", "FORWARDING_KINDS", "GROUP_LEVELS", "PS_PER_SECOND", "natural_key", "host_nvswitch"]

T = TypeVar("T")

FORWARDING_KINDS = frozenset({"switch", "nic", "host"})
GROUP_LEVELS = ("host", "node", "rack", "region")
"""Levels GPUs are grouped at: a ``node`` is what NCCL counts as one, the GPUs joined by
NVLink alone (its host, or the trays of a multi-node NVLink domain such as an NVL72 rack)."""
PS_PER_SECOND = 10**12
"""Latencies and simulated times are kept as integer picoseconds so equal sums are equal."""


class Routes(Protocol):
    """What a ``Topology`` asks of its router (``simnet.topology.routing.Router``, one per
    set of links up): the routes of connections and shortest-path searches."""

    def route_indices(self, src: str, dst: str, flow: int = 0) -> tuple[int, ...]:
        """Directed link indices of the route from ``src`` to ``dst`` for connection ``flow``."""

    def shortest_paths(self, src: str, stop: str | None = None,
                       within: set[str] | None = None) -> tuple[dict, dict]:
        """``(cost, preds)`` of a search from ``src`` (see ``Topology.shortest_paths``)."""


def host_nvswitch(graph: nx.DiGraph, switch: str) -> bool:
    """Whether ``switch`` is inside one host (a ``host`` label) and only GPUs attach to it: an
    NVSwitch by its place alone, whatever it says of ``nvls``."""
    neighbours = set(graph.successors(switch)) | set(graph.predecessors(switch))
    return graph.nodes[switch].get("host") is not None and all(graph.nodes[n]["kind"] == "gpu" for n in neighbours)


@dataclass(eq=False)
class Topology:
    """A loaded topology. ``gpus`` lists the ranks in order (rank i is ``gpus[i]``).

    The graph is frozen (``networkx.freeze``): a topology never changes once built, which
    is what lets views of it with other ranks share its arrays, facts and router.
    ``make_router`` builds the router of a topology (``simnet.topology.routing.Router``;
    ``without`` asks it again for the view with links down).
    """

    name: str
    graph: nx.DiGraph
    gpus: list[str]
    description: str = ""
    source: str | None = None
    calibration: str | None = None  # path of the calibration profile the topology names
    routing: str = "ecmp"  # how a route picks among equal-cost next hops (``simnet.topology.routing``)
    unread: tuple[str, ...] = ()  # parameters of its file that built nothing, each "key (file:line): why"
    # the network keys ("key (file:line)") of a generator that built the whole fabric: a run whose ranks are one
    # NVLink domain, no route of it crossing the network, reads none of them
    network_keys: tuple[str, ...] = ()
    # a generator's keys only some algorithms read, as written ("key (file:line)"): nvls and sharp (the algorithms
    # that reduce on such a switch, and auto), a ps_star's servers and ps_bandwidth (ps)
    algorithm_keys: tuple[str, ...] = ()
    # a generator's keys whose value NCCL's and RCCL's models cap ("key (file:line): why"): an unsourced xGMI rate
    # above RCCL's per-link figure, said under those models (``model: ideal`` reads it)
    capped: tuple[str, ...] = ()
    # NVSwitch chips its file writes that join the same GPUs, each group one switch (NCCL's view): (kept id, chips);
    # and each chip's link as written ((GPU, chip) or (chip, GPU)) -> its bandwidth, B/s, its share of the joined link
    joined: tuple[tuple[str, tuple[str, ...]], ...] = ()
    chip_links: Mapping[tuple[str, str], float] = field(default_factory=dict)
    make_router: InitVar[Callable[[Topology], Routes]] = field(kw_only=True)

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """How IPython and hypothesis show a topology: its name and size. Their dataclass
        printers read every field, and ``make_router`` is no attribute (it builds ``router``)."""
        printer.text(f"<Topology {self.name!r}: {len(self.gpus)} GPUs, {len(self.graph)} nodes, "
                     f"{len(self.links)} directed links>")

    def __post_init__(self, make_router: Callable[[Topology], Routes]) -> None:
        nx.freeze(self.graph)
        # the network's GPUs in rank order, whatever ranks a view of it runs (``subset`` and
        # ``without`` keep it): what routing reads of a GPU's place, never the file's order
        self.network_gpus: tuple[str, ...] = tuple(self.gpus)
        self.nodes: list[str] = list(self.graph.nodes)
        self.node_index = {n: i for i, n in enumerate(self.nodes)}
        self.links: list[tuple[str, str]] = list(self.graph.edges)
        self.link_index = {edge: i for i, edge in enumerate(self.links)}
        self.capacity = np.array([self.graph.edges[e]["bandwidth"] for e in self.links], dtype=float)
        self.latency_ps = np.array([round(self.graph.edges[e]["latency"] * PS_PER_SECOND) for e in self.links],
                                   dtype=np.int64)
        self.reverse = np.array([self.link_index.get((v, u), -1) for u, v in self.links], dtype=np.int64)
        self.link_type = np.array([self._type_of(u, v) for u, v in self.links], dtype=np.int8)
        self._standard_pcie()
        # the nodes that forward traffic (switches, NICs, host bridges): a route passes through no other
        self.forwarding: frozenset[str] = frozenset(
            n for n, kind in self.graph.nodes(data="kind") if kind in FORWARDING_KINDS)
        self.down: frozenset[int] = frozenset()  # directed link indices that carry nothing (see ``without``)
        self.marks: tuple[tuple[int, int], ...] = ()  # (link, the place of what befalls it), sorted (``marked``)
        self.whole: dict = {}  # facts of the network with every link up, shared by every view (``without``)
        self._up = {u: sorted(self.graph[u], key=self.node_index.__getitem__) for u in self.nodes}
        self._facts: dict = {}
        self._make_router = make_router
        self.router: Routes = make_router(self)

    def neighbours(self, node: str) -> list[str]:
        """The nodes ``node`` has a link *up* to (every link but those ``down``, see
        ``without``), in node order: where traffic from ``node`` can go next."""
        return self._up[node]

    def _standard_pcie(self) -> None:
        """Run a PCIe link written at a standard link's rate as datasheets spell it (Gen5 x16
        as 63, 63.02 or 64 GB/s: ``pcie_spelling_of``) at that link's line rate: one link, one
        figure, however it is written (64 GB/s ran ps 1.5 % faster than the generator's
        63.02 GB/s). Any other rate (64.6 GB/s) is the link's own."""
        for i in np.flatnonzero(self.link_type == PCIE):
            generation = self.pcie_generation(i)
            lanes = pcie_spelling_of(self.capacity[i], generation)
            if lanes is not None:
                self.capacity[i] = pcie_bandwidth(generation, lanes)

    def pcie_generation(self, i: int) -> int:
        """The generation of PCIe link ``i``: the generation of a GPU at one end, else the one
        its rate says (``hardware.pcie_generation_of``)."""
        gpu = next((self.gpu_model(end) for end in self.links[i] if self.kind(end) == "gpu"), None)
        return pcie_generation_of(self.capacity[i], gpu)

    def _type_of(self, u: str, v: str) -> int:
        """The link's class (``hardware.NVLINK``, ``PCIE`` or ``NET``): its ``type`` when the
        file gives one, else ``inferred_type``."""
        given = self.graph.edges[u, v].get("type")
        return LINK_TYPES.index(given) if given is not None else self.inferred_type(u, v)

    def inferred_type(self, u: str, v: str) -> int:
        """The class of a link between ``u`` and ``v`` as its ends say it (see
        ``docs/topologies.md``), whatever ``type`` the file gives it."""
        kinds = {self.kind(u), self.kind(v)}
        if "host" in kinds or kinds == {"gpu", "nic"}:
            return PCIE
        if kinds == {"gpu"}:  # a cable between two hosts' GPUs is their network, unless typed nvlink
            hosts = {self.graph.nodes[u].get("host"), self.graph.nodes[v].get("host")}
            return NET if len(hosts) == 2 and None not in hosts else NVLINK
        if kinds == {"gpu", "switch"}:
            switch = u if self.kind(u) == "switch" else v
            if self._is_gpu_fabric(switch):
                return NVLINK
            return PCIE if self._in_host(switch) else NET
        if kinds == {"nic", "switch"}:  # a PCIe switch of the NIC's host (labelled, or off its host bridge)
            nic, switch = (u, v) if self.kind(u) == "nic" else (v, u)
            host = self.graph.nodes[nic].get("host")
            hosts = {self.graph.nodes[switch].get("host")} | {self.graph.nodes[n].get("host")
                                                               for n in self.graph.successors(switch)
                                                               if self.kind(n) == "host"}
            return PCIE if host is not None and host in hosts else NET
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
        return bool(self.graph.nodes[switch].get("nvls")) or host_nvswitch(self.graph, switch)

    # -------------------------------------------------------------- hardware
    def gpu_model(self, gpu: str) -> str | None:
        """The GPU generation of a GPU node (``a100``, ``h100``, ...), if the topology says."""
        return self.graph.nodes[gpu].get("gpu")

    def transport(self, nic: str) -> str:
        """The transport a NIC speaks (``ib`` unless the topology says otherwise)."""
        return self.graph.nodes[nic].get("transport") or "ib"

    def rails(self, gpus: list[str]) -> list[tuple[str, str]]:
        """The network rails of one host's ``gpus``: ``(nic, gpu)`` pairs, one per NIC bound
        to one of these GPUs (``nic_binding``), with the first of them it is bound to
        (ncclTopoGetLocalGpu), in the order of the GPUs next to them (as PCI numbers both;
        the file's order of NICs does not count). Channel c of a multi-node collective enters
        and leaves the host through rail ``c mod len(rails)``; an empty list means the host
        has no NIC of its own.

        The binding is the one of every GPU of the host taking part, also when only some do
        (routes follow it, ``simnet.topology.routing``): where GPUs share NICs, a run on part
        of a host uses the NICs its GPUs have when all run, where NCCL would deal the shared
        NICs over the GPUs that run.
        """
        members = set(gpus)
        per_host = self.derived("nic_bindings", _nic_bindings)
        binding: dict[str, list[str]] = {}
        sharing: dict[str, list[str]] = {}
        for host in dict.fromkeys(self.label(g, "host") for g in gpus):  # an NVLink domain's trays, in rank order
            host_binding, host_sharing = per_host.get(host, ({}, {}))
            binding.update(host_binding)
            sharing.update(host_sharing)
        rails = []
        for nic, local in sharing.items():
            bound = next((gpu for channel in range(len(sharing)) for gpu in local if gpu in members
                          and binding[gpu] and binding[gpu][channel % len(binding[gpu])] == nic), None)
            if bound is not None:
                rails.append((nic, bound))
        return rails

    def ports(self, nic: str) -> list[str]:
        """The network switches ``nic`` (a NIC, or a GPU that is its own NIC) is cabled to, in
        node order: its ports (a NIC cabled back to back to another NIC: that NIC). Several are
        one NIC on several planes (``rail_optimized``'s ``planes``) or a dual-port NIC: NCCL
        merges the ports of one NIC into one network device of their summed speed
        (NCCL_NET_MERGE_LEVEL defaults to PORT, NVIDIA/nccl v2.30.7 src/graph/topo.cc:1744,
        ncclTopoAutoMerge :1374-1420; net_ib/init.cc:216-225 sums the speeds) and splits every
        send over them (net_ib/p2p.cc:110-116: a request is cut into equal parts, one per QP;
        connect.cc:658: QP q on port q mod ports)."""
        return self.derived("nic_ports", _nic_ports).get(nic, [])

    @property
    def ports_per_nic(self) -> int:
        """The number of network ports of every NIC that has any (``ports``), when they all have
        the same; else 1. NCCL's channels are split over that many ports (``schedule.channels``),
        and routing sends consecutive connections of one pair through consecutive ports."""
        return self.derived("ports_per_nic", _ports_per_nic)

    def nic_binding(self, gpu: str) -> list[str]:
        """The NICs NCCL binds ``gpu``'s channels to when every GPU of its host takes part:
        channel c to entry ``c mod len`` (empty: no NIC of its own). See ``_bind_nics``."""
        return self.derived("nic_bindings", _nic_bindings).get(self.label(gpu, "host"), ({}, {}))[0].get(gpu, [])

    def _bind_nics(self, gpus: list[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """NCCL 2.30's choice of NICs for one host's ``gpus`` (src/graph/topo.cc,
        ncclTopoGetLocalNetType): a GPU's local NICs are the ones it reaches by PCIe at the
        least cost; the G GPUs that share them take different ones (device index mod G,
        bit-mirrored when the NICs are a power of two), each using ceil(NICs / G) of them.
        Two GPUs and two NICs behind one PCIe switch get a NIC each; two GPUs sharing one
        NIC both use it. Returns (each GPU's NICs by channel, each NIC's local GPUs)."""
        members = set(gpus)
        device = self.derived("gpu_devices", _gpu_devices)
        costs = {nic: self._costs_to_gpus(nic, members) for nic in self._nics_near(gpus)}
        sharing = {nic: _cheapest(cost, lambda gpu: (device[gpu], gpu)) for nic, cost in costs.items()}
        # NICs in the order of the GPUs next to them (as PCI numbers both), then by name: not the file's order
        place = {nic: (device[local[0]] if local else len(device), natural_key(nic)) for nic, local in sharing.items()}
        sharing = dict(sorted(sharing.items(), key=lambda item: place[item[0]]))
        binding = {}
        for gpu in gpus:
            nets = _cheapest({nic: cost[gpu] for nic, cost in costs.items() if gpu in cost}, place.__getitem__)
            if not nets:
                binding[gpu] = []
                continue
            shared_by = len(sharing[nets[0]])
            first = device[gpu] % shared_by
            if len(nets) & (len(nets) - 1) == 0:
                first = _mirror_bits(first, len(nets))
            binding[gpu] = [nets[(first + c) % len(nets)] for c in range(-(-len(nets) // shared_by))]
        return binding, sharing

    def _costs_to_gpus(self, nic: str, members: set[str]) -> dict[str, tuple]:
        """The route cost from ``nic`` to each of ``members`` it reaches, searched inside its
        host first (a rail stays in its host), everywhere when the host is labelled only in part.
        A GPU that is its own NIC (``_nics_near``) is reached by itself alone."""
        if self.kind(nic) == "gpu":
            return {nic: (0, 0)} if nic in members else {}
        inside = self.derived("nodes_of_host", _nodes_of_host).get(self.graph.nodes[nic].get("host"), set()) \
            | members | {nic}
        cost, _ = self.shortest_paths(nic, within=inside)
        if not members & cost.keys():
            cost, _ = self.shortest_paths(nic)
        return {gpu: c for gpu, c in cost.items() if gpu in members}

    def _nics_near(self, gpus: list[str]) -> list[str]:
        """NICs attached to these GPUs by PCIe (directly or through PCIe switches / host
        bridges), and the GPUs cabled straight to a network switch, each its own NIC (a rail
        fabric written without NIC nodes), in node order."""
        found: dict[str, None] = {}
        seen = set(gpus)
        frontier = list(gpus)
        while frontier:
            node = frontier.pop()
            for nxt in self.graph.successors(node):
                kind = self.link_type[self.link_index[(node, nxt)]]
                if self.kind(node) == "gpu" and kind == NET and self.kind(nxt) == "switch":
                    found[node] = None
                if nxt in seen or kind != PCIE:
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
        """The node's grouping label at ``level`` (host, node, rack, region); never empty.

        A node without that label forms a group of its own, named after it. A GPU's
        ``node`` is its host, unless NVLink joins it to GPUs of other hosts (a multi-node
        NVLink domain, as NCCL's MNNVL sees one): then the domain, named after its rack
        when its GPUs share one.
        """
        if level not in GROUP_LEVELS:
            raise ValueError(f"group level must be one of {', '.join(GROUP_LEVELS)}, not {level!r}")
        if level == "node":
            domain = self.derived("nvlink_domains", _nvlink_domains).get(node)
            return domain or self.label(node, "host")
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

    # ----------------------------------------------------------------- facts
    def derived(self, key: str, compute: Callable[[Topology], T]) -> T:
        """``compute(self)``, computed once per network and kept: for facts of the network
        alone (not of its ranks), which every ``subset`` shares (a training step asks them
        once per group of GPUs) and a view ``without`` links computes anew."""
        facts = self._facts
        if key not in facts:
            facts[key] = compute(self)
        return facts[key]

    # ---------------------------------------------------------------- routes
    # What ``self.router`` computes (``simnet.topology.routing``), and sums over its routes.
    def shortest_paths(self, src: str, stop: str | None = None, within: set[str] | None = None) -> tuple[dict, dict]:
        """Dijkstra from ``src`` on (latency ps, hops), forwarding only through ``forwarding``
        nodes, over the links up: ``(cost, preds)``, the (latency ps, hops) of every node
        settled and all its equal-cost predecessors. With ``stop`` the search may end once
        that node is settled; with ``within`` it never leaves those nodes."""
        return self.router.shortest_paths(src, stop, within)

    def route_indices(self, src: str, dst: str, flow: int = 0) -> tuple[int, ...]:
        """Directed link indices of the route from ``src`` to ``dst`` for connection ``flow``
        (``flow`` picks among equal-cost ways: see ``simnet.topology.routing``)."""
        return self.router.route_indices(src, dst, flow)

    def joined_inside_a_node(self, ends: list[str]) -> bool:
        """Whether two of ``ends`` are joined by NVLink and PCIe links alone: a step between
        them is one inside a node to NCCL's model, whichever way it is routed."""
        def components(network: Topology) -> dict[str, int]:
            inside = nx.Graph([edge for edge, i in network.link_index.items() if network.link_type[i] != NET])
            return {node: k for k, nodes in enumerate(nx.connected_components(inside)) for node in nodes}

        component = self.derived("inside_a_node", components)
        found = [component[end] for end in ends if end in component]
        return len(found) != len(set(found))

    def network_links_between(self, ends: list[str]) -> list[int]:
        """Directed indices of the network links (``NET``: NICs, switches, the WAN) that the
        route (connection 0) between some two of ``ends`` crosses; none where every route
        stays on NVLink and PCIe. Quadratic in ``ends``: for a few dozen."""
        crossed = {i for a in ends for b in ends if a != b for i in self.route_indices(a, b)}
        return sorted(i for i in crossed if self.link_type[i] == NET)

    def route_matrix(self, src: list[str], dst: list[str], flow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Routes of many connections at once: ``(paths, latency_ps)``, ``paths[i]`` the link
        indices of ``src[i] -> dst[i]`` on connection ``flow[i]`` padded with ``len(links)``,
        ``latency_ps[i]`` its summed link latency."""
        route = self.router.route_indices
        return self.padded([route(s, d, f) for s, d, f in zip(src, dst, np.asarray(flow).tolist())])

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
        down) carrying nothing: routes avoid them; nodes, link indices and capacities stay
        as they are (a failure is the network model's business). Its facts and router are
        its own."""
        view = copy.copy(self)
        view.down = self.down | frozenset(down)
        view._up = {u: [v for v in ahead if self.link_index[(u, v)] not in view.down] for u, ahead in self._up.items()}
        view._facts = {}
        view.router = self._make_router(view)
        return view

    def marked(self, marks: dict[int, tuple]) -> Topology:
        """The same network with directed links told apart by ``marks`` (link index -> what
        befalls it, a sortable tuple: a fault's instants and shares): where routing must choose
        between nodes alike but for their names (twin spines), a node whose links are marked
        otherwise is told apart by its marks, not by its name, so renaming nodes moves no route
        where a fault has made one of them different. Marks order only nodes alike from
        everywhere, so the facts of the network (``derived``: rates, latencies, NCCL's reading)
        stay shared. Only the marks' order counts (kept as their places among the distinct
        marks), so its router is one per set of marked links and their order, shared by every
        view marked alike (a scenario's runs under one fault, a sweep of its time). Views of it
        (``without``, ``subset``) keep the marks."""
        if not marks:
            return self
        view = copy.copy(self)
        place = {mark: i for i, mark in enumerate(sorted(set(marks.values())))}
        view.marks = tuple(sorted((link, place[mark]) for link, mark in marks.items()))
        key = ("router", view.marks, self.down)
        if key not in self.whole:
            self.whole[key] = self._make_router(view)
        view.router = self.whole[key]
        return view

    def subset(self, gpus: list[str] | int | None) -> Topology:
        """The same network with only the given GPUs as ranks: the first N, or the GPUs named,
        in their rank order (``network_gpus``) whatever order the list gives them in."""
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
            rank = {gpu: r for r, gpu in enumerate(self.network_gpus)}
            chosen = sorted(gpus, key=rank.__getitem__)
        if chosen == self.gpus:
            return self
        sub = copy.copy(self)  # the same frozen graph, arrays, facts and router; other ranks
        sub.gpus = chosen
        return sub


def _cheapest(cost: dict[str, tuple], order: Callable[[str], tuple]) -> list[str]:
    """The keys of ``cost`` at its least value, sorted by ``order``."""
    if not cost:
        return []
    least = min(cost.values())
    return sorted((key for key, c in cost.items() if c == least), key=order)


def natural_key(name: str) -> tuple:
    """A sort key reading the numbers in ``name`` as numbers: ``nic8`` before ``nic10``.

    >>> sorted(["nic10", "nic8", "nic9"], key=natural_key)
    ['nic8', 'nic9', 'nic10']
    """
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name))


def _mirror_bits(value: int, width: int) -> int:
    """``value`` with its log2(``width``) low bits reversed (NCCL's mirrorBits, src/graph/topo.h).

    >>> [_mirror_bits(v, 4) for v in range(4)]
    [0, 2, 1, 3]
    """
    mirror, bit, high = 0, 1, width >> 1
    while bit < width:
        if value & bit:
            mirror |= high
        bit, high = bit << 1, high >> 1
    return mirror


def _gpus_by_host(topology: Topology) -> dict[str, list[str]]:
    """Every GPU of the network (not only the ranks) by host label, in the network's rank
    order (``Topology.network_gpus``: explicit ``rank:`` keys, else the file's order)."""
    hosts: dict[str, list[str]] = {}
    for gpu in topology.network_gpus:
        hosts.setdefault(topology.label(gpu, "host"), []).append(gpu)
    return hosts


def _gpu_devices(topology: Topology) -> dict[str, int]:
    """Each GPU's device index in its host (CUDA's numbering: the host's GPUs in rank order)."""
    return {gpu: i for gpus in topology.derived("gpus_by_host", _gpus_by_host).values() for i, gpu in enumerate(gpus)}


def _nic_bindings(topology: Topology) -> dict[str, tuple[dict[str, list[str]], dict[str, list[str]]]]:
    """``Topology._bind_nics`` of every host's GPUs, all of them taking part, by host label."""
    return {host: topology._bind_nics(gpus) for host, gpus in topology.derived("gpus_by_host", _gpus_by_host).items()}


def _nic_ports(topology: Topology) -> dict[str, list[str]]:
    """``Topology.ports`` of every NIC and GPU with a network link to a switch (or a NIC
    cabled back to back to another)."""
    ports: dict[str, list[str]] = {}
    for i in np.flatnonzero(topology.link_type == NET).tolist():
        u, v = topology.links[i]
        if topology.kind(u) in ("nic", "gpu") and topology.kind(v) in FORWARDING_KINDS:
            ports.setdefault(u, []).append(v)
    return {nic: sorted(found, key=topology.node_index.__getitem__) for nic, found in ports.items()}


def _ports_per_nic(topology: Topology) -> int:
    """``Topology.ports_per_nic``: the one port count of the NICs the hosts' GPUs use, else 1."""
    counts = {len(topology.ports(nic)) for _, sharing in topology.derived("nic_bindings", _nic_bindings).values()
              for nic in sharing}
    counts.discard(0)  # a NIC cabled to no network (a host written alone) has no say
    return counts.pop() if len(counts) == 1 else 1


def _nodes_of_host(topology: Topology) -> dict[str, set[str]]:
    """Every node carrying a ``host`` label, by that label."""
    hosts: dict[str, set[str]] = {}
    for node, host in topology.graph.nodes(data="host"):
        if host:
            hosts.setdefault(host, set()).add(node)
    return hosts


def _nvlink_domains(topology: Topology) -> dict[str, str]:
    """The GPUs of NVLink domains that span several hosts, each with its domain's name: the
    rack its GPUs share when no other domain shares it, else its first GPU's id with ``-nvlink``."""
    parent = {gpu: gpu for gpu in topology.network_gpus}  # a fact of the network, whichever view asks first

    def root(node: str) -> str:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for i, (u, v) in enumerate(topology.links):
        if topology.link_type[i] == NVLINK:
            parent.setdefault(u, u)
            parent.setdefault(v, v)
            parent[root(u)] = root(v)
    members: dict[str, list[str]] = {}
    for gpu in topology.network_gpus:
        members.setdefault(root(gpu), []).append(gpu)
    domains = [gpus for gpus in members.values() if len({topology.label(g, "host") for g in gpus}) > 1]
    rack = [racks.pop() if len(racks := {topology.graph.nodes[g].get("rack") for g in gpus}) == 1 else None
            for gpus in domains]
    taken = Counter(rack)
    return {g: r if r is not None and taken[r] == 1 else f"{gpus[0]}-nvlink"
            for gpus, r in zip(domains, rack) for g in gpus}
