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
  last byte, ``simnet.engine.clock``) and the same bytes on every link. Otherwise the lanes
  at their own rates are a lower bound on every time and the lanes at an equal split of
  every shared link an upper bound: where their completion times meet, that is the exact
  completion time (``accept="makespan"``). Else, given the fluid engine (``fluid``), the
  parts of the program whose links were asked for more than they carry go to it and the
  others replay by lanes (exact); else it returns None (or the upper bound,
  ``accept="bound"``) and the caller expands the program for the fluid engine.

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

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from simnet.engine.accounting import SATURATED, LinkStats
from simnet.engine.clock import HORIZON_PS, WHOLE_PS_SLACK, check_horizon
from simnet.engine.faults import Fault, capacity_changes, capacity_regimes
from simnet.engine.maxmin import TIE
from simnet.engine.replay import Replay
from simnet.io.budget import TooLarge, fits
from simnet.model.timing import Timing
from simnet.schedule.lanes import LaneProgram
from simnet.schedule.transfers import REDUCE, summed_at
from simnet.topology.graph import PS_PER_SECOND, Topology

__all__ = ["replay_lanes", "ACCEPT", "worth_replaying", "MAX_SERIAL", "MAX_WATCHED", "WATCHED_BYTES", "MAX_EXACT",
           "INT64_SAFE", "PREFIX_GROWTH"]

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


ACCEPT = ("lanes", "makespan", "bound", "lower")
"""What ``replay_lanes`` may answer, each level taking the ones before it: ``lanes`` every
lane's times exact (engine ``lanes``); ``makespan`` also the completion time alone, exact
where the lower and upper bounds meet (engine ``lanes-bounds-meet``); ``bound`` also the
steady upper bound where they do not (engine ``lanes-steady``); ``lower``, instead of that,
the lower bound (engine ``lanes-lower``: the later of the lanes at their own rates and, where
no fault takes links down, the busiest link's bytes at its capacity; ``Replay.upper_ps`` the
steady upper bound, whose link statistics it keeps)."""


