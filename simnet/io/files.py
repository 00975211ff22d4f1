"""Reading the files a user names: only regular files, of bounded size, as text (a
``.gz`` file decompressed, within the same bound); anything else (a directory, a device
such as /dev/zero, a FIFO that would block forever, a huge or binary file) refused in one
line."""

from __future__ import annotations

import gzip
import stat
import zlib
from pathlib import Path

from simnet.errors import InputError

__all__ = ["read_text", "read_bytes", "write_text", "missing_file", "MAX_FILE_BYTES"]

MAX_FILE_BYTES = 512 * 2**20
"""Largest input file simnet reads (a 300,000-GPU topology written out link by link is ~40 MB)."""


def missing_file(path: Path, expected: str) -> str | None:
    """Why ``path`` is not a regular file to read as ``expected`` (one phrase naming it), or None."""
    try:
        status = path.stat()
    except OSError:
        return f"no {expected} {str(path)!r}"
    if not stat.S_ISREG(status.st_mode):
        return f"the {expected} {str(path)!r} is not a regular file (a directory, device or pipe)"
    return None


def read_text(path: Path, expected: str, errors: str = "strict") -> str:
    """The UTF-8 text of the regular file ``path`` (``expected`` names what it should be,
    for messages; ``errors="replace"`` tolerates stray bytes, as in logs)."""
    data = read_bytes(path, expected)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start}); expected {expected}", path) from None


def read_bytes(path: Path, expected: str) -> bytes:
    """The bytes of the regular file ``path``, decompressed if it is named ``.gz``."""
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):
            raise InputError(f"not a regular file (a directory, device or pipe); expected {expected}", path)
        if status.st_size > MAX_FILE_BYTES:
            raise InputError(f"the file is {status.st_size / 1e6:,.0f} MB, over the {MAX_FILE_BYTES / 1e6:,.0f} MB "
                             f"simnet reads; expected {expected}", path)
        return _gunzipped(path) if path.suffix == ".gz" else path.read_bytes()
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputError(f"not a readable gzip file ({exc}); expected {expected}", path) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", path) from None


def _gunzipped(path: Path) -> bytes:
    """The decompressed bytes of a gzip file, refused past ``MAX_FILE_BYTES`` (a small
    file may expand a thousandfold)."""
    with gzip.open(path, "rb") as stream:
        data = stream.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"decompressed, the file is over the {MAX_FILE_BYTES / 1e6:,.0f} MB simnet reads", path)
    return data


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8, ending in a newline) to ``path`` whole: into a temporary file
    beside it, then renamed, so a reader never sees half a file and a failed write leaves the
    old one in place. The temporary name is short (``.simnet-XXXX.partial``): any name the
    file system takes for ``path`` works. The file gets the mode a plain write would give
    it: the old file's, else what the umask leaves of 0666 (the temporary file is made so).
    Through a symbolic link, the file it names is written and the link kept, as a shell's
    ``>`` does. Returns ``path`` as given."""
    import os
    import secrets
    import stat

    path = Path(path)
    written = Path(os.path.realpath(path))  # (the renamed file would replace the link itself)
    try:
        mode = stat.S_IMODE(written.stat().st_mode)
    except OSError:  # a new file: the umask applies as the temporary file is made
        mode = None
    while True:
        partial = written.parent / f".simnet-{secrets.token_hex(4)}.partial"
        try:
            handle = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with open(handle, "w", encoding="utf-8") as stream:
            stream.write(text if text.endswith("\n") else text + "\n")
        if mode is not None:
            os.chmod(partial, mode)
        os.replace(partial, written)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path
