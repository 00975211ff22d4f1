"""The ``simnet`` command: a thin shell over the Python API.

Bad input ends with one line on stderr naming file, line and field, and exit code 2.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path

import click

from simnet.errors import InputError
from simnet.schedule.kinds import COLLECTIVES

__all__ = ["main"]


_DEBUG = {"traceback": False}
EXIT_BAD_INPUT = 2
EXIT_BUG = 70  # EX_SOFTWARE: an internal error, not the user's fault
EXIT_INTERRUPTED = 130


def _friendly(command):
    """Turn ``InputError`` into one line on stderr and exit code 2, Ctrl-C into 130, and any
    other exception (a bug) into one line and exit code 70; a traceback only with --debug."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except InputError as exc:
            click.echo(str(exc), err=True)
            sys.exit(EXIT_BAD_INPUT)
        except MemoryError:
            click.echo("out of memory: this run needs more than the machine has free; use fewer GPUs, larger "
                       "pieces (chunk_size) or smaller sizes", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except KeyboardInterrupt:
            click.echo("interrupted (a sweep keeps every finished point: run it again to resume)", err=True)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)  # skip interpreter shutdown: it would wait on killed worker pools
        except Exception as exc:
            if _DEBUG["traceback"]:
                raise
            from simnet.version import __version__

            click.echo(f"internal error in simnet {__version__} ({type(exc).__name__}: {exc}); this is a bug: "
                       "please report it with the command and its input files (--debug shows the traceback)",
                       err=True)
            sys.exit(EXIT_BUG)

    return wrapper


class _UsageError(click.UsageError):
    """A usage error shown as one line, ``simnet run: No such option: --jsn (see 'simnet run --help')``."""

    def show(self, file=None) -> None:
        where = self.ctx.command_path if self.ctx else "simnet"
        click.echo(f"{where}: {self.format_message()} (see '{where} --help')", err=True)


class _OneLineUsage(click.Group):
    """The ``simnet`` group: click's usage errors (unknown option, missing argument, bad
    value) come out as one line and exit code 2, as every other bad input does."""

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _one_line(exc) from None


def _one_line(exc: click.UsageError) -> click.UsageError:
    if isinstance(exc, (_UsageError, click.exceptions.NoArgsIsHelpError)):  # `simnet` alone: its help
        return exc
    return _UsageError(exc.format_message(), exc.ctx)


def _console():
    from simnet.cli.console import stdout_console

    return stdout_console()


@click.group(cls=_OneLineUsage, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="simnet")
@click.option("--debug", is_flag=True, help="Show a traceback on an internal error (for bug reports).")
def main(debug: bool) -> None:
    """Predict collective time (AllReduce and NCCL's others), bus bandwidth and link saturation on a GPU cluster.

    \b
    Example:
      simnet run scenarios/cross_rack.yaml
      simnet topo check topologies/two_racks.yaml
    """
    _DEBUG["traceback"] = debug


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-a", "--algorithm", "algorithms", multiple=True,
              help="Algorithm to run instead of the file's (repeatable; 'auto' or 'all' too).")
@click.option("-c", "--collective", type=click.Choice(list(COLLECTIVES)), default=None,
              help="Collective instead of the file's (sizes in nccl-tests' convention).")
@click.option("-s", "--size", "sizes", multiple=True,
              help="Size instead of the file's, e.g. '64 MiB' or '8 B .. 1 GiB x2' (repeatable).")
@click.option("-g", "--gpus", type=int, default=None, help="Use the first N GPUs of the topology.")
@click.option("--model", type=click.Choice(["nccl", "ideal"]), default=None,
              help="Performance model instead of the file's: nccl (what nccl-tests measures) or ideal (line rate).")
@click.option("--json", "json_path", default=None, help="Write results as JSON; '-' for stdout.")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path), default=None,
              help="Write the flat results table as CSV.")
@click.option("--plot", "plot_dir", type=click.Path(path_type=Path), default=None,
              help="Write plots (time, busbw, link utilisation, heatmap) into this directory.")
@click.option("--trace", "trace_path", type=click.Path(path_type=Path), default=None,
              help="Write a Chrome trace (Perfetto, chrome://tracing) of the largest size.")
