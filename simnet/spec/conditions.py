"""What goes wrong during a run: link and switch faults at a simulated time, and GPUs that
join the collective late (stragglers).

A scenario states them in YAML (``faults:``, ``stragglers:``); ``resolve_faults`` and
``straggler_delays`` turn the specs into what the replay needs (directed link indices and
capacity factors; a start delay per GPU in seconds). Times count from the start of the
collective.

>>> from simnet.topology.loader import topology_from_dict
>>> topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1,
...                                                      "gpus_per_host": 2, "spines": 2}})
>>> (fault,) = resolve_faults(topo, [{"at": "1 ms", "link": ["tor0", "spine1"], "bandwidth": "25%"}])
>>> fault.at, [topo.link_name(i) for i in fault.links], fault.factors.tolist()
(0.001, ['tor0->spine1', 'spine1->tor0'], [0.25, 0.25])
>>> straggler_delays(topo, {"r0h0-gpu1": "500 us"})["r0h0-gpu1"]
0.0005
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import networkx as nx
import numpy as np
from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator

from simnet import units
from simnet.engine.faults import Fault
from simnet.errors import SpecError, shown
from simnet.topology.graph import PS_PER_SECOND, Topology
from simnet.topology.schema import Latency, Strict

__all__ = ["FaultSpec", "StragglerDistribution", "resolve_faults", "straggler_delays", "check_reachable", "FaultError",
           "when"]


class FaultError(SpecError):
    """A fault or straggler spec that does not fit the topology; ``loc`` is its place in the spec list."""


def _bandwidth(value: Any) -> float | str:
    """``0``, ``'25%'`` or a bandwidth with its unit: a fraction as ``'25%'`` stays text."""
    if isinstance(value, bool):
        raise ValueError(f"{shown(value)} is not a bandwidth: give 0 (down), a share like '25%', or e.g. '100 Gb/s'")
    if value == 0 or value == "0":
        return 0.0
    if units.is_share(value):
        try:
            units.parse_share(value)
        except ValueError:
            raise ValueError(f"{value!r}: a share of the link's bandwidth is 0% .. 100%") from None
        return value
    bandwidth = units.parse_bandwidth(value)
    if bandwidth < 0:
        raise ValueError(f"{value!r}: a bandwidth must not be negative (0 takes the link down)")
    return bandwidth


class FaultSpec(Strict):
    """One fault: at ``at``, ``link`` [a, b] (both directions) or every link of ``node``
    goes ``down`` or runs at ``bandwidth`` (0, a share like ``'25%'``, or an absolute rate)."""

    at: Latency
    link: Annotated[list[str], Field(min_length=2, max_length=2)] | None = None
    node: str | None = None
    bandwidth: Annotated[float | str, BeforeValidator(_bandwidth)] | None = None
    down: bool | None = None

    @model_validator(mode="after")
    def _one_target_one_change(self) -> FaultSpec:
        if (self.link is None) == (self.node is None):
            raise ValueError("give link: [a, b] or node: id (one of them)")
        if (self.bandwidth is None) == (self.down is None):
            raise ValueError("give bandwidth (0, '25%', '100 Gb/s') or down: true (one of them)")
        if self.down is False:
            raise ValueError("down: false changes nothing; leave the fault out")
        return self

    def describe(self) -> str:
        """``link tor0-spine1 down`` / ``node spine1 at 25%``."""
        target = f"link {self.link[0]}-{self.link[1]}" if self.link else f"node {self.node}"
        share = units.parse_share(self.bandwidth) if isinstance(self.bandwidth, str) else None
        if self.down or self.bandwidth == 0 or share == 0:  # 0% too: the run takes the link down
            return f"{target} down"
        if isinstance(self.bandwidth, str):
            return f"{target} at {self.bandwidth.strip()}"
        return f"{target} at {units.format_bandwidth(self.bandwidth)}"


def _validated(model, raw: Any, loc: tuple):
    """``model`` validated from ``raw`` (a mapping the API was given); ``FaultError`` in one
    line at its first error's field where it does not fit (a file's are said by the
    scenario's schema, with their lines)."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(map(str, error["loc"]))
        raise FaultError((*loc, *error["loc"]), f"{field + ': ' if field else ''}"
                                                f"{error['msg'].removeprefix('Value error, ')}") from None