def replay_lanes(program: LaneProgram, topology: Topology, timing: Timing | None = None,
                 reduce_bandwidth: float | None = None, message_overhead: float = 0.0,
                 steady: bool = False, accept: str = "lanes", faults: list[Fault] | None = None,
                 fluid: Callable[[LaneProgram, np.ndarray], Replay] | None = None) -> Replay | None:
    """Replay ``program`` lane by lane (see the module docstring), or None when no answer
    ``accept`` allows (``ACCEPT``) is proven, or a lane carries more than ``MAX_SERIAL``
    transfers.

    ``timing`` is indexed by lane (``rate_cap``, ``delay_ps``; ``wire_factor`` and
    ``start_ps`` one for every lane or, for programs merged from groups timed apart, an
    array of one per lane); ``reduce_bandwidth`` and ``message_overhead`` as for ``replay``.
    ``faults`` set the capacities in force from their times on (``capacity_regimes``): each
    lane's rate is then piecewise constant, and a transfer running when its rate changes
    sends what it has left at the new rate from that instant, as the fluid network moves a
    flow to its new rate. A fault that takes links down moves the lanes crossing them to
    their detours from its instant on (``_regime_routes``: the routes the fluid network
    moves them to): their transfers running then send what they have left on the detour,
    at its rate (one due at that very instant ends on its route), and are delivered after
    the detour's latency. Everything below holds
    regime by regime: the checks against the capacities and routes in force, the bounds at
    every instant. None where links down leave some lane no route (the fluid network says
    so in its words).

    Engine ``lanes``: every lane at its own rate (its ceiling or narrowest link), and no link
    several lanes could fill was asked for more than its capacity at any instant (checked
    after the pass, when their transfers' times fit in ``MAX_WATCHED`` and the memory budget).

    ``steady`` (engine ``lanes-steady``, an upper bound): every lane runs at most at an equal
    split of each link it crosses among *all* the lanes that cross it, ``min(own rate,
    capacity / lanes)`` over its links. Those rates fit every link at every instant, and
    max-min sharing never gives a transfer less: a flow frozen by a full link gets at least
    that link's capacity over the flows crossing it, and fewer cross it at any instant than
    cross it at all. So every time is an upper bound on the exact one (up to picosecond
    rounding), as close as the lanes sharing a link are busy at once: rings keep them busy,
    trees do not. ``Replay.shared_link`` is the link of smallest equal share among those that
    slowed a lane.

    The lanes at their own rates are a lower bound on every time even where links are
    shared: max-min sharing never gives a flow more than its own rate, and a transfer
    starts once its dependencies are met, so by induction over the dependencies no time of
    the fluid run is earlier (up to the fluid engine's float rounding of finish instants, as
    for the upper bound). Where the check above fails (or is too large to keep),
    ``accept="makespan"`` takes the steady pass too: when the two completion times are the
    same picosecond, the fluid run's completion time is that one (engine
    ``lanes-bounds-meet``; ``lanes_done_ps`` and the link statistics are the steady pass's,
    so the per-lane times are upper bounds, their maximum exact). ``accept="bound"``
    returns the steady pass also when they differ.

    ``fluid`` (given a part of the program and its lanes' indices, that part's ``Replay`` on
    the fluid network) replays in parts where the check fails and the bounds do not meet
    (engine ``lanes-fluid``, exact): lanes that wait for each other or may fill a link
    together form one part; the parts whose links were asked for more than their capacity
    go to the fluid network together, the others replay by lanes. No link two parts cross
    can ever be full (the lanes crossing it all at their own rates fit in it), so max-min
    sharing couples no two parts and each part's times are those of the whole run.

    Link statistics as for the exact lanes (module docstring), of the pass returned; with
    ``fluid``, the lanes' of the free parts and the fluid network's of the others, added
    link by link (bytes and saturated times exact: a link both cross is never full; peaks,
    most flows at once and busy times summed, upper bounds where both cross).
    """
    if accept not in ACCEPT:
        raise ValueError(f"accept: {accept!r}; expected one of {', '.join(ACCEPT)}")
    timing = timing or Timing()
    if not worth_replaying(program):
        return None
    faults = faults or []
    links = len(topology.links)
    healthy = np.asarray(topology.capacity if timing.capacity is None else timing.capacity, dtype=float)
    at, capacity = capacity_regimes(healthy, faults)  # (regimes,), (regimes, links)
    routed = _regime_routes(program, topology, at, capacity_changes(healthy, faults))
    if routed is None:
        return None
    paths, latency, rerouted = routed  # (regimes, lanes, hops), (regimes, lanes), (regimes, lanes)
    padded = np.hstack([capacity, np.full((len(at), 1), np.inf)])
    rate = np.stack([padded[k][paths[k]].min(axis=1) for k in range(len(at))])  # each lane's own rate
    if timing.rate_cap is not None:
        rate = np.minimum(rate, timing.rate_cap)
    carried = program.carried()
    moving = carried > 0
    if not moving.any() or not np.isfinite(rate[:, moving]).all() or (rate[:, moving] <= 0).any():
        return None  # nothing to move; lanes with no link and no ceiling, or a link down
    width = paths.shape[2]
    crossings = np.array([np.bincount(regime[moving].ravel(), minlength=links + 1)[:links] for regime in paths])

    # B/s each lane's reductions run at (inf: none timed, a switch's into it), None without reduce_bandwidth
    reduction_rate = None if not reduce_bandwidth else \
        np.where(summed_at(program.nodes, topology)[program.dst], float(reduce_bandwidth), np.inf)

    def replayed(rates: np.ndarray, watch: np.ndarray) -> tuple[int, LinkStats, np.ndarray, tuple, list, tuple]:
        """(completion ps, link statistics, each lane's last delivery ps, the ``watch`` lanes'
        transfer intervals, the moves to detours, (busy ps per regime and lane, wire bytes per
        lane)) of every lane at ``rates`` (regimes x lanes)."""
        finished, busy, wire, intervals, moves = _longest_path(program, carried, at, rates, latency, rerouted,
                                                               timing, reduction_rate, message_overhead, watch)
        duration = int(finished.max(initial=0))
        stats = _lane_stats(paths, healthy, at, capacity, topology.reverse, rates, moving, busy, wire, duration)
        return duration, stats, finished, intervals, moves, (busy, wire)

    def answer(duration: int, stats: LinkStats, finished: np.ndarray, moves: list, engine: str,
               shared_link: int | None = None) -> Replay:
        _port_saturation(stats, duration)
        empty = np.zeros(0, dtype=np.int64)
        return Replay(None, topology, empty, empty, empty, stats, duration, sum(count for count, _ in moves),
                      sum(left for _, left in moves), engine=engine, lanes_done_ps=finished, shared_link=shared_link)

    def equal_split() -> Replay:
        share = np.hstack([np.where(capacity > 0, capacity / np.maximum(crossings, 1), np.inf),  # down: no share
                           np.full((len(at), 1), np.inf)])
        least = np.stack([share[k][paths[k]].min(axis=1) for k in range(len(at))])
        split = np.where(moving, np.minimum(rate, least), rate)
        slowed = moving & (split < rate).any(axis=0)
        shared_link = None
        if slowed.any():
            used = np.unique(paths[:, slowed])
            used = used[used < links]
            shared_link = int(used[np.argmin(share[:, used].min(axis=0))])
        duration, stats, finished, _, moves, _ = replayed(split, np.zeros(0, dtype=np.int64))
        return answer(duration, stats, finished, moves, "lanes-steady", shared_link)

    if steady:
        return equal_split()
    def watched_by(lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the links several of ``lanes`` (a mask of moving lanes) could fill in some regime,
        which of those lanes cross one of them): the links to watch and whose transfers."""
        counts = np.array([np.bincount(route[lanes].ravel(), minlength=links + 1)[:links] for route in paths])
        demand = np.array([np.bincount(route[lanes].ravel(), weights=np.repeat(regime[lanes], width),
                                       minlength=links + 1)[:links] for route, regime in zip(paths, rate)])
        links_filled = ((counts > 1) & (demand >= SATURATED * capacity)).any(axis=0)
        return links_filled, np.flatnonzero(lanes & np.append(links_filled, False)[paths].any(axis=(0, 2)))

    # links several lanes could fill: watch their lanes' transfers and check afterwards, instant by
    # instant, that they never asked for more than the link carries (then max-min never bound)
    watched, watch = watched_by(moving)
    watched_transfers = len(watch) * int(program.flows.max())
    checkable = watched_transfers <= MAX_WATCHED and fits(watched_transfers * WATCHED_BYTES)
    if not checkable and accept == "lanes":
        return None
    none = np.zeros(0, dtype=np.int64)
    duration, stats, finished, intervals, moves, (busy, wire) = replayed(rate, watch if checkable else none)
    over = _sweep(stats, np.flatnonzero(watched), paths[:, watch], at, capacity, rate[:, watch], *intervals) \
        if len(watch) and checkable else none
    if not len(watch) or (checkable and not len(over)):
        return answer(duration, stats, finished, moves, "lanes")

    def free_from_pass() -> Replay | None:
        """``replay_lanes`` of the lanes outside ``contended`` alone, from the pass above: they
        wait for no lane of the others and share no link with them that either could fill, so
        their times there are theirs alone; their statistics and the check of the links they
        could fill among themselves are theirs, as that call makes them. None where that call
        would not answer by lanes, or the pass moved transfers to detours (not kept per lane)."""
        own = moving & ~contended
        flows = int(program.flows[~contended].max(initial=0))
        if moves or not flows:
            return None
        own_watched, own_watch = watched_by(own)
        if len(own_watch) * flows > MAX_WATCHED or not fits(len(own_watch) * flows * WATCHED_BYTES):
            return None
        done = finished[~contended]
        duration = int(done.max(initial=0))
        own_stats = _lane_stats(paths, healthy, at, capacity, topology.reverse, rate, own, busy, wire, duration)
        if len(own_watch):
            column = np.searchsorted(watch, own_watch)  # every lane that crosses a link it watches, watch holds
            if len(_sweep(own_stats, np.flatnonzero(own_watched), paths[:, own_watch], at, capacity, rate[:, own_watch],
                          intervals[0][:flows, column], intervals[1][:flows, column])):
                return None
        return answer(duration, own_stats, done, [], "lanes")

    def in_parts() -> Replay | None:  # the contended lanes on the fluid network, the others by lanes
        free = free_from_pass() or replay_lanes(program.part(~contended), topology,
                                                timing.select(np.flatnonzero(~contended)), reduce_bandwidth,
                                                message_overhead, faults=faults)
        if free is None:
            return None
        try:
            return _with_fluid(program, contended, free, fluid)
        except TooLarge:  # the contended part alone would not fit either: under "lower", its bounds below
            if accept != "lower":
                raise
            return None

    contended, fluid_share = np.ones(program.lanes, dtype=bool), 1.0
    if fluid is not None and checkable:
        contended = _contended(program, paths, moving, watched, watch, intervals, at, capacity, rate, over, stats)
        if (moving & ~contended).any() and (accept != "bound" or int(program.flows[contended].sum()) <= MAX_EXACT):
            fluid_share = program.flows[contended].sum() / len(program)  # else no parts: all or too many transfers
    if fluid_share <= 0.5:  # the fluid network replays half the program at most: cheaper than the bounds would be
        parts = in_parts()
        if parts is not None:
            return parts
        fluid_share = 1.0  # (the free part's own check did not fit the memory left: as without parts)
    upper = None
    if accept != "lanes":
        upper = equal_split()  # duration: a lower bound on the fluid run's completion, upper.duration_ps an upper
        if upper.duration_ps == duration:
            return replace(upper, engine="lanes-bounds-meet", shared_link=None)
    parts = in_parts() if fluid_share < 1 else None
    if parts is not None:
        return parts
    if accept == "lower":
        # no link carries its bytes faster than its healthy capacity (faults only take from it): a bound of its
        # own, above the lanes' where many lanes share a link (a tree's NICs)
        # (not where a fault takes links down: the steady pass's bytes on a detour are not the exact run's)
        busiest = 0.0 if any(fault.cuts for fault in faults) else \
            np.divide(upper.stats.bytes, healthy, out=np.zeros(links), where=healthy > 0).max(initial=0.0)
        floor = int(np.floor(busiest * PS_PER_SECOND))  # (whole ps at or under it)
        return replace(upper, duration_ps=max(duration, floor), engine="lanes-lower", upper_ps=upper.duration_ps)
    return upper if accept == "bound" else None


def _contended(program: LaneProgram, paths: np.ndarray, moving: np.ndarray, watched: np.ndarray, watch: np.ndarray,
               intervals: tuple[np.ndarray, np.ndarray], at: np.ndarray, capacity: np.ndarray, rate: np.ndarray,
               over: np.ndarray, stats: LinkStats) -> np.ndarray:
    """Mask of the lanes in the parts of ``program`` whose links were asked for more than
    their capacity: lanes are in one part when one waits for the other or both cross a
    ``watched`` link (one several lanes could fill); ``over`` are links ``_sweep`` found
    overloaded, and the parts left are swept again (``watch``'s lanes' ``intervals``)
    until none is. ``paths`` and ``rate`` per regime and lane, as for ``_sweep``."""
    links = capacity.shape[1]
    lane, column = np.nonzero(program.after >= 0)
    tied = [(lane, program.after[lane, column])]
    on_watched = np.append(watched, False)
    for route in paths:  # lanes crossing one watched link: tied to the first of them
        crossing, hop = np.nonzero(on_watched[route] & moving[:, None])
        link = route[crossing, hop]
        order = np.argsort(link, kind="stable")
        crossing, link = crossing[order], link[order]
        first = np.searchsorted(link, link)
        tied.append((crossing, crossing[first]))
    part = _parts(program.lanes, np.concatenate([a for a, _ in tied]), np.concatenate([b for _, b in tied]))
    contended = np.zeros(program.lanes, dtype=bool)
    starts, ends = intervals
    while len(over):
        hit = moving & np.isin(paths, over).any(axis=(0, 2))
        contended |= np.isin(part, part[hit])
        left = ~contended[watch]
        crossed = np.zeros(links + 1, dtype=bool)
        crossed[paths[:, contended & moving].ravel()] = True
        unchecked = np.flatnonzero(watched & ~crossed[:links])
        if not len(unchecked):
            break
        over = _sweep(stats, unchecked, paths[:, watch[left]], at, capacity, rate[:, watch[left]],
                      starts[:, left], ends[:, left])
    return contended


def _parts(count: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per node of a graph of ``count`` nodes and edges ``a[i]`` - ``b[i]``, the smallest
    node of its connected component (labels propagated along the edges, then shortcut)."""
    label = np.arange(count)
    while True:
        least = np.minimum(label[a], label[b])
        joined = label.copy()
        np.minimum.at(joined, a, least)
        np.minimum.at(joined, b, least)
        while True:  # pointer jumping: each node to its label's label
            further = joined[joined]
            if (further == joined).all():
                break
            joined = further
        if (joined == label).all():
            return label
        label = joined


