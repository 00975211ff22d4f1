"""The points of a sweep and the scenario at each point.

A point is (overrides, GPU count, algorithm). Overrides are dotted keys into the
scenario document (``topology.generate.nic_bandwidth``); a GPU count beyond what a
generated topology has grows it by its generator's growth rule (more racks, more GPUs).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simnet import units
from simnet.errors import InputError, shown
from simnet.io.budget import check_fits
from simnet.io.yamlsource import Source, dotted_loc, load_yaml
from simnet.run.nccl_env import nccl_env, nccl_integer
from simnet.spec.scenario import Scenario, nested_twice, scenario_from_dict
from simnet.spec.workloads import parse_flops
from simnet.topology.generators import GROWTH, GeneratorError, grown
from simnet.version import __version__, code_digest

__all__ = ["Point", "SweepPlan", "plan_sweep", "scenario_at", "apply_overrides", "as_the_file_writes", "fingerprint",
           "setting_named", "check_points", "check_values", "dotted_key"]


def _inline_topology(document: dict, base: Path) -> dict:
    """A copy of ``document`` whose topology file (if any) is replaced by its contents."""
    document = copy.deepcopy(document)
    if isinstance(document.get("topology"), str):
        path = base / document["topology"]
        topology = load_yaml(path)[0]
        if isinstance(topology, dict) and isinstance(topology.get("calibration"), str):  # relative to its file
            topology["calibration"] = str((path.parent / topology["calibration"]).resolve())
        document["topology"] = topology
    return document


def apply_overrides(document: dict, overrides: dict[str, Any], base: Path) -> dict:
    """A copy of a scenario document with dotted keys set (``topology.generate.racks: 4``).

    A topology given as a file path is inlined first, so its fields can be overridden too.
    A part that is a number indexes a list (``jobs.0.size`` or ``jobs[0].size``, ``faults.1.at``);
    one that is no index of the list there is a ``ValueError`` naming it (it replaced the whole list).
    """
    document = copy.deepcopy(document)
    for dotted, value in overrides.items():
        parts = [str(part) for part in dotted_loc(dotted)]
        if dotted == "topology.calibration" and isinstance(value, str):
            # relative to the topology's file, as the key written there is (or to the scenario's, inline)
            written = document.get("topology")
            value = str((((base / written).parent if isinstance(written, str) else base) / value).resolve())
        if parts[0] == "topology" and len(parts) > 1:
            document = _inline_topology(document, base)
        target = document
        for k, part in enumerate(parts):
            if not isinstance(target, (dict, list)):  # (sizes.0.x: a value has no keys to set)
                raise ValueError(f"{dotted}: {'.'.join(parts[:k])} is {target!r}, a value, not a mapping or list "
                                 f"for {part!r} to go into")
            if isinstance(target, list):
                part = _index(target, part, dotted, ".".join(parts[:k]))
            elif k < len(parts) - 1 and not isinstance(target.get(part), (dict, list)):
                if parts[k + 1].isascii() and parts[k + 1].isdigit():  # an index into a list the file lacks
                    raise ValueError(f"{dotted}: the scenario has no list {'.'.join(parts[:k + 1])} for "
                                     f"{parts[k + 1]} to index; write the list in the file")
                target[part] = {}
            if k == len(parts) - 1:
                target[part] = copy.deepcopy(value)  # (a later key may write inside it: never into the caller's)
            else:
                target = target[part]
    return document


def dotted_key(key: str) -> str:
    """A key as a sweep names its axis, dots only: ``jobs[0].size`` is ``jobs.0.size``, as
    simnet's own messages write it.

    >>> dotted_key("jobs[0].size"), apply_overrides({"jobs": [{"size": 1}]}, {"jobs[0].size": 4}, Path("."))
    ('jobs.0.size', {'jobs': [{'size': 4}]})
    """
    return ".".join(str(part) for part in dotted_loc(key))


def _index(items: list, part: str, dotted: str, where: str) -> int:
    """``part`` of ``dotted`` as an index into the list ``items`` found at ``where``."""
    if not part.isascii() or not part.isdigit() or int(part) >= len(items):
        raise ValueError(f"{dotted}: {where} is a list of {len(items)}, and {part!r} is none of its indices "
                         f"(0 to {len(items) - 1})" if items else f"{dotted}: {where} is an empty list")
    return int(part)


@dataclass(frozen=True)
class Point:
    """One sweep point: dotted overrides, the GPU count (None: all) and the algorithm."""

    overrides: tuple[tuple[str, Any], ...]
    gpus: int | None
    algorithm: str
    reads: str = ""  # digest of the files its overrides name (a topology, a calibration profile), if any
    # the overrides whose values name files, by their path from the scenario's folder, as the plan found them (a
    # worker elsewhere, which finds no such file, keys the point alike: review 93 L2)
    files: tuple[tuple[str, tuple[str, str]], ...] = ()

    @property
    def key(self) -> str:
        """A stable identity for resume: the same point, reading the same files, always has the same key,
        however its values are spelt (``10ms`` in one run, ``0.01 s`` in the next; ``t.yaml``, then
        ``./t.yaml``: one point)."""
        files = dict(self.files)
        identity = {"set": {k: files.get(k) or _canonical(v) for k, v in self.overrides}, "gpus": self.gpus,
                    "algorithm": self.algorithm}
        if self.reads:
            identity["reads"] = self.reads
        return json.dumps(identity, sort_keys=True, default=str)


@dataclass
class SweepPlan:
    """Everything a worker needs: the scenario document, where it lives, the points, and
    the NCCL variables (``simnet.run.nccl_env.NCCL_VARIABLES``) in force when it was planned, which
    every worker applies whatever its own environment."""

    document: dict
    base: str
    source: str
    points: list[Point]
    env: dict[str, str] = field(default_factory=dict)
    every_algorithm: bool = False  # `all`: a point whose topology cannot run its algorithm is skipped
    algorithms: list[str] | None = None  # `-a`: they replace the file's in every point's scenario

    @property
    def identity(self) -> dict:
        """Every input that changes a result, as ``sweep.json`` keeps them: a hash of the
        scenario as simulated (topology file inlined, sweep axes excluded), the hashes of the
        calibration profiles it uses, the NCCL variables as NCCL reads them and simnet's
        version with its code's digest (``version.code_digest``: other code, other answers)."""
        base = Path(self.base)
        document = _inline_topology({k: v for k, v in self.document.items() if k != "sweep"}, base)
        return {"scenario": _hash(document), "env": {k: _as_nccl_reads(k, v) for k, v in self.env.items()},
                "simnet": f"{__version__}+{code_digest()}",
                "calibrations": [_digest(path) for path in _calibration_files(self.document, base)]}


