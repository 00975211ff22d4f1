"""Replay a ``Schedule`` on the fluid network: who sends what when, and when it arrives.

The replay keeps dependency counters in numpy arrays and starts every transfer whose
dependencies are met as one batch per instant, so its Python work per transfer is small.
A reduction a GPU (or parameter server) makes delays the data's availability by
``bytes / reduce_bandwidth``; a switch's (NVLS, SHARP) is the network's and takes no time.

A performance model (``simnet.model``) decides how the transfers are timed, as a
``Timing``: the link capacities the network runs at, each transfer's bytes on the wire,
its own rate cap and its software latency, and when the collective starts.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from simnet.engine.accounting import SATURATED, LinkStats
from simnet.engine.clock import check_horizon
from simnet.engine.faults import Fault, capacity_changes, schedule_faults
from simnet.engine.progress import Reporter
from simnet.errors import CannotSimulate
from simnet.model.timing import Timing
from simnet.schedule.transfers import REDUCE, Schedule, csr_rows, summed_at
from simnet.topology.graph import PS_PER_SECOND, Topology

if TYPE_CHECKING:  # the fluid network and SimPy load when a replay runs on them, not for the lanes
    from simnet.engine.fluid import FluidNetwork

__all__ = ["Replay", "replay", "COMPILED_FROM", "compiled_available",
           "JobRun", "replay_jobs", "replay_apart", "join_gates", "never_full"]


@dataclass
class Replay:
    """Times per transfer (integer picoseconds, same order as the schedule) and the links'
    statistics; ``start``, ``sent`` and ``delivered`` give the same times in seconds.

    ``engine`` is ``fluid`` (the fluid network, every transfer timed), ``lanes``
    (``simnet.engine.lanes``: no schedule and no per-transfer times, only the
    completion time and the link statistics), ``lanes-bounds-meet`` (the same, the
    completion time exact because the lanes' lower and upper bounds on it meet; the
    per-lane times upper bounds), ``lanes-fluid`` (the same, exact: the lanes that meet on
    links beyond their capacity timed on the fluid network, the others by lanes) or
    ``lanes-steady`` (the same, every lane at an equal split of every link it shares: times
    are upper bounds) or ``lanes-lower`` (a lower bound: every lane at its own rate, or the
    busiest link's bytes at its capacity, whichever ends later; ``upper_ps`` and the link
    statistics are the ``lanes-steady`` pass's)."""

    schedule: Schedule | None
    topology: Topology
    start_ps: np.ndarray
    sent_ps: np.ndarray
    delivered_ps: np.ndarray
    stats: LinkStats
    duration_ps: int
    rerouted: int = 0  # flows moved off links a fault took down
    rerouted_bytes: float = 0.0  # bytes they still had to send when they moved
    engine: str = "fluid"
    lanes_done_ps: np.ndarray | None = None  # lanes: when each lane's last transfer was delivered (ps)
    shared_link: int | None = None  # lanes-steady: the link of smallest equal share that slowed a lane
    upper_ps: int | None = None  # lanes-lower: the steady pass's completion (an upper bound), its statistics'

    @property
    def latest_ps(self) -> int:
        """The latest the run may end (ps): its completion, or under a lower bound (``lanes-lower``)
        the steady pass's, the span its link statistics cover; a fault from then on is after the end."""
        return self.duration_ps if self.upper_ps is None else self.upper_ps

    @property
    def time(self) -> float:
        """Completion time of the collective in seconds (last data usable)."""
        return self.duration_ps / PS_PER_SECOND

    @property
    def start(self) -> np.ndarray:
        """When each transfer started (read its data), in seconds."""
        return self.start_ps / PS_PER_SECOND

    @property
    def sent(self) -> np.ndarray:
        """When each transfer's last byte left its sender, in seconds."""
        return self.sent_ps / PS_PER_SECOND

    @property
    def delivered(self) -> np.ndarray:
        """When each transfer's data was usable at its receiver, in seconds."""
        return self.delivered_ps / PS_PER_SECOND


def _reverse(targets: np.ndarray, counts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (ptr, idx) of "who points at t": transfer i points at ``counts[i]`` consecutive ``targets``."""
    order = np.argsort(targets, kind="stable")
    owners = np.repeat(np.arange(n, dtype=np.int32), counts)[order]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(targets, minlength=n), out=ptr[1:])
    return ptr, owners


class _Runner:
    """Drives one schedule: the network calls ``sent``/``delivered`` with transfer ids.

    Its per-transfer numbers are rows of three arrays the compiled network takes whole:
    ``state`` (``STATE``: the route row, the software latency ps, what holds it back, a
    scratch stamp, a link to the next transfer of a calendar event), ``times`` (when it
    started, sent its last byte and was delivered, ps; -1 until then) and ``floats`` (bytes
    on the wire, rate cap B/s: inf for none)."""

    STATE = ("row", "delay", "holds", "stamp", "next")

    def __init__(self, schedule: Schedule, net: FluidNetwork, reduce_bandwidth: float | None, timing: Timing,
                 start_delay: dict[str, float] | None = None, on_done: Callable[[int], None] | None = None):
        self.s = schedule
        self.on_done = on_done  # called with the time (ps) the last transfer's data is usable
        self.remaining = len(schedule)
        # how far it is, to a listener (simnet.engine.progress); a job's run is not the whole replay
        self.report = Reporter(len(schedule) if on_done is None else 0)
        self.net = net
        self.env = net.env
        n = len(schedule)
        self.state = np.zeros((len(self.STATE), n), dtype=np.int64)
        self.rows, delays, self.holds, self.stamp, _ = self.state
        self.rows[:] = _routes(net, schedule)
        nbytes = schedule.nbytes.astype(float)
        self.floats = np.empty((2, n))
        self.wire, caps = self.floats
        np.multiply(nbytes, timing.wire_factor, out=self.wire)
        caps[:] = np.inf if timing.rate_cap is None else timing.rate_cap
        self.caps = timing.rate_cap
        self.delays = timing.delay_ps
        if self.delays is not None:
            delays[:] = self.delays
        self.local = schedule.src == schedule.dst
        queued = schedule.after_sent >= 0
        # what holds each transfer back: one per dependency not delivered yet, one while the transfer it
        # queues behind has not sent, one for good once it started; it starts when nothing does
        self.holds[:] = np.diff(schedule.dep_ptr) + queued
        self.times = np.full((3, n), -1, dtype=np.int64)
        self.start_ps, self.sent_ps, self.done_ps = self.times
        # reverse edges: who waits for my delivery, who queues behind my send
        self.dependents_ptr, self.dependents = _reverse(schedule.dep_idx, np.diff(schedule.dep_ptr), n)
        self.followers_ptr, self.followers = _reverse(schedule.after_sent[queued], queued.astype(np.int64), n)
        self.gate_ps = None  # earliest start of each transfer: both ends' ranks must have joined
        if start_delay:
            self.gate_ps = join_gates(schedule.nodes, schedule.src, schedule.dst, start_delay) + timing.start_ps
            self.deferred = np.zeros(n, dtype=bool)
        self.reduce_ps = None  # ps a reduction delays each transfer's data, when reductions cost time
        if reduce_bandwidth:  # (a switch's reductions are the network's: not timed by it)
            summed = (schedule.op == REDUCE) & summed_at(schedule.nodes, net.topology)[schedule.dst]
            seconds = np.where(summed, nbytes / reduce_bandwidth, 0.0)
            self.reduce_ps = np.ceil(seconds * PS_PER_SECOND).astype(np.int64)

    def begin(self) -> None:
        self._launch(np.flatnonzero(self.holds == 0))

    def again(self, on_done: Callable[[int], None]) -> None:
        """Ready to run the schedule once more, after every transfer of the last run was
        delivered: as a new runner would be (the routes, sizes and reverse edges kept), the
        network's last listener to have started flows once it starts some."""
        self.net.forget(self)
        self.on_done = on_done
        self.remaining = len(self.s)
        self.holds[:] = np.diff(self.s.dep_ptr) + (self.s.after_sent >= 0)
        self.times.fill(-1)
        if self.gate_ps is not None:
            self.deferred[:] = False

    def _launch(self, candidates: np.ndarray) -> None:
        ready = candidates[self.holds[candidates] == 0]
        if len(ready) == 0:
            return
        if len(ready) > 1:  # drop repeats without sorting: keep each id's last position
            order = np.arange(len(ready))
            self.stamp[ready] = order
            ready = ready[self.stamp[ready] == order]
        if self.gate_ps is not None:
            ready = self._at_their_gates(ready)
        self.holds[ready] = 1
        self.start_ps[ready] = self.env.now
        local = self.local[ready]  # joins: no network, no overhead
        remote = ready[~local]
        if len(remote):
            self.net.start(self.rows[remote], self.wire[remote], remote, self,
                           caps=None if self.caps is None else self.caps[remote],
                           delays_ps=None if self.delays is None else self.delays[remote])
        if local.any():
            self.sent(ready[local], self.env.now)
            self._usable(ready[local])

    def _at_their_gates(self, ready: np.ndarray) -> np.ndarray:
        """The transfers whose ranks have both joined; the others start when the later one joins."""
        now = self.env.now
        early = self.gate_ps[ready] > now
        late = ready[early & ~self.deferred[ready]]
        self.deferred[late] = True
        for when in np.unique(self.gate_ps[late]).tolist():
            batch = late[self.gate_ps[late] == when]
            self.env.timeout(when - now).callbacks.append(lambda event, batch=batch: self._launch(batch))
        return ready[~early]

    def sent(self, tags: np.ndarray, now: int) -> None:
        self.sent_ps[tags] = now
        behind = csr_rows(self.followers_ptr, self.followers, tags)
        if len(behind):
            self.holds[behind] -= 1  # each queues behind one transfer only
            self._launch(behind)

    def delivered(self, tags: np.ndarray, now: int) -> None:
        if self.reduce_ps is None:
            self._usable(tags)
            return
        delays = self.reduce_ps[tags]
        self._usable(tags[delays == 0])
        for delay in np.unique(delays[delays > 0]).tolist():
            batch = tags[delays == delay]
            timeout = self.env.timeout(delay)
            timeout.callbacks.append(lambda event, batch=batch: self._usable(batch))

    def _usable(self, tags: np.ndarray) -> None:
        if len(tags) == 0:
            return
        self.done_ps[tags] = self.env.now
        self.remaining -= len(tags)
        self.report(len(self.done_ps) - self.remaining)
        if self.remaining == 0 and self.on_done is not None:
            self.on_done(self.env.now)
        waiting = csr_rows(self.dependents_ptr, self.dependents, tags)
        if len(waiting):
            np.subtract.at(self.holds, waiting, 1)
            self._launch(waiting)


def replay(schedule: Schedule, topology: Topology, *, timing: Timing | None = None,
           reduce_bandwidth: float | None = None, message_overhead: float = 0.0, timeline: bool = False,
           faults: list[Fault] | None = None, start_delay: dict[str, float] | None = None,
           compiled: bool | None = None) -> Replay:
    """Run ``schedule`` on a fresh fluid network over ``topology`` and time every transfer.

    ``timing`` is the performance model's say (default: line rate, no software costs);
    ``reduce_bandwidth`` (bytes/s, default: reductions are free) and ``message_overhead``
    (seconds per message) follow the network model (docs/architecture.md). ``faults``
    change link capacities at their times (links down: flows take the surviving routes);
    ``start_delay`` (s per GPU) makes ranks join late: a transfer starts once both its
    ends have joined (a receiver posts its buffers when its kernel starts).

    The fluid network runs compiled (``simnet.engine.compiled``: the same times and
    statistics to the bit, its cost following the changes rather than the flows) where
    numba is installed and the run is worth loading it (``COMPILED_FROM``), or once a run on
    SimPy has taken ``SIMPY_BUDGET`` (it starts over there); ``compiled`` True or False asks
    for one engine.
    """
    import simpy

    from simnet.engine.fluid import FluidNetwork

    timing = timing or Timing()
    faults = faults or []
    env = simpy.Environment()
    net = FluidNetwork(env, topology, message_overhead=message_overhead, timeline=timeline,
                       capacity=timing.capacity)
    runner = _Runner(schedule, net, reduce_bandwidth, timing, start_delay)
    queues = _queues(schedule.after_sent)
    slack = never_full(net, *_network_flows(net, schedule, timing, runner.rows, queues), faults)
    net.set_slack(slack)
    if _runs_compiled(compiled, len(schedule)):
        return _replay_compiled(schedule, topology, net, runner, timing, faults, slack, queues[~runner.local],
                                timeline)
    schedule_faults(net, topology, faults)
    if timing.start_ps:
        env.timeout(timing.start_ps).callbacks.append(lambda event: runner.begin())
    else:
        runner.begin()
    budget = SIMPY_BUDGET if compiled is None and importlib.util.find_spec("numba") is not None else None
    if not _run_simpy(env, budget):  # over its budget: the compiled network replays it, to the bit the same
        return replay(schedule, topology, timing=timing, reduce_bandwidth=reduce_bandwidth,
                      message_overhead=message_overhead, timeline=timeline, faults=faults, start_delay=start_delay,
                      compiled=compiled_available())
    return _finished(schedule, topology, net, runner)


SIMPY_BUDGET = 0.5
"""Wall seconds a replay that chose the SimPy network by default (``COMPILED_FROM``) may take
on it before it starts over on the compiled one, about what loading that costs: SimPy takes
4 to 200 us a transfer (a 20,000-transfer hierarchical 3.9 s), so counting transfers alone
cannot tell which runs pay for loading numba."""


def _run_simpy(env, budget: float | None) -> bool:
    """Run ``env`` until it has no events (True), or stop once it has taken ``budget`` wall
    seconds (False; None: no limit). Its time counts towards ``SIMPY_SECONDS``."""
    from simpy.core import EmptySchedule

    began = time.monotonic()
    try:
        if budget is None:
            env.run()
            return True
        step, check = env.step, began + budget
        while True:
            for _ in range(100):  # the clock read every hundred events: a step takes microseconds
                step()
            if time.monotonic() > check:
                return False
    except EmptySchedule:
        return True
    finally:
        _spent_on_simpy[0] += time.monotonic() - began


def _finished(schedule: Schedule, topology: Topology, net: FluidNetwork, runner: _Runner) -> Replay:
    """The ``Replay`` of a run the network has finished (every transfer, unless their
    dependencies form a cycle)."""
    if len(schedule) and (runner.done_ps < 0).any():
        stuck = int(np.flatnonzero(runner.done_ps < 0)[0])
        raise RuntimeError(f"{schedule.algorithm}: transfer {stuck} never ran: its dependencies form a cycle")
    duration = int(runner.done_ps.max()) if len(schedule) else 0
    return Replay(schedule, topology, runner.start_ps, runner.sent_ps, runner.done_ps, net.stats, duration,
                  net.rerouted, net.rerouted_bytes)


_EMPTY = np.zeros(0, dtype=np.int64)


def _routes(net: FluidNetwork, schedule: Schedule) -> np.ndarray:
    """The route row (``FluidNetwork.resolve``) of each of ``schedule``'s transfers."""
    index = net.topology.node_index
    nodes = np.array([index[node] for node in schedule.nodes], dtype=np.int64)
    return net.resolve_indices(nodes[schedule.src], nodes[schedule.dst], schedule.channel.astype(np.int64))


def _network_flows(net: FluidNetwork, schedule: Schedule, timing: Timing, rows: np.ndarray | None = None,
                   queues: np.ndarray | None = None):
    """(route rows, rate caps or None, ``_queues``) of ``schedule``'s transfers that carry
    bytes across ``net`` under ``timing``; ``rows`` and ``queues``: theirs for every
    transfer, if known already."""
    rows = _routes(net, schedule) if rows is None else rows
    queues = _queues(schedule.after_sent) if queues is None else queues
    moving = (schedule.src != schedule.dst) & (schedule.nbytes > 0)
    caps = None if timing.rate_cap is None else np.asarray(timing.rate_cap, dtype=float)[moving]
    return rows[moving], caps, queues[moving]


COMPILED_FROM = 20_000
"""Transfers from which ``replay`` runs the compiled fluid network by default: below, the
SimPy network usually finishes before numba's compiled code is loaded (0.5-1 s in a
process). Once a process has loaded it, or spent ``SIMPY_SECONDS`` replaying on SimPy
(many small contended runs: a scenario's sizes and algorithms), every replay takes it."""

SIMPY_SECONDS = 1.0
"""Wall seconds of SimPy replays in a process (of schedules and of jobs) after which loading
the compiled network pays."""

_spent_on_simpy = [0.0]  # wall seconds this process replayed on the SimPy network


def _runs_compiled(asked: bool | None, transfers: int, fresh: bool = False) -> bool:
    """Whether ``replay`` takes the compiled network (``asked``: the caller's choice). numba
    is imported only where the compiled network would run: importing it costs the 0.5-1 s
    that ``COMPILED_FROM`` saves small runs. ``fresh``: as in a fresh process (numba not
    loaded yet, no SimPy time spent), for what must not depend on what ran before."""
    if asked is False:
        return False
    if asked is None:
        loaded = None if fresh else sys.modules.get("simnet.engine.compiled")
        if not (transfers >= COMPILED_FROM or (not fresh and _spent_on_simpy[0] >= SIMPY_SECONDS)
                or (loaded is not None and loaded.loaded())):
            return False
    possible = compiled_available()
    if asked and not possible:
        raise ValueError("the compiled fluid network needs numba")
    return possible


def compiled_available() -> bool:
    """Whether numba, which the compiled fluid network needs, can be imported."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _replay_compiled(schedule: Schedule, topology: Topology, net: FluidNetwork, runner: _Runner, timing: Timing,
                     faults: list[Fault], slack: np.ndarray, queues: np.ndarray, timeline: bool) -> Replay:
    """``replay`` on the compiled fluid network, from the runner's and the network's state
    before anything starts."""
    from simnet.engine import compiled

    if _Runner.STATE != compiled.STATE:
        raise RuntimeError("the replay's transfer state and the compiled network's differ")
    empty = np.zeros(0, dtype=np.int64)
    changes = capacity_changes(net.capacity, faults)
    detours, cut = _detours(net, topology, changes)
    paths, latency = net.routes  # with the detours' rows
    code, totals = compiled.run(
        runner.state, runner.times, runner.floats, local=runner.local,
        gate=empty if runner.gate_ps is None else runner.gate_ps,
        reduce=empty if runner.reduce_ps is None else runner.reduce_ps,
        dependents=(runner.dependents_ptr, runner.dependents), followers=(runner.followers_ptr, runner.followers),
        paths=paths, latency=latency, capacity=net.capacity, slack=slack, reverse=topology.reverse,
        overhead_ps=net.overhead_ps, start_ps=int(timing.start_ps), faults=changes,
        slots=compiled.slot_bound(queues), timeline=timeline, detours=detours, report=runner.report)
    if code == compiled.BEYOND_HORIZON:
        check_horizon(math.inf)
    if code == compiled.CUT:
        raise cut
    net.rerouted, net.rerouted_bytes = totals.pop("rerouted"), totals.pop("rerouted_bytes")
    net.stats.adopt(totals, _in_force(net.capacity, changes))
    return _finished(schedule, topology, net, runner)


def _in_force(capacity: np.ndarray, changes: list[tuple[int, np.ndarray, np.ndarray]]) -> list:
    """``(ps, links, B/s)`` of each of ``changes`` in the order their instants applied them,
    with what each left its links at (``LinkStats.adopt``'s capacity changes)."""
    in_force = capacity.copy()
    made = []
    for at, links, rates in sorted(changes, key=lambda change: change[0]):  # stable: as they were applied
        in_force[links] = rates
        made.append((at, links, in_force[links].copy()))
    return made


def _detours(net: FluidNetwork, topology: Topology, changes: list[tuple[int, np.ndarray, np.ndarray]]):
    """((ptr, rows, detour rows, cut) per fault of ``changes`` as ``compiled.run`` takes
    them, the ``Cut`` of the fault that leaves a route none, or None): ``net`` routes around
    the links each fault takes down, in the order their instants apply them, over
    ``topology`` without every link down so far, as ``schedule_faults`` has the SimPy
    network do at those instants (the same route rows, numbered alike)."""
    from simnet.engine.fluid import Cut

    crossing = [np.zeros(0, dtype=np.int64)] * len(changes)
    detours = [np.zeros(0, dtype=np.int64)] * len(changes)
    cut = np.zeros(len(changes), dtype=np.int64)
    down = np.zeros(len(net.capacity), dtype=bool)
    failure = None
    for i in sorted(range(len(changes)), key=lambda i: changes[i][0]):
        at, links, capacity = changes[i]
        dead = links[capacity == 0]
        if not len(dead):
            continue
        down[dead] = True
        try:
            crossing[i], detours[i] = net.detour(dead, topology.without(set(np.flatnonzero(down).tolist())), at)
        except Cut as exc:
            cut[i], failure = 1, exc
            break
    ptr = np.cumsum([0] + [len(rows) for rows in crossing]).astype(np.int64)
    none = [np.zeros(0, dtype=np.int64)]
    return (ptr, np.concatenate(crossing + none), np.concatenate(detours + none), cut), failure


def _queues(after_sent: np.ndarray) -> np.ndarray:
    """Each transfer's queue: the first of the transfers it waits behind one by one on its
    connection (``after_sent``), where each waits for the one before to have sent its last
    byte and no other waits for that one too. A queue's transfers send one at a time."""
    ahead = after_sent.astype(np.int64)
    queued = ahead >= 0
    behind = np.bincount(ahead[queued], minlength=len(ahead))  # how many wait for each transfer
    head = np.arange(len(ahead))
    single = queued.copy()
    single[queued] = behind[ahead[queued]] == 1
    head[single] = ahead[single]
    while True:  # pointer jumping: log2 of the longest queue passes
        further = head[head]
        if (further == head).all():
            return head
        head = further


def never_full(net: FluidNetwork, rows: np.ndarray, caps: np.ndarray | None, queues: np.ndarray,
               faults: list[Fault]) -> np.ndarray:
    """The links (a bool per directed link) no max-min allocation can fill while flows on
    route ``rows`` (from ``net.resolve``), each capped at ``caps`` (B/s, or None) and in
    ``queues`` (``_queues``: a queue's flows send one at a time), run on ``net`` under
    ``faults``: each queue on a link may ask for at most its flows' largest bound there
    (cap or the route's narrowest link), and all of them together stay below ``SATURATED``
    of the link's least capacity during the run (``FluidNetwork.set_slack``). Where faults
    take links down, a flow may also move to its detours (``_detour_links``): it is counted on
    every link of each route it may take (none are left out where one leaves a flow no route:
    the run stops there)."""
    capacity = net.capacity
    if not len(rows):
        return np.zeros(len(capacity), dtype=bool)
    least = capacity.copy()
    for fault in faults:  # factors are shares of the run's own capacity, at most 1
        least[fault.links] = np.minimum(least[fault.links], capacity[fault.links] * fault.factors)
    count = int(rows.max()) + 1
    routes = net.paths_of(np.arange(count))  # per route row: few, where transfers are many
    widest = np.append(capacity, np.inf)[routes].min(axis=1)  # per row, the most a flow on it can take
    if any(fault.cuts for fault in faults):
        moved = _detour_links(net, faults, count)
        if moved is None:
            return np.zeros(len(capacity), dtype=bool)
        links, narrowest = moved
        routes = np.hstack([routes, links])  # each row's own links, then those of the detours it may take
        widest = np.maximum(widest, narrowest)
    bound = widest[rows]
    if caps is not None:
        bound = np.minimum(bound, caps)
    # a queue's flows on one route ask one at a time: the largest bound of each (queue, route), in that order
    row_of = np.full(int(queues.max()) + 1, -1, dtype=np.int64)
    row_of[queues] = rows
    if (row_of[queues] == rows).all():  # the usual case, a route per queue: no sort of the transfers
        largest = np.full(len(row_of), -np.inf)
        np.maximum.at(largest, queues, bound)
        heads = np.flatnonzero(row_of >= 0)
        largest, used = largest[heads], routes[row_of[heads]]
    else:
        key = queues * len(routes) + rows
        order = np.argsort(key, kind="stable")
        key = key[order]
        first = np.flatnonzero(np.append(True, key[1:] != key[:-1]))
        largest = np.maximum.reduceat(bound[order], first)
        used = routes[rows[order[first]]]
    demand = np.bincount(used.ravel(), weights=np.repeat(largest, used.shape[1]),
                         minlength=len(capacity) + 1)[:len(capacity)]
    return demand < SATURATED * least


def _detour_links(net: FluidNetwork, faults: list[Fault], count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """For each of ``net``'s first ``count`` route rows, the links of every detour a flow on
    it may move to as ``faults`` take links down (padded with ``len(capacity)``), and the
    widest of those detours' narrowest links (B/s; -inf: none), as ``FluidNetwork.detour``
    will route them: each fault in the order applied, over the topology without every link
    down so far, the routes then crossing a link down moved. None when one is left no route.
    ``net`` is not changed."""
    capacity = np.append(net.capacity, np.inf)
    topology, pad = net.topology, len(net.capacity)
    names = topology.nodes
    keys = net.keys_of(np.arange(count))  # (src, dst, flow) node indices per row
    current = [tuple(link for link in row if link != pad) for row in net.paths_of(np.arange(count)).tolist()]
    extra: list[set[int]] = [set() for _ in range(count)]
    narrowest = np.full(count, -np.inf)
    down: set[int] = set()
    for fault in sorted(faults, key=lambda fault: round(fault.at * PS_PER_SECOND)):  # stable: as applied
        dead = set(fault.links[fault.factors == 0].tolist())
        if not dead:
            continue
        down |= dead
        view = topology.without(down)
        for row in range(count):
            if dead.isdisjoint(current[row]):
                continue
            s, d, f = keys[row]
            try:
                route = view.route_indices(names[s], names[d], f)
            except nx.NetworkXNoPath:
                return None
            current[row] = route
            extra[row] |= set(route)
            narrowest[row] = max(narrowest[row], capacity[list(route)].min(initial=np.inf))
    width = max((len(links) for links in extra), default=0)
    links = np.full((count, width), pad, dtype=np.int64)
    for row, taken in enumerate(extra):
        links[row, :len(taken)] = sorted(taken)
    return links, narrowest


def join_gates(nodes: list[str], src: np.ndarray, dst: np.ndarray, delays: dict[str, float]) -> np.ndarray:
    """When each connection ``src[i] -> dst[i]`` (indices into ``nodes``) may start, ps after
    the collective's start: once both its ends have joined (``delays``: s per GPU, others 0)."""
    joined = np.array([round(delays.get(node, 0.0) * PS_PER_SECOND) for node in nodes], dtype=np.int64)
    return np.maximum(joined[src], joined[dst])


@dataclass
class JobRun:
    """One job sharing the network: ``schedule`` timed by ``timing``, first run at
    ``start_ps``, ``repeat`` times, each run starting ``period_ps`` after the one before or
    when it ends, whichever is later (a training loop's next step). ``repeat=0``: a
    background job, repeated for as long as some other job is still running."""

    schedule: Schedule
    timing: Timing
    start_ps: int = 0
    repeat: int = 1
    period_ps: int = 0


def replay_jobs(jobs: list[JobRun], topology: Topology, *, capacity: np.ndarray | None = None,
                timeline: bool = False, compiled: bool | None = None, faults: list[Fault] | None = None,
                alone_ps: list[tuple[int, int]] | None = None) -> tuple[list[list[tuple[int, int]]], LinkStats]:
    """Run several jobs on one fluid network (their flows share every link max-min fairly).

    Returns each job's runs as ``(start_ps, end_ps)`` (start: when the run was issued, its
    launch latency included in its time) and the shared links' statistics. ``capacity``:
    B/s per directed link (default: the topology's). ``faults`` change link capacities at
    their times (s from the jobs' common start; links down: flows take the surviving
    routes), as for ``replay``.

    The network runs compiled (``simnet.engine.compiled``: the same runs and statistics to
    the bit as the SimPy network replaying every run, each job's runs on one copy of its
    schedule) where numba is installed and it pays (``_jobs_run_compiled``, told by
    ``alone_ps``, each job's shortest and longest run alone in ps, where known); ``compiled`` True or
    False asks for one engine. The compiled network replays every run: it does not
    look for repeated cycles.

    Repeated runs settle into cycles (on a fabric no fault changes during the replay): jobs on
    fixed periods into one of their common period,
    jobs whose runs outlast their period into back-to-back runs, a job left alone once the
    others are done into its own runs. ``_RepeatedCycles`` finds two idle instants of the
    network whose states are equal (``FluidNetwork.idle_state`` and every job's next run
    equally far ahead) and proves that each run started between them would be issued just
    as far after its predecessor again; the cycles up to the last one are then taken from
    it, shifted in time, instead of replayed. Without a timeline only: a timeline lists
    every instant.
    """
    import simpy

    from simnet.engine.fluid import FluidNetwork

    faults = faults or []
    env = simpy.Environment()
    net = FluidNetwork(env, topology, timeline=timeline, capacity=capacity)
    # a job's runs follow each other, so its queues stay queues across them; jobs' queues are apart
    flows = [_network_flows(net, job.schedule, job.timing) for job in jobs]
    offsets = np.cumsum([0] + [len(job.schedule) for job in jobs])
    queues = np.concatenate([own + offset for (_, _, own), offset in zip(flows, offsets)] + [_EMPTY])
    slack = never_full(net, np.concatenate([rows for rows, _, _ in flows] + [_EMPTY]),
                       np.concatenate([np.full(len(rows), np.inf) if caps is None else caps
                                       for rows, caps, _ in flows] + [np.zeros(0)]), queues, faults)
    net.set_slack(slack)
    if _jobs_run_compiled(compiled, jobs, bool(faults), alone_ps):
        return _replay_jobs_compiled(jobs, topology, net, slack, timeline, faults)
    schedule_faults(net, topology, faults)
    runs: list[list[tuple[int, int]]] = [[] for _ in jobs]
    running = [sum(job.repeat > 0 for job in jobs)]  # foreground jobs not finished yet
    foreground = running[0] > 0
    report = Reporter(sum(job.repeat for job in jobs))  # foreground runs done, of all
    planned: list[tuple[int, int] | None] = [None] * len(jobs)  # each idle job's next run: (index, time ps)
    version = [0] * len(jobs)  # a plan superseded (by a skip over repeated cycles) does not fire
    runners: list[_Runner | None] = [None] * len(jobs)  # a job's runs follow each other: one runner each
    made = [0] * len(jobs)  # when each job's plan was made, in plans made: plans due at once fire in that order
    skipping = _may_skip(jobs, bool(faults)) and not timeline
    watch = _RepeatedCycles(env, net, jobs, runs, planned, made) if skipping else None
    repeated = [0]  # transfers of the runs after each job's first replayed (the skipped ones are not)

    def plan(j: int, k: int, at: int) -> None:
        planned[j] = (k, at)
        made[j] = sum(version) + 1
        version[j] += 1
        mine = version[j]
        env.timeout(at - env.now).callbacks.append(lambda event: mine == version[j] and issue(j, k))

    def issue(j: int, k: int) -> None:
        planned[j] = None
        job, issued = jobs[j], env.now
        if k:
            repeated[0] += len(job.schedule)
            if SIMPY_SLOWER * repeated[0] > 2 * JOBS_WORK_AT_MOST:
                left = [max(other.repeat - len(r), 0) for other, r in zip(jobs, runs)]
                raise RepeatsTooLong(max(range(len(jobs)), key=lambda i: left[i] * len(jobs[i].schedule)),
                                     sum(len(r) for r in runs), sum(left))
        if job.repeat == 0 and not running[0] and foreground:
            return  # a background run due once every foreground job has ended: there is nothing to disturb
        if not len(job.schedule):
            return finished(j, k, issued, issued)
        runner = runners[j]
        if runner is None:
            runner = runners[j] = _Runner(job.schedule, net, None, job.timing,
                                          on_done=lambda now: finished(j, k, issued, now))
        else:
            runner.again(lambda now: finished(j, k, issued, now))
        if job.timing.start_ps:
            env.timeout(job.timing.start_ps).callbacks.append(lambda event: runner.begin())
        else:
            runner.begin()

    def finished(j: int, k: int, issued: int, now: int) -> None:
        runs[j].append((issued, now))
        job = jobs[j]
        report(sum(len(r) for r, other in zip(runs, jobs) if other.repeat))
        if job.repeat and k + 1 == job.repeat:
            running[0] -= 1
        if watch is not None and running[0]:  # once this instant's network has settled, before the next run
            env.timeout(0).callbacks.append(look)
        if (k + 1 < job.repeat) or (job.repeat == 0 and running[0] > 0):
            due = job.start_ps + (k + 1) * job.period_ps
            plan(j, k + 1, max(due, now))
            if watch is not None:
                watch.decided(j, due - now)

    def look(event) -> None:
        skip = watch.idle()
        if skip:
            cycle, times, per_cycle = skip
            for i in sorted(range(len(jobs)), key=made.__getitem__):  # planned anew in the order they were
                if per_cycle[i]:
                    k, at = planned[i]
                    plan(i, k + times * per_cycle[i], at + times * cycle)

    for j, job in enumerate(jobs):
        plan(j, 0, job.start_ps)
    began = time.monotonic()
    env.run()
    _spent_on_simpy[0] += time.monotonic() - began  # as replay's: many small runs come to pay for the compiled
    return runs, net.stats


JOBS_REPLAYED_UP_TO = 10_000_000
"""Transfers replayed in all (each job's transfers times its runs) up to which jobs that
repeat take the compiled network by default, which replays every run (~3 us of CPU a
transfer of a small run, ~5x less than SimPy): beyond, the SimPy network's skip over
repeated cycles (``_RepeatedCycles``) may replay a few of them only."""

ALONE_REPLAYED_UP_TO = 20
"""Runs of a job replayed alone up to which it takes the compiled network by default: alone,
its runs repeat from the second on, so SimPy's skip replays about four of them, and the
compiled network replays about five in the time SimPy replays one."""


SIMPY_SLOWER = 20
"""Transfers the compiled network replays in the time the SimPy network replays one where
jobs share links: two 16-GPU rings of 16 MiB over two_racks' uplinks, 100 runs each, 56 us
a transfer on SimPy against 2.5 us compiled (200 runs each: 1.5 M transfers in 3.8 s)."""

JOBS_WORK_AT_MOST = 20_000_000
"""Work (``replay_work``, in transfers of the compiled network) over which a run of jobs is
refused before its replay: about a minute here at ~2.5 us a transfer (``SIMPY_SLOWER``).
Where the estimate is short of it, a SimPy replay that takes twice that on the runs after
each job's first, no repeated stretch skipping them, is stopped (``RepeatsTooLong``)."""


class RepeatsTooLong(CannotSimulate):
    """A ``replay_jobs`` stopped past twice ``JOBS_WORK_AT_MOST`` of work on the runs after
    each job's first (SimPy's counted in its transfers' worth, ``SIMPY_SLOWER``; the compiled
    network's by its pauses, ``_stop_past_the_work``): no repeated stretch took them (the
    network never idle between runs, or never alike). ``job`` is the index of the job with
    most transfers left, ``done`` and ``left`` the runs replayed and left."""

    def __init__(self, job: int, done: int, left: int):
        super().__init__(f"{done:,} runs replayed and no stretch of them repeated; {left:,} runs left")
        self.job, self.done, self.left = job, done, left


def _jobs_run_compiled(asked: bool | None, jobs: list[JobRun], faulted: bool = False,
                       alone_ps: list[tuple[int, int]] | None = None, fresh: bool = False) -> bool:
    """Whether ``replay_jobs`` takes the compiled network (``asked``: the caller's choice):
    as ``replay`` would for the transfers of every run, unless the runs of jobs that repeat
    may be worth skipping (``ALONE_REPLAYED_UP_TO``, ``JOBS_REPLAYED_UP_TO``; a background
    job counts its periods until the last foreground run is due; never under faults,
    ``faulted``) and, where each job's runs alone (``alone_ps``: shortest, longest) are
    known, a job runs back to back beside others (whether the network is ever idle in one
    state again no estimate tells: compiled while every run's work is within
    ``JOBS_WORK_AT_MOST``, review 95 H1) or the runs the skip still replays (``runs_replayed``) take the
    SimPy network less time than every run the compiled one; no jobs at all, SimPy.
    ``fresh``: as ``_runs_compiled``'s."""
    if not jobs:
        return False
    transfers = _transfers(jobs, runs_replayed(jobs, alone_ps, faulted=True))
    uncertain = alone_ps is not None and len(jobs) > 1 and transfers <= JOBS_WORK_AT_MOST and any(
        jobs[j].repeat > 1 for j in back_to_back(jobs, alone_ps))
    if asked is None and _may_skip(jobs, faulted) and not uncertain and (transfers > JOBS_REPLAYED_UP_TO or (
            len(jobs) == 1 and jobs[0].repeat > ALONE_REPLAYED_UP_TO)) and (
            alone_ps is None or SIMPY_SLOWER * _transfers(jobs, runs_replayed(jobs, alone_ps)) < transfers):
        return False
    return _runs_compiled(asked, transfers, fresh)


def replay_work(jobs: list[JobRun], alone_ps: list[tuple[int, int]] | None = None,
                faulted: bool = False) -> list[tuple[int, int]]:
    """Each job's runs ``replay_jobs`` replays by default (``faulted``: under faults) and
    its work on those after its first (what repeating costs; one run's own cost is bounded
    where it is built), known before it runs, in transfers of the compiled network (one on
    the SimPy network counts ``SIMPY_SLOWER``): every run on the compiled network, which
    skips none, else its ``runs_replayed`` (``alone_ps`` as there).

    The network is the one a fresh process takes (``_runs_compiled``'s ``fresh``): one
    input, one estimate, whatever ran before it in the process."""
    compiled = _jobs_run_compiled(None, jobs, faulted, alone_ps, fresh=True)
    runs = runs_replayed(jobs, alone_ps, faulted or compiled)
    weight = 1 if compiled else SIMPY_SLOWER
    return [(n, weight * len(job.schedule) * max(0, n - 1)) for job, n in zip(jobs, runs)]


def _transfers(jobs: list[JobRun], runs: list[int]) -> int:
    return sum(len(job.schedule) * n for job, n in zip(jobs, runs))


def _replay_jobs_compiled(jobs: list[JobRun], topology: Topology, net: FluidNetwork, slack: np.ndarray,
                          timeline: bool, faults: list[Fault]) -> tuple[list[list[tuple[int, int]]], LinkStats]:
    """``replay_jobs`` on the compiled fluid network: each job's transfers once, one after
    the other in job order, as its runner holds them before its first run; ``faults`` as
    ``replay``'s compiled run applies them."""
    from simnet.engine import compiled

    # each job's transfers as its runner holds them; runners of jobs report no progress of their own
    runners = [_Runner(job.schedule, net, None, job.timing, on_done=lambda now: None) for job in jobs]
    counts = [len(job.schedule) for job in jobs]
    offsets = np.cumsum([0] + counts)[:-1]
    # the flows' slots: at most one flow of each queue of a job's transfers that cross links (of no bytes too)
    queues = np.concatenate([_queues(r.s.after_sent)[~r.local] + offset for r, offset in zip(runners, offsets)]
                            + [_EMPTY])
    changes = capacity_changes(net.capacity, faults)
    detours, cut = _detours(net, topology, changes)
    paths, latency = net.routes  # with the detours' rows
    code, totals = compiled.run(
        np.concatenate([runner.state for runner in runners], axis=1),
        np.concatenate([runner.times for runner in runners], axis=1),
        np.concatenate([runner.floats for runner in runners], axis=1),
        local=np.concatenate([runner.local for runner in runners]), gate=_EMPTY, reduce=_EMPTY,
        dependents=_merged_csr([(r.dependents_ptr, r.dependents) for r in runners], offsets),
        followers=_merged_csr([(r.followers_ptr, r.followers) for r in runners], offsets),
        paths=paths, latency=latency, capacity=net.capacity, slack=slack, reverse=topology.reverse,
        overhead_ps=net.overhead_ps, start_ps=0, faults=changes, slots=compiled.slot_bound(queues),
        timeline=timeline, detours=detours, report=Reporter(sum(job.repeat for job in jobs)),
        paused=partial(_stop_past_the_work, jobs),
        jobs=[(offset, count, job.timing.start_ps, job.start_ps, job.repeat, job.period_ps)
              for offset, count, job in zip(offsets.tolist(), counts, jobs)])
    if code == compiled.BEYOND_HORIZON:
        check_horizon(math.inf)
    if code == compiled.CUT:
        raise cut
    net.rerouted, net.rerouted_bytes = totals.pop("rerouted"), totals.pop("rerouted_bytes")
    runs: list[list[tuple[int, int]]] = [[] for _ in jobs]
    for j, issued, end in totals.pop("runs").tolist():
        runs[j].append((issued, end))
    net.stats.adopt(totals, _in_force(net.capacity, changes))
    return runs, net.stats


def _stop_past_the_work(jobs: list[JobRun], delivered: int, done: int) -> None:
    """``RepeatsTooLong`` once the compiled network has delivered twice ``JOBS_WORK_AT_MOST``
    transfers of ``jobs`` (``done`` foreground runs finished): work its estimate did not
    foresee (background periods beside runs back to back, whose span no period tells)."""
    if delivered - sum(len(job.schedule) for job in jobs) > 2 * JOBS_WORK_AT_MOST:  # (first runs: not repeating)
        raise RepeatsTooLong(max(range(len(jobs)), key=lambda i: jobs[i].repeat * len(jobs[i].schedule)), done,
                             max(sum(job.repeat for job in jobs) - done, 0))


def _merged_csr(lists: list[tuple[np.ndarray, np.ndarray]], offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One CSR list (ptr, idx) of several, each over its own transfers numbered from its
    ``offsets`` entry on."""
    starts = np.cumsum([0] + [len(idx) for _, idx in lists])
    ptr = np.concatenate([p[:-1] + start for (p, _), start in zip(lists, starts)] + [starts[-1:]])
    idx = np.concatenate([i + offset for (_, i), offset in zip(lists, offsets)] + [_EMPTY])
    return ptr.astype(np.int64), idx.astype(np.int64)


def _may_skip(jobs: list[JobRun], faulted: bool = False) -> bool:
    """Whether ``replay_jobs`` looks for repeated cycles: some job runs more than once, on a
    fabric no fault changes (``faulted``: one may, and cycles before and after it differ)."""
    return not faulted and any(job.repeat != 1 for job in jobs)


def runs_replayed(jobs: list[JobRun], alone_ps: list[tuple[int, int]] | None = None,
                  faulted: bool = False) -> list[int]:
    """How many runs of each job ``replay_jobs`` replays at least, before it runs: the work
    it will do, each job's transfers times these, where its skip over repeated cycles
    (``_RepeatedCycles``) cannot take the rest. ``alone_ps``: each job's shortest and longest
    run alone, ps, where known (a job's runs start a period apart, or a run apart where the
    run is longer). Under faults (``faulted``) every run (a background job's until the last
    foreground run is due). Else, where every job that repeats runs on its period (its runs
    alone are shorter: beside the others, one that runs late runs back to back, and the
    network, never idle while it does, repeats nothing either), a stretch repeats only after the
    least common multiple L of the periods of the jobs started (no fixed period moves with a
    shorter one) and ends before the next job starts: from each start, the runs due in two
    stretches of L, or to the next start or the first last run where that comes sooner, are
    replayed. Beside a job whose runs follow each other back to back, background traffic's
    periods keep no step with its runs: each is replayed while that job runs, and so is each
    of its runs. Otherwise each job's first run.

    >>> from simnet.schedule.transfers import ScheduleBuilder
    >>> nothing = ScheduleBuilder("ring", ["gpu0"], 0).build()
    >>> job = lambda period_ps, repeat, start_ps=0: JobRun(nothing, Timing(), start_ps, repeat, period_ps)
    >>> short = [(200_000, 200_000)] * 2
    >>> runs_replayed([job(1_000_001, 100), job(1_000_002, 100)], short)  # due before the first last
    [99, 99]
    >>> runs_replayed([job(1_000_000, 100), job(1_250_000, 100)], short)  # L = 5 us
    [10, 8]
    >>> runs_replayed([job(1_000_000, 100), job(1_250_000, 100, 50_000_000)], short)  # alone first
    [12, 8]
    >>> runs_replayed([job(1_000_000, 100), job(1_250_000, 100)], faulted=True)
    [100, 100]
    >>> runs_replayed([job(0, 100), job(1_000_000, 0)], [(3_000_000, 3_000_000), (1_000, 1_000)])  # back to back
    [100, 297]
    """
    def step(j: int) -> int:  # how far apart the job's runs start at least
        return max(jobs[j].period_ps, alone_ps[j][0] if alone_ps is not None else 0)

    foreground = [j for j, job in enumerate(jobs) if job.repeat]
    last = max((jobs[j].start_ps + (jobs[j].repeat - 1) * step(j) for j in foreground), default=0)
    if faulted:
        return [job.repeat or max(0, (last - job.start_ps) // max(job.period_ps, 1) + 1) for job in jobs]
    first = [min(job.repeat, 1) for job in jobs]
    repeating = [job for job in jobs if job.repeat != 1]
    if alone_ps is None or len(jobs) < 2 or not repeating:
        return first
    late = back_to_back(jobs, alone_ps)
    runs_late = [j for j in late if jobs[j].repeat > 1]
    if runs_late:
        if not any(job.repeat == 0 for job in jobs):
            return first  # (two alike may end together, idle in one state each run: no estimate tells)
        busy = max(jobs[j].start_ps + (jobs[j].repeat - 1) * step(j) for j in runs_late)
        return [_due_between(job, job.start_ps, busy) if job.repeat == 0 else job.repeat if j in runs_late else f
                for j, (f, job) in enumerate(zip(first, jobs))]
    if late:  # background traffic whose periods its own traffic outlasts
        return first
    together_to = min((job.start_ps + (job.repeat - 1) * job.period_ps for job in repeating if job.repeat),
                      default=max(job.start_ps for job in jobs))
    starts = sorted({job.start_ps for job in jobs})
    counts = [0] * len(jobs)
    for begin, end in zip(starts, [*starts[1:], together_to]):
        started = [i for i, job in enumerate(jobs) if job.repeat != 1 and job.start_ps <= begin]
        if end <= begin or not started:
            continue
        until = min(end, together_to, begin + 2 * math.lcm(*(jobs[i].period_ps for i in started)))
        for i in started:
            counts[i] += _due_between(jobs[i], begin, until)
    return [max(f, min(n, job.repeat) if job.repeat else n) for f, n, job in zip(first, counts, jobs)]


def back_to_back(jobs: list[JobRun], alone_ps: list[tuple[int, int]]) -> list[int]:
    """The jobs that repeat (background traffic too) whose longest run alone (``alone_ps``:
    shortest, longest, ps) is no shorter than their period: their runs follow each other."""
    return [j for j, (job, (_, longest)) in enumerate(zip(jobs, alone_ps))
            if job.repeat != 1 and job.period_ps <= longest]


def _due_between(job: JobRun, begin: int, end: int) -> int:
    """How many of ``job``'s runs fall due (on its period) at or after ``begin`` and before ``end``, ps."""
    due = [max(0, -(-(at - job.start_ps) // job.period_ps)) for at in (begin, end)]
    if job.repeat:
        due = [min(n, job.repeat) for n in due]
    return due[1] - due[0]


class _RepeatedCycles:
    """Finds a stretch of a ``replay_jobs`` run that repeats, and how often it does.

    At each instant a run ends and leaves the network idle (``FluidNetwork.idle_state``,
    looked at once the instant's network has settled, before any next run is issued) with
    every unfinished job's next run planned, the state is each job's next run's distance
    ahead (or done; a job yet to start counts as that alone, and the stretches skipped end
    before it starts), the order those plans were made in (plans due at once fire in it) and
    the network's idle state: all the future depends on, but
    for the runs' indices, which enter through one rule only: run k + 1 of a job of period
    P is issued at ``max(start + (k + 1) P, end of run k)``. The replay is deterministic and
    reads times through their differences, so two idle instants t1 < t2 of equal state
    begin equal stretches of D = t2 - t1 as long as every issue decides alike, shifted by
    D: a job that ran c runs in the stretch issues its shifted runs D later exactly when c P
    = D (the period rule shifts with the stretch) or when each of its runs was issued at the
    end of the one before (``due`` - end <= 0) and stays so, the period falling behind
    (c P < D) or catching up, for as many stretches as its tightest such margin allows
    (c P > D). The stretch is checked on one replayed repetition (t2 to t3 = t2 + D, equal
    states compared in full, its runs those of t1 to t2 shifted by D) before copies are
    taken: its runs, shifted, and its link statistics (``LinkStats.repeat_since``), for as
    many stretches as every job has runs left for, less one replayed (the last, where jobs
    finish). One reading of absolute time remains: the network keeps finish times as float
    ps from time 0, so a flow whose last byte falls within the float's rounding at that time
    (3e-5 ps at 0.2 s of simulated time) of its whole-ps boundary may end a ps apart at
    another time; the copies carry the replayed stretch's rounding."""

    MEMORY = 1 << 16  # idle states remembered at most (by hash; forgotten all at once beyond)

    def __init__(self, env, net: FluidNetwork, jobs: list[JobRun], runs: list, planned: list, made: list):
        self.env, self.net, self.jobs, self.runs, self.planned, self.made = env, net, jobs, runs, planned, made
        self.margins: list[tuple[int, int]] = []  # per issue decided: (job, due - end of the run before)
        self.seen: dict[int, tuple[int, tuple[int, ...], int]] = {}  # hash of state -> (time, runs, margins)
        # to confirm: (state, time, stretch, runs, margins, link totals, runs at the stretch's start)
        self.candidate: tuple | None = None

    def decided(self, j: int, margin: int) -> None:
        """Job ``j``'s next run was planned with its due time ``margin`` ps after now."""
        self.margins.append((j, margin))

    def idle(self) -> tuple[int, int, list[int]] | None:
        """A run has just ended (the network settled, the next runs not issued yet): (stretch
        ps, how many stretches to skip, runs per stretch of each job) when the stretch ending
        now repeats that often, else None."""
        now, net = self.env.now, self.net
        if any(p is None and self._unfinished(j) for j, p in enumerate(self.planned)):
            return None  # a run under way
        network = net.idle_state()
        if network is None:
            return None
        # a job yet to start waits at a time of its own: no part of the state, a bound on the skip (``_skip``)
        pending = [self._yet_to_start(j) for j in range(len(self.jobs))]
        order = tuple(sorted((j for j, p in enumerate(self.planned) if p is not None and not pending[j]),
                             key=self.made.__getitem__))
        state = (tuple(None if p is None else "yet to start" if waits else p[1] - now
                       for p, waits in zip(self.planned, pending)), order, network)
        counts = tuple(len(r) for r in self.runs)
        candidate, self.candidate = self.candidate, None
        if candidate is not None and candidate[1] + candidate[2] == now and candidate[0] == state:
            skip = self._skip(candidate, counts)
            if skip:
                self.seen.clear()
                return skip
        key = hash(state)
        before = self.seen.get(key)
        if len(self.seen) >= self.MEMORY:
            self.seen.clear()
        self.seen[key] = (now, counts, len(self.margins))
        if candidate is not None and candidate[1] + candidate[2] > now:
            self.candidate = candidate  # its end is still ahead
        elif before is not None and before[0] < now:  # the stretch since then may repeat: watch the next one
            self.candidate = (state, now, now - before[0], counts, len(self.margins), net.stats.totals(),
                              before[1])
        return None

    def _yet_to_start(self, j: int) -> bool:
        """Whether job ``j``'s first run is planned and not issued yet."""
        planned = self.planned[j]
        return planned is not None and planned[0] == 0 and not self.runs[j]

    def _unfinished(self, j: int) -> bool:
        job = self.jobs[j]
        return job.repeat == 0 or len(self.runs[j]) < job.repeat

    def _skip(self, candidate: tuple, counts: tuple[int, ...]) -> tuple[int, int, list[int]] | None:
        _, then, cycle, before, first, totals, earlier = candidate
        per_cycle = [n - b for n, b in zip(counts, before)]
        for r, a, b, n in zip(self.runs, earlier, before, counts):  # the stretch before ran the same, D earlier
            if [(s + cycle, e + cycle) for s, e in r[a:b]] != r[b:n]:
                return None
        times = None  # stretches to skip: bounded by the runs left, less the last stretch (replayed)
        for j, job in enumerate(self.jobs):
            if job.repeat and per_cycle[j]:
                left = (job.repeat - self.planned[j][0]) // per_cycle[j] - 1
                times = left if times is None else min(times, left)
        if times is None:
            return None
        for j, p in enumerate(self.planned):  # the stretches skipped end before a job yet to start starts
            if self._yet_to_start(j):
                times = min(times, (p[1] - self.env.now - 1) // cycle)
        for j, margin in self.margins[first:]:
            drift = per_cycle[j] * self.jobs[j].period_ps - cycle  # how much later its due comes each stretch
            if drift == 0:
                continue  # the period rule moves with the stretch
            if margin > 0:
                return None  # issued on its period, which does not move with the stretch
            if drift > 0:  # the period catches up: the run before ends last while margin + m drift <= 0
                times = min(times, -margin // drift)
        if times <= 0:
            return None
        self.margins.clear()
        self.net.stats.repeat_since(totals, times)
        for j, r in enumerate(self.runs):
            once = r[before[j]:]
            r.extend((a + t * cycle, b + t * cycle) for t in range(1, times + 1) for a, b in once)
        return cycle, times, per_cycle


def replay_apart(jobs: list[JobRun], topology: Topology, *,
                 capacity: np.ndarray | None = None) -> tuple[list[int], np.ndarray]:
    """When each job, all started at once and run once, completes (ps), and which links
    filled (saturated some of the run; mask by link): ``replay_jobs`` of them all, done in
    parts. Max-min sharing couples flows only through the links they share, so jobs whose
    routes are linked by no shared link never slow each other: each set of jobs linked by
    shared links is replayed on its own, and a set identical to one already replayed (the
    same schedules and timings over links of the same capacities and latencies, crossed in
    the same pattern: the tensor-parallel groups of identical servers) takes that one's
    times. Equal to the joint replay up to the rounding of rates
    at the tie tolerance (``maxmin.TIE``)."""
    if any(job.repeat != 1 or job.start_ps for job in jobs):
        raise ValueError("replay_apart runs every job once from time 0; use replay_jobs for repeats and offsets")
    capacity = np.asarray(topology.capacity if capacity is None else capacity, dtype=float)
    routed = [_routed(job.schedule, topology) for job in jobs]
    parts: dict[int, list[int]] = {}
    for j, root in enumerate(_linked(jobs, [links for links, _ in routed])):
        parts.setdefault(root, []).append(j)
    ends, filled = [0] * len(jobs), np.zeros(len(topology.links), dtype=bool)
    known: dict[bytes, tuple[list[int], np.ndarray]] = {}  # a part's ends, and which of its links filled
    for members in parts.values():
        used = np.unique(np.concatenate([routed[j][0] for j in members]))
        key = _fingerprint([jobs[j] for j in members], [routed[j] for j in members], topology, capacity, used)
        if key not in known:
            times, stats = replay_jobs([jobs[j] for j in members], topology, capacity=capacity)
            known[key] = [end for (_, end), in times], stats.saturated_ps[used] > 0
        part_ends, part_filled = known[key]  # (an identical part's links correspond in index order)
        for j, end in zip(members, part_ends):
            ends[j] = end
        filled[used[part_filled]] = True
    return ends, filled


def _routed(s: Schedule, topology: Topology) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """(links the schedule's transfers cross, sorted; (route of each connection padded with
    -1, each transfer's connection))."""
    if not len(s):
        return np.zeros(0, dtype=np.int64), (np.zeros((0, 1), dtype=np.int64), np.zeros(0, dtype=np.int64))
    triples = np.stack([s.channel.astype(np.int64), s.src.astype(np.int64), s.dst.astype(np.int64)], axis=1)
    connections, which = np.unique(triples, axis=0, return_inverse=True)
    nodes = s.nodes
    paths, _ = topology.route_matrix([nodes[i] for i in connections[:, 1].tolist()],
                                     [nodes[i] for i in connections[:, 2].tolist()], connections[:, 0])
    paths = np.where(paths == len(topology.links), -1, paths)
    return np.unique(paths[paths >= 0]), (paths, which.reshape(-1))


def _linked(jobs: list[JobRun], links: list[np.ndarray]) -> list[int]:
    """Per job, a representative of the set of jobs its links connect it to (union-find)."""
    parent = list(range(len(jobs)))

    def root(j: int) -> int:
        while parent[j] != j:
            parent[j] = parent[parent[j]]
            j = parent[j]
        return j

    owner: dict[int, int] = {}
    for j, used in enumerate(links):
        for link in used.tolist():
            other = owner.setdefault(link, j)
            a, b = root(j), root(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return [root(j) for j in range(len(jobs))]


def _fingerprint(jobs: list[JobRun], routed: list, topology: Topology, capacity: np.ndarray,
                 used: np.ndarray) -> bytes:
    """A digest of everything the fluid replay of ``jobs`` together reads, their links
    (``used``, sorted) renumbered in index order (so identical parts of a fabric digest alike)."""
    import hashlib

    digest = hashlib.blake2b(digest_size=20)
    for array in (capacity[used], topology.latency_ps[used]):
        digest.update(np.ascontiguousarray(array).tobytes())
    for job, (_, (paths, which)) in zip(jobs, routed):
        s, t = job.schedule, job.timing
        local = np.where(paths >= 0, np.searchsorted(used, np.maximum(paths, 0)), -1)
        digest.update(repr((len(s), paths.shape, t.wire_factor, t.start_ps, job.start_ps, job.repeat,
                            job.period_ps, t.rate_cap is None, t.delay_ps is None)).encode())
        for array in (local, which, s.src, s.dst, s.lo, s.hi, s.op, s.dep_ptr, s.dep_idx, s.after_sent,
                      t.rate_cap, t.delay_ps):
            if array is not None:
                digest.update(np.ascontiguousarray(array).tobytes())
    return digest.digest()


