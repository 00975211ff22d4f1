"""``simulate`` one collective: an algorithm or ``auto`` as NCCL picks (``NCCL_ALGO`` and
``NCCL_PROTO`` honoured), under faults and stragglers when given.

>>> from simnet.topology.loader import topology_from_dict
>>> topo = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8}})
>>> round(simulate(topo, "ring", 2**30, model="ideal").busbw_GBps)  # 450 GB/s NVLink, less 14 x 0.5 us latency
449
>>> result = simulate(topo, "ring", 2**30)   # NCCL's model: 12 channels x 30 GB/s, Simple
>>> round(result.busbw_GBps), result.protocol
(359, 'Simple')
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

from simnet import units
from simnet.engine.faults import fault_marks
from simnet.errors import EnvironmentRefused, shown
from simnet.model.calibration import Calibration
from simnet.model.interface import DEFAULT_MODEL, lane_timing
from simnet.model.interface import timing as model_timing
from simnet.results.result import Finding, Result
from simnet.run.nccl_env import JUDGED_CHOICES, nccl_default, nccl_env, turned_off
from simnet.run.point import (
    HIERARCHICAL_VARIANTS,
    Conditions,
    Setup,
    calibration_of,
    checked_options,
    checked_size,
    foreign_calibration,
)
from simnet.schedule.algorithms.direct import named_servers, parameter_servers, servers_used
from simnet.schedule.catalog import algorithms_for, build_program, build_schedule
from simnet.schedule.kinds import ALLREDUCE
from simnet.schedule.kinds import collective as lookup_collective
from simnet.schedule.registry import common_options
from simnet.schedule.transfers import count_transfers
from simnet.topology.generators import ALGORITHM_KEYS
from simnet.topology.graph import PS_PER_SECOND, Topology
from simnet.topology.loader import load_topology
from simnet.tuning import predict, rccl, tables

__all__ = ["simulate", "check_fits", "unread_options", "reductions_unread", "calibration_said"]

NCCL_RUNS = tuple(tables.SIMNET_NAMES.values())
"""The algorithms ``auto`` may simulate: NCCL's, by simnet's names."""


def simulate(topology: Topology | str | Path, algorithm: str, size: int, *, gpus: int | list[str] | None = None,
             timeline: bool = False, model: str = DEFAULT_MODEL, env: Mapping[str, str] | None = None,
             calibration: Calibration | str | Path | None = None, reuse: Mapping[str, Result] | None = None,
             faults: list | None = None, stragglers: Mapping | None = None, collective: str = ALLREDUCE,
             **options) -> Result:
    """Simulate one ``collective`` (default AllReduce; ``simnet.schedule.kinds``) of
    ``size`` bytes in nccl-tests' convention; ``algorithm`` may be ``"auto"``; ``gpus``: the
    first N ranks, or the GPUs named (in their rank order, whatever order the list has).

    ``model`` is ``"nccl"`` (NCCL's protocols, latencies and effective rates), ``"rccl"``
    (RCCL's, on AMD GPUs) or ``"ideal"`` (line rate); None (the default) takes the GPUs'
    library's; ``calibration`` refines ``nccl`` and ``rccl`` (a profile from ``simnet
    calibrate``, or its path; default: the topology's). ``env`` holds NCCL_ALGO /
    NCCL_PROTO as NCCL reads them (default: the process environment). ``options`` are algorithm options,
    ``reduce_bandwidth`` (B/s) / ``message_overhead`` (s) and ``exact`` (never an upper bound).
    ``timeline=True`` keeps per-link load over time on ``result.replay.stats`` (for plots
    and traces). ``reuse``: results of this same call for other algorithms, by name, which
    ``auto`` takes instead of simulating its candidates again. Over one GPU there is nothing
    to exchange: time 0, no links.
    ``hierarchical`` without ``inner`` runs each of ``HIERARCHICAL_VARIANTS`` between
    groups and returns the faster (``result.variants`` holds every one's time).

    ``faults`` (specs as a scenario writes them, or ``conditions.Fault``) and
    ``stragglers`` (``{gpu: delay}`` or a distribution) make the run misbehave; the same
    run without them is simulated too and ``result.conditions`` says what they cost.
    """
    size = checked_size(size)
    options = checked_options(options)
    point = _setup(topology, gpus, model, env, calibration, collective)
    topo, env, calibration = point.topo, point.env, point.calibration
    conditions = Conditions.of(topo, faults, stragglers, servers=servers_used(topo, algorithm, options))
    if conditions.faults:  # a faulted switch is no twin of its healthy ones: routes tell them apart by it, not names
        point = replace(point, topo=topo.marked(fault_marks(list(conditions.faults))))
        topo = point.topo
    counted = next((name for name in ("NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS") if name in env), None)
    if counted and options.get("channels"):
        raise ValueError(f"options.channels and {counted}={env[counted]} both set the channels; give one")
    p2p = [name for name in tables.P2P_CHANNEL_VARIABLES if name in env]
    channelled = counted or next(iter(p2p), None)
    if channelled and point.model == "ideal":
        instead = "give options.channels instead" if counted else "unset it (or run model: nccl)"
        raise EnvironmentRefused(f"{channelled}={env[channelled]} sets NCCL's channels, and model: ideal runs no "
                                 f"NCCL: {instead}")
    result = point.simulate(algorithm, size, timeline, reuse, conditions, options)
    if result.gpus > 1:
        result = replace(result, warnings=[*result.warnings, *_unfelt_by_value(point, algorithm, size, options)])
    if p2p and point.model == "nccl":
        result = _p2p_channels_unfelt(point, result, size, conditions, options, p2p)
    msccl = [name for name in rccl.MSCCL_VARIABLES if name in env]
    if msccl and point.model in ("rccl", "ideal"):  # ideal's auto and direct run RCCL's MSCCL schedule too
        result = _msccl_unfelt(point, algorithm, result, size, conditions, options, msccl)
    if "NCCL_PROTO" in env and result.gpus > 1 and not reads_nccl_proto(algorithm, point.collective):
        result = replace(result, warnings=[*result.warnings, proto_unread(env["NCCL_PROTO"], [algorithm])])
    if "NCCL_ALGO" in env and result.gpus > 1 and algorithm != "auto":
        result = _said_unread(point, result, ["NCCL_ALGO"], f"it restricts what auto picks, and {algorithm} runs as "
                                                            "named")
    if point.model == "ideal" and result.gpus > 1:  # accepted for the runs of other models, read by none here
        result = replace(result, warnings=[*result.warnings, *_nccl_only_unread(env)])
    if point.topo.algorithm_keys and result.gpus > 1:
        result = replace(result, warnings=[*result.warnings, *_algorithm_keys_unread(point, algorithm, size, options,
                                                                                    result)])
    steering = steering_variables(env, [algorithm], point.collective)
    if steering and result.gpus > 1 and result.links:
        library = "RCCL" if point.model == "rccl" else "NCCL"  # (the library the GPUs run picks)
        ran = f"{library} picks {result.algorithm} with" if algorithm == "auto" else f"{algorithm} runs"
        for name in unchanged_without(point, algorithm, size, options, steering):
            result = _said_unread(point, result, [name], (
                f"{library} picks {result.algorithm} without it too, its candidates beside it the same"
                if name == "NCCL_ALGO" else f"{ran} {SAME_PLAN}, so the same schedule at the same timing"))
    sends = [name for name in ("NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS") if name in env and not any(
        w.kind == "key_unread" and w.link == name for w in result.warnings)]
    if sends and point.model == "nccl" and result.gpus > 1 and \
            "send_channels" in algorithms_for(point.collective)[result.algorithm].options:
        # NCCL's send/recv takes its channels from them too (enqueue.p2p_channels): judged as the P2P variables are
        result = _p2p_channels_unfelt(point, result, size, conditions, options, sends)
    one_way = lookup_collective(point.collective).point_to_point  # (where auto is direct, NCCL's send/recv)
    if options.get("exact") and (algorithm != "auto" or one_way) and result.gpus > 1 and result.replay is not None:
        why = point.exact_unfelt("direct" if algorithm == "auto" else algorithm, size, options, result, timeline,
                                 conditions)  # (auto over its candidates judges its own)
        if why:
            result = replace(result, warnings=[*result.warnings, Finding("option_unread", "options.exact", (
                f"options.exact changed nothing here: {why}"))])
    if options.get("chunk_size") is not None and result.gpus > 1 and not any(
            w.kind == "chunk_size_raised" for w in result.warnings):
        cuts = f"{algorithm} cuts" if algorithm != "auto" else \
            f"NCCL's pick and every candidate auto weighs ({', '.join((result.auto or {}).get('candidates', ()))}) cut"
        result = _option_unfelt(point, algorithm, size, options, result, "chunk_size", (
            f"options.chunk_size {units.format_size(options['chunk_size'])} changed nothing here: {cuts} "
            "the same pieces without it (each step's piece is no larger), timed alike"))
        if algorithm != "auto" and not any(w.link == "options.chunk_size" for w in result.warnings) and \
                _same_run_without(point, result, size, conditions, options, "chunk_size"):
            # other pieces, the same answer (fuzz round ax, F6: a saturated link or line-rate links leave a finer
            # pipeline nothing to gain): simulated again without it, as auto's candidates are not
            result = replace(result, warnings=[*result.warnings, Finding("option_unread", "options.chunk_size", (
                f"options.chunk_size {units.format_size(options['chunk_size'])} changed nothing here: {algorithm} "
                "cuts other pieces with it, but simulated again without it the run has the same time and every "
                "link the same bytes, saturation and most flows at once"))])
    if options.get("channels") is not None and result.gpus > 1:
        library = "RCCL" if point.model == "rccl" else "NCCL"
        nccl = f" ({library}'s {result.nccl_channels})" if result.nccl_channels is not None else ""
        written = options["channels"]

        def ran() -> str:  # the count it runs without the option, where that is the one written (not the run's own)
            if algorithm == "auto":
                weighed = ", ".join((result.auto or {}).get("candidates", ()))
                return (f"NCCL's pick and every candidate auto weighs ({weighed}) run the same pieces timed alike "
                        "without it")
            if _channels_without(point, algorithm, size, options) == written:
                return (f"{algorithm} runs {written} channel{'s' * (written != 1)}{nccl} without it, the same pieces "
                        "timed alike")
            return f"{algorithm} runs the same pieces timed alike without it"

        result = _option_unfelt(point, algorithm, size, options, result, "channels",
                                lambda: f"options.channels {written} changed nothing here: {ran()}")
    if options.get("reduce_bandwidth") is not None and result.gpus > 1 and result.replay is not None and \
            not any(w.link == "options.reduce_bandwidth" for w in result.warnings):
        result = _reductions_hidden(point, result, size, conditions, options)
    if algorithm == "hierarchical" and options.get("inner") is not None and result.gpus > 1 and \
            not any(w.link == "options.inner" for w in result.warnings):
        result = _inner_unfelt(point, result, size, conditions, options)
    # (auto's answer may be a candidate's run reused, which says these already: said once)
    if calibration is not None and point.model != "ideal":
        said = _network_fit_unread(point, calibration, conditions, named_servers(options) if algorithm == "ps" else [])
        result = replace(result, calibration=calibration.source or "(a Calibration given to simulate)",
                         warnings=result.warnings + [w for w in said if w not in result.warnings])
    elif calibration is not None:
        unused = _calibration_unused(calibration, point.model)
        result = replace(result, warnings=[unused] * (unused not in result.warnings) + result.warnings)
    if not conditions:
        return result
    healthy = point.simulate(result.algorithm, size, False, None, Conditions(), options)
    latest_s = result.replay.latest_ps / PS_PER_SECOND if result.replay is not None else result.time_s
    after_end = all(fault.at >= latest_s for fault in conditions.faults)  # fault_after_end said so
    unfaulted = healthy if not conditions.delays or not conditions.faults or after_end else \
        point.simulate(result.algorithm, size, False, None, Conditions(delays=conditions.delays), options)
    if conditions.faults and not after_end and _traffic(result) == _traffic(unfaulted):  # (the late GPUs kept)
        listed = "; ".join(f"faults[{f.index}] {f.what}" for f in conditions.faults[:3])
        result = replace(result, warnings=result.warnings + [Finding("fault_unfelt", "", (
            f"the faults changed nothing: the run's time and every link's bytes and saturation equal the run's "
            f"without them ({listed}{'; ...' if len(conditions.faults) > 3 else ''}): their links carried nothing "
            "while they lasted, or less than was left; move them to when traffic crosses (see the healthy run's "
            "--trace), or leave them out"))])
    if round(result.time_s * PS_PER_SECOND) < round(healthy.time_s * PS_PER_SECOND):
        what = " and ".join(w for w, there in (("the faults", conditions.faults), ("the late GPUs", conditions.delays))
                            if there)
        result = replace(result, warnings=result.warnings + [Finding("conditions_faster", "", (
            f"with {what} this run ended {units.format_time(healthy.time_s - result.time_s)} before the healthy "
            f"run's {units.format_time(healthy.time_s)}: max-min sharing is not monotone, and the flows held back "
            "left the others more to share while they waited; the cost shows as negative"
            f"{' and the delay as absorbed whole' if conditions.delays and not conditions.faults else ''}"))])
    return replace(result, conditions=conditions.impact(result, healthy.time_s))


def check_fits(topology: Topology | str | Path, algorithm: str, size: int, *, gpus: int | list[str] | None = None,
               model: str = DEFAULT_MODEL, env: Mapping[str, str] | None = None,
               calibration: Calibration | str | Path | None = None, collective: str = ALLREDUCE,
               **options) -> None:
    """Refuse (``simnet.io.budget.TooLarge``) before anything runs a ``simulate`` call with
    these arguments whose schedule the memory would not hold (``Setup.check_fits``): a
    scenario checks every run so before its first, and is refused in one line instead of
    after the runs before it. Other refusals are left to ``simulate``."""
    point = _setup(topology, gpus, model, env, calibration, collective)
    point.check_fits(algorithm, checked_size(size), checked_options(options))


def _setup(topology: Topology | str | Path, gpus: int | list[str] | None, model: str | None,
           env: Mapping[str, str] | None, calibration: Calibration | str | Path | None, collective: str) -> Setup:
    """The ``Setup`` of a ``simulate`` call: the topology loaded and cut to ``gpus``, the
    environment as NCCL reads it, the calibration profile (default: the topology's)."""
    topo = topology if isinstance(topology, Topology) else load_topology(topology)
    topo = topo.subset(gpus)
    calibration = calibration_of(calibration, topo)
    return Setup(topo, lookup_collective(collective).name, model, nccl_env(env), calibration)


def reads_nccl_proto(algorithm: str, collective: str) -> bool:
    """Whether NCCL_PROTO can change how ``algorithm`` runs: one of NCCL's collective
    algorithms (``auto`` on a collective NCCL tunes), not its send/recv."""
    kind = lookup_collective(collective)
    if algorithm == "auto":
        return not kind.point_to_point
    return tables.native(kind.nccl, algorithm) is not None


SAME_PLAN = "the same plan without it (its protocol and channels, what it reads of the system NCCL sees)"
"""How a ``key_unread`` of a variable ``unchanged_without`` lists says why: simulate's and jobs'."""


def proto_unread(value: str, algorithms: list[str]) -> Finding:
    """The ``key_unread`` of NCCL_PROTO=``value`` beside ``algorithms``, none of which reads it."""
    return Finding("key_unread", "NCCL_PROTO", (
        f"NCCL_PROTO={value} restricts the protocols of NCCL's collective algorithms, and {', '.join(algorithms)} "
        f"{'runs' if len(algorithms) == 1 else 'run'} on NCCL's send/recv, which picks LL or Simple by size and "
        "connection whatever NCCL_PROTO says (src/enqueue.cc, addP2pToPlan), so it changed nothing here"))


def steering_variables(env: Mapping[str, str], algorithms: list[str], collective: str) -> list[str]:
    """The variables of ``JUDGED_CHOICES`` set in ``env`` that may steer a run of one of
    ``algorithms``: NCCL_ALGO only where one is ``auto`` (a named algorithm runs as named:
    ``simulate`` says so of each such run, ``nccl_choice_unread`` where none is auto),
    NCCL_PROTO only where an algorithm reads it (``simulate`` says of each run that does
    not, ``nccl_choice_unread`` where none does)."""
    return [name for name in JUDGED_CHOICES if name in env
            and (name != "NCCL_ALGO" or "auto" in algorithms)
            and (name != "NCCL_PROTO" or any(reads_nccl_proto(a, collective) for a in algorithms))]


def unchanged_without(point: Setup, algorithm: str, size: int, options: dict, names: list[str],
                      candidates: bool = True) -> list[str]:
    """The variables of ``names`` without which ``point`` decides ``algorithm`` at ``size``
    bytes alike: the same model plan as the run reads it (``_as_run``: protocol, options,
    channels, the system NCCL sees); for ``auto``, NCCL's pick (RCCL's MSCCL file, if it runs
    one) and the same candidates beside it (which its advice compares; ``candidates=False``:
    where none is simulated), each planned alike.
    The same plan runs the same schedule at the same timing, so such a variable changed
    nothing (NCCL_NVLS_ENABLE=0 on A100s, or beside a ring; NCCL_MAX_NCHANNELS above the
    channels NCCL opens). A plan that differs keeps its variable: never listed where it is
    not so."""

    def decided(setup: Setup) -> tuple:
        if algorithm != "auto":
            return _as_run(setup.plan(algorithm, size, dict(options)), algorithm)
        # auto: NCCL's pick (what its tuner reports of it too: protocol, predicted time) and every candidate it
        # simulates beside it (its "faster" advice), each as it runs
        told = None if lookup_collective(setup.collective).point_to_point else setup.nccl_choice(size)
        beside = setup.auto_candidates(size) if candidates else [setup.nccl_pick(size)]
        return setup.nccl_pick(size), setup.msccl(size), told and (told.algorithm, told.protocol, told.time_s), [
            (c, _as_run(setup.plan(c, size, dict(options)), c)) for c in beside]

    try:
        own = decided(point)
        return [name for name in names if decided(_without(point, [name])) == own]
    except ValueError:  # a plan the variable alone makes possible (or not): it matters
        return []


CHUNK_JUDGED_UP_TO = 4096
"""Pieces per lane up to which ``_unfelt`` compares two lane programs piece by piece
(one numpy comparison over the lanes per piece)."""


def unread_by_every(env: Mapping[str, str], runs: list[tuple[Setup, str, int, dict]], who: str,
                    candidates: bool = True) -> list[Finding]:
    """``key_unread`` for the variables no one of ``runs`` (setup, algorithm as asked, size,
    options) reads, ``who`` naming them ("every job"): a variable of ``steering_variables``
    without which each decides alike (``unchanged_without``, ``candidates`` as there), and,
    where every run is under ``model: ideal`` (no NCCL), each of NCCL's own
    ``tables.UNMODELLED`` set."""
    if not runs:
        return []
    unread = set(steering_variables(env, [algorithm for _, algorithm, _, _ in runs], runs[0][0].collective))
    for point, algorithm, size, options in runs:
        if not unread:
            break
        unread &= set(unchanged_without(point, algorithm, size, options, sorted(unread), candidates))
    said = [Finding("key_unread", name, f"{name}={env[name]} changed nothing here: " + (
        f"{who} runs the same without it (NCCL's pick where auto, named algorithms as named)" if name == "NCCL_ALGO"
        else f"{who} runs {SAME_PLAN}, so the same schedules at the same timing"))
        for name in JUDGED_CHOICES if name in unread]
    return said + (_nccl_only_unread(env) if all(point.model == "ideal" for point, *_ in runs) else [])


_TURNED_OFF_BY = {"nvls": "NCCL_NVLS_ENABLE", "sharp": "NCCL_COLLNET_ENABLE"}
"""The variable that turns off the switch reduction a generator key of ``ALGORITHM_KEYS`` marks."""


def _algorithm_keys_unread(point: Setup, algorithm: str, size: int, options: dict, result: Result) -> list[Finding]:
    """``key_unread`` of the generators' keys only some algorithms read (``Topology.algorithm_keys``,
    ``generators.ALGORITHM_KEYS``) that ``algorithm`` reads nothing of: it does not reduce on such
    a switch, or runs no parameter server (``auto`` reads those of the NCCL algorithms it weighs:
    none of a switch's reduction that NCCL_NVLS_ENABLE=0 or NCCL_COLLNET_ENABLE=0 turns off, or
    whose algorithms NCCL_ALGO leaves out; ps none of the servers' where its ``options`` name
    only GPUs or hosts to serve). A switch's reduction that changes the plan at ``size`` bytes
    of ``algorithm`` (of ``auto``: its pick, ``result.algorithm``, or a candidate beside it) all
    the same is read, unless its own variable turns it off (NCCL opens half as many channels
    again where CollNet may run, ``search.comm_channels``, and every algorithm runs on them)."""
    said = []
    servers = point.topo.parameter_servers
    elsewhere = algorithm == "ps" and servers and not set(servers_used(point.topo, algorithm, options)) & set(servers)
    for entry in point.topo.algorithm_keys:
        link = entry.partition(" (")[0]
        key = link.rpartition(".")[2]
        readers = ALGORITHM_KEYS[key]
        weighs = set(readers) & set(NCCL_RUNS)
        variable = _TURNED_OFF_BY.get(key)
        off = f"{variable}={point.env[variable]} turns it off, as in NCCL" \
            if variable and turned_off(point.env, variable) else ""
        restricted = point.env.get("NCCL_ALGO", "").strip()
        if weighs and not off and restricted and not weighs & {tables.SIMNET_NAMES[a] for a in predict.parse_nccl_list(
                restricted, tables.ALGORITHMS, "NCCL_ALGO", point.function)}:
            off = f"NCCL_ALGO={point.env['NCCL_ALGO']} leaves auto no algorithm that reads it"
        planned = [result.algorithm, *(result.auto or {}).get("candidates", ())] if algorithm == "auto" else [algorithm]
        if (algorithm in readers and not (elsewhere and key in ("servers", "ps_bandwidth"))) or \
                (algorithm == "auto" and weighs and not off) or \
                (variable and not turned_off(point.env, variable) and algorithm not in readers and any(
                    _plan_reads(point, a, size, options, variable) for a in dict.fromkeys(planned))):
            continue
        if algorithm in readers:
            named = ", ".join(named_servers(options)[:3])
            why = f"options.ps_server names {named} to serve, none of the parameter servers (kind: ps)"
        elif algorithm == "auto" and weighs:
            why = f"{off} (auto weighs none of {', '.join(readers)})"
        else:
            weighed = ", and auto weighs them" if weighs and not off else ""
            why = f"{algorithm} does not use it ({' and '.join(readers)} {'does' if len(readers) == 1 else 'do'}" \
                  f"{weighed})"
        said.append(Finding("key_unread", link, f"{entry}: {why}, so it changed nothing here"))
    return said


def _plan_reads(point: Setup, algorithm: str, size: int, options: dict, variable: str) -> bool:
    """Whether ``algorithm``'s plan at ``size`` bytes changes when ``variable`` (NCCL_NVLS_ENABLE
    or NCCL_COLLNET_ENABLE) turns the switches' reduction off (``_as_run``: protocol, options,
    channels)."""
    off = Setup(point.topo, point.collective, point.model, {**point.env, variable: "0"}, point.calibration)
    try:
        return _as_run(off.plan(algorithm, size, dict(options)), algorithm) != \
            _as_run(point.plan(algorithm, size, dict(options)), algorithm)
    except ValueError:  # a plan the reduction alone makes possible (or not): it is read
        return True


def _nccl_only_unread(env: Mapping[str, str]) -> list[Finding]:
    """``key_unread`` for each of NCCL's own variables (``tables.UNMODELLED``, refused under
    ``model: nccl`` and ``rccl``) set in ``env`` to other than NCCL's default, beside runs of
    ``model: ideal``, which runs no NCCL."""
    return [Finding("key_unread", name, f"{name}={env[name]} changed nothing here: it changes how NCCL runs, and "
                                        "model: ideal runs no NCCL")
            for name, default in tables.UNMODELLED.items()
            if not nccl_default(env.get(name, "").strip(), default, name)]


def _channels_without(point: Setup, algorithm: str, size: int, options: dict) -> int | None:
    """The channels ``algorithm``'s lane program runs without ``options.channels`` (None: no
    lane program, or none it counts)."""
    plan = point.plan(algorithm, size, {k: v for k, v in options.items() if k != "channels"})
    program = build_program(algorithm, point.topo, size, collective=point.collective, **plan.options)
    return None if program is None else program.info.get("channels")


def _option_unfelt(point: Setup, algorithm: str, size: int, options: dict, result: Result, name: str,
                   said: str | Callable[[], str]) -> Result:
    """``result`` with an ``option_unread`` warning (``said``, or what it returns) when ``options[name]``
    (``chunk_size``, ``channels``) changed nothing of ``algorithm``'s run (``_unfelt``; for
    ``auto``, of NCCL's pick and of every candidate beside it); never said twice."""
    if any(w.link == f"options.{name}" for w in result.warnings):  # said already (an algorithm that takes none)
        return result
    # auto: NCCL picks without reading options, so they change nothing where no candidate's run moves (one left
    # out for want of memory, unjudged, might)
    candidates = (result.auto or {}).get("candidates", {}) if algorithm == "auto" else [algorithm]
    if not candidates or any(w.kind == "candidate_too_large" for w in result.warnings) or \
            not all(_unfelt(point, candidate, size, options, name) for candidate in candidates):
        return result
    return replace(result, warnings=[*result.warnings, Finding("option_unread", f"options.{name}",
                                                               said() if callable(said) else said)])


def _unfelt(point: Setup, algorithm: str, size: int, options: dict, name: str) -> bool:
    """Whether ``options[name]`` changes nothing of ``algorithm``'s run: without it the plan
    has the protocol it has, and ``algorithm`` cuts the same pieces (its lane program, lane by
    lane and piece by piece) that the model times alike (the program's timing): the same
    replay. Judged where the algorithm is a lane program of at most ``CHUNK_JUDGED_UP_TO``
    pieces a lane, or else a schedule (``_schedule_unchanged``); False where it is not so."""
    plain = {k: v for k, v in options.items() if k != name}
    try:
        plans = [point.plan(algorithm, size, dict(given)) for given in (options, plain)]
        programs = [build_program(algorithm, point.topo, size, collective=point.collective, **p.options)
                    for p in plans]
        if all(p is None for p in programs):  # no lane program (ps, hierarchical): judged transfer by transfer
            return _schedule_unchanged(point, algorithm, size, options, name)
    except ValueError:
        return False
    if any(p is None for p in programs) or int(programs[0].flows.max(initial=0)) > CHUNK_JUDGED_UP_TO or \
            plans[0].protocol != plans[1].protocol or not _same_program(*programs):
        return False
    return _same_fields(*(lane_timing(p, program, point.topo) for p, program in zip(plans, programs)))


SCHEDULE_JUDGED_UP_TO = 200_000
"""Transfers of an algorithm that is no lane program up to which ``_unfelt`` builds
its schedule again without the option and compares the two transfer by transfer."""


def _schedule_unchanged(point: Setup, algorithm: str, size: int, options: dict, name: str) -> bool:
    """``_unfelt`` of an algorithm that is no lane program: with ``options[name]`` and without
    it, the plans' protocols are the same and the schedules are the same transfers (ends,
    bytes, steps, dependencies) timed alike; for ``hierarchical`` without ``inner``, in each
    variant it runs (the faster is its answer)."""
    variants = [{**options, "inner": inner} for inner in HIERARCHICAL_VARIANTS] \
        if algorithm == "hierarchical" and options.get("inner") is None else [options]
    for variant in variants:
        plans = [point.plan(algorithm, size, dict(given))
                 for given in (variant, {k: v for k, v in variant.items() if k != name})]
        built = [lambda p=p: build_schedule(algorithm, point.topo, size, collective=point.collective, **p.options)
                 for p in plans]
        if plans[0].protocol != plans[1].protocol or count_transfers(built[0]) > SCHEDULE_JUDGED_UP_TO:
            return False
        schedules = [build() for build in built]
        if not _same_fields(*schedules) or not _same_fields(*(model_timing(p, schedule, point.topo)
                                                              for p, schedule in zip(plans, schedules))):
            return False
    return True


def _same_program(one, other) -> bool:
    """Whether two lane programs are the same lanes carrying the same pieces, in order."""
    if not _same_fields(one, other, ("src", "dst", "channel", "flows", "after", "lag", "per_step", "first_step")):
        return False
    return all(all(np.array_equal(a, b) for a, b in zip(one.nbytes(q), other.nbytes(q)))
               for q in range(int(one.flows.max(initial=0))))


def _same_fields(one, other, names: tuple[str, ...] | None = None) -> bool:
    """Whether two dataclass objects hold equal values (arrays element by element) in fields
    ``names`` (default: every field)."""
    names = names or tuple(f.name for f in fields(one))
    for name in names:
        a, b = getattr(one, name), getattr(other, name)
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            if not np.array_equal(np.asarray(a), np.asarray(b)):
                return False
        elif a != b:
            return False
    return True


def _as_run(plan, algorithm: str):
    """``plan`` (of ``algorithm``) with the system NCCL sees reduced to what the run reads of
    it: NCCL_NVLS_ENABLE's NVLink SHARP and NCCL_COLLNET_ENABLE's SHARP decide whether
    NVLS, NVLSTree and CollNet may run (``predict.enabled``: their own runs and NCCL's pick,
    which ``unchanged_without`` compares apart) and, CollNet's, how many channels the
    communicator opens (``search.comm_channels``), which the plan holds; NCCL_MIN/MAX_NCHANNELS only the channels
    a collective opens (``enqueue.opened_channels``), which the plan holds (its running
    channels, channel share and options), and under RCCL the MSCCL file ``auto`` runs
    (``rccl.msccl``), which ``unchanged_without`` compares apart. RCCL_LL128_FORCE_ENABLE
    only lets LL128 be chosen, which the plan's protocol (and NCCL's pick) says."""
    detail = plan.detail
    if detail is None:
        return plan
    system = detail.system
    kept = replace(system, nvls=system.nvls if algorithm in ("nvls", "nvls_tree") else False,
                   collnet=system.collnet if algorithm in ("nvls", "collnet_direct", "collnet_chain") else False)
    kept = replace(kept, min_channels=0, max_channels=0)
    # RCCL_LL128_FORCE_ENABLE only lets LL128 be chosen (``predict.enabled``): the plan's protocol says what was
    return replace(plan, detail=replace(detail, system=replace(kept, ll128_forced=False)))


def _reductions_hidden(point: Setup, result: Result, size: int, conditions: Conditions, options: dict) -> Result:
    """``result`` with an ``option_unread`` warning when ``options.reduce_bandwidth`` changed
    nothing of the run it answers with (``result.algorithm``: auto's pick): the same run
    without it moves the same (``_traffic``), every reduction having ended before the data
    it feeds could leave."""
    if not _same_run_without(point, result, size, conditions, options, "reduce_bandwidth"):
        return result
    given = units.format_bandwidth(options['reduce_bandwidth'])
    if algorithms_for(point.collective)[result.algorithm].sums_in_switch:  # (auto's pick: nvls, say)
        why = reductions_unread(point.collective, [result.algorithm])
    else:
        why = (f"{result.algorithm}'s every reduction ended before the links could take the data it feeds (the "
               "links, not the reductions, set the pace): the run's time and every link's bytes and saturation are "
               "the run's without it")
    return replace(result, warnings=[*result.warnings, Finding("option_unread", "options.reduce_bandwidth", (
        f"options.reduce_bandwidth {given} changed nothing here: {why}"))])


def _same_run_without(point: Setup, result: Result, size: int, conditions: Conditions, options: dict,
                      name: str) -> bool:
    """Whether ``result.algorithm``'s run without ``options[name]`` moves what ``result`` did
    (``_traffic``): the option, simulated again without it, changed nothing."""
    plain = {key: value for key, value in options.items() if key != name}
    return _traffic(point.simulate(result.algorithm, size, False, None, conditions, plain)) == _traffic(result)


def _inner_unfelt(point: Setup, result: Result, size: int, conditions: Conditions, options: dict) -> Result:
    """``result`` (hierarchical's) with an ``option_unread`` warning when ``options.inner``
    changed nothing: over two groups, where every variant is one exchange between them, the
    run without it (the faster of ``HIERARCHICAL_VARIANTS``) moves the same (``_traffic``).
    Over more groups the variants' steps differ; no run is simulated again to judge."""
    level = options.get("group_by") or "node"
    if len(point.topo.groups(level)) != 2 or not _same_run_without(point, result, size, conditions, options, "inner"):
        return result
    return replace(result, warnings=[*result.warnings, Finding("option_unread", "options.inner", (
        f"options.inner {options['inner']} changed nothing here: between two groups ({level}s) it is one exchange "
        f"either way, and the run without it (the faster of {' and '.join(HIERARCHICAL_VARIANTS)} between them) has "
        "the same time and every link's bytes and saturation"))])


def _p2p_channels_unfelt(point: Setup, result: Result, size: int, conditions: Conditions, options: dict,
                         names: list[str]) -> Result:
    """``result`` with a ``key_unread`` warning when the send/recv channel variables ``names``
    changed nothing: the same run without them moves the same (``_traffic``), or nothing
    here runs on NCCL's send/recv. Says why: NCCL splits each send over as many channels
    either way, or the channels of a send all take its one route (simnet's point-to-point
    sends have no per-channel rate), or the algorithm is not NCCL's send/recv."""
    it = "it" if len(names) == 1 else "them"
    algorithm, table = result.algorithm, algorithms_for(point.collective)
    if result.gpus < 2:
        why = "one GPU sends nothing"
    elif "send_channels" not in table[algorithm].options:
        why = (f"only NCCL's send/recv reads {it} (all_to_all's and send_recv's direct), and "
               f"{point.collective}'s {algorithm} is not it")
    else:
        plain = _without(point, names)
        if _traffic(plain.simulate(algorithm, size, False, None, conditions, options)) != _traffic(result):
            return result
        with_, without = (setup.plan(algorithm, size, options).options["send_channels"] for setup in (point, plain))
        why = f"NCCL splits each send over {with_} channel(s) with {it} " + (
            "as without" if with_ == without else
            f"and {without} without, and here every channel of a send takes its one route (simnet's point-to-point "
            "sends have no per-channel rate)")
    return _said_unread(point, result, names, why)


def msccl_read(point: Setup, algorithm: str, size: int, names: list[str]) -> bool:
    """Whether RCCL's MSCCL variables ``names`` may change a run of ``algorithm`` at ``size``
    bytes: RCCL runs an MSCCL file for ``auto`` (before its own tuner) and ``direct`` only,
    and only where the file it runs (``Setup.msccl``, or none) differs without them."""
    return algorithm in ("auto", "direct") and _without(point, names).msccl(size) != point.msccl(size)


def _msccl_unfelt(point: Setup, algorithm: str, result: Result, size: int, conditions: Conditions, options: dict,
                  names: list[str]) -> Result:
    """``result`` (of ``algorithm``, ``auto`` included) with a ``key_unread`` warning when
    RCCL's MSCCL variables ``names`` changed nothing: the same run without them runs the
    same MSCCL file (or none) and picks the same, in the same time and traffic on the same
    channels (no MSCCL file fits this run with them or without: RCCL 2.21.5's are for 8
    MI300X of one host)."""
    other = _without(point, names).simulate(algorithm, size, False, None, conditions, options)
    if (other.algorithm, other.nccl_channels, _traffic(other)) != (result.algorithm, result.nccl_channels,
                                                                   _traffic(result)) \
            or msccl_read(point, algorithm, size, names):
        return result
    it = "it" if len(names) == 1 else "them"
    return _said_unread(point, result, names, (
        f"RCCL runs an MSCCL file for auto and direct only, and {algorithm} runs as named"
        if algorithm not in ("auto", "direct") else
        f"RCCL runs the same MSCCL file with {it} as without" if point.msccl(size) is not None else
        f"no MSCCL file of RCCL's fits this run with {it} or without (RCCL 2.21.5's are AllReduces over 8 MI300X "
        "of one host, of sizes in whole chunks)"))


def _without(point: Setup, names: list[str]) -> Setup:
    """``point`` with the environment variables ``names`` unset."""
    return Setup(point.topo, point.collective, point.model, {k: v for k, v in point.env.items() if k not in names},
                 point.calibration)


def _said_unread(point: Setup, result: Result, names: list[str], why: str) -> Result:
    """``result`` with a ``key_unread`` warning: the variables ``names`` changed nothing, ``why``."""
    said = ", ".join(f"{name}={point.env[name]}" for name in names)
    return replace(result, warnings=[*result.warnings, Finding("key_unread", names[0],
                                                               f"{said} changed nothing here: {why}")])


def _traffic(result: Result) -> tuple:
    """What a run's traffic was: its time (s), each link's bytes, saturated fraction and most
    flows at once, and the link the report names its bottleneck; not the links' utilisation or
    mean capacity, which are measured against the capacity a fault leaves and so move where the
    fault took what the link never used (a capacity the flows never fill binds no max-min share:
    the run is the same), unless that moves which link the report names (review 68)."""
    neck = result.bottleneck
    return result.time_s, neck.name if neck else None, sorted(
        (r.src, r.dst, r.bytes, r.saturated_fraction, r.max_flows) for r in result.links)


ENGINE_DEFAULTS = {"message_overhead": 0.0, "exact": False}
"""What the options every algorithm takes are without them (``reduce_bandwidth``: none, no
reduction time)."""


def _unfelt_by_value(point: Setup, algorithm: str, size: int, options: dict) -> list[Finding]:
    """``option_unread`` of the options that change nothing whatever the run does: one the
    algorithm takes none of (auto: no algorithm NCCL may pick takes it), one written at its
    own default (``given_as_default``), ``pxn`` where every rank is on one node."""
    takes = "none of the algorithms auto weighs takes" if algorithm == "auto" else f"{algorithm} takes no"
    said = [Finding("option_unread", f"options.{name}", f"options.{name} changed nothing here: " + (
        reductions_unread(point.collective, [algorithm]) if name == "reduce_bandwidth" else
        f"{takes} {name} (simnet algorithms lists what each takes)"))
        for name in unread_options(options, [algorithm], point.collective)]
    for name in given_as_default(point, algorithm, size, options):
        value = units.format_time(options[name]) if name == "message_overhead" else shown(options[name])
        own = {"group_by": f"groups the ranks as {algorithm}'s own default does",
               "ps_server": f"is the server {algorithm} takes by its own default"}.get(name,
                                                                                       f"is {algorithm}'s own default")
        said.append(Finding("option_unread", f"options.{name}",
                            f"options.{name} {value} {own}: it changed nothing here"))
    table = algorithms_for(point.collective)
    if options.get("pxn") is not None and algorithm in table and "pxn" in table[algorithm].options and \
            len(point.topo.groups("node")) == 1 and not any(w.link == "options.pxn" for w in said):
        said.append(Finding("option_unread", "options.pxn", (
            f"options.pxn {shown(options['pxn'])} changed nothing here: every rank is on one node, so no send "
            "leaves its host through a NIC (PXN picks which NIC a send across hosts leaves by)")))
    if options.get("inner") is not None and algorithm in table and "inner" in table[algorithm].options:
        level = options.get("group_by") or _builder_defaults(table[algorithm])["group_by"]
        if len(point.topo.groups(level)) == 1:
            said.append(Finding("option_unread", "options.inner", (
                f"options.inner {shown(options['inner'])} changed nothing here: every rank is in one group "
                f"(group_by: {level}), so nothing runs between groups")))
    return said


def calibration_said(topology: Topology, model: str | None, calibration: Calibration | None,
                     faults: tuple = ()) -> list[Finding]:
    """What a run over every GPU of ``topology`` says of its ``calibration`` (as ``simulate``
    does of each run): fitted on another machine (``calibration_other_hardware``), figures
    of a kind of step no route takes (``key_unread``); under ``model: ideal``, which reads
    no profile, that it ran without it (``calibration_unused``). A training step's groups
    together join every GPU, so what no route between them crosses, none of its exchanges
    does. ``faults`` (``Fault``) that take links down may send a route across the network."""
    point = Setup(topology, ALLREDUCE, model, nccl_env(), calibration)
    if calibration is None:
        return []
    if point.model == "ideal":
        return [_calibration_unused(calibration, point.model)]
    return foreign_calibration(calibration, topology, point.env) + _network_fit_unread(point, calibration,
                                                                            Conditions(faults=tuple(faults)), [])


def _calibration_unused(calibration: Calibration, model: str) -> Finding:
    """``calibration_unused``: ``model`` (ideal) reads no calibration profile."""
    return Finding("calibration_unused", calibration.source or "", (
        f"the calibration profile {calibration.source or ''} refines model: nccl or rccl only; model: {model} ran "
        "without it"))


def _network_fit_unread(point: Setup, calibration: Calibration, conditions: Conditions,
                        servers: list[str]) -> list[Finding]:
    """``key_unread`` for a profile's figures of one kind of step that no step of this run
    takes: its network figures (``network_step_latency``, ``network_bandwidth``) where every
    rank is on one node and no route between the run's GPUs and parameter servers crosses a
    network link (they refine the steps and links of NCCL's NET); its ``intra_step_latency``
    where no two of them are joined by NVLink and PCIe alone (every step crosses the network:
    hosts of one GPU). A parameter server behind a NIC, the ``servers`` a run of ps names on
    another host, or one host's GPUs cabled to a switch, cross the network; so may a route
    moved by a fault that takes a link down."""
    topo = point.topo
    ends = [*topo.gpus, *topo.parameter_servers, *servers]
    if any(fault.cuts for fault in conditions.faults) or len(topo.gpus) < 2:
        return []
    profile = calibration.source or "(a Calibration given to simulate)"
    said = []
    given = [name for name, unset in (("network_step_latency", 0.0), ("network_bandwidth", 1.0))
             if getattr(calibration, name) != unset]
    if given and len(topo.groups("node")) == 1 and not topo.network_links_between(ends):
        said.append(Finding("key_unread", f"{profile}: {', '.join(given)}", (
            f"the calibration profile {profile}'s {' and '.join(given)} refine{'s' if len(given) == 1 else ''} the "
            f"steps and links of the network between nodes, and no route of this run crosses one: "
            f"{'it' if len(given) == 1 else 'they'} changed nothing here")))
    if calibration.intra_step_latency != 0.0 and not topo.joined_inside_a_node(ends):
        said.append(Finding("key_unread", f"{profile}: intra_step_latency", (
            f"the calibration profile {profile}'s intra_step_latency refines the steps inside a node (over NVLink "
            "or PCIe), and no two of this run's GPUs share one: every step crosses the network, so it changed "
            "nothing here")))
    return said


def _builder_defaults(taken) -> dict:
    """The values ``taken``'s builder gives the options it takes when they are not given."""
    return {name: parameter.default for name, parameter in inspect.signature(taken.build).parameters.items()
            if name in taken.options and parameter.default is not inspect.Parameter.empty}


JUDGED_BY_THE_RUN = frozenset({"inner", "chunk_size", "channels"})
"""Options whose absence is not their builder's default: ``hierarchical`` without ``inner``
simulates both ways between groups and keeps the faster (``Setup.simulate``); the model
fills ``chunk_size`` and ``channels`` (NCCL's chunk and channels), judged by comparing the
runs' programs (``_unfelt``)."""


def given_as_default(point: Setup, algorithm: str, size: int, options: dict) -> list[str]:
    """The options given at the very value ``algorithm`` takes without them (what the model's
    plan fills in without it, else its builder's default, or ``ENGINE_DEFAULTS``; the same
    type too, so ``1`` is not ``True``): written out, they change nothing. Options whose
    default depends on the run (``JUDGED_BY_THE_RUN``) are judged elsewhere."""
    if algorithm == "auto":
        return []
    built = _builder_defaults(algorithms_for(point.collective)[algorithm])
    said = []
    for name, value in options.items():
        if value is None or name in JUDGED_BY_THE_RUN or (name not in built and name not in ENGINE_DEFAULTS):
            continue
        if name == "ps_server":  # (ps_servers is refused beside it: the builder's count)
            if _same_servers(point.topo, value, built["ps_servers"]):
                said.append(name)
            continue
        if name in ENGINE_DEFAULTS:
            default = ENGINE_DEFAULTS[name]
        else:
            planned = point.plan(algorithm, size, {k: v for k, v in options.items() if k != name}).options
            default = planned.get(name, built[name])
        if default is not None and type(value) is type(default) and (value == default or (
                name == "group_by" and _same_groups(point.topo, value, default))):
            said.append(name)
    return sorted(said)


def _same_servers(topology: Topology, ps_server: str | list[str], ps_servers: int) -> bool:
    """Whether ``ps_server`` names, in order, the servers a parameter server takes without it
    (the first ``ps_servers`` nodes of kind ps, else the first ranks)."""
    try:
        return parameter_servers(topology, topology.gpus, ps_server, ps_servers) == \
            parameter_servers(topology, topology.gpus, None, ps_servers)
    except ValueError:  # refused where the run builds it
        return False


def _same_groups(topology: Topology, level: str, other: str) -> bool:
    """Whether grouping the ranks by ``level`` makes the groups ``other`` makes (hosts that
    are each their own node: ``group_by: host`` is the default ``node``'s grouping)."""
    return sorted(topology.groups(level).values()) == sorted(topology.groups(other).values())


def reductions_unread(collective: str, algorithms: list[str]) -> str:
    """Why ``reduce_bandwidth`` changes nothing of ``algorithms``' runs of ``collective``
    (``unread_options`` says it does not): the collective sums nothing, or each of them sums
    only in a switch (``Algorithm.sums_in_switch``)."""
    if not lookup_collective(collective).reduces:
        return f"{lookup_collective(collective).title} reduces nothing (no reduction to time)"
    return (f"{', '.join(algorithms)} {'sums' if len(algorithms) == 1 else 'sum'} every piece in a switch (NVLink "
            "SHARP), and reduce_bandwidth times the sums GPUs and parameter servers make")


def unread_options(options: dict, algorithms: list[str], collective: str) -> list[str]:
    """The options given that none of ``algorithms`` reads (``auto``: any algorithm NCCL may
    pick; ``direct`` for point-to-point collectives)."""
    table = algorithms_for(collective)
    picks = ("direct",) if lookup_collective(collective).point_to_point else NCCL_RUNS  # what auto may run
    names = {name for a in algorithms for name in (picks if a == "auto" else [a]) if name in table}
    takes = {option for name in names for option in table[name].options}
    common = common_options(lookup_collective(collective).name)
    if names and all(table[name].sums_in_switch for name in names):  # every sum a switch's: no reduction to time
        common = tuple(option for option in common if option != "reduce_bandwidth")
    return sorted(k for k, v in options.items() if v is not None and k not in takes and k not in common)