@_friendly
def run(scenario: Path, algorithms: tuple[str, ...], collective: str | None, sizes: tuple[str, ...], gpus: int | None,
        model: str | None, json_path: str | None, csv_path: Path | None, plot_dir: Path | None,
        trace_path: Path | None) -> None:
    """Simulate SCENARIO and print time, bandwidth and the bottleneck per size and algorithm.

    With a workload in the scenario, also the training step per algorithm: iteration
    time, the communication the backward pass did not hide, speedup and efficiency.

    \b
    Example:
      simnet run scenarios/cross_rack.yaml
      simnet run scenarios/cross_rack.yaml -a ring -a hierarchical -s '256 MiB' --json out.json
      simnet run scenarios/cross_rack.yaml -c all_gather
    """
    from simnet.report.export import results_csv, results_json, write_text
    from simnet.report.paths import output_dir, output_file
    from simnet.report.tables import conditions_table, results_table, steps_table, training_tables
    from simnet.spec.scenario import MAX_SIZES, load_scenario, parse_sizes

    spec = load_scenario(scenario)
    for path, option in ((csv_path, "--csv"), (trace_path, "--trace")):
        if path is not None and str(path) == "-":
            raise InputError(f"{option}: '-' (standard output) is for --json only; name a file")
    files = [(p, option) for p, option in ((json_path, "--json"), (csv_path, "--csv"), (trace_path, "--trace"))
             if p and str(p) != "-"]
    for path, option in files:
        output_file(path, option, inputs=_inputs_of(spec, scenario))
    same = {Path(p).resolve() for p, _ in files}
    if len(same) < len(files):
        raise InputError("--json, --csv and --trace must name different files")
    if plot_dir:
        output_dir(plot_dir, "--plot")
        _refuse_plot_collisions(plot_dir, files)
    changes = _collective_option(spec, collective, algorithms, scenario)
    notes = _collective_notes(spec, changes)  # before -a joins the changes
    if algorithms:
        changes["algorithms"] = _algorithm_option(algorithms, scenario, changes.get("collective", spec.collective))
        changes["every_algorithm"] = "all" in algorithms
    if sizes:
        changes["sizes"] = [each for size in sizes for each in _parse_option(parse_sizes, size, "--size", scenario)]
        if len(changes["sizes"]) > MAX_SIZES:
            raise InputError(f"--size: {len(changes['sizes']):,} sizes, over the {MAX_SIZES} simnet runs in one "
                             "scenario", scenario)
    if gpus is not None:
        changes["topology"] = _parse_option(spec.topology.subset, gpus, "--gpus", scenario)
    if model is not None:
        changes["model"] = model
    spec = spec.replace(**changes)
    if spec.jobs:
        if csv_path or trace_path or algorithms or sizes:
            raise InputError(f"{scenario}: with jobs, each job has its own algorithm and size; "
                             "--algorithm, --size, --csv and --trace do not apply (--json and --plot do)")
        return _run_jobs(spec, scenario, json_path, plot_dir)
    results = _with_progress(spec, scenario, timeline=bool(plot_dir or trace_path), from_option=bool(algorithms))
    if json_path == "-":  # stdout is the JSON; everything else goes to stderr
        from simnet.cli.console import stderr_console

        click.echo(results_json(results))
        console = stderr_console()
    else:
        console = _console()
        gpus = len(spec.topology.gpus)
        if results.runs:
            console.print(results_table(results, title=f"{spec.name}: {COLLECTIVES[spec.collective].title} on {gpus} "
                                                      f"GPU{'s' if gpus > 1 else ''} ({spec.topology.name}), "
                                                      f"{_model_label(spec)}"))
        if results.training is not None:
            for table in training_tables(results.training):
                console.print(table)
        if (costs := conditions_table(results)) is not None:
            console.print(costs)
        if results.steps:
            console.print(steps_table(results, _workload_label(spec)))
        for note in notes:
            console.print(note)
        _print_notes(console, results)
    for path, text in ((json_path, results_json), (csv_path, results_csv)):
        if path and str(path) != "-":
            console.print(f"wrote {write_text(path, text(results))}")
    if results.training is not None:
        if plot_dir:
            from simnet.report.plots import plot_steps

            console.print(f"wrote {plot_steps([results.training], Path(plot_dir) / 'step.png')}")
        if trace_path and not results.runs:
            from simnet.report.trace import write_training_trace

            console.print(f"wrote {write_training_trace(results.training, trace_path)}")
            return
    if (plot_dir or trace_path) and not any(run.moves_data for run in results.runs):
        if results.runs:
            console.print("nothing to plot or trace: over one GPU no data moves")
        return
    if plot_dir:
        from simnet.report.plots import heatmap_missing, plot_results

        for path in plot_results(results, plot_dir):
            console.print(f"wrote {path}")
        if heatmap_missing(results):
            console.print(f"no link_heatmap.png: {heatmap_missing(results)}")
    if trace_path:
        from simnet.report.trace import write_trace

        console.print(f"wrote {write_trace(results, trace_path)}")


