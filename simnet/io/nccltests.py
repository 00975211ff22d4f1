"""Read nccl-tests output as it is printed: the ``all_reduce_perf`` table.

Handles the current layout (``size count type redop root``, then time / algbw / busbw /
#wrong for out-of-place and in-place, 13 fields) and the pre-2022 one (no ``root``, an
``error`` column, 12 fields); ``#wrong`` may be ``N/A``; launcher prefixes such as
``[1,0]<stdout>:`` (Open MPI), ``0:`` (Slurm) or ``[0]``, and timestamps (``kubectl logs
--timestamps``, ``mpirun --timestamp-output``) are stripped; ``NCCL INFO`` lines
and comments are skipped. The rank count comes from the ``#  Rank  N ...`` device lines,
which test it is from ``# Collective test starting: NAME`` and the rows' ``redop`` and
``root`` columns (``none`` for a collective that does not reduce, a root for a rooted one).

>>> log = '''# Using devices
... #  Rank  0 Group  0 Pid  1 on h0 device  0 [0000:0f:00] NVIDIA H100 80GB HBM3
... #  Rank  1 Group  0 Pid  2 on h1 device  0 [0000:0f:00] NVIDIA H100 80GB HBM3
...      1048576        262144     float     sum      -1    71.93   14.58   27.33      0    71.47   14.67   27.51      0
... '''
>>> parsed = parse_log(log, "x.log")
>>> parsed.ranks, parsed.rows[0].size_bytes, parsed.rows[0].time_us, parsed.rows[0].inplace_time_us
(2, 1048576, 71.93, 71.47)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from simnet.errors import InputError
from simnet.io.files import read_text

__all__ = ["Row", "Log", "parse_log", "read_log", "MIN_TIME_US", "MAX_TIME_US", "MAX_RATE_GBPS", "MAX_ROWS"]

_PREFIX = re.compile(r"^\s*(\d{4}-\d\d-\d\dT[\d:.]+(Z|[+-]\d\d:?\d\d)?\s+)?"  # kubectl logs --timestamps
                     r"(\w{3} \w{3} +\d+ [\d:]+ \d{4})?"  # mpirun --timestamp-output
                     r"(\[\d+,\d+\]<std(out|err)>:|<std(out|err)>:|\d+:|\[\d+\])?\s*")
_RANK = re.compile(r"^#\s*Rank\s+(\d+)\b(?:.*?\bon\s+(\S+)\s+device\s+(\S+)\s+\[[^\]]*\]\s*(.*))?")
_TEST = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_VERSION = re.compile(r"^#?\s*(nccl|rccl)-tests:?\s+version\b", re.IGNORECASE)
"""The line naming the program's library: ``# nccl-tests version 2.18.3 nccl-headers=...``
(NVIDIA/nccl-tests src/common.cu, from 2.14) or ``rccl-tests: Version develop:5272cd1``
(ROCm/rccl-tests, printed before the device list)."""
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


@dataclass(frozen=True)
class Row:
    """One size of the table: bytes, and the out-of-place (and in-place) time in us."""

    size_bytes: int
    time_us: float
    inplace_time_us: float | None
    busbw_GBps: float
    line: int
    dtype: str = "float"  # nccl-tests' type column (float, half, bfloat16, int32, ...)
    op: str = "sum"  # its redop column (sum, prod, min, max, avg)

    @property
    def best_us(self) -> float:
        """The faster of the two columns: both time the same collective."""
        return min(self.time_us, self.inplace_time_us or self.time_us)


@dataclass
class Log:
    """A parsed log: where it came from, its rank count and its rows; ``test``: the program
    its header names (``all_reduce_perf``) and on which line; ``other``: the first row whose
    ``redop`` or ``root`` no AllReduce prints (line and why), if any."""

    path: str
    ranks: int | None
    rows: list[Row] = field(default_factory=list)
    test: tuple[str, int] | None = None
    other: tuple[int, str] | None = None
    hosts: list[str] = field(default_factory=list)  # per rank, as the device lines name them (rank order)
    devices: list[str] = field(default_factory=list)  # per rank: the GPU the device line names
    device_lines: list[int] = field(default_factory=list)  # per rank with a device: its device line's number
    rank_lines: list[int] = field(default_factory=list)  # per rank: the line listing it (``#  Rank  3 ...``)
    library: tuple[str, int] | None = None  # nccl or rccl, as its version line names it, and that line

    def refuse_unless_allreduce(self) -> None:
        """``InputError`` naming the line when the log is not an AllReduce's."""
        if self.test and not Path(self.test[0]).name.startswith("all_reduce"):
            raise InputError(f"this log is from {Path(self.test[0]).name}; only all_reduce_perf times an AllReduce",
                             self.path, self.test[1])
        if self.other:
            raise InputError(f"{self.other[1]}: not an all_reduce_perf row", self.path, self.other[0])


