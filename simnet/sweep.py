"""Sweeps: a scenario over GPU counts and any dotted parameter, run on local processes or a
Dask cluster, each finished point appended to ``OUT/results.jsonl`` so that an interrupted
sweep resumes where it stopped.

A point is (overrides, GPU count, algorithm). Evaluating it simulates every size of the
scenario and, with a ``workload``, every gradient bucket size, giving the iteration time
and speedup of ``simnet.workload``. Points are plain data and ``evaluate_point`` is a
top-level function, so they travel to worker processes and Dask workers unchanged.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from simnet import __version__
from simnet.errors import InputError
from simnet.scenario import Scenario, scenario_from_dict
from simnet.yamlsource import Source

__all__ = ["Point", "SweepPlan", "plan_sweep", "evaluate_point", "run_sweep", "load_records", "apply_overrides",
           "LocalExecutor", "DaskExecutor", "RESULTS", "META"]

RESULTS = "results.jsonl"
META = "sweep.json"


def apply_overrides(document: dict, overrides: dict[str, Any], base: Path) -> dict:
    """A copy of a scenario document with dotted keys set (``topology.generate.racks: 4``).

    A topology given as a file path is inlined first, so its fields can be overridden too.
    """
    document = copy.deepcopy(document)
    for dotted, value in overrides.items():
        parts = dotted.split(".")
        if parts[0] == "topology" and isinstance(document.get("topology"), str) and len(parts) > 1:
            path = base / document["topology"]
            document["topology"] = yaml.safe_load(path.read_text())
        target = document
        for part in parts[:-1]:
            if not isinstance(target.get(part), dict):
                target[part] = {}
            target = target[part]
        target[parts[-1]] = value
    return document


@dataclass(frozen=True)
class Point:
    """One sweep point: dotted overrides, the GPU count (None: all) and the algorithm."""

    overrides: tuple[tuple[str, Any], ...]
    gpus: int | None
    algorithm: str

    @property
    def key(self) -> str:
        """A stable identity for resume: the same point always has the same key."""
        return json.dumps({"set": dict(self.overrides), "gpus": self.gpus, "algorithm": self.algorithm},
                          sort_keys=True, default=str)


@dataclass
class SweepPlan:
    """Everything a worker needs: the scenario document, where it lives, and the points."""

    document: dict
    base: str
    source: str
    points: list[Point]

    @property
    def fingerprint(self) -> str:
        """Hash of the scenario as simulated (topology files inlined, sweep axes excluded):
        a resumed sweep refuses to mix results of a changed scenario."""
        document = {k: v for k, v in self.document.items() if k != "sweep"}
        if isinstance(document.get("topology"), str):
            document["topology"] = yaml.safe_load((Path(self.base) / document["topology"]).read_text())
        return hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _values(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def plan_sweep(scenario: Scenario, gpus: list[int] | None = None, sets: dict[str, list[Any]] | None = None,
               algorithms: list[str] | None = None) -> SweepPlan:
    """The points of a sweep: the scenario's ``sweep:`` axes, overridden by ``gpus``/``sets``."""
    axes = {k: _values(v) for k, v in (scenario.sweep or {}).items()}
    axes.update({k: _values(v) for k, v in (sets or {}).items()})
    counts = gpus if gpus is not None else axes.pop("gpus", None)
    axes.pop("gpus", None)
    counts = [None] if counts is None else [int(c) for c in counts]
    names = list(axes)
    points = [Point(tuple(zip(names, combo)), count, algorithm)
              for combo in itertools.product(*(axes[n] for n in names))
              for count in counts
              for algorithm in (algorithms or scenario.algorithms)]
    base = str(Path(scenario.source).parent) if scenario.source and Path(scenario.source).exists() else "."
    return SweepPlan(scenario.data, base, scenario.source or "<scenario>", points)


def _grow(document: dict, gpus: int, base: Path) -> dict:
    """Scale a generated topology up to ``gpus`` generated GPUs (e.g. more racks); explicit
    topologies and generators that are already big enough stay as they are."""
    from simnet.topology.generators import GROWTH, GeneratorError, grown

    topology = document["topology"]
    if isinstance(topology, str):
        topology = yaml.safe_load((base / topology).read_text())
    generate = topology.get("generate") if isinstance(topology, dict) else None
    if not isinstance(generate, dict) or generate.get("kind") not in GROWTH:
        return document
    try:
        return {**document, "topology": {**topology, "generate": grown(generate, gpus)}}
    except (GeneratorError, ValueError):
        return document  # let the scenario's own validation report it


def _scenario_at(plan: SweepPlan, point: Point) -> Scenario:
    document = apply_overrides(plan.document, dict(point.overrides), Path(plan.base))
    if point.gpus is not None:
        document = _grow(document, point.gpus, Path(plan.base))
        document["gpus"] = point.gpus
    label = plan.source + (f" with {', '.join(f'{k}={v}' for k, v in point.overrides)}" if point.overrides else "")
    return scenario_from_dict(document, Source(label), base=Path(plan.base))


