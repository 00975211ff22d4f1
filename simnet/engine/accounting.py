"""Per-directed-link accounting over a run: bytes, utilisation, saturation, flow counts.

Loads are piecewise constant between the network's recomputations. Each link remembers
when its load last changed, so closing an interval costs work only for the links that
change at an instant, and every statistic is an exact integral over the pieces.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LinkStats", "SATURATED"]

SATURATED = 0.999
"""A link counts as saturated while its load is at least this fraction of its capacity in force."""


class LinkStats:
    """Running statistics for each directed link (same order as ``Topology.links``).

    Attributes (numpy arrays, one entry per link): ``capacity`` (B/s, healthy: as given),
    ``in_force`` (B/s now: lower while a fault degrades the link, 0 while it is down),
    ``bytes`` carried by finished flows (exact), ``peak`` load as a fraction of the capacity
    in force, ``saturated_ps`` and ``busy_ps`` (time at >= 99.9 % of the capacity in force
    and at > 0 % load), ``either_saturated_ps`` (time this link *or* its
    reverse direction was saturated: a port's busy time, counted once where the two
    overlap), ``max_flows`` (most flows at once), ``load`` (B/s now). With
    ``timeline=True``, ``timeline`` lists ``(time_ps, link_indices, loads_Bps)`` each time
    loads change: the listed links carry those loads from that time on; links not listed
    keep theirs. Memory stays bounded without a timeline.

    ``reverse[i]`` is the index of link i's opposite direction, or -1 for a one-way link.
    """

    def __init__(self, capacity: np.ndarray, reverse: np.ndarray | None = None, timeline: bool = False):
        self.capacity = np.asarray(capacity, dtype=float)
        self.in_force = self.capacity.copy()
        self._changes: list[tuple[int, np.ndarray, np.ndarray]] = []  # (ps, links, B/s from then on)
        links = len(self.capacity)
        self.reverse = np.full(links, -1, dtype=np.int64) if reverse is None else np.asarray(reverse, dtype=np.int64)
        self._bytes = np.zeros(links + 1)  # the extra entry absorbs path padding
        self.bytes = self._bytes[:links]
        self.peak = np.zeros(links)
        self.saturated_ps = np.zeros(links, dtype=np.int64)
        self.busy_ps = np.zeros(links, dtype=np.int64)
        self.either_saturated_ps = np.zeros(links, dtype=np.int64)
        self.max_flows = np.zeros(links, dtype=np.int64)
        self.load = np.zeros(links)
        self.flows = np.zeros(links, dtype=np.int64)
        self.timeline: list[tuple[int, np.ndarray, np.ndarray]] | None = [] if timeline else None
        self._since = np.zeros(links, dtype=np.int64)
        self._pair_since = np.zeros(links, dtype=np.int64)
        self._pair_saturated = np.zeros(links, dtype=bool)
        self._delta = np.zeros(links + 1)  # pending load change; the extra entry absorbs path padding
        self._touched = np.zeros(links + 1, dtype=bool)

    def add_bytes(self, paths: np.ndarray, sizes: np.ndarray) -> None:
        """Count finished flows' bytes on every link of their padded ``paths``."""
        np.add.at(self._bytes, paths.ravel(), np.repeat(sizes, paths.shape[1]))

    def shift(self, paths: np.ndarray, delta: np.ndarray) -> None:
        """Queue a load change of ``delta`` (B/s) on every link of each padded path."""
        flat = paths.ravel()
        np.add.at(self._delta, flat, np.repeat(delta, paths.shape[1]))
        self._touched[flat] = True

    def set_capacity(self, now: int, links: np.ndarray, capacity: np.ndarray) -> None:
        """From ``now`` (ps) measure directed ``links`` against ``capacity`` (B/s each, 0:
        down); their time so far is accounted against the old one. The next ``commit``
        (at ``now``) rates them anew."""
        links = np.asarray(links, dtype=np.int64)
        self._close(now, links)
        self._close_pairs(now, self._with_reverse(links))
        self.in_force[links] = capacity
        self._changes.append((now, links, np.array(self.in_force[links])))
        self._touched[links] = True

    def mean_capacity(self, duration: int) -> np.ndarray:
        """Each link's capacity in force averaged over the first ``duration`` ps (> 0), B/s:
        ``capacity`` where nothing changed it."""
        mean = self.capacity.copy()
        before = self.capacity.copy()
        for at, links, capacity in self._changes:
            mean[links] += (capacity - before[links]) * (max(duration - at, 0) / duration)
            before[links] = capacity
        return mean

    def utilization(self, link: int, times: np.ndarray, loads: np.ndarray) -> np.ndarray:
        """``loads`` (B/s) on ``link`` from each of ``times`` (ps) on, as fractions of the
        capacity in force then (0 while the link is down)."""
        at, capacity = [0], [self.capacity[link]]
        for when, links, values in self._changes:
            if (links == link).any():
                at.append(when)
                capacity.append(values[links == link][-1])
        in_force = np.array(capacity)[np.searchsorted(at, times, side="right") - 1]
        loads = np.asarray(loads, dtype=float)
        return np.divide(loads, in_force, out=np.zeros_like(loads), where=in_force > 0)

    def _saturated(self, links: np.ndarray) -> np.ndarray:
        load = self.load[links]
        return (load > 0) & (load >= SATURATED * self.in_force[links])

    def _close(self, now: int, links: np.ndarray) -> None:
        elapsed = now - self._since[links]
        self.saturated_ps[links] += elapsed * self._saturated(links)
        self.busy_ps[links] += elapsed * (self.load[links] > 0)
        self._since[links] = now

    def _close_pairs(self, now: int, links: np.ndarray) -> None:
        self.either_saturated_ps[links] += (now - self._pair_since[links]) * self._pair_saturated[links]
        self._pair_since[links] = now

    def _with_reverse(self, links: np.ndarray) -> np.ndarray:
        """``links`` and their reverse directions. A link may appear twice; every update
        below writes the same value for both copies, so no (sorting) de-duplication."""
        back = self.reverse[links]
        return np.concatenate([links, back[back >= 0]])

    def commit(self, now: int, users: np.ndarray) -> None:
        """Apply the queued changes at ``now``; ``users`` is the flow count of every link."""
        self._touched[-1] = False  # padding
        links = np.flatnonzero(self._touched)
        if not len(links):
            return
        self._touched[links] = False
        pairs = self._with_reverse(links)
        self._close(now, links)
        self._close_pairs(now, pairs)
        load = self.load[links] + self._delta[links]
        self._delta[links] = 0.0
        load[users[links] == 0] = 0.0  # no rounding residue on idle links
        self.load[links] = load
        self.flows[links] = users[links]
        in_force = self.in_force[links]
        usage = np.divide(load, in_force, out=np.zeros_like(load), where=in_force > 0)  # a link down carries nothing
        self.peak[links] = np.maximum(self.peak[links], usage)
        self.max_flows[links] = np.maximum(self.max_flows[links], users[links])
        back = self.reverse[pairs]
        self._pair_saturated[pairs] = self._saturated(pairs) | np.where(back >= 0, self._saturated(back), False)
        if self.timeline is not None:
            self.timeline.append((now, links, load.copy()))

    def close(self, now: int) -> None:
        """Account every link up to ``now`` (the network went idle)."""
        every = np.arange(len(self.capacity))
        self._close(now, every)
        self._close_pairs(now, every)