MIN_TIME_US = 1.0
"""Fastest time a logged AllReduce may take, us: NCCL's own model starts every Ring or Tree
collective at its base latency, 6.6 us and more (tuning.cc baseLat, v2.30.7), and one GPU
launching one kernel takes microseconds; a time below 1 us is a log that was not measured."""
MAX_TIME_US = 3600e6
"""Slowest time a logged AllReduce may take, us: an hour. nccl-tests times each size over
its iterations in seconds; a row slower than an hour is not a measurement (a garbled
number, 1e300)."""
MAX_RATE_GBPS = 1e5
"""Fastest algorithm bandwidth (size / time) a logged AllReduce may reach, GB/s: 100 TB/s,
fifty times a GB300's 1.8 TB/s of NVLink per GPU; faster is a row no machine measured."""
MAX_ROWS = 1000
"""Most rows one fit reads (it simulates every row several times): one run per size is enough."""


def _float(text: str) -> float | None:
    return float(text) if _NUMBER.match(text) else None


def _wrong(fields: list[str]) -> int:
    """The larger of a row's two ``#wrong`` counts (0 for ``N/A`` or the old layout's error column);
    ``ValueError`` for one that is neither a count nor ``N/A`` (``-1``: no nccl-tests prints it)."""
    body = fields[5:] if len(fields) == 13 else fields[4:]
    counts = [body[i] for i in (3, 7) if i < len(body) and len(fields) == 13]
    odd = next((c for c in counts if not (c.isascii() and c.isdigit()) and c != "N/A"), None)
    if odd is not None:
        raise ValueError(f"#wrong: {odd!r} is no count of wrong results (nccl-tests prints a whole number, or N/A); "
                         "the row is garbled")
    return max((int(c) for c in counts if c != "N/A"), default=0)


def _not_allreduce(fields: list[str]) -> str | None:
    """Why a data row is not an AllReduce's (redop ``none``, a root), or None."""
    if fields[3] == "none":
        return "redop none (a collective that does not reduce)"
    if len(fields) == 13 and fields[4] != "-1":
        return f"root {fields[4]} (a rooted collective)"
    return None


def _row(fields: list[str]) -> tuple[int, float, float | None, float] | None:
    """(size, time, in-place time, busbw) from a data row's fields, or None if it is not one."""
    if len(fields) not in (12, 13) or not fields[0].isdigit() or not fields[1].isdigit():
        return None
    body = fields[5:] if len(fields) == 13 else fields[4:]  # the current layout has a root column
    time, busbw = _float(body[0]), _float(body[2])
    inplace = _float(body[4]) if len(body) >= 5 else None
    if time is None or busbw is None:
        return None
    return int(fields[0]), time, inplace, busbw


def _algbw_not_size_over_time(fields: list[str], size: int) -> str | None:
    """Why a row's printed algbw (out of place, then in place) is not its size over its time,
    GB/s, as nccl-tests computes it, to the rounding of both printed columns; or None. The
    fit reads the time, so such a row is garbled, whichever column is wrong."""
    body = fields[5:] if len(fields) == 13 else fields[4:]
    for time_text, algbw_text in ((body[0], body[1]), (body[4], body[5])):
        time, algbw = _float(time_text), _float(algbw_text)
        if time is None or algbw is None or time <= 0:
            continue
        digits = len(time_text.partition(".")[2])
        rate = size / (time * 1e3)
        if abs(algbw - rate) > 0.0051 + rate * (0.5 * 10.0**-digits / time + 1e-9):
            return (f"algbw: {algbw:g} GB/s, where its size over its time ({size} B in {time:g} us) is {rate:.4g} "
                    "GB/s, as nccl-tests prints it: the row is garbled")
    return None


