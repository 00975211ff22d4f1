"""Scenario YAML: a topology, sizes, algorithms, GPUs and options.

``load_scenario(path)`` validates everything up front and reports mistakes as one line
naming file, line and field; ``simnet.run_scenario(scenario)`` simulates every (size,
algorithm) point.

>>> scenario = scenario_from_dict({"name": "demo", "topology": {"name": "t", "generate": {"kind": "nvswitch"}},
...                                "sizes": "1 MiB .. 4 MiB x2", "algorithms": ["ring", "tree"]})
>>> [s // 2**20 for s in scenario.sizes], scenario.algorithms
([1, 2, 4], ['ring', 'tree'])
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError, field_validator

from simnet import units
from simnet.engine.faults import Fault
from simnet.errors import Cut, InputError, as_written, kind_of, shown
from simnet.io.files import missing_file
from simnet.io.yamlsource import Source, format_loc, load_yaml
from simnet.model.calibration import load_calibration
from simnet.model.interface import resolve_model
from simnet.results.result import Finding
from simnet.schedule.algorithms.direct import named_servers, parameter_servers, servers_used
from simnet.schedule.algorithms.hierarchical import check_group_by
from simnet.schedule.catalog import algorithms_for
from simnet.schedule.kinds import COLLECTIVES
from simnet.schedule.registry import COMMON_OPTIONS
from simnet.spec.conditions import (
    FaultError,
    FaultSpec,
    StragglerDistribution,
    check_reachable,
    resolve_faults,
    straggler_delays,
)
from simnet.spec.jobs import BACKGROUND_PERIOD, JobError, JobSpec, check_jobs, known_placement, place_jobs
from simnet.spec.options import Options
from simnet.spec.values import parse_cost, parse_sizes
from simnet.spec.workloads import Training, Workload
from simnet.topology.generators import ONE_HOST_UNREAD
from simnet.topology.graph import PS_PER_SECOND, Topology
from simnet.topology.hardware import GPUS
from simnet.topology.loader import load_topology, routes_choose_between, topology_from_dict
from simnet.topology.schema import Name, Strict
from simnet.units import DTYPE_BYTES
from simnet.workloads.transformer import exchange_bytes, forward_seconds

__all__ = ["Scenario", "load_scenario", "scenario_from_dict", "AUTO", "axis_changes_no_point", "nested_twice"]

AUTO = "auto"


def _gpu_choice(value: object) -> object:
    """Refuse a GPU count below one in words the user can act on."""
    if isinstance(value, bool) or isinstance(value, float):
        whole = isinstance(value, float) and value.is_integer()
        raise ValueError(f"{value!r}: give a GPU count as a whole number{' without a decimal point' if whole else ''} "
                         f"(e.g. {int(value) if whole and value >= 1 else 8}), a list of GPU names, or all")
    if isinstance(value, int) and value < 1:
        raise ValueError(f"{value}: give a GPU count of at least 1, a list of GPU names, or all")
    if isinstance(value, str) and value != "all":
        how = "unquoted" if value.strip().isdigit() else "in the digits 0-9"
        raise ValueError(f"{value!r}: give a GPU count ({how}, e.g. 8), a list of GPU names, or all")
    return value


def axis_changes_no_point(key: str) -> str | None:
    """Why a sweep axis (``--set`` or the file's ``sweep:``) changes no point (None when it
    may): labels, what ``simnet compare`` reads (costs, variants), or the sweep's own axes."""
    first = key.split(".")[0]
    if key in ("name", "description", "topology.name", "topology.description"):
        return f"labels the {'topology' if first == 'topology' else 'scenario'} and changes no point"
    if first == "cost":
        return "is what simnet compare weighs an option by and changes no point of a sweep"
    if first == "variants":
        return "are simnet compare's options; a sweep runs none of them"
    if first == "sweep":
        return "holds the file's axes, and each axis is one already (e.g. gpus: [8, 16], or --set gpus=8,16)"
    return None


def nested_twice(keys) -> str | None:
    """Why dotted ``keys`` set one value twice (``options`` and ``options.channels``: one would
    replace the other, by the order written), or None."""
    keys = list(keys)
    for key in keys:
        inner = next((other for other in keys if other.startswith(key + ".")), None)
        if inner is not None:
            return f"{inner}: {key} is set too, and one would replace the other; set {key} whole, or its parts"
    return None


