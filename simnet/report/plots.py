"""Plots of a scenario's results, readable without the code: units on every axis, legends, titles.

* ``time_vs_size.png``: completion time against size per algorithm (log-log);
* ``busbw_vs_size.png``: bus bandwidth against size per algorithm (in both, ``auto`` is one
  series with NCCL's pick written beside each point);
* ``link_utilization.png``: mean utilisation of the busiest links in the featured run;
* ``link_heatmap.png``: utilisation over time of those links in the featured run.

The featured run is the fastest algorithm at the largest size; its links are shown in the
bottleneck order of ``simnet.results.analysis`` (the table's bottleneck and the warned links come
first). The heatmap needs the run's link timeline: run the scenario with ``timeline=True``;
a run too large to keep one (replayed by lanes, ``simnet.engine.lanes``) has none.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.ticker import FuncFormatter

from simnet import units
from simnet.report.figures import pyplot, save, series_styles, time_axis
from simnet.results.result import Result
from simnet.schedule.kinds import COLLECTIVES
from simnet.topology.graph import PS_PER_SECOND

__all__ = ["plot_results", "featured_run", "utilization_matrix", "plot_calibration", "TOP_LINKS", "heatmap_missing"]

TOP_LINKS = 12

def featured_run(results) -> Result:
    """The fastest run at the largest size (the only run there, if there is no choice)."""
    largest = max(r.size_bytes for r in results.runs)
    return min((r for r in results.runs if r.size_bytes == largest), key=lambda r: r.time_s)


def _by_algorithm(results) -> dict[str, list[Result]]:
    """The runs of each algorithm; ``auto`` is one series, whatever NCCL picked at each size."""
    series: dict[str, list[Result]] = {}
    for run in results.runs:
        series.setdefault("auto" if run.auto else run.algorithm, []).append(run)
    return series


def _size_axis(ax, sizes: list[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([units.format_size(s) for s in sizes], rotation=30, ha="right")
    ax.minorticks_off()
    ax.set_xlabel("message size per GPU")


def utilization_matrix(result: Result, links: list[int], bins: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Mean utilisation (0..1) of each link in each of ``bins`` equal time bins, and the bin
    edges in seconds. Needs a result simulated with ``timeline=True``."""
    stats = result.replay.stats
    if stats.timeline is None:
        raise ValueError("this result was simulated without a timeline (simulate(..., timeline=True))")
    end = max(result.replay.duration_ps, 1)
    edges = np.linspace(0, end, bins + 1)
    matrix = np.zeros((len(links), bins))
    position = {link: i for i, link in enumerate(links)}
    changes: list[list[tuple[int, float]]] = [[(0, 0.0)] for _ in links]
    for time, changed, loads in stats.timeline:
        for link, load in zip(changed.tolist(), loads.tolist()):
            if link in position:
                changes[position[link]].append((time, load))
    for i, link in enumerate(links):
        times = np.array([t for t, _ in changes[i]] + [end], dtype=float)
        # a capacity changes only at an instant the timeline lists: utilisation is piecewise constant too
        usage = stats.utilization(link, times[:-1], np.array([v for _, v in changes[i]]))
        # integral of the piecewise-constant utilisation, evaluated at the bin edges
        cumulative = np.concatenate([[0.0], np.cumsum(usage * np.diff(times))])
        at_edges = np.interp(edges, times, cumulative)
        matrix[i] = np.diff(at_edges) / np.diff(edges)
    return matrix, edges / PS_PER_SECOND


