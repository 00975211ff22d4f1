"""The topology YAML schema, validated with pydantic.

Quantities are strings with mandatory units (see ``simnet.units``) and become SI floats
here: bandwidth in bytes/s per direction, latency in seconds one way.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from simnet import units
from simnet.topology.hardware import GPU_NAMES, LINK_TYPES, TRANSPORTS

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


GpuName = Literal[GPU_NAMES]  # type: ignore[valid-type]
Transport = Literal[TRANSPORTS]  # type: ignore[valid-type]
LinkType = Literal[LINK_TYPES]  # type: ignore[valid-type]

_ONLY_ON = {"gpu": "gpu", "transport": "nic", "net_latency": "nic", "nvls": "switch", "sharp": "switch"}


class NodeSpec(Strict):
    """One vertex: a GPU (a rank), a switch, a NIC, a host bridge or a parameter server.

    Hardware attributes: ``gpu`` (generation, on GPUs), ``transport`` and ``net_latency``
    (what the NIC's transport adds to every network step) on NICs, ``nvls`` (an NVSwitch that
    reduces and multicasts: NVLink SHARP) and ``sharp`` (a network switch that reduces:
    SHARP) on switches.
    """

    id: Annotated[str, Field(min_length=1)]
    kind: NodeKind
    host: str | None = None
    rack: str | None = None
    region: str | None = None
    rank: Annotated[int, Field(ge=0, strict=True)] | None = None
    gpu: GpuName | None = None
    transport: Transport | None = None
    net_latency: Latency | None = None  # software latency the NIC's transport adds per network step
    nvls: bool | None = None
    sharp: bool | None = None

    @model_validator(mode="after")
    def _attributes_fit_the_kind(self) -> NodeSpec:
        for attribute, kind in _ONLY_ON.items():
            if getattr(self, attribute) is not None and self.kind != kind:
                raise ValueError(f"{attribute}: only a {kind} has one; {self.id!r} is a {self.kind}")
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

    name: Annotated[str, Field(min_length=1)]
    description: str = ""
    generate: dict[str, Any] | list[dict[str, Any]] | None = None
    nodes: list[NodeSpec] = []
    links: list[LinkSpec] = []
    calibration: str | None = None  # a profile from simnet calibrate, relative to this file
    routing: Literal["ecmp", "by_destination"] = "ecmp"  # how equal-cost paths are chosen (simnet.topology.routing)
