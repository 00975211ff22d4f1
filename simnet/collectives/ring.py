"""Ring AllReduce: reduce-scatter then all-gather around a ring (Patarasuk & Yuan, 2009),
laid out over channels as NCCL's Ring is.

The buffer is cut into N parts. In reduce-scatter step s (0..N-2) rank i sends part
(i - s) mod N to rank i+1, which adds it to its own; afterwards rank i holds part
(i + 1) mod N fully reduced. All-gather then passes the reduced parts around once more,
overwriting. With ``chunk_size`` each step's part is cut into k pieces that move on as
soon as they arrive, queued in order on each rank's connection to its successor.

``ring`` is NCCL's Ring: C channels, each a ring over every rank carrying S/C, entering
and leaving every host through a pair of NIC rails as NCCL's search lays them out, so the
channels together use every NIC (``simnet.collectives.channels``). With ``channels: 1``,
or one NIC per host, it is the single textbook ring.

The pieces here are reusable: ``reduce_scatter`` and ``all_gather`` work on any subset of
nodes and byte range, which is how ``hierarchical`` runs rings inside each host, and
NCCL's Ring ReduceScatter and AllGather are those halves alone (``ring_reduce_scatter``,
``ring_all_gather``): every channel carries its slice of each rank's part, and rank r
ends owning (reduce-scatter) or starts from (all-gather) its own part r.
"""

from __future__ import annotations

import numpy as np

from simnet.collectives.channels import ring_layout
from simnet.collectives.registry import chunk_count, register
from simnet.collectives.schedule import COPY, REDUCE, Schedule, ScheduleBuilder, in_order, split_range
from simnet.topology.model import Topology

__all__ = ["ring", "reduce_scatter", "all_gather", "ring_allreduce", "ring_reduce_scatter", "ring_all_gather"]


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


@register(
    "ring",
    "NCCL's Ring: C channels of reduce-scatter + all-gather rings, channel c through NIC rail c mod NICs",
    "per channel 2(N-1) * (L + S/(C*N*B)); k pieces of c = S/(C*N*k) per step: "
    "(2N-3)*max(L + c/B, k*c/B) + k*c/B + L, B the channel's share of its bottleneck",
    options=("chunk_size", "channels"),
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
    b = ScheduleBuilder("ring", ranks, size)
    channels, groups, weights = ring_layout(topology, ranks, channels)
    edges = split_range(0, size, channels)[np.concatenate([[0], np.cumsum(weights)])]
    # each group moves the chunks of all the NCCL channels it stands for at once
    pieces = [chunk_size * g.weight if chunk_size else None for g in groups]
    members = [sum(len(h) for h in g.hosts) for g in groups]
    b.expect(sum(2 * (m - 1) * m * chunk_count(int(edges[k + 1] - edges[k]) // m, pieces[k])
                 for k, m in enumerate(members)))
    for k, group in enumerate(groups):
        order = np.concatenate(group.hosts)
        ring_allreduce(b, order, int(edges[k]), int(edges[k + 1]), np.full(len(order), -1), pieces[k], channel=k)
    b.info["channels"] = channels
    b.info["channel_weights"] = weights.tolist()
    return b.build()


def _ring_half(topology: Topology, ranks: list[str], size: int, chunk_size: int | None, channels: int | None,
               name: str) -> Schedule:
    """NCCL's Ring ReduceScatter (``name`` reduce_scatter) or AllGather over channel groups:
    channel group k carries its slice of every rank's part, rank r owning part r."""
    b = ScheduleBuilder("ring", ranks, size)
    n = len(ranks)
    channels, groups, weights = ring_layout(topology, ranks, channels)
    rank_parts = split_range(0, size, n)
    # slice k of part r: the channels' share of it, cut as the channels' weights say
    cuts = rank_parts[:-1, None] + (np.concatenate([[0], np.cumsum(weights)])[None, :]
                                    * np.diff(rank_parts)[:, None]) // channels
    pieces = [chunk_size * g.weight if chunk_size else None for g in groups]
    b.expect(sum((n - 1) * n * chunk_count(int(cuts[0, k + 1] - cuts[0, k]), pieces[k]) for k in range(len(groups))))
    for k, group in enumerate(groups):
        order = np.concatenate(group.hosts)
        parts = (cuts[order, k], cuts[order, k + 1])  # member i's part: its own rank's slice
        chunks = chunk_count(int(np.max(parts[1] - parts[0], initial=0)), pieces[k])
        if name == "reduce_scatter":
            reduce_scatter(b, order, parts, np.full(n, -1), chunks, channel=k, shift=0)
        else:
            all_gather(b, order, parts, np.full(n, -1), chunks, channel=k, shift=0)
    b.info["channels"] = channels
    b.info["channel_weights"] = weights.tolist()
    return b.build()


_HALF_FORM = ("per channel (N-1) * (L + S/(C*N*B)); k pieces of c = S/(C*N*k) per step: "
              "(N-2)*max(L + c/B, k*c/B) + k*c/B + L")


@register("ring", "NCCL's Ring: C channels of reduce-scatter rings, rank r ending with the sum of part r",
          _HALF_FORM, options=("chunk_size", "channels"), collective="reduce_scatter")
def ring_reduce_scatter(topology: Topology, ranks: list[str], size: int, chunk_size: int | None = None,
                        channels: int | None = None) -> Schedule:
    """NCCL's Ring ReduceScatter of ``size`` bytes (the whole input) over ``ranks``: the
    reduce-scatter half of ``ring``. One channel, contention-free, path latency L and
    bandwidth B: ``(N-1) * (L + S/(N*B))``."""
    return _ring_half(topology, ranks, size, chunk_size, channels, "reduce_scatter")


@register("ring", "NCCL's Ring: C channels of all-gather rings, each rank passing on the parts it received",
          _HALF_FORM, options=("chunk_size", "channels"), collective="all_gather")
def ring_all_gather(topology: Topology, ranks: list[str], size: int, chunk_size: int | None = None,
                    channels: int | None = None) -> Schedule:
    """NCCL's Ring AllGather of ``size`` bytes (the whole output) over ``ranks``: the
    all-gather half of ``ring``. One channel, contention-free: ``(N-1) * (L + S/(N*B))``."""
    return _ring_half(topology, ranks, size, chunk_size, channels, "all_gather")
