"""Ring AllReduce: reduce-scatter then all-gather around a ring (Patarasuk & Yuan, 2009),
laid out over channels as NCCL's Ring is.

The buffer is cut into N parts. In reduce-scatter step s (0..N-2) rank i sends part
(i - s) mod N to rank i+1, which adds it to its own; afterwards rank i holds part
(i + 1) mod N fully reduced. All-gather then passes the reduced parts around once more,
overwriting. With ``chunk_size`` each step's part is cut into k pieces that move on as
soon as they arrive, queued in order on each rank's connection to its successor.

``ring`` is NCCL's Ring: C channels, each a ring over every rank carrying S/C, entering
and leaving every host through a pair of NIC rails as NCCL's search lays them out, so the
channels together use every NIC (``simnet.schedule.channels``). With ``channels: 1``,
or one NIC per host, it is the single textbook ring.

Every ring here is one implementation, ``ring_lanes``: rings as a ``LaneProgram``. NCCL's
Ring is that program (``ring_program``), replayed lane by lane or expanded. The pieces
``reduce_scatter``, ``all_gather`` and ``ring_allreduce`` add such rings over any subsets
of nodes and byte range to a larger schedule (``LaneProgram.emit``), which is how
``hierarchical`` runs rings inside every host side by side; NCCL's Ring ReduceScatter and AllGather are
the halves alone (``ring_reduce_scatter``, ``ring_all_gather``): every channel carries its
slice of each rank's part, and rank r ends owning (reduce-scatter) or starts from
(all-gather) its own part r.
"""

from __future__ import annotations

import numpy as np

from simnet.schedule.channels import ring_layout
from simnet.schedule.lanes import LaneProgram
from simnet.schedule.registry import chunk_count, register
from simnet.schedule.transfers import COPY, REDUCE, Schedule, ScheduleBuilder, split_range
from simnet.topology.graph import Topology

__all__ = ["ring", "PiecedRings", "ring_allreduce", "ring_reduce_scatter", "ring_all_gather",
           "ring_program", "ring_lanes"]


