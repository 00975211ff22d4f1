"""``simnet run``: a scenario's runs (or its jobs), printed, and written as JSON, CSV, plots and traces."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import click

from simnet.cli.choices import algorithm_option, collective_notes, collective_option, refuse_algorithms_no_size_reads
from simnet.cli.console import echo, print_warning, print_warnings, stdout_console
from simnet.cli.shell import Whole, friendly, loading
from simnet.errors import Cut, InputError
from simnet.schedule.kinds import COLLECTIVES


@click.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-a", "--algorithm", "algorithms", multiple=True,
              help="Algorithm to run instead of the file's (repeatable; 'auto' or 'all' too).")
@click.option("-c", "--collective", type=click.Choice(list(COLLECTIVES)), default=None,
              help="Collective instead of the file's (sizes in nccl-tests' convention).")
@click.option("-s", "--size", "sizes", multiple=True,
              help="Size instead of the file's, e.g. '64 MiB' or '8 B .. 1 GiB x2' (repeatable).")
@click.option("-g", "--gpus", type=Whole(), default=None,
              help="Use the first N of the scenario's GPUs (its gpus:, else the topology's).")
@click.option("--model", type=click.Choice(["nccl", "rccl", "ideal"]), default=None,
              help="Performance model instead of the file's: nccl (what nccl-tests measures), rccl (on AMD GPUs: "
                   "what rccl-tests measures) or ideal (line rate).")
@click.option("--json", "json_path", default=None, help="Write results as JSON; '-' for stdout.")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path), default=None,
              help="Write the flat results table as CSV.")
@click.option("--plot", "plot_dir", type=click.Path(path_type=Path), default=None,
              help="Write plots (time, busbw, link utilisation, heatmap) into this directory.")
@click.option("--trace", "trace_path", type=click.Path(path_type=Path), default=None,
              help="Write a Chrome trace (Perfetto, chrome://tracing) of the largest size.")
@friendly
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
    with loading():
        from simnet.io.files import write_text
        from simnet.report.export import results_csv, results_json
        from simnet.report.paths import PLOT_FILES, output_dir, output_file
        from simnet.report.tables import conditions_table, results_table, steps_table, training_tables
        from simnet.run.sweep.plan import check_points, files_read
        from simnet.spec.scenario import load_scenario
        from simnet.spec.values import MAX_SIZES, parse_sizes

    spec = load_scenario(scenario, collective, runs_on_part=gpus is not None)  # (-g: reachability on its GPUs)
    try:  # the file whole: its sweep: and variants: too, which simnet sweep and compare read
        check_points(spec)
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(str(exc), scenario) from None
    said_g = []  # -g that keeps every GPU the scenario has: said with the answer, as -c's notes
    if gpus is not None:
        if gpus == len(spec.topology.gpus):
            said_g = [(f"--gpus {gpus}: the scenario runs on {gpus} GPUs already, so it changed nothing here",
                       "--gpus")]
        spec = _first_gpus(spec, gpus, scenario, collective)
    for path, option in ((csv_path, "--csv"), (trace_path, "--trace")):
        if path is not None and str(path) == "-":
            raise InputError(f"{option}: '-' (standard output) is for --json only; name a file")
    files = [(p, option) for p, option in ((json_path, "--json"), (csv_path, "--csv"), (trace_path, "--trace"))
             if p and str(p) != "-"]
    inputs = files_read(spec)
    for path, option in files:
        if not _in_plot_folder_to_make(path, plot_dir):  # (that folder is checked as --plot's, below)
            output_file(path, option, inputs=inputs)
    same = {Path(p).resolve() for p, _ in files}
    if len(same) < len(files):
        raise InputError("--json, --csv and --trace must name different files")
    if plot_dir:
        output_dir(plot_dir, "--plot", inputs, PLOT_FILES)
        _refuse_plot_collisions(plot_dir, files)
    refuse_algorithms_no_size_reads(spec, algorithms, sizes, scenario)
    changes = collective_option(spec, collective, algorithms, scenario)
    notes = collective_notes(spec, changes, algorithms)  # before -a joins the changes
    twice = next((a for i, a in enumerate(algorithms) if a in algorithms[:i]), None)
    if twice is not None:  # as the file's algorithms: and -s refuse one given twice (a sweep's are one point each)
        raise InputError(f"--algorithm: {twice} is given twice; give each algorithm once", scenario)
    if algorithms:
        changes["algorithms"] = algorithm_option(algorithms, scenario, changes.get("collective", spec.collective))
        changes["every_algorithm"] = "all" in algorithms
    if sizes:
        changes["sizes"] = [each for size in sizes for each in _parse_option(parse_sizes, size, "--size", scenario)]
        if len(set(changes["sizes"])) < len(changes["sizes"]):
            from simnet import units

            twice = next(x for k, x in enumerate(changes["sizes"]) if x in changes["sizes"][:k])
            raise InputError(f"--size: {units.format_size(twice)} is given twice; give each size once", scenario)
        if len(changes["sizes"]) > MAX_SIZES:
            raise InputError(f"--size: {len(changes['sizes']):,} sizes, over the {MAX_SIZES} simnet runs in one "
                             "scenario", scenario)
    if model is not None:
        from simnet.model.interface import resolve_model

        topology = changes.get("topology", spec.topology)
        changes["model"] = _parse_option(lambda name: resolve_model(name, topology), model, "--model", scenario)
    spec = spec.replace(**changes)
    if spec.jobs:
        if csv_path or trace_path or algorithms or sizes:
            raise InputError(f"{scenario}: with jobs, each job has its own algorithm and size; "
                             "--algorithm, --size, --csv and --trace do not apply (--json and --plot do)")
        if plot_dir and len(spec.jobs) == 1:  # it drew nothing, without a word
            raise InputError(f"{scenario}: --plot draws how jobs slow each other, and this scenario has one job: "
                             "add another (or a background job), or leave --plot out")
        return _run_jobs(spec, scenario, json_path, plot_dir)
    if csv_path and not spec.sizes:  # it wrote a header and no row
        raise InputError(f"{scenario}: --csv writes a row per run of the scenario's sizes, and it has none: its "
                         "training step is in --json (or give sizes)")
    results = _with_progress(spec, scenario, timeline=bool(plot_dir or trace_path), from_option=bool(algorithms))
    said = [*((note, "--collective") for note in notes), *said_g]  # what -c left out of the file, a moot -g
    if said:  # said with the answer, in the JSON too
        from dataclasses import replace

        from simnet.results.result import Finding

        results = replace(results, warnings=[*results.warnings, *(Finding("key_unread", option, note)
                                                                   for note, option in said)])
    if json_path == "-":  # stdout is the JSON; everything else goes to stderr
        from simnet.cli.console import stderr_console

        echo(results_json(results))
        console = stderr_console()
    else:
        console = stdout_console()
        gpus = len(spec.topology.gpus)
        if results.runs:
            console.print(results_table(results, title=f"{spec.name}: {COLLECTIVES[spec.collective].title} on {gpus} "
                                                      f"GPU{'s' if gpus > 1 else ''} ({spec.topology.name}), "
                                                      f"{_model_label(spec)}"))
        if results.training is not None:
            if results.training["calibration"]:  # (a line of its own: the step's table is too narrow to hold a path)
                console.print(f"training step calibrated by {results.training['calibration']}", soft_wrap=True)
            for table in training_tables(results.training):
                console.print(table)
        if (costs := conditions_table(results)) is not None:
            console.print(costs)
        if results.steps:
            console.print(steps_table(results, _workload_label(spec)))
        _print_notes(console, results)
    _make_plot_folder_for(files, plot_dir)
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
            why = "over one GPU no data moves" if all(run.gpus <= 1 for run in results.runs) else \
                "a run of 0 B moves no data" if all(run.size_bytes == 0 for run in results.runs) else \
                "no run moved data (over one GPU, or of 0 B)"
            console.print(f"nothing to plot or trace: {why}")
        return
    if plot_dir:
        from simnet.report.plots import heatmap_missing, plot_results

        for path in plot_results(results, plot_dir):
            console.print(f"wrote {path}")
        if heatmap_missing(results):
            console.print(f"no link_heatmap.png: {heatmap_missing(results)}")
    if trace_path:
        from simnet.report.trace import write_trace

        written, notes = write_trace(results, trace_path)
        console.print(f"wrote {written}" + "".join(f"\n  trace: {note}" for note in notes))


def _first_gpus(spec, gpus: int, scenario: Path, collective: str | None):
    """The scenario on the first ``gpus`` of its GPUs (``-g``), checked again as its file with
    those GPUs would be: jobs that no longer fit, faults and slowdowns of GPUs left out are
    said on their own lines, as for ``gpus:`` in the file."""
    from simnet.io.yamlsource import load_yaml
    from simnet.spec.scenario import scenario_from_dict

    picked = spec.data.get("gpus", "all") if isinstance(spec.data, dict) else "all"
    if picked != "all" and not 1 <= gpus <= len(spec.topology.gpus):
        total = sum(1 for node in spec.topology.nodes if spec.topology.kind(node) == "gpu")
        raise InputError(f"--gpus: {gpus} is out of range; the scenario's gpus: picks {len(spec.topology.gpus)} "
                         f"of the topology's {total} GPUs and -g takes the first N of those: give 1 to "
                         f"{len(spec.topology.gpus)}, or write gpus: all in the file", scenario)
    topology = _parse_option(spec.topology.subset, gpus, "--gpus", scenario)
    data, source = load_yaml(scenario)
    try:
        return scenario_from_dict({**data, "gpus": list(topology.gpus)}, source, base=scenario.parent,
                                  collective=collective, network=spec.topology)
    except InputError as exc:
        raise InputError(f"{exc.message} (with --gpus {gpus})", exc.file, exc.line) from None


def _in_plot_folder_to_make(path, plot_dir: Path | None) -> bool:
    """Whether ``path`` goes straight into the ``--plot`` folder, which does not exist yet
    (simnet makes it; a file there needs no folder of its own)."""
    return plot_dir is not None and not Path(plot_dir).exists() and \
        Path(path).parent.resolve() == Path(plot_dir).resolve()


def _make_plot_folder_for(files: list[tuple], plot_dir: Path | None) -> None:
    """Make the ``--plot`` folder before the first of ``files`` is written into it (after
    the run: a refused or failed run leaves no folder behind)."""
    if any(_in_plot_folder_to_make(path, plot_dir) for path, _ in files):
        Path(plot_dir).mkdir(parents=True, exist_ok=True)


def _refuse_plot_collisions(plot_dir: Path, files: list[tuple]) -> None:
    """``InputError`` when a file option names the ``--plot`` folder or a plot written into it."""
    from simnet.report.paths import PLOT_FILES

    folder = Path(plot_dir).resolve()
    for path, option in files:
        where = Path(path).resolve()
        if where == folder or where in {folder / name for name in PLOT_FILES}:
            raise InputError(f"{option}: {path} is {'the --plot folder' if where == folder else 'a plot --plot writes'}"
                             "; name another file")


def _on_their_lines(findings: list, scenario: Path) -> list:
    """``findings`` of a run of jobs, each that names a job's key (``jobs[0].period: ...``, said
    once the runs are timed) with the file and line of that key, as the scenario's own are."""
    import re
    from dataclasses import replace

    from simnet.io.yamlsource import load_yaml

    source, located = None, []
    for finding in findings:
        key = re.fullmatch(r"jobs\[(\d+)\]\.(\w+)", finding.link)
        if key and finding.message.startswith(f"{finding.link}: "):
            source = source or load_yaml(scenario)[1]
            where = f"{source.file}:{source.line(('jobs', int(key[1]), key[2]))}"
            finding = replace(finding, message=f"{finding.link} ({where}){finding.message[len(finding.link):]}")
        located.append(finding)
    return located