class Variant(Strict):
    """A hardware option: dotted overrides of the scenario and what it costs."""

    name: Name
    set: dict[str, Any] = {}
    cost: Annotated[float, BeforeValidator(parse_cost)] | None = None

    @field_validator("set")
    @classmethod
    def _sets_what_a_run_reads(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in value:
            if key.split(".")[0] in ("name", "description", "sweep", "variants", "cost") or \
                    key in ("topology.name", "topology.description"):
                raise ValueError(f"{key}: a variant sets what its runs read; {key} changes none (the variant's "
                                 "own name and cost are its name: and cost: keys)")
        if nested_twice(value):
            raise ValueError(nested_twice(value))
        return value


class ScenarioSpec(Strict):
    name: Name
    description: str = ""
    topology: Name | dict[str, Any]  # a file (relative to this one: never empty, which is this folder) or inline
    collective: Literal[tuple(COLLECTIVES)] = "allreduce"  # type: ignore[valid-type]
    model: Literal["nccl", "rccl", "ideal"] | None = None  # default: the GPUs' library (rccl on AMD GPUs)
    calibration: Name | None = None  # a profile from simnet calibrate, relative to this file
    size: Annotated[list[int], BeforeValidator(parse_sizes)] | None = None
    sizes: Annotated[list[int], BeforeValidator(parse_sizes)] | None = None
    algorithms: list[str] | Literal["all", "auto"] = ["auto"]
    gpus: Annotated[Literal["all"] | Annotated[int, Field(ge=1, strict=True)] | list[str],
                    BeforeValidator(_gpu_choice)] = "all"
    options: Options = Options()
    workload: Workload | None = None
    training: Training | None = None
    sweep: dict[str, list[Any]] | None = None
    variants: list[Variant] = []
    cost: Annotated[float, BeforeValidator(parse_cost)] | None = None
    faults: list[FaultSpec] = []
    stragglers: dict[str, Any] | None = None  # {gpu: delay} or a StragglerDistribution
    jobs: list[JobSpec] = []  # many jobs sharing the fabric (instead of sizes and algorithms)
    placement: str | None = None  # for every job given a GPU count and no placement of its own

    @field_validator("variants")
    @classmethod
    def _named_once(cls, value: list[Variant]) -> list[Variant]:
        names = [v.name for v in value]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ValueError(f"variants[{i}]: the name {name!r} is taken by variants[{names.index(name)}]; "
                                 "give each option its own name")
        if len(value) == 1:
            raise ValueError("variants: one variant is one option, and compare ranks two or more: add another (a "
                             "variant without set: is the file as written)")
        seen = [(v.set, v.cost) for v in value]
        for i, option in enumerate(seen):
            if option in seen[:i]:
                raise ValueError(f"variants[{i}]: the same set and cost as variants[{seen.index(option)}], so the "
                                 "same option twice; change one, or leave it out")
        return value

    @field_validator("placement")
    @classmethod
    def _placement(cls, value):
        return value if value is None else known_placement(value)  # the rule every job follows

    @field_validator("sweep")
    @classmethod
    def _gpu_counts(cls, value):
        if value is not None and "gpus" in value and not value["gpus"]:
            raise ValueError("gpus: an empty list; give GPU counts, e.g. [8, 16, 32]")
        if nested_twice(value or {}):
            raise ValueError(nested_twice(value))
        for key, values in (value or {}).items():
            if not values and key != "gpus":  # no value: the sweep would have no point at all
                raise ValueError(f"{key}: an empty list; give the values to sweep (e.g. [1, 2])")
            if axis_changes_no_point(key):
                raise ValueError(f"{key} {axis_changes_no_point(key)}; leave it out")
        for count in (value or {}).get("gpus", []):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"gpus: {shown(count)} is not a GPU count (a whole number, 1 or more)")
        return value

    @field_validator("algorithms")
    @classmethod
    def _listed_once(cls, value):
        """At least one algorithm, none twice (whether the collective has them is checked later)."""
        names = [value] if isinstance(value, str) else value
        if not names:
            raise ValueError("no algorithms: list at least one (or write all, or auto)")
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ValueError(f"{name!r} is listed twice")
        if "all" in names and len(names) > 1:  # it runs them: listed beside it, they would run once without a word
            raise ValueError(f"{', '.join(n for n in names if n != 'all')} beside all: all runs auto and every "
                             "algorithm the collective has; write all alone, or list the algorithms without it")
        return value


@dataclass
class Scenario:
    """A validated scenario, ready to run. ``topology`` already has the chosen GPUs as ranks."""

    name: str
    topology: Topology
    sizes: list[int]
    algorithms: list[str]
    options: dict[str, Any]
    description: str = ""
    collective: str = "allreduce"  # see simnet.schedule.kinds
    training: Training | None = None  # a transformer's training step (simnet.run.training)
    model: str = "nccl"  # nccl, rccl or ideal: resolved against the GPUs (model.interface.resolve_model)
    calibration: str | None = None  # profile path; else the topology's
    workload: Workload | None = None
    sweep: dict[str, list[Any]] | None = None
    variants: list[Variant] = field(default_factory=list)
    cost: float | None = None
    source: str | None = None
    data: dict = field(default_factory=dict, repr=False)  # the raw document, for variants and sweeps
    faults: list[Fault] = field(default_factory=list)
    stragglers: dict[str, float] = field(default_factory=dict)  # start delay per GPU, s
    jobs: list[JobSpec] = field(default_factory=list)
    every_algorithm: bool = False  # the algorithms are `all`: those the topology cannot run are skipped
    warnings: list[Finding] = field(default_factory=list)  # keys this scenario makes moot, said on every run

    def conditions(self) -> dict:
        """``faults`` and ``stragglers`` as ``simulate`` takes them."""
        return {"faults": self.faults, "stragglers": self.stragglers}

    def replace(self, **changes) -> Scenario:
        """A copy with fields replaced (e.g. ``algorithms``, ``sizes`` in bytes, ``model``,
        ``workload``, or ``topology`` as a subset of this one's GPUs); the scenario document
        that sweeps and comparisons rebuild from changes with it. ``every_algorithm`` (skip
        what the topology cannot run) is this object's alone, and named ``algorithms``
        turn it off unless it is given too."""
        clone = copy.copy(self)
        document = dict(self.data)
        if "algorithms" in changes and "every_algorithm" not in changes:
            clone.every_algorithm = False  # algorithms named: none of them is skipped
        for key, value in changes.items():
            if key not in _REPLACEABLE:
                raise ValueError(f"replace: {key!r} cannot be replaced; expected one of {', '.join(_REPLACEABLE)}")
            setattr(clone, key, value)
            if key == "topology":
                if value.node_index != self.topology.node_index:  # not the same network
                    raise ValueError("replace: topology must be GPUs of this scenario's "
                                     "network (topology.subset(...)); write a new scenario for other hardware")
                document["gpus"] = list(value.gpus)
            elif key == "sizes":
                document.pop("size", None)
                document["sizes"] = [f"{int(size)} B" for size in value]
            elif key == "workload":
                document[key] = None if value is None else value.document()
            elif key == "training":
                document[key] = None if value is None else value.model_dump(mode="json", exclude_none=True)
            elif key == "every_algorithm":
                pass  # the document keeps its algorithms: a sweep's plan carries the flag
            else:
                document[key] = value
        clone.data = document
        return clone


_REPLACEABLE = ("topology", "sizes", "algorithms", "every_algorithm", "options", "model", "calibration", "workload",
                "sweep", "collective", "training")


def load_scenario(path: str | Path, collective: str | None = None, runs_on_part: bool = False) -> Scenario:
    """Load and validate a scenario file; raise ``InputError`` on any mistake. ``collective``:
    the one the caller runs instead of the file's (``-c``), whose options count as taken;
    ``runs_on_part``: the caller runs it on some of its GPUs only (``-g``, ``sweep --gpus``),
    so a fault that cuts GPUs apart is judged on the GPUs each run has, not here."""
    data, source = load_yaml(path)
    return scenario_from_dict(data, source, base=Path(path).parent, collective=collective, runs_on_part=runs_on_part)


