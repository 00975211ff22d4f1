"""Pipelined trees: NCCL's Tree, and the textbook binary and double binary trees.

The buffer is cut into k chunks. Each chunk is reduced up the tree (a node forwards chunk
j to its parent once chunk j arrived from all its children) and broadcast back down from
the root; reduction and broadcast of different chunks overlap, as in NCCL. Each
connection (child -> parent, parent -> child) sends its chunks in order.

Tree shapes follow NCCL's ``ncclGetBtree``/``ncclGetDtree`` (src/graph/trees.cc): rank 0
is the root with a single child; the second tree of the double binary tree is the mirror
image of the first (even N) or the first shifted by one rank (odd N), so that a rank
interior in one tree is a leaf in the other, except rank 0 for odd N (interior in both).

* ``tree`` is NCCL's Tree: a double binary tree between *hosts* (by host index), a chain
  through the GPUs inside each host from the GPU at the channel's NIC rail, the two trees
  on alternating channels (NCCL gives channel c < C the first tree, c + C the second).
* ``binary_tree`` and ``double_binary_tree`` are the textbook trees over all ranks.
"""

from __future__ import annotations

import numpy as np

from simnet.schedule.channels import ChannelGroup, channel_groups, tree_channels
from simnet.schedule.lanes import ChunkLanes, LaneProgram
from simnet.schedule.registry import chunk_count, register
from simnet.schedule.transfers import COPY, REDUCE, Schedule, ScheduleBuilder, in_order, split_range
from simnet.topology.graph import Topology

PIPELINE_CHUNK = 4 * 2**20
"""Default piece size of tree pipelines, 4 MiB (NCCL's default buffer per channel): without
pieces a tree would move the whole buffer hop by hop and never pipeline. Smaller pieces
shave the pipeline's fill time (2*D pieces) but cost simulation time per piece."""

__all__ = ["btree_parents", "dtree_parents", "tree_depth", "tree_allreduce", "tree_part", "double_binary_tree_part",
           "tree", "binary_tree", "double_binary_tree", "nccl_tree_parents", "PIPELINE_CHUNK",
           "tree_program", "tree_lanes"]


def btree_parents(n: int) -> np.ndarray:
    """Parent of each rank in NCCL's binary tree over ranks 0..n-1 (root 0: parent -1).

    >>> btree_parents(6).tolist()
    [-1, 2, 4, 2, 0, 4]
    """
    parents = np.full(n, -1, dtype=np.int64)
    for rank in range(1, n):
        bit = rank & -rank  # lowest set bit
        up = (rank ^ bit) | (bit << 1)
        parents[rank] = up if up < n else rank ^ bit
    return parents


def dtree_parents(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents in NCCL's two complementary trees: the btree, and its mirror (even n) or shift (odd n)."""
    first = btree_parents(n)
    ranks = np.arange(n)
    if n % 2 == 0:
        mirrored = first[n - 1 - ranks]
        second = np.where(mirrored < 0, -1, n - 1 - mirrored)
    else:
        shifted = first[(ranks - 1) % n]
        second = np.where(shifted < 0, -1, (shifted + 1) % n)
    return first, second


def tree_depth(parents: np.ndarray) -> int:
    """Edges on the longest root-to-leaf path."""
    depth = _depths(parents)
    return int(depth.max()) if len(depth) else 0


def _depths(parents: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parents), dtype=np.int64)
    for v in range(len(parents)):
        u, d = v, 0
        while parents[u] >= 0:
            u, d = parents[u], d + 1
            if d > len(parents):
                raise ValueError("parents do not form a tree")
        depth[v] = d
    return depth


