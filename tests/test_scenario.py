"""Scenario files: what they accept, and one clear line for each mistake."""

from pathlib import Path

import pytest

from simnet import InputError, run_scenario, simulate
from simnet.spec.scenario import load_scenario, scenario_from_dict
from simnet.spec.values import parse_cost, parse_sizes

ROOT = Path(__file__).parent.parent
BAD = Path(__file__).parent / "bad_scenarios"
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))

EXPECTED = {
    "topology_not_scenario.yaml": (1, "this is a topology file, not a scenario; a scenario names it (topology: "
                                      "path/to/it.yaml) with sizes and algorithms (see scenarios/); simnet topo checks it"),
    "unknown_key.yaml": (5, "colour: unknown key 'colour'; expected one of name, description, topology, collective, "
                         "model, calibration, size, sizes, algorithms, gpus, options, workload, training, sweep, variants, "
                         "cost, faults, stragglers, jobs, placement"),
    "bad_size.yaml": (3, "sizes: '64 Mb' is not a size (e.g. '64 MiB', '1 GB')"),
    "unknown_algorithm.yaml": (4, "algorithms[1]: unknown algorithm 'butterfly' for allreduce; expected ring, tree, nvls, nvls_tree, "
                                  "collnet_direct, collnet_chain, hierarchical, halving_doubling, recursive_doubling, "
                                  "direct, binary_tree, double_binary_tree, naive, ps, auto or all"),
    "missing_topology.yaml": (2, "topology: no topology file '{dir}/../../topologies/nope.yaml'"),
    "too_many_gpus.yaml": (5, "gpus: 9 is out of range; this topology has 8 GPUs"),
    "unknown_ps_server.yaml": (5, "options.ps_server: 'ps9' is not a node of dgx-h100"),
    "bad_channels.yaml": (6, "options.channels: 0 must be at least 1"),
    "size_and_sizes.yaml": (4, "sizes: give size or sizes, not both"),
    "bad_range.yaml": (3, "sizes: '8 GiB .. 8 B x2': a range needs 0 < start <= end and a factor above 1 "
                          "(e.g. '8 B .. 8 GiB x2')"),
    "incomplete_workload.yaml": (5, "workload: give gradient_size, or parameters (and dtype)"),
    "bad_cost.yaml": (6, "variants[0].cost: 'lots' is not a cost (e.g. '1.2 M$', '$800k', '250000 $')"),
    "inline_topology_error.yaml": (10, "topology.links[1].bandwidth: '10 Gbit' is not a bandwidth "
                                       "(e.g. '400 Gb/s', '50 GB/s')"),
    "bad_inner.yaml": (5, "options.inner: 'butterfly' is not one of 'ring', 'tree', 'binary_tree', 'double_binary_tree', "
                          "'halving_doubling' or 'recursive_doubling'"),
    # a value of the wrong kind says what it is and what the key wants, in a YAML writer's words
    "algorithms_not_a_list.yaml": (4, "algorithms: 'ring' is text; expected a list (e.g. [ring]) or one of 'all' or "
                                      "'auto'"),
    "faults_a_mapping.yaml": (5, "faults: {{at: 1 ms, node: gpu0, bandwidth: 50%}} is a mapping; expected "
                                 "a list (e.g. [a, b], or one '- item' per line)"),
    "gpu_names_as_numbers.yaml": (4, "gpus[0]: 0 is a number; expected text"),
    "empty_name.yaml": (1, "name: is empty; give it a value (or leave the key out where it may be)"),
    "infinite_flops.yaml": (5, "workload.model_flops: inf is not a finite number"),
    "number_as_key.yaml": (5, "options[1]: the key 1 is not a name; write keys as text"),
    "yes_no_as_a_time.yaml": (4, "workload.compute_time: a yes/no (true, false) is not a time; give one with its "
                                 "unit (e.g. '1.5 us')"),
    "yes_no_as_a_fault_time.yaml": (4, "faults[0].at: a yes/no (true, false) is not a time; give one with its unit "
                                       "(e.g. '1.5 us')"),
    "options_a_list.yaml": (5, "options: [{{channels: 4}}] is a list; expected a mapping with keys such as chunk_size, "
                               "channels, inner, group_by"),
}


