"""Collectives (AllReduce first) as schedules, their registry, the replay and the numpy check."""

# each module registers its algorithms; registry.LISTING orders them for `simnet algorithms`
from simnet.collectives import direct  # noqa: F401, I001
from simnet.collectives import ring  # noqa: F401
from simnet.collectives import tree  # noqa: F401
from simnet.collectives import innetwork  # noqa: F401
from simnet.collectives import recursive  # noqa: F401
from simnet.collectives import hierarchical  # noqa: F401
from simnet.collectives import gather  # noqa: F401
from simnet.collectives import rooted  # noqa: F401
from simnet.collectives import exchange  # noqa: F401
from simnet.collectives.kinds import COLLECTIVES, Collective
from simnet.collectives.registry import (ALGORITHMS, REGISTRY, Algorithm, algorithms_for, build_schedule,
                                        order_algorithms)
from simnet.collectives.replay import Replay, replay
from simnet.collectives.schedule import COPY, REDUCE, Schedule, ScheduleBuilder
from simnet.collectives.verify import AllReduceMismatch, CollectiveMismatch, check_allreduce, check_collective

order_algorithms()

__all__ = ["ALGORITHMS", "REGISTRY", "COLLECTIVES", "Algorithm", "AllReduceMismatch", "Collective",
           "CollectiveMismatch", "COPY", "REDUCE", "Replay", "Schedule", "ScheduleBuilder", "algorithms_for",
           "build_schedule", "check_allreduce", "check_collective", "replay"]
