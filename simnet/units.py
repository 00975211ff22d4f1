"""Human quantities <-> SI floats: bandwidth in bytes/s, time in seconds, size in bytes.

Units are mandatory: a bare number is refused, so "400" never silently means
400 bits, bytes or gigabytes. Bandwidth units: ``b/s``,
``Kb/s`` ... ``Gbps`` are *bits* per second (decimal), ``B/s`` ... ``GB/s``,
``GBps`` are *bytes* per second (decimal), ``KiB/s`` ... ``GiB/s`` are binary.

>>> parse_bandwidth("400 Gb/s") == parse_bandwidth("50 GB/s") == 50e9
True
>>> parse_time("1.5 us")
1.5e-06
>>> parse_size("1 GiB")
1073741824
>>> format_size(64 * 2**20), format_time(0.0452), format_bandwidth(50e9)
('64 MiB', '45.20 ms', '400 Gb/s')
"""

from __future__ import annotations

import math
import re
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal

__all__ = [
    "UnitError",
    "BANDWIDTH_RANGE",
    "TIME_RANGE",
    "SIZE_MAX",
    "DTYPE_BYTES",
    "parse_bandwidth",
    "parse_time",
    "parse_size",
    "parse_size_approx",
    "format_bandwidth",
    "format_time",
    "format_size",
    "significant",
]


class UnitError(ValueError):
    """A quantity that is not a number followed by a known unit."""


_BANDWIDTH = {
    # bits per second, decimal
    "b/s": 1 / 8, "bps": 1 / 8,
    "Kb/s": 1e3 / 8, "Kbps": 1e3 / 8, "kb/s": 1e3 / 8, "kbps": 1e3 / 8,
    "Mb/s": 1e6 / 8, "Mbps": 1e6 / 8,
    "Gb/s": 1e9 / 8, "Gbps": 1e9 / 8,
    "Tb/s": 1e12 / 8, "Tbps": 1e12 / 8,
    # bytes per second, decimal
    "B/s": 1.0, "Bps": 1.0,
    "KB/s": 1e3, "kB/s": 1e3, "KBps": 1e3,
    "MB/s": 1e6, "MBps": 1e6,
    "GB/s": 1e9, "GBps": 1e9,
    "TB/s": 1e12, "TBps": 1e12,
    # bytes per second, binary
    "KiB/s": 2.0**10, "MiB/s": 2.0**20, "GiB/s": 2.0**30, "TiB/s": 2.0**40,
}
_TIME = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
_SIZE = {
    "B": 1, "KB": 10**3, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50,
}

# digits 0-9 only: \d would take any script's (e.g. Arabic-Indic), which float() reads as 0-9 too
_QUANTITY = re.compile(r"^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*([^\s0-9.+-][^\s]*)\s*$")

_BARE = re.compile(r"^\s*[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\s*$")
"""A number alone, as text (``'64'`` typed on the command line): a quantity whose unit was left out."""

_EXAMPLES = {
    "bandwidth": "e.g. '400 Gb/s', '50 GB/s'",
    "time": "e.g. '1.5 us', '20 ms'",
    "size": "e.g. '64 MiB', '1 GB'",
}


_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[])
"""Decimal arithmetic of its own (the process's context may be anything), exact for any product
of a written number and a unit (rounded once, by ``float``; beyond its exponents, infinity or
the least decimal, never a trap)."""


