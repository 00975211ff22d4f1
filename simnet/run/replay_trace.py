"""``simulate_trace``: a recorded training step replayed on another topology.

Each rank's trace (``simnet.workloads.kineto``, ``simnet.workloads.chakra``) becomes a
dependency graph (``simnet.workloads.trace``); ranks are placed on the topology's GPUs
(rank r on the r-th GPU placed, as a job's ``placement`` places them); every collective
call is simulated on its group's GPUs with the algorithm NCCL's model picks there (or, with
``as_recorded``, the algorithm and protocol the recorded kernel ran); compute runs as
recorded, divided by ``gpu_speedup``. Calls of one collective and size by disjoint groups
that overlap in time (the data-parallel groups of a TP x DP job) are simulated together,
sharing the fabric; overlapping calls of different collectives are each simulated alone,
and the result says how many did.

>>> from simnet.topology.loader import topology_from_dict
>>> from simnet.workloads.trace import Comm, Op, RankTrace
>>> topo = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 2}})
>>> ops = (Op("gemm", 7, 0.0, 1e-3), Op("ncclKernel_AllReduce", 20, 1e-3, 5e-3, (0,),
...        Comm("allreduce", 2**30, (0, 1), "0")), Op("sgd", 7, 6e-3, 1e-3, (0, 1)))
>>> replayed = simulate_trace([RankTrace(0, ops, "r0.json"), RankTrace(1, ops, "r1.json")], topo, model="ideal")
>>> round(replayed.step_s * 1e3, 2), round(replayed.recorded_step_s * 1e3, 2)  # ms: 1 GiB at 450 GB/s each way
(4.39, 7.0)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from simnet import units
from simnet.errors import InputError, Unsupported
from simnet.io.yamlsource import Source
from simnet.model.calibration import Calibration
from simnet.model.interface import DEFAULT_MODEL, resolve_model
from simnet.results.result import Finding, Result
from simnet.run.groups import simulate_groups
from simnet.run.nccl_env import JUDGED_CHOICES, nccl_env, nccl_system
from simnet.run.point import Setup, calibration_of
from simnet.run.simulate import simulate, unread_by_every
from simnet.schedule.catalog import algorithms_for, build_program
from simnet.spec.jobs import choose_gpus
from simnet.topology.graph import Topology
from simnet.topology.loader import load_topology
from simnet.workloads.trace import (
    MAX_RANKS,
    Instance,
    RankTrace,
    Timeline,
    exposed_s,
    instances_of,
    recorded,
    replay,
    step_spans,
)

__all__ = ["TraceReplay", "simulate_trace", "read_traces"]


@dataclass
class TraceReplay:
    """A replayed trace: step times recorded and simulated (s, across the ranks), per
    collective kind and group what it cost and how much of it no compute hid, the links
    that limited the collectives, both timelines (for traces) and warnings."""

    topology: str
    gpus: list[str]
    sources: list[str]
    recorded_gpu: str | None
    gpu_speedup: float
    model: str
    steps: list[dict]
    collectives: list[dict]
    bottlenecks: list[dict]
    warnings: list[Finding]
    traces: list[RankTrace] = field(repr=False)
    simulated: Timeline = field(repr=False)
    recording: Timeline = field(repr=False)
    calibration: str | None = None  # the profile that refined the calls' runs (none under ideal)

    @property
    def step_s(self) -> float:
        """Mean simulated step time (s)."""
        return float(np.mean([s["simulated_s"] for s in self.steps]))

    @property
    def recorded_step_s(self) -> float | None:
        """Mean recorded step time (s); None for traces that hold no start times."""
        if any(s["recorded_s"] is None for s in self.steps):
            return None
        return float(np.mean([s["recorded_s"] for s in self.steps]))

    def to_dict(self) -> dict:
        """The result JSON of ``simnet replay-trace --json``."""
        return {"topology": self.topology, "ranks": len(self.traces), "gpus": self.gpus, "traces": self.sources,
                "recorded_gpu": self.recorded_gpu, "gpu_speedup": self.gpu_speedup, "model": self.model,
                "calibration": self.calibration,
                "step_s": {"recorded": self.recorded_step_s, "simulated": self.step_s}, "steps": self.steps,
                "collectives": self.collectives, "bottlenecks": self.bottlenecks,
                "warnings": [{"kind": w.kind, "link": w.link, "message": w.message} for w in self.warnings]}


def read_traces(paths: Sequence[str | Path], ranks_per_trace: int = 1,
                groups: Mapping[str, Sequence[int]] | None = None, max_ranks: int | None = None,
                groups_source: Source | None = None) -> list[RankTrace]:
    """One ``RankTrace`` per rank from Kineto JSON files (``.json``/``.json.gz``) or Chakra
    execution traces (``NAME.RANK.et``); with ``ranks_per_trace`` K each trace also stands
    for the K-1 ranks after its own (a job whose ranks all run alike, traced on one of
    them). ``groups`` (process group name -> ranks) names the ranks of a Chakra trace's
    ``pg_name``s (a Kineto trace names them itself); unnamed groups are the whole job.
    ``max_ranks`` (default ``MAX_RANKS``; the topology's GPUs, say) refuses a job of more
    ranks before any is built."""
    from simnet.workloads.chakra import rank_of, read_chakra
    from simnet.workloads.kineto import read_kineto

    if isinstance(ranks_per_trace, bool) or not isinstance(ranks_per_trace, int) or ranks_per_trace < 1:
        raise InputError(f"ranks_per_trace must be a whole number >= 1, not {ranks_per_trace!r}")
    limit = MAX_RANKS if max_ranks is None else min(max_ranks, MAX_RANKS)

    def check(rank: int, world: int | None, source) -> None:
        """Refuse a trace that makes the job larger than ``limit`` before its ranks are built."""
        ranks = max(rank + ranks_per_trace, world or 0)
        if ranks > limit:
            bound = "GPUs the topology has" if max_ranks is not None and limit == max_ranks else "ranks simnet replays"
            raise InputError(f"the trace makes a job of {ranks:,} ranks (rank {rank:,}"
                             + (f", world size {world:,}" if world else "")
                             + (f", --ranks-per-trace {ranks_per_trace:,}" if ranks_per_trace > 1 else "")
                             + f"): more than the {limit:,} {bound}", source)

    paths = [Path(path) for path in paths]
    chakra = [p for p in paths if p.name.endswith((".et", ".et.gz"))]
    if chakra and len(chakra) < len(paths):
        raise InputError("give Kineto traces or Chakra execution traces, not both: their clocks are not one")
    if groups is not None and not chakra:
        raise InputError("--groups: process groups name the ranks of a Chakra trace's; a Kineto trace names them "
                         "itself (\"Process Group Ranks\"): leave --groups out")
    if chakra:
        for p in chakra:
            check(rank_of(p), None, p)
        world = max(rank_of(p) for p in chakra) + ranks_per_trace
        alone = InputError("a trace of rank 0 alone stands for a job of one rank, whose collectives move nothing: "
                           "give every rank's trace, or --ranks-per-trace N for a job of N ranks that ran alike",
                           chakra[0])
        try:
            named = {str(k): tuple(_group_ranks(k, v, world, groups_source)) for k, v in (groups or {}).items()}
        except InputError:
            named_others = any(isinstance(r, int) and not isinstance(r, bool) and r > 0
                               for ranks in (groups or {}).values() if isinstance(ranks, (list, tuple)) for r in ranks)
            if world == 1 and named_others:  # groups of ranks the job would not have: the other ranks' traces
                raise alone from None
            raise
        traces = [read_chakra(p, world, named) for p in chakra]
        if world == 1 and any(op.comm is not None for t in traces for op in t.ops):  # (a Kineto trace says its world)
            raise alone
        named_by_calls = set().union(*(t.groups_named for t in traces))
        unused = [name for name in named if name not in named_by_calls]
        if unused:  # (a dump of every process group of a job, or a typo: said, as the replay reads none of them)
            calls = ", ".join(repr(name) for name in sorted(named_by_calls - {""})) or "none"
            traces[0] = replace(traces[0], notes=traces[0].notes + (
                f"--groups: {', '.join(map(repr, unused))} {'is' if len(unused) == 1 else 'are'} named by no call of "
                f"the traces (they name {calls}; a call that names none runs over every rank, shown as 'world'), so "
                f"{'it' if len(unused) == 1 else 'they'} changed nothing",))
    else:
        traces = [read_kineto(p) for p in paths]
    for t in traces:
        check(t.rank, t.world, t.source)
    ranks: dict[int, str] = {}
    out = []
    for t in traces:
        for k in range(ranks_per_trace):
            rank = t.rank + k
            if rank in ranks:
                raise InputError(f"rank {rank} is given twice: by {ranks[rank]} and by {t.source}"
                                 + (" (a Kineto trace without distributedInfo is rank 0)"
                                    if not chakra and t.world is None and rank == 0 else "")
                                 + (f" (--ranks-per-trace {ranks_per_trace} makes each trace stand for "
                                    f"{ranks_per_trace} ranks)" if ranks_per_trace > 1 else ""), t.source)
            ranks[rank] = t.source
            out.append(t.as_rank(rank))
    worlds = {t.world: t.source for t in traces if t.world is not None}
    if len(worlds) > 1:
        raise InputError("the traces come from jobs of different sizes ("
                         + ", ".join(f"world size {w} in {src}" for w, src in sorted(worlds.items())) + ")",
                         traces[0].source)
    world = next(iter(worlds)) if worlds else max(ranks) + 1
    missing = sorted(set(range(world)) - set(ranks))
    beyond = sorted(r for r in ranks if r >= world)
    if missing or max(ranks) >= world:
        raise InputError(f"the traces stand for ranks {_ranges(sorted(ranks))} of a job of {world}: "
                         + (f"{_ranks_word(missing)} {_ranges(missing)} "
                            f"{'has' if len(missing) == 1 else 'have'} no trace; give "
                            f"{'it' if len(missing) == 1 else 'them'}, or --ranks-per-trace if every rank runs alike"
                            if missing else f"{_ranks_word(beyond)} {_ranges(beyond)} lie beyond it"
                            + (f" (--ranks-per-trace {ranks_per_trace} makes each trace stand for {ranks_per_trace} "
                               f"ranks{'; the trace records a world of ' + str(world) if worlds else ''})"
                               if ranks_per_trace > 1 else "")),
                         worlds.get(world))  # (the trace that records the job's world size, where one does)
    return sorted(out, key=lambda t: t.rank)


def _group_ranks(name: object, ranks: object, world: int, source: Source | None = None) -> list[int]:
    """A process group's ranks as given (a list of distinct ranks of the job); refused on its
    line of ``source`` (the --groups file), where given."""
    if not isinstance(ranks, (list, tuple)) or not ranks or not all(
            isinstance(r, int) and not isinstance(r, bool) and 0 <= r < world for r in ranks) \
            or len(set(ranks)) < len(ranks):
        said = f"expected a list of distinct ranks 0..{world - 1}, not {ranks!r}"
        raise source.error((name,), said) if source is not None else InputError(f"group {name!r}: {said}")
    return list(ranks)


def simulate_trace(traces: Sequence[RankTrace], topology: Topology | str | Path, *, placement: str = "packed",
                   gpu_speedup: float | None = None, as_recorded: bool = False, model: str = DEFAULT_MODEL,
                   env: Mapping[str, str] | None = None, calibration=None) -> TraceReplay:
    """Replay ``traces`` (one per rank, ranks 0..N-1) on ``topology`` (module docstring).
    ``placement`` is packed, spread or random(seed) as for jobs; ``gpu_speedup`` divides
    every kernel's recorded time (another GPU's FLOP/s over the recorded one's; None: they
    keep it, and a trace of another GPU than the topology's is warned ``gpu_differs``);
    ``model`` and ``env`` as for ``simulate``."""
    given = gpu_speedup is not None
    gpu_speedup = 1.0 if gpu_speedup is None else gpu_speedup
    if isinstance(gpu_speedup, bool) or not isinstance(gpu_speedup, (int, float)) or not 1e-6 <= gpu_speedup <= 1e6:
        raise InputError(f"gpu_speedup must be a ratio of FLOP/s from 1e-06 to 1e+06, not {gpu_speedup!r}")
    topo = topology if isinstance(topology, Topology) else load_topology(topology)
    traces = sorted(traces, key=lambda t: t.rank)
    if [t.rank for t in traces] != list(range(len(traces))):
        raise InputError(f"traces must stand for ranks 0..N-1, given {[t.rank for t in traces]}")
    if len(traces) > len(topo.gpus):
        raise InputError(f"the trace has {len(traces)} ranks; {topo.name} has {len(topo.gpus)} GPUs", topo.source)
    try:
        gpus = choose_gpus(topo, list(topo.gpus), len(traces), placement)  # rank i on the i-th in rank order
    except ValueError as exc:
        raise InputError(str(exc)) from None
    try:  # the model against the ranks' GPUs (rccl on NVIDIA, nccl on AMD): refused before any pricing
        resolve_model(model, topo.subset(gpus) if len(gpus) > 1 else topo)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    calibration = calibration_of(calibration, topo)
    instances = instances_of(traces)
    try:  # the environment against the ranks' GPUs (a name NCCL does not know, a variable simnet does not
        # follow, RCCL's on NVIDIA GPUs): refused in one line before any pricing, not midway as an internal error
        env = nccl_env(env)
        pricer = _Pricer(topo, gpus, model, env, calibration, as_recorded)
        nccl_system(topo.subset(gpus) if len(gpus) > 1 else topo, env)  # NCCL's pick, under every model
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(str(exc)) from None
    index = {id(inst): j for j, inst in enumerate(instances)}
    times = np.array([_priced(pricer, inst) for inst in instances])
    timeline = replay(traces, lambda inst: times[index[id(inst)]], gpu_speedup, instances)
    shared = pricer.together(instances, timeline, times)
    if shared is not None:  # one more pass: sharing slowed calls, so the replay moves
        times = shared
        timeline = replay(traces, lambda inst: times[index[id(inst)]], gpu_speedup, instances)
    recording = recorded(traces)
    notes = {(t.source, note) for t in traces for note in t.notes}  # once per file, not per rank it stands for
    warnings = [*pricer.warnings, *([] if given else _gpu_warning(traces[0].gpu, topo, gpus)),
                *_steps_named_otherwise(traces),
                *(Finding("trace_note", "", f"{source}: {note}") for source, note in sorted(notes))]
    warnings += _calibration_said([pricer.result(inst) for inst in instances], calibration)  # (the calls as run)
    unread = pricer.unread(instances)
    # --as-recorded judged against NCCL's pick with and without the variables said to change nothing beside it
    # (each of NCCL_PROTO and --as-recorded may change nothing only given the other)
    warnings += unread + pricer.as_recorded_unread(instances, without={w.link for w in unread})
    apart = _overlapping_kinds(instances, timeline)
    if apart:
        warnings.append(Finding("concurrent_collectives", "", (
            f"{apart:,} collective calls overlapped calls of another collective or size and were each simulated "
            "alone: links they share are not shared in the replay")))
    return TraceReplay(topo.name, gpus, sorted({t.source for t in traces}), traces[0].gpu, float(gpu_speedup),
                       pricer.model_name, _steps(traces, recording, timeline),
                       _collectives(traces, instances, recording, timeline, pricer),
                       pricer.bottlenecks(instances, timeline), warnings, list(traces), timeline, recording,
                       calibration.source if calibration is not None and pricer.model_name != "ideal" else None)


def _priced(pricer: _Pricer, inst: Instance) -> float:
    """``pricer.alone(inst)``; a call the environment leaves NCCL nothing to run (NCCL_ALGO=Tree
    on a Broadcast, which NCCL runs by Ring only) refused in one line naming the call, as NCCL
    would fail it."""
    try:
        return pricer.alone(inst)
    except Unsupported as exc:
        raise InputError(_call_named(inst, str(exc))) from None


def _call_named(inst: Instance, why: str) -> str:
    comm = inst.comm
    return (f"the trace's {comm.collective} of {units.format_size(comm.size_bytes)} in group {comm.group_name or '?'} "
            f"(call {inst.k + 1} of the group, ranks {', '.join(map(str, comm.group[:8]))}"
            f"{', ...' if len(comm.group) > 8 else ''}): {why}")


class _Pricer:
    """Each collective call's simulated time, cached by what decides it."""

    def __init__(self, topo: Topology, gpus: list[str], model: str, env: dict, calibration, as_recorded: bool):
        self.topo, self.gpus, self.model, self.env, self.calibration = topo, gpus, model, env, calibration
        self.as_recorded = as_recorded
        self.results: dict[tuple, object] = {}
        self.runnable: dict[tuple, str | None] = {}  # (collective, algorithm, size, GPUs) -> why it cannot run
        self.warnings: list[Finding] = []
        self.model_name = Setup(topo.subset(gpus[:2]) if len(gpus) > 1 else topo, "allreduce", model, env,
                                calibration).model

    def key(self, inst: Instance) -> tuple:
        c = inst.comm
        algorithm, env = "auto", self.env
        if self.as_recorded and not c.algorithm:
            self._warn("recorded_algorithm", f"a {c.collective}'s recorded kernel names no algorithm and protocol "
                       "simnet reads (NCCL's ..._RING_LL and the like); NCCL's pick ran instead")
        if self.as_recorded and c.algorithm:
            simulated = c.algorithm in algorithms_for(c.collective)
            why = self._cannot_run(c.collective, c.algorithm, c.size_bytes, tuple(self.gpus[r] for r in c.group)) \
                if simulated else None
            if why:  # the recorded algorithm's hardware is not the cluster's (CollNet without SHARP switches)
                self._warn("recorded_algorithm", f"{c.collective} ran {c.algorithm} in the recording, which cannot "
                           f"run here ({why}); NCCL's pick ran instead")
            elif simulated:
                algorithm = c.algorithm
                env = {**self.env, **({"NCCL_PROTO": c.protocol} if c.protocol else {})}
            else:
                self._warn("recorded_algorithm", f"{c.collective} ran {c.algorithm} in the recording, which "
                           f"simnet does not simulate for {c.collective}; NCCL's pick ran instead")
        return c.collective, c.size_bytes, tuple(self.gpus[r] for r in c.group), algorithm, tuple(sorted(env.items()))

    def _cannot_run(self, collective: str, algorithm: str, size: int, gpus: tuple[str, ...]) -> str | None:
        """Why ``algorithm`` cannot run ``collective`` over ``gpus`` of this cluster (its
        builder's refusal), or None; once per call shape."""
        key = (collective, algorithm, size, gpus)
        if key not in self.runnable:
            try:
                build_program(algorithm, self.topo.subset(list(gpus)), size, collective=collective) if len(gpus) > 1 \
                    else None
                self.runnable[key] = None
            except Unsupported as exc:
                self.runnable[key] = str(exc)
        return self.runnable[key]

    def unread(self, instances: list[Instance]) -> list[Finding]:
        """``key_unread`` for NCCL_ALGO (NCCL_PROTO) when --as-recorded ran every call with its
        recorded algorithm (and protocol): it restricts NCCL's pick, which no call took."""
        keys = [self.key(inst) for inst in instances]
        picked = any(algorithm == "auto" for _, _, _, algorithm, _ in keys)
        own_protocol = all(inst.comm.protocol for inst, key in zip(instances, keys) if key[3] != "auto")
        return [Finding("key_unread", name, f"{name}={self.env[name]} restricts NCCL's pick, and --as-recorded ran "
                        f"every collective with its recorded {what}, so {name} changed nothing here")
                for name, what, moot in (("NCCL_ALGO", "algorithm", not picked),
                                         ("NCCL_PROTO", "protocol", not picked and own_protocol))
                if moot and name in self.env and instances] + self._unread_by_every_call()

    def _unread_by_every_call(self) -> list[Finding]:
        """The ``key_unread`` findings every priced call's run carries for a variable of the
        user's environment (the send/recv channel variables where no call runs NCCL's send/recv,
        or each moves the same), once; and a variable of ``JUDGED_CHOICES`` no call reads,
        judged on the calls as asked (``simulate.unread_by_every``: NCCL's pick for those that
        run it, which alone is simulated, and the plan). NCCL_PROTO not: --as-recorded gives a
        call its recorded protocol (``unread`` says it)."""
        runs = [(key, run) for key, run in self.results.items() if run.gpus > 1]
        if not runs:
            return []
        calls = f"every one of the trace's {len(runs)} distinct calls" if len(runs) > 1 else "the trace's call"
        first = {w.link: w for w in runs[0][1].warnings if w.kind == "key_unread" and w.link in self.env
                 and w.link not in JUDGED_CHOICES}
        said = [Finding("key_unread", w.link, f"in {calls}: {w.message}" if len(runs) > 1 else w.message)
                for w in first.values()
                if all(any(v.kind == "key_unread" and v.link == w.link for v in run.warnings) for _, run in runs[1:])]
        followed = unread_by_every(self.env, [
            (Setup(self.topo.subset(list(gpus)), collective, self.model, dict(env), self.calibration), algorithm, size,
             {}) for (collective, size, gpus, algorithm, env), _ in runs], calls, candidates=False)
        return said + [w for w in followed if w.link in JUDGED_CHOICES and w.link != "NCCL_PROTO"]

    def result(self, inst: Instance):
        key = self.key(inst)
        if key not in self.results:
            collective, size, gpus, algorithm, env = key
            if algorithm == "auto" and len(gpus) > 1:
                algorithm = Setup(self.topo.subset(list(gpus)), collective, self.model, dict(env),
                                  self.calibration).nccl_pick(size)
            self.results[key] = simulate(self.topo, algorithm, size, gpus=list(gpus), model=self.model,
                                         env=dict(env), calibration=self.calibration, collective=collective)
        return self.results[key]

    def as_recorded_unread(self, instances: list[Instance], without: set[str] = frozenset()) -> list[Finding]:
        """``key_unread`` of --as-recorded where every call runs the algorithm NCCL's pick runs
        in the same time (its recorded protocol timed as the pick's: under ``model: ideal``,
        which runs no protocol, or where the recording is NCCL's pick), so it changed nothing:
        NCCL's pick under the environment, and without the variables ``without`` (said to
        change nothing beside --as-recorded), so dropping any of them answers alike."""
        if not self.as_recorded or not instances:
            return []
        recorded = [(self.result(inst).algorithm, self.result(inst).time_s) for inst in instances]
        env, results, self.as_recorded = self.env, dict(self.results), False
        try:
            picks = []
            for kept in (env, {name: value for name, value in env.items() if name not in without}):
                self.env = kept
                picks.append([(self.result(inst).algorithm, self.result(inst).time_s) for inst in instances])
        except ValueError:  # NCCL's pick would fail a call (NCCL_ALGO=Tree on a Broadcast): --as-recorded counts
            return []
        finally:  # (the picks priced here are no call of the replay: not kept)
            self.env, self.results, self.as_recorded = env, results, True
        fell_back = any(w.kind == "recorded_algorithm" for w in self.warnings)
        return [] if any(recorded != picked for picked in picks) else [Finding("key_unread", "--as-recorded", (
            "--as-recorded changed nothing here: every call runs the algorithm NCCL picks, in the same time "
            + ("(each whose recorded algorithm could not run took NCCL's pick: recorded_algorithm)" if fell_back else
               f"with its recorded protocol as with the pick's"
               f"{' (model: ideal runs no protocol)' if self.model == 'ideal' else ''}")))]

    def alone(self, inst: Instance) -> float:
        return self.result(inst).time_s

    def together(self, instances: list[Instance], timeline: Timeline, alone: np.ndarray) -> np.ndarray | None:
        """Times with the calls of one collective and size by disjoint groups that overlap in
        the replay simulated at once (``simulate_groups``); None if no calls overlap so.

        Calls of a kind are taken in order of start into batches whose calls all overlap
        one another (each starts before every earlier one of the batch ends) on disjoint
        groups: a TP x DP job's DP groups, bucket after bucket, share the fabric bucket by
        bucket, even when a group's next bucket starts while another group's last runs."""
        by_kind: dict[tuple, list[int]] = defaultdict(list)
        for j in np.argsort(timeline.instance_start, kind="stable").tolist():
            key = self.key(instances[j])
            by_kind[(key[0], key[1], key[3], key[4])].append(j)
        times, changed = alone.copy(), False
        for (collective, size, algorithm, env), calls in by_kind.items():
            batches: list[tuple[list[int], float, set]] = []  # calls, earliest end, GPUs held
            for j in calls:
                gpus = set(self.key(instances[j])[2])
                if batches and timeline.instance_start[j] < batches[-1][1] and not gpus & batches[-1][2]:
                    members, until, held = batches[-1]
                    batches[-1] = (members + [j], min(until, timeline.instance_end[j]), held | gpus)
                else:
                    batches.append(([j], timeline.instance_end[j], gpus))
            for members, _, _ in batches:
                if len(members) < 2:
                    continue
                groups = [list(self.key(instances[j])[2]) for j in members]
                shared = simulate_groups(self.topo, groups, collective, size, algorithm=algorithm,
                                         model=self.model, env=dict(env), calibration=self.calibration)
                for j, t in zip(members, shared.times_s):
                    times[j], changed = max(t, alone[j]), True
        return times if changed else None

    def bottlenecks(self, instances: list[Instance], timeline: Timeline) -> list[dict]:
        """The links that limited the collectives most: seconds of collective time each was
        the bottleneck of, the five longest; a collective whose links never filled (latency
        or NCCL's ceilings set its pace: ``Result.filled``) counts for none."""
        spent: Counter = Counter()
        for j, inst in enumerate(instances):
            link = self.result(inst).filled
            if link is not None:
                spent[link.name] += float(timeline.instance_end[j] - timeline.instance_start[j])
        return [{"link": name, "seconds": s} for name, s in spent.most_common(5)]

    def _warn(self, kind: str, message: str) -> None:
        if all(w.message != message for w in self.warnings):
            self.warnings.append(Finding(kind, "", message))


def _gpu_warning(recorded_gpu: str | None, topo: Topology, gpus: list[str]) -> list[Finding]:
    """``gpu_differs`` when the trace ran on another GPU than the topology's (its kernels keep
    their recorded times: no --gpu-speedup was given), with the dense BF16 FLOP/s ratio the
    hardware facts give (simnet.topology.hardware) as a starting point."""
    from simnet.topology.hardware import GPUS
    from simnet.workloads.kineto import gpu_generation

    was, now = gpu_generation(recorded_gpu), {topo.gpu_model(g) for g in gpus}
    if was is None or len(now) != 1 or None in now or now == {was}:
        return []
    (now,) = now
    ratio = GPUS[now].bf16_flops / GPUS[was].bf16_flops if GPUS[was].bf16_flops and GPUS[now].bf16_flops else None
    hint = (f"; their dense BF16 peaks are {GPUS[now].bf16_flops / 1e12:,.0f} and {GPUS[was].bf16_flops / 1e12:,.0f} "
            f"TFLOP/s (--gpu-speedup {ratio:.2f} if the step is compute-bound at peak)") if ratio else ""
    return [Finding("gpu_differs", "", f"the trace ran on {recorded_gpu}, {topo.name}'s GPUs are {now}: kernels "
                    f"keep the {was}'s recorded times; give --gpu-speedup{hint}")]


CALIBRATION_SAID = ("calibration_other_hardware", "calibration_other_environment", "calibration_unused",
                    "calibration_capped")
"""What a call's run says of the calibration profile that the replay says too, once each
(``calibration_capped`` once per link)."""


def _calibration_said(runs: list[Result], calibration: Calibration | None) -> list[Finding]:
    """What the calls' ``runs`` say of ``calibration`` (``CALIBRATION_SAID``), once each, and
    a term of it that changed nothing in every one of them (``key_unread`` of the profile's
    terms, said by every call's run)."""
    runs = [run for run in runs if run.gpus > 1]
    if calibration is None or not runs:
        return []
    said = {(w.kind, w.link if w.kind == "calibration_capped" else ""): w
            for run in runs for w in run.warnings if w.kind in CALIBRATION_SAID}
    profile = f"{calibration.source or '(a Calibration given to simulate)'}: "
    unread = [w for w in runs[0].warnings if w.kind == "key_unread" and w.link.startswith(profile) and all(
        any(v.kind == "key_unread" and v.link == w.link for v in run.warnings) for run in runs[1:])]
    return list(said.values()) + unread


def _overlapping_kinds(instances: list[Instance], timeline: Timeline) -> int:
    """Calls that overlapped in the replay a call of another collective or size (a
    different group): priced apart, see the module docstring."""
    events = sorted(zip(timeline.instance_start.tolist(), timeline.instance_end.tolist(),
                        [(i.comm.collective, i.comm.size_bytes) for i in instances], range(len(instances))))
    counted, active = set(), []
    for start, end, kind, j in events:
        active = [a for a in active if a[0] > start]
        for _, other_kind, k in active:
            if other_kind != kind and not set(instances[j].comm.group) & set(instances[k].comm.group):
                counted.update((j, k))
        active.append((end, kind, j))
    return len(counted)


def _steps_named_otherwise(traces: Sequence[RankTrace]) -> list[Finding]:
    """``trace_note`` where ranks' profilers named their steps otherwise (one recorded steps
    3 and 4, another 7 and 8): the replay pairs the ranks' steps by position and names them
    as rank 0's."""
    first = traces[0]
    other = next((t for t in traces[1:] if t.steps and first.steps and t.steps != first.steps), None)
    if other is None:
        return []
    named = [", ".join(t.steps[:3]) + (", ..." if len(t.steps) > 3 else "") for t in (other, first)]
    return [Finding("trace_note", "", (
        f"{other.source} names its steps {named[0]} where {first.source} names them {named[1]}: the replay takes the "
        "ranks' steps in order, first with first, and names them as the first rank's"))]


def _steps(traces: Sequence[RankTrace], recording: Timeline, timeline: Timeline) -> list[dict]:
    """Each profiler step's time across the ranks, recorded and simulated."""
    rec, sim = step_spans(traces, recording), step_spans(traces, timeline)
    names = traces[0].steps or tuple(f"step {k}" for k in range(len(rec)))
    timed = all(t.timed for t in traces)
    return [{"step": name, "recorded_s": rec[k] if timed else None, "simulated_s": sim[k]}
            for k, name in enumerate(names)]


def _collectives(traces: Sequence[RankTrace], instances: list[Instance], recording: Timeline, timeline: Timeline,
                 pricer: _Pricer) -> list[dict]:
    """Per collective and group: calls, bytes, time (recorded: the group's shortest rank's,
    the one that waited least for its peers; simulated: the call's) and exposed time (mean
    over the group's ranks), summed over calls, recorded and simulated, and what ran: every
    algorithm/protocol its calls ran, the one that took most of their time first (recorded:
    by recorded time)."""
    by_rank = {t.rank: t for t in traces}
    timed = all(t.timed for t in traces)
    exposed = {"recorded": {t.rank: exposed_s(t, recording.start[t.rank], recording.end[t.rank]) for t in traces},
               "simulated": {t.rank: exposed_s(t, timeline.start[t.rank], timeline.end[t.rank]) for t in traces}}
    rows: dict[tuple, dict] = {}
    for j, inst in enumerate(instances):
        c = inst.comm
        row = rows.setdefault((c.collective, c.group_name, len(c.group)), {
            "collective": c.collective, "group": c.group_name, "ranks": len(c.group), "calls": 0, "bytes": 0,
            "recorded_s": 0.0, "simulated_s": 0.0, "recorded_exposed_s": 0.0, "simulated_exposed_s": 0.0,
            "ran": Counter(), "recorded_ran": Counter()})
        row["calls"] += 1
        row["bytes"] += c.size_bytes
        recorded_s = min(by_rank[r].ops[i].duration_s for r, i in inst.members)
        simulated_s = float(timeline.instance_end[j] - timeline.instance_start[j])
        row["recorded_s"] += recorded_s
        row["simulated_s"] += simulated_s
        if timed:
            row["recorded_exposed_s"] += float(np.mean([exposed["recorded"][r][i] for r, i in inst.members]))
        row["simulated_exposed_s"] += float(np.mean([exposed["simulated"][r][i] for r, i in inst.members]))
        result = pricer.result(inst)
        row["ran"][f"{result.algorithm}/{result.protocol}" if result.protocol else result.algorithm] += simulated_s
        if c.algorithm:
            row["recorded_ran"][f"{c.algorithm}/{c.protocol}" if c.protocol else c.algorithm] += recorded_s
    out = []
    for row in rows.values():  # every algorithm its calls ran, the one that took most of their time first
        row["recorded_exposed_s"] = row["recorded_exposed_s"] if timed else None
        row["ran"] = ", ".join(name for name, _ in row["ran"].most_common())
        row["recorded_ran"] = ", ".join(name for name, _ in row["recorded_ran"].most_common()) or None
        out.append(row)
    return sorted(out, key=lambda r: -r["simulated_exposed_s"])


def _ranks_word(ranks: list[int]) -> str:
    return "rank" if len(ranks) == 1 else "ranks"


def _ranges(ranks: list[int]) -> str:
    """0-3, 5 for [0, 1, 2, 3, 5]."""
    parts, k = [], 0
    while k < len(ranks):
        j = k
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        parts.append(f"{ranks[k]}-{ranks[j]}" if j > k else str(ranks[k]))
        k = j + 1
    return ", ".join(parts)
