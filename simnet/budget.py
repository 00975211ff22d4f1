"""How much a simulation may hold in memory, so a run too large for the machine is refused
in one line before it allocates, instead of being killed by the kernel half-way.

The budget is the memory the operating system reports available (Linux ``MemAvailable``)
less a safety margin, or ``SIMNET_MEMORY`` (a size such as ``8 GiB``) when set.

>>> import os
>>> os.environ["SIMNET_MEMORY"] = "1 GiB"
>>> memory_budget()
1073741824
>>> del os.environ["SIMNET_MEMORY"]
"""

from __future__ import annotations

import os
from pathlib import Path

from simnet import units
from simnet.errors import CannotSimulate

__all__ = ["memory_budget", "TooLarge", "SAFETY"]

SAFETY = 0.8
"""Fraction of the available memory a run may use (the rest: interpreter, plots, other processes)."""

_FALLBACK = 4 * 2**30
"""Budget where the available memory cannot be read (not Linux): a cautious 4 GiB."""


class TooLarge(CannotSimulate):
    """A run that would need more memory than the budget; ``str()`` says how much and what to do."""


def memory_budget() -> int:
    """Bytes a run may allocate: ``SIMNET_MEMORY`` if set, else ``SAFETY`` x MemAvailable."""
    override = os.environ.get("SIMNET_MEMORY")
    if override:
        try:
            return units.parse_size(override)
        except ValueError as exc:
            raise ValueError(f"SIMNET_MEMORY: {exc}") from None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(int(line.split()[1]) * 1024 * SAFETY)
    except OSError:
        pass
    return _FALLBACK
