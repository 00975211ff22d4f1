"""Regression snapshots: detect change, not correctness.

The validation pages are generated from simnet's own output (`python -m
tools.validation.validate --write` writes docs/validation.md, docs/validation_collectives.md,
docs/validation_training.md and docs/validation_calibrated.md, and refits the profiles
under validation/calibrated/). The tests here recompute a sample of their rows and compare
them with what the pages stored: they fail when a prediction changes, for better or worse,
and cannot tell which. Whether a prediction is right is what the pages' measured column and
error say, and the tests that derive expected values on paper (the other test files) check.
After an intended change to the model, regenerate the pages and read the new errors.

Everything in this module is marked ``regression_snapshot`` (pyproject.toml), so
``pytest -m "not regression_snapshot"`` runs only checks of correctness.
"""

from dataclasses import replace

import pytest

from simnet import units
from tools.validation import heldout
from tools.validation.validate import (
    COLLECTIVES_DATA,
    COLLECTIVES_DOC,
    DOC,
    TRAINING_DOC,
    collectives_markdown,
    load_points,
    load_series,
    markdown,
    predict,
    predict_series,
)

pytestmark = pytest.mark.regression_snapshot


def _table(page, header: str) -> list[str]:
    """The rows of the table whose header line starts with ``header``, as the page (a path, or
    its text) has them."""
    lines = (page if isinstance(page, str) else page.read_text()).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


# ------------------------------------------------------------------ docs/validation.md
POINTS = load_points()


QUICK = [p for p in POINTS if p.ranks <= 64 or p.size_bytes <= 16 * 2**20]
"""Points that replay in seconds: across NVL72 racks, rows past 16 MiB take up to a minute each."""


SAMPLE = QUICK[::12] + [p for p in QUICK if ("nvl72" in p.system or "b300" in p.system) and p not in QUICK[::12]][::8]
"""Every twelfth point (all systems' kinds), and every eighth of the NVL72 and B300 rows (the newest kinds)."""


@pytest.mark.parametrize("point", SAMPLE, ids=lambda p: p.id)
def test_a_sample_of_rows_is_what_simnet_predicts_today(point):
    predicted = _table(markdown([predict(point)], {}), "| system | ranks | size |")[0]
    stored = _table(DOC, "| system | ranks | size |")[POINTS.index(point)]
    assert predicted.split(" | ")[:7] == stored.split(" | ")[:7]


BY_NAME = [p for p in QUICK if p.server is not None][::6]
"""Every sixth quick point of a catalogue product (docs/validation.md's ``server:`` section)."""


@pytest.mark.parametrize("point", BY_NAME, ids=lambda p: p.id)
def test_a_sample_of_by_name_rows_is_what_simnet_predicts_today(point):
    from tools.validation.validate import _by_name

    predicted = _by_name([predict(point, by_name=True)])[-1]
    stored = _table(DOC, "| system | ranks | size | measured | hand-written |")
    named = [p for p in POINTS if p.server is not None]
    assert predicted == stored[named.index(point)]


# ------------------------------------------------------------------ docs/validation_collectives.md
COLLECTIVE_POINTS = load_points(COLLECTIVES_DATA)


@pytest.mark.parametrize("point", COLLECTIVE_POINTS[::9], ids=lambda p: p.id)
def test_a_sample_of_collective_rows_is_what_simnet_predicts_today(point):
    predicted = next(text for text in collectives_markdown([predict(point)], {}).splitlines()
                     if text.startswith(f"| {point.collective} | {point.description}"))
    stored = _table(COLLECTIVES_DOC, "| collective | system |")[COLLECTIVE_POINTS.index(point)]
    assert predicted.split(" | ")[:8] == stored.split(" | ")[:8]


# ------------------------------------------------------------------ docs/validation_training.md
def test_the_start_of_a_training_series_is_what_simnet_predicts_today():
    """One series' fitted point and the next two, recomputed: the predicted step and the
    fitted efficiency the page shows."""
    rows = [line for line in _table(TRAINING_DOC, "| series | GPUs | measured step |") if line.startswith("| ")]
    small = next(s for s in load_series()[1] if s.id == "nemotron4_15b")
    small = replace(small, steps=dict(sorted(small.steps.items())[:3]))
    for row in predict_series(small):
        line = next(line for line in rows if line.startswith(f"| {small.description}{' (fitted)' if row.fitted else ''}"
                                                             f" | {row.gpus:,} |"))
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        assert cells[3] == units.format_time(row.predicted_s) and cells[5] == f"{row.efficiency:.3f}"


# ------------------------------------------------------------------ docs/validation_calibrated.md
CHECKS = heldout.load_checks()


def _calibrated_sample():
    """Per check: the smallest row of each group of fitted or held-out rows at one rank count
    (every node count, in and out of sample), and its fitted 1 GiB row (where bandwidth, not
    latency, decides): every kind of row, none of the slowest to recompute."""
    sample = []
    for check in CHECKS:
        fitted = {p.id for p in check.fit}
        groups: dict = {}
        for point in check.fit + check.predict:
            groups.setdefault((point.id in fitted, point.ranks), []).append(point)
        sample += [(check, min(points, key=lambda p: p.size_bytes)) for points in groups.values()]
        sample.append((check, next(p for p in check.fit if p.size_bytes == 2**30)))
    return sample


CALIBRATED_SAMPLE = _calibrated_sample()


def _calibrated_sections() -> dict[str, list[str]]:
    """Per check description, its table's rows on the page."""
    sections, current = {}, None
    for line in heldout.DOC.read_text().splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:], [])
        elif current is not None and line.startswith("| ") and not line.startswith("| row |"):
            current.append(line)
    return sections


@pytest.mark.parametrize("check, point", CALIBRATED_SAMPLE, ids=[f"{c.id}:{p.id}" for c, p in CALIBRATED_SAMPLE])
def test_a_sample_of_rows_is_what_simnet_predicts_with_the_stored_profile(check, point):
    (row,) = heldout.check_rows(check, [point])
    assert heldout.row_line(row) in _calibrated_sections()[check.description]
