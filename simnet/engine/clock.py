"""Simulated time as both engines keep it: integer picoseconds (``PS_PER_SECOND`` per
second), so that sums of equal durations are equal and transfers that finish together
are handled together.

A flow's last byte leaves at ``start + bytes / rate``, a float. Both engines end it at the
same whole picosecond, the first at or after that instant *to float rounding*:
``ceil(finish - WHOLE_PS_SLACK)``. Without the slack a duration that rounds a hair above a
whole number (``3.0000000000000004``) would end a picosecond late in one engine and not in
the other, so the lane replay (``simnet.engine.lanes``) equals the fluid network
(``simnet.engine.fluid``) only because both forgive the same ``WHOLE_PS_SLACK``.

>>> import math
>>> math.ceil(3.0000000000000004 - WHOLE_PS_SLACK), math.ceil(3.002 - WHOLE_PS_SLACK)
(3, 4)
>>> HORIZON_PS < 2**63 // 9  # int64 picoseconds hold the horizon many times over
True
"""

from __future__ import annotations

from simnet.errors import CannotSimulate
from simnet.topology.graph import PS_PER_SECOND

__all__ = ["PS_PER_SECOND", "WHOLE_PS_SLACK", "HORIZON_S", "HORIZON_PS", "BeyondHorizon", "check_horizon"]

WHOLE_PS_SLACK = 1e-3
"""Picoseconds of float rounding forgiven when a flow's last byte leaves: it ends at
``ceil(finish - WHOLE_PS_SLACK)``, the first whole picosecond at or after its finish. A
thousandth of a picosecond lies well above float64's rounding of instants up to a few
seconds (2^-53 of 1 s is 10^-4 ps) and well below a picosecond."""

HORIZON_S = 10**6
"""Latest simulated instant, s (11.6 days; int64 picoseconds would overflow at 106 days)."""

HORIZON_PS = HORIZON_S * PS_PER_SECOND
"""``HORIZON_S`` in picoseconds (10^18, an int64)."""


class BeyondHorizon(CannotSimulate):
    """A flow would finish after ``HORIZON_S``: bandwidths far too low for the bytes asked."""


def check_horizon(ps: float) -> None:
    """Raise ``BeyondHorizon`` when the simulated instant ``ps`` lies past ``HORIZON_S``."""
    if ps > HORIZON_PS:
        raise BeyondHorizon(f"the simulated time passes {HORIZON_S:,} s ({HORIZON_S / 86400:.1f} days), simnet's "
                            "horizon: a bandwidth far too low for the bytes, or latencies and overheads far too long")
