"""One point of a run: a collective on one set of GPUs under one model, and how it is simulated.

``Setup`` holds what every run of one ``simulate`` call shares (ranks, collective, model,
NCCL environment, calibration) and runs an algorithm or ``auto`` (NCCL's pick beside every
candidate it could run); ``Conditions`` are the faults and straggler delays resolved on the
topology. The Python API's argument checks (``checked_size``, ``checked_options``) live here
too, so every entry point reads sizes and options as a scenario does.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from simnet import units
from simnet.engine.faults import Fault, over_before_the_cut
from simnet.engine.lanes import MAX_EXACT, replay_lanes, worth_replaying
from simnet.engine.replay import join_gates, replay
from simnet.errors import EnvironmentRefused, Unsupported
from simnet.io.budget import TooLarge, fits, gigabytes, in_gb
from simnet.io.yamlsource import Source
from simnet.model.calibration import Calibration, load_calibration, other_hardware
from simnet.model.interface import lane_timing, resolve_model
from simnet.model.interface import plan as model_plan
from simnet.model.interface import timing as model_timing
from simnet.model.nccl import fitted_capacity
from simnet.results.analysis import after_end, find_warnings, link_reports
from simnet.results.result import Finding, Result
from simnet.run.nccl_env import nccl_default, nccl_integer, nccl_system, turned_off
from simnet.schedule.catalog import algorithms_for, build_program, build_schedule
from simnet.schedule.kinds import collective as lookup_collective
from simnet.schedule.registry import ENGINE_OPTIONS
from simnet.schedule.transfers import count_transfers, transfer_bytes
from simnet.spec.conditions import check_reachable, resolve_faults, straggler_delays
from simnet.spec.options import Options
from simnet.topology.graph import PS_PER_SECOND, Topology
from simnet.topology.hardware import GPU_NAMES, GPUS, NCCL_FALLBACK_NVLINK_EFFICIENCY, NET, UNNAMED_GPU_CC
from simnet.tuning import predict, rccl, search, tables

SAME_TIME = 0.01
"""Times within 1 % of each other count as equal: the model cannot tell them apart, so
``auto`` names no faster algorithm than its pick and compare's Pareto front takes the cheaper."""

__all__ = ["Setup", "Conditions", "SAME_TIME", "fastest_of", "checked_size", "checked_options", "HIERARCHICAL_VARIANTS",
           "calibration_of", "foreign_calibration", "factor_cut_by_the_wire"]


def fastest_of(times: Mapping[str, float], pick: str) -> str:
    """The fastest of ``times`` (s, by algorithm), or ``pick`` when it is within ``SAME_TIME`` of it.

    >>> fastest_of({"nvls": 1.009, "ring": 1.0}, "nvls"), fastest_of({"nvls": 1.02, "ring": 1.0}, "nvls")
    ('nvls', 'ring')
    """
    fastest = min(times, key=times.__getitem__)
    return pick if times[pick] <= times[fastest] * (1 + SAME_TIME) else fastest


def _whole(value: object) -> int | None:
    """``value`` as an int when it is a whole number (int, numpy integer, integral float), else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    return int(value) if math.isfinite(value) and float(value).is_integer() else None


def checked_size(size: object) -> int:
    """``size`` in whole bytes, 0 to 1 PiB: a number of bytes, or text such as ``'1 GiB'``."""
    if isinstance(size, str):
        return units.parse_size(size)
    whole = _whole(size)
    if whole is None:
        raise ValueError(f"size: {size!r} is not a whole number of bytes (an int, or text such as '1 GiB')")
    if whole < 0:
        raise ValueError(f"size: {whole} bytes; a size cannot be negative")
    if whole > units.SIZE_MAX:
        raise ValueError(f"size: {whole} bytes is over simnet's limit of 1 PiB")
    return whole


_API_NUMBERS = {"chunk_size": ("B", "a whole number of bytes above 0"),
                "reduce_bandwidth": ("B/s", "a finite rate above 0 B/s"),
                "message_overhead": ("s", "a finite time of 0 s or more")}
"""Options the Python API also takes as bare numbers: their unit, and what a number must be."""


def checked_options(options: dict) -> dict:
    """``options`` checked and read as a scenario's are (``'1 MiB'`` or bytes for chunks,
    ``channels`` 1 to 64, ...); ``ValueError`` naming the first bad one."""
    from pydantic import ValidationError

    given = {k: v for k, v in options.items() if v is not None}
    for key, (unit, wanted) in _API_NUMBERS.items():
        value = given.get(key)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            continue
        number = float(value)
        bad = not math.isfinite(number) or number < 0 or (key != "message_overhead" and number == 0) or (
            key == "chunk_size" and _whole(value) is None)
        if bad:
            raise ValueError(f"{key}: {value!r} is not {wanted}")
        given[key] = f"{_whole(value)} {unit}" if key == "chunk_size" else f"{number!r} {unit}"
    try:
        checked = Options.model_validate(given).model_dump(exclude_none=True)
    except ValidationError as exc:
        raise ValueError(Source("<options>").from_validation(exc, model=Options).message) from None
    return {**options, **checked}


def factor_cut_by_the_wire(topo: Topology, fit: Calibration, size: int, filled: np.ndarray,
                           what: str = "this run") -> list[Finding]:
    """``calibration_capped`` where the profile's bandwidth factors at ``size`` bytes would have
    run a link that ``filled`` (mask by link: saturated some of the run) above its line rate:
    it filled at line rate instead, so the factor counted only up to it there."""
    fitted = fitted_capacity(topo, fit, size)
    cut = np.flatnonzero(filled & (fitted > topo.capacity))
    if not len(cut):
        return []
    worst = cut[np.argmax(fitted[cut] / topo.capacity[cut])]
    src, dst = topo.links[worst]
    factors = [f"{name} {factor:.3g}x" for name, factor, counts in (
        ("bandwidth", fit.bandwidth_at(size), True),
        ("network_bandwidth", fit.network_bandwidth, topo.link_type[worst] == NET)) if counts and factor != 1.0]
    profile = f"the calibration profile {fit.source}" if fit.source else "the calibration"
    links = f"{len(cut)} links" if len(cut) > 1 else "a link"
    return [Finding("calibration_capped", f"{src}->{dst}", (
        f"{profile}'s {' and '.join(factors)} at {units.format_size(size)} would have run {links} of {what} above "
        f"line rate ({src}->{dst}: {units.format_bandwidth(fitted[worst])} against its "
        f"{units.format_bandwidth(topo.capacity[worst])}), and {'they' if len(cut) > 1 else 'it'} filled: a link "
        "runs at most at line rate, so there the factor counted only up to it"))]


def foreign_calibration(fit: Calibration | None, topo: Topology, env: Mapping[str, str]) -> list[Finding]:
    """``calibration_other_hardware`` where the profile ``fit`` was fitted on another
    machine than ``topo``'s (``other_hardware``), ``calibration_other_environment`` where
    under other NCCL (RCCL) variables than the run's ``env``; else nothing."""
    differ = other_hardware(fit, topo) if fit else None
    said = [Finding("calibration_other_hardware", "", (
        f"the calibration profile {fit.source or ''} was fitted on another machine ({differ}): its "
        "corrections may not hold here; fit one on this machine's logs (simnet calibrate)"))] if differ else []
    if fit is not None and fit.fitted_env is not None and dict(fit.fitted_env) != dict(env):
        fitted, here = (", ".join(f"{k}={v}" for k, v in sorted(dict(variables).items())) or "none"
                        for variables in (fit.fitted_env, env))
        said.append(Finding("calibration_other_environment", "", (
            f"the calibration profile {fit.source or ''} was fitted under NCCL variables {fitted}, this run has "
            f"{here}: its corrections are of the runs they made (NCCL's picks, protocols and channels), and may not "
            "hold here")))
    return said


