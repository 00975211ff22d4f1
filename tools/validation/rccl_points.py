"""simnet's RCCL model against public rccl-tests AllReduce results: the page
docs/validation_amd.md from validation/rccl_tests_public.yaml, scored as validate.py scores
NCCL (``max(predicted/measured, measured/predicted) - 1``, measured the faster of the
out-of-place and in-place times; geometric means per size class: all, small <= 1 MiB,
large >= 128 MiB).

Each system is built from what its source states (the yaml's ``hardware``): one host of 8
GPUs is ``full_mesh``; several are ``leaf_spine`` hosts on one switch with one NIC per GPU at
the rate and transport the yaml gives. MI325X and MI355X have no public xGMI line rate:
their links are written at MI300X's (``validate.xgmi_rate``). Each point runs what RCCL would
pick (``auto``'s pick, simulated alone), under the NCCL/RCCL variables of its point that
simnet follows. A system that is a catalogue product (``server`` in the yaml) is also built
by that name (``validate.server_topology``) and the page compares the two writings, as
docs/validation.md does.

    python -m tools.validation.rccl_points [PATH] [--rows]   # print the summary per GPU
    python -m tools.validation.validate --write              # rewrite every page, this one too
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import simnet
from simnet import units
from simnet.run.nccl_env import NCCL_VARIABLES, nccl_system
from simnet.topology.loader import topology_from_dict
from simnet.tuning import predict, rccl, tables
from tools.validation import validate

__all__ = ["DATA", "DOC", "TARGETS", "topology_of", "predict_point", "predict_row", "predict_all", "by_system",
           "summary", "markdown"]

DATA = validate.ROOT / "validation" / "rccl_tests_public.yaml"
DOC = validate.ROOT / "docs" / "validation_amd.md"
LARGE, SMALL = validate.LARGE, validate.SMALL
TARGETS = {"all sizes": 0.20, "large (>= 128 MiB)": 0.10}
"""Issue 32's targets for RCCL on AMD Instinct GPUs, by ``validate.SIZE_CLASSES`` name: the
geometric-mean error (a fraction) out of the box against public rccl-tests results, <= 20 %
over all sizes and <= 10 % at >= 128 MiB; none for small or mid-size messages."""


def topology_of(name: str, hardware: dict, nodes: int):
    """The topology of ``nodes`` hosts of a system's ``hardware`` (8 GPUs each)."""
    gpu = hardware["gpu"]
    rate = validate.xgmi_rate(gpu, nodes)
    if nodes == 1:
        return topology_from_dict({"name": name, "generate": {"kind": "full_mesh", "gpu": gpu, **rate}})
    fabric = {"kind": "leaf_spine", "gpu": gpu, "racks": 1, "hosts_per_rack": nodes, "spines": 1,
              "nic_bandwidth": hardware["nic_bandwidth"], "transport": hardware["transport"], **rate}
    return topology_from_dict({"name": name, "generate": fabric})


def predict_point(topology, size: int, env: dict) -> tuple[str, str, float]:
    """(algorithm, protocol, time in us) simnet predicts for one AllReduce of ``size`` bytes."""
    system = nccl_system(topology, env)
    if rccl.msccl(system, "AllReduce", size) is not None:  # RCCL runs MSCCL's all-pairs schedule: direct
        algorithm = "direct"
    else:
        algorithm = tables.SIMNET_NAMES[predict.pick(system, max(size, 1), env.get("NCCL_ALGO"),
                                                     env.get("NCCL_PROTO")).algorithm]
    result = simnet.simulate(topology, algorithm, size, env=env)
    return result.algorithm, result.protocol, result.time_s * 1e6


def predict_row(point: validate.Point) -> validate.Row:
    """simnet's prediction for one public point, as a validate.Row; on a catalogue product
    (``point.server``) also on the system written by that name (``Row.by_name``)."""
    env = {k: str(v) for k, v in point.env.items() if k in NCCL_VARIABLES}
    topology = topology_of(point.system, point.hardware, point.nodes)
    by_name = None if point.server is None else predict_point(validate.server_topology(point), point.size_bytes, env)
    return validate.Row(point, *predict_point(topology, point.size_bytes, env), by_name)


