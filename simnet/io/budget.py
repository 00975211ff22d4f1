"""How much a simulation may hold in memory, so a run too large for the machine is refused
in one line before it allocates, instead of being killed by the kernel half-way.

The budget is the memory the operating system reports available (Linux ``MemAvailable``,
or what a container's cgroup limit leaves, whichever is less) less a safety margin, or
``SIMNET_MEMORY`` (a size such as ``8 GiB``) when set. Sweep workers share it: each gets
its part (``simnet.run.sweep.executors``).

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
from simnet.errors import CannotSimulate, InputError

__all__ = ["memory_budget", "check_fits", "fits", "gigabytes", "in_gb", "TooLarge", "SAFETY"]

SAFETY = 0.8
"""Fraction of the available memory a run may use (the rest: interpreter, plots, other processes)."""

_FALLBACK = 4 * 2**30
"""Budget where the available memory cannot be read (not Linux): a cautious 4 GiB."""


class TooLarge(CannotSimulate):
    """A run that would need more memory than the budget; ``str()`` says how much and what to
    do, ``needed`` and ``budget`` are the bytes, ``what`` what needs them; ``stopped``: the
    count stopped where it passed the budget, so ``needed`` is only where it stopped."""

    def __init__(self, message: str, needed: float = 0.0, budget: int = 0, what: str = "", stopped: bool = False):
        super().__init__(message)
        self.needed, self.budget, self.what, self.stopped = needed, budget, what, stopped


def memory_budget() -> int:
    """Bytes a run may allocate: ``SIMNET_MEMORY`` if set, else ``SAFETY`` x MemAvailable."""
    override = os.environ.get("SIMNET_MEMORY")
    if override:
        try:
            budget = units.parse_size(override)
        except ValueError as exc:
            raise InputError(f"SIMNET_MEMORY: {exc}") from None
        if budget <= 0:
            raise InputError(f"SIMNET_MEMORY: {override!r} must be more than 0 B")
        return budget
    free = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                free = int(line.split()[1]) * 1024
    except OSError:
        pass
    try:  # a container's limit (cgroup v2) binds before the machine's memory does
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit.isdigit():
            used = int(Path("/sys/fs/cgroup/memory.current").read_text())
            free = min(free if free is not None else int(limit), max(int(limit) - used, 0))
    except (OSError, ValueError):
        pass
    return _FALLBACK if free is None else int(free * SAFETY)


def check_fits(needed: float, what: str, remedy: str, budget: int | None = None) -> None:
    """Raise ``TooLarge`` when ``needed`` bytes exceed ``budget`` (default: ``memory_budget()``);
    the one line says ``what`` needs them, how much, the budget and the ``remedy``."""
    budget = memory_budget() if budget is None else budget
    if not fits(needed, budget):
        need, have = gigabytes(needed, budget)
        raise TooLarge(f"{what} (~{need} GB), more than the {have} GB simnet may use here "
                       f"(SIMNET_MEMORY; default 80% of the free memory): {remedy}", needed, budget, what)


def gigabytes(needed: float, budget: float) -> tuple[str, str]:
    """``needed`` and ``budget`` bytes in GB, to three significant digits or as many more as
    tell them apart (``(~0.21 GB), more than the 0.21 GB`` would say nothing).

    >>> gigabytes(2.1e8, 2.097e8)
    ('0.21', '0.2097')
    >>> gigabytes(1.6e12, 1.2e12)  # no exponent
    ('1,600', '1,200')
    """
    for digits in range(3, 10):
        need, have = in_gb(needed, digits), in_gb(budget, digits)
        if need != have:
            return need, have
    return need, have


def in_gb(nbytes: float, digits: int = 3) -> str:
    """``nbytes`` in GB to ``digits`` significant digits, whole GB written out past them.

    >>> in_gb(2.097e8), in_gb(1.6e12)
    ('0.21', '1,600')
    """
    value = nbytes / 1e9
    return f"{value:,.0f}" if value >= 10 ** digits else f"{value:,.{digits}g}"


def fits(needed: float, budget: int | None = None) -> bool:
    """Whether ``needed`` bytes fit in ``budget`` (default: ``memory_budget()``)."""
    return needed <= (memory_budget() if budget is None else budget)
