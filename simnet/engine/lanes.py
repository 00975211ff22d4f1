"""Replay a ``LaneProgram`` (``simnet.schedule.lanes``) lane by lane, without a transfer each,
when no link is ever asked for more than it carries.

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
  last byte, ``simnet.engine.clock``) and the same bytes on every link. Otherwise it returns
  None and the caller expands the program for the fluid engine.

Lane times are int64 picoseconds, exact over the whole horizon (each transfer's duration
rounded up to a whole picosecond in float64, their sums in integers). The fluid engine keeps
a flow's finish instant in float64, so past 2^53 ps (2.5 hours) it may differ from them by
that float's rounding, a few picoseconds.

Link statistics from ``replay_lanes`` are exact on links one lane crosses and on links
checked instant by instant; where several lanes cross a link that can never be full,
whether they were busy at the same instant is not tracked: ``peak`` and ``max_flows``
are then what all of them together would reach (upper bounds), ``busy_ps`` a capped sum
(an upper bound), saturated time exactly zero; a port's both-directions saturated time is
exact unless both directions saturate (then a capped sum). ``Replay.engine`` says which ran.
"""

from __future__ import annotations

import numpy as np

from simnet.engine.accounting import SATURATED, LinkStats
from simnet.engine.clock import HORIZON_PS, WHOLE_PS_SLACK, check_horizon
from simnet.engine.maxmin import TIE
from simnet.engine.replay import Replay
from simnet.io.budget import fits
from simnet.model.timing import Timing
from simnet.schedule.lanes import LaneProgram
from simnet.schedule.transfers import REDUCE
from simnet.topology.graph import PS_PER_SECOND, Topology

__all__ = ["replay_lanes", "worth_replaying", "MAX_SERIAL", "MAX_WATCHED", "WATCHED_BYTES", "MAX_EXACT", "INT64_SAFE"]

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


def worth_replaying(program: LaneProgram) -> bool:
    """Whether ``replay_lanes`` may take ``program``: some transfer, none more than ``MAX_SERIAL`` per lane."""
    return 0 < len(program) and int(program.flows.max()) <= MAX_SERIAL


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
    if not worth_replaying(program):
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
    carried = program.carried()
    moving = carried > 0
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
    finished, busy, wire, intervals = _longest_path(program, carried, rate, latency, timing, reduce_bandwidth,
                                                    message_overhead, watch)
    duration = int(finished.max(initial=0))
    stats = _lane_stats(paths, capacity, topology.reverse, rate, moving, busy, wire, duration)
    if len(watch) and not _sweep(stats, np.flatnonzero(watched), paths[watch], rate[watch], *intervals):
        return None
    _port_saturation(stats, duration)
    empty = np.zeros(0, dtype=np.int64)
    return Replay(None, topology, empty, empty, empty, stats, duration, engine="lanes-steady" if steady else "lanes",
                  lanes_done_ps=finished, shared_link=shared_link)


def _longest_path(program: LaneProgram, carried: np.ndarray, rate: np.ndarray, latency: np.ndarray, timing: Timing,
                  reduce_bandwidth: float | None, message_overhead: float, watch: np.ndarray):
    """(when each lane's last transfer was delivered (ps), busy ps and wire bytes per lane,
    (starts, ends)): every transfer at its lane's rate, started once its FIFO predecessor is sent and its
    dependencies delivered, its last byte leaving at the first whole picosecond the fluid
    engine would see it gone; ``starts``/``ends`` (transfers x watched lanes, -1 where a
    lane has no such transfer) are when the ``watch`` lanes' transfers held their links.
    ``carried`` is ``program.carried()``.

    Times are int64 picoseconds, exact over the whole horizon: a transfer's duration is
    computed in float64 (``ceil(bytes * ps per byte - WHOLE_PS_SLACK)``, as the fluid engine
    rounds a flow's end), the sums of durations in integers (float64 would hold them exactly
    only below 2^53 ps, 2.5 hours)."""
    lanes = program.lanes
    fixed = latency + round(message_overhead * PS_PER_SECOND)
    if timing.delay_ps is not None:
        fixed = fixed + np.asarray(timing.delay_ps).astype(np.int64)  # whole picoseconds
    moving = np.isfinite(rate) & (rate > 0)
    ps_per_byte = np.zeros(lanes)
    ps_per_byte[moving] = np.broadcast_to(timing.wire_factor, (lanes,))[moving] / rate[moving] * PS_PER_SECOND
    # unless some byte takes less than the slack, every transfer of a byte or more takes a picosecond at least
    at_least_one = bool(ps_per_byte[moving].min(initial=1.0) <= WHOLE_PS_SLACK)
    depth = int(program.lag.max(initial=0)) + 1
    delivered = np.zeros((depth, lanes), dtype=np.int64)
    sent = np.broadcast_to(np.asarray(timing.start_ps, dtype=np.int64), (lanes,)).copy()
    guarded = _may_overflow(program, carried, ps_per_byte, fixed, sent, reduce_bandwidth)
    busy = np.zeros(lanes, dtype=np.int64)
    last = np.zeros(lanes, dtype=np.int64)
    after, lag = program.after, program.lag
    ring_like = (after.shape[1] == 1 and (after >= 0).all() and lag[0, 0] >= 1 and (lag == lag[0, 0]).all()
                 and (program.flows == program.flows[0]).all() and not reduce_bandwidth) if lanes else False
    flows = int(program.flows.max(initial=0))
    starts, ends = np.full((flows, len(watch)), -1, dtype=np.int64), np.full((flows, len(watch)), -1, dtype=np.int64)
    if ring_like:  # one dependency each, one lag, as many transfers each: whole-array passes in place
        _ring_like_passes(program, int(lag[0, 0]), fixed, ps_per_byte, at_least_one, guarded, delivered, sent, busy,
                          watch, starts, ends)
        check_horizon(sent.max(initial=0))  # as the fluid engine: no last byte may leave past the horizon
        return delivered[(flows - 1) % depth], busy, carried * timing.wire_factor, (starts, ends)
    waves = program.waves()
    began = np.zeros(lanes, dtype=np.int64)
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
            took = np.ceil(size * ps_per_byte[live] - WHOLE_PS_SLACK)
            if at_least_one:
                took = np.maximum(took, size > 0)
            took = _whole_ps(took, guarded)
            sent[live] = start + took
            if guarded:  # before the next wave starts from these
                check_horizon(sent[live].max(initial=0))
            done = sent[live] + fixed[live]
            if reduce_bandwidth:
                done += _whole_ps(np.where(op[live] == REDUCE, np.ceil(size / reduce_bandwidth * PS_PER_SECOND), 0.0),
                                  guarded, reduction=True)
            row[live] = done
            busy[live] += took
            last[live] = np.maximum(last[live], done)
        if len(watch):
            here = program.flows[watch] > q
            starts[q] = np.where(here, began[watch], -1)
            ends[q] = np.where(here, sent[watch], -1)
    check_horizon(sent.max(initial=0))
    return last, busy, carried * timing.wire_factor, (starts, ends)


