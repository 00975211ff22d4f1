"""rich consoles for the CLI: wide enough for tables even when output is a pipe or a file."""

from __future__ import annotations

import os

from rich.console import Console

__all__ = ["stdout_console", "stderr_console"]


def _width() -> int | None:
    """Terminals keep their width; pipes and files get 160 columns unless COLUMNS says otherwise."""
    return None if os.isatty(1) or os.environ.get("COLUMNS") else 160


def stdout_console() -> Console:
    return Console(highlight=False, width=_width())


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)