def scenario_from_dict(data: Any, source: Source | None = None, base: Path | None = None,
                       collective: str | None = None, network: Topology | None = None,
                       runs_on_part: bool = False) -> Scenario:
    """Build a ``Scenario`` from parsed YAML; relative topology paths resolve against ``base``.
    ``collective``: one run instead of the file's (``-c``): an option its algorithms take is
    not refused for the file's collective's lacking it (the run warns ``option_unread`` for
    what the collective that runs does not read). ``network``: the topology the document
    names, loaded already, so it is not read again (``gpus:`` picks among its network's GPUs).
    ``runs_on_part``: as for ``load_scenario``."""
    source = source or Source("<scenario>")
    if not isinstance(data, dict):
        raise source.error((), f"{shown(data)} is {kind_of(data)}; expected a mapping with name, topology and sizes")
    if "topology" not in data and {"nodes", "links", "generate"} & set(data):
        raise source.error((), "this is a topology file, not a scenario; a scenario names it (topology: "
                               "path/to/it.yaml) with sizes and algorithms (see scenarios/); simnet topo checks it")
    try:
        spec = ScenarioSpec.model_validate(data)
    except ValidationError as exc:
        raise source.from_validation(exc, model=ScenarioSpec) from None
    if spec.size is not None and spec.sizes is not None:
        raise source.error(("sizes",), "give size or sizes, not both")
    _refuse_what_is_not_read(spec, source)
    if spec.size is None and spec.sizes is None and not spec.jobs and spec.training is None:
        raise source.error((), "no sizes: give size (e.g. '1 GiB') or sizes (a list, or '8 B .. 8 GiB x2')")
    if network is not None:
        topology = network
    elif isinstance(spec.topology, str):
        path = (base or Path(".")) / spec.topology
        if not path.exists():
            raise source.error(("topology",), f"no topology file {str(path)!r}")
        if path.is_dir():
            raise source.error(("topology",), f"{str(path)!r} is a folder; name the topology file in it")
        topology = _read_named(source, ("topology",), load_topology, path)
    else:
        topology = topology_from_dict(spec.topology, source, ("topology",))
    if spec.gpus != "all":
        try:
            topology = topology.subset(spec.gpus)
        except ValueError as exc:
            raise source.error(("gpus",), str(exc).removeprefix("gpus: ")) from None
    if spec.options.group_by is not None:  # refused here, on its line, before anything runs
        try:
            check_group_by(topology, topology.gpus, spec.options.group_by)
        except ValueError as exc:
            raise source.error(("options", "group_by"), str(exc).removeprefix("group_by: ")) from None
    if spec.options.ps_server is not None or spec.options.ps_servers is not None:
        try:
            parameter_servers(topology, topology.gpus, spec.options.ps_server, spec.options.ps_servers or 1)
        except ValueError as exc:
            field, _, message = str(exc).partition(": ")
            raise source.error(("options", field), message) from None
    calibration = None
    if spec.calibration is not None:
        calibration = (base or Path(".")) / spec.calibration
        why = missing_file(calibration, "calibration profile")
        if why:
            raise source.error(("calibration",), why)

        _read_named(source, ("calibration",), load_calibration, calibration)  # refused now, on its own line
        calibration = str(calibration)
    try:
        model = resolve_model(spec.model, topology)
    except ValueError as exc:
        raise source.error(("model",), str(exc).removeprefix("model: ")) from None
    faults, stragglers = _conditions(spec, topology, source, runs_on_part)
    if not runs_on_part:  # (-g's first GPUs are checked when it takes them)
        _refuse_stragglers_every_bucket_waits_for(spec, topology, stragglers, source)
    for gpu in (spec.workload.compute_slowdown or {}) if spec.workload else {}:
        if gpu not in topology.node_index or topology.kind(gpu) != "gpu":
            raise source.error(("workload", "compute_slowdown", gpu), f"{gpu!r} is not a GPU of {topology.name}")
    jobs = _as_placed(spec)
    try:
        placements = check_jobs(topology, jobs)
    except JobError as exc:
        raise source.error(("jobs", *exc.loc), exc.message) from None
    try:  # faults beside jobs leave each job's GPUs a route to one another (GPUs no job holds may be cut off)
        for gpus in placements if faults else []:
            check_reachable(topology, faults, gpus)
    except FaultError as exc:
        raise source.error(("faults", *exc.loc), exc.message) from None
    algorithms = _algorithms(spec, source)
    if spec.training is not None and spec.workload is not None:  # two steps that disagree, side by side
        raise source.error(("workload",), "training and workload both describe the training step (a transformer's "
                                          "parallel step, and a data-parallel AllReduce of a gradient): give one")
    if spec.training is not None:
        try:
            spec.training.layout().resolved(len(topology.gpus), spec.training.transformer())
        except ValueError as exc:
            field, _, message = str(exc).partition(": ")
            raise source.error(("training", "parallelism", field), message) from None
        _refuse_what_no_step_holds(spec.training, source)
        generation = topology.gpu_model(topology.gpus[0])
        if generation not in GPUS and spec.training.gpu_flops is None:
            raise source.error(("training",), f"the GPUs name no generation simnet knows (gpu: {' | '.join(GPUS)}): "
                                              "give gpu_flops, the dense peak FLOP/s per GPU")
        if generation in GPUS and not GPUS[generation].bf16_flops and spec.training.gpu_flops is None:
            raise source.error(("training",), f"gpu: {generation}: its dense BF16 peak is in no public source simnet "
                                              "cites; give gpu_flops, the dense peak FLOP/s per GPU")
        _refuse_a_step_of_days(spec.training, len(topology.gpus), spec.training.gpu_flops or
                               GPUS[generation].bf16_flops, source)
    if spec.collective != "allreduce":
        for key in ("workload", "jobs"):
            if getattr(spec, key):
                raise source.error((key,), f"{key} run AllReduces (a data-parallel step); this scenario's collective "
                                           f"is {spec.collective}: remove {key} or the collective")
        if spec.training is not None:
            raise source.error(("collective",), "training picks the collectives of its step itself (TP, DP, PP, EP); "
                                                "remove collective, or training")
    _check_options(spec, source, collective)
    warnings = _moot_keys(spec, topology, placements, faults, source) + \
        _calibration_replaced(topology, calibration, source) + \
        ([] if model == "ideal" else [Finding("key_unread", entry.partition(" (")[0], entry)
                                      for entry in topology.capped])  # (what NCCL's and RCCL's models cap)
    every = spec.algorithms == "all" or (isinstance(spec.algorithms, list) and "all" in spec.algorithms)
    return Scenario(name=spec.name, topology=topology, sizes=spec.sizes or spec.size or [], algorithms=algorithms,
                    every_algorithm=every,
                    collective=spec.collective, training=spec.training,
                    options=spec.options.model_dump(exclude_none=True), description=spec.description,
                    model=model, calibration=calibration,
                    workload=spec.workload, sweep=spec.sweep, variants=list(spec.variants), cost=spec.cost,
                    source=source.file,
                    data=data, faults=faults, stragglers=stragglers, jobs=jobs, warnings=warnings)


