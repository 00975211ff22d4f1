"""Faults as the network applies them: links whose capacity changes at a simulated time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simnet.engine.fluid import FluidNetwork
from simnet.topology.graph import PS_PER_SECOND, Topology

__all__ = ["Fault", "schedule_faults", "slowed_from_start", "capacity_from_start"]


@dataclass(frozen=True)
class Fault:
    """A resolved fault: from ``at`` (s) directed ``links`` run at ``factors`` x their
    capacity (0: down). ``what`` says it in words."""

    at: float
    links: np.ndarray
    factors: np.ndarray
    what: str
    index: int = 0  # its place in the list it came from

    @property
    def down(self) -> bool:
        return bool((self.factors == 0).all())


def schedule_faults(net: FluidNetwork, topology: Topology, faults: list[Fault]) -> None:
    """Apply each fault at its time (those at 0 now): capacities relative to the run's own
    (a model's effective rates), routes around every link down so far."""
    base = net.capacity.copy()
    factor = np.ones(len(base))

    def apply(fault: Fault) -> None:
        factor[fault.links] = np.where(factor[fault.links] == 0, 0.0, fault.factors)  # down stays down
        view = topology.without(set(np.flatnonzero(factor == 0).tolist()))
        net.set_capacity(fault.links, base[fault.links] * factor[fault.links], view)

    for fault in faults:
        at = round(fault.at * PS_PER_SECOND)
        if at == 0:
            apply(fault)
        else:
            net.env.timeout(at).callbacks.append(lambda event, fault=fault: apply(fault))


def slowed_from_start(faults: list[Fault]) -> bool:
    """Whether every fault applies from time 0 and takes no link down: the run is then the
    healthy network at lower capacities from start to end (no route moves, nothing changes
    while flows run), which replays as any network does."""
    return all(round(fault.at * PS_PER_SECOND) == 0 and not (fault.factors == 0).any() for fault in faults)


def capacity_from_start(capacity: np.ndarray, faults: list[Fault]) -> np.ndarray:
    """The capacities (B/s per directed link) in force from time 0 under ``faults`` that all
    apply then (``slowed_from_start``): each link at its fault's factor of ``capacity``, the
    run's own, as ``schedule_faults`` sets it."""
    slowed = np.array(capacity, dtype=float)
    for fault in faults:
        slowed[fault.links] = capacity[fault.links] * fault.factors
    return slowed
