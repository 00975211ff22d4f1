"""The one error type users see: bad input, reported as ``file:line: field: what``."""

from __future__ import annotations

from pathlib import Path

__all__ = ["InputError"]


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
        if self.file is None:
            return self.message
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.message}"
