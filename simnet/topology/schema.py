"""The topology YAML schema, validated with pydantic.

Quantities are strings with mandatory units (see ``simnet.units``) and become SI floats
here: bandwidth in bytes/s per direction, latency in seconds one way.
"""

from __future__ import annotations

import functools
import re
import typing
import unicodedata
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from simnet import units
from simnet.topology.hardware import GPU_NAMES, LINK_TYPES, TRANSPORTS

NodeKind = Literal["gpu", "switch", "nic", "host", "ps"]


def _positive(value: float) -> float:
    if value <= 0:
        raise ValueError("must be positive")
    return value


def _unprintable(c: str) -> bool:
    """A control character (C0, DEL and C1: ``\\x9b`` is a terminal's CSI, as ESC [ is), a line
    or paragraph separator (it breaks a one-line message), or U+FFFE/U+FFFF, which XML 1.0
    cannot hold (a GraphML export of it did not parse)."""
    return unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in "\ufffe\uffff"


def _printable(value: str) -> str:
    """A name without control characters (tab, newline, NUL...): XML (GraphML, GEXF) cannot hold them."""
    bad = next((c for c in value if _unprintable(c)), None)
    if bad is not None:
        raise ValueError(f"holds the control character {bad!r}; names are printable text")
    return value


def _trimmed(value: str) -> str:
    """A name with no space at either end: names are compared as written, so 'a ' beside 'a'
    would be two jobs (or nodes, variants) that every table shows alike; '   ' names nothing.
    An invisible character (a zero-width space, U+200B: Unicode's format characters) counts as
    a space here."""
    def blank(c: str) -> bool:
        return c.isspace() or unicodedata.category(c) == "Cf"

    if value and (blank(value[0]) or blank(value[-1])):
        edge = value[0] if blank(value[0]) else value[-1]
        raise ValueError(f"{value!r} " + (
            ("is only spaces" if not value.strip() else "shows nothing (invisible characters only)") + "; give it "
            "a name" if all(map(blank, value)) else
            ("has a space" if edge.isspace() else f"has an invisible character (U+{ord(edge):04X})") +
            " at its start or end; names are compared as written: remove it"))
    return value


Name = Annotated[str, Field(min_length=1), AfterValidator(_printable), AfterValidator(_trimmed)]
Label = Annotated[str, AfterValidator(_printable)]


def _non_negative(value: float) -> float:
    if value < 0:
        raise ValueError("must not be negative")
    return value


Bandwidth = Annotated[float, BeforeValidator(units.parse_bandwidth), AfterValidator(_positive)]
"""A bandwidth per direction in bytes/s, written with a unit (``"400 Gb/s"``)."""
Latency = Annotated[float, BeforeValidator(units.parse_time), AfterValidator(_non_negative)]
"""A one-way latency in seconds, written with a unit (``"1.5 us"``)."""
Count = Annotated[int, Field(ge=1)]