def _listed(ranks: dict[int, tuple], lines: dict[int, int], path: str) -> None:
    """``InputError`` naming the line when a run's device lines skip a rank."""
    missing = next((r for r in range(len(ranks)) if r not in ranks), None)
    if missing is not None:
        after = min((r for r in ranks if r > missing), key=lines.__getitem__)  # where the list passes it by
        raise InputError(f"#  Rank {after}: rank {missing} has no device line (a run's ranks are 0 to N-1, each "
                         "listed once); fit the log as nccl-tests printed it", path, lines[after])


_TYPE_BYTES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2, "float": 4,
               "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1}
"""Bytes per value of each type nccl-tests prints (its common.cu test_typenames)."""
_OPS = ("sum", "prod", "max", "min", "avg", "mulsum", "none")
"""The redop column's words (common.cu test_opnames; ``none`` for a collective that does not reduce)."""


def parse_log(text: str, path: str = "<log>") -> Log:
    """Every data row of an nccl-tests log; ``InputError`` naming the line for a row that
    starts like data but cannot be read, or for a log without any."""
    log = Log(path, None)
    ranks: dict[int, tuple[str | None, str | None]] = {}
    runs: list[int] = []  # rank counts of the runs whose device lists the log holds
    lines: dict[int, int] = {}  # the line of each rank's device line, in the current list
    places: dict[int, tuple] = {}  # each rank's (host, device index), in the current list
    rows_before = 0  # rows read when the current device list began
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _PREFIX.sub("", raw).strip()
        if not line or "NCCL INFO" in line or "NCCL WARN" in line:
            continue
        version = _VERSION.match(line)
        if version and log.library is None:
            log.library = (version.group(1).lower(), number)
        if line.startswith("#"):
            match = _RANK.match(line)
            if match:
                rank = int(match.group(1))
                if rank in ranks and len(log.rows) > rows_before:  # a second run's list, after the first's rows
                    _listed(ranks, lines, path)
                    runs.append(len(ranks))
                    ranks, lines, places, rows_before = {}, {}, {}, len(log.rows)
                elif rank in ranks:
                    raise InputError(f"#  Rank {rank}: listed twice, also at line {lines[rank]} (a run lists each "
                                     "rank once); fit the log as nccl-tests printed it", path, number)
                host, device = match.group(2), match.group(3)
                twin = next((r for r, place in places.items() if place == (host, device) and r in ranks), None)
                if host is not None and twin is not None:  # NCCL refuses two ranks on one GPU ("Duplicate GPU")
                    raise InputError(f"#  Rank {rank}: on {host} device {device}, as rank {twin} is (line "
                                     f"{lines[twin]}): NCCL runs one rank per GPU, so this is no run's list; fit the "
                                     "log as nccl-tests printed it", path, number)
                places[rank] = (host, device)
                ranks[rank] = (host, (match.group(4) or "").strip() or None)
                lines[rank] = number
            test = _TEST.match(line)
            if test and log.test is None:
                log.test = (test.group(1), number)
            elif test and test.group(1) != log.test[0]:
                raise InputError(f"a second test, {test.group(1)}, after {log.test[0]} (line {log.test[1]}): give "
                                 "each test its own log", path, number)
            continue
        fields = line.split()
        if not fields[0][0].isdigit():
            if len(fields) in (12, 13) and fields[2] in _TYPE_BYTES and fields[3] in _OPS:  # a row but for its size
                raise InputError(f"size: {fields[0]!r} is no size nccl-tests prints (a whole number of bytes): the "
                                 "row is garbled", path, number)  # (it was passed over as prose: fuzz round az, F5)
            continue  # prose, a header without '#', a command line
        if len(fields) == 12 and fields[4] == "-1":  # the old layout has no root: a time stands there
            raise InputError("a column is missing: the row has the current layout's root column (-1), and that "
                             "layout prints 13 columns, this row 12", path, number)
        parsed = _row(fields)
        if parsed is None:
            raise InputError(f"not an nccl-tests row (size count type redop [root] time algbw busbw ...): "
                             f"{line[:80]!r}", path, number)
        size, time, inplace, busbw = parsed
        wrong = [t for t in (time, inplace) if t is not None and (t <= 0 or not math.isfinite(t))]
        if size > 0 and wrong:
            raise InputError(f"time: {wrong[0]:g} us is not a time a collective takes (it must be positive and "
                             "finite)", path, number)
        wrong = [t for t in (time, inplace) if t is not None and t < MIN_TIME_US]
        if size > 0 and wrong:
            raise InputError(f"time: {wrong[0]:g} us is faster than any AllReduce runs (NCCL starts one at "
                             f"6.6 us or more); this row was not measured", path, number)
        slow = [t for t in (time, inplace) if t is not None and t > MAX_TIME_US]
        if size > 0 and slow:
            raise InputError(f"time: {slow[0]:g} us is slower than any AllReduce nccl-tests times (over an hour); "
                             "this row was not measured", path, number)
        fast = [t for t in (time, inplace) if t is not None and size / (t * 1e3) > MAX_RATE_GBPS]
        if size > 0 and fast:
            raise InputError(f"time: {size} B in {fast[0]:g} us is {size / (fast[0] * 1e3):.4g} GB/s, over the "
                             f"{MAX_RATE_GBPS:.0f} GB/s any machine moves; this row was not measured", path, number)
        garbled = _algbw_not_size_over_time(fields, size)
        if size > 0 and garbled:
            raise InputError(garbled, path, number)
        if size > 0 and not 0 <= busbw <= 2 * MAX_RATE_GBPS:  # an AllReduce's busbw is at most twice its algbw
            raise InputError(f"busbw: {busbw:g} GB/s is not a bandwidth any machine reaches (0 to "
                             f"{2 * MAX_RATE_GBPS:.0f} GB/s); this row was not measured", path, number)
        if fields[2] not in _TYPE_BYTES:
            raise InputError(f"type: {fields[2]!r} is no type nccl-tests prints ({', '.join(_TYPE_BYTES)}): the row "
                             "is garbled", path, number)
        if fields[3] not in _OPS:
            raise InputError(f"redop: {fields[3]!r} is no reduction nccl-tests prints ({', '.join(_OPS)}): the row "
                             "is garbled", path, number)
        allreduce = log.test is None or Path(log.test[0]).name.startswith("all_reduce")  # (others count otherwise)
        written = _TYPE_BYTES.get(fields[2]) if allreduce and len(fields) > 2 and fields[1].isdigit() else None
        if written is not None and size != int(fields[1]) * written:
            raise InputError(f"count: {fields[1]} {fields[2]} values are {int(fields[1]) * written} B, not the "
                             f"row's size {size} B: the row is garbled", path, number)
        try:
            errors = _wrong(fields)
        except ValueError as exc:
            raise InputError(str(exc), path, number) from None
        if size > 0 and errors:
            raise InputError(f"#wrong: {errors} wrong results: nccl-tests found the collective's data wrong, so "
                             "its time measures a broken run; fit a log whose #wrong is 0", path, number)
        if size > 0:
            log.rows.append(Row(size, time, inplace, busbw, number, fields[2], fields[3]))
            why = _not_allreduce(fields)
            if why and log.other is None:
                log.other = (number, why)
    if not log.rows:
        raise InputError("no nccl-tests rows found (expected the all_reduce_perf table)", path)
    _listed(ranks, lines, path)
    if runs and any(count != len(ranks) for count in runs):
        raise InputError(f"the log holds runs on {' and '.join(map(str, [*runs, len(ranks)]))} ranks; give each run "
                         "its own log (one rank count per file)", path)
    if len(log.rows) > MAX_ROWS:
        raise InputError(f"{len(log.rows):,} rows, over the {MAX_ROWS:,} one fit reads; keep one run per size",
                         path)
    log.ranks = len(ranks) or None
    log.hosts = [host for _, (host, _) in sorted(ranks.items()) if host] if ranks else []
    log.devices = [device for _, (_, device) in sorted(ranks.items()) if device] if ranks else []
    log.device_lines = [lines[rank] for rank, (_, device) in sorted(ranks.items()) if device] if ranks else []
    log.rank_lines = [lines[rank] for rank in sorted(ranks)]
    return log


def read_log(path: str | Path) -> Log:
    """``parse_log`` of a file, refusing what cannot be read in one line."""
    path = Path(path)
    return parse_log(read_text(path, "an nccl-tests log", errors="replace"), str(path))
