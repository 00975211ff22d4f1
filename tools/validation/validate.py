"""simnet against public nccl-tests results: the tables in docs/validation.md (AllReduce)
and docs/validation_collectives.md (NCCL's other collectives); docs/validation_amd.md (RCCL on
AMD Instinct GPUs, from validation/rccl_tests_public.yaml) is ``tools.validation.rccl_points``'.

``validation/nccl_tests_public.yaml`` holds public ``all_reduce_perf`` rows (each with its
source and the row as printed) and, per system, the hardware to build it from;
``validation/nccl_tests_collectives.yaml`` the same for ``all_gather_perf``,
``reduce_scatter_perf``, ``alltoall_perf`` and ``sendrecv_perf``, each point naming its
collective. Every
point is simulated as nccl-tests runs it: ``auto`` (what NCCL would pick) under the
``nccl`` model, with the point's NCCL_ALGO / NCCL_PROTO. The error of a point is
``max(predicted / measured, measured / predicted) - 1`` where measured is the faster of
the out-of-place and in-place times (both time the same collective; the first row of a
sweep is often inflated by warm-up in one of them); the summaries are geometric means of
``1 + error``, minus one, over all points, large (>= 128 MiB) and small (<= 1 MiB).

    python -m tools.validation.validate            # print the pages
    python -m tools.validation.validate --write    # refit the calibration checks, rewrite the pages
    python -m tools.validation.validate --write --page validation   # docs/validation.md alone

A system that is a catalogue product (``server`` in the yaml) is also built by that name
(``server_topology``) and docs/validation.md compares the two writings.

The held-out calibration checks (docs/validation_calibrated.md) are ``tools.validation.heldout``'s.
"""

from __future__ import annotations

import argparse
import math
import operator
import statistics
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path

import yaml

from simnet import units
from simnet.run.calibrate import error_factor

__all__ = ["DATA", "DOC", "COLLECTIVES_DATA", "COLLECTIVES_DOC", "TRAINING_DATA", "TRAINING_DOC", "Point", "Row",
           "Series", "StepRow", "load_points", "load_series", "predict_series", "training_markdown", "growth_prose",
           "topology_for", "cluster_topology", "server_topology", "xgmi_rate", "predict", "predict_all", "summarize",
           "summary_table", "per_group", "markdown", "collectives_markdown", "LARGE", "SMALL", "SIZE_CLASSES",
           "TARGETS", "PAGES"]

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "validation" / "nccl_tests_public.yaml"
DOC = ROOT / "docs" / "validation.md"
COLLECTIVES_DATA = ROOT / "validation" / "nccl_tests_collectives.yaml"
COLLECTIVES_DOC = ROOT / "docs" / "validation_collectives.md"
LARGE = 128 * 2**20
SMALL = 2**20
GRID = (8, 2**10, 2**16, 2**20, 2**24, 2**27, 2**30)
"""The sizes (bytes) taken from every public log, with its smallest and largest printed sizes:
the same rows from each log, so that none is sampled only where it happens to agree."""


@dataclass(frozen=True)
class Point:
    """One public measurement (time in us, as nccl-tests prints it)."""

    id: str
    system: str
    description: str
    hardware: dict
    nodes: int
    ranks: int
    size_bytes: int
    time_us: float  # the faster of the out-of-place and in-place times, as printed
    env: dict
    source: str
    url: str | None
    not_counted: str | None = None  # why the point is shown but left out of the summary
    collective: str = "allreduce"  # see simnet.schedule.kinds
    racks: int = 1  # NVL72 racks the trays (nodes) span
    server: str | None = None  # the catalogue product the system is (``simnet.topology.servers``), if it is one


@dataclass(frozen=True)
class Row:
    """A point with simnet's prediction: algorithm, protocol and time (us)."""

    point: Point
    algorithm: str
    protocol: str | None
    predicted_us: float
    by_name: tuple[str, str | None, float] | None = None  # (algorithm, protocol, us) built by ``server:``

    @property
    def spread(self) -> float | None:
        """The ``server:`` writing's time over the hand-written one's, minus one (None: no product)."""
        return None if self.by_name is None else self.by_name[2] / self.predicted_us - 1

    @property
    def error(self) -> float:
        """max(predicted/measured, measured/predicted) - 1."""
        return error_factor(self.predicted_us, self.point.time_us)