def predict_all(path: Path = DATA) -> tuple[list[validate.Row], dict]:
    """(every point's row, the systems left out) of the data file."""
    excluded = validate.read_yaml(path).get("excluded_systems", {})
    return [predict_row(p) for p in validate.load_points(path)], excluded


def _geomean(errors: list[float]) -> float | None:
    return math.exp(sum(math.log1p(e) for e in errors) / len(errors)) - 1 if errors else None


def by_system(rows: list[validate.Row]) -> list[tuple]:
    """Per (GPU, nodes), counted points only: (gpu, nodes, points, error all, small, large,
    median of predicted / measured, its smallest and largest)."""
    return sorted((*key, *rest) for key, *rest in validate.per_group(rows, lambda r: (r.point.hardware["gpu"],
                                                                                       r.point.nodes)))


def summary(rows: list[validate.Row]) -> list[tuple]:
    """Per GPU generation and overall: (gpu, points, error all, large, small)."""
    counted = [r for r in rows if r.point.not_counted is None]
    table = []
    for gpu in sorted({r.point.hardware["gpu"] for r in counted}) + ["all"]:
        chosen = [r for r in counted if gpu in ("all", r.point.hardware["gpu"])]
        table.append((gpu, len(chosen), _geomean([r.error for r in chosen]),
                      _geomean([r.error for r in chosen if r.point.size_bytes >= LARGE]),
                      _geomean([r.error for r in chosen if r.point.size_bytes <= SMALL])))
    return table


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _ratio(value: float) -> str:
    return f"{value:.2f}x"


def _group(rows: list[validate.Row], gpu: str, nodes, test=lambda size: True) -> list[validate.Row]:
    return [r for r in rows if r.point.not_counted is None and r.point.hardware["gpu"] == gpu
            and (r.point.nodes == nodes if isinstance(nodes, int) else nodes(r.point.nodes))
            and test(r.point.size_bytes)]


def _mean_ratio(rows: list[validate.Row]) -> float:
    """Geometric mean of predicted / measured (above 1: simnet slower than measured)."""
    return math.exp(sum(math.log(r.predicted_us / r.point.time_us) for r in rows) / len(rows))


def _signed(row: validate.Row) -> str:
    """A row's error with its direction: '6% slow' (simnet above the measured time) or '2% fast'."""
    return f"{row.error:.0%} {'slow' if row.predicted_us > row.point.time_us else 'fast'}"


def _ring_latency(point: validate.Point) -> float:
    """RCCL's Ring/Simple latency (us) for the point's system, as simnet takes it from RCCL."""
    topology = topology_of(point.system, point.hardware, point.nodes)
    return predict.latency(nccl_system(topology, {}), "Ring", "Simple")


def _busbw(point: validate.Point) -> float:
    """The point's measured AllReduce bus bandwidth, GB/s: 2(n-1)/n x size / time."""
    return 2 * (point.ranks - 1) / point.ranks * point.size_bytes / (point.time_us * 1e3)


def _ring_ceiling(point: validate.Point) -> float:
    """RCCL's Ring/Simple bus bandwidth (GB/s) for the point's system without its pick
    weights: the rate simnet holds RCCL's ring channels to."""
    topology = topology_of(point.system, point.hardware, point.nodes)
    return predict.bus_bandwidth(nccl_system(topology, {}), "Ring", "Simple", ceiling=True)


