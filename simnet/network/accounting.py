"""Per-directed-link accounting over a run: bytes, utilisation, saturation, flow counts.

Loads are piecewise constant between the network's recomputations, so every statistic is
an exact integral over those pieces, not a sample.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LinkStats", "SATURATED"]

SATURATED = 0.999
"""A link counts as saturated while its load is at least this fraction of its capacity."""

class LinkStats:
    """Running statistics for each directed link (same order as ``Topology.links``).

    Attributes (numpy arrays, one entry per link): ``bytes`` carried by finished flows
    (exact, not integrated over the picosecond clock), ``peak`` load as a
    fraction of capacity, ``saturated_ps`` and ``busy_ps`` (time at >= 99.9 % and > 0 %
    load), ``max_flows`` (most flows at once). With ``timeline=True``, ``timeline`` is a
    list of ``(time_ps, link_indices, loads_Bps)`` giving every link's load from that
    time until the next entry (links not listed carry nothing).
    """

    def __init__(self, capacity: np.ndarray, timeline: bool = False):
        self.capacity = np.asarray(capacity, dtype=float)
        links = len(self.capacity)
        self.bytes = np.zeros(links)
        self.peak = np.zeros(links)
        self.saturated_ps = np.zeros(links, dtype=np.int64)
        self.busy_ps = np.zeros(links, dtype=np.int64)
        self.max_flows = np.zeros(links, dtype=np.int64)
        self.load = np.zeros(links)
        self.flows = np.zeros(links, dtype=np.int64)
        self.timeline: list[tuple[int, np.ndarray, np.ndarray]] | None = [] if timeline else None

    def set_load(self, now: int, paths: np.ndarray, rates: np.ndarray) -> None:
        """Record the load from ``now`` on: flows on padded ``paths`` at ``rates`` (B/s)."""
        links = len(self.capacity)
        flat = paths.ravel()
        width = paths.shape[1] if paths.ndim == 2 else 1
        finite = np.where(np.isfinite(rates), rates, 0.0)
        self.load = np.bincount(flat, weights=np.repeat(finite, width), minlength=links + 1)[:links]
        self.flows = np.bincount(flat, minlength=links + 1)[:links]
        np.maximum(self.peak, self.load / self.capacity, out=self.peak)
        np.maximum(self.max_flows, self.flows, out=self.max_flows)
        if self.timeline is not None:
            used = np.flatnonzero(self.load)
            self.timeline.append((now, used, self.load[used]))

    def add_bytes(self, paths: np.ndarray, sizes: np.ndarray) -> None:
        """Count finished flows' bytes on every link of their padded ``paths``."""
        links = len(self.capacity)
        width = paths.shape[1]
        self.bytes += np.bincount(paths.ravel(), weights=np.repeat(sizes, width), minlength=links + 1)[:links]

    def integrate(self, elapsed_ps: int) -> None:
        """Account ``elapsed_ps`` picoseconds at the current load."""
        if not self.flows.any():
            return
        self.saturated_ps += elapsed_ps * (self.load >= SATURATED * self.capacity)
        self.busy_ps += elapsed_ps * (self.load > 0)