def _with_fluid(program: LaneProgram, contended: np.ndarray, free: Replay,
                fluid: Callable[[LaneProgram, np.ndarray], Replay]) -> Replay:
    """The replay of ``program`` from ``free``'s (its lanes outside ``contended``, replayed by
    lanes) and the fluid network's of the ``contended`` lanes (``fluid``): the later
    completion; bytes and saturated times added (a link the two parts cross is never full),
    peaks, most flows at once and busy times summed (upper bounds where both cross a link)."""
    lanes = np.flatnonzero(contended)
    part = program.part(contended)
    run = fluid(part, lanes)
    duration = max(free.duration_ps, run.duration_ps)
    stats, theirs = free.stats, run.stats
    stats.bytes[:] += theirs.bytes
    stats.saturated_ps[:] += theirs.saturated_ps
    stats.peak[:] += theirs.peak
    stats.max_flows[:] += theirs.max_flows
    stats.busy_ps[:] = np.minimum(stats.busy_ps + theirs.busy_ps, duration)
    stats.either_saturated_ps[:] = np.minimum(stats.either_saturated_ps + theirs.either_saturated_ps, duration)
    done = np.zeros(program.lanes, dtype=np.int64)
    done[~contended] = free.lanes_done_ps
    np.maximum.at(done, lanes[part.transfer_lanes()], run.delivered_ps)
    empty = np.zeros(0, dtype=np.int64)
    return Replay(None, free.topology, empty, empty, empty, stats, duration, free.rerouted + run.rerouted,
                  free.rerouted_bytes + run.rerouted_bytes, engine="lanes-fluid", lanes_done_ps=done)


