"""Faults as the network applies them: links whose capacity changes at a simulated time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from simnet.errors import Cut
from simnet.topology.graph import PS_PER_SECOND, Topology

if TYPE_CHECKING:  # a fault is applied to a fluid network, but lanes read faults without one
    from simnet.engine.fluid import FluidNetwork

__all__ = ["Fault", "fault_marks", "schedule_faults", "capacity_regimes", "capacity_changes", "over_before_the_cut"]


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

    @property
    def cuts(self) -> bool:
        """Whether it takes some link down (routes may move around it)."""
        return bool((self.factors == 0).any())


def fault_marks(faults: list[Fault]) -> dict[int, tuple]:
    """What ``faults`` do to each directed link they touch, as ``Topology.marked`` takes it:
    the (ps, share of capacity) of every change, in time order. Two links alike but for their
    faults are then told apart by the faults, whatever their ends are named.

    >>> fault = Fault(1e-6, np.array([3, 4]), np.array([0.25, 0.25]), "link a-b at 25%")
    >>> fault_marks([fault])
    {3: ((1000000, 0.25),), 4: ((1000000, 0.25),)}
    """
    marks: dict[int, tuple] = {}
    for fault in sorted(faults, key=lambda f: f.at):
        for link, factor in zip(fault.links.tolist(), fault.factors.tolist()):
            marks[link] = (*marks.get(link, ()), (round(fault.at * PS_PER_SECOND), factor))
    return marks


Answer = TypeVar("Answer")


def over_before_the_cut(replay: Callable[[list[Fault]], Answer], faults: list[Fault],
                        end_ps: Callable[[Answer], int]) -> Answer:
    """``replay(faults)``; where a fault leaves a route none (``Cut``) at an instant the run
    without the faults from that instant on has ended by (``end_ps`` of its answer), that
    answer: those faults came after the end and changed nothing (the engines apply a fault
    at its instant whether anything is left to send or not). Else the ``Cut``."""
    try:
        return replay(faults)
    except Cut as cut:
        answer = replay([fault for fault in faults if round(fault.at * PS_PER_SECOND) < cut.at_ps])
        if end_ps(answer) > cut.at_ps:
            raise cut from None
        return answer


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


def capacity_regimes(capacity: np.ndarray, faults: list[Fault]) -> tuple[np.ndarray, np.ndarray]:
    """(instants, capacities) under ``faults``: from each of the increasing ``instants``
    (int64 ps, the first 0) every directed link runs at that row of ``capacities`` (B/s,
    regimes x links): each fault's factor of ``capacity`` (the run's own) from its time on,
    a later fault of a link replacing an earlier one unless that one took it down (down
    stays down), faults at one instant applied in their list's order, as
    ``schedule_faults`` sets them.

    >>> from simnet.engine.faults import Fault
    >>> at, rows = capacity_regimes(np.array([10.0, 20.0]), [
    ...     Fault(2e-6, np.array([0]), np.array([0.5]), "a"), Fault(0.0, np.array([1]), np.array([0.25]), "b")])
    >>> at.tolist(), rows.tolist()
    ([0, 2000000], [[10.0, 5.0], [5.0, 5.0]])
    """
    base = np.asarray(capacity, dtype=float)
    factor = np.ones(len(base))
    instants, rows = [0], [base.copy()]
    for fault in sorted(faults, key=lambda fault: round(fault.at * PS_PER_SECOND)):
        at = round(fault.at * PS_PER_SECOND)
        factor[fault.links] = np.where(factor[fault.links] == 0, 0.0, fault.factors)
        if at == instants[-1]:
            rows[-1] = base * factor
        else:
            instants.append(at)
            rows.append(base * factor)
    return np.array(instants, dtype=np.int64), np.vstack(rows)


def capacity_changes(capacity: np.ndarray, faults: list[Fault]) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """``(ps, links, B/s)`` of each fault, in their list's order, as ``schedule_faults``
    sets them: from its time on (rounded to the ps), directed ``links`` run at its factors
    of ``capacity`` (the run's own), except that a link down stays down (0) once a fault
    applied earlier in time took it down.

    >>> from simnet.engine.faults import Fault
    >>> [(at, links.tolist(), rates.tolist()) for at, links, rates in capacity_changes(
    ...     np.array([10.0, 20.0]), [Fault(2e-6, np.array([1]), np.array([0.5]), "a"),
    ...                              Fault(1e-6, np.array([1]), np.array([0.0]), "b")])]
    [(2000000, [1], [0.0]), (1000000, [1], [0.0])]
    """
    base = np.asarray(capacity, dtype=float)
    factor = np.ones(len(base))
    changes: list = [None] * len(faults)
    at = [round(fault.at * PS_PER_SECOND) for fault in faults]
    for i in sorted(range(len(faults)), key=at.__getitem__):  # stable: as their instants apply them
        links = np.asarray(faults[i].links, dtype=np.int64)
        factor[links] = np.where(factor[links] == 0, 0.0, faults[i].factors)
        changes[i] = (at[i], links, base[links] * factor[links])
    return changes