def _read_named(source: Source, loc: tuple, read, path: Path):
    """``read(path)`` of a file the scenario names at ``loc``: a refusal of the file whole (not
    UTF-8, a device, unreadable: no line of its own to name) is said on the scenario's line."""
    try:
        return read(path)
    except InputError as exc:
        if exc.line is not None:
            raise
        raise source.error(loc, f"{str(path)!r}: {exc.message}") from None


def _where(source: Source, loc: tuple) -> str:
    line = source.line(loc)
    return f"{source.file}:{line}" if line is not None else source.file


def _moot_keys(spec: ScenarioSpec, topology: Topology, placements: list[list[str]], faults: list[Fault],
               source: Source) -> list[Finding]:
    """A warning (``key_unread``) per key another key of this scenario leaves unread: sigma
    beside a distribution that has its mean alone, a mean of 0, a straggler's delay of 0 or
    of a GPU the run leaves out, a seed of all_to_all background traffic or of uniform traffic
    on two GPUs (nothing is drawn; ``placements``, each job's GPUs, say how many it has), a
    placement (the job's or the scenario's) where a job asks for every GPU still free (there is
    nothing to choose), a job's period when it runs once, a compute slowdown of a
    GPU the run leaves out (``gpus:``) or of 1, a workload's bucket_size no smaller than its
    gradient (and its backward_fraction), a generator's parameter that builds nothing
    (``Topology.unread``: a one-rack fabric's spines; its network keys only where no fault takes
    a link down, which may send a route through the NICs), a training step's ``dtype`` where no
    activation crosses a link (tp, pp 1, no FSDP or EP) and its ``grad_dtype`` where no
    gradient does (dp 1), ``gpus:`` that takes every GPU in the topology's order, a training
    step's or a job's key written at its default (``_written_as_default``). Warned, not
    refused: a sweep over the distribution, the pattern, repeat, the GPU count, the slowdown or
    the parallelism makes them moot at some of its points only."""
    said = []

    def moot(loc: tuple, message: str) -> None:
        said.append(Finding("key_unread", format_loc(loc), f"{format_loc(loc)} ({_where(source, loc)}): {message}"))

    for key, value in (("stragglers", spec.stragglers), ("faults", spec.faults), ("sweep", spec.sweep),
                       ("variants", spec.variants), ("options", spec.options.model_dump(exclude_none=True))):
        if key in spec.model_fields_set and not value:  # (jobs: [] is refused: a scenario of no job runs nothing)
            moot((key,), f"{'an empty mapping' if isinstance(value, dict) else 'an empty list'}, so it changed "
                         "nothing here; leave it out")
    if spec.workload is not None and spec.workload.compute_slowdown == {}:
        moot(("workload", "compute_slowdown"), "an empty mapping, so it changed nothing here; leave it out")
    if source.writes("gpus") and spec.gpus != "all" and list(topology.gpus) == list(topology.network_gpus):
        listed = " (a list takes them in rank order)" if isinstance(spec.gpus, list) else ""
        moot(("gpus",), f"every one of the topology's {len(topology.gpus)} GPUs{listed}, as without it, so it "
                        "changed nothing here")
    raw = spec.stragglers
    running = set(topology.gpus)
    if isinstance(raw, dict) and "sigma" in raw and raw.get("distribution") in ("exponential", "uniform"):
        moot(("stragglers", "sigma"), f"shapes the lognormal distribution only; {raw['distribution']} has its "
                                      "mean alone, so sigma changed nothing here")
    if isinstance(raw, dict) and "distribution" in raw and units.parse_time(raw["mean"]) == 0:
        moot(("stragglers", "mean"), "a mean of 0 draws no delay, so stragglers changed nothing here")
    elif isinstance(raw, dict) and "distribution" in raw and not any(
            round(d * PS_PER_SECOND) for d in straggler_delays(topology, raw).values()):
        moot(("stragglers", "mean"), "every GPU's draw is under 1 ps, the engine's resolution (a lognormal's large "
                                     "sigma puts nearly all its mean in rare draws), so stragglers changed nothing")
    for gpu, delay in raw.items() if isinstance(raw, dict) and "distribution" not in raw else ():
        if gpu not in running:
            moot(("stragglers", gpu), f"{gpu} is not among the run's {len(running)} GPUs (gpus:, -g), so its "
                                      "delay changed nothing here")
        elif delay == 0 or units.parse_time(delay) == 0:
            moot(("stragglers", gpu), "a delay of 0 joins on time, so it changed nothing here")
    placed_before = 0  # GPUs taken by the jobs placed before this one (counts first, leftover background last)
    placing = {}  # per job whose placement applies, whether it had a choice
    for i, job in enumerate(spec.jobs):
        if isinstance(job.gpus, int):
            placing[i] = job.gpus < len(running) - placed_before
        if not (job.background is not None and job.gpus is None and job.hosts is None):
            placed_before += len(placements[i])
    placed = _as_placed(spec)
    unset = spec.placement or "packed"  # a job's placement without its own key
    for i, job in enumerate(spec.jobs):
        if "placement" in job.model_fields_set and not placing.get(i, True):
            moot(("jobs", i, "placement"), f"the job asks for all {job.gpus} GPUs still free, so there was nothing "
                                           "to choose and placement changed nothing here")
        elif "placement" in job.model_fields_set and _placed_otherwise(topology, [
                other.model_copy(update={"placement": unset}) if k == i else other
                for k, other in enumerate(placed)]) == placements:
            how = "the free GPUs lie so" if job.placement != unset else \
                "as the scenario's placement" if spec.placement else "the default"
            moot(("jobs", i, "placement"), f"{job.placement} chose the GPUs {unset} does ({how}), so it changed "
                                           "nothing here")
    scenario_placed = [i for i in placing if "placement" not in spec.jobs[i].model_fields_set]
    if spec.placement and scenario_placed and not any(placing[i] for i in scenario_placed):
        moot(("placement",), "every job it places asks for all the GPUs still free, so there was nothing to choose "
                             "and placement changed nothing here")
    elif spec.placement and scenario_placed and _placed_otherwise(topology, spec.jobs) == placements:
        moot(("placement",), f"{spec.placement} chose the GPUs packed does for every job it places "
                             f"({'the default' if spec.placement == 'packed' else 'the free GPUs lie so'}), so it "
                             "changed nothing here")
    for i, job in enumerate(spec.jobs):
        if job.background is not None and job.background.pattern == "all_to_all" \
                and "seed" in job.background.model_fields_set:
            moot(("jobs", i, "background", "seed"), "all_to_all sends to every other GPU, nothing is drawn, so "
                                                    "seed changed nothing here")
        if job.background is not None and job.background.pattern == "uniform" and len(placements[i]) == 2 \
                and "seed" in job.background.model_fields_set:
            moot(("jobs", i, "background", "seed"), "on two GPUs each one's only partner is the other, nothing is "
                                                    "drawn, so seed changed nothing here")
        if job.background is None and job.period is not None and job.repeat == 1:
            moot(("jobs", i, "period"), "the job runs once (repeat: 1), so no run follows a period later and "
                                        "period changed nothing here")
    rerouted = any(fault.cuts for fault in faults)  # links down: routes may leave NVLink
    said += topology_unread(topology, rerouted)
    # a ps_server counts whatever the file's algorithms: run -a ps may run ps where the file names none
    servers = named_servers(spec.options.model_dump(exclude_none=True))
    if spec.jobs:  # each job's routes run among its own GPUs (a background job's too)
        said += [] if rerouted else _network_unread_by_every_job(topology, servers, placements)
    else:
        said += [] if rerouted else network_keys_unread(topology, servers)
    training = spec.training
    if training is not None and not isinstance(training.model, str) and training.model.kv_heads is None:
        moot(("training", "model", "heads"), "without kv_heads every head has its own keys and values, so the step's "
                                             "FLOPs, activations and parameters follow hidden whatever the heads "
                                             "(they bound tp, which must divide them), and heads changed no time "
                                             "here; kv_heads (grouped-query attention) makes it count")
    if training is not None and "dtype" in training.model_fields_set:
        par = training.parallelism
        moe = training.transformer().moe
        sharded = par.fsdp and len(running) > par.tp * par.pp  # (FSDP over dp 1 shards nothing: said below)
        if par.tp == 1 and par.pp == 1 and not sharded and not (moe and par.ep > 1):
            moot(("training", "dtype"), "the step's activations and parameters cross no link here (tp 1, pp 1, no "
                                        "FSDP over several GPUs or expert parallelism: only the gradient, in "
                                        "grad_dtype), so dtype changed nothing here")
    if training is not None and "grad_dtype" in training.model_fields_set:
        par = training.parallelism
        if len(running) == par.tp * par.pp:
            moot(("training", "grad_dtype"), f"the step has no data parallelism here (tp {par.tp} x pp {par.pp} is "
                                             f"all {len(running)} GPUs: dp 1), so no gradient is reduced across GPUs "
                                             "and grad_dtype changed nothing here")
    if training is not None and training.parallelism.fsdp and "fsdp" in training.parallelism.model_fields_set:
        par = training.parallelism
        if len(running) == par.tp * par.pp:
            moot(("training", "parallelism", "fsdp"), f"the step has no data parallelism here (tp {par.tp} x pp "
                                                      f"{par.pp} is all {len(running)} GPUs: dp 1), so there is no "
                                                      "replica to shard parameters over and fsdp changed nothing here")
    slowdowns = {gpu: factor for gpu, factor in (spec.workload.compute_slowdown or {}).items()} if spec.workload else {}
    slowest = max((f for g, f in slowdowns.items() if g in running), default=1.0)  # every bucket waits for it alone
    for gpu, factor in slowdowns.items():
        if gpu not in running:
            moot(("workload", "compute_slowdown", gpu), f"{gpu} is not among the run's {len(running)} GPUs "
                                                        "(gpus:), so its slowdown changed nothing here")
        elif factor == 1:
            moot(("workload", "compute_slowdown", gpu), "a slowdown of 1 computes as fast as the other GPUs, so it "
                                                        "changed nothing here")
        elif factor < slowest:
            moot(("workload", "compute_slowdown", gpu), f"another GPU computes slower still ({slowest:g}x) and every "
                                                        "bucket waits for the slowest, so it changed nothing here")
    if spec.workload is not None and spec.workload.bucket_size is not None:
        from simnet.workloads.ddp import StepModel

        gradient = StepModel.from_workload(spec.workload).gradient_bytes
        if spec.workload.bucket_size >= gradient:  # one bucket, as without bucket_size
            whole = f"no smaller than the gradient ({units.format_size(gradient)}): one bucket"
            moot(("workload", "bucket_size"), f"{units.format_size(spec.workload.bucket_size)} is {whole}, AllReduced "
                                              "once the backward pass ends, as without bucket_size, so it changed "
                                              "nothing here")
            if "backward_fraction" in spec.workload.model_fields_set:
                moot(("workload", "backward_fraction"), f"bucket_size is {whole}, AllReduced once the backward pass "
                                                        "ends, so where that pass starts changed nothing here")
    for loc, message in _written_as_default(spec, topology):  # (a reason above, true of any value, says more)
        if format_loc(loc) not in {finding.link for finding in said}:
            moot(loc, message)
    return said


