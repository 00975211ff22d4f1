"""The one error type users see: bad input, reported as ``file:line: field: what``."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["InputError", "CannotSimulate", "Cut", "SpecError", "shown", "as_written", "kind_of"]

SHOWN = 60
"""Most characters of a value an error line quotes."""


class InputError(ValueError):
    """Bad user input. ``str()`` is the single line the CLI prints before exiting with 2.

    >>> str(InputError("links[3].bandwidth: '40 Gbq' is not a bandwidth", "x.yaml", 14))
    "x.yaml:14: links[3].bandwidth: '40 Gbq' is not a bandwidth"
    """

    def __init__(self, message: str, file: str | Path | None = None, line: int | None = None):
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        super().__init__(self.__str__())

    def __reduce__(self):  # keep file and line across processes (sweep workers)
        return (InputError, (self.message, self.file, self.line))

    def __str__(self) -> str:
        message = _one_line(self.message)
        if self.file is None:
            return message
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{_one_line(where)}: {message}"


def _one_line(text: str) -> str:
    """Line breaks a user put in a key or value (``"a\nb"``) shown escaped: one line stays one line."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class CannotSimulate(ValueError):
    """Valid input that simnet cannot simulate here (too large for the memory, too long for
    the engine's horizon); ``str()`` says why and what to change."""


class Cut(CannotSimulate):
    """Links went down and a route the run resolved (for a transfer sent or still to send)
    has no detour left: raised at the fault's instant (``at_ps``), even after the last
    transfer if the fault comes later (``simnet.run`` refuses such faults before any replay)."""

    def __init__(self, message: str, at_ps: int):
        super().__init__(message)
        self.at_ps = at_ps


class SpecError(ValueError):
    """A part of an input that does not fit (a generator's parameters, a fault, a job);
    ``loc`` is where in that part, which the loader turns into file, line and field."""

    def __init__(self, loc: tuple, message: str):
        super().__init__(message)
        self.loc = loc
        self.message = message


class EnvironmentRefused(ValueError):
    """An NCCL or RCCL variable of the environment that simnet cannot follow for this run:
    the run, not a key of its files, is refused."""


class Unsupported(ValueError):
    """The topology lacks what an algorithm needs (an NVLS switch, SHARP switches, a second
    host): the algorithm does not apply here, whatever its options."""


class OptionUnsupported(Unsupported):
    """An option's value the topology cannot serve (``group_by: region`` where no GPU has a
    region): ``option`` names it, so the refusal lands on its line, not the algorithm's."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


def as_written(value: Any) -> str:
    """A value as a file writes it: text bare (bf16, auto, 400Gb/s), anything else as
    ``shown`` writes it (true, 1, {tp: 2}), whole however long.

    >>> as_written("bf16"), as_written(True), as_written({"tp": 2})
    ('bf16', 'true', '{tp: 2}')
    """
    if isinstance(value, str):
        return value
    return _flow(value, budget=sys.maxsize) if isinstance(value, (dict, list, tuple)) else _scalar(value, quoted=True)


def shown(value: Any) -> str:
    """A value as an error line quotes it: as YAML writes it (``true``, ``'40 Gbq'``, a list
    or mapping in flow style, ``{at: 1 ms, node: sw0}``), never Python's repr of a dict, at
    most ``SHOWN`` characters.

    >>> shown({"at": "1 ms", "link": ["a", "b"]}), shown(True), shown("40 Gbq")
    ('{at: 1 ms, link: [a, b]}', 'true', "'40 Gbq'")
    """
    text = _flow(value) if isinstance(value, (dict, list, tuple)) else _scalar(value, quoted=True)
    return text if len(text) <= SHOWN else text[:SHOWN - 3] + "..."


_PLAIN_TEXT = re.compile(r"^[A-Za-z0-9_./%$+-]+(?: [A-Za-z0-9_./%$+-]+)*$")
"""Text YAML's flow style writes without quotes, as a user would (``1 ms``, ``400 Gb/s``, ``50%``)."""


def _scalar(value: Any, quoted: bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str) and not quoted and _PLAIN_TEXT.match(value) and not _PLAIN_NUMBER.match(value):
        return value
    return repr(value)


_PLAIN_NUMBER = re.compile(r"^[-+.0-9][-+.0-9eE_]*$|^(true|false|null|~)$", re.IGNORECASE)
"""Text that would read as a number or a yes/no unquoted: quoted inside a list or mapping too."""


def _flow(value: Any, budget: int = 4 * SHOWN) -> str:
    """``value`` in YAML flow style, cut short once past ``budget`` characters (a huge list
    is not rendered whole to show its first 60)."""
    parts: list[str] = []
    used = 0
    items = value.items() if isinstance(value, dict) else value
    for item in items:
        if used > budget:
            parts.append("...")
            break
        if isinstance(value, dict):
            key, inner = item
            text = f"{_scalar(key, quoted=False)}: {_inner(inner, budget - used)}"
        else:
            text = _inner(item, budget - used)
        parts.append(text)
        used += len(text) + 2
    body = ", ".join(parts)
    return f"{{{body}}}" if isinstance(value, dict) else f"[{body}]"


def _inner(value: Any, budget: int) -> str:
    return _flow(value, budget) if isinstance(value, (dict, list, tuple)) else _scalar(value, quoted=False)


def kind_of(value: Any) -> str:
    """The kind of a YAML value in a reader's words: text, a number, a list, a mapping, a yes/no."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "a yes/no"
    return ("a number" if isinstance(value, int | float) else "text" if isinstance(value, str) else
            "a list" if isinstance(value, list | tuple) else "a mapping" if isinstance(value, dict) else "a value")
