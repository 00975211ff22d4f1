"""rich tables for topologies and results."""

from __future__ import annotations

from collections import Counter

from rich.table import Table

from simnet import units
from simnet.results.result import FILLED
from simnet.schedule.kinds import COLLECTIVES
from simnet.spec.conditions import when
from simnet.topology.graph import PS_PER_SECOND, Topology

__all__ = ["ranks_table", "link_classes_table", "results_table", "steps_table", "calibration_table",
           "conditions_table", "jobs_table", "interference_table", "trace_tables"]


def ranks_table(topo: Topology, limit: int = 64) -> Table:
    """One row per GPU in rank order (first ``limit``), with its grouping labels."""
    table = Table(title=f"{topo.name}: {len(topo.gpus)} GPUs (ranks)")
    for column in ("rank", "gpu", "host", "rack", "region"):
        table.add_column(column, justify="right" if column == "rank" else "left")
    for rank, gpu in enumerate(topo.gpus[:limit]):
        data = topo.graph.nodes[gpu]
        table.add_row(str(rank), gpu, *(data.get(k) or "-" for k in ("host", "rack", "region")))
    if len(topo.gpus) > limit:
        table.add_row("...", f"{len(topo.gpus) - limit} more", "", "", "")
    return table


def link_classes_table(topo: Topology) -> Table:
    """Links grouped by (kind -> kind, bandwidth, latency), with how many of each."""
    classes = Counter(
        (topo.kind(u), topo.kind(v), float(topo.capacity[i]), int(topo.latency_ps[i]))
        for i, (u, v) in enumerate(topo.links))
    table = Table(title=f"{topo.name}: {len(topo.links)} directed links")
    for column in ("from", "to", "bandwidth", "GB/s", "latency", "count"):
        table.add_column(column, justify="right" if column in ("GB/s", "count") else "left")
    for (a, b, bandwidth, latency), count in sorted(classes.items(), key=lambda kv: (-kv[0][2], kv[0][:2])):
        table.add_row(a, b, units.format_bandwidth(bandwidth), f"{bandwidth / 1e9:.4g}",
                      units.format_time(latency / PS_PER_SECOND, short=True), str(count))
    return table


