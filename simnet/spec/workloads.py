"""A scenario's ``workload:`` (a data-parallel step) and ``training:`` (a transformer's step).

The transformer's shape and parallel layout take their fields from
``simnet.workloads.transformer`` (``Transformer``, ``Parallelism``): one list of fields, each
a count of at least one (or a flag), with the dataclass's defaults."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, create_model, field_validator, model_validator

from simnet import units
from simnet.errors import kind_of, shown
from simnet.spec.values import PositiveSize
from simnet.topology.schema import Count, Latency, Strict
from simnet.units import DTYPE_BYTES
from simnet.workloads.ddp import MAX_BUCKETS
from simnet.workloads.transformer import PRESETS, Parallelism, Transformer

__all__ = ["Workload", "ModelShape", "ParallelismSpec", "Training", "parse_flops"]


FLOP_UNITS = {"FLOP/s": 1.0, "GFLOP/s": 1e9, "TFLOP/s": 1e12, "PFLOP/s": 1e15}
GPU_FLOPS_RANGE = (1e9, 1e18)
"""FLOP/s one GPU may have: 1 GFLOP/s to 1 EFLOP/s (B200's dense BF16 peak is 2.25e15)."""


def parse_flops(text: str) -> float:
    """FLOP/s written as text: ``989 TFLOP/s``, ``989TFLOP/s`` or ``989e12`` (YAML reads that as
    text); ``ValueError`` saying why for anything else.

    >>> parse_flops("989TFLOP/s") == parse_flops("989e12")
    True
    """
    number, unit = re.match(r"\s*([0-9.eE+-]*)\s*(.*?)\s*$", text).groups()
    unit = unit or "FLOP/s"
    if unit not in FLOP_UNITS:
        raise ValueError(f"{text!r}: give FLOP/s as a number or with FLOP/s, GFLOP/s, TFLOP/s or PFLOP/s")
    try:
        return float(number) * FLOP_UNITS[unit]
    except ValueError:
        raise ValueError(f"{text!r} is not a FLOP/s figure (e.g. '989 TFLOP/s')") from None


def _gpu_flops(value: object) -> object:
    """A GPU's FLOP/s: a number (``989e12``) or text with its unit (``989 TFLOP/s``); a bare
    number below 1 GFLOP/s is taken for a figure whose unit was left out (``989``)."""
    written = value
    if isinstance(value, str):
        value = parse_flops(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not (
            GPU_FLOPS_RANGE[0] <= value <= GPU_FLOPS_RANGE[1]):
        if isinstance(written, (int, float)) and 0 < written < GPU_FLOPS_RANGE[0]:  # 989: its unit left out
            raise ValueError(f"{written!r} has no unit: write its unit, e.g. '{written:g} TFLOP/s'")
        raise ValueError(f"{value!r} FLOP/s is outside 1 GFLOP/s to 1 EFLOP/s; with its unit, e.g. '989 TFLOP/s'")
    return value


MAX_SLOWDOWN = 1000
"""Most times longer one GPU may compute than the others (``compute_slowdown``)."""


GpuFlops = Annotated[float, BeforeValidator(_gpu_flops), Field(allow_inf_nan=False)]
"""A GPU's dense peak, FLOP/s (see ``_gpu_flops``)."""


class Workload(Strict):
    """A training step, for iteration time and speedup (used by sweeps)."""

    compute_time: Latency | None = None
    model_flops: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    gpu_flops: GpuFlops | None = None
    gradient_size: PositiveSize | None = None  # a step of no gradient has nothing to exchange (as parameters: 0)
    parameters: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    dtype: Literal["fp32", "fp16", "bf16", "fp8"] = "fp32"
    bucket_size: PositiveSize | None = None
    backward_fraction: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 2 / 3
    compute_slowdown: dict[str, Annotated[float, Field(ge=1, le=MAX_SLOWDOWN, allow_inf_nan=False)]] | None = None

    @field_validator("compute_slowdown", mode="before")
    @classmethod
    def _factors(cls, value):
        """A slowdown is a factor per GPU: how many times longer it computes than the others."""
        if not isinstance(value, dict):
            raise ValueError(f"{shown(value)} is {kind_of(value)}; give each slow GPU how many times longer it "
                             "computes than the others, e.g. {gpu3: 1.2} for 20% slower")
        for gpu, factor in value.items():
            if isinstance(factor, str) and re.fullmatch(r"\s*[0-9.eE+-]+\s*", factor):  # as Strict says it
                raise ValueError(f"{gpu}: {factor!r} is text; write the number without quotes")
            if isinstance(factor, (str, bool)) or (isinstance(factor, (int, float))  # (true said on its GPU, too)
                                                   and not 1 <= factor <= MAX_SLOWDOWN):
                yes_no = " a yes/no," if isinstance(factor, bool) else ""
                raise ValueError(f"{gpu}: {shown(factor)} is{yes_no} not a slowdown; give how many times longer "
                                 f"this GPU computes than the others, a number from 1 (as fast) to {MAX_SLOWDOWN:,}: "
                                 "1.2 for 20% slower")
        return value

    @field_validator("parameters", mode="before")
    @classmethod
    def _a_count(cls, value):
        """Parameters are counted: 1.3e9 is a count, 1.25 none (its gradient was cut to whole bytes)."""
        if isinstance(value, bool) or (isinstance(value, float) and math.isfinite(value) and not value.is_integer()):
            raise ValueError(f"{value!r} is not a count of parameters (a whole number, e.g. 1.3e9)")
        if isinstance(value, str):  # pydantic read "1e6" as a number, where every other is written bare
            raise ValueError(f"{value!r} is text; write the number without quotes")
        return value

    @model_validator(mode="after")
    def _complete(self) -> Workload:
        if self.compute_time is not None and self.compute_time <= 0:
            raise ValueError("compute_time must be positive (the step's compute on one GPU)")
        if self.compute_time is None and (self.model_flops is None or self.gpu_flops is None):
            raise ValueError("give compute_time, or model_flops and gpu_flops")
        if self.compute_time is not None and (self.model_flops is not None or self.gpu_flops is not None):
            raise ValueError("give compute_time, or model_flops and gpu_flops, not both (one would be ignored)")
        if self.compute_time is None and not units.TIME_RANGE[0] <= self.model_flops / self.gpu_flops <= \
                units.TIME_RANGE[1]:  # held to compute_time's own range, 1 ps to a day
            raise ValueError(f"model_flops / gpu_flops is {self.model_flops / self.gpu_flops:.4g} s of compute; a "
                             "step's compute is 1 ps to a day, as compute_time is")
        if self.gradient_size is None and self.parameters is None:
            raise ValueError("give gradient_size, or parameters (and dtype)")
        if self.gradient_size is not None and (self.parameters is not None or "dtype" in self.model_fields_set):
            raise ValueError("give gradient_size, or parameters and dtype, not both (one would be ignored)")

        if "backward_fraction" in self.model_fields_set and self.bucket_size is None:
            raise ValueError("backward_fraction: without bucket_size the gradient is one bucket, AllReduced once "
                             "the backward pass ends, so where the backward pass starts changes nothing; give "
                             "bucket_size (PyTorch DDP's default is 25 MiB)")
        gradient = self.gradient_size if self.gradient_size is not None else self.parameters * DTYPE_BYTES[self.dtype]
        if gradient > units.SIZE_MAX:  # (a gradient_size is a size: parsed within 1 PiB already)
            raise ValueError(f"parameters: {self.parameters:.4g} parameters of {DTYPE_BYTES[self.dtype]} B "
                             f"({self.dtype}) make a gradient of {gradient:.4g} B, over 1 PiB, the largest size simnet "
                             "accepts; give the model's parameter count (e.g. 1.3e9)")
        if self.bucket_size and gradient / self.bucket_size > MAX_BUCKETS:
            raise ValueError(f"bucket_size {units.format_size(self.bucket_size)} cuts the gradient into "
                             f"{math.ceil(gradient / self.bucket_size):,} buckets, over the {MAX_BUCKETS:,} simnet "
                             "steps through (PyTorch DDP's default bucket is 25 MiB)")
        return self

    def document(self) -> dict:
        """This workload as a scenario file states it (times and sizes with their units)."""
        units_of = {"compute_time": " s", "gradient_size": " B", "bucket_size": " B"}
        return {key: f"{value!r}{units_of[key]}" if key in units_of else value
                for key, value in self.model_dump(exclude_none=True, exclude_unset=True).items()}


_FIELD_TYPES = {"int": Count, "int | None": Count | None, "bool": bool}
"""Schema types of the dataclasses' field annotations: counts of at least one, and flags."""


def _schema_of(cls: type, name: str, doc: str, **validators) -> type[Strict]:
    """A strict schema with ``cls``'s dataclass fields (names, defaults), each typed as ``_FIELD_TYPES`` says."""
    fields = {f.name: (_FIELD_TYPES[f.type], ... if f.default is dataclasses.MISSING else f.default)
              for f in dataclasses.fields(cls)}
    return create_model(name, __base__=Strict, __doc__=doc, __validators__=validators, **fields)


def _consistent(shape):
    if shape.hidden % shape.heads:
        raise ValueError(f"heads: {shape.heads} heads do not divide hidden {shape.hidden}")
    if shape.kv_heads is not None and shape.heads % shape.kv_heads:
        raise ValueError(f"kv_heads: {shape.kv_heads} do not divide the {shape.heads} heads")
    if shape.top_k > shape.experts:
        raise ValueError(f"top_k: {shape.top_k} is more than the {shape.experts} experts")
    return shape


ModelShape = _schema_of(Transformer, "ModelShape",
                        "A transformer's shape (``simnet.workloads.transformer.Transformer``).",
                        consistent=model_validator(mode="after")(_consistent))
ParallelismSpec = _schema_of(Parallelism, "ParallelismSpec", "How the GPUs split a training step "
                             "(``simnet.workloads.transformer.Parallelism``).")


class Training(Strict):
    """A transformer's training step under data, tensor, pipeline and expert parallelism."""

    model: ModelShape | str
    parallelism: ParallelismSpec = ParallelismSpec()
    efficiency: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
    gpu_flops: GpuFlops | None = None
    dtype: Literal["bf16", "fp16", "fp8", "fp32"] = "bf16"
    grad_dtype: Literal["bf16", "fp16", "fp32"] = "fp32"

    @field_validator("model")
    @classmethod
    def _preset(cls, value):
        if isinstance(value, str) and value not in PRESETS:
            raise ValueError(f"unknown model {value!r}; expected {', '.join(PRESETS)} or a mapping of layers, hidden, "
                             "heads, ffn, sequence, vocabulary")
        return value

    def transformer(self):
        """The ``simnet.workloads.transformer.Transformer`` this names."""
        return PRESETS[self.model] if isinstance(self.model, str) else Transformer(**self.model.model_dump())

    def layout(self):
        """The ``simnet.workloads.transformer.Parallelism`` this asks for."""
        return Parallelism(**self.parallelism.model_dump())