def evaluate_point(plan: SweepPlan, point: Point) -> dict:
    """Simulate one point; returns its JSON record (raises ``InputError`` for bad overrides)."""
    from simnet.runner import simulate
    from simnet.workload import StepModel

    scenario = _scenario_at(plan, point)
    topology = scenario.topology
    gpus = len(topology.gpus)
    record: dict[str, Any] = {"key": point.key, "set": dict(point.overrides), "gpus": gpus,
                              "algorithm": point.algorithm, "topology": topology.name, "sizes": []}
    cache: dict[int, Any] = {}

    def run(size: int):
        if size not in cache:
            cache[size] = simulate(topology, point.algorithm, size, **scenario.options)
        return cache[size]

    for size in scenario.sizes:
        result = run(size)
        neck = result.bottleneck
        record["sizes"].append({"size_bytes": size, "time_s": result.time_s, "algbw_GBps": result.algbw_GBps,
                                "busbw_GBps": result.busbw_GBps, "bottleneck": neck.name if neck else None,
                                "warnings": sorted({w.kind for w in result.warnings})})
    if scenario.workload is not None:
        model = StepModel.from_workload(scenario.workload)
        times = {size: run(size).time_s if gpus > 1 else 0.0 for size in set(model.buckets())}
        iteration = model.iteration_time(times, gpus)
        record.update({"compute_s": model.compute_s, "iteration_time_s": iteration,
                       "communication_exposed_s": iteration - model.compute_s,
                       "speedup": model.speedup(gpus, times), "efficiency": model.speedup(gpus, times) / gpus})
    return record


# ------------------------------------------------------------------ executors

class LocalExecutor:
    """Points on local worker processes (``workers`` of them)."""

    def __init__(self, workers: int | None = None):
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers or os.cpu_count() or 1
        self._pool = ProcessPoolExecutor(max_workers=self.workers)

    def submit(self, fn: Callable, *args):
        return self._pool.submit(fn, *args)

    def as_completed(self, futures: Iterable) -> Iterator:
        from concurrent.futures import as_completed

        return as_completed(list(futures))

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)

    def abort(self) -> None:
        """Stop now (Ctrl-C): kill the workers rather than wait for their points."""
        for process in list(getattr(self._pool, "_processes", {}).values()):
            process.kill()
        self._pool.shutdown(wait=False, cancel_futures=True)


class DaskExecutor:
    """Points on a Dask distributed cluster: ``address`` of a scheduler, or ``local`` for a
    ``LocalCluster`` of ``workers`` processes started here."""

    def __init__(self, address: str, workers: int | None = None):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise InputError("--scheduler needs Dask: pip install 'simnet[dask]'") from None
        self._cluster = None
        if address == "local":
            self._cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                         processes=True, dashboard_address=None)
            self._client = Client(self._cluster)
        else:
            try:
                self._client = Client(address, timeout="15s")
            except OSError as exc:
                raise InputError(f"--scheduler: cannot reach the Dask scheduler at {address!r} ({exc})") from None

    def submit(self, fn: Callable, *args):
        return self._client.submit(fn, *args, pure=False)

    def as_completed(self, futures: Iterable) -> Iterator:
        from distributed import as_completed

        return iter(as_completed(list(futures)))

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    abort = close


# ---------------------------------------------------------------- persistence

def load_records(path: Path) -> list[dict]:
    """Finished records of a results file; a torn last line (a killed writer) is cut off."""
    if not path.exists():
        return []
    records = []
    good = 0
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break
            good += len(line)
    if good != path.stat().st_size:
        with path.open("rb+") as handle:
            handle.truncate(good)
    return records


def _check_meta(out: Path, plan: SweepPlan) -> None:
    meta = out / META
    fingerprint = plan.fingerprint
    if meta.exists():
        known = json.loads(meta.read_text())
        if known.get("scenario") != fingerprint:
            raise InputError(f"{out} holds a sweep of a different scenario (fingerprint {known.get('scenario')}, "
                             f"now {fingerprint}); use another --out or delete it", plan.source)
    else:
        meta.write_text(json.dumps({"scenario": fingerprint, "simnet": __version__, "source": plan.source}) + "\n")


def run_sweep(plan: SweepPlan, out: str | Path, executor=None,
              progress: Callable[[int, int, int], None] | None = None) -> tuple[list[dict], int]:
    """Run every point of ``plan`` not already in ``out/results.jsonl``.

    Returns (all records in plan order, how many were computed now). ``progress(done,
    running, left)`` is called as points finish. Each record is appended and fsynced as
    it completes, so a killed sweep loses nothing it finished.
    """
    for overrides, gpus in {(p.overrides, p.gpus) for p in plan.points}:  # bad input fails before any write
        _scenario_at(plan, Point(overrides, gpus, ""))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _check_meta(out, plan)
    results_path = out / RESULTS
    known = {r["key"]: r for r in load_records(results_path)}
    todo = [p for p in plan.points if p.key not in known]
    computed = 0
    if todo:
        executor = executor or LocalExecutor()
        futures = {executor.submit(evaluate_point, plan, point): point for point in todo}
        done = len(plan.points) - len(todo)
        try:
            with results_path.open("a") as handle:
                for future in executor.as_completed(futures):
                    record = future.result()
                    handle.write(json.dumps(record) + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
                    known[record["key"]] = record
                    computed += 1
                    if progress:
                        running = sum(1 for f in futures if not f.done())
                        progress(done + computed, min(running, getattr(executor, "workers", running)),
                                 len(plan.points))
        except BaseException:
            executor.abort()  # Ctrl-C or a failed point: what finished is on disk already
            raise
        executor.close()
    return [known[p.key] for p in plan.points], computed
