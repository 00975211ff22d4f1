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
    """Invoke the ``simnet`` command in-process; returns click's Result."""
    from click.testing import CliRunner

    from simnet.cli import main

    runner = CliRunner()

    def invoke(*args: str, env: dict | None = None):
        return runner.invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)

    return invoke
