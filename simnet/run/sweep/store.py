"""A sweep's results on disk: ``OUT/results.jsonl`` (one JSON record per finished point,
appended and fsynced as it completes), ``OUT/sweep.json`` (which scenario they belong to)
and ``OUT/.lock`` (held by the one sweep writing there)."""

from __future__ import annotations

import fcntl
import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simnet.errors import InputError
from simnet.version import __version__

__all__ = ["RESULTS", "META", "LOCK", "load_records", "check_meta", "append_record", "rewrite_records",
           "locked"]

RESULTS = "results.jsonl"
META = "sweep.json"
LOCK = ".lock"


def _unsound(record: dict) -> str | None:
    """Why a record with a key cannot be reported (a field of the wrong kind), or None."""
    if not isinstance(record.get("set"), dict) or not isinstance(record.get("algorithm"), str):
        return "its set or algorithm is missing"
    if isinstance(record.get("gpus"), bool) or not isinstance(record.get("gpus"), int):
        return "its gpus is not a GPU count"
    if "skipped" in record:
        return None if isinstance(record["skipped"], str) else "its skipped is not a reason"
    sizes = record.get("sizes")
    if sizes is not None and not (isinstance(sizes, list) and all(
            isinstance(s, dict) and all(isinstance(s.get(k), (int, float)) and not isinstance(s.get(k), bool)
                                        for k in ("size_bytes", "time_s")) for s in sizes)):
        return "its sizes hold a size_bytes or time_s that is not a number"
    if sizes is not None and not all(math.isfinite(s["time_s"]) and s["time_s"] >= 0 and s["size_bytes"] >= 0
                                     for s in sizes):
        return "its sizes hold a size_bytes or time_s that is negative or not finite"
    for key in ("iteration_time_s", "speedup", "efficiency"):
        if key in record and (isinstance(record[key], bool) or not isinstance(record[key], (int, float))):
            return f"its {key} is not a number"
    if sizes is None and not isinstance(record.get("training"), dict) and not isinstance(record.get("jobs"), list):
        return "its result is missing (no sizes, training or jobs)"
    return None


def load_records(path: Path, recomputed: list[str] | None = None) -> list[dict]:
    """Finished records of a results file. A torn last line (a writer killed mid-record: no
    final newline) is cut off, unless it is a whole record (then it is kept and the newline
    added); any other line that is not a record is refused with its line number, never
    dropped together with the good records after it. A record whose key is sound but whose
    fields are not is left out, to be computed again, and named in ``recomputed``; given
    ``recomputed`` (a sweep that resumes, holding the lock), the file is rewritten without it,
    so the next resume neither reads nor names it again."""
    if not path.exists():
        return []
    data = path.read_bytes()
    complete = data.rfind(b"\n") + 1  # what follows the last newline is a torn write, or a whole record
    tail = data[complete:]
    if tail.strip():
        try:
            whole = json.loads(tail)
        except (json.JSONDecodeError, UnicodeDecodeError):
            whole = None
        if isinstance(whole, dict) and isinstance(whole.get("key"), str):
            with path.open("ab") as handle:
                handle.write(b"\n")
            data, complete = data + b"\n", len(data) + 1
    records, unsound = [], False
    for number, line in enumerate(data[:complete].splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"line {number} is not JSON ({exc}); remove that line to resume, or use another --out",
                             path, number) from None
        if not isinstance(record, dict) or not isinstance(record.get("key"), str):
            raise InputError(f"line {number} is not a sweep record; remove that line to resume, or use another --out",
                             path, number)
        why = _unsound(record)
        if why:
            if recomputed is not None:
                recomputed.append(f"{path}:{number}: a record whose {why.removeprefix('its ')}; dropped (its point "
                                  "is computed again where the sweep runs it)")
            unsound = True
            continue
        records.append(record)
    if unsound and recomputed is not None:
        rewrite_records(path, records)
    elif complete != len(data):
        with path.open("rb+") as handle:
            handle.truncate(complete)
    return records


def check_meta(out: Path, fingerprint: str, source: str, identity: dict | None = None) -> None:
    """Record which scenario ``out`` holds (``fingerprint``, and the ``identity`` it hashes),
    or refuse if it holds another one, saying which input changed."""
    meta = out / META
    if meta.exists():
        try:
            known = json.loads(meta.read_text())
            if not isinstance(known, dict):
                raise ValueError("not a JSON object")
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"{meta} is damaged ({exc}); delete {out} or use another --out", source) from None
        if known.get("scenario") != fingerprint:
            raise InputError(f"{out} holds a sweep of other inputs: {_changed(known.get('inputs'), identity)}; use "
                             "another --out or delete it", source)
    elif (out / RESULTS).exists() and (out / RESULTS).stat().st_size:
        raise InputError(f"{out / RESULTS} holds results but {meta} is gone, which said what they are results of; "
                         f"delete {out} or use another --out", source)
    else:
        meta.write_text(json.dumps({"scenario": fingerprint, "simnet": __version__, "source": source,
                                    "inputs": identity}) + "\n")


def _changed(before: dict | None, now: dict | None) -> str:
    """Which of a sweep's inputs differ (``SweepPlan.identity`` then and now), in words."""
    if not isinstance(before, dict) or now is None:
        return "a different scenario or topology, calibration profile, NCCL variable or simnet version"
    said = []
    if before.get("scenario") != now["scenario"]:
        said.append("the scenario or its topology changed")
    if before.get("calibrations") != now["calibrations"]:
        said.append("a calibration profile it reads changed")
    env_then = before.get("env") if isinstance(before.get("env"), dict) else {}
    for name in sorted(set(env_then) | set(now["env"])):
        if env_then.get(name) != now["env"].get(name):
            said.append(f"{name} was {env_then.get(name, 'unset')}, now {now['env'].get(name, 'unset')}")
    if before.get("simnet") != now["simnet"]:
        said.append(f"simnet {before.get('simnet')} wrote it, this is {now['simnet']}")
    return ", ".join(said) or "a different sweep"


@contextmanager
def locked(out: Path, source: str) -> Iterator[None]:
    """Hold ``OUT/.lock`` while a sweep writes there; a second sweep on the same ``out``
    is refused at once rather than computing and writing every point twice."""
    with (out / LOCK).open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(handle.fileno()).st_ino != (out / LOCK).stat().st_ino:
                raise BlockingIOError  # the sweep that held it removed the folder meanwhile
        except (BlockingIOError, FileNotFoundError):
            handle.seek(0)
            owner = handle.read().strip() or "?"
            raise InputError(f"{out} is in use by another sweep (process {owner}); wait for it to finish or use "
                             "another --out", source) from None
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def append_record(handle, record: dict) -> None:
    """Append one record and make it durable before returning."""
    handle.write(json.dumps(record, allow_nan=False) + "\n")
    handle.flush()
    os.fsync(handle.fileno())


def rewrite_records(path: Path, records: list[dict]) -> None:
    """Replace the results file with ``records`` at once (a new file, made durable, renamed
    over the old one): a sweep killed meanwhile leaves the old file or the new, whole. Through
    a symbolic link, the file it names is replaced and the link kept."""
    path = Path(os.path.realpath(path))
    temporary = path.with_name(path.name + ".new")
    with temporary.open("w") as handle:
        for record in records:
            handle.write(json.dumps(record, allow_nan=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
