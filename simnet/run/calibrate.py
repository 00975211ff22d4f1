"""Fit the nccl model to a system's own nccl-tests logs (``simnet calibrate``).

Each log row is one point: its rank count (from the log's device lines), its size, and
the faster of its out-of-place and in-place times. simnet predicts every point as
nccl-tests runs it (``auto``: what NCCL picks), fixes that algorithm and protocol, and
fits the ``Calibration`` parameters (three latencies, the network's rate factor and a rate
factor at each of five sizes) by least squares on log time, Levenberg-Marquardt
on a Jacobian of finite differences, each parameter gently held towards its default so a
log that says nothing about one (a single node about the network) leaves it alone. Logs
from different rank counts (one node, and several) tell a step's latency from the
start-up latency; rows of one rank count barely can (they take nearly the same steps),
so there the per-step latencies keep NCCL's figures and only the start-up latency is
fitted (fitted freely, a profile from one node count predicted other node counts worse
than none: docs/validation_calibrated.md).

>>> points = [CalibrationPoint("x.log", 8, 2**20, 30.0, 1)]
>>> points[0].label
'x.log:1'
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from simnet import units
from simnet.errors import InputError
from simnet.io.nccltests import Log
from simnet.model.calibration import KNOTS, Calibration
from simnet.model.interface import library_model
from simnet.results.result import Finding
from simnet.run.simulate import simulate
from simnet.topology.hardware import GPUS, NVLINK
from simnet.tuning.tables import nvls_reduces

__all__ = ["CalibrationPoint", "Fit", "points_of", "fit", "PARAMETERS", "error_factor"]

LATENCIES = ("base_latency", "intra_step_latency", "network_step_latency")
PARAMETERS = LATENCIES + ("network_bandwidth",) + tuple(f"bandwidth@{size}" for size in KNOTS)
"""Three latencies, the network's rate factor, and the rate factor at each of ``KNOTS``."""
_STEP = {"base_latency": 1e-6, "intra_step_latency": 0.2e-6, "network_step_latency": 1e-6, "rate": 0.02}
_SCALE = {"base_latency": 20e-6, "intra_step_latency": 2e-6, "network_step_latency": 20e-6, "rate": 0.5}
"""How far each parameter plausibly moves; the prior that holds it is one such scale wide."""
_PRIOR = 1e-4
_SMOOTH = 3e-2
"""How strongly neighbouring size factors are held together (a size the logs lack takes its neighbours')."""
_BOUNDS = {"base_latency": (-20e-6, 1e-3), "intra_step_latency": (-1e-6, 50e-6),
           "network_step_latency": (-5e-6, 1e-3), "rate": (0.1, 1.5)}


def error_factor(predicted: float, measured: float) -> float:
    """``max(predicted/measured, measured/predicted) - 1``: how far off, either way (0 is exact).

    >>> error_factor(110.0, 100.0) == error_factor(100.0, 110.0)
    True
    """
    return max(predicted / measured, measured / predicted) - 1


@dataclass(frozen=True)
class CalibrationPoint:
    """One measured size: ranks, bytes, measured time (us; the median of its runs) and the
    log line of its first run."""

    log: str
    ranks: int
    size_bytes: int
    measured_us: float
    line: int
    nvls: bool = True  # NVLink SHARP could reduce the row's type and redop (``tables.nvls_reduces``)

    @property
    def label(self) -> str:
        return f"{self.log}:{self.line}"