def _parse(text: object, table: dict[str, float], what: str) -> float:
    """``text``'s number times its unit's multiplier, rounded once from the exact decimal
    product (so ``1000 ns`` is ``1 us`` to the bit, as ``400 Gb/s`` is ``50 GB/s``), or raise
    UnitError."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        from simnet.errors import kind_of, shown  # only on this path: importing units loads nothing else

        raise UnitError(f"{shown(text)} is {kind_of(text)}, not a {what} ({_EXAMPLES[what]})")
    match = _QUANTITY.match(str(text))
    if not match or match.group(2) not in table:
        if isinstance(text, (int, float)) or _BARE.match(str(text)):
            raise UnitError(f"{text!r} has no unit; a {what} needs one ({_EXAMPLES[what]})")
        raise UnitError(f"{str(text)!r} is not a {what} ({_EXAMPLES[what]})")
    written = match.group(1)
    mantissa, _, exponent = written.lower().partition("e")
    if not re.search(r"[1-9]", mantissa):  # (0e99999 is zero, however written)
        return 0.0
    number = _EXACT.create_decimal(written)
    if number.is_nan():  # an exponent beyond even this context's: infinity, or the least float
        return math.copysign(math.inf if not exponent.startswith("-") else 5e-324, -1.0 if "-" in mantissa else 1.0)
    product = _EXACT.multiply(number, Decimal(repr(table[match.group(2)])))
    value = float(product)  # an exponent beyond any float: infinity, or the least float for what is not zero
    return value if value != 0 else math.copysign(5e-324, product)


BANDWIDTH_RANGE = (1e3 / 8, 1e16 / 8)
"""Positive bandwidths simnet accepts, B/s: 1 Kb/s (slower, and a GiB takes months) to
10,000 Tb/s (beyond any link or switch built)."""
TIME_RANGE = (1e-12, 86_400.0)
"""Non-zero durations simnet accepts, s: 1 ps (the engine's resolution) to one day."""
SIZE_MAX = 2**50
"""Largest size simnet accepts: 1 PiB (more than any model's gradients)."""
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}
"""Bytes per value of each number format a workload names."""


def _outside(text: object, span: str) -> UnitError:
    return UnitError(f"{str(text)!r} is outside {span}, the range simnet accepts")


def parse_bandwidth(text: object) -> float:
    """Parse a bandwidth such as ``"400 Gb/s"`` into bytes per second (positive values
    within ``BANDWIDTH_RANGE``; zero and negatives are left to the caller to refuse)."""
    value = _parse(text, _BANDWIDTH, "bandwidth")
    vanished = value == 0 and re.search(r"[1-9]", re.split(r"[eE]", str(text))[0]) is not None  # 1e-400: not 0
    if not math.isfinite(value) or vanished or 0 < value < BANDWIDTH_RANGE[0] or value > BANDWIDTH_RANGE[1]:
        raise _outside(text, "1 Kb/s to 10,000 Tb/s")
    return value


_SHARE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*%\s*$")


def is_share(text: object) -> bool:
    """Whether ``text`` is written as a percentage (``"25%"``)."""
    return isinstance(text, str) and _SHARE.match(text) is not None


def parse_share(text: object) -> float:
    """Parse a percentage such as ``"25%"`` into a fraction of 0 .. 1.

    >>> parse_share("25%")
    0.25
    """
    match = _SHARE.match(text) if isinstance(text, str) else None
    if match is None or not 0 <= float(match.group(1)) <= 100:
        raise ValueError(f"{text!r} is not a share: give 0% .. 100%")
    return float(match.group(1)) / 100


def parse_time(text: object) -> float:
    """Parse a duration such as ``"1.5 us"`` into seconds (zero, or a magnitude within
    ``TIME_RANGE``; the sign is left to the caller)."""
    value = _parse(text, _TIME, "time")
    if not math.isfinite(value) or 0 < abs(value) < TIME_RANGE[0] or abs(value) > TIME_RANGE[1]:
        raise _outside(text, "1 ps to 1 day")
    return value


def parse_size(text: object) -> int:
    """Parse a size such as ``"64 MiB"`` into a whole number of bytes (at most ``SIZE_MAX``)."""
    value = parse_size_approx(text)
    if value != math.floor(value):
        raise UnitError(f"{text!r} is not a whole number of bytes")
    return int(value)


def parse_size_approx(text: object) -> float:
    """Parse a size that may be rounded (``"1.304 GiB"``) into bytes, not necessarily whole."""
    value = _parse(text, _SIZE, "size")
    if not math.isfinite(value) or abs(value) > SIZE_MAX:
        raise _outside(text, "0 B to 1 PiB")
    return value


def _significant(value: float) -> str:
    """Up to 4 significant digits, no trailing zeros."""
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"


def significant(value: float, digits: int = 4) -> str:
    """Exactly ``digits`` significant digits, trailing zeros kept (``2.200``, ``215.0``);
    whole numbers of more digits as they are."""
    if value == 0 or abs(value) >= 10**digits:
        return f"{value:.0f}"
    return f"{value:#.{digits}g}".rstrip(".")


