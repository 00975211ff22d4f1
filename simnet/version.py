"""simnet's version: in result files, sweep metadata and bug reports."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

__all__ = ["__version__", "code_digest"]

__version__ = "0.2.0"


@functools.cache
def code_digest() -> str:
    """A hash of simnet's own source files (every ``.py`` of the package, by path and
    content): two checkouts of one version whose code differs answer differently, so a
    sweep resumed by other code than wrote its records is refused, not mixed."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]
