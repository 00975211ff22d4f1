"""From a timed schedule to what a person reads: per-link reports and warnings with remedies.

``link_reports`` turns the network's link statistics into ``LinkReport`` rows ordered by
the bottleneck ranking (longest saturated first, then busiest on average, then by name, its
numbers read as numbers), the one order the results table, the warnings and the plots all
use. ``find_warnings`` flags:

* ``nic_overload``: a machine's port (a link touching a GPU, NIC, host bridge or
  parameter server) busy most of the run with many flows crowding it (incast);
* ``link_congestion``: a switch-to-switch link saturated most of the run by several flows;
* ``nic_idle``: NICs of GPUs with several NICs that carried nothing while others were busy;
* ``idle_servers``: parameter servers in the topology that the run left unused.
"""

from __future__ import annotations

import numpy as np

from simnet import units
from simnet.results.result import Finding, LinkReport
from simnet.schedule.catalog import algorithms_for
from simnet.schedule.channels import send_stripes
from simnet.topology.graph import PS_PER_SECOND, Topology, natural_key
from simnet.topology.hardware import GPUS

__all__ = ["link_reports", "find_warnings", "after_end", "OVERLOAD_SATURATION", "OVERLOAD_FLOWS", "IDLE_NICS_MATTER",
           "ENDPOINT_KINDS"]

OVERLOAD_SATURATION = 0.5
"""A link (or port) saturated for at least this share of the run is worth a warning..."""
OVERLOAD_FLOWS = 8
"""...when at least this many flows crowded a machine's port at once (incast), or 2 a fabric link.
Algorithms that keep a few flows per port (a double binary tree has 4) are not incast. The
stripes of one send over a GPU's NICs and ports (``schedule.channels.send_stripes``: EFA's
device, a NIC on two planes) are one flow to its port: at a GPU's port the flows are counted
in sends, as on the one NIC of their summed speed the same hardware is written as."""
IDLE_NICS_MATTER = 0.25
"""``nic_idle`` only when some NIC that carried data was busy at least this share of the run on
average: below it bandwidth is not what sets the time (an 8-byte AllReduce runs on one channel
and leaves most NICs idle, as NCCL does), so idle NICs change nothing."""
ENDPOINT_KINDS = frozenset({"nic", "host", "ps", "gpu"})
"""A link touching one of these is a machine's network attachment (nic_overload), else a fabric link."""
ROUNDING = 1e-9
"""Relative residue of floating-point load sums; a peak within it of 1.0 is exactly full."""


def link_reports(replay) -> list[LinkReport]:
    """Every link that carried data, in bottleneck order (see the module docstring)."""
    topo, stats = replay.topology, replay.stats
    capacity = stats.capacity  # the rates the replay ran at (a model's effective rates), healthy
    duration = replay.latest_ps  # (a lower bound's statistics are its steady pass's, over that pass)
    used = np.flatnonzero(stats.bytes > 0)
    if duration <= 0 or not len(used):
        return []
    seconds = duration / PS_PER_SECOND
    offered = stats.mean_capacity(duration)  # what faults left of it, on average
    mean = np.zeros(len(capacity))
    mean[used] = stats.bytes[used] / (offered[used] * seconds)  # a link that carried bytes had some capacity
    saturated = stats.saturated_ps[used] / duration
    # ties by name, its numbers read as numbers (gpu2 before gpu11): a file's order counts for nothing
    named = sorted(used.tolist(), key=lambda i: (natural_key(topo.links[i][0]), natural_key(topo.links[i][1])))
    by_name = np.empty(len(capacity), dtype=np.int64)
    by_name[named] = np.arange(len(named))
    order = used[np.lexsort((by_name[used], -mean[used], -saturated))]
    peak = np.where(np.abs(stats.peak - 1.0) <= ROUNDING, 1.0, stats.peak)
    return [LinkReport(src=topo.links[i][0], dst=topo.links[i][1], capacity_Bps=float(capacity[i]),
                       bytes=float(stats.bytes[i]),
                       mean_utilization=float(mean[i]),
                       peak_utilization=float(peak[i]),
                       saturated_fraction=float(stats.saturated_ps[i] / duration),
                       port_saturated_fraction=float(stats.either_saturated_ps[i] / duration),
                       max_flows=int(stats.max_flows[i]), mean_capacity_Bps=float(offered[i])) for i in order]


