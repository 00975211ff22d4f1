"""``simnet calibrate``: fit a calibration profile to nccl-tests logs."""

from __future__ import annotations

import os
from pathlib import Path

import click

from simnet.cli.console import print_warning, print_warnings, stdout_console
from simnet.cli.shell import WholeRange, friendly
from simnet.errors import InputError

MISFIT = 0.5
"""Error (geometric mean) a fit may leave with a parameter at its bound before it is refused: the
parameters span 10x in bandwidth and a millisecond of latency each way, so a log they cannot
bring within 50 % of its rows is another machine's."""


@click.command()
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-t", "--topology", "topology_path", required=True, type=click.Path(path_type=Path),
              help="The topology the logs were measured on.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("calibration.yaml"), show_default=True,
              help="Where to write the profile (topologies and scenarios name it with calibration:).")
@click.option("--gpus", type=WholeRange(min=2), multiple=True,
              help="Ranks of logs that do not list their devices: once for all, or once per log in order.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), default=None,
              help="Draw busbw against size, measured and predicted (a .png).")
@friendly
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

    from simnet.io.files import write_text
    from simnet.io.nccltests import read_log
    from simnet.model.calibration import calibration_document
    from simnet.report.paths import output_file
    from simnet.report.tables import calibration_table
    from simnet.run.calibrate import fit, points_of
    from simnet.run.nccl_env import nccl_env
    from simnet.spec.scenario import topology_unread
    from simnet.topology.loader import load_topology

    seen = [Path(log).resolve() for log in logs]
    contents = {}  # a log's bytes -> the first name it was given by
    for i, log in enumerate(seen):
        if log in seen[:i]:
            raise InputError(f"{logs[i]} is given twice: its rows would count twice in the fit; give each log once")
        if log.is_file():
            first = contents.setdefault(log.read_bytes(), logs[i])
            if first != logs[i]:
                raise InputError(f"{logs[i]} holds the very bytes of {first}: a copy of one log, whose runs would "
                                 "count twice in the fit; give each log once")
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
    left = result.geomean(result.errors_after)
    if result.at_bound and left > MISFIT:
        raise InputError(f"the fit leaves {left:.0%} error with {', '.join(result.at_bound)} at the edge of "
                         "their range: these logs are not of the machine the topology describes (or not a healthy "
                         "run of it); no profile written", logs[0])
    console = stdout_console()
    console.print(calibration_table(result))
    print_warnings(console, [*topology_unread(topology), *result.unread])  # as simnet run says them
    if topology.calibration is not None:  # read as a run would, it would correct the model the fit corrects
        console.print(f"note: {topology_path} names the profile {topology.calibration}; the fit starts from NCCL's "
                      "own model, without it (a profile corrects the model, not another profile)")
    if result.warning:
        print_warning(console, f"one rank count: {result.warning}")
    if result.size_warning:
        print_warning(console, f"one size: {result.size_warning}")
    fitted = {"topology": _from_profile(topology_path, output), "logs": [_from_profile(log, output) for log in logs],
              "points": len(points),
              "ranks": result.rank_counts, "held": list(result.held), "at_bound": list(result.at_bound),
              "nccl_variables": env,
              "geomean_error": {"before": round(result.geomean(result.errors_before), 4),
                                "after": round(result.geomean(result.errors_after), 4)}}
    document = calibration_document(result.calibration, fitted, topology)
    console.print(f"wrote {write_text(output, yaml.safe_dump(document, sort_keys=False))}")
    if plot_path:
        from simnet.report.plots import plot_calibration

        console.print(f"wrote {plot_calibration(result, plot_path)}")


def _calibrate_with_progress(fit, topology, points, env):
    from simnet.cli.console import progress

    with progress("calibrating") as update:
        return fit(topology, points, progress=update, env=env)


def _from_profile(path: Path, profile: Path) -> str:
    """``path`` as the profile at ``profile`` names it: relative to the profile's folder, as a
    topology names its profile (the shell's working directory is gone once the file moves)."""
    return Path(os.path.relpath(path.resolve(), profile.resolve().parent)).as_posix()
