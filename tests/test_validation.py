"""docs/validation.md stays true: its rows are what simnet predicts today (a sample of them
recomputed on every run; `python -m simnet.validate --write` regenerates the page), and its
summary is the summary of its rows."""

import math
import re

import pytest

from simnet import units
from simnet.validate import (
    COLLECTIVES_DATA,
    COLLECTIVES_DOC,
    DOC,
    SIZE_CLASSES,
    collectives_markdown,
    load_points,
    markdown,
    predict,
)

POINTS = load_points()
SAMPLE = POINTS[::12]  # every twelfth point: all systems' kinds, a few seconds


def _page_rows() -> list[list[str]]:
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| system |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_the_page_lists_every_point_once_in_data_order():
    rows = _page_rows()
    assert len(rows) == len(POINTS) >= 100
    for row, point in zip(rows, POINTS):
        assert row[0].startswith(point.description) and row[1] == str(point.ranks)
        assert row[2] == units.format_size(point.size_bytes)
        assert row[3] == units.format_time(point.time_us * 1e-6)
        assert row[0].endswith("(not counted)") == (point.not_counted is not None)


@pytest.mark.parametrize("point", SAMPLE, ids=lambda p: p.id)
def test_a_sample_of_rows_is_what_simnet_predicts_today(point):
    row = predict(point)
    line = markdown([row], {}).splitlines()
    predicted = next(text for text in line if text.startswith(f"| {point.description}"))
    assert predicted.split(" | ")[:7] == [cell for cell in _line_of(point).split(" | ")[:7]]


def _line_of(point):
    index = POINTS.index(point)
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| system |"))
    return lines[start + 2 + index]


def test_the_summary_is_the_geometric_mean_of_the_counted_rows():
    rows = _page_rows()
    page = DOC.read_text()
    for name, test in SIZE_CLASSES.items():
        errors = [float(row[5].rstrip("%")) / 100 for row, point in zip(rows, POINTS)
                  if point.not_counted is None and test(point.size_bytes)]
        mean = math.exp(sum(math.log1p(e) for e in errors) / len(errors)) - 1
        # the rows' errors are rounded to whole percent: the mean agrees to within one point
        quoted = re.search(rf"\| {re.escape(name)} \| {len(errors)} \| ([\d.]+)% \|", page)
        assert quoted, name
        assert abs(float(quoted.group(1)) - 100 * mean) <= 1.0, (name, mean)


COLLECTIVE_POINTS = load_points(COLLECTIVES_DATA)


def _collective_rows() -> list[list[str]]:
    lines = COLLECTIVES_DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| collective | system |"))
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[start + 2:]
            if line.startswith("|")]


def test_the_collectives_page_lists_every_point_once_and_sums_it_up():
    rows = _collective_rows()
    assert len(rows) == len(COLLECTIVE_POINTS) >= 50
    assert {p.collective for p in COLLECTIVE_POINTS} >= {"all_gather", "reduce_scatter", "all_to_all", "send_recv"}
    for row, point in zip(rows, COLLECTIVE_POINTS):
        assert row[0] == point.collective and row[1].startswith(point.description) and row[2] == str(point.ranks)
        assert row[4] == units.format_time(point.time_us * 1e-6)
    page = COLLECTIVES_DOC.read_text()
    for kind in {p.collective for p in COLLECTIVE_POINTS}:
        errors = [float(row[6].rstrip("%")) / 100 for row, p in zip(rows, COLLECTIVE_POINTS)
                  if p.collective == kind and p.not_counted is None]
        mean = math.exp(sum(math.log1p(e) for e in errors) / len(errors)) - 1
        quoted = re.search(rf"\| {kind} \| {len(errors)} \| (\d+)% \|", page)
        assert quoted and abs(int(quoted.group(1)) - 100 * mean) <= 1.0, (kind, mean)


