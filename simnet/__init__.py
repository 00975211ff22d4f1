"""simnet: predict AllReduce time, bus bandwidth and link saturation on a GPU cluster.

The data flows one way: YAML -> ``Topology`` -> an algorithm's ``Schedule`` -> replay on
the fluid network -> ``Result`` -> report/CLI.
"""

__version__ = "0.1.0"

from simnet.errors import InputError
from simnet.topology import Topology, load_topology, topology_from_dict

__all__ = ["InputError", "Topology", "load_topology", "topology_from_dict", "__version__"]
