"""Run a sweep: every point of a plan not already on disk, on an executor, each record
stored as it finishes, so an interrupted sweep resumes where it stopped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from simnet.run.sweep.evaluate import evaluate_point
from simnet.run.sweep.executors import LocalExecutor
from simnet.run.sweep.plan import SweepPlan, fingerprint, scenario_at
from simnet.run.sweep.store import LOCK, META, RESULTS, append_record, check_meta, load_records, locked, rewrite_records

__all__ = ["run_sweep"]


def run_sweep(plan: SweepPlan, out: str | Path, executor=None,
              progress: Callable[[int, int, int], None] | None = None,
              recomputed: list[str] | None = None,
              checking: Callable[[int, int], None] | None = None) -> tuple[list[dict], int]:
    """Run every point of ``plan`` not already in ``out/results.jsonl``.

    Returns (all records in plan order, how many were computed now). Before any point runs,
    each distinct scenario of the plan is checked (bad input fails before any write),
    ``checking(checked, scenarios)`` called after each; then ``progress(done, running,
    total)`` is called as points finish. Each record is appended and fsynced as it
    completes, so a killed sweep loses nothing it finished. Records on disk that cannot be
    read back whole are computed again, each named in ``recomputed``.
    """
    scenes = {json.dumps([dict(p.overrides), p.gpus], sort_keys=True, default=str): p for p in plan.points}
    for checked, point in enumerate(scenes.values(), 1):  # each scenario once, whatever its algorithms
        scenario_at(plan, point.overrides, point.gpus)
        if checking is not None:
            checking(checked, len(scenes))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        out.mkdir()
        fresh = True  # this sweep made the folder (atomically: no other sweep can think so too)
    except FileExistsError:
        fresh = False
    with locked(out, plan.source):
        try:
            return _run_unlocked(plan, out, executor, progress, recomputed)
        except BaseException:
            if fresh and not load_records(out / RESULTS):  # refused before any point finished: leave no trace
                for name in (RESULTS, META, LOCK):  # the lock file last, while still holding it
                    (out / name).unlink(missing_ok=True)
                if not any(out.iterdir()):
                    out.rmdir()
            raise


def _run_unlocked(plan: SweepPlan, out: Path, executor, progress, recomputed: list[str] | None
                  ) -> tuple[list[dict], int]:
    identity = plan.identity  # inlines the topology and hashes the profiles: once
    check_meta(out, fingerprint(identity), plan.source, identity)
    results_path = out / RESULTS
    # a point skipped by an earlier `all` sweep is tried again when this one names it
    records = load_records(results_path, recomputed)
    records = _stale_dropped(plan, records, results_path, recomputed)
    known = {r["key"]: r for r in records if plan.every_algorithm or "skipped" not in r}
    todo = [p for p in plan.points if p.key not in known]
    computed = 0
    executor = executor or LocalExecutor()
    try:
        futures = {executor.submit(evaluate_point, plan, point): point for point in todo}
        done = len(plan.points) - len(todo)
        with results_path.open("a") as handle:
            for future in executor.as_completed(futures):
                record = future.result()
                append_record(handle, record)
                known[record["key"]] = record
                computed += 1
                if progress:
                    running = sum(1 for f in futures if not f.done())
                    progress(done + computed, min(running, getattr(executor, "workers", running)), len(plan.points))
    except BaseException:
        executor.abort()  # Ctrl-C or a failed point: what finished is on disk already
        raise
    executor.close()
    return [known[p.key] for p in plan.points], computed


def _stale_dropped(plan: SweepPlan, records: list[dict], path: Path, recomputed: list[str] | None) -> list[dict]:
    """``records`` without those of ``plan``'s points that must be computed again: one a point
    supersedes (the same overrides, GPUs and algorithm, whose files read, a calibration profile
    or a topology named in ``--set``, have changed since), and one whose time is a lower bound
    (``model: ideal`` where the fluid network could not hold the run: that depends on the
    memory the run had, the budget or its share among the workers, not on the point's inputs).
    The results file is rewritten without them, so it keeps one record per point; each is
    named in ``recomputed``. Points this sweep does not run keep theirs."""
    now = {_point_of(p.key): p.key for p in plan.points}
    planned = set(now.values())

    def why(record: dict) -> str | None:
        if now.get(_point_of(record["key"]), record["key"]) != record["key"]:
            return "read files that changed since its record"
        if record["key"] in planned and any("lower_bound" in at.get("warnings", ()) for at in record.get("sizes", ())):
            return "was bounded from below for want of memory"
        return None

    stale = [(r, reason) for r in records if (reason := why(r))]
    if not stale:
        return records
    dropped = {id(r) for r, _ in stale}
    kept = [r for r in records if id(r) not in dropped]
    rewrite_records(path, kept)
    if recomputed is not None:
        recomputed += [f"{path}: the point {_said(r)} {reason}; computed again, its old record dropped"
                       for r, reason in stale]
    return kept


def _point_of(key: str) -> str:
    """A record's key without the digest of the files it read: which point it is."""
    try:
        identity = json.loads(key)
    except ValueError:
        return key
    if isinstance(identity, dict):
        identity.pop("reads", None)
    return json.dumps(identity, sort_keys=True, default=str)


def _said(record: dict) -> str:
    """A point as a user set it: ``calibration=q.cal.yaml``, GPUs and algorithm."""
    settings = ", ".join(f"{k}={v}" for k, v in (record.get("set") or {}).items())
    return f"{settings + ' ' if settings else ''}({record.get('gpus')} GPUs, {record.get('algorithm')})"
