"""AllReduce with reduction in the switches: NVLink SHARP (NVLS) and network SHARP (CollNet).

A switch that reduces is a node of the schedule like a parameter server: GPUs add their
data into it (``REDUCE``), it sends the sum on (``COPY``). Its buffer starts empty.

* ``nvls`` (NCCL's ``NVLS``, one host): every GPU sends each chunk to the NVSwitch, which
  reduces and multicasts the sum back: about S per GPU each way, where a ring moves
  2(N-1)/N S. Across hosts NCCL pairs NVLS with SHARP in the network, as ``nvls`` does
  here when the fabric has SHARP switches.
* ``nvls_tree`` (``NVLSTree``): per channel, NVLS reduces each host's chunk into the GPU at
  the channel's NIC rail (the head), the heads run NCCL's double binary tree between hosts,
  and NVLS multicasts the result from each head to its host.
* ``collnet_direct`` (``CollNetDirect``): every GPU sends each channel's share to that
  channel's head directly; the heads reduce through the SHARP switches (an aggregation
  tree up to one switch and back); each head sends the result to every GPU of its host.
* ``collnet_chain`` (``CollNetChain``): the same with a chain through each host's GPUs.

Every phase is pipelined chunk by chunk: a chunk moves on as soon as it is in.
"""

from __future__ import annotations

import numpy as np

from simnet.errors import Unsupported
from simnet.schedule.algorithms.tree import dtree_parents, tree_depth, tree_lanes
from simnet.schedule.channels import channel_groups, default_channels
from simnet.schedule.lanes import ChunkLanes, LaneProgram
from simnet.schedule.registry import chunk_count, register
from simnet.schedule.transfers import COPY, REDUCE, Schedule, split_range
from simnet.topology.graph import Topology
from simnet.tuning.search import graph, system_of

__all__ = ["nvls", "nvls_tree", "collnet_direct", "collnet_chain", "nvls_switch", "sharp_tree", "NVLS_CHUNK",
           "nvls_program", "nvls_tree_program"]

COLLNET_MAX_LOCAL = 8
"""The most GPUs of a communicator on one node that CollNet runs with (NCCL_MAX_DIRECT_ARITY + 1,
src/enqueue.cc:2001-2003, v2.30.7, on maxLocalRanks; ``simnet.tuning.predict`` holds NCCL's model to
it too, by ``System.max_local``)."""

NVLS_CHUNK = 128 * 1024
"""NCCL_NVLS_CHUNKSIZE's default, 128 KiB (NVIDIA/nccl v2.30.7 src/transport/nvls.cc)."""


LONE_GPU = ("NCCL runs no NVLS where a node holds one GPU of the communicator (ncclNvlsInit returns when the "
            "node's GPU count is under 2: src/transport/nvls.cc:262, v2.30.7)")
"""Why NVLS and NVLSTree are refused over ranks one of whose nodes holds one of them: that
rank's NVLS graph has no channel, and every rank takes the fewest any has (src/init.cc,
AllGather3's alignment of ``graphs[a]->nChannels``)."""


def _nvls_hosts(topology: Topology, ranks: list[str]) -> dict[str, list[str]]:
    """``ranks`` by host, refused (``LONE_GPU``) where a host holds one of several."""
    hosts = topology.groups("node", ranks)
    if len(ranks) > 1 and min(len(gpus) for gpus in hosts.values()) < 2:
        raise Unsupported(f"{LONE_GPU}; use tree or ring")
    return hosts


def nvls_switch(topology: Topology, gpus: list[str]) -> str:
    """The NVLS-capable NVSwitch every one of ``gpus`` (one host) attaches to."""
    common = None
    for gpu in gpus:
        switches = {n for n in topology.graph.successors(gpu)
                    if topology.kind(n) == "switch" and topology.graph.nodes[n].get("nvls")}
        common = switches if common is None else common & switches
    if not common:
        host = topology.label(gpus[0], "node")
        raise Unsupported(f"NVLS needs an NVSwitch that reduces (nvls: true, an H100 or later) under every GPU of "
                          f"host {host!r}; this topology has none")
    return min(common, key=topology.node_index.__getitem__)