def resolve_faults(topology: Topology, specs: list[dict | FaultSpec]) -> list[Fault]:
    """Faults in time order (stable); ``FaultError`` names the spec that does not fit. A fault
    on an NVSwitch chip (``Topology.chip_links``: a chip joined with the others of its
    NVSwitch) changes that chip's share of each joined link it names (``_on_chips``)."""
    chips = {chip for _, group in topology.joined for chip in group}
    faults, on_chips = [], []
    for i, raw in enumerate(specs):
        spec = raw if isinstance(raw, FaultSpec) else _validated(FaultSpec, raw, (i,))
        if chips & set(spec.link or [spec.node]):
            on_chips.append((i, spec))
            continue
        if spec.link is not None:
            a, b = spec.link
            for end in (a, b):
                if end not in topology.node_index:
                    raise FaultError((i, "link"), f"no node {end!r} in {topology.name}")
            links = [topology.link_index[e] for e in ((a, b), (b, a)) if e in topology.link_index]
            if not links:
                raise FaultError((i, "link"), f"no link between {a!r} and {b!r} in {topology.name}")
        else:
            if spec.node not in topology.node_index:
                raise FaultError((i, "node"), f"no node {spec.node!r} in {topology.name}")
            links = [j for j, (u, v) in enumerate(topology.links) if spec.node in (u, v)]
            if not links:
                raise FaultError((i, "node"), f"{spec.node!r} has no links: nothing to take down")
        links = np.array(links, dtype=np.int64)
        faults.append(Fault(spec.at, links, _factors(i, spec, topology.capacity[links]), spec.describe(), i))
    chipped = {i for i, _ in on_chips}
    faults += _on_chips(topology, on_chips)
    for k, fault in enumerate(faults):  # (faults of chips at one instant add up: _on_chips)
        for other in faults[:k]:
            if len({other.index, fault.index} & chipped) == 1 and np.intersect1d(other.links, fault.links).size:
                first, then = sorted((other.index, fault.index))
                raise FaultError((then,), f"faults[{first}] and this fault change one GPU's link to its NVSwitch, one "
                                          "on a chip of it and one on the link or GPU as a whole, which simnet does "
                                          "not add up; give the chips' faults alone (one per chip), or the whole's")
            if other.at == fault.at and np.intersect1d(other.links, fault.links).size and \
                    not {other.index, fault.index} <= chipped:
                first, then = sorted((other.index, fault.index))
                raise FaultError((then,), f"faults[{first}] changes the same link at the same time "
                                          f"({units.format_time(fault.at)}): one of them would be ignored; give one")
    faults = sorted(faults, key=lambda f: f.at)
    _refuse_what_changes_nothing(topology, faults)
    return faults


def _factors(i: int, spec: FaultSpec, line: np.ndarray) -> np.ndarray:
    """What ``spec`` (the ``i``-th fault) leaves of links of ``line`` B/s, as factors of it."""
    if spec.down or spec.bandwidth == 0:
        return np.zeros(len(line))
    if isinstance(spec.bandwidth, str):
        factors = np.full(len(line), units.parse_share(spec.bandwidth))
        if 0 < factors[0] * line.min() < units.BANDWIDTH_RANGE[0]:  # a rate no link has: the run never ends
            raise FaultError((i, "bandwidth"), f"{spec.bandwidth.strip()} of the link's "
                             f"{units.format_bandwidth(float(line.min()))} is under 1 Kb/s, the least bandwidth "
                             "simnet accepts; give 0 (or down: true) to take it down")
        return factors
    if spec.bandwidth > line.min() * (1 + 1e-9):
        raise FaultError((i, "bandwidth"), f"{units.format_bandwidth(spec.bandwidth)} is more than the link's "
                         f"{units.format_bandwidth(float(line.min()))}: a fault only takes bandwidth away")
    return spec.bandwidth / line


