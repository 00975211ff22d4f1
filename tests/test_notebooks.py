"""The notebooks: seven of them, each runs green from a clean kernel, shows a picture, and
is committed with the outputs that run produces, so readers on GitHub see the pictures and
numbers and the stored outputs never go stale.

After changing a notebook, or anything that changes what it prints, store fresh outputs
with ``python tests/test_notebooks.py`` (all seven) or ``python tests/test_notebooks.py
notebooks/02_speedup_curves.ipynb``: it executes them exactly as these tests do.

Each notebook is executed once per test session: one test checks everything about it.
Text outputs are compared as they are, trailing whitespace aside; pictures are compared by
presence, not byte for byte.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from simnet.run.nccl_env import NCCL_VARIABLES  # simnet honours them, as NCCL does: not in a notebook's run

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
PICTURES = ("image/png", "image/jpeg", "image/svg+xml")


def execute(path: Path) -> nbformat.NotebookNode:
    """``path`` run from a clean kernel in its own folder; raises ``CellExecutionError`` on error.

    Streams are coalesced per cell (stdout, then stderr) so that how the kernel happened to
    flush them does not show; no timing metadata is recorded.
    """
    book = nbformat.read(path, as_version=4)
    saved = {name: os.environ.pop(name) for name in NCCL_VARIABLES if name in os.environ}
    try:
        NotebookClient(book, timeout=300, kernel_name="python3", record_timing=False, coalesce_streams=True,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        os.environ.update(saved)
    return book


def _text(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return "\n".join(line.rstrip() for line in text.splitlines()).rstrip()


def outputs(cell) -> list[tuple[str, str | None]]:
    """What a reader sees of a code cell's outputs: (kind, text) per stream, per MIME type
    of a result, and per error; pictures as (MIME type, None)."""
    seen: list[tuple[str, str | None]] = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            seen.append((f"stream {output.name}", _text(output.text)))
        elif output.output_type == "error":
            seen.append(("error", f"{output.ename}: {output.evalue}"))
        else:
            seen += [(mime, None if mime in PICTURES else _text(value)) for mime, value in sorted(output.data.items())]
    return seen


def code_cells(book) -> list:
    return [cell for cell in book.cells if cell.cell_type == "code"]


def pictures(book) -> int:
    return sum(kind in PICTURES for cell in code_cells(book) for kind, _ in outputs(cell))


def test_there_are_seven_notebooks():
    assert [p.stem[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06", "07"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook(path):
    """Runs without error from a clean kernel, shows a picture and no memory address, and is
    committed with the outputs of that run. One test per notebook, so each is executed once
    per session, also when pytest-xdist spreads the tests over workers."""
    committed = nbformat.read(path, as_version=4)
    fresh = execute(path)  # raises if any cell fails, e.g. one of the notebook's own asserts
    assert pictures(fresh) >= 1, "every notebook shows at least one picture"
    for label, book in (("committed", committed), ("fresh", fresh)):
        for index, cell in enumerate(code_cells(book)):
            for kind, text in outputs(cell):
                assert "at 0x" not in (text or ""), f"{label} output of code cell {index} ({kind}) shows an address"
    hint = f"store fresh outputs: python tests/test_notebooks.py {path.relative_to(path.parent.parent)}"
    assert pictures(committed) == pictures(fresh), hint
    for index, (old, new) in enumerate(zip(code_cells(committed), code_cells(fresh), strict=True)):
        if new.get("outputs"):
            assert old.get("outputs"), f"code cell {index} is committed without its outputs; {hint}"
        assert outputs(old) == outputs(new), f"code cell {index}: committed outputs differ from a fresh run; {hint}"


def store(paths: list[Path]) -> None:
    """Execute each notebook as the tests do and save it with its outputs."""
    for path in paths:
        book = execute(path)
        for cell in book.cells:
            cell.metadata.pop("execution", None)
        nbformat.write(book, path)
        print(f"{path}: {sum(len(c.get('outputs', [])) for c in code_cells(book))} outputs, {pictures(book)} pictures")


if __name__ == "__main__":
    store([Path(arg).resolve() for arg in sys.argv[1:]] or NOTEBOOKS)