def _rounded(value: float, table: tuple[tuple[str, float], ...], short: bool = False) -> str:
    """``value`` to 4 significant digits in the largest unit of ``table`` (largest first)
    that keeps it >= 1 once rounded (999.96 us is ``1.000 ms``), else the last unit;
    ``short`` drops trailing zeros."""
    numbers = [(unit, float(f"{value / scale:.4g}")) for unit, scale in table]
    unit, number = next((each for each in numbers if abs(each[1]) >= 1), numbers[-1])
    return f"{_significant(number) if short else significant(number)} {unit}"


def format_bandwidth(bytes_per_s: float) -> str:
    """Format bytes/s in network units (bits per second, decimal), up to 4 significant
    digits: link rates are round numbers (``400 Gb/s``)."""
    bits = bytes_per_s * 8
    for unit, scale in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6), ("Kb/s", 1e3)):
        if abs(bits) >= scale:
            return f"{_significant(bits / scale)} {unit}"
    return f"{_significant(bits)} b/s"


_TIMES = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("ps", 1e-12))


def format_time(seconds: float, short: bool = False) -> str:
    """Format seconds to 4 significant digits (``2.200 ms``, ``215.0 us``) in the largest
    unit that keeps the number >= 1, down to ps (``1.000 ps``, the engine's resolution),
    under 1 ps ``0 ns``; ``short`` drops trailing zeros, for the times a user typed and axis
    ticks (``10 ms``)."""
    if abs(seconds) < TIME_RANGE[0]:
        return _rounded(0.0, _TIMES[:-1], short)  # no time: said in ns, as a latency of 0 is written
    return _rounded(seconds, _TIMES, short)


def format_ps(ps: int) -> str:
    """A time of whole ps with every digit kept, in the largest unit that keeps it >= 1, for
    times that differ in their last ps (periods, their common multiple); no exponent.

    >>> format_ps(1_000_001_000), format_ps(1_000_003_000_002_000), format_ps(1_000_000_000_001), format_ps(0)
    ('1.000001 ms', '1000.003000002 s', '1.000000000001 s', '0 ps')
    """
    scales = (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3), ("ps", 1))
    unit, scale = next(((name, each) for name, each in scales if abs(ps) >= each), scales[-1])
    whole, part = divmod(abs(int(ps)), scale)
    digits = f"{part:0{len(str(scale)) - 1}d}".rstrip("0") if scale > 1 else ""
    return f"{'-' * (ps < 0)}{whole}{'.' + digits if digits else ''} {unit}"


_BINARY = (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))
_DECIMAL = (("PB", 10**15), ("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3), ("B", 1))


def _factors(n: int, base: int) -> int:
    """How many times ``base`` divides ``n`` (0 for 0), counted up to the 5 of a PB or PiB."""
    count = 0
    while n and n % base == 0 and count < 5:
        n, count = n // base, count + 1
    return count


def format_size(nbytes: float) -> str:
    """Format bytes exactly where a unit allows it in up to 4 significant digits, in the
    shortest such form (a size typed as ``1.4 GB`` comes back as ``1.4 GB``, ``25 MiB`` as
    ``25 MiB``, ``1025 KiB`` as ``1025 KiB``); otherwise to 4 significant digits in the
    largest binary unit (nccl-tests sizes are usually powers of two), or decimal one for a
    multiple of more powers of 1000 than of 1024 below 1 PB (``123456 KB`` is ``123.5 MB``).

    >>> format_size(1_400_000_000), format_size(25 * 2**20), format_size(1000), format_size(3), format_size(2**50)
    ('1.4 GB', '25 MiB', '1 KB', '3 B', '1 PiB')
    >>> format_size(1960448 * 2**10), format_size(10241 * 2**10)
    ('1.870 GiB', '10.00 MiB')
    """
    exact = [text for unit, scale in (*_BINARY, *_DECIMAL) if scale <= abs(nbytes) < 10**4 * scale
             for number in [f"{nbytes / scale:.4g}"] if abs(float(number) * scale - nbytes) < 0.5
             for text in [f"{number} {unit}"]]
    if exact:
        return min(exact, key=len)
    whole = int(nbytes) if nbytes == int(nbytes) else 0
    decimal = abs(nbytes) < 10**15 and _factors(whole, 1000) > _factors(whole, 1024)
    return _rounded(nbytes, _DECIMAL if decimal else _BINARY)