def fingerprint(identity: dict) -> str:
    """Hash of a plan's ``identity``: a resumed sweep refuses to mix results of other inputs."""
    return _hash(identity)


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _as_nccl_reads(name: str, value: str) -> str:
    """An NCCL variable's value as NCCL reads it: a list of names in any case and spacing
    (``Ring, tree`` is ``ring,tree``), an integer in any base (``0x10`` is ``16``)."""
    if name in ("NCCL_ALGO", "NCCL_PROTO"):
        return ",".join(part.strip() for part in value.lower().split(","))
    try:
        return str(nccl_integer(value, name))
    except ValueError:
        return value


def _calibration_files(document: dict, base: Path) -> list[Path]:
    """The calibration profiles a scenario document uses: its own and its topology file's."""
    files = [base / document["calibration"]] if isinstance(document.get("calibration"), str) else []
    topology = _inline_topology(document, base).get("topology")  # the profile path as points resolve it
    if isinstance(topology, dict) and isinstance(topology.get("calibration"), str):
        files.append(base / topology["calibration"])
    return files


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else f"missing {path}"


def _files_read(document: dict, base: Path) -> list[Path]:
    """The files a scenario document reads besides itself: its topology file and calibration profiles."""
    files = [base / document["topology"]] if isinstance(document.get("topology"), str) else []
    try:
        return files + _calibration_files(document, base)
    except (InputError, OSError):  # a file that cannot be read: the point's own validation says so
        return files


def files_read(scenario: Scenario, sets: dict[str, list[Any]] | None = None) -> list[Path]:
    """Every file a command on ``scenario`` reads: the scenario itself, its topology file and
    calibration profiles, and those its variants' ``set`` and the ``sets`` axes name (what
    no output of the command may overwrite)."""
    document = scenario.data
    base = Path(scenario.source).parent if scenario.source else Path(".")
    files = ([Path(scenario.source)] if scenario.source else []) + _files_read(document, base)
    overrides = [dict(v.set) for v in scenario.variants]
    overrides += [{key: value} for key, values in (sets or {}).items() for value in _values(values, base)]
    for changes in overrides:
        try:
            files += _files_read(apply_overrides(document, changes, base), base)
        except (InputError, OSError, ValueError):  # a bad override: its own validation says so later
            continue
    return list(dict.fromkeys(files))