def _misses(rows: list[validate.Row]) -> list[str]:
    """Where the model misses, in words, with every figure worked out from ``rows``."""
    counted = [r for r in rows if r.point.not_counted is None]
    lines = ["## Where the model misses", ""]
    small_1n = _group(rows, "mi300x", 1, lambda size: size <= SMALL)
    if small_1n:
        msccl = [r for r in small_1n if r.algorithm == "direct"]
        own = [r for r in small_1n if r.algorithm != "direct"]
        text = (f"* **MI300X, one node, up to 1 MiB**: simnet takes {_ratio(_mean_ratio(small_1n))} the measured "
                f"time (geometric mean over {len(small_1n)} rows; error "
                f"{_pct(_geomean([r.error for r in small_1n]))}). "
                "RCCL 2.21.5 runs MSCCL's all-pairs schedules for single-node AllReduce of 8 MI300X by default "
                "(`tools/msccl-algorithms/allreduce-allpairs-8n-*.xml`: LL up to 512 KiB, Simple to 16 MiB; "
                "docs/model.md), and simnet runs them as `direct`")
        if msccl:
            text += (f": on those {len(msccl)} rows it takes {_ratio(_mean_ratio(msccl))} the measured time (error "
                     f"{_pct(_geomean([r.error for r in msccl]))})")
        if own:
            sizes = ", ".join(sorted({units.format_size(r.point.size_bytes) for r in own}))
            text += (f". At {sizes} no file applies (a size must be a whole number of the file's 256 or 512 chunks "
                     f"of floats): RCCL's own pick runs, {own[0].algorithm}/{own[0].protocol}, at "
                     f"{_ratio(_mean_ratio(own))} the measured time")
        lines.append(text + ".")
    top = _group(rows, "mi300x", 1, lambda size: SMALL < size <= 16 * 2**20)
    top = [r for r in top if r.algorithm == "direct"]
    if top:
        lines.append(
            f"* **MI300X, one node, {', '.join(sorted({units.format_size(r.point.size_bytes) for r in top}))}** "
            f"({len(top)} rows, MSCCL's Simple file): simnet takes {_ratio(_mean_ratio(top))} the measured time, "
            "i.e. it is *faster*: it moves every piece over its xGMI link at RCCL's 48 GB/s, and the measured "
            "times show MSCCL's Simple kernel does not reach that at this size. RCCL has no cost model for MSCCL "
            "to take instead; nothing is refitted.")
    rings = [r for r in counted if r.point.nodes > 1 and r.algorithm == "ring" and r.protocol == "Simple"
             and r.point.size_bytes <= 2**30]
    if rings:
        steps = ", ".join(sorted({f"{r.point.hardware['gpu'].upper()} on {r.point.nodes} nodes "
                                  f"{_ring_latency(r.point):,.0f} us" for r in rings}))
        lines.append(
            f"* **Rings across nodes, {units.format_size(min(r.point.size_bytes for r in rings))} to "
            f"{units.format_size(max(r.point.size_bytes for r in rings))}** ({len(rings)} rows): simnet takes "
            f"{_ratio(_mean_ratio(rings))} the measured time ({', '.join(_signed(r) for r in rings)}). "
            "RCCL's tuning model weighs every network step of a Simple ring at 320 us "
            "(`hwLat[NET][Ring][Simple]`, tuning.cc:231 in 2.21.5; the same in 2.30.3), over 2n steps on n nodes in "
            "RCCL 2.21.5 (gfx942) and 2(n-1) in 2.30.3 (gfx950): a Ring/Simple latency of " + steps + " in its pick. "
            "That figure only weighs the pick (RCCL reads its latencies nowhere else); simnet picks with it and "
            "simulates the step at Tree's Simple network figure, 25 us (docs/model.md).")
    trees = [r for r in counted if r.point.nodes > 1 and r.algorithm == "tree" and r.point.size_bytes > SMALL]
    if trees:
        sizes = ", ".join(units.format_size(b) for b in sorted({r.point.size_bytes for r in trees}))
        lines.append(
            f"* **Trees across nodes, {sizes}** "
            f"({len(trees)} rows): simnet takes {_ratio(_mean_ratio(trees))} the measured time "
            f"({', '.join(_signed(r) for r in trees)}). It holds a tree's channels to RCCL's bus bandwidth "
            "`channels x totalBw / channels` halved (tuning.cc's busBw to algBw), without the `bwRatio` that only "
            "weighs RCCL's pick (0.11 for Tree/Simple on two nodes), and pipelines each channel in RCCL's own "
            f"chunks; {sum(r.predicted_us < r.point.time_us for r in trees)} of the {len(trees)} measured trees do "
            "not reach that rate. Nothing is refitted.")
    over = [r for r in counted if r.point.nodes > 1 and r.point.size_bytes >= 2**32
            and _busbw(r.point) > _ring_ceiling(r.point)]
    if over:
        lines.append(
            f"* **The largest rings across nodes** ({len(over)} rows) measure {min(_busbw(r.point) for r in over):.0f}"
            f"-{max(_busbw(r.point) for r in over):.0f} GB/s of busbw, above RCCL's own bus bandwidth for them, "
            f"{_ring_ceiling(over[0].point):.0f} GB/s (its Rome model's channels x `totalBw / nChannels`, "
            "rome_models.cc:1229 in 2.21.5: 7 xGMI links x 48 GB/s), the rate simnet holds RCCL's channels to. "
            "On the wire a GPU sends 7/8 of its ring traffic over xGMI and 1/8 through its NIC (it ends one of "
            "rome_model_81's 8 rings), which RCCL's figure does not count; MI355X's xGMI rate is not in a source "
            "simnet cites.")
    odd = _group(rows, "mi300x", 2, lambda size: size <= SMALL)
    pollara = _group(rows, "mi355x", 2, lambda size: size <= SMALL)
    if odd:
        floor = min(r.point.time_us for r in odd)
        text = (f"* **MI300X, two nodes (AAC10), up to 1 MiB**: simnet takes {_ratio(_mean_ratio(odd))} the measured "
                f"time, i.e. it is several times *faster*: the log's small rows never go below {floor:.0f} us, "
                f"where simnet predicts {min(r.predicted_us for r in odd):.0f}-{max(r.predicted_us for r in odd):.0f} "
                "us (Tree/LL).")
        if pollara:
            logs = len({r.point.source for r in pollara})
            text += (f" The two-node MI355X rows on Pollara 400 ({logs} log{'s' if logs > 1 else ''}) measure "
                     f"{min(r.point.time_us for r in pollara):.0f}-{max(r.point.time_us for r in pollara):.0f} us "
                     f"over the same sizes, and simnet is within {_pct(max(r.error for r in pollara))} of them.")
        lines.append(text + " The source does not say why AAC10's small messages cost that much; its rows stay "
                     "counted.")
    large = [r for r in counted if r.point.nodes > 1 and r.point.size_bytes >= 2**32]
    if large:
        worst = max(large, key=lambda r: r.error)
        lines.append(
            f"* **4 GiB and up across nodes** ({len(large)} rows): error {_pct(_geomean([r.error for r in large]))}, "
            f"the largest {worst.error:.0%} ({worst.point.description}, {worst.point.nodes} nodes, "
            f"{units.format_size(worst.point.size_bytes)}). Where the source does not state the NIC rate it is "
            "assumed (400 Gb/s; the yaml's notes say why).")
    gpus = {r.point.hardware["gpu"] for r in counted if r.point.nodes == 1}
    if "mi355x" not in gpus:
        lines.append("* **MI355X, one node**: no public single-node rccl-tests log that runs one process per GPU "
                     "was found (the systems left out below say why the others are), so simnet's gfx950 single-node "
                     "figures (RCCL 2.30.3's 112 channels, LL128) are not checked here.")
    return lines + [""]


