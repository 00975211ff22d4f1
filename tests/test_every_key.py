"""Every key of every kind of file either changes the answer or is refused in one line.

The keys are walked from the schemas themselves (the pydantic models of a scenario, its
options, workload, training step, faults, stragglers, jobs and variants; of a topology,
its nodes and links and every generator; of a calibration profile), so a key added later
without a case here fails ``test_every_key_has_a_case``. Each case sets one key on a small
document that otherwise leaves it at its default, and the answer a user gets (the run's
JSON, the jobs' JSON, the sweep's points, the comparison's rows) must differ from the
answer without it, or the document must be refused in one line naming the key. The echo
of a run's options in its JSON does not count as a change.
"""

from __future__ import annotations

import copy
import inspect
import json
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel

from simnet.errors import InputError, Unsupported
from simnet.model.calibration import _CalibrationSpec
from simnet.run.compare import compare_scenarios
from simnet.run.jobs import run_jobs
from simnet.run.scenario import run_scenario
from simnet.run.sweep.plan import plan_sweep
from simnet.spec.conditions import StragglerDistribution
from simnet.spec.scenario import ScenarioSpec, load_scenario
from simnet.topology import generators
from simnet.topology.export import topology_as_dict
from simnet.topology.schema import TopologySpec

LEAF = {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 2, "spines": 1}
FABRIC = {"name": "t", "generate": LEAF}
BASE = {"name": "s", "topology": FABRIC, "sizes": ["1 MiB"]}
TWO = [{"name": "v"}, {"name": "u", "set": {"options.channels": 4}}]
"""Two variants, the first the file as written: compare ranks two or more."""
NODES = {"name": "n", "nodes": [{"id": "g0", "kind": "gpu", "host": "h0"}, {"id": "g1", "kind": "gpu", "host": "h0"},
                                {"id": "sw", "kind": "switch", "host": "h0"}],
         "links": [{"a": "g0", "b": "sw", "bandwidth": "100 GB/s", "latency": "1 us"},
                   {"a": "g1", "b": "sw", "bandwidth": "100 GB/s", "latency": "1 us"}]}
NICS = {**NODES, "nodes": NODES["nodes"] + [{"id": "nic0", "kind": "nic", "host": "h0"}, {"id": "tor", "kind": "switch"}],
        "links": NODES["links"] + [{"a": "g0", "b": "nic0", "bandwidth": "50 GB/s", "latency": "1 us", "type": "pcie"},
                                   {"a": "nic0", "b": "tor", "bandwidth": "50 GB/s", "latency": "1 us"}]}
TRAINING = {"model": {"layers": 2, "hidden": 64, "heads": 4, "ffn": 128, "sequence": 16, "vocabulary": 100},
            "parallelism": {"tp": 2}, "efficiency": 0.5}
JOBS = [{"name": "a", "gpus": 2, "size": "1 MiB"}, {"name": "b", "gpus": 2, "size": "1 MiB"}]
PROFILE = {"calibration": {"base_latency": "5 us", "intra_step_latency": "0 us", "network_step_latency": "0 us",
                           "bandwidth": 0.8, "network_bandwidth": 0.9}}
DELETE = object()


def edit(document: dict, **paths) -> dict:
    """A deep copy of ``document`` with each path (keys and list indices joined by ``__``) set,
    or removed with DELETE."""
    out = copy.deepcopy(document)
    for path, value in paths.items():
        *parents, last = path.split("__")
        where = out
        for key in parents:
            where = where.setdefault(key, {}) if isinstance(where, dict) else where[int(key)]
        if value is DELETE:
            where.pop(last, None)
        elif isinstance(where, list):
            where[int(last):int(last) + 1] = [copy.deepcopy(value)]  # one past the end appends
        else:
            where[last] = copy.deepcopy(value)
    return out


def with_topology(generate: dict, **scenario) -> dict:
    return {**BASE, "topology": {"name": "t", "generate": generate}, **scenario}


@dataclass(frozen=True)
class Case:
    """``base`` and ``changed``: two scenario documents that differ in ``key`` alone."""

    model: str
    key: str
    base: dict
    changed: dict
    profile: dict | None = None  # the calibration profile both read, when one is named

    @property
    def id(self) -> str:
        return f"{self.model}.{self.key}"