def _regime_routes(program: LaneProgram, topology: Topology, at: np.ndarray,
                   changes: list[tuple[int, np.ndarray, np.ndarray]]):
    """(paths, latency ps, rerouted) of every lane in each capacity regime from ``at``
    (regimes x lanes x hops padded with ``len(links)``, regimes x lanes, regimes x lanes: its
    route moved at that regime's instant), or None where links down leave a lane no route.

    As ``schedule_faults`` has the fluid network do (``FluidNetwork.detour``): faults in the
    order their instants apply them (``changes``, ``capacity_changes``), each moving the
    lanes whose route crosses the links it takes down to the route over the topology
    without every link down so far; the others keep theirs."""
    import networkx as nx

    names = program.nodes
    src, dst = [names[i] for i in program.src.tolist()], [names[i] for i in program.dst.tolist()]
    paths, latency = topology.route_matrix(src, dst, program.channel)
    routes, latencies = [paths], [latency]
    rerouted = [np.zeros(program.lanes, dtype=bool)]
    down: set[int] = set()
    order = sorted(range(len(changes)), key=lambda i: changes[i][0])
    for k, instant in enumerate(at.tolist()):
        moved = np.zeros(program.lanes, dtype=bool)
        for i in [i for i in order if changes[i][0] == instant]:
            dead = changes[i][1][changes[i][2] == 0]
            if not len(dead):
                continue
            down |= set(dead.tolist())
            crossing = np.flatnonzero(np.isin(paths, dead).any(axis=1))
            if not len(crossing):
                continue
            view = topology.without(down)
            try:
                detours, detour_latency = view.route_matrix([src[j] for j in crossing], [dst[j] for j in crossing],
                                                            program.channel[crossing])
            except nx.NetworkXNoPath:
                return None
            wider = detours.shape[1] - paths.shape[1]
            paths = np.hstack([paths, np.full((len(paths), max(wider, 0)), len(topology.links))])  # a copy
            latency = latency.copy()
            paths[crossing] = len(topology.links)
            paths[crossing, :detours.shape[1]] = detours
            latency[crossing] = detour_latency
            moved[crossing] = k > 0  # at 0 nothing runs yet: the route is the lane's from the start
        if k:
            routes.append(paths)
            latencies.append(latency)
            rerouted.append(moved)
        else:
            routes[0], latencies[0], rerouted[0] = paths, latency, moved
    width = max(route.shape[1] for route in routes)
    padded = [np.hstack([r, np.full((len(r), width - r.shape[1]), len(topology.links))]) for r in routes]
    return np.stack(padded), np.stack(latencies), np.stack(rerouted)


