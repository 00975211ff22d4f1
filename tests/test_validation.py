"""docs/validation.md and the pages beside it stay true to their data and their own arithmetic:
every published point appears once, in data order, with its measured time as the data file
quotes it; logs are sampled at the same sizes; each summary is the geometric mean of its rows;
the pages that quote a summary quote it as it is.

That the predicted columns are what simnet predicts today is a regression snapshot (the pages
are regenerated from simnet's output by `python -m tools.validation.validate --write`):
tests/test_regression_snapshots.py recomputes a sample of them."""

import math
import re
from collections import defaultdict

import pytest
import yaml

from simnet import units
from tools.validation.validate import COLLECTIVES_DATA, COLLECTIVES_DOC, DATA, DOC, GRID, SIZE_CLASSES, load_points

POINTS = load_points()


def _table(header: str) -> list[list[str]]:
    """The cells of the page's first table whose header line starts with ``header``."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def _page_rows() -> list[list[str]]:
    return _table("| system | ranks | size |")


def test_the_page_lists_every_point_once_in_data_order():
    rows = _page_rows()
    assert len(rows) == len(POINTS) >= 100
    for row, point in zip(rows, POINTS):
        assert row[0].startswith(point.description) and row[1] == str(point.ranks)
        assert row[2] == units.format_size(point.size_bytes)
        assert row[3] == units.format_time(point.time_us * 1e-6)
        assert row[0].endswith("(not counted)") == (point.not_counted is not None)


@pytest.mark.parametrize("data", [DATA, COLLECTIVES_DATA], ids=lambda path: path.name)
def test_every_log_gives_the_rows_at_the_same_sizes(data):
    # a log sampled only where simnet happens to agree would flatter the summary: from each
    # log (a source's run of one collective), the grid sizes and its own smallest and largest,
    # nothing else. That every grid row a log prints is here takes reading the sources (the
    # yaml quotes each row): this test can only refuse rows off the grid.
    logs = defaultdict(set)
    for point in yaml.safe_load(data.read_text())["points"]:
        logs[point["system"], point.get("collective"), point["source"]].add(point["size_bytes"])
    for log, sizes in logs.items():
        assert sizes <= set(GRID) | {min(sizes), max(sizes)}, log


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


def test_the_per_system_table_sums_up_each_system_s_rows_largest_error_first():
    """Each system's line: its counted rows in the main table, their geometric-mean error (to the
    main table's whole-percent rounding) and the median of predicted / measured from the main
    table's time cells; lines in falling error."""
    systems = _table("| system | ranks | points |")
    rows = [(row, point) for row, point in zip(_page_rows(), POINTS) if point.not_counted is None]
    assert sum(int(line[2]) for line in systems) == len(rows)
    errors = [float(line[3].rstrip("%")) for line in systems]
    assert errors == sorted(errors, reverse=True)
    for line in systems:
        mine = [row for row, point in rows if point.description == line[0]]
        assert len(mine) == int(line[2]), line[0]
        mean = math.exp(sum(math.log1p(float(row[5].rstrip("%")) / 100) for row in mine) / len(mine)) - 1
        assert abs(float(line[3].rstrip("%")) - 100 * mean) <= 1.0, line[0]
        ratios = sorted(_seconds(row[4]) / _seconds(row[3]) for row in mine)
        middle = (ratios[(len(ratios) - 1) // 2] + ratios[len(ratios) // 2]) / 2
        assert float(line[6].split("x")[0]) == pytest.approx(middle, abs=0.01), line[0]


def test_a_tuner_entry_said_to_match_a_system_matches_its_measured_times():
    """A bullet under the per-system table says NCCL's model time of one (algorithm, protocol)
    is within X % of a system's measured times: recomputed here from NCCL's cost model
    (simnet.tuning.predict.predict) on the system the page builds, row by row, it is, X is within
    the all-sizes target, and simnet's own error on those rows (the per-system table's) is above it."""
    from simnet.run.nccl_env import nccl_system
    from simnet.tuning.predict import predict
    from tools.validation.validate import TARGETS, topology_for

    page = DOC.read_text()
    said = re.findall(r"^\* \*\*(.+?)\*\* \((\d+) rows, simnet ([\d.]+)% off running [^)]*\): NCCL's model time for "
                      r"(\w+)/(\w+) is within ([\d.]+)% of the measured times", page, re.M)
    assert said  # the multi-rack NVL72 systems, today
    for description, count, off, algorithm, protocol, within in said:
        points = [p for p in POINTS if p.description == description and p.not_counted is None]
        assert len(points) == int(count) and float(off) > 100 * TARGETS["all sizes"] >= float(within)
        system = nccl_system(topology_for(points[0]), points[0].env)
        errors = [max(t, p.time_us) / min(t, p.time_us) for p in points
                  for t in [predict(system, algorithm, protocol, p.size_bytes) * 1e6]]
        assert 100 * (math.exp(sum(map(math.log, errors)) / len(errors)) - 1) == pytest.approx(float(within), abs=0.05)


def _by_name_tables() -> tuple[list[list[str]], list[list[str]]]:
    """The two tables of the page's ``server:`` section: per system, and per point."""
    return _table("| system | `server:` | counted rows |"), _table("| system | ranks | size | measured | hand-written |")


def _seconds(cell: str) -> float:
    """The time at the start of a cell ("4.474 ms nvls_tree/Simple")."""
    value, unit = cell.split()[:2]
    return float(value) * {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]


def test_the_by_name_tables_list_every_product_point_and_sum_it_up():
    """Every point of a system that names a catalogue ``server`` is in the per-point table once, in
    data order, with its measured time and the main table's hand-written prediction; each system's
    line (and the last, over all of them) quotes the geometric-mean error of its counted rows
    under either writing and the largest spread between the two writings' times."""
    systems, points = _by_name_tables()
    named = [(point, row) for point, row in zip(POINTS, _page_rows()) if point.server is not None]
    assert {p.system for p, _ in named} >= {"oci-h100-2n-roce", "oci-a100-roce", "p5-2n-efa", "p4d-efa"}
    assert len(points) == len(named)
    measured, hand, by_name = [], [], []
    for cells, (point, main) in zip(points, named):
        assert cells[0] == point.system + (" (not counted)" if point.not_counted else "") and cells[1] == str(point.ranks)
        assert cells[2] == units.format_size(point.size_bytes) and cells[3] == main[3]
        assert cells[4].split()[:2] == main[4].split() and cells[4].split()[2] == main[6]
        measured.append(point.time_us * 1e-6)
        hand.append(_seconds(cells[4]))
        by_name.append(_seconds(cells[5]))
        assert abs(float(cells[6].rstrip("%")) - 100 * (by_name[-1] / hand[-1] - 1)) <= 0.1, cells

    def mean_error(times, chosen):
        errors = [max(times[i] / measured[i], measured[i] / times[i]) - 1 for i in chosen]
        return math.exp(sum(math.log1p(e) for e in errors) / len(errors)) - 1 if errors else None

    order = list(dict.fromkeys(p.system for p, _ in named))
    assert [line[0] for line in systems] == order + ["all of them"]
    for line, system in zip(systems, order + [None]):
        mine = [i for i, (p, _) in enumerate(named) if system in (None, p.system)]
        counted = [i for i in mine if named[i][0].not_counted is None]
        assert line[1] == ("-" if system is None else named[mine[0]][0].server) and line[2] == str(len(counted))
        for cell, times in ((line[3], hand), (line[4], by_name)):
            expected = mean_error(times, counted)
            assert cell == "-" if expected is None else abs(float(cell.rstrip("%")) - 100 * expected) <= 0.1, line
        spread = max((by_name[i] / hand[i] - 1 for i in mine), key=abs)
        assert abs(float(line[5].rstrip("%")) - 100 * spread) <= 0.1, line


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


def test_the_training_page_lists_every_published_step_and_sums_it_up():
    """docs/validation_training.md: every published step appears once, and the quoted error is
    the geometric mean of the predicted (not fitted) rows."""
    from tools.validation.validate import TRAINING_DOC, load_series

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
    errors = [float(line.split(" | ")[4].rstrip("%")) / 100 for line in rows if "(fitted)" not in line]
    mean = math.exp(sum(math.log1p(e) for e in errors) / len(errors)) - 1
    quoted = re.search(rf"Over {len(errors)} predicted points the geometric-mean error is \*\*(\d+)%\*\*", text)
    assert quoted and abs(int(quoted.group(1)) - 100 * mean) <= 1.0  # rows rounded to whole percent


def _series(id: str, description: str, steps: dict):
    """A series of hand-picked measured steps (``tools.validation.validate.Series``)."""
    from tools.validation.validate import Series

    return Series(id, description, "f.md", "quote", "", None, {}, steps)


def test_growth_prose_says_what_the_rows_show():
    """Worked by hand: A is predicted to grow and errs 1 % where flat would err 4 %; B grows
    but errs more than flat would; C is predicted flat while its measured step grows by up to
    5 % (at its middle point, not its last)."""
    from tools.validation.validate import StepRow, growth_prose

    a = _series("a", "A, TP 2", {1: 1.0, 2: 1.04})
    b = _series("b", "B, TP 2", {1: 1.0, 2: 1.01})
    c = _series("c", "C, TP 2", {1: 2.0, 2: 2.1, 4: 2.04})
    rows = [StepRow(a, 1, 1.0, 1.0, 0.5, True), StepRow(a, 2, 1.04, 1.03, 0.5, False),
            StepRow(b, 1, 1.0, 1.0, 0.5, True), StepRow(b, 2, 1.01, 1.05, 0.5, False),
            StepRow(c, 1, 2.0, 2.0, 0.5, True), StepRow(c, 2, 2.1, 2.0, 0.5, False), StepRow(c, 4, 2.04, 2.0, 0.5, False)]
    assert growth_prose(rows) == (
        "Where simnet predicts growth (A: the data-parallel sync outgrowing what hides behind the last backward "
        "compute), it errs less than the flat prediction. Where simnet predicts growth (B: the data-parallel sync "
        "outgrowing what hides behind the last backward compute), it does not err less than the flat prediction. "
        "C is predicted flat (its gradient sync stays hidden at every size), so it scores what the flat prediction "
        "scores; its measured step grows by up to 5.0%, which simnet does not explain.")


def test_the_training_pages_growth_table_is_its_step_table():
    """Each series' growth (first to last count) in the per-series table is what the page's
    own step table gives, to its rounding."""
    from tools.validation.validate import TRAINING_DOC

    lines = TRAINING_DOC.read_text().splitlines()
    start = lines.index("| series | GPUs | measured growth | predicted growth | error | flat prediction's error |")
    growth = {}
    for line in lines[start + 2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        growth[cells[0]] = float(cells[2].rstrip("%")), float(cells[3].rstrip("%"))
    start = lines.index("| series | GPUs | measured step | predicted step | error | efficiency (fitted) | source |")
    steps: dict[str, list[tuple[float, float]]] = {}
    for line in lines[start + 2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        steps.setdefault(cells[0].removesuffix(" (fitted)"), []).append(
            (units.parse_time(cells[2]), units.parse_time(cells[3])))
    assert set(growth) == set(steps) and len(steps) >= 3
    for name, points in steps.items():
        measured, predicted = growth[name]
        assert measured == pytest.approx(100 * (points[-1][0] / points[0][0] - 1), abs=0.1)
        assert predicted == pytest.approx(100 * (points[-1][1] / points[0][1] - 1), abs=0.1)


def test_a_step_simnet_cannot_make_is_refused_not_fitted():
    """A measured step shorter than simnet's exchanges allow would need an efficiency outside
    (0, 1]: the fit says so instead of returning it."""
    from dataclasses import replace

    from tools.validation.validate import load_series, predict_series

    small = next(s for s in load_series()[1] if s.id == "nemotron4_15b")
    with pytest.raises(ValueError, match="outside \\(0, 1\\]"):
        predict_series(replace(small, steps={16: 0.3, 32: 0.3}))


@pytest.mark.parametrize("page", ["README.md", "docs/model.md"])
def test_pages_that_quote_the_summary_quote_it_as_the_validation_page_has_it(page):
    """README.md and docs/model.md show the AllReduce summary table: the same lines as
    docs/validation.md, which the tests above keep true."""
    from tools.validation.validate import DOC, ROOT

    def summary(text: str) -> str:
        start = text.index("| sizes | points | error | target |")
        return text[start:text.index("\n\n", start)]

    assert summary((ROOT / page).read_text()) == summary(DOC.read_text())


def test_the_readme_quotes_the_training_page_as_it_is():
    """README's sentence on whole training steps: its count and errors are the page's."""
    from tools.validation.validate import ROOT, TRAINING_DOC

    page = TRAINING_DOC.read_text()
    count, mean, largest = re.search(r"Over (\d+) predicted points the geometric-mean error is \*\*(\d+)%\*\* "
                                     r"\(largest (\d+)%\)", page).groups()
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"the {count} other points come out {mean} % off (geometric mean; largest {largest} %)" in readme
    flat = re.search(r"its measured step grows by up to ([\d.]+)%", page).group(1)
    assert f"which grew {round(float(flat))} %" in readme
    assert "where it predicts growth it errs less than a flat line" in readme
    assert "it errs less than the flat prediction" in page and "does not err less than" not in page
