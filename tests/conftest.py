"""Shared fixtures: paths and a CLI runner that behaves like a user's shell."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FIRST = ("tests/test_readme.py", "tests/test_cli_topo.py", "tests/test_topology.py", "tests/test_notebooks.py")
"""Files started first, one worker each as it frees up. The README's commands (one fixture,
the longest file: ~45 s of CPU on 2 cores) need the compiled fluid network, which on a fresh
install ``WARM_COMPILED`` is still compiling (~25 s), and every process that needs it waits on
its lock meanwhile. So the other worker starts on files that replay nothing, the 16,384-GPU
preset loaded, routed and checked (~20 s), then the notebooks (half a minute in their kernels)."""

LONGEST = ("tests/test_collectives_correctness.py", "tests/test_sweep.py", "tests/test_budget.py",
           "tests/test_nothing_ignored.py", "tests/test_same_hardware.py", "tests/test_training.py",
           "tests/test_contended.py", "tests/test_calibrate.py", "tests/test_hostile_input.py",
           "tests/test_regression_snapshots.py", "tests/test_model.py", "tests/test_scenario.py",
           "tests/test_rail_optimized.py", "tests/test_trace_inputs.py", "tests/test_cli_run.py",
           "tests/test_every_key.py")
"""The other files of over ~4 s of CPU, longest first (``--durations=0`` summed per file,
2 cores): started next, so that the files left at the end are short and no worker finishes
a long one alone while the other has nothing left. A file not named here comes after them."""


WARM_COMPILED = """
from simnet import topology_from_dict
from simnet.engine.replay import compiled_available, replay
from simnet.schedule.catalog import build_schedule
topo = topology_from_dict({"name": "t", "generate": {"kind": "nvswitch", "gpus": 2}})
if compiled_available():
    replay(build_schedule("ring", topo, 1024), topo, compiled=True)
"""
"""What ``pytest_configure`` runs beside the workers: the compiled fluid network compiled (or
loaded from numba's cache, a second) before a test needs it. On a fresh install compiling
takes ~25 s of CPU, which the first test to need it used to spend while the other worker
(and every process after it, on the file lock) waited."""


def pytest_configure(config):
    """On the controller (or a run without workers): simnet's bytecode written once, then
    ``WARM_COMPILED`` started in a process of its own; it takes the compile lock first
    (``simnet.engine.compiled._compiled_for``). Where ``PYTHONDONTWRITEBYTECODE`` is set (this
    machine, many CI images) no process writes it, so every one of the suite's Python
    processes (test workers, the README's commands, notebook kernels, sweep workers) would
    compile simnet's modules again: ~0.2 s each, against ~0.4 s once here."""
    import compileall
    import os
    import subprocess
    import sys

    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        compileall.compile_dir(ROOT / "simnet", quiet=2)  # (a checkout it cannot write: as before)
        config.warm_compiled = subprocess.Popen([sys.executable, "-c", WARM_COMPILED], cwd=ROOT,
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pytest_unconfigure(config):
    """End ``WARM_COMPILED`` if it still runs (a run of a few tests that needed no compiled
    network: it would wait out the compile otherwise; the next run compiles again)."""
    process = getattr(config, "warm_compiled", None)
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()


def pytest_collection_modifyitems(config, items):
    """Order the files for xdist's file-by-file scheduling, which takes them in this order
    (``--no-loadscope-reorder``): ``FIRST``, ``LONGEST``, then the others by their number of
    tests, most first (what xdist does by default); each file's tests keep their order."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    first = [name for name in FIRST + LONGEST if name in files]
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