def case(model: str, key: str, base: dict, value=None, **paths) -> Case:
    """Set ``key`` (a dotted path into ``base`` given as ``paths``, or the scenario's own key)."""
    return Case(model, key, base, edit(base, **(paths or {key: value})))


def generator_cases(model: str, base: dict, changes: dict, **scenario) -> list[Case]:
    return [case(model, key, with_topology(base, **scenario), **{f"topology__generate__{key}": value})
            for key, value in changes.items()]


# ------------------------------------------------------------------ the cases
HOSTS = {"server": "dgx-a100", "gpu": "a100", "nvlink_bandwidth": "100 GB/s", "nvlink_latency": "5 us",
         "nvls": False, "gpus_per_tray": 1, "nic_per": "host", "nics_per_host": 1, "nic_bandwidth": "100 Gb/s",
         "transport": "tcp", "net_latency": "50 us", "pcie_bandwidth": "4 GB/s", "pcie_latency": "20 us",
         "link_latency": "30 us", "spines": 2, "uplink_bandwidth": "10 Gb/s", "oversubscription": 4,
         "sharp": True, "prefix": "x-", "racks": 3, "hosts_per_rack": 2, "gpus_per_host": 4}
CASES: list[Case] = [
    case("ScenarioSpec", "name", BASE, "other"),
    case("ScenarioSpec", "topology", BASE, {"name": "b", "generate": {"kind": "nvswitch", "gpus": 4}}),
    case("ScenarioSpec", "collective", BASE, "all_gather"),
    case("ScenarioSpec", "model", BASE, "ideal"),
    case("ScenarioSpec", "calibration", BASE, "profile.cal.yaml"),
    case("ScenarioSpec", "options", edit(BASE, algorithms=["ring"]), {"channels": 1}),
    case("ScenarioSpec", "size", edit(BASE, sizes=DELETE, size="1 MiB"), size="2 MiB"),
    case("ScenarioSpec", "sizes", BASE, ["2 MiB"]),
    case("ScenarioSpec", "algorithms", BASE, ["ring"]),
    case("ScenarioSpec", "gpus", BASE, 2),
    case("ScenarioSpec", "workload", BASE, {"compute_time": "1 ms", "gradient_size": "1 MiB"}),
    case("ScenarioSpec", "training", BASE, TRAINING),
    case("ScenarioSpec", "sweep", BASE, {"gpus": [2, 4]}),
    case("ScenarioSpec", "variants", BASE, [{"name": "v", "set": {"gpus": 2}}, {"name": "w"}]),
    case("ScenarioSpec", "faults", BASE, [{"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "1%"}]),
    case("ScenarioSpec", "stragglers", BASE, {"r0h0-gpu0": "1 ms"}),
    case("ScenarioSpec", "jobs", BASE, sizes=DELETE, jobs=JOBS),
    case("ScenarioSpec", "placement", edit(BASE, sizes=DELETE, jobs=JOBS), "spread"),
    case("ScenarioSpec", "cost", edit(BASE, variants=[{"name": "v", "set": {"gpus": 2}}, {"name": "w"}]),
         "1000 $"),
    case("Variant", "name", edit(BASE, variants=TWO), variants__0__name="w"),
    case("Variant", "set", edit(BASE, variants=TWO), variants__0__set={"gpus": 2}),
    case("Variant", "cost", edit(BASE, variants=TWO), variants__0__cost="1000 $"),
    *[case("Options", key, edit(BASE, algorithms=[algorithm], **extra), **{f"options__{key}": value})
      for key, algorithm, value, extra in [
          ("chunk_size", "ring", "64 KiB", {"model": "ideal"}),
          ("channels", "ring", 1, {}),
          ("inner", "hierarchical", "ring", {}),
          ("group_by", "hierarchical", "rack", {"topology": {"name": "t", "generate": {**LEAF, "racks": 1, "hosts_per_rack": 2}}}),
          ("ps_server", "ps", "r1h0-gpu1", {}),
          ("ps_servers", "ps", 2, {}),
          ("reduce_bandwidth", "ring", "1 GB/s", {"model": "ideal"}),
          ("message_overhead", "ring", "100 us", {"model": "ideal"}),
          ("pxn", "auto", False, {"collective": "all_to_all"})]],
    *[case("Workload", key, edit(BASE, workload=workload), **{f"workload__{key}": value})
      for key, value, workload in [
          ("compute_time", "2 ms", {"compute_time": "1 ms", "gradient_size": "1 MiB"}),
          ("model_flops", 2e15, {"model_flops": 1e15, "gpu_flops": "1 PFLOP/s", "gradient_size": "1 MiB"}),
          ("gpu_flops", "2 PFLOP/s", {"model_flops": 1e15, "gpu_flops": "1 PFLOP/s", "gradient_size": "1 MiB"}),
          ("gradient_size", "2 MiB", {"compute_time": "1 ms", "gradient_size": "1 MiB"}),
          ("parameters", 2e6, {"compute_time": "1 ms", "parameters": 1e6}),
          ("dtype", "bf16", {"compute_time": "1 ms", "parameters": 1e6}),
          ("bucket_size", "256 KiB", {"compute_time": "1 ms", "gradient_size": "1 MiB"}),
          ("backward_fraction", 0.1, {"compute_time": "100 us", "gradient_size": "4 MiB", "bucket_size": "1 MiB"}),
          ("compute_slowdown", {"r0h0-gpu0": 2}, {"compute_time": "1 ms", "gradient_size": "1 MiB"})]],
    *[case("Training", key, edit(BASE, sizes=DELETE, training=TRAINING), **{f"training__{key}": value})
      for key, value in [("model", "llama3_8b"), ("parallelism", {"tp": 4}), ("efficiency", 0.25),
                         ("gpu_flops", "100 TFLOP/s"), ("dtype", "fp32"), ("grad_dtype", "bf16")]],
    *[case("ModelShape", key, edit(BASE, sizes=DELETE, training=TRAINING, training__model__kv_heads=2),
           **{f"training__model__{key}": value})
      for key, value in [("layers", 4), ("hidden", 128), ("heads", 8), ("ffn", 256), ("sequence", 32),
                         ("vocabulary", 200), ("kv_heads", 4), ("experts", 2), ("gated", False)]],
    case("ModelShape", "top_k", edit(BASE, sizes=DELETE, training=TRAINING, training__model__experts=4),
         training__model__top_k=2),
    *[case("ParallelismSpec", key, edit(BASE, sizes=DELETE, training=edit(TRAINING, parallelism={})),
           **{f"training__parallelism__{key}": value})
      for key, value in [("tp", 2), ("pp", 2), ("dp", 2), ("fsdp", True), ("micro_batches", 2),
                         ("micro_batch_size", 2)]],
    case("ParallelismSpec", "ep", edit(BASE, sizes=DELETE, training=TRAINING, training__model__experts=2),
         training__parallelism__ep=2),
    case("ParallelismSpec", "virtual_stages", edit(BASE, sizes=DELETE, training=TRAINING, training__model__layers=4,
                                                   training__parallelism={"pp": 2, "micro_batches": 2}),
         training__parallelism__virtual_stages=2),
    *[case("FaultSpec", key, edit(BASE, faults=[{"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "50%"}]),
           **{f"faults__0__{key}": value})
      for key, value in [("at", "10 us"), ("link", ["tor1", "spine0"]), ("bandwidth", "10%")]],
    case("FaultSpec", "node", edit(BASE, faults=[{"at": "0 s", "node": "spine0", "bandwidth": "50%"}]),
         faults__0__node="tor0"),
    case("FaultSpec", "down", edit(BASE, topology__generate__spines=2,
                                   faults=[{"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "50%"}]),
         faults__0__bandwidth=DELETE, faults__0__down=True),
    *[case("StragglerDistribution", key, edit(BASE, stragglers=dist), **{f"stragglers__{key}": value})
      for key, value, dist in [("distribution", "exponential", {"distribution": "lognormal", "mean": "10 us"}),
                               ("mean", "20 us", {"distribution": "lognormal", "mean": "10 us"}),
                               ("sigma", 2.0, {"distribution": "lognormal", "mean": "10 us"}),
                               ("seed", 7, {"distribution": "lognormal", "mean": "10 us"})]],
    *[case("JobSpec", key, edit(BASE, sizes=DELETE, jobs=JOBS), **{f"jobs__0__{key}": value})
      for key, value in [("name", "c"), ("gpus", ["r0h0-gpu0", "r1h0-gpu0"]), ("placement", "spread"),
                         ("algorithm", "tree"), ("size", "4 MiB"), ("start", "1 ms"), ("repeat", 2)]],
    case("JobSpec", "hosts", edit(BASE, sizes=DELETE, jobs=[{"name": "a", "hosts": ["r0h0"], "size": "1 MiB"}]),
         jobs__0__hosts=["r0h0", "r1h0"]),
    case("JobSpec", "period", edit(BASE, sizes=DELETE, jobs=edit(JOBS, **{"0__repeat": 2})),
         jobs__0__period="10 ms"),
    case("JobSpec", "background", edit(BASE, sizes=DELETE, jobs=JOBS),
         jobs__1__size=DELETE, jobs__1__background={"pattern": "uniform", "load": "50%"}),
    *[case("BackgroundSpec", key, edit(BASE, sizes=DELETE, topology__generate__gpus_per_host=4, jobs=[
        JOBS[0], {"name": "b", "background": {"pattern": "uniform", "load": "50%"}}]),
        **{f"jobs__1__background__{key}": value})
      for key, value in [("pattern", "incast"), ("load", "90%"), ("seed", 3)]],
    # ---- topologies
    case("TopologySpec", "name", BASE, topology__name="u"),
    case("TopologySpec", "description", BASE, topology__description="the lab's pair"),
    case("TopologySpec", "generate", BASE, topology__generate__racks=3),
    case("TopologySpec", "nodes", edit(BASE, topology=NODES),
         topology__nodes__1={"id": "g1", "kind": "gpu", "host": "h0", "gpu": "a100"}),
    case("TopologySpec", "links", edit(BASE, topology=NODES),
         topology__links__1={"a": "g1", "b": "sw", "bandwidth": "10 GB/s", "latency": "1 us"}),
    case("TopologySpec", "routing", edit(BASE, topology__generate__spines=2, topology__generate__hosts_per_rack=2,
                                         algorithms=["ring"]), topology__routing="by_destination"),
    case("TopologySpec", "calibration", BASE, topology__calibration="profile.cal.yaml"),
    case("NodeSpec", "id", edit(BASE, topology=NODES), topology__nodes__0__id="g9", topology__links__0__a="g9"),
    *[case("NodeSpec", key, edit(BASE, topology=NICS), **{f"topology__nodes__{node}__{key}": value})
      for key, node, value in [("kind", 0, "switch"), ("host", 0, "h1"), ("rack", 0, "r1"), ("region", 0, "east"),
                               ("rank", 0, 1), ("gpu", 0, "a100"), ("transport", 3, "roce"),
                               ("net_latency", 3, "50 us"), ("nvls", 2, True), ("sharp", 4, True)]],
    *[case("LinkSpec", key, edit(BASE, topology=NICS), **{f"topology__links__2__{key}": value})
      for key, value in [("a", "g1"), ("b", "tor"), ("bandwidth", "10 GB/s"), ("latency", "9 us"), ("type", "nvlink")]],
    case("LinkSpec", "directed", edit(BASE, topology=NODES), topology__links__0__directed=True,
         topology__links__2={"a": "sw", "b": "g0", "directed": True, "bandwidth": "10 GB/s", "latency": "1 us"}),
    *generator_cases("LeafSpineParams", LEAF, HOSTS),
    *generator_cases("CrossRegionParams", {**LEAF, "kind": "cross_region", "regions": 2},
                     {**HOSTS, "regions": 3, "wan_bandwidth": "1 Gb/s", "wan_latency": "10 ms",
                      "gateway_bandwidth": "2 Gb/s"}),
    *generator_cases("RailOptimizedParams", {"kind": "rail_optimized", "units": 1, "nodes_per_unit": 2,
                                             "gpus_per_node": 2},
                     {"server": "dgx-a100", "units": 2, "nodes_per_unit": 3, "gpus_per_node": 4, "rails": 1,
                      "gpu": "a100", "nvlink_bandwidth": "100 GB/s", "nvlink_latency": "5 us", "nvls": False,
                      "gpus_per_tray": 1, "nic_bandwidth": "100 Gb/s", "planes": 2, "transport": "tcp",
                      "net_latency": "50 us", "pcie_bandwidth": "4 GB/s", "pcie_latency": "20 us",
                      "link_latency": "30 us", "sharp": True, "prefix": "x-"}),
    *generator_cases("RailOptimizedParams", {"kind": "rail_optimized", "units": 2, "nodes_per_unit": 2,
                                             "gpus_per_node": 2},
                     {"leaf_oversubscription": 2, "switch_radix": 4, "spine_oversubscription": 2},
                     algorithms=["ring"]),
    *generator_cases("NVSwitchParams", {"kind": "nvswitch", "gpus": 4},
                     {"server": "dgx-a100", "gpus": 2, "gpu": "a100", "gpu_bandwidth": "100 GB/s",
                      "latency": "5 us", "nvls": False, "gpus_per_tray": 2, "nic_bandwidth": "100 Gb/s",
                      "pcie_bandwidth": "4 GB/s", "pcie_latency": "20 us", "transport": "roce",
                      "net_latency": "50 us", "host": "box", "prefix": "x-"}),
    *generator_cases("PCIeParams", {"kind": "pcie", "gpus": 4},
                     {"gpus": 2, "gpu": "l40s", "gpus_per_switch": 4, "pcie_bandwidth": "4 GB/s",
                      "uplink_bandwidth": "2 GB/s", "latency": "5 us", "host": "box", "prefix": "x-"}),
    *generator_cases("FullMeshParams", {"kind": "full_mesh", "gpus": 4},
                     {"gpus": 3, "bandwidth": "10 GB/s", "latency": "5 us", "host": "box", "prefix": "x-"}),
    *generator_cases("PSStarParams", {"kind": "ps_star", "workers": 3},
                     {"workers": 4, "servers": 2, "worker_bandwidth": "1 GB/s", "ps_bandwidth": "1 GB/s",
                      # (not its default 5 us, which was 5 * 1e-6 s one bit off 5e-6 s before units were exact)
                      "latency": "7 us", "prefix": "x-", "gpu": "a100", "transport": "ib"}, algorithms=["ps"]),
    *generator_cases("FullMeshParams", {"kind": "full_mesh", "gpus": 4}, {"gpu": "h100",
                                                                          "server": "amd-mi300x-platform"}),
]
CASES += [Case("_CalibrationSpec", key, edit(BASE, topology__calibration="profile.cal.yaml"),
               edit(BASE, topology__calibration="profile.cal.yaml"), profile=edit(PROFILE, **{f"calibration__{key}":
                                                                                            value}))
          for key, value in [("base_latency", "50 us"), ("intra_step_latency", "5 us"),
                             ("network_step_latency", "5 us"), ("bandwidth", 0.4), ("network_bandwidth", 0.5)]]

# Keys that change no answer by design, or whose case is too slow here, each with the reason.
NOT_ANSWERS = {
    "ScenarioSpec.description": "a note for the reader of the file",
    "Options.exact": "binds only on a ring too large to replay exactly, whose exact replay takes ~11 s: "
                     "tests/test_lanes.py::test_the_exact_option_never_bounds",
    **{f"{model}.kind": "selects the generator: every case above runs under its own kind"
       for model in ("LeafSpineParams", "CrossRegionParams", "RailOptimizedParams", "NVSwitchParams", "PCIeParams",
                     "FullMeshParams", "PSStarParams")},
}
# Keys whose case is refused, each for the reason its message names.
REFUSED = {"ParallelismSpec.dp": "dp: 2 x tp 1 x pp 1 is not the 4 GPUs",
           "RailOptimizedParams.spine_oversubscription": "no core tier sits above the spines",
           "NVSwitchParams.pcie_bandwidth": "without nic_bandwidth this server has none",
           "NVSwitchParams.pcie_latency": "without nic_bandwidth this server has none",
           "NVSwitchParams.transport": "without nic_bandwidth this server has none",
           "NVSwitchParams.net_latency": "without nic_bandwidth this server has none"}


def _models() -> dict[str, type[BaseModel]]:
    """Every schema a user's file reaches: scenarios, topologies (and generators), profiles."""
    found: dict[str, type[BaseModel]] = {}

    def walk(model: type[BaseModel]) -> None:
        if model.__name__ in found:
            return
        found[model.__name__] = model
        for field in model.model_fields.values():
            for inner in _classes(field.annotation):
                walk(inner)

    for root in (ScenarioSpec, TopologySpec, _CalibrationSpec, StragglerDistribution,
                 *(cls for _, cls in inspect.getmembers(generators, inspect.isclass)
                   if issubclass(cls, BaseModel) and "kind" in cls.model_fields)):
        walk(root)
    return found


def _classes(annotation) -> list[type[BaseModel]]:
    inner = [annotation] if inspect.isclass(annotation) and issubclass(annotation, BaseModel) else []
    return inner + [c for arg in typing.get_args(annotation) for c in _classes(arg)]


def test_every_key_has_a_case():
    """A key without a case (or a reason it is no answer) is a key nobody checked is read."""
    covered = {c.id for c in CASES} | set(NOT_ANSWERS)
    every = {f"{name}.{key}" for name, model in _models().items() for key in model.model_fields}
    assert sorted(every - covered) == []
    assert sorted(covered - every) == []  # no case for a key that is gone


def _answer(document: dict, folder: Path) -> tuple[str, str]:
    """("answer", JSON) of what a user reads from ``document`` saved in ``folder`` (the run's or
    the jobs' JSON, the sweep's points, the comparison's rows, the topology node by node), or
    ("refused", the message)."""
    path = folder / "scenario.yaml"
    path.write_text(json.dumps(document))
    try:
        scenario = load_scenario(path)
        seen: dict = {"sweep": [p.key for p in plan_sweep(scenario, env={}).points],
                      "topology": topology_as_dict(scenario.topology)}
        if scenario.variants:
            seen["compare"] = compare_scenarios([scenario])
        if scenario.jobs:
            seen["jobs"] = run_jobs(scenario.topology, scenario.jobs, model=scenario.model,
                                    calibration=scenario.calibration, faults=scenario.faults).to_dict()
        else:
            seen["run"] = run_scenario(scenario).to_dict()
            for run in seen["run"]["runs"]:
                run.pop("options")
    except (InputError, Unsupported, ValueError) as exc:
        return "refused", str(exc)
    return "answer", json.dumps(seen, sort_keys=True, default=str)


_BASE_ANSWERS: dict[str, tuple[str, str]] = {}


def _saved_answer(document: dict, profile: dict, folder: Path) -> tuple[str, str]:
    """``_answer`` of ``document`` saved in ``folder`` beside ``profile``."""
    folder.mkdir()
    (folder / "profile.cal.yaml").write_text(json.dumps(profile))
    return _answer(document, folder)


def _base_answer(document: dict, folder: Path) -> tuple[str, str]:
    """``_saved_answer`` of a case's base (beside PROFILE), worked out once per base document:
    most cases share theirs (221 cases, 43 bases), and an answer names nothing of the folder it
    was saved in (base and changed were always saved in two folders)."""
    key = json.dumps(document, sort_keys=True)
    if key not in _BASE_ANSWERS:
        _BASE_ANSWERS[key] = _saved_answer(document, PROFILE, folder)
    return _BASE_ANSWERS[key]


@pytest.mark.parametrize("key_case", CASES, ids=lambda c: c.id)
def test_a_key_changes_the_answer_or_is_refused_in_one_line(key_case, tmp_path):
    before, base = _base_answer(key_case.base, tmp_path / "base")
    after, changed = _saved_answer(key_case.changed, key_case.profile or PROFILE, tmp_path / "changed")
    assert before == "answer", f"the case's own base is refused: {base}"
    if key_case.id in REFUSED:
        assert after == "refused" and "\n" not in changed and REFUSED[key_case.id] in changed, changed
    else:
        assert after == "answer", f"{key_case.id} refused: {changed}"
        assert changed != base, f"{key_case.id} changed nothing a user sees"
