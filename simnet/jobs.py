"""Many jobs on one fabric: each job's collectives alone and together, and who slows whom.

A scenario's ``jobs:`` places each job on GPUs (named, by host, or a count placed
``packed``, ``spread`` over racks and hosts, or ``random(seed)``), gives it an AllReduce
(algorithm, size) that it repeats (``repeat`` times, every ``period`` or back to back),
and ``run_jobs`` replays them on one fluid network, where their flows share every link
max-min fairly. Each job is also run alone, and every pair together, for the
interference matrix: entry [a][b] is a's mean AllReduce time next to b over its time alone.

>>> from simnet.topology import topology_from_dict
>>> topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2,
...                                                      "gpus_per_host": 2, "spines": 1}})
>>> place_jobs(topo, [{"name": "a", "gpus": 4, "placement": "spread", "size": "1 MiB"},
...                   {"name": "b", "gpus": 2, "size": "1 MiB"}])
[['r0h0-gpu0', 'r0h1-gpu0', 'r1h0-gpu0', 'r1h1-gpu0'], ['r0h0-gpu1', 'r0h1-gpu1']]
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, field_validator, model_validator

from simnet.collectives import ALGORITHMS, build_schedule
from simnet.collectives.replay import JobRun, Timing, replay_jobs
from simnet.collectives.schedule import COPY, Schedule, ScheduleBuilder
from simnet.errors import SpecError
from simnet.model import plan as model_plan
from simnet.model import timing as model_timing
from simnet.model import tuning
from simnet.topology.model import PS_PER_SECOND, Topology
from simnet.topology.schema import Latency, Strict
from simnet.units import parse_share, parse_size

__all__ = ["JobSpec", "JobError", "place_jobs", "check_jobs", "run_jobs", "JobsResult", "MAX_JOBS"]

MAX_JOBS = 16
"""Most jobs in one scenario: the interference matrix runs every pair (n(n-1)/2 replays)."""

_RANDOM = re.compile(r"^random\((\d+)\)$")


class JobError(SpecError):
    """A job that does not fit the topology; ``loc`` is its place in the job list."""


def _share(value: Any) -> float:
    try:
        share = parse_share(value)
    except ValueError:
        share = 0.0
    if share <= 0:
        raise ValueError(f"{value!r} is not a load: give a share of each GPU's bandwidth, 0% < load <= 100%")
    return share


class BackgroundSpec(Strict):
    """Traffic that is not a collective: every ``period`` each GPU offers ``load`` of its
    route's bandwidth as a ``pattern``: ``uniform`` (to one partner drawn with ``seed``),
    ``all_to_all`` (to every other GPU) or ``incast`` (every GPU to one target drawn with ``seed``)."""

    pattern: Literal["uniform", "all_to_all", "incast"]
    load: Annotated[float, BeforeValidator(_share)]
    seed: Annotated[int, Field(ge=0, strict=True)] = 0


class JobSpec(Strict):
    """One job: where it runs, what it AllReduces (or the background traffic it makes),
    when and how often. A background job runs on every GPU no other job holds unless told
    where, every ``period`` (1 ms by default) for as long as the other jobs run."""

    name: Annotated[str, Field(min_length=1)]
    gpus: Annotated[int, Field(ge=2, strict=True)] | list[str] | None = None
    hosts: list[str] | None = None
    placement: str = "packed"  # for a GPU count: packed, spread or random(seed)
    algorithm: str = "auto"
    size: Annotated[int, Field(ge=1)] | None = None
    start: Latency = 0.0
    repeat: Annotated[int, Field(ge=1, le=10_000, strict=True)] = 1
    period: Latency | None = None
    background: BackgroundSpec | None = None

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        return parse_size(value)

    @field_validator("algorithm")
    @classmethod
    def _known(cls, value: str) -> str:
        if value != "auto" and value not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {value!r}; expected {', '.join(ALGORITHMS)} or auto")
        return value

    @model_validator(mode="after")
    def _where(self) -> JobSpec:
        if self.background is not None:
            if self.size is not None or self.algorithm != "auto" or "repeat" in self.model_fields_set:
                raise ValueError("a background job makes its own traffic: no size, algorithm or repeat")
            if self.gpus is not None and self.hosts is not None:
                raise ValueError("give gpus or hosts, not both")
            return self
        if self.size is None:
            raise ValueError("give size (what the job AllReduces), or background: {pattern, load}")
        if (self.gpus is None) == (self.hosts is None):
            raise ValueError("give gpus (a count or a list of GPU ids) or hosts (a list of host labels)")
        if self.placement not in ("packed", "spread") and not _RANDOM.match(self.placement):
            raise ValueError(f"placement {self.placement!r}: expected packed, spread or random(seed)")
        if self.placement != "packed" and not isinstance(self.gpus, int):
            raise ValueError("placement chooses GPUs for a count (gpus: 16); named GPUs and hosts are placed already")
        return self


def _spread_order(topology: Topology, free: list[str]) -> list[str]:
    """Free GPUs taking turns across racks, then across the hosts of a rack."""
    racks: dict[str, dict[str, list[str]]] = {}
    for gpu in free:
        racks.setdefault(topology.label(gpu, "rack"), {}).setdefault(topology.label(gpu, "host"), []).append(gpu)
    return _interleave([_interleave(list(hosts.values())) for hosts in racks.values()])


def _interleave(lists: list[list[str]]) -> list[str]:
    out = []
    for i in range(max((len(x) for x in lists), default=0)):
        out += [x[i] for x in lists if i < len(x)]
    return out


def place_jobs(topology: Topology, specs: list[dict | JobSpec]) -> list[list[str]]:
    """Each job's GPUs in rank order, placed in list order on GPUs no earlier job holds."""
    specs = [raw if isinstance(raw, JobSpec) else JobSpec.model_validate(raw) for raw in specs]
    taken: dict[str, str] = {}
    placed: dict[int, list[str]] = {}
    leftover = [i for i, spec in enumerate(specs) if spec.background and spec.gpus is None and spec.hosts is None]
    for i in [i for i in range(len(specs)) if i not in leftover] + leftover:
        spec = specs[i]
        free = [g for g in topology.gpus if g not in taken]
        if i in leftover:
            gpus = free
        elif isinstance(spec.gpus, int):
            if spec.gpus > len(free):
                raise JobError((i, "gpus"), f"{spec.gpus} GPUs asked, {len(free)} of {len(topology.gpus)} are free")
            if spec.placement == "packed":
                gpus = free[: spec.gpus]
            elif spec.placement == "spread":
                gpus = _spread_order(topology, free)[: spec.gpus]
            else:
                rng = np.random.default_rng(int(_RANDOM.match(spec.placement).group(1)))
                gpus = [free[k] for k in sorted(rng.choice(len(free), spec.gpus, replace=False).tolist())]
        elif spec.hosts is not None:
            hosts = topology.groups("host")
            for host in spec.hosts:
                if host not in hosts:
                    raise JobError((i, "hosts"), f"no host {host!r} with GPUs in {topology.name}")
            gpus = [g for host in spec.hosts for g in hosts[host]]
        else:
            for gpu in spec.gpus:
                if gpu not in topology.node_index or topology.kind(gpu) != "gpu":
                    raise JobError((i, "gpus"), f"{gpu!r} is not a GPU of {topology.name}")
            gpus = list(spec.gpus)
        for gpu in gpus:
            if gpu in taken:
                raise JobError((i,), f"{gpu} already belongs to job {taken[gpu]!r}; jobs may not share a GPU")
        if len(set(gpus)) < 2:
            raise JobError((i,), "a job needs at least 2 GPUs to exchange anything" if i not in leftover else
                           f"fewer than 2 GPUs are left for background job {spec.name!r}; give it gpus or hosts")
        taken.update({g: spec.name for g in gpus})
        placed[i] = sorted(set(gpus), key=topology.node_index.__getitem__)
    return [placed[i] for i in range(len(specs))]


