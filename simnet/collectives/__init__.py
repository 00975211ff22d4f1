"""AllReduce algorithms as schedules, their registry, the replay and the numpy check."""

# each module registers its algorithms; this order is the order `simnet algorithms` lists them in
from simnet.collectives import direct  # noqa: F401, I001
from simnet.collectives import ring  # noqa: F401
from simnet.collectives import tree  # noqa: F401
from simnet.collectives import recursive  # noqa: F401
from simnet.collectives import hierarchical  # noqa: F401
from simnet.collectives.registry import ALGORITHMS, Algorithm, build_schedule
from simnet.collectives.replay import Replay, replay
from simnet.collectives.schedule import COPY, REDUCE, Schedule, ScheduleBuilder
from simnet.collectives.verify import AllReduceMismatch, check_allreduce

__all__ = ["ALGORITHMS", "Algorithm", "AllReduceMismatch", "COPY", "REDUCE", "Replay", "Schedule",
           "ScheduleBuilder", "build_schedule", "check_allreduce", "replay"]
