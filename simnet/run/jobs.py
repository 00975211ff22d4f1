"""Many jobs on one fabric: each job's collectives alone and together, and who slows whom.

A scenario's ``jobs:`` places each job on GPUs (named, by host, or a count placed
``packed``, ``spread`` over racks and hosts, or ``random(seed)``), gives it an AllReduce
(algorithm, size) that it repeats (``repeat`` times, every ``period`` or back to back),
and ``run_jobs`` replays them on one fluid network, where their flows share every link
max-min fairly. Each job is also run alone, and every pair together, for the
interference matrix: entry [a][b] is a's mean AllReduce time next to b over its time alone.
A scenario's ``faults`` apply to every one of those replays (their times count from the
jobs' common start), and all jobs together run on the healthy fabric too, for their cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from simnet import units
from simnet.engine.clock import HORIZON_PS, HORIZON_S
from simnet.engine.faults import Fault, fault_marks, over_before_the_cut
from simnet.engine.replay import JOBS_WORK_AT_MOST, JobRun, RepeatsTooLong, back_to_back, replay_jobs, replay_work
from simnet.errors import Unsupported
from simnet.io.budget import TooLarge, check_fits, memory_budget
from simnet.model.interface import resolve_model
from simnet.model.timing import Timing
from simnet.results.result import Finding
from simnet.run.nccl_env import nccl_env
from simnet.run.point import HIERARCHICAL_VARIANTS, Conditions, Setup, calibration_of, factor_cut_by_the_wire
from simnet.run.scenario import nccl_choice_unread
from simnet.run.simulate import calibration_said, msccl_read, unread_by_every
from simnet.schedule.catalog import build_schedule
from simnet.schedule.kinds import ALLREDUCE
from simnet.schedule.transfers import COPY, Schedule, ScheduleBuilder, count_transfers, transfer_bytes
from simnet.spec.conditions import check_reachable, resolve_faults
from simnet.spec.jobs import BACKGROUND_PERIOD, BackgroundSpec, JobError, JobSpec, place_jobs, rack_of
from simnet.topology.graph import PS_PER_SECOND, Topology
from simnet.tuning.rccl import MSCCL_VARIABLES
from simnet.tuning.tables import P2P_CHANNEL_VARIABLES

__all__ = ["run_jobs", "JobsResult"]


class JobUnsupported(JobError, Unsupported):
    """A job's algorithm its GPUs cannot run: ``Unsupported`` as for one collective, with
    the job's place (``loc``) for the line that names it."""


@dataclass
class JobsResult:
    """Per job: its placement, algorithm (``inner``: hierarchical's between groups, the variant
    faster alone where the job names none) and AllReduce times alone and together (s; under
    faults, ``healthy_s`` together on the healthy fabric too); the interference matrix (job ->
    other job -> slowdown); the links jobs fought over; the faults, if any."""

    jobs: list[dict]
    interference: dict[str, dict[str, float]]
    shared_links: list[dict]
    together: Any = field(default=None, repr=False)  # the shared run's LinkStats
    warnings: list[Finding] = field(default_factory=list)  # NCCL variables no job read (key_unread), fault_unfelt
    faults: list[dict] = field(default_factory=list)  # the faults every replay ran under: at_s, what, links

    def to_dict(self) -> dict:
        return {"jobs": self.jobs, "interference": self.interference, "shared_links": self.shared_links,
                **({"faults": self.faults} if self.faults else {})}


def _fewest_transfers(topology: Topology, size: int) -> int:
    """The transfers of ``hierarchical``'s smaller variant (``HIERARCHICAL_VARIANTS``) over
    ``topology`` at ``size`` bytes, counted without building; ``TooLarge`` when neither fits."""
    counts, refused = [], []
    for inner in HIERARCHICAL_VARIANTS:
        try:
            counts.append(count_transfers(partial(build_schedule, "hierarchical", topology, size, inner=inner)))
        except TooLarge as exc:
            refused.append(exc)
    if not counts:
        raise refused[0]
    return min(counts)