@dataclass
class JobsResult:
    """Per job: its placement, algorithm and AllReduce times alone and together (s); the
    interference matrix (job -> other job -> slowdown); the links jobs fought over."""

    jobs: list[dict]
    interference: dict[str, dict[str, float]]
    shared_links: list[dict]
    together: Any = field(default=None, repr=False)  # the shared run's LinkStats

    def to_dict(self) -> dict:
        return {"jobs": self.jobs, "interference": self.interference, "shared_links": self.shared_links}


def _mean_time(runs: list[tuple[int, int]]) -> float:
    return float(np.mean([end - start for start, end in runs])) / PS_PER_SECOND


def run_jobs(topology: Topology, specs: list[dict | JobSpec], *, model: str = "nccl",
             env: Mapping[str, str] | None = None, calibration=None) -> JobsResult:
    """Replay every job alone, every pair together and all together on ``topology``.

    ``model``, ``env`` (NCCL_ALGO / NCCL_PROTO) and ``calibration`` (a profile or its path;
    default: the topology's) as for ``simulate``. With a calibration whose bandwidth
    depends on size, the fabric runs at the first job's rates.
    """
    from simnet.runner import _calibration, nccl_env, nccl_system

    env = nccl_env(env)
    calibration = _calibration(calibration if calibration is not None else topology.calibration)
    specs = [s if isinstance(s, JobSpec) else JobSpec.model_validate(s) for s in specs]
    placements = place_jobs(topology, specs)
    runs, described, capacity = [], [], None
    for spec, gpus in zip(specs, placements):
        sub = topology.subset(gpus)
        if spec.background is not None:
            period = spec.period if spec.period is not None else BACKGROUND_PERIOD
            schedule = background_schedule(sub, spec.background, period)
            runs.append(JobRun(schedule, Timing(), round(spec.start * PS_PER_SECOND), 0, round(period * PS_PER_SECOND)))
            described.append({"name": spec.name, "gpus": len(gpus), "first_gpu": gpus[0],
                              "hosts": len({topology.label(g, "host") for g in gpus}),
                              "racks": len({topology.label(g, "rack") for g in gpus}),
                              "algorithm": f"background {spec.background.pattern}", "protocol": None,
                              "size_bytes": int(schedule.nbytes.sum()), "runs": None})
            continue
        algorithm = spec.algorithm
        if algorithm == "auto":
            choice = tuning.pick(nccl_system(sub, env), spec.size, env.get("NCCL_ALGO"), env.get("NCCL_PROTO"))
            algorithm = tuning.SIMNET_NAMES[choice.algorithm]
        decided = model_plan(model, sub, algorithm, spec.size, {}, ALGORITHMS[algorithm].options,
                             env.get("NCCL_PROTO"), calibration,
                             system=nccl_system(sub, env) if model == "nccl" else None)
        schedule = build_schedule(algorithm, sub, spec.size, **decided.options)
        timing = model_timing(decided, schedule, sub)
        capacity = timing.capacity if capacity is None else capacity
        runs.append(JobRun(schedule, timing, round(spec.start * PS_PER_SECOND), spec.repeat,
                           round((spec.period or 0.0) * PS_PER_SECOND)))
        described.append({"name": spec.name, "gpus": len(gpus), "first_gpu": gpus[0],
                          "hosts": len({topology.label(g, "host") for g in gpus}),
                          "racks": len({topology.label(g, "rack") for g in gpus}),
                          "algorithm": algorithm, "protocol": decided.protocol, "size_bytes": spec.size,
                          "runs": spec.repeat})
    alone, used = [], []
    for run in runs:
        times, stats = replay_jobs([run], topology, capacity=capacity)
        alone.append(_mean_time(times[0]))
        used.append(set(np.flatnonzero(stats.bytes > 0).tolist()))
    together_times, together = replay_jobs(runs, topology, capacity=capacity)
    names = [s.name for s in specs]
    matrix = {a: {b: 1.0 for b in names} for a in names}
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            if not used[i] & used[j]:
                continue  # no link in common: neither can slow the other
            times, _ = replay_jobs([runs[i], runs[j]], topology, capacity=capacity)
            matrix[names[i]][names[j]] = _mean_time(times[0]) / alone[i]
            matrix[names[j]][names[i]] = _mean_time(times[1]) / alone[j]
    for job, solo, times in zip(described, alone, together_times):
        job.update(alone_s=solo, together_s=_mean_time(times), slowdown=_mean_time(times) / solo,
                   finished_s=max(end for _, end in times) / PS_PER_SECOND)
        job["runs"] = job["runs"] or len(times)
    shared = []
    for link in sorted({link for i, a in enumerate(used) for b in used[i + 1:] for link in a & b},
                       key=lambda k: (-int(together.saturated_ps[k]), -float(together.bytes[k]), k))[:10]:
        holders = [names[i] for i, u in enumerate(used) if link in u]
        end = max(e for times in together_times for _, e in times)
        shared.append({"link": topology.link_name(link), "jobs": holders,
                       "saturated_fraction": int(together.saturated_ps[link]) / end if end else 0.0,
                       "bytes": float(together.bytes[link])})
    return JobsResult(described, matrix, shared, together)


