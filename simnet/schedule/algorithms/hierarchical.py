"""Hierarchical AllReduce: ring reduce-scatter inside each group, an AllReduce of each
shard across groups, ring all-gather inside each group (as in Horovod's and NCCL's
two-level schemes: fast links inside a host, fewer and slower ones between hosts).

Groups are the ranks' labels at ``group_by`` (host, rack or region) and may differ in
size. The buffer is cut into M segments, M the largest group; a group of g members gives
member i the contiguous block of segments ``[i*M//g, (i+1)*M//g)``. Each run of segments
whose owners (one per group) are the same is AllReduced across groups by those owners
with algorithm ``inner``; successive runs rotate the group order, so with ``inner: tree``
the roots and interior nodes (which carry the most traffic) are spread over the groups.
"""

from __future__ import annotations

import numpy as np

from simnet.errors import OptionUnsupported
from simnet.schedule.algorithms.recursive import halving_doubling_part, recursive_doubling_part
from simnet.schedule.algorithms.ring import all_gather, reduce_scatter, ring_allreduce
from simnet.schedule.algorithms.tree import PIPELINE_CHUNK, double_binary_tree_part, tree_part
from simnet.schedule.registry import chunk_count, register
from simnet.schedule.transfers import Schedule, ScheduleBuilder, split_range
from simnet.topology.graph import GROUP_LEVELS, Topology

__all__ = ["hierarchical", "INNER_ALGORITHMS", "HIERARCHICAL_MAX_PIECES"]

HIERARCHICAL_MAX_PIECES = 16
"""Most pieces the default ``chunk_size`` cuts a buffer into: 4 MiB pieces, coarser beyond
64 MiB. Every piece costs a few hundred transfers per group of 8, and with k pieces the
phases overlap to within (k + 2) / k of the slowest one: 12.5 % at 16, where the runtime of
256 pieces (1 GiB) would be minutes."""

SIDE_BY_SIDE = frozenset({"ring", "tree", "binary_tree", "double_binary_tree"})
"""Inner algorithms that run several AllReduces side by side (rows of members) in one call."""

INNER_ALGORITHMS = {
    "ring": ring_allreduce,
    "tree": double_binary_tree_part,  # NCCL's Tree between nodes: a double binary tree, one GPU each
    "binary_tree": tree_part,
    "double_binary_tree": double_binary_tree_part,
    "halving_doubling": halving_doubling_part,
    "recursive_doubling": recursive_doubling_part,
}
"""Algorithms that can run across groups: ``(b, members, lo, hi, ready, chunk_size, channel) -> done``;
``tree`` is NCCL's Tree with one GPU per group: the double binary tree."""


def _join_rows(b: ScheduleBuilder, nodes: np.ndarray, rows: list[np.ndarray]) -> np.ndarray:
    """One id per node that is delivered once every id in its row is (-1 where a row is empty)."""
    width = max((len(r) for r in rows), default=0)
    matrix = np.full((len(rows), max(width, 1)), -1, dtype=np.int64)
    for i, row in enumerate(rows):
        matrix[i, : len(row)] = row
    has = (matrix >= 0).any(axis=1)
    joined = np.full(len(rows), -1, dtype=np.int64)
    if has.any():
        joined[has] = b.join(nodes[has], matrix[has])
    return joined


