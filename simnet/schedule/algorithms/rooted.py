"""Broadcast and Reduce: one root (rank 0) sends its buffer to all, or receives the sum of all.

* ``ring`` is NCCL's (the only algorithm NCCL has for them, src/graph/tuning.cc): per
  channel a pipelined chain along that channel's ring, from the root (Broadcast) or ending
  at it (Reduce, each rank adding its buffer to what passes through); the channels share
  the buffer, laid out as NCCL's Ring is (``simnet.schedule.channels``).
* ``direct``: the root sends the whole buffer to every rank at once, or every rank sends
  it to the root at once (an incast on the root's link).
"""

from __future__ import annotations

import numpy as np

from simnet.schedule.channels import ring_layout
from simnet.schedule.registry import chunk_count, register
from simnet.schedule.transfers import COPY, REDUCE, Schedule, ScheduleBuilder, in_order, split_range
from simnet.topology.graph import Topology

__all__ = ["ring_broadcast", "ring_reduce", "direct_broadcast", "direct_reduce", "chain"]

ROOT = 0


def chain(b: ScheduleBuilder, order: np.ndarray, lo: int, hi: int, chunks: int, op: int, channel: int = 0) -> None:
    """Pipelined chain over ``order`` (node indices): ``[lo, hi)`` in ``chunks`` pieces, each
    hop forwarding piece j once it arrived, one connection per hop sending in order."""
    cuts = split_range(lo, hi, chunks)
    previous = np.full(chunks, -1, dtype=np.int64)
    for hop, (src, dst) in enumerate(zip(order[:-1], order[1:])):
        ids = b.next_ids((chunks,))
        b.add(src, dst, cuts[:-1], cuts[1:], op, deps=[previous], after_sent=in_order(ids[None, :])[0], step=hop,
              chunk=np.arange(chunks), channel=channel)
        previous = ids


def _ring_rooted(name: str, topology: Topology, ranks: list[str], size: int, chunk_size: int | None,
                 channels: int | None) -> Schedule:
    """NCCL's Ring Broadcast (``name`` broadcast) or Reduce of ``size`` bytes: per channel
    group a pipelined chain along its ring, from the root or ending at it."""
    b = ScheduleBuilder("ring", ranks, size)
    channels, groups, weights = ring_layout(topology, ranks, channels)
    edges = split_range(0, size, int(weights.sum()))[np.concatenate([[0], np.cumsum(weights)])]
    for k, group in enumerate(groups):
        ring = np.concatenate(group.hosts)
        ring = np.roll(ring, -int(np.flatnonzero(ring == ROOT)[0]))  # the root first
        order = ring if name == "broadcast" else np.append(ring[1:], ROOT)  # reduce ends at the root
        lo, hi = int(edges[k]), int(edges[k + 1])
        chunks = chunk_count(hi - lo, max(1, chunk_size * int(weights[k]) // group.stripes) if chunk_size else None)
        chain(b, order, lo, hi, chunks, COPY if name == "broadcast" else REDUCE, channel=k)
        host = {int(m): i for i, members in enumerate(group.hosts) for m in members}
        between = sum(host[int(a)] != host[int(c)] for a, c in zip(order[:-1], order[1:]))
        b.info.setdefault("pipeline", {})[k] = (len(order) - 1, chunks, between)  # hops, pieces, hops between hosts
    b.info["channels"] = channels
    b.info["channel_weights"] = weights.tolist()
    return b.build()


_CHAIN_FORM = "(N-1)*(L + c/B) + (k-1)*c/B per channel of k pieces of c bytes (a pipelined chain)"


@register("ring", "NCCL's Ring: per channel a pipelined chain from the root along the ring", _CHAIN_FORM,
          options=("chunk_size", "channels"), collective="broadcast", lays_out_nics=True)
def ring_broadcast(topology: Topology, ranks: list[str], size: int, chunk_size: int | None = None,
                   channels: int | None = None) -> Schedule:
    """NCCL's Ring Broadcast from rank 0. One channel, contention-free, k pieces of c bytes:
    ``(N-1)*(L + c/B) + (k-1)*c/B``."""
    return _ring_rooted("broadcast", topology, ranks, size, chunk_size, channels)


@register("ring", "NCCL's Ring: per channel a pipelined chain along the ring ending at the root, each rank adding",
          _CHAIN_FORM, options=("chunk_size", "channels"), collective="reduce", lays_out_nics=True)
def ring_reduce(topology: Topology, ranks: list[str], size: int, chunk_size: int | None = None,
                channels: int | None = None) -> Schedule:
    """NCCL's Ring Reduce to rank 0. One channel, contention-free, k pieces of c bytes:
    ``(N-1)*(L + c/B) + (k-1)*c/B``."""
    return _ring_rooted("reduce", topology, ranks, size, chunk_size, channels)


_FLAT_FORM = "L + (N-1)*S/B through one switch (the root's link carries N-1 buffers)"


@register("direct", "the root sends its whole buffer to every rank at once", _FLAT_FORM, collective="broadcast")
def direct_broadcast(topology: Topology, ranks: list[str], size: int) -> Schedule:
    """Flat Broadcast from rank 0. Through one switch: ``L + (N-1)*S/B``."""
    b = ScheduleBuilder("direct", ranks, size)
    others = np.arange(1, len(ranks))
    b.add(ROOT, others, 0, size, COPY)
    return b.build()


@register("direct", "every rank sends its whole buffer to the root at once, which adds them (incast)", _FLAT_FORM,
          collective="reduce")
def direct_reduce(topology: Topology, ranks: list[str], size: int) -> Schedule:
    """Flat Reduce to rank 0. Through one switch: ``L + (N-1)*S/B``."""
    b = ScheduleBuilder("direct", ranks, size)
    others = np.arange(1, len(ranks))
    b.add(others, ROOT, 0, size, REDUCE)
    return b.build()
