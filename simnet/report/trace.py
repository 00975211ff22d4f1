"""Chrome trace JSON (opens in https://ui.perfetto.dev and chrome://tracing).

A replayed profiler trace (``write_replay_trace``) is two processes per rank, the recording and
the simulation, a track per stream, an operation a slice (the first ``MAX_SLICES`` by start).

A training step (``write_training_trace``) is one track per pipeline stage: every forward
and backward pass of 1F1B as a slice, split into its compute and the communication it
waits for (TP, EP, FSDP, the stage boundary), and the data-parallel gradient sync on a
track of its own.

Collectives: one process per traced run (each algorithm at the largest size). Each rank has a track
(more lanes when its transfers overlap, e.g. a tree node sending up and down at once);
each transfer is a slice from its start until its receiver has the data, with the step,
chunk, bytes and peer as arguments. A file holds at most ``MAX_SLICES`` slices: a run with
more transfers than its share is thinned, its transfers of one connection (sender,
receiver, channel) and step merged into one slice from the first start to the last
delivery (their count and bytes as arguments), or per connection, per sender and step, or
per sender if that is still too many; the file and ``write_trace``'s notes say so.
Counter tracks show the busiest links' utilisation. Times are microseconds, as the format
wants.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from simnet import units
from simnet.io.files import write_text
from simnet.results.result import Result
from simnet.run.training import one_f_one_b
from simnet.schedule.transfers import REDUCE
from simnet.topology.graph import PS_PER_SECOND

__all__ = ["trace_events", "write_trace", "training_events", "write_training_trace", "replay_events",
           "write_replay_trace", "MAX_TRANSFERS", "MAX_SLICES", "COUNTER_LINKS"]

MAX_TRANSFERS = 2_000_000
"""Runs with more transfers are left out of a trace (even thinning them takes long)."""
MAX_SLICES = 60_000
"""Slices in one trace file at most, shared by its runs (about 20 MB; viewers stay responsive)."""
COUNTER_LINKS = 8


def _lanes(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Greedy interval colouring: the lowest lane free at each start (intervals in start order)."""
    lane_of = np.zeros(len(starts), dtype=np.int64)
    free_at: list[float] = []
    for i in np.argsort(starts, kind="stable").tolist():
        for lane, until in enumerate(free_at):
            if until <= starts[i]:
                free_at[lane] = ends[i]
                lane_of[i] = lane
                break
        else:
            lane_of[i] = len(free_at)
            free_at.append(ends[i])
    return lane_of


def _slices(result: Result, budget: int) -> tuple[dict[str, np.ndarray], str | None]:
    """The run's slices as arrays (src, dst, op, step, chunk, channel, count, bytes, start,
    end, sent; times in us): one per transfer within ``budget``, else merged (module
    docstring), with a note saying how."""
    replay, schedule = result.replay, result.replay.schedule
    real = np.flatnonzero(schedule.src != schedule.dst)  # joins are bookkeeping, not traffic
    columns = {"src": schedule.src[real], "dst": schedule.dst[real], "op": schedule.op[real],
               "step": schedule.step[real], "chunk": schedule.chunk[real], "channel": schedule.channel[real],
               "count": np.ones(len(real), dtype=np.int64), "bytes": (schedule.hi - schedule.lo)[real],
               "start": replay.start[real] * 1e6, "end": replay.delivered[real] * 1e6, "sent": replay.sent[real] * 1e6}
    if len(real) <= budget:
        return columns, None
    levels = ((("src", "dst", "channel", "step"), "connection and step"), (("src", "dst", "channel"), "connection"),
              (("src", "step"), "sender and step"), (("src",), "sender"))
    for keys, label in levels:
        _, group = np.unique(np.stack([columns[k] for k in keys], axis=1), axis=0, return_inverse=True)
        group, how = group.reshape(-1), label
        if group.max(initial=-1) + 1 <= budget:
            break
    groups = int(group.max(initial=-1)) + 1
    first = np.full(groups, len(real))
    np.minimum.at(first, group, np.arange(len(real)))
    merged = {k: v[first] for k, v in columns.items()}
    merged["count"] = np.bincount(group, minlength=groups)
    merged["bytes"] = np.bincount(group, weights=columns["bytes"], minlength=groups).astype(np.int64)
    merged["start"] = np.full(groups, np.inf)
    np.minimum.at(merged["start"], group, columns["start"])
    for key in ("end", "sent"):
        merged[key] = np.full(groups, -np.inf)
        np.maximum.at(merged[key], group, columns[key])
    note = (f"{result.algorithm}: {len(real):,} transfers drawn as {groups:,} slices, one per {how} "
            f"(over the {budget:,} slices its trace may hold{'; still over it' if groups > budget else ''})")
    return merged, note