def _idle_nics(topo: Topology, links: list[LinkReport], down: frozenset[int] = frozenset(),
               channelled: bool = True) -> list[Finding]:
    """``nic_idle`` when a run across hosts left unused some NICs of GPUs that have several and
    used some (the channels of such a GPU are dealt over all of them, as NCCL binds a channel
    to one NIC): the answer holds for the NICs that carried data, not for all the hardware. A
    GPU whose NICs all carried nothing sent nothing across hosts: idle however its NICs are
    written (one of their summed speed would be idle too)."""
    hosts = topo.groups("node")
    if len(hosts) < 2:
        return []
    used = {link.src for link in links} | {link.dst for link in links}
    nics = []
    for members in hosts.values():
        rails = topo.rails(members)
        many = {gpu for _, gpu in rails if sum(g == gpu for _, g in rails) > 1}
        sending = {gpu for nic, gpu in rails if nic in used}
        nics += [nic for nic, gpu in rails if gpu in many & sending]
    nics = [nic for nic in nics if not (topo.ports(nic) and all(topo.link_index[(nic, port)] in down
                                                                for port in topo.ports(nic)))]  # down: not idle
    idle = [nic for nic in nics if nic not in used]
    if not idle:
        return []
    busy = set(nics) - set(idle)
    if max((link.mean_utilization for link in links if link.src in busy or link.dst in busy), default=0.0) \
            < IDLE_NICS_MATTER:
        return []  # latency-bound: NCCL runs a small collective on fewer channels than NICs, and the others idle
    fewer = "; fewer channels (options.channels, NCCL_MAX_NCHANNELS, a small collective) use fewer"
    return [Finding("nic_idle", idle[0], (
        f"{len(idle)} of the {len(nics)} NICs of the GPUs that sent across hosts through some of their several "
        "NICs carried nothing "
        f"({', '.join(idle[:4])}{', ...' if len(idle) > 4 else ''}): the time is what the others deliver. "
        "Remedy: NCCL's ring or tree deal their channels over every NIC of a GPU (compare -a ring)"
        f"{fewer if channelled else ''}. If a GPU's NICs are the ports "
        "of one card (a dual-port "
        "ConnectX, as on OCI's BM.GPU.H100.8), NCCL merges them into one device: write one NIC at their summed "
        "rate, or the product's server: (docs/topologies.md)"))]


def _capacity(link: LinkReport) -> str:
    """The link's capacity for a message: healthy, or what faults left of it on average and healthy."""
    healthy = f"{link.capacity_Bps / 1e9:.4g} GB/s"
    if link.mean_capacity_Bps == link.capacity_Bps:
        return healthy
    return f"{link.mean_capacity_Bps / 1e9:.4g} GB/s on average under the faults ({healthy} healthy)"


def _machine(topo: Topology, link: LinkReport) -> str | None:
    """The machine (GPU, NIC, host bridge, ps) this link attaches to the network, if any;
    between two of them (a GPU's cable to its NIC) the one nearer the network."""
    ends = [node for node in (link.dst, link.src) if topo.kind(node) in ENDPOINT_KINDS]
    return min(ends, key=lambda node: _NEARER_THE_NETWORK.index(topo.kind(node)), default=None)


_NEARER_THE_NETWORK = ("ps", "nic", "host", "gpu")


def _alternatives(topo: Topology, collective: str, algorithm: str) -> list[str]:
    """What a remedy may suggest instead: the collective's own algorithms among the usual ones
    that can run on ``topo``'s GPUs. PAT runs at one GPU per node (NCCL's ``ncclPatEnable``,
    src/graph/tuning.cc, v2.30.7) and on NVIDIA GPUs (RCCL leaves it off); hierarchical needs
    a node of several GPUs (with one each, it sends what a flat ring does)."""
    table = algorithms_for(collective)
    runs = {"pat": lambda: not any(GPUS[m].amd for m in filter(None, map(topo.gpu_model, topo.gpus)) if m in GPUS)
            and all(len(gpus) == 1 for gpus in topo.groups("node", topo.gpus).values()),
            "hierarchical": lambda: any(len(gpus) > 1 for gpus in topo.groups("node", topo.gpus).values())}
    return [a for a in ("ring", "hierarchical", "pat", "pairwise")
            if a in table and a != algorithm and runs.get(a, lambda: True)()]