def sharp_tree(topology: Topology, heads: list[str], channel: int) -> tuple[list[str], np.ndarray]:
    """SHARP's aggregation tree over ``heads``: (nodes, parents as indices, -1 for the root).

    The root is the SHARP switch closest to all heads (fewest hops to the farthest, then
    lowest latency; channels rotate among equals so they spread over the spines); every
    head's parent is the first SHARP switch on its route to the root, every switch's the
    next one on its own route, so each switch reduces what reaches it from below.
    """
    sharp = [n for n in topology.nodes if topology.kind(n) == "switch" and topology.graph.nodes[n].get("sharp")]
    if not sharp:
        raise Unsupported("CollNet needs switches that reduce in the network (sharp: true on the fabric's "
                          "switches); this topology has none")
    cost = {}
    for switch in sharp:
        done, _ = topology.shortest_paths(switch)
        if all(h in done for h in heads):
            cost[switch] = (max(done[h][1] for h in heads), max(done[h][0] for h in heads))
    if not cost:
        raise Unsupported("no SHARP switch is reachable from every host")
    best = min(cost.values())
    ties = [s for s in sharp if cost.get(s) == best]
    root = ties[channel % len(ties)]
    nodes = list(heads)
    parent_of: dict[str, str] = {}
    frontier = list(heads)
    while frontier:
        node = frontier.pop()
        path = [v for _, v in topology.route(node, root, channel)]
        above = next((v for v in path if v in cost or v == root), root) if node != root else None
        if above is None:
            continue
        parent_of[node] = above
        if above not in nodes:
            nodes.append(above)
            frontier.append(above)
    index = {n: i for i, n in enumerate(nodes)}
    parents = np.array([index[parent_of[n]] if n in parent_of else -1 for n in nodes], dtype=np.int64)
    return nodes, parents


# ----------------------------------------------------------------- phases
_NONE = np.zeros(0, dtype=np.int64)


def _intra_reduce(lanes: ChunkLanes, how: str, order: np.ndarray, switch: int | None, channel: int) -> np.ndarray:
    """Lanes reducing each chunk of one host into its head (``order[0]``); returns the lanes
    after whose chunk j the head holds the host's sum of chunk j (none for one GPU)."""
    head, rest = order[0], order[1:]
    if len(order) == 1:
        return _NONE
    if how == "nvls":  # every GPU adds its chunk into the switch, which sends the sum to the head
        into_switch = lanes.add(order, switch, channel, REDUCE, 0, [_NONE] * len(order))
        return lanes.add(switch, head, channel, COPY, 0, [into_switch])
    if how == "direct":
        return lanes.add(rest, head, channel, REDUCE, 0, [_NONE] * len(rest))
    # chain: the tail sends first, every GPU forwards its running sum towards the head
    previous = _NONE
    for src, dst in zip(order[::-1][:-1], order[::-1][1:]):
        previous = lanes.add(src, dst, channel, REDUCE, 0, [previous])
    return previous


def _intra_broadcast(lanes: ChunkLanes, how: str, order: np.ndarray, switch: int | None, final: np.ndarray,
                     channel: int) -> None:
    """Lanes sending each chunk's result from the head (``order[0]``, final after chunk j of
    the lanes ``final``) to its host."""
    head, rest = order[0], order[1:]
    if len(order) == 1:
        return
    if how == "nvls":  # the head writes the chunk into the switch, which multicasts it to every GPU
        to_switch = lanes.add(head, switch, channel, COPY, 1, [final])
        lanes.add(switch, order, channel, COPY, 1, [to_switch] * len(order))
    elif how == "direct":
        lanes.add(head, rest, channel, COPY, 1, [final] * len(rest))
    else:
        previous = final
        for src, dst in zip(order[:-1], order[1:]):
            previous = lanes.add(src, dst, channel, COPY, 1, [previous])