def _longest_path(program: LaneProgram, carried: np.ndarray, at: np.ndarray, rate: np.ndarray, latency: np.ndarray,
                  rerouted: np.ndarray, timing: Timing, reduction_rate: np.ndarray | None, message_overhead: float,
                  watch: np.ndarray):
    """(when each lane's last transfer was delivered (ps), busy ps per regime and lane, wire
    bytes per lane, (starts, ends), the transfers moved to detours as (count, bytes left) per
    fault instant): every transfer at its lane's rate in force (``rate[k]``
    from ``at[k]`` ps on, regimes x lanes, B/s on the wire), started once its FIFO
    predecessor is sent and its dependencies delivered, its last byte leaving at the first
    whole picosecond the fluid engine would see it gone, delivered after the ``latency`` (ps,
    regimes x lanes) of the route in force then (``rerouted``: regimes x lanes whose route
    moved at the regime's instant); ``starts``/``ends`` (transfers x watched lanes, -1 where
    a lane has no such transfer) are when the ``watch`` lanes' transfers held their links.
    ``carried`` is ``program.carried()``; ``reduction_rate`` (B/s per lane, None: reductions
    take no time) delays a ``REDUCE`` transfer's delivery by its bytes at that rate.

    Times are int64 picoseconds, exact over the whole horizon: a transfer's duration is
    computed in float64 (``ceil(bytes * ps per byte - WHOLE_PS_SLACK)``, as the fluid engine
    rounds a flow's end), the sums of durations in integers (float64 would hold them exactly
    only below 2^53 ps, 2.5 hours)."""
    lanes = program.lanes
    fixed = latency + round(message_overhead * PS_PER_SECOND)  # regimes x lanes
    if timing.delay_ps is not None:
        fixed = fixed + np.asarray(timing.delay_ps).astype(np.int64)  # whole picoseconds
    moving = np.isfinite(rate) & (rate > 0)
    wire_factor = np.broadcast_to(timing.wire_factor, (lanes,))
    ps_per_byte = np.zeros(rate.shape)
    ps_per_byte[moving] = np.broadcast_to(wire_factor, rate.shape)[moving] / rate[moving] * PS_PER_SECOND
    # unless some byte takes less than the slack, every transfer of a byte or more takes a picosecond at least
    at_least_one = bool(ps_per_byte[moving].min(initial=1.0) <= WHOLE_PS_SLACK)
    depth = int(program.lag.max(initial=0)) + 1
    delivered = np.zeros((depth, lanes), dtype=np.int64)
    sent = np.broadcast_to(np.asarray(timing.start_ps, dtype=np.int64), (lanes,)).copy()
    guarded = _may_overflow(program, carried, ps_per_byte.max(axis=0), fixed, sent, reduction_rate)
    busy = np.zeros(rate.shape, dtype=np.int64)
    last = np.zeros(lanes, dtype=np.int64)
    regimes = _Regimes(at, rate, ps_per_byte, wire_factor, at_least_one, guarded, rerouted, fixed)
    after, lag = program.after, program.lag
    ring_like = (after.shape[1] == 1 and (after >= 0).all() and lag[0, 0] >= 1 and (lag == lag[0, 0]).all()
                 and (program.flows == program.flows[0]).all() and reduction_rate is None) if lanes else False
    flows = int(program.flows.max(initial=0))
    starts, ends = np.full((flows, len(watch)), -1, dtype=np.int64), np.full((flows, len(watch)), -1, dtype=np.int64)
    if ring_like:  # one dependency each, one lag, as many transfers each: whole-array passes in place
        _ring_like_passes(program, int(lag[0, 0]), fixed, regimes, delivered, sent, busy, watch, starts, ends)
        check_horizon(sent.max(initial=0))  # as the fluid engine: no last byte may leave past the horizon
        return delivered[(flows - 1) % depth], busy, carried * timing.wire_factor, (starts, ends), regimes.moves
    waves = []  # per wave: its lanes, their dependencies in a row (lanes, lags), which of its lanes wait, from where
    for wave in program.waves():
        rows, columns = np.nonzero(after[wave] >= 0)
        waiting, first = np.unique(rows, return_index=True)
        waves.append((wave, after[wave][rows, columns], lag[wave][rows, columns], waiting, first))
    began = np.zeros(lanes, dtype=np.int64)
    for q in range(flows):
        nbytes, op = program.nbytes(q)
        row = delivered[q % depth]
        for wave, on, lags, waiting, first in waves:
            start = sent[wave]
            if len(on):  # every time is >= 0: a dependency not due yet (q < lag) counts as 0
                theirs = row[on] if depth == 1 else np.where(q >= lags, delivered[(q - lags) % depth, on], 0)
                start[waiting] = np.maximum(start[waiting], np.maximum.reduceat(theirs, first))
            here = program.flows[wave] > q
            live, start = (wave, start) if here.all() else (wave[here], start[here])
            began[live] = start
            size = nbytes[live]
            took = regimes.took(size, start, live)
            sent[live] = start + took
            if guarded:  # before the next wave starts from these
                check_horizon(sent[live].max(initial=0))
            done = sent[live] + regimes.fixed_at(start, sent[live], live)
            if reduction_rate is not None:
                summing = np.ceil(size / reduction_rate[live] * PS_PER_SECOND)
                done += _whole_ps(np.where(op[live] == REDUCE, summing, 0.0), guarded, reduction=True)
            row[live] = done
            regimes.count_busy(busy, live, start, took)
            last[live] = np.maximum(last[live], done)
        if len(watch):
            here = program.flows[watch] > q
            starts[q] = np.where(here, began[watch], -1)
            ends[q] = np.where(here, sent[watch], -1)
    check_horizon(sent.max(initial=0))
    return last, busy, carried * timing.wire_factor, (starts, ends), regimes.moves


