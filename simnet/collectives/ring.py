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
nodes and byte range, which is how ``hierarchical`` runs rings inside each host.
"""

from __future__ import annotations

import numpy as np

from simnet.collectives.channels import channel_groups, default_channels
from simnet.collectives.registry import chunk_count, register
from simnet.collectives.schedule import COPY, REDUCE, Schedule, ScheduleBuilder, in_order, split_range
from simnet.topology.model import Topology

__all__ = ["ring", "reduce_scatter", "all_gather", "ring_allreduce"]


def _chunk_bounds(bounds: np.ndarray, parts: np.ndarray, chunks: int) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) arrays of shape (len(parts), chunks) cutting each part into ``chunks`` pieces."""
    lo, hi = bounds[parts], bounds[parts + 1]
    cuts = lo[:, None] + (np.arange(chunks + 1)[None, :] * (hi - lo)[:, None]) // chunks
    return cuts[:, :-1], cuts[:, 1:]


def _steps(b: ScheduleBuilder, members: np.ndarray, bounds: np.ndarray, chunks: int, channel: int,
           op: int, first_part: np.ndarray, first_deps: list[np.ndarray], extra_deps: list[np.ndarray],
           step0: int, last: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """N-1 ring steps; step s sends part ``first_part - s``. Returns ids per step (m, k) and last."""
    m = len(members)
    successors = np.roll(members, -1)
    ids_per_step = []
    deps = first_deps
    for s in range(m - 1):
        lo, hi = _chunk_bounds(bounds, (first_part - s) % m, chunks)
        ids = b.next_ids((m, chunks))
        b.add(members[:, None], successors[:, None], lo, hi, op,
              deps=[d if d.ndim == 2 else d[:, None] for d in deps + extra_deps],
              after_sent=in_order(ids, first=last),  # queued behind the previous step's last piece
              step=step0 + s, chunk=np.arange(chunks)[None, :], channel=channel)
        ids_per_step.append(ids)
        last = ids[:, -1]
        deps = [np.roll(ids, 1, axis=0)]  # what rank i received from rank i-1 at this step
    return ids_per_step, last


def reduce_scatter(b: ScheduleBuilder, members: np.ndarray, bounds: np.ndarray, ready: np.ndarray,
                   chunks: int = 1, channel: int = 0, step0: int = 0,
                   last: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Ring reduce-scatter of ``bounds`` (N+1 byte offsets) over ``members`` (N node indices).

    ``ready[i]`` is a transfer id (or -1) after whose delivery member i's data is final.
    Member i ends owning part (i + 1) mod N. Returns ``(owned, last)``: the (N, chunks)
    ids whose delivery completes each member's owned part (-1 where nothing was received),
    and each member's last transfer on its outgoing connection.
    """
    m = len(members)
    last = np.full(m, -1, dtype=np.int64) if last is None else last
    if m == 1:
        return np.full((1, chunks), -1, dtype=np.int64), last
    ready = np.asarray(ready, dtype=np.int64)
    steps, last = _steps(b, members, bounds, chunks, channel, REDUCE, np.arange(m), [], [ready], step0, last)
    return np.roll(steps[-1], 1, axis=0), last


def all_gather(b: ScheduleBuilder, members: np.ndarray, bounds: np.ndarray, owned: np.ndarray,
               chunks: int = 1, channel: int = 0, step0: int = 0,
               last: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Ring all-gather: member i starts with part (i + 1) mod N final once ``owned[i]``
    ((N, chunks) or (N,) ids, -1 = already final) is delivered. Returns the (N, D) ids whose
    delivery gives each member the whole range (-1 padded), and each member's last transfer
    on its outgoing connection."""
    m = len(members)
    owned = np.asarray(owned, dtype=np.int64)
    last = np.full(m, -1, dtype=np.int64) if last is None else last
    if m == 1:
        return owned.reshape(1, -1), last
    steps, last = _steps(b, members, bounds, chunks, channel, COPY, np.arange(m) + 1, [owned], [], step0, last)
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
    channels = channels or default_channels(topology, ranks)
    groups = channel_groups(topology, ranks, channels, "ring")
    weights = np.array([g.weight for g in groups])
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