BACKGROUND_PERIOD = 1e-3
"""How often a background job offers its load when the scenario does not say, s."""


def background_schedule(topology: Topology, spec: BackgroundSpec, period: float) -> Schedule:
    """One period of background traffic over ``topology``'s ranks: independent transfers,
    each ``load`` x its route's bottleneck bandwidth x ``period`` bytes (split over the
    destinations of all_to_all and incast, so a GPU or the incast target offers ``load``)."""
    gpus = topology.gpus
    n = len(gpus)
    rng = np.random.default_rng(spec.seed)
    if spec.pattern == "uniform":
        partner = (np.arange(n) + rng.integers(1, n, size=n)) % n  # never itself
        pairs, share = list(zip(range(n), partner.tolist())), 1.0
    elif spec.pattern == "all_to_all":
        pairs, share = [(i, j) for i in range(n) for j in range(n) if i != j], 1.0 / (n - 1)
    else:
        target = int(rng.integers(n))
        pairs, share = [(i, target) for i in range(n) if i != target], 1.0 / (n - 1)
    src = np.array([i for i, _ in pairs])
    dst = np.array([j for _, j in pairs])
    nbytes = np.array([max(1, round(spec.load * share * topology.path_bandwidth(gpus[i], gpus[j]) * period))
                       for i, j in pairs])
    builder = ScheduleBuilder("background", gpus, int(nbytes.max()))
    builder.add(src, dst, 0, nbytes, COPY)
    return builder.build()


def check_jobs(topology: Topology, specs: list[JobSpec]) -> None:
    """Raise ``JobError`` for a job that cannot be placed, or too many jobs."""
    if len(specs) > MAX_JOBS:
        raise JobError((MAX_JOBS,), f"{len(specs)} jobs; simnet runs every pair of them, at most {MAX_JOBS} jobs")
    names = [s.name for s in specs]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise JobError((i, "name"), f"{name!r} names two jobs")
    place_jobs(topology, specs)
