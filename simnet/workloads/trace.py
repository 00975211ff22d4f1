"""A recorded training step as a dependency graph, and its replay with other times.

A ``RankTrace`` is what one rank's GPU did, read from a profiler trace
(``simnet.workloads.kineto``): its
operations in recorded order, each with the operations it waited for. ``replay`` runs
every rank's graph again with each collective's time given by a function (simnet's
model and network, or the recorded times), compute scaled by a speed-up, and returns
when every operation starts and ends. It knows nothing of networks.

The rules, stated once (docs/model.md, "Replaying a trace"):

* an operation starts once every operation it waited for has ended and the host has
  launched it (the host's launch times are kept as recorded), plus the idle time the
  recording shows after the later of the two: its *gap*;
* a collective starts on all its ranks at once, when the last of them is ready, and
  ends on all of them together;
* compute lasts as recorded, GPU kernels divided by ``compute_speedup`` (host work and
  copies keep their time).

>>> a = Op("gemm", stream=7, start_s=0.0, duration_s=1e-3)
>>> c = Op("ncclKernel_AllReduce", stream=20, start_s=1.0e-3, duration_s=2e-3, deps=(0,),
...        comm=Comm("allreduce", 2**20, (0, 1), "0"))
>>> b = Op("optimizer", stream=7, start_s=3.5e-3, duration_s=1e-3, deps=(0, 1))
>>> traces = [RankTrace(0, (a, c, b), "r0.json"), RankTrace(1, (a, c, b), "r1.json")]
>>> timeline = replay(traces, lambda instance: 1e-3)   # the AllReduce now takes 1 ms
>>> [round(x * 1e3, 3) for x in timeline.end[0].tolist()]  # ms: the optimizer keeps its 0.5 ms gap
[1.0, 2.0, 3.5]
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from simnet.errors import InputError

__all__ = ["Comm", "Op", "RankTrace", "Instance", "Timeline", "replay", "recorded", "instances_of",
           "exposed_s", "step_spans", "MAX_RANKS"]

MAX_RANKS = 2**20
"""Most ranks a replayed job may have (above the largest topology simnet builds, ~300,000 GPUs)."""


@dataclass(frozen=True)
class Comm:
    """What a collective operation exchanged: simnet's collective name
    (``simnet.schedule.kinds``), its size in nccl-tests' convention (bytes), the global
    ranks of its group in group order, the group's name, and the algorithm and protocol
    the recording ran (NCCL's kernel name), when known."""

    collective: str
    size_bytes: int
    group: tuple[int, ...]
    group_name: str
    algorithm: str | None = None
    protocol: str | None = None


@dataclass(frozen=True)
class Op:
    """One GPU operation as recorded: its start (s, from the rank's first operation) and
    duration (s), its stream, the operations of its rank it waited for (indices into the
    rank's ops, all earlier in the list), its step (index of the profiler step it was
    launched in), and what it exchanged if it is a collective (else it is compute)."""

    name: str
    stream: int
    start_s: float
    duration_s: float
    deps: tuple[int, ...] = ()
    comm: Comm | None = None
    step: int = 0
    scaled: bool = True  # compute a faster GPU shortens (a kernel); a copy or set keeps its time
    launch_s: float | None = None  # when the host launched it (s, same clock as start_s), if recorded
    on_host: bool = False  # host work (an execution trace's CPU operations): takes time, hides no communication

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s


@dataclass(frozen=True)
class RankTrace:
    """One rank's recorded operations (in order of recorded start), the file they came
    from, the world size the recording names (None if it does not), the recorded GPU's
    name, the names of its profiler steps, what reading it left out (one line each), and
    whether it holds when operations started (an execution trace may give durations only:
    then gaps are zero and there is no recorded step time)."""

    rank: int
    ops: tuple[Op, ...]
    source: str
    world: int | None = None
    gpu: str | None = None
    steps: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    timed: bool = True
    groups_named: frozenset[str] = frozenset()  # the process groups its calls name (Chakra's pg_name; "": none)

    def as_rank(self, rank: int) -> RankTrace:
        """The same operations standing for another rank of a job whose ranks all run alike."""
        return replace(self, rank=rank)


@dataclass(frozen=True)
class Instance:
    """One collective call as every rank of its group made it: the ``k``-th call of the
    group, and ``(rank, op index)`` of each member's operation."""

    comm: Comm
    k: int
    members: tuple[tuple[int, int], ...]


@dataclass
class Timeline:
    """When each operation of each rank starts and ends in a replay (s, per rank in the
    order of its ops), and each instance's start and end."""

    start: dict[int, np.ndarray]
    end: dict[int, np.ndarray]
    instances: list[Instance]
    instance_start: np.ndarray
    instance_end: np.ndarray
    spans: dict[int, float] = field(default_factory=dict)


def instances_of(traces: Sequence[RankTrace]) -> list[Instance]:
    """Every collective call matched across its group: the k-th call a rank makes in a
    group is the k-th call of every other member (as NCCL requires). Refuses in one line
    a rank that is missing, a group whose members made different numbers of calls or
    disagree on what the k-th call was."""
    by_rank = {t.rank: t for t in traces}
    calls: dict[tuple[str, tuple[int, ...]], dict[int, list[int]]] = {}
    for t in traces:
        for i, op in enumerate(t.ops):
            if op.comm is not None:
                if t.rank not in op.comm.group:
                    raise InputError(f"rank {t.rank}'s {op.name} at {op.start_s * 1e3:.3f} ms names group "
                                     f"{list(op.comm.group)}, which does not hold rank {t.rank}", t.source)
                calls.setdefault((op.comm.group_name, op.comm.group), {}).setdefault(t.rank, []).append(i)
    found = []
    for (name, group), per_rank in calls.items():
        missing = [r for r in group if r not in by_rank]
        if missing:
            raise InputError(f"group {name!r} {list(group)} holds ranks {missing} that no trace stands for; give "
                             "their traces, or --ranks-per-trace if every rank runs alike",
                             by_rank[next(iter(per_rank))].source)
        counts = {r: len(per_rank.get(r, [])) for r in group}
        if len(set(counts.values())) > 1:
            fewest = min(group, key=counts.__getitem__)  # the file named: a rank with the fewest calls
            shown = sorted(group, key=lambda r: (r != fewest, r))[:8]
            raise InputError(f"group {name!r}: its ranks made different numbers of collective calls "
                             f"({', '.join(f'rank {r}: {counts[r]}' for r in shown)}"
                             f"{', ...' if len(group) > len(shown) else ''}; this file's rank {fewest} made "
                             "the fewest); the traces do not cover the same steps",
                             by_rank[fewest].source)
        for k in range(counts[group[0]]):
            members = tuple((r, per_rank[r][k]) for r in group)
            comms = {by_rank[r].ops[i].comm for r, i in members}
            if len({(c.collective, c.size_bytes) for c in comms}) > 1:
                first, *_ = members
                raise InputError(f"group {name!r}, call {k + 1}: its ranks disagree on the collective "
                                 f"({sorted({f'{c.collective} of {c.size_bytes:,} B' for c in comms})})",
                                 by_rank[first[0]].source)
            found.append(Instance(by_rank[group[0]].ops[per_rank[group[0]][k]].comm, k, members))
    return found


def replay(traces: Sequence[RankTrace], collective_s: Callable[[Instance], float], compute_speedup: float = 1.0,
           instances: list[Instance] | None = None) -> Timeline:
    """Every rank's operations run again (see the module docstring): compute for its
    recorded time / ``compute_speedup``, each collective for ``collective_s(instance)``
    seconds. Refuses in one line traces whose collectives wait on each other in a cycle."""
    instances = instances_of(traces) if instances is None else instances
    by_rank = {t.rank: t for t in traces}
    graphs: dict[int, _Graph] = {}  # ranks standing for one trace share its graph
    graph = {r: graphs.setdefault(id(t.ops), _Graph(t.ops, compute_speedup)) for r, t in by_rank.items()}
    start = {r: np.full(len(t.ops), np.nan) for r, t in by_rank.items()}
    end = {r: np.full(len(t.ops), np.nan) for r, t in by_rank.items()}
    owner: dict[tuple[int, int], int] = {m: j for j, inst in enumerate(instances) for m in inst.members}
    waiting = {r: list(graph[r].waits) for r in by_rank}
    arrived = [0] * len(instances)
    instance_start = np.full(len(instances), np.nan)
    instance_end = np.full(len(instances), np.nan)
    ready_at: dict[tuple[int, int], float] = {}
    todo = [(r, i) for r in by_rank for i in graph[r].roots]
    while todo:
        r, i = todo.pop()
        g = graph[r]
        deps = g.deps[i]
        earliest = max(float(end[r][deps].max()) if len(deps) else -np.inf, g.launch[i])
        earliest = (0.0 if earliest == -np.inf else earliest) + g.gap[i]
        finished = []
        if g.duration[i] >= 0:  # compute
            start[r][i], end[r][i] = earliest, earliest + g.duration[i]
            finished.append((r, i))
        else:
            j = owner[(r, i)]
            ready_at[(r, i)] = earliest
            arrived[j] += 1
            if arrived[j] == len(instances[j].members):
                begin = max(ready_at[m] for m in instances[j].members)
                duration = collective_s(instances[j])
                instance_start[j], instance_end[j] = begin, begin + duration
                for m in instances[j].members:
                    start[m[0]][m[1]], end[m[0]][m[1]] = begin, begin + duration
                    finished.append(m)
        for fr, fi in finished:
            left = waiting[fr]
            for nxt in graph[fr].dependents[fi]:
                left[nxt] -= 1
                if left[nxt] == 0:
                    todo.append((fr, nxt))
    stuck = [(r, i) for r in by_rank for i in range(len(by_rank[r].ops)) if np.isnan(end[r][i])]
    if stuck:
        r, i = min(stuck, key=lambda m: by_rank[m[0]].ops[m[1]].start_s)
        op = by_rank[r].ops[i]
        raise InputError(f"rank {r}'s {op.name} at {op.start_s * 1e3:.3f} ms never runs: the ranks' collectives "
                         "wait on each other in a cycle (their traces call them in different orders)",
                         by_rank[r].source)
    spans = {r: float(np.max(end[r]) - np.min(start[r])) if len(end[r]) else 0.0 for r in by_rank}
    return Timeline(start, end, instances, instance_start, instance_end, spans)


class _Graph:
    """One trace's operations as the replay walks them: each op's dependencies (an index
    array), its dependents, how many it waits for, its launch time (s, -inf if unknown),
    gap (s) and duration (s, scaled; -1 for a collective)."""

    def __init__(self, ops: tuple[Op, ...], compute_speedup: float):
        self.deps = [np.array(op.deps, dtype=np.int64) for op in ops]
        self.dependents: list[list[int]] = [[] for _ in ops]
        for i, op in enumerate(ops):
            for d in op.deps:
                self.dependents[d].append(i)
        self.waits = [len(op.deps) for op in ops]
        self.roots = [i for i, op in enumerate(ops) if not op.deps]
        self.launch = [-np.inf if op.launch_s is None else op.launch_s for op in ops]
        ends = np.array([op.end_s for op in ops])
        self.gap = [_gap(op, float(ends[self.deps[i]].max()) if op.deps else None) for i, op in enumerate(ops)]
        self.duration = [-1.0 if op.comm is not None else
                         op.duration_s / compute_speedup if op.scaled and not op.on_host else op.duration_s
                         for op in ops]


def _gap(op: Op, waited_end: float | None) -> float:
    """Idle time (s) the recording shows between the end of the last operation ``op``
    waited for (``waited_end``) or its launch, whichever was later (or the rank's first
    start), and its own start; never below zero (kernels one after another on a stream
    may overlap by a timer tick)."""
    waited = max([x for x in (waited_end, op.launch_s) if x is not None], default=0.0)
    return max(op.start_s - waited, 0.0)


def recorded(traces: Sequence[RankTrace]) -> Timeline:
    """The recording itself as a timeline (the replay's yardstick)."""
    start = {t.rank: np.array([op.start_s for op in t.ops]) for t in traces}
    end = {t.rank: np.array([op.end_s for op in t.ops]) for t in traces}
    instances = instances_of(traces)
    by_rank = {t.rank: t for t in traces}
    inst_start = np.array([max(by_rank[r].ops[i].start_s for r, i in inst.members) for inst in instances])
    inst_end = np.array([max(by_rank[r].ops[i].end_s for r, i in inst.members) for inst in instances])
    spans = {r: float(end[r].max() - start[r].min()) if len(end[r]) else 0.0 for r in start}
    return Timeline(start, end, instances, inst_start, inst_end, spans)


def exposed_s(trace: RankTrace, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Seconds of each operation of ``trace`` (at the given times) that no GPU compute
    operation of the same rank overlaps: a collective's exposed time (0 for compute)."""
    compute = sorted((start[i], end[i]) for i, op in enumerate(trace.ops) if op.comm is None and not op.on_host)
    merged: list[list[float]] = []
    for s, e in compute:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    starts = [m[0] for m in merged]
    out = np.zeros(len(trace.ops))
    for i, op in enumerate(trace.ops):
        if op.comm is None:
            continue
        s, e = start[i], end[i]
        covered = 0.0
        k = max(bisect.bisect_right(starts, s) - 1, 0)
        while k < len(merged) and merged[k][0] < e:
            covered += max(0.0, min(e, merged[k][1]) - max(s, merged[k][0]))
            k += 1
        out[i] = (e - s) - covered
    return out


def step_spans(traces: Sequence[RankTrace], timeline: Timeline) -> list[float]:
    """Each profiler step's time (s) across the ranks: from the first start of any rank's
    operation in it to the first start in the next step, the last step to the last end
    (every rank's clock starts at its own first operation, in the recording as in a
    replay, so a rank that waits for another's collective counts the wait)."""
    first: dict[int, float] = {}
    step_of: dict[int, np.ndarray] = {}  # ranks standing for one trace share its ops
    for t in traces:
        if not len(t.ops):
            continue
        steps = step_of.setdefault(id(t.ops), np.array([op.step for op in t.ops]))
        for s in np.unique(steps).tolist():
            at = float(timeline.start[t.rank][steps == s].min())
            first[s] = min(first.get(s, at), at)
    firsts = [first[s] for s in sorted(first)]
    last = max(float(timeline.end[t.rank].max()) for t in traces if len(t.ops))
    return [b - a for a, b in zip(firsts, firsts[1:] + [last])]