def _numeric(annotation: Any) -> bool:
    """Whether ``annotation`` takes numbers only (int, float, optionally None)."""
    if annotation in (int, float):
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _numeric(get_args(annotation)[0])
    if origin in (Union, UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return bool(args) and all(_numeric(a) for a in args)
    return False


def _takes_yes_no(annotation: Any) -> bool:
    """Whether ``annotation`` accepts a yes/no: bool, Any, or a Literal of one."""
    if annotation in (bool, Any):
        return True
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _takes_yes_no(args[0])
    if origin in (Union, UnionType):
        return any(_takes_yes_no(a) for a in args)
    return origin is Literal and any(isinstance(a, bool) for a in args)


def _yes_no_as_number(annotation: Any, value: Any) -> bool:
    """Whether ``value`` puts a YAML yes/no where ``annotation`` wants a number (also
    inside a mapping or list of numbers)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _yes_no_as_number(args[0], value)
    if isinstance(value, bool):
        if origin in (Union, UnionType):  # refused where an alternative takes a number and none a yes/no
            takes = [a for a in args if a is not type(None)]
            return any(_numeric(a) for a in takes) and not any(_takes_yes_no(a) for a in takes)
        return _numeric(annotation)
    if origin in (Union, UnionType):
        return any(_yes_no_as_number(a, value) for a in args if get_origin(a) in (dict, list))
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return any(_yes_no_as_number(args[1], v) for v in value.values())
    if origin is list and isinstance(value, list) and args:
        return any(_yes_no_as_number(args[0], v) for v in value)
    return False


def _holds_numbers(annotation: Any) -> bool:
    """Whether a number may sit anywhere in ``annotation`` (through unions, mappings, lists)."""
    return _numeric(annotation) or any(_holds_numbers(a) for a in get_args(annotation)
                                       if get_origin(annotation) in (Annotated, Union, UnionType, dict, list))


@functools.cache
def _number_field(model: type, name: str) -> bool:
    """``_holds_numbers`` of a model's field, worked out once per field (validation is per value)."""
    return _holds_numbers(model.model_fields[name].annotation)


def _plain(annotation: Any) -> type | None:
    """``int`` or ``bool`` when a field takes exactly that as written, with no parser of text
    in front of it (a unit's ``BeforeValidator``); else None."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return None if any(isinstance(m, BeforeValidator) for m in args[1:]) else _plain(args[0])
    if origin in (Union, UnionType):
        rest = [a for a in args if a is not type(None)]
        return _plain(rest[0]) if len(rest) == 1 else None
    return annotation if annotation in (int, bool) else None


def _takes_text(annotation: Any) -> bool:
    """Whether ``annotation`` reads text: str, Any, a Literal of text, a model, or a type
    with a parser of text in front of it (a unit's ``BeforeValidator``)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return any(isinstance(m, BeforeValidator) for m in args[1:]) or _takes_text(args[0])
    if origin in (Union, UnionType):
        return any(_takes_text(a) for a in args)
    if origin is Literal:
        return any(isinstance(a, str) for a in args)
    return annotation in (str, Any) or (isinstance(annotation, type) and issubclass(annotation, BaseModel))


def _text_as_number(annotation: Any, value: Any) -> Any:
    """The text in ``value`` that stands where ``annotation`` takes a number and no text
    (``"0.5"`` for an efficiency; also a value of a mapping or list of numbers), or None."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return None if any(isinstance(m, BeforeValidator) for m in args[1:]) else _text_as_number(args[0], value)
    if isinstance(value, str):
        takes = [a for a in args if a is not type(None)] if origin in (Union, UnionType) else [annotation]
        return value if any(_numeric(a) for a in takes) and not any(_takes_text(a) for a in takes) else None
    if origin in (Union, UnionType):
        return next((t for a in args if get_origin(a) in (dict, list) for t in [_text_as_number(a, value)]
                     if t is not None), None)
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return next((t for v in value.values() for t in [_text_as_number(args[1], v)] if t is not None), None)
    if origin is list and isinstance(value, list) and args:
        return next((t for v in value for t in [_text_as_number(args[0], v)] if t is not None), None)
    return None


def _looks_like(text: str, kind: type) -> bool:
    """Whether ``text`` is a number of ``kind`` written in ASCII (``"4"``, ``"0.5"``), that is
    one in quotes; not ``0o1``, ``0x10`` or ``８`` (another script's digit), which are no number
    as the file writes numbers, quoted or not."""
    pattern = r"[+-]?[0-9]+" if kind is int else r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"
    return re.fullmatch(pattern, text.strip()) is not None


_QUANTITIES = {units.parse_time: "a time; give one with its unit (e.g. '1.5 us')",
               units.parse_bandwidth: "a bandwidth; give one with its unit (e.g. '400 Gb/s')",
               units.parse_size: "a size; give one with its unit (e.g. '64 MiB')"}


def _quantity(annotation: Any, metadata: tuple | list = ()) -> str | None:
    """A time, bandwidth or size with its unit, in words, where a unit's parser reads the
    field (in ``metadata``, or inside ``Annotated``, ``X | None``); None for a plain number."""
    for meta in (*metadata, *getattr(annotation, "__metadata__", ())):
        if isinstance(meta, BeforeValidator) and meta.func in _QUANTITIES:
            return _QUANTITIES[meta.func]
    inner = typing.get_args(annotation)
    if typing.get_origin(annotation) is dict:  # a mapping's values are what it holds (its keys, their names)
        inner = inner[1:]
    return next(filter(None, map(_quantity, inner)), None)


@functools.cache
def _reads_text_itself(model: type, name: str) -> bool:
    """Whether a field parses its own text: a unit's ``BeforeValidator`` on it, or a
    ``mode="before"`` validator of its model's own for it (a size's ``parse_size``)."""
    if any(isinstance(m, BeforeValidator) for m in model.model_fields[name].metadata):
        return True
    return any(d.info.mode == "before" and name in d.info.fields
               for d in model.__pydantic_decorators__.field_validators.values())


@functools.cache
def _plain_field(model: type, name: str) -> type | None:
    """``_plain`` of a model's field, worked out once per field (pydantic keeps a top-level
    ``Annotated``'s validators in the field's metadata)."""
    field = model.model_fields[name]
    return None if any(isinstance(m, BeforeValidator) for m in field.metadata) else _plain(field.annotation)


_YAML11_BOOLS = frozenset({"yes", "no", "on", "off", "y", "n"})
"""Words YAML 1.1 read as a yes/no; simnet reads YAML 1.2, where they are text."""


class Strict(BaseModel):
    """Unknown keys are mistakes, not extensions; a yes/no (``true``) is no number, where
    pydantic would read it as 1; a count is a whole number as written (not the text ``"4"``,
    not ``4.0``) and a yes/no is ``true`` or ``false`` (not ``"no"``, not 1), where pydantic
    would convert them."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_yes_no_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, (bool, dict, list)) and _number_field(cls, info.field_name) and \
                _yes_no_as_number(cls.model_fields[info.field_name].annotation, value):
            field = cls.model_fields[info.field_name]  # (pydantic keeps a bare Annotated's validators in metadata)
            wanted = _quantity(field.annotation, field.metadata) or "a number; give a number"
            raise ValueError(f"a yes/no (true, false) is not {wanted}")
        plain = _plain_field(cls, info.field_name) if value is not None else None
        if plain is int and not isinstance(value, int):
            if isinstance(value, str):
                raise ValueError(f"{value!r} is text; write the whole number without quotes" if _looks_like(value, int)
                                 else f"{value!r} is not a whole number; write one in the digits 0-9 (e.g. 8)")
            if isinstance(value, float):
                raise ValueError(f"{value!r} is not a whole number as written; write {int(value)}"
                                 if value.is_integer() and abs(value) < 2**53 else  # (beyond: no number as typed)
                                 f"{value!r} is not a whole number as written; write one in the digits 0-9"
                                 if value.is_integer() else f"{value!r} is not a whole number")
        if plain is bool and not isinstance(value, bool):
            raise ValueError(f"{value!r} is text, not a yes/no (only true and false are); write true or false"
                             if isinstance(value, str) and value.lower() in _YAML11_BOOLS
                             else f"{value!r} is not a yes/no; write true or false")
        if isinstance(value, (str, dict, list)) and _number_field(cls, info.field_name) and \
                not _reads_text_itself(cls, info.field_name):
            text = _text_as_number(cls.model_fields[info.field_name].annotation, value)
            if text is not None:  # pydantic read "0.5" as 0.5, where every other number is written bare
                raise ValueError(f"{text!r} is text; write the number without quotes" if _looks_like(text, float)
                                 else f"{text!r} is not a number; write one in the digits 0-9 (e.g. 0.5)")
        return value


GpuName = Literal[GPU_NAMES]  # type: ignore[valid-type]
Transport = Literal[TRANSPORTS]  # type: ignore[valid-type]
LinkType = Literal[LINK_TYPES]  # type: ignore[valid-type]

_ONLY_ON = {"gpu": ("gpu",), "transport": ("nic", "gpu"), "net_latency": ("nic", "gpu"), "nvls": ("switch",),
            "sharp": ("switch",)}
"""Which kinds of node may carry each attribute (a GPU's transport: one cabled straight to the network)."""


class NodeSpec(Strict):
    """One vertex: a GPU (a rank), a switch, a NIC, a host bridge or a parameter server.

    Hardware attributes: ``gpu`` (generation, on GPUs), ``transport`` and ``net_latency``
    (what the NIC's transport adds to every network step) on NICs and on GPUs cabled
    straight to a network switch (each its own NIC), ``nvls`` (an NVSwitch that
    reduces and multicasts: NVLink SHARP) and ``sharp`` (a network switch that reduces:
    SHARP) on switches.
    """

    id: Name
    kind: NodeKind
    host: Name | None = None  # an empty label would make every such node a place of its own
    rack: Name | None = None
    region: Name | None = None
    rank: Annotated[int, Field(ge=0, strict=True)] | None = None
    gpu: GpuName | None = None
    transport: Transport | None = None
    net_latency: Latency | None = None  # software latency the NIC's transport adds per network step
    nvls: bool | None = None
    sharp: bool | None = None

    @model_validator(mode="after")
    def _attributes_fit_the_kind(self) -> NodeSpec:
        for attribute, kinds in _ONLY_ON.items():
            if getattr(self, attribute) is not None and self.kind not in kinds:
                only = f"a {kinds[0]}" if len(kinds) == 1 else "a NIC, or a GPU cabled straight to the network,"
                raise ValueError(f"{attribute}: only {only} has one; {self.id!r} is a {self.kind}")
        return self


class LinkSpec(Strict):
    """A full-duplex link (or one direction with ``directed: true``)."""

    a: str
    b: str
    bandwidth: Bandwidth
    latency: Latency
    directed: bool = False
    type: LinkType | None = None  # nvlink, pcie or net; inferred from the ends when not given


class TopologySpec(Strict):
    """The whole file; ``generate`` is validated per generator in ``generators``."""

    name: Name
    description: str = ""
    generate: dict[str, Any] | Annotated[list[dict[str, Any]], Field(min_length=1)] | None = None
    nodes: list[NodeSpec] = []
    links: list[LinkSpec] = []
    calibration: Name | None = None  # a profile from simnet calibrate, relative to this file
    # how equal-cost paths are chosen (simnet.topology.routing); None: the fabric's default (loader.default_routing)
    routing: Literal["ecmp", "by_destination"] | None = None