def _run_jobs(spec, scenario: Path, json_path: str | None, plot_dir: Path | None) -> None:
    """``simnet run`` of a scenario with jobs: per job alone and together, and who slows whom."""
    import json

    from simnet import __version__
    from simnet.io.files import write_text
    from simnet.report.tables import interference_table, jobs_table
    from simnet.run.jobs import run_jobs
    from simnet.spec.conditions import FaultError
    from simnet.spec.jobs import JobError
    from simnet.spec.scenario import fault_refusal

    try:
        with _progress_told("simulating jobs") as told:
            result = run_jobs(spec.topology, spec.jobs, model=spec.model, calibration=spec.calibration,
                              faults=spec.faults, progress=told)
    except InputError:
        raise  # names its own file and line (a calibration profile's)
    except JobError as exc:  # a job's algorithm its GPUs cannot run: on the job's line
        from simnet.io.yamlsource import load_yaml

        raise load_yaml(scenario)[1].error(("jobs", *exc.loc), exc.message) from None
    except FaultError as exc:  # a fault that cuts a job's GPUs off from each other: on the fault's line
        from simnet.io.yamlsource import load_yaml

        raise load_yaml(scenario)[1].error(("faults", *exc.loc), exc.message) from None
    except Cut as exc:
        raise fault_refusal(spec, exc) from None
    except ValueError as exc:  # the NCCL variables leave a job's auto nothing NCCL could run
        raise InputError(str(exc), scenario) from None
    said = [*spec.warnings, *_on_their_lines(result.warnings, scenario)]
    warnings = [{"kind": w.kind, "link": w.link, "message": w.message} for w in said]
    document = json.dumps({"simnet": __version__, "scenario": spec.name, **result.to_dict(),
                           **({"warnings": warnings} if warnings else {})}, indent=1, allow_nan=False)
    if json_path == "-":  # stdout is the JSON; the rest goes to stderr
        from simnet.cli.console import stderr_console

        echo(document)
        print_warnings(stderr_console(), said)
        _plot_jobs(stderr_console(), result, plot_dir)
        return
    console = stdout_console()
    jobs = f"{len(spec.jobs)} job{'s' if len(spec.jobs) > 1 else ''}"
    console.print(jobs_table(result, f"{spec.name}: {jobs} on {spec.topology.name}, {_model_label(spec)}"))
    if len(spec.jobs) > 1:
        console.print(interference_table(result))
    print_warnings(console, said)
    if json_path:
        _make_plot_folder_for([(json_path, "--json")], plot_dir)
        console.print(f"wrote {write_text(json_path, document)}")
    _plot_jobs(console, result, plot_dir)