def _two_level(algorithm: str, topology: Topology, ranks: list[str], size: int, intra: str, inter: str,
               chunk_size: int, channels: int, layout: str = "tree") -> LaneProgram:
    """Per channel group: reduce into each host's head (``intra``), AllReduce across the heads
    (``inter``: NCCL's double binary tree, or SHARP), broadcast back (``intra``); every lane
    carries its channel's chunks in order, chunk j moving on once chunk j is in. ``layout``:
    the heads' channels as ``channel_groups`` lays them out (``nvls``: a head sends through
    one network device)."""
    groups = channel_groups(topology, ranks, channels, layout)
    trees = 2 if inter == "tree" else 1
    weights = np.array([g.weight for _ in range(trees) for g in groups])
    edges = split_range(0, size, int(weights.sum()))[np.concatenate([[0], np.cumsum(weights)])]
    lanes, chunks, info = ChunkLanes(ranks), [], {}
    host_switch = [lanes.node(nvls_switch(topology, [ranks[i] for i in order])) if intra == "nvls" else None
                   for order in groups[0].hosts]  # every group lists the hosts in one order
    for c, (t, group) in enumerate((t, g) for t in range(trees) for g in groups):
        chunks.append(chunk_count(int(edges[c + 1] - edges[c]), max(1, chunk_size * int(weights[c]) // group.stripes)))
        ready = [_intra_reduce(lanes, intra, order, sw, c) for order, sw in zip(group.hosts, host_switch)]
        if inter == "tree":
            members, parents = group.heads, dtree_parents(len(group.hosts))[t]
        else:
            nodes, parents = sharp_tree(topology, [ranks[h] for h in group.heads], c)
            info["sharp_height"] = max(info.get("sharp_height", 0), tree_depth(parents) - 1)
            members = np.array([lanes.node(n) for n in nodes], dtype=np.int64)
            ready += [_NONE] * (len(members) - len(group.hosts))
        final = tree_lanes(lanes, members, parents, c, ready)
        for order, sw, done in zip(group.hosts, host_switch, final):
            _intra_broadcast(lanes, intra, order, sw, done, c)
        inside = max(len(order) for order in group.hosts) - 1
        hops = {"nvls": 2, "direct": 1, "chain": inside}[intra] if inside else 0
        info.setdefault("pipeline", {})[c] = (2 * hops + 2 * tree_depth(parents), chunks[-1], 2 * tree_depth(parents))
    info["channels"] = channels
    info["channel_weights"] = weights.tolist()
    return lanes.program(algorithm, size, edges, chunks, info)


def nvls_heads(topology: Topology, ranks: list[str]) -> int:
    """The channels of NCCL's NVLS graph, one head GPU per channel and no GPU twice (NVIDIA/nccl
    v2.30.7 src/graph/search.cc:1126-1128 maxChannels = min(NCCL_MAX_NVLS_ARITY, GPUs),
    search.cc:754-770 no duplicate head); NVLSTree's every compute channel spreads its data
    over these heads (src/graph/connect.cc:248-266 connectNvls, nvls.up[h] for every head),
    each head sending across hosts through the one NIC its graph channel found
    (getNvlsNetDev, search.cc:1372-1394), whatever the NICs per GPU."""
    return graph(system_of(topology, ranks), "NVLS").channels


# ----------------------------------------------------------------- algorithms
def nvls_program(topology: Topology, ranks: list[str], size: int, chunk_size: int = NVLS_CHUNK,
                 channels: int = 16) -> LaneProgram:
    """``nvls`` as a ``LaneProgram``: on one host a lane from every GPU into the switch and
    one back, across hosts ``_two_level`` with SHARP between the hosts."""
    hosts = _nvls_hosts(topology, ranks)
    if len(hosts) == 1:
        lanes = ChunkLanes(ranks)
        switch = lanes.node(nvls_switch(topology, ranks))
        chunks = chunk_count(size, chunk_size * channels)
        tree_lanes(lanes, np.append(np.arange(len(ranks)), switch), np.append(np.full(len(ranks), len(ranks)), -1), 0)
        return lanes.program("nvls", size, np.array([0, size]), [chunks],
                             {"channels": channels, "pipeline": {0: (2, chunks, 0)}})
    if not any(topology.graph.nodes[n].get("sharp") for n in topology.nodes):
        raise Unsupported("nvls across hosts: NCCL runs NVLS across nodes only with SHARP switches in the network "
                          "(CollNet; sharp: true on the fabric's switches), and this topology has none; use nvls_tree")
    return _two_level("nvls", topology, ranks, size, "nvls", "sharp", chunk_size, default_channels(topology, ranks))


@register("nvls", "NVLink SHARP (NCCL NVLS): the NVSwitch reduces each chunk and multicasts it back",
          "one host, k chunks of c bytes: 2*(L + c/B) + (k-1)*c/B (each GPU link carries S up and S down)",
          options=("chunk_size", "channels"), program=nvls_program, sums_in_switch=True)
def nvls(topology: Topology, ranks: list[str], size: int, chunk_size: int = NVLS_CHUNK,
         channels: int = 16) -> Schedule:
    """NVLS AllReduce in chunks of ``chunk_size`` per channel (default NCCL's 128 KiB) on
    ``channels`` channels (NCCL's 16 on Hopper), simulated as one moving their chunks together:
    each GPU sends a chunk to the switch, which reduces it and multicasts the sum to every GPU.

    On one host, path latency L (GPU to switch) and bandwidth B: ``2*(L + c/B) +
    (k-1)*c/B``. Across hosts NCCL runs NVLS only with SHARP switches in the network
    (CollNet); simnet then reduces each host into its heads by NVLS and across hosts by SHARP.
    """
    return nvls_program(topology, ranks, size, chunk_size, channels).to_schedule()


def nvls_tree_program(topology: Topology, ranks: list[str], size: int, chunk_size: int = NVLS_CHUNK,
                      channels: int | None = None) -> LaneProgram:
    """``nvls_tree`` as a ``LaneProgram`` (``_two_level``, NVLS inside the hosts, trees between)."""
    if len(_nvls_hosts(topology, ranks)) < 2:
        raise Unsupported("nvls_tree runs across hosts (NCCL disables NVLSTree on one node); use nvls")
    return _two_level("nvls_tree", topology, ranks, size, "nvls", "tree", chunk_size,
                      channels or nvls_heads(topology, ranks), "nvls")


@register("nvls_tree",
          "NCCL NVLSTree: NVLS inside each host into the rail GPUs, double binary tree between hosts, NVLS back",
          "per channel of k chunks of c bytes: 4*(L_nv + c/B) + 2*D_hosts*(L_net + c/B_net) + (k-1)*c/B_min, L_nv "
          "a GPU to its NVSwitch (a chunk goes into the switch, on to the head, back into the switch, out to the "
          "GPUs), B and B_net the channel's rates",
          options=("chunk_size", "channels"), program=nvls_tree_program)
def nvls_tree(topology: Topology, ranks: list[str], size: int, chunk_size: int = NVLS_CHUNK,
              channels: int | None = None) -> Schedule:
    """NVLSTree over several hosts: per channel, NVLS reduces each chunk into the host's head
    (the GPU at the channel's NIC rail), the heads AllReduce it on NCCL's double binary tree
    between hosts (channels alternate the two trees), NVLS multicasts it back."""
    return nvls_tree_program(topology, ranks, size, chunk_size, channels).to_schedule()


def _collnet(name: str, intra: str):
    """(the lane program, the schedule) of CollNet with ``intra`` inside each host."""
    def program(topology: Topology, ranks: list[str], size: int, chunk_size: int = 512 * 1024,
                channels: int | None = None) -> LaneProgram:
        hosts = topology.groups("node", ranks)
        if len(hosts) < 2:
            raise Unsupported(f"{name} runs across hosts (NCCL enables CollNet from two nodes on)")
        if max(len(gpus) for gpus in hosts.values()) > COLLNET_MAX_LOCAL:
            raise Unsupported(f"{name} runs across hosts of at most {COLLNET_MAX_LOCAL} GPUs each (NCCL skips "
                              "CollNet where a node holds more: NCCL_MAX_DIRECT_ARITY + 1, src/enqueue.cc, v2.30.7)")
        return _two_level(name, topology, ranks, size, intra, "sharp", chunk_size,
                          channels or default_channels(topology, ranks))

    def build(topology: Topology, ranks: list[str], size: int, chunk_size: int = 512 * 1024,
              channels: int | None = None) -> Schedule:
        return program(topology, ranks, size, chunk_size, channels).to_schedule()

    build.__name__ = name
    build.__doc__ = (f"{name}: each host's GPUs reduce each chunk into the channel's head "
                     f"({'directly' if intra == 'direct' else 'along a chain'}), the heads reduce through the "
                     "SHARP switches and get the sum back, the head sends it to its host.")
    return program, build


_direct_program, _direct = _collnet("collnet_direct", "direct")
collnet_direct = register(
    "collnet_direct", "NCCL CollNetDirect: GPUs reduce into each rail's head directly, SHARP switches reduce across "
    "hosts", "per channel of k chunks of c bytes: 2*(L_in + (G-1)*c/B_in) + 2*H*(L_net + c/B_net) + (k-1)*c/B_min, "
    "H the hops to the aggregation root", options=("chunk_size", "channels"), program=_direct_program)(_direct)
_chain_program, _chain = _collnet("collnet_chain", "chain")
collnet_chain = register(
    "collnet_chain", "NCCL CollNetChain: a chain through each host's GPUs to the head, SHARP switches reduce across "
    "hosts", "per channel of k chunks of c bytes: 2*((G-1)*(L_in + c/B_in) + H*(L_net + c/B_net)) + (k-1)*c/B_min",
    options=("chunk_size", "channels"), program=_chain_program)(_chain)
