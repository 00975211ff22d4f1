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
from simnet.schedule.algorithms.tree import dtree_parents, tree_allreduce, tree_depth
from simnet.schedule.channels import channel_groups, default_channels
from simnet.schedule.registry import chunk_count, register
from simnet.schedule.transfers import COPY, REDUCE, Schedule, ScheduleBuilder, in_order, split_range
from simnet.topology.graph import Topology

__all__ = ["nvls", "nvls_tree", "collnet_direct", "collnet_chain", "nvls_switch", "sharp_tree", "NVLS_CHUNK"]

NVLS_CHUNK = 128 * 1024
"""NCCL_NVLS_CHUNKSIZE's default, 128 KiB (NVIDIA/nccl v2.30.7 src/transport/nvls.cc)."""


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
def _intra_reduce(b: ScheduleBuilder, how: str, order: np.ndarray, switch: int | None, cuts: np.ndarray,
                  channel: int) -> np.ndarray:
    """Reduce each chunk of one host into its head (``order[0]``); returns the (chunks,)
    ids after which the head holds the host's sum of each chunk."""
    chunks = len(cuts) - 1
    piece = {"lo": cuts[None, :-1], "hi": cuts[None, 1:], "chunk": np.arange(chunks)[None, :], "channel": channel}
    head, rest = order[0], order[1:]
    if len(order) == 1:
        return np.full(chunks, -1, dtype=np.int64)
    if how == "nvls":
        ids = b.next_ids((len(order), chunks))
        b.add(order[:, None], switch, op=REDUCE, after_sent=in_order(ids), step=0, **piece)
        summed = b.join(switch, ids.T)
        into_head = b.next_ids((1, chunks))
        b.add(switch, head, op=COPY, deps=[summed[None, :]], after_sent=in_order(into_head), step=0, **piece)
        return into_head[0]
    if how == "direct":
        ids = b.next_ids((len(rest), chunks))
        b.add(rest[:, None], head, op=REDUCE, after_sent=in_order(ids), step=0, **piece)
        return b.join(head, ids.T)
    # chain: the tail sends first, every GPU forwards its running sum towards the head
    previous = np.full(chunks, -1, dtype=np.int64)
    for src, dst in zip(order[::-1][:-1], order[::-1][1:]):
        ids = b.next_ids((1, chunks))
        b.add(src, dst, op=REDUCE, deps=[previous[None, :]], after_sent=in_order(ids), step=0, **piece)
        previous = ids[0]
    return previous


def _intra_broadcast(b: ScheduleBuilder, how: str, order: np.ndarray, switch: int | None, cuts: np.ndarray,
                     final: np.ndarray, channel: int) -> None:
    """Send each chunk's result from the head (``order[0]``, final after ``final[j]``) to its host."""
    chunks = len(cuts) - 1
    piece = {"lo": cuts[None, :-1], "hi": cuts[None, 1:], "chunk": np.arange(chunks)[None, :], "channel": channel}
    head, rest = order[0], order[1:]
    if len(order) == 1:
        return
    if how == "nvls":  # the head writes the chunk into the switch, which multicasts it to every GPU
        to_switch = b.next_ids((1, chunks))
        b.add(head, switch, op=COPY, deps=[final[None, :]], after_sent=in_order(to_switch), step=1, **piece)
        ids = b.next_ids((len(order), chunks))
        b.add(switch, order[:, None], op=COPY, deps=[to_switch], after_sent=in_order(ids), step=1, **piece)
    elif how == "direct":
        ids = b.next_ids((len(rest), chunks))
        b.add(head, rest[:, None], op=COPY, deps=[final[None, :]], after_sent=in_order(ids), step=1, **piece)
    else:
        previous = final
        for src, dst in zip(order[:-1], order[1:]):
            ids = b.next_ids((1, chunks))
            b.add(src, dst, op=COPY, deps=[previous[None, :]], after_sent=in_order(ids), step=1, **piece)
            previous = ids[0]


