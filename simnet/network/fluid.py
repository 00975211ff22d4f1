"""The fluid (flow-level) network on a SimPy environment: DESIGN section 4.

A transfer of ``n`` bytes holds a rate on every link of its route at once; rates are the
max-min fair allocation over all active transfers, recomputed once per simulated instant
at which the set of active transfers changed. Its last byte leaves at ``t_end``; the
receiver has the data at ``t_end + route latency + message_overhead``.

Time on the environment is integer **picoseconds** (``PS_PER_SECOND`` per second) so that
sums of equal durations are equal and transfers that finish together are handled
together; public results are converted to seconds.

Two ways in:

* ``transfer(src, dst, nbytes)`` returns a SimPy event that fires when the receiver has
  the data (its value: that time in seconds), for scripts and tests;
* ``start(rows, nbytes, tags, listener)`` starts a batch of flows on routes from
  ``resolve`` and reports them back in batches through ``listener.sent(tags, now)`` and
  ``listener.delivered(tags, now)``; the schedule replay uses this, with no per-transfer
  SimPy process.

>>> import simpy
>>> from simnet.topology import topology_from_dict
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
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import simpy

from simnet.network.accounting import LinkStats
from simnet.network.maxmin import max_min_rates
from simnet.topology.model import PS_PER_SECOND, Topology

__all__ = ["FluidNetwork", "FlowListener", "PS_PER_SECOND", "SETTLE_PRIORITY"]

SETTLE_PRIORITY = 2
"""SimPy priority of the once-per-instant recomputation: after every URGENT (0) and
NORMAL (1) event of the same instant, so all changes at one instant are handled together."""

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


class FluidNetwork:
    """Max-min fair flows over a ``Topology`` on a SimPy environment (time in ps).

    ``message_overhead`` (seconds) is added to every delivery. ``timeline=True`` keeps
    each link's piecewise-constant load for plots and traces (memory grows with events).
    """

    def __init__(self, env: simpy.Environment, topology: Topology, *, message_overhead: float = 0.0,
                 timeline: bool = False):
        self.env = env
        self.topology = topology
        self.overhead_ps = round(message_overhead * PS_PER_SECOND)
        links = len(topology.links)
        self._pad = links  # index of the infinite "no link" used to pad paths
        self._capacity = np.append(topology.capacity, np.inf)
        self._rows: dict[tuple[int, int, int], int] = {}
        self._paths = np.full((0, 1), self._pad, dtype=np.int64)
        self._path_latency = _EMPTY_I
        self.stats = LinkStats(topology.capacity, timeline=timeline)
        # active flows, one entry per flow in each array
        self._row = _EMPTY_I
        self._left = _EMPTY_F  # bytes still to send
        self._size = _EMPTY_F
        self._rate = _EMPTY_F
        self._tag = _EMPTY_I
        self._owner = _EMPTY_I  # index into self._listeners
        self._listeners: list[FlowListener] = []
        self._last = env.now
        self._settle_pending = False
        self._settling = False
        self._timer = 0  # version: only the newest completion timer acts
        self._events = _EventListener()

    # ------------------------------------------------------------------ routes
    def resolve(self, src: Sequence[str], dst: Sequence[str], flow: Sequence[int] | np.ndarray) -> np.ndarray:
        """Route rows for transfers ``src[i] -> dst[i]`` on connection ``flow[i]``."""
        index = self.topology.node_index
        nodes = len(self.topology.nodes)
        src_i = np.fromiter((index[s] for s in src), dtype=np.int64, count=len(src))
        dst_i = np.fromiter((index[d] for d in dst), dtype=np.int64, count=len(dst))
        return self.resolve_indices(src_i, dst_i, np.asarray(flow, dtype=np.int64), nodes)

    def resolve_indices(self, src: np.ndarray, dst: np.ndarray, flow: np.ndarray, nodes: int) -> np.ndarray:
        """``resolve`` for node indices; each distinct (src, dst, flow) is routed once."""
        keys = (flow * nodes + src) * nodes + dst
        unique, inverse = np.unique(keys, return_inverse=True)
        rows = np.empty(len(unique), dtype=np.int64)
        new: list[tuple[int, ...]] = []
        for i, key in enumerate(unique.tolist()):
            rest, d = divmod(key, nodes)
            f, s = divmod(rest, nodes)
            cache_key = (s, d, f)
            row = self._rows.get(cache_key)
            if row is None:
                row = len(self._rows)
                self._rows[cache_key] = row
                new.append(self.topology.route_indices(self.topology.nodes[s], self.topology.nodes[d], f))
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
        block = np.full((len(routes), width), self._pad, dtype=np.int64)
        for i, route in enumerate(routes):
            block[i, : len(route)] = route
        self._paths = np.vstack([self._paths, block])
        latency = np.append(self.topology.latency_ps, 0)
        self._path_latency = np.append(self._path_latency, latency[block].sum(axis=1))

    # ------------------------------------------------------------------- flows
    def transfer(self, src: str, dst: str, nbytes: float, flow: int = 0) -> simpy.Event:
        """Start one transfer now; the event fires (value: seconds) when dst has the data."""
        event = self.env.event()
        tag = id(event)
        self._events.events[tag] = event
        self.start(self.resolve([src], [dst], [flow]), np.array([float(nbytes)]), np.array([tag]), self._events)
        return event

    def start(self, rows: np.ndarray, nbytes: np.ndarray, tags: np.ndarray, listener: FlowListener) -> None:
        """Start flows now on route ``rows`` (from ``resolve``) carrying ``nbytes`` each."""
        if len(rows) == 0:
            return
        self._advance()
        try:
            owner = self._listeners.index(listener)
        except ValueError:
            owner = len(self._listeners)
            self._listeners.append(listener)
        nbytes = np.asarray(nbytes, dtype=float)
        local = (self._paths[rows] == self._pad).all(axis=1)  # src == dst: nothing to send
        self._row = np.concatenate([self._row, rows])
        self._left = np.concatenate([self._left, np.where(local, 0.0, nbytes)])
        self._size = np.concatenate([self._size, nbytes])
        self._rate = np.concatenate([self._rate, np.zeros(len(rows))])
        self._tag = np.concatenate([self._tag, np.asarray(tags, dtype=np.int64)])
        self._owner = np.concatenate([self._owner, np.full(len(rows), owner, dtype=np.int64)])
        self._request_settle()

    @property
    def active(self) -> int:
        """Number of flows currently sending."""
        return len(self._row)

    # ------------------------------------------------------------ the engine
    def _request_settle(self) -> None:
        if self._settle_pending or self._settling:
            return
        self._settle_pending = True
        event = simpy.Event(self.env)
        event._ok = True
        event._value = None
        event.callbacks.append(self._settle)
        self.env.schedule(event, priority=SETTLE_PRIORITY)

    def _advance(self) -> None:
        """Move every active flow forward to now and account link usage since the last change."""
        now = self.env.now
        elapsed = now - self._last
        if elapsed <= 0:
            return
        self._last = now
        if len(self._row):
            self._left -= self._rate * (elapsed / PS_PER_SECOND)
        self.stats.integrate(elapsed)

    def _settle(self, _event: simpy.Event | None = None) -> None:
        """Finish flows that are done, notify listeners, then recompute all rates once."""
        self._settle_pending = False
        self._settling = True
        try:
            self._advance()
            while len(self._row):
                finished = self._left <= (self._rate + self._size) * 1e-12
                if not finished.any():
                    break
                self._finish(finished)
            self._reallocate()
        finally:
            self._settling = False

    def _finish(self, finished: np.ndarray) -> None:
        now = self.env.now
        tags, owners, rows = self._tag[finished], self._owner[finished], self._row[finished]
        self.stats.add_bytes(self._paths[rows], self._size[finished])
        keep = ~finished
        self._row, self._left, self._size = self._row[keep], self._left[keep], self._size[keep]
        self._rate, self._tag, self._owner = self._rate[keep], self._tag[keep], self._owner[keep]
        arrive = now + self._path_latency[rows] + self.overhead_ps
        for owner in np.unique(owners).tolist():
            mine = owners == owner
            listener = self._listeners[owner]
            listener.sent(tags[mine], now)
            times, groups = np.unique(arrive[mine], return_inverse=True)
            for i, when in enumerate(times.tolist()):
                batch = tags[mine][groups == i]
                if when == now:
                    listener.delivered(batch, now)
                else:
                    self._deliver_later(listener, batch, when - now)

    def _deliver_later(self, listener: FlowListener, tags: np.ndarray, delay: int) -> None:
        timeout = self.env.timeout(delay)
        timeout.callbacks.append(lambda event: listener.delivered(tags, self.env.now))

    def _reallocate(self) -> None:
        paths = self._paths[self._row]
        self._rate = max_min_rates(paths, self._capacity)
        self.stats.set_load(self.env.now, paths, self._rate)
        if not len(self._row):
            return
        self._timer += 1
        version = self._timer
        wait = self._left / self._rate * PS_PER_SECOND
        delay = max(1, math.ceil(float(wait.min()) - 1e-3))
        timer = self.env.timeout(delay)
        timer.callbacks.append(lambda event: version == self._timer and self._request_settle())
