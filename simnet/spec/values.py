"""The values a scenario writes in its own syntax: sizes (one, a list, or an nccl-tests range
``8 B .. 8 GiB x2``) and costs (``1.2 M$``)."""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BeforeValidator, Field

from simnet import units
from simnet.errors import kind_of, shown

__all__ = ["parse_sizes", "parse_cost", "MAX_SIZES", "Size", "PositiveSize"]


Size = Annotated[int, BeforeValidator(units.parse_size), Field(ge=0)]


PositiveSize = Annotated[int, BeforeValidator(units.parse_size), Field(gt=0)]


_RANGE = re.compile(r"^\s*(.+?)\s*\.\.\s*(.+?)\s*x\s*([0-9]+(?:\.[0-9]+)?)\s*$")  # digits 0-9: \d takes any script's


MAX_SIZES = 200
"""Most sizes one scenario may list or a range may make (8 B .. 8 GiB x2 makes 31)."""


def _non_negative_size(text: object) -> int:
    size = units.parse_size(text)
    if size < 0:
        raise ValueError(f"{text!r}: a size cannot be negative")
    return size


def parse_sizes(text: object) -> list[int]:
    """A size, a list of sizes, or an nccl-tests range ``"8 B .. 8 GiB x2"`` (-b/-e/-f).

    >>> parse_sizes("1 KiB .. 4 KiB x2")
    [1024, 2048, 4096]
    """
    if isinstance(text, list):
        if not text:
            raise ValueError("an empty list: give at least one size (e.g. [1 MiB, 1 GiB])")
        if len(text) > MAX_SIZES:
            raise ValueError(f"{len(text):,} sizes, over the {MAX_SIZES} simnet runs in one scenario")
        for item in text:
            if isinstance(item, str) and _RANGE.match(item):
                raise ValueError(f"{item!r} is a range: give it as the whole value (sizes: {item!r}), not in a list")
        sizes = [_non_negative_size(t) for t in text]
        for k, size in enumerate(sizes):
            if size in sizes[:k]:  # one size written twice (1 MiB and 1048576 B) would run once, unsaid
                raise ValueError(f"{text[k]!r} is {units.format_size(size)}, given already as "
                                 f"{text[sizes.index(size)]!r}: give each size once")
        return sizes
    match = _RANGE.match(text) if isinstance(text, str) else None
    if not match and isinstance(text, str) and ".." in text:  # a range written otherwise: not "not a size"
        raise ValueError(f"{text!r}: a range is start .. end and its factor, start <= end (e.g. '8 B .. 8 GiB x2')")
    if not match:
        return [_non_negative_size(text)]
    low, high, factor = units.parse_size(match.group(1)), units.parse_size(match.group(2)), float(match.group(3))
    if factor <= 1 or low <= 0 or high < low:
        raise ValueError(f"{text!r}: a range needs 0 < start <= end and a factor above 1 (e.g. '8 B .. 8 GiB x2')")
    steps = math.floor(math.log(high / low) / math.log(factor) + 1e-9) + 1
    sizes: list[int] = []
    size = float(low)
    while steps <= 10 * MAX_SIZES and size <= high * (1 + 1e-12):  # small sizes may round to one byte count
        if not sizes or int(round(size)) != sizes[-1]:
            sizes.append(int(round(size)))
        size *= factor
    if len(sizes) > MAX_SIZES or not sizes:  # not generated: too many steps to count the sizes they round to
        made = f"makes {len(sizes):,} sizes" if sizes else f"takes {steps:,} steps"
        raise ValueError(f"{text!r} {made}, over the {MAX_SIZES} sizes simnet runs in one scenario; "
                         "use a larger factor (nccl-tests uses x2)")
    return sizes


_COST = re.compile(r"^\s*(\$?)\s*([-+]?[0-9]+(?:\.[0-9]+)?)\s*([kKMG]?)\s*(\$?)\s*$")


_MULTIPLIER = {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}


def parse_cost(text: object) -> float:
    """A cost in currency units, written with its ``$``: ``1.2 M$``, ``$800k``, ``250000 $``
    (a bare number is a quantity without its unit, refused like one).

    >>> parse_cost("1.2 M$"), parse_cost("$800k"), parse_cost("5 $")
    (1200000.0, 800000.0, 5.0)
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        raise ValueError(f"{text} has no currency: write '{text} $', or with k$ or M$ ('1.2 M$')")
    if not isinstance(text, str):
        raise ValueError(f"{shown(text)} is {kind_of(text)}, not a cost (e.g. '1.2 M$', '$800k', '250000 $')")
    match = _COST.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a cost (e.g. '1.2 M$', '$800k', '250000 $')")
    leading, number, multiplier, trailing = match.groups()
    if not (leading or trailing) or (leading and trailing):
        raise ValueError(f"{text!r}: write the cost with one $ ('1.2 M$', '$800k', '250000 $')")
    value = float(number) * _MULTIPLIER[multiplier]
    if not 0 <= value < math.inf:
        raise ValueError(f"{text!r}: a cost is a finite amount, zero or more")
    return value
