"""The flow-level network: max-min fair sharing on SimPy, and per-link accounting."""

from simnet.network.accounting import LinkStats
from simnet.network.fluid import FlowListener, FluidNetwork
from simnet.network.maxmin import max_min_rates

__all__ = ["FluidNetwork", "FlowListener", "LinkStats", "max_min_rates"]