def _coarser_groups(topo: Topology, group_by: str | None) -> list[str]:
    """Levels above ``group_by`` (default: node) some GPU of ``topo`` is labelled with, that group
    its GPUs into fewer groups than ``group_by`` does: what hierarchical's ``group_by`` may be
    instead."""
    level = group_by or "node"
    rank = {"host": 0, "node": 0, "rack": 1, "region": 2}
    groups = len(topo.groups(level, topo.gpus))
    return [coarser for coarser in ("rack", "region") if rank[coarser] > rank[level]
            and any(topo.label(gpu, coarser) != gpu for gpu in topo.gpus)
            and len(topo.groups(coarser, topo.gpus)) < groups]


def _port_remedy(topo: Topology, algorithm: str, machine_kind: str, collective: str,
                 servers: list[str] | None = None) -> str:
    """What may relieve an overloaded port of ``machine_kind`` under ``algorithm`` (ps: its
    ``servers``, if known)."""
    if algorithm == "ps":
        own = len(topo.parameter_servers)  # options.ps_servers takes at most these (kind: ps), where there are any
        if own and servers is not None and len(servers) >= own:
            serving = "the topology's one parameter server (kind: ps) serves" if own == 1 else \
                f"all {own} of the topology's parameter servers (kind: ps) serve"
            return (f"shard the server over more parameter servers ({serving} already: add more, a ps_star's "
                    "generate.servers: K, then options.ps_servers: K) or use a collective such as ring")
        bound = f", up to the topology's {own} parameter servers" if own else ""
        return f"shard the server (options.ps_servers: K{bound}) or use a collective such as ring"
    if machine_kind == "ps":
        return "use more parameter servers or a faster server NIC"
    others = " or ".join(_alternatives(topo, collective, algorithm))
    if not others:
        return "a faster port, or fewer flows through it (pxn: to route sends through the peer's rail)"
    return (f"a faster port, or fewer flows through it: compare {others} here (-a), which may or may not "
            "be faster on this fabric")


def _fabric_remedy(topo: Topology, algorithm: str, collective: str, group_by: str | None) -> str:
    coarser = _coarser_groups(topo, group_by)
    if algorithm == "hierarchical" and coarser:
        try_instead = f"a coarser group_by ({', '.join(coarser)}), so fewer shards cross"
    elif "hierarchical" in _alternatives(topo, collective, algorithm):
        try_instead = "hierarchical, which sends 1/g of the data across for g GPUs per group"
    else:
        try_instead = " or ".join(_alternatives(topo, collective, algorithm) or ["a placement with fewer flows across"])
    return (f"more bandwidth on this tier (lower oversubscription), or less traffic across it: compare "
            f"{try_instead} (it may or may not be faster here)")