def trace_events(result: Result, pid: int, budget: int = MAX_SLICES) -> tuple[list[dict], str | None]:
    """Trace events of one run (simulated with ``timeline=True`` for link counters), at most
    about ``budget`` slices; and a note when its transfers were merged to fit."""
    replay = result.replay
    schedule = replay.schedule
    title = f"{result.algorithm} {units.format_size(result.size_bytes)} on {result.gpus} GPUs"
    events: list[dict] = [{"ph": "M", "pid": pid, "name": "process_name", "args": {"name": title}},
                          {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}}]
    cols, note = _slices(result, budget)
    names = schedule.nodes
    first_tid = 0
    for node in np.unique(cols["src"]).tolist():
        mine = np.flatnonzero(cols["src"] == node)
        lanes = _lanes(cols["start"][mine], cols["end"][mine])
        label = f"rank {node}" if node < len(schedule.ranks) else names[node]
        for lane in range(int(lanes.max()) + 1):
            tid = first_tid + lane
            suffix = f" (lane {lane + 1})" if lane else ""
            events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                           "args": {"name": f"{label}: {names[node]}{suffix}"}})
            events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
        for t, lane in zip(mine.tolist(), lanes.tolist()):
            peer = int(cols["dst"][t])
            args = {"step": int(cols["step"][t]), "chunk": int(cols["chunk"][t]), "bytes": int(cols["bytes"][t]),
                    "peer": names[peer], "channel": int(cols["channel"][t]), "sent_us": float(cols["sent"][t])}
            if note:
                args["transfers"] = int(cols["count"][t])
            events.append({
                "ph": "X", "pid": pid, "tid": first_tid + lane, "ts": float(cols["start"][t]),
                "dur": float(cols["end"][t] - cols["start"][t]),
                "name": f"{'reduce' if cols['op'][t] == REDUCE else 'copy'} -> {names[peer]}",
                "cat": result.algorithm, "args": args})
        first_tid += int(lanes.max()) + 1
    stats = replay.stats
    if stats.timeline:
        top = {replay.topology.link_index[(link.src, link.dst)] for link in result.links[:COUNTER_LINKS]}
        for time, changed, loads in stats.timeline:
            for link, load in zip(changed.tolist(), loads.tolist()):
                if link in top:
                    usage = float(stats.utilization(link, np.array([time]), np.array([load]))[0])
                    events.append({"ph": "C", "pid": pid, "ts": time / PS_PER_SECOND * 1e6,
                                   "name": f"{replay.topology.link_name(link)} utilisation %",
                                   "args": {"utilisation": round(100 * usage, 3)}})
    return events, note