INT64_SAFE = 2**62
"""Times in int64 picoseconds stay below this (106 days / 2) when nothing could reach it:
``_may_overflow`` says when something could, and the lane passes then check as they go."""


def _may_overflow(program: LaneProgram, carried: np.ndarray, ps_per_byte: np.ndarray, fixed: np.ndarray,
                  start: np.ndarray, reduce_bandwidth: float | None) -> bool:
    """Whether some time of the lane replay could pass ``INT64_SAFE``: no time exceeds the
    latest start plus every transfer's duration, latency and reduction together (float64,
    with a margin for its rounding), which for any run that fits the horizon many times
    over is far below it."""
    transfers = float(program.flows.sum())
    bound = (float(start.max(initial=0)) + float((carried * ps_per_byte).sum())
             + transfers * (float(fixed.max(initial=0)) + 2.0))
    if reduce_bandwidth:
        bound += float(carried.sum()) / reduce_bandwidth * PS_PER_SECOND + transfers
    return not bound * (1 + 1e-9) < INT64_SAFE


def _whole_ps(ps: np.ndarray, guarded: bool, reduction: bool = False) -> np.ndarray:
    """Whole picoseconds held in float64 as int64. ``guarded`` (``_may_overflow``): a flow's
    time past the horizon counts as the horizon and a picosecond (its last byte would leave
    past it: the pass stops the run), a reduction past ``INT64_SAFE`` stops the run."""
    if guarded and len(ps):
        if reduction:
            if ps.max() > INT64_SAFE:
                check_horizon(ps.max())
        else:
            ps = np.minimum(ps, HORIZON_PS + 1)
    return ps.astype(np.int64)


def _ring_like_passes(program: LaneProgram, lag: int, fixed: np.ndarray, ps_per_byte: np.ndarray,
                      at_least_one: bool, guarded: bool, delivered: np.ndarray, sent: np.ndarray, busy: np.ndarray,
                      watch: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
    """``_longest_path`` for programs whose every lane waits on one lane at one lag (rings):
    each transfer index is a few in-place numpy passes over all lanes."""
    depth = len(delivered)
    after = program.after[:, 0]
    took = np.empty(program.lanes)
    took_ps = np.empty(program.lanes, dtype=np.int64)
    dep = np.empty(program.lanes, dtype=np.int64)
    for q in range(int(program.flows[0])):
        nbytes, _ = program.nbytes(q)
        if q >= lag:
            np.take(delivered[(q - lag) % depth], after, out=dep)
            np.maximum(sent, dep, out=sent)  # now the start
        np.multiply(nbytes, ps_per_byte, out=took)
        took -= WHOLE_PS_SLACK
        if guarded:  # a last byte past the horizon stops the run below: count it as just past
            np.minimum(took, HORIZON_PS + 1, out=took)
        np.ceil(took, out=took_ps, casting="unsafe")  # a whole number of ps: exact in int64
        if at_least_one:
            np.maximum(took_ps, nbytes > 0, out=took_ps)
        if len(watch):
            starts[q] = sent[watch]
        sent += took_ps  # now the last byte's departure
        if guarded:
            check_horizon(sent.max(initial=0))
        if len(watch):
            ends[q] = sent[watch]
        np.add(sent, fixed, out=delivered[q % depth])
        busy += took_ps


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
    busy_ps = np.zeros(links + 1, dtype=np.int64)  # summed in integers: exact whatever the total
    np.add.at(busy_ps, flat, np.repeat(busy[moving], width))
    stats.busy_ps[:] = np.minimum(busy_ps[:links], duration)
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
    held = (starts[:, lane] >= 0) & (ends[:, lane] > starts[:, lane])  # transfers x (lane, link) pairs
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
    span = np.append(np.diff(when), 0)
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
        total = np.zeros(len(capacity), dtype=np.int64)  # per link, its spans summed in integers
        if len(where):
            total[where[first]] = np.add.reduceat(np.where(mask & lasting, span, 0), first)
        getattr(stats, name)[watched] = total[watched]
    return True


def _port_saturation(stats: LinkStats, duration: int) -> None:
    """Time a link or its reverse was saturated: exact when one of them never was, else the
    sum of both (capped at the run), an upper bound."""
    back = np.where(stats.reverse >= 0, stats.saturated_ps[np.maximum(stats.reverse, 0)], 0)
    stats.either_saturated_ps[:] = np.minimum(stats.saturated_ps + back, duration)
