"""Every registered algorithm, looked up and built: the schedule of a collective by name.

``ALGORITHMS`` (AllReduce's) and ``REGISTRY`` (every collective's) are the registry's tables,
filled: importing this module imports every algorithm module.
"""

from __future__ import annotations

from simnet import units
from simnet.io.budget import check_fits
from simnet.schedule import algorithms  # noqa: F401  (each module registers its algorithms)
from simnet.schedule.channels import stripe_sends
from simnet.schedule.kinds import ALLREDUCE, collective
from simnet.schedule.lanes import LaneProgram
from simnet.schedule.registry import ALGORITHMS, COMMON_OPTIONS, REGISTRY, Algorithm
from simnet.schedule.transfers import Schedule, transfer_bytes
from simnet.topology.graph import Topology

__all__ = ["ALGORITHMS", "REGISTRY", "algorithms_for", "build_schedule", "build_program"]


def algorithms_for(name: str) -> dict[str, Algorithm]:
    """The algorithms of collective ``name`` (``ValueError`` for an unknown collective)."""
    return REGISTRY[collective(name).name]


def build_schedule(name: str, topology: Topology, size: int, ranks: list[str] | None = None,
                   collective: str = ALLREDUCE, **options) -> Schedule:
    """The schedule of ``collective``'s algorithm ``name`` for ``size`` bytes (in nccl-tests'
    convention for the collective) over ``ranks`` (default: all GPUs), its sends across hosts
    striped over EFA's NIC groups as the network plugin stripes them (``stripe_sends``).

    Options an algorithm does not use are ignored, so one option set serves a list of
    algorithms; an option no algorithm knows is refused.
    """
    algorithm, mine = _resolve(name, size, collective, options)
    schedule = algorithm.build(topology, list(ranks or topology.gpus), int(size), **mine)
    return schedule if algorithm.stripes else stripe_sends(schedule, topology, int(size))


def build_program(name: str, topology: Topology, size: int, ranks: list[str] | None = None,
                  collective: str = ALLREDUCE, **options) -> LaneProgram | None:
    """``build_schedule``'s algorithm as a ``LaneProgram`` (``simnet.engine.lanes``), or
    None when it is not one. Nothing is expanded: a program costs memory per lane only."""
    algorithm, mine = _resolve(name, size, collective, options)
    if algorithm.program is None:
        return None
    return algorithm.program(topology, list(ranks or topology.gpus), int(size), **mine)


def _resolve(name: str, size: int, collective: str, options: dict) -> tuple[Algorithm, dict]:
    """The registered algorithm and the options it takes (refusing unknown names and
    options, and a chunk size whose pieces alone would not fit in memory expanded)."""
    table = algorithms_for(collective)
    if name not in table:
        raise ValueError(f"unknown algorithm {name!r} for {collective}; expected one of {', '.join(table)}")
    known = set(COMMON_OPTIONS).union(*(a.options for t in REGISTRY.values() for a in t.values()))
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r}; expected one of {', '.join(sorted(known))}")
    if size < 0:
        raise ValueError("size must not be negative")
    algorithm = table[name]
    mine = {k: v for k, v in options.items() if k in algorithm.options and v is not None}
    _check_pieces(name, int(size), mine.get("chunk_size"))
    return algorithm, mine


def _check_pieces(name: str, size: int, chunk_size: int | None) -> None:
    """Every piece of a chunked buffer is at least one transfer: refuse (``TooLarge``)
    before building when that floor alone would not fit the memory budget."""
    if chunk_size:
        pieces = size // chunk_size
        check_fits(pieces * transfer_bytes(name), f"{name}: chunk_size {units.format_size(chunk_size)} cuts "
                   f"{units.format_size(size)} into {pieces:,} pieces, each a transfer at least",
                   "use a larger chunk_size")
