"""rich consoles for the CLI: wide enough for tables even when output is a pipe or a file;
progress as a bar on a terminal and as plain periodic lines in a log. No string is read as
rich markup: names are the user's (a node ``nv[/]`` or ``nv[s]`` prints as written), and
what simnet colours it styles with ``rich.text.Text``."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console

__all__ = ["stdout_console", "stderr_console", "print_warnings", "print_warning", "echo", "progress", "PLAIN_EVERY_S"]

PLAIN_EVERY_S = 10.0
"""Seconds between progress lines when stderr is not a terminal (none for shorter runs)."""


def _width() -> int | None:
    """Terminals keep their width; pipes and files get 160 columns unless COLUMNS says otherwise."""
    return None if os.isatty(1) or os.environ.get("COLUMNS") else 160


READER_GONE = [False]
"""Whether standard output's reader went away (``simnet run S | head -1``) while a command ran."""


def _reader_gone() -> None:
    """Standard output's reader went away: what is still printed goes nowhere."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    READER_GONE[0] = True


def echo(text: str) -> None:
    """``text`` (a document such as ``--json -``'s) on standard output; where its reader has gone
    away, nowhere, and the command goes on to write its files (``_Console``)."""
    import click

    try:
        click.echo(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _reader_gone()


class _Console(Console):
    """rich's console. Where the reader of standard output goes away, the rest of what it
    prints goes nowhere and the command goes on to write every file it was asked for (fuzz
    round ay, F5: ``run --json --csv --plot | head -1`` wrote the JSON alone, calibrate no
    profile); it then ends as a closed pipe ends a tool (``shell.friendly``: exit 141)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        _reader_gone()


def stdout_console() -> Console:
    return _Console(highlight=False, markup=False, width=_width())


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False, markup=False)


def print_warning(console: Console, text: str) -> None:
    """One warning line: ``warning`` in yellow, then ``text`` as written."""
    from rich.text import Text

    console.print(Text.assemble(("warning", "yellow"), " ", text))


def print_warnings(console: Console, warnings) -> None:
    """One line per finding (``kind``, ``message``)."""
    for warning in warnings:
        print_warning(console, f"{warning.kind}: {warning.message}")


@contextmanager
def progress(label: str) -> Iterator[Callable[..., None]]:
    """Yield ``update(done, total, status="")``. On a terminal: a transient bar with the
    elapsed and remaining time. Otherwise one plain line on stderr every ``PLAIN_EVERY_S``
    seconds (``label: 3/12 done, 2 running; 40 s elapsed, about 120 s left``; before the
    first is done, only when there is a status to say), so logs show progress and short
    runs print nothing. The time left follows the pace since the first was done, which
    carries one-time costs (compiling, imports): no estimate until a second is done, nor
    beside a status that says the time its own part has left."""
    if sys.stderr.isatty():
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        columns = (TextColumn(label, markup=False), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[status]}", markup=False),
                   TimeElapsedColumn(), TimeRemainingColumn())
        with Progress(*columns, console=stderr_console(), transient=True) as bar:
            task = bar.add_task(label, total=None, status="")
            yield lambda done, total, status="": bar.update(task, completed=done, total=total, status=status)
        return
    start = last = time.monotonic()
    first: tuple[float, int] | None = None  # when the first were done, and how many

    def update(done: int, total: int, status: str = "") -> None:
        nonlocal last, first
        now = time.monotonic()
        if done and first is None:
            first = (now, done)
        if now - last < PLAIN_EVERY_S or not (done or status):
            return
        last = now
        # the pace since the first finished: the first carries one-time costs (numba's compile, imports); a status
        # that says the time its own part has left is the estimate (parts of unequal size: the pace of the parts
        # done would contradict it, review 93)
        paced = first is not None and done > first[1] and " left" not in status
        left = f", about {(now - first[0]) / (done - first[1]) * (total - done):.0f} s left" if paced else \
            ", about 0 s left" if done == total else ""
        print(f"{label}: {done}/{total} done{', ' + status if status else ''}; {now - start:.0f} s elapsed{left}",
              file=sys.stderr, flush=True)

    yield update
