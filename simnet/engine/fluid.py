"""The fluid (flow-level) network on a SimPy environment (docs/architecture.md).

A transfer of ``n`` bytes holds a rate on every link of its route at once; rates are the
max-min fair allocation over all active transfers, recomputed once per simulated instant
at which the set of active transfers changed. Its last byte leaves at ``t_end``; the
receiver has the data at ``t_end + route latency + message_overhead``.

Time on the environment is integer **picoseconds** (``PS_PER_SECOND`` per second) so that
sums of equal durations are equal and transfers that finish together are handled
together (``simnet.engine.clock``: a flow ends at the first whole picosecond at or after
its last byte, up to ``WHOLE_PS_SLACK``; nothing may finish past ``HORIZON_S``); public
results are converted to seconds.

Two ways in:

* ``transfer(src, dst, nbytes)`` returns a SimPy event that fires when the receiver has
  the data (its value: that time in seconds), for scripts and tests;
* ``start(rows, nbytes, tags, listener)`` starts a batch of flows on routes from
  ``resolve`` and reports them back in batches through ``listener.sent(tags, now)`` and
  ``listener.delivered(tags, now)``; the schedule replay uses this, with no per-transfer
  SimPy process.

>>> import simpy
>>> from simnet.topology.loader import topology_from_dict
>>> topo = topology_from_dict({"name": "pair", "generate": {"kind": "full_mesh", "gpus": 2,
...                            "bandwidth": "1 GB/s", "latency": "1 us"}})
>>> env = simpy.Environment()
>>> net = FluidNetwork(env, topo)
>>> done = net.transfer("gpu0", "gpu1", 1_000_000)   # 1 MB at 1 GB/s, plus 1 us
>>> env.run()
>>> done.value
0.001001
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol
from weakref import WeakKeyDictionary

import networkx as nx
import numpy as np
import simpy

from simnet.engine.accounting import LinkStats
from simnet.engine.clock import HORIZON_S, WHOLE_PS_SLACK, BeyondHorizon, check_horizon
from simnet.engine.maxmin import max_min_rates
from simnet.errors import Cut
from simnet.topology.graph import PS_PER_SECOND, Topology
from simnet.units import format_time

__all__ = ["FluidNetwork", "FlowListener", "PS_PER_SECOND", "SETTLE_PRIORITY", "EndOfInstant", "HORIZON_S",
           "BeyondHorizon", "Cut", "check_horizon"]

SETTLE_PRIORITY = 2
"""Where the once-per-instant recomputation falls among an instant's events, as a SimPy
priority: after every URGENT (0) and NORMAL (1) event of the same instant, so all changes at
one instant are handled together (``EndOfInstant``)."""

def now_s(ps: int) -> str:
    """A simulated instant for a message, e.g. ``1.5 ms``."""
    return format_time(ps / PS_PER_SECOND)


_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=float)


class FlowListener(Protocol):
    """Receives batches of flow events; ``tags`` are the values given to ``start``."""

    def sent(self, tags: np.ndarray, now: int) -> None:
        """The flows' last bytes left their senders at ``now`` (ps)."""

    def delivered(self, tags: np.ndarray, now: int) -> None:
        """The flows' receivers have the data at ``now`` (ps)."""


class _EventListener:
    """Adapter for ``FluidNetwork.transfer``: one SimPy event per tag."""

    def __init__(self) -> None:
        self.events: dict[int, simpy.Event] = {}

    def sent(self, tags: np.ndarray, now: int) -> None:
        pass

    def delivered(self, tags: np.ndarray, now: int) -> None:
        for tag in tags.tolist():
            self.events.pop(tag).succeed(now / PS_PER_SECOND)


