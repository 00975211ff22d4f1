"""``simnet sweep``: a scenario over GPU counts and ``--set`` values, resumable, on local workers or Dask."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click
import yaml

from simnet.cli.choices import algorithm_option, collective_notes, collective_option, refuse_algorithms_no_size_reads
from simnet.cli.console import print_warnings, stdout_console
from simnet.cli.shell import WholeRange, friendly, loading
from simnet.errors import InputError, as_written
from simnet.io.yamlsource import load_value
from simnet.schedule.kinds import COLLECTIVES


def _gpu_counts(text: str, scenario: Path) -> list[int]:
    """``--gpus 8,16,32`` as counts, or ``InputError`` naming the item that is not one."""
    items = [v.strip() for v in text.split(",")]
    for item in items:
        if not re.fullmatch(r"[0-9]+", item) or int(item) < 1:
            raise InputError(f"--gpus: {item!r} is not a GPU count (a whole number, 1 or more) in {text!r}", scenario)
    return [int(item) for item in items]


def _split_values(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _set_value(text: str) -> object:
    """A ``--set`` value as the scenario file would read it: ``64``, ``2.0`` and ``1e3`` are
    numbers (``010`` is ten; ``2.0`` stays a decimal, which a whole-number field refuses as the
    file does; ``2``, ``02`` and ``2.0`` of a decimal field are one point, ``plan._canonical``),
    ``true`` a yes/no, anything else (``400 Gb/s``, ``4:1``, ``ecmp``) text for the field to parse."""
    try:
        value = load_value(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, (bool, int, float)) else text


@click.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--gpus", "gpu_counts", default=None, help="GPU counts, e.g. 8,16,32 (first N ranks).")
@click.option("--set", "sets", multiple=True, metavar="KEY=V1,V2",
              help="Sweep a dotted parameter, e.g. topology.generate.nic_bandwidth=100Gb/s,400Gb/s (repeatable).")
@click.option("-a", "--algorithm", "algorithms", multiple=True, help="Algorithms instead of the file's.")
@click.option("-c", "--collective", type=click.Choice(list(COLLECTIVES)), default=None,
              help="Collective instead of the file's.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Directory for results.jsonl, results.csv and plots (default: sweep-<scenario name>).")
@click.option("--workers", type=WholeRange(min=1, max=1024), default=None,
              help="Worker processes (default: the core count; never more than the points).")
@click.option("--scheduler", default=None, help="Dask scheduler address, or 'local' for a LocalCluster.")
@friendly
def sweep(scenario: Path, gpu_counts: str | None, sets: tuple[str, ...], algorithms: tuple[str, ...],
          collective: str | None, out: Path | None, workers: int | None, scheduler: str | None) -> None:
    """Sweep SCENARIO over GPU counts and parameters: speedup, iteration time, busbw.

    Finished points are appended to OUT/results.jsonl as they complete; running the
    same command again resumes and computes only what is missing.

    \b
    Example:
      simnet sweep scenarios/cross_rack.yaml --gpus 8,16,32,64
      simnet sweep scenarios/cross_rack.yaml --set topology.generate.oversubscription=1,4 --scheduler local
    """
    with loading():  # the garbage collector skips them (shell.loading)
        from simnet.report.paths import output_dir
        from simnet.report.sweep_report import SWEEP_FILES, plot_sweep, sweep_table, write_sweep_csv
        from simnet.run.sweep.executors import DaskExecutor, LocalExecutor
        from simnet.run.sweep.plan import check_values, dotted_key, files_read, plan_sweep
        from simnet.spec.scenario import axis_changes_no_point, load_scenario, nested_twice

    spec = load_scenario(scenario, collective, runs_on_part=_sweeps_gpus(scenario, gpu_counts, sets))
    counts = _gpu_counts(gpu_counts, scenario) if gpu_counts is not None else None
    axes = {}
    for item in sets:
        key, sep, values = item.partition("=")
        if not sep or not key.strip() or not _split_values(values):
            raise InputError(f"--set: expected KEY=V1,V2 (e.g. topology.generate.racks=2,4), got {item!r}", scenario)
        if _split_values(values) and len(_split_values(values)) < len(values.split(",")):
            raise InputError(f"--set: {item!r} has an empty value between its commas; give each value once "
                             "(KEY=V1,V2)", scenario)
        key = dotted_key(key.strip())  # jobs[0].size is jobs.0.size
        if key in axes:
            raise InputError(f"--set: {key} is given twice; give its values once (KEY=V1,V2)", scenario)
        axes[key] = [_set_value(v) for v in _split_values(values)]
    if nested_twice(axes):
        raise InputError(f"--set: {nested_twice(axes)}", scenario)
    for key in axes:
        why = axis_changes_no_point(key)
        if why:
            raise InputError(f"--set: {key} {why}; leave it out", scenario)
    for key, values in axes.items():
        if any(isinstance(v, str) and (v.startswith(("[", "{")) or v.endswith(("]", "}"))) for v in values):
            raise InputError(f"--set: {key}: each value after = is one point's value, a single number or text "
                             "(commas part the points); set a list's items by index (jobs.0.size=...), or sweep "
                             "sizes as an axis of their own (sizes=1MiB,4MiB)", scenario)
    if collective and "collective" in axes:
        raise InputError("--set collective=... and -c/--collective both name the collective; give one", scenario)
    refuse_algorithms_no_size_reads(spec, algorithms, (), scenario)
    changes = collective_option(spec, collective, algorithms, scenario)
    notes = collective_notes(spec, changes, algorithms)
    if changes:
        spec = spec.replace(**changes)
    names = algorithm_option(algorithms, scenario, spec.collective) if algorithms else None
    try:
        check_values(spec, axes, names)  # a typo said at once, before a product of many axes is planned
        plan = plan_sweep(spec, counts, axes, names, every_algorithm="all" in algorithms if names else None)
    except InputError:
        raise
    except ValueError as exc:  # the NCCL variables
        raise InputError(str(exc), scenario) from None
    if not {"model", "topology"} & {key.split(".")[0] for key in axes}:  # every point's model is the file's:
        from simnet.run.point import Setup  # a variable it refuses is said before --out is looked at
        from simnet.schedule.kinds import collective as lookup_collective

        try:
            Setup(spec.topology, lookup_collective(spec.collective).name, spec.model, plan.env, None)
        except ValueError as exc:
            raise InputError(str(exc), scenario) from None
    out = output_dir(out or default_out(spec.name), "--out", files_read(spec, axes), SWEEP_FILES)
    workers = min(workers or os.cpu_count() or 1, len(plan.points))  # no idle workers, however many asked
    executor = DaskExecutor(scheduler, workers) if scheduler else LocalExecutor(workers)
    recomputed: list[str] = []
    records, computed = _sweep_with_progress(plan, out, executor, recomputed)
    console = stdout_console()
    for line in recomputed:
        console.print(line)
    given = [*axes, *(["gpus"] if counts is not None else [])]  # options that replace the file's own axis
    for key in [k for k in given if k in (spec.sweep or {})]:
        from simnet.io.yamlsource import load_yaml

        line = load_yaml(scenario)[1].line(("sweep", key))
        console.print(f"note: {'--gpus' if key == 'gpus' and counts is not None else '--set ' + key} replaces the "
                      f"file's sweep: axis of {key} ({scenario}:{line}), whose values ran at no point")
    if computed < len(records):
        console.print(f"resumed from {out / 'results.jsonl'}: {_points(len(records) - computed)} already done, "
                      f"{computed} computed now")
    skipped = [r for r in records if "skipped" in r]
    records = [r for r in records if "skipped" not in r]
    if not records:
        raise InputError(f"no algorithm of all runs at any point of the sweep: {skipped[0]['skipped']}", scenario)
    console.print(sweep_table(records, f"{spec.name}: sweep over {_points(len(records))}"))
    said = {kind for r in records for at in [*r.get("sizes", ()), {"warnings": r.get("bucket_warnings", ())}]
            for kind in at.get("warnings", ())}  # (the buckets' bound the iteration, speedup and efficiency)
    for kind, mark, what in (("lower_bound", "≥", "a lower bound: under model: ideal the fluid network could not "
                                                  "hold the run in the memory this point had"),
                             ("upper_bound", "≤", "an upper bound: a ring too large to replay exactly")):
        if kind in said:
            console.print(f"{mark} marks {what} (simnet run says the other end; docs/architecture.md), and "
                          f"{'≤' if mark == '≥' else '≥'} the {'upper' if mark == '≥' else 'lower'} bound it makes "
                          "of a rate (busbw, speedup, efficiency); results.csv names it in its warnings columns")
    where: dict[tuple[str, str], list[str]] = {}  # (algorithm, why) -> the points it was skipped at
    for r in skipped:
        settings = ", ".join(f"{k}={as_written(v)}" for k, v in r["set"].items())
        point = f"{r['gpus']} GPUs" + (f" ({settings})" if settings else "")
        where.setdefault((r["algorithm"], r["skipped"]), []).append(point)
    for note in notes + [f"skipped {name} at {'; '.join(dict.fromkeys(points))} (all): {why}"
                         for (name, why), points in where.items()]:
        console.print(note)
    from simnet.run.scenario import scenario_choices_unread

    ran = [] if spec.jobs else list(dict.fromkeys(r["algorithm"] for r in records))  # (jobs say their own)
    choices = scenario_choices_unread(spec, plan.env, ran, "every point")
    swept = {*axes, *(spec.sweep or {})}  # the file's own sweep: axes replace its values as --set does
    print_warnings(console, choices + _unread_everywhere(spec, plan, records, {w.link for w in choices}, swept))
    if "iteration_time_s" not in records[0] and "training" not in records[0] and "workload" not in changes:
        console.print("no workload in the scenario: speedup.png and iteration_time.png need one "
                      "(workload: {compute_time: ..., gradient_size: ...})")
    for path in [write_sweep_csv(records, out / "results.csv"), out / "results.jsonl",
                 *plot_sweep(records, spec.name, out)]:
        console.print(f"wrote {path}")


def _sweeps_gpus(scenario: Path, gpu_counts: str | None, sets: tuple[str, ...]) -> bool:
    """Whether the sweep's points run on some of the scenario's GPUs (``--gpus``, ``--set
    gpus=...`` or the file's ``sweep: {gpus: ...}``): a fault is then judged on each point's."""
    from simnet.io.yamlsource import load_yaml

    data, _ = load_yaml(scenario)
    axes = data.get("sweep") if isinstance(data, dict) else None
    return gpu_counts is not None or any(item.partition("=")[0].strip() == "gpus" for item in sets) or \
        (isinstance(axes, dict) and "gpus" in axes)


def _unread_everywhere(spec, plan, records: list[dict], said: set[str], swept: set[str]) -> list:
    """What changed nothing at any point of the sweep (``unread_everywhere``), once each and
    not again where ``said``: the file's own words for a key it makes moot (``spec.warnings``),
    else that it changed nothing anywhere (for a key only an axis gives, ``swept``: ``--set``
    or the file's own ``sweep:``, that a run with it written says why). A swept key the file
    writes too is judged against the file's value: not said where that answers otherwise at
    some point."""
    from simnet.io.yamlsource import dotted_within
    from simnet.results.result import Finding
    from simnet.run.sweep.evaluate import after_every_end, answered_otherwise_as_written, axes_unfelt, unread_everywhere
    from simnet.spec.scenario import source_of

    own = {w.link: w for w in spec.warnings}
    source = source_of(spec)
    found = []
    for link in unread_everywhere(records):
        if link in said:
            continue
        if link not in own and source is not None and source.writes(link) and any(
                dotted_within(link, axis) for axis in swept) and answered_otherwise_as_written(plan, records, link):
            continue  # the axis replaces the file's own value, which counts: it counts against it
        kind = "option_unread" if link.startswith("options.") else "key_unread"
        whose = "a scenario that writes it" if link in swept and link not in own else "the scenario"
        found.append(own.get(link) or Finding(kind, link, (
            f"{link} changed nothing at any point of this sweep (simnet run on {whose} says why of each run)"
            + ("; leave it out" if kind == "option_unread" else ""))))
    for link, values in axes_unfelt(records).items():  # an axis none of whose values moves any point
        if link not in said and link not in {w.link for w in found}:
            kind = "option_unread" if link.startswith("options.") else "key_unread"
            found.append(Finding(kind, link, (
                f"{link} changed nothing along this sweep: every point answers alike at each of its values "
                f"({', '.join(map(str, values))})")))
    if after_every_end(records):
        found.append(Finding("fault_after_end", "", "at every point of this sweep every run ended before some of its "
                                                    "faults, which changed nothing there (simnet run says which)"))
    return found


def _sweep_with_progress(plan, out: Path, executor, recomputed: list[str]):
    from simnet.cli.console import progress
    from simnet.run.sweep.run import run_sweep

    total = len(plan.points)
    with progress("sweep") as update:
        update(0, total, "starting")
        return run_sweep(plan, out, executor,
                         progress=lambda done, running, total: update(done, total, f"{running} running"),
                         recomputed=recomputed,
                         checking=lambda checked, scenarios: update(0, total, f"checked {checked:,} of "
                                                                              f"{scenarios:,} scenarios"))


def default_out(name: str) -> Path:
    """The folder a sweep of scenario ``name`` writes to without ``--out``: ``sweep-<name>``
    in this folder, the name's characters other than letters, digits, ``.``, ``_`` and ``-``
    as ``_`` (a name is a label: ``a/../../x`` wrote outside the working folder), at most
    100 of them (a 250-character name made a file name the system refuses: exit 70).

    >>> default_out("llm 70B/TP8"), default_out("../x")
    (PosixPath('sweep-llm_70B_TP8'), PosixPath('sweep-.._x'))
    """
    return Path("sweep-" + re.sub(r"[^A-Za-z0-9._-]", "_", name)[:100])


def _points(count: int) -> str:
    """``1 point``, ``3 points``."""
    return f"{count} point" + "s" * (count != 1)