def _reads(document: dict, overrides: tuple[tuple[str, Any], ...], base: Path, own: set[Path]) -> str:
    """Digest of the files ``overrides`` make a point read beyond ``own``, the scenario's
    (``--set topology=other.yaml``, ``--set topology.calibration=a.cal.yaml``): "" for none,
    so a changed profile is a new point, never a stale record."""
    if not overrides:
        return ""
    try:
        theirs = _files_read(apply_overrides(document, dict(overrides), base), base)
    except (ValueError, OSError):  # InputError among them: the point's own validation says so
        return ""
    extra = sorted({path.resolve() for path in theirs} - own)
    if not extra:
        return ""
    return hashlib.sha256(json.dumps([[str(p), _digest(p)] for p in extra]).encode()).hexdigest()[:16]


def _values(value: Any, base: Path | None = None) -> list[Any]:
    """An axis's values, each spelling of one quantity once (``400Gb/s`` and ``50 GB/s`` are one
    point, the first spelling kept); with the scenario's folder ``base``, each file too
    (``a.cal.yaml``, ``./a.cal.yaml`` and its absolute path: fuzz round ay, F10)."""
    first: dict[Any, Any] = {}
    for v in value if isinstance(value, list) else [value]:
        first.setdefault(_file(v, base) or _canonical(v), v)
    return list(first.values())


def _file(value: Any, base: Path | None) -> tuple[str, str] | None:
    """``("file", its path from base)`` where ``value`` names a file that is there, relative
    to ``base`` (the scenario's folder) as the scenario reads it, links resolved (the same
    however it is spelt, and wherever the folder moves); else None."""
    if base is None or not isinstance(value, str) or not value.strip():
        return None
    try:
        path = (base / value).resolve()
        return ("file", os.path.relpath(path, base.resolve())) if path.is_file() else None
    except (OSError, ValueError):  # (a name the file system cannot hold: no file)
        return None


_RATIO = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*:\s*([0-9]+(?:\.[0-9]+)?)\s*$")


