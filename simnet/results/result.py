"""What one simulated collective tells a person, and a scenario's worth of them.

Plain data: times in seconds, sizes in bytes, bandwidths in GB/s = 1e9 B/s as
nccl-tests prints them: ``algbw = size / time`` and ``busbw = algbw * factor``, the factor
the collective's (``2(N-1)/N`` for AllReduce; ``simnet.schedule.kinds``). The numbers
are computed by ``simnet.results.analysis``; ``simnet.report`` turns them into tables, files and
pictures. A collective over one GPU moves nothing: its time is 0 and its bandwidths are
``None`` (not infinite), so JSON never holds ``Infinity``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from simnet.schedule.kinds import collective
from simnet.version import __version__

__all__ = ["LinkReport", "Finding", "Result", "Results"]


@dataclass(frozen=True)
class LinkReport:
    """One directed link's use during a run (fractions of the run's duration or capacity).

    ``capacity_Bps`` is the link's healthy capacity (B/s); utilisation and saturation are
    measured against the capacity in force at each instant, lower while a fault degrades the
    link. ``mean_capacity_Bps`` is that capacity averaged over the run (B/s; equal to
    ``capacity_Bps`` when no fault touched the link), so ``mean_utilization`` is ``bytes``
    over ``mean_capacity_Bps`` times the run's duration.
    """

    src: str
    dst: str
    capacity_Bps: float
    bytes: float
    mean_utilization: float
    peak_utilization: float
    saturated_fraction: float
    port_saturated_fraction: float
    max_flows: int
    mean_capacity_Bps: float

    @property
    def name(self) -> str:
        return f"{self.src}->{self.dst}"


@dataclass(frozen=True)
class Finding:
    """A warning: ``kind`` is ``nic_overload``, ``link_congestion``, ``idle_servers``,
    ``upper_bound`` (the run was too large to replay exactly: its time is an upper bound),
    ``lower_bound`` (under ``model: ideal``, the run was too large to replay exactly: its time
    is a lower bound), ``candidate_upper_bound`` / ``candidate_lower_bound`` (``auto``: another
    algorithm's time is only a bound),
    ``candidate_too_large`` (``auto``: another algorithm too large for the memory was not
    simulated), ``variant_too_large`` (``hierarchical``: one way between groups too large
    for the memory was not simulated),
    ``chunk_size_raised`` (a chunk finer than NCCL's ran as NCCL's), ``channels_capped``
    (``options.channels`` asked NCCL for more channels than it opens: it ran those), ``calibration_unused``
    (``model: ideal`` left a calibration profile out), ``calibration_other_hardware`` (the
    profile was fitted on another machine), ``calibration_other_environment`` (under other NCCL
    variables), ``calibration_capped`` (the profile's bandwidth
    factors would have run a link above its line rate: it ran at line rate),
    ``calibration_shared`` (jobs the profile rates otherwise at their sizes share a link: it ran
    at the highest of their rates), ``gpu_unnamed``
    (GPUs of no named generation, taken by NCCL's model as A100s), ``option_unread`` (an
    option the algorithm does not take),
    ``key_unread`` (a key another key of the scenario makes moot: sigma beside an exponential
    or uniform distribution, a seed of all_to_all traffic, a period with repeat 1),
    ``calibration_replaced`` (the scenario's profile replaces the topology's) or
    ``fault_after_end`` (a fault at or after the run's end, which changed nothing),
    ``fault_unfelt`` (faults that changed nothing: the run's time and every link's bytes,
    and saturation are the healthy run's), ``conditions_faster`` (faults or late GPUs
    made the run end before the healthy run: max-min sharing is not monotone);
    ``link`` the directed link (or node) it is about; ``message`` one line with the remedy."""

    kind: str
    link: str
    message: str


FILLED = 0.01
"""A bottleneck saturated for less of the run than this is not named as one (``Result.filled``):
the table then says none and names the busiest link, and the JSON's ``bottleneck`` is null."""


@dataclass
class Result:
    """One ``collective`` of ``size_bytes`` (nccl-tests' convention) over ``gpus`` ranks with ``algorithm``.

    ``links`` are ordered as the bottleneck ranking: longest saturated first, then busiest
    on average, so ``links[0]`` is the bottleneck and the first few are what plots show.
    """

    algorithm: str
    gpus: int
    size_bytes: int
    time_s: float
    links: list[LinkReport]
    warnings: list[Finding]
    options: dict = field(default_factory=dict)
    model: str = "nccl"  # the performance model: nccl or ideal
    protocol: str | None = None  # LL, LL128 or Simple under the nccl model
    channels: int | None = None  # NCCL channels (ring, tree and their kin)
    nccl_channels: int | None = None  # the channels NCCL runs this collective on (fewer for a small one)
    auto: dict | None = None  # when chosen by ``auto``: NCCL's pick, every candidate's time, the fastest
    variants: dict | None = None  # option -> {value: time_s} simnet tried, keeping the fastest (hierarchical's inner)
    conditions: dict | None = None  # with faults or stragglers: what they cost against the healthy run
    collective: str = "allreduce"  # see simnet.schedule.kinds
    calibration: str | None = None  # the profile that refined the nccl model (its path), if one did
    replay: Any = field(default=None, repr=False, compare=False)  # the timed schedule (traces, plots)

    @property
    def moves_data(self) -> bool:
        """False for a collective over one GPU: nothing to send, no bandwidth to speak of."""
        return self.gpus > 1 and self.time_s > 0

    @property
    def algbw_GBps(self) -> float | None:
        """size / time in GB/s (1e9 B/s); None when nothing moved."""
        return self.size_bytes / self.time_s / 1e9 if self.moves_data else None

    @property
    def busbw_GBps(self) -> float | None:
        """algbw times the collective's factor (2(N-1)/N for AllReduce): nccl-tests' bus
        bandwidth, the per-link rate a ring would need."""
        return self.algbw_GBps * collective(self.collective).busbw_factor(self.gpus) if self.moves_data else None

    @property
    def bottleneck(self) -> LinkReport | None:
        """The link that limited the run most: longest saturated, then busiest on average, then by name."""
        return self.links[0] if self.links else None

    @property
    def filled(self) -> LinkReport | None:
        """The bottleneck where it was saturated at least ``FILLED`` of the run; None where no
        link ever filled (latency or NCCL's ceilings set the pace: the bottleneck is only the
        busiest link)."""
        neck = self.bottleneck
        return neck if neck is not None and neck.saturated_fraction >= FILLED else None

    def to_dict(self) -> dict:
        """The result JSON of one run (with options, bottleneck and auto details)."""
        data = {
            "collective": self.collective, "algorithm": self.algorithm, "gpus": self.gpus,
            "size_bytes": self.size_bytes, "time_s": self.time_s,
            "model": self.model, "protocol": self.protocol, "channels": self.channels,
            "algbw_GBps": self.algbw_GBps, "busbw_GBps": self.busbw_GBps,
            "bottleneck": self.filled.name if self.filled else None,
            "busiest": self.bottleneck.name if self.bottleneck else None,
            "links": [asdict(link) for link in self.links],
            "warnings": [asdict(w) for w in self.warnings],
            "options": {k: v for k, v in self.options.items() if v is not None},
        }
        if self.nccl_channels is not None:
            data["nccl_channels"] = self.nccl_channels
        if self.auto is not None:
            data["auto"] = self.auto
        if self.variants is not None:
            data["variants"] = self.variants
        if self.conditions is not None:
            data["conditions"] = self.conditions
        if self.calibration is not None:
            data["calibration"] = self.calibration
        return data


@dataclass
class Results:
    """The results of a scenario run, in (size, algorithm) order; with a workload, ``steps``
    holds one training-step summary per algorithm (see ``simnet.workloads.ddp.StepModel.summary``)."""

    scenario: str
    runs: list[Result]
    steps: list[dict] = field(default_factory=list)
    training: dict | None = None  # a transformer's training step (simnet.run.training.TrainingStep as a dict)
    skipped: dict[str, str] = field(default_factory=dict)  # algorithms of `all` the topology cannot run: why
    warnings: list[Finding] = field(default_factory=list)  # the scenario's, where no run carries them

    def winners(self) -> dict[int, Result]:
        """The fastest run per size, where there was a choice and data moved."""
        best: dict[int, Result] = {}
        for size in sorted({r.size_bytes for r in self.runs}):
            runs = [r for r in self.runs if r.size_bytes == size and r.moves_data]
            if len(runs) > 1:
                best[size] = min(runs, key=lambda r: r.time_s)
        return best

    def to_dict(self) -> dict:
        """The result JSON: version, scenario and one entry per run."""
        data = {"simnet": __version__, "scenario": self.scenario, "runs": [r.to_dict() for r in self.runs]}
        if self.steps:
            data["steps"] = self.steps
        if self.training is not None:
            data["training"] = self.training
        if self.skipped:
            data["skipped"] = self.skipped
        if self.warnings:
            data["warnings"] = [asdict(w) for w in self.warnings]
        return data

    FLAT_COLUMNS = ("scenario", "algorithm", "ran", "gpus", "size_bytes", "time_s", "algbw_GBps", "busbw_GBps",
                    "model", "protocol", "channels", "bottleneck", "bottleneck_saturated_fraction", "warnings",
                    "collective", "busiest")  # new columns go last: readers by position keep working

    def rows(self) -> list[dict]:
        """One flat dict per run (the CSV and DataFrame rows): ``algorithm`` as asked
        (``auto``), ``ran`` what ran (auto's pick), each warning kind once."""
        rows = []
        for r in self.runs:
            neck = r.bottleneck
            rows.append({"scenario": self.scenario, "collective": r.collective,
                         "algorithm": "auto" if r.auto else r.algorithm,
                         "ran": r.algorithm, "gpus": r.gpus,
                         "size_bytes": r.size_bytes, "time_s": r.time_s, "algbw_GBps": r.algbw_GBps,
                         "busbw_GBps": r.busbw_GBps, "model": r.model, "protocol": r.protocol or "",
                         "channels": r.channels or "", "bottleneck": r.filled.name if r.filled else "",
                         "bottleneck_saturated_fraction": neck.saturated_fraction if neck else 0.0,
                         "busiest": neck.name if neck else "",
                         "warnings": ";".join(dict.fromkeys(w.kind for w in r.warnings))})
        return rows