def _two_level(b: ScheduleBuilder, topology: Topology, ranks: list[str], size: int, intra: str, inter: str,
               chunk_size: int, channels: int) -> None:
    """Per channel group: reduce into each host's head (``intra``), AllReduce across the heads
    (``inter``: NCCL's double binary tree, or SHARP), broadcast back (``intra``)."""
    groups = channel_groups(topology, ranks, channels, "tree")
    trees = 2 if inter == "tree" else 1
    weights = np.array([g.weight for _ in range(trees) for g in groups]) * (2 // trees if inter == "tree" else 1)
    total = channels * (2 if inter == "tree" else 1)
    edges = split_range(0, size, total)[np.concatenate([[0], np.cumsum(weights)])]
    channel = 0
    for t in range(trees):
        for group in groups:
            lo, hi = int(edges[channel]), int(edges[channel + 1])
            cuts = split_range(lo, hi, chunk_count(hi - lo, chunk_size * int(weights[channel])))
            host_switch = [b.node(nvls_switch(topology, [ranks[i] for i in order])) if intra == "nvls" else None
                           for order in group.hosts]
            head_ready = np.stack([_intra_reduce(b, intra, order, sw, cuts, channel)
                                   for order, sw in zip(group.hosts, host_switch)])
            heads = group.heads
            if inter == "tree":
                parents = dtree_parents(len(heads))[t]
                members = heads
            else:
                nodes, parents = sharp_tree(topology, [ranks[h] for h in heads], channel)
                b.info["sharp_height"] = max(b.info.get("sharp_height", 0), tree_depth(parents) - 1)
                members = np.array([b.node(n) for n in nodes], dtype=np.int64)
                head_ready = np.concatenate([head_ready, np.full((len(members) - len(heads), len(cuts) - 1), -1)])
            final = tree_allreduce(b, members, parents, lo, hi, head_ready, len(cuts) - 1, channel, per_chunk=True)
            for h, (order, sw) in enumerate(zip(group.hosts, host_switch)):
                _intra_broadcast(b, intra, order, sw, cuts, final[h], channel)
            inside = max(len(order) for order in group.hosts) - 1
            hops = {"nvls": 2, "direct": 1, "chain": inside}[intra] if inside else 0
            b.info.setdefault("pipeline", {})[channel] = (2 * hops + 2 * tree_depth(parents), len(cuts) - 1,
                                                          2 * tree_depth(parents))
            channel += 1
    b.info["channels"] = channels
    b.info["channel_weights"] = weights.tolist()


# ----------------------------------------------------------------- algorithms
@register("nvls", "NVLink SHARP (NCCL NVLS): the NVSwitch reduces each chunk and multicasts it back",
          "one host, k chunks of c bytes: 2*(L + c/B) + (k-1)*c/B (each GPU link carries S up and S down)",
          options=("chunk_size", "channels"))
def nvls(topology: Topology, ranks: list[str], size: int, chunk_size: int = NVLS_CHUNK,
         channels: int = 16) -> Schedule:
    """NVLS AllReduce in chunks of ``chunk_size`` per channel (default NCCL's 128 KiB) on
    ``channels`` channels (NCCL's 16 on Hopper), simulated as one moving their chunks together:
    each GPU sends a chunk to the switch, which reduces it and multicasts the sum to every GPU.

    On one host, path latency L (GPU to switch) and bandwidth B: ``2*(L + c/B) +
    (k-1)*c/B``. Across hosts NCCL runs NVLS only with SHARP switches in the network
    (CollNet); simnet then reduces each host into its heads by NVLS and across hosts by SHARP.
    """
    b = ScheduleBuilder("nvls", ranks, size)
    hosts = topology.groups("node", ranks)
    if len(hosts) == 1:
        position = np.arange(len(ranks))
        switch = b.node(nvls_switch(topology, ranks))
        members = np.append(position, switch)
        parents = np.append(np.full(len(ranks), len(ranks)), -1)
        chunks = chunk_count(size, chunk_size * channels)
        tree_allreduce(b, members, parents, 0, size, np.full(len(members), -1), chunks)
        b.info["channels"] = channels
        b.info["pipeline"] = {0: (2, chunks, 0)}
        return b.build()
    if not any(topology.graph.nodes[n].get("sharp") for n in topology.nodes):
        raise Unsupported("nvls across hosts: NCCL runs NVLS across nodes only with SHARP switches in the network "
                          "(CollNet; sharp: true on the fabric's switches), and this topology has none; use nvls_tree")
    _two_level(b, topology, ranks, size, "nvls", "sharp", chunk_size, default_channels(topology, ranks))
    return b.build()


@register("nvls_tree",
          "NCCL NVLSTree: NVLS inside each host into the rail GPUs, double binary tree between hosts, NVLS back",
          "per channel of k chunks of c bytes: 2*(L_nvls + c/B) + 2*D_hosts*(L_net + c/B_net) + (k-1)*c/B_min",
          options=("chunk_size", "channels"))
def nvls_tree(topology: Topology, ranks: list[str], size: int, chunk_size: int = NVLS_CHUNK,
              channels: int | None = None) -> Schedule:
    """NVLSTree over several hosts: per channel, NVLS reduces each chunk into the host's head
    (the GPU at the channel's NIC rail), the heads AllReduce it on NCCL's double binary tree
    between hosts (channels alternate the two trees), NVLS multicasts it back."""
    if len(topology.groups("node", ranks)) < 2:
        raise Unsupported("nvls_tree runs across hosts (NCCL disables NVLSTree on one node); use nvls")
    b = ScheduleBuilder("nvls_tree", ranks, size)
    _two_level(b, topology, ranks, size, "nvls", "tree", chunk_size, channels or default_channels(topology, ranks))
    return b.build()


def _collnet(name: str, intra: str):
    def build(topology: Topology, ranks: list[str], size: int, chunk_size: int = 512 * 1024,
              channels: int | None = None) -> Schedule:
        if len(topology.groups("node", ranks)) < 2:
            raise Unsupported(f"{name} runs across hosts (NCCL enables CollNet from two nodes on)")
        b = ScheduleBuilder(name, ranks, size)
        _two_level(b, topology, ranks, size, intra, "sharp", chunk_size,
                   channels or default_channels(topology, ranks))
        return b.build()

    build.__name__ = name
    build.__doc__ = (f"{name}: each host's GPUs reduce each chunk into the channel's head "
                     f"({'directly' if intra == 'direct' else 'along a chain'}), the heads reduce through the "
                     "SHARP switches and get the sum back, the head sends it to its host.")
    return build


collnet_direct = register(
    "collnet_direct", "NCCL CollNetDirect: GPUs reduce into each rail's head directly, SHARP switches reduce across "
    "hosts", "per channel of k chunks of c bytes: 2*(L_in + (G-1)*c/B_in) + 2*H*(L_net + c/B_net) + (k-1)*c/B_min, "
    "H the hops to the aggregation root", options=("chunk_size", "channels"))(_collnet("collnet_direct", "direct"))
collnet_chain = register(
    "collnet_chain", "NCCL CollNetChain: a chain through each host's GPUs to the head, SHARP switches reduce across "
    "hosts", "per channel of k chunks of c bytes: 2*((G-1)*(L_in + c/B_in) + H*(L_net + c/B_net)) + (k-1)*c/B_min",
    options=("chunk_size", "channels"))(_collnet("collnet_chain", "chain"))
