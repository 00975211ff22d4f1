"""The public algorithm names (`simnet algorithms`) and the options each one understands.

An algorithm is a plain function ``(topology, ranks, size, **options) -> Schedule``,
registered with a one-line description and its contention-free closed form.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from simnet.collectives.schedule import Schedule
from simnet.topology.model import Topology

__all__ = ["Algorithm", "ALGORITHMS", "LISTING", "register", "build_schedule", "chunk_count", "COMMON_OPTIONS",
           "order_algorithms"]

COMMON_OPTIONS = ("reduce_bandwidth", "message_overhead")
"""Options every algorithm accepts; the replay, not the schedule, applies them."""


@dataclass(frozen=True)
class Algorithm:
    """A registered AllReduce algorithm."""

    name: str
    build: Callable[..., Schedule]
    description: str
    closed_form: str
    options: tuple[str, ...]


ALGORITHMS: dict[str, Algorithm] = {}

LISTING = ("ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain", "hierarchical", "halving_doubling",
           "recursive_doubling", "direct", "binary_tree", "double_binary_tree", "naive", "ps")
"""NCCL's algorithms first, then the textbook ones, then the architectures a person picks."""


def order_algorithms() -> None:
    """Reorder ``ALGORITHMS`` as ``LISTING`` (any others after, as registered)."""
    ordered = {name: ALGORITHMS[name] for name in LISTING if name in ALGORITHMS}
    ordered.update({k: v for k, v in ALGORITHMS.items() if k not in ordered})
    ALGORITHMS.clear()
    ALGORITHMS.update(ordered)


def register(name: str, description: str, closed_form: str, options: tuple[str, ...] = ()):
    """Decorator: publish ``fn`` under ``name``."""

    def decorate(fn: Callable[..., Schedule]) -> Callable[..., Schedule]:
        ALGORITHMS[name] = Algorithm(name, fn, description, closed_form, options)
        return fn

    return decorate


def chunk_count(nbytes: int, chunk_size: int | None) -> int:
    """Pipeline pieces for ``nbytes`` with pieces of at most ``chunk_size`` bytes (>= 1)."""
    if not chunk_size or nbytes <= chunk_size:
        return 1
    return math.ceil(nbytes / chunk_size)


def build_schedule(name: str, topology: Topology, size: int, ranks: list[str] | None = None,
                   **options) -> Schedule:
    """The schedule of algorithm ``name`` for ``size`` bytes over ``ranks`` (default: all GPUs).

    Options an algorithm does not use are ignored, so one option set serves a list of
    algorithms; an option no algorithm knows is refused.
    """
    from simnet import collectives  # noqa: F401  (registers the algorithms)

    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; expected one of {', '.join(ALGORITHMS)}")
    known = set(COMMON_OPTIONS).union(*(a.options for a in ALGORITHMS.values()))
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r}; expected one of {', '.join(sorted(known))}")
    if size < 0:
        raise ValueError("size must not be negative")
    algorithm = ALGORITHMS[name]
    mine = {k: v for k, v in options.items() if k in algorithm.options and v is not None}
    _check_pieces(name, int(size), mine.get("chunk_size"))
    return algorithm.build(topology, list(ranks or topology.gpus), int(size), **mine)


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
