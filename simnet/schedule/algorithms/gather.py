"""ReduceScatter and AllGather beyond the ring: NCCL's PAT and NVLS, and the direct exchange.

``size`` is the whole buffer (N parts, part r = rank r's; nccl-tests' convention).

* ``pat``: NCCL's PAT (Parallel Aggregated Trees, NCCL 2.23), which runs AllGather and
  ReduceScatter at one GPU per node (ranks of which a node holds several are refused, as NCCL
  has it off there) in a logarithmic number of network steps, is built on
  Bruck's algorithm (Bruck et al., IEEE TPDS 8(11), 1997); simnet simulates Bruck's steps:
  in AllGather step k (distance d = 2^k, k < ceil(lg N)) rank r sends rank r-d the
  min(d, N-d) parts it holds, r .. r+min(d, N-d)-1, as one message, so after step k it
  holds 2d parts; ReduceScatter runs the same steps backwards, adding. A step starts once
  the rank has received the previous one (by then it holds every part it forwards).
  NCCL's own pipelining inside the steps is not modelled: with ``reduce_bandwidth`` set, a
  step's reduction starts after its whole message is in, not chunk by chunk as NCCL streams it.
* ``nvls`` (one host): the NVSwitch does the work. AllGather: every GPU writes its part
  once into the switch, which multicasts it to every GPU (itself included). ReduceScatter:
  every GPU sends its whole buffer into the switch, which adds and sends part r to rank r.
* ``direct`` (in ``simnet.schedule.algorithms.direct``): every rank exchanges with every other at once.
"""

from __future__ import annotations

import numpy as np

from simnet.errors import Unsupported
from simnet.schedule.algorithms.innetwork import NVLS_CHUNK, nvls_switch
from simnet.schedule.registry import chunk_count, register
from simnet.schedule.transfers import COPY, REDUCE, Schedule, ScheduleBuilder, in_order, split_range
from simnet.topology.graph import Topology

__all__ = ["pat_all_gather", "pat_reduce_scatter", "nvls_all_gather", "nvls_reduce_scatter", "bruck_steps"]


def bruck_steps(n: int) -> list[tuple[int, int]]:
    """(distance, parts sent) of each step of Bruck's AllGather over ``n`` ranks.

    >>> bruck_steps(6)
    [(1, 1), (2, 2), (4, 2)]
    """
    steps, d = [], 1
    while d < n:
        steps.append((d, min(d, n - d)))
        d *= 2
    return steps


def _pat(name: str, ranks: list[str], size: int) -> Schedule:
    """Bruck's AllGather (``name`` all_gather) or its reverse, ReduceScatter (see the module
    docstring): each step one message per rank, its parts' bytes in one transfer (two when
    the parts wrap past the buffer's end)."""
    b = ScheduleBuilder("pat", ranks, size)
    n = len(ranks)
    bounds = split_range(0, size, n)
    r = np.arange(n)
    steps = bruck_steps(n)
    gather = name == "all_gather"
    order = range(len(steps)) if gather else range(len(steps) - 1, -1, -1)
    synced = np.full(n, -1, dtype=np.int64)  # per rank: every receive of its previous step
    last = np.full(n, -1, dtype=np.int64)  # per rank: its last send (one stream per rank)
    for k in order:
        d, count = steps[k]
        # AllGather: rank r sends r-d parts r .. r+count-1, all held once its previous step
        # arrived; ReduceScatter: rank r sends r+d parts r+d .. r+d+count-1, all summed by then
        peer, op, first = ((r - d) % n, COPY, r) if gather else ((r + d) % n, REDUCE, (r + d) % n)
        end = first + count
        head = b.add(r, peer, bounds[first], bounds[np.minimum(end, n)], op, deps=[synced], after_sent=last,
                     step=k, chunk=0)
        wraps = np.flatnonzero(end > n)
        tail = np.full(n, -1, dtype=np.int64)
        tail[wraps] = b.add(wraps, peer[wraps], 0, bounds[end[wraps] - n], op, deps=[synced[wraps]],
                            after_sent=head[wraps], step=k, chunk=1)
        last = np.where(tail >= 0, tail, head)
        received = np.empty((n, 2), dtype=np.int64)
        received[peer] = np.stack([head, tail], axis=1)  # row = receiver
        synced = b.join(r, received)
    b.info["steps"] = len(steps)
    return b.build()


_PAT_FORM = "ceil(lg N)*L + (N-1)/N * S/B (one peer per step, each rank's link the bottleneck)"


@register("pat", "NCCL's PAT as Bruck's algorithm: ceil(lg N) steps, distance doubling, parts forwarded as held",
          _PAT_FORM, collective="all_gather")
def pat_all_gather(topology: Topology, ranks: list[str], size: int) -> Schedule:
    """Bruck's AllGather (NCCL's PAT). Contention-free, path latency L and bandwidth B:
    ``ceil(lg N) * L + (N-1)/N * S/B`` (step k sends min(2^k, N-2^k) parts of S/N)."""
    _one_per_node(topology, ranks)
    return _pat("all_gather", ranks, size)