def find_warnings(topo: Topology, links: list[LinkReport], time_s: float, algorithm: str = "",
                  servers: list[str] | None = None, collective: str = "allreduce",
                  down: frozenset[int] = frozenset(), servers_named: bool = False,
                  group_by: str | None = None) -> list[Finding]:
    """Warnings for the ``links`` of one run of ``collective``'s ``algorithm`` (see the module
    docstring); remedies name only algorithms the collective has that can run on these GPUs,
    and for hierarchical (grouped at ``group_by``, default node) only coarser levels the GPUs
    are labelled with (``servers_named``: ps's ``servers`` came from its ``ps_server``, not a
    count). ``down``: directed links a
    fault took down during the run (a NIC whose network links all went down is not idle: it
    is down, which the conditions say).

    A port's two directions are judged together by the time *either* was saturated (a
    parameter server is saturated inbound while workers push, then outbound while they
    pull: busy the whole run), so overlapping saturation is never counted twice.
    """
    findings = []
    ports: dict[str, dict[frozenset, list[LinkReport]]] = {}
    run = units.format_time(time_s)
    sprayed = ""
    if topo.routing == "ecmp" and topo.derived("efa_nics", lambda t: any(
            t.transport(n) == "efa" for n, d in t.graph.nodes(data=True) if d["kind"] == "nic")):
        # AWS's SRD sends each flow's packets over every path (up to 64), where ECMP hashes a flow onto one
        sprayed = (" (on EFA, AWS's SRD transport sprays each flow's packets over every path rather than hashing "
                   "it onto one, as routing: ecmp does here: where hashes collide, routing: by_destination (an EFA "
                   "fabric's default when its file names none), free of "
                   "collisions, comes closer to it)")
    for link in links:
        machine = _machine(topo, link)
        if machine is None:
            if link.saturated_fraction >= OVERLOAD_SATURATION and link.max_flows >= 2:
                findings.append(Finding("link_congestion", link.name, (
                    f"{link.name}: {link.max_flows} flows shared {_capacity(link)}, saturated "
                    f"{link.saturated_fraction:.0%} of the {run} run; {units.format_size(link.bytes)} crossed it, "
                    f"{units.format_time(link.bytes / link.mean_capacity_Bps)} even at full speed"
                    f"{'' if link.mean_capacity_Bps == link.capacity_Bps else ' of what the faults left it'}. Remedy: "
                    f"{_fabric_remedy(topo, algorithm, collective, group_by)}{sprayed}")))
            continue
        ports.setdefault(machine, {}).setdefault(frozenset((link.src, link.dst)), []).append(link)
    crowded = {}  # machine -> (its busiest cable's links, busy share, most flows): those that may warn
    for machine, cables in ports.items():  # one warning per machine, about its busiest cable
        pair = max(cables.values(), key=lambda links: max(link.port_saturated_fraction for link in links))
        busy = max(link.port_saturated_fraction for link in pair)
        flows = max(link.max_flows for link in pair)
        if busy >= OVERLOAD_SATURATION and flows >= OVERLOAD_FLOWS:
            crowded[machine] = (pair, busy, flows)
    gpus = [machine for machine in crowded if topo.kind(machine) == "gpu"]  # (stripes asked of these alone)
    striped = dict(zip(gpus, send_stripes(topo, gpus)[1].tolist())) if gpus else {}
    for machine, (pair, busy, flows) in crowded.items():
        if topo.kind(machine) == "nic" and not {pair[0].src, pair[0].dst} & set(topo.ports(machine)):
            striped[machine] = topo.ports_per_nic  # its GPU side carries a send once per port it is split over
        flows = -(-flows // striped.get(machine, 1))  # in sends (OVERLOAD_FLOWS)
        if flows < OVERLOAD_FLOWS:
            continue
        worst = pair[0]  # links come in bottleneck order: the port's link the results table would name
        pair = sorted(pair, key=lambda link: link.dst != machine)  # inbound first
        each = " and ".join(f"{link.name} {link.saturated_fraction:.0%}" for link in pair)
        moved = " and ".join(f"{units.format_size(link.bytes)} {'in' if link.dst == machine else 'out'}"
                             for link in pair)
        findings.append(Finding("nic_overload", worst.name, (
            f"{machine} port: {flows} flows shared {_capacity(worst)}; saturated {each} "
            f"of the {run} run (one direction or the other {busy:.0%}); {moved} through this one port. "
            f"Remedy: {_port_remedy(topo, algorithm, topo.kind(machine), collective, servers)}")))
    table = algorithms_for(collective)
    findings += _idle_nics(topo, links, down, algorithm not in table or "channels" in table[algorithm].options)
    idle = [s for s in topo.parameter_servers if servers is not None and s not in servers]
    if algorithm == "ps" and idle:
        every = len(topo.parameter_servers)
        remedy = (f"options.ps_server names {', '.join(servers[:4])}{', ...' if len(servers) > 4 else ''}; naming "
                  f"every one there (or leaving it out with options.ps_servers: {every})" if servers_named else
                  f"options.ps_servers: {every}")
        findings.append(Finding("idle_servers", idle[0], (
            f"{len(idle)} of {every} parameter servers carried nothing "
            f"({', '.join(idle[:4])}{', ...' if len(idle) > 4 else ''}). Remedy: {remedy} shards the gradient over "
            "all of them")))
    return findings


def after_end(late: list, faults: int, end_s: float, beside: str = "") -> Finding:
    """``fault_after_end``: the faults of ``late`` (of ``faults``) come at or after the run's
    end (``end_s``) and changed nothing (``beside``: what else they did not change either)."""
    return Finding("fault_after_end", "", (
        f"{len(late)} of {faults} faults come at or after the run's end ({units.format_time(end_s)}){beside}: "
        f"{'; '.join(f'faults[{f.index}] {f.what}' for f in late[:3])}{'; ...' if len(late) > 3 else ''} changed "
        "nothing; give an earlier at:"))
