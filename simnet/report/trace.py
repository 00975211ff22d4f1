"""Chrome trace JSON (opens in https://ui.perfetto.dev and chrome://tracing).

A training step (``write_training_trace``) is one track per pipeline stage: every forward
and backward pass of 1F1B as a slice, split into its compute and the communication it
waits for (TP, EP, FSDP, the stage boundary), and the data-parallel gradient sync on a
track of its own.

Collectives: one process per traced run (each algorithm at the largest size). Each rank has a track
(more lanes when its transfers overlap, e.g. a tree node sending up and down at once);
each transfer is a slice from its start until its receiver has the data, with the step,
chunk, bytes and peer as arguments. Counter tracks show the busiest links' utilisation.
Times are microseconds, as the format wants.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from simnet import units
from simnet.report.export import write_text
from simnet.results.result import Result
from simnet.run.training import one_f_one_b
from simnet.schedule.transfers import REDUCE
from simnet.topology.graph import PS_PER_SECOND

__all__ = ["trace_events", "write_trace", "training_events", "write_training_trace", "MAX_TRANSFERS",
           "COUNTER_LINKS"]

MAX_TRANSFERS = 200_000
"""Runs with more transfers are left out of a trace (viewers struggle beyond that)."""
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


def trace_events(result: Result, pid: int) -> list[dict]:
    """Trace events of one run (simulated with ``timeline=True`` for link counters)."""
    replay = result.replay
    schedule = replay.schedule
    title = f"{result.algorithm} {units.format_size(result.size_bytes)} on {result.gpus} GPUs"
    events: list[dict] = [{"ph": "M", "pid": pid, "name": "process_name", "args": {"name": title}},
                          {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}}]
    real = np.flatnonzero(schedule.src != schedule.dst)  # joins are bookkeeping, not traffic
    start_us = replay.start * 1e6
    end_us = replay.delivered * 1e6
    sent_us = replay.sent * 1e6
    names = schedule.nodes
    first_tid = 0
    for node in np.unique(schedule.src[real]).tolist():
        mine = real[schedule.src[real] == node]
        lanes = _lanes(start_us[mine], end_us[mine])
        label = f"rank {node}" if node < len(schedule.ranks) else names[node]
        for lane in range(int(lanes.max()) + 1):
            tid = first_tid + lane
            suffix = f" (lane {lane + 1})" if lane else ""
            events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                           "args": {"name": f"{label}: {names[node]}{suffix}"}})
            events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
        for t, lane in zip(mine.tolist(), lanes.tolist()):
            peer = int(schedule.dst[t])
            events.append({
                "ph": "X", "pid": pid, "tid": first_tid + lane, "ts": float(start_us[t]),
                "dur": float(end_us[t] - start_us[t]),
                "name": f"{'reduce' if schedule.op[t] == REDUCE else 'copy'} -> {names[peer]}",
                "cat": result.algorithm,
                "args": {"step": int(schedule.step[t]), "chunk": int(schedule.chunk[t]),
                         "bytes": int(schedule.hi[t] - schedule.lo[t]), "peer": names[peer],
                         "channel": int(schedule.channel[t]), "sent_us": float(sent_us[t])}})
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
    return events


def write_trace(results, path: str | Path) -> Path:
    """Trace each algorithm at the largest size of ``results`` into ``path`` (link counters
    when those runs kept a timeline: ``run_scenario(..., timeline=True)``)."""
    largest = max(r.size_bytes for r in results.runs)
    events: list[dict] = []
    skipped = []
    for pid, run in enumerate(r for r in results.runs if r.size_bytes == largest):
        if run.replay is not None and (run.replay.schedule is None or len(run.replay.schedule) > MAX_TRANSFERS):
            skipped.append(run.algorithm)
            continue
        events += trace_events(run, pid)
    document = {"traceEvents": events, "displayTimeUnit": "ns",
                "otherData": {"scenario": results.scenario, "size_bytes": largest,
                              "skipped (too many transfers)": skipped}}
    return write_text(path, json.dumps(document, allow_nan=False))


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