@dataclass
class Fit:
    """The fitted calibration, and per point what NCCL runs and the time before and after."""

    calibration: Calibration
    points: list[CalibrationPoint]
    runs: list[tuple[str, str | None]]  # (algorithm, protocol) per point
    before_us: list[float]
    after_us: list[float]
    held: tuple[str, ...] = ()  # parameters kept at NCCL's figures (as Calibration.parameters names them)
    at_bound: tuple[str, ...] = ()  # parameters the fit pushed to the edge of their range (likewise)
    unread: tuple[Finding, ...] = ()  # NCCL variables of the logged runs that no row's NCCL decision read

    def note(self, name: str) -> str:
        """How ``Calibration.parameters``' ``name`` came out: '' (fitted), ' (held)' or ' (at its bound)'."""
        return " (held)" if name in self.held else " (at its bound)" if name in self.at_bound else ""

    @staticmethod
    def _error(predicted: list[float], points: list[CalibrationPoint]) -> list[float]:
        return [error_factor(p, q.measured_us) for p, q in zip(predicted, points)]

    @property
    def errors_before(self) -> list[float]:
        return self._error(self.before_us, self.points)

    @property
    def errors_after(self) -> list[float]:
        return self._error(self.after_us, self.points)

    @property
    def rank_counts(self) -> list[int]:
        """The rank counts the fitted rows ran on."""
        return sorted({p.ranks for p in self.points})

    @property
    def warning(self) -> str | None:
        """Why the profile may not carry over to other rank counts, or None."""
        if len(self.rank_counts) > 1:
            return None
        return (f"every row ran on {self.rank_counts[0]} ranks, which barely tells a step's latency from the "
                "start-up latency: the steps keep NCCL's figures and only the start-up latency was fitted; for "
                "other node counts add a log from another one (docs/validation_calibrated.md)")

    @property
    def size_warning(self) -> str | None:
        """Why the profile's rate factors are NCCL's own figures (rows of one size), or None."""
        sizes = {p.size_bytes for p in self.points}
        if len(sizes) > 1:
            return None
        return (f"every row moved {units.format_size(sizes.pop())}, which cannot tell the start-up latency from the "
                "rate factors: the rates (bandwidth at every size, network_bandwidth) keep NCCL's figures; for the "
                "rates add rows of other sizes (nccl-tests -b and -e)")

    @staticmethod
    def geomean(errors: list[float]) -> float:
        return math.exp(sum(math.log1p(e) for e in errors) / len(errors)) - 1


def points_of(logs: list[Log], topology, gpus: int | list[int] | None = None) -> list[CalibrationPoint]:
    """The points of ``logs`` on ``topology``: each log's ranks from its device lines, or
    ``gpus`` (one count for every log, or one per log). A size measured more than once on one
    rank count (and kind of reduction), in one log or across several, is one point at the
    median of its times: runs count alike however they are filed."""
    repeats: dict[tuple, list] = {}  # (ranks, size, NVLS reduces) -> (log, row) of every run of it
    for i, log in enumerate(logs):
        log.refuse_unless_allreduce()
        given = gpus[i] if isinstance(gpus, list) else gpus
        if log.ranks and given and given != log.ranks:
            raise InputError(f"the log's device lines list {log.ranks} ranks, --gpus says {given}", log.path)
        ranks = log.ranks or given
        if ranks is None:
            raise InputError("the log lists no ranks ('#  Rank  N ...' lines); give --gpus N", log.path)
        if ranks < 2:
            raise InputError("the log ran on one rank: an AllReduce over one GPU moves nothing to fit", log.path)
        if ranks > len(topology.gpus):
            raise InputError(f"the log ran on {ranks} ranks but the topology has {len(topology.gpus)} GPUs",
                             log.path, log.rank_lines[-1] if log.rank_lines else None)
        _refuse_another_machine(log, topology, ranks)
        _refuse_ranks_the_rows_contradict(log, ranks, "the log's device lines list" if log.ranks else "--gpus says")
        _refuse_rows_faster_than_the_links(log, topology, ranks)
        for row in log.rows:
            repeats.setdefault((ranks, row.size_bytes, nvls_reduces(row.dtype, row.op)), []).append((log, row))
    return [CalibrationPoint(runs[0][0].path, ranks, size, float(np.median([row.best_us for _, row in runs])),
                             runs[0][1].line, nvls)
            for (ranks, size, nvls), runs in repeats.items()]


