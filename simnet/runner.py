"""Run points: ``simulate`` one collective, ``auto`` selection with ``NCCL_ALGO``, and
``run_scenario`` for every (size, algorithm) of a scenario (plus its training step).

>>> from simnet.topology import topology_from_dict
>>> topo = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8}})
>>> result = simulate(topo, "ring", 2**30)
>>> round(result.busbw_GBps)        # 450 GB/s NVLink per direction, less 14 steps of 1 us latency
448
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from simnet.analysis import find_warnings, link_reports
from simnet.collectives import ALGORITHMS, build_schedule, replay
from simnet.collectives.registry import COMMON_OPTIONS
from simnet.result import Result, Results
from simnet.topology.loader import load_topology
from simnet.topology.model import Topology

__all__ = ["simulate", "run_scenario", "AUTO_CANDIDATES", "nccl_algo_filter"]

AUTO_CANDIDATES = ("ring", "tree", "double_binary_tree", "halving_doubling", "recursive_doubling", "hierarchical")
"""What ``auto`` chooses among: the collective algorithms (a parameter server and naive
all-to-all are architectures a person picks, not a library's choice)."""


def nccl_algo_filter(candidates: list[str], value: str | None) -> list[str]:
    """Apply an ``NCCL_ALGO`` value: ``Ring``, ``ring,tree`` keep those; ``^ring`` drops them.

    Names are simnet's (``ring``, ``tree``, ``double_binary_tree``, ...), case-insensitive.

    >>> nccl_algo_filter(["ring", "tree", "hierarchical"], "^Ring")
    ['tree', 'hierarchical']
    >>> nccl_algo_filter(["ring", "tree"], "Tree")
    ['tree']
    """
    if not value or not value.strip():
        return list(candidates)
    text = value.strip()
    exclude = text.startswith("^")
    names = [t.strip().lower() for t in text.lstrip("^").split(",") if t.strip()]
    unknown = [n for n in names if n not in ALGORITHMS]
    if unknown:
        raise ValueError(f"NCCL_ALGO={value!r}: unknown algorithm {unknown[0]!r}; "
                         f"expected names from {', '.join(ALGORITHMS)}")
    chosen = [c for c in candidates if (c in names) != exclude]
    if not chosen:
        raise ValueError(f"NCCL_ALGO={value!r} leaves no algorithm to choose from")
    return chosen


def simulate(topology: Topology | str | Path, algorithm: str, size: int, *, gpus: int | list[str] | None = None,
             timeline: bool = False, **options) -> Result:
    """Simulate one AllReduce of ``size`` bytes; ``algorithm`` may be ``"auto"``.

    ``options`` are algorithm options and ``reduce_bandwidth`` (B/s) / ``message_overhead``
    (s). ``timeline=True`` keeps per-link load over time on ``result.replay.stats`` (for
    plots and traces). Over one GPU there is nothing to exchange: time 0, no links.
    """
    topo = topology if isinstance(topology, Topology) else load_topology(topology)
    topo = topo.subset(gpus)
    if algorithm == "auto":
        return _auto(topo, size, timeline, options)
    engine = {k: options[k] for k in COMMON_OPTIONS if options.get(k) is not None}
    schedule = build_schedule(algorithm, topo, size if len(topo.gpus) > 1 else 0, **options)
    run = replay(schedule, topo, timeline=timeline, **engine)
    links = link_reports(run)
    warnings = find_warnings(topo, links, run.time, algorithm, schedule.info.get("servers"))
    return Result(algorithm=algorithm, gpus=len(topo.gpus), size_bytes=int(size), time_s=run.time, links=links,
                  warnings=warnings, options=dict(options), replay=run)


def _auto(topo: Topology, size: int, timeline: bool, options: dict) -> Result:
    nccl_algo = os.environ.get("NCCL_ALGO")
    candidates = nccl_algo_filter(list(AUTO_CANDIDATES), nccl_algo)
    results = [simulate(topo, name, size, timeline=timeline, **options) for name in candidates]
    best = min(results, key=lambda r: r.time_s)
    best.auto = {"candidates": {r.algorithm: r.time_s for r in results}, "nccl_algo": nccl_algo or None}
    return best


def run_scenario(scenario, progress: Callable[[int, int], None] | None = None, timeline: bool = False) -> Results:
    """Simulate every (size, algorithm) of ``scenario``, in size-major order.

    ``timeline=True`` keeps link loads over time for the runs at the largest size (what
    plots and traces show). With a ``workload`` the result also holds one training-step
    summary per algorithm, from the AllReduce time of each gradient bucket size.
    """
    from simnet.workload import StepModel

    runs = []
    model = StepModel.from_workload(scenario.workload) if scenario.workload else None
    buckets = sorted(set(model.buckets())) if model else []
    total = (len(scenario.sizes) + len(buckets)) * len(scenario.algorithms)
    largest = max(scenario.sizes)
    for size in scenario.sizes:
        for algorithm in scenario.algorithms:
            runs.append(simulate(scenario.topology, algorithm, size, timeline=timeline and size == largest,
                                 **scenario.options))
            if progress:
                progress(len(runs), total)
    steps = []
    gpus = len(scenario.topology.gpus)
    for algorithm in scenario.algorithms if model else []:
        times = {}
        for size in buckets:
            times[size] = simulate(scenario.topology, algorithm, size, **scenario.options).time_s
            if progress:
                progress(len(runs) + len(steps) * len(buckets) + len(times), total)
        steps.append({"algorithm": algorithm, **model.summary(gpus, times)})
    return Results(scenario.name, runs, steps)
