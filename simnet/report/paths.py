"""Where reports go, checked before any work starts: a missing folder, a folder where a
file is meant, an unwritable place or an unknown image type is one clear error, not a
traceback after a long simulation."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from simnet.errors import InputError

__all__ = ["output_file", "output_dir", "IMAGE_SUFFIXES", "PLOT_FILES"]

PLOT_FILES = ("time_vs_size.png", "busbw_vs_size.png", "link_utilization.png", "link_heatmap.png", "step.png",
              "interference.png")
"""Every file ``simnet run --plot`` may write into its folder."""

IMAGE_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")
"""Picture formats matplotlib writes without extra packages."""


def output_file(path: str | Path, option: str, suffixes: tuple[str, ...] | None = None,
                inputs: Iterable[str | Path] = ()) -> Path:
    """``path`` as a file simnet may write, or ``InputError`` saying why not (``inputs``:
    the files this command reads, which it must never overwrite).

    >>> output_file("/no/such/folder/out.json", "--json")
    Traceback (most recent call last):
    ...
    simnet.errors.InputError: --json: cannot write /no/such/folder/out.json: folder /no/such/folder does not exist
    """
    if str(path) == "-":  # (the outputs that may go to standard output take it before they get here)
        raise InputError(f"{option}: '-' (standard output) is for --json and topo export -o only; name a file")
    path = Path(path)
    where = f"{option}: cannot write {path}"
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise InputError(f"{where}: unknown file type {path.suffix or '(none)'!r}; use one of {', '.join(suffixes)}")
    with _refused_as(where):
        return _writable_file(path, where, inputs)


@contextmanager
def _refused_as(where: str) -> Iterator[None]:
    """What the file system says of a path (a name longer than it takes, a loop of links)
    as the one-line refusal ``where`` begins."""
    try:
        yield
    except OSError as exc:
        raise InputError(f"{where}: {exc.strerror or exc}") from None


def _refuse_a_dangling_link(path: Path, where: str, folder: bool) -> None:
    """``InputError`` where a folder above ``path`` is a symbolic link to nothing, or ``path``
    itself, a ``folder`` to write into or a file whose link leads into no folder: the write
    would fail after the work. (A file's link to a file not written yet, in a folder that is
    there, is written.)"""
    def dangling(link: Path) -> bool:
        if not link.is_symlink() or link.exists():
            return False
        return folder or link != path or _loops(link) or not (link.parent / os.readlink(link)).parent.is_dir()

    found = next((p for p in (path, *path.parents) if dangling(p)), None)
    if found is not None:
        what = "which leads back to itself (a loop of links)" if _loops(found) else "which does not exist"
        raise InputError(f"{where}: {found} is a link to {os.readlink(found)}, {what}")


def _loops(link: Path) -> bool:
    """Whether following the symbolic link ``link`` never ends (a loop of links)."""
    import errno

    try:
        link.resolve(strict=True)
    except RuntimeError:  # Python 3.11 and 3.12 (3.13 raises OSError)
        return True
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _writable_file(path: Path, where: str, inputs: Iterable[str | Path]) -> Path:
    """``output_file``'s checks of the place itself."""
    _refuse_a_dangling_link(path, where, folder=False)
    if path.is_dir():
        raise InputError(f"{where}: it is a folder; give a file name")
    if path.exists() and not path.is_file():  # results replace a file whole: never a device such as /dev/null
        raise InputError(f"{where}: it is a device or pipe, not a file; give a file name")
    if path.resolve() in {Path(p).resolve() for p in inputs}:
        raise InputError(f"{where}: it is an input of this command; write elsewhere")
    folder = _written_in(path)
    if not folder.is_dir():
        above = next((p for p in folder.parents if p.exists()), None)  # a file in the way says more than "missing"
        if folder.exists() or (above is not None and not above.is_dir()):
            raise InputError(f"{where}: {folder if folder.exists() else above} is a file, not a folder")
        raise InputError(f"{where}: folder {folder} does not exist")
    _can_create_in(folder, where)
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"{where}: permission denied")
    return path


def _written_in(path: Path) -> Path:
    """The folder a file written to ``path`` is made in: through a symbolic link, the folder
    of the file it names (``simnet.io.files.write_text``), else ``path``'s own."""
    return Path(os.path.realpath(path)).parent if path.is_symlink() else path.parent


def _can_create_in(folder: Path, where: str) -> None:
    """Create and remove a scratch file in ``folder``: the one sure test that simnet may
    write there (permissions, read-only and pseudo file systems such as /proc, a full disk)."""
    import tempfile  # with an output file only: every run imports this module

    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".simnet-", suffix=".check"):
            pass
    except OSError as exc:
        raise InputError(f"{where}: cannot create files in {folder} ({exc.strerror or exc})") from None


def output_dir(path: str | Path, option: str, inputs: Iterable[str | Path] = (), writes: Iterable[str] = ()) -> Path:
    """``path`` as a folder simnet may create or write into, or ``InputError`` (also when
    one of the files it ``writes`` there is one of the command's ``inputs``)."""
    path = Path(path)
    where = f"{option}: cannot write into {path}"
    if str(path) == "-":  # a folder of plots (or a sweep's files) has no standard output
        raise InputError(f"{option}: '-' (standard output) is for --json only; name a folder")
    with _refused_as(where):
        return _writable_dir(path, option, where, inputs, writes)


def _writable_dir(path: Path, option: str, where: str, inputs: Iterable[str | Path], writes: Iterable[str]) -> Path:
    """``output_dir``'s checks of the place itself."""
    _refuse_a_dangling_link(path, where, folder=True)
    read = {Path(p).resolve() for p in inputs}
    for name in writes:
        _refuse_a_dangling_link(path / name, where, folder=False)
        if (path / name).resolve() in read:
            raise InputError(f"{where}: {path / name} is an input of this command and would be overwritten; "
                             "write elsewhere")
    if path.exists() and not path.is_dir():
        raise InputError(f"{where}: it is a file, not a folder")
    for name in writes:  # a folder or device where a file goes would fail the write after the work
        if (path / name).exists() and not (path / name).is_file():
            raise InputError(f"{where}: {path / name} is a {'folder' if (path / name).is_dir() else 'device or pipe'}"
                             f", where simnet writes its {name}; remove it or use another {option}")
        if (path / name).is_symlink():  # (written through: in the folder of the file it names)
            _can_create_in(_written_in(path / name), f"{where}: {path / name} is a link to {os.readlink(path / name)}")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise InputError(f"{where}: {existing} is a file, not a folder")
    longest = os.pathconf(existing, "PC_NAME_MAX")  # the folders to create: names the file system takes
    for name in path.relative_to(existing).parts:
        if len(os.fsencode(name)) > longest:
            raise InputError(f"{where}: a folder name of {len(os.fsencode(name))} bytes, over the {longest} a name "
                             "may have here")
    _can_create_in(existing, where)
    return path