@dataclass(frozen=True)
class Conditions:
    """Faults and straggler delays resolved against one topology."""

    faults: tuple[Fault, ...] = ()
    delays: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, topo: Topology, faults: list | None, stragglers: Mapping | None,
           servers: list[str] | None = None) -> Conditions:
        """``faults`` and ``stragglers`` resolved on ``topo``; every GPU and the parameter
        ``servers`` the run uses (default: every one) must reach the others under the faults."""
        resolved = tuple(resolve_faults(topo, [f for f in faults or [] if not isinstance(f, Fault)]))
        resolved = tuple(sorted([*resolved, *(f for f in faults or [] if isinstance(f, Fault))], key=lambda f: f.at))
        if resolved:
            ends = topo.parameter_servers if servers is None else [s for s in servers if s not in set(topo.gpus)]
            check_reachable(topo, list(resolved), topo.gpus + ends)
        delays = straggler_delays(topo, stragglers)
        return cls(resolved, {gpu: d for gpu, d in delays.items() if d > 0})

    def __bool__(self) -> bool:
        return bool(self.faults or self.delays)

    def impact(self, result: Result, healthy_s: float) -> dict:
        """What the conditions cost: time against the healthy run, what moved, delays absorbed."""
        run = result.replay
        worst = max(self.delays.values(), default=0.0)
        slower = round((result.time_s - healthy_s) * PS_PER_SECOND) / PS_PER_SECOND  # to the engine's 1 ps
        return {
            "healthy_s": healthy_s, "slowdown_s": slower, "slowdown": result.time_s / healthy_s if healthy_s else None,
            "faults": [{"at_s": f.at, "what": f.what, "links": len(f.links)} for f in self.faults],
            "rerouted_flows": run.rerouted if run is not None else 0,
            "rerouted_bytes": run.rerouted_bytes if run is not None else 0.0,
            "stragglers": len(self.delays), "max_delay_s": worst,
            "mean_delay_s": sum(self.delays.values()) / result.gpus if self.delays else 0.0,
            # all of the delay at most: a run the delays made faster (conditions_faster) absorbed all of it
            "absorbed_s": min(max(round((worst - slower) * PS_PER_SECOND) / PS_PER_SECOND, 0.0), worst)  # 3e-21 s: 0
            if self.delays and not self.faults else None,
        }


def _moved_nothing(options: dict, why: str) -> list[Finding]:
    """``option_unread`` of each option given to a run that exchanges nothing (``why``)."""
    return [Finding("option_unread", f"options.{name}", f"options.{name} changed nothing here: {why} (time 0)")
            for name, value in options.items() if value is not None]


def _judged_apart(result: Result) -> Result:
    """A named run's result as ``auto``'s pick: without what it says changed nothing of
    itself (``key_unread``, ``option_unread``), which says nothing of auto, whose pick and
    candidates the same variable or option may move: ``simulate`` judges auto's own."""
    return replace(result, warnings=[w for w in result.warnings if w.kind not in ("key_unread", "option_unread")])


def _timed(choice: predict.Choice) -> list[str]:
    """The algorithms NCCL's tuner timed for ``choice`` (NCCL's names, in its order): ``auto``'s
    candidates."""
    timed = {algorithm for algorithm, _ in choice.table}
    return [a for a in tables.ALGORITHMS if a in timed]