AT_DEFAULT = {"training": ("dtype", "grad_dtype"),
              "parallelism": ("tp", "pp", "ep", "fsdp", "micro_batches", "micro_batch_size", "virtual_stages"),
              "model": ("experts", "top_k", "gated"), "workload": ("dtype",),
              "job": ("algorithm", "start", "repeat"), "background": ("seed",)}
"""The keys (by the mapping that holds them) whose default is a value one may write: written
at it, they change nothing. A placement at its default is judged with the others' (the
scenario's placement makes a job's ``packed`` count)."""


def _written_as_default(spec: ScenarioSpec, topology: Topology) -> list[tuple[tuple, str]]:
    """(where, what to say) of each key of ``AT_DEFAULT`` written at its default, of a
    training step's gpu_flops written at its GPUs' own BF16 peak (what it takes without it:
    said without "leave it out", since an option of other GPUs in a comparison reads it) and
    of a background job's period written at ``BACKGROUND_PERIOD``. (The strict schemas take
    neither 1.0 for 1 nor 0 for false: a value equal to its default is it.)"""
    held = []  # (where, the mapping, its kind in AT_DEFAULT)
    if spec.training is not None:
        held += [(("training",), spec.training, "training"),
                 (("training", "parallelism"), spec.training.parallelism, "parallelism")]
        if not isinstance(spec.training.model, str):
            held.append((("training", "model"), spec.training.model, "model"))
    if spec.workload is not None:
        held.append((("workload",), spec.workload, "workload"))
    for i, job in enumerate(spec.jobs):
        held.append((("jobs", i), job, "job"))
        if job.background is not None:
            held.append((("jobs", i, "background"), job.background, "background"))
    unread = "is its default, so it changed nothing here; leave it out"
    written = [(where + (key,), f"{'0 s' if key == 'start' else as_written(getattr(mapping, key))} {unread}")
               for where, mapping, kind in held for key in AT_DEFAULT[kind]
               if key in mapping.model_fields_set and getattr(mapping, key) == type(mapping).model_fields[key].default]
    gpu = topology.gpu_model(topology.gpus[0])
    peak = GPUS[gpu].bf16_flops if gpu in GPUS else None
    if spec.training is not None and "gpu_flops" in spec.training.model_fields_set and \
            spec.training.gpu_flops == peak:
        written.append((("training", "gpu_flops"), f"{peak / 1e12:g} TFLOP/s is its GPUs' BF16 peak, what it takes "
                                                   "without it, so it changed nothing here"))
    for i, job in enumerate(spec.jobs):
        if job.background is not None and job.period == BACKGROUND_PERIOD:
            written.append((("jobs", i, "period"), f"{units.format_time(job.period)} {unread}"))
    return written