def markdown(rows: list[validate.Row], excluded: dict[str, str]) -> str:
    """docs/validation_amd.md: summary, per GPU and node count, misses, one row per point, the
    systems left out, and the catalogue products' two writings (``validate._by_name``)."""
    lines = [
        "# Validation: simnet's RCCL model against public rccl-tests results", "",
        "Every row below is a public rccl-tests `all_reduce_perf` measurement on AMD Instinct GPUs (the faster of its",
        "out-of-place and in-place times, as printed) and what simnet predicts for it out of the box: `model: rccl`",
        "(RCCL's own tuning tables, docs/model.md), what RCCL would pick under the point's `NCCL_ALGO`/`NCCL_PROTO`,",
        "on the system built from the hardware the source states (`validation/rccl_tests_public.yaml`, which quotes",
        "each row with its launch and RCCL version). Every log gives the same rows: 8 B (or its smallest size),",
        "1 KiB, 64 KiB, 1 MiB, 16 MiB, 128 MiB, 1 GiB and its largest size, as far as the public text shows them.",
        "Error is `max(predicted/measured, measured/predicted) - 1`; summaries are geometric means, with the size",
        "classes of [validation.md](validation.md) (NVIDIA's page) and issue 32's targets for AMD",
        f"(`rccl_points.TARGETS`): <= {TARGETS['all sizes']:.0%} over all sizes, <= {TARGETS['large (>= 128 MiB)']:.0%}"
        " at >= 128 MiB. Regenerate with",
        "`python -m tools.validation.validate --write`; `tests/test_validation_amd.py` keeps this page true.", "",
        "No constant was fitted to these rows: RCCL's are read from its source (`simnet/tuning/rccl.py` names file",
        "and version: RCCL 2.21.5 for gfx942, MI300X and MI325X; 2.30.3 for gfx950, MI355X), while the logs ran",
        "RCCL 2.22.3 (MI300X), an unprinted ROCm 6.4.1 build (MI325X) and 2.26.6 and 2.27.7 (MI355X; OCI's guide",
        "prints none, its images carry 2.26.6).", "",
        *validate.summary_table(rows, TARGETS), "",
        "Per GPU generation:", "",
        "| GPU | points | all sizes | small (<= 1 MiB) | large (>= 128 MiB) |", "|---|---|---|---|---|",
    ]
    for gpu, count, overall, large, small in summary(rows)[:-1]:
        lines.append(f"| {gpu} | {count} | {_pct(overall)} | {_pct(small)} | {_pct(large)} |")
    lines += ["", "Per GPU and node count (predicted / measured: above 1, simnet is slower than measured):", "",
              "| GPU | nodes | points | all sizes | small | large | predicted / measured, median (range) |",
              "|---|---|---|---|---|---|---|"]
    for gpu, nodes, count, overall, small, large, median, low, high in by_system(rows):
        lines.append(f"| {gpu} | {nodes} | {count} | {_pct(overall)} | {_pct(small)} | {_pct(large)} | "
                     f"{_ratio(median)} ({_ratio(low)} - {_ratio(high)}) |")
    lines += ["", *_misses(rows), *validate._point_table(rows, collective=False)]
    left_out = validate._left_out(rows, excluded)
    if not any(r.point.not_counted for r in rows):  # no empty list of reasons
        left_out = ["", "Every row above is counted.", *left_out[left_out.index("Systems left out, and why:") - 1:]]
    return "\n".join(lines + left_out + validate._by_name(rows)) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=str(DATA))
    parser.add_argument("--rows", action="store_true", help="print every point too")
    args = parser.parse_args()
    rows, _ = predict_all(Path(args.path))
    if args.rows:
        for r in rows:
            print(f"{r.point.id:45s} {r.algorithm:5s} {r.protocol:6s} {r.predicted_us:12.1f} {r.point.time_us:12.1f} "
                  f"{r.error:7.1%}")
    print(f"{'gpu':8s} {'points':>6s} {'all':>7s} {'>=128MiB':>9s} {'<=1MiB':>7s}")
    for gpu, count, overall, large, small in summary(rows):
        print(f"{gpu:8s} {count:6d} {_pct(overall):>7s} {_pct(large):>9s} {_pct(small):>7s}")


if __name__ == "__main__":
    main()