def _refuse_plot_collisions(plot_dir: Path, files: list[tuple]) -> None:
    """``InputError`` when a file option names the ``--plot`` folder or a plot written into it."""
    from simnet.report.plots import PLOT_FILES

    folder = Path(plot_dir).resolve()
    for path, option in files:
        where = Path(path).resolve()
        if where == folder or where in {folder / name for name in PLOT_FILES}:
            raise InputError(f"{option}: {path} is {'the --plot folder' if where == folder else 'a plot --plot writes'}"
                             "; name another file")


def _run_jobs(spec, scenario: Path, json_path: str | None, plot_dir: Path | None) -> None:
    """``simnet run`` of a scenario with jobs: per job alone and together, and who slows whom."""
    import json

    from simnet import __version__
    from simnet.report.export import write_text
    from simnet.report.tables import interference_table, jobs_table
    from simnet.run.jobs import run_jobs

    try:
        result = run_jobs(spec.topology, spec.jobs, model=spec.model, calibration=spec.calibration)
    except ValueError as exc:  # the NCCL variables leave a job's auto nothing NCCL could run
        raise InputError(str(exc), scenario) from None
    document = json.dumps({"simnet": __version__, "scenario": spec.name, **result.to_dict()}, indent=1,
                          allow_nan=False)
    if json_path == "-":
        click.echo(document)
        return
    console = _console()
    console.print(jobs_table(result, f"{spec.name}: {len(spec.jobs)} jobs on {spec.topology.name}, "
                                     f"{_model_label(spec)}"))
    if len(spec.jobs) > 1:
        console.print(interference_table(result))
    if json_path:
        console.print(f"wrote {write_text(json_path, document)}")
    if plot_dir and len(spec.jobs) > 1:
        from simnet.report.plots import plot_interference

        Path(plot_dir).mkdir(parents=True, exist_ok=True)
        console.print(f"wrote {plot_interference(result, Path(plot_dir) / 'interference.png')}")


def _inputs_of(spec, scenario: Path) -> list[Path]:
    """The files a scenario reads: itself, its topology file and the calibration profiles
    (its own and its topology's)."""
    topology = spec.data.get("topology") if isinstance(spec.data, dict) else None
    files = [scenario] + ([scenario.parent / topology] if isinstance(topology, str) else [])
    return files + [Path(p) for p in (spec.calibration, spec.topology.calibration) if p]


def _algorithm_option(algorithms: tuple[str, ...], scenario: Path, collective: str = "allreduce") -> list[str]:
    """The algorithms ``-a`` names for ``collective`` (``all`` expanded, each once), or ``InputError``."""
    from simnet.schedule.catalog import algorithms_for

    table = algorithms_for(collective)
    unknown = [a for a in algorithms if a not in table and a not in ("auto", "all")]
    if unknown:
        raise InputError(f"--algorithm: unknown algorithm {unknown[0]!r} for {collective}; expected one of "
                         f"{', '.join(table)}, auto or all", scenario)
    return list(dict.fromkeys(n for a in algorithms for n in (table if a == "all" else [a])))


