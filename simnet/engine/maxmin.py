"""Max-min fair rates by progressive filling, vectorised with numpy.

Every flow follows a path of links; all flows grow their rate together until some link
is full or a flow reaches its own rate cap; the flows crossing a full link, or at their
cap, are frozen and the rest keep growing. The result is the unique max-min fair
allocation (Bertsekas & Gallager, *Data Networks*, section 6.5.2), the same one SimGrid's
LMM solver computes for equal-weight flows with per-flow bounds.

>>> import numpy as np
>>> # two flows share link 0 (capacity 10); flow 1 also crosses link 1 (capacity 2)
>>> paths = np.array([[0, 2], [0, 1]])       # 2 = padding, a link of infinite capacity
>>> max_min_rates(paths, np.array([10.0, 2.0, np.inf]))
array([8., 2.])
>>> max_min_rates(paths, np.array([10.0, 2.0, np.inf]), caps=np.array([3.0, np.inf]))  # flow 0 capped at 3
array([3., 2.])
"""

from __future__ import annotations

import numpy as np

__all__ = ["max_min_rates", "TIE"]

TIE = 1e-9
"""Links whose fair share is within this relative distance of the minimum saturate together."""


def max_min_rates(paths: np.ndarray, capacity: np.ndarray, caps: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rate of each flow.

    ``paths`` is an (F, H) integer array: row f lists the links flow f crosses, padded
    with the index of a link of infinite capacity (by convention the last entry of
    ``capacity``). ``capacity`` holds each link's capacity (bytes/s); ``caps`` (optional,
    bytes/s, ``inf`` for none) bounds each flow's own rate. A flow that crosses only
    padding and has no cap gets an infinite rate.
    """
    flows = paths.shape[0]
    rates = np.full(flows, np.inf)
    if flows == 0:
        return rates
    caps = np.full(flows, np.inf) if caps is None else np.asarray(caps, dtype=float)
    links = capacity.shape[0]
    remaining = capacity.astype(float).copy()
    active = np.ones(flows, dtype=bool)
    real = np.isfinite(capacity)
    while active.any():
        counts = np.bincount(paths[active].ravel(), minlength=links)
        crowded = (counts > 0) & real
        share = np.full(links, np.inf)
        share[crowded] = remaining[crowded] / counts[crowded]
        level = min(share.min(), caps[active].min())
        if not np.isfinite(level):
            break  # the remaining flows cross no finite link and have no cap
        reach = level * (1 + TIE) + 1e-300
        frozen = active & ((share <= reach)[paths].any(axis=1) | (caps <= reach))
        rate = np.minimum(max(level, 0.0), caps[frozen])
        rates[frozen] = rate
        remaining -= np.bincount(paths[frozen].ravel(), weights=np.repeat(rate, paths.shape[1]), minlength=links)
        active &= ~frozen
    return rates
