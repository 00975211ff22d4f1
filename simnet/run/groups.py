"""One collective run at once by many groups of GPUs on one fabric (the tensor-, pipeline- or
data-parallel groups of a training step), lane by lane when it can, else on the fluid network."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simnet.engine.lanes import replay_lanes, worth_replaying
from simnet.engine.replay import JobRun, replay_apart
from simnet.io.budget import check_fits, memory_budget
from simnet.model.calibration import Calibration
from simnet.model.interface import DEFAULT_MODEL, lane_timing
from simnet.model.timing import Timing
from simnet.results.result import Finding
from simnet.run.nccl_env import nccl_env
from simnet.run.point import Setup, calibration_of, factor_cut_by_the_wire
from simnet.schedule.catalog import build_program
from simnet.schedule.kinds import collective as lookup_collective
from simnet.schedule.lanes import merge_programs
from simnet.schedule.registry import COMMON_OPTIONS
from simnet.schedule.transfers import transfer_bytes
from simnet.topology.graph import PS_PER_SECOND, Topology
from simnet.topology.loader import load_topology

__all__ = ["GroupsResult", "simulate_groups"]


@dataclass(frozen=True)
class GroupsResult:
    """One collective run at once by several groups of GPUs sharing one fabric."""

    collective: str
    size_bytes: int
    algorithm: str  # what ran in the slowest group (NCCL's pick for it under auto)
    protocol: str | None
    times_s: list[float]  # per group, from the common start to its last delivery
    warnings: list[Finding] = field(default_factory=list)  # a calibration factor the wire cut short

    @property
    def time_s(self) -> float:
        """The slowest group's time (what a step that waits for all of them pays)."""
        return max(self.times_s, default=0.0)


def simulate_groups(topology: Topology | str | Path, groups: list[list[str]], collective: str, size: int, *,
                    algorithm: str = "auto", model: str = DEFAULT_MODEL, env: Mapping[str, str] | None = None,
                    calibration: Calibration | str | Path | None = None, options: dict | None = None) -> GroupsResult:
    """Every group in ``groups`` (lists of GPU ids, disjoint) runs ``collective`` of
    ``size`` bytes at the same time, their flows sharing every link max-min fairly (the
    tensor-parallel groups of a training step, say). ``algorithm="auto"`` runs what NCCL's
    model picks for each group, without simulating the alternatives; ``options`` go to every
    group's algorithm (its own options only: the engine's, ``reduce_bandwidth`` and the like,
    are refused).

    When every group's algorithm is a lane program (``simnet.engine.lanes``) they are
    replayed together lane by lane if no link can be shared beyond its capacity; otherwise
    on the fluid network, groups that share no link with each other apart and identical
    ones once (``replay_apart``)."""
    common = set(COMMON_OPTIONS) & set(options or {})
    if common:  # (the groups' replays take no engine options: they would change nothing, unsaid)
        raise ValueError(f"simulate_groups: {sorted(common)[0]} is not applied to groups; give it to simulate")
    topo = topology if isinstance(topology, Topology) else load_topology(topology)
    env = nccl_env(env)
    calibration = calibration_of(calibration, topo)
    name = lookup_collective(collective).name
    plans = []  # (group index, its point, algorithm, the model's plan)
    for i, gpus in enumerate(groups):
        point = Setup(topo.subset(list(gpus)), name, model, env, calibration)
        if len(gpus) < 2:
            continue
        chosen = point.nccl_pick(size) if algorithm == "auto" else algorithm
        plans.append((i, point, chosen, point.plan(chosen, int(size), dict(options or {}))))
    if not plans:
        return GroupsResult(collective, int(size), algorithm, None, [0.0] * len(groups))
    ran = _groups_by_lanes(plans, topo, int(size))
    if ran is None:
        ran = _groups_on_fluid(plans, topo, int(size), f"{collective} of {size:,} B by {len(groups):,} groups of "
                               f"{len(groups[plans[0][0]]):,} GPUs at once", options or {})
    ends, filled = ran
    times = [0.0] * len(groups)
    for (i, *_), end in zip(plans, ends):
        times[i] = end / PS_PER_SECOND
    # what ran where the time said (the slowest group's): groups of other shapes may run another pick
    _, point, slowest, decided = plans[max(range(len(plans)), key=lambda k: ends[k])]
    cut = factor_cut_by_the_wire(topo, calibration, int(size), filled, f"the {len(groups):,} groups' {collective}") \
        if calibration is not None and point.model != "ideal" else []
    return GroupsResult(collective, int(size), slowest, decided.protocol, times, cut)


def _groups_by_lanes(plans: list, topo: Topology, size: int) -> tuple[list[int], np.ndarray] | None:
    """Each group's completion (ps) with all of them replayed as one lane program, and which
    links filled (mask by link), or None
    when some group's algorithm is no lane program, the model rates links differently for
    different groups, or the lanes could share a link beyond its capacity."""
    programs, timings = [], []
    for _, point, chosen, decided in plans:
        program = build_program(chosen, point.topo, size, collective=point.collective, **decided.options)
        if program is None:
            return None
        programs.append(program)
        timings.append(lane_timing(decided, program, point.topo))
    first = timings[0]
    if any((t.capacity is None) != (first.capacity is None)
           or (t.capacity is not None and not np.array_equal(t.capacity, first.capacity)) for t in timings):
        return None
    merged = merge_programs(programs)
    if not worth_replaying(merged):
        return None

    def per_lane(field: str, missing: float) -> np.ndarray | None:
        if all(getattr(t, field) is None for t in timings):
            return None
        return np.concatenate([np.broadcast_to(missing if getattr(t, field) is None else getattr(t, field), (p.lanes,))
                               for p, t in zip(programs, timings)])

    timing = Timing(first.capacity, per_lane("wire_factor", 1.0), per_lane("rate_cap", np.inf),
                    per_lane("delay_ps", 0.0), per_lane("start_ps", 0))
    run = replay_lanes(merged, topo, timing)
    if run is None:
        return None
    bounds = np.cumsum([0] + [p.lanes for p in programs])
    return [int(run.lanes_done_ps[a:b].max(initial=0)) for a, b in zip(bounds[:-1], bounds[1:])], \
        run.stats.saturated_ps > 0


def _groups_on_fluid(plans: list, topo: Topology, size: int, what: str,
                     options: dict) -> tuple[list[int], np.ndarray]:
    """Each group's completion (ps), their schedules (``options`` given) replayed on the
    fluid network (``replay_apart``), and which links filled; refused when their schedules
    together would not fit in memory."""
    runs, held, budget = [], 0, memory_budget()
    for _, point, chosen, _ in plans:
        decided, schedule, timing = point.prepare(chosen, size, dict(options))
        held += len(schedule) * transfer_bytes(chosen)  # every group's schedule is held until they run together
        check_fits(held * len(plans) / (len(runs) + 1), what, "use fewer GPUs or fewer, larger groups", budget)
        runs.append(JobRun(schedule, timing))
    return replay_apart(runs, topo, capacity=runs[0].timing.capacity)