def _on_chips(topology: Topology, specs: list[tuple[int, FaultSpec]]) -> list[Fault]:
    """Faults on NVSwitch chips (their index and spec), in time order: each sets its chip's
    links as written (a link of a GPU and a chip, or every link of a chip) to what it leaves
    of them (a chip's link down stays down), and becomes a fault of the joined links they are
    part of at the sum of their chips' shares as they stand then: a chip down leaves its GPUs
    the other chips' links, and faults of two chips add up."""
    kept = {chip: group[0] for _, group in topology.joined for chip in group}
    parts: dict[tuple[str, str], list[tuple[str, str]]] = {}  # a joined link -> the chips' links it sums
    for u, v in topology.chip_links:
        parts.setdefault((kept.get(u, u), kept.get(v, v)), []).append((u, v))
    now: dict[tuple[str, str], float] = {}  # a chip's link -> the factor it runs at
    changed: dict[tuple[float, tuple[str, str]], int] = {}  # (instant, a chip's link) -> the fault that changes it
    faults = []
    for i, spec in sorted(specs, key=lambda item: item[1].at):
        if spec.link is not None:
            a, b = spec.link
            for end in (a, b):
                if end not in topology.node_index and end not in kept:
                    raise FaultError((i, "link"), f"no node {end!r} in {topology.name}")
            written = [e for e in ((a, b), (b, a)) if e in topology.chip_links]
            if not written:
                raise FaultError((i, "link"), f"no link between {a!r} and {b!r} in {topology.name}")
        else:
            written = [e for e in topology.chip_links if spec.node in e]
        for e in written:  # two faults on one chip's link at one instant: one of them would be ignored
            first = changed.setdefault((spec.at, e), i)
            if first != i:
                raise FaultError((max(first, i),), (
                    f"faults[{min(first, i)}] changes the same link of a chip at the same time "
                    f"({units.format_time(spec.at)}): one of them would be ignored; give one"))
        factors = _factors(i, spec, np.array([topology.chip_links[e] for e in written]))
        now.update((e, 0.0 if now.get(e) == 0 else float(f)) for e, f in zip(written, factors))
        joined = sorted({(kept.get(u, u), kept.get(v, v)) for u, v in written}, key=topology.link_index.__getitem__)
        links = np.array([topology.link_index[e] for e in joined], dtype=np.int64)
        left = [sum(topology.chip_links[part] * now.get(part, 1.0) for part in parts[e]) for e in joined]
        faults.append(Fault(spec.at, links, np.array(left) / topology.capacity[links], spec.describe(), i))
    return faults


def _refuse_what_changes_nothing(topology: Topology, faults: list[Fault]) -> None:
    """``FaultError`` for a fault that leaves every link it names at the rate it has then: at
    its full rate with no fault before it (``100%``), or down since an earlier fault (a link
    down stays down, ``engine.faults``): read by nothing, as ``down: false`` would be."""
    factor: dict[int, float] = {}
    for fault in faults:
        now = np.array([factor.get(link, 1.0) for link in fault.links.tolist()])
        after = np.where(now == 0, 0.0, fault.factors)
        if np.allclose(after, now, rtol=1e-9, atol=0):
            why = ("its links are down since an earlier fault, and a link down stays down" if (now == 0).all() else
                   "its links already run at that rate" if (now < 1).any() else "its links run at their full rate")
            raise FaultError((fault.index,), f"{fault.what} {when(fault.at)} changes nothing: {why}; leave it out")
        factor.update(zip(fault.links.tolist(), after.tolist()))


def check_reachable(topology: Topology, faults: list[Fault], endpoints: list[str]) -> None:
    """Raise ``FaultError`` (loc: the fault's ``index``) when the links down after a fault
    leave some endpoint unable to reach another: simnet will not guess a partial result.
    Links stay down once down (a later fault on them changes nothing)."""
    down: set[int] = set()
    for fault in faults:
        if not fault.cuts:
            continue
        down |= set(fault.links[fault.factors == 0].tolist())
        cut = _first_cut(topology.without(down), endpoints)
        if cut:
            raise FaultError((fault.index,), f"{fault.what} {when(fault.at)} cuts {cut[1]} off from "
                             f"{cut[0]}: no route survives (the run would hang); take fewer links down")


