"""A sweep's results on disk: ``OUT/results.jsonl`` (one JSON record per finished point,
appended and fsynced as it completes) and ``OUT/sweep.json`` (which scenario they belong to)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from simnet.errors import InputError
from simnet.version import __version__

__all__ = ["RESULTS", "META", "load_records", "check_meta", "append_record"]

RESULTS = "results.jsonl"
META = "sweep.json"


def load_records(path: Path) -> list[dict]:
    """Finished records of a results file; a torn last line (a killed writer) is cut off."""
    if not path.exists():
        return []
    records = []
    good = 0
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break
            good += len(line)
    if good != path.stat().st_size:
        with path.open("rb+") as handle:
            handle.truncate(good)
    return records


def check_meta(out: Path, fingerprint: str, source: str) -> None:
    """Record which scenario ``out`` holds, or refuse if it holds another one."""
    meta = out / META
    if meta.exists():
        known = json.loads(meta.read_text())
        if known.get("scenario") != fingerprint:
            raise InputError(f"{out} holds a sweep of a different scenario (fingerprint {known.get('scenario')}, "
                             f"now {fingerprint}); use another --out or delete it", source)
    else:
        meta.write_text(json.dumps({"scenario": fingerprint, "simnet": __version__, "source": source}) + "\n")


def append_record(handle, record: dict) -> None:
    """Append one record and make it durable before returning."""
    handle.write(json.dumps(record, allow_nan=False) + "\n")
    handle.flush()
    os.fsync(handle.fileno())
