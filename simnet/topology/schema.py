"""The topology YAML schema, validated with pydantic.

Quantities are strings with mandatory units (see ``simnet.units``) and become SI floats
here: bandwidth in bytes/s per direction, latency in seconds one way.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from simnet import units

NodeKind = Literal["gpu", "switch", "nic", "host", "ps"]


def _positive(value: float) -> float:
    if value <= 0:
        raise ValueError("must be positive")
    return value


def _non_negative(value: float) -> float:
    if value < 0:
        raise ValueError("must not be negative")
    return value


Bandwidth = Annotated[float, BeforeValidator(units.parse_bandwidth), AfterValidator(_positive)]
"""A bandwidth per direction in bytes/s, written with a unit (``"400 Gb/s"``)."""
Latency = Annotated[float, BeforeValidator(units.parse_time), AfterValidator(_non_negative)]
"""A one-way latency in seconds, written with a unit (``"1.5 us"``)."""
Count = Annotated[int, Field(ge=1)]


class Strict(BaseModel):
    """Unknown keys are mistakes, not extensions."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NodeSpec(Strict):
    """One vertex: a GPU (a rank), a switch, a NIC, a host bridge or a parameter server."""

    id: Annotated[str, Field(min_length=1)]
    kind: NodeKind
    host: str | None = None
    rack: str | None = None
    region: str | None = None
    rank: Annotated[int, Field(ge=0)] | None = None


class LinkSpec(Strict):
    """A full-duplex link (or one direction with ``directed: true``)."""

    a: str
    b: str
    bandwidth: Bandwidth
    latency: Latency
    directed: bool = False


class TopologySpec(Strict):
    """The whole file; ``generate`` is validated per generator in ``generators``."""

    name: Annotated[str, Field(min_length=1)]
    description: str = ""
    generate: dict[str, Any] | list[dict[str, Any]] | None = None
    nodes: list[NodeSpec] = []
    links: list[LinkSpec] = []