def _collective_option(spec, collective: str | None, algorithms: tuple[str, ...], scenario: Path) -> dict:
    """The scenario changes ``-c`` asks for: the collective, no workload (a data-parallel
    step is AllReduces) and, unless ``-a`` names them, the file's algorithms that this
    collective has (``auto`` when none)."""
    if collective is None or collective == spec.collective:
        return {}
    if spec.jobs or spec.training is not None:
        what = "jobs, which run AllReduces" if spec.jobs else "training, which picks the collectives of its step"
        raise InputError(f"--collective: the scenario has {what}; remove it to run another collective", scenario)
    changes = {"collective": collective, **({"workload": None} if spec.workload is not None else {})}
    if not algorithms:
        from simnet.schedule.catalog import algorithms_for

        table = algorithms_for(collective)
        changes["algorithms"] = [a for a in spec.algorithms if a in table or a == "auto"] or ["auto"]
        changes["every_algorithm"] = spec.every_algorithm
    return changes


def _collective_notes(spec, changes: dict) -> list[str]:
    """What ``-c`` left out of the file, one line each."""
    if "collective" not in changes:
        return []
    notes = []
    dropped = [a for a in spec.algorithms if a not in changes.get("algorithms", spec.algorithms)]
    if dropped:
        notes.append(f"not run for {changes['collective']} (it has no such algorithm): {', '.join(dropped)}")
    if "workload" in changes:
        notes.append(f"the scenario's training step is a data-parallel step of AllReduces: not shown for "
                     f"{changes['collective']}")
    return notes


def _gpu_counts(text: str, scenario: Path) -> list[int]:
    """``--gpus 8,16,32`` as counts, or ``InputError`` naming the item that is not one."""
    items = [v.strip() for v in text.split(",")]
    for item in items:
        if not re.fullmatch(r"[0-9]+", item) or int(item) < 1:
            raise InputError(f"--gpus: {item!r} is not a GPU count (a whole number, 1 or more) in {text!r}", scenario)
    return [int(item) for item in items]


def _workload_label(spec) -> str:
    from simnet import units
    from simnet.workloads.ddp import StepModel

    model = StepModel.from_workload(spec.workload)
    buckets = model.buckets()
    return (f"{units.format_time(model.compute_s, short=True)} compute, {units.format_size(model.gradient_bytes)} "
            f"gradient in {len(buckets)} bucket{'s' if len(buckets) > 1 else ''}, {len(spec.topology.gpus)} "
            f"GPU{'s' if len(spec.topology.gpus) > 1 else ''}")


def _model_label(spec) -> str:
    """The performance model a scenario runs, and the calibration profile refining it."""
    profile = spec.calibration or spec.topology.calibration
    return f"model {spec.model}" + (f", calibrated by {profile}" if spec.model == "nccl" and profile else "")


def _parse_option(parse, value, option: str, scenario: Path):
    try:
        return parse(value)
    except ValueError as exc:
        raise InputError(f"{option}: {str(exc).removeprefix('gpus: ')}", scenario) from None


def _with_progress(spec, scenario: Path, timeline: bool, from_option: bool = False):
    """Run the scenario, its progress on stderr (``simnet.cli.console.progress``); an algorithm
    that cannot run here is named where it was asked for (``-a``, else the file's line)."""
    from simnet.cli.console import progress
    from simnet.errors import Unsupported
    from simnet.io.yamlsource import load_yaml
    from simnet.run.simulate import run_scenario

    with progress("simulating") as update:
        try:
            return run_scenario(spec, progress=update, timeline=timeline)
        except Unsupported as exc:
            if from_option:
                raise InputError(f"--algorithm: {exc}", scenario) from None
            raise load_yaml(scenario)[1].error(("algorithms",), str(exc)) from None
        except ValueError as exc:
            raise InputError(str(exc), scenario) from None


