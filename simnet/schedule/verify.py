"""Prove a schedule computes its collective by running it on real numbers.

Every rank starts with its own random integer vector; other nodes start with zeros. The
schedule is executed with the data semantics of ``simnet.schedule.transfers`` (read
when a transfer starts, add or overwrite when it is delivered), in three orders:

* dependency order, every ready start before any pending delivery (a transfer missing a
  dependency reads stale data), taking ready work first-in first-out, then last-in
  first-out, so results that hinge on an order the schedule does not enforce show up;
* and, given a replay, the **real timed order** of that replay: every read at its
  transfer's start time, every write at its delivery time (at one instant, deliveries
  before starts, as the replay itself launches what a delivery makes ready). This catches
  what the orders above cannot see, such as an overwrite that lands, in time, before a
  read that the dependencies let start late.

>>> from simnet.topology.loader import topology_from_dict
>>> from simnet.schedule.catalog import build_schedule
>>> topo = topology_from_dict({"name": "m", "generate": {"kind": "full_mesh", "gpus": 5}})
>>> check_allreduce(build_schedule("ring", topo, 1000))
"""

from __future__ import annotations

from collections import deque

import numpy as np

from simnet.schedule.kinds import collective as lookup
from simnet.schedule.transfers import REDUCE, Schedule, split_range

__all__ = ["check_allreduce", "check_collective", "expected_buffers", "run_on_data", "run_in_time_order",
           "AllReduceMismatch", "CollectiveMismatch"]


class CollectiveMismatch(AssertionError):
    """The schedule does not leave every rank with what its collective defines."""


AllReduceMismatch = CollectiveMismatch  # the name the AllReduce checks have always raised


def _pieces_and_buffers(schedule: Schedule, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first piece, end piece) of every transfer over ``interval_edges(schedule)``, and every
    node's buffer of pieces: the ranks' from ``inputs``, the others' zero."""
    edges = interval_edges(schedule)
    buffers = np.zeros((len(schedule.nodes), len(edges) - 1), dtype=inputs.dtype)
    buffers[: len(schedule.ranks)] = inputs
    return np.searchsorted(edges, schedule.lo), np.searchsorted(edges, schedule.hi), buffers


def run_on_data(schedule: Schedule, inputs: np.ndarray, lifo: bool = False) -> np.ndarray:
    """Execute ``schedule`` on ``inputs`` (ranks x pieces; piece p is bytes
    ``[edges[p], edges[p+1])`` of ``interval_edges(schedule)``); returns every node's buffer."""
    lo, hi, buffers = _pieces_and_buffers(schedule, inputs)
    n = len(schedule)
    waiting = np.diff(schedule.dep_ptr).astype(np.int64)
    dependents: list[list[int]] = [[] for _ in range(n)]
    for t in range(n):
        for d in schedule.deps(t).tolist():
            dependents[d].append(t)
    followers: list[list[int]] = [[] for _ in range(n)]
    blocked = schedule.after_sent >= 0
    for t in np.flatnonzero(blocked).tolist():
        followers[int(schedule.after_sent[t])].append(t)
    starts = deque(t for t in range(n) if waiting[t] == 0 and not blocked[t])
    in_flight: deque[tuple[int, np.ndarray]] = deque()
    done = 0
    while starts or in_flight:
        if starts:
            t = starts.pop() if lifo else starts.popleft()
            payload = buffers[schedule.src[t], lo[t]: hi[t]].copy()
            in_flight.append((t, payload))
            for f in followers[t]:  # its last byte has left: the next on the connection may go
                blocked[f] = False
                if waiting[f] == 0:
                    starts.append(f)
            continue
        t, payload = in_flight.pop() if lifo else in_flight.popleft()
        target = buffers[schedule.dst[t], lo[t]: hi[t]]
        if schedule.op[t] == REDUCE:
            target += payload
        else:
            target[:] = payload
        done += 1
        for d in dependents[t]:
            waiting[d] -= 1
            if waiting[d] == 0 and not blocked[d]:
                starts.append(d)
    if done != n:
        raise CollectiveMismatch(f"{schedule.algorithm}: {n - done} transfers never became ready (a dependency cycle)")
    return buffers


