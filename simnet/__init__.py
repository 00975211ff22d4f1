"""simnet: predict AllReduce time, bus bandwidth and link saturation on a GPU cluster.

The data flows one way: YAML -> ``Topology`` -> an algorithm's ``Schedule`` -> replay on
the fluid network -> ``Result`` -> report/CLI. The API the CLI and notebooks share:

>>> import simnet
>>> topo = simnet.load_topology("topologies/dgx_h100.yaml")
>>> result = simnet.simulate(topo, "ring", 2**30)            # what nccl-tests would measure
>>> f"{result.busbw_GBps:.0f} GB/s, {result.protocol}"
'359 GB/s, Simple'
>>> f"{simnet.simulate(topo, 'ring', 2**30, model='ideal').busbw_GBps:.0f} GB/s"   # NVLink line rate
'449 GB/s'

The names load on first use (PEP 562), so ``import simnet.units`` loads no simulation code.
"""

from importlib import import_module

from simnet.version import __version__

_API = {
    "InputError": "simnet.errors",
    "Result": "simnet.results.result",
    "Results": "simnet.results.result",
    "run_scenario": "simnet.run.scenario",
    "simulate": "simnet.run.simulate",
    "Scenario": "simnet.spec.scenario",
    "load_scenario": "simnet.spec.scenario",
    "Topology": "simnet.topology.graph",
    "load_topology": "simnet.topology.loader",
    "topology_from_dict": "simnet.topology.loader",
}

__all__ = [*_API, "__version__"]


def __getattr__(name: str):
    if name in _API:
        value = getattr(import_module(_API[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'simnet' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
