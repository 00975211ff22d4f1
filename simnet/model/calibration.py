"""A calibration profile: what ``simnet calibrate`` fitted to a system's own nccl-tests logs.

The NCCL-faithful model's free parameters, each a correction on top of NCCL's published
figures: latency added to the collective's start, to every step inside a node and to
every network step, and factors on every effective rate (and NCCL's ceilings) and on the
network's alone. A topology (or scenario) names its profile with ``calibration:
profile.yaml``; the file looks like::

    calibration:
      base_latency: 6.5 us
      intra_step_latency: 0.3 us
      network_step_latency: 4 us
      bandwidth: {64 KiB: 0.8, 1 MiB: 0.83, 16 MiB: 0.86, 256 MiB: 0.9, 4 GiB: 0.97}   # or one factor
      network_bandwidth: 0.92
    fitted: {...}     # what it was fitted on and how well (written by simnet calibrate),
                      # with the machine (fitted.hardware): a run on another one warns
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, field_validator

from simnet import units
from simnet.io.yamlsource import load_yaml
from simnet.topology.hardware import GPUS, TRANSPORTS
from simnet.topology.schema import Strict

__all__ = ["Calibration", "load_calibration", "calibration_document", "hardware_of", "other_hardware", "KNOTS"]

def _signed_time(value: float) -> float:
    """A profile's latency correction (s) within -1 ms .. 100 ms, said in time units when not."""
    if not -1e-3 <= value <= 1e-1:
        raise ValueError(f"{units.format_time(value)} is outside -1 ms .. 100 ms, the corrections a profile may make")
    return value


SignedTime = Annotated[float, BeforeValidator(units.parse_time), AfterValidator(_signed_time)]
Factor = Annotated[float, Field(gt=0.05, le=2.0, allow_inf_nan=False)]


KNOTS = tuple(2**e for e in (16, 20, 24, 28, 32))
"""Sizes at which a profile states its bandwidth factor: 64 KiB, 1 MiB, 16 MiB, 256 MiB, 4 GiB."""


class _CalibrationSpec(Strict):
    base_latency: SignedTime = 0.0
    intra_step_latency: SignedTime = 0.0
    network_step_latency: SignedTime = 0.0
    bandwidth: Factor | dict[Annotated[int, BeforeValidator(units.parse_size)], Factor] = 1.0
    network_bandwidth: Factor = 1.0

    @field_validator("bandwidth", mode="before")
    @classmethod
    def _some_factor(cls, value):
        if isinstance(value, dict) and not value:
            raise ValueError("an empty mapping; give one factor (0.9) or factors by size ({64 KiB: 0.8, 4 GiB: 0.95})")
        key, text = next(((k, v) for k, v in (value.items() if isinstance(value, dict) else [(None, value)])
                          if isinstance(v, str)), (None, None))
        if text is not None:  # pydantic read "0.9" as 0.9, where every other factor is written bare
            raise ValueError(f"{'' if key is None else f'{key}: '}{text!r} is text; write the factor without quotes "
                             "(e.g. 0.9)")
        for key in value if isinstance(value, dict) else ():
            try:
                size = units.parse_size(key)
            except (ValueError, TypeError) as exc:  # said as the size it is, not as a factor it is not
                raise ValueError(f"key {key!r}: {exc}") from None
            if size < 1:  # read as 1 B (the log of a size), so -1 MiB and 0 B were 1 B without a word
                raise ValueError(f"key {key!r}: a factor is stated at a size of 1 B or more (e.g. 64 KiB)")
        return value