def fault_refusal(scenario: Scenario, cut: Cut, said: str = "") -> InputError:
    """The refusal of a run of ``scenario`` that a fault leaves no route (``Cut``), on the
    line of the first of its faults that takes links down at that instant, naming the others
    of that instant too (else on the file's), ``said`` (where, in a sweep) beside it."""
    at_once = [f for f in scenario.faults if round(f.at * PS_PER_SECOND) == cut.at_ps and f.cuts]
    source = source_of(scenario)
    if not at_once or source is None:
        return InputError(f"{said}: {cut}" if said else str(cut), scenario.source)
    what = at_once[0].what + "".join(f", with faults[{f.index}] {f.what}" for f in at_once[1:])  # which cut: not known
    return source.error(("faults", at_once[0].index), f"{what}{f' ({said})' if said else ''}: {cut}")


def _as_placed(spec: ScenarioSpec) -> list[JobSpec]:
    """The scenario's jobs as they are placed: the scenario's ``placement`` given to each job
    of a GPU count that names none of its own."""
    return [job.model_copy(update={"placement": spec.placement}) if spec.placement and isinstance(job.gpus, int)
            and "placement" not in job.model_fields_set else job for job in spec.jobs]


def _placed_otherwise(topology: Topology, jobs: list) -> list[list[str]] | None:
    """The GPUs ``jobs`` would take placed another way (``place_jobs``), or None where they
    could not be placed so (a job whose named GPUs another placement took first): the
    placement given decided that they could."""
    try:
        return place_jobs(topology, jobs)
    except JobError:
        return None


def source_of(scenario: Scenario) -> Source | None:
    """The scenario file's ``Source`` (the line of each key it writes); None for a scenario
    not read from a file."""
    return load_yaml(scenario.source)[1] if scenario.source and Path(scenario.source).is_file() else None


def topology_unread(topology: Topology, rerouted: bool = False) -> list[Finding]:
    """A warning (``key_unread``) per parameter of the topology's file that built nothing
    (``Topology.unread``: a one-rack fabric's spines, one host's network); with ``rerouted``
    (a fault takes a link down, so a GPU may reach another through its NIC) not one host's
    network keys (a one-rack fabric's spines stay unbuilt)."""
    one_host = {key for keys in ONE_HOST_UNREAD.values() for key in keys}
    return [Finding("key_unread", entry.partition(" (")[0], entry) for entry in topology.unread
            if not (rerouted and entry.partition(" (")[0].rpartition(".")[2] in one_host)]


ROUTES_JUDGED_UP_TO = 72
"""Route ends (the run's GPUs and servers) up to which a run inside part of a fabric has its
routes searched for the fabric keys it crosses no link of (``network_keys_unread``): a whole
NVL72 rack, the largest NVLink domain of the shipped hardware (fuzz round az, F12: the rack
was one past the 64 judged before; its routes take ~0.02 s here, 144 GPUs' 0.3 s)."""

ABOVE_THE_LEAVES = {"spines", "uplink_bandwidth", "oversubscription", "spine_oversubscription",
                    "leaf_oversubscription"}
"""Generator keys that build only what lies above a fabric's leaves (ToRs): spines, uplinks."""
WAN = {"wan_bandwidth", "wan_latency", "gateway_bandwidth"}
"""``cross_region``'s keys of the WAN between regions and its gateways."""