def _part_ranges(parts) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) per part from N+1 cumulative offsets, or the (lo, hi) pair itself."""
    if isinstance(parts, tuple):
        return parts
    return parts[:-1], parts[1:]


def ring_lanes(nodes: list[str], ranks: list[str], size: int, orders: np.ndarray, part_lo: np.ndarray,
               part_hi: np.ndarray, chunks: list[int], phases: list[tuple[int, int]], channel: np.ndarray,
               first_step: int = 0, info: dict | None = None) -> LaneProgram:
    """Rings as a ``LaneProgram``, the one implementation every ring here is built from.

    Group g is a ring over ``orders[g]`` (node indices, in visiting order), its buffer cut
    into n parts, part p the bytes ``[part_lo[g, p], part_hi[g, p])``. Lane (g, member i)
    sends to member i+1 on connection ``channel[g]``; in step t of phase h (``phases[h]`` is
    ``(op, offset)``, n-1 steps each) member i sends part ``(i + offset - t) mod n`` in
    ``chunks[g]`` pieces, the receiver adding (``REDUCE``) or overwriting (``COPY``). Its k
    pieces of a step wait for those member i-1 sent at the step before (lag k) and queue
    behind its own previous piece. Steps count from ``first_step``.
    """
    n = orders.shape[1]
    count = len(orders)
    steps = len(phases) * (n - 1)
    lanes = count * n
    group = np.repeat(np.arange(count), n)
    member = np.tile(np.arange(n), count)
    k = np.repeat(np.array(chunks, dtype=np.int64), n)
    k_all = int(k[0]) if (k == k[0]).all() else None  # one piece count for every lane: scalar arithmetic
    # member i sends part (i + c) mod n, c = offset - t: a rotation of the group's parts, sliced from them twice over
    twice_lo, twice_hi = np.concatenate([part_lo, part_lo], axis=1), np.concatenate([part_hi, part_hi], axis=1)
    ops = [np.full(lanes, op, dtype=np.int8) for op, _ in phases]

    def rotation(s: int) -> tuple[int, int]:
        """(phase, c) of step s: every member sends its group's part (i + c) mod n."""
        phase = min(s // (n - 1), len(phases) - 1)
        return phase, (phases[phase][1] - (s - phase * (n - 1))) % n

    def at(q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if k_all:
            s, j = divmod(q, k_all)
            phase, c = rotation(s)
            lo, hi, op = twice_lo[:, c:c + n].reshape(-1), twice_hi[:, c:c + n].reshape(-1), ops[phase]
            if k_all == 1:
                return lo, hi, op
            width = hi - lo
            return lo + (j * width) // k_all, lo + ((j + 1) * width) // k_all, op
        s, j = q // k, q % k  # lanes of channel groups with different piece counts: per-lane arithmetic
        phase = np.minimum(s // (n - 1), len(phases) - 1)
        part = (member + np.array([p[1] for p in phases])[phase] - (s - phase * (n - 1))) % n
        lo, hi = part_lo[group, part], part_hi[group, part]
        width = hi - lo
        op = np.array([p[0] for p in phases], dtype=np.int8)[phase]
        return lo + (j * width) // k, lo + ((j + 1) * width) // k, op

    twice_width = twice_hi - twice_lo

    def sizes(q: int) -> tuple[np.ndarray, np.ndarray]:
        if k_all != 1:
            lo, hi, op = at(q)
            return hi - lo, op
        phase, c = rotation(q)
        return twice_width[:, c:c + n].reshape(-1), ops[phase]

    # over its phases, member i sends every part but (i + offset + 1) mod n once per phase
    widths = part_hi - part_lo
    carried = sum(widths.sum(axis=1)[group] - widths[group, (member + offset + 1) % n] for _, offset in phases)
    return LaneProgram(
        "ring", nodes, ranks, size, src=orders.reshape(-1), dst=np.roll(orders, -1, axis=1).reshape(-1),
        channel=np.asarray(channel)[group], flows=steps * k, after=group * n + (member - 1) % n, lag=k, per_step=k,
        pieces=at, sizes=sizes, carried_bytes=np.asarray(carried, dtype=float), first_step=first_step,
        info=info or {})


def _ring_in(b: ScheduleBuilder, members: np.ndarray, parts, chunks: int, channel: int, phases: list[tuple[int, int]],
             step0: int, extra) -> np.ndarray:
    """One ring over ``members`` (``b``'s node indices) added to ``b`` (``ring_lanes``): the
    (transfers per member, members) ids of every member's transfers in order. ``members`` of
    shape (G, g) are G rings side by side, in one batch per transfer index (``parts`` alike or
    one row each, ``channel`` one or one each, ``extra``'s arrays over the G x g members, ring
    after ring); their ids come as (transfers per member, G, g)."""
    rings = np.atleast_2d(members)
    lo, hi = (np.broadcast_to(np.asarray(edge), rings.shape) for edge in _part_ranges(parts))
    program = ring_lanes(b.nodes, b.ranks, b.size, rings, lo, hi, [chunks] * len(rings), phases,
                         np.broadcast_to(np.asarray(channel), (len(rings),)), step0)
    ids = b.next_ids((int(program.flows[0]), *rings.shape))  # transfer q of member i: one batch per q
    program.emit(b, extra=extra)
    return ids.reshape(-1, members.shape[-1]) if members.ndim == 1 else ids


class PiecedRings:
    """One phase of ring steps (``op``: ``REDUCE`` for a reduce-scatter, ``COPY`` for an
    all-gather) over each row of ``members`` (G rings of g node indices, side by side) for k
    pieces, piece p cut into g parts at ``bounds[p]`` (g+1 byte offsets): in step t member i
    sends part ``(i + offset - t) mod g`` of the piece to member i+1, once member i-1's step
    t-1 of that piece is delivered (step 0: once ``ready``, if given, is). Steps are numbered
    from ``step0`` in the schedule.

    The pieces pipeline through the ring round by round: piece p's step t is in round
    ``p * stagger + t``, ``emit(r)`` adds round r, oldest piece first, and the phase's
    transfers on each connection queue one after another in that order (FIFO; another phase
    on the same connection has a queue of its own and shares its bandwidth), so a step of one
    piece waits for the neighbour while the connection sends another piece's.
    ``ids[p, t]`` are piece p's step-t transfers (one per member, ring after ring)."""

    def __init__(self, b: ScheduleBuilder, members: np.ndarray, bounds: np.ndarray, op: int, offset: int,
                 step0: int = 0, stagger: int = 1):
        self.b, self.members, self.bounds, self.stagger = b, np.atleast_2d(members), bounds, stagger
        self.op, self.offset, self.step0 = op, offset, step0
        rings, self.g = self.members.shape
        self.src = self.members.reshape(-1)
        self.dst = np.roll(self.members, -1, axis=1).reshape(-1)
        self.member = np.tile(np.arange(self.g), rings)
        self.ids = np.full((len(bounds), max(self.g - 1, 0), rings * self.g), -1, dtype=np.int64)
        self.last = np.full(rings * self.g, -1, dtype=np.int64)  # each connection's last transfer

    def emit(self, r: int, ready: np.ndarray | None = None) -> None:
        """Add round ``r`` (nothing where no piece has a step in it); ``ready`` (one id per member,
        ring after ring; -1: none) holds back step 0 of the piece that starts in this round
        (piece ``r / stagger``); a ``ready`` for a round where no piece starts is an error."""
        pieces = np.arange(len(self.bounds))
        steps = r - pieces * self.stagger
        keep = (steps >= 0) & (steps <= self.g - 2)
        pieces, steps = pieces[keep], steps[keep]
        if ready is not None and not (len(steps) and steps[-1] == 0):
            raise ValueError(f"round {r} starts no piece: nothing to hold back on ready")
        if not len(pieces):
            return
        part = (self.member[None, :] + self.offset - steps[:, None]) % self.g
        lo = np.take_along_axis(self.bounds[pieces], part, axis=1)
        hi = np.take_along_axis(self.bounds[pieces], part + 1, axis=1)
        rings = len(self.members)
        before = self.ids[pieces, np.maximum(steps - 1, 0)].reshape(len(pieces), rings, self.g)
        neighbour = np.roll(before, 1, axis=2).reshape(len(pieces), -1)  # member i-1's step t-1
        neighbour[steps == 0] = -1
        if ready is not None:
            neighbour[-1] = ready
        ids = self.b.next_ids(lo.shape)
        queue = np.concatenate([self.last[None, :], ids[:-1]])
        self.b.add(self.src, self.dst, lo, hi, self.op, deps=[neighbour], after_sent=queue,
                   step=(self.step0 + steps)[:, None], chunk=pieces[:, None], channel=0)
        self.ids[pieces, steps] = ids
        self.last = ids[-1]


def ring_allreduce(b: ScheduleBuilder, members: np.ndarray, lo, hi, ready: np.ndarray,
                   chunk_size: int | None = None, channel=0, step0: int = 0) -> np.ndarray:
    """Ring AllReduce of ``[lo, hi)`` over ``members``; returns (N, D) ids that complete it.
    ``members`` of shape (R, N) are R rings side by side (``lo``, ``hi``, ``channel`` one per
    ring, ``ready`` (R, N), one piece count for all), their ids as (R, N, D)."""
    batched = np.ndim(members) == 2
    rings = np.atleast_2d(members)
    count, m = rings.shape
    lo, hi = (np.broadcast_to(np.asarray(edge, dtype=np.int64), (count,)) for edge in (lo, hi))
    chunks = {chunk_count(int(z - a) // max(m, 1), chunk_size) for a, z in zip(lo.tolist(), hi.tolist())}
    if len(chunks) != 1:
        raise ValueError(f"rings side by side take one piece count, not {sorted(chunks)}")
    chunks = chunks.pop()
    if m == 1:
        done = np.full((count, 1, chunks), -1, dtype=np.int64)
        return done if batched else done[0]
    bounds = np.stack([split_range(int(a), int(z), m) for a, z in zip(lo.tolist(), hi.tolist())])
    ready = np.asarray(ready, dtype=np.int64).reshape(-1)
    ids = _ring_in(b, rings, (bounds[:, :-1], bounds[:, 1:]), chunks, channel, [(REDUCE, 0), (COPY, 1)], step0,
                   lambda q: [ready] if q < (m - 1) * chunks else [])  # the reduce-scatter half waits for the data
    # each member's last reduced part, then what it gathered
    done = np.roll(ids[(m - 2) * chunks:].transpose(1, 2, 0), 1, axis=1)
    return done if batched else done[0]


def ring_program(topology: Topology, ranks: list[str], size: int, chunk_size: int | None = None,
                 channels: int | None = None, collective: str = "allreduce") -> LaneProgram:
    """NCCL's Ring of ``collective`` (``allreduce``, ``reduce_scatter`` or ``all_gather``) as a
    ``LaneProgram``: lane (channel group, member i) sends to member i+1 and its k pieces of
    step s wait for those member i-1 sent at step s-1 (see ``ring`` for the layout).

    AllReduce: channel group g carries its share of the buffer cut into N parts; member i
    sends part (i - s) mod N in reduce-scatter step s (the receiver adds it) and part
    (i + 1 - s) mod N in all-gather step s. The halves carry, in channel group g, slice g
    of every rank's part, rank r ending with (reduce-scatter) or starting from (all-gather)
    its own part r: member i sends part (i - 1 - s), resp. (i - s), of its group's order.
    """
    n = len(ranks)
    channels, groups, weights = ring_layout(topology, ranks, channels)
    shares = np.concatenate([[0], np.cumsum(weights)])
    units = int(shares[-1])  # NCCL's channels, in stripes where the plugin stripes them over NICs
    orders = np.stack([np.concatenate(g.hosts) for g in groups])  # (groups, n) rank positions in visiting order
    pieces = [max(1, chunk_size * g.weight // g.stripes) if chunk_size else None for g in groups]
    if collective == "allreduce":
        edges = split_range(0, size, units)[shares]
        bounds = np.stack([split_range(int(edges[g]), int(edges[g + 1]), n) for g in range(len(groups))])
        part_lo, part_hi = bounds[:, :-1], bounds[:, 1:]
        chunks = [chunk_count(int(edges[g + 1] - edges[g]) // n, pieces[g]) for g in range(len(groups))]
        phases = [(REDUCE, 0), (COPY, 1)]  # (op, offset): member i sends part (i + offset - t) at phase step t
    else:
        rank_parts = split_range(0, size, n)
        cuts = rank_parts[:-1, None] + (shares[None, :] * np.diff(rank_parts)[:, None]) // units
        column = np.arange(len(groups))[:, None]  # group g takes slice g of each member's own part
        part_lo, part_hi = cuts[orders, column], cuts[orders, column + 1]
        chunks = [chunk_count(int(np.max(part_hi[g] - part_lo[g], initial=0)), pieces[g]) for g in range(len(groups))]
        phases = [(REDUCE, -1)] if collective == "reduce_scatter" else [(COPY, 0)]
    return ring_lanes(list(ranks), list(ranks), size, orders, part_lo, part_hi, chunks, phases,
                      np.arange(len(groups)), info={"channels": channels, "channel_weights": weights.tolist()})


@register(
    "ring",
    "NCCL's Ring: C channels of reduce-scatter + all-gather rings, channel c through NIC rail c mod NICs",
    "per channel 2(N-1) * (L + S/(C*N*B)); k pieces of c = S/(C*N*k) per step: "
    "(2N-3)*max(L + c/B, k*c/B) + k*c/B + L, B the channel's share of its bottleneck",
    options=("chunk_size", "channels"), program=ring_program,
)
def ring(topology: Topology, ranks: list[str], size: int, chunk_size: int | None = None,
         channels: int | None = None) -> Schedule:
    """NCCL's Ring over ``ranks``: ``channels`` rings (default: what NCCL's topology search
    opens, ``channels.default_channels``), each carrying its share of the buffer, laid out
    by ``channels.channel_groups``; channels alike (same GPUs in every host) are simulated
    as one, moving ``chunk_size`` (per NCCL channel) times the channels it stands for.

    Contention-free, one channel (or channels that share nothing) with path latency L and
    bottleneck bandwidth B per direction, k pieces of c bytes per step:
    ``(2N-3) * max(L + c/B, k*c/B) + k*c/B + L``: a step starts every max(...) (its first
    piece needs the previous step's first piece, and the connection must have sent the
    previous step's k pieces). With k = 1 this is ``2(N-1)(L + S/(N*B))``; pipelining hides
    latency but never the 2(N-1)/N * S bytes each link carries.
    """
    return ring_program(topology, ranks, size, chunk_size, channels).to_schedule()


_HALF_FORM = ("per channel (N-1) * (L + S/(C*N*B)); k pieces of c = S/(C*N*k) per step: "
              "(N-2)*max(L + c/B, k*c/B) + k*c/B + L")


def _half_program(collective: str):
    def program(topology: Topology, ranks: list[str], size: int, chunk_size: int | None = None,
                channels: int | None = None) -> LaneProgram:
        return ring_program(topology, ranks, size, chunk_size, channels, collective)
    return program


@register("ring", "NCCL's Ring: C channels of reduce-scatter rings, rank r ending with the sum of part r",
          _HALF_FORM, options=("chunk_size", "channels"), collective="reduce_scatter",
          program=_half_program("reduce_scatter"))
def ring_reduce_scatter(topology: Topology, ranks: list[str], size: int, chunk_size: int | None = None,
                        channels: int | None = None) -> Schedule:
    """NCCL's Ring ReduceScatter of ``size`` bytes (the whole input) over ``ranks``: the
    reduce-scatter half of ``ring``. One channel, contention-free, path latency L and
    bandwidth B: ``(N-1) * (L + S/(N*B))``."""
    return ring_program(topology, ranks, size, chunk_size, channels, "reduce_scatter").to_schedule()


@register("ring", "NCCL's Ring: C channels of all-gather rings, each rank passing on the parts it received",
          _HALF_FORM, options=("chunk_size", "channels"), collective="all_gather",
          program=_half_program("all_gather"))
def ring_all_gather(topology: Topology, ranks: list[str], size: int, chunk_size: int | None = None,
                    channels: int | None = None) -> Schedule:
    """NCCL's Ring AllGather of ``size`` bytes (the whole output) over ``ranks``: the
    all-gather half of ``ring``. One channel, contention-free: ``(N-1) * (L + S/(N*B))``."""
    return ring_program(topology, ranks, size, chunk_size, channels, "all_gather").to_schedule()
