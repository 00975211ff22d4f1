"""The algorithms, one module per family; importing this package registers them all.

Each module registers its algorithms with ``simnet.schedule.registry.register``;
``registry.LISTING`` orders them for ``simnet algorithms``.
"""

from simnet.schedule.algorithms import direct  # noqa: F401, I001
from simnet.schedule.algorithms import ring  # noqa: F401
from simnet.schedule.algorithms import tree  # noqa: F401
from simnet.schedule.algorithms import innetwork  # noqa: F401
from simnet.schedule.algorithms import recursive  # noqa: F401
from simnet.schedule.algorithms import hierarchical  # noqa: F401
from simnet.schedule.algorithms import gather  # noqa: F401
from simnet.schedule.algorithms import rooted  # noqa: F401
from simnet.schedule.algorithms import exchange  # noqa: F401
from simnet.schedule.registry import order_algorithms

order_algorithms()