def network_keys_unread(topology: Topology, servers: list[str], who: str | None = None) -> list[Finding]:
    """A warning (``key_unread``) per network key of the topology's generator
    (``Topology.network_keys``) that a run on part of the fabric (``gpus:``, ``-g``) reads
    nothing of, judged by the routes between its GPUs and the parameter servers (those of the
    topology and the ``servers`` a run of ps names, a GPU outside the run's among them): every
    one where the GPUs are one NVLink domain and no route crosses a network link; those above
    the leaves (``ABOVE_THE_LEAVES``) where no route crosses a link between switches; the WAN's
    where every end is in one region. Where the whole fabric is one domain, the topology says
    so itself; beyond ``ROUTES_JUDGED_UP_TO`` ends, nothing is said. ``who``: the GPUs, as
    said (default: the run's, of ``gpus:`` or ``-g``)."""
    ends = [*topology.gpus, *topology.parameter_servers, *servers]
    if not topology.network_keys or len(topology.gpus) == len(topology.network_gpus) \
            or len(ends) > ROUTES_JUDGED_UP_TO:
        return []
    crossed = topology.network_links_between(ends)
    n = len(topology.gpus)
    who = who or f"the run's {n} GPUs (gpus:, -g)"
    every = f"{who} are one NVLink domain and no route between them crosses the network" \
        if len(topology.groups("node")) == 1 and not crossed else None
    between_switches = any(topology.kind(u) == topology.kind(v) == "switch" for u, v in map(topology.links.__getitem__,
                                                                                             crossed))
    above = None if between_switches else \
        f"no route between {who} crosses a link between switches (they share a leaf)"
    wan = f"{who} are in one region, so no route crosses the WAN" \
        if len({topology.label(end, "region") for end in ends}) == 1 else None
    already = {entry.partition(" (")[0] for entry in topology.unread}
    said = []
    for entry in topology.network_keys:
        link = entry.partition(" (")[0]
        name = link.rpartition(".")[2]
        reason = every or (above if name in ABOVE_THE_LEAVES else wan if name in WAN else None)
        if name == "routing" and not reason and not routes_choose_between(topology, ends):
            reason = f"no route between {who} has two ways between switches to choose from"
        if reason and link not in already:
            said.append(Finding("key_unread", link, f"{entry}: {reason}, so it changed nothing here; it counts where "
                                                    "the run spans two"))
    return said


def _network_unread_by_every_job(topology: Topology, servers: list[str], placements: list[list[str]]) -> list[Finding]:
    """``network_keys_unread`` judged job by job (``placements``: each job's GPUs): a key no
    job's routes read, said once; jobs share only the links their own routes cross."""
    each = [network_keys_unread(topology.subset([gpu for gpu in topology.gpus if gpu in set(gpus)]), servers,
                                f"the job's {len(gpus)} GPUs") for gpus in placements]
    if len(each) == 1:
        return each[0]
    common = set.intersection(*({finding.link for finding in found} for found in each))
    return [Finding("key_unread", finding.link, (
        f"{finding.message.partition(': ')[0]}: no job's routes read it (each job's GPUs lie in one NVLink domain, "
        "under one leaf or in one region, or their routes have no two ways to choose from), so it changed nothing "
        "here; it counts where a job spans two"))
        for finding in each[0] if finding.link in common]


def _calibration_replaced(topology: Topology, calibration: str | None, source: Source) -> list[Finding]:
    """A warning (``calibration_replaced``) when the scenario's profile replaces another the
    topology names: the scenario's is the one that runs; where it names the topology's own,
    ``key_unread``: it changed nothing."""
    if calibration is None or topology.calibration is None:
        return []
    if Path(calibration).resolve() == Path(topology.calibration).resolve():
        return [Finding("key_unread", "calibration", (
            f"calibration ({_where(source, ('calibration',))}): {calibration} is the profile the topology "
            f"{topology.source or topology.name} names already, so it changed nothing here; leave it out"))]
    return [Finding("calibration_replaced", calibration, (
        f"calibration ({_where(source, ('calibration',))}): the scenario's profile {calibration} replaces "
        f"{topology.calibration}, the one the topology {topology.source or topology.name} names; the "
        "scenario's runs (remove calibration: to run the topology's)"))]


_JOBS_SET_THEIR_OWN = {"size": "size", "sizes": "size", "algorithms": "algorithm", "workload": "workload",
                       "training": "training step"}
"""Keys a scenario with ``jobs:`` leaves to each job (the key, what every job states itself)."""


def _refuse_what_is_not_read(spec: ScenarioSpec, source: Source) -> None:
    """One line for a key the run would not read in this scenario: what jobs state for
    themselves or do not apply, conditions a training step does not apply (and algorithms
    or options, without sizes of the scenario's own), a placement with no job to place."""
    given = {key for key in spec.model_fields_set if getattr(spec, key) != ScenarioSpec.model_fields[key].default}
    if "jobs" in spec.model_fields_set and not spec.jobs:
        raise source.error(("jobs",), "an empty list: give the jobs that share the fabric, or leave jobs out")
    if spec.jobs:
        for key, what in _JOBS_SET_THEIR_OWN.items():
            if key in given:
                raise source.error((key,), f"with jobs, each job states its own {what}: remove {key}, or jobs")
        if spec.stragglers:
            raise source.error(("stragglers",), "stragglers delay the ranks of a scenario's collectives; a job's "
                                                "runs start when they are issued: remove stragglers, or jobs")
        if spec.options.model_dump(exclude_none=True):
            name = sorted(spec.options.model_dump(exclude_none=True))[0]
            raise source.error(("options", name), "with jobs, every job runs with NCCL's defaults: options do not "
                                                  "apply; remove options, or jobs")
        if all(job.background is not None for job in spec.jobs):
            raise source.error(("jobs",), "every job is background traffic, which runs as long as another job "
                                          "does: give a job with a size")
        if spec.placement is not None and not any(isinstance(job.gpus, int) for job in spec.jobs):
            raise source.error(("placement",), "placement places jobs given a GPU count, and every job here names "
                                               "its GPUs or hosts; leave placement out")
        if spec.placement is not None and not any(isinstance(job.gpus, int) and "placement" not in
                                                  job.model_fields_set for job in spec.jobs):
            raise source.error(("placement",), "placement places jobs given a GPU count without a placement of "
                                               "their own, and every job here has one or names its GPUs; leave "
                                               "placement out")
    elif spec.placement is not None:
        raise source.error(("placement",), "placement places jobs given a GPU count; this scenario has no jobs")
    if spec.training is not None:
        for key in ("faults", "stragglers"):
            if getattr(spec, key):
                raise source.error((key,), f"the training step runs on the healthy fabric: {key} do not apply to it; "
                                           f"remove {key}, or training")
        sized = spec.size is not None or spec.sizes is not None
        for key in ("algorithms", "options"):
            if key in given and not sized:
                raise source.error((key,), f"the training step runs every exchange as NCCL picks it, with its "
                                           f"defaults: {key} apply to sizes of the scenario's own, and it has none; "
                                           f"remove {key}, or give sizes")