def _placed(topology: Topology, name: str, gpus: list[str]) -> dict:
    """Where a job runs: its name, GPU count, first GPU, and the hosts and racks it spans."""
    return {"name": name, "gpus": len(gpus), "first_gpu": gpus[0],
            "hosts": len({topology.label(g, "host") for g in gpus}), "racks": len({rack_of(topology, g) for g in gpus})}


def _mean_time(runs: list[tuple[int, int]]) -> float:
    return float(np.mean([end - start for start, end in runs])) / PS_PER_SECOND


def _refuse_background_never_run(specs: list[JobSpec], together: list[list[tuple[int, int]]]) -> None:
    """``JobError`` on the ``start`` of a background job that ran no period with the others
    (``together``: each job's runs, ps): it offers traffic only while they run, and they had
    all ended before it started, so it would change nothing."""
    for i, (spec, runs) in enumerate(zip(specs, together)):
        if spec.background is not None and not runs:
            ended = max((end for other, theirs in zip(specs, together) if other.background is None
                         for _, end in theirs), default=0)
            raise JobError((i, "start"), (
                f"{units.format_time(spec.start)}: background traffic runs only while the other jobs run, and they "
                f"have all ended {units.format_time(ended / PS_PER_SECOND)} after the jobs' start, so it would never "
                "run; start it before then, or leave it out"))


def _refuse_past_the_horizon(specs: list[JobSpec], runs: list[JobRun]) -> None:
    """``JobError`` on the ``repeat`` of a job whose last run would start past the simulated
    time simnet holds (``HORIZON_S``), each value within its own range (fuzz round az, F7:
    10,000 runs a day apart overflowed the engine's picoseconds, exit 70)."""
    for i, run in enumerate(runs):
        last = run.start_ps + (run.repeat - 1) * run.period_ps
        if run.repeat and last >= HORIZON_PS:
            raise JobError((i, "repeat"), (
                f"{run.repeat:,}: its last run would start {units.format_ps(last)} in (its start, then "
                f"{run.repeat - 1:,} periods of {units.format_ps(run.period_ps)}), past the "
                f"{units.format_time(HORIZON_S)} simnet simulates; give fewer runs or a shorter period"))


def _refuse_replays_too_long(specs: list[JobSpec], runs: list[JobRun], sets: list[list[int]],
                             alone_ps: list[tuple[int, int]] | None, faulted: bool) -> None:
    """``JobError`` when the replays of ``sets`` (indices into ``runs``) come to more work
    than ``JOBS_WORK_AT_MOST`` (``replay_work``; ``alone_ps``: each job's shortest and longest
    run alone, where known), said before any of them on the job with the most: background
    traffic on its ``period`` (its periods while the other jobs run: fuzz round ay, F7),
    another job on its ``repeat``. Under faults (``faulted``) every run is replayed; runs on
    fixed periods repeat only in stretches of the periods' least common multiple (round ay,
    F8: 1.000001 and 1.000002 ms meet again every 1,000 s, hours of work); else the
    compiled network replays every run."""
    replayed, work = [0] * len(runs), [0] * len(runs)
    for chosen in sets:
        each = replay_work([runs[i] for i in chosen], None if alone_ps is None else [alone_ps[i] for i in chosen],
                           faulted)
        for i, (count, cost) in zip(chosen, each):
            replayed[i], work[i] = max(replayed[i], count), work[i] + cost
    if sum(work) <= JOBS_WORK_AT_MOST:
        return
    i = max(range(len(runs)), key=work.__getitem__)
    total = f"work worth about {sum(work) / 1e6:,.0f} M transfers on the compiled network, over the " \
            f"{JOBS_WORK_AT_MOST / 1e6:,.0f} M simnet replays in about a minute"
    if specs[i].background is not None:
        raise JobError((i, "period"), (
            f"{units.format_ps(runs[i].period_ps)}: background traffic runs while the other jobs "
            f"do, and about {replayed[i]:,} of its periods of {len(runs[i].schedule):,} transfers are replayed one by "
            f"one: {total}; give a longer period, or the other jobs fewer runs, shorter periods or one in common"))
    repeating = [(spec.name, run.period_ps) for spec, run in zip(specs, runs) if run.repeat != 1]
    on_period = alone_ps is not None and len(repeating) > 1 and not back_to_back(runs, alone_ps)
    remedy = "give the jobs fewer runs"
    if faulted:
        why = "under faults every run of the jobs is replayed (simnet looks for repeated stretches of runs only on a " \
              "fabric no fault changes)"
    elif on_period:
        common = math.lcm(*(period for _, period in repeating))
        shown = ", ".join(f"{name} every {units.format_ps(period)}" for name, period in repeating)
        why = (f"the jobs' runs ({shown}) fall into step again only every {units.format_ps(common)} (their periods' "
               "least common multiple), so nearly every run is replayed rather than taken from a repeated stretch")
        remedy += ", or periods with a short common multiple (1 ms and 1.25 ms: every 5 ms)"
    else:
        why = "the replays of the jobs together" + (" and of each pair that shares a link" if len(sets) > 1 else "") + \
              " take every run one by one"
    raise JobError((i, "repeat"), f"{specs[i].repeat:,}: {why}: {total}; {remedy}")


