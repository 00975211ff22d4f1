"""Sweep and compare reports: tables, CSV and figures.

Sweeps with a workload draw ``speedup.png`` and ``iteration_time.png``; every sweep with
sizes draws ``busbw.png`` (bus bandwidth and collective time against GPUs, NCCL's pick
written beside each point of ``auto``); with
``training``, ``training.png`` (MFU and tokens/s against GPUs) and ``step.png`` (where
each point's step goes). ``compare.png`` is cost against what the Pareto front weighs
(the collective's or iteration's time; tokens/s of a training step; GPU batches/s of
workloads on different GPU counts) with the front, or, when no option has a cost, that
per option.
"""

from __future__ import annotations

import csv
from pathlib import Path

from matplotlib.ticker import FuncFormatter
from rich.table import Table
from rich.text import Text

from simnet import units
from simnet.errors import as_written
from simnet.report.figures import pyplot, save, series_styles, time_axis
from simnet.report.plots import plot_steps
from simnet.results.result import FILLED
from simnet.run.compare import pareto_front
from simnet.schedule.kinds import COLLECTIVES

__all__ = ["series_label", "sweep_table", "write_sweep_csv", "plot_sweep", "compare_table", "plot_compare",
           "SWEEP_FILES"]


SWEEP_FILES = ("results.csv", "results.jsonl", "sweep.json", ".lock", "busbw.png", "speedup.png",
               "iteration_time.png", "training.png", "step.png")
"""What ``simnet sweep`` writes into its ``--out`` folder (none of them may be an input)."""


def series_label(record: dict) -> str:
    """``ring`` or ``ring, nic_bandwidth=100 Gb/s``: one line per algorithm and override."""
    extra = ", ".join(f"{k.rsplit('.', 1)[-1]}={as_written(v)}" for k, v in record["set"].items())
    return f"{record['algorithm']}, {extra}" if extra else record["algorithm"]


def _largest(record: dict) -> dict:
    return max(record["sizes"], key=lambda s: s["size_bytes"])


def _one_size(sizes) -> str | None:
    """The size every row timed, formatted; None when rows timed different sizes (each then
    shows its own)."""
    distinct = set(sizes)
    return units.format_size(distinct.pop()) if len(distinct) == 1 and None not in distinct else None


def _cost(dollars: float | None) -> str:
    """``2.70 M$``: three significant digits, as a price is quoted; a cost of 0 is one, "-" none.

    >>> _cost(2.7e6), _cost(0), _cost(None)
    ('2.70 M$', '0 M$', '-')
    """
    return "-" if dollars is None else f"{units.significant(dollars / 1e6, 3)} M$"


_BOUNDS = {"lower_bound": "≥", "upper_bound": "≤"}
"""The warning that makes a time a bound, and its mark (``simnet run`` says the other end)."""
_FLIPPED = {"≥": "≤", "≤": "≥", "": ""}
"""A bound on a time is the other bound on a rate (busbw, speedup, efficiency)."""


def time_bound(kinds) -> str:
    """``≥`` where warning ``kinds`` make a time a lower bound, ``≤`` an upper one, ``""`` exact.

    >>> time_bound(["lower_bound", "link_congestion"]), time_bound([]), _FLIPPED[time_bound(["upper_bound"])]
    ('≥', '', '≥')
    """
    # one way only: a point's runs share a model, and only ideal's are lower bounds, only nccl's upper
    return next((_BOUNDS[kind] for kind in kinds if kind in _BOUNDS), "")


def _bound(record: dict) -> str:
    """The mark of the record's time at its largest size (its table and plot value)."""
    return time_bound(_largest(record).get("warnings", ()))


def _iteration_bound(record: dict) -> str:
    """The mark of the record's iteration time: its buckets' runs' bound, if any."""
    return time_bound(record.get("bucket_warnings", ()))


def _size_cell(size: int | None) -> str:
    return "-" if size is None else units.format_size(size)


def _title(records: list[dict]) -> str:
    """The collective's name in sweep records or compare rows (records from before
    collectives were recorded: AllReduce)."""
    return COLLECTIVES[records[0].get("collective", "allreduce")].title


def _largest_part(step: dict) -> str:
    """The biggest thing a training step spends beyond compute, with its share."""
    part = max(step["exposed"], key=step["exposed"].get)
    share = step["exposed"][part] / step["step_s"] if step["step_s"] else 0.0
    return f"{part.upper() if part != 'bubble' else 'bubble'} {share:.0%}" if share > 0 else "-"


