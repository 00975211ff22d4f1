"""``simnet compare``: hardware options side by side, time against cost."""

from __future__ import annotations

from pathlib import Path

import click

from simnet.cli.console import print_warnings, stdout_console
from simnet.cli.shell import friendly, loading
from simnet.errors import InputError


@click.command()
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("compare.png"),
              show_default=True, help="Where to draw cost against time (tokens/s for training, GPU batches/s "
                                      "for workloads on different GPU counts; without costs, one bar per option).")
@friendly
def compare(scenarios: tuple[Path, ...], output: Path) -> None:
    """Compare hardware options side by side: a scenario's variants, or several scenarios.

    For each option: the fastest algorithm, iteration time (with a workload) and AllReduce
    time at the largest size every option ran (options sharing no size are refused), speedup, busbw,
    bottleneck, cost and value per M$; the Pareto front (cost against the time a unit of work
    takes: a token of a training step, a GPU's batch of an iteration, the collective) is
    starred in the table and drawn in the plot.

    \b
    Example:
      simnet compare scenarios/capacity_planning.yaml
      simnet compare scenarios/cross_rack.yaml scenarios/single_node.yaml
    """
    with loading():  # the garbage collector skips them (shell.loading)
        from simnet.report.paths import IMAGE_SUFFIXES, output_file
        from simnet.report.sweep_report import compare_table, plot_compare
        from simnet.run.compare import CompareError, compare_scenarios, compare_warnings, option_findings, unsaid
        from simnet.run.sweep.plan import files_read
        from simnet.spec.scenario import load_scenario

    seen = [Path(path).resolve() for path in scenarios]
    for i, path in enumerate(seen):
        if path in seen[:i]:
            raise InputError(f"{scenarios[i]} is given twice: each option is one scenario file, once")
    specs = [load_scenario(path) for path in scenarios]
    if len(specs) > 1:
        names = [spec.name for spec in specs]
        for i, name in enumerate(names):
            if name in names[:i]:  # the rows and the plot name each option by its scenario's name
                from simnet.io.yamlsource import load_yaml

                raise load_yaml(scenarios[i])[1].error(("name",), (
                    f"{name!r} names {scenarios[names.index(name)]} too: the comparison's rows are named by their "
                    "scenarios; give each file its own name"))
        for path, spec in zip(scenarios, specs):
            if spec.variants:  # each file is one option: its variants (and their costs) would not run
                from simnet.io.yamlsource import load_yaml

                raise load_yaml(path)[1].error(("variants",), (
                    f"compare of {len(specs)} files ranks each file as one option, so its {len(spec.variants)} "
                    "variants would not run; compare this file alone, or remove variants"))
    output_file(output, "--output", IMAGE_SUFFIXES, inputs=[f for spec in specs for f in files_read(spec)])
    try:
        rows = compare_scenarios(specs)
    except InputError:
        raise  # names its own file and line (a calibration profile's)
    except CompareError as exc:  # where in which file the refused option is written
        from simnet.io.yamlsource import load_yaml

        raise load_yaml(scenarios[exc.scenario])[1].error(exc.loc, exc.message) from None
    except ValueError as exc:
        raise InputError(str(exc), scenarios[0]) from None
    console = stdout_console()
    console.print(compare_table(rows, "hardware options"))
    for row in rows:
        for algorithm, why in row["skipped"].items():
            console.print(f"skipped {algorithm} for {row['option']} (all): {why}")
    said = compare_warnings(specs)  # (a job's key the file makes moot is said there, once)
    print_warnings(console, said + unsaid(option_findings(rows), said))
    named = specs[0].name if len(specs) == 1 else " vs ".join(spec.name for spec in specs)  # (files: each an option)
    console.print(f"wrote {plot_compare(rows, named, output)}")