def _repeats_too_long(specs: list[JobSpec], stopped: RepeatsTooLong) -> JobError:
    """The one line of a shared replay stopped for taking too long (``RepeatsTooLong``), on
    the ``repeat`` of the job with most transfers left."""
    return JobError((stopped.job, "repeat"), (
        f"{specs[stopped.job].repeat:,}: after {stopped.done:,} runs replayed no stretch of them repeated (the network "
        "was never idle between runs in the same state: runs back to back beside the other jobs or background "
        f"traffic, or periods that rarely fall into step), and {stopped.left:,} of the jobs' runs were left: past "
        "twice the work simnet refuses before a replay; give the jobs fewer runs, or periods their runs fit into "
        "together"))


def run_jobs(topology: Topology, specs: list[dict | JobSpec], *, model: str | None = None,
             env: Mapping[str, str] | None = None, calibration=None, faults: list | None = None,
             progress: Callable[[int, int], None] | None = None) -> JobsResult:
    """Replay every job alone, every pair together and all together on ``topology``.

    ``model``, ``env`` (NCCL_ALGO / NCCL_PROTO) and ``calibration`` (a profile or its path;
    default: the topology's) as for ``simulate``; with a profile whose bandwidth depends on
    size, each job's links run at its own size's rates, a link jobs share at the highest of
    theirs (``_shared_rates``). ``faults`` (specs as a
    scenario writes them, or ``Fault``; times from the jobs' common start) apply to every
    replay, alone and together; all together is replayed on the healthy fabric too, for
    what they cost (each job's ``healthy_s``, and the result's ``faults``). Every job's
    schedule is held through the replays: their memory together is checked before the
    first replay, and refused in one line when it would not fit. ``progress(done, total)``
    hears of each replay (alone, together, each pair that shares a link, healthy).
    """
    env = nccl_env(env)
    calibration = calibration_of(calibration, topology)
    specs = [s if isinstance(s, JobSpec) else JobSpec.model_validate(s) for s in specs]
    placements = place_jobs(topology, specs)
    faults = _faults_on(topology, faults or [], placements)
    topology = topology.marked(fault_marks(faults))  # routes tell a faulted twin apart by its fault (simulate)
    runs, described, held, budget = [], [], 0.0, memory_budget()
    decisions = []  # each foreground job's (setup, algorithm as asked, size), for the variables it reads
    for i, (spec, gpus) in enumerate(zip(specs, placements)):
        sub = topology.subset(gpus)
        if spec.background is not None:
            period = spec.period if spec.period is not None else BACKGROUND_PERIOD
            schedule = background_schedule(sub, spec.background, period, i)
            runs.append(JobRun(schedule, Timing(), round(spec.start * PS_PER_SECOND), 0, round(period * PS_PER_SECOND)))
            described.append({**_placed(topology, spec.name, gpus),
                              "algorithm": f"background {spec.background.pattern}", "protocol": None,
                              "size_bytes": int(schedule.nbytes.sum()), "runs": None})
            continue
        point = Setup(sub, ALLREDUCE, model, env, calibration)
        together = f"the schedules of jobs {', '.join(s.name for s in specs[:len(runs) + 1])} held together"
        remedy = "give the jobs fewer GPUs or smaller sizes, or run fewer of them at once"
        try:
            algorithm = point.nccl_pick(spec.size) if spec.algorithm == "auto" else spec.algorithm
            point.refuse_what_env_turns_off(algorithm)
            if algorithm == "hierarchical":  # its variants are simulated to pick one: refuse first if none fits
                least = _fewest_transfers(sub, spec.size)
                check_fits(held + least * transfer_bytes(algorithm),
                           f"{together} (at least {sum(len(r.schedule) for r in runs) + least:,} transfers)", remedy,
                           budget)
            # hierarchical without inner: the variant faster alone, as one collective's run takes it, under the
            # faults as they stand from the job's start on
            shifted = tuple(replace(f, at=max(0.0, f.at - spec.start)) for f in faults)
            inner = point.simulate(algorithm, spec.size, False, None, Conditions(faults=shifted),
                                   {}).options.get("inner") if algorithm == "hierarchical" else None
            decided, schedule, timing = point.prepare(algorithm, spec.size, {"inner": inner} if inner else {})
        except Unsupported as exc:  # the job's algorithm cannot run on its GPUs: said on its line
            raise JobUnsupported((i, "algorithm"), str(exc)) from None
        decisions.append((point, spec.algorithm, spec.size))
        held += len(schedule) * transfer_bytes(algorithm)
        check_fits(held, f"{together} ({sum(len(r.schedule) for r in runs) + len(schedule):,} transfers)", remedy,
                   budget)
        runs.append(JobRun(schedule, timing, round(spec.start * PS_PER_SECOND), spec.repeat,
                           round((spec.period or 0.0) * PS_PER_SECOND)))
        described.append({**_placed(topology, spec.name, gpus),
                          "algorithm": algorithm, "protocol": decided.protocol, "size_bytes": spec.size,
                          "runs": spec.repeat, **({"inner": inner} if inner else {})})
    _refuse_past_the_horizon(specs, runs)
    if faults:  # the replays alone replay every run already
        _refuse_replays_too_long(specs, runs, [[i] for i in range(len(runs))], None, True)
    alone, used, replays = [], [], [0, len(runs) + 1 + bool(faults)]
    index = {id(run): i for i, run in enumerate(runs)}
    rates = [run.timing.capacity for run in runs]  # each job's links as its model rates them at its size (None:
    # background traffic, or line rates); links no job of a replay crosses run at the highest any job gives them
    highest = np.max([r for r in rates if r is not None], axis=0) if any(r is not None for r in rates) else None

    def capacity_of(jobs: list[JobRun]) -> np.ndarray | None:
        """The links' rates for a replay of ``jobs``: alone, a job's own (as ``simulate`` runs
        it); together, each link at the highest rate of the jobs whose alone replays used it
        (``used``), whatever order the file lists them in."""
        own = [index[id(run)] for run in jobs if rates[index[id(run)]] is not None]
        if len(jobs) == 1:
            return rates[own[0]] if own else highest
        return _shared_rates([rates[i] for i in own], [used[i] for i in own], highest)

    # whether some run of the job waited for its period in a replay whose times are said: together (each job's
    # times and its last run's end) and in pairs; alone only under faults, met at other instants by a run that
    # waits (alone, a wait moves no run's duration, and alone_s is their mean)
    waited = [False] * len(runs)

    def replayed(jobs: list[JobRun], healthy: bool = False, said: bool = True):
        capacity = capacity_of(jobs)
        known = None if spans is None else [spans[index[id(run)]] for run in jobs]
        try:
            answer = over_before_the_cut(lambda given: replay_jobs(jobs, topology, capacity=capacity, faults=given,
                                                                   alone_ps=known),
                                         [] if healthy else faults,
                                         lambda answer: max((end for times in answer[0] for _, end in times),
                                                            default=0))
        except RepeatsTooLong as stopped:  # (its job counted among these jobs: named among all)
            stopped.job = index[id(jobs[stopped.job])]
            raise _repeats_too_long(specs, stopped) from None
        for run, times in zip(jobs, answer[0] if said else ()):
            waited[index[id(run)]] |= any(start != end for (_, end), (start, _) in zip(times, times[1:]))
        replays[0] += 1
        if progress:
            progress(*replays)
        return answer

    def healthy_alone(run: JobRun) -> list:
        replays[1] += 1  # asked for only where the faults may have changed nothing
        return replayed([run], healthy=True, said=False)[0][0]

    if progress:
        progress(*replays)
    alone_times, spans = [], None  # spans: each job's shortest and longest run alone, ps, once replayed
    for run in runs:
        times, stats = replayed([run], said=bool(faults))
        alone_times.append(times[0])
        alone.append(_mean_time(times[0]))
        used.append(stats.bytes > 0)
    spans = [(min(lengths, default=0), max(lengths, default=0))
             for lengths in ([end - start for start, end in times] for times in alone_times)]
    # two jobs together are the pair: its replay is the same call, not made twice
    pairs = [(i, j) for i in range(len(runs)) for j in range(i + 1, len(runs)) if (used[i] & used[j]).any()]
    together_and_pairs = [list(range(len(runs)))] + ([list(pair) for pair in pairs] if len(runs) > 2 else [])
    _refuse_replays_too_long(specs, runs, together_and_pairs, spans, bool(faults))
    replays[1] += len(pairs) if len(runs) > 2 else 0
    together_times, together = replayed(runs)
    _refuse_background_never_run(specs, together_times)
    names = [s.name for s in specs]
    matrix = {a: {b: 1.0 for b in names} for a in names}
    for i, j in pairs:  # only jobs with a link in common: else neither can slow the other
        times = together_times if len(runs) == 2 else replayed([runs[i], runs[j]])[0]
        for a, b, ran in ((i, j, times[0]), (j, i, times[1])):
            if ran:  # (background traffic that would start only after its pair's job ended never ran beside it)
                matrix[names[a]][names[b]] = _mean_time(ran) / alone[a]
    for job, solo, times in zip(described, alone, together_times):
        job.update(alone_s=solo, together_s=_mean_time(times), slowdown=_mean_time(times) / solo,
                   finished_s=max(end for _, end in times) / PS_PER_SECOND)
        job["runs"] = job["runs"] or len(times)
    said = _env_unread(env, decisions)
    if calibration is not None and decisions:
        said += _calibration_in_jobs(topology, calibration, model, faults, rates, used, placements, specs,
                                     together.saturated_ps > 0, capacity_of(runs))
    if faults:
        healthy_times, _ = replayed(runs, healthy=True)
        for job, times in zip(described, healthy_times):
            job["healthy_s"] = _mean_time(times)
        # unfelt together may still be felt alone (a job's own bottleneck, hidden by an uplink both share)
        if healthy_times == together_times and all(healthy_alone(run) == times
                                                   for run, times in zip(runs, alone_times)):
            shown = "; ".join(f"faults[{f.index}] {f.what}" for f in faults[:3])
            said.append(Finding("fault_unfelt", "", (
                f"the faults changed nothing: every job's runs took as long as on the healthy fabric, alone and "
                f"together ({shown}{'; ...' if len(faults) > 3 else ''}): their links carried nothing of the jobs' "
                "while they lasted, or less than was left; move them to when the jobs' traffic crosses, or leave "
                "them out")))
    said += [Finding("key_unread", f"jobs[{i}].period", (
        f"jobs[{i}].period: {units.format_time(spec.period)}: every run of {spec.name} beside the other jobs took "
        "longer, so each started as the one before ended, as without a period (alone, where its runs wait for it, "
        "each run takes as long either way), and it changed nothing here"))
        for i, spec in enumerate(specs) if spec.background is None and spec.period is not None and spec.repeat > 1
        and not waited[i]]
    shared = []
    for link in sorted(np.flatnonzero(np.sum(used, axis=0) > 1).tolist(),
                       key=lambda k: (-int(together.saturated_ps[k]), -float(together.bytes[k]), k))[:10]:
        holders = [names[i] for i, u in enumerate(used) if u[link]]
        end = max(e for times in together_times for _, e in times)
        shared.append({"link": topology.link_name(link), "jobs": holders,
                       "saturated_fraction": int(together.saturated_ps[link]) / end if end else 0.0,
                       "bytes": float(together.bytes[link])})
    return JobsResult(described, matrix, shared, together, said,
                      [{"at_s": f.at, "what": f.what, "links": len(f.links)} for f in faults])