def tree_allreduce(b: ScheduleBuilder, members: np.ndarray, parents: np.ndarray, lo, hi, ready: np.ndarray,
                   chunks: int, channel=0) -> np.ndarray:
    """Pipelined reduce + broadcast of ``[lo, hi)`` over ``members`` arranged by ``parents``
    (indices into ``members``, -1 for the root). ``ready[i]``: id after which member i's
    data is final (-1: from the start). Returns (m, D) ids completing each member (-1 padded).
    ``members`` of shape (R, m) are R such trees side by side, alike in shape and ``chunks``
    (``lo``, ``hi`` and ``channel`` one per tree, ``ready`` (R, m)), in one builder batch per
    level: their ids come as (R, m, D).
    """
    batched = np.ndim(members) == 2
    members = np.atleast_2d(members)
    trees, m = members.shape
    ready = np.asarray(ready, dtype=np.int64).reshape(trees, m)[:, :, None]
    if m == 1:
        return ready[:, :1] if batched else ready[0, :1]
    lo, hi = (np.broadcast_to(np.asarray(edge, dtype=np.int64), (trees,)) for edge in (lo, hi))
    depth = _depths(parents)
    root = int(np.flatnonzero(parents < 0)[0])
    children = [np.flatnonzero(parents == v) for v in range(m)]
    width = max(len(c) for c in children)
    child_matrix = np.full((m, width), -1, dtype=np.int64)
    for v, kids in enumerate(children):
        child_matrix[v, : len(kids)] = kids
    cuts = np.stack([split_range(int(a), int(z), chunks) for a, z in zip(lo.tolist(), hi.tolist())])
    piece = {"lo": cuts[:, None, :-1], "hi": cuts[:, None, 1:], "chunk": np.arange(chunks)[None, None, :],
             "channel": np.broadcast_to(np.asarray(channel), (trees,))[:, None, None]}
    up = np.full((trees, m, chunks), -1, dtype=np.int64)  # v -> parent(v), chunk j
    down = np.full((trees, m, chunks), -1, dtype=np.int64)  # parent(v) -> v, chunk j
    levels = [np.flatnonzero((depth == d) & (parents >= 0)) for d in range(int(depth.max()), 0, -1)]

    for nodes in levels:  # reduce, deepest level first: a node sends chunk j once its children's arrived
        ids = b.next_ids((trees, len(nodes), chunks))
        kids = child_matrix[nodes]
        from_kids = [np.where(kids[None, :, c, None] >= 0, up[:, np.maximum(kids[:, c], 0)], -1) for c in range(width)]
        # the parent's own chunk must be in place before anything is added to it (it may be a copy landing)
        b.add(members[:, nodes, None], members[:, parents[nodes], None], op=REDUCE,
              deps=[*from_kids, ready[:, nodes], ready[:, parents[nodes]]], after_sent=in_order(ids), step=0, **piece)
        up[:, nodes] = ids
    root_done = [up[:, c] for c in child_matrix[root] if c >= 0]  # the root holds chunk j's sum
    for nodes in reversed(levels):  # broadcast, from the root's children down
        ids = b.next_ids((trees, len(nodes), chunks))
        above = parents[nodes]
        at_root = (above == root)[None, :, None]
        deps = [np.where(at_root, done_j[:, None, :], down[:, above]) for done_j in root_done]
        b.add(members[:, above, None], members[:, nodes, None], op=COPY,
              deps=deps + [np.where(at_root, ready[:, root][:, None, :], -1)], after_sent=in_order(ids), step=1,
              **piece)
        down[:, nodes] = ids
    done = down.copy()
    root_kids = child_matrix[root][child_matrix[root] >= 0]
    done[:, root] = -1
    root_done = np.concatenate([up[:, root_kids].reshape(trees, -1), ready[:, root]], axis=1)
    result = np.full((trees, m, max(chunks, root_done.shape[1])), -1, dtype=np.int64)
    result[:, :, :chunks] = done
    result[:, root, : root_done.shape[1]] = root_done
    return result if batched else result[0]


def _chunks_alike(widths, chunk_size: int | None) -> int:
    """The pipeline pieces of trees side by side of these byte ``widths``: one count for all."""
    counts = {chunk_count(int(w), chunk_size) for w in np.atleast_1d(widths).tolist()}
    if len(counts) != 1:
        raise ValueError(f"trees side by side take one chunk count, not {sorted(counts)}")
    return counts.pop()


def tree_part(b: ScheduleBuilder, members: np.ndarray, lo, hi, ready: np.ndarray,
              chunk_size: int | None = PIPELINE_CHUNK, channel=0) -> np.ndarray:
    """Binary-tree AllReduce of ``[lo, hi)`` over ``members`` (NCCL's btree on their order);
    rows of ``members`` run side by side as ``tree_allreduce``'s do."""
    return tree_allreduce(b, members, btree_parents(np.shape(members)[-1]), lo, hi, ready,
                          _chunks_alike(np.subtract(hi, lo), chunk_size), channel)