def _canonical(value: Any) -> Any:
    """What a value means, as far as the text says: a bandwidth, time or size in SI units, else itself."""
    if isinstance(value, bool):
        return ("yes/no", value)
    if isinstance(value, (int, float)):
        return ("number", float(f"{value:.12g}"))
    if isinstance(value, list):  # sizes: [1 MiB] and [1024 KiB] alike
        return ("list", tuple(_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("mapping", tuple(sorted((str(k), _canonical(v)) for k, v in value.items())))
    if not isinstance(value, str):
        return json.dumps(value, sort_keys=True, default=str)
    ratio = _RATIO.match(value)
    if ratio and float(ratio.group(2)) > 0:  # 4:1 is the ratio 4 (an oversubscription), as the generators read it
        return ("number", float(f"{float(ratio.group(1)) / float(ratio.group(2)):.12g}"))
    for kind, parse in (("B/s", units.parse_bandwidth), ("s", units.parse_time), ("B", units.parse_size_approx),
                        ("share", units.parse_share),  # 50% and 50.0% alike
                        ("number", parse_flops)):  # 989 TFLOP/s is the number 989e12, as gpu_flops reads it
        try:
            amount = float(f"{parse(value):.12g}")  # 1 us and 1000 ns alike, to float rounding
        except ValueError:
            continue
        # no bandwidth and no share of it are one (a fault's 0% and 0 Gb/s: the link down)
        return ("none of a bandwidth", 0.0) if amount == 0 and kind in ("B/s", "share") else (kind, amount)
    return value


POINT_BYTES = 1024
"""What a planned point holds until the sweep ends (its overrides, key and record: ~600 B
measured for 20,480 points), so a sweep of ten axes of ten values (10^10 points) is refused
in one line before it is planned, not after minutes of filling the memory."""


def _unread_axis(axes: Mapping[str, list], algorithms: list[str], collective: str) -> str | None:
    """The first ``options.NAME`` axis none of ``algorithms`` reads (as ``simnet run`` warns
    ``option_unread`` and compare refuses a variant's), or None."""
    from simnet.run.simulate import unread_options
    from simnet.spec.options import Options

    given = {key.removeprefix("options."): values for key, values in axes.items()  # (an unknown one: refused as such)
             if key.startswith("options.") and key.removeprefix("options.") in Options.model_fields}
    unread = unread_options(given, list(algorithms), collective) if given else []
    return f"options.{unread[0]}" if unread else None


def plan_sweep(scenario: Scenario, gpus: list[int] | None = None, sets: dict[str, list[Any]] | None = None,
               algorithms: list[str] | None = None, env: Mapping[str, str] | None = None,
               every_algorithm: bool | None = None) -> SweepPlan:
    """The points of a sweep: the scenario's ``sweep:`` axes, overridden by ``gpus``/``sets``;
    ``env``: the NCCL variables for every point (default: this process's environment);
    ``every_algorithm``: the algorithms are ``all`` (default: the scenario's), so points
    whose topology cannot run theirs are records of why, not errors."""
    if gpus is not None and "gpus" in (sets or {}):
        raise ValueError("GPU counts are given twice (--gpus and --set gpus=...): give them once")
    base = str(Path(scenario.source).parent) if scenario.source and Path(scenario.source).exists() else "."
    axes = {dotted_key(k): _values(v, Path(base)) for k, v in (scenario.sweep or {}).items()}
    axes.update({dotted_key(k): _values(v, Path(base)) for k, v in (sets or {}).items()})
    if nested_twice(axes):  # the file's sweep: and --set together
        raise ValueError(f"sweep: {nested_twice(axes)}")
    moot = _unread_axis(axes, algorithms or scenario.algorithms, scenario.collective)
    if moot:
        why = (f"read by none of {', '.join(algorithms or scenario.algorithms)} (see simnet algorithms), so every "
               "value of it gives the same point; leave it out, or name an algorithm that reads it")
        if moot in (scenario.sweep or {}) and algorithms is None and scenario.source and \
                Path(scenario.source).is_file():  # the file's axis, moot beside the file's algorithms
            raise load_yaml(scenario.source)[1].error(("sweep", moot), why)
        raise ValueError(f"{moot}: {why}")
    counts = gpus if gpus is not None else axes.pop("gpus", None)
    axes.pop("gpus", None)
    for count in counts or []:
        if count != "all" and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise ValueError(f"gpus: {shown(count)} is not a GPU count (a whole number, 1 or more, or all)")
    counts = [None] if counts is None else [None if c == "all" else int(c) for c in counts]  # all: as gpus: all
    if counts != [None] and isinstance(scenario.data.get("gpus"), list):  # (it was replaced without a word)
        raise ValueError("gpus: the scenario names its GPUs, and a sweep's GPU counts are the first N ranks of the "
                         "topology (a generated one grown to them), not of that list: leave the list out to sweep "
                         "counts, or run -g N for the first N of it")
    names = list(axes)
    size = math.prod(len(axes[n]) for n in names) * len(counts) * len(algorithms or scenario.algorithms)
    check_fits(size * POINT_BYTES, f"a sweep of {size:,} points (the product of its axes)",
               "sweep fewer values, or split the axes over several sweeps (one --out each)")
    # each axis value with the file it names, if any (looked up once, not per point)
    named = {n: [(v, _file(v, Path(base))) for v in axes[n]] for n in names}
    combos = [(tuple((n, v) for n, (v, _) in zip(names, combo)),
               tuple((n, file) for n, (_, file) in zip(names, combo) if file))
              for combo in itertools.product(*(named[n] for n in names))]
    own = {path.resolve() for path in _files_read(scenario.data, Path(base))}
    points = [Point(combo, count, algorithm, reads, files)
              for combo, files in combos
              for reads in [_reads(scenario.data, combo, Path(base), own)]
              for count in counts
              for algorithm in (algorithms or scenario.algorithms)]
    # `--gpus 4,4` or `-a ring -a ring` is one point, computed once; by key, as a value may be a
    # list or a mapping (sizes: [[1 MiB], [2 MiB]]), which no set holds
    unique: dict[str, Point] = {}
    for point in points:
        unique.setdefault(point.key, point)
    every = scenario.every_algorithm if every_algorithm is None else every_algorithm
    return SweepPlan(scenario.data, base, scenario.source or "<scenario>", list(unique.values()), nccl_env(env), every,
                     list(algorithms) if algorithms else None)


def _grow(document: dict, gpus: int, base: Path) -> dict:
    """Scale a generated topology up to ``gpus`` generated GPUs (e.g. more racks); explicit
    topologies and generators that are already big enough stay as they are."""
    document = _inline_topology(document, base)
    topology = document["topology"]
    generate = topology.get("generate") if isinstance(topology, dict) else None
    if not isinstance(generate, dict) or generate.get("kind") not in GROWTH:
        return document
    try:
        return {**document, "topology": {**topology, "generate": grown(generate, gpus)}}
    except (GeneratorError, ValueError):
        return document  # let the scenario's own validation report it


def as_the_file_writes(overrides: tuple, key: str, name: str, document: dict) -> tuple:
    """``overrides`` (an option's set) with the key ``name`` as the scenario ``document``
    writes it: without the set's ``key`` where that is ``name`` itself, else (``key`` a
    mapping around it: ``training.parallelism`` for ``training.parallelism.fsdp``) with the
    file's value put back inside the set's mapping, the mapping's other keys kept."""
    loc = dotted_loc(name)
    if loc == dotted_loc(key):
        return tuple((k, v) for k, v in overrides if k != key)
    value = document
    for part in loc:
        value = value[part]
    return (*overrides, (".".join(map(str, loc)), value))


def scenario_at(plan: SweepPlan, overrides: tuple[tuple[str, Any], ...], gpus: int | None) -> Scenario:
    """The scenario a point simulates (raises ``InputError`` for bad overrides)."""
    try:
        document = apply_overrides(plan.document, dict(overrides), Path(plan.base))
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(str(exc), plan.source) from None
    if gpus is not None:
        document = _grow(document, gpus, Path(plan.base))
        document["gpus"] = gpus
    if plan.algorithms is not None:  # (a point's collective is judged beside the algorithms that run)
        document = {**document, "algorithms": plan.algorithms}
    label = plan.source + (f" with {', '.join(f'{k}={v if isinstance(v, str) else shown(v)}' for k, v in overrides)}"
                           if overrides else "")  # each value as typed (true, not Python's True)
    try:
        return scenario_from_dict(document, Source(label), base=Path(plan.base))
    except InputError as exc:  # a value of the file's own sweep: axes is refused on the axis's line
        axes = plan.document.get("sweep") if isinstance(plan.document.get("sweep"), dict) else {}
        own = [k for k, v in overrides if v in axes.get(k, [])]
        key = setting_named(exc.message, own) or (own[0] if len(own) == 1 == len(overrides) else None)
        if exc.line is not None or key is None or not Path(plan.source).is_file():
            raise
        value = dict(overrides)[key]
        said = value if isinstance(value, str) else shown(value)
        why = exc.message.removeprefix(f"{key}: ").removeprefix(f"{said}: ")  # the point names both already
        raise load_yaml(plan.source)[1].error(("sweep", key), f"the point {key}={said}: {why}") from None


def check_values(scenario: Scenario, sets: dict[str, list[Any]] | None = None,
                 algorithms: list[str] | None = None) -> SweepPlan:
    """Refuse (``InputError``, on the axis's line where the file states it) a value of the
    file's ``sweep:`` axes or of ``sets`` (--set) that a point would refuse, each value once
    beside the file's other values as written, not every point of the axes' product (a few
    axes make thousands: minutes before a typo is said); a value refused only beside another
    axis's value is said when the sweep's points are planned. GPU counts are checked as
    numbers, not grown into topologies; ``algorithms`` replace the scenario's (``-a``).
    Every spelling is checked, not only the one of a quantity's spellings the points keep
    (``4,4.0`` of a whole-number field is refused as ``4.0,4`` is). Returns a plan of no points."""
    axes = {k: v if isinstance(v, list) else [v] for k, v in {**(scenario.sweep or {}), **(sets or {})}.items()
            if k != "gpus"}
    plan = plan_sweep(scenario, sets=dict.fromkeys(axes, []), algorithms=algorithms)  # no product built
    for key, values in axes.items():
        for value in values:
            scenario_at(plan, ((key, value),), None)
    return plan


def check_points(scenario: Scenario) -> None:
    """Refuse (``InputError`` on the line that states it) a ``sweep:`` axis value or a
    variant's ``set`` that ``simnet sweep`` or ``simnet compare`` would refuse, so a file
    run with ``simnet run`` is checked whole, not only in the parts that run reads
    (``check_values``)."""
    plan = check_values(scenario)
    for index, variant in enumerate(scenario.variants):
        try:
            scenario_at(plan, tuple(variant.set.items()), None)
        except InputError as exc:
            setting = setting_named(exc.message, list(variant.set))
            if exc.line is not None or not Path(plan.source).is_file():
                raise
            where = ("variants", index) + (("set", setting) if setting else ())
            message = exc.message.removeprefix(f"{setting}: ") if setting else exc.message
            raise load_yaml(plan.source)[1].error(where, message) from None


def setting_named(message: str, keys: list[str]) -> str | None:
    """The key of ``keys`` (dotted, as overrides set them) that a point's refusal names
    first: ``topology.generate.racks: 0 must be...`` names ``topology.generate.racks``,
    ``bogus: unknown key`` names ``bogus.key``; None if none."""
    field = re.sub(r"\[(\d+)\]", r".\1", message.partition(": ")[0])  # faults[0].at is faults.0.at
    return next((k for k in keys if field == k or k.startswith(field + ".") or field.startswith(k + ".")), None)
