"""The one error type users see: bad input, reported as ``file:line: field: what``."""

from __future__ import annotations

from pathlib import Path

__all__ = ["InputError", "CannotSimulate", "SpecError"]


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


class SpecError(ValueError):
    """A part of an input that does not fit (a generator's parameters, a fault, a job);
    ``loc`` is where in that part, which the loader turns into file, line and field."""

    def __init__(self, loc: tuple, message: str):
        super().__init__(message)
        self.loc = loc
        self.message = message


class Unsupported(ValueError):
    """The topology lacks what an algorithm needs (an NVLS switch, SHARP switches, a second
    host): the algorithm does not apply here, whatever its options."""
