"""Max-min fair rates by progressive filling, vectorised with numpy.

Every flow follows a path of links; all flows grow their rate together until some link
is full; the flows crossing a full link are frozen at that rate and the rest keep
growing. The result is the unique max-min fair allocation (Bertsekas & Gallager,
*Data Networks*, section 6.5.2), the same one SimGrid's LMM solver computes for
equal-weight flows.

>>> import numpy as np
>>> # two flows share link 0 (capacity 10); flow 1 also crosses link 1 (capacity 2)
>>> paths = np.array([[0, 2], [0, 1]])       # 2 = padding, a link of infinite capacity
>>> max_min_rates(paths, np.array([10.0, 2.0, np.inf]))
array([8., 2.])
"""

from __future__ import annotations

import numpy as np

__all__ = ["max_min_rates", "TIE"]

TIE = 1e-9
"""Links whose fair share is within this relative distance of the minimum saturate together."""


def max_min_rates(paths: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rate of each flow.

    ``paths`` is an (F, H) integer array: row f lists the links flow f crosses, padded
    with the index of a link of infinite capacity (by convention the last entry of
    ``capacity``). ``capacity`` holds each link's capacity (bytes/s). A flow that
    crosses only padding (an empty path) gets an infinite rate.
    """
    flows = paths.shape[0]
    rates = np.full(flows, np.inf)
    if flows == 0:
        return rates
    links = capacity.shape[0]
    remaining = capacity.astype(float).copy()
    active = np.ones(flows, dtype=bool)
    real = np.isfinite(capacity)
    while active.any():
        counts = np.bincount(paths[active].ravel(), minlength=links)
        crowded = (counts > 0) & real
        if not crowded.any():
            break  # the remaining flows cross no finite link
        share = np.full(links, np.inf)
        share[crowded] = remaining[crowded] / counts[crowded]
        level = share.min()
        bottleneck = share <= level * (1 + TIE) + 1e-300
        frozen = active & bottleneck[paths].any(axis=1)
        rates[frozen] = max(level, 0.0)
        remaining -= np.bincount(paths[frozen].ravel(), minlength=links) * max(level, 0.0)
        active &= ~frozen
    return rates