def plot_results(results, directory: str | Path) -> list[Path]:
    """Write the four plots for ``results`` into ``directory``; returns their paths.

    The heatmap needs the featured run's timeline (``run_scenario(..., timeline=True)``);
    without one it is left out (``heatmap_missing`` says why).
    """
    plt = pyplot()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    sizes = sorted({r.size_bytes for r in results.runs})
    gpus = results.runs[0].gpus
    series = _by_algorithm(results)
    styles = series_styles(list(series))

    title = COLLECTIVES[results.runs[0].collective].title
    for name, field, label, log_y in (("time_vs_size.png", "time_s", f"{title} time", True),
                                      ("busbw_vs_size.png", "busbw_GBps", "bus bandwidth (GB/s)", False)):
        fig, ax = plt.subplots(figsize=(8, 5))
        for algorithm, runs in series.items():
            runs = sorted((r for r in runs if r.moves_data), key=lambda r: r.size_bytes)
            ax.plot([r.size_bytes for r in runs], [getattr(r, field) for r in runs], label=algorithm,
                    **styles[algorithm])
            if algorithm == "auto":  # NCCL's pick at each size, beside its point
                for run in runs:
                    ax.annotate(run.algorithm, (run.size_bytes, getattr(run, field)), xytext=(5, 5),
                                textcoords="offset points", fontsize=7, color=styles[algorithm]["color"])
        _size_axis(ax, sizes)
        if log_y:
            ax.set_yscale("log")
            time_axis(ax.yaxis)
        ax.set_ylabel(label)
        ax.set_title(f"{results.scenario}: {label.split(' (')[0]} vs size, {gpus} GPUs")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(title="algorithm")
        written.append(directory / name)
        save(plt, fig, written[-1])

    best = featured_run(results)
    top = best.links[:TOP_LINKS]
    fig, ax = plt.subplots(figsize=(9, 0.45 * max(len(top), 3) + 2.2))
    names = [link.name for link in top][::-1]
    ax.barh(names, [link.mean_utilization * 100 for link in top][::-1], color="#4c72b0", label="mean utilisation")
    ax.barh(names, [link.saturated_fraction * 100 for link in top][::-1], color="#dd8452", height=0.35,
            label="time saturated (>= 99.9 %)")
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of the run")
    ax.set_title(f"bottleneck links, worst first: {best.algorithm}, {units.format_size(best.size_bytes)}, "
                 f"{units.format_time(best.time_s)}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    written.append(directory / "link_utilization.png")
    save(plt, fig, written[-1])

    if heatmap_missing(results):
        return written
    indices = [best.replay.topology.link_index[(link.src, link.dst)] for link in top]
    matrix, edges = utilization_matrix(best, indices)
    fig, ax = plt.subplots(figsize=(10, 0.4 * max(len(indices), 3) + 1.8))
    image = ax.imshow(matrix * 100, aspect="auto", cmap="magma", vmin=0, vmax=100, interpolation="nearest",
                      extent=(edges[0] * 1e3, edges[-1] * 1e3, len(indices) - 0.5, -0.5))
    ax.set_yticks(range(len(indices)))
    ax.set_yticklabels([link.name for link in top])
    ax.set_xlabel("time (ms)")
    ax.set_title(f"link utilisation over time: {best.algorithm}, {units.format_size(best.size_bytes)}")
    fig.colorbar(image, ax=ax, label="utilisation (%)")
    written.append(directory / "link_heatmap.png")
    save(plt, fig, written[-1])
    return written


def heatmap_missing(results) -> str | None:
    """Why ``plot_results`` leaves out the link heatmap, or None when it draws it."""
    best = featured_run(results)
    if best.replay is None or not best.links:
        return "the featured run moved no data over links"
    if best.replay.stats.timeline is None:
        why = ("too many to replay their sharing exactly: an upper bound" if best.replay.engine == "lanes-steady"
               else "its transfers would not fit in memory")
        return (f"{best.algorithm} at {units.format_size(best.size_bytes)} was replayed connection by connection "
                f"({why}), which keeps no link load over time")
    return None


def plot_calibration(result, path: str | Path) -> Path:
    """busbw against size, log-log, per log: measured, and predicted before and after the fit."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 5.5))
    logs = sorted({p.log for p in result.points})
    styles = series_styles(logs)
    for log in logs:
        index = [i for i, p in enumerate(result.points) if p.log == log]
        points = [result.points[i] for i in index]
        size = np.array([p.size_bytes for p in points], dtype=float)
        factor = 2 * (points[0].ranks - 1) / points[0].ranks / 1e3  # bytes/us -> bus GB/s

        def busbw(times, size=size, factor=factor):
            return size / np.array(times) * factor

        style = styles[log]
        ax.plot(size, busbw([p.measured_us for p in points]), linestyle="none", marker=style["marker"],
                color=style["color"], label=f"{Path(log).name} ({points[0].ranks} ranks): measured")
        ax.plot(size, busbw([result.before_us[i] for i in index]), linestyle=":", color=style["color"],
                label="predicted, out of the box")
        ax.plot(size, busbw([result.after_us[i] for i in index]), linestyle="-", color=style["color"],
                label="predicted, calibrated")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: units.format_size(value)))
    ax.set_xlabel("message size")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title("nccl-tests all_reduce_perf: measured against simnet")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7)
    save(plt, fig, path)
    return Path(path)


def plot_interference(result, path: str | Path) -> Path:
    """The interference matrix as a heat map: row job's time next to column job / alone."""
    plt = pyplot()
    names = list(result.interference)
    matrix = np.array([[result.interference[a][b] if a != b else np.nan for b in names] for a in names])
    fig, ax = plt.subplots(figsize=(2.5 + 1.1 * len(names), 2 + 0.9 * len(names)))
    image = ax.imshow(matrix, cmap="Reds", vmin=1.0, vmax=max(np.nanmax(matrix) if len(names) > 1 else 1.0, 1.01))
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i in range(len(names)):
        for j in range(len(names)):
            ax.text(j, i, "-" if i == j else f"{matrix[i, j]:.2f}x", ha="center", va="center", fontsize=9)
    ax.set_xlabel("next to job")
    ax.set_ylabel("job slowed down")
    ax.set_title("interference: time next to the other job / alone")
    fig.colorbar(image, ax=ax, label="slowdown")
    save(plt, fig, path)
    return Path(path)


STEP_PARTS = (("compute", "compute"), ("tp", "TP"), ("ep", "EP"), ("pp", "PP"), ("fsdp", "FSDP"), ("dp", "DP"),
              ("bubble", "pipeline bubble"))
"""The parts of a training step, in the order its bar stacks them."""


def plot_steps(steps: list[dict], path: str | Path, labels: list[str] | None = None) -> Path:
    """Training steps (``simnet.run.training`` as dicts) as stacked bars: compute, each kind of
    exposed communication and the pipeline bubble, with the MFU on each bar."""
    plt = pyplot()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    labels = labels or [f"{s['model']} on {s['gpus']} GPUs" for s in steps]
    # as wide as the bars' labels need beside 6 inches of bars (a sweep's labels name every axis)
    fig, ax = plt.subplots(figsize=(max(9.0, 6 + 0.075 * max(map(len, labels), default=0)), 2.4 + 0.7 * len(steps)))
    left = np.zeros(len(steps))
    colors = plt.get_cmap("tab10").colors
    for (key, name), color in zip(STEP_PARTS, colors):
        widths = np.array([(s["compute_s"] if key == "compute" else s["exposed"][key]) for s in steps])
        if widths.any():
            ax.barh(range(len(steps)), widths, left=left, label=name, color=color)
        left += widths
    for i, step in enumerate(steps):
        ax.text(left[i], i, f"  MFU {step['mfu']:.1%}", va="center", fontsize=9)
    ax.set_yticks(range(len(steps)), labels)
    ax.invert_yaxis()
    time_axis(ax.xaxis)
    ax.set_xlim(0, left.max() * 1.2)
    ax.set_xlabel("time per training step\n(communication: what the critical path waits for)")
    # the legend right above the bars and the title above it, at the same distance however many bars there are
    ax.set_title("where a training step's time goes", pad=22)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(STEP_PARTS), fontsize=8, frameon=False)
    save(plt, fig, path)
    return Path(path)