def test_corpus_is_complete():
    assert sorted(EXPECTED) == sorted(p.name for p in BAD.glob("*.yaml"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_scenario_is_one_line(name):
    line, message = EXPECTED[name]
    with pytest.raises(InputError) as info:
        load_scenario(BAD / name)
    assert str(info.value) == f"{BAD / name}:{line}: {message.format(dir=BAD)}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cli_refuses_bad_scenarios_with_exit_2(cli, name):
    result = cli("run", BAD / name)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and f"{BAD / name}:" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


# llm_at_scale.yaml (its 16,384-GPU fabric, 4 s) loads whole in tests/test_training.py, run as a user types it
@pytest.mark.parametrize("path", [p for p in SCENARIOS if p.name != "llm_at_scale.yaml"], ids=lambda p: p.name)
def test_every_shipped_scenario_loads(path):
    """... and writes no key it would say changed nothing."""
    scenario = load_scenario(path)
    assert (scenario.sizes or scenario.training) and scenario.algorithms and scenario.topology.gpus
    assert not [w.message for w in scenario.warnings if w.kind == "key_unread"]


def test_sizes_forms():
    assert parse_sizes("8 B .. 64 B x2") == [8, 16, 32, 64]
    assert parse_sizes("1 KiB .. 1 MiB x4") == [1024, 4096, 16384, 65536, 262144, 1048576]
    assert parse_sizes(["1 KiB", "2 KB"]) == [1024, 2000]
    assert parse_sizes("1 GiB") == [2**30]
    # small sizes round to the same byte count: a range counts the distinct sizes it makes
    assert parse_sizes("1 B .. 4 B x1.1") == [1, 2, 3, 4]
    with pytest.raises(ValueError, match=r"'8 B \.\. 64 B x2' is a range: give it as the whole value"):
        parse_sizes(["1 KiB", "8 B .. 64 B x2"])
    with pytest.raises(ValueError, match=r"a range is start \.\. end and its factor"):  # not "not a size" (round ab)
        parse_sizes("1 MiB .. 1 KiB")


def test_cost_forms():
    assert parse_cost("1.2 M$") == 1.2e6
    assert parse_cost("$800k") == 8e5
    assert parse_cost("250000 $") == 250000.0
    with pytest.raises(ValueError, match="has no currency"):  # fuzz 31h #143: a bare 2 was $2, first in compare
        parse_cost(250000)
    with pytest.raises(ValueError):
        parse_cost("cheap")


def test_inline_topology_gpus_and_all_algorithms():
    scenario = scenario_from_dict({
        "name": "inline", "topology": {"name": "t", "generate": {"kind": "nvswitch", "gpus": 8}},
        "size": "1 MiB", "algorithms": "all", "gpus": 4, "options": {"chunk_size": "256 KiB"}})
    assert len(scenario.topology.gpus) == 4
    assert "ps" in scenario.algorithms and "hierarchical" in scenario.algorithms
    assert scenario.options == {"chunk_size": 262144}
    # NCCL's own pick is one of all (issue 31: `algorithms: all` left out auto), in the file and with -a
    from simnet.cli.choices import algorithm_option

    assert scenario.algorithms[0] == "auto" and algorithm_option(("all",), "s.yaml")[0] == "auto"


def test_gpu_ids_select_ranks_in_rank_order():
    scenario = scenario_from_dict({"name": "ids", "topology": {"name": "t", "generate": {"kind": "nvswitch"}},
                                   "size": "1 MiB", "algorithms": ["ring"], "gpus": ["gpu7", "gpu3"]})
    assert scenario.topology.gpus == ["gpu3", "gpu7"]  # the list picks; the topology ranks (fuzz round ap M2)


def test_run_returns_results_in_size_major_order():
    scenario = scenario_from_dict({"name": "order", "topology": {"name": "t", "generate": {"kind": "nvswitch"}},
                                   "sizes": ["1 MiB", "2 MiB"], "algorithms": ["ring", "tree"]})
    results = run_scenario(scenario)
    assert [(r.size_bytes, r.algorithm) for r in results.runs] == [
        (2**20, "ring"), (2**20, "tree"), (2**21, "ring"), (2**21, "tree")]


def test_workload_from_flops_and_parameters_gives_the_step_on_paper():
    # 6e12 FLOP at 1e13 FLOP/s = 600 ms; 2.5e8 bf16 parameters = 5e8 bytes in one bucket,
    # AllReduced by a ring after the backward pass: T = C + 2(N-1)(L + G/(N B))
    scenario = scenario_from_dict({
        "name": "flops", "size": "1 MiB", "algorithms": ["ring"], "model": "ideal",
        "topology": {"name": "box", "generate": {"kind": "nvswitch", "gpus": 4, "gpu_bandwidth": "100 GB/s",
                                                 "latency": "1 us"}},
        "workload": {"model_flops": 6e12, "gpu_flops": 1e13, "parameters": 2.5e8, "dtype": "bf16"}})
    [step] = run_scenario(scenario).steps
    ring = 2 * 3 * (2e-6 + 5e8 / (4 * 100e9))
    assert step["compute_s"] == pytest.approx(0.6)
    assert step["iteration_time_s"] == pytest.approx(0.6 + ring, rel=1e-6)
    assert step["communication_exposed_s"] == pytest.approx(ring, rel=1e-6)
    assert step["speedup"] == pytest.approx(4 * 0.6 / (0.6 + ring), rel=1e-6)


def test_replace_changes_what_sweeps_and_comparisons_simulate_too(root):
    # a sweep rebuilds the scenario from its document on each worker: a replaced field must
    # reach it, or a notebook's .replace(sizes=...) would silently sweep the file's sizes
    from simnet.run.sweep.evaluate import evaluate_point
    from simnet.run.sweep.plan import Point, plan_sweep

    loaded = load_scenario(root / "scenarios/ps_overload.yaml")
    scenario = loaded.replace(sizes=[2**20], algorithms=["ring"], model="ideal", workload=None,
                              topology=loaded.topology.subset(4))
    record = evaluate_point(plan_sweep(scenario), Point((), None, "ring"))
    assert [s["size_bytes"] for s in record["sizes"]] == [2**20] and record["gpus"] == 4
    assert "iteration_time_s" not in record
    ideal = simulate(loaded.topology.subset(4), "ring", 2**20, model="ideal").time_s
    assert record["sizes"][0]["time_s"] == pytest.approx(ideal, rel=1e-12)
    from simnet.spec.workloads import Workload

    step = loaded.replace(workload=Workload(compute_time="180 ms", gradient_size="1.4 GB", bucket_size="25 MiB"))
    record = evaluate_point(plan_sweep(step), Point((), 4, "ring"))
    assert record["compute_s"] == 0.18 and record["iteration_time_s"] >= 0.18
    with pytest.raises(ValueError, match="cannot be replaced"):
        loaded.replace(name="other")
    with pytest.raises(ValueError, match="GPUs of this scenario's network"):
        loaded.replace(topology=load_scenario(root / "scenarios/single_node.yaml").topology)


def test_a_quoted_gpu_count_and_a_ratio_read_as_written():
    # gpus: "8" is text, not a count: said so; an oversubscription reads as 4:1 as well as 4
    from simnet import InputError, topology_from_dict

    with pytest.raises(InputError, match="gpus: '8': give a GPU count \\(unquoted, e.g. 8\\)"):
        scenario_from_dict({"name": "q", "topology": {"name": "t", "generate": {"kind": "nvswitch"}},
                            "size": "1 MiB", "algorithms": ["ring"], "gpus": "8"})
    # fuzz q: YAML 1.1's 0b110 is text now, and not a quoted count
    with pytest.raises(InputError, match="gpus: '0b110': give a GPU count \\(in the digits 0-9, e.g. 8\\)"):
        scenario_from_dict({"name": "q", "topology": {"name": "t", "generate": {"kind": "nvswitch"}},
                            "size": "1 MiB", "algorithms": ["ring"], "gpus": "0b110"})
    spec = {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "spines": 1}
    ratio = topology_from_dict({"name": "r", "generate": {**spec, "oversubscription": "4:1"}})
    number = topology_from_dict({"name": "n", "generate": {**spec, "oversubscription": 4}})
    assert ratio.capacity.tolist() == number.capacity.tolist()



@pytest.mark.parametrize("written, kind", [({"usd": 1000000}, "a mapping"), (["1 M$"], "a list"), (True, "a yes/no")])
def test_a_cost_written_as_no_text_is_said_as_yaml_writes_it(written, kind):
    """Fuzz round u #039: ``cost: {usd: 1000000}`` was refused with Python's repr of a dict."""
    from simnet.spec.values import parse_cost

    with pytest.raises(ValueError, match=rf"^.* is {kind}, not a cost \(e\.g\. '1\.2 M\$'"):
        parse_cost(written)
    with pytest.raises(ValueError) as refused:
        parse_cost({"usd": 1000000})
    assert "'usd'" not in str(refused.value) and "{usd: 1000000}" in str(refused.value)
