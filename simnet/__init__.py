"""simnet: predict AllReduce time, bus bandwidth and link saturation on a GPU cluster.

The data flows one way: YAML -> ``Topology`` -> an algorithm's ``Schedule`` -> replay on
the fluid network -> ``Result`` -> report/CLI. The API the CLI and notebooks share:

>>> import simnet
>>> topo = simnet.load_topology("topologies/dgx_h100.yaml")
>>> result = simnet.simulate(topo, "ring", 2**30)            # what nccl-tests would measure
>>> f"{result.busbw_GBps:.0f} GB/s, {result.protocol}"
'359 GB/s, Simple'
>>> f"{simnet.simulate(topo, 'ring', 2**30, model='ideal').busbw_GBps:.0f} GB/s"   # NVLink line rate
'448 GB/s'
"""

from simnet.errors import InputError
from simnet.result import Result, Results
from simnet.runner import run_scenario, simulate
from simnet.scenario import Scenario, load_scenario
from simnet.topology import Topology, load_topology, topology_from_dict
from simnet.version import __version__

__all__ = ["InputError", "Result", "Results", "Scenario", "Topology", "load_scenario", "load_topology",
           "run_scenario", "simulate", "topology_from_dict", "__version__"]