def _refuse_ranks_the_rows_contradict(log: Log, ranks: int, said: str) -> None:
    """``InputError`` when the log's own rows were measured on another rank count: nccl-tests
    prints an AllReduce's busbw as its algbw (size / time) x 2(n-1)/n, so the row with the
    most digits (the largest busbw) tells n, to the rounding of its printed columns."""
    rows = [row for row in log.rows if row.size_bytes > 0 and row.time_us > 0 and row.busbw_GBps >= 1.0]
    if not rows:
        return
    expected = 2 * (ranks - 1) / ranks

    def ratio(row) -> float:  # busbw over the algbw nccl-tests computes (size / time, GB/s)
        return row.busbw_GBps / (row.size_bytes / (row.time_us * 1e3))

    def agrees(row, factor: float = expected) -> bool:  # to two printed decimals of busbw, and the time's digits
        return abs(ratio(row) / factor - 1) <= 0.0051 / row.busbw_GBps + 0.0051 / row.time_us + 5e-4

    row = max(rows, key=lambda r: r.busbw_GBps)
    if not agrees(row):
        count = round(2 / (2 - ratio(row))) if ratio(row) < 2 else 0  # the n whose 2(n-1)/n it is, if any
        other = round(1 / (1 - ratio(row))) if ratio(row) < 1 else 0  # the n whose (n-1)/n it is, if any
        if count >= 2 and agrees(row, 2 * (count - 1) / count):
            told = f" ({count} ranks)"
        elif other >= 2 and agrees(row, (other - 1) / other):
            told = (f" (at no rank count: it is (n-1)/n at {other} ranks, an AllGather's or ReduceScatter's: are these "
                    "all_reduce_perf rows?)")
        else:
            told = " (at no rank count)"
        raise InputError(f"{said} {ranks} ranks, but the log's rows were measured on another count: at "
                         f"{units.format_size(row.size_bytes)} busbw {row.busbw_GBps:g} GB/s is {ratio(row):.4g} x the "
                         f"algbw (size / time), which nccl-tests makes 2(n-1)/n{told}; {ranks} ranks make it "
                         f"{expected:.4g}", f"{log.path}:{row.line}")
    odd = next((r for r in rows if not agrees(r)), None)  # the others, beside the one that told the count
    if odd is not None:
        raise InputError(f"busbw: {odd.busbw_GBps:g} GB/s is {ratio(odd):.4g} x this row's algbw (size / time), where "
                         f"nccl-tests prints 2(n-1)/n = {expected:.4g} for the log's {ranks} ranks (as its other rows "
                         "do): the row is garbled", f"{log.path}:{odd.line}")


def _refuse_rows_faster_than_the_links(log: Log, topology, ranks: int) -> None:
    """``InputError`` naming the first row faster than the first ``ranks`` GPUs' links allow.

    Every element of an AllReduce's result depends on every rank's input, so every rank's
    whole buffer (S bytes) must leave it in some form (raw, or folded into a partial sum, by
    any algorithm, in-network reduction included), and likewise leave each host, whose GPUs
    hold the host's share: a row of S bytes takes at least S over the out-going capacity of
    the rank or host with the least of it."""
    gpus = topology.gpus[:ranks]
    graph, index = topology.graph, topology.link_index
    ranked = set(gpus)
    sides = [({gpu}, gpu) for gpu in gpus]
    hosts = topology.groups("host", gpus)
    if len(hosts) > 1:  # a host: its ranks and the switches and NICs inside it (no other GPU forwards)
        inside: dict[str, set[str]] = {host: set() for host in hosts}
        for node, attrs in graph.nodes(data=True):
            if attrs.get("host") in inside and (node in ranked or attrs.get("kind") != "gpu"):
                inside[attrs["host"]].add(node)
        sides += [(nodes, f"host {host}") for host, nodes in inside.items()]
    least, where = min((sum(topology.capacity[index[(u, v)]] for u in side for v in graph.successors(u)
                            if v not in side and (v in ranked or graph.nodes[v].get("kind") != "gpu")), name)
                       for side, name in sides)
    for row in log.rows:
        floor_us = row.size_bytes / least * 1e6
        if row.best_us < floor_us * (1 - 1e-9):
            raise InputError(f"{units.format_size(row.size_bytes)} in {row.best_us:g} us is faster than this "
                             f"topology's links carry: every rank's buffer must leave {where} over "
                             f"{least / 1e9:g} GB/s, at least {floor_us:.4g} us; fit a log of the machine the "
                             "topology describes (or check its bandwidths)", f"{log.path}:{row.line}")


