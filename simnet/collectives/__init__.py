"""AllReduce algorithms as schedules, their registry, the replay and the numpy check."""

from simnet.collectives import direct, hierarchical, recursive, ring, tree  # noqa: F401  (registration)
from simnet.collectives.registry import ALGORITHMS, Algorithm, build_schedule
from simnet.collectives.replay import Replay, replay
from simnet.collectives.schedule import COPY, REDUCE, Schedule, ScheduleBuilder
from simnet.collectives.verify import AllReduceMismatch, check_allreduce

__all__ = ["ALGORITHMS", "Algorithm", "AllReduceMismatch", "COPY", "REDUCE", "Replay", "Schedule",
           "ScheduleBuilder", "build_schedule", "check_allreduce", "replay"]