def _print_notes(console, results) -> None:
    """Auto choices, the NCCL variables applied, algorithms of `all` skipped and warnings, one line each."""
    from simnet import units

    for algorithm, why in results.skipped.items():
        console.print(f"skipped {algorithm} (all): {why}")

    variables = ("nccl_algo", "nccl_proto", "nccl_nvls_enable", "nccl_collnet_enable")
    for run in results.runs:
        if run.auto and any(run.auto.get(k) for k in variables):
            applied = " ".join(f"{k.upper()}={run.auto[k]}" for k in variables if run.auto.get(k))
            console.print(f"{applied} applied: NCCL would choose among {', '.join(run.auto['candidates'])}")
            break
    groups: dict[tuple[str, str], list] = {}  # (algorithm row, kind) -> runs that raised it, in size order
    for run in results.runs:
        row = f"auto -> {run.algorithm}" if run.auto else run.algorithm
        for kind in dict.fromkeys(w.kind for w in run.warnings):
            groups.setdefault((row, kind), []).append(run)
    for (algorithm, kind), runs in groups.items():
        largest = runs[-1]
        alike = [w for w in largest.warnings if w.kind == kind]
        console.print(f"[yellow]warning[/yellow] {kind} ({algorithm}, {units.format_size(largest.size_bytes)}): "
                      f"{alike[0].message}")
        more = [f"{len(alike) - 1} more like it"] if len(alike) > 1 else []
        more += [f"also at {', '.join(units.format_size(r.size_bytes) for r in runs[:-1])}"] if len(runs) > 1 else []
        if more:
            console.print(f"  ({'; '.join(more)}: --json lists every one)")


def _split_values(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--gpus", "gpu_counts", default=None, help="GPU counts, e.g. 8,16,32 (first N ranks).")
@click.option("--set", "sets", multiple=True, metavar="KEY=V1,V2",
              help="Sweep a dotted parameter, e.g. topology.generate.nic_bandwidth=100Gb/s,400Gb/s (repeatable).")
@click.option("-a", "--algorithm", "algorithms", multiple=True, help="Algorithms instead of the file's.")
@click.option("-c", "--collective", type=click.Choice(list(COLLECTIVES)), default=None,
              help="Collective instead of the file's.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Directory for results.jsonl, results.csv and plots (default: sweep-<scenario name>).")
@click.option("--workers", type=click.IntRange(min=1, max=1024), default=None,
              help="Worker processes (default: the core count; never more than the points).")
@click.option("--scheduler", default=None, help="Dask scheduler address, or 'local' for a LocalCluster.")
@_friendly
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
    from simnet.report.paths import output_dir
    from simnet.report.sweep_report import plot_sweep, sweep_table, write_sweep_csv
    from simnet.run.sweep.executors import DaskExecutor, LocalExecutor
    from simnet.run.sweep.plan import plan_sweep
    from simnet.spec.scenario import load_scenario

    spec = load_scenario(scenario)
    counts = _gpu_counts(gpu_counts, scenario) if gpu_counts is not None else None
    axes = {}
    for item in sets:
        key, sep, values = item.partition("=")
        if not sep or not key.strip() or not _split_values(values):
            raise InputError(f"--set: expected KEY=V1,V2 (e.g. topology.generate.racks=2,4), got {item!r}", scenario)
        axes[key.strip()] = _split_values(values)
    changes = _collective_option(spec, collective, algorithms, scenario)
    notes = _collective_notes(spec, changes)
    if changes:
        spec = spec.replace(**changes)
    names = _algorithm_option(algorithms, scenario, spec.collective) if algorithms else None
    try:
        plan = plan_sweep(spec, counts, axes, names, every_algorithm="all" in algorithms if names else None)
    except ValueError as exc:  # the NCCL variables
        raise InputError(str(exc), scenario) from None
    out = output_dir(out or Path(f"sweep-{spec.name}"), "--out")
    workers = min(workers or os.cpu_count() or 1, len(plan.points))  # no idle workers, however many asked
    executor = DaskExecutor(scheduler, workers) if scheduler else LocalExecutor(workers)
    records, computed = _sweep_with_progress(plan, out, executor)
    console = _console()
    if computed < len(records):
        console.print(f"resumed from {out / 'results.jsonl'}: {len(records) - computed} points already done, "
                      f"{computed} computed now")
    skipped = [r for r in records if "skipped" in r]
    records = [r for r in records if "skipped" not in r]
    if not records:
        raise InputError(f"no algorithm of all runs at any point of the sweep: {skipped[0]['skipped']}", scenario)
    console.print(sweep_table(records, f"{spec.name}: sweep over {len(records)} points"))
    where: dict[tuple[str, str], list[str]] = {}  # (algorithm, why) -> the points it was skipped at
    for r in skipped:
        axes = ", ".join(f"{k}={v}" for k, v in r["set"].items())
        point = f"{r['gpus']} GPUs" + (f" ({axes})" if axes else "")
        where.setdefault((r["algorithm"], r["skipped"]), []).append(point)
    for note in notes + [f"skipped {name} at {'; '.join(dict.fromkeys(points))} (all): {why}"
                         for (name, why), points in where.items()]:
        console.print(note)
    if "iteration_time_s" not in records[0] and "training" not in records[0] and "workload" not in changes:
        console.print("no workload in the scenario: speedup.png and iteration_time.png need one "
                      "(workload: {compute_time: ..., gradient_size: ...})")
    for path in [write_sweep_csv(records, out / "results.csv"), out / "results.jsonl",
                 *plot_sweep(records, spec.name, out)]:
        console.print(f"wrote {path}")


def _sweep_with_progress(plan, out: Path, executor):
    from simnet.cli.console import progress
    from simnet.run.sweep.run import run_sweep

    with progress("sweep") as update:
        update(0, len(plan.points), "starting")
        return run_sweep(plan, out, executor,
                         progress=lambda done, running, total: update(done, total, f"{running} running"))


@main.command()
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("compare.png"),
              show_default=True, help="Where to draw cost against time (or time per option without costs).")
