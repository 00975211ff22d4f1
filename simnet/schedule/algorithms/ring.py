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

The pieces here are reusable: ``reduce_scatter`` and ``all_gather`` work on any subset of
nodes and byte range, which is how ``hierarchical`` runs rings inside each host, and
NCCL's Ring ReduceScatter and AllGather are those halves alone (``ring_reduce_scatter``,
``ring_all_gather``): every channel carries its slice of each rank's part, and rank r
ends owning (reduce-scatter) or starts from (all-gather) its own part r.
"""

from __future__ import annotations

import numpy as np

from simnet.schedule.channels import ring_layout
from simnet.schedule.lanes import LaneProgram
from simnet.schedule.registry import chunk_count, register
from simnet.schedule.transfers import COPY, REDUCE, Schedule, ScheduleBuilder, in_order, split_range
from simnet.topology.graph import Topology

__all__ = ["ring", "reduce_scatter", "all_gather", "ring_allreduce", "ring_reduce_scatter", "ring_all_gather",
           "ring_program"]


def _part_ranges(parts) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) per part from N+1 cumulative offsets, or the (lo, hi) pair itself."""
    if isinstance(parts, tuple):
        return parts
    return parts[:-1], parts[1:]


def _chunk_bounds(parts, which: np.ndarray, chunks: int) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) arrays of shape (len(which), chunks) cutting each part ``which`` into ``chunks`` pieces."""
    starts, ends = _part_ranges(parts)
    lo, hi = starts[which], ends[which]
    cuts = lo[:, None] + (np.arange(chunks + 1)[None, :] * (hi - lo)[:, None]) // chunks
    return cuts[:, :-1], cuts[:, 1:]


def _steps(b: ScheduleBuilder, members: np.ndarray, parts, chunks: int, channel: int,
           op: int, first_part: np.ndarray, first_deps: list[np.ndarray], extra_deps: list[np.ndarray],
           step0: int, last: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """N-1 ring steps; step s sends part ``first_part - s``. Returns ids per step (m, k) and last."""
    m = len(members)
    successors = np.roll(members, -1)
    ids_per_step = []
    deps = first_deps
    for s in range(m - 1):
        lo, hi = _chunk_bounds(parts, (first_part - s) % m, chunks)
        ids = b.next_ids((m, chunks))
        b.add(members[:, None], successors[:, None], lo, hi, op,
              deps=[d if d.ndim == 2 else d[:, None] for d in deps + extra_deps],
              after_sent=in_order(ids, first=last),  # queued behind the previous step's last piece
              step=step0 + s, chunk=np.arange(chunks)[None, :], channel=channel)
        ids_per_step.append(ids)
        last = ids[:, -1]
        deps = [np.roll(ids, 1, axis=0)]  # what rank i received from rank i-1 at this step
    return ids_per_step, last


def reduce_scatter(b: ScheduleBuilder, members: np.ndarray, parts, ready: np.ndarray,
                   chunks: int = 1, channel: int = 0, step0: int = 0,
                   last: np.ndarray | None = None, shift: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Ring reduce-scatter over ``members`` (N node indices) of N parts: ``parts`` is N+1
    byte offsets, or a (lo, hi) pair of arrays when the parts are not contiguous.

    ``ready[i]`` is a transfer id (or -1) after whose delivery member i's data is final.
    Member i ends owning part (i + shift) mod N. Returns ``(owned, last)``: the (N, chunks)
    ids whose delivery completes each member's owned part (-1 where nothing was received),
    and each member's last transfer on its outgoing connection.
    """
    m = len(members)
    last = np.full(m, -1, dtype=np.int64) if last is None else last
    if m == 1:
        return np.full((1, chunks), -1, dtype=np.int64), last
    ready = np.asarray(ready, dtype=np.int64)
    steps, last = _steps(b, members, parts, chunks, channel, REDUCE, np.arange(m) + shift - 1, [], [ready], step0,
                         last)
    return np.roll(steps[-1], 1, axis=0), last


def all_gather(b: ScheduleBuilder, members: np.ndarray, parts, owned: np.ndarray,
               chunks: int = 1, channel: int = 0, step0: int = 0,
               last: np.ndarray | None = None, shift: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Ring all-gather: member i starts with part (i + shift) mod N final once ``owned[i]``
    ((N, chunks) or (N,) ids, -1 = already final) is delivered (``parts`` as for
    ``reduce_scatter``). Returns the (N, D) ids whose delivery gives each member every part
    (-1 padded), and each member's last transfer on its outgoing connection."""
    m = len(members)
    owned = np.asarray(owned, dtype=np.int64)
    last = np.full(m, -1, dtype=np.int64) if last is None else last
    if m == 1:
        return owned.reshape(1, -1), last
    steps, last = _steps(b, members, parts, chunks, channel, COPY, np.arange(m) + shift, [owned], [], step0, last)
    received = [np.roll(ids, 1, axis=0) for ids in steps]
    return np.concatenate([owned.reshape(m, -1)] + received, axis=1), last


def ring_allreduce(b: ScheduleBuilder, members: np.ndarray, lo: int, hi: int, ready: np.ndarray,
                   chunk_size: int | None = None, channel: int = 0, step0: int = 0) -> np.ndarray:
    """Ring AllReduce of ``[lo, hi)`` over ``members``; returns (N, D) ids that complete it."""
    m = len(members)
    bounds = split_range(lo, hi, m)
    chunks = chunk_count((hi - lo) // max(m, 1), chunk_size)
    owned, last = reduce_scatter(b, members, bounds, ready, chunks, channel, step0)
    return all_gather(b, members, bounds, owned, chunks, channel, step0 + m - 1, last)[0]


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
    orders = np.stack([np.concatenate(g.hosts) for g in groups])  # (groups, n) rank positions in visiting order
    pieces = [chunk_size * g.weight if chunk_size else None for g in groups]
    if collective == "allreduce":
        edges = split_range(0, size, channels)[shares]
        bounds = np.stack([split_range(int(edges[g]), int(edges[g + 1]), n) for g in range(len(groups))])
        part_lo, part_hi = bounds[:, :-1], bounds[:, 1:]
        chunks = [chunk_count(int(edges[g + 1] - edges[g]) // n, pieces[g]) for g in range(len(groups))]
        phases = [(REDUCE, 0), (COPY, 1)]  # (op, offset): member i sends part (i + offset - t) at phase step t
    else:
        rank_parts = split_range(0, size, n)
        cuts = rank_parts[:-1, None] + (shares[None, :] * np.diff(rank_parts)[:, None]) // channels
        column = np.arange(len(groups))[:, None]  # group g takes slice g of each member's own part
        part_lo, part_hi = cuts[orders, column], cuts[orders, column + 1]
        chunks = [chunk_count(int(np.max(part_hi[g] - part_lo[g], initial=0)), pieces[g]) for g in range(len(groups))]
        phases = [(REDUCE, -1)] if collective == "reduce_scatter" else [(COPY, 0)]
    steps = len(phases) * (n - 1)
    lanes = len(groups) * n
    group = np.repeat(np.arange(len(groups)), n)
    member = np.tile(np.arange(n), len(groups))
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
        "ring", list(ranks), list(ranks), size, src=orders.reshape(-1), dst=np.roll(orders, -1, axis=1).reshape(-1),
        channel=group, flows=steps * k, after=group * n + (member - 1) % n, lag=k, per_step=k, pieces=at, sizes=sizes,
        carried_bytes=np.asarray(carried, dtype=float),
        info={"channels": channels, "channel_weights": weights.tolist()})


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