def _shared_rates(rates: list[np.ndarray], used: list[np.ndarray], highest: np.ndarray | None) -> np.ndarray | None:
    """Links' rates for jobs replayed together (``rates`` and ``used``: each job's rates and
    the links its alone replay used): a link at the highest rate of the jobs that use it,
    one none uses at ``highest``; one array where every job rates the links alike."""
    if not rates or all(np.array_equal(r, rates[0]) for r in rates[1:]):
        return rates[0] if rates else highest
    on = np.stack(used)
    return np.where(on.any(axis=0), np.where(on, np.stack(rates), 0.0).max(axis=0), highest)


def _calibration_in_jobs(topology: Topology, calibration, model: str | None, faults: list[Fault],
                         rates: list, used: list[np.ndarray], placements: list[list[str]],
                         specs: list[JobSpec], filled: np.ndarray, shared: np.ndarray | None) -> list[Finding]:
    """What jobs say of their calibration profile: what every job's own run over its GPUs
    says of it (``calibration_said``), links the jobs share that it rates otherwise at their
    sizes (``calibration_shared``: they ran at the highest, ``shared``), and per job a factor
    the wire cut short on links of its own that ran at its rate and ``filled`` together."""
    by_job = [{(w.kind, w.link): w for w in calibration_said(topology.subset(placements[i]), model, calibration,
                                                             tuple(faults))}  # (placements: in rank order)
              for i, spec in enumerate(specs) if spec.background is None]
    said = [w for key, w in by_job[0].items() if all(key in theirs for theirs in by_job[1:])] if by_job else []
    own = [i for i, rate in enumerate(rates) if rate is not None]  # (jobs the model rates: none under ideal)
    if not own or resolve_model(model, topology) == "ideal":
        return said
    on = np.stack([used[i] for i in own])
    lower = np.where(on, np.stack([rates[i] for i in own]), np.inf).min(axis=0)
    differ = np.flatnonzero((on.sum(axis=0) > 1) & (lower < shared))
    if len(differ):
        link = int(differ[0])
        sharing = ", ".join(f"{specs[i].name} {units.format_bandwidth(rates[i][link])}" for i, crossed in
                            zip(own, on[:, link]) if crossed)
        said.append(Finding("calibration_shared", topology.link_name(link), (
            f"{topology.link_name(link)}{f' and {len(differ) - 1} more links' if len(differ) > 1 else ''}, shared "
            f"by jobs the calibration profile rates otherwise at their sizes ({sharing}), ran at the highest of their "
            "rates: each job's NCCL ceilings keep its own factor, and a job of a lower rate may run faster there "
            "beside the others than alone")))
    cut = [w for i in own for w in factor_cut_by_the_wire(
        topology, calibration, specs[i].size, filled & used[i] & (shared == rates[i]), "the jobs' run together")]
    return said + list({w.link: w for w in cut}.values())