def _piece(b: ScheduleBuilder, groups: list[np.ndarray], lo: int, hi: int, inner: str,
           rs_last: list, ag_last: list) -> None:
    """One piece ``[lo, hi)`` through the three phases; ``rs_last``/``ag_last`` hold each
    group's last reduce-scatter / all-gather transfer per connection, so the pieces queue
    in order on the rings inside the groups while earlier pieces are already across.
    Groups of one size run their rings side by side, in one batch per transfer index."""
    segments = split_range(lo, hi, max(len(g) for g in groups))
    count = len(segments) - 1
    alike: dict[int, list[int]] = {}  # groups by size: their rings are cut alike
    for i, members in enumerate(groups):
        alike.setdefault(len(members), []).append(i)

    # 1. ring reduce-scatter inside each group; part p ends with member (p - 1) mod g
    plans: list = [None] * len(groups)
    for g, which in alike.items():
        cuts = (np.arange(g + 1) * count) // g  # segment index where each part starts
        bounds = segments[cuts]
        owner_of_part = (np.arange(g) - 1) % g
        members = np.stack([groups[i] for i in which])
        if g == 1:
            ready = [np.full(1, -1, dtype=np.int64)] * len(which)
        else:
            last = np.concatenate([np.full(g, -1) if rs_last[i] is None else rs_last[i] for i in which])
            ids = reduce_scatter(b, members, bounds, last)
            # member i of a group received part (i + 1) mod g last: its row rolled onto the owner
            ready = _join_rows(b, members.reshape(-1), list(np.roll(ids[-1], 1, axis=1).reshape(-1, 1))).reshape(
                len(which), g)
            for position, i in enumerate(which):
                rs_last[i] = ids[-1, position]
        for position, i in enumerate(which):
            plans[i] = (groups[i], cuts, bounds, owner_of_part, ready[position])

    # 2. across groups: one inner AllReduce per run of segments with the same owners
    owner = np.stack([plan[3][np.searchsorted(plan[1], np.arange(count), side="right") - 1] for plan in plans])
    finished: list[list[list[int]]] = [[[] for _ in plan[0]] for plan in plans]
    starts = [0] + [end for end in range(1, count) if (owner[:, end] != owner[:, end - 1]).any()]
    ends = starts[1:] + [count]
    # rotate the group order per run so tree roots and interior nodes spread over the groups
    orders = [np.roll(np.arange(len(plans)), -(start % len(plans))) for start in starts]
    nodes = np.array([[plans[g][0][owner[g, start]] for g in order] for start, order in zip(starts, orders)])
    ready = np.array([[plans[g][4][owner[g, start]] for g in order] for start, order in zip(starts, orders)])
    channels = 1 + 2 * np.arange(len(starts))  # two each: a double binary tree's
    if inner in SIDE_BY_SIDE:  # every run's AllReduce in one builder batch per step
        done = INNER_ALGORITHMS[inner](b, nodes, segments[starts], segments[ends], ready, chunk_size=None,
                                       channel=channels)
    else:
        done = [INNER_ALGORITHMS[inner](b, nodes[r], int(segments[starts[r]]), int(segments[ends[r]]), ready[r],
                                        chunk_size=None, channel=int(channels[r])) for r in range(len(starts))]
    for r, (start, order) in enumerate(zip(starts, orders)):
        for position, g in enumerate(order):
            ids = done[r][position]
            finished[g][owner[g, start]].extend(ids[ids >= 0].tolist())

    # 3. ring all-gather inside each group from the owners' final parts
    for g, which in alike.items():
        if g == 1:
            continue
        members = np.stack([groups[i] for i in which])
        rows = [np.array(finished[i][j] or [plans[i][4][j]]) for i in which for j in range(g)]
        final = _join_rows(b, members.reshape(-1), rows)
        last = np.concatenate([np.full(g, -1) if ag_last[i] is None else ag_last[i] for i in which])
        # all_gather starts member i from part (i + 1) mod g: the part it owns since step 1
        ids = all_gather(b, members, plans[which[0]][2], final, g - 1, last)
        for position, i in enumerate(which):
            ag_last[i] = ids[-1, position]


def check_group_by(topology: Topology, ranks: list[str], group_by: str) -> None:
    """``OptionUnsupported`` where no rank of ``ranks`` has a ``group_by`` label (a region on a
    fabric of one region): every GPU would be a group of its own."""
    if not any(topology.label(r, group_by) != r for r in ranks):
        raise OptionUnsupported("group_by", f"group_by: {group_by}: no GPU of {topology.name} has a {group_by} label, "
                                            "so every GPU would be a group of its own; label the GPUs or group by "
                                            "another level")


@register("hierarchical",
          "ring reduce-scatter inside each group, AllReduce across groups (inner; unset: the faster of NCCL's tree "
          "and a ring, both simulated), ring "
          "all-gather, pipelined piece by piece",
          "one piece, equal groups of g over G groups: 2(g-1)*(L_in + S/(g*B_in)) + T_inner(S/g, G); "
          "k pieces overlap the phases: about max(phase) * (k + 2) / k",
          options=("inner", "group_by", "chunk_size"))
def hierarchical(topology: Topology, ranks: list[str], size: int, inner: str = "tree", group_by: str = "node",
                 chunk_size: int | None = None) -> Schedule:
    """Two-level AllReduce over the groups of ``ranks`` at level ``group_by``, in pieces of
    ``chunk_size`` bytes (default 4 MiB, or ``size / HIERARCHICAL_MAX_PIECES`` if larger) that flow
    through the phases without a barrier: piece p+1 reduce-scatters inside the groups
    while piece p crosses between them.

    Contention-free with one piece, G groups of g ranks with intra-group latency L_in and
    bandwidth B_in: ``2(g-1)(L_in + S/(g B_in)) + T_inner(S/g, G)`` where ``T_inner`` is
    the inner algorithm's own closed form for S/g bytes over G ranks.
    """
    if inner not in INNER_ALGORITHMS:
        raise ValueError(f"inner: unknown algorithm {inner!r}; expected one of {', '.join(INNER_ALGORITHMS)}")
    if group_by not in GROUP_LEVELS:
        raise ValueError(f"group_by: expected one of {', '.join(GROUP_LEVELS)}, not {group_by!r}")
    check_group_by(topology, ranks, group_by)
    b = ScheduleBuilder("hierarchical", ranks, size)
    position = {r: i for i, r in enumerate(ranks)}
    groups = [np.array([position[r] for r in members]) for members in topology.groups(group_by, ranks).values()]
    rs_last: list = [None] * len(groups)
    ag_last: list = [None] * len(groups)
    if chunk_size is None:
        chunk_size = max(PIPELINE_CHUNK, -(-size // HIERARCHICAL_MAX_PIECES))
    cuts = split_range(0, size, chunk_count(size, chunk_size))
    for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        _piece(b, groups, lo, hi, inner, rs_last, ag_last)
        if lo == 0:  # every piece adds as many transfers as the first (zero-byte ones kept): refuse now
            b.expect(b.transfers * (len(cuts) - 1))
    b.info["groups"] = len(groups)
    b.info["pieces"] = len(cuts) - 1
    return b.build()