def _refuse_another_machine(log: Log, topology, ranks: int) -> None:
    """``InputError`` when the log's device lines name another GPU than the topology's first
    ``ranks`` GPUs, or place the ranks on another number of hosts: the fit would time another
    machine than the one it is fitted to."""
    gpus = topology.gpus[:ranks]
    model = topology.gpu_model(gpus[0])
    if log.library is not None:  # the program's own word: nccl-tests runs NCCL, rccl-tests RCCL (AMD GPUs)
        library = library_model(topology.subset(gpus))
        if log.library[0] != library:
            runs = "AMD Instinct GPUs, which run RCCL" if library == "rccl" else "NVIDIA GPUs, which run NCCL"
            raise InputError(f"the log is {log.library[0]}-tests' output, the topology's GPUs are "
                             f"{model or 'unnamed (taken as A100s)'}: {runs}; fit a log of the machine the topology "
                             "describes", log.path, log.library[1])
    first = dict(reversed(list(zip(log.devices, log.device_lines))))  # each device, the first line naming it
    for device in dict.fromkeys(log.devices if model is not None else []):  # a GPU the topology names
        named = [name for name in GPUS if re.search(rf"(?<![A-Za-z0-9]){name}(?![0-9])", device, re.IGNORECASE)]
        amd = re.search(r"\bAMD\b|Instinct|\bMI\d{3}", device, re.IGNORECASE)
        other = re.search(r"(?<![A-Za-z0-9])(GH\d{3}|[A-Z]{1,2}\d{2,3})(?![0-9])", device)  # GH200, L4, ...
        card = re.search(r"\bPCIe\b|\bNVL\b", device) and topology.link_type[
            topology.link_index[(gpus[0], topology.neighbours(gpus[0])[0])]] == NVLINK  # a PCIe card, not SXM
        if (named and model not in named) or (amd and not named) or (not named and other) or card:
            raise InputError(f"the log's device lines name {device!r}, the topology's GPUs are {model}"
                             f"{' on NVLink' if card else ''}: fit a log of the machine the topology describes",
                             log.path, first[device])
    hosts = len(dict.fromkeys(log.hosts))
    if len(log.hosts) == ranks and hosts != len(topology.groups("host", gpus)):
        raise InputError(f"the log's device lines place its {ranks} ranks on {hosts} host{'s' if hosts > 1 else ''}, "
                         f"the topology's first {ranks} GPUs are on {len(topology.groups('host', gpus))}: fit a log "
                         "of the machine the topology describes", log.path, log.rank_lines[0])
    if len(log.hosts) == ranks:  # as many hosts: the same ranks must share each
        logged = _partition(log.hosts)
        placed = _partition([topology.graph.nodes[gpu].get("host") for gpu in gpus])
        if logged != placed:
            apart = min(sorted(group) for group in logged - placed)
            raise InputError(f"the log's device lines put ranks {', '.join(map(str, apart))} on host "
                             f"{log.hosts[apart[0]]}, the topology's first {ranks} GPUs share hosts otherwise: fit a "
                             "log of the machine the topology describes (its ranks in the topology's order)", log.path,
                             log.rank_lines[apart[0]])


def _partition(hosts: list) -> set[frozenset[int]]:
    """Ranks grouped by the host each is on (``hosts[rank]``)."""
    groups: dict = {}
    for rank, host in enumerate(hosts):
        groups.setdefault(host, set()).add(rank)
    return {frozenset(group) for group in groups.values()}


def _kind(name: str) -> str:
    return name if name in LATENCIES else "rate"


def _label(name: str) -> str:
    """A parameter as ``Calibration.parameters`` names it (``bandwidth@65536``: ``bandwidth at 64 KiB``)."""
    return f"bandwidth at {units.format_size(int(name.split('@')[1]))}" if "@" in name else name


def _vector(calibration: Calibration) -> np.ndarray:
    latencies = [getattr(calibration, name) for name in LATENCIES]
    return np.array(latencies + [calibration.network_bandwidth] + [calibration.bandwidth_at(s) for s in KNOTS])


def _calibration(values: np.ndarray, bounds: Mapping[str, tuple[float, float]] = _BOUNDS) -> Calibration:
    clipped = [float(np.clip(v, *bounds[_kind(name)])) for name, v in zip(PARAMETERS, values)]
    return Calibration(*clipped[:3], bandwidth=dict(zip(KNOTS, clipped[4:])), network_bandwidth=clipped[3])