def _first_cut(view: Topology, endpoints: list[str]) -> tuple[str, str] | None:
    """A pair of endpoints with no route left, or None.

    Endpoints never forward, so with every link both ways two endpoints reach each other
    exactly when they are linked directly or attach to one connected component of the
    forwarding nodes: one pass over the graph. With one-way links, a search per endpoint.
    """
    if (view.reverse < 0).any():
        for source in endpoints:
            reached, _ = view.shortest_paths(source)
            missing = [e for e in endpoints if e not in reached]
            if missing:
                return source, missing[0]
        return None
    forwarding = nx.Graph()
    forwarding.add_nodes_from(view.forwarding)
    forwarding.add_edges_from((u, v) for u in view.forwarding for v in view.neighbours(u) if v in view.forwarding)
    component = {node: i for i, nodes in enumerate(nx.connected_components(forwarding)) for node in nodes}
    attached = {e: frozenset(component[v] for v in view.neighbours(e) if v in component) for e in endpoints}
    direct = {e: set(view.neighbours(e)) for e in endpoints}
    groups: dict[frozenset, str] = {}
    for e in endpoints:
        groups.setdefault(attached[e], e)
    kinds = [(attachment, e) for attachment, e in groups.items() if attachment]
    for i, (a_set, a) in enumerate(kinds):
        for b_set, b in kinds[i + 1:]:
            if not a_set & b_set:
                return a, b
    lonely = [e for e in endpoints if not attached[e]]  # only direct links: each pair needs its own
    for a in lonely:
        for b in endpoints:
            if b != a and b not in direct[a]:
                return a, b
    return None


def when(at: float) -> str:
    """``at 1 ms``, or ``from the start`` for 0."""
    return f"at {units.format_time(at, short=True)}" if at > 0 else "from the start"


class StragglerDistribution(Strict):
    """Start delays drawn per GPU (in rank order) from a seeded distribution with this mean:
    ``lognormal`` (``sigma`` of the underlying normal), ``exponential`` or ``uniform`` (0 .. 2 x mean)."""

    distribution: Literal["lognormal", "exponential", "uniform"]
    mean: Latency
    # -0.0 is 0 (numpy's lognormal refuses its sign: fuzz round az, F3)
    sigma: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False), AfterValidator(lambda sigma: sigma + 0.0)] = 1.0
    seed: Annotated[int, Field(ge=0, strict=True)] = 0


def straggler_delays(topology: Topology, spec: dict | StragglerDistribution | None) -> dict[str, float]:
    """Start delay in seconds per GPU of the run (GPUs not named: 0), from ``{gpu: time}``
    (any GPU of the network; those outside the run's ranks are ignored, so sweeps over GPU
    counts keep working) or a distribution."""
    if not spec:
        return {}
    if isinstance(spec, dict) and "distribution" not in spec:
        delays = {}
        for gpu, text in spec.items():
            if gpu not in topology.node_index or topology.kind(gpu) != "gpu":
                raise FaultError((gpu,), f"{gpu!r} is not a GPU of {topology.name}")
            try:  # seconds as a float from the API; text with its unit from a file
                delay = float(text) if isinstance(text, float) or (text == 0 and not isinstance(text, bool)) \
                    else units.parse_time(text)  # 0 needs no unit
            except ValueError as exc:
                raise FaultError((gpu,), str(exc)) from None
            if not 0 <= delay <= units.TIME_RANGE[1]:
                raise FaultError((gpu,), "a start delay is 0 or more (and at most a day)")
            delays[gpu] = round(delay * PS_PER_SECOND) / PS_PER_SECOND  # as the engine keeps it: 1000 ns is 1 us
        return {gpu: delays[gpu] for gpu in topology.gpus if gpu in delays}  # GPUs outside this run: no say
    dist = spec if isinstance(spec, StragglerDistribution) else _validated(StragglerDistribution, spec, ())
    rng = np.random.default_rng(dist.seed)
    n = len(topology.gpus)
    if dist.distribution == "lognormal":
        draws = rng.lognormal(math.log(dist.mean) - dist.sigma**2 / 2 if dist.mean > 0 else 0.0, dist.sigma, n)
        draws = draws if dist.mean > 0 else np.zeros(n)
    elif dist.distribution == "exponential":
        draws = rng.exponential(dist.mean, n)
    else:
        draws = rng.uniform(0, 2 * dist.mean, n)
    if n and draws.max() > units.TIME_RANGE[1]:  # a draw the engine would refuse where no line can be named
        raise FaultError(("mean",), f"{dist.distribution} of mean {units.format_time(dist.mean)} draws "
                         f"{units.format_time(float(draws.max()))} for {topology.gpus[int(draws.argmax())]}, over a "
                         "day, the longest start delay simnet accepts: give a smaller mean")
    return {gpu: float(d) for gpu, d in zip(topology.gpus, draws)}