def _needs(exc: TooLarge) -> str:
    """What a ``TooLarge`` says the run needs, against the budget, in a few words."""
    if exc.stopped:  # its count stopped at the budget: the need is unknown beyond it
        return f"more than the {in_gb(exc.budget)} GB simnet may use here (SIMNET_MEMORY)"
    need, have = gigabytes(exc.needed, exc.budget)
    return f"~{need} GB, more than the {have} GB simnet may use here (SIMNET_MEMORY)"


def _joined(timing, program, delays: Mapping[str, float]):
    """``timing`` with each lane held until both its ends have joined (``delays``: s per
    GPU), as the fluid engine holds each transfer (``simnet.engine.replay``)."""
    if not delays:
        return timing
    gate = join_gates(program.nodes, program.src, program.dst, dict(delays))
    return replace(timing, start_ps=np.asarray(timing.start_ps, dtype=np.int64) + gate)


@dataclass(frozen=True)
class Setup:
    """What every run of one ``simulate`` call shares: the ranks, the collective and the model;
    and the last lane program it built with its timing, which the run under faults or
    stragglers and its healthy comparison share (``replace`` gives a Setup of its own)."""

    topo: Topology
    collective: str
    model: str | None  # None: the GPUs' library's; resolved on creation (nccl, rccl or ideal)
    env: dict
    calibration: Calibration | None
    _programs: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def program(self, algorithm: str, size: int, options: dict) -> tuple:
        """``(plan, program, lane timing)``: the model's ``plan`` for ``algorithm`` at ``size``
        bytes with ``options``, the lane program it builds (``build_program``; None where the
        algorithm is no lane program) and its ``lane_timing``; the next run of the same
        algorithm, size and options takes all three as built (only the last is kept: a large
        program is no larger a burden than while it ran)."""
        key = (algorithm, size, repr(sorted(options.items())))
        if key not in self._programs:
            self._programs.clear()
            decided = self.plan(algorithm, size, options)
            program = build_program(algorithm, self.topo, size, collective=self.collective, **decided.options)
            self._programs[key] = decided, program, None if program is None else lane_timing(decided, program,
                                                                                              self.topo)
        return self._programs[key]

    def __post_init__(self):
        object.__setattr__(self, "model", resolve_model(self.model, self.topo))
        unmodelled = next((name for name, default in tables.UNMODELLED.items()
                           if not nccl_default(self.env.get(name, "").strip(), default, name)), None)
        if unmodelled and self.model in ("nccl", "rccl"):  # they were read by nothing, without a word
            raise EnvironmentRefused(
                f"{unmodelled}={self.env[unmodelled]} changes the transports, paths, channels, buffers, protocols or "
                "CTAs NCCL runs with, which simnet does not model: unset it (or run model: ideal); simnet follows "
                "NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE, NCCL_MIN/MAX_NCHANNELS and "
                "NCCL_MIN/MAX_P2P_NCHANNELS, NCCL_NCHANNELS_PER_NET_PEER")
        most = rccl.MAX_CHANNELS if self.model == "rccl" else tables.MAX_CHANNELS
        for name in ("NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", *tables.P2P_CHANNEL_VARIABLES):
            if name in self.env and self.model != "ideal" and nccl_integer(self.env[name], name) > most:
                # NCCL limits it (src/graph/connect.cc:339, paths.cc:982-991, v2.30.7): say so, never in silence
                raise EnvironmentRefused(f"{name}={self.env[name]}: {self.model.upper()} runs at most {most} "
                                         f"channels (MAXCHANNELS) and limits it to {most}; give at most {most}")
        if self.model == "rccl":
            # RCCL's send/recv channels are not NCCL 2.30.7's (enqueue.p2p_channels), which simnet follows
            refused = next((name for name in (*rccl.UNMODELLED, *tables.P2P_CHANNEL_VARIABLES)
                            if self.env.get(name, "").strip()), None)
            where = ""
            msccl = next((name for name in rccl.MSCCL_VARIABLES if self.env.get(name, "").strip()), None)
            if refused is None and msccl is not None:
                arches = sorted({GPUS[m].gcn_arch for m in {self.topo.gpu_model(g) for g in self.topo.gpus}
                                 if m in GPUS})
                if arches != ["gfx942"]:  # MSCCL is read from RCCL 2.21.5 only (rccl.msccl)
                    refused, where = msccl, f" on {', '.join(arches)} (simnet follows MSCCL on gfx942 only)"
            if refused:
                raise EnvironmentRefused(
                    f"{refused}={self.env[refused]} changes what RCCL runs in a way simnet does not model{where}: "
                    "unset it (simnet follows NCCL_ALGO, NCCL_PROTO, NCCL_MIN/MAX_NCHANNELS, RCCL_LL128_FORCE_ENABLE "
                    "and, on gfx942, RCCL_MSCCL_ENABLE, RCCL_MSCCL_FORCE_ENABLE)")

    @property
    def function(self) -> str:
        """NCCL's function name for the collective (its rows of NCCL's model)."""
        return lookup_collective(self.collective).nccl

    def refuse_what_env_turns_off(self, algorithm: str) -> None:
        """``Unsupported`` for a named algorithm that NCCL_NVLS_ENABLE=0 or NCCL_COLLNET_ENABLE=0
        turns off here, as they turn it off in NCCL."""
        nvls_off, collnet_off = turned_off(self.env, "NCCL_NVLS_ENABLE"), turned_off(self.env, "NCCL_COLLNET_ENABLE")
        if not (nvls_off or collnet_off):
            return  # the usual case: no need for NCCL's view of the fabric
        system, off = search.system_of(self.topo), None
        if algorithm in ("nvls", "nvls_tree") and system.nvls and nvls_off:
            off = ("NCCL_NVLS_ENABLE", "NVLink SHARP")
        across = algorithm == "nvls" and system.nodes > 1
        if (algorithm in ("collnet_direct", "collnet_chain") or across) and system.collnet and collnet_off:
            off = ("NCCL_COLLNET_ENABLE", "network SHARP (CollNet)")
        if off:
            raise Unsupported(f"{off[0]}={self.env[off[0]]} turns {off[1]} off, as in NCCL: no {algorithm}; "
                              f"unset it to run {algorithm}")

    def simulate(self, algorithm: str, size: int, timeline: bool, reuse: Mapping[str, Result] | None,
                 conditions: Conditions, options: dict) -> Result:
        """One run of the collective's ``algorithm`` (or ``auto``) of ``size`` bytes (nccl-tests'
        convention), replayed on the fluid network under ``conditions``; ``reuse``: results
        of this point by algorithm that ``auto`` may take instead of simulating again."""
        topo, table = self.topo, algorithms_for(self.collective)
        empty = size == 0 and not lookup_collective(self.collective).point_to_point
        if algorithm == "auto" and len(topo.gpus) > 1:
            picked = self._auto(size, timeline, options, conditions, reuse)  # (its candidates' words are their own)
            return replace(picked, warnings=picked.warnings + _moved_nothing(options, "a run of 0 B moves nothing")) \
                if empty else picked
        if algorithm not in table and algorithm != "auto":
            raise ValueError(f"unknown algorithm {algorithm!r} for {self.collective}; expected one of "
                             f"{', '.join(table)} or auto")
        self.refuse_what_env_turns_off(algorithm)
        if len(topo.gpus) == 1 or empty:  # nothing to exchange: no schedule, no software, no time
            # (NCCL discards a collective of 0 elements before launching anything: enqueue.cc taskAppend)
            why = "over one GPU there is nothing to exchange" if len(topo.gpus) == 1 else "a run of 0 B moves nothing"
            return Result(algorithm=algorithm, gpus=len(topo.gpus), size_bytes=int(size), time_s=0.0, links=[],
                          warnings=_moved_nothing(options, why), options=dict(options), model=self.model,
                          collective=self.collective)
        if algorithm == "hierarchical" and options.get("inner") is None:
            if len(topo.groups(options.get("group_by") or "node")) > 1:
                return self._fastest_inner(size, timeline, options, conditions)
            # one group: nothing runs between groups, so no variant to choose and none to name
            run = self.simulate(algorithm, size, timeline, reuse, conditions, {**options, "inner": "tree"})
            return replace(run, options=dict(options))
        engine = {k: options[k] for k in ENGINE_OPTIONS if options.get(k) is not None}
        size = int(size)
        decided, run, info = over_before_the_cut(
            lambda faults: self._replay(algorithm, size, options, timeline,
                                        replace(conditions, faults=tuple(faults)), engine),
            list(conditions.faults), lambda answer: answer[1].latest_ps)
        links = link_reports(run)
        down = frozenset(int(i) for fault in conditions.faults if fault.down for i in fault.links)
        warnings = find_warnings(topo, links, run.latest_ps / PS_PER_SECOND, algorithm, info.get("servers"),
                                 self.collective, down, servers_named=options.get("ps_server") is not None,
                                 group_by=options.get("group_by"))
        late = [fault for fault in conditions.faults if round(fault.at * PS_PER_SECOND) >= run.latest_ps]
        if late:  # read, and changed nothing: the run was over
            warnings.append(after_end(late, len(conditions.faults), run.time))
        fit = self.calibration
        warnings += foreign_calibration(fit, topo, self.env) if self.model != "ideal" else []
        # a GPU of the network (every subset shares the answer) names no generation: which of these ranks
        some_unnamed = topo.derived("a_gpu_unnamed", lambda t: any(
            data.get("gpu") is None for _, data in t.graph.nodes(data=True) if data["kind"] == "gpu"))
        unnamed = [g for g in topo.gpus if topo.gpu_model(g) is None] if self.model == "nccl" and some_unnamed else []
        if unnamed:
            named = f"{', '.join(unnamed[:3])}{', ...' if len(unnamed) > 3 else ''}"
            warnings.append(Finding("gpu_unnamed", "", (
                f"{len(unnamed)} of {len(topo.gpus)} GPUs name no gpu: ({named}): NCCL's cost model took them as "
                f"compute capability {UNNAMED_GPU_CC / 10:.1f} (an A100's protocols and tuning) with NVLink at "
                f"{NCCL_FALLBACK_NVLINK_EFFICIENCY:.0%} of line rate; give their generation "
                f"(gpu: {', '.join(GPU_NAMES[:3])}, ...) for its own figures")))
        if self.model != "ideal" and fit and (fit.bandwidth_at(size) != 1.0 or fit.network_bandwidth != 1.0):
            warnings += factor_cut_by_the_wire(topo, fit, size, run.stats.saturated_ps > 0)
            scaled = (f" (under the calibration profile, link rates and NCCL's ceilings are its fitted "
                      f"{fit.bandwidth_at(size):.2f}x, the network's {fit.network_bandwidth:.2f}x, links at most "
                      f"at line rate: the saturation is the fit's as much as the hardware's)")
            warnings = [replace(w, message=w.message + scaled) if w.kind in ("nic_overload", "link_congestion")
                        else w for w in warnings]
        given, ran = options.get("chunk_size"), decided.options.get("chunk_size")
        if given is not None and ran is not None and given < ran:
            own = round(ran / decided.detail.coarsening)  # NCCL's step (the replay may move several at once)
            warnings.append(Finding("chunk_size_raised", "options.chunk_size", (
                f"chunk_size {units.format_size(given)} is finer than NCCL pipelines {algorithm} here (its chunk "
                f"comes from NCCL_BUFFSIZE and the message size): the model ran NCCL's, {units.format_size(own)}")))
        capped = getattr(decided.detail, "channels_capped", None)
        if capped is not None:
            asked, opened = capped
            warnings.append(Finding("channels_capped", "options.channels", (
                f"options.channels {options['channels']} asks {self.model.upper()} for {asked} channels of "
                f"{algorithm} here, more than it opens ({opened}: MAXCHANNELS, or NVLS's own count): the run has "
                f"{opened}")))
        if run.engine == "lanes-lower":
            warnings.insert(0, Finding("lower_bound", "", (
                "time is a lower bound: under model: ideal the exact replay (the fluid network, transfer by "
                "transfer) would not fit in memory, so this is the later of every connection at its own rate, which "
                "no sharing of a link exceeds, and the busiest link's bytes at its capacity: the exact time is no "
                "earlier, "
                f"and no later than {units.format_time(run.upper_ps / PS_PER_SECOND)} (every connection at an equal "
                f"split of each link it crosses, the run whose link statistics these are; docs/architecture.md: "
                f"steady lanes){'; what the faults or late GPUs cost compares the bounds' if conditions else ''}")))
        if run.engine == "lanes-steady":
            name = "->".join(topo.links[run.shared_link]) if run.shared_link is not None else ""
            warnings.insert(0, Finding("upper_bound", name, (
                f"time is an upper bound: the ring's connections may share links such as {name or 'its ports'} "
                f"beyond their capacity, and more than {MAX_EXACT:,} transfers are too many to replay that "
                f"sharing exactly, so every connection ran at an equal split of each link it crosses "
                f"(docs/architecture.md: steady lanes)")))
        return Result(algorithm=algorithm, gpus=len(topo.gpus), size_bytes=int(size), time_s=run.time, links=links,
                      warnings=warnings, options=dict(options), model=self.model, protocol=decided.protocol,
                      channels=info.get("channels"), replay=run, collective=self.collective,
                      nccl_channels=decided.detail.running_channels if decided.detail is not None else None)

    def check_fits(self, algorithm: str, size: int, options: dict) -> None:
        """Refuse (``TooLarge``) now a run of ``algorithm`` (or ``auto``) at ``size`` bytes whose
        schedule the memory would not hold, its transfers counted without building them, so
        that no other run is simulated first in vain. Lane programs cost memory per lane and
        pass (their replay bounds or refuses the fluid network's share itself); ``auto`` is
        NCCL's pick (its other candidates too large are left out, said so); ``hierarchical``
        without ``inner`` fails when neither way between groups fits. Whatever else the run
        would refuse it refuses when it runs."""
        if len(self.topo.gpus) < 2 or not size:
            return
        try:
            if algorithm == "auto":
                algorithm = self.nccl_pick(size)
            if algorithm == "hierarchical" and options.get("inner") is None:
                refused = []
                for inner in HIERARCHICAL_VARIANTS:
                    try:
                        self.check_fits(algorithm, size, {**options, "inner": inner})
                        return
                    except TooLarge as exc:
                        refused.append(exc)
                raise refused[0]
            if algorithms_for(self.collective)[algorithm].program is not None:
                return
            self.refuse_what_env_turns_off(algorithm)
            decided = self.plan(algorithm, size, options)
            count_transfers(lambda: build_schedule(algorithm, self.topo, size, collective=self.collective,
                                                   **decided.options))
        except TooLarge:
            raise
        except (ValueError, KeyError):  # Unsupported, an unknown algorithm, ...: said by the run, in its turn
            return

    def boundable(self, algorithm: str, size: int, options: dict) -> bool:
        """Whether ``_replay`` could bound a run of ``algorithm`` at ``size`` bytes rather than
        replay it, were ``options["exact"]`` not set: a ring of more than ``MAX_EXACT``
        transfers under NCCL's or RCCL's model (from above), a lane program the fluid network
        could not hold under ``model: ideal`` (from below)."""
        if algorithm != "ring" and self.model != "ideal":
            return False
        decided = self.plan(algorithm, size, {k: v for k, v in options.items() if k != "exact"})
        program = build_program(algorithm, self.topo, size, collective=self.collective, **decided.options)
        if self.model == "ideal":
            return program is not None and worth_replaying(program) and \
                not fits(len(program) * transfer_bytes(algorithm))
        return self._too_large_to_replay(program)

    def _too_large_to_replay(self, program) -> bool:
        """Whether ``program`` is a ring the fluid network would not finish (more than
        ``MAX_EXACT`` transfers) under NCCL's or RCCL's model, which ``_replay`` bounds
        unless ``options["exact"]``."""
        return program is not None and program.algorithm == "ring" and len(program) > MAX_EXACT and \
            self.model != "ideal"

    def _replay(self, algorithm: str, size: int, options: dict, timeline: bool, conditions: Conditions,
                engine: dict):
        """(the model's plan, the replay, the schedule's info): lane by lane
        (``simnet.engine.lanes``) when the algorithm is a lane program (faults set the
        capacities in force from their times on, links down moving the lanes that cross them
        to their detours; stragglers hold back each lane until both its ends have joined) and
        either no link
        can be shared beyond its capacity (engine ``lanes``) or the lanes' lower and upper
        bounds on the completion time meet (``lanes-bounds-meet``, exact), or with the parts
        whose lanes share links beyond their capacity on the fluid network and the others by
        lanes (``lanes-fluid``, exact); under ``model:
        nccl``, a ring of more than ``MAX_EXACT`` transfers that neither proves as steady
        lanes (an upper bound: the fluid network would not finish); else on the fluid
        network. A timeline asks for the fluid network unless its schedule would not fit in
        memory or it is such a ring. ``model: ideal`` (the exact reference) takes the lanes'
        lower bound (``lanes-lower``) where the fluid network could not hold the schedule,
        and never bounds from above; ``options["exact"]`` and ``simulate_groups`` never bound."""
        decided, program, lane_times = self.program(algorithm, size, options)
        if program is not None and worth_replaying(program):
            big_ring = self._too_large_to_replay(program) and not options.get("exact")
            held = fits(len(program) * transfer_bytes(algorithm))  # the fluid network could hold it whole
            wants_fluid = timeline and held
            lower = self.model == "ideal" and not held and not options.get("exact")
            if not wants_fluid or big_ring:
                # with a timeline wanted, an exact answer is left for the fluid network's whole run below
                accept = "bound" if big_ring else "lower" if lower else "makespan"
                run = self._by_lanes(program, lane_times, conditions, engine, accept, parts=not wants_fluid)
                if wants_fluid and run is not None and run.engine != "lanes-steady":
                    run = None  # an exact answer: the fluid network, same completion, has the timeline
                if run is not None:
                    return decided, run, program.info
        if program is not None:  # the fluid network runs it expanded (not held through the run)
            schedule, program = program.to_schedule(), None
            timing = model_timing(decided, schedule, self.topo)
        else:
            decided, schedule, timing = self.prepare(algorithm, size, options)
        run = replay(schedule, self.topo, timing=timing, timeline=timeline, faults=list(conditions.faults),
                     start_delay=dict(conditions.delays), **engine)
        return decided, run, schedule.info

    def _by_lanes(self, program, lane_times, conditions: Conditions, engine: dict, accept: str, parts: bool):
        """``replay_lanes`` of ``program`` timed by ``lane_times`` under ``conditions``
        (``accept`` as it takes it); ``parts``: the contended lanes may go to the fluid network
        (``lanes-fluid``), else such a run is bounded or left (None)."""
        faults = list(conditions.faults)  # stragglers only delay each lane's first transfer

        def on_fluid(part, lanes):  # the parts lanes cannot time, transfer by transfer
            schedule = part.to_schedule()
            return replay(schedule, self.topo, timing=lane_times.select(lanes[part.transfer_lanes()]),
                          faults=faults, start_delay=dict(conditions.delays), **engine)

        return replay_lanes(program, self.topo, _joined(lane_times, program, conditions.delays), accept=accept,
                            faults=faults, fluid=on_fluid if parts else None, **engine)

    def exact_unfelt(self, algorithm: str, size: int, options: dict, run: Result, timeline: bool,
                     conditions: Conditions) -> str | None:
        """Why ``options["exact"]`` changed nothing in ``run`` (``algorithm`` at ``size`` bytes,
        with a ``timeline`` or not), or None where it may have: only a ring of more than
        ``MAX_EXACT`` transfers under NCCL's or RCCL's model is ever bounded instead of
        replayed (``boundable``), and then only where the lanes do not prove it exact (engine
        ``lanes`` or ``lanes-bounds-meet``) or, with a timeline, where they would have given
        the steady bound (else the fluid network replays it whole either way). A run in parts
        (``lanes-fluid``) may have been bounded without it: None."""
        if not self.boundable(algorithm, size, options):
            this = ("under model: ideal this run fits" if self.model == "ideal" else
                    "this ring has fewer" if algorithm == "ring" else f"this run is {algorithm}")
            return (f"only a ring of more transfers than simnet replays under NCCL's or RCCL's model, or under model: "
                    f"ideal a run by lanes the fluid network could not hold, is ever bounded instead of replayed, and "
                    f"{this}")
        engine = run.replay.engine if run.replay is not None else None
        if engine in ("lanes", "lanes-bounds-meet"):
            return "the lanes replayed this run exactly without it"
        if timeline and engine == "fluid":
            without = {k: v for k, v in options.items() if k != "exact"}
            _, program, lane_times = self.program(algorithm, size, without)
            engines = {k: without[k] for k in ENGINE_OPTIONS if without.get(k) is not None}
            lanes = self._by_lanes(program, lane_times, conditions, engines, "bound", parts=False)
            if lanes is None or lanes.engine != "lanes-steady":
                return ("with a timeline (--trace, --plot) the fluid network replays this run whole either way: "
                        "the lanes would not have bounded it")
        return None

    def plan(self, algorithm: str, size: int, options: dict):
        """The model's plan for ``algorithm`` at ``size`` bytes (protocol, schedule options)."""
        n = len(self.topo.gpus)  # an AllToAll's sends are one block each: NCCL picks LL or Simple per send
        message = size // max(n, 1) if self.collective == "all_to_all" else size
        return model_plan(self.model, self.topo, algorithm, size, options,
                          algorithms_for(self.collective)[algorithm].options, self.env.get("NCCL_PROTO"),
                          self.calibration, self.function, message,
                          nccl_system(self.topo, self.env) if self.model != "ideal" else None)

    def prepare(self, algorithm: str, size: int, options: dict):
        """(the model's plan, the schedule, its timing) of ``algorithm`` at ``size`` bytes."""
        decided = self.plan(algorithm, size, options)
        schedule = build_schedule(algorithm, self.topo, size, collective=self.collective, **decided.options)
        return decided, schedule, model_timing(decided, schedule, self.topo)

    def nccl_choice(self, size: int) -> predict.Choice:
        """NCCL's tuner on the system it sees here, under NCCL_ALGO and NCCL_PROTO."""
        return predict.pick(nccl_system(self.topo, self.env), max(int(size), 1), self.env.get("NCCL_ALGO"),
                            self.env.get("NCCL_PROTO"), function=self.function)

    def auto_candidates(self, size: int) -> list[str]:
        """The algorithms ``auto`` simulates beside NCCL's pick (simnet's names): every one
        NCCL's tuner timed here (``direct`` alone for point-to-point collectives)."""
        if lookup_collective(self.collective).point_to_point:
            return ["direct"]
        return [tables.SIMNET_NAMES[a] for a in _timed(self.nccl_choice(size))]

    def nccl_pick(self, size: int) -> str:
        """The algorithm NCCL would run here without simulating the others (``direct`` for
        point-to-point collectives)."""
        if lookup_collective(self.collective).point_to_point:
            return "direct"
        if self.msccl(size) is not None:
            return "direct"
        choice = predict.pick(nccl_system(self.topo, self.env), max(int(size), 1), self.env.get("NCCL_ALGO"),
                             self.env.get("NCCL_PROTO"), function=self.function)
        return tables.SIMNET_NAMES[choice.algorithm]

    def msccl(self, size: int) -> rccl.Msccl | None:
        """The MSCCL schedule RCCL would run for this collective of ``size`` bytes, if any
        (``rccl.msccl``: RCCL 2.21.5 on one host of 8 MI300X, say), under the environment."""
        if len(self.topo.gpus) < 2:
            return None
        return rccl.msccl(nccl_system(self.topo, self.env), self.function, int(size))

    def _fastest_inner(self, size: int, timeline: bool, options: dict, conditions: Conditions) -> Result:
        """``hierarchical`` with each of ``HIERARCHICAL_VARIANTS`` between groups; the faster
        run, its ``options["inner"]`` saying which, ``variants`` every one's time."""
        runs, too_large = {}, {}
        for inner in HIERARCHICAL_VARIANTS:
            try:
                runs[inner] = self.simulate("hierarchical", size, timeline, None, conditions,
                                            {**options, "inner": inner})
            except TooLarge as exc:  # the other variant may still fit: its answer, said to be one of two
                too_large[inner] = exc
        if not runs:
            raise next(iter(too_large.values()))
        best = min(runs, key=lambda inner: runs[inner].time_s)
        said = [Finding("variant_too_large", "", (
            f"hierarchical with a {inner} between groups was not simulated: it needs {_needs(exc)}, so this is "
            f"the {best} variant's time and the {inner} might be faster (options.inner: {best} runs the {best} "
            f"alone; a larger chunk_size fits both)")) for inner, exc in too_large.items()]
        return replace(runs[best], variants={"inner": {inner: run.time_s for inner, run in runs.items()}},
                       warnings=said + runs[best].warnings)

    def _auto(self, size: int, timeline: bool, options: dict, conditions: Conditions,
              known: Mapping[str, Result] | None = None) -> Result:
        """NCCL's pick (its cost model), simulated, with every other algorithm NCCL could run
        here simulated beside it (or taken from ``known``, results of the same call by
        algorithm); the result is a copy of NCCL's pick, ``auto`` says what was faster.
        Point-to-point collectives (AllToAll, SendRecv) have one way in NCCL: ``direct``."""
        known = known or {}
        if lookup_collective(self.collective).point_to_point:
            run = _judged_apart(known.get("direct") or self.simulate("direct", size, timeline, None, conditions,
                                                                     options))
            return replace(run, auto={
                "nccl_pick": {"algorithm": "SendRecv", "protocol": run.protocol, "predicted_s": None},
                "candidates": {"direct": run.time_s}, "fastest": "direct", "fastest_hint": "",
                "nccl_algo": None, "nccl_proto": self.env.get("NCCL_PROTO") or None})
        choice, msccl = self.nccl_choice(size), self.msccl(size)
        pick = choice.algorithm if msccl is None else None  # (RCCL's MSCCL file is run by direct, below)
        results, too_large = {}, {}
        for a in sorted(_timed(choice), key=lambda a: a != pick):  # a pick too large is refused before the others
            try:
                results[a] = known.get(tables.SIMNET_NAMES[a]) or self.simulate(
                    tables.SIMNET_NAMES[a], size, timeline, None, conditions, options)
            except TooLarge as exc:
                if a == pick:
                    raise
                too_large[tables.SIMNET_NAMES[a]] = exc
        results = {a: results[a] for a in _timed(choice) if a in results}  # in NCCL's order
        said_of_auto = [Finding("candidate_too_large", "", (
            f"auto: {name} was not simulated beside NCCL's pick: it needs {_needs(exc)}, so it may be faster than "
            f"what auto says is fastest")) for name, exc in too_large.items()]
        if options.get("exact") and not too_large and all(
                self.exact_unfelt(tables.SIMNET_NAMES[a], size, options, run, timeline, conditions)
                for a, run in results.items()):
            said_of_auto.append(Finding("option_unread", "options.exact", (
                "options.exact changed nothing here: auto weighs no run here that would have been bounded instead "
                "of replayed without it (a ring past what simnet replays under NCCL's or RCCL's model, not proven "
                "exact by the lanes)")))
        if msccl is not None:  # RCCL runs MSCCL before its own tuner (NCCL_ALGO, NCCL_PROTO not consulted)
            run = self._msccl_auto(msccl, size, timeline, options, conditions, known, results)
            return replace(run, warnings=said_of_auto + run.warnings)
        picked = _judged_apart(results[choice.algorithm])
        # a candidate bounded from below may be slower than its time: never said faster than the pick
        fastest = fastest_of({a: r.time_s for a, r in results.items() if a == choice.algorithm or
                              r.replay is None or r.replay.engine != "lanes-lower"}, choice.algorithm)
        for engine, kind, side, than in (("lanes-steady", "candidate_upper_bound", "above", "faster"),
                                          ("lanes-lower", "candidate_lower_bound", "below", "slower")):
            bounded = [tables.SIMNET_NAMES[a] for a, r in results.items()
                       if a != choice.algorithm and r.replay is not None and r.replay.engine == engine]
            if bounded:
                picked = replace(picked, warnings=[Finding(kind, "", (
                    f"auto: {', '.join(bounded)} could only be bounded from {side} (too large to replay exactly), "
                    f"so it may be {than} than its time says"))] + picked.warnings)
        return replace(picked, warnings=said_of_auto + picked.warnings, auto={
            "nccl_pick": {"algorithm": choice.algorithm, "protocol": choice.protocol,
                          "predicted_s": choice.time_s if size else None},  # NCCL discards an empty collective
            "candidates": {tables.SIMNET_NAMES[a]: r.time_s for a, r in results.items()},
            "fastest": tables.SIMNET_NAMES[fastest],
            # advice for NCCL only from NCCL's model: at line rate (ideal) the ranking is not NCCL's
            "fastest_hint": f"NCCL_ALGO={fastest}" if self.model != "ideal" else "",
            "nccl_algo": self.env.get("NCCL_ALGO") or None, "nccl_proto": self.env.get("NCCL_PROTO") or None,
            "nccl_nvls_enable": self.env.get("NCCL_NVLS_ENABLE"),
            "nccl_collnet_enable": self.env.get("NCCL_COLLNET_ENABLE"),
        })


    def _msccl_auto(self, msccl: rccl.Msccl, size: int, timeline: bool, options: dict, conditions: Conditions,
                    known: Mapping[str, Result], results: Mapping[str, Result]) -> Result:
        """``auto`` where RCCL runs an MSCCL schedule: ``direct`` (the all-pairs schedule) timed
        as MSCCL's file says, beside RCCL's own candidates (``results``, by NCCL name), which
        it would run with RCCL_MSCCL_ENABLE=0."""
        picked = _judged_apart(known.get("direct") or self.simulate("direct", size, timeline, None, conditions,
                                                                    options))
        times = {"direct": picked.time_s, **{tables.SIMNET_NAMES[a]: r.time_s for a, r in results.items()
                                             if r.replay is None or r.replay.engine != "lanes-lower"}}
        fastest = fastest_of(times, "direct")
        why = (f"RCCL 2.21.5 runs MSCCL's {msccl.file} ({msccl.protocol}, {msccl.channels} channels, "
               f"{msccl.blocks} thread blocks per GPU) for an AllReduce of {msccl.min_bytes}-{msccl.max_bytes} "
               f"bytes in multiples of {msccl.chunks * rccl.MSCCL_ELEMENT_BYTES} (nchunksperloop floats) on 8 ranks"
               f"{' (RCCL_MSCCL_FORCE_ENABLE=1)' if not self.topo_is_mscclable() else ''}, "
               "before its own tuner: NCCL_ALGO and NCCL_PROTO do not apply; RCCL_MSCCL_ENABLE=0 turns it off")
        hint = "" if self.model == "ideal" or fastest == "direct" else \
            f"RCCL_MSCCL_ENABLE=0 NCCL_ALGO={tables.NCCL_NAMES[fastest]}"
        return replace(picked, auto={
            "nccl_pick": {"algorithm": "MSCCL", "protocol": msccl.protocol, "predicted_s": None,
                          "file": msccl.file, "channels": msccl.channels, "why": why},
            "candidates": times, "fastest": fastest, "fastest_hint": hint,
            "nccl_algo": self.env.get("NCCL_ALGO") or None, "nccl_proto": self.env.get("NCCL_PROTO") or None,
            "nccl_nvls_enable": self.env.get("NCCL_NVLS_ENABLE"),
            "nccl_collnet_enable": self.env.get("NCCL_COLLNET_ENABLE"),
        })

    def topo_is_mscclable(self) -> bool:
        """RCCL enables MSCCL on this topology by itself (no RCCL_MSCCL_FORCE_ENABLE needed)."""
        system = search.system_of(self.topo)
        return system.nodes == 1 and system.mesh and system.ranks == rccl.MESH_GPUS


HIERARCHICAL_VARIANTS = ("tree", "ring")
"""What ``hierarchical`` runs between groups when ``inner`` is not given: both simulated,
the faster kept (NCCL's Tree first, so it wins ties)."""


def calibration_of(value: Calibration | str | Path | None, topology: Topology) -> Calibration | None:
    """The profile a run takes: ``value`` (a profile or its path), else ``topology``'s own."""
    value = value if value is not None else topology.calibration
    if value is None or isinstance(value, Calibration):
        return value
    return load_calibration(value)
