"""How far a long replay is, for whoever listens (the CLI's progress bar).

A replay counts its transfers as their data arrives and reports the share done with an
estimate of the time left, at most every ``EVERY_S`` seconds of wall time and only while a
listener is in force (``listening``): no listener, no cost beyond a counter.

>>> seen = []
>>> with listening(lambda share, left_s: seen.append((share, left_s is None))):
...     report = Reporter(4, every_s=0.0)
...     report(1); report(3)
>>> seen  # the first report has no pace yet
[(0.25, True), (0.75, False)]
>>> Reporter(4)(4)  # nobody listens: nothing happens
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["listening", "Reporter", "EVERY_S"]

EVERY_S = 0.5
"""Wall seconds between two reports of one replay."""

_LISTENER: ContextVar[tuple[Callable[[float, float | None], None], Callable[[], None] | None] | None] = \
    ContextVar("simnet_progress", default=None)


@contextmanager
def listening(listener: Callable[[float, float | None], None],
              started: Callable[[], None] | None = None) -> Iterator[None]:
    """While in force, every replay calls ``listener(share, left_s)``: the share of its
    transfers delivered (0 to 1) and the wall seconds it expects to take still (None at its
    first report, before it has a pace); and
    ``started()``, if given, as it starts."""
    token = _LISTENER.set((listener, started))
    try:
        yield
    finally:
        _LISTENER.reset(token)


class Reporter:
    """Reports ``done`` of ``total`` transfers to the listener in force, if any, at most
    every ``every_s`` wall seconds; the time left extrapolates from the pace since the first
    report, not since the start: what came before it (building routes, compiling, a pipeline
    filling) says nothing of the pace, and an estimate from it could be hours for a minute's
    run. A ``total`` of 0 reports nothing (a part of a replay that reports on its own)."""

    def __init__(self, total: int, every_s: float | None = None):
        listener, started = _LISTENER.get() or (None, None)
        self.listener = listener if total else None
        if self.listener is not None and started is not None:
            started()
        self.total = max(total, 1)
        self.every_s = EVERY_S if every_s is None else every_s
        self.due = time.monotonic() + self.every_s
        self.first: tuple[float, int] | None = None  # when the first report was, and how many were done
        self.high = 0  # the most reported done: a replay started over reports again once past it

    @property
    def listened(self) -> bool:
        return self.listener is not None

    def again(self) -> None:
        """The replay starts over (a buffer of the compiled network grew): its reports resume
        once it is past where it had come, at the pace it goes from there, so the share
        never seems to go back."""
        self.first = None

    def __call__(self, done: int) -> None:
        if self.listener is None:
            return
        now = time.monotonic()
        if now < self.due or done <= 0 or (self.first is None and done <= self.high):
            return
        self.high = max(self.high, done)
        self.due = now + self.every_s
        if self.first is None:
            self.first = (now, done)
        since, then = self.first
        left_s = (now - since) / (done - then) * (self.total - done) if done > then else None
        self.listener(min(done / self.total, 1.0), left_s)
