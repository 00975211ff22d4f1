"""Shared fixtures: paths and a CLI runner that behaves like a user's shell."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FIRST = ("tests/test_readme.py", "tests/test_notebooks.py")
"""Files of few tests that take long (every README command in one fixture, about a minute;
six notebooks in their kernels, half a minute): started first, so that under ``-n auto
--dist loadfile`` no worker is still running one of them while the others have finished."""


def pytest_collection_modifyitems(config, items):
    """Order the files for xdist's file-by-file scheduling, which takes them in this order
    (``--no-loadscope-reorder``): ``FIRST``, then the others by their number of tests,
    most first (what xdist does by default); each file's tests keep their order."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    first = [name for name in FIRST if name in files]
    rest = sorted((name for name in files if name not in first), key=lambda name: -len(files[name]))
    items[:] = [item for name in first + rest for item in files[name]]


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def cli():
    """Invoke the ``simnet`` command in-process; returns click's Result. Tables are as wide
    as they need (COLUMNS=250): test workers inherit an 80-column COLUMNS, and a wrapped
    cell is no different to a reader but is to a substring check."""
    from click.testing import CliRunner

    from simnet.cli.main import main

    runner = CliRunner()

    def invoke(*args: str, env: dict | None = None):
        return runner.invoke(main, [str(a) for a in args], env={"COLUMNS": "250", **(env or {})}, prog_name="simnet",
                             catch_exceptions=False)

    return invoke


@pytest.fixture
def figures(monkeypatch):
    """The matplotlib figures simnet saves, by file name, so tests read what was drawn
    (lines, bars, images, labels) instead of counting pixels."""
    from matplotlib.figure import Figure

    saved: dict = {}
    original = Figure.savefig

    def capture(self, fname, *args, **kwargs):
        saved[Path(fname).name] = self
        return original(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    return saved
