"""AllReduce algorithms as schedules, their registry, the replay and the numpy check."""

# each module registers its algorithms; registry.LISTING orders them for `simnet algorithms`
from simnet.collectives import direct  # noqa: F401, I001
from simnet.collectives import ring  # noqa: F401
from simnet.collectives import tree  # noqa: F401
from simnet.collectives import innetwork  # noqa: F401
from simnet.collectives import recursive  # noqa: F401
from simnet.collectives import hierarchical  # noqa: F401
from simnet.collectives.registry import ALGORITHMS, Algorithm, build_schedule, order_algorithms
from simnet.collectives.replay import Replay, replay
from simnet.collectives.schedule import COPY, REDUCE, Schedule, ScheduleBuilder
from simnet.collectives.verify import AllReduceMismatch, check_allreduce

order_algorithms()

__all__ = ["ALGORITHMS", "Algorithm", "AllReduceMismatch", "COPY", "REDUCE", "Replay", "Schedule",
           "ScheduleBuilder", "build_schedule", "check_allreduce", "replay"]