def _gbps(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _algorithm_cell(run) -> str:
    """The algorithm; for ``auto`` NCCL's pick and, when simulation found one faster (by more
    than ``runner.SAME_TIME``: closer, the model cannot tell them apart), by how much and
    which NCCL_ALGO gets it (under ``model: ideal`` no NCCL_ALGO: its ranking is not NCCL's)."""
    if run.variants:  # the variant simnet kept, e.g. "hierarchical (inner ring)"
        return f"{run.algorithm} ({', '.join(f'{k} {run.options[k]}' for k in run.variants)})"
    if not run.auto:
        return run.algorithm
    name = f"auto -> {run.algorithm}"
    if run.auto.get("nccl_pick", {}).get("algorithm") == "MSCCL":  # RCCL's MSCCL all-pairs schedule (rccl.msccl)
        name += " (MSCCL)"
    fastest = run.auto["fastest"]
    if fastest != run.algorithm:
        gain = run.time_s / run.auto["candidates"][fastest]
        hint = run.auto["fastest_hint"]
        name += f" ({fastest} {gain:.2f}x faster{': ' + hint if hint else ' at line rate'})"
    return name




def _bottleneck_cell(neck) -> str:
    """The bottleneck and how long it was saturated, or, when no link ever filled (latency,
    or NCCL's per-channel ceiling, set the pace), the busiest link and its mean load."""
    if neck is None:
        return "-"
    if neck.saturated_fraction >= FILLED:
        return f"{neck.name} ({neck.saturated_fraction:.0%})"
    return f"none; busiest {neck.name} ({neck.mean_utilization:.0%} busy)"


def results_table(results, title: str | None = None) -> Table:
    """Size, algorithm, time, algbw, busbw and the bottleneck link per run; the fastest per
    size starred where there was a choice. Runs that move no data (one GPU) show '-'."""
    winners = results.winners()
    what = COLLECTIVES[results.runs[0].collective].title if results.runs else "AllReduce"
    table = Table(title=title or f"{results.scenario}: {what}", title_justify="left")
    protocols = any(run.protocol for run in results.runs)
    for column, justify in (("size", "right"), ("algorithm", "left"), ("protocol", "left"), ("time", "right"),
                            ("algbw GB/s", "right"), ("busbw GB/s", "right"),
                            ("bottleneck link (saturated % of run)", "left")):
        if column != "protocol" or protocols:
            table.add_column(column, justify=justify)
    previous = None
    for run in results.runs:
        if previous is not None and run.size_bytes != previous:
            table.add_section()
        previous = run.size_bytes
        best = winners.get(run.size_bytes) is run
        neck = run.bottleneck
        where = _bottleneck_cell(neck)
        cells = [units.format_size(run.size_bytes), ("* " if best else "  ") + _algorithm_cell(run)]
        cells += [run.protocol or "-"] if protocols else []
        cells += [units.format_time(run.time_s), _gbps(run.algbw_GBps), _gbps(run.busbw_GBps), where]
        table.add_row(*cells, style="bold green" if best else None)
    return table


def conditions_table(results) -> Table | None:
    """With faults or stragglers: per run, its time against the same run healthy, what the
    faults moved and how much of the latest GPU's delay the collective absorbed."""
    runs = [run for run in results.runs if run.conditions]
    if not runs:
        return None
    table = Table(title="what the faults and stragglers cost", title_justify="left")
    for column in ("size", "algorithm", "time", "healthy", "cost", "flows rerouted", "bytes moved",
                   "latest GPU late by", "absorbed"):
        table.add_column(column, justify="left" if column == "algorithm" else "right")
    for run in runs:
        c = run.conditions
        absorbed = "-" if c["absorbed_s"] is None else units.format_time(c["absorbed_s"])
        table.add_row(units.format_size(run.size_bytes), _algorithm_cell(run), units.format_time(run.time_s),
                      units.format_time(c["healthy_s"]), f"{c['slowdown_s'] / c['healthy_s']:+.1%}"
                      if c["healthy_s"] else "-", str(c["rerouted_flows"]), units.format_size(c["rerouted_bytes"]),
                      units.format_time(c["max_delay_s"]) if c["stragglers"] else "-", absorbed)
    what = [f"{f['what']} {when(f['at_s'])}" for f in runs[0].conditions["faults"]]
    if runs[0].conditions["stragglers"]:
        what.append(f"{runs[0].conditions['stragglers']} GPUs join late (mean over all GPUs "
                    f"{units.format_time(runs[0].conditions['mean_delay_s'])})")
    table.caption = "; ".join(what)
    return table


def jobs_table(result, title: str) -> Table:
    """Per job: where it runs, what it AllReduces, its mean time alone and with every job
    (under faults, also with every job on the healthy fabric)."""
    table = Table(title=title, title_justify="left")
    faulted = bool(result.faults)
    for column in ("job", "GPUs", "hosts", "racks", "algorithm", "protocol", "size", "runs", "alone", "together",
                   "slowdown", *(("healthy",) if faulted else ())):
        table.add_column(column, justify="left" if column in ("job", "algorithm", "protocol") else "right")
    for job in result.jobs:
        algorithm = job["algorithm"] + (f" ({job['inner']} between groups)" if job.get("inner") else "")
        table.add_row(job["name"], str(job["gpus"]), str(job["hosts"]), str(job["racks"]), algorithm,
                      job["protocol"] or "-", units.format_size(job["size_bytes"]), str(job["runs"]),
                      units.format_time(job["alone_s"]), units.format_time(job["together_s"]),
                      f"{job['slowdown']:.2f}x", *((units.format_time(job["healthy_s"]),) if faulted else ()),
                      style="bold red" if job["slowdown"] > 1.05 else None)
    said = []
    if faulted:
        said.append("alone and together under " + "; ".join(
            f"{f['what']} from {units.format_time(f['at_s']) if f['at_s'] else 'the start'}"
            for f in result.faults[:3])
                    + ("; ..." if len(result.faults) > 3 else "") + "; healthy: together without them")
    if result.shared_links:
        top = result.shared_links[0]
        said.append(f"most fought-over link: {top['link']} ({', '.join(top['jobs'])}), saturated "
                    f"{top['saturated_fraction']:.0%} of the shared run")
    table.caption = "\n".join(said) or None
    return table


def interference_table(result) -> Table:
    """Row job's mean AllReduce time next to column job, over its time alone."""
    names = list(result.interference)
    table = Table(title="interference: row job's time next to column job / alone", title_justify="left")
    table.add_column("job")
    for name in names:
        table.add_column(name, justify="right")
    for a in names:
        table.add_row(a, *("-" if a == b else f"{result.interference[a][b]:.2f}x" for b in names))
    return table


def steps_table(results, compute_label: str) -> Table:
    """With a workload: per algorithm, the training step's iteration time, the communication
    the backward pass did not hide, and speedup / efficiency against one GPU."""
    table = Table(title=f"training step ({compute_label})", title_justify="left")
    late = any("slowest_compute" in step for step in results.steps)
    columns = ("algorithm", "iteration", "exposed comm", "speedup", "efficiency")
    for column in columns + (("straggler cost", "absorbed") if late else ()):
        table.add_column(column, justify="left" if column == "algorithm" else "right")
    times = {step["iteration_time_s"] for step in results.steps}
    best = min(results.steps, key=lambda s: s["iteration_time_s"]) if len(times) > 1 else None
    for step in results.steps:
        star = step is best
        cells = [units.format_time(step["straggler_cost_s"]), units.format_time(step["straggler_absorbed_s"])] \
            if late else []
        table.add_row(("* " if star else "  ") + step["algorithm"], units.format_time(step["iteration_time_s"]),
                      units.format_time(step["communication_exposed_s"]), f"{step['speedup']:.2f}",
                      f"{step['efficiency']:.0%}", *cells, style="bold green" if star else None)
    return table


def training_tables(step: dict) -> tuple[Table, Table]:
    """With ``training``: the step (time, compute, what each kind of communication and the
    pipeline bubble add, throughput, MFU), and each simulated exchange."""
    par = step["parallelism"]
    layout = " ".join(f"{k}={par[k]}" for k in ("tp", "pp", "dp", "ep") if par[k] > 1 or k == "dp")
    layout += (" fsdp" if par["fsdp"] else "") + (f" vp={par['virtual_stages']}" if par.get("virtual_stages", 1) > 1
                                                   else "")
    layout += f", {par['micro_batches']} x {par['micro_batch_size']} sequences"
    summary = Table(title=f"training step: {step['model']} on {step['gpus']} GPUs ({layout})", title_justify="left")
    names = {"tp": "TP exposed", "ep": "EP exposed", "pp": "PP exposed", "fsdp": "FSDP exposed", "dp": "DP exposed",
             "bubble": "bubble"}
    shown = [k for k in names if step["exposed"][k] > 0]
    for column in ("step", "compute", *(names[k] for k in shown), "tokens/s", "MFU"):
        summary.add_column(column, justify="right")
    summary.add_row(units.format_time(step["step_s"]), units.format_time(step["compute_s"]),
                    *(units.format_time(step["exposed"][k]) for k in shown), f"{step['tokens_per_s']:,.0f}",
                    f"{step['mfu']:.1%}")
    exchanges = Table(title="the exchanges it simulated (every group of a kind at once)", title_justify="left")
    for column in ("kind", "collective", "size", "groups", "algorithm", "time"):
        exchanges.add_column(column, justify="left" if column in ("kind", "collective", "algorithm") else "right")
    for item in step["collectives"]:
        exchanges.add_row(item["kind"].upper(), item["collective"], units.format_size(item["size_bytes"]),
                          str(item["groups"]), "/".join(filter(None, (item["algorithm"], item["protocol"]))),
                          units.format_time(item["time_s"]))
    return summary, exchanges


def calibration_table(result) -> Table:
    """Per point of a calibration: measured, predicted before and after the fit, errors."""
    table = Table(title="simnet calibrate: measured against predicted (the faster of out-of-place and in-place)",
                  title_justify="left")
    for column in ("log line", "ranks", "size", "NCCL runs", "measured", "before", "error", "after", "error"):
        table.add_column(column, justify="left" if column in ("log line", "NCCL runs") else "right")
    for point, run, before, after, e0, e1 in zip(result.points, result.runs, result.before_us, result.after_us,
                                                 result.errors_before, result.errors_after):
        table.add_row(point.label, str(point.ranks), units.format_size(point.size_bytes), f"{run[0]}/{run[1]}",
                      units.format_time(point.measured_us * 1e-6), units.format_time(before * 1e-6), f"{e0:.0%}",
                      units.format_time(after * 1e-6), f"{e1:.0%}")
    table.add_section()
    table.add_row("geometric mean", "", "", "", "", "", f"{result.geomean(result.errors_before):.1%}", "",
                  f"{result.geomean(result.errors_after):.1%}")
    fitted = ", ".join((f"{k} {v * 1e6:.3g} us" if "latency" in k else f"{k} {v:.3f}") + result.note(k)
                       for k, v in result.calibration.parameters.items())
    table.caption = f"fitted: {fitted}"
    return table


def trace_tables(replayed) -> tuple[Table, Table]:
    """A replayed trace (``simnet.run.replay_trace.TraceReplay``): each step recorded and
    simulated, and per collective and group what it cost and what no compute hid."""
    faster = f", GPUs {replayed.gpu_speedup:g}x faster" if replayed.gpu_speedup != 1 else ""
    sources = ", ".join(replayed.sources) if len(replayed.sources) <= 3 else f"{len(replayed.sources)} traces"
    calibrated = f", calibrated by {replayed.calibration}" if replayed.calibration else ""
    steps = Table(title=f"{len(replayed.traces)} ranks of {sources} on {replayed.topology} ({replayed.model}{faster}"
                        f"{calibrated})", title_justify="left")
    for column in ("step", "recorded", "simulated", "change"):
        steps.add_column(column, justify="left" if column == "step" else "right")
    for step in replayed.steps:
        steps.add_row(step["step"], _time_cell(step["recorded_s"]), units.format_time(step["simulated_s"]),
                      _change_cell(step["recorded_s"], step["simulated_s"]))
    if len(replayed.steps) > 1:
        steps.add_row("mean", _time_cell(replayed.recorded_step_s), units.format_time(replayed.step_s),
                      _change_cell(replayed.recorded_step_s, replayed.step_s), style="bold")
    comms = Table(title="collectives (recorded time: the group's shortest rank's; exposed: mean over the group's "
                  "ranks; summed over calls)",
                  title_justify="left")
    for column in ("collective", "group", "ranks", "calls", "bytes", "recorded", "simulated", "exposed rec.",
                   "exposed sim.", "ran (recorded)"):
        comms.add_column(column, justify="left" if column in ("collective", "group", "ran (recorded)") else "right")
    for row in replayed.collectives:
        comms.add_row(row["collective"], row["group"], str(row["ranks"]), f"{row['calls']:,}",
                      units.format_size(row["bytes"]), units.format_time(row["recorded_s"]),
                      units.format_time(row["simulated_s"]), _time_cell(row["recorded_exposed_s"]),
                      units.format_time(row["simulated_exposed_s"]),
                      row["ran"] + (f" ({row['recorded_ran']})" if row["recorded_ran"] else ""))
    if replayed.bottlenecks:
        top = replayed.bottlenecks[0]
        comms.caption = f"bottleneck: {top['link']}, limiting {units.format_time(top['seconds'])} of collective time"
    return steps, comms


def _time_cell(seconds: float | None) -> str:
    """A time, or '-' where the trace recorded none (an execution trace without start times)."""
    return "-" if seconds is None else units.format_time(seconds)


def _change_cell(recorded: float | None, simulated: float) -> str:
    return f"{simulated / recorded - 1:+.1%}" if recorded else "-"