def _refuse_stragglers_every_bucket_waits_for(spec: ScenarioSpec, topology: Topology, delays: dict[str, float],
                                               source: Source) -> None:
    """One line where stragglers that delay some GPU of the run (``delays``: s per GPU) stand
    beside a workload whose gradient is AllReduced in several buckets one after another: each
    bucket's AllReduce would wait for them again (fuzz round ay, F3: 2 ms late cost a step of
    100 buckets 192 ms). A delay the run does not feel (0, a GPU outside it) is said moot."""
    if spec.workload is None or spec.workload.bucket_size is None:
        return
    running = set(topology.gpus)
    if not any(round(delay * PS_PER_SECOND) for gpu, delay in delays.items() if gpu in running):
        return
    from simnet.workloads.ddp import StepModel

    buckets = len(StepModel.from_workload(spec.workload).buckets())
    if buckets > 1:
        raise source.error(("stragglers",), (
            f"they join each collective late, and the workload AllReduces its gradient in {buckets} buckets one "
            f"after another: each would wait for them again, {buckets} times a step; for a GPU slower every step "
            "give workload.compute_slowdown (every bucket then waits for it), or leave bucket_size out"))


def _refuse_what_no_step_holds(training, source: Source) -> None:
    """One line when a derived quantity of the step is out of range: an exchange over 1 PiB
    (a micro-batch's activations of b s h values, top_k times for an MoE's AllToAll) or
    FLOPs too large to count."""
    model, par = training.transformer(), training.layout()
    tokens = par.micro_batch_size * model.sequence
    sizes = exchange_bytes(model, par, DTYPE_BYTES[training.dtype], DTYPE_BYTES[training.grad_dtype])
    kind = max(sizes, key=sizes.__getitem__)
    if sizes[kind] > units.SIZE_MAX:
        what = ("a micro-batch's activations", "a smaller micro_batch_size, sequence or hidden") \
            if kind in ("tp", "ep", "pp") else ("a stage's gradients" if kind in ("dp", "edp") else
                                                "a layer's parameters", "a smaller model or more tp and pp")
        raise source.error(("training", "model"), f"one exchange of the step would carry {sizes[kind]:.4g} B "
                                                  f"({what[0]}), over 1 PiB, the largest size simnet accepts; "
                                                  f"use {what[1]}")
    if not math.isfinite(model.training_flops_per_token() * tokens * par.micro_batches):
        raise source.error(("training", "model"), "the step's FLOPs are too many to count; check the model's shape")


def _refuse_a_step_of_days(training, gpus: int, peak: float, source: Source) -> None:
    """One line when a step's compute alone runs past the day a compute_time may last (an
    efficiency of 1e-300, a billion micro-batches, a sequence of 10^12 tokens): its times
    and rates would be numbers no step has."""
    par = training.layout().resolved(gpus, training.transformer())
    compute = par.micro_batches * 3 * forward_seconds(training.transformer(), par, peak * training.efficiency)
    if compute > units.TIME_RANGE[1]:
        raise source.error(("training",), f"the step's compute alone would take {compute:.4g} s per "
                                          "GPU, over the day a step's compute may (as compute_time); check "
                                          "efficiency, gpu_flops, micro_batches and the model's shape")


def _algorithms(spec: ScenarioSpec, source: Source) -> list[str]:
    """The scenario's algorithms (``all`` expanded), each one its collective has, or one
    line naming the entry that is not."""
    table = algorithms_for(spec.collective)
    every = [AUTO, *table]  # all: NCCL's own pick too, beside every algorithm the collective has
    if spec.algorithms == "all":
        return every
    names = [spec.algorithms] if isinstance(spec.algorithms, str) else list(spec.algorithms)
    for i, name in enumerate(names):
        if name not in table and name not in ("all", AUTO):
            raise source.error(("algorithms", i) if isinstance(spec.algorithms, list) else ("algorithms",),
                               f"unknown algorithm {name!r} for {spec.collective}; expected "
                               f"{', '.join([*table, AUTO])} or all")
    return list(dict.fromkeys(n for a in names for n in (every if a == "all" else [a])))


def _check_options(spec: ScenarioSpec, source: Source, collective: str | None = None) -> None:
    """Refuse an option no algorithm of the scenario's collective (nor of ``collective``, the
    one ``-c`` runs instead) takes: it would be ignored by whatever algorithm -a, a variant
    or a sweep picks."""
    tables = [algorithms_for(c) for c in dict.fromkeys([spec.collective, collective or spec.collective])]
    for name in spec.options.model_dump(exclude_none=True):
        takers = [a.name for table in tables for a in table.values() if name in a.options]
        if name not in COMMON_OPTIONS and not takers:
            which = " or ".join(dict.fromkeys([spec.collective, collective or spec.collective]))
            raise source.error(("options", name), f"no {which} algorithm takes {name}")


def _conditions(spec: ScenarioSpec, topology: Topology, source: Source,
                runs_on_part: bool) -> tuple[list[Fault], dict[str, float]]:
    """The scenario's faults (in time order, checked to leave every GPU reachable, unless it
    ``runs_on_part`` of them) and straggler delays, or one line naming the entry that does not
    fit the topology."""
    try:
        faults = resolve_faults(topology, spec.faults)
        if not spec.jobs and not runs_on_part:  # jobs: only each job's GPUs need each other (simnet.run.jobs)
            named = [spec.algorithms] if isinstance(spec.algorithms, str) else list(spec.algorithms)
            options = spec.options.model_dump(exclude_none=True)
            servers = [s for s in servers_used(topology, "ps", options) if s not in set(topology.gpus)] \
                if {"ps", "all"} & set(named) else []  # (run -a ps: its run says)
            check_reachable(topology, faults, topology.gpus + servers)
    except FaultError as exc:
        raise source.error(("faults", *exc.loc), exc.message) from None
    raw = spec.stragglers
    for gpu, delay in (raw or {}).items() if raw and "distribution" not in raw else ():
        if isinstance(delay, (bool, dict, list)):
            raise source.error(("stragglers", gpu), f"{shown(delay)} is {kind_of(delay)}, not a time: write the "
                                                    "delay with its unit, e.g. '500 us'")
        if not isinstance(delay, str) and delay != 0:  # a file writes times with their unit (0 needs none)
            raise source.error(("stragglers", gpu), f"{delay!r} has no unit: write the delay as a time, e.g. '500 us'")
    if raw is not None and "distribution" in raw:
        try:
            raw = StragglerDistribution.model_validate(raw)
        except ValidationError as exc:
            raise source.from_validation(exc, ("stragglers",), StragglerDistribution) from None
    try:
        stragglers = straggler_delays(topology, raw)
    except FaultError as exc:
        raise source.error(("stragglers", *exc.loc), exc.message) from None
    return faults, stragglers
