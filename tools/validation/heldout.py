"""``simnet calibrate`` checked on rows it was not fitted on: docs/validation_calibrated.md.

A profile fitted to a cluster's own logs reproduces those logs closely (in-sample, its
parameters outnumber few rows); what a planner needs is the next node count. Each check in
``validation/calibration_checks.yaml`` names public AllReduce points of one cluster
(``validation/nccl_tests_public.yaml``) to fit on and points of the same cluster at other
node counts to predict. ``python -m tools.validation.validate --write`` fits every check as
``simnet calibrate`` does (``simnet.run.calibrate.fit``), stores the profile under
``validation/calibrated/`` and writes the page from it; the tests recompute the page from
the stored profiles (a fit takes about a minute).

>>> [check.id for check in load_checks()][:1]
['h100-ndr-309-2n']
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from simnet import units
from simnet.run.calibrate import Fit, error_factor
from tools.validation.validate import DATA, ROOT, Point, cluster_topology, load_points, read_yaml

__all__ = ["CHECKS", "PROFILES", "DOC", "Check", "CheckRow", "load_checks", "fit_check", "check_rows", "summary",
           "markdown", "row_line"]

CHECKS = ROOT / "validation" / "calibration_checks.yaml"
PROFILES = ROOT / "validation" / "calibrated"
DOC = ROOT / "docs" / "validation_calibrated.md"


@dataclass(frozen=True)
class Check:
    """Fit on ``fit`` (points), predict ``predict``, on ``nodes`` hosts of one system."""

    id: str
    description: str
    nodes: int
    fit: tuple[Point, ...]
    predict: tuple[Point, ...]

    @property
    def profile(self) -> Path:
        return PROFILES / f"{self.id}.cal.yaml"

    def topology(self):
        """The cluster the rows ran on, ``nodes`` hosts of the points' hardware."""
        first = self.fit[0]
        return cluster_topology(first.system, first.hardware, self.nodes, first.ranks // first.nodes)


@dataclass(frozen=True)
class CheckRow:
    """A point with simnet's time out of the box and with the check's profile (us)."""

    point: Point
    fitted: bool  # one of the rows the profile was fitted on
    default_us: float
    calibrated_us: float

    def error(self, predicted_us: float) -> float:
        return error_factor(predicted_us, self.point.time_us)


def load_checks(path: Path = CHECKS, data: Path = DATA) -> list[Check]:
    """The checks, their point ids resolved; ``ValueError`` for an unknown id, an empty or
    overlapping ``fit``/``predict``, ``nodes`` fewer than a point ran on, or points that are
    not counted points of one system run without NCCL variables (a profile describes one
    configuration)."""
    points = {p.id: p for p in load_points(data)}
    checks = []
    for entry in read_yaml(path)["checks"]:
        name = f"check {entry['id']}"
        unknown = [i for part in ("fit", "predict") for i in entry[part] if i not in points]
        if unknown:
            raise ValueError(f"{name}: no point {unknown[0]!r} in {Path(data).name}")
        fit, predict = (tuple(points[i] for i in entry[part]) for part in ("fit", "predict"))
        ids = [p.id for p in fit + predict]
        if not fit or not predict or len(set(ids)) < len(ids):
            raise ValueError(f"{name}: fit and predict must each list points, every point once")
        if len({p.system for p in fit + predict}) != 1 or any(p.env or p.not_counted for p in fit + predict):
            raise ValueError(f"{name}: its points must be counted points of one system, without env")
        if entry["nodes"] < max(p.nodes for p in fit + predict):
            raise ValueError(f"{name}: nodes {entry['nodes']} is fewer than its points ran on")
        checks.append(Check(entry["id"], entry["description"], entry["nodes"], fit, predict))
    return checks


def fit_check(check: Check) -> Path:
    """Fit ``check``'s profile as ``simnet calibrate`` does and store it; returns its path."""
    from simnet.model.calibration import calibration_document
    from simnet.run.calibrate import CalibrationPoint, fit

    points = [CalibrationPoint(p.id, p.ranks, p.size_bytes, p.time_us, line) for line, p in enumerate(check.fit)]
    result = fit(check.topology(), points)
    fitted = {"check": check.id, "points": [p.id for p in check.fit], "held": list(result.held),
              "at_bound": list(result.at_bound),
              "geomean_error": {"before": round(result.geomean(result.errors_before), 4),
                                "after": round(result.geomean(result.errors_after), 4)}}
    PROFILES.mkdir(exist_ok=True)
    document = calibration_document(result.calibration, fitted, check.topology())
    check.profile.write_text(yaml.safe_dump(document, sort_keys=False))
    return check.profile


def check_rows(check: Check, points: list[Point] | None = None) -> list[CheckRow]:
    """``points`` of ``check`` (default all, fitted first), out of the box and with its stored profile."""
    from simnet.model.calibration import load_calibration
    from simnet.run.simulate import simulate

    topology, profile = check.topology(), load_calibration(check.profile)

    def time_us(point: Point, calibration) -> float:
        # NCCL's defaults, as the rows ran (not this process's NCCL_* variables)
        return simulate(topology, "auto", point.size_bytes, gpus=point.ranks, calibration=calibration,
                        env={}).time_s * 1e6

    fitted = {p.id for p in check.fit}
    return [CheckRow(p, p.id in fitted, time_us(p, None), time_us(p, profile))
            for p in (check.fit + check.predict if points is None else points)]


def _geomean(errors: list[float]) -> str:
    return f"{Fit.geomean(errors):.1%}"


def summary(rows: list[CheckRow], fitted: bool) -> tuple[int, str, str]:
    """(rows, error out of the box, error calibrated) over the fitted or the held-out rows."""
    chosen = [r for r in rows if r.fitted == fitted]
    return (len(chosen), _geomean([r.error(r.default_us) for r in chosen]),
            _geomean([r.error(r.calibrated_us) for r in chosen]))


def markdown(checks: list[Check], rows: list[list[CheckRow]]) -> str:
    """docs/validation_calibrated.md: per check, its summary, then its rows."""
    lines = [
        "# Validation: a calibrated profile at node counts it was not fitted on", "",
        "`simnet calibrate` fits a profile to a cluster's own nccl-tests logs. In-sample it reproduces them closely",
        "(it has more parameters than a log has rows); what a plan needs is a node count the logs do not have.",
        "Each check below fits a profile, as `simnet calibrate` does, to the public AllReduce rows of one cluster",
        "at some node counts and predicts its rows at others (rows from `docs/validation.md`; the checks are in",
        "`validation/calibration_checks.yaml`, the fitted profiles in `validation/calibrated/`). Fitted on one",
        "node count, a profile keeps NCCL's per-step latencies and corrects the start-up latency only (rows of one",
        "rank count barely tell the two apart; fitted freely, the 2-node profile below was 17.3 % off its held-out",
        "rows, its 1 MiB rows 39-50 % slow). Errors are",
        "geometric means of `max(predicted/measured, measured/predicted) - 1`. Regenerate with",
        "`python -m tools.validation.validate --write`; `tests/test_heldout.py` keeps this page true.", "",
        "| check | fitted rows | out of the box | calibrated | held-out rows | out of the box | calibrated |",
        "|---|---|---|---|---|---|---|",
    ]
    for check, check_rows_ in zip(checks, rows):
        fitted, held = summary(check_rows_, True), summary(check_rows_, False)
        lines.append(f"| {check.description} | {fitted[0]} | {fitted[1]} | {fitted[2]} | {held[0]} | {held[1]} | "
                     f"{held[2]} |")
    for check, check_rows_ in zip(checks, rows):
        edge = read_yaml(check.profile)["fitted"].get("at_bound", [])
        lines += ["", f"## {check.description}", "",
                  f"Profile: `validation/calibrated/{check.profile.name}`; the system: "
                  f"{check.fit[0].description}."
                  + (f" The fit pushed {', '.join(f'`{p}`' for p in edge)} to the edge of its range." if edge else ""),
                  "",
                  "| row | ranks | size | measured | out of the box | error | calibrated | error | source |",
                  "|---|---|---|---|---|---|---|---|---|"]
        lines += [row_line(r) for r in check_rows_]
    return "\n".join(lines) + "\n"


def row_line(row: CheckRow) -> str:
    """One point of a check as its page shows it."""
    p = row.point
    source = f"[{p.source}]({p.url})" if p.url else p.source
    return (f"| {'fitted' if row.fitted else 'held out'} | {p.ranks} | {units.format_size(p.size_bytes)} | "
            f"{units.format_time(p.time_us * 1e-6)} | {units.format_time(row.default_us * 1e-6)} | "
            f"{row.error(row.default_us):.0%} | {units.format_time(row.calibrated_us * 1e-6)} | "
            f"{row.error(row.calibrated_us):.0%} | {source.replace('|', '/')} |")