INT64_SAFE = 2**62
"""Times in int64 picoseconds stay below this (106 days / 2) when nothing could reach it:
``_may_overflow`` says when something could, and the lane passes then check as they go."""


def _may_overflow(program: LaneProgram, carried: np.ndarray, ps_per_byte: np.ndarray, fixed: np.ndarray,
                  start: np.ndarray, reduction_rate: np.ndarray | None) -> bool:
    """Whether some time of the lane replay could pass ``INT64_SAFE``: no time exceeds the
    latest start plus every transfer's duration, latency and reduction together (float64,
    with a margin for its rounding), which for any run that fits the horizon many times
    over is far below it."""
    transfers = float(program.flows.sum())
    bound = (float(start.max(initial=0)) + float((carried * ps_per_byte).sum())
             + transfers * (float(fixed.max(initial=0)) + 2.0))
    if reduction_rate is not None:
        bound += float((carried / reduction_rate).sum()) * PS_PER_SECOND + transfers
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


def _ring_like_passes(program: LaneProgram, lag: int, fixed: np.ndarray, regimes: _Regimes, delivered: np.ndarray,
                      sent: np.ndarray, busy: np.ndarray, watch: np.ndarray, starts: np.ndarray,
                      ends: np.ndarray) -> None:
    """``_longest_path`` for programs whose every lane waits on one lane at one lag (rings):
    each transfer index is a few in-place numpy passes over all lanes (regime by regime only
    while some transfer may start before the last regime's instant)."""
    depth = len(delivered)
    after = program.after[:, 0]
    took = np.empty(program.lanes)
    took_ps = np.empty(program.lanes, dtype=np.int64)
    dep = np.empty(program.lanes, dtype=np.int64)
    every = np.arange(program.lanes)
    last = len(regimes.at) - 1
    for q in range(int(program.flows[0])):
        nbytes, _ = program.nbytes(q)
        if q >= lag:
            np.take(delivered[(q - lag) % depth], after, out=dep)
            np.maximum(sent, dep, out=sent)  # now the start
        one_regime = last == 0 or sent.min() >= regimes.at[last]  # every transfer in the last regime
        if one_regime:
            np.multiply(nbytes, regimes.ps_per_byte[last], out=took)
            took -= WHOLE_PS_SLACK
            if regimes.guarded:  # a last byte past the horizon stops the run below: count it as just past
                np.minimum(took, HORIZON_PS + 1, out=took)
            np.ceil(took, out=took_ps, casting="unsafe")  # a whole number of ps: exact in int64
            if regimes.at_least_one:
                np.maximum(took_ps, nbytes > 0, out=took_ps)
        else:
            took_ps[:] = regimes.took(nbytes, sent, every)
        if len(watch):
            starts[q] = sent[watch]
        if one_regime:
            busy[last] += took_ps
        else:
            regimes.count_busy(busy, every, sent, took_ps)
        sent += took_ps  # now the last byte's departure
        if regimes.guarded:
            check_horizon(sent.max(initial=0))
        if len(watch):
            ends[q] = sent[watch]
        np.add(sent, fixed[last] if one_regime else regimes.fixed_at(sent - took_ps, sent, every),
               out=delivered[q % depth])


