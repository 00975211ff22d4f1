"""Topology YAML -> ``Topology``, with one-line errors naming file, line and field."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
from pydantic import ValidationError

from simnet import units
from simnet.errors import InputError, kind_of, shown
from simnet.io.files import missing_file
from simnet.io.yamlsource import Source, format_loc, load_yaml
from simnet.topology.generators import (
    ALGORITHM_KEYS,
    GENERATORS,
    ONE_HOST_WHY,
    GeneratorError,
    generate,
    library_capped_keys,
    network_keys,
    unread_keys,
)
from simnet.topology.graph import FORWARDING_KINDS, Topology, host_nvswitch
from simnet.topology.hardware import GPUS, LINK_TYPES, NET, NVLINK
from simnet.topology.routing import Router
from simnet.topology.schema import LinkSpec, NodeSpec, TopologySpec

__all__ = ["load_topology", "topology_from_dict", "default_routing", "routes_choose", "routes_choose_between"]


def load_topology(path: str | Path) -> Topology:
    """Load and validate a topology file; raise ``InputError`` on any mistake."""
    data, source = load_yaml(path)
    return topology_from_dict(data, source)


def topology_from_dict(data: Any, source: Source | None = None, prefix: tuple = ()) -> Topology:
    """Build a ``Topology`` from parsed YAML; ``prefix`` locates it inside a larger file."""
    source = source or Source("<topology>")
    if not isinstance(data, dict):
        raise source.error(prefix, f"{shown(data)} is {kind_of(data)}; expected a mapping with name, nodes and links")
    if "topology" in data and not {"nodes", "links", "generate"} & set(data):
        raise source.error(prefix, "this is a scenario file (it has 'topology:'), not a topology; give its "
                                   f"topology ({data['topology'] if isinstance(data['topology'], str) else 'inline'}) "
                                   "or use simnet run")
    try:
        spec = TopologySpec.model_validate(data)
    except ValidationError as exc:
        raise source.from_validation(exc, prefix, TopologySpec) from None

    nodes: list[tuple[NodeSpec, tuple]] = []
    links: list[tuple[LinkSpec, tuple]] = []
    generators = spec.generate if isinstance(spec.generate, list) else [spec.generate] if spec.generate else []
    unread: list[str] = []  # parameters that build nothing here (simnet.topology.generators.unread_keys)
    network: list[str] = []  # the network keys a generator that builds the whole fabric writes (network_keys)
    algorithm_keys: list[str] = []  # the generators' keys only some algorithms read (Topology.algorithm_keys)
    alone = len(generators) == 1 and not spec.nodes and not spec.links  # the generator builds the whole fabric
    one_host: list[str] = []  # of ``unread``, one host's network keys: said only where no route leaves the host
    capped: list[str] = []  # the keys NCCL's and RCCL's models cap (Topology.capped)
    for i, params in enumerate(generators):
        loc = prefix + (("generate", i) if isinstance(spec.generate, list) else ("generate",))
        try:
            made_nodes, made_links = generate(params)
        except GeneratorError as exc:
            raise source.error(loc + exc.loc, exc.message) from None
        except ValidationError as exc:
            raise source.from_validation(exc, loc, GENERATORS[params["kind"]].params) from None
        nodes += [(n, loc) for n in made_nodes]
        links += [(link, loc) for link in made_links]
        said = dict(unread_keys(params, alone))
        entries = {key: f"{_said_where(source, loc + (key,))}: {why}" for key, why in said.items()}
        unread += entries.values()
        one_host += [entries[key] for key, why in said.items() if why == ONE_HOST_WHY]
        network += [_said_where(source, loc + (key,)) for key in (network_keys(params) if alone else ())]
        # (a key that builds nothing here is said so once, not again of each algorithm that would read it)
        algorithm_keys += [_said_where(source, loc + (key,)) for key in ALGORITHM_KEYS
                           if key in params and key not in said]
        capped += [f"{_said_where(source, loc + (key,))}: {why}" for key, why in library_capped_keys(params)]
    unread += [f"{_said_where(source, prefix + (key,))}: an empty list, so it changed nothing here; leave it out"
               for key in ("nodes", "links") if key in spec.model_fields_set and not getattr(spec, key)]
    nodes += [(n, prefix + ("nodes", i)) for i, n in enumerate(spec.nodes)]
    links += [(link, prefix + ("links", i)) for i, link in enumerate(spec.links)]

    graph = nx.DiGraph(name=spec.name)
    where: dict[str, tuple] = {}
    link_at: dict[tuple[str, str], tuple] = {}  # each direction of a link -> where it is written
    for node, loc in nodes:
        if node.id in where:
            first = source.line(where[node.id])
            raise source.error(loc + ("id",), f"duplicate id {node.id!r} (first defined on line {first})")
        if node.rank is not None and node.kind != "gpu":
            raise source.error(loc + ("rank",), f"only GPUs have ranks; {node.id!r} is a {node.kind}")
        where[node.id] = loc
        hardware = {k: v for k in ("gpu", "transport", "net_latency", "nvls", "sharp")
                    if (v := getattr(node, k)) is not None}
        graph.add_node(node.id, kind=node.kind, host=node.host, rack=node.rack, region=node.region, **hardware)
    for link, loc in links:
        for end in ("a", "b"):
            name = getattr(link, end)
            if name not in where:
                raise source.error(loc + (end,), f"unknown node {name!r}")
        if link.a == link.b:
            raise source.error(loc + ("b",), f"a link from {link.a!r} to itself")
        pairs = [(link.a, link.b)] if link.directed else [(link.a, link.b), (link.b, link.a)]
        for u, v in pairs:
            if graph.has_edge(u, v):
                _add_parallel(graph, u, v, link, loc, source)
                continue
            graph.add_edge(u, v, bandwidth=link.bandwidth, latency=link.latency, line=source.line(loc),
                           **({"type": link.type} if link.type else {}))
            link_at[u, v] = loc

    algorithm_keys += _switch_keys_written(graph, nodes[len(nodes) - len(spec.nodes):], source)
    gpus = _rank_order(nodes, source)
    if not gpus:
        raise source.error(prefix + ("nodes",), "no GPUs: at least one node needs kind: gpu")
    _check_one_place_per_host(nodes, source)
    for node, loc in nodes[len(nodes) - len(spec.nodes):]:  # written node by node (a generator builds none such)
        if node.kind not in ("gpu", "ps") and graph.degree(node.id) == 0:  # (GPUs and servers: must be reachable)
            raise source.error(loc + ("id",), f"the {node.kind} {node.id!r} is joined to nothing: no link names it, so "
                                              "it changes nothing; link it, or leave it out")
    servers = [n for n, kind in graph.nodes(data="kind") if kind == "ps"]
    _check_reachable(graph, gpus + servers, where, source, link_at)
    calibration = None
    if spec.calibration is not None:
        calibration = Path(source.file).parent / spec.calibration
        why = missing_file(calibration, "calibration profile")
        if why:
            raise source.error(prefix + ("calibration",), why)
        calibration = str(calibration)
    topology = Topology(spec.name, graph, gpus, spec.description, source.file, calibration=calibration,
                        routing=spec.routing or "ecmp", unread=tuple(unread), network_keys=tuple(network),
                        algorithm_keys=tuple(algorithm_keys), capped=tuple(capped),
                        make_router=Router)
    if one_host and _routes_cross_nics(topology):  # (routes go by latency: a slow NVLink sends them out)
        topology.unread = tuple(entry for entry in topology.unread if entry not in one_host)
    chips = _nvswitch_chips(topology)
    if chips:  # rare: an NVSwitch written chip by chip is one switch, as NCCL sees it
        chip_links = {(u, v): topology.graph.edges[u, v]["bandwidth"] for group in chips for chip in group
                      for u, v in (*topology.graph.in_edges(chip), *topology.graph.out_edges(chip))}
        topology = Topology(spec.name, _chips_joined(topology.graph, chips, source, where, link_at), gpus,
                            spec.description, source.file, calibration=calibration, routing=topology.routing,
                            unread=topology.unread, network_keys=topology.network_keys,
                            algorithm_keys=topology.algorithm_keys, capped=topology.capped,
                            joined=tuple((group[0], tuple(group)) for group in chips), chip_links=chip_links,
                            make_router=Router)
    marked = _nvls_unsaid(topology)
    routing = spec.routing or default_routing(topology)
    if marked or routing != topology.routing:  # rare: the graph is frozen, so build it again with the facts
        graph = nx.DiGraph(topology.graph)
        for switch in marked:  # a hand-written NVSwitch
            graph.nodes[switch]["nvls"] = True
        topology = Topology(spec.name, graph, gpus, spec.description, source.file, calibration=calibration,
                            routing=routing, unread=topology.unread, network_keys=topology.network_keys,
                            algorithm_keys=topology.algorithm_keys, joined=topology.joined,
                            chip_links=topology.chip_links, make_router=Router)
    _check_nvlink_exists(topology, source)
    _check_nic_ports(topology, source, where, link_at)
    _check_link_rates(topology, source)
    _check_gpu_transports(topology, source, where)
    _check_nvls_gpus(topology, source, where)
    _check_sharp_gpus(topology, source, where)
    if spec.routing is not None and routes_choose(topology):  # judged on a run's routes (part of the fabric)
        topology.network_keys += (_said_where(source, prefix + ("routing",)),)
    elif spec.routing is not None:  # said as a generator key building nothing is
        topology.unread += (f"{_said_where(source, prefix + ('routing',))}: the cables between switches close no "
                            "loop, no NIC has several ports and no route branches between switches (a host's NICs "
                            "are its channels' choice), so every pair has one route and no routing chooses",)
    return topology


def _switch_keys_written(graph: nx.DiGraph, written: list[tuple], source: Source) -> list[str]:
    """Where the first switch written node by node gives ``sharp`` or ``nvls`` (``key (file:line)``),
    the generators' ``ALGORITHM_KEYS`` as a file writes them on a switch: only some algorithms
    read them. Not an ``nvls: true`` that makes its switch the GPUs' own NVLink fabric (a
    switch shared by hosts, or joined to more than GPUs: ``Topology``'s link classes), which
    every run reads."""
    said = []
    for key in ("nvls", "sharp"):
        first = next((loc for node, loc in written if node.kind == "switch" and getattr(node, key) is not None
                      and (key != "nvls" or not node.nvls or host_nvswitch(graph, node.id))), None)
        said += [_said_where(source, first + (key,))] if first else []
    return said


def _said_where(source: Source, loc: tuple) -> str:
    """``key (file:line)`` of the key at ``loc``, ``key (file)`` where the source has no lines
    (a sweep's point, written from the file with its settings)."""
    line = source.line(loc)
    return f"{format_loc(loc)} ({source.file}{f':{line}' if line is not None else ''})"


def routes_choose(topology: Topology) -> bool:
    """Whether ``routing`` may choose a route anywhere: some NIC (or GPU that is its own NIC)
    has several ports, the cables between switches close a loop, or, where they close none,
    some route to an endpoint branches between switches (a GPU cabled to two NVSwitches;
    ``_switches_choose``; a choice between a host's NICs is its channels', not the routing's;
    parallel cables are one link). Else every pair of endpoints has one route whichever the
    routing: one switch, or switches cabled as a tree (two ToRs cabled to each other, racks
    under one spine)."""
    kinds = topology.graph.nodes(data="kind")
    if any(len(topology.ports(node)) > 1 for node, kind in kinds if kind in ("nic", "gpu")):
        return True
    switched = {node for node, kind in kinds if kind == "switch"}  # (a loop through a host's NICs is no choice)
    core = nx.Graph([(u, v) for u, v in topology.links if u in switched and v in switched])
    if core.number_of_edges() > core.number_of_nodes() - nx.number_connected_components(core):
        return True
    return routes_choose_between(topology, [*topology.network_gpus, *topology.parameter_servers])


def routes_choose_between(topology: Topology, ends: list[str]) -> bool:
    """Whether ``routing`` may choose a route between some two of ``ends`` (a run's GPUs and
    servers): a NIC (or GPU that is its own NIC) of their hosts has several ports, or a
    route between them branches between switches (``_switches_choose``)."""
    hosts = {topology.label(end, "host") for end in ends}
    if any(len(topology.ports(node)) > 1 for node, kind in topology.graph.nodes(data="kind")
           if kind in ("nic", "gpu") and topology.label(node, "host") in hosts):
        return True
    return any(_switches_choose(topology.shortest_paths(source)[1], ends, topology.kind) for source in ends)


def _switches_choose(before: dict, ends: list[str], kind: Callable[[str], str]) -> bool:
    """Whether a search's equal-cost predecessors (``before``, as ``Topology.shortest_paths``
    returns them) give a route to some node of ``ends`` a choice between switches, the only
    choice ``routing`` makes (``simnet.topology.routing``: a GPU's or a host's NICs are bound to
    its channels whatever the routing): a node branching on the way to a switch no endpoint
    lies beyond, or between NICs, gives none."""
    on_the_way, stack = set(), list(ends)
    while stack:  # the nodes some shortest route to an endpoint crosses
        node = stack.pop()
        if node not in on_the_way:
            on_the_way.add(node)
            stack.extend(before.get(node, ()))
    return any(len(before.get(node, ())) > 1 and all(kind(p) == "switch" for p in before[node]) for node in on_the_way)


def default_routing(topology: Topology) -> str:
    """The routing of a fabric whose file names none: ``by_destination`` where every NIC
    (every NIC node, a parameter server's too, and every GPU cabled straight to a switch,
    ``Topology.rails``) speaks EFA, else ``ecmp``. AWS's SRD transport sprays each flow's
    packets over every path (up to 64; "A Cloud-Optimized Transport Protocol for Elastic
    and Scalable HPC", IEEE Micro 40(6), 2020): its flows never collide as an ECMP hash
    makes them, and destination routing, free of such collisions, is the nearer of simnet's
    two (docs/topologies.md, "Routing"); an EFA device's NICs fused or written out then
    answer alike."""
    nics = {node for node, kind in topology.graph.nodes(data="kind") if kind == "nic"}
    nics |= {nic for gpus in topology.groups("host").values() for nic, _ in topology.rails(gpus)}
    transports = {topology.transport(nic) for nic in nics}
    return "by_destination" if transports == {"efa"} else "ecmp"


def _nvswitch_chips(topology: Topology) -> list[list[str]]:
    """Switches that join the same GPUs (two or more), each over NVLink both ways and nothing
    else, in file order: the chips of one NVSwitch written chip by chip
    (a DGX H100's four, an NVL72 rack's eighteen). NCCL sees them as one NVSwitch whose link
    to each GPU carries all of that GPU's NVLinks (NVIDIA/nccl v2.30.7 src/graph/topo.cc:
    ncclTopoConnectNodes adds each NVLink's bandwidth to the GPU's link to its one NVS node),
    as the GPU spreads its traffic over every NVLink it has."""
    found: dict[frozenset, list[str]] = {}
    for node, data in topology.graph.nodes(data=True):
        ends = set(topology.graph.successors(node))
        if data["kind"] != "switch" or data.get("sharp") or len(ends) < 2 or not _nvlink_only(topology, node) or \
                ends != set(topology.graph.predecessors(node)) or any(
                    topology.kind(v) != "gpu" or topology.link_type[topology.link_index[(v, node)]] != NVLINK
                    for v in ends):
            continue
        found.setdefault(frozenset(ends), []).append(node)
    return [chips for chips in found.values() if len(chips) > 1]


def _chips_joined(graph: nx.DiGraph, chips: list[list[str]], source: Source, where: dict[str, tuple],
                  link_at: dict[tuple[str, str], tuple]) -> nx.DiGraph:
    """``graph`` with each group of ``chips`` (``_nvswitch_chips``) one switch, the first: its
    link to each GPU (each way) of the bandwidths of the group's links to it added up, their
    latency (one: refused where they differ), and the group's ``nvls`` (refused where the chips
    disagree)."""
    graph = nx.DiGraph(graph)
    for group in chips:
        keep = group[0]
        said = {chip: graph.nodes[chip]["nvls"] for chip in group if "nvls" in graph.nodes[chip]}
        if len(set(said.values())) > 1:
            chip = next(c for c in said if said[c] != next(iter(said.values())))
            raise source.error(where[chip] + ("nvls",), (
                f"{chip!r} joins the same GPUs as {', '.join(c for c in group if c != chip)} over NVLink: chips of one "
                "NVSwitch, one switch to NCCL, and they disagree on nvls; give it on every chip alike"))
        if said:
            graph.nodes[keep]["nvls"] = next(iter(said.values()))
        for chip in group[1:]:
            for gpu in list(graph.successors(chip)):
                for edge, into in (((gpu, chip), (gpu, keep)), ((chip, gpu), (keep, gpu))):
                    written, joined = graph.edges[edge], graph.edges[into]
                    if not math.isclose(written["latency"], joined["latency"], rel_tol=1e-9, abs_tol=1e-18):
                        raise source.error(link_at[edge] + ("latency",), (
                            f"{chip!r} and {keep!r} join the same GPUs over NVLink: chips of one NVSwitch, one switch "
                            f"to NCCL, whose links to {gpu!r} add their bandwidths and share one latency; this one is "
                            f"{units.format_time(written['latency'])}, {keep!r}'s "
                            f"{units.format_time(joined['latency'])}: write them alike"))
                    joined["bandwidth"] += written["bandwidth"]
                    if joined["bandwidth"] > units.BANDWIDTH_RANGE[1]:
                        raise source.error(link_at[edge], (
                            f"the links of {gpu!r} to the chips {', '.join(group)} (one NVSwitch) add up to "
                            f"{units.format_bandwidth(joined['bandwidth'])}, above "
                            f"{units.format_bandwidth(units.BANDWIDTH_RANGE[1])}, the most a link may carry"))
            graph.remove_node(chip)
    return graph


def _nvls_unsaid(topology: Topology) -> list[str]:
    """Switches that say nothing of ``nvls`` and join GPUs over NVLink only, every one of a
    generation with NVLink SHARP (Hopper on): an NVSwitch of such GPUs has it, as the
    generators build one unless told ``nvls: false``. NCCL runs NVLS wherever the driver
    reports multicast (NVIDIA/nccl v2.30.7 src/transport/nvls.cc:248-276 ncclNvlsInit, with
    NCCL_NVLS_ENABLE's default 2), as an NVSwitch of Hopper or later GPUs does;
    ``NCCL_NVLS_ENABLE=0`` takes it away in simnet as in NCCL."""
    found = []
    for node, data in topology.graph.nodes(data=True):
        if data["kind"] != "switch" or "nvls" in data or not _nvlink_only(topology, node):
            continue
        gpus = _nvlink_gpus(topology, node)
        if len(gpus) > 1 and all(topology.gpu_model(g) in GPUS and GPUS[topology.gpu_model(g)].nvls for g in gpus):
            found.append(node)
    return found


def _check_nvls_gpus(topology: Topology, source: Source, where: dict[str, tuple]) -> None:
    """A switch says ``nvls: true`` only where it joins GPUs over NVLink (an NVSwitch: a
    network switch's NVLS would change nothing), and only over GPUs whose generation has
    NVLink SHARP (Hopper on), as the generators require: an A100's NVSwitch cannot reduce."""
    for node, data in topology.graph.nodes(data=True):
        if not data.get("nvls"):
            continue
        if not _nvlink_gpus(topology, node):
            network = any(topology.link_type[topology.link_index[(node, v)]] == NET
                          for v in topology.graph.successors(node))
            raise source.error(where[node] + ("nvls",), (
                f"{node!r} joins no GPU over NVLink, and nvls marks an NVSwitch that reduces for the GPUs linked to it "
                "(NVLink SHARP), so here it changes nothing: leave it out"
                + (" (a network switch that reduces says sharp: true)" if network else "")))
        models = {topology.gpu_model(n) for n in topology.graph.successors(node) if topology.kind(n) == "gpu"}
        lacking = sorted(m for m in models if m in GPUS and not GPUS[m].nvls)
        if lacking:
            raise source.error(where[node] + ("nvls",), f"{node!r} sits under {lacking[0]} GPUs, which have no "
                                                       "NVLink SHARP (NVLS needs Hopper or later): leave nvls out")


def _check_sharp_gpus(topology: Topology, source: Source, where: dict[str, tuple]) -> None:
    """A switch says ``sharp: true`` only where some GPU's library can use it: RCCL (every
    GPU an AMD Instinct) runs no CollNet (NCCL's SHARP plugin), nor does NCCL over EFA or TCP
    sockets alone, so there it changes nothing."""
    for node, data in topology.graph.nodes(data=True):
        if data.get("sharp") and _nvlink_gpus(topology, node) and _nvlink_only(topology, node):
            raise source.error(where[node] + ("sharp",), (
                f"{node!r} joins GPUs over NVLink only (an NVSwitch), and sharp marks a network switch that reduces "
                "(SHARP, NCCL's CollNet), so here it changes nothing: an NVSwitch that reduces says nvls: true"))
    sharp = next((node for node, data in topology.graph.nodes(data=True) if data.get("sharp")), None)
    models = {topology.gpu_model(g) for g in topology.gpus}
    if sharp is not None and all(m in GPUS and GPUS[m].amd for m in models):
        raise source.error(where[sharp] + ("sharp",), f"{sharp!r} reduces in the network, and the GPUs are AMD "
                                                      f"Instinct ({', '.join(sorted(models))}), whose RCCL runs no "
                                                      "CollNet (NCCL's SHARP plugin): leave sharp out")
    transports = {topology.transport(n) for n, kind in topology.graph.nodes(data="kind")
                  if kind == "nic" or (kind == "gpu" and _on_network(topology, n))}
    if sharp is not None and transports and transports <= {"efa", "tcp"}:
        spoken = " and ".join(f"{t} ({_NO_COLLNET[t]})" for t in sorted(transports))
        raise source.error(where[sharp] + ("sharp",), f"{sharp!r} reduces in the network, and the NICs speak "
                                                      f"{spoken}, over which NCCL runs no CollNet (its SHARP plugin "
                                                      "works over InfiniBand verbs): leave sharp out")


_NO_COLLNET = {"efa": "AWS's aws-ofi-nccl plugin, which offers no CollNet", "tcp": "NCCL's socket transport"}
"""Transports over which NCCL has no CollNet: aws-ofi-nccl exports a net plugin only (NCCL logs
"NET/Plugin: Failed to find ncclCollNetPlugin symbol" beside it, aws/aws-ofi-nccl#715 and
NVIDIA/nccl#527), and the socket transport is NCCL's own, without one."""


def _nvlink_gpus(topology: Topology, switch: str) -> list[str]:
    """The GPUs ``switch`` is linked to over NVLink."""
    return [v for v in topology.graph.successors(switch)
            if topology.kind(v) == "gpu" and topology.link_type[topology.link_index[(switch, v)]] == NVLINK]


def _nvlink_only(topology: Topology, switch: str) -> bool:
    """Whether every link out of ``switch`` is NVLink (an NVSwitch's, of one tier or two)."""
    return all(topology.link_type[topology.link_index[(switch, v)]] == NVLINK
               for v in topology.graph.successors(switch))


def _check_gpu_transports(topology: Topology, source: Source, where: dict[str, tuple]) -> None:
    """A GPU names a transport (or net_latency) only when it is its own NIC: cabled straight
    to a network switch (``Topology.rails``); elsewhere its NIC's transport decides."""
    for gpu in topology.gpus:
        data = topology.graph.nodes[gpu]
        key = next((k for k in ("transport", "net_latency") if data.get(k) is not None), None)
        if key and topology.rails([gpu]) != [(gpu, gpu)]:
            raise source.error(where[gpu] + (key,), f"{gpu!r} is no NIC of its own (no network cable to a switch): "
                                                   f"its NIC's {key} counts; give it there")


def _check_nvlink_exists(topology: Topology, source: Source) -> None:
    """A GPU of a generation without NVLink (``l40s``) has no NVLink link (checked only when
    the topology has such a GPU: loading a large fabric walks no links for it)."""
    without = {g for g in topology.gpus if (model := topology.gpu_model(g)) in GPUS and not GPUS[model].nvlink_links}
    if not without:
        return
    for i in np.flatnonzero(topology.link_type == NVLINK).tolist():
        u, v = topology.links[i]
        for gpu in sorted({u, v} & without):
            raise InputError(f"the link {u} -> {v} is an NVLink, but {gpu} is an {topology.gpu_model(gpu)}, which has "
                             "none: join its GPUs through PCIe switches (type: pcie)", source.file,
                             topology.graph.edges[u, v]["line"])


def _check_link_rates(topology: Topology, source: Source) -> None:
    """Every link within the bandwidths simnet accepts (``units.BANDWIDTH_RANGE``), generated
    ones too: a generator's figures (an oversubscription of 1e-9, a NIC's rate split over
    planes) may derive a link beyond them, refused on the generator's line."""
    low, high = units.BANDWIDTH_RANGE
    outside = np.flatnonzero((topology.capacity < low) | (topology.capacity > high))
    if outside.size:
        u, v = topology.links[int(outside[0])]
        raise InputError(f"the link {u} -> {v} runs at {units.format_bandwidth(topology.capacity[outside[0]])}, "
                         "outside 1 Kb/s to 10,000 Tb/s: where a generator built it, its figures (oversubscription, "
                         "bandwidths, planes, spines) derive it", source.file, topology.graph.edges[u, v].get("line"))


def _on_network(topology: Topology, node: str) -> bool:
    """Whether ``node`` has a network (``NET``) link of its own: a NIC's port, a GPU cabled straight to a switch."""
    return any(topology.link_type[topology.link_index[(node, v)]] == NET for v in topology.graph.successors(node))


def _network_switch(topology: Topology, switch: str) -> bool:
    """A switch cabled to NICs or GPUs of two hosts or more: the network's, whatever its labels."""
    return len({topology.graph.nodes[n].get("host") for n in topology.graph.successors(switch)
                if topology.kind(n) in ("nic", "gpu")} - {None}) > 1


def _check_nic_ports(topology: Topology, source: Source, where: dict[str, tuple],
                     link_at: dict[tuple[str, str], tuple]) -> None:
    """A NIC's cable to a network switch (one cabled to NICs or GPUs of two hosts) is its network
    port: typed ``pcie`` or ``nvlink``, or made PCIe by a ``host:`` label on the switch, the NIC
    would have no way to the network in NCCL's model, and no rate (a ring then ran at NCCL's
    search's last speed, 0.12 GB/s). The network's endpoints of the GPUs' hosts (NICs, GPUs
    cabled straight to it) time one network: EFA or not (InfiniBand, RoCE and sockets report
    no latency to NCCL: they time alike) and one ``net_latency``, as NCCL's model takes nodes
    alike (a parameter server's NIC may differ)."""
    for nic in (n for n, kind in topology.graph.nodes(data="kind") if kind == "nic"):
        for other in topology.graph.successors(nic):
            i = topology.link_index[(nic, other)]
            if topology.kind(other) != "switch" or topology.link_type[i] == NET or not _network_switch(topology, other):
                continue
            given = topology.graph.edges[nic, other].get("type")
            why = f"typed {given}" if given is not None else (
                f"{LINK_TYPES[topology.link_type[i]]}, as {other}'s host: label makes it (a network switch carries "
                "none: only a PCIe switch inside a server does)")
            if given is None:  # the switch's host label made the cable PCIe
                at = where[other] + ("host",)
            else:  # the link's own type, where it is written by hand (a generator's entry else)
                at = _type_field(link_at[nic, other])
            raise source.error(at, f"the link {nic} -> {other} joins the NIC to a network switch (cabled to several "
                                   f"hosts), its network port, but is {why}: NCCL would see no way to the network from "
                                   f"{nic}; its cable to the network is type: net (or leave type out)")
    hosts = {topology.graph.nodes[g].get("host") for g in topology.gpus} - {None}
    ends = [n for n, kind in topology.graph.nodes(data="kind") if kind in ("nic", "gpu")
            and topology.graph.nodes[n].get("host") in hosts and _on_network(topology, n)]
    for key, said, timed in (("transport", lambda v: v or "ib", lambda v: v == "efa"),  # ib, roce, tcp time alike
                             ("net_latency", lambda v: "not given" if v is None else units.format_time(v), str)):
        seen = {end: said(topology.graph.nodes[end].get(key)) for end in ends}
        other = next((n for n in ends if timed(seen[n]) != timed(seen[ends[0]])), None)
        if other is not None:
            raise source.error(where[other] + (key,), (
                f"{other}'s {key} ({seen[other]}) differs from {ends[0]}'s ({seen[ends[0]]}): NCCL's model times "
                f"one network for every node (it takes nodes alike), so give every NIC the same {key}"))


def _type_field(written: tuple) -> tuple:
    """Where a link's ``type`` is written: ``links[i].type`` for a link written by hand
    (``written`` ends ``("links", i)``), the generator's entry for one it made."""
    return written + ("type",) if written[-2:-1] == ("links",) else written


def _add_parallel(graph: nx.DiGraph, u: str, v: str, link, loc: tuple, source) -> None:
    """A second link written from ``u`` to ``v``: between two switches, a parallel cable, which
    adds its bandwidth to the link's (as the generators join switches: docs/topologies.md), when
    its latency and type are the link's; anywhere else, or unlike, one line saying so."""
    edge = graph.edges[u, v]
    first = f" (line {edge['line']})" if edge["line"] is not None else ""
    if not (graph.nodes[u]["kind"] == graph.nodes[v]["kind"] == "switch"):
        raise source.error(loc, f"a link {u} -> {v} already exists{first}; only two switches take parallel cables "
                                "(their bandwidths add): write one link")
    if not math.isclose(link.latency, edge["latency"], rel_tol=1e-9, abs_tol=1e-18) or \
            (link.type or None) != edge.get("type"):
        raise source.error(loc, f"a parallel cable {u} -> {v} of another latency or type than the one before{first}; "
                                "parallel cables add their bandwidths and share one latency and type: write them "
                                "alike (the same type on each, or none)")
    if edge["bandwidth"] + link.bandwidth > units.BANDWIDTH_RANGE[1]:
        raise source.error(loc, f"parallel cables {u} -> {v} add up to "
                                f"{units.format_bandwidth(edge['bandwidth'] + link.bandwidth)}, above "
                                f"{units.format_bandwidth(units.BANDWIDTH_RANGE[1])}, the most a link may carry")
    edge["bandwidth"] += link.bandwidth


def _rank_order(nodes: list[tuple[NodeSpec, tuple]], source: Source) -> list[str]:
    """GPUs in rank order: explicit ``rank:`` first claims its slot, the rest fill in file order."""
    gpus = [(n, loc) for n, loc in nodes if n.kind == "gpu"]
    slots: list[str | None] = [None] * len(gpus)
    for node, loc in gpus:
        if node.rank is None:
            continue
        if node.rank >= len(gpus):
            raise source.error(loc + ("rank",), f"rank {node.rank} is out of range; there are {len(gpus)} GPUs")
        if slots[node.rank] is not None:
            raise source.error(loc + ("rank",), f"rank {node.rank} given twice (also {slots[node.rank]!r})")
        slots[node.rank] = node.id
    free = iter(i for i, s in enumerate(slots) if s is None)
    for node, _ in gpus:
        if node.rank is None:
            slots[next(free)] = node.id
    return [s for s in slots if s is not None]


def _check_one_place_per_host(nodes: list[tuple[NodeSpec, tuple]], source: Source) -> None:
    """A host sits in one rack and one region: two would split its GPUs between groups."""
    placed: dict[tuple[str, str], tuple[str, str]] = {}
    for node, loc in nodes:
        for level in ("rack", "region"):
            value = getattr(node, level)
            if node.host is None or value is None:
                continue
            first = placed.setdefault((node.host, level), (value, node.id))
            if first[0] != value:
                raise source.error(loc + (level,), f"host {node.host!r} is in {level} {first[0]!r} (node "
                                                   f"{first[1]!r}); a host sits in one {level}")


def _fabric_reach(graph: nx.DiGraph) -> tuple[dict[str, int], dict[int, frozenset[int]]]:
    """The forwarding nodes' strongly connected components (node -> component) and the
    components each reaches. Where every link between forwarding nodes runs both ways (no
    ``directed: true`` among them, every generated fabric) these are the connected components,
    each reaching only itself: found by a search over the adjacency, not networkx's condensation
    (a second of a 16k-GPU fabric's load)."""
    successors = graph.succ
    fabric = dict.fromkeys(n for n, kind in graph.nodes(data="kind") if kind in FORWARDING_KINDS)  # in node order
    if all(u in successors[v] for u in fabric for v in successors[u] if v in fabric):
        component: dict[str, int] = {}
        labels = 0
        for start in fabric:
            if start in component:
                continue
            label, labels = labels, labels + 1
            component[start] = label
            frontier = [start]
            while frontier:
                u = frontier.pop()
                for v in successors[u]:
                    if v in fabric and v not in component:
                        component[v] = label
                        frontier.append(v)
        return component, {label: frozenset((label,)) for label in range(labels)}
    condensed = nx.condensation(graph.subgraph(fabric))
    component = {member: comp for comp, members in condensed.nodes(data="members") for member in members}
    return component, {c: frozenset(nx.descendants(condensed, c) | {c}) for c in condensed}


def _one_way_in_the_way(graph: nx.DiGraph, a: str, b: str) -> list[tuple[str, str]]:
    """The first one-way link (``directed: true``, in file order) between forwarding nodes
    whose way back would let ``a`` reach ``b`` (a cable between two switches written one way),
    as a list of none or one."""
    ways = nx.DiGraph(graph.subgraph([n for n, kind in graph.nodes(data="kind") if kind in FORWARDING_KINDS]
                                     + [a, b]))
    for u, v in sorted((e for e in ways.edges if not ways.has_edge(e[1], e[0]) and a not in e and b not in e),
                       key=lambda e: graph.edges[e]["line"] or 0):
        ways.add_edge(v, u)
        if nx.has_path(ways, a, b):
            return [(u, v)]
        ways.remove_edge(v, u)
    return []


def _check_reachable(graph: nx.DiGraph, gpus: list[str], where: dict, source: Source,
                     link_at: dict[tuple[str, str], tuple]) -> None:
    """Every GPU (and parameter server) in ``gpus`` must reach every other through
    forwarding nodes (or a direct link). The one left out is blamed on its node, or on a
    one-way link of its (``directed: true``) when it has one: the likelier mistake."""
    component, reach = _fabric_reach(graph)
    reaches_out: dict[frozenset, list[str]] = {}
    reached_in: dict[frozenset, list[str]] = {}
    for gpu in gpus:
        out = frozenset().union(*(reach[component[v]] for v in graph.successors(gpu) if v in component))
        into = frozenset(component[u] for u in graph.predecessors(gpu) if u in component)
        reaches_out.setdefault(out, []).append(gpu)
        reached_in.setdefault(into, []).append(gpu)
    # blame the odd one out: the GPU on the side of the cut with fewer GPUs
    sent_by = {gpu: len(group) for group in reaches_out.values() for gpu in group}
    received_by = {gpu: len(group) for group in reached_in.values() for gpu in group}
    for out, senders in reaches_out.items():
        for into, receivers in reached_in.items():
            if out & into:
                continue
            for a in senders:
                for b in receivers:
                    if a != b and not graph.has_edge(a, b):
                        culprit = b if received_by[b] <= sent_by[a] else a
                        unlinked = graph.degree(culprit) == 0
                        why = "it has no links" if unlinked else "no path through switches or NICs"
                        kinds = {n: "parameter server" if graph.nodes[n]["kind"] == "ps" else "GPU" for n in (a, b)}
                        # its links that run one way only, away from where the route is missing
                        one_way = [e for e in (graph.out_edges(culprit) if culprit == b else
                                               graph.in_edges(culprit)) if not graph.has_edge(e[1], e[0])]
                        one_way = one_way or _one_way_in_the_way(graph, a, b)
                        if one_way:
                            u, v = min(one_way, key=lambda e: graph.edges[e]["line"] or 0)
                            ends = f" {'into' if culprit == b else 'out of'} {culprit!r}" if culprit in (u, v) else ""
                            raise source.error(link_at[u, v], (
                                f"a one-way link (directed: true) {u} -> {v}, and no route leads{ends} the other way, "
                                f"so {kinds[a]} {a!r} cannot reach {kinds[b]} {b!r}; give the way back too"))
                        raise source.error(where[culprit], f"{kinds[a]} {a!r} cannot reach {kinds[b]} {b!r}: {why}")


def _routes_cross_nics(topology: Topology) -> bool:
    """Whether the route between some two GPUs passes a NIC (a host's GPUs joined over
    NVLink slower than the way out through the network and back)."""
    gpus = topology.gpus
    return any(topology.kind(end) == "nic" for a in gpus for b in gpus if a != b
               for link in topology.route(a, b) for end in link)
