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
from simnet.schedule.algorithms.ring import PiecedRings, ring_allreduce
from simnet.schedule.algorithms.tree import PIPELINE_CHUNK, double_binary_tree_part, tree_part
from simnet.schedule.registry import chunk_count, register
from simnet.schedule.transfers import COPY, REDUCE, Schedule, ScheduleBuilder, split_range
from simnet.topology.graph import GROUP_LEVELS, Topology

__all__ = ["hierarchical", "INNER_ALGORITHMS", "HIERARCHICAL_MAX_PIECES"]

HIERARCHICAL_MAX_PIECES = 16
"""Most pieces the default ``chunk_size`` cuts a buffer into: 4 MiB pieces, coarser beyond
64 MiB. Every piece costs a few hundred transfers per group of 8, and with k pieces the
phases overlap to within (k + 2) / k of the slowest one: 12.5 % at 16, where the runtime of
256 pieces (1 GiB) would be minutes."""

PIECE_STAGGER = 2
"""Rounds between two pieces entering a group's ring (``PiecedRings``). Each connection then
carries up to (g - 1) / 2 pieces at once, so one piece's data arrives from the neighbour while
it sends another's, and the first piece reaches the exchange between groups sooner than with
every piece in flight at once (one round apart: the first piece's rounds carry every other
piece's steps too). g - 1 rounds apart is one piece after another: every step waits for the
neighbour's, k(g - 1) step latencies in series (4x one piece's time on a 72-GPU domain).
Compared on the headline's two racks, two NVL72 racks, one 72-GPU box, 8-rail and one-NIC
hosts, 16 MiB to 1 GiB, nccl and ideal models: within 9 % of the better of one round and
g - 1 rounds apart everywhere (two NVL72 racks: 947 us against 870 us one round apart and
6.12 ms one piece after another)."""

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


def _across(b: ScheduleBuilder, groups: list[np.ndarray], segments: np.ndarray, owner: np.ndarray,
            ready: list[np.ndarray], inner: str) -> list[list[list[int]]]:
    """One piece across groups: ``segments`` (M+1 byte offsets) whose segment s group j's member
    ``owner[j, s]`` holds reduced once ``ready[j][member]`` is delivered; one ``inner``
    AllReduce per run of segments with the same owners. Returns, per group and member, the ids
    that complete the segments it owns."""
    count = owner.shape[1]
    finished: list[list[list[int]]] = [[[] for _ in members] for members in groups]
    starts = [0] + [end for end in range(1, count) if (owner[:, end] != owner[:, end - 1]).any()]
    ends = starts[1:] + [count]
    # rotate the group order per run so tree roots and interior nodes spread over the groups
    orders = [np.roll(np.arange(len(groups)), -(start % len(groups))) for start in starts]
    nodes = np.array([[groups[g][owner[g, start]] for g in order] for start, order in zip(starts, orders)])
    held = np.array([[ready[g][owner[g, start]] for g in order] for start, order in zip(starts, orders)])
    channels = 1 + 2 * np.arange(len(starts))  # two each: a double binary tree's
    if inner in SIDE_BY_SIDE:  # every run's AllReduce in one builder batch per step
        done = INNER_ALGORITHMS[inner](b, nodes, segments[starts], segments[ends], held, chunk_size=None,
                                       channel=channels)
    else:
        done = [INNER_ALGORITHMS[inner](b, nodes[r], int(segments[starts[r]]), int(segments[ends[r]]), held[r],
                                        chunk_size=None, channel=int(channels[r])) for r in range(len(starts))]
    for r, (start, order) in enumerate(zip(starts, orders)):
        for position, g in enumerate(order):
            ids = done[r][position]
            finished[g][owner[g, start]].extend(ids[ids >= 0].tolist())
    return finished


def _pipeline(b: ScheduleBuilder, groups: list[np.ndarray], cuts: np.ndarray, inner: str) -> None:
    """The pieces ``[cuts[p], cuts[p+1])`` through the three phases without a barrier: ring
    reduce-scatters inside the groups, each piece across groups once every group reduced it,
    ring all-gathers. Inside a group the pieces pipeline round by round (``PiecedRings``), so
    piece p+1 reduce-scatters while piece p crosses between groups. Groups of one size run
    their rings side by side, one builder batch a round."""
    largest = max(len(members) for members in groups)
    segments = np.stack([split_range(lo, hi, largest) for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist())])
    alike: dict[int, list[int]] = {}  # groups by size: their rings are cut alike
    for i, members in enumerate(groups):
        alike.setdefault(len(members), []).append(i)
    phases = {}
    owner = np.zeros((len(groups), largest), dtype=np.int64)  # group j's member that reduces segment s
    for g, which in alike.items():
        parts = (np.arange(g + 1) * largest) // g  # segment index where each part starts
        members = np.stack([groups[i] for i in which])
        owner[which] = ((np.arange(g) - 1) % g)[np.searchsorted(parts, np.arange(largest), side="right") - 1]
        # reduce-scatter: member i ends owning part (i + 1) mod g; all-gather starts it from there
        phases[g] = (members, PiecedRings(b, members, segments[:, parts], REDUCE, 0, 0, PIECE_STAGGER),
                     PiecedRings(b, members, segments[:, parts], COPY, 1, g - 1, PIECE_STAGGER))
    lag = max(largest - 2, 0)  # round at which piece 0 is reduced inside every group
    final = lag + (len(segments) - 1) * PIECE_STAGGER + max(largest - 2, 0)  # the last piece's last gather
    for r in range(final + 1):
        for _, scatter, _ in phases.values():
            scatter.emit(r)
        finals: dict[int, np.ndarray] = {}
        p, behind = divmod(r - lag, PIECE_STAGGER)  # reduced everywhere now: across, then its all-gathers start
        if behind == 0 and 0 <= p < len(segments):
            ready = [np.full(len(members), -1, dtype=np.int64) for members in groups]
            for g, (members, scatter, _) in phases.items():
                if g > 1:  # member i's part is complete once member i-1's last transfer of it is delivered
                    last = np.roll(scatter.ids[p, -1].reshape(members.shape), 1, axis=1)
                    joined = _join_rows(b, members.reshape(-1), list(last.reshape(-1, 1))).reshape(members.shape)
                    for position, i in enumerate(alike[g]):
                        ready[i] = joined[position]
            finished = _across(b, groups, segments[p], owner, ready, inner)
            for g, (members, _, _) in phases.items():
                if g > 1:
                    rows = [np.array(finished[i][j] or [ready[i][j]]) for i in alike[g] for j in range(g)]
                    finals[g] = _join_rows(b, members.reshape(-1), rows)
        for g, (_, _, gather) in phases.items():
            gather.emit(r - lag, ready=finals.get(g))


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
    if chunk_size is None:
        chunk_size = max(PIPELINE_CHUNK, -(-size // HIERARCHICAL_MAX_PIECES))
    cuts = split_range(0, size, chunk_count(size, chunk_size))
    if len(cuts) > 2:  # every piece adds as many transfers as the first (zero-byte ones kept): refuse now,
        # from one piece built on its own (1/k more building), not after building them all
        probe = ScheduleBuilder("hierarchical", ranks, size)
        _pipeline(probe, groups, cuts[:2], inner)
        b.expect(probe.transfers * (len(cuts) - 1))
    _pipeline(b, groups, cuts, inner)
    b.info["groups"] = len(groups)
    b.info["pieces"] = len(cuts) - 1
    return b.build()