def _training_table(records: list[dict], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("GPUs", "algorithm", "layout", "step", "tokens/s", "MFU", "largest overhead"):
        table.add_column(column, justify="left" if column in ("algorithm", "layout", "largest overhead") else "right")
    for record in sorted(records, key=lambda r: (series_label(r), r["gpus"])):
        step = record["training"]
        par = step["parallelism"]
        layout = "x".join(f"{k}{par[k]}" for k in ("tp", "pp", "dp", "ep") if par[k] > 1 or k == "dp")
        layout += f" vp{par['virtual_stages']}" if par.get("virtual_stages", 1) > 1 else ""
        table.add_row(str(record["gpus"]), series_label(record), layout + (" fsdp" if par["fsdp"] else ""),
                      units.format_time(step["step_s"]), f"{step['tokens_per_s']:,.0f}", f"{step['mfu']:.1%}",
                      _largest_part(step))
    return table


def sweep_table(records: list[dict], title: str) -> Table:
    """One row per point: GPUs, series, then iteration time/speedup/efficiency or time/busbw
    (with ``training``: the layout, step time, tokens/s, MFU and the largest overhead)."""
    if "training" in records[0]:
        return _training_table(records, title)
    table = Table(title=title, title_justify="left")
    workload = "iteration_time_s" in records[0]
    columns = ["GPUs", "algorithm"]
    columns += ["iteration", "speedup", "efficiency", "exposed comm"] if workload else []
    size = _one_size(_largest(r)["size_bytes"] for r in records)
    columns += [f"{_title(records)} {size}"] if size else ["size", _title(records)]
    columns += ["busbw GB/s", "bottleneck"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("algorithm", "bottleneck") else "right")
    for record in sorted(records, key=lambda r: (series_label(r), r["gpus"])):
        largest = _largest(record)
        ran = largest.get("ran", record["algorithm"])  # auto: NCCL's pick at this point, as run's table says it
        row = [str(record["gpus"]), series_label(record) + (f" -> {ran}" if ran != record["algorithm"] else "")]
        if workload:  # a bound on the buckets' times bounds the iteration the same way, its speed the other
            slower = record["speedup"] < 1 and record["gpus"] > 1
            on_time = _marked(_iteration_bound(record))
            on_rate = _marked(_FLIPPED[_iteration_bound(record)])
            speedup = on_rate + f"{record['speedup']:.2f}"
            row += [on_time + units.format_time(record["iteration_time_s"]),
                    Text(speedup, style="red") if slower else speedup, on_rate + f"{record['efficiency']:.0%}",
                    on_time + units.format_time(record["communication_exposed_s"])]
        row += [] if size else [_size_cell(largest["size_bytes"])]
        bound = _bound(record)  # a bound, as run's warning says
        busbw = _gbps(largest["busbw_GBps"])
        row += [_marked(bound) + units.format_time(largest["time_s"]),
                busbw if busbw == "-" else _marked(_FLIPPED[bound]) + busbw, _bottleneck(largest)]
        table.add_row(*row)
    return table


def _bottleneck(size: dict) -> str:
    """The bottleneck as ``simnet run``'s table says it: where no link ever filled, none, and
    the busiest link with its mean load (records from before they kept both: the link)."""
    name, saturated = size["bottleneck"] or size.get("busiest"), size.get("bottleneck_saturated_fraction")
    if name is None or saturated is None or saturated >= FILLED:
        return name or "-"
    busy = size.get("bottleneck_mean_utilization")  # (jobs: their most fought-over link, whose load they keep not)
    return f"none; busiest {name}" + (f" ({busy:.0%} busy)" if busy is not None else "")


def write_sweep_csv(records: list[dict], path: Path) -> Path:
    """One row per (point, size), with the point's iteration time and speedup when known, and
    ``warnings``, the size's warning kinds (``;``-joined, as ``simnet run --csv`` writes them:
    ``lower_bound`` makes its time a lower bound), then ``bucket_warnings``, those of the runs its
    iteration time rests on."""
    fields = ["algorithm", "set", "gpus", "size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "bottleneck",
              "iteration_time_s", "speedup", "efficiency", "step_s", "tokens_per_s", "mfu", "collective",
              "warnings", "bucket_warnings", "bottleneck_saturated_fraction", "busiest"]  # new columns last: readers by
    # position keep working
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for record in records:
            for size in record["sizes"] or [{}]:  # a training sweep may have no sizes: one row per point
                settings = ";".join(f"{k}={as_written(v)}" for k, v in record["set"].items())
                writer.writerow({**record, **size, "set": settings,
                                 "warnings": ";".join(size.get("warnings", ())),
                                 "bucket_warnings": ";".join(record.get("bucket_warnings", ()))})
    return path


def _marked(mark: str) -> str:
    return f"{mark} " if mark else ""


def _gbps(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _series(records: list[dict]) -> dict[str, list[dict]]:
    series: dict[str, list[dict]] = {}
    for record in sorted(records, key=lambda r: r["gpus"]):
        series.setdefault(series_label(record), []).append(record)
    return series


def _gpu_axis(ax, gpus: list[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(gpus)
    ax.set_xticklabels([str(g) for g in gpus])
    ax.minorticks_off()
    ax.set_xlabel("GPUs (N)")


_BOUND_MARKERS = {"≥": ("^", "at least (a lower bound)"), "≤": ("v", "at most (an upper bound)")}
"""Hollow triangles on a plotted bound, pointing where the value lies."""


def _lines(ax, series: dict[str, list[dict]], value, picks: bool = False, bound=None) -> None:
    """One line per series of ``value(record)`` against the GPU count, each in its own style;
    with ``picks``, what ``auto`` ran at the largest size written beside each of its points;
    with ``bound(record)`` (a mark of ``time_bound``), a hollow triangle on each bound pointing
    where the value lies, in the legend once."""
    styles = series_styles(list(series))
    legend: set[str] = set()
    for label, points in series.items():
        ax.plot([p["gpus"] for p in points], [value(p) for p in points], label=label, **styles[label])
        for p in points if picks and points[0]["algorithm"] == "auto" else ():
            ax.annotate(_largest(p)["ran"], (p["gpus"], value(p)), xytext=(5, 5), textcoords="offset points",
                        fontsize=7, color=styles[label]["color"])
        for p in points if bound else ():
            if mark := bound(p):
                marker, says = _BOUND_MARKERS[mark]
                ax.scatter([p["gpus"]], [value(p)], marker=marker, s=220, facecolors="white", zorder=6, linewidths=1.5,
                           edgecolors=styles[label]["color"], label=None if says in legend else says)
                legend.add(says)


def _finish(plt, fig, ax, path: Path) -> Path:
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    save(plt, fig, path)
    return path


def plot_sweep(records: list[dict], scenario: str, out: Path) -> list[Path]:
    """``busbw.png`` with sizes; with a workload also ``speedup.png`` (log-log, ideal line,
    speedup < 1 shaded) and ``iteration_time.png``; with ``training``, ``training.png`` and
    ``step.png``. Returns the paths written."""
    plt = pyplot()
    written = _plot_training(records, scenario, out) if "training" in records[0] else []
    if not records[0]["sizes"]:
        return written
    series = _series(records)
    gpus = sorted({r["gpus"] for r in records})

    size = _one_size(_largest(r)["size_bytes"] for r in records)
    if any(_largest(r)["busbw_GBps"] is not None for r in records):
        fig, (bus, time) = plt.subplots(1, 2, figsize=(13, 5))
        _lines(bus, series, lambda r: _largest(r)["busbw_GBps"] or 0.0, picks=True,
               bound=lambda r: _FLIPPED[_bound(r)])
        _gpu_axis(bus, gpus)
        bus.set_ylabel("bus bandwidth (GB/s)")
        bus.set_ylim(bottom=0)
        bus.grid(True, alpha=0.3)
        if any(_bound(r) for r in records):  # its bounds' triangle, in its own legend (the lines' is beside)
            bus.legend(handles=[h for h in bus.collections if h.get_label() and not h.get_label().startswith("_")],
                       fontsize=8, loc="lower left")
        bus.set_title(f"busbw of a {size} {_title(records)}" if size else "busbw at each point's largest size")
    else:  # jobs: each point's slowest job, whose busbw no one collective has
        fig, time = plt.subplots(figsize=(9.5, 5.5))
    _lines(time, series, lambda r: _largest(r)["time_s"], picks=True, bound=_bound)
    _gpu_axis(time, gpus)
    times = [_largest(r)["time_s"] for r in records if _largest(r)["time_s"] > 0]
    if times and max(times) >= 10 * min(times):  # (within a decade a log axis may hold no tick to label)
        time.set_yscale("log")
    time_axis(time.yaxis)
    if "jobs" in records[0]:
        time.set_ylabel("the slowest job's time, the jobs run together")
        time.set_title(f"{scenario}: jobs' time")
    else:
        time.set_ylabel(f"{_title(records)} time of {size or 'the largest size'}")
        time.set_title(f"{scenario}: {_title(records)} time")
    written.append(_finish(plt, fig, time, out / "busbw.png"))
    if "iteration_time_s" not in records[0]:
        return written

    fig, ax = plt.subplots(figsize=(9.5, 5.5))
    low = min(0.5, min(r["speedup"] for r in records) / 1.5)
    top = max(max(gpus), max(r["speedup"] for r in records)) * 1.5
    ax.axhspan(low, 1, color="#d62728", alpha=0.12, label="slower than 1 GPU (speedup < 1)")
    _lines(ax, series, lambda r: r["speedup"], bound=lambda r: _FLIPPED[_iteration_bound(r)])
    ax.plot(gpus, gpus, linestyle=(0, (4, 3)), color="grey", linewidth=1.2, zorder=5, label="ideal (speedup = N)")
    _gpu_axis(ax, gpus)
    ax.set_yscale("log", base=2)
    ax.set_ylim(low, top)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_ylabel("speedup = N x T_iter(1) / T_iter(N)")
    ax.set_title(f"{scenario}: data-parallel speedup (log-log: ideal is the diagonal)")
    written.append(_finish(plt, fig, ax, out / "speedup.png"))

    fig, ax = plt.subplots(figsize=(9.5, 5.5))
    compute = records[0]["compute_s"]
    ax.axhline(compute, color="grey", linestyle="--", label=f"compute only ({units.format_time(compute, short=True)})")
    _lines(ax, series, lambda r: r["iteration_time_s"], bound=_iteration_bound)
    _gpu_axis(ax, gpus)
    ax.set_yscale("log")
    time_axis(ax.yaxis)
    ax.set_ylabel("iteration time")
    ax.set_title(f"{scenario}: time per training step")
    written.append(_finish(plt, fig, ax, out / "iteration_time.png"))
    return written


def _plot_training(records: list[dict], scenario: str, out: Path) -> list[Path]:
    """``training.png``: MFU and tokens/s against GPUs (tokens/s with the line of perfect
    scaling from each series' smallest point); ``step.png``: each point's step, stacked."""
    plt = pyplot()
    series = _series(records)
    gpus = sorted({r["gpus"] for r in records})
    fig, (mfu, rate) = plt.subplots(1, 2, figsize=(13, 5))
    _lines(mfu, series, lambda r: r["mfu"] * 100)
    _gpu_axis(mfu, gpus)
    mfu.set_ylim(0, max(r["mfu"] for r in records) * 115)
    mfu.set_ylabel("MFU (% of the GPUs' dense peak)")
    mfu.grid(True, alpha=0.3)
    mfu.set_title(f"{records[0]['training']['model']}: model FLOPs utilisation")
    _lines(rate, series, lambda r: r["tokens_per_s"])
    for points in series.values():
        first = points[0]
        rate.plot([p["gpus"] for p in points], [first["tokens_per_s"] * p["gpus"] / first["gpus"] for p in points],
                  color="grey", linestyle=":", linewidth=1)
    rate.plot([], [], color="grey", linestyle=":", label="perfect scaling")
    _gpu_axis(rate, gpus)
    rate.set_yscale("log")
    rate.set_ylabel("tokens per second")
    rate.set_title(f"{scenario}: training throughput")
    written = [_finish(plt, fig, rate, out / "training.png")]
    ordered = sorted(records, key=lambda r: (series_label(r), r["gpus"]))
    labels = [f"{r['gpus']} GPUs" + (f" ({series_label(r)})" if len(series) > 1 else "") for r in ordered]
    written.append(plot_steps([r["training"] for r in ordered], out / "step.png", labels))
    return written


# --------------------------------------------------------------------- compare

def compare_table(rows: list[dict], title: str) -> Table:
    """One row per option: cost, best algorithm, iteration and AllReduce time in their own
    columns (the size timed in its own when options timed different ones), speedup, busbw,
    bottleneck, value per M$, and the Pareto star."""
    front = {id(r) for r in pareto_front(rows)}
    if all(r["step_s"] is not None for r in rows):
        table = Table(title=title, title_justify="left")
        for column in ("option", "cost", "GPUs", "step", "tokens/s", "MFU", "tokens/s per M$", "Pareto"):
            table.add_column(column, justify="left" if column == "option" else "right")
        for row in rows:
            table.add_row(row["option"], _cost(row["cost"]), str(row["gpus"]),
                          units.format_time(row["step_s"]), f"{row['tokens_per_s']:,.0f}", f"{row['mfu']:.1%}",
                          f"{row['per_cost']:,.0f}" if row["per_cost"] else "-", "*" if id(row) in front else "")
        return table
    workload = any(r["iteration_time_s"] is not None for r in rows)
    size = _one_size(r["collective_size_bytes"] for r in rows)
    table = Table(title=title, title_justify="left")
    columns = ["option", "cost", "best algorithm"] + (["iteration", "speedup"] if workload else [])
    columns += [f"{_title(rows)} {size}"] if size else ["size", _title(rows)]
    every_step = all(r["iteration_time_s"] is not None for r in rows)  # (what compare_rows prices: mixed, busbw)
    columns += ["busbw GB/s", "bottleneck", "speedup per M$" if every_step else "busbw per M$", "Pareto"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("option", "best algorithm", "bottleneck") else "right")
    for row in rows:
        cells = [row["option"], _cost(row["cost"]), row["algorithm"]]
        if workload:
            cells += [units.format_time(row["iteration_time_s"]) if row["iteration_time_s"] is not None else "-",
                      f"{row['speedup']:.2f}" if row["speedup"] is not None else "-"]
        cells += [] if size else [_size_cell(row["collective_size_bytes"])]
        cells += [units.format_time(row["collective_time_s"]), _gbps(row["busbw_GBps"]), _bottleneck(row),
                  f"{row['per_cost']:.3g}" if row["per_cost"] else "-", "*" if id(row) in front else ""]
        table.add_row(*cells)
    return table


def _merit_axis(rows: list[dict]) -> tuple[str, list[float], bool]:
    """What the Pareto front weighs, as the plot shows it: (axis label, one value per row,
    whether more is better). A training step's tokens/s; a workload's iteration time, or its
    GPUs' batches per second where options differ in GPUs (each GPU keeps its batch, so a
    larger option's iteration does more); else the collective's time."""
    if all(r["step_s"] is not None for r in rows):
        return "training tokens/s", [r["tokens_per_s"] for r in rows], True
    if all(r["iteration_time_s"] is not None for r in rows):
        if len({r["gpus"] for r in rows}) > 1:
            return "GPU batches/s (GPUs / iteration time)", [1 / r["seconds_per_work"] for r in rows], True
        return "iteration time", [r["iteration_time_s"] for r in rows], False
    size = _one_size(r["collective_size_bytes"] for r in rows)  # compare ranks every option at one size
    return f"{_title(rows)} time" + (f" of {size}" if size else ""), [r["merit_s"] for r in rows], False


def plot_compare(rows: list[dict], name: str, path: Path) -> Path:
    """Cost against what the Pareto front weighs (``_merit_axis``, from zero, so gaps look
    their size) with the front joined and marked; without any cost, a bar of it per option
    (there is no front to draw without prices). Titled ``name``: what it draws."""
    plt = pyplot()
    label, values, more_is_better = _merit_axis(rows)
    title = f"{name}: cost against {label}" if any(r["cost"] is not None for r in rows) else \
        f"{name}: {label} per option"
    value = {id(r): v for r, v in zip(rows, values)}
    priced = [r for r in rows if r["cost"] is not None]
    if priced:
        front = sorted(pareto_front(rows), key=lambda r: r["cost"])
        fig, ax = plt.subplots(figsize=(8, 5.5))
        ax.scatter([r["cost"] / 1e6 for r in priced], [value[id(r)] for r in priced], s=60, color="#4c72b0",
                   label="hardware option", zorder=3)
        ax.plot([r["cost"] / 1e6 for r in front], [value[id(r)] for r in front], color="#dd8452", marker="*",
                markersize=16, linewidth=2, zorder=4,
                label=f"Pareto front (nothing cheaper {'does more' if more_is_better else 'is faster'})")
        for r in priced:
            ax.annotate(r["option"], (r["cost"] / 1e6, value[id(r)]), xytext=(6, 6), textcoords="offset points",
                        fontsize=8)
        ax.set_xlabel("cost (M$)")
        ax.set_ylabel(label)
        # from zero: a 1 % gap looks like 1 %, not the height
        ax.set_ylim(0, max(value[id(r)] for r in priced) * 1.15)
        ax.legend(loc="upper left" if more_is_better else "lower right")
    else:
        fig, ax = plt.subplots(figsize=(8, 0.5 * len(rows) + 2))
        ax.barh([r["option"] for r in rows][::-1], values[::-1], color="#4c72b0")
        ax.set_xlabel(f"{label} (no costs given: add cost: to compare value)")
        ax.set_xlim(left=0)
    if not more_is_better:
        time_axis(ax.yaxis if priced else ax.xaxis)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    save(plt, fig, path)
    return path