def read_yaml(path: Path):
    """A data file's contents, parsed by libyaml where PyYAML was built with it (the points
    files are 60-160 KB: ~0.3 s each in pure Python, read as every test worker collects)."""
    return yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_points(path: Path = DATA) -> list[Point]:
    """The public points with their systems' descriptions and hardware."""
    data = read_yaml(path)
    systems = {s["id"]: s for s in data["systems"]}
    skip = data.get("not_counted", {})
    return [Point(p["id"], p["system"], systems[p["system"]]["description"], systems[p["system"]]["hardware"],
                  p["nodes"], p["ranks"], p["size_bytes"], min(p["time_us"], p.get("inplace_time_us", math.inf)),
                  p.get("env", {}), p["source"], p.get("url"),
                  skip.get(p["id"]), p.get("collective", "allreduce"), p.get("racks", 1),
                  systems[p["system"]].get("server"))
            for p in data["points"]]


def cluster_topology(name: str, hardware: dict, nodes: int, gpus_per_host: int, racks: int = 1):
    """A system as a simnet topology: one NVSwitch server of ``gpus_per_host`` GPUs, or
    ``nodes`` of them on one switch, built from ``hardware`` (a system's in the yaml).

    With ``gpus_per_tray`` in ``hardware`` the nodes are compute trays of NVL72 racks: the
    trays of each of ``racks`` racks share its NVLink switch (one server of trays), the
    racks meet on one switch; ``nics_per_gpu`` gives the NICs of each GPU (default 1)."""
    from simnet.topology.loader import topology_from_dict

    hardware = dict(hardware)
    per_host = hardware.pop("gpus_per_host", gpus_per_host)
    nics_per_gpu = hardware.pop("nics_per_gpu", None)
    servers = nodes
    if "gpus_per_tray" in hardware:
        servers, per_host = racks, nodes * per_host // racks
    if nics_per_gpu is not None:
        hardware["nics_per_host"] = nics_per_gpu * per_host
    if servers == 1:
        generate = {"kind": "nvswitch", "gpus": per_host, "gpu": hardware["gpu"],
                    **({"gpus_per_tray": hardware["gpus_per_tray"]} if "gpus_per_tray" in hardware else {})}
    else:
        generate = {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": servers, "gpus_per_host": per_host, **hardware}
    return topology_from_dict({"name": name, "generate": generate})


def topology_for(point: Point):
    """The system a point ran on: its nodes (and racks) of the system's hardware."""
    return cluster_topology(point.system, point.hardware, point.nodes, point.ranks // point.nodes, point.racks)


def xgmi_rate(gpu: str, hosts: int) -> dict[str, str]:
    """The generator key simnet asks for where AMD's xGMI line rate of ``gpu`` is in no source
    it cites (MI325X, MI355X): MI300X's public rate a link, written per link on one host
    (``full_mesh``'s ``bandwidth``) or for all of a GPU's links on ``hosts`` > 1 (``leaf_spine``'s
    ``nvlink_bandwidth``). Under ``model: rccl`` any rate of RCCL's 48 GB/s a link or more gives
    the same answer (RCCL's figure is the effective rate). Empty where the rate is public or
    the GPU is no AMD mesh."""
    from simnet.topology.hardware import GPUS

    spec = GPUS[gpu]
    if not spec.amd or spec.nvlink_link_rate:
        return {}
    link = GPUS["mi300x"].nvlink_link_rate / 1e9  # GB/s each way
    if hosts == 1:
        return {"bandwidth": f"{link:g} GB/s"}
    return {"nvlink_bandwidth": f"{spec.nvlink_links * link:g} GB/s"}


def _one_server_kind(server: str) -> str:
    """The generator of one host of catalogue product ``server``: an AMD product's GPUs are a
    fully connected xGMI mesh (``full_mesh``), an NVIDIA product's sit on NVSwitch."""
    from simnet.topology.hardware import GPUS
    from simnet.topology.servers import SERVERS

    return "full_mesh" if GPUS[SERVERS[server].gpu].amd else "nvswitch"


def server_topology(point: Point):
    """The system a point ran on written as docs/topologies.md recommends, by product name: its
    hosts as ``server: <point.server>`` and nothing else (the catalogue's GPU, NVLink or xGMI,
    NICs, transport and latencies), one server alone (``_one_server_kind``), else a one-rack
    ``leaf_spine`` of them; an NVL72 product's trays as racks of that product (``point.racks``
    of them). An AMD product whose GPUs' xGMI rate no source gives also takes ``xgmi_rate``:
    simnet refuses it without one."""
    from simnet.topology.loader import topology_from_dict
    from simnet.topology.servers import SERVERS

    product = SERVERS[point.server]
    servers, per_host = point.nodes, point.ranks // point.nodes
    if product.gpus_per_tray is not None:
        servers, per_host = point.racks, point.ranks // point.racks
    if servers == 1:
        generate = {"kind": _one_server_kind(point.server), "server": point.server, "gpus": per_host}
    else:
        generate = {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": servers, "server": point.server,
                    "gpus_per_host": per_host}
    generate.update(xgmi_rate(product.gpu, servers))
    return topology_from_dict({"name": f"{point.system}-by-name", "generate": generate})


def predict(point: Point, by_name: bool = False) -> Row:
    """simnet's prediction for one point: ``auto`` under the nccl model with the point's env;
    with ``by_name`` also on the system built by its ``server:`` (``server_topology``), where
    the system is a catalogue product."""
    from simnet.run.simulate import simulate

    result = simulate(topology_for(point), "auto", point.size_bytes, env=point.env, collective=point.collective)
    named = None
    if by_name and point.server is not None:
        other = simulate(server_topology(point), "auto", point.size_bytes, env=point.env, collective=point.collective)
        named = (other.algorithm, other.protocol, other.time_s * 1e6)
    return Row(point, result.algorithm, result.protocol, result.time_s * 1e6, named)


def _predict_both(point: Point) -> Row:
    return predict(point, by_name=True)


def _geomean_error(rows: list) -> float | None:
    if not rows:
        return None
    return math.exp(sum(math.log1p(r.error) for r in rows) / len(rows)) - 1


SIZE_CLASSES = {
    "all sizes": lambda size: True,
    "small (<= 1 MiB)": lambda size: size <= SMALL,
    "mid (1 MiB - 128 MiB)": lambda size: SMALL < size < LARGE,
    "large (>= 128 MiB)": lambda size: size >= LARGE,
}
"""The size classes the summary reports, by message size in bytes."""
TARGETS = {"all sizes": 0.15, "small (<= 1 MiB)": 0.30, "large (>= 128 MiB)": 0.10}
"""The geometric-mean errors simnet aims to stay within."""


def summarize(rows: list[Row]) -> dict[str, tuple[int, float | None]]:
    """Per size class (``SIZE_CLASSES``), over the counted points: (how many, geometric-mean
    error factor minus one)."""
    rows = [r for r in rows if r.point.not_counted is None]
    return {name: (len(chosen), _geomean_error(chosen)) for name, test in SIZE_CLASSES.items()
            for chosen in [[r for r in rows if test(r.point.size_bytes)]]}


def summary_table(rows: list[Row], targets: dict[str, float] = TARGETS) -> list[str]:
    """The summary as markdown table lines (what docs and the README quote), each size class
    beside its target in ``targets`` (a geometric-mean error, as a fraction; '-': none)."""
    lines = ["| sizes | points | error | target |", "|---|---|---|---|"]
    for name, (count, error) in summarize(rows).items():
        target = f"<= {targets[name]:.0%}" if name in targets else "-"
        quoted = "-" if error is None else f"{error:.1%}"  # one decimal: 15.3 % is not within 15 %
        lines.append(f"| {name} | {count} | {quoted} | {target} |")
    return lines


def per_group(rows: list[Row], key: Callable[[Row], Hashable]) -> list[tuple]:
    """The counted rows grouped by ``key`` (in order of first appearance): (key, points,
    geometric-mean error over all sizes, small, large (None: no such row), median of
    predicted / measured, its smallest and largest)."""
    groups: dict[Hashable, list[Row]] = {}
    for r in rows:
        if r.point.not_counted is None:
            groups.setdefault(key(r), []).append(r)
    table = []
    for name, chosen in groups.items():
        ratios = [r.predicted_us / r.point.time_us for r in chosen]
        table.append((name, len(chosen), _geomean_error(chosen),
                      _geomean_error([r for r in chosen if r.point.size_bytes <= SMALL]),
                      _geomean_error([r for r in chosen if r.point.size_bytes >= LARGE]),
                      statistics.median(ratios), min(ratios), max(ratios)))
    return table


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def markdown(rows: list[Row], excluded: dict[str, str]) -> str:
    """docs/validation.md: summary, method, and one row per point."""
    lines = [
        "# Validation: simnet against public nccl-tests results", "",
        "Every row below is a public `all_reduce_perf` measurement (the faster of its out-of-place and in-place",
        "times, as printed: both time the same collective, and warm-up often inflates one in a sweep's first row) and "
        "what",
        "simnet predicts for it out of the box: `model: nccl`, `auto` (what NCCL would pick), the point's",
        "`NCCL_ALGO`/`NCCL_PROTO`, on the system built from the hardware the source states",
        "(`validation/nccl_tests_public.yaml`, which also quotes each row). Every log gives the same rows: 8 B (or its",
        "smallest size), 1 KiB, 64 KiB, 1 MiB, 16 MiB, 128 MiB, 1 GiB and its largest size, as far as the public text",
        "shows them, so no log is sampled only where it happens to agree. Error is",
        "`max(predicted/measured, measured/predicted) - 1`; summaries are geometric means. Regenerate with",
        "`python -m tools.validation.validate --write`; `tests/test_validation.py` keeps this page true.", "",
        "NCCL's other collectives: [validation_collectives.md](validation_collectives.md); whole training steps "
        "against published measurements: [validation_training.md](validation_training.md); `simnet calibrate`'s "
        "profiles at node counts they were not fitted on: [validation_calibrated.md](validation_calibrated.md); "
        "AMD Instinct GPUs under `model: rccl` against public rccl-tests results: "
        "[validation_amd.md](validation_amd.md).", "",
        *summary_table(rows), "",
        *_per_system(rows),
        *_point_table(rows, collective=False),
    ]
    return "\n".join(lines + _left_out(rows, excluded) + _by_name(rows)) + "\n"


def _per_system(rows: list[Row]) -> list[str]:
    """Per system, the largest error first: its counted rows' errors and predicted /
    measured, what simnet runs; then the systems above the all-sizes target whose measured
    times one of NCCL's own model times (the tuner table NCCL and simnet pick from) matches
    (``_nearest_model_entry``)."""
    table = sorted(per_group(rows, lambda r: r.point.system), key=lambda g: -g[2])
    described = {r.point.system: r for r in rows}
    lines = ["Per system, the largest error first (predicted / measured: above 1, simnet is slower than measured):", "",
             "| system | ranks | points | all sizes | small | large | predicted / measured, median (range) | "
             "simnet runs |", "|---|---|---|---|---|---|---|---|"]
    for system, count, overall, small, large, median, low, high in table:
        chosen = [r for r in rows if r.point.system == system and r.point.not_counted is None]
        runs = ", ".join(dict.fromkeys(f"{r.algorithm}/{r.protocol}" for r in chosen))
        ranks = ", ".join(str(n) for n in sorted({r.point.ranks for r in chosen}))
        lines.append(f"| {described[system].point.description} | {ranks} | {count} | {_pct1(overall)} | "
                     f"{_pct1(small)} | {_pct1(large)} | {median:.2f}x ({low:.2f}x - {high:.2f}x) | {runs} |")
    notes = [_nearest_model_entry([r for r in rows if r.point.system == system and r.point.not_counted is None])
             for system, _, overall, *_ in table if overall > TARGETS["all sizes"]]
    notes = [note for note in notes if note]
    if notes:
        lines += ["", "Systems above the all-sizes target whose measured times one entry of NCCL's own tuner table "
                  "(its model time of every algorithm and protocol it may run there, whose cheapest NCCL and simnet "
                  "pick) matches within that target, though it is not what simnet picks:", "", *notes]
    return lines + [""]


def _nearest_model_entry(rows: list[Row]) -> str | None:
    """A bullet naming the (algorithm, protocol) whose NCCL model time is nearest the measured
    times of ``rows`` (one system's; geometric-mean error over the rows, an entry NCCL's table
    has on every row), when it is within the all-sizes target and not what simnet runs on
    every row; else None."""
    from simnet.run.nccl_env import nccl_system
    from simnet.tuning.predict import pick
    from simnet.tuning.tables import SIMNET_NAMES

    if not rows:
        return None
    system = nccl_system(topology_for(rows[0].point), rows[0].point.env)
    env = rows[0].point.env
    tables = [pick(system, r.point.size_bytes, env.get("NCCL_ALGO"), env.get("NCCL_PROTO")).table for r in rows]
    common = set.intersection(*(set(t) for t in tables))
    if not common:
        return None
    fits = {entry: math.exp(sum(math.log1p(error_factor(t[entry] * 1e6, r.point.time_us))
                                for t, r in zip(tables, rows)) / len(rows)) - 1 for entry in common}
    (algorithm, protocol), error = min(fits.items(), key=lambda item: (item[1], item[0]))
    if error > TARGETS["all sizes"] or all((r.algorithm, r.protocol) == (SIMNET_NAMES[algorithm], protocol)
                                           for r in rows):
        return None
    runs = ", ".join(dict.fromkeys(f"{r.algorithm}/{r.protocol}" for r in rows))
    forced = " ".join(f"{k}={v}" for k, v in env.items() if k in ("NCCL_ALGO", "NCCL_PROTO"))
    return (f"* **{rows[0].point.description}** ({len(rows)} rows, simnet {_pct1(_geomean_error(rows))} off running "
            f"{runs}): NCCL's model time for {algorithm}/{protocol} is within {_pct1(error)} of the measured times. "
            + (f"The rows set {forced}." if forced else "The rows set no NCCL_ALGO or NCCL_PROTO."))


def _by_name(rows: list[Row]) -> list[str]:
    """The section comparing each catalogue product's two writings: per system, then per point."""
    named = [r for r in rows if r.by_name is not None]
    if not named:
        return []
    systems = list(dict.fromkeys(r.point.system for r in named))
    lines = [
        "", "## The same systems by product name (`server:`)", "",
        "docs/topologies.md recommends describing a catalogue product by its name. Each system above that is one "
        "is also",
        "built that way: its hosts as `server: <product>` and nothing else (" + _by_name_writing(named),
        "of them otherwise" + "".join(f"; {extra}" for extra in _by_name_extras(named)) + "), and every point "
        "predicted on it as above. The main table",
        "keeps the hand-written systems (what each source states, including hardware it assumes); here are both, "
        "with the",
        "geometric-mean error over the counted rows and the largest spread between the two writings' times "
        "(`server:` over",
        "hand-written, minus one). Issue target: within 10 %; aim 2 %.", "",
        "| system | `server:` | counted rows | error hand-written | error as `server:` | largest spread |",
        "|---|---|---|---|---|---|",
    ]
    for system in systems + [None]:
        chosen = [r for r in named if system is None or r.point.system == system]
        counted = [r for r in chosen if r.point.not_counted is None]
        server = "-" if system is None else chosen[0].point.server
        spread = max(chosen, key=lambda r: abs(r.spread)).spread
        lines.append(f"| {'all of them' if system is None else system} | {server} | {len(counted)} | "
                     f"{_pct1(_geomean_error(counted))} | {_pct1(_geomean_error([_Named(r) for r in counted]))} | "
                     f"{spread:+.1%} |")
    lines += ["", "| system | ranks | size | measured | hand-written | as `server:` | spread |",
              "|---|---|---|---|---|---|---|"]
    for r in named:
        p, (algorithm, protocol, us) = r.point, r.by_name
        mark = " (not counted)" if p.not_counted else ""
        lines.append(f"| {p.system}{mark} | {p.ranks} | {units.format_size(p.size_bytes)} | "
                     f"{units.format_time(p.time_us * 1e-6)} | {units.format_time(r.predicted_us * 1e-6)} "
                     f"{r.algorithm}/{r.protocol} | {units.format_time(us * 1e-6)} {algorithm}/{protocol} | "
                     f"{r.spread:+.1%} |")
    return lines


def _by_name_writing(named: list[Row]) -> str:
    """How one server of the named rows' products is written, as the page says it: the
    generators (``_one_server_kind``), then a one-rack ``leaf_spine`` of several."""
    kinds = " or ".join(f"`{kind}`" for kind in sorted({_one_server_kind(r.point.server) for r in named}))
    return f"{kinds} for one server, a one-rack `leaf_spine`"


def _by_name_extras(named: list[Row]) -> list[str]:
    """What the by-name writing of the named rows' products adds to the name, as the page says
    it: NVL72 trays as racks; the xGMI rate simnet asks for where no source gives AMD's."""
    from simnet.topology.servers import SERVERS

    products = [SERVERS[s] for s in dict.fromkeys(r.point.server for r in named)]
    extras = ["NVL72 trays as racks of the product"] if any(p.gpus_per_tray is not None for p in products) else []
    rates = sorted({xgmi_rate(p.gpu, 1)["bandwidth"] for p in products if xgmi_rate(p.gpu, 1)})
    if rates:
        extras.append(f"a product whose GPUs' xGMI rate no source simnet cites also gives {' or '.join(rates)} a "
                      "link, as the hand-written systems do: simnet refuses it without one")
    return extras


@dataclass(frozen=True)
class _Named:
    """A row's ``server:`` prediction, with its error as ``Row.error`` has it."""

    row: Row

    @property
    def error(self) -> float:
        return error_factor(self.row.by_name[2], self.row.point.time_us)


def _pct1(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _point_table(rows: list[Row], collective: bool) -> list[str]:
    """One markdown line per point (a leading collective column with ``collective``)."""
    lead = "| collective " if collective else ""
    lines = [f"{lead}| system | ranks | size | measured | predicted | error | simnet runs | source |",
             "|---" * (9 if collective else 8) + "|"]
    for r in rows:
        p = r.point
        env = " ".join(f"{k}={v}" for k, v in p.env.items())
        source = f"[{p.source}]({p.url})" if p.url else p.source
        mark = " (not counted)" if p.not_counted else ""
        first = f"| {p.collective} " if collective else ""
        lines.append(f"{first}| {p.description}{' (' + env + ')' if env else ''}{mark} | {p.ranks} | "
                     f"{units.format_size(p.size_bytes)} | {units.format_time(p.time_us * 1e-6)} | "
                     f"{units.format_time(r.predicted_us * 1e-6)} | {r.error:.0%} | "
                     f"{r.algorithm}/{r.protocol} | {source.replace('|', '/')} |")
    return lines


def _left_out(rows: list[Row], excluded: dict[str, str]) -> list[str]:
    """Why points are not counted and systems left out, as markdown lines."""
    lines = []
    reasons = sorted({r.point.not_counted for r in rows if r.point.not_counted})
    lines += ["", "Rows marked *not counted* are shown but left out of the summary:", ""]
    lines += [f"* {why}" for why in reasons]
    lines += ["", "Systems left out, and why:", ""]
    return lines + [f"* `{name}`: {why}" for name, why in excluded.items()]


def collectives_markdown(rows: list[Row], excluded: dict[str, str]) -> str:
    """docs/validation_collectives.md: per collective and size class, then one row per point."""
    from simnet.schedule.kinds import COLLECTIVES

    kinds = [c for c in COLLECTIVES if any(r.point.collective == c for r in rows)]
    classes = [name for name in SIZE_CLASSES if name != "mid (1 MiB - 128 MiB)"]
    lines = [
        "# Validation: NCCL's other collectives against public nccl-tests results", "",
        "As `docs/validation.md` does for AllReduce, every row below is a public nccl-tests measurement",
        "(`all_gather_perf`, `reduce_scatter_perf`, `alltoall_perf`, `sendrecv_perf`; sizes in nccl-tests'",
        "convention; the faster of the out-of-place and in-place times) and what simnet predicts for it out of",
        "the box: `model: nccl`, `auto`, on the system built from the hardware the source states",
        "(`validation/nccl_tests_collectives.yaml`, which quotes each row). Error and summaries are as on the",
        "AllReduce page. Regenerate with `python -m tools.validation.validate --write`;",
        "`tests/test_validation.py` keeps this page true.", "",
        "| collective | points | " + " | ".join(classes) + " |", "|---" * (len(classes) + 2) + "|",
    ]
    for kind in kinds:
        counts = summarize([r for r in rows if r.point.collective == kind])
        lines.append(f"| {kind} | {counts['all sizes'][0]} | " + " | ".join(_pct(counts[c][1]) for c in classes)
                     + " |")
    missing = [c for c in COLLECTIVES if c not in kinds and c != "allreduce"]
    lines += ["", f"No public {', '.join(missing)} results were found for the GPU generations simnet knows.", "",
              *_point_table(rows, collective=True)]
    return "\n".join(lines + _left_out(rows, excluded)) + "\n"


# ------------------------------------------------------------------ training steps
TRAINING_DATA = ROOT / "validation" / "training_public.yaml"
TRAINING_DOC = ROOT / "docs" / "validation_training.md"


@dataclass(frozen=True)
class Series:
    """One model and layout measured at several GPU counts (``TRAINING_DATA``)."""

    id: str
    description: str
    file: str
    quote: str
    note: str
    model: object  # simnet.workloads.transformer.Transformer
    parallelism: dict
    steps: dict  # GPUs -> measured step, s


@dataclass(frozen=True)
class StepRow:
    """simnet's step for one point of a series, compute efficiency fitted on its first point."""

    series: Series
    gpus: int
    measured_s: float
    predicted_s: float
    efficiency: float
    fitted: bool  # the point the efficiency was fitted on (not counted)

    @property
    def error(self) -> float:
        return error_factor(self.predicted_s, self.measured_s)


def load_series(path: Path = TRAINING_DATA) -> tuple[dict, list[Series]]:
    """(the file's common fields, its series)."""
    from simnet.workloads.transformer import PRESETS, Transformer

    data = read_yaml(path)
    series = [Series(s["id"], s["description"], s["file"], s["quote"], s.get("note", ""),
                     PRESETS[s["model"]] if isinstance(s["model"], str) else Transformer(**s["model"]),
                     s["parallelism"], {int(g): float(t) for g, t in s["steps"].items()}) for s in data["series"]]
    return data, series


def predict_series(series: Series, path: Path = TRAINING_DATA) -> list[StepRow]:
    """Every point of ``series``: the step simnet predicts on the first N GPUs of the data's
    topology, with the one free input (the kernels' fraction of peak, ``efficiency``) set so
    that the first point's step is the measured one."""
    from simnet import load_topology
    from simnet.run.training import step_time
    from simnet.workloads.transformer import Parallelism

    data, _ = load_series(path)
    topology = load_topology(path.parent / data["topology"])
    counts = sorted(series.steps)

    def step(gpus: int, efficiency: float) -> float:
        return step_time(topology, series.model, Parallelism(**series.parallelism), efficiency=efficiency,
                         grad_dtype=data["grad_dtype"], gpus=topology.gpus[:gpus], env=data.get("nccl_env", {})).step_s

    first = counts[0]
    efficiency = 1 / _root(lambda x: step(first, 1 / x) - series.steps[first], 1.0, 2.0, series.steps[first] * 1e-9)
    if not 0 < efficiency <= 1:
        raise ValueError(f"{series.id}: the step at {first} GPUs ({series.steps[first]:g} s) needs a compute "
                         f"efficiency of {efficiency:.3g}, outside (0, 1]: simnet cannot make a step that short")
    return [StepRow(series, n, series.steps[n], step(n, efficiency), efficiency, n == first) for n in counts]


def _root(f, x0: float, x1: float, tolerance: float) -> float:
    """The x where the increasing, piecewise-linear ``f`` (a step against 1 / efficiency:
    compute grows with it, the exposed sync shrinks slower) is 0 within ``tolerance``, by
    the secant method (exact on each linear piece)."""
    f0, f1 = f(x0), f(x1)
    for _ in range(50):
        if abs(f1) <= tolerance:
            return x1
        x0, f0, x1 = x1, f1, x1 - f1 * (x1 - x0) / (f1 - f0)
        f1 = f(x1)
    raise ArithmeticError(f"no root within {tolerance:g} after 50 secant steps (last {x1:g}: {f1:g})")


@dataclass(frozen=True)
class _Flat:
    """A point predicted as its series' fitted step (no growth with the cluster)."""

    row: StepRow

    @property
    def error(self) -> float:
        first = self.row.series.steps[min(self.row.series.steps)]
        return error_factor(first, self.row.measured_s)


def _growth_table(rows: list[StepRow]) -> list[str]:
    """Per series: measured and predicted growth from the first to the last count, and the
    error of simnet and of a flat prediction over the predicted points (markdown lines)."""
    lines = ["| series | GPUs | measured growth | predicted growth | error | flat prediction's error |",
             "|---|---|---|---|---|---|"]
    for series_rows in _by_series(rows):
        first, last = series_rows[0], series_rows[-1]
        grew, predicted = last.measured_s / first.measured_s - 1, last.predicted_s / first.predicted_s - 1
        error, flat = _series_errors(series_rows)
        lines.append(f"| {first.series.description} | {first.gpus:,} to {last.gpus:,} | {grew:+.1%} | {predicted:+.1%} "
                     f"| {_pct(error)} | {_pct(flat)} |")
    return lines


def _by_series(rows: list[StepRow]) -> list[list[StepRow]]:
    return list({r.series.id: [x for x in rows if x.series.id == r.series.id] for r in rows}.values())


def _series_errors(series_rows: list[StepRow]) -> tuple[float | None, float | None]:
    """(simnet's, a flat prediction's) geometric-mean error over a series' predicted points."""
    counted = [r for r in series_rows if not r.fitted]
    return _geomean_error(counted), _geomean_error([_Flat(r) for r in counted])


def growth_prose(rows: list[StepRow]) -> str:
    """What the per-series table says, in words, worked out from ``rows``: which series
    simnet predicts to grow and whether it errs less than a flat prediction there, and which
    it predicts flat (no step grows past the first) and how much those grew when measured."""
    growing, flat = [], []
    for series_rows in _by_series(rows):
        first = series_rows[0].predicted_s
        (flat if all(abs(r.predicted_s - first) <= 1e-9 * first for r in series_rows) else growing).append(series_rows)
    beats_flat = [(s, operator.lt(*_series_errors(s))) for s in growing]
    sentences = []
    for better, verb in ((True, "errs less than"), (False, "does not err less than")):
        names = [s[0].series.description.split(",")[0] for s, beats in beats_flat if beats == better]
        if names:
            sentences.append(f"Where simnet predicts growth ({', '.join(names)}: the data-parallel sync outgrowing "
                             f"what hides behind the last backward compute), it {verb} the flat prediction.")
    for s in flat:
        grew = max(r.measured_s for r in s) / s[0].measured_s - 1
        sentences.append(f"{s[0].series.description.split(',')[0]} is predicted flat (its gradient sync stays "
                         f"hidden at every size), so it scores what the flat prediction scores; its measured step "
                         f"grows by up to {grew:.1%}, which simnet does not explain.")
    return " ".join(sentences)


def training_markdown(rows: list[StepRow], data: dict) -> str:
    """docs/validation_training.md from ``predict_series`` rows."""
    counted = [r for r in rows if not r.fitted]
    lines = [
        "# Validation: training steps against published measurements", "",
        "Each series below is one model and parallel layout that NVIDIA measured on DGX H100 "
        f"systems (8x H100, 8x 400 Gb/s InfiniBand) at several GPU counts ([{data['source']}]({data['source_url']})); "
        "the global batch grows with the GPUs, so only the data-parallel size grows. simnet runs each point as "
        "`simnet.run.training.step_time` on the first N GPUs of `topologies/superpod_h100_16su.yaml` (`model: nccl`, "
        "every exchange simulated with all groups at once, NVLS off as the recipes set it), gradients reduced in "
        "BF16. The kernels' fraction of the GPU's peak (`efficiency`, an input simnet does not predict) is set so "
        "that each series' smallest point "
        "takes its measured step (that row is not counted); every other row is a prediction of how the step grows "
        "with the cluster. Error is `max(predicted/measured, measured/predicted) - 1`. Regenerate with "
        "`python -m tools.validation.validate --write`; `tests/test_validation.py` keeps this page true.", "",
        f"Over {len(counted)} predicted points the geometric-mean error is **{_pct(_geomean_error(counted))}** "
        f"(largest {_pct(max((r.error for r in counted), default=None))}). The measured steps grow little with "
        f"the cluster, so that is a low bar: a prediction that the step does not grow at all would be off by "
        f"{_pct(_geomean_error([_Flat(r) for r in counted]))}. Per series:", "",
        *_growth_table(rows), "",
        growth_prose(rows), "",
        "The page also shows that simnet adds no congestion these fabrics (routed as InfiniBand routes a fat "
        "tree) do not have: with ECMP-hashed routes, a Llama 3 70B step on 16,384 GPUs of the 64-SU preset came "
        "out 2 % slower than on 256 (1 % slower than routed by destination), from pipeline sends colliding "
        "between pods (BENCHMARKS.md).", "",
        "| series | GPUs | measured step | predicted step | error | efficiency (fitted) | source |",
        "|---|---|---|---|---|---|---|"]
    for r in rows:
        source = f"[{r.series.file}]({data['source_url']}/{r.series.file})"
        lines.append(f"| {r.series.description}{' (fitted)' if r.fitted else ''} | {r.gpus:,} "
                     f"| {units.format_time(r.measured_s)} | {units.format_time(r.predicted_s)} | {_pct(r.error)} "
                     f"| {r.efficiency:.3f} | {source} |")
    lines += ["", "The rows as published, and what simnet does not model:", ""]
    for s in {r.series.id: r.series for r in rows}.values():
        lines.append(f"* {s.description}: `{s.quote}`" + (f" {s.note}" if s.note else ""))
    lines += ["", "Not modelled, and absorbed by the fitted efficiency where it does not change with the GPU "
              "count: Megatron's overlap of pipeline sends and tensor-parallel exchanges with compute (the recipes "
              "set `overlap_p2p_comm` and `ub_tp_comm_overlap`; simnet puts them on the critical path), activation "
              "recomputation, the optimizer step. So the fitted efficiency is the compute rate left once simnet's "
              "exchanges are counted, not the kernels' true fraction of peak: the more of a step simnet puts on "
              "the critical path that Megatron overlaps, the higher it comes out.", ""]
    return "\n".join(lines)


def predict_all(points: list[Point], workers: int | None = None) -> list[Row]:
    """``predict`` every point, on ``workers`` processes (default: the cores)."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_predict_both, points))


PAGES = ("validation", "collectives", "amd", "training", "calibrated")
"""The pages ``main`` renders, by the names ``--page`` takes."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help="refit the calibration checks' profiles and rewrite the pages under docs/")
    parser.add_argument("--page", choices=PAGES, action="append",
                        help="only this page (repeatable): validation (docs/validation.md), collectives, amd, "
                             "training, calibrated; default all")
    args = parser.parse_args(argv)
    wanted = set(args.page or PAGES)
    from tools.validation import heldout

    pages = [(doc, render(predict_all(load_points(data)), read_yaml(data).get("excluded_systems", {})))
             for name, data, doc, render in (("validation", DATA, DOC, markdown),
                                             ("collectives", COLLECTIVES_DATA, COLLECTIVES_DOC, collectives_markdown))
             if name in wanted]
    from tools.validation import rccl_points

    if "amd" in wanted:
        pages.append((rccl_points.DOC, rccl_points.markdown(*rccl_points.predict_all())))
    if "training" in wanted:
        common, series = load_series()
        pages.append((TRAINING_DOC, training_markdown([row for s in series for row in predict_series(s)], common)))
    if "calibrated" in wanted:
        pages.append((heldout.DOC, _calibrated_page(refit=args.write)))
    for doc, text in pages:
        if args.write:
            doc.write_text(text)
            print(f"wrote {doc}")
        else:
            print(text)


def _calibrated_page(refit: bool) -> str:
    """docs/validation_calibrated.md, each check's profile refitted first with ``refit``."""
    from concurrent.futures import ProcessPoolExecutor

    from tools.validation import heldout

    checks = heldout.load_checks()
    with ProcessPoolExecutor() as pool:
        if refit:
            list(pool.map(heldout.fit_check, checks))
        return heldout.markdown(checks, list(pool.map(heldout.check_rows, checks)))


if __name__ == "__main__":
    main()
