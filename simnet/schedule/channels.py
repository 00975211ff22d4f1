"""Channels as NCCL lays them out: which GPUs a channel enters and leaves each host
through, in which order it visits the host's GPUs, and how many of NCCL's channels one
simulated channel stands for.

NCCL opens C channels (``simnet.tuning.search.graph``). Across hosts with R NICs (rails)
each, its ring search pairs the rails (NCCL_CROSS_NIC=2, src/graph/search.cc): channel 2k
enters a host at the GPU next to rail 2k and leaves from the GPU next to rail 2k+1, channel
2k+1 the other way round, and on odd-numbered hosts the two swap (src/graph/connect.cc), so
a channel leaves one host and enters the next on the same rail and every NIC sends one
channel and receives one. Trees enter and leave each host through rail c mod R, the chain
inside the host starting at that rail's GPU.

RCCL on hosts of 8 fully connected AMD GPUs (an xGMI mesh) lays its channels over the
rings of its Rome models instead (``simnet.tuning.search.mesh_rings``): 7 rings and their 7
reverses on one host, so that every directed xGMI link carries two of them; across nodes 8
rings entering through the NIC of their first GPU and leaving through their last's, each
using every directed link once, reversed on hosts of odd index; trees run down the same
orders as chains.

Channels that take the same GPUs in every host follow the same routes, so simnet simulates
one of each, carrying the data of all the NCCL channels it stands for (its ``weight``); on
one host, or without NICs, all channels are alike and one is simulated.

>>> from simnet.topology.loader import load_topology
>>> topo = load_topology("topologies/two_racks.yaml")
>>> rings = channel_groups(topo, topo.gpus, 8, "ring")
>>> len(rings), rings[0].hosts[0].tolist(), rings[0].hosts[1].tolist()
(8, [0, 2, 3, 4, 5, 6, 7, 1], [9, 10, 11, 12, 13, 14, 15, 8])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simnet import units
from simnet.io.budget import check_fits
from simnet.schedule.transfers import Schedule, counted_more, csr_rows, transfer_bytes
from simnet.tuning.search import layout_channels, mesh_rings, net_devices, system_of

__all__ = ["ChannelGroup", "host_positions", "channel_groups", "default_channels", "tree_channels", "ring_layout",
           "send_stripes", "stripe_sends"]


@dataclass(frozen=True)
class ChannelGroup:
    """One simulated channel: how many NCCL channels it stands for (in ``stripes``-ths of a
    channel where the network plugin stripes every send over several NICs), and per host the
    rank positions in visiting order, the GPU it enters through (the head) first and the GPU
    it leaves from last."""

    weight: int
    hosts: list[np.ndarray]
    stripes: int = 1  # the weight counts 1/stripes of an NCCL channel (a plugin striping over NICs)

    @property
    def heads(self) -> np.ndarray:
        """The rank position each host is entered through."""
        return np.array([order[0] for order in self.hosts], dtype=np.int64)


def host_positions(topology, ranks: list[str]) -> list[np.ndarray]:
    """Rank positions grouped by host, hosts in the order their first rank appears."""
    groups: dict[str, list[int]] = {}
    for position, gpu in enumerate(ranks):
        groups.setdefault(topology.label(gpu, "node"), []).append(position)
    return [np.array(members, dtype=np.int64) for members in groups.values()]


def _rail_positions(topology, ranks: list[str], hosts: list[np.ndarray]) -> tuple[list[list[int]], int, bool]:
    """Per host, the rank positions of the GPUs next to its NICs, each GPU once, in NIC order
    (empty: no NICs); how many NICs each of those GPUs has, when every one of every host
    has the same number (else 1); and whether those NICs are one network device per GPU that
    stripes every send over them (EFA's grouped NICs, ``search.net_devices``) rather than
    devices of their own."""
    position = {gpu: i for i, gpu in enumerate(ranks)}
    result, counts, striped = [], set(), False
    for members in hosts:
        gpus = [ranks[i] for i in members]
        rails = topology.rails(gpus)
        near = [position[gpu] for _, gpu in rails if gpu in position]
        result.append(list(dict.fromkeys(near)))
        counts |= {near.count(g) for g in result[-1]}
        striped |= len(net_devices(topology, rails)) < len(rails)
    return result, counts.pop() if len(counts) == 1 else 1, striped


def _spread_over_nics(groups: list[ChannelGroup], nics: int) -> list[ChannelGroup]:
    """Each group's NCCL channels dealt over its GPUs' ``nics`` NICs, as NCCL binds every
    channel to one NIC of the GPU (a GPU with two NICs sends half its channels through
    each): group ``g`` becomes up to ``nics`` groups in a row, the weights dealt evenly;
    routing sends consecutive connections of one pair through consecutive NICs of the GPU
    (``simnet.topology.routing``), so the groups of one layout take different NICs."""
    spread = []
    for group in groups:
        parts = min(group.weight, nics)
        share, extra = divmod(group.weight, parts)
        spread += [ChannelGroup(share + (j < extra), group.hosts) for j in range(parts)]
    return spread


def _stripe(groups: list[ChannelGroup], nics: int) -> list[ChannelGroup]:
    """Each group's channels striped over its GPUs' ``nics`` NICs, as aws-ofi-nccl's RDMA
    protocol splits every send of a grouped device over its rails (aws-ofi-nccl 2daf7d30
    src/nccl_ofi_scheduler.cpp:77-120 set_schedule_by_threshold: a send of 64 bytes or more,
    OFI_NCCL_SCHED_MAX_SMALL_RR_SIZE include/nccl_ofi_param.h:166, is cut into a stripe per
    128 KiB, OFI_NCCL_MIN_STRIPE_SIZE :160, up to one per rail, and the sends rotate over the
    rails, so every rail carries an equal share): group ``g``
    becomes ``nics`` groups in a row, each carrying 1/``nics`` of its data (weight in
    ``nics``-ths of a channel), which routing sends through consecutive NICs of the GPU."""
    return [ChannelGroup(group.weight, group.hosts, nics) for group in groups for _ in range(nics)]


def _over_ports(groups: list[ChannelGroup], ports: int) -> list[ChannelGroup]:
    """Each group's channels split over the ``ports`` ports (planes) of its NICs, as NCCL
    splits every send of a NIC over its ports (``Topology.ports``: net_ib/p2p.cc:110-116,
    connect.cc:658, v2.30.7): group ``g`` becomes ``ports`` groups in a row, each carrying
    1/``ports`` of its data, which routing sends through consecutive ports of the NIC."""
    if ports == 1:
        return groups
    return [ChannelGroup(group.weight, group.hosts, group.stripes * ports) for group in groups for _ in range(ports)]


def default_channels(topology, ranks: list[str]) -> int:
    """The channels NCCL's topology search would open for a ring here (its search graph)."""
    return layout_channels(system_of(topology, ranks), "Ring")


def tree_channels(topology, ranks: list[str]) -> int:
    """The C whose 2C channels run the trees here, half on each tree of the double binary
    tree: NCCL's search channels, which it duplicates (connect.cc ncclTopoPostset). RCCL runs
    its trees on its communicator's channels however many the search found (A connect.cc:284-365:
    over its gfx94 channel limit of 32 the search's channels are split between the two trees,
    else duplicated), and does not duplicate past its cap (:628-660): half of them, 32 across
    nodes of 8 MI300X (64 channels, not 128)."""
    return layout_channels(system_of(topology, ranks), "Tree")


def _order(members: np.ndarray, enter: int, leave: int) -> np.ndarray:
    """The host's GPUs from ``enter`` to ``leave``, the others in rank order (rotated) between."""
    rotated = np.roll(members, -int(np.flatnonzero(members == enter)[0]))
    middle = [m for m in rotated[1:].tolist() if m != leave]
    return np.array([enter] + middle + ([leave] if leave != enter else []), dtype=np.int64)


def _layout(rails: list[int], channel: int, host: int, kind: str) -> tuple[int, int]:
    """(enter, leave) rank positions of ``channel`` in a host with these rails."""
    r = len(rails)
    if kind in ("tree", "nvls"):
        head = rails[channel % r]
        return head, head
    c = channel ^ 1 if host % 2 else channel  # odd hosts swap each pair, so rails line up host to host
    a, b = rails[(c - c % 2) % r], rails[(c - c % 2 + 1) % r]
    return (a, b) if c % 2 == 0 else (b, a)


def channel_groups(topology, ranks: list[str], channels: int, kind: str = "ring") -> list[ChannelGroup]:
    """The simulated channels for ``channels`` NCCL channels over ``ranks``: ``kind`` is
    ``ring`` (rails in pairs), ``tree`` (one rail per channel) or ``nvls`` (one rail per
    channel, each head GPU sending through one network device: NCCL's NVLS graph gives each
    head the one NIC it was found with, src/graph/search.cc:754-770 and getNvlsNetDev
    search.cc:1372-1394, v2.30.7); see the module docstring. The weights sum to
    ``channels`` (times ``stripes`` where the plugin stripes over several NICs, or a NIC's
    sends are split over its ports)."""
    if channels < 1:
        raise ValueError("channels must be at least 1")
    hosts = host_positions(topology, ranks)
    rails, nics, striped = (_rail_positions(topology, ranks, hosts) if len(hosts) > 1
                            else ([[] for _ in hosts], 1, False))
    rings = mesh_rings(system_of(topology, ranks))
    if rings is not None:  # (their NICs, and ports, as every host's: below)
        groups = _mesh_groups(hosts, rings, channels, kind)
    elif min(len(r) for r in rails) == 0:
        return [ChannelGroup(channels, hosts)]
    else:
        layouts: dict[tuple, int] = {}
        for c in range(channels):
            key = tuple(_layout(host_rails, c, h, kind) for h, host_rails in enumerate(rails))
            layouts[key] = layouts.get(key, 0) + 1
        groups = [ChannelGroup(weight, [_order(members, enter, leave) for members, (enter, leave) in zip(hosts, key)])
                  for key, weight in layouts.items()]
    if nics > 1:
        groups = _stripe(groups, nics) if striped else groups if kind == "nvls" else _spread_over_nics(groups, nics)
    return _over_ports(groups, topology.ports_per_nic)


def _mesh_groups(hosts: list[np.ndarray], rings: list[tuple[int, ...]], channels: int, kind: str) -> list[ChannelGroup]:
    """RCCL's channels on xGMI mesh hosts: channel c visits each host's GPUs (device order =
    rank order in the host) in the order of ``rings[c mod len(rings)]``, a ring reversed on
    hosts of odd index (parseA2a8P: reverse = hostIdx % 2), a tree's chain never."""
    layouts: dict[tuple, int] = {}
    for c in range(channels):
        order = list(rings[c % len(rings)])
        key = tuple(tuple(members[order[::-1] if kind == "ring" and h % 2 else order].tolist())
                    for h, members in enumerate(hosts))
        layouts[key] = layouts.get(key, 0) + 1
    return [ChannelGroup(weight, [np.array(order, dtype=np.int64) for order in key]) for key, weight in layouts.items()]


def ring_layout(topology, ranks: list[str], channels: int | None) -> tuple[int, list[ChannelGroup], np.ndarray]:
    """NCCL's ring channels over ``ranks``: (channels, default NCCL's; the simulated
    groups; each group's weight, the NCCL channels it stands for)."""
    channels = channels or default_channels(topology, ranks)
    groups = channel_groups(topology, ranks, channels, "ring")
    return channels, groups, np.array([g.weight for g in groups])


def send_stripes(topology, nodes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per node of ``nodes``: its node as NCCL sees it (an index: a GPU's host or NVLink
    domain; any other node one of its own), and how many stripes a send of it that leaves
    that node is cut into: one per NIC the network plugin stripes its sends over (a GPU's:
    the NICs of its device, ``search.net_devices``, more than one only where EFA's plugin
    groups a GPU's NICs; aws-ofi-nccl 2daf7d30 src/nccl_ofi_scheduler.cpp:77-120) times one
    per port of each NIC (NCCL splits every send of a NIC over its ports, net_ib/p2p.cc:110-116,
    v2.30.7; ``Topology.ports_per_nic``)."""
    hosts: dict[str, int] = {}
    host_of = np.array([hosts.setdefault(topology.label(node, "node") if topology.kind(node) == "gpu" else f"\0{node}",
                                         len(hosts)) for node in nodes], dtype=np.int64)
    position = {node: i for i, node in enumerate(nodes)}
    stripes = np.ones(len(nodes), dtype=np.int64)
    for host, gpus in topology.groups("node").items():
        if host in hosts:
            for device in net_devices(topology, topology.rails(gpus)):
                for _, gpu in device:
                    if gpu in position:
                        stripes[position[gpu]] = len(device)
    return host_of, stripes * topology.ports_per_nic


def _stripes_of(schedule: Schedule, topology) -> np.ndarray:
    """Per transfer of ``schedule``, the stripes it is cut into where it goes over the network,
    to a GPU of another node or to a parameter server (not to a switch: NVLS's NVSwitch is in
    the host): one per NIC of its sending GPU's device and per port of each NIC
    (``send_stripes``), as long as each has a byte; else 1."""
    host_of, stripes = send_stripes(topology, schedule.nodes)
    kind = np.array([topology.kind(node) for node in schedule.nodes])
    src, dst = schedule.src, schedule.dst
    network = (kind[src] == "gpu") & np.isin(kind[dst], ("gpu", "ps")) & (host_of[src] != host_of[dst])
    cut = np.where(network, stripes[src], 1)
    return np.maximum(1, np.minimum(cut, schedule.nbytes))


def stripe_sends(schedule: Schedule, topology, size: int) -> Schedule:
    """``schedule`` with every transfer that leaves its sender's host from a GPU whose NICs a
    network plugin groups into one device (EFA, ``send_stripes``) or whose NICs have
    several ports (planes) cut into one stripe per NIC and port (``_stripes_of``), as
    aws-ofi-nccl stripes every send of such a device (2daf7d30
    src/nccl_ofi_scheduler.cpp:77-120) and NCCL every send of a NIC over its ports, NCCL's
    send/recv too. Stripe j of a transfer on connection c is connection c x (the most
    stripes) + j, which routing sends through consecutive NICs, and ports, of the GPU.
    Whatever waited for the transfer waits for all its stripes, and stripe j of the next
    transfer of a FIFO connection for its stripe j (a transfer not striped itself, for its
    first: equal stripes on equal NICs leave together, but one NIC slowed by a fault lets it
    start before the slow stripe has left). For the algorithms whose builders do not lay
    their sends over NICs themselves (``Algorithm.stripes``); ``schedule`` itself where no
    transfer is striped. ``size``: the collective's bytes as given, for a refusal."""
    cut = _stripes_of(schedule, topology)
    if (cut == 1).all():
        return schedule
    total = int(cut.sum())
    check_fits(total * transfer_bytes(schedule.algorithm),
               f"{schedule.algorithm} over {len(schedule.ranks):,} GPUs at {units.format_size(size)}, its sends "
               f"across hosts striped over their NICs and ports, needs {total:,} transfers to build and replay",
               "use fewer GPUs, a larger chunk_size or another algorithm")
    if counted_more(total - len(schedule)):  # a count (count_transfers): the stripes counted, nothing built
        return schedule
    nbytes = schedule.nbytes
    first = np.cumsum(cut) - cut  # the id of each transfer's stripe 0
    piece = np.repeat(np.arange(len(schedule)), cut)  # the transfer each stripe cuts
    j = np.arange(total) - first[piece]
    count, lo = cut[piece], schedule.lo[piece]
    span = nbytes[piece]
    channel = schedule.channel[piece]
    channel = np.where(count > 1, channel * int(cut.max()) + j, channel).astype(schedule.channel.dtype)
    deps = schedule.dep_idx.astype(np.int64)  # each dependency on a transfer: on every stripe of it
    width = cut[deps]
    expanded = np.repeat(first[deps], width) + np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
    owner = np.repeat(np.arange(len(schedule)), np.diff(schedule.dep_ptr))
    lengths = np.bincount(owner, weights=width, minlength=len(schedule)).astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(lengths)])
    after = schedule.after_sent[piece]
    held = np.maximum(after, 0)
    return Schedule(
        algorithm=schedule.algorithm, nodes=list(schedule.nodes), ranks=list(schedule.ranks), size=schedule.size,
        src=schedule.src[piece], dst=schedule.dst[piece], lo=lo + span * j // count,
        hi=lo + span * (j + 1) // count, op=schedule.op[piece], step=schedule.step[piece],
        chunk=schedule.chunk[piece], channel=channel,
        dep_ptr=np.concatenate([[0], np.cumsum(lengths[piece])]).astype(schedule.dep_ptr.dtype),
        dep_idx=csr_rows(ptr, expanded, piece).astype(schedule.dep_idx.dtype),
        after_sent=np.where(after >= 0, first[held] + np.minimum(j, cut[held] - 1), -1).astype(
            schedule.after_sent.dtype),
        info=dict(schedule.info))