@register("pat", "NCCL's PAT as Bruck's algorithm reversed: ceil(lg N) steps, distance halving, parts added",
          _PAT_FORM, collective="reduce_scatter")
def pat_reduce_scatter(topology: Topology, ranks: list[str], size: int) -> Schedule:
    """Bruck's steps backwards, adding (NCCL's PAT ReduceScatter). Contention-free:
    ``ceil(lg N) * L + (N-1)/N * S/B``."""
    _one_per_node(topology, ranks)
    return _pat("reduce_scatter", ranks, size)


def _one_per_node(topology: Topology, ranks: list[str]) -> None:
    """Refuse ``ranks`` of which a node holds several: NCCL enables PAT at one GPU per node
    only (``ncclPatEnable``: nNodes == nRanks, src/graph/tuning.cc, v2.30.7), as its tuner here."""
    crowded = next(((node, len(gpus)) for node, gpus in topology.groups("node", ranks).items() if len(gpus) > 1),
                   None)
    if crowded is not None:
        raise Unsupported(f"pat runs at one GPU per node (NCCL's ncclPatEnable), and node {crowded[0]!r} holds "
                          f"{crowded[1]} of these GPUs; use ring")


def _nvls(name: str, topology: Topology, ranks: list[str], size: int, chunk_size: int, channels: int) -> Schedule:
    """NVLS AllGather or ReduceScatter on one host (see the module docstring)."""
    if len(topology.groups("node", ranks)) > 1:
        raise Unsupported(f"nvls {name} across hosts: NCCL runs it across nodes only through CollNet (SHARP) "
                          "heads, which simnet does not model for this collective; use ring (or pat at one GPU "
                          "per node)")
    b = ScheduleBuilder("nvls", ranks, size)
    n = len(ranks)
    switch = b.node(nvls_switch(topology, ranks))
    bounds = split_range(0, size, n)
    chunks = chunk_count(-(-size // n), chunk_size * channels)
    cuts = bounds[:-1, None] + (np.arange(chunks + 1)[None, :] * np.diff(bounds)[:, None]) // chunks  # (n, k+1)
    r = np.arange(n)
    if name == "all_gather":  # GPU r writes part r into the switch, which multicasts it to all
        up = b.next_ids((n, chunks))
        b.add(r[:, None], switch, cuts[:, :-1], cuts[:, 1:], COPY, after_sent=in_order(up), step=0,
              chunk=np.arange(chunks)[None, :])
        down = b.next_ids((n, chunks, n))  # switch -> GPU g, chunk j, part p: each GPU's parts interleaved
        b.add(switch, r[:, None, None], cuts.T[None, :-1, :], cuts.T[None, 1:, :], COPY, deps=[up.T[None, :, :]],
              after_sent=in_order(down.reshape(n, -1)).reshape(n, chunks, n), step=1,
              chunk=np.arange(chunks)[None, :, None])
    else:  # every GPU adds its whole buffer into the switch, chunk-major; the switch sends part p to rank p
        up = b.next_ids((n, chunks, n))  # GPU g, chunk j, part p
        b.add(r[:, None, None], switch, cuts.T[None, :-1, :], cuts.T[None, 1:, :], REDUCE,
              after_sent=in_order(up.reshape(n, -1)).reshape(n, chunks, n), step=0,
              chunk=np.arange(chunks)[None, :, None])
        summed = b.join(switch, up.transpose(2, 1, 0))  # (part, chunk): every GPU's contribution in
        down = b.next_ids((n, chunks))
        b.add(switch, r[:, None], cuts[:, :-1], cuts[:, 1:], COPY, deps=[summed], after_sent=in_order(down),
              step=1, chunk=np.arange(chunks)[None, :])
    b.info["channels"] = channels
    b.info["pipeline"] = {0: (2, chunks, 0)}
    return b.build()


_NVLS_OPTIONS = ("chunk_size", "channels")


@register("nvls", "NVLink SHARP on one host: every GPU writes its part once, the NVSwitch multicasts it to all",
          "2*(L + c/B) + (N*k-1)*c/B for k chunks of c bytes per part (each GPU receives S)",
          options=_NVLS_OPTIONS, collective="all_gather")
def nvls_all_gather(topology: Topology, ranks: list[str], size: int, chunk_size: int = NVLS_CHUNK,
                    channels: int = 16) -> Schedule:
    """NVLS AllGather on one host: each GPU's link carries S/N up and S down; about S/B."""
    return _nvls("all_gather", topology, ranks, size, chunk_size, channels)


@register("nvls", "NVLink SHARP on one host: every GPU adds its buffer into the NVSwitch, which sends part r to "
          "rank r", "2*(L + c/B) + (N*k-1)*c/B for k chunks of c bytes per part (each GPU sends S)",
          options=_NVLS_OPTIONS, collective="reduce_scatter", sums_in_switch=True)
def nvls_reduce_scatter(topology: Topology, ranks: list[str], size: int, chunk_size: int = NVLS_CHUNK,
                        channels: int = 16) -> Schedule:
    """NVLS ReduceScatter on one host: each GPU's link carries S up and S/N down; about S/B."""
    return _nvls("reduce_scatter", topology, ranks, size, chunk_size, channels)
