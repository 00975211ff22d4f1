"""One sweep point -> its JSON record: every size of the scenario (with ``ran``, the
algorithm that ran: ``auto``'s pick), with a workload the training step (iteration
time, exposed communication, speedup) from each bucket size, and with ``training`` the
transformer's step (``training``: step time, tokens/s, MFU, exposed parts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simnet.errors import Cut, EnvironmentRefused, InputError, SpecError, Unsupported, shown
from simnet.io.budget import TooLarge
from simnet.io.yamlsource import format_loc
from simnet.results.result import FILLED
from simnet.run.jobs import run_jobs
from simnet.run.scenario import check_runs_fit, read_by_any, run_sizes, scenario_choices_unread, step_reads
from simnet.run.simulate import simulate
from simnet.run.sweep.plan import Point, SweepPlan, as_the_file_writes, scenario_at
from simnet.run.training import training_step
from simnet.spec.conditions import FaultError
from simnet.spec.jobs import JobError
from simnet.spec.scenario import fault_refusal
from simnet.workloads.ddp import StepModel

__all__ = ["evaluate_point", "check_point_fits", "UNREAD", "unread_everywhere", "after_every_end", "answers_of",
           "answered_otherwise_as_written"]

UNREAD = ("option_unread", "key_unread", "chunk_size_raised")
"""Warning kinds that say a key or option changed nothing (a chunk finer than NCCL's ran as
NCCL's, as without it): a record's size entries keep their links (``unread``), so that a
sweep or comparison can say what changed nothing anywhere, from records resumed as well as
computed."""


def unread_everywhere(records: list[dict], prefix: str = "") -> list[str]:
    """The links (starting with ``prefix``) unread at every size of every record (a record
    without sizes, a training step's alone: at the record): what changed nothing anywhere
    in them. None where some record keeps no ``unread`` (one written before they did)."""
    kept = [at for record in records for at in (record["sizes"] or [record])]
    if not kept or any("unread" not in at for at in kept):
        return []
    return sorted(link for link in set.intersection(*(set(at["unread"]) for at in kept)) if link.startswith(prefix))


def axes_unfelt(records: list[dict]) -> dict[str, list]:
    """The swept keys (a record's ``set``) along which nothing moves: wherever the points
    differ in that key alone (the same algorithm, GPU count and other keys' values), they
    answer alike (``answers_of``), with at least two of its values met so. Each with the
    values it took."""
    unfelt = {}
    for key in dict.fromkeys(k for record in records for k in record["set"]):
        groups: dict[str, list[dict]] = {}
        for record in records:
            if key in record["set"]:
                rest = {k: v for k, v in record["set"].items() if k != key}
                groups.setdefault(json.dumps([record["algorithm"], record["gpus"], rest], sort_keys=True,
                                             default=str), []).append(record)
        compared = [group for group in groups.values() if len({str(r["set"][key]) for r in group}) > 1]
        if compared and all(len({answers_of([r]) for r in group}) == 1 for group in compared):
            unfelt[key] = list(dict.fromkeys(r["set"][key] for group in compared for r in group))
    return unfelt


def answers_of(records: list[dict], names: bool = True) -> str:
    """What ``records`` answer, without what names them (their set, key, topology's name) or
    what they were told (warnings, unread, a jobs record's faults as written): equal for two
    that answer alike, run for run,
    to the picosecond; without ``names``, also without the links they name (the bottleneck,
    the busiest: renamed nodes of one machine answer alike)."""
    said = {"key", "set", "topology", "warnings", "unread", "faults"} | (set() if names else {"bottleneck", "busiest"})

    def bare(value):
        if isinstance(value, dict):
            return {k: bare(v) for k, v in value.items() if k not in said}
        return [bare(v) for v in value] if isinstance(value, list) else value

    return json.dumps(bare(records), sort_keys=True, default=str)


def answered_otherwise_as_written(plan: SweepPlan, records: list[dict], link: str) -> bool:
    """Whether some point of ``plan`` (its record among ``records``) answers otherwise with
    the value the scenario file writes for ``link`` than with the value its axis gives it:
    then the axis replaces a value that counts. A point refused with the file's value counts
    too. (A key unread at every point that the file writes: judged against the file's value,
    not against its absence.)"""
    from simnet.io.yamlsource import dotted_within

    by_key = {record["key"]: record for record in records}
    for point in plan.points:
        if point.key not in by_key:
            continue
        key = next((k for k, _ in point.overrides if dotted_within(link, k)), None)
        if key is None:  # the point keeps the file's value
            continue
        written = Point(as_the_file_writes(point.overrides, key, link, plan.document), point.gpus, point.algorithm)
        try:
            if answers_of([evaluate_point(plan, written)]) != answers_of([by_key[point.key]]):
                return True
        except (InputError, SpecError, Unsupported):
            return True
    return False


def after_every_end(records: list[dict]) -> bool:
    """Whether every run of the records (at each size, and each workload's buckets) ended
    before some fault (``fault_after_end``), so faults changed nothing anywhere in them; not
    said of a training step's records, whose exchanges keep no such word."""
    return bool(records) and all(
        "training" not in record and (record["sizes"] or "bucket_warnings" in record)
        and all("fault_after_end" in at.get("warnings", ()) for at in record["sizes"])
        and ("bucket_warnings" not in record or "fault_after_end" in record["bucket_warnings"])
        for record in records)


def evaluate_point(plan: SweepPlan, point: Point) -> dict:
    """Simulate one point; returns its record (raises ``InputError`` for bad overrides, or a
    point simnet cannot simulate here: too large for the memory, too long for the horizon,
    NCCL variables that leave NCCL nothing to run). A point of ``all`` algorithms whose
    algorithm its topology cannot run is a record with no sizes and ``skipped``: why."""
    scenario = scenario_at(plan, point.overrides, point.gpus)
    try:
        return _evaluate(plan, point, scenario)
    except InputError:
        raise
    except Unsupported as exc:
        if not plan.every_algorithm:  # on the file's algorithms line where it names the algorithm (not -a)
            raise _on_algorithms_line(plan, point, f"{_point_said(point, scenario)}: {exc}") from exc
        return {**_header(point, scenario), "skipped": str(exc)}
    except EnvironmentRefused as exc:  # the environment's, whatever the point (compare says it of no option)
        raise InputError(str(exc), plan.source) from exc
    except Cut as exc:  # on the fault's line, unless a --set or a variant wrote the faults
        if any(key.split(".")[0] == "faults" for key, _ in point.overrides):
            raise InputError(f"{_point_said(point, scenario)}: {exc}", plan.source) from None
        raise fault_refusal(scenario, exc, _point_said(point, scenario)) from None
    except (JobError, FaultError) as exc:  # said with its field (a --set or a variant may have written it)
        part = "jobs" if isinstance(exc, JobError) else "faults"
        raise InputError(f"{_point_said(point, scenario)}: {format_loc((part, *exc.loc))}: {exc.message}",
                         plan.source) from None
    except ValueError as exc:  # CannotSimulate among them
        raise InputError(f"{_point_said(point, scenario)}: {exc}", plan.source) from None


def check_point_fits(plan: SweepPlan, point: Point) -> None:
    """Refuse, as ``evaluate_point`` would, a point with a run the memory would not hold
    (``scenario.check_runs_fit``), before any point runs: what ``simnet compare`` checks of
    every option before simulating the first. A point of jobs checks its jobs itself; any
    other refusal is ``evaluate_point``'s."""
    scenario = scenario_at(plan, point.overrides, point.gpus)
    if scenario.jobs:
        return
    try:
        check_runs_fit(scenario, run_sizes(scenario), [point.algorithm], plan.env)
    except TooLarge as exc:
        raise InputError(f"{_point_said(point, scenario)}: {exc}", plan.source) from None
    except ValueError:  # (refused by evaluate_point in its turn, where it says it)
        return


def _on_algorithms_line(plan: SweepPlan, point: Point, message: str) -> InputError:
    """``message`` as an ``InputError`` on the line of the file's ``algorithms:`` that names
    the point's algorithm, else on the file (an algorithm ``-a`` or a variant gave)."""
    from simnet.io.yamlsource import load_yaml

    if plan.source and Path(plan.source).is_file():
        data, source = load_yaml(plan.source)
        named = data.get("algorithms") if isinstance(data, dict) else None
        if isinstance(named, list) and point.algorithm in named:
            return source.error(("algorithms",), message)
    return InputError(message, plan.source)


def _point_said(point: Point, scenario) -> str:
    """A point as its refusal names it: its settings (``options.chunk_size=8 KiB``) and GPUs."""
    settings = ", ".join(f"{key}={value if isinstance(value, str) else shown(value)}" for key, value in point.overrides)
    return f"the point {settings + ' ' if settings else ''}at {len(scenario.topology.gpus)} GPUs"


def _evaluate(plan: SweepPlan, point: Point, scenario) -> dict:
    topology = scenario.topology
    gpus = len(topology.gpus)
    record = _header(point, scenario)
    cache: dict[int, Any] = {}
    if scenario.jobs:
        return _jobs_record(scenario, record, plan.env)

    def run(size: int):
        if size not in cache:
            cache[size] = simulate(topology, point.algorithm, size, model=scenario.model, env=plan.env,
                                   calibration=scenario.calibration, collective=scenario.collective,
                                   **scenario.conditions(), **scenario.options)
        return cache[size]

    step, read_beside = None, {}  # an NCCL (RCCL) variable -> whether the step or the buckets beside the runs read it
    if scenario.training is not None:
        step = training_step(scenario, plan.env)
        record.update(training=step, step_s=step["step_s"], tokens_per_s=step["tokens_per_s"], mfu=step["mfu"])
    buckets = set(StepModel.from_workload(scenario.workload, topology.gpus).buckets()) if scenario.workload else set()

    def read_by_what_is_ranked(name: str) -> bool:  # the training step without it, or a bucket's run that reads it
        if name not in read_beside:  # (an option: the buckets' runs alone; the step reads no scenario option)
            read_beside[name] = (step is not None and name in plan.env and
                                 bool(step_reads(scenario, step, plan.env, [name]))) or \
                read_by_any(name, [run(size) for size in buckets])
        return read_beside[name]

    unread = scenario_choices_unread(scenario, plan.env, [point.algorithm], "this point")
    for size in scenario.sizes:
        result = run(size)
        neck = result.bottleneck
        said = [*result.warnings, *scenario.warnings, *unread]
        # a run's "changed nothing" of a variable is taken back where what the point ranks by beside it reads it
        said = [w for w in said if not ((w.kind == "key_unread" and w.link in plan.env or w.kind == "option_unread"
                                         and w.link.startswith("options.")) and read_by_what_is_ranked(w.link))]
        record["sizes"].append({
            "size_bytes": size, "ran": result.algorithm, "time_s": result.time_s, "algbw_GBps": result.algbw_GBps,
            "busbw_GBps": result.busbw_GBps, "bottleneck": result.filled.name if result.filled else None,
            "busiest": neck.name if neck else None,
            "bottleneck_saturated_fraction": neck.saturated_fraction if neck else None,
            "bottleneck_mean_utilization": neck.mean_utilization if neck else None,
            "warnings": sorted({w.kind for w in said}),
            "unread": sorted({w.link for w in said if w.kind in UNREAD and w.link})})
    if not scenario.sizes:  # a training step alone: what the scenario makes moot, at the record
        record["unread"] = sorted({w.link for w in [*scenario.warnings, *unread] if w.kind in UNREAD and w.link})
    if scenario.workload is not None:
        model = StepModel.from_workload(scenario.workload, topology.gpus)
        summary = model.summary(gpus, {size: run(size).time_s for size in buckets})
        record.update({k: v for k, v in summary.items() if k != "gpus"})
        record["bucket_warnings"] = sorted({w.kind for size in buckets for w in run(size).warnings})
    return record


def _header(point: Point, scenario) -> dict[str, Any]:
    """What every record of ``point`` starts with (its sizes still empty)."""
    return {"key": point.key, "set": dict(point.overrides), "gpus": len(scenario.topology.gpus),
            "collective": scenario.collective, "algorithm": point.algorithm, "topology": scenario.topology.name,
            "sizes": []}


def _jobs_record(scenario, record: dict, env: dict[str, str]) -> dict:
    """A point of a scenario with jobs: every job's times, the interference matrix, and as
    the point's one "size" the slowest job's mean AllReduce time with every job running
    (what ``simnet compare`` ranks placements by)."""
    result = run_jobs(scenario.topology, scenario.jobs, model=scenario.model, env=env,
                      calibration=scenario.calibration, faults=scenario.faults)
    work = [job for job in result.jobs if not job["algorithm"].startswith("background")] or result.jobs
    slowest = max(work, key=lambda job: job["together_s"])
    name = f"jobs (slowest {slowest['name']})"
    record.update(result.to_dict(), algorithm=name)
    top = result.shared_links[0] if result.shared_links else None  # the most fought-over link
    filled = top is not None and top["saturated_fraction"] >= FILLED  # (a bottleneck only where it filled)
    record["sizes"].append({"size_bytes": slowest["size_bytes"], "ran": name,
                            "time_s": slowest["together_s"], "algbw_GBps": None, "busbw_GBps": None,
                            "bottleneck": top["link"] if filled else None, "busiest": top["link"] if top else None,
                            "bottleneck_saturated_fraction": top["saturated_fraction"] if top else None,
                            "warnings": sorted({w.kind for w in [*scenario.warnings, *result.warnings]}),
                            "unread": sorted({w.link for w in [*scenario.warnings, *result.warnings]
                                              if w.kind in UNREAD and w.link})})
    return record