class EndOfInstant:
    """Calls back once every other event of the current simulated instant has been
    processed: what an event scheduled at ``SETTLE_PRIORITY`` would do. SimPy's public API
    triggers events at NORMAL priority only, so this is a zero-delay timeout that, while
    other events of the instant are still queued (``Environment.peek``), queues itself
    behind them again. One per environment (``of``): the networks sharing it are called in
    the order they asked, each after the events the one before it caused at that instant,
    as events of one priority would be.

    >>> import simpy
    >>> env = simpy.Environment()
    >>> seen = []
    >>> EndOfInstant.of(env).call(lambda: seen.append("end of instant"))
    >>> env.timeout(0).callbacks.append(lambda event: seen.append("timeout"))
    >>> env.run()
    >>> seen
    ['timeout', 'end of instant']
    """

    _by_env: WeakKeyDictionary[simpy.Environment, EndOfInstant] = WeakKeyDictionary()

    def __init__(self, env: simpy.Environment):
        self.env = env
        self._waiting: deque[Callable[[], None]] = deque()
        self._armed = False

    @classmethod
    def of(cls, env: simpy.Environment) -> EndOfInstant:
        """The one of ``env``."""
        ends = cls._by_env.get(env)
        if ends is None:
            ends = cls._by_env[env] = cls(env)
        return ends

    def call(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` at the end of this instant (after those asked before it)."""
        self._waiting.append(callback)
        self._arm()

    def _arm(self) -> None:
        if not self._armed:
            self._armed = True
            self.env.timeout(0).callbacks.append(self._fire)

    def _fire(self, _event: simpy.Event) -> None:
        self._armed = False
        if self.env.peek() == self.env.now:  # other events of this instant first: they may change things too
            self._arm()
            return
        callback = self._waiting.popleft()
        try:
            callback()
        finally:
            if self._waiting:
                self._arm()


class FluidNetwork:
    """Max-min fair flows over a ``Topology`` on a SimPy environment (time in ps).

    ``message_overhead`` (seconds) is added to every delivery. ``timeline=True`` keeps
    each link's piecewise-constant load for plots and traces (memory grows with events).
    ``capacity`` (B/s per directed link) replaces the topology's link bandwidths, e.g.
    with the effective rates of a performance model.
    """

    def __init__(self, env: simpy.Environment, topology: Topology, *, message_overhead: float = 0.0,
                 timeline: bool = False, capacity: np.ndarray | None = None):
        self.env = env
        self.topology = topology
        self.overhead_ps = round(message_overhead * PS_PER_SECOND)
        links = len(topology.links)
        self._pad = links  # index of the infinite "no link" used to pad paths
        # its own copy (faults change it); the statistics keep the healthy capacities and the ones in force
        self.capacity = np.array(topology.capacity if capacity is None else capacity, dtype=float)
        self._capacity = np.append(self.capacity, np.inf)
        self._rows: dict[tuple[int, int, int], int] = {}
        self._keys: list[tuple[int, int, int]] = []  # (src, dst, flow) of each row
        self._moved = np.zeros(0, dtype=np.int64)  # row -> the row that replaced it when links went down
        self.rerouted = 0  # flows moved off links that went down
        self.rerouted_bytes = 0.0  # bytes those flows still had to send when they moved
        self._paths = np.full((0, 1), self._pad, dtype=np.int64)
        self._path_latency = _EMPTY_I
        self.stats = LinkStats(self.capacity.copy(), topology.reverse, timeline=timeline)
        self._users = np.zeros(links + 1, dtype=np.int64)  # active flows per link (last: padding)
        # flow state lives in slots; a free slot has row -1 and finish +inf
        self._slots = 0
        self._row = _EMPTY_I
        self._left = _EMPTY_F  # bytes still to send at time self._since
        self._since = _EMPTY_I  # ps
        self._rate = _EMPTY_F  # bytes/s
        self._finish = _EMPTY_F  # ps (float) at which the last byte leaves at the current rate
        self._size = _EMPTY_F
        self._tag = _EMPTY_I
        self._owner = _EMPTY_I  # key of self._listeners
        self._cap = _EMPTY_F  # B/s bound on the flow's own rate (inf: none)
        self._delay = _EMPTY_I  # ps added to the flow's delivery
        self._on = np.full((0, 1), self._pad, dtype=np.int64)  # each slot's padded path (all padding when free)
        # links no allocation can fill (``set_slack``): left out of every slot's path where max-min sharing is
        # decided (``_tight``: padding there), still in ``_on`` for the rates' bounds and the statistics
        self._slack = np.zeros(links + 1, dtype=bool)
        self._any_slack = False  # set once by set_slack: read on every start and reallocation
        self._tight = self._on
        self._has_tight = np.zeros(0, dtype=bool)  # the slot crosses a link that is not slack
        self._free: list[int] = []
        # the listeners with flows, by a number that grows in the order they first started one (the order an
        # instant's finished flows are reported in); ``forget`` drops one, so a run's listener is not kept for good
        self._listeners: dict[int, FlowListener] = {}
        self._owners: dict[int, int] = {}  # id(listener) -> its key
        self._next_owner = 0
        self._new = np.zeros(0, dtype=bool)  # the slot started (or must be rated anew) at this instant
        self._gone: list[np.ndarray] = []  # paths of flows finished at this instant
        self._settle_pending = False
        self._settling = False
        self._end_of_instant = EndOfInstant.of(env)
        self._timer = 0  # version: only the newest completion timer acts
        self._wake_at = -1  # ps at which the newest completion timer fires
        self._due = np.inf  # ps before which no flow finishes (exact after each reallocation, lowered by start)
        self._events = _EventListener()

    # ------------------------------------------------------------------ routes
    def resolve(self, src: Sequence[str], dst: Sequence[str], flow: Sequence[int] | np.ndarray) -> np.ndarray:
        """Route rows for transfers ``src[i] -> dst[i]`` on connection ``flow[i]``."""
        index = self.topology.node_index
        src_i = np.fromiter((index[s] for s in src), dtype=np.int64, count=len(src))
        dst_i = np.fromiter((index[d] for d in dst), dtype=np.int64, count=len(dst))
        return self.resolve_indices(src_i, dst_i, np.asarray(flow, dtype=np.int64))

    def resolve_indices(self, src: np.ndarray, dst: np.ndarray, flow: np.ndarray) -> np.ndarray:
        """``resolve`` for node indices; each distinct (src, dst, flow) is routed once."""
        nodes = len(self.topology.nodes)
        _, firsts, inverse = np.unique((flow * nodes + src) * nodes + dst, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        rows = np.empty(len(firsts), dtype=np.int64)
        new: list[tuple[int, ...]] = []
        names = self.topology.nodes
        route = self.topology.route_indices
        for i, first in enumerate(firsts.tolist()):
            s, d, f = int(src[first]), int(dst[first]), int(flow[first])
            row = self._rows.get((s, d, f))
            if row is None:
                row = len(self._keys)
                self._rows[(s, d, f)] = row
                self._keys.append((s, d, f))
                new.append(route(names[s], names[d], f))
            rows[i] = row
        if new:
            self._add_paths(new)
        return rows[inverse]

    def _add_paths(self, routes: list[tuple[int, ...]]) -> None:
        width = max(self._paths.shape[1], max(len(r) for r in routes), 1)
        if width > self._paths.shape[1]:
            grown = np.full((len(self._paths), width), self._pad, dtype=np.int64)
            grown[:, : self._paths.shape[1]] = self._paths
            self._paths = grown
        block, latency = self.topology.padded(routes, width)
        self._moved = np.append(self._moved, np.arange(len(self._paths), len(self._paths) + len(routes)))
        self._paths = np.vstack([self._paths, block])
        if width > self._on.shape[1]:
            grow = np.full((len(self._on), width - self._on.shape[1]), self._pad)
            self._on = np.hstack([self._on, grow])
            self._tight = np.hstack([self._tight, grow]) if self._any_slack else self._on
        self._path_latency = np.append(self._path_latency, latency)

    # ------------------------------------------------------------------- flows
    def transfer(self, src: str, dst: str, nbytes: float, flow: int = 0) -> simpy.Event:
        """Start one transfer now; the event fires (value: seconds) when dst has the data."""
        event = self.env.event()
        tag = id(event)
        self._events.events[tag] = event
        self.start(self.resolve([src], [dst], [flow]), np.array([float(nbytes)]), np.array([tag]), self._events)
        return event

    def start(self, rows: np.ndarray, nbytes: np.ndarray, tags: np.ndarray, listener: FlowListener,
              caps: np.ndarray | None = None, delays_ps: np.ndarray | None = None) -> None:
        """Start flows now on route ``rows`` (from ``resolve``) carrying ``nbytes`` each.

        ``caps`` (B/s, ``inf`` for none) bound each flow's own rate; ``delays_ps`` add to
        each flow's delivery time (software latency at the ends, not on the wire).
        """
        if len(rows) == 0:
            return
        owner = self._owners.get(id(listener))
        if owner is None:
            owner = self._owners[id(listener)] = self._next_owner
            self._next_owner += 1
            self._listeners[owner] = listener
        rows = self._moved[rows]  # routes resolved before a link went down take their detour
        slots = self._allocate(len(rows))
        nbytes = np.asarray(nbytes, dtype=float)
        self._row[slots] = rows
        paths = self._on[slots] = self._paths[rows]
        self._place(slots)
        local = (paths == self._pad).all(axis=1)  # src == dst: nothing crosses the network
        self._left[slots] = np.where(local, 0.0, nbytes)
        self._size[slots] = nbytes
        self._since[slots] = self.env.now
        self._rate[slots] = 0.0
        sending = self._left[slots] > 0
        self._finish[slots] = np.where(sending, np.inf, self.env.now)  # nothing to send: done now
        if not sending.all():
            self._due = self.env.now
        self._tag[slots] = tags
        self._owner[slots] = owner
        self._cap[slots] = np.inf if caps is None else caps
        self._delay[slots] = 0 if delays_ps is None else delays_ps
        np.add.at(self._users, paths.ravel(), 1)
        self._new[slots] = True
        self._request_settle()

    def forget(self, listener: FlowListener) -> None:
        """Drop ``listener``, whose flows have all finished; if it starts flows again, it
        comes after every listener known by then, as a new one would."""
        owner = self._owners.pop(id(listener), None)
        if owner is not None:
            del self._listeners[owner]

    def set_slack(self, slack: np.ndarray) -> None:
        """Declare the directed links (a bool per link) that no max-min allocation can fill:
        the rate bounds of the flows that may cross each at once (each flow's own cap or its
        route's narrowest link) sum to less than ``SATURATED`` of the least capacity the link
        has during the run. Progressive filling never freezes a flow at such a link (its fair
        share stays above every level), so rates are decided over the other links alone, each
        flow still bounded by every link of its route: the same allocation, for a search and a
        filling over the links that can bind only. Only the filling's tie tolerance (``TIE``,
        1e-9) can tell: flows a slack link joined into one component are solved apart now, and
        a near-tie between them (shares within 1e-9) no longer freezes both at the lower
        share, as components solved apart never did. Before any flow starts."""
        if self.active:
            raise RuntimeError("set_slack: flows are running; declare slack links before any starts")
        slack = np.asarray(slack, dtype=bool)
        self._slack = np.append(slack, False)
        self._any_slack = bool(slack.any())
        self._tight = self._on.copy() if self._any_slack else self._on

    def _place(self, slots: np.ndarray) -> None:
        """The slots' paths where sharing is decided: their routes without the slack links."""
        paths = self._on[slots]
        if self._any_slack:
            paths = self._tight[slots] = np.where(self._slack[paths], self._pad, paths)
        self._has_tight[slots] = (paths != self._pad).any(axis=1)

    @property
    def routes(self) -> tuple[np.ndarray, np.ndarray]:
        """(links of every route row ``resolve`` gave, padded with ``len(capacity)``; each
        row's summed link latency, ps)."""
        return self._paths, self._path_latency

    def keys_of(self, rows: np.ndarray) -> list[tuple[int, int, int]]:
        """The (src, dst, flow) node indices route ``rows`` (from ``resolve``) were resolved for."""
        return [self._keys[row] for row in np.asarray(rows).tolist()]

    def paths_of(self, rows: np.ndarray) -> np.ndarray:
        """The links (padded with ``len(capacity)``) of route ``rows`` (from ``resolve``)."""
        return self._paths[self._moved[rows]]

    def set_capacity(self, links: np.ndarray, capacity: np.ndarray, topology: Topology | None = None) -> None:
        """From now on, directed ``links`` run at ``capacity`` (B/s each; link statistics
        measure utilisation and saturation against it from now on). Links at 0 are down:
        ``topology`` (``Topology.without`` them) routes from now on, and every flow crossing
        them, sending or yet to start, moves to its new route with the bytes it has left
        (``Cut`` when there is none), but one due now (its last byte gone, to
        ``WHOLE_PS_SLACK``), which ends on its route at this instant. Rates are recomputed at
        this instant."""
        links = np.asarray(links, dtype=np.int64)
        capacity = np.asarray(capacity, dtype=float)
        self.capacity[links] = capacity
        self._capacity[links] = capacity
        self.stats.set_capacity(self.env.now, links, capacity)
        self._gone.append(links)
        eased = links[self._slack[links]]
        if len(eased):  # a slack link bounds the rate of a flow crossing it, shared with nobody: recompute those
            live = np.flatnonzero(self._row >= 0)
            self._new[live[np.isin(self._on[live], eased).any(axis=1)]] = True
        dead = links[capacity == 0]
        if len(dead):
            self._reroute(dead, topology if topology is not None else self.topology.without(set(dead.tolist())))
        self._request_settle()

    def detour(self, dead: np.ndarray, topology: Topology, now_ps: int) -> tuple[np.ndarray, np.ndarray]:
        """Route around links ``dead`` at ``now_ps`` from now on, over ``topology``: (the
        route rows that cross them, the rows of their detours), ``Cut`` when one has none.
        Every row resolved so far takes its detour; flows keep their rows (``set_capacity``
        moves them)."""
        self.topology = topology
        crossing = np.flatnonzero(np.isin(self._paths, dead).any(axis=1))
        moving = set(crossing.tolist())
        self._rows = {key: row for key, row in self._rows.items() if row not in moving}
        keys = np.array([self._keys[row] for row in crossing.tolist()], dtype=np.int64).reshape(-1, 3)
        try:
            detours = self.resolve_indices(keys[:, 0], keys[:, 1], keys[:, 2])
        except nx.NetworkXNoPath as exc:
            raise Cut(f"links down at {now_s(now_ps)} leave the run no route: {exc} (a route its algorithm needs); "
                      "take fewer links down, or run another algorithm", now_ps) from None
        remap = np.arange(len(self._moved))
        remap[crossing] = detours
        self._moved = remap[self._moved]
        return crossing, np.asarray(detours, dtype=np.int64)

    def _reroute(self, dead: np.ndarray, topology: Topology) -> None:
        crossing, _ = self.detour(dead, topology, self.env.now)
        slots = np.flatnonzero(self._row >= 0)
        now = self.env.now  # a flow due now sent its last byte: it ends on its route at this instant
        slots = slots[np.isin(self._row[slots], crossing) & (self._finish[slots] > now + WHOLE_PS_SLACK)]
        if not len(slots):
            return
        rates = self._rate[slots]
        left = self._left[slots] - rates * ((now - self._since[slots]) / PS_PER_SECOND)
        old = self._on[slots]
        self.stats.add_bytes(old, self._size[slots] - left)  # what crossed the old route stays counted there
        self._change_load(old, -rates)
        np.subtract.at(self._users, old.ravel(), 1)
        self._gone.append(old[rates > 0].ravel())
        self._row[slots] = self._moved[self._row[slots]]
        self._on[slots] = self._paths[self._row[slots]]
        self._place(slots)
        np.add.at(self._users, self._on[slots].ravel(), 1)
        self._size[slots] = left
        self._left[slots] = left
        self._since[slots] = now
        self._rate[slots] = 0.0
        self._finish[slots] = np.inf
        self._new[slots] = True
        self.rerouted += len(slots)
        self.rerouted_bytes += float(left.sum())

    def _allocate(self, count: int) -> np.ndarray:
        if len(self._free) < count:
            grow = max(count - len(self._free), self._slots, 64)
            old = self._slots
            self._slots += grow
            for name, fill in (("_row", -1), ("_left", 0.0), ("_since", 0), ("_rate", 0.0), ("_finish", np.inf),
                               ("_size", 0.0), ("_tag", 0), ("_owner", 0), ("_cap", np.inf), ("_delay", 0)):
                array = getattr(self, name)
                setattr(self, name, np.concatenate([array, np.full(grow, fill, dtype=array.dtype)]))
            self._on = np.vstack([self._on, np.full((grow, self._on.shape[1]), self._pad)])
            self._tight = np.vstack([self._tight, np.full((grow, self._on.shape[1]), self._pad)]) \
                if self._any_slack else self._on
            self._has_tight = np.concatenate([self._has_tight, np.zeros(grow, dtype=bool)])
            self._new = np.concatenate([self._new, np.zeros(grow, dtype=bool)])
            self._free.extend(range(self._slots - 1, old - 1, -1))
        slots = np.array(self._free[-count:], dtype=np.int64)
        del self._free[-count:]
        return slots

    @property
    def active(self) -> int:
        """Number of flows currently sending."""
        return self._slots - len(self._free)

    def idle_state(self) -> tuple | None:
        """None while a flow sends or this instant is not settled yet; else what of the
        network's own state the rest of a run can depend on, its times counted from now:
        the order slots are handed out in (it orders the flows in every sum) and when the
        newest completion timer fires (-1: before now). Two idle instants with equal
        states and equal plans ahead behave alike from there on."""
        if self.active or self._settle_pending or self._settling:
            return None
        return tuple(self._free), max(self._wake_at - self.env.now, -1)

    # ------------------------------------------------------------ the engine
    def _request_settle(self) -> None:
        if self._settle_pending or self._settling:
            return
        self._settle_pending = True
        self._end_of_instant.call(self._settle)

    def _settle(self) -> None:
        """Finish flows that are done, notify listeners, then recompute the affected rates once."""
        self._settle_pending = False
        self._settling = True
        try:
            now = self.env.now
            # last byte gone by now (to float rounding, clock.WHOLE_PS_SLACK): a flow ends at the first whole ps
            # at or after its finish, whatever else happens in between, so times never depend on unrelated events
            while self._due <= now + WHOLE_PS_SLACK:
                self._due = np.inf  # the flows left finish later; those the listeners start may finish now
                self._complete(np.flatnonzero(self._finish <= now + WHOLE_PS_SLACK))
            self._reallocate()
        finally:
            self._settling = False

    def _complete(self, slots: np.ndarray) -> None:
        now = self.env.now
        tags, owners, rows = self._tag[slots], self._owner[slots], self._row[slots]
        delays, rates = self._delay[slots], self._rate[slots]
        paths = self._on[slots]
        self.stats.add_bytes(paths, self._size[slots])
        np.subtract.at(self._users, paths.ravel(), 1)
        self._gone.append(paths[rates > 0].ravel())
        self._change_load(paths, -rates)
        self._row[slots] = -1
        self._on[slots] = self._pad
        self._tight[slots] = self._pad
        self._has_tight[slots] = False
        self._rate[slots] = 0.0
        self._left[slots] = 0.0
        self._finish[slots] = np.inf
        self._free.extend(slots.tolist())
        if len(self._free) == self._slots:  # every flow done: slots handed out as a fresh network's, so that
            self._free.sort(reverse=True)  # idle states (idle_state) recur, whatever order the runs freed them in
        arrive = now + self._path_latency[rows] + self.overhead_ps + delays
        one = len(self._listeners) == 1
        for owner in [int(owners[0])] if one else np.unique(owners).tolist():
            mine = slice(None) if one else owners == owner
            self._report(self._listeners[owner], tags[mine], arrive[mine], now)

    def _report(self, listener: FlowListener, tags: np.ndarray, arrive: np.ndarray, now: int) -> None:
        """Tell ``listener`` that flows ``tags`` sent their last bytes ``now`` and deliver
        each at its ``arrive`` time (ps), in batches by time."""
        listener.sent(tags, now)
        first = arrive[0]
        if (arrive == first).all():  # the common case: one delivery time
            batches = [(int(first), tags)]
        else:
            times, groups = np.unique(arrive, return_inverse=True)
            batches = [(when, tags[groups == i]) for i, when in enumerate(times.tolist())]
        for when, batch in batches:
            if when == now:
                listener.delivered(batch, now)
            else:
                self._deliver_later(listener, batch, when - now)

    def _deliver_later(self, listener: FlowListener, tags: np.ndarray, delay: int) -> None:
        timeout = self.env.timeout(delay)
        timeout.callbacks.append(lambda event: listener.delivered(tags, self.env.now))

    def _affected(self) -> tuple[np.ndarray, np.ndarray]:
        """Flows whose max-min rate may have changed at this instant, split into
        (alone on every link of their path: rate = bottleneck capacity, the rest's slots).

        Max-min allocations decompose over connected components of the flow/link graph, so
        only the components holding a started flow, or a link a finished flow freed, change:
        a breadth-first pass over the slots' paths, one numpy step per hop of distance.
        """
        new = np.flatnonzero(self._new)
        self._new[new] = False
        new = new[self._row[new] >= 0]  # not already finished (zero bytes)
        gone = np.concatenate(self._gone) if self._gone else _EMPTY_I
        gone = gone[(self._users[gone] > 0) & ~self._slack[gone]]  # freed capacity someone else can use
        self._gone = []
        paths = self._tight[new]
        alone = ((self._users[paths] == 1) | (paths == self._pad)).all(axis=1)
        if not len(gone) and alone.all():  # the common case: nobody shares a link with a change
            return new, _EMPTY_I
        marked = np.zeros(len(self._capacity), dtype=bool)
        marked[paths[~alone]] = True
        marked[gone] = True
        marked[self._pad] = False
        if not marked.any():
            return new[alone], _EMPTY_I
        live = np.flatnonzero(self._has_tight)  # free slots and flows on slack links only cross nothing here
        on = self._tight[live]
        found = np.zeros(len(live), dtype=bool)
        reached = np.count_nonzero(marked)
        while True:
            touching = marked[on].any(axis=1)
            found |= touching
            marked[on[touching]] = True
            marked[self._pad] = False
            reached, before = np.count_nonzero(marked), reached
            if reached == before:  # no link added: no flow left to find
                break
        members = np.zeros(self._slots, dtype=bool)
        members[live[found]] = True
        return new[alone & ~members[new]], np.flatnonzero(members)

    def _reallocate(self) -> None:
        now = self.env.now
        alone, shared = self._affected()
        slots = np.concatenate([alone, shared])
        if len(slots):
            rates = np.empty(len(slots))
            bottleneck = self._capacity[self._on[alone]].min(axis=1)
            rates[: len(alone)] = np.minimum(bottleneck, self._cap[alone])
            if len(shared):
                caps = self._cap[shared]
                if self._any_slack:  # the slack links still bound each flow's own rate
                    on = self._on[shared]
                    caps = np.minimum(caps, np.where(self._slack[on], self._capacity[on], np.inf).min(axis=1))
                rates[len(alone):] = max_min_rates(self._tight[shared], self._capacity, caps)
            old = self._rate[slots]
            moved = rates != old
            slots, rates, old = slots[moved], rates[moved], old[moved]
            self._left[slots] -= old * ((now - self._since[slots]) / PS_PER_SECOND)
            self._since[slots] = now
            self._rate[slots] = rates
            self._finish[slots] = now + self._left[slots] / rates * PS_PER_SECOND
            if len(slots):
                check_horizon(self._finish[slots].max())
            self._change_load(self._on[slots], rates - old)
        self.stats.commit(now, self._users[:-1])
        if self.active:
            self._due = float(self._finish.min())
            wake = now + max(1, math.ceil(self._due - now - WHOLE_PS_SLACK))
            if wake != self._wake_at:  # else the newest timer wakes the network then already
                self._wake_at = wake
                self._timer += 1
                version = self._timer
                timer = self.env.timeout(wake - now)
                timer.callbacks.append(lambda event: version == self._timer and self._request_settle())
        else:  # idle links accrue no time: the statistics need no closing here (they integrate when read)
            self._due = np.inf

    def _change_load(self, paths: np.ndarray, delta: np.ndarray) -> None:
        """Add ``delta`` (B/s) to every link of each padded path (effective at this instant)."""
        if len(delta):
            self.stats.shift(paths, delta)
