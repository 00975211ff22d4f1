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

    The filling works on the links the flows cross, renumbered 0.. in index order, so a
    level costs work for those links and the flows still growing only, whatever the size
    of ``capacity``; memory is a few times the paths' own.
    """
    flows, hops = paths.shape
    rates = np.full(flows, np.inf)
    if flows == 0:
        return rates
    counts = np.bincount(paths.ravel(), minlength=len(capacity))  # flows on each link
    used = np.flatnonzero(counts)
    local = np.empty(len(capacity), dtype=np.intp)
    local[used] = np.arange(len(used))
    local = local[paths]
    counts = counts[used]
    remaining = np.array(capacity, dtype=float)[used]
    capped = caps is not None and bool(np.isfinite(caps).any())
    caps = np.asarray(caps, dtype=float) if capped else None
    growing = np.arange(flows)  # the flows still growing, in index order
    share = np.empty(len(used))
    while len(growing):
        share.fill(np.inf)
        np.divide(remaining, counts, out=share, where=counts > 0)  # an infinite link's share stays infinite
        level = share.min()
        if capped:
            level = min(level, caps[growing].min())
        if not level < np.inf:
            break  # the remaining flows cross no finite link and have no cap
        reach = level * (1 + TIE) + 1e-300
        # a flow freezes when a link it crosses is full (its path's hops, not a link x flow
        # matrix: that would be links x flows bytes, 10 GB for an AllToAll over 1,024 GPUs)
        stop = (share <= reach)[local[growing]].any(axis=1)
        if capped:
            stop |= caps[growing] <= reach
        frozen, growing = growing[stop], growing[~stop]
        rate = np.minimum(max(level, 0.0), caps[frozen]) if capped else max(level, 0.0)
        rates[frozen] = rate
        hit = local[frozen].ravel()
        weights = np.repeat(rate, hops) if capped else np.full(len(hit), rate)
        remaining -= np.bincount(hit, weights=weights, minlength=len(used))
        counts -= np.bincount(hit, minlength=len(used))
    return rates