@_friendly
def compare(scenarios: tuple[Path, ...], output: Path) -> None:
    """Compare hardware options side by side: a scenario's variants, or several scenarios.

    For each option: the fastest algorithm, iteration time (with a workload) and AllReduce
    time at the largest size every option ran (options sharing no size are refused), speedup, busbw,
    bottleneck, cost and value per M$; the Pareto front is starred in the table and drawn
    in the plot.

    \b
    Example:
      simnet compare scenarios/capacity_planning.yaml
      simnet compare scenarios/cross_rack.yaml scenarios/single_node.yaml
    """
    from simnet.report.paths import IMAGE_SUFFIXES, output_file
    from simnet.report.sweep_report import compare_table, plot_compare
    from simnet.run.compare import compare_scenarios
    from simnet.spec.scenario import load_scenario

    output_file(output, "--output", IMAGE_SUFFIXES, inputs=scenarios)
    specs = [load_scenario(path) for path in scenarios]
    try:
        rows = compare_scenarios(specs)
    except ValueError as exc:
        raise InputError(str(exc), scenarios[0]) from None
    console = _console()
    console.print(compare_table(rows, "hardware options"))
    for row in rows:
        for algorithm, why in row["skipped"].items():
            console.print(f"skipped {algorithm} for {row['option']} (all): {why}")
    title = "cost against time" if any(row["cost"] is not None for row in rows) else "time per option"
    console.print(f"wrote {plot_compare(rows, f'{specs[0].name}: {title}', output)}")


@main.command()
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-t", "--topology", "topology_path", required=True, type=click.Path(path_type=Path),
              help="The topology the logs were measured on.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("calibration.yaml"), show_default=True,
              help="Where to write the profile (topologies and scenarios name it with calibration:).")
@click.option("--gpus", type=click.IntRange(min=2), multiple=True,
              help="Ranks of logs that do not list their devices: once for all, or once per log in order.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), default=None,
              help="Draw busbw against size, measured and predicted (a .png).")
