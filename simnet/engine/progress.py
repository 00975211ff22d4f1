"""How far a long replay is, for whoever listens (the CLI's progress bar).

A replay counts its transfers as their data arrives and reports the share done with an
estimate of the time left, at most every ``EVERY_S`` seconds of wall time and only while a
listener is in force (``listening``): no listener, no cost beyond a counter.

>>> seen = []
>>> with listening(lambda share, left_s: seen.append(share)):
...     report = Reporter(4, every_s=0.0)
...     report(1); report(3)
>>> seen
[0.25, 0.75]
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

_LISTENER: ContextVar[tuple[Callable[[float, float], None], Callable[[], None] | None] | None] = \
    ContextVar("simnet_progress", default=None)


@contextmanager
def listening(listener: Callable[[float, float], None], started: Callable[[], None] | None = None) -> Iterator[None]:
    """While in force, every replay calls ``listener(share, left_s)``: the share of its
    transfers delivered (0 to 1) and the wall seconds it expects to take still; and
    ``started()``, if given, as it starts."""
    token = _LISTENER.set((listener, started))
    try:
        yield
    finally:
        _LISTENER.reset(token)


class Reporter:
    """Reports ``done`` of ``total`` transfers to the listener in force, if any, at most
    every ``every_s`` wall seconds; the time left extrapolates from the pace so far. A
    ``total`` of 0 reports nothing (a part of a replay that reports on its own)."""

    def __init__(self, total: int, every_s: float | None = None):
        listener, started = _LISTENER.get() or (None, None)
        self.listener = listener if total else None
        if self.listener is not None and started is not None:
            started()
        self.total = max(total, 1)
        self.every_s = EVERY_S if every_s is None else every_s
        self.started = time.monotonic()
        self.due = self.started + self.every_s

    @property
    def listened(self) -> bool:
        return self.listener is not None

    def __call__(self, done: int) -> None:
        if self.listener is None:
            return
        now = time.monotonic()
        if now < self.due or done <= 0:
            return
        self.due = now + self.every_s
        share = min(done / self.total, 1.0)
        self.listener(share, (now - self.started) * (1 - share) / share)