def run_in_time_order(schedule: Schedule, start_ps: np.ndarray, delivered_ps: np.ndarray,
                      inputs: np.ndarray) -> np.ndarray:
    """Execute ``schedule`` on ``inputs`` with each transfer reading at ``start_ps`` and
    writing at ``delivered_ps`` (integer picoseconds of a replay); returns every buffer."""
    lo, hi, buffers = _pieces_and_buffers(schedule, inputs)
    n = len(schedule)
    # events sorted by time; at one instant deliveries (kind 0) come before starts (kind 1),
    # except that an instantaneous transfer (a zero-byte join) is delivered after it starts (kind 2)
    times = np.concatenate([delivered_ps, start_ps])
    instant = (delivered_ps == start_ps).astype(np.int64) * 2
    kinds = np.concatenate([instant, np.ones(n, dtype=np.int64)])
    ids = np.concatenate([np.arange(n), np.arange(n)])
    payloads: dict[int, np.ndarray] = {}
    for event in np.lexsort((ids, kinds, times)).tolist():
        t = int(ids[event])
        if kinds[event] == 1:
            payloads[t] = buffers[schedule.src[t], lo[t]: hi[t]].copy()
            continue
        payload = payloads.pop(t)
        target = buffers[schedule.dst[t], lo[t]: hi[t]]
        if schedule.op[t] == REDUCE:
            target += payload
        else:
            target[:] = payload
    return buffers


def interval_edges(schedule: Schedule) -> np.ndarray:
    """Sorted byte offsets cutting the buffer at every transfer boundary (0 and size included)."""
    return np.unique(np.concatenate([[0, schedule.size], schedule.lo, schedule.hi]))


def expected_buffers(collective: str, inputs: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(expected, defined): what every rank must hold in each piece (the pieces cut by
    ``edges``) after ``collective`` over ``inputs`` (ranks x pieces), and where that is
    defined (a rank's other bytes are free); see ``simnet.schedule.kinds``."""
    n = inputs.shape[0]
    total = int(edges[-1])
    start = edges[:-1]
    expected = np.zeros_like(inputs)
    defined = np.zeros(inputs.shape, dtype=bool)
    if lookup(collective).exchange:
        size = total // n if n else 0
        if collective == "all_to_all":  # block (i, j): rank i's data for rank j
            block = np.searchsorted(split_range(0, total, n * n), start, side="right") - 1
            sender, receiver = block // n, block % n
        else:  # send_recv: rank i's buffer goes to rank i + 1
            sender = np.minimum(start // max(size, 1), n - 1)
            receiver = (sender + 1) % n
        pieces = np.arange(len(start))
        expected[receiver, pieces] = inputs[sender, pieces]
        defined[receiver, pieces] = True
        return expected, defined
    owner = np.searchsorted(split_range(0, total, n), start, side="right") - 1  # whose part each piece is
    if collective == "allreduce":
        expected[:], defined[:] = inputs.sum(axis=0), True
    elif collective == "reduce_scatter":
        expected[owner, np.arange(len(start))] = inputs.sum(axis=0)
        defined[owner, np.arange(len(start))] = True
    elif collective == "all_gather":
        expected[:], defined[:] = inputs[owner, np.arange(len(start))], True
    elif collective == "broadcast":
        expected[:], defined[:] = inputs[0], True
    elif collective == "reduce":
        expected[0], defined[0] = inputs.sum(axis=0), True
    return expected, defined


def check_collective(schedule: Schedule, collective: str, seed: int = 0, timed=None) -> None:
    """Raise ``CollectiveMismatch`` unless every rank ends with exactly what ``collective``
    defines, in dependency order (FIFO and LIFO) and, with ``timed`` (a ``Replay`` of this
    schedule), in the replay's real timed order."""
    edges = interval_edges(schedule)
    rng = np.random.default_rng(seed)
    inputs = rng.integers(-(2**20), 2**20, size=(len(schedule.ranks), len(edges) - 1), dtype=np.int64)
    expected, defined = expected_buffers(collective, inputs, edges)
    runs = [("FIFO", run_on_data(schedule, inputs)), ("LIFO", run_on_data(schedule, inputs, lifo=True))]
    if timed is not None:
        runs.append(("timed", run_in_time_order(schedule, timed.start_ps, timed.delivered_ps, inputs)))
    for order, buffers in runs:
        for rank, name in enumerate(schedule.ranks):
            wrong = np.flatnonzero(defined[rank] & (buffers[rank] != expected[rank]))
            if len(wrong):
                p = int(wrong[0])
                raise CollectiveMismatch(
                    f"{schedule.algorithm}: rank {rank} ({name}) has wrong {collective} data in bytes "
                    f"[{edges[p]}, {edges[p + 1]}) (order: {order})")


def check_allreduce(schedule: Schedule, seed: int = 0, timed=None) -> None:
    """Raise ``AllReduceMismatch`` unless every rank ends with the exact sum of all inputs
    (``check_collective`` for an AllReduce)."""
    check_collective(schedule, "allreduce", seed, timed)