@_friendly
def calibrate(logs: tuple[Path, ...], topology_path: Path, output: Path, gpus: tuple[int, ...],
              plot_path: Path | None) -> None:
    """Fit the nccl model to your own nccl-tests logs and write a calibration profile.

    Reads all_reduce_perf output as printed (several logs, e.g. from different GPU counts),
    fits latencies and rate factors on log time, prints measured against predicted per
    size, and writes OUTPUT for `calibration: OUTPUT` in a topology or scenario. Set the
    NCCL variables the logged runs had (NCCL_ALGO, NCCL_PROTO, NCCL_*_ENABLE) in the
    environment, so simnet fits what NCCL ran.

    \b
    Example:
      simnet calibrate my_2node.log my_4node.log -t topologies/my_cluster.yaml -o my_cluster.cal.yaml
    """
    import yaml

    from simnet.io.nccltests import read_log
    from simnet.model.calibration import calibration_document
    from simnet.report.export import write_text
    from simnet.report.paths import output_file
    from simnet.report.tables import calibration_table
    from simnet.run.calibrate import fit, points_of
    from simnet.run.simulate import nccl_env
    from simnet.topology.loader import load_topology

    topology = load_topology(topology_path)
    inputs = [*logs, topology_path, *([topology.calibration] if topology.calibration else [])]
    output_file(output, "--output", inputs=inputs)
    if plot_path:
        from simnet.report.paths import IMAGE_SUFFIXES

        output_file(plot_path, "--plot", IMAGE_SUFFIXES, inputs=inputs)
        if plot_path.resolve() == output.resolve():
            raise InputError("--output and --plot must name different files")
    try:
        env = nccl_env()
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if len(gpus) not in (0, 1, len(logs)):
        raise InputError(f"--gpus: given {len(gpus)} times for {len(logs)} logs; give it once for all, or once per log")
    points = points_of([read_log(log) for log in logs], topology, list(gpus) if len(gpus) > 1 else
                       (gpus[0] if gpus else None))
    try:
        result = _calibrate_with_progress(fit, topology, points, env)
    except ValueError as exc:  # the NCCL variables leave NCCL nothing to run for a row
        raise InputError(str(exc)) from None
    console = _console()
    console.print(calibration_table(result))
    if result.warning:
        console.print(f"[yellow]warning[/yellow] one rank count: {result.warning}")
    fitted = {"topology": str(topology_path), "logs": [str(log) for log in logs], "points": len(points),
              "ranks": result.rank_counts, "held": list(result.held), "at_bound": list(result.at_bound),
              "nccl_variables": env,
              "geomean_error": {"before": round(result.geomean(result.errors_before), 4),
                                "after": round(result.geomean(result.errors_after), 4)}}
    document = calibration_document(result.calibration, fitted)
    console.print(f"wrote {write_text(output, yaml.safe_dump(document, sort_keys=False))}")
    if plot_path:
        from simnet.report.plots import plot_calibration

        console.print(f"wrote {plot_calibration(result, plot_path)}")


def _calibrate_with_progress(fit, topology, points, env):
    from simnet.cli.console import progress

    with progress("calibrating") as update:
        return fit(topology, points, progress=update, env=env)


@main.command("algorithms")
@click.option("-c", "--collective", type=click.Choice(list(COLLECTIVES)), default="allreduce", show_default=True,
              help="The collective whose algorithms to list.")
def algorithms_command(collective: str) -> None:
    """List a collective's algorithms, their options and contention-free closed forms.

    \b
    Example:
      simnet algorithms
      simnet algorithms -c reduce_scatter
    """
    from rich.table import Table

    from simnet.schedule.catalog import algorithms_for
    from simnet.schedule.kinds import collective as lookup
    from simnet.schedule.registry import COMMON_OPTIONS

    kind = lookup(collective)
    table = Table(title=f"{kind.title} algorithms (S bytes, N ranks, path latency L, bandwidth B "
                        f"per direction): {kind.description}", title_justify="left", show_lines=True)
    for column in ("name", "what it does", "options", "closed form (contention-free)"):
        table.add_column(column, overflow="fold")
    for algorithm in algorithms_for(collective).values():
        table.add_row(algorithm.name, algorithm.description, ", ".join(algorithm.options) or "-",
                      algorithm.closed_form)
    table.add_row("auto", "what NCCL would run: its cost model's pick (NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE, "
                  "NCCL_COLLNET_ENABLE honoured), simulated beside every other algorithm NCCL could run here; the "
                  "table names any that was faster", "-",
                  "the pick's")
    console = _console()
    console.print(table)
    console.print(f"Every algorithm also takes {', '.join(COMMON_OPTIONS[:-1])} and {COMMON_OPTIONS[-1]}.")


@main.group()
def topo() -> None:
    """Check, show, draw or export a topology file.

    \b
    Example:
      simnet topo draw topologies/two_racks.yaml -o two_racks.png
    """


_TOPOLOGY = click.argument("topology", type=click.Path(dir_okay=False, path_type=Path))


_KIND_NAMES = {"ps": "parameter server", "host": "host bridge", "nic": "NIC"}


def _plural(word: str, count: int) -> str:
    if count == 1:
        return word
    return word + ("es" if word.endswith(("ch", "s")) else "s")