@pytest.mark.parametrize("point", COLLECTIVE_POINTS[::9], ids=lambda p: p.id)
def test_a_sample_of_collective_rows_is_what_simnet_predicts_today(point):
    row = predict(point)
    line = next(text for text in collectives_markdown([row], {}).splitlines()
                if text.startswith(f"| {point.collective} | {point.description}"))
    index = COLLECTIVE_POINTS.index(point)
    lines = COLLECTIVES_DOC.read_text().splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith("| collective | system |"))
    assert line.split(" | ")[:8] == lines[start + 2 + index].split(" | ")[:8]


def test_the_training_page_lists_every_published_step_and_predicts_what_simnet_predicts_today():
    """docs/validation_training.md: every published step appears once; the start of one series
    (its fitted point and the next two) is recomputed here and matches the page."""
    from dataclasses import replace

    from simnet.validate import TRAINING_DOC, load_series, predict_series

    text = TRAINING_DOC.read_text()
    _, series = load_series()
    lines = text.splitlines()
    start = lines.index("| series | GPUs | measured step | predicted step | error | efficiency (fitted) | source |")
    rows = [line for line in lines[start + 2:] if line.startswith("| ")]
    assert len(rows) == sum(len(s.steps) for s in series)
    for s in series:
        for i, (gpus, measured) in enumerate(sorted(s.steps.items())):
            prefix = f"| {s.description}{' (fitted)' if i == 0 else ''} | {gpus:,} | {units.format_time(measured)} |"
            assert sum(line.startswith(prefix) for line in rows) == 1, prefix
    small = next(s for s in series if s.id == "nemotron4_15b")
    small = replace(small, steps=dict(sorted(small.steps.items())[:3]))
    for row in predict_series(small):
        line = next(line for line in rows if line.startswith(f"| {small.description}{' (fitted)' if row.fitted else ''}"
                                                             f" | {row.gpus:,} |"))
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        assert cells[3] == units.format_time(row.predicted_s) and cells[5] == f"{row.efficiency:.3f}"
    errors = [float(line.split(" | ")[4].rstrip("%")) / 100 for line in rows if "(fitted)" not in line]
    mean = math.exp(sum(math.log1p(e) for e in errors) / len(errors)) - 1
    quoted = re.search(rf"Over {len(errors)} predicted points the geometric-mean error is \*\*(\d+)%\*\*", text)
    assert quoted and abs(int(quoted.group(1)) - 100 * mean) <= 1.0  # rows rounded to whole percent


def test_the_training_page_says_per_series_what_its_table_shows():
    """The prose under the per-series table: where simnet predicts growth it predicts less
    than measured but errs less than a flat prediction; Nemotron-4 15B is predicted flat and
    scores what the flat prediction scores."""
    from simnet.validate import TRAINING_DOC

    lines = TRAINING_DOC.read_text().splitlines()
    start = lines.index("| series | GPUs | measured growth | predicted growth | error | flat prediction's error |")
    table = [[c.strip() for c in line.strip("|").split(" | ")] for line in lines[start + 2:start + 5]]
    assert [row[0].split(",")[0] for row in table] == ["GPT-3 175B", "Nemotron-4 340B", "Nemotron-4 15B"]
    for _, _, measured, predicted, error, flat in table:
        measured, predicted = float(measured.rstrip("%")), float(predicted.rstrip("%"))
        error, flat = int(error.rstrip("%")), int(flat.rstrip("%"))
        if predicted == 0:
            assert error == flat
        else:
            assert 0 < predicted < measured and error < flat
    assert float(table[2][3].rstrip("%")) == 0 and float(table[2][2].rstrip("%")) <= 3.0


@pytest.mark.parametrize("page", ["README.md", "docs/model.md"])
def test_pages_that_quote_the_summary_quote_it_as_the_validation_page_has_it(page):
    """README.md and docs/model.md show the AllReduce summary table: the same lines as
    docs/validation.md, which the tests above keep true."""
    from simnet.validate import DOC, ROOT

    def summary(text: str) -> str:
        start = text.index("| sizes | points | error | target |")
        return text[start:text.index("\n\n", start)]

    assert summary((ROOT / page).read_text()) == summary(DOC.read_text())