@dataclass(frozen=True)
class _Regimes:
    """Each lane's rate in each capacity regime, and how a transfer's time follows from it:
    from ``at[k]`` (ps, increasing, the first 0) lane i sends at ``rate[k, i]`` (B/s on the
    wire), ``ps_per_byte[k, i]`` ps per data byte (its ``wire_factor[i]`` over that rate),
    on a route that moved at ``at[k]`` where ``rerouted[k, i]``, delivering ``fixed[k, i]``
    ps after its last byte left; ``at_least_one`` and ``guarded`` as in ``_longest_path``;
    ``moves`` collects what ``took`` moved to detours."""

    at: np.ndarray
    rate: np.ndarray
    ps_per_byte: np.ndarray
    wire_factor: np.ndarray
    at_least_one: bool
    guarded: bool
    rerouted: np.ndarray
    fixed: np.ndarray
    moves: list = field(default_factory=list)  # per boundary that moved transfers to detours: (count, bytes left)

    def fixed_at(self, start: np.ndarray, sent: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        """ps from each last byte's departure (``sent``, ps; started at ``start``) on ``lanes``
        to its delivery: the latency of the route it ended on, its lane's in the regime of its
        last picosecond on the wire (one that ends at a fault's instant ends on its route)."""
        if len(self.at) == 1 or not self.rerouted.any():
            return self.fixed[0, lanes]
        return self.fixed[np.searchsorted(self.at, np.maximum(start, sent - 1), side="right") - 1, lanes]

    def took(self, size: np.ndarray, start: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        """Whole ps from each transfer's ``start`` (ps) to its last byte's departure, ``size``
        data bytes on ``lanes``: at the rate in force at its start, and where that rate
        changes before it is done, what it has left at the new rate from that instant (as the
        fluid network updates a flow's bytes left and finish when its rate moves; a flow due
        by then, to the picosecond, is done before)."""
        regime = np.searchsorted(self.at, start, side="right") - 1 if len(self.at) > 1 else 0
        took = np.ceil(size * self.ps_per_byte[regime, lanes] - WHOLE_PS_SLACK)
        if self.at_least_one:
            took = np.maximum(took, size > 0)
        took = _whole_ps(took, self.guarded)
        if len(self.at) == 1:
            return took
        end = start + took
        since, left = None, None  # where a rate moved: when, and the wire bytes left then
        for k in range(1, len(self.at)):
            boundary = self.at[k]
            rerouted = self.rerouted[k, lanes]
            moved = np.flatnonzero((start < boundary) & (end > boundary)
                                   & ((self.rate[k, lanes] != self.rate[k - 1, lanes]) | rerouted))
            if not len(moved):
                continue
            if since is None:
                since, left = start.astype(np.int64), size * self.wire_factor[lanes]
            lane = lanes[moved]
            left[moved] -= self.rate[k - 1, lane] * ((boundary - since[moved]) / PS_PER_SECOND)
            detoured = rerouted[moved]
            if detoured.any():  # as the fluid network counts the flows it moves and the bytes they had left
                self.moves.append((int(detoured.sum()), float(left[moved][detoured].sum())))
            since[moved] = boundary
            finish = np.ceil(boundary + left[moved] / self.rate[k, lane] * PS_PER_SECOND - WHOLE_PS_SLACK)
            if self.guarded:
                finish = np.minimum(finish, HORIZON_PS + 1)
            end[moved] = np.maximum(finish.astype(np.int64), boundary + 1)
        return end - start

    def count_busy(self, busy: np.ndarray, lanes: np.ndarray, start: np.ndarray, took: np.ndarray) -> None:
        """Add each transfer's ps on its links (``start`` to ``start + took``) to ``busy``
        (regimes x lanes) in the regimes they fell in."""
        if len(self.at) == 1:
            busy[0, lanes] += took
            return
        end = start + took
        bounds = np.append(self.at, HORIZON_PS + 2)
        for k in range(len(self.at)):
            busy[k, lanes] += np.maximum(np.minimum(end, bounds[k + 1]) - np.maximum(start, bounds[k]), 0)


def _lane_stats(paths: np.ndarray, healthy: np.ndarray, at: np.ndarray, capacity: np.ndarray, reverse: np.ndarray,
                rate: np.ndarray, moving: np.ndarray, busy: np.ndarray, wire: np.ndarray, duration: int) -> LinkStats:
    """Per-link statistics from per-lane totals (exact where one lane crosses a link), against
    the ``healthy`` capacities (B/s) with ``capacity[k]`` in force from ``at[k]`` ps on;
    ``paths``, ``rate`` and ``busy`` per regime and lane. A lane whose route moved counts its
    bytes on each route in proportion to what it sent in each regime (rate x time held)."""
    links = len(healthy)
    width = paths.shape[2]

    def per_link(values: np.ndarray, k: int = 0) -> np.ndarray:
        return np.bincount(paths[k][moving].ravel(), weights=np.repeat(values[moving], width),
                           minlength=links + 1)[:links]

    def busy_per_link(values: np.ndarray, k: int = 0) -> np.ndarray:
        summed = np.zeros(links + 1, dtype=np.int64)  # summed in integers: exact whatever the total
        np.add.at(summed, paths[k][moving].ravel(), np.repeat(values[moving], width))
        return summed[:links]

    stats = LinkStats(healthy.copy(), reverse)
    before = healthy
    for when, in_force in zip(at.tolist(), capacity):
        changed = np.flatnonzero(in_force != before)
        if len(changed):
            stats.capacity_from(when, changed, in_force[changed])
        before = in_force
    same = (paths == paths[0]).all(axis=(0, 2))  # lanes whose route never moved
    sent = rate * busy  # per regime and lane: what each sent, to split the bytes of lanes that moved
    share = np.divide(sent, sent.sum(axis=0), out=np.zeros_like(sent), where=sent.sum(axis=0) > 0)
    stats.bytes[:] = sum(per_link(np.where(same, wire if k == 0 else 0.0, wire * share[k]), k)
                         for k in range(len(paths)))
    crossing = np.bincount(paths[0][moving].ravel(), minlength=links + 1)[:links]  # lanes that ever cross a link
    for lane in np.flatnonzero(moving & ~same):  # a moved lane also crosses its detours' links, if it sent on them
        seen = set(paths[0, lane].tolist())
        for k in range(1, len(paths)):
            if busy[k, lane] > 0:
                for link in set(paths[k, lane].tolist()) - seen - {links}:
                    crossing[link] += 1
                seen |= set(paths[k, lane].tolist())
    stats.max_flows[:] = crossing
    stats.busy_ps[:] = np.minimum(sum(busy_per_link(busy[k], k) for k in range(len(paths))), duration)
    peak, saturated_ps = np.zeros(links), np.zeros(links, dtype=np.int64)
    for k, (in_force, regime_rate, regime_busy) in enumerate(zip(capacity, rate, busy)):
        demand, held = per_link(regime_rate, k), busy_per_link(regime_busy, k)
        peak = np.maximum(peak, np.where((held > 0) & (in_force > 0),
                                         demand / np.where(in_force > 0, in_force, 1.0), 0.0))
        saturated = (crossing == 1) & (demand >= SATURATED * in_force)
        saturated_ps += np.where(saturated, held, 0)
    stats.peak[:] = peak
    stats.saturated_ps[:] = np.minimum(saturated_ps, duration)
    return stats


PREFIX_GROWTH = 16
"""``_sweep`` checks the first transfer of every watched lane, then the first 16, 256, ...,
then all: an overload shows where lanes start together (a ring's first step) and costs
little to find there, and the prefixes add at most a fifteenth to a check that passes."""


def _sweep(stats: LinkStats, watched: np.ndarray, paths: np.ndarray, at: np.ndarray, capacity: np.ndarray,
           rate: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Replay the ``watched`` links' loads from their lanes' transfer intervals (``paths``
    and ``rate`` per regime and watched lane, ``starts``/``ends`` of the watched lanes,
    transfers x lanes, ps, -1 for none), regime by regime (``capacity[k]`` in force from
    ``at[k]`` ps on; a transfer's time split at the regimes' bounds): the links that carried
    more than their capacity in force at some instant (some of them, at least one: the lane
    times do not hold), else none, their peak, most flows at once, busy and saturated time
    set exactly in ``stats``.
    Transfers of growing prefixes first (``PREFIX_GROWTH``): every lane's transfers follow
    each other, so the first q of every lane hold all the load before the earliest start of
    a transfer q."""
    bounds = np.append(at, HORIZON_PS + 2)
    links = capacity.shape[1]
    peak, max_flows = np.zeros(links), np.zeros(links, dtype=np.int64)
    busy_ps, saturated_ps = np.zeros(links, dtype=np.int64), np.zeros(links, dtype=np.int64)
    for k, (in_force, regime_rate) in enumerate(zip(capacity, rate)):
        lane, hop = np.nonzero(np.isin(paths[k], watched))  # the watched links each lane crosses in this regime
        link = paths[k][lane, hop]
        if len(at) == 1:
            begin, finish = starts, ends
        else:  # the pieces in this regime (none: finish <= begin)
            begin, finish = np.maximum(starts, bounds[k]), np.minimum(ends, bounds[k + 1])
        q = 1
        while q < len(starts):
            later = starts[q][starts[q] >= 0]
            loads = _loads(in_force, link, lane, regime_rate, begin[:q], finish[:q],
                           until=later.min(initial=HORIZON_PS + 1))
            if isinstance(loads, np.ndarray):
                return loads
            q *= PREFIX_GROWTH
        loads = _loads(in_force, link, lane, regime_rate, begin, finish, until=HORIZON_PS + 1)
        if isinstance(loads, np.ndarray):
            return loads
        where, load, flows, span, first = loads
        lasting = span > 0
        np.maximum.at(peak, where, np.where(lasting, load / in_force[where], 0.0))
        np.maximum.at(max_flows, where, np.where(lasting, flows, 0))
        for total, mask in ((busy_ps, flows > 0), (saturated_ps, load >= SATURATED * in_force[where])):
            if len(where):  # per link, its spans summed in integers
                np.add.at(total, where[first], np.add.reduceat(np.where(mask & lasting, span, 0), first))
    for name, values in (("peak", peak), ("max_flows", max_flows), ("busy_ps", busy_ps),
                         ("saturated_ps", saturated_ps)):
        getattr(stats, name)[watched] = values[watched]
    return np.zeros(0, dtype=np.int64)


def _loads(capacity: np.ndarray, link: np.ndarray, lane: np.ndarray, rate: np.ndarray, starts: np.ndarray,
           ends: np.ndarray, until: int):
    """Each watched link's load over time from the transfers in ``starts``/``ends`` of the
    (``lane``, ``link``) pairs, as (link, load B/s, flows, span ps, first event of each link)
    per event sorted by link then time; or, where some links carried more than their
    capacity at an instant before ``until`` (ps), those links (an array)."""
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
    span = np.append(np.diff(when), 0)
    span[np.append(where[1:] != where[:-1], True)] = 0  # the last event of a link closes it
    over = (span > 0) & (when < until) & (load > capacity[where] * (1 + TIE))
    if over.any():
        return np.unique(where[over])
    return where, load, np.cumsum(count), span, first


def _port_saturation(stats: LinkStats, duration: int) -> None:
    """Time a link or its reverse was saturated: exact when one of them never was, else the
    sum of both (capped at the run), an upper bound."""
    back = np.where(stats.reverse >= 0, stats.saturated_ps[np.maximum(stats.reverse, 0)], 0)
    stats.either_saturated_ps[:] = np.minimum(stats.saturated_ps + back, duration)
