"""Sweep and compare reports: tables, CSV, ``speedup.png``, ``iteration_time.png``, ``compare.png``."""

from __future__ import annotations

import csv
from pathlib import Path

from rich.table import Table

from simnet import units

__all__ = ["series_label", "sweep_table", "write_sweep_csv", "plot_sweep", "compare_rows", "pareto_front",
           "compare_table", "plot_compare"]


def series_label(record: dict) -> str:
    """``ring`` or ``ring, nic_bandwidth=100 Gb/s``: one line per algorithm and override."""
    extra = ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in record["set"].items())
    return f"{record['algorithm']}, {extra}" if extra else record["algorithm"]


def _largest(record: dict) -> dict:
    return max(record["sizes"], key=lambda s: s["size_bytes"])


def sweep_table(records: list[dict], title: str) -> Table:
    """One row per point: GPUs, series, then iteration time/speedup/efficiency or time/busbw."""
    table = Table(title=title, title_justify="left")
    workload = "iteration_time_s" in records[0]
    columns = ["GPUs", "algorithm"]
    columns += ["iteration", "speedup", "efficiency", "exposed comm"] if workload else []
    columns += [f"AllReduce {units.format_size(_largest(records[0])['size_bytes'])}", "busbw GB/s", "bottleneck"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("algorithm", "bottleneck") else "right")
    for record in sorted(records, key=lambda r: (series_label(r), r["gpus"])):
        largest = _largest(record)
        row = [str(record["gpus"]), series_label(record)]
        if workload:
            slower = record["speedup"] < 1 and record["gpus"] > 1
            row += [units.format_time(record["iteration_time_s"]),
                    f"[red]{record['speedup']:.2f}[/red]" if slower else f"{record['speedup']:.2f}",
                    f"{record['efficiency']:.0%}", units.format_time(record["communication_exposed_s"])]
        row += [units.format_time(largest["time_s"]), f"{largest['busbw_GBps']:.2f}", largest["bottleneck"] or "-"]
        table.add_row(*row)
    return table


def write_sweep_csv(records: list[dict], path: Path) -> Path:
    """One row per (point, size), with the point's iteration time and speedup when known."""
    fields = ["algorithm", "set", "gpus", "size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "bottleneck",
              "iteration_time_s", "speedup", "efficiency"]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for record in records:
            for size in record["sizes"]:
                writer.writerow({**record, **size, "set": ";".join(f"{k}={v}" for k, v in record["set"].items())})
    return path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _series(records: list[dict]) -> dict[str, list[dict]]:
    series: dict[str, list[dict]] = {}
    for record in sorted(records, key=lambda r: r["gpus"]):
        series.setdefault(series_label(record), []).append(record)
    return series


