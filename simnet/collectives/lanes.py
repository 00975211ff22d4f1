"""Lane programs: schedules whose transfers repeat along connections, replayed exactly
without a transfer each when no link is ever asked for more than it carries.

A **lane** is one connection ``src -> dst`` on ``channel``, carrying ``flows[l]``
transfers one after another (FIFO: transfer q starts once transfer q-1 has left the
sender). Transfer q of lane l also waits, for each column d with ``after[l, d] >= 0`` and
``q >= lag[l, d]``, for transfer ``q - lag[l, d]`` of lane ``after[l, d]`` to be
delivered. ``pieces(q)`` says what every lane's transfer q carries. NCCL's rings are lane
programs: lane (channel, rank) sends to the next rank, and its k pieces of step s wait for
the k pieces the previous rank sent at step s-1 (lag k). A 1 GiB ring over 16,384 GPUs is
4·10^9 transfers but only 131,072 lanes of 32,766 transfers each. NCCL's trees are too:
a lane per tree edge and direction, chunk j going up once the children's chunk j arrived
(lag 0: same-index dependencies order the lanes in *waves*, replayed one after another).

A program has two replays, equal to each other by construction:

* ``to_schedule()`` expands it into an explicit ``Schedule`` for the fluid engine, the
  numpy data check and traces;
* ``replay_lanes`` runs it lane-vectorised, one numpy pass per transfer index, when it
  can prove no link is ever shared beyond its capacity: the summed rates of the lanes
  crossing each link (each at its own ceiling or bottleneck) fit within the link, or,
  where they do not, the lanes' transfers on that link never asked for more at any
  instant (checked after the pass). Then max-min sharing never binds, every transfer runs
  at its lane's rate, and the times follow from the dependencies alone (a longest path):
  the fluid engine's times (both end a flow at the first whole picosecond at or after its
  last byte) and the same bytes on every link. Otherwise it returns None and the caller
  expands the program for the fluid engine.

Link statistics from ``replay_lanes`` are exact on links one lane crosses and on links
checked instant by instant; where several lanes cross a link that can never be full,
whether they were busy at the same instant is not tracked: ``peak`` and ``max_flows``
are then what all of them together would reach (upper bounds), ``busy_ps`` a capped sum
(an upper bound), saturated time exactly zero; a port's both-directions saturated time is
exact unless both directions saturate (then a capped sum). ``Replay.engine`` says which ran.

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

from simnet.budget import fits
from simnet.collectives.replay import Replay, Timing
from simnet.collectives.schedule import REDUCE, Schedule, ScheduleBuilder
from simnet.network.accounting import SATURATED, LinkStats
from simnet.network.fluid import check_horizon
from simnet.network.maxmin import TIE
from simnet.topology.model import PS_PER_SECOND, Topology

__all__ = ["LaneProgram", "replay_lanes", "merge_programs", "MAX_SERIAL", "MAX_WATCHED", "WATCHED_BYTES", "MAX_EXACT"]

MAX_WATCHED = 20_000_000
"""Most transfers ``replay_lanes`` keeps the times of to check, after the fact, the links
several lanes could fill; a program that needs more goes to the fluid engine."""
WATCHED_BYTES = 480
"""Peak memory per watched transfer (its times, its events on each watched link and their
sort): 460 B measured for a 4,096-GPU tree of 16 MiB (3.9 M watched transfers, 1.87 GB)."""

MAX_EXACT = 1_000_000
"""Most transfers of a ring the fluid engine replays under ``model: nccl`` when the exact
lane replay refuses (lanes that may share a link beyond its capacity); a larger ring runs as
steady lanes (``replay_lanes(steady=True)``, an upper bound). A crude gate: the fluid
engine's time grows with how often max-min rates change, not with size alone. Rings over
two 32-GPU NVLink domains (258,048 transfers) replay in 6 s, over two 36-GPU domains
(327,168) in 6 minutes, over two NVL72 racks (1,317,888) not within 5 minutes."""

MAX_SERIAL = 500_000
"""Most transfers one lane may carry for ``replay_lanes`` to take it: each transfer index is
one numpy pass over every lane (10 us to 1 ms), so a program of few lanes and very many
pieces each (2 GPUs, 1 GiB in 1 KiB pieces) is no faster than the fluid engine."""


@dataclass
class LaneProgram:
    """Lanes (numpy arrays, one entry each; see the module docstring) and ``pieces``.

    ``after`` and ``lag`` are (lanes,) or (lanes, D) (-1 in ``after``: no dependency);
    same-index dependencies (lag 0) must not form a cycle.
    ``pieces(q)`` returns ``(lo, hi, op)`` arrays over every lane: the byte range and
    operation (``REDUCE``/``COPY``) of each lane's transfer q (ignored for lanes with
    ``flows <= q``). ``per_step[l]`` transfers of lane l make one algorithm step (for
    traces: step ``first_step + q // per_step``, chunk ``q % per_step``). Node indices refer to ``nodes``, the
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
    first_step: np.ndarray | int = 0
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        after = np.asarray(self.after, dtype=np.int64)
        self.after = after.reshape(len(self.src), after.shape[1] if after.ndim == 2 else 1)
        lag = np.asarray(self.lag, dtype=np.int64)
        self.lag = np.broadcast_to(lag.reshape(len(self.src), lag.shape[1] if lag.ndim == 2 else 1), self.after.shape)
        self.wave = self._waves()

    def _waves(self) -> np.ndarray:
        """Per lane, the longest chain of same-index dependencies leading to it: lanes of
        wave w depend at their own index only on lanes of earlier waves."""
        same = (self.after >= 0) & (self.lag == 0)
        wave = np.zeros(len(self.src), dtype=np.int64)
        for _ in range(len(self.src) + 1):
            deeper = np.where(same, wave[np.maximum(self.after, 0)] + 1, 0).max(axis=1, initial=0)
            if (deeper == wave).all():
                return wave
            wave = deeper
        raise ValueError("same-index (lag 0) dependencies between lanes form a cycle")

    def waves(self) -> list[np.ndarray]:
        """The lanes of each wave, in replay order."""
        order = np.argsort(self.wave, kind="stable")
        return np.split(order, np.flatnonzero(np.diff(self.wave[order])) + 1) if len(order) else []

    def __len__(self) -> int:
        """Transfers in the program (what ``to_schedule`` would hold)."""
        return int(self.flows.sum())

    @property
    def lanes(self) -> int:
        """Number of lanes (connections)."""
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
        depth = int(self.lag.max(initial=0)) + 1
        ids = np.full((depth, self.lanes), -1, dtype=np.int64)  # ids of the last `depth` transfers per lane
        last = np.full(self.lanes, -1, dtype=np.int64)  # each lane's latest transfer (FIFO)
        waves = self.waves()
        for q in range(int(self.flows.max(initial=0))):
            lo, hi, op = self.pieces(q)
            ids[q % depth] = -1
            for lanes in waves:  # a batch per wave: same-index dependencies point at earlier batches
                live = lanes[self.flows[lanes] > q]
                after, lag = self.after[live], self.lag[live]
                waits = (after >= 0) & (q >= lag)
                deps = np.where(waits, ids[(q - lag) % depth, np.maximum(after, 0)], -1)
                new = b.add(self.src[live], self.dst[live], lo[live], hi[live], op[live],
                            deps=list(deps.T), after_sent=last[live],
                            step=np.broadcast_to(self.first_step, (self.lanes,))[live] + q // self.per_step[live],
                            chunk=q % self.per_step[live], channel=self.channel[live])
                ids[q % depth, live] = new
                last[live] = new
        b.info.update(self.info)
        return b.build()


def merge_programs(programs: list[LaneProgram]) -> LaneProgram:
    """One program that runs ``programs`` (over disjoint ranks) at the same time: their
    lanes one after another, in order, each program's dependencies kept within its own."""
    nodes: dict[str, int] = {}
    for name in [r for p in programs for r in p.ranks] + [n for p in programs for n in p.nodes[len(p.ranks):]]:
        nodes.setdefault(name, len(nodes))
    width = max(p.after.shape[1] for p in programs)
    offsets = np.cumsum([0] + [p.lanes for p in programs])
    remap = [np.array([nodes[n] for n in p.nodes], dtype=np.int64) for p in programs]

    def joined(arrays) -> np.ndarray:
        return np.concatenate(list(arrays))

    def padded(p: LaneProgram, array: np.ndarray, fill: int) -> np.ndarray:
        return np.pad(array, ((0, 0), (0, width - array.shape[1])), constant_values=fill)

    def each(q: int, part: Callable[[LaneProgram], tuple], count: int) -> tuple[np.ndarray, ...]:
        rows = [part(p) if q < int(p.flows.max(initial=0)) else
                (np.zeros(p.lanes, dtype=np.int64),) * (count - 1) + (np.zeros(p.lanes, dtype=np.int8),)
                for p in programs]
        return tuple(joined(row[k] for row in rows) for k in range(count))

    every_size = all(p.sizes is not None for p in programs)
    return LaneProgram(
        "+".join(sorted({p.algorithm for p in programs})), list(nodes), [r for p in programs for r in p.ranks],
        max(p.size for p in programs),
        src=joined(m[p.src] for m, p in zip(remap, programs)), dst=joined(m[p.dst] for m, p in zip(remap, programs)),
        channel=joined(p.channel for p in programs), flows=joined(p.flows for p in programs),
        after=joined(padded(p, np.where(p.after >= 0, p.after + off, -1), -1) for p, off in zip(programs, offsets)),
        lag=joined(padded(p, p.lag, 0) for p in programs), per_step=joined(p.per_step for p in programs),
        pieces=lambda q: each(q, lambda p: p.pieces(q), 3),
        carried_bytes=joined(p.carried() for p in programs),
        sizes=(lambda q: each(q, lambda p: p.sizes(q), 2)) if every_size else None,
        first_step=joined(np.broadcast_to(p.first_step, (p.lanes,)) for p in programs))


def replay_lanes(program: LaneProgram, topology: Topology, timing: Timing | None = None,
                 reduce_bandwidth: float | None = None, message_overhead: float = 0.0,
                 steady: bool = False) -> Replay | None:
    """Replay ``program`` lane by lane (see the module docstring), or None when some link
    was asked for more than its capacity at some instant, a lane carries more than
    ``MAX_SERIAL`` transfers, or checking the links several lanes could fill would keep more
    transfer times than ``MAX_WATCHED`` or the memory budget allows.

    ``timing`` is indexed by lane (``rate_cap``, ``delay_ps``; ``wire_factor`` and
    ``start_ps`` one for every lane or, for programs merged from groups timed apart, an
    array of one per lane); ``reduce_bandwidth`` and ``message_overhead`` as for ``replay``.

    ``steady`` (engine ``lanes-steady``, for programs too large to replay exactly): every
    lane runs at most at an equal split of each link it crosses among *all* the lanes that
    cross it, ``min(own rate, capacity / lanes)`` over its links. Those rates fit every link
    at every instant, and max-min sharing never gives a transfer less: a flow frozen by a
    full link gets at least that link's capacity over the flows crossing it, and fewer
    cross it at any instant than cross it at all. So every time is an upper bound on the
    exact one (up to picosecond rounding), as close as the lanes sharing a link are busy at
    once: rings keep them busy, trees do not. Link statistics as for the exact lanes;
    ``Replay.shared_link`` is the link of smallest equal share among those that slowed a lane.
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
    shared_link = None
    if steady:  # an equal split of every link among all the lanes that cross it
        share = np.append(capacity / np.maximum(crossing, 1), np.inf)
        split = share[paths].min(axis=1)
        slowed = moving & (split < rate)
        rate = np.where(moving, np.minimum(rate, split), rate)
        if slowed.any():
            used = np.unique(paths[slowed])
            used = used[used < links]
            shared_link = int(used[np.argmin(share[used])])
    demand = np.bincount(paths[moving].ravel(), weights=np.repeat(rate[moving], width), minlength=links + 1)[:links]
    # links several lanes could fill: watch their lanes' transfers and check afterwards, instant by
    # instant, that they never asked for more than the link carries (then max-min never bound)
    # (steady lanes: the equal split never asks a link for more than it carries)
    watched = (crossing > 1) & (demand >= SATURATED * capacity) & (not steady)
    watch = np.flatnonzero(moving & np.append(watched, False)[paths].any(axis=1))
    watched_transfers = len(watch) * int(program.flows.max())
    if watched_transfers > MAX_WATCHED or not fits(watched_transfers * WATCHED_BYTES):
        return None
    finished, busy, wire, intervals = _longest_path(program, rate, latency, timing, reduce_bandwidth,
                                                    message_overhead, watch)
    duration = int(finished.max(initial=0.0))
    stats = _lane_stats(paths, capacity, topology.reverse, rate, moving, busy, wire, duration)
    if len(watch) and not _sweep(stats, np.flatnonzero(watched), paths[watch], rate[watch], *intervals):
        return None
    _port_saturation(stats, duration)
    empty = np.zeros(0, dtype=np.int64)
    return Replay(None, topology, empty, empty, empty, stats, duration, engine="lanes-steady" if steady else "lanes",
                  lanes_done_ps=finished.astype(np.int64), shared_link=shared_link)


def _longest_path(program: LaneProgram, rate: np.ndarray, latency: np.ndarray, timing: Timing,
                  reduce_bandwidth: float | None, message_overhead: float, watch: np.ndarray):
    """(when each lane's last transfer was delivered (ps), busy ps and wire bytes per lane,
    (starts, ends)): every transfer at its lane's rate, started once its FIFO predecessor is sent and its
    dependencies delivered, its last byte leaving at the first whole picosecond the fluid
    engine would see it gone; ``starts``/``ends`` (transfers x watched lanes, NaN where a
    lane has no such transfer) are when the ``watch`` lanes' transfers held their links.

    Times are whole picoseconds held in float64 (exact below 2^53 ps, 2.5 hours)."""
    lanes = program.lanes
    fixed = (latency + round(message_overhead * PS_PER_SECOND)).astype(float)
    if timing.delay_ps is not None:
        fixed += np.asarray(timing.delay_ps, dtype=float)
    moving = np.isfinite(rate) & (rate > 0)
    ps_per_byte = np.zeros(lanes)
    ps_per_byte[moving] = np.broadcast_to(timing.wire_factor, (lanes,))[moving] / rate[moving] * PS_PER_SECOND
    at_least_one = bool(ps_per_byte[moving].min(initial=1.0) < 1.001e-3)  # else ceil(x - 1e-3) >= 1 for x >= 1 byte
    depth = int(program.lag.max(initial=0)) + 1
    delivered = np.zeros((depth, lanes))
    sent = np.broadcast_to(np.asarray(timing.start_ps, dtype=float), (lanes,)).copy()
    busy = np.zeros(lanes)
    last = np.zeros(lanes)
    after, lag = program.after, program.lag
    ring_like = (after.shape[1] == 1 and (after >= 0).all() and lag[0, 0] >= 1 and (lag == lag[0, 0]).all()
                 and (program.flows == program.flows[0]).all() and not reduce_bandwidth) if lanes else False
    flows = int(program.flows.max(initial=0))
    starts, ends = np.full((flows, len(watch)), np.nan), np.full((flows, len(watch)), np.nan)
    if ring_like:  # one dependency each, one lag, as many transfers each: whole-array passes in place
        _ring_like_passes(program, int(lag[0, 0]), fixed, ps_per_byte, at_least_one, delivered, sent, busy, watch,
                          starts, ends)
        check_horizon(sent.max(initial=0.0))  # as the fluid engine: no last byte may leave past the horizon
        return delivered[(flows - 1) % depth], busy, program.carried() * timing.wire_factor, (starts, ends)
    waves = program.waves()
    began = np.zeros(lanes)
    for q in range(flows):
        nbytes, op = program.nbytes(q)
        row = delivered[q % depth]
        for wave in waves:
            live = wave[program.flows[wave] > q]
            start = sent[live]
            for d in range(after.shape[1]):
                due = (after[live, d] >= 0) & (q >= lag[live, d])
                if due.any():
                    theirs = delivered[(q - lag[live, d]) % depth, np.maximum(after[live, d], 0)]
                    start = np.where(due, np.maximum(start, theirs), start)
            began[live] = start
            size = nbytes[live]
            took = np.ceil(size * ps_per_byte[live] - 1e-3)
            if at_least_one:
                took = np.maximum(took, size > 0)
            sent[live] = start + took
            done = sent[live] + fixed[live]
            if reduce_bandwidth:
                done += np.where(op[live] == REDUCE, np.ceil(size / reduce_bandwidth * PS_PER_SECOND), 0.0)
            row[live] = done
            busy[live] += took
            last[live] = np.maximum(last[live], done)
        if len(watch):
            here = program.flows[watch] > q
            starts[q] = np.where(here, began[watch], np.nan)
            ends[q] = np.where(here, sent[watch], np.nan)
    check_horizon(sent.max(initial=0.0))
    return last, busy, program.carried() * timing.wire_factor, (starts, ends)


def _ring_like_passes(program: LaneProgram, lag: int, fixed: np.ndarray, ps_per_byte: np.ndarray,
                      at_least_one: bool, delivered: np.ndarray, sent: np.ndarray, busy: np.ndarray,
                      watch: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
    """``_longest_path`` for programs whose every lane waits on one lane at one lag (rings):
    each transfer index is a few in-place numpy passes over all lanes."""
    depth = len(delivered)
    after = program.after[:, 0]
    took = np.empty(program.lanes)
    dep = np.empty(program.lanes)
    for q in range(int(program.flows[0])):
        nbytes, _ = program.nbytes(q)
        if q >= lag:
            np.take(delivered[(q - lag) % depth], after, out=dep)
            np.maximum(sent, dep, out=sent)  # now the start
        np.multiply(nbytes, ps_per_byte, out=took)
        took -= 1e-3
        np.ceil(took, out=took)
        if at_least_one:
            np.maximum(took, nbytes > 0, out=took)
        if len(watch):
            starts[q] = sent[watch]
        sent += took  # now the last byte's departure
        if len(watch):
            ends[q] = sent[watch]
        np.add(sent, fixed, out=delivered[q % depth])
        busy += took


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
    return stats


def _sweep(stats: LinkStats, watched: np.ndarray, paths: np.ndarray, rate: np.ndarray, starts: np.ndarray,
           ends: np.ndarray) -> bool:
    """Replay the ``watched`` links' loads from their lanes' transfer intervals (``paths``,
    ``rate``, ``starts``/``ends`` of the watched lanes): False if any of them carried more
    than its capacity at some instant (the lane times do not hold), else set their peak,
    most flows at once, busy and saturated time exactly in ``stats``."""
    capacity = stats.capacity
    on = np.isin(paths, watched)  # (watched lanes, hops): the watched links each lane crosses
    lane, hop = np.nonzero(on)
    link = paths[lane, hop]
    held = np.isfinite(starts[:, lane]) & (ends[:, lane] > starts[:, lane])  # transfers x (lane, link) pairs
    pair = np.broadcast_to(np.arange(len(lane)), held.shape)[held]
    begin, finish = starts[:, lane][held], ends[:, lane][held]
    where = np.concatenate([link[pair], link[pair]])
    when = np.concatenate([begin, finish])
    gone = np.concatenate([np.zeros(len(pair), dtype=bool), np.ones(len(pair), dtype=bool)])
    step = np.where(gone, -1.0, 1.0) * np.concatenate([rate[lane[pair]], rate[lane[pair]]])
    order = np.lexsort((~gone, when, where))  # by link, then time, a transfer's end before another's start
    where, when, step, count = where[order], when[order], step[order], np.where(gone[order], -1, 1)
    first = np.flatnonzero(np.append(True, where[1:] != where[:-1]))  # each link's first event
    lengths = np.diff(np.append(first, len(where)))
    load = np.cumsum(step)
    load -= np.repeat(np.append(0.0, load[first[1:] - 1]), lengths)  # per link, free of the others' rounding
    flows = np.cumsum(count)
    span = np.append(np.diff(when), 0.0)
    span[np.append(where[1:] != where[:-1], True)] = 0.0  # the last event of a link closes it
    lasting = span > 0
    if (lasting & (load > capacity[where] * (1 + TIE))).any():
        return False
    for name, values in (("peak", np.where(lasting, load / capacity[where], 0.0)),
                         ("max_flows", np.where(lasting, flows, 0))):
        result = np.zeros(len(capacity), dtype=getattr(stats, name).dtype)
        np.maximum.at(result, where, values)
        getattr(stats, name)[watched] = result[watched]
    for name, mask in (("busy_ps", flows > 0), ("saturated_ps", load >= SATURATED * capacity[where])):
        total = np.bincount(where, weights=np.where(mask & lasting, span, 0.0), minlength=len(capacity))
        getattr(stats, name)[watched] = total[watched].astype(np.int64)
    return True


def _port_saturation(stats: LinkStats, duration: int) -> None:
    """Time a link or its reverse was saturated: exact when one of them never was, else the
    sum of both (capped at the run), an upper bound."""
    back = np.where(stats.reverse >= 0, stats.saturated_ps[np.maximum(stats.reverse, 0)], 0)
    stats.either_saturated_ps[:] = np.minimum(stats.saturated_ps + back, duration)