def double_binary_tree_part(b: ScheduleBuilder, members: np.ndarray, lo, hi, ready: np.ndarray,
                            chunk_size: int | None = PIPELINE_CHUNK, channel=0) -> np.ndarray:
    """Two complementary trees, each on half of ``[lo, hi)``, on channels ``channel`` and
    ``channel + 1``; rows of ``members`` run side by side as ``tree_allreduce``'s do."""
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    middle = lo + (hi - lo) // 2
    chunks = _chunks_alike(middle - lo, chunk_size)
    done = [tree_allreduce(b, members, parents, part_lo, part_hi, ready, chunks, np.add(channel, t))
            for t, (parents, part_lo, part_hi) in enumerate(zip(dtree_parents(np.shape(members)[-1]), (lo, middle),
                                                                    (middle, hi)))]
    return np.concatenate(done, axis=-1)


_TREE_FORM = ("2*D*(L + S/(k*B)) + (k-1)*S/(k*B), D = depth of NCCL's binary tree (ceil(lg N) for N > 1), "
              "on dedicated links (full mesh)")


@register("binary_tree", "textbook pipelined binary tree over all ranks: reduce to the root, broadcast down",
          _TREE_FORM, options=("chunk_size",))
def binary_tree(topology: Topology, ranks: list[str], size: int, chunk_size: int = PIPELINE_CHUNK) -> Schedule:
    """Pipelined binary-tree AllReduce in k = ceil(S / chunk_size) chunks (default 4 MiB).

    Contention-free time when every tree edge is its own link (a full mesh), path latency
    L, bandwidth B: ``2*D*(L + S/(k*B)) + (k-1)*S/(k*B)`` where D is the tree depth
    (``tree_depth(btree_parents(N))``): a chunk climbs D hops and descends D hops, and the
    k-1 chunks behind it follow one chunk time apart.
    """
    b = ScheduleBuilder("binary_tree", ranks, size)
    tree_part(b, np.arange(len(ranks)), 0, size, np.full(len(ranks), -1), chunk_size)
    return b.build()


@register("double_binary_tree",
          "textbook double binary tree over all ranks: two complementary trees, each pipelining half the data",
          "max over the two trees of 2*D_t*(L + S/(2kB)) + (k-1)*S/(2kB) when they never use a link in the "
          "same direction at once (e.g. N = 7, 9, 21 on a full mesh); shared links slow both",
          options=("chunk_size",))
def double_binary_tree(topology: Topology, ranks: list[str], size: int,
                       chunk_size: int = PIPELINE_CHUNK) -> Schedule:
    """Two trees (``dtree_parents``) each AllReduce half of the buffer in 4 MiB chunks by default.

    A rank interior in one tree is a leaf in the other (but rank 0 for odd N), so its links
    carry about the same load in both; contention-free time is the slower tree's:
    ``2*D*(L + S/(2kB)) + (k-1)*S/(2kB)`` with k chunks of each half.
    """
    b = ScheduleBuilder("double_binary_tree", ranks, size)
    double_binary_tree_part(b, np.arange(len(ranks)), 0, size, np.full(len(ranks), -1), chunk_size)
    return b.build()


def nccl_tree_parents(group: ChannelGroup, tree: int) -> tuple[np.ndarray, np.ndarray]:
    """(members, parents) of one channel of NCCL's Tree: each host a chain from its head,
    the heads joined by tree ``tree`` (0 or 1) of the double binary tree over hosts."""
    members = np.concatenate(group.hosts)
    starts = np.concatenate([[0], np.cumsum([len(h) for h in group.hosts])[:-1]])
    parents = np.arange(len(members)) - 1  # the chain: each GPU's parent is the one before it
    node_parents = dtree_parents(len(group.hosts))[tree]
    parents[starts] = np.where(node_parents >= 0, starts[np.maximum(node_parents, 0)], -1)
    return members, parents