def write_trace(results, path: str | Path) -> tuple[Path, list[str]]:
    """Trace each algorithm at the largest size of ``results`` into ``path`` (link counters
    when those runs kept a timeline: ``run_scenario(..., timeline=True)``), at most
    ``MAX_SLICES`` slices in all; returns the path and notes on what was thinned or left out."""
    largest = max(r.size_bytes for r in results.runs)
    runs = [r for r in results.runs if r.size_bytes == largest]
    events: list[dict] = []
    notes = []
    for pid, run in enumerate(runs):
        if run.replay is not None and (run.replay.schedule is None or len(run.replay.schedule) > MAX_TRANSFERS):
            notes.append(f"{run.algorithm}: left out, over {MAX_TRANSFERS:,} transfers (or replayed without keeping "
                         "them)")
            continue
        more, note = trace_events(run, pid, MAX_SLICES // len(runs))
        events += more
        notes += [note] if note else []
    document = {"traceEvents": events, "displayTimeUnit": "ns",
                "otherData": {"scenario": results.scenario, "size_bytes": largest, "thinned or left out": notes}}
    return write_text(path, json.dumps(document, allow_nan=False)), notes


_PART_NAMES = {"compute": "compute", "tp": "TP AllReduce", "ep": "EP AllToAll", "fsdp": "FSDP gather/scatter",
               "pp": "stage boundary"}


def training_events(step: dict) -> list[dict]:
    """Trace events of a training step (``simnet.run.training.TrainingStep`` as a dict): its
    1F1B schedule, every pass cut into its parts, and the DP sync; microseconds."""
    par = step["parallelism"]
    forward, backward = step["slot"]["forward"], step["slot"]["backward"]
    title = f"training step: {step.get('model', 'model')} on {step['gpus']} GPUs"
    events: list[dict] = [{"ph": "M", "pid": 0, "name": "process_name", "args": {"name": title}}]
    for stage in range(par["pp"]):
        for tid, name in ((2 * stage, f"stage {stage}: passes"), (2 * stage + 1, f"stage {stage}: DP sync")):
            events += [{"ph": "M", "pid": 0, "tid": tid, "name": "thread_name", "args": {"name": name}},
                       {"ph": "M", "pid": 0, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}}]
    last_compute = {}
    chunks = par.get("virtual_stages", 1)
    passes = one_f_one_b(par["pp"], par["micro_batches"], sum(forward.values()), sum(backward.values()), chunks)
    for stage, kind, micro, chunk, start, end in passes:
        tid = 2 * stage
        name = f"{'forward' if kind == 'F' else 'backward'} {micro}" + (f" chunk {chunk}" if chunks > 1 else "")
        events.append({"ph": "X", "pid": 0, "tid": tid, "ts": start * 1e6, "dur": (end - start) * 1e6,
                       "name": name, "cat": "pass"})
        at = start
        for part, total in (forward if kind == "F" else backward).items():
            seconds = total / chunks  # a chunk's share of the micro-batch's pass
            if seconds > 0:
                events.append({"ph": "X", "pid": 0, "tid": tid, "ts": at * 1e6, "dur": seconds * 1e6,
                               "name": _PART_NAMES[part], "cat": part, "args": {"micro_batch": micro}})
                if part == "compute" and kind == "B":
                    last_compute[stage] = at
            at += seconds
    if step["dp_sync_s"] > 0:
        for stage, at in last_compute.items():  # the gradient sync overlaps each stage's last backward compute
            events.append({"ph": "X", "pid": 0, "tid": 2 * stage + 1, "ts": at * 1e6,
                           "dur": step["dp_sync_s"] * 1e6, "name": "DP gradient AllReduce", "cat": "dp"})
    return events


def write_training_trace(step: dict, path: str | Path) -> Path:
    """The training step's timeline (``training_events``) into ``path``."""
    document = {"traceEvents": training_events(step), "displayTimeUnit": "ms",
                "otherData": {"step_s": step["step_s"], "mfu": step["mfu"]}}
    return write_text(path, json.dumps(document, allow_nan=False))


def replay_events(replayed, budget: int = MAX_SLICES) -> tuple[list[dict], bool]:
    """Chrome trace events of a ``TraceReplay``: per rank a recorded and a simulated
    process, a track per stream; True when slices past ``budget`` were left out."""
    events, pid, per_timeline = [], 0, max(budget // max(2 * len(replayed.traces), 1), 1)
    cut = False
    for label, timeline in (("recorded", replayed.recording), ("simulated", replayed.simulated)):
        for trace in replayed.traces:
            pid += 1
            events.append({"ph": "M", "name": "process_name", "pid": pid,
                           "args": {"name": f"rank {trace.rank} {label}"}})
            order = np.argsort(timeline.start[trace.rank], kind="stable")
            cut |= len(order) > per_timeline
            for i in order[:per_timeline].tolist():
                op = trace.ops[i]
                args = {"step": trace.steps[op.step] if trace.steps else op.step}
                if op.comm is not None:
                    args |= {"collective": op.comm.collective, "bytes": op.comm.size_bytes,
                             "group": op.comm.group_name, "ranks": len(op.comm.group)}
                events.append({"ph": "X", "name": op.name[:120], "pid": pid, "tid": op.stream,
                               "ts": float(timeline.start[trace.rank][i]) * 1e6,
                               "dur": float(timeline.end[trace.rank][i] - timeline.start[trace.rank][i]) * 1e6,
                               "cat": "communication" if op.comm is not None else "compute", "args": args})
    return events, cut


def write_replay_trace(replayed, path: str | Path) -> tuple[Path, list[str]]:
    """Write a ``TraceReplay`` as Chrome trace JSON; notes say what was left out."""
    events, cut = replay_events(replayed)
    notes = [f"{path}: the first {MAX_SLICES // (2 * len(replayed.traces)):,} operations of each rank's timeline "
             "only (a viewer stays responsive)"] if cut else []
    return write_text(path, json.dumps({"traceEvents": events, "displayTimeUnit": "ms"})), notes