def _lines_over_gpus(ax, series: dict[str, list[dict]], field: str, gpus: list[int]) -> None:
    """One line per series of ``field`` against the GPU count, on a log2 axis."""
    for label, points in series.items():
        ax.plot([p["gpus"] for p in points], [p[field] for p in points], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(gpus)
    ax.set_xticklabels([str(g) for g in gpus])
    ax.minorticks_off()
    ax.set_xlabel("GPUs (N)")


def _save(plt, fig, ax, path: Path) -> Path:
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_sweep(records: list[dict], scenario: str, out: Path) -> list[Path]:
    """``speedup.png`` (ideal line, speedup < 1 shaded) and ``iteration_time.png``; needs a workload."""
    if "iteration_time_s" not in records[0]:
        return []
    plt = _pyplot()
    series = _series(records)
    gpus = sorted({r["gpus"] for r in records})
    written = []

    fig, ax = plt.subplots(figsize=(8, 5.5))
    top = max(max(gpus), max(r["speedup"] for r in records)) * 1.15
    ax.axhspan(0, 1, color="#d62728", alpha=0.12, label="slower than 1 GPU (speedup < 1)")
    ax.plot(gpus, gpus, linestyle="--", color="grey", label="ideal (speedup = N)")
    _lines_over_gpus(ax, series, "speedup", gpus)
    ax.set_ylim(0, top)
    ax.set_ylabel("speedup = N x T_iter(1) / T_iter(N)")
    ax.set_title(f"{scenario}: data-parallel speedup")
    written.append(_save(plt, fig, ax, out / "speedup.png"))

    fig, ax = plt.subplots(figsize=(8, 5.5))
    compute = records[0]["compute_s"]
    ax.axhline(compute, color="grey", linestyle="--", label=f"compute only ({units.format_time(compute)})")
    _lines_over_gpus(ax, series, "iteration_time_s", gpus)
    ax.set_yscale("log")
    ax.set_ylabel("iteration time (s)")
    ax.set_title(f"{scenario}: time per training step")
    written.append(_save(plt, fig, ax, out / "iteration_time.png"))
    return written


# --------------------------------------------------------------------- compare

def compare_rows(options: list[tuple[str, float | None, list[dict]]]) -> list[dict]:
    """One row per hardware option: its fastest algorithm and what it buys.

    ``options`` holds (name, cost, records of that option's points). With a workload the
    figure of merit is the iteration time, else the AllReduce time at the largest size.
    """
    rows = []
    for name, cost, records in options:
        workload = "iteration_time_s" in records[0]
        best = min(records, key=lambda r: r["iteration_time_s"] if workload else _largest(r)["time_s"])
        largest = _largest(best)
        time = best["iteration_time_s"] if workload else largest["time_s"]
        row = {"option": name, "cost": cost, "algorithm": best["algorithm"], "gpus": best["gpus"], "time_s": time,
               "speedup": best.get("speedup"), "busbw_GBps": largest["busbw_GBps"],
               "bottleneck": largest["bottleneck"], "per_cost": None}
        if cost:
            # throughput per unit of cost: GPU-equivalents of work (speedup) or bus GB/s per million
            merit = best["speedup"] if workload else largest["busbw_GBps"]
            row["per_cost"] = merit / (cost / 1e6)
        rows.append(row)
    return rows


def pareto_front(rows: list[dict]) -> list[dict]:
    """Rows no other row beats on both cost and time (rows without a cost are left out)."""
    priced = [r for r in rows if r["cost"] is not None]
    return [r for r in priced if not any(
        o["cost"] <= r["cost"] and o["time_s"] <= r["time_s"] and (o["cost"] < r["cost"] or o["time_s"] < r["time_s"])
        for o in priced)]


def compare_table(rows: list[dict], title: str, workload: bool) -> Table:
    front = {id(r) for r in pareto_front(rows)}
    table = Table(title=title, title_justify="left")
    for column in ("option", "cost", "best algorithm", "iteration" if workload else "AllReduce", "speedup",
                   "busbw GB/s", "bottleneck", "speedup per M$" if workload else "busbw per M$", "Pareto"):
        table.add_column(column, justify="left" if column in ("option", "best algorithm", "bottleneck") else "right")
    for row in rows:
        table.add_row(row["option"], f"{row['cost'] / 1e6:.3g} M$" if row["cost"] else "-", row["algorithm"],
                      units.format_time(row["time_s"]), f"{row['speedup']:.2f}" if row["speedup"] else "-",
                      f"{row['busbw_GBps']:.2f}", row["bottleneck"] or "-",
                      f"{row['per_cost']:.3g}" if row["per_cost"] else "-", "*" if id(row) in front else "")
    return table


def plot_compare(rows: list[dict], title: str, path: Path, workload: bool) -> Path | None:
    """Cost against time, one point per option, the Pareto front joined and marked."""
    priced = [r for r in rows if r["cost"] is not None]
    if not priced:
        return None
    plt = _pyplot()
    front = sorted(pareto_front(rows), key=lambda r: r["cost"])
    fig, ax = plt.subplots(figsize=(8, 5.5))
    ax.scatter([r["cost"] / 1e6 for r in priced], [r["time_s"] for r in priced], s=60, color="#4c72b0",
               label="hardware option", zorder=3)
    ax.plot([r["cost"] / 1e6 for r in front], [r["time_s"] for r in front], color="#dd8452", marker="*",
            markersize=16, linewidth=2, label="Pareto front (nothing cheaper is faster)", zorder=4)
    for r in priced:
        ax.annotate(r["option"], (r["cost"] / 1e6, r["time_s"]), xytext=(6, 6), textcoords="offset points",
                    fontsize=8)
    ax.set_xlabel("cost (M$)")
    ax.set_ylabel("iteration time (s)" if workload else "AllReduce time at the largest size (s)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