def _faults_on(topology: Topology, specs: list, placements: list[list[str]]) -> list[Fault]:
    """The faults (specs as a scenario writes them, or ``Fault``) resolved on ``topology`` in
    time order, checked to leave each job's GPUs (``placements``) a route to one another: GPUs
    no job holds may be cut off."""
    faults = sorted([*resolve_faults(topology, [f for f in specs if not isinstance(f, Fault)]),
                     *(f for f in specs if isinstance(f, Fault))], key=lambda f: f.at)
    for gpus in placements:
        check_reachable(topology, faults, list(gpus))
    return faults


def _env_unread(env: dict[str, str], decisions: list[tuple[Setup, str, int]]) -> list[Finding]:
    """``key_unread`` for the NCCL variables no job's AllReduce reads: NCCL_ALGO beside named
    algorithms, NCCL_PROTO where none runs NCCL's collective algorithms, the send/recv
    channel variables, which only NCCL's send/recv reads (jobs run AllReduces), and those no
    job (``decisions``: setup, algorithm as asked, size) reads (``simulate.unread_by_every``)."""
    algorithms = [algorithm for _, algorithm, _ in decisions]
    said = nccl_choice_unread(env, algorithms, ALLREDUCE, "every job")
    said += unread_by_every(env, [(point, algorithm, size, {}) for point, algorithm, size in decisions], "every job",
                            candidates=False)  # an auto job runs NCCL's pick alone
    msccl = [name for name in MSCCL_VARIABLES if name in env]
    if msccl and decisions and not any(msccl_read(point, algorithm, size, msccl)
                                       for point, algorithm, size in decisions):
        it = "it" if len(msccl) == 1 else "them"
        said.append(Finding("key_unread", msccl[0], (
            f"{', '.join(f'{name}={env[name]}' for name in msccl)} changed nothing here: RCCL runs an MSCCL file for "
            f"auto and direct only, and every such job runs the same one (or none) without {it}")))
    names = [name for name in P2P_CHANNEL_VARIABLES if name in env]
    if names and algorithms:
        it = "it" if len(names) == 1 else "them"
        said.append(Finding("key_unread", names[0], (
            f"{', '.join(f'{name}={env[name]}' for name in names)} changed nothing here: only NCCL's send/recv "
            f"reads {it} (all_to_all's and send_recv's direct), and jobs run AllReduces")))
    return said