def _bounds(topology, points: list[CalibrationPoint], env: Mapping[str, str] | None) -> dict[str, tuple[float, float]]:
    """``_BOUNDS`` with each latency's lower bound raised so that no launch latency and no
    per-step latency NCCL's model has on the fitted ranks goes below zero
    (``launch_latencies``, ``step_latency_floors``): a profile that takes one below zero is
    refused at run time, and ``auto`` simulates every algorithm NCCL could pick, so the fit
    must not write one. A margin of 0.1 % keeps the profile's four written digits within
    the bound."""
    from simnet.run.nccl_env import nccl_system

    systems = [nccl_system(topology.subset(topology.gpus[:ranks]), dict(env or {})) for ranks in
               {p.ranks for p in points}]
    least = {"base_latency": min(min(launch_latencies(system).values()) for system in systems)}
    for system in systems:
        for name, floor in step_latency_floors(system).items():
            least[name] = min(least.get(name, np.inf), floor)
    bounds = dict(_BOUNDS)
    for name, floor in least.items():
        low, high = _BOUNDS[name]
        bounds[name] = (max(low, -floor * 1e-6 * (1 - 1e-3)) + 0.0, high)  # + 0.0: no "-0 us" in a profile
    return bounds


def step_latency_floors(system) -> dict[str, float]:
    """The least per-step latency (us) NCCL's model has on ``system`` before a calibration,
    in-host (NVLink and PCIe steps: what ``intra_step_latency`` shifts) and across hosts
    (``network_step_latency``; only with more than one host), over every (row, protocol)
    ``launch_latencies`` lists."""
    from simnet.model.nccl import NcclPlan, step_latencies
    from simnet.topology.hardware import NET, NVLINK, PCIE

    floors: dict[str, float] = {}
    base = Calibration()
    for row, protocol in launch_latencies(system):
        latency = step_latencies(NcclPlan(protocol, {}, row, True, system, base))
        floors["intra_step_latency"] = min(floors.get("intra_step_latency", np.inf), latency[NVLINK], latency[PCIE])
        if system.nodes > 1:
            floors["network_step_latency"] = min(floors.get("network_step_latency", np.inf), latency[NET])
    return floors


def launch_latencies(system) -> dict[tuple[str, str], float]:
    """NCCL's model's launch latency (us, ``nccl.launch_latency`` before a calibration) of
    every (algorithm row, protocol) it may time on ``system``: its own algorithms where it
    enables them for any function, and Ring's and Tree's rows, which time point-to-point
    algorithms (LL and Simple)."""
    from simnet.model.nccl import NcclPlan, launch_latency
    from simnet.tuning import predict, tables

    rows = {(row, protocol) for function, names in tables.FUNCTION_ALGORITHMS.items() for row in names
            for protocol in tables.PROTOCOLS if predict.enabled(system, row, protocol, function)}
    rows |= {(row, protocol) for row in ("Ring", "Tree") for protocol in ("LL", "Simple")}
    base = Calibration()
    return {(row, protocol): launch_latency(NcclPlan(protocol, {}, row, True, system, base))
            for row, protocol in sorted(rows) if row in predict.base_latency(system)}


def _touches(point: CalibrationPoint, name: str) -> bool:
    """Whether parameter ``name`` can change ``point`` (a size factor only near its size)."""
    if not name.startswith("bandwidth@"):
        return True
    knot = int(name.split("@")[1])
    ratio = max(point.size_bytes, 1) / knot
    return 1 / 16 < ratio < 16 or (knot == KNOTS[0] and ratio <= 1) or (knot == KNOTS[-1] and ratio >= 1)