def _plot_jobs(console, result, plot_dir: Path | None) -> None:
    """The interference plot of two or more jobs into ``plot_dir`` (with ``--json -`` too,
    where it was skipped without a word)."""
    if plot_dir:
        from simnet.report.plots import plot_interference

        Path(plot_dir).mkdir(parents=True, exist_ok=True)
        console.print(f"wrote {plot_interference(result, Path(plot_dir) / 'interference.png')}")


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
    return f"model {spec.model}" + (f", calibrated by {profile}" if spec.model != "ideal" and profile else "")


def _parse_option(parse, value, option: str, scenario: Path):
    try:
        return parse(value)
    except ValueError as exc:
        raise InputError(f"{option}: {str(exc).removeprefix(option.lstrip('-') + ': ')}", scenario) from None


def _with_progress(spec, scenario: Path, timeline: bool, from_option: bool = False):
    """Run the scenario, its progress on stderr (``simnet.cli.console.progress``); an algorithm
    that cannot run here is named where it was asked for (``-a``, else the file's line)."""
    from simnet.errors import Unsupported
    from simnet.io.budget import TooLarge
    from simnet.io.yamlsource import load_yaml
    from simnet.spec.scenario import fault_refusal

    with loading():  # the engines
        from simnet.run.scenario import run_scenario

    with _progress_told("simulating") as told:
        try:
            return run_scenario(spec, progress=told, timeline=timeline)
        except InputError:
            raise  # names its own file and line (a calibration profile's)
        except Unsupported as exc:
            option = getattr(exc, "option", None)  # OptionUnsupported: on the option's own line
            if option is not None and option in spec.options:
                where = ("options", option)
                raise load_yaml(scenario)[1].error(where, str(exc).removeprefix(f"{option}: ")) from None
            if from_option:
                raise InputError(f"--algorithm: {exc}", scenario) from None
            source = load_yaml(scenario)[1]
            # the file's algorithms, else what asks NCCL for the collective: its collective and sizes, else the step
            # whose exchanges it runs (round ay F6: a training step's AllGather under NCCL_ALGO=Tree was said on an
            # `algorithms` line the file does not have; review 93 M2: so was a plain collective's)
            where = next((key for key in ("algorithms", "collective", "sizes", "size", "training", "workload")
                          if source.writes(key)), "algorithms")
            raise source.error((where,), str(exc)) from None
        except Cut as exc:
            raise fault_refusal(spec, exc) from None
        except TooLarge as exc:
            raise _too_large_where(spec, scenario, exc) from None
        except ValueError as exc:
            raise InputError(str(exc), scenario) from None