def background_schedule(topology: Topology, spec: BackgroundSpec, period: float, index: int = 0) -> Schedule:
    """One period of background traffic over ``topology``'s ranks: independent transfers,
    each ``load`` x its route's bottleneck bandwidth x ``period`` bytes (split over the
    destinations of all_to_all, so a GPU offers ``load``; every incast sender offers it whole,
    so its target is asked for (GPUs - 1) x ``load``: an incast).
    A load offering under 1 Kb/s on a route, or under a byte a period, is refused (a
    ``JobError`` at job ``index``): it would be sent as a byte, not as what was asked."""
    gpus = topology.gpus
    n = len(gpus)
    rng = np.random.default_rng(spec.seed)
    if spec.pattern == "uniform":
        partner = (np.arange(n) + rng.integers(1, n, size=n)) % n  # never itself
        pairs, share = list(zip(range(n), partner.tolist())), 1.0
    elif spec.pattern == "all_to_all":
        pairs, share = [(i, j) for i in range(n) for j in range(n) if i != j], 1.0 / (n - 1)
    else:
        target = int(rng.integers(n))
        pairs, share = [(i, target) for i in range(n) if i != target], 1.0
    src = np.array([i for i, _ in pairs])
    dst = np.array([j for _, j in pairs])
    rates = np.array([spec.load * share * topology.path_bandwidth(gpus[i], gpus[j]) for i, j in pairs])
    if rates.min() < units.BANDWIDTH_RANGE[0] or rates.min() * period < 1:
        slowest = float(rates.min())
        over = "" if share == 1 else f" over {n - 1} destinations"
        short = ("under 1 Kb/s, the least bandwidth simnet accepts" if slowest < units.BANDWIDTH_RANGE[0] else
                 f"under a byte a period of {units.format_time(period, short=True)}")
        raise JobError((index, "background", "load"), (
            f"{spec.load * 100:.4g}% of a route's bandwidth{over} offers {units.format_bandwidth(slowest)}, {short}; "
            "give a larger load (or a longer period)"))
    nbytes = np.array([round(rate * period) for rate in rates.tolist()])
    builder = ScheduleBuilder("background", gpus, int(nbytes.max()))
    builder.add(src, dst, 0, nbytes, COPY)
    return builder.build()