@topo.command("check")
@_TOPOLOGY
@_friendly
def topo_check(topology: Path) -> None:
    """Validate TOPOLOGY and print its size, bandwidth range and worst path.

    \b
    Example:
      simnet topo check topologies/dgx_h100.yaml
    """
    from simnet import units
    from simnet.topology.loader import load_topology
    from simnet.topology.summary import SAMPLED_SOURCES, summarize

    s = summarize(load_topology(topology))
    others = ", ".join(f"{count} {_plural(_KIND_NAMES.get(kind, kind), count)}"
                       for kind, count in sorted(s.kinds.items()) if kind != "gpu")
    groups = ", ".join(f"{count} {_plural(level, count)}" for level, count in
                       (("host", s.hosts), ("rack", s.racks), ("region", s.regions)) if count)
    sampled = "" if s.worst_exact else (f" (searched from one GPU per host, of at most {SAMPLED_SOURCES} hosts spread "
                                        "over the racks)")
    click.echo(f"ok: {topology}: {s.name}")
    click.echo(f"  GPUs:      {s.gpus} in {groups}")
    click.echo(f"  other:     {others or 'none'}")
    click.echo(f"  links:     {s.links} ({s.directed_links} directed)")
    if s.min_bandwidth is None:
        click.echo("  bandwidth: no links")
    else:
        click.echo(f"  bandwidth: {units.format_bandwidth(s.min_bandwidth)} .. "
                   f"{units.format_bandwidth(s.max_bandwidth)} ({s.min_bandwidth / 1e9:.4g} .. "
                   f"{s.max_bandwidth / 1e9:.4g} GB/s) per direction")
    if s.gpus == 1:
        click.echo("  worst GPU-to-GPU path: none (one GPU: an AllReduce moves no data)")
    else:
        click.echo(f"  worst GPU-to-GPU path: {units.format_time(s.worst_latency, short=True)} over {s.worst_hops} hops"
                   f" ({s.worst_pair[0]} -> {s.worst_pair[1]}){sampled}")


@topo.command("show")
@_TOPOLOGY
@click.option("--limit", type=click.IntRange(min=1), default=64, show_default=True, help="Most GPU rows to list.")
@_friendly
def topo_show(topology: Path, limit: int) -> None:
    """Print TOPOLOGY's GPUs (rank, host, rack, region) and its links by class.

    \b
    Example:
      simnet topo show topologies/two_racks.yaml
    """
    from simnet.report.tables import link_classes_table, ranks_table
    from simnet.topology.loader import load_topology

    topo_ = load_topology(topology)
    console = _console()
    console.print(ranks_table(topo_, limit))
    console.print(link_classes_table(topo_))


@topo.command("draw")
@_TOPOLOGY
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="Image to write (.png, .svg, .pdf).")
@_friendly
def topo_draw(topology: Path, output: Path) -> None:
    """Draw TOPOLOGY: GPUs grouped by host and rack, links coloured by bandwidth.

    \b
    Example:
      simnet topo draw topologies/two_racks.yaml -o two_racks.png
    """
    from simnet.report.paths import IMAGE_SUFFIXES, output_file
    from simnet.report.topology_plot import draw_topology
    from simnet.topology.loader import load_topology

    output_file(output, "--output", IMAGE_SUFFIXES, inputs=[topology])
    topo_ = load_topology(topology)
    click.echo(f"wrote {draw_topology(topo_, output)}")


@topo.command("export")
@_TOPOLOGY
@click.option("--format", "fmt", type=click.Choice(["graphml", "gexf", "json"]), default="graphml",
              show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="File to write (default: TOPOLOGY with the format's suffix).")
@_friendly
def topo_export(topology: Path, fmt: str, output: Path | None) -> None:
    """Export TOPOLOGY as GraphML, GEXF (Gephi) or node-link JSON for networkx.

    \b
    Example:
      simnet topo export topologies/two_racks.yaml --format graphml -o two_racks.graphml
    """
    from simnet.report.paths import output_file
    from simnet.topology.export import export_topology
    from simnet.topology.loader import load_topology

    output = output_file(output or topology.with_suffix(f".{fmt}"), "--output", inputs=[topology])
    topo_ = load_topology(topology)
    click.echo(f"wrote {export_topology(topo_, output, fmt)}")
