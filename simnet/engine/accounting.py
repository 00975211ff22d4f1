"""Per-directed-link accounting over a run: bytes, utilisation, saturation, flow counts.

Loads are piecewise constant between the network's recomputations. An instant's changes
are logged as they come (a few numpy calls whatever the topology); the integrals over
the pieces are taken from the log in one vectorised pass when a statistic is read, a
capacity changes, the network goes idle or the log holds ``LOG_ENTRIES`` changes, so
memory stays bounded and every statistic is an exact integral over the pieces.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LinkStats", "SATURATED", "LOG_ENTRIES"]

SATURATED = 0.999
"""A link counts as saturated while its load is at least this fraction of its capacity in force."""

LOG_ENTRIES = 1 << 16
"""(link, instant) changes the log holds before they are integrated (memory: ~40 B each)."""


def _integrated(name: str) -> property:
    """A statistic array, read after the logged changes are integrated into it."""
    return property(lambda self: getattr(self._integrate(), name))


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

    ``reverse[i]`` is the index of link i's opposite direction (so ``reverse[reverse[i]]
    == i``), or -1 for a one-way link.
    """

    peak = _integrated("_peak")
    saturated_ps = _integrated("_saturated_ps")
    busy_ps = _integrated("_busy_ps")
    either_saturated_ps = _integrated("_either_saturated_ps")
    max_flows = _integrated("_max_flows")
    flows = _integrated("_flows")

    def __init__(self, capacity: np.ndarray, reverse: np.ndarray | None = None, timeline: bool = False):
        self.capacity = np.asarray(capacity, dtype=float)
        self.in_force = self.capacity.copy()
        self._changes: list[tuple[int, np.ndarray, np.ndarray]] = []  # (ps, links, B/s from then on)
        links = len(self.capacity)
        self.reverse = np.full(links, -1, dtype=np.int64) if reverse is None else np.asarray(reverse, dtype=np.int64)
        self._bytes = np.zeros(links + 1)  # the extra entry absorbs path padding
        self.bytes = self._bytes[:links]
        self._peak = np.zeros(links)
        self._saturated_ps = np.zeros(links, dtype=np.int64)
        self._busy_ps = np.zeros(links, dtype=np.int64)
        self._either_saturated_ps = np.zeros(links, dtype=np.int64)
        self._max_flows = np.zeros(links, dtype=np.int64)
        self.load = np.zeros(links)
        self._flows = np.zeros(links, dtype=np.int64)
        self.timeline: list[tuple[int, np.ndarray, np.ndarray]] | None = [] if timeline else None
        # integrated up to: each link's load (saturated, busy) holds since _since; the pair's state since _pair_since
        self._since = np.zeros(links, dtype=np.int64)
        self._saturated = np.zeros(links, dtype=bool)
        self._busy = np.zeros(links, dtype=bool)
        self._pair_since = np.zeros(links, dtype=np.int64)
        self._pair_saturated = np.zeros(links, dtype=bool)
        # changes not integrated yet: (ps, links, B/s, flows, B/s in force) from then on
        self._log: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._logged = 0
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
        self._integrate()
        self._close(now, links)
        self.in_force[links] = capacity
        load = self.load[links]
        self._saturated[links] = (load > 0) & (load >= SATURATED * self.in_force[links])
        self._changes.append((now, links, np.array(self.in_force[links])))
        self._touched[links] = True

    def capacity_from(self, now: int, links: np.ndarray, capacity: np.ndarray) -> None:
        """Record that directed ``links`` ran at ``capacity`` (B/s each) from ``now`` (ps) on,
        for statistics computed after the fact (the lane replay, ``simnet.engine.lanes``):
        ``in_force``, ``mean_capacity`` and ``utilization`` follow it; the integrals are
        the caller's (``set_capacity`` is the running network's)."""
        links = np.asarray(links, dtype=np.int64)
        self.in_force[links] = capacity
        self._changes.append((now, links, np.array(self.in_force[links])))

    def adopt(self, totals: dict[str, np.ndarray], changes: list[tuple[int, np.ndarray, np.ndarray]]) -> None:
        """Take the statistics of a run kept as each link changed (``simnet.engine.compiled``:
        the integrals ``commit`` and ``set_capacity`` give, by the names of its ``Links``;
        ``timeline`` too when kept) and the capacity changes of its faults, ``(ps, links, B/s
        from then on)`` in the order they were made."""
        self._log, self._logged = [], 0
        self._bytes[: len(self.bytes)] = totals["bytes"]
        for mine, theirs in (("load", "load"), ("_flows", "flows"), ("in_force", "in_force"), ("_peak", "peak"),
                             ("_saturated_ps", "saturated_ps"), ("_busy_ps", "busy_ps"),
                             ("_either_saturated_ps", "either_ps"), ("_max_flows", "max_flows"), ("_since", "since"),
                             ("_saturated", "saturated"), ("_busy", "busy"), ("_pair_since", "pair_since"),
                             ("_pair_saturated", "pair_saturated")):
            getattr(self, mine)[:] = totals[theirs]
        self._changes = [(at, np.asarray(links), np.asarray(capacity)) for at, links, capacity in changes]
        if self.timeline is not None:
            self.timeline = totals["timeline"]

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

    def commit(self, now: int, users: np.ndarray) -> None:
        """Apply the queued changes at ``now``; ``users`` is the flow count of every link."""
        self._touched[-1] = False  # padding
        links = np.flatnonzero(self._touched)
        if not len(links):
            return
        self._touched[links] = False
        flows = users[links]
        load = self.load[links] + self._delta[links]
        self._delta[links] = 0.0
        load[flows == 0] = 0.0  # no rounding residue on idle links
        self.load[links] = load
        self._log.append((now, links, load, flows, self.in_force[links]))
        self._logged += len(links)
        if self.timeline is not None:
            self.timeline.append((now, links, load))
        if self._logged >= LOG_ENTRIES:
            self._integrate()

    def close(self, now: int) -> None:
        """Account every link up to ``now`` (the network went idle)."""
        self._integrate()
        self._close(now, np.arange(len(self.capacity)))

    def totals(self) -> tuple[np.ndarray, ...]:
        """Copies of the integrals that grow with a run (bytes, saturated, busy and
        either-direction-saturated ps), for ``repeat_since``."""
        self._integrate()
        return tuple(a.copy() for a in (self._bytes, self._saturated_ps, self._busy_ps, self._either_saturated_ps))

    def repeat_since(self, before: tuple[np.ndarray, ...], times: int) -> None:
        """Count ``times`` more copies of what the links did since ``totals`` gave
        ``before``: a stretch that began and ended with every link idle and repeats exactly
        (peaks and flow counts repeat too, so they stay). Idle links accrue no time, so the
        clock of each link's current state may jump ahead with the run."""
        if (self.load != 0).any():
            raise ValueError("repeat_since: the links must be idle")
        self._integrate()
        for total, start in zip((self._bytes, self._saturated_ps, self._busy_ps, self._either_saturated_ps),
                                before):
            total += (total - start) * times

    def _close(self, now: int, links: np.ndarray) -> None:
        """Integrate ``links`` (and their pairs) up to ``now`` in their current state (log integrated)."""
        elapsed = now - self._since[links]
        self._saturated_ps[links] += elapsed * self._saturated[links]
        self._busy_ps[links] += elapsed * self._busy[links]
        self._since[links] = now
        back = self.reverse[links]
        pairs = np.concatenate([links, back[back >= 0]])  # a link may appear twice: both copies get one value
        self._either_saturated_ps[pairs] += (now - self._pair_since[pairs]) * self._pair_saturated[pairs]
        self._pair_since[pairs] = now

    def _integrate(self) -> LinkStats:
        """Fold the logged changes into the statistics (exact integer integrals); returns self."""
        if not self._log:
            return self
        times, *parts = zip(*self._log)
        links, load, flows, in_force = (np.concatenate(part) for part in parts)
        now = np.repeat(np.array(times, dtype=np.int64), [len(entry) for entry in parts[0]])
        self._log, self._logged = [], 0
        saturated = (load > 0) & (load >= SATURATED * in_force)
        self._integrate_pairs(now, links, saturated)
        # each link's pieces, in time order: from its state before the log, then from each change
        order = _stable_order(links)
        link, at, saturated, busy, flows = links[order], now[order], saturated[order], load[order] > 0, flows[order]
        first = np.append(True, link[1:] != link[:-1])
        starts = np.flatnonzero(first)  # each link's first change
        seen = link[starts]
        ratio = np.divide(load, in_force, out=np.zeros_like(load), where=in_force > 0)[order]
        self._peak[seen] = np.maximum(self._peak[seen], np.maximum.reduceat(ratio, starts))
        self._max_flows[seen] = np.maximum(self._max_flows[seen], np.maximum.reduceat(flows, starts))
        elapsed = at - np.where(first, self._since[link], np.roll(at, 1))
        for total, state, after in ((self._saturated_ps, self._saturated, saturated),
                                    (self._busy_ps, self._busy, busy)):
            total[seen] += np.add.reduceat(elapsed * np.where(first, state[link], np.roll(after, 1)), starts)
        last = np.append(link[1:] != link[:-1], True)
        link = link[last]
        self._since[link] = at[last]
        self._saturated[link] = saturated[last]
        self._busy[link] = busy[last]
        self._flows[link] = flows[last]
        return self

    def _integrate_pairs(self, now: np.ndarray, links: np.ndarray, saturated: np.ndarray) -> None:
        """``either_saturated_ps`` from logged changes (time order) of ``links``, saturated
        or not from then on; reads each link's state before them from ``_saturated``. A
        change of a link is an event of its pair's state as seen from it and from its reverse."""
        back = self.reverse[links]
        other = back >= 0
        known = np.zeros(len(self.capacity), dtype=bool)  # each target's state before: both sides known
        known[links] = True
        known[back[other]] = True
        start = np.flatnonzero(known)
        start_back = self.reverse[start]
        target = np.concatenate([start, links, back[other]])
        when = np.concatenate([self._pair_since[start], now, now[other]])
        sequence = np.concatenate([np.full(len(start), -1), np.arange(len(links)), np.flatnonzero(other)])
        # by target, then sequence: distinct keys, so numpy's default sort (several times faster than lexsort) suffices
        order = np.argsort(target * (len(links) + 1) + sequence + 1)
        target, when = target[order], when[order]
        changes, mirrored = len(links), int(other.sum())
        sides = []  # each event's state of the target's own direction, then of its reverse
        for own, initial in ((True, self._saturated[start]),
                             (False, np.where(start_back >= 0, self._saturated[np.maximum(start_back, 0)], False))):
            defined = np.concatenate([np.ones(len(start), dtype=bool), np.full(changes, own),
                                      np.full(mirrored, not own)])
            values = np.concatenate([initial, saturated, saturated[other]])[order]
            sides.append(values[np.maximum.accumulate(np.where(defined[order], np.arange(len(order)), 0))])
        firsts = np.flatnonzero(sequence[order] < 0)  # each target's state before the log: its first event
        pair = sides[0] | sides[1]  # the pair's state after each event; before the log, as it was
        pair[firsts] = self._pair_saturated[start]
        pieces = np.append(0, (when[1:] - when[:-1]) * pair[:-1])
        pieces[firsts] = 0
        self._either_saturated_ps[target[firsts]] += np.add.reduceat(pieces, firsts)
        ends = np.append(target[1:] != target[:-1], True)
        self._pair_since[target[ends]] = when[ends]
        self._pair_saturated[target[ends]] = pair[ends]


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for integer ``keys`` (``keys * len(keys)`` fits
    in int64): made distinct by position, so numpy's default sort, several times faster
    than its stable one, gives the same order.

    >>> _stable_order(np.array([3, 1, 3, 1])).tolist()
    [1, 3, 0, 2]
    """
    return np.argsort(keys.astype(np.int64) * len(keys) + np.arange(len(keys)))
