"""Shared fixtures: paths and a CLI runner that behaves like a user's shell."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
