"""A scenario's runs: every (size, algorithm), its data-parallel workload and its training step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from simnet.errors import Unsupported
from simnet.results.analysis import after_end
from simnet.results.result import Finding, Result, Results
from simnet.run.nccl_env import nccl_env
from simnet.run.point import calibration_of
from simnet.run.simulate import (
    calibration_said,
    check_fits,
    proto_unread,
    reads_nccl_proto,
    reductions_unread,
    simulate,
    steering_variables,
    unread_options,
)
from simnet.run.training import training_step
from simnet.schedule.kinds import ALLREDUCE
from simnet.schedule.kinds import collective as lookup_collective
from simnet.topology.generators import ALGORITHM_KEYS
from simnet.tuning.rccl import MSCCL_VARIABLES
from simnet.tuning.tables import P2P_CHANNEL_VARIABLES
from simnet.workloads.ddp import StepModel

__all__ = ["run_scenario", "run_sizes", "read_by_any", "check_runs_fit", "nccl_choice_unread",
           "scenario_choices_unread", "step_reads"]


def run_scenario(scenario, progress: Callable[[int, int], None] | None = None, timeline: bool = False) -> Results:
    """Simulate every (size, algorithm) of ``scenario``, in size-major order.

    ``timeline=True`` keeps link loads over time for the runs at the largest size (what
    plots and traces show). With a ``workload`` the result also holds one training-step
    summary per algorithm, from the AllReduce time of each gradient bucket size; with
    ``training``, the transformer's step (``simnet.run.training.step_time``). A scenario of
    ``all`` algorithms skips those its topology cannot run (``Unsupported``), saying why in
    ``Results.skipped``; one it names is refused.
    """
    model = StepModel.from_workload(scenario.workload, scenario.topology.gpus) if scenario.workload else None
    buckets = sorted(set(model.buckets())) if model else []
    # the training step's exchanges are the last step (their replays are none of a run's)
    total = len(set(scenario.sizes) | set(buckets)) * len(scenario.algorithms) + (scenario.training is not None)
    largest = max(scenario.sizes, default=0)
    done = 0
    if progress:
        progress(done, total)

    skipped: dict[str, str] = {}
    if total > 1:  # a run too large for the memory is refused before the others ran, not after
        check_runs_fit(scenario, run_sizes(scenario))

    def each_algorithm(size: int, timeline: bool) -> dict[str, Result]:
        """Every algorithm of the scenario at ``size``; auto reuses the runs it would repeat."""
        nonlocal done
        results: dict[str, Result] = {}
        for algorithm in sorted(scenario.algorithms, key=lambda a: a == "auto"):
            try:
                if algorithm not in skipped:
                    results[algorithm] = simulate(scenario.topology, algorithm, size, timeline=timeline,
                                                  model=scenario.model, calibration=scenario.calibration,
                                                  collective=scenario.collective,
                                                  reuse=results, **scenario.conditions(), **scenario.options)
            except Unsupported as exc:
                if not scenario.every_algorithm:
                    raise
                skipped[algorithm] = str(exc)
            done += 1
            if progress:
                progress(done, total)
        return results

    by_size = {size: each_algorithm(size, timeline and size == largest) for size in dict.fromkeys(scenario.sizes)}
    by_bucket = {size: by_size[size] if size in by_size else each_algorithm(size, False) for size in buckets}
    ran = [a for a in scenario.algorithms if a not in skipped]
    # an option none of the file's algorithms takes is said once, below; one another algorithm of the file takes
    # counts, unsaid by a run that takes no such option, but not a reduce_bandwidth a run takes and sums in a switch
    unread = unread_options(scenario.options, ran, scenario.collective)
    untaken = {a: {f"options.{name}" for name in [*unread, *(name for name in unread_options(
        scenario.options, [a], scenario.collective) if name != "reduce_bandwidth")]} for a in ran}
    # a generator key some algorithm of the file reads (a ps_star's servers, read by its ps) counts
    every_run = [by_size[size][a] for size in by_size for a in ran]
    said_keys = {w.link for run in every_run for w in run.warnings
                 if w.kind == "key_unread" and w.link.rpartition(".")[2] in ALGORITHM_KEYS}
    read_keys = {link for link in said_keys if read_by_any(link, every_run)}
    # a run's options are those it took (fuzz round ax, F5: a ring's JSON listed hierarchical's group_by)
    runs = [replace(run, options={k: v for k, v in run.options.items() if f"options.{k}" not in untaken[a]},
                    warnings=[w for w in run.warnings if not (w.kind == "option_unread" and w.link in untaken[a])
                              and not (w.kind == "key_unread" and w.link in read_keys)])
            for size in by_size for a in ran for run in [by_size[size][a]]]
    if model and scenario.faults:  # a fault after a size's run may still slow the step's buckets: not "changed nothing"
        algorithm_of = [a for _ in by_size for a in ran]  # (runs are by size, then algorithm)
        runs = [_said_after_buckets(scenario, a, run, {size: by_bucket[size][a] for size in buckets})
                for run, a in zip(runs, algorithm_of)]
    gpus = len(scenario.topology.gpus)
    steps = [{"algorithm": a, **model.summary(gpus, {size: by_bucket[size][a].time_s for size in buckets})}
             for a in ran] if model else []
    said = list(getattr(scenario, "warnings", []))  # keys the scenario makes moot (spec.scenario)
    if model and ran and "backward_fraction" in scenario.workload.model_fields_set:
        said += _backward_fraction_unfelt(model, gpus, [{size: by_bucket[size][a].time_s for size in buckets}
                                                        for a in ran])
    said += scenario_choices_unread(scenario, nccl_env(), ran)
    if unread == ["reduce_bandwidth"]:
        why = reductions_unread(scenario.collective, ran)
        said.append(Finding("option_unread", "", f"options reduce_bandwidth: {why}, so it changed nothing here"))
    elif unread:
        said.append(Finding("option_unread", "", (
            f"options {', '.join(unread)}: none of {', '.join(ran)} takes {'it' if len(unread) == 1 else 'them'} "
            f"(see simnet algorithms), so {'it' if len(unread) == 1 else 'they'} changed nothing here")))
    training = training_step(scenario)
    if progress and training is not None:
        done += 1
        progress(done, total)
    step_said, step_read = _env_unfelt_in_step(scenario, training, runs)
    said += step_said
    if training is not None:  # what the step's exchanges say, said with the scenario's words (not twice in JSON)
        said += [Finding(**w) for w in training["warnings"]]
        training = {k: v for k, v in training.items() if k != "warnings"}
    if training is not None and not runs:  # (each run says it of itself)
        said += calibration_said(scenario.topology, scenario.model,
                                 calibration_of(scenario.calibration, scenario.topology))
    step_read |= {name for name in [*nccl_env(), *(f"options.{key}" for key in scenario.options)]
                  if read_by_any(name, [by_bucket[size][a] for a in ran for size in buckets])}
    if step_read:  # a run's "changed nothing" of a variable or option the step beside it reads says too little
        runs = [replace(run, warnings=[w for w in run.warnings if not (w.kind in SAID_UNREAD and w.link in step_read)])
                for run in runs]
    once = {w.link for w in said if w.kind == "key_unread" and w.link in ("NCCL_ALGO", "NCCL_PROTO")}
    if once:  # said of the scenario, so of every run: once
        runs = [replace(run, warnings=[w for w in run.warnings if not (w.kind == "key_unread" and w.link in once)])
                for run in runs]
    if said:
        runs = [replace(run, warnings=[*run.warnings, *said]) for run in runs]
    return Results(scenario.name, runs, steps, training, skipped, [] if runs else said)


def _backward_fraction_unfelt(model: StepModel, gpus: int, bucket_times: list[dict[int, float]]) -> list[Finding]:
    """``key_unread`` for a workload's ``backward_fraction`` where every algorithm's step (its
    buckets' AllReduce times, s, in ``bucket_times``) reports the same figures at the default
    (``StepModel.backward_fraction``'s): its time, and with a slow GPU the step without it,
    whose difference is the straggler's cost (fuzz round am: 5.000 -> 4.418 ms, said unread)."""
    default = StepModel.__dataclass_fields__["backward_fraction"].default
    usual = replace(model, backward_fraction=default)
    if any(model.summary(gpus, times) != usual.summary(gpus, times) for times in bucket_times):
        return []
    return [Finding("key_unread", "workload.backward_fraction", (
        f"workload.backward_fraction {model.backward_fraction:g} changed nothing here: every step takes the same "
        f"time at the default {default:.4g}{' (and the same without its slow GPU)' if model.slowest > 1 else ''}, "
        "the buckets' AllReduces ending as they do whenever the backward pass hands the earlier ones over"))]


def _said_after_buckets(scenario, algorithm: str, run: Result, buckets: dict[int, Result]) -> Result:
    """``run`` whose ``fault_after_end`` names only the faults after its end that no run of
    ``algorithm`` at the workload's bucket sizes (``buckets``, each under every fault) feels
    either: none, where each is felt; one fault is felt where a bucket lasting past it takes
    another time without it."""
    if not any(w.kind == "fault_after_end" for w in run.warnings):
        return run
    late = [fault for fault in scenario.faults if fault.at >= run.time_s]

    def felt(fault, bucket: int) -> bool:
        there = buckets[bucket]
        if fault.at >= there.time_s or any(w.kind == "fault_unfelt" for w in there.warnings):
            return False
        return simulate(scenario.topology, algorithm, bucket, model=scenario.model, calibration=scenario.calibration,
                        collective=scenario.collective, **{**scenario.conditions(), "faults": [
                            f for f in scenario.faults if f is not fault]}, **scenario.options).time_s != there.time_s

    unfelt = [fault for fault in late if not any(felt(fault, bucket) for bucket in buckets)]
    kept = [w for w in run.warnings if w.kind != "fault_after_end"]
    if unfelt:
        kept.append(after_end(unfelt, len(scenario.faults), run.time_s,
                              " and the workload's buckets do not feel them" if buckets else ""))
    return replace(run, warnings=kept)


SAID_UNREAD = ("key_unread", "option_unread")
"""The warnings a run says a key (``key_unread``) or an option (``option_unread``) changed nothing by."""


def read_by_any(name: str, runs: list[Result]) -> bool:
    """Whether some of ``runs`` (a workload's bucket runs) reads the variable or option
    ``name`` (``options.chunk_size``): does not say it changed nothing there. A run beside
    them that says so saw too little."""
    return any(not any(w.kind in SAID_UNREAD and w.link == name for w in run.warnings) for run in runs)


def run_sizes(scenario) -> list[int]:
    """Every size a scenario's runs take: its sizes, then its workload's bucket sizes."""
    buckets = StepModel.from_workload(scenario.workload, scenario.topology.gpus).buckets() if scenario.workload else []
    return list(dict.fromkeys([*scenario.sizes, *buckets]))


def check_runs_fit(scenario, sizes: list[int], algorithms: list[str] | None = None,
                   env: dict[str, str] | None = None) -> None:
    """Refuse (``TooLarge``) before anything runs a run of ``scenario`` at one of ``sizes``
    bytes with one of ``algorithms`` (default: the scenario's) that the memory would not
    hold (``simulate.check_fits``); ``env``: the NCCL variables (default: the process's)."""
    for size in dict.fromkeys(sizes):
        for algorithm in algorithms or scenario.algorithms:
            check_fits(scenario.topology, algorithm, size, model=scenario.model, env=env,
                       calibration=scenario.calibration, collective=scenario.collective, **scenario.options)


def scenario_choices_unread(scenario, env: dict[str, str], ran: list[str], what: str = "this run") -> list[Finding]:
    """``nccl_choice_unread`` for a scenario's runs of ``ran``: none where it has a training
    step, whose exchanges run NCCL's pick, which NCCL_ALGO and NCCL_PROTO steer."""
    return [] if scenario.training is not None else nccl_choice_unread(env, ran, scenario.collective, what)


def nccl_choice_unread(env: dict[str, str], ran: list[str], collective: str, what: str = "this run") -> list[Finding]:
    """``key_unread`` for NCCL_ALGO and NCCL_PROTO (in ``env``) where none of the algorithms
    ``ran`` (of ``collective``; ``what`` names who chose them) reads them: NCCL_ALGO restricts
    ``auto``'s pick among NCCL's collective algorithms only, NCCL_PROTO the protocols of those
    algorithms, not its send/recv."""
    said = []
    nccl_algo = env.get("NCCL_ALGO")
    if nccl_algo and ran and "auto" not in ran:  # it restricts auto's pick only: named algorithms run as named
        said.append(Finding("key_unread", "NCCL_ALGO", (
            f"NCCL_ALGO={nccl_algo} restricts what auto picks, and {what} names {', '.join(dict.fromkeys(ran))}, "
            "no auto, so it changed nothing here (add auto to the algorithms to see NCCL's pick under it)")))
    elif nccl_algo and ran and lookup_collective(collective).point_to_point:
        said.append(Finding("key_unread", "NCCL_ALGO", (
            f"NCCL_ALGO={nccl_algo} restricts NCCL's pick among its collective algorithms, and "
            f"{collective} runs on NCCL's send/recv, which has one way (auto is direct), so it changed "
            "nothing here")))
    nccl_proto = env.get("NCCL_PROTO")
    if nccl_proto and ran and not any(reads_nccl_proto(a, collective) for a in ran):
        said.append(proto_unread(nccl_proto, list(dict.fromkeys(ran))))
    return said


def _env_unfelt_in_step(scenario, training: dict | None, runs: list[Result]) -> tuple[list[Finding], set[str]]:
    """(``key_unread`` for the NCCL variables that changed nothing in the training step, the
    variables that steer NCCL's plan which the step reads): the step without a variable is
    the same, exchange by exchange (each one's algorithm, protocol and time), or not.
    NCCL's send/recv channel variables together (its expert AllToAlls and pipeline sends, if
    it has them, move the same without them), as ``simulate`` says of a run of its own;
    and each variable of ``steering_variables`` (NCCL_ALGO among them) one by one. A run
    beside the step that said such a variable changed nothing did not see the step:
    ``run_scenario`` takes its word back where the step reads it. Each costs one more step,
    only where such a variable is set."""
    env = nccl_env()
    if training is None:
        return [], set()
    said = []
    asked = steering_variables(env, ["auto"], ALLREDUCE)  # its exchanges run NCCL's pick: NCCL_ALGO steers them
    asked += [name for name in MSCCL_VARIABLES if name in env]  # (and RCCL's MSCCL schedules, on AMD GPUs)
    read = step_reads(scenario, training, env, asked)
    if not runs:
        said += [Finding("key_unread", name, (
            f"{name}={env[name]} changed nothing in the training step: each of its exchanges runs the same "
            "algorithm and protocol in the same time without it")) for name in asked if name not in read]
    names = [name for name in P2P_CHANNEL_VARIABLES if name in env]
    if names and training_step(scenario, env={k: v for k, v in env.items() if k not in names}) == training:
        both = ", ".join(f"{name}={env[name]}" for name in names)
        said.append(Finding("key_unread", names[0], (
            f"{both} changed nothing in the training step: its NCCL send/recv (expert AllToAlls, pipeline sends), "
            f"if it has any, moves the same without {'it' if len(names) == 1 else 'them'} (each send's channels "
            "take one route, or NCCL splits it alike)")))
    return said, read


def step_reads(scenario, training: dict, env: dict[str, str], names: list[str]) -> set[str]:
    """The variables of ``names`` (set in ``env``) without which the scenario's training step
    (``training``, under ``env``) is not the same: one step more for each."""
    return {name for name in names
            if training_step(scenario, env={k: v for k, v in env.items() if k != name}) != training}