@dataclass(frozen=True)
class Calibration:
    """Corrections to the nccl model (seconds and factors); the default changes nothing.

    ``bandwidth`` is one factor, or factors by message size (``{size in bytes: factor}``,
    interpolated on log size and held flat beyond the ends): real systems lose more of
    NCCL's modelled bandwidth at some sizes than at others.
    """

    base_latency: float = 0.0
    intra_step_latency: float = 0.0
    network_step_latency: float = 0.0
    bandwidth: float | tuple[tuple[int, float], ...] = 1.0
    network_bandwidth: float = 1.0
    source: str | None = field(default=None, compare=False)
    hardware: tuple[tuple[str, object], ...] | None = field(default=None, compare=False)  # ``hardware_of`` its fit
    fitted_env: tuple[tuple[str, str], ...] | None = field(default=None, compare=False)  # NCCL variables of its fit

    def __post_init__(self):
        if isinstance(self.bandwidth, dict):
            object.__setattr__(self, "bandwidth", tuple(sorted(self.bandwidth.items())))

    def bandwidth_at(self, size: int) -> float:
        """The bandwidth factor for a collective of ``size`` bytes."""
        if not isinstance(self.bandwidth, tuple):
            return self.bandwidth
        sizes = np.log2([max(s, 1) for s, _ in self.bandwidth])
        return float(np.interp(np.log2(max(size, 1)), sizes, [f for _, f in self.bandwidth]))

    def refusal(self, name: str, message: str):
        """An ``InputError`` about this profile's field ``name``: its file, line and field
        when it came from a file (one line, as a loader's)."""
        from simnet.errors import InputError

        if self.source is None or not Path(self.source).is_file():
            return InputError(f"calibration.{name}: {message}", self.source)
        return load_yaml(self.source)[1].error(("calibration", name), message)

    @property
    def parameters(self) -> dict[str, float]:
        """The fitted numbers by name (one per size for a bandwidth by size)."""
        values = {k: v for k, v in asdict(self).items() if k not in ("source", "bandwidth", "hardware", "fitted_env")}
        if isinstance(self.bandwidth, tuple):
            values.update({f"bandwidth at {units.format_size(s)}": f for s, f in self.bandwidth})
        else:
            values["bandwidth"] = self.bandwidth
        return values


_GCN_ARCHS = tuple(sorted({gpu.gcn_arch for gpu in GPUS.values() if gpu.gcn_arch}))
"""The AMD GPUs' LLVM targets a profile may name (``hardware.GPU.gcn_arch``)."""


class _HardwareSpec(Strict):
    """``fitted.hardware``, as ``hardware_of`` writes it: numbers in its units (GB/s), no text."""

    compute_capability: int
    nvlink_GBps: Annotated[float, Field(allow_inf_nan=False)]
    gcn_arch: Literal[_GCN_ARCHS] | None = None  # type: ignore[valid-type]
    nic_GBps: Annotated[float, Field(allow_inf_nan=False)] | None = None
    transport: Literal[TRANSPORTS] | None = None  # type: ignore[valid-type]


class _FittedSpec(Strict):
    """``fitted``: what the profile was fitted on (``simnet calibrate``'s or the validation's
    record, read by no one but ``hardware`` and ``nccl_variables``: a run on another machine,
    or under other NCCL variables, is warned of)."""

    hardware: _HardwareSpec | None = None
    topology: str | None = None
    logs: list[str] | None = None
    check: str | None = None
    points: int | list[str] | None = None
    ranks: list[int] | None = None
    held: list[str] | None = None
    at_bound: list[str] | None = None
    nccl_variables: dict[str, str] | None = None
    geomean_error: dict[str, float] | None = None


def hardware_of(topology) -> dict:
    """The machine a profile is fitted on, as NCCL sees one node of it: GPU generation
    (compute capability), NVLink GB/s per GPU, and across nodes the NIC path's GB/s and
    transport; not how many nodes (a profile fitted on two nodes is for predicting more). An
    AMD GPU is told by its LLVM target (``gcn_arch``), its NVLink GB/s being its xGMI links'."""
    from simnet.tuning.search import system_of

    system = system_of(topology)
    machine = {"compute_capability": system.cc, "nvlink_GBps": round(system.nvlink_bw, 1)}
    if system.arch:
        machine["gcn_arch"] = system.arch
    if system.nics:
        machine.update(nic_GBps=round(system.nic_bw, 2), transport=system.transport)
    return machine


def other_hardware(calibration: Calibration, topology) -> str | None:
    """How ``topology``'s machine differs from the one ``calibration`` was fitted on (None:
    alike, or the profile does not say); NIC terms compare only where both have NICs."""
    if calibration.hardware is None:
        return None
    fitted, here = dict(calibration.hardware), hardware_of(topology)
    def alike(key: str) -> bool:  # rates as the profile rounds them (one or two decimals), the rest as written
        return math.isclose(fitted[key], here[key], rel_tol=1e-3) if isinstance(here[key], float) else \
            fitted[key] == here[key]

    differ = [f"{key} {fitted[key]} there, {here[key]} here" for key in fitted if key in here and not alike(key)]
    if "gcn_arch" in fitted and "gcn_arch" not in here:  # an AMD GPU's profile on NVIDIA GPUs
        differ.append(f"gcn_arch {fitted['gcn_arch']} there, an NVIDIA GPU here")
    return "; ".join(differ) or None


