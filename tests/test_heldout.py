"""docs/validation_calibrated.md stays true to its checks and its own arithmetic: every check
shows its rows in order, fitted first, with the measured times the data quotes; its summary is
the summary of its rows; every profile was fitted on its check's rows; a check that mixes
systems or configurations is refused.

That the rows are what simnet predicts today out of the box and with each stored profile is a
regression snapshot (`python -m tools.validation.validate --write` refits the profiles and
regenerates the page): tests/test_regression_snapshots.py recomputes a sample of them."""

import math
import re

import pytest
import yaml

from simnet import units
from simnet.model.calibration import load_calibration
from tools.validation.heldout import DOC, load_checks

CHECKS = load_checks()


def _sections() -> dict[str, list[str]]:
    """Per check description, its table's lines on the page."""
    sections, current = {}, None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:], [])
        elif current is not None and line.startswith("| ") and not line.startswith("| row |"):
            current.append(line)
    return sections


def test_every_check_shows_its_rows_in_order_fitted_first():
    sections = _sections()
    assert list(sections) == [check.description for check in CHECKS]
    for check in CHECKS:
        lines = sections[check.description]
        assert len(lines) == len(check.fit) + len(check.predict) >= 10
        for index, (line, point) in enumerate(zip(lines, check.fit + check.predict)):
            cells = line.strip("|").split(" | ")
            assert cells[0].strip() == ("fitted" if index < len(check.fit) else "held out")
            assert cells[1:4] == [str(point.ranks), units.format_size(point.size_bytes),
                                  units.format_time(point.time_us * 1e-6)]


def _errors(line: str) -> tuple[float, float]:
    cells = line.strip("|").split(" | ")
    return float(cells[5].rstrip("%")) / 100, float(cells[7].rstrip("%")) / 100


def test_the_summary_is_the_geometric_mean_of_each_checks_rows():
    page, sections = DOC.read_text(), _sections()

    def mean(errors):
        return 100 * (math.exp(sum(math.log1p(e) for e in errors) / len(errors)) - 1)

    for check in CHECKS:
        quoted = re.search(rf"\| {re.escape(check.description)} \| (\d+) \| ([\d.]+)% \| ([\d.]+)% \| (\d+) \| "
                           r"([\d.]+)% \| ([\d.]+)% \|", page)
        assert quoted, check.id
        lines = sections[check.description]
        for group, (count, default, calibrated) in ((lines[:len(check.fit)], quoted.groups()[:3]),
                                                    (lines[len(check.fit):], quoted.groups()[3:])):
            errors = [_errors(line) for line in group]
            assert int(count) == len(group)
            # the rows' errors are rounded to whole percent: the means agree to within one point
            assert abs(float(default) - mean([e[0] for e in errors])) <= 1.0
            assert abs(float(calibrated) - mean([e[1] for e in errors])) <= 1.0


def test_every_profile_was_fitted_on_its_checks_rows_and_reads_back():
    for check in CHECKS:
        fitted = yaml.safe_load(check.profile.read_text())["fitted"]
        assert fitted["check"] == check.id and fitted["points"] == [p.id for p in check.fit]
        load_calibration(check.profile)
        # what the fit reached in-sample is what the page shows for the fitted rows (the
        # profile stores its numbers to four digits): a profile left over from an older
        # model would disagree
        lines = _sections()[check.description][:len(check.fit)]
        shown = math.exp(sum(math.log1p(_errors(line)[1]) for line in lines) / len(lines)) - 1
        assert abs(shown - fitted["geomean_error"]["after"]) <= 0.01


@pytest.mark.parametrize("change, why", [
    ({"predict": ["h100-2n-ndr-309-ring-1MiB"]}, "NCCL_ALGO=Ring: another configuration"),
    ({"predict": ["h100-2n-ndr-309-1MiB"]}, "another system"),
    ({"predict": ["p5-2n-efa-awsome-old-1MiB"]}, "a point the summary does not count"),
])
def test_a_check_must_stay_within_one_configuration_of_one_system(tmp_path, change, why):
    entry = {"id": "x", "description": "x", "nodes": 8, "fit": [p.id for p in CHECKS[0].fit]} | change
    path = tmp_path / "checks.yaml"
    path.write_text(yaml.safe_dump({"checks": [entry]}))
    with pytest.raises(ValueError, match="one system, without env"):
        load_checks(path)


@pytest.mark.parametrize("change, message", [
    ({"predict": ["nope"]}, "no point 'nope'"),
    ({"predict": []}, "fit and predict must each list points, every point once"),
    ({"predict": ["h100-2n-ndr-309b-1MiB"]}, "fit and predict must each list points, every point once"),
    ({"nodes": 2, "predict": ["h100-8n-ndr-309-1MiB"]}, "nodes 2 is fewer than its points ran on"),
])
def test_a_malformed_check_is_refused_by_name(tmp_path, change, message):
    entry = {"id": "x", "description": "x", "nodes": 8, "fit": [p.id for p in CHECKS[0].fit]} | change
    path = tmp_path / "checks.yaml"
    path.write_text(yaml.safe_dump({"checks": [entry]}))
    with pytest.raises(ValueError, match=f"check x: {message}"):
        load_checks(path)