def fit(topology, points: list[CalibrationPoint], iterations: int = 8,
        progress: Callable[[int, int], None] | None = None, env: Mapping[str, str] | None = None) -> Fit:
    """Fit a ``Calibration`` to ``points`` (module docstring); ``progress(done, total)`` as
    simulations finish. ``env``: the NCCL variables the logged runs had (``NCCL_ALGO``,
    ``NCCL_NVLS_ENABLE``, ...; default none), which decide what NCCL ran for each row."""
    base = Calibration()
    logged = [{**(env or {}), **({} if p.nvls else {"NCCL_NVLS_ENABLE": "0"})} for p in points]  # as NCCL ran each op
    chosen = [simulate(topology, "auto", p.size_bytes, gpus=p.ranks, calibration=base, env=logged[i])  # NCCL's pick
              for i, p in enumerate(points)]
    runs = [(r.algorithm, r.protocol) for r in chosen]
    unread = tuple(Finding("key_unread", name, (
        f"{name}={value} changed nothing in the fit: NCCL decides every row of the logs alike without it (simnet "
        "run on a row's GPUs and size says why)")) for name, value in sorted((env or {}).items())
        if all(any(w.kind == "key_unread" and w.link == name for w in r.warnings) for r in chosen))
    bounds = _bounds(topology, points, env)
    total = len(points) * len(PARAMETERS) * iterations
    done = [0]

    def predict(calibration: Calibration, rows: list[int] | None = None) -> np.ndarray:
        times = []
        for i in range(len(points)) if rows is None else rows:
            point, (algorithm, protocol) = points[i], runs[i]  # NCCL's pick, under the variables it ran with
            picked = {**logged[i], **({"NCCL_PROTO": protocol} if protocol else {})}
            result = simulate(topology, algorithm, point.size_bytes, gpus=point.ranks, env=picked,
                              calibration=calibration)
            times.append(result.time_s * 1e6)
            done[0] += 1
            if progress:
                progress(min(done[0], total), total)
        return np.array(times)

    measured = np.log([p.measured_us for p in points])
    scale = np.array([_SCALE[_kind(name)] for name in PARAMETERS])
    prior = _vector(base)
    knots = len(KNOTS)
    smooth = np.zeros((knots - 1, len(PARAMETERS)))  # neighbouring size factors held together
    for i in range(knots - 1):
        smooth[i, 4 + i], smooth[i, 5 + i] = -1, 1

    # rows of one rank count take nearly the same steps (by size NCCL may pick an algorithm
    # with other steps): a per-step latency and the start-up latency explain them about
    # equally, so the steps keep NCCL's figures; rows of one size cannot tell the start-up
    # latency from the rate factors, which then keep theirs (fuzz round ay, F1: one 1 MiB row
    # fitted every size's factor and the network's, and moved a 1 GiB prediction 21 % off)
    held = set(LATENCIES[1:]) if len({p.ranks for p in points}) == 1 else set()
    if len({p.size_bytes for p in points}) == 1:
        held |= set(PARAMETERS[3:])

    def jacobian_at(x: np.ndarray, times: np.ndarray) -> np.ndarray:
        columns = np.zeros((len(points), len(PARAMETERS)))
        for j, name in enumerate(PARAMETERS):
            rows = [i for i, p in enumerate(points) if _touches(p, name)]
            if not rows or name in held:
                continue
            step = np.zeros(len(PARAMETERS))
            size = _STEP[_kind(name)]
            step[j] = size if x[j] + size <= bounds[_kind(name)][1] else -size
            moved = predict(_calibration(x + step, bounds), rows)
            columns[rows, j] = (np.log(moved) - np.log(times[rows])) / step[j]
        return columns

    best = prior.copy()
    before = best_times = predict(base)
    residual = np.log(before) - measured
    best_cost = float(residual @ residual)
    damping = 1e-3
    jacobian = jacobian_at(best, best_times)
    for _ in range(iterations):
        scaled = jacobian * scale
        lhs = scaled.T @ scaled + (damping + _PRIOR) * np.eye(len(PARAMETERS)) + _SMOOTH * smooth.T @ smooth
        rhs = -(scaled.T @ residual + _PRIOR * (best - prior) / scale + _SMOOTH * smooth.T @ (smooth @ (best / scale)))
        trial = _vector(_calibration(best + np.linalg.solve(lhs, rhs) * scale, bounds))
        times = predict(_calibration(trial, bounds))
        trial_residual = np.log(times) - measured
        cost = float(trial_residual @ trial_residual)
        if cost < best_cost:
            converged = best_cost - cost < 1e-6 * len(points)
            best, best_cost, best_times, residual = trial, cost, times, trial_residual
            damping /= 3
            if converged:
                break
            jacobian = jacobian_at(best, best_times)  # Levenberg-Marquardt: re-linearise where we are
        else:
            damping *= 10
    edges = [name for name, value in zip(PARAMETERS, best) if name not in held
             and min(abs(value - edge) for edge in bounds[_kind(name)]) < 1e-3 * _SCALE[_kind(name)]]
    return Fit(_calibration(best, bounds), points, runs, before.tolist(), best_times.tolist(),
               tuple(_label(name) for name in PARAMETERS if name in held), tuple(_label(name) for name in edges),
               unread)
