"""Lane programs: schedules whose transfers repeat along connections, replayed exactly
without a transfer each when no link is ever asked for more than it carries.

A **lane** is one connection ``src -> dst`` on ``channel``, carrying ``flows[l]``
transfers one after another (FIFO: transfer q starts once transfer q-1 has left the
sender). Transfer q of lane l also waits, when ``after[l] >= 0`` and ``q >= lag[l]``, for
transfer ``q - lag[l]`` of lane ``after[l]`` to be delivered. ``pieces(q)`` says what
every lane's transfer q carries. NCCL's rings are lane programs: lane (channel, rank)
sends to the next rank, and its k pieces of step s wait for the k pieces the previous
rank sent at step s-1 (lag k). A 1 GiB ring over 16,384 GPUs is 4·10^9 transfers but
only 131,072 lanes of 32,766 transfers each.

A program has two replays, equal to each other by construction:

* ``to_schedule()`` expands it into an explicit ``Schedule`` for the fluid engine, the
  numpy data check and traces;
* ``replay_lanes`` runs it lane-vectorised, one numpy pass per transfer index, when it
  can prove no link is ever shared beyond its capacity: the summed rates of the lanes
  crossing each link (each at its own ceiling or bottleneck) fit within the link. Then
  max-min sharing never binds, every transfer runs at its lane's rate, and the times
  follow from the dependencies alone (a longest path) — the fluid engine's times to
  within a picosecond per transfer, the same bytes on every link. Otherwise it returns
  None and the caller expands the program for the fluid engine.

Link statistics from ``replay_lanes`` are exact on links one lane crosses; where several
lanes cross a link, whether they were busy at the same instant is not tracked:
``peak`` and ``max_flows`` are then what all of them together would reach (upper bounds),
``busy_ps`` and a port's both-directions saturated time are capped sums (upper bounds),
and saturated time is exact (such a link cannot saturate unless its lanes' rates sum to
its capacity, and those runs go to the fluid engine). ``Replay.engine`` says which ran.

>>> import numpy as np
>>> # a 2-lane ping-pong: a -> b, then b -> a once a's piece is delivered
>>> prog = LaneProgram("demo", ["a", "b"], ["a", "b"], 8, src=np.array([0, 1]), dst=np.array([1, 0]),
...                    channel=np.zeros(2, dtype=np.int64), flows=np.array([1, 2]), after=np.array([-1, 0]),
...                    lag=np.array([1, 1]), per_step=np.array([1, 1]),
...                    pieces=lambda q: (np.zeros(2, dtype=np.int64), np.full(2, 8), np.zeros(2, dtype=np.int8)))
>>> s = prog.to_schedule()
>>> len(s), s.deps(2).tolist(), s.after_sent.tolist()
(3, [0], [-1, -1, 1])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from simnet.collectives.replay import Replay, Timing
from simnet.collectives.schedule import REDUCE, Schedule, ScheduleBuilder
from simnet.network.accounting import SATURATED, LinkStats
from simnet.network.fluid import check_horizon
from simnet.network.maxmin import TIE
from simnet.topology.model import PS_PER_SECOND, Topology

__all__ = ["LaneProgram", "replay_lanes", "MAX_SERIAL"]

MAX_SERIAL = 500_000
"""Most transfers one lane may carry for ``replay_lanes`` to take it: each transfer index is
one numpy pass over every lane (10 us to 1 ms), so a program of few lanes and very many
pieces each (2 GPUs, 1 GiB in 1 KiB pieces) is no faster than the fluid engine."""


@dataclass
class LaneProgram:
    """Lanes (numpy arrays, one entry each; see the module docstring) and ``pieces``.

    ``pieces(q)`` returns ``(lo, hi, op)`` arrays over every lane: the byte range and
    operation (``REDUCE``/``COPY``) of each lane's transfer q (ignored for lanes with
    ``flows <= q``). ``per_step[l]`` transfers of lane l make one algorithm step (for
    traces: step q // per_step, chunk q % per_step). Node indices refer to ``nodes``, the
    first ``len(ranks)`` of which are the ranks. ``carried_bytes`` and ``sizes(q)`` (the
    bytes and op of every lane's transfer q), when the algorithm gives them, are
    ``carried()`` without a pass over every transfer and ``pieces`` without the ranges.
    """

    algorithm: str
    nodes: list[str]
    ranks: list[str]
    size: int
    src: np.ndarray
    dst: np.ndarray
    channel: np.ndarray
    flows: np.ndarray
    after: np.ndarray
    lag: np.ndarray
    per_step: np.ndarray
    pieces: Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]]
    carried_bytes: np.ndarray | None = None
    sizes: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        """Transfers in the program (what ``to_schedule`` would hold)."""
        return int(self.flows.sum())

    @property
    def lanes(self) -> int:
        return len(self.src)

    def worth_replaying(self) -> bool:
        """Whether ``replay_lanes`` may take it: some transfer, none more than ``MAX_SERIAL`` per lane."""
        return 0 < len(self) and int(self.flows.max()) <= MAX_SERIAL

    def carried(self) -> np.ndarray:
        """Bytes each lane carries over the whole program."""
        if self.carried_bytes is not None:
            return self.carried_bytes
        total = np.zeros(self.lanes)
        for q in range(int(self.flows.max(initial=0))):
            total += np.where(self.flows > q, self.nbytes(q)[0], 0)
        return total

    def nbytes(self, q: int) -> tuple[np.ndarray, np.ndarray]:
        """(bytes, op) of every lane's transfer q."""
        if self.sizes is not None:
            return self.sizes(q)
        lo, hi, op = self.pieces(q)
        return hi - lo, op

    def to_schedule(self) -> Schedule:
        """The explicit ``Schedule``: transfer q of every live lane in one batch per q."""
        b = ScheduleBuilder(self.algorithm, self.ranks, self.size)
        for node in self.nodes[len(self.ranks):]:
            b.node(node)
        b.expect(len(self))
        depth = int(self.lag.max(initial=1)) + 1
        ids = np.full((depth, self.lanes), -1, dtype=np.int64)  # ids of the last `depth` transfers per lane
        lanes = np.arange(self.lanes)
        for q in range(int(self.flows.max(initial=0))):
            live = lanes[self.flows > q]
            lo, hi, op = (a[live] for a in self.pieces(q))
            after, lag = self.after[live], self.lag[live]
            waits = (after >= 0) & (q >= lag)
            dep = np.where(waits, ids[(q - lag) % depth, np.maximum(after, 0)], -1)
            previous = ids[(q - 1) % depth, live] if q else -1
            ids[q % depth] = -1
            ids[q % depth, live] = b.add(self.src[live], self.dst[live], lo, hi, op, deps=[dep], after_sent=previous,
                                         step=q // self.per_step[live], chunk=q % self.per_step[live],
                                         channel=self.channel[live])
        b.info.update(self.info)
        return b.build()


def replay_lanes(program: LaneProgram, topology: Topology, timing: Timing | None = None,
                 reduce_bandwidth: float | None = None, message_overhead: float = 0.0) -> Replay | None:
    """Replay ``program`` lane by lane (see the module docstring), or None when some link
    could be shared beyond its capacity (or a link shared by several lanes could saturate),
    or a lane carries more than ``MAX_SERIAL`` transfers.

    ``timing`` is indexed by lane (``rate_cap``, ``delay_ps``; ``wire_factor`` applies to
    every transfer); ``reduce_bandwidth`` and ``message_overhead`` as for ``replay``.
    """
    timing = timing or Timing()
    if not program.worth_replaying():
        return None
    links = len(topology.links)
    capacity = np.asarray(topology.capacity if timing.capacity is None else timing.capacity, dtype=float)
    names = program.nodes
    paths, latency = topology.route_matrix([names[i] for i in program.src.tolist()],
                                           [names[i] for i in program.dst.tolist()], program.channel)
    padded = np.append(capacity, np.inf)
    rate = padded[paths].min(axis=1)
    if timing.rate_cap is not None:
        rate = np.minimum(rate, timing.rate_cap)
    moving = program.carried() > 0
    if not moving.any() or not np.isfinite(rate[moving]).all() or (rate[moving] <= 0).any():
        return None  # nothing to move; lanes with no link and no ceiling, or a link down
    width = paths.shape[1]
    crossing = np.bincount(paths[moving].ravel(), minlength=links + 1)[:links]
    demand = np.bincount(paths[moving].ravel(), weights=np.repeat(rate[moving], width), minlength=links + 1)[:links]
    if (demand > capacity * (1 + TIE)).any():
        return None
    if ((crossing > 1) & (demand >= SATURATED * capacity)).any():
        return None
    duration, busy, wire = _longest_path(program, rate, latency, timing, reduce_bandwidth, message_overhead)
    check_horizon(duration)
    stats = _lane_stats(paths, capacity, topology.reverse, rate, moving, busy, wire, duration)
    empty = np.zeros(0, dtype=np.int64)
    return Replay(None, topology, empty, empty, empty, stats, duration, engine="lanes")


def _longest_path(program: LaneProgram, rate: np.ndarray, latency: np.ndarray, timing: Timing,
                  reduce_bandwidth: float | None, message_overhead: float) -> tuple[int, np.ndarray, np.ndarray]:
    """(completion ps, busy ps per lane, wire bytes per lane): every transfer at its lane's
    rate, started once its FIFO predecessor is sent and its dependency delivered, its
    last byte leaving at the first whole picosecond the fluid engine would see it gone.

    Times are whole picoseconds held in float64 (exact below 2^53 ps, 2.5 hours)."""
    lanes = program.lanes
    fixed = (latency + round(message_overhead * PS_PER_SECOND)).astype(float)
    if timing.delay_ps is not None:
        fixed += np.asarray(timing.delay_ps, dtype=float)
    moving = np.isfinite(rate) & (rate > 0)
    ps_per_byte = np.zeros(lanes)
    ps_per_byte[moving] = timing.wire_factor / rate[moving] * PS_PER_SECOND
    at_least_one = bool(ps_per_byte[moving].min(initial=1.0) < 1.001e-3)  # else ceil(x - 1e-3) >= 1 for x >= 1 byte
    depth = int(program.lag.max(initial=1)) + 1
    delivered = np.zeros((depth, lanes))
    sent = np.full(lanes, float(timing.start_ps))
    busy = np.zeros(lanes)
    last = np.zeros(lanes)
    after, lag, waits = np.maximum(program.after, 0), program.lag, program.after >= 0
    one_lag = int(lag[0]) if lanes and (lag == lag[0]).all() and waits.all() else None  # the common shape: scalar
    uniform = bool((program.flows == program.flows[0]).all()) if lanes else True
    took = np.empty(lanes)
    dep = np.empty(lanes)
    for q in range(int(program.flows.max(initial=0))):
        nbytes, op = program.nbytes(q)
        if not uniform:
            sent_before = sent.copy()
        if one_lag is not None:
            if q >= one_lag:
                np.take(delivered[(q - one_lag) % depth], after, out=dep)
                np.maximum(sent, dep, out=sent)  # now the start
        else:
            due = waits & (q >= lag)
            sent = np.where(due, np.maximum(sent, delivered[(q - lag) % depth, after]), sent)
        np.multiply(nbytes, ps_per_byte, out=took)
        took -= 1e-3
        np.ceil(took, out=took)
        if at_least_one:
            np.maximum(took, nbytes > 0, out=took)
        sent += took  # now the last byte's departure
        done = delivered[q % depth]
        np.add(sent, fixed, out=done)
        if reduce_bandwidth:
            done += np.where(op == REDUCE, np.ceil(nbytes / reduce_bandwidth * PS_PER_SECOND), 0.0)
        if uniform:
            busy += took
            if reduce_bandwidth:  # a reduction can make a piece usable after the next one
                np.maximum(last, done, out=last)
            else:
                last = done
        else:
            live = program.flows > q
            sent = np.where(live, sent, sent_before)
            done[~live] = 0.0
            busy += np.where(live, took, 0.0)
            last = np.where(live, np.maximum(last, done), last)
    return int(last.max(initial=0.0)), busy, program.carried() * timing.wire_factor


def _lane_stats(paths: np.ndarray, capacity: np.ndarray, reverse: np.ndarray, rate: np.ndarray,
                moving: np.ndarray, busy: np.ndarray, wire: np.ndarray, duration: int) -> LinkStats:
    """Per-link statistics from per-lane totals (exact where one lane crosses a link)."""
    links = len(capacity)
    width = paths.shape[1]
    flat = paths[moving].ravel()

    def per_link(values: np.ndarray) -> np.ndarray:
        return np.bincount(flat, weights=np.repeat(values[moving], width), minlength=links + 1)[:links]

    stats = LinkStats(capacity.copy(), reverse)
    stats.bytes[:] = per_link(wire)
    crossing = np.bincount(flat, minlength=links + 1)[:links]
    demand = per_link(rate)
    stats.max_flows[:] = crossing
    stats.peak[:] = np.where(capacity > 0, demand / np.where(capacity > 0, capacity, 1.0), 0.0)
    stats.busy_ps[:] = np.minimum(per_link(busy), duration).astype(np.int64)
    saturated = (crossing == 1) & (demand >= SATURATED * capacity)
    stats.saturated_ps[:] = np.where(saturated, stats.busy_ps, 0)
    back = np.where(reverse >= 0, stats.saturated_ps[np.maximum(reverse, 0)], 0)
    stats.either_saturated_ps[:] = np.minimum(stats.saturated_ps + back, duration)
    return stats
