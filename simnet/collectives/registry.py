"""The public algorithm names (`simnet algorithms`) and the options each one understands.

An algorithm is a plain function ``(topology, ranks, size, **options) -> Schedule``,
registered for one collective (``simnet.collectives.kinds``) with a one-line description
and its contention-free closed form. ``ALGORITHMS`` are AllReduce's; ``REGISTRY`` holds
every collective's, by collective then name.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from simnet.collectives.kinds import ALLREDUCE, COLLECTIVES, collective
from simnet.collectives.lanes import LaneProgram
from simnet.collectives.schedule import Schedule
from simnet.topology.model import Topology

__all__ = ["Algorithm", "ALGORITHMS", "REGISTRY", "LISTING", "register", "build_schedule", "build_program",
           "chunk_count", "COMMON_OPTIONS", "ENGINE_OPTIONS", "order_algorithms", "algorithms_for", "Unsupported"]


class Unsupported(ValueError):
    """The topology lacks what an algorithm needs (an NVLS switch, SHARP switches, a second
    host): the algorithm does not apply here, whatever its options."""


ENGINE_OPTIONS = ("reduce_bandwidth", "message_overhead")
"""Options the replay, not the schedule, applies."""
COMMON_OPTIONS = (*ENGINE_OPTIONS, "exact")
"""Options every algorithm accepts: the engine's, and ``exact`` (never bound a run from
above: replay a ring too large to replay exactly on the fluid network however long it
takes; see ``simnet.collectives.lanes.MAX_EXACT``)."""


@dataclass(frozen=True)
class Algorithm:
    """A registered algorithm of one collective."""

    name: str
    build: Callable[..., Schedule]
    description: str
    closed_form: str
    options: tuple[str, ...]
    collective: str = ALLREDUCE
    program: Callable[..., LaneProgram] | None = None  # the same algorithm as a LaneProgram, when it is one


REGISTRY: dict[str, dict[str, Algorithm]] = {name: {} for name in COLLECTIVES}
ALGORITHMS: dict[str, Algorithm] = REGISTRY[ALLREDUCE]

LISTING = ("ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain", "pat", "hierarchical",
           "halving_doubling", "recursive_doubling", "direct", "pairwise", "binary_tree", "double_binary_tree", "naive",
           "ps")
"""NCCL's algorithms first, then the textbook ones, then the architectures a person picks."""


def order_algorithms() -> None:
    """Reorder every collective's algorithms as ``LISTING`` (any others after, as registered)."""
    for table in REGISTRY.values():
        ordered = {name: table[name] for name in LISTING if name in table}
        ordered.update({k: v for k, v in table.items() if k not in ordered})
        table.clear()
        table.update(ordered)


def algorithms_for(name: str) -> dict[str, Algorithm]:
    """The algorithms of collective ``name`` (``ValueError`` for an unknown collective)."""
    from simnet import collectives  # noqa: F401  (registers the algorithms)

    return REGISTRY[collective(name).name]


def register(name: str, description: str, closed_form: str, options: tuple[str, ...] = (),
             collective: str = ALLREDUCE, program: Callable[..., LaneProgram] | None = None):
    """Decorator: publish ``fn`` under ``name`` for ``collective``; ``program`` builds the
    same algorithm as a ``LaneProgram`` (same arguments), which ``fn`` expands."""

    def decorate(fn: Callable[..., Schedule]) -> Callable[..., Schedule]:
        REGISTRY[collective][name] = Algorithm(name, fn, description, closed_form, options, collective, program)
        return fn

    return decorate


def chunk_count(nbytes: int, chunk_size: int | None) -> int:
    """Pipeline pieces for ``nbytes`` with pieces of at most ``chunk_size`` bytes (>= 1)."""
    if not chunk_size or nbytes <= chunk_size:
        return 1
    return math.ceil(nbytes / chunk_size)


def build_schedule(name: str, topology: Topology, size: int, ranks: list[str] | None = None,
                   collective: str = ALLREDUCE, **options) -> Schedule:
    """The schedule of ``collective``'s algorithm ``name`` for ``size`` bytes (in nccl-tests'
    convention for the collective) over ``ranks`` (default: all GPUs).

    Options an algorithm does not use are ignored, so one option set serves a list of
    algorithms; an option no algorithm knows is refused.
    """
    algorithm, mine = _resolve(name, size, collective, options)
    return algorithm.build(topology, list(ranks or topology.gpus), int(size), **mine)


def build_program(name: str, topology: Topology, size: int, ranks: list[str] | None = None,
                  collective: str = ALLREDUCE, **options) -> LaneProgram | None:
    """``build_schedule``'s algorithm as a ``LaneProgram`` (``simnet.collectives.lanes``), or
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
    from simnet import units
    from simnet.budget import check_fits
    from simnet.collectives.schedule import transfer_bytes

    if chunk_size:
        pieces = size // chunk_size
        check_fits(pieces * transfer_bytes(name), f"{name}: chunk_size {units.format_size(chunk_size)} cuts "
                   f"{units.format_size(size)} into {pieces:,} pieces, each a transfer at least",
                   "use a larger chunk_size")
