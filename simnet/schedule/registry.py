"""The public algorithm names (`simnet algorithms`) and the options each one understands.

An algorithm is a plain function ``(topology, ranks, size, **options) -> Schedule``,
registered for one collective (``simnet.schedule.kinds``) with a one-line description
and its contention-free closed form. ``ALGORITHMS`` are AllReduce's; ``REGISTRY`` holds
every collective's, by collective then name.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from simnet.schedule.kinds import ALLREDUCE, COLLECTIVES
from simnet.schedule.lanes import LaneProgram
from simnet.schedule.transfers import Schedule

__all__ = ["Algorithm", "ALGORITHMS", "REGISTRY", "LISTING", "register", "chunk_count", "COMMON_OPTIONS",
           "ENGINE_OPTIONS", "MODEL_OPTIONS", "order_algorithms", "common_options"]


ENGINE_OPTIONS = ("reduce_bandwidth", "message_overhead")
"""Options the replay, not the schedule, applies."""
COMMON_OPTIONS = (*ENGINE_OPTIONS, "exact")
"""Options every algorithm accepts: the engine's, and ``exact`` (never bound a run from
above: replay a ring too large to replay exactly on the fluid network however long it
takes; see ``simnet.engine.lanes.MAX_EXACT``)."""


def common_options(collective: str) -> tuple[str, ...]:
    """The ``COMMON_OPTIONS`` every algorithm of ``collective`` takes: ``reduce_bandwidth``
    only where it sums buffers (an AllGather's or a Broadcast's schedule has no reduction to
    time)."""
    reduces = COLLECTIVES[collective].reduces
    return tuple(option for option in COMMON_OPTIONS if reduces or option != "reduce_bandwidth")


MODEL_OPTIONS = ("send_channels", "wrap", "back")
"""Options simnet fills itself and no scenario gives: ``send_channels``, the channels NCCL
splits each of its send/recv's sends over (``simnet.tuning.enqueue.send_channels``);
``wrap``, whether SendRecv's last rank sends to the first (a training step's pipeline: not),
and ``back``, whether each rank sends to the previous instead (its gradients)."""


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
    lays_out_nics: bool = False  # its builder lays its sends over NICs, a plugin's stripes too, itself
    sums_in_switch: bool = False  # every sum is the switch's (NVLS): no GPU reduction for reduce_bandwidth to time

    @property
    def stripes(self) -> bool:
        """Whether its schedules stripe sends over a network plugin's NIC groups already: a
        lane program's channels (``channels.channel_groups``) or a builder that lays them out
        (``lays_out_nics``); the others' are striped after building (``channels.stripe_sends``)."""
        return self.program is not None or self.lays_out_nics


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


def register(name: str, description: str, closed_form: str, options: tuple[str, ...] = (),
             collective: str = ALLREDUCE, program: Callable[..., LaneProgram] | None = None,
             lays_out_nics: bool = False, sums_in_switch: bool = False):
    """Decorator: publish ``fn`` under ``name`` for ``collective``; ``program`` builds the
    same algorithm as a ``LaneProgram`` (same arguments), which ``fn`` expands;
    ``lays_out_nics``: ``fn`` lays its sends over NICs, a plugin's stripes too, itself;
    ``sums_in_switch``: every sum it makes is a switch's (its ``REDUCE`` transfers all go
    into one, ``transfers.summed_at``)."""

    def decorate(fn: Callable[..., Schedule]) -> Callable[..., Schedule]:
        REGISTRY[collective][name] = Algorithm(name, fn, description, closed_form, options, collective, program,
                                               lays_out_nics, sums_in_switch)
        return fn

    return decorate


def chunk_count(nbytes: int, chunk_size: int | None) -> int:
    """Pipeline pieces for ``nbytes`` with pieces of at most ``chunk_size`` bytes (>= 1)."""
    if not chunk_size or nbytes <= chunk_size:
        return 1
    return math.ceil(nbytes / chunk_size)