def tree_lanes(lanes: ChunkLanes, members: np.ndarray, parents: np.ndarray, channel: int,
               ready: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """A pipelined reduce + broadcast over ``members`` (node indices of ``lanes``) arranged by
    ``parents`` (indices into ``members``, -1 for the root), added to ``lanes`` on
    ``channel``: an up lane per non-root member (to its parent, reducing), then a down lane
    each (from its parent, copying). Chunk j goes up once chunk j came up from every child
    and is in place at both ends (``ready[i]``: the lanes after whose chunk j member i's own
    chunk j is final; none by default), and down once the parent has it: from the parent's
    own parent, or at the root once every child of the root delivered it. Returns, per
    member, the lanes after whose chunk j it holds chunk j's result."""
    m = len(members)
    ready = ready or [np.zeros(0, dtype=np.int64)] * m
    edge = np.flatnonzero(parents >= 0)
    kids = [np.flatnonzero(parents == v) for v in range(m)]
    root = int(np.flatnonzero(parents < 0)[0])
    up = np.full(m, -1, dtype=np.int64)
    up[edge] = lanes.count + np.arange(len(edge))
    down = np.full(m, -1, dtype=np.int64)
    down[edge] = lanes.count + len(edge) + np.arange(len(edge))
    at_root = np.concatenate([up[kids[root]], ready[root]])  # the root holds chunk j's sum
    lanes.add(members[edge], members[parents[edge]], channel, REDUCE, 0,
              [np.concatenate([up[kids[v]], ready[v], ready[parents[v]]]) for v in edge])
    lanes.add(members[parents[edge]], members[edge], channel, COPY, 1,
              [at_root if parents[v] == root else down[parents[v], None] for v in edge])
    return [at_root if v == root else down[v, None] for v in range(m)]


def tree_program(topology: Topology, ranks: list[str], size: int, chunk_size: int = PIPELINE_CHUNK,
                 channels: int | None = None) -> LaneProgram:
    """NCCL's Tree (see ``tree``) as a ``LaneProgram``: per channel, ``tree_lanes`` over its
    members, carrying the channel's k chunks in order."""
    channels = channels or tree_channels(topology, ranks)
    groups = channel_groups(topology, ranks, channels, "tree")
    trees = 2 if len(groups[0].hosts) > 1 else 1
    weights = np.array([g.weight for t in range(trees) for g in groups]) * (2 // trees)
    edges = split_range(0, size, int(weights.sum()))[np.concatenate([[0], np.cumsum(weights)])]
    lanes, chunks, pipeline = ChunkLanes(ranks), [], {}
    for c, (t, group) in enumerate((t, g) for t in range(trees) for g in groups):
        members, parents = nccl_tree_parents(group, t)
        # chunk_size is per NCCL channel (a group of stripes carries 1/stripes of one)
        k = chunk_count(int(edges[c + 1] - edges[c]), max(1, chunk_size * int(weights[c]) // group.stripes))
        chunks.append(k)
        # hops, chunks, and the hops between hosts (up and down the tree over hosts)
        pipeline[c] = (2 * tree_depth(parents), k, 2 * tree_depth(dtree_parents(len(group.hosts))[t]))
        tree_lanes(lanes, members, parents, c)
    return lanes.program("tree", size, edges, chunks,
                         {"channels": channels, "channel_weights": weights.tolist(), "pipeline": pipeline})


@register("tree",
          "NCCL's Tree: double binary tree between hosts, a chain through each host's GPUs, pipelined",
          "2*(ppn-1 + D_hosts)*(L + c/B) + (k-1)*c/B per channel of k chunks of c bytes, D_hosts the depth "
          "of NCCL's binary tree over hosts, when the channels share no link (channels: C runs NCCL's 2C, one "
          "per tree; on one host both trees are the same chain, so its two channels share every link)",
          options=("chunk_size", "channels"), program=tree_program)
def tree(topology: Topology, ranks: list[str], size: int, chunk_size: int = PIPELINE_CHUNK,
         channels: int | None = None) -> Schedule:
    """NCCL's Tree over ``ranks``: 2C channels (C = ``channels``, default NCCL's), channel c
    on the first tree of the double binary tree over hosts and c + C on the second, each
    channel entering every host through NIC rail c mod NICs, its chain inside the host
    starting at that rail's GPU; every channel carries 1/(2C) of the buffer in pipelined
    chunks of ``chunk_size`` (channels simulated as one move their chunks together). On one
    host both trees are the same chain.

    Contention-free, per channel: a chunk climbs the chain (ppn-1 hops) and the host tree
    (D_hosts hops) and comes back down: ``2*(ppn-1 + D_hosts)*(L + c/B) + (k-1)*c/B``.
    """
    return tree_program(topology, ranks, size, chunk_size, channels).to_schedule()