def _too_large_where(spec, scenario: Path, exc) -> InputError:
    """A run too large for the memory, refused on the line of the option that makes it so
    (``chunk_size`` cutting pieces small, ``channels`` many: without it, every run fits), else
    on the scenario (round ab F7: a 1 B chunk_size named neither line nor key)."""
    from dataclasses import replace

    from simnet.io.budget import TooLarge
    from simnet.io.yamlsource import load_yaml
    from simnet.run.scenario import check_runs_fit, run_sizes

    source = load_yaml(scenario)[1]
    for key in ("chunk_size", "channels"):
        if key in spec.options and ("options", key) in source.lines:
            try:
                check_runs_fit(replace(spec, options={k: v for k, v in spec.options.items() if k != key}),
                               run_sizes(spec))
            except TooLarge:
                continue
            return source.error(("options", key), f"{exc} (it fits without this option)")
    return InputError(str(exc), scenario)


@contextmanager
def _progress_told(label: str):
    """``simnet.cli.console.progress`` as ``told(done, total)`` for the runs of a command,
    and, while a long replay inside one runs, its share and time left as the status. A run
    may replay several times (faulted and healthy, hierarchical's two ways, auto's
    candidates): from the second on the status says which, so it never seems to go back."""
    from simnet.cli.console import progress
    from simnet.engine.progress import listening

    with progress(label) as update:
        runs = [0, 0]  # done, total
        replays = [0]  # of the run under way

        def told(done: int, total: int) -> None:
            runs[:] = done, total
            replays[0] = 0
            update(done, total)

        def started() -> None:
            replays[0] += 1

        def within(share: float, left_s: float | None) -> None:
            which = f"this run's replay {replays[0]}" if replays[0] > 1 else "this run"
            left = "" if left_s is None else f", about {left_s:.0f} s left"
            update(*runs, status=f"{which} {share:.0%}{left}")

        with listening(within, started):
            yield told


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
    msccl = [run for run in results.runs if run.auto and run.auto.get("nccl_pick", {}).get("algorithm") == "MSCCL"]
    if msccl:  # why auto ran direct: RCCL's MSCCL schedule, once per file
        for file in dict.fromkeys(run.auto["nccl_pick"]["file"] for run in msccl):
            run = next(r for r in msccl if r.auto["nccl_pick"]["file"] == file)
            console.print(f"auto -> direct (MSCCL): {run.auto['nccl_pick']['why']}")
    # what every run says is the scenario's (a key it makes moot, an option none of its algorithms
    # takes): said once, not once per algorithm, nor hidden behind another of its kind
    everywhere = set.intersection(*({(w.kind, w.message) for w in run.warnings} for run in results.runs)) \
        if len(results.runs) > 1 else set()
    groups: dict[tuple[str, str], list] = {}  # (algorithm row, kind) -> runs that raised it, in size order
    for run in results.runs:
        row = f"auto -> {run.algorithm}" if run.auto else run.algorithm
        for kind in dict.fromkeys(w.kind for w in run.warnings if (w.kind, w.message) not in everywhere):
            groups.setdefault((row, kind), []).append(run)
    print_warnings(console, results.warnings)  # the scenario's own no run carries (a training step alone), -c's
    print_warnings(console, [w for w in results.runs[0].warnings if (w.kind, w.message) in everywhere]
                   if everywhere else [])
    for (algorithm, kind), runs in groups.items():
        largest = runs[-1]
        alike = [w for w in largest.warnings if w.kind == kind and (w.kind, w.message) not in everywhere]
        print_warning(console, f"{kind} ({algorithm}, {units.format_size(largest.size_bytes)}): {alike[0].message}")
        more = [f"{len(alike) - 1} more like it"] if len(alike) > 1 else []
        more += [f"also at {', '.join(units.format_size(r.size_bytes) for r in runs[:-1])}"] if len(runs) > 1 else []
        if more:
            console.print(f"  ({'; '.join(more)}: --json lists every one)")
