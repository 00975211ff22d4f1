"""A scenario's ``options:``: algorithm and engine options (``simnet algorithms`` lists who reads which)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from simnet.schedule.algorithms.hierarchical import INNER_ALGORITHMS
from simnet.spec.values import PositiveSize
from simnet.topology.graph import GROUP_LEVELS
from simnet.topology.schema import Bandwidth, Latency, Strict

__all__ = ["Options"]


class Options(Strict):
    """Algorithm and engine options (see ``simnet algorithms``)."""

    chunk_size: PositiveSize | None = None
    channels: Annotated[int, Field(ge=1, le=64)] | None = None  # NCCL's MAXCHANNELS (v2.30.7 device.h)
    inner: Literal[tuple(INNER_ALGORITHMS)] | None = None  # type: ignore[valid-type]
    group_by: Literal[GROUP_LEVELS] | None = None  # type: ignore[valid-type]
    ps_server: str | list[str] | None = None
    ps_servers: Annotated[int, Field(ge=1)] | None = None
    reduce_bandwidth: Bandwidth | None = None
    message_overhead: Latency | None = None
    pxn: bool | None = None  # all_to_all / send_recv across hosts through the peer's rail (NCCL's default)
    exact: bool | None = None  # never an upper bound: a ring too large to replay exactly runs on the fluid network

    @model_validator(mode="after")
    def _one_way_to_name_servers(self) -> Options:
        if self.ps_server is not None and self.ps_servers is not None:
            raise ValueError("ps_servers: ps_server names the servers (their count is the names'), so a count "
                             "beside it would be ignored; give one or the other")
        return self
