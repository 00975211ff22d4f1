"""``simnet replay-trace``: a recorded training step replayed on another topology."""

from __future__ import annotations

from pathlib import Path

import click

from simnet.cli.console import echo, print_warnings, stdout_console
from simnet.cli.shell import Real, WholeRange, friendly
from simnet.errors import InputError


@click.command("replay-trace")
@click.argument("traces", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-t", "--topology", "topology_path", required=True, type=click.Path(path_type=Path),
              help="The topology to replay the step on.")
@click.option("--ranks-per-trace", type=WholeRange(min=1), default=1, show_default=True,
              help="Each trace stands for this many ranks, its own and the next (a job whose ranks run alike).")
@click.option("--groups", "groups_path", type=click.Path(path_type=Path), default=None,
              help="Chakra traces: a YAML or JSON file of process group name -> its ranks (default: every rank).")
@click.option("--placement", default="packed", show_default=True,
              help="Where ranks go: packed, spread (across racks, then hosts) or random(seed), as for jobs.")
@click.option("--gpu-speedup", type=Real(), default=None,
              help="Divide every kernel's recorded time by this (another GPU's FLOP/s over the recorded one's; "
                   "default: kernels keep their recorded times).")
@click.option("--as-recorded", is_flag=True,
              help="Run each collective with the algorithm and protocol its recorded kernel ran, not NCCL's pick.")
@click.option("--model", type=click.Choice(["nccl", "rccl", "ideal"]), default=None,
              help="Performance model (default: the GPUs' library's).")
@click.option("--json", "json_path", default=None, help="Write the result as JSON; '-' for stdout.")
@click.option("--trace", "trace_path", type=click.Path(path_type=Path), default=None,
              help="Write a Chrome trace (Perfetto) of the recorded and the simulated step side by side.")
@friendly
def replay_trace(traces: tuple[Path, ...], topology_path: Path, ranks_per_trace: int, groups_path: Path | None,
                 placement: str,
                 gpu_speedup: float | None, as_recorded: bool, model: str | None, json_path: str | None,
                 trace_path: Path | None) -> None:
    """Replay the communication of profiled training steps on TOPOLOGY.

    TRACES are PyTorch profiler (Kineto) traces, .json or .json.gz, one per rank, or
    Chakra execution traces, NAME.RANK.et. Compute runs as recorded (scaled by --gpu-speedup),
    every collective through simnet's model and network; prints each step's time
    recorded and simulated and what each collective cost and left exposed.

    \b
    Example:
      simnet replay-trace rank0.json.gz rank1.json.gz -t topologies/dgx_h100.yaml
      simnet replay-trace rank0.json.gz --ranks-per-trace 16 -t topologies/two_racks.yaml --gpu-speedup 2.2
    """
    import json

    from simnet.io.files import write_text
    from simnet.report.paths import output_file
    from simnet.report.tables import trace_tables
    from simnet.run.replay_trace import read_traces, simulate_trace
    from simnet.topology.loader import load_topology

    seen = [Path(t).resolve() for t in traces]
    for i, path in enumerate(seen):
        if path in seen[:i]:
            raise InputError(f"{traces[i]} is given twice; give each rank's trace once")
    topology = load_topology(topology_path)
    _refuse_bad_flags(topology, placement, gpu_speedup)
    groups, groups_source = None, None
    if groups_path is not None:
        from simnet.io.yamlsource import load_yaml

        groups, groups_source = load_yaml(groups_path)
        if not isinstance(groups, dict):
            raise InputError("expected a mapping of process group name -> its ranks", groups_path)
    inputs = [*traces, topology_path, *([groups_path] if groups_path else []),
              *([topology.calibration] if topology.calibration else [])]
    for path, option in ((json_path, "--json"), (trace_path, "--trace")):
        if path is not None and str(path) != "-":
            output_file(Path(path), option, inputs=inputs)
    if trace_path is not None and str(trace_path) == "-":
        raise InputError("--trace: '-' (standard output) is for --json only; name a file")
    if json_path and trace_path and Path(json_path).resolve() == Path(trace_path).resolve():
        raise InputError("--json and --trace must name different files")
    read = read_traces(traces, ranks_per_trace, groups, len(topology.gpus), groups_source)
    replayed = simulate_trace(read, topology,
                              placement=placement,
                              gpu_speedup=gpu_speedup, as_recorded=as_recorded,
                              **({"model": model} if model else {}))
    text = json.dumps(replayed.to_dict(), indent=2)
    if json_path == "-":  # stdout holds the JSON alone; the trace file is still written
        echo(text)
        if trace_path:
            from simnet.report.trace import write_replay_trace

            write_replay_trace(replayed, trace_path)
        return
    console = stdout_console()
    for table in trace_tables(replayed):
        console.print(table)
    print_warnings(console, [*_unread(topology, placement, read, replayed.gpus), *replayed.warnings])
    if json_path:
        console.print(f"wrote {write_text(json_path, text)}")
    if trace_path:
        from simnet.report.trace import write_replay_trace

        written, notes = write_replay_trace(replayed, trace_path)
        console.print(f"wrote {written}")
        for note in notes:
            console.print(note)


def _unread(topology, placement: str, ranks: list, gpus: list[str]) -> list:
    """``key_unread`` of the topology's parameters that built nothing (as ``simnet run``
    says them), of the network keys the ranks' GPUs (``gpus``) reach no link of (as ``gpus:``
    says them), and of a ``--placement`` with nothing to choose: the traces' ``ranks`` (one
    ``RankTrace`` each) take every GPU of the topology."""
    from simnet.results.result import Finding
    from simnet.spec.jobs import choose_gpus
    from simnet.spec.scenario import network_keys_unread, topology_unread

    every = list(topology.gpus)
    said = None if placement == "packed" else \
        f": the traces' {len(ranks)} ranks take every GPU of {topology.name}, so there was nothing to choose and" \
        if len(ranks) == len(every) else " chose the GPUs packed does (the GPUs lie so), so" \
        if set(choose_gpus(topology, every, len(ranks), placement)) == set(every[:len(ranks)]) else None
    moot = [Finding("key_unread", "--placement", f"--placement {placement}{said} it changed nothing here")] \
        if said else []
    here = network_keys_unread(topology.subset(gpus), [], f"the traces' {len(gpus)} ranks' GPUs") if len(gpus) > 1 \
        else []
    return [*topology_unread(topology), *here, *moot]


def _refuse_bad_flags(topology, placement: str, gpu_speedup: float | None) -> None:
    """One line naming the flag for a placement or speed-up that cannot be: the replay said
    ``gpu_speedup must be ...`` or ``placement 'x': ...``, naming no flag."""
    import math

    from simnet.spec.jobs import choose_gpus

    if gpu_speedup is not None and not (math.isfinite(gpu_speedup) and 1e-6 <= gpu_speedup <= 1e6):
        raise InputError(f"--gpu-speedup: {gpu_speedup:g} is not a ratio of FLOP/s; give one from 1e-06 to 1e+06 "
                         "(another GPU's FLOP/s over the recorded one's, e.g. 2.2)")
    try:
        choose_gpus(topology, list(topology.gpus), 1, placement)
    except ValueError as exc:
        raise InputError(f"--placement: {str(exc).removeprefix('placement ')}") from None
