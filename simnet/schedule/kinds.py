"""The collectives simnet simulates, in nccl-tests' conventions.

Each collective says what ``size`` means, how nccl-tests turns time into bus bandwidth
(``busbw = algbw * factor(N)``, the factors of nccl-tests' ``src/*.cu`` ``GetBw``
functions), which NCCL function times it and what every rank must hold at the end
(``simnet.schedule.verify``):

=================  ======================================  ==========  =====================
collective         size (bytes)                            busbw/algbw  every rank ends with
=================  ======================================  ==========  =====================
``allreduce``      the buffer                              2(N-1)/N    the sum of all buffers
``reduce_scatter`` the whole input (N parts)               (N-1)/N     the sum of its own part
``all_gather``     the whole output (N parts)              (N-1)/N     every rank's own part
``broadcast``      the buffer                              1           the root's buffer
``reduce``         the buffer                              1           (the root) the sum
``all_to_all``     each rank's send buffer (N blocks)      (N-1)/N     block i of every rank i
``send_recv``      the buffer each rank sends              1           its predecessor's buffer
=================  ======================================  ==========  =====================

Part r of a buffer is ``split_range(0, size, N)[r:r+2]``. ``all_to_all`` and ``send_recv``
move data that ends at another offset than it starts; their schedules address it in one
space of N x size bytes: block (i, j), what rank i sends rank j, is
``split_range(0, N*size, N*N)[i*N+j : i*N+j+2]`` for all_to_all, and rank i's buffer is
``[i*size, (i+1)*size)`` for send_recv, so a transfer carries the same byte range at both ends.
The root of Broadcast and Reduce is rank 0.

>>> [(c.name, round(c.busbw_factor(8), 3)) for c in COLLECTIVES.values()][:3]
[('allreduce', 1.75), ('reduce_scatter', 0.875), ('all_gather', 0.875)]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Collective", "COLLECTIVES", "ALLREDUCE", "collective"]

ALLREDUCE = "allreduce"


@dataclass(frozen=True)
class Collective:
    """One collective: its names, nccl-tests' bus bandwidth factor and its semantics."""

    name: str
    title: str  # how tables and plots name it (NCCL's spelling)
    nccl: str  # NCCL's function (ncclFunc_t name), whose tuning rows time it; "SendRecv" for point-to-point
    busbw_factor: Callable[[int], float]  # busbw / algbw for N ranks
    description: str
    exchange: bool = False  # addressed in N x size bytes (see the module docstring)
    reduces: bool = False  # sums buffers: its schedules have reductions, which options.reduce_bandwidth times

    @property
    def point_to_point(self) -> bool:
        """Runs on NCCL's send/recv (its tuner does not time it)."""
        return self.nccl == "SendRecv"


def _ring_factor(n: int) -> float:
    """(N-1)/N: each rank's share of the buffer that crosses its links (0 for no ranks)."""
    return (n - 1) / n if n else 0.0


COLLECTIVES: dict[str, Collective] = {c.name: c for c in (
    Collective("allreduce", "AllReduce", "AllReduce", lambda n: 2 * (n - 1) / n if n else 0.0,
               "every rank ends with the sum of every rank's buffer", reduces=True),
    Collective("reduce_scatter", "ReduceScatter", "ReduceScatter", _ring_factor,
               "rank r ends with the sum of part r of every rank's buffer (size: the whole input)", reduces=True),
    Collective("all_gather", "AllGather", "AllGather", _ring_factor,
               "every rank ends with part r of rank r, for every r (size: the whole output)"),
    Collective("broadcast", "Broadcast", "Broadcast", lambda n: 1.0,
               "every rank ends with the root's (rank 0's) buffer"),
    Collective("reduce", "Reduce", "Reduce", lambda n: 1.0,
               "the root (rank 0) ends with the sum of every rank's buffer", reduces=True),
    Collective("all_to_all", "AllToAll", "SendRecv", _ring_factor,
               "rank j ends with block j of every rank's buffer, block i from rank i (size: one rank's buffer)",
               exchange=True),
    Collective("send_recv", "SendRecv", "SendRecv", lambda n: 1.0,
               "rank r sends its buffer to rank r+1 and receives rank r-1's (a ring of pairs)", exchange=True),
)}


def collective(name: str) -> Collective:
    """The collective called ``name``; ``ValueError`` naming the choices otherwise."""
    if name not in COLLECTIVES:
        raise ValueError(f"unknown collective {name!r}; expected one of {', '.join(COLLECTIVES)}")
    return COLLECTIVES[name]