def load_calibration(path: str | Path) -> Calibration:
    """A profile file's ``calibration`` section; ``InputError`` naming file, line and field."""
    data, source = load_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("calibration"), dict):
        raise source.error((), "expected a calibration profile: a mapping with a 'calibration' section "
                               "(simnet calibrate writes one)")
    unknown = sorted(set(data) - {"calibration", "fitted"}, key=str)
    if unknown:
        raise source.error((unknown[0],), f"unknown key {unknown[0]!r} in a calibration profile; expected "
                                          "calibration (and fitted, which simnet calibrate writes)")
    if not data["calibration"]:
        raise source.error(("calibration",), "an empty calibration section changes nothing; give the terms "
                                             "simnet calibrate fits, or leave the profile out")
    fitted = data.get("fitted")
    if "fitted" in data and not (isinstance(fitted, dict) and isinstance(fitted.get("hardware", {}), dict)):
        where = ("fitted",) if not isinstance(fitted, dict) else ("fitted", "hardware")
        raise source.error(where, "expected a mapping as simnet calibrate writes it (the machine the profile was "
                                  "fitted on, which a run on another machine is warned of); fix it or leave it out")
    if "fitted" in data:
        try:  # a misspelt hardware would drop the check of the machine without a word, a unit make a false one
            _FittedSpec.model_validate(fitted)
        except ValidationError as exc:
            raise source.from_validation(exc, ("fitted",), _FittedSpec) from None
    _refuse_a_size_twice(data["calibration"].get("bandwidth"), source)
    try:
        spec = _CalibrationSpec.model_validate(data["calibration"])
    except ValidationError as exc:
        raise source.from_validation(exc, ("calibration",), _CalibrationSpec) from None
    machine = fitted.get("hardware") if isinstance(fitted, dict) else None
    hardware = tuple(sorted(machine.items())) if isinstance(machine, dict) else None
    variables = fitted.get("nccl_variables") if isinstance(fitted, dict) else None
    calibration = Calibration(**spec.model_dump(), source=str(path), hardware=hardware,
                              fitted_env=tuple(sorted(variables.items())) if isinstance(variables, dict) else None)
    neutral = Calibration()
    if "fitted" not in data and (calibration == neutral or (isinstance(calibration.bandwidth, tuple) and all(
            factor == 1.0 for _, factor in calibration.bandwidth) and replace(calibration, bandwidth=1.0) == neutral)):
        # (written by hand; simnet calibrate's own, fitted: beside it, may find nothing to correct)
        raise source.error(("calibration",), "every term of this calibration section is the one that changes "
                                             "nothing (latencies 0 s, factors 1), so it changes nothing; give the "
                                             "terms simnet calibrate fits, or leave the profile out")
    return calibration


def _refuse_a_size_twice(bandwidth, source) -> None:
    """One line for two keys of ``bandwidth:`` that are one size (``64 KiB`` and ``65536 B``):
    the second replaced the first without a word, as a duplicate key the YAML reader refuses."""
    if not isinstance(bandwidth, dict):
        return
    seen: dict[int, object] = {}
    for key in bandwidth:
        try:
            size = units.parse_size(key)
        except (ValueError, TypeError):
            continue  # not a size: the schema says so, with its line
        if size in seen:
            first = seen[size]
            raise source.error(("calibration", "bandwidth", key), (
                f"duplicate size: {key!r} is {units.format_size(size)}, as {first!r} (line "
                f"{source.line(('calibration', 'bandwidth', first))}) is; give each size one factor"))
        seen[size] = key


def calibration_document(calibration: Calibration, fitted: dict, topology=None) -> dict:
    """The YAML document of a profile: the parameters with units, and how they were fitted
    (with ``topology``, the machine it was fitted on: ``hardware_of``)."""
    if topology is not None:
        fitted = {**fitted, "hardware": hardware_of(topology)}
    p = calibration
    bandwidth = ({units.format_size(s): round(f, 4) for s, f in p.bandwidth} if isinstance(p.bandwidth, tuple)
                 else round(p.bandwidth, 4))
    return {"calibration": {
        "base_latency": f"{p.base_latency * 1e6:.4g} us",
        "intra_step_latency": f"{p.intra_step_latency * 1e6:.4g} us",
        "network_step_latency": f"{p.network_step_latency * 1e6:.4g} us",
        "bandwidth": bandwidth,
        "network_bandwidth": round(p.network_bandwidth, 4)},
        "fitted": fitted}
