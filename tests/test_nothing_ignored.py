"""Every key either changes the answer or is refused in one line: combinations a run would
not read (jobs with sizes, a training step with faults, a placement with no job,
two forms of one quantity, a misspelt NCCL function)
are refused, naming the key, and NCCL_NVLS_ENABLE=0 stops a job that names nvls as NCCL would."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from simnet import topology_from_dict
from simnet.errors import InputError
from simnet.spec.scenario import scenario_from_dict
from simnet.tuning.predict import parse_nccl_list
from simnet.tuning.tables import ALGORITHMS, PROTOCOLS

FABRIC = {"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 2,
                                    "spines": 1}}
JOBS = [{"name": "a", "gpus": 2, "size": "1 MiB"}, {"name": "b", "gpus": 2, "size": "1 MiB"}]
FAULT = [{"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "1%"}]
TRAINING = {"model": {"layers": 2, "hidden": 64, "heads": 4, "ffn": 128, "sequence": 16, "vocabulary": 100},
            "efficiency": 0.5}


def _refusal(**keys) -> str:
    with pytest.raises(InputError) as caught:
        scenario_from_dict({"name": "s", "topology": FABRIC, **keys})
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("key, value", [("sizes", ["1 MiB"]), ("size", "1 MiB"), ("algorithms", ["ring"]),
                                        ("stragglers", {"r0h0-gpu0": "1 ms"}),
                                        ("options", {"chunk_size": "64 KiB"}),
                                        ("workload", {"compute_time": "1 s", "gradient_size": "1 MiB"})])
def test_jobs_refuse_what_each_job_states_itself_or_does_not_apply(key, value):
    """Beside jobs, these keys were read by nothing. Now the key is named and why it does not
    apply (faults now apply: ``tests/test_jobs.py``)."""
    message = _refusal(jobs=JOBS, **{key: value})
    assert message.split(": ")[1].startswith(key) and "jobs" in message


@pytest.mark.parametrize("key, value", [("faults", FAULT), ("stragglers", {"r0h0-gpu0": "1 ms"})])
def test_a_training_step_refuses_conditions_it_does_not_apply(key, value):
    assert f"{key}:" in _refusal(training=TRAINING, **{key: value})


def test_a_placement_without_jobs_is_refused():
    assert "placement:" in _refusal(sizes=["1 MiB"], placement="spread")


@pytest.mark.parametrize("workload, both", [
    ({"compute_time": "1 s", "model_flops": 1e15, "gpu_flops": 1e14, "gradient_size": "1 MiB"}, "compute_time"),
    ({"compute_time": "1 s", "gradient_size": "1 MiB", "parameters": 1e6}, "gradient_size"),
    ({"compute_time": "1 s", "gradient_size": "1 MiB", "dtype": "bf16"}, "gradient_size")])
def test_two_forms_of_one_quantity_are_refused(workload, both):
    """compute_time beside FLOPs, or a gradient size beside parameters: one would be dropped."""
    message = _refusal(sizes=["1 MiB"], workload=workload)
    assert "workload" in message and both in message and "not both" in message


@pytest.mark.parametrize("value, expected", [
    ("allreduce:tree;allgather:ring", {"Tree"}),       # AllReduce's section
    ("allgather:ring", set(ALGORITHMS)),                # another function's: AllReduce keeps every algorithm
    ("^ring;allreduce:ring,tree", {"Ring", "Tree"})])   # a later section replaces the first for its function
def test_nccl_sections_are_read_as_nccl_reads_them(value, expected):
    assert parse_nccl_list(value, ALGORITHMS, "NCCL_ALGO") == expected


@pytest.mark.parametrize("value, says", [("allreduc:ring", "unknown function 'allreduc'"),
                                         ("ring;tree", "every section after the first names its function"),
                                         ("allgather:rnig", "unknown name 'rnig'")])
def test_nccl_refuses_what_simnet_used_to_ignore(value, says):
    """NCCL's parseList (tuning.cc v2.30.7) fails with ncclInvalidUsage on an unknown prefix,
    a prefix-less section after the first and an unknown name in any section."""
    with pytest.raises(ValueError, match=says):
        parse_nccl_list(value, ALGORITHMS if "r" in value else PROTOCOLS, "NCCL_ALGO")


def test_a_misspelt_function_in_nccl_algo_is_refused_at_the_command_line(cli, root):
    result = cli("run", root / "scenarios/single_node.yaml", "-s", "1 MiB", env={"NCCL_ALGO": "allreduc:ring"})
    assert result.exit_code == 2
    assert "unknown function 'allreduc'" in result.output


def test_nvls_enable_0_stops_a_job_that_names_nvls():
    from simnet.errors import Unsupported
    from simnet.run.jobs import run_jobs
    from simnet.topology.loader import topology_from_dict

    box = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 4, "gpu": "h100"}})
    with pytest.raises(Unsupported, match="NCCL_NVLS_ENABLE=0"):
        run_jobs(box, [{"name": "a", "gpus": 4, "size": "1 MiB", "algorithm": "nvls"}],
                 env={"NCCL_NVLS_ENABLE": "0"})


@pytest.mark.parametrize("keys, field", [
    ({"sizes": ["1 MiB"], "options": {"channels": True}}, "options.channels"),
    ({"sizes": ["1 MiB"], "workload": {"compute_time": "1 s", "gradient_size": "1 MiB", "backward_fraction": True}},
     "workload.backward_fraction"),
    ({"sizes": ["1 MiB"], "workload": {"compute_time": "1 s", "gradient_size": "1 MiB",
                                       "compute_slowdown": {"r0h0-gpu0": True}}}, "workload.compute_slowdown"),
    ({"training": {**TRAINING, "efficiency": True}}, "training.efficiency"),
    ({"training": {**TRAINING, "model": {**TRAINING["model"], "layers": True}}}, "training.model"),
    ({"sizes": ["1 MiB"], "stragglers": {"distribution": "lognormal", "mean": "1 ms", "sigma": True}},
     "stragglers.sigma"),
])
def test_a_yes_no_is_no_number(keys, field):
    """YAML's true/yes became 1 wherever a number was expected (pydantic's lax bool-to-int)."""
    message = _refusal(**keys)
    assert message.split(": ")[1].startswith(field) and "yes/no" in message


@pytest.mark.parametrize("keys, field", [
    ({"sizes": ["1 MiB"], "workload": {"compute_time": "1 s", "gradient_size": "1 MiB",
                                       "backward_fraction": float("nan")}}, "workload.backward_fraction"),
    ({"sizes": ["1 MiB"], "stragglers": {"distribution": "lognormal", "mean": "1 ms", "sigma": float("nan")}},
     "stragglers.sigma")])
def test_a_bounded_fraction_refuses_nan_as_no_number(keys, field):
    """Fuzz round ay F6: NaN in a field with bounds was said to lie outside them ("nan must be at
    most 1"): it is no number to compare, and is refused as one."""
    message = _refusal(**keys)
    assert message.split(": ")[1].startswith(field) and "nan is not a finite number" in message


def test_a_topology_count_refuses_a_yes_no():
    message = _refusal(sizes=["1 MiB"], topology={"name": "t", "generate": {**FABRIC["generate"], "racks": True}})
    assert "racks" in message and "yes/no" in message


def test_a_straggler_delay_needs_its_unit():
    """0.5 was taken as seconds; every other time in a file carries its unit."""
    message = _refusal(sizes=["1 MiB"], stragglers={"r0h0-gpu0": 0.5})
    assert message.split(": ")[1].startswith("stragglers.r0h0-gpu0") and "no unit" in message


def _records(out) -> list[dict]:
    import json

    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_a_sweep_notices_a_changed_file_named_in_set(tmp_path, cli):
    """``--set calibration=a.cal.yaml``: the profile's content is part of each point, so after
    it changes from 1 us to 90 ms of base latency the rerun computes the point again (a ring
    of 1 MiB on 4 GPUs takes far less than 90 ms, so the new time is at least the 90 ms the
    profile adds to every collective) instead of resuming the stale record."""
    box = "{name: box, generate: {kind: nvswitch, gpus: 4}}"
    (tmp_path / "s.yaml").write_text(f"name: cal\ntopology: {box}\nsize: 1 MiB\nalgorithms: [ring]\n")
    profile = tmp_path / "a.cal.yaml"
    profile.write_text("calibration: {base_latency: 1 us}\n")
    out = tmp_path / "out"
    first = cli("sweep", tmp_path / "s.yaml", "--set", "calibration=a.cal.yaml", "--out", out, "--workers", "1")
    assert first.exit_code == 0, first.stderr
    before = _records(out)[-1]["sizes"][0]["time_s"]
    assert before < 1e-3
    profile.write_text("calibration: {base_latency: 90 ms}\n")
    again = cli("sweep", tmp_path / "s.yaml", "--set", "calibration=a.cal.yaml", "--out", out, "--workers", "1")
    assert again.exit_code == 0, again.stderr
    assert "already done" not in again.stdout
    assert _records(out)[-1]["sizes"][0]["time_s"] >= 90e-3
    # fuzz round s #233: the old record went, so the file keeps one record per point, and the sweep says so
    assert len(_records(out)) == 1
    assert "calibration=a.cal.yaml (4 GPUs, ring) read files that changed since its record" in again.stdout + \
        again.stderr


def test_set_values_are_read_by_the_fields_type(tmp_path, cli):
    """``--set topology.generate.planes=2`` reaches a strict integer field as the number 2
    (it arrived as the text '2' and was refused), and ``2`` and ``02`` are one point; ``2.0``
    beside them is refused, as the file refuses it (fuzz round ax, F1: after an equal value it
    was merged unread, first it was refused)."""
    fabric = ("{name: rails, generate: {kind: rail_optimized, units: 1, nodes_per_unit: 2, gpus_per_node: 2, "
              "rails: 2}}")
    (tmp_path / "s.yaml").write_text(f"name: planes\ntopology: {fabric}\nsize: 1 MiB\nalgorithms: [ring]\n")
    out = tmp_path / "out"
    result = cli("sweep", tmp_path / "s.yaml", "--set", "topology.generate.planes=2,02", "--out", out,
                 "--workers", "1")
    assert result.exit_code == 0, result.stderr
    assert [r["set"] for r in _records(out)] == [{"topology.generate.planes": 2}]
    spelt = cli("sweep", tmp_path / "s.yaml", "--set", "topology.generate.planes=2,02,2.0", "--out", out,
                "--workers", "1")
    assert spelt.exit_code == 2 and "planes: 2.0 is not a whole number as written; write 2" in spelt.stderr


def test_numbers_read_as_people_write_them_in_a_file_and_in_set(tmp_path, cli):
    """``010`` is ten (YAML 1.1 read eight, an octal) and ``1e3`` a thousand (YAML 1.1 read the
    text), in a file and in ``--set``: ``--set ...=10,1e1,010,4`` are two points, 10 and 4 (each
    point as first spelt). A decimal such as ``1e1`` or ``2.0`` for a whole number is refused in
    ``--set`` as in the file (fuzz k #176, #482-#486: ``--set`` read it as the whole number)."""
    from simnet import topology_from_dict
    from simnet.io.yamlsource import load_value

    assert [load_value(t) for t in ("010", "1e3", "-07", "0x10", "4:1")] == [10, 1000.0, -7, 16, "4:1"]
    # fuzz q (#462-#472): YAML 1.1's binary and underscores are text in YAML 1.2, as here
    assert [load_value(t) for t in ("0b100", "1_6", "0x_10", "1_000.5", "0o10", "+0x4", "0X4")] == [
        "0b100", "1_6", "0x_10", "1_000.5", "0o10", "+0x4", "0X4"]  # (fuzz r: YAML 1.2's hexadecimal has no sign)
    with pytest.raises(InputError, match=re.escape("options.channels: '1_6' is not a whole number")):
        scenario_from_dict({"name": "s", "topology": {"name": "b", "generate": {"kind": "nvswitch", "gpus": 4}},
                            "sizes": ["1 MiB"], "algorithms": ["ring"], "options": {"channels": load_value("1_6")}})
    (tmp_path / "box.yaml").write_text("name: box\ngenerate: {kind: nvswitch, gpus: 010}\n")
    from simnet import load_topology
    assert len(load_topology(tmp_path / "box.yaml").gpus) == 10
    assert len(topology_from_dict({"name": "b", "generate": {"kind": "nvswitch", "gpus": 10}}).gpus) == 10
    (tmp_path / "s.yaml").write_text("name: s\ntopology: box.yaml\nsize: 1 MiB\nalgorithms: [ring]\n")
    out = tmp_path / "out"
    result = cli("sweep", tmp_path / "s.yaml", "--set", "topology.generate.gpus=10,010,4", "--out", out,
                 "--workers", "1")
    assert result.exit_code == 0, result.stderr
    assert [r["set"] for r in _records(out)] == [{"topology.generate.gpus": 10}, {"topology.generate.gpus": 4}]
    # fuzz round ax, F1: a spelling the file refuses is refused wherever it stands, not only first
    # (10,1e1 kept 10 and never read 1e1, which the file refuses: 10.0 is not a whole number)
    for values in ("10,1e1", "1e1,10"):
        spelt = cli("sweep", tmp_path / "s.yaml", "--set", f"topology.generate.gpus={values}", "--out",
                    tmp_path / "o1", "--workers", "1")
        assert spelt.exit_code == 2 and "gpus: 10.0 is not a whole number as written; write 10" in spelt.stderr, \
            spelt.stderr
    (tmp_path / "box.yaml").write_text("name: box\ngenerate: {kind: nvswitch, gpus: 2.0}\n")
    in_file = cli("run", tmp_path / "s.yaml")
    (tmp_path / "box.yaml").write_text("name: box\ngenerate: {kind: nvswitch, gpus: 2}\n")
    in_set = cli("sweep", tmp_path / "s.yaml", "--set", "topology.generate.gpus=2.0,4", "--out", tmp_path / "o2",
                 "--workers", "1")
    for refused in (in_file, in_set):
        assert refused.exit_code == 2 and "gpus: 2.0 is not a whole number as written; write 2" in refused.stderr
    assert not (tmp_path / "o2" / "results.jsonl").exists()


def test_a_sweep_does_not_resume_results_it_cannot_vouch_for(tmp_path, cli):
    """With sweep.json deleted, results of an H100 box were resumed for the A100 box the
    topology had become; a record edited to a negative time was shown as a result. Now the
    first is refused in one line, the second computed again."""
    (tmp_path / "t.yaml").write_text("name: t\ngenerate: {kind: nvswitch, gpus: 4, gpu: h100}\n")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\nsizes: [1 MiB]\nalgorithms: [ring]\n")
    out = tmp_path / "out"
    assert cli("sweep", tmp_path / "s.yaml", "--out", out, "--workers", "1", "--gpus", "2,4").exit_code == 0
    records = (out / "results.jsonl").read_text()
    (out / "results.jsonl").write_text(re.sub(r'"time_s": [0-9.e-]+', '"time_s": -5', records, count=1))
    again = cli("sweep", tmp_path / "s.yaml", "--out", out, "--workers", "1", "--gpus", "2,4")
    assert again.exit_code == 0 and "computed again" in again.stdout + again.stderr
    kept = _records(out)  # the bad line is dropped from the file; its point was computed again
    assert len(kept) == 2 and all(s["time_s"] > 0 for r in kept for s in r["sizes"])
    third = cli("sweep", tmp_path / "s.yaml", "--out", out, "--workers", "1", "--gpus", "2,4")  # (fuzz round ah:
    assert third.exit_code == 0 and "computed again" not in third.stdout + third.stderr  # said at every resume)
    assert "2 points already done, 0 computed now" in third.stdout
    (out / "sweep.json").unlink()
    (tmp_path / "t.yaml").write_text("name: t\ngenerate: {kind: nvswitch, gpus: 4, gpu: a100}\n")
    stale = cli("sweep", tmp_path / "s.yaml", "--out", out, "--workers", "1", "--gpus", "2,4")
    assert stale.exit_code == 2 and "sweep.json is gone" in stale.stderr and len(stale.stderr.splitlines()) == 1


def test_spellings_of_one_quantity_are_one_sweep_point(tmp_path, cli):
    """``400Gb/s``, ``50 GB/s`` and ``400 Gb/s`` are one bandwidth: one point (the first spelling),
    not three records of the same run; ``100 Gb/s`` is another."""
    fabric = "{name: pair, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, gpus_per_host: 2, spines: 1}}"
    (tmp_path / "s.yaml").write_text(f"name: nics\ntopology: {fabric}\nsize: 1 MiB\nalgorithms: [ring]\n")
    out = tmp_path / "out"
    result = cli("sweep", tmp_path / "s.yaml", "--set",
                 "topology.generate.nic_bandwidth=400Gb/s,50 GB/s,400 Gb/s,100 Gb/s", "--out", out, "--workers", "1")
    assert result.exit_code == 0, result.stderr
    assert [r["set"]["topology.generate.nic_bandwidth"] for r in _records(out)] == ["400Gb/s", "100 Gb/s"]


def test_spellings_of_one_list_and_of_no_bandwidth_are_one_sweep_point(tmp_path, cli):
    """Fuzz round y F4, F5: an axis of lists (``sizes: [[1 MiB], [1MiB], [1024 KiB]]``) made three
    points of one run, and a fault's ``0%`` and ``0 Gb/s`` (the link down, either way) two."""
    (tmp_path / "s.yaml").write_text(
        "name: s\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2, "
        "spines: 2}}\nsizes: [1 MiB]\nalgorithms: [ring]\nfaults: [{at: 0 s, node: spine0, bandwidth: 50%}]\n"
        "sweep: {sizes: [[1 MiB], [1MiB], [1024 KiB], [2 MiB]], faults.0.bandwidth: [0%, 0 Gb/s, 50%]}\n")
    result = cli("sweep", tmp_path / "s.yaml", "--out", tmp_path / "o", "--workers", "1")
    assert result.exit_code == 0, result.stderr
    points = {(tuple(r["set"]["sizes"]), r["set"]["faults.0.bandwidth"]) for r in _records(tmp_path / "o")}
    assert points == {(size, bandwidth) for size in (("1 MiB",), ("2 MiB",)) for bandwidth in ("0%", "50%")}


def test_a_value_spelt_otherwise_in_a_rerun_resumes_its_point(tmp_path, cli):
    """Fuzz finding (31e): ``--set workload.compute_time=10ms``, then ``=0.01 s``: one value in
    one run, but the rerun computed the point again (the resume key held the spelling)."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: t, generate: {kind: nvswitch, gpus: 2}}\nsize: 1 KiB\n"
                                     "algorithms: [ring]\nworkload: {compute_time: 10 ms, gradient_size: 1 KiB}\n")
    args = ("--out", tmp_path / "out", "--workers", "1")
    assert cli("sweep", tmp_path / "s.yaml", "--set", "workload.compute_time=10ms", *args).exit_code == 0
    again = cli("sweep", tmp_path / "s.yaml", "--set", "workload.compute_time=0.01 s", *args)
    assert again.exit_code == 0 and len(_records(tmp_path / "out")) == 1, again.stdout


def test_a_file_spelt_otherwise_in_a_rerun_resumes_its_point(tmp_path, cli):
    """Review 92, LOW 1: ``--set topology=t.yaml``, then ``=./t.yaml`` (or its absolute path):
    one file, one point in one run, but the rerun computed it again (the resume key held the
    spelling)."""
    (tmp_path / "t.yaml").write_text("name: box\ngenerate: {kind: nvswitch, gpus: 4}\n")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\nsize: 1 MiB\nalgorithms: [ring]\n")
    args = ("--out", tmp_path / "out", "--workers", "1")
    for spelling in ("t.yaml", "./t.yaml", str(tmp_path / "t.yaml")):
        result = cli("sweep", tmp_path / "s.yaml", "--set", f"topology={spelling}", *args)
        assert result.exit_code == 0 and len(_records(tmp_path / "out")) == 1, (spelling, result.stdout)


def test_gpu_counts_given_twice_are_refused(tmp_path, cli):
    (tmp_path / "s.yaml").write_text("name: g\ntopology: {name: box, generate: {kind: nvswitch, gpus: 8}}\n"
                                     "size: 1 MiB\nalgorithms: [ring]\n")
    result = cli("sweep", tmp_path / "s.yaml", "--gpus", "4", "--set", "gpus=8", "--out", tmp_path / "out")
    assert result.exit_code == 2 and "given twice" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("args", [["topo", "check", "topologies/two_racks.yaml"],
                                  ["topo", "show", "topologies/two_racks.yaml"],
                                  ["topo", "export", "topologies/two_racks.yaml", "-o", "-"]])
def test_a_closed_pipe_ends_quietly(root, args):
    """``simnet topo check F | head -1``: the reader went away; no internal error, no
    traceback, and the exit status a shell gives a tool a closed pipe stopped (128 + SIGPIPE)."""
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-m", "simnet", *args], cwd=root, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdout.close()
    assert process.stderr.read() == b"" and process.wait() == 141


@pytest.mark.parametrize("json_to", ["r.json", "-"])  # (review 92, M1: --json - on standard output too)
def test_a_closed_pipe_leaves_no_file_unwritten(root, tmp_path, json_to):
    """Fuzz round ay, F5: ``simnet run S --json --csv --plot | head -1`` ended at the table's
    first line printed into the closed pipe: the JSON written, no CSV and no plots (calibrate
    wrote no profile). The command now writes every file asked for, then ends as a closed pipe
    ends a tool."""
    import subprocess
    import sys

    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {root / 'topologies/dgx_h100.yaml'}\n"
                                     "sizes: [1 MiB, 64 MiB]\nalgorithms: [ring, tree]\n")
    process = subprocess.Popen([sys.executable, "-m", "simnet", "run", "s.yaml", "--json", json_to, "--csv", "r.csv",
                                "--plot", "plots"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    said = process.stderr.read().decode()
    assert process.wait() == 141 and "error" not in said, said
    assert (json_to == "-" or (tmp_path / "r.json").is_file()) and (tmp_path / "r.csv").is_file()
    assert (tmp_path / "plots" / "time_vs_size.png").is_file()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_full_disk_is_one_line_not_an_internal_error(root):
    """Output to a device that is full: one line saying so and exit 74 (EX_IOERR), not a bug's 70."""
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        process = subprocess.run([sys.executable, "-m", "simnet", "topo", "check", "topologies/dgx_h100.yaml"],
                                 cwd=root, stdout=full, stderr=subprocess.PIPE, text=True)
    assert process.returncode == 74
    assert process.stderr.strip() == "cannot write the output: No space left on device"


def test_nvls_on_a_switch_under_gpus_without_it_is_refused_as_the_generator_refuses():
    """An A100's NVSwitch cannot reduce: ``nvls: true`` on it, written node by node, ran nvls
    (260.9 us); the nvswitch generator already refused it. Now both refuse."""
    from simnet import topology_from_dict

    nodes = {"name": "t", "nodes": [{"id": "g0", "kind": "gpu", "host": "h0", "gpu": "a100"},
                                    {"id": "g1", "kind": "gpu", "host": "h0", "gpu": "a100"},
                                    {"id": "sw", "kind": "switch", "host": "h0", "nvls": True}],
             "links": [{"a": "g0", "b": "sw", "bandwidth": "100 GB/s", "latency": "1 us"},
                       {"a": "g1", "b": "sw", "bandwidth": "100 GB/s", "latency": "1 us"}]}
    with pytest.raises(InputError, match="nodes.2..nvls: 'sw' sits under a100 GPUs"):
        topology_from_dict(nodes)
    with pytest.raises(InputError, match="nvls"):
        topology_from_dict({"name": "g", "generate": {"kind": "nvswitch", "gpus": 2, "gpu": "a100", "nvls": True}})


def _two_hosts(marked: dict[str, dict]) -> dict:
    """Two hosts of two H100 on their own NVSwitch, a NIC each to one ToR; ``marked``: keys
    added to nodes by id."""
    nodes = [{"id": f"g{h}{k}", "kind": "gpu", "host": f"h{h}", "gpu": "h100"} for h in range(2) for k in range(2)]
    nodes += [{"id": f"nv{h}", "kind": "switch", "host": f"h{h}"} for h in range(2)]
    nodes += [{"id": f"nic{h}", "kind": "nic", "host": f"h{h}"} for h in range(2)] + [{"id": "tor", "kind": "switch"}]
    links = [{"a": f"g{h}{k}", "b": f"nv{h}", "bandwidth": "450 GB/s", "latency": "0.25 us"}
             for h in range(2) for k in range(2)]
    links += [{"a": f"g{h}{k}", "b": f"nic{h}", "bandwidth": "64 GB/s", "latency": "1 us"}
              for h in range(2) for k in range(2)]
    links += [{"a": f"nic{h}", "b": "tor", "bandwidth": "400 Gb/s", "latency": "1 us"} for h in range(2)]
    return {"name": "t", "nodes": [{**node, **marked.get(node["id"], {})} for node in nodes], "links": links}


@pytest.mark.parametrize("marked, refusal", [
    ({"tor": {"nvls": True}}, "nodes.8..nvls: 'tor' joins no GPU over NVLink"),
    ({"nv0": {"sharp": True}}, "nodes.4..sharp: 'nv0' joins GPUs over NVLink only")])
def test_nvls_on_a_network_switch_or_sharp_on_an_nvswitch_is_refused(marked, refusal):
    """Fuzz round ah: ``nvls: true`` on the ToR (no GPU on it) ran every algorithm as without
    it, unsaid; ``sharp: true`` on a host's NVSwitch did too, and ``auto`` then refused the
    run saying no SHARP switch was reachable. Each marks the other kind of switch: refused,
    naming the kind that reads it; on the right switches both load."""
    from simnet import topology_from_dict

    with pytest.raises(InputError, match=refusal):
        topology_from_dict(_two_hosts(marked))
    right = topology_from_dict(_two_hosts({"nv0": {"nvls": True}, "nv1": {"nvls": True}, "tor": {"sharp": True}}))
    assert right.graph.nodes["nv0"]["nvls"] and right.graph.nodes["tor"]["sharp"]


@pytest.mark.parametrize("topology, variants, command", [
    ("time_vs_size.png", "", ["run", "s.yaml", "--plot", "."]),
    ("o/results.csv", "", ["sweep", "s.yaml", "--out", "o", "--workers", "1"]),
    ("x.png", "variants: [{name: a}, {name: b, set: {model: ideal}}]\n", ["compare", "s.yaml", "-o", "x.png"]),
    ("box.yaml", "variants: [{name: a, set: {topology: t2.png}}, {name: b}]\n", ["compare", "s.yaml", "-o", "t2.png"])])
def test_no_output_overwrites_a_file_the_command_reads(tmp_path, cli, monkeypatch, topology, variants, command):
    """A topology where a plot, a sweep's table or a comparison's picture would land was
    overwritten (exit 0); now the command is refused in one line and the file is untouched."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "o").mkdir()
    box = "name: box\ngenerate: {kind: nvswitch, gpus: 2}\n"
    for name in {topology, "box.yaml", "t2.png"}:
        (tmp_path / name).write_text(box)
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {topology}\nsizes: [1 MiB]\nalgorithms: [ring]\n{variants}")
    result = cli(*command)
    assert result.exit_code == 2 and "is an input of this command" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert all((tmp_path / name).read_text() == box for name in {topology, "box.yaml", "t2.png"})


def test_export_to_standard_output_writes_no_file_named_dash(tmp_path, cli, root, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    result = cli("topo", "export", root / "topologies/dgx_h100.yaml", "--format", "json", "-o", "-")
    assert result.exit_code == 0 and not (tmp_path / "-").exists()
    graph = json.loads(result.stdout)
    assert sum(node["kind"] == "gpu" for node in graph["nodes"]) == 8


def test_a_dollar_in_a_name_is_plain_text_in_every_plot(tmp_path, cli, figures):
    """A scenario named with dollars made matplotlib parse a formula after JSON and CSV were
    written (exit 70, half a plot folder); names are drawn as the text they are."""
    name = "a $5$ option costs $"
    (tmp_path / "s.yaml").write_text(f"name: '{name}'\n" "topology: {name: 'box $', generate: {kind: nvswitch, gpus: 4}}\n"
                                     "sizes: [1 MiB, 4 MiB]\nalgorithms: [ring, tree]\n")
    result = cli("run", tmp_path / "s.yaml", "--plot", tmp_path / "plots")
    assert result.exit_code == 0, result.stderr
    titles = [fig.axes[0].get_title() for fig in figures.values() if fig.axes]
    assert any(name in title for title in titles)


def test_a_log_axis_draws_its_numbers_and_a_dollar_in_a_name_stays_a_dollar(tmp_path):
    """Making every text plain also made the log axes' tick labels plain, so the calibration
    plot's bus bandwidth axis read ``$\\mathdefault{10^{2}}$`` (fuzz round ao L1): a figure as
    simnet's plots draw one (a log y axis, a name with dollars in its legend and title)."""
    from simnet.report.figures import pyplot, save

    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([1, 2, 4], [0.01, 1, 100], label="run $1$.log")
    ax.set_yscale("log")
    ax.set_title("a $5$ option")
    ax.legend()
    save(plt, fig, tmp_path / "fit.png")
    labels = [tick.label1 for tick in ax.yaxis.get_major_ticks() if tick.label1.get_text()]
    assert labels and all(label.get_parse_math() for label in labels if "$" in label.get_text())
    assert any("mathdefault" in label.get_text() for label in labels)  # what only a parsed formula draws as a number
    names = [ax.title, *ax.get_legend().get_texts()]
    assert [t.get_text() for t in names] == ["a $5$ option", "run $1$.log"]
    assert not any(t.get_parse_math() for t in names)


def _log(ranks: int, hosts: int, device: str = "NVIDIA H100 80GB HBM3", rows: str | None = None) -> str:
    lines = [f"#  Rank {r:2d} Group  0 Pid {r:4d} on node{r * hosts // ranks} device {r % (ranks // hosts)} [0x1a] {device}"
             for r in range(ranks)]
    factor = 2 * (ranks - 1) / ranks  # nccl-tests' busbw of an AllReduce: algbw x 2(n-1)/n
    row = (f"     1048576        262144     float     sum      -1    93.25   11.24   {11.24 * factor:.2f}      0    82.98"
           f"   12.64   {12.64 * factor:.2f}      0")
    return "\n".join(lines) + "\n" + (rows if rows is not None else row) + "\n"


BOX16 = {"name": "two", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 8,
                                     "gpu": "h100"}}


@pytest.mark.parametrize("text, says", [
    (_log(16, 2, rows="     1048576  262144  float  sum  -1  93.25  11.24  21.08  4  82.98  12.64  23.69  0"),
     "#wrong: 4 wrong results"),
    (_log(16, 2, rows="     1048576  262144  float  sum  -1  93.25  11.24  21.08  0  1e400  12.64  23.69  0"),
     "inf us is not a time"),
    (_log(16, 2, rows="     1048576  262144  float  sum  -1  1e-6  11.24  21.08  0  1e-6  12.64  23.69  0"),
     "faster than any AllReduce runs"),
    (_log(8, 1) + _log(16, 2), "runs on 8 and 16 ranks"),
])
def test_calibrate_refuses_a_log_that_was_not_a_good_run(text, says):
    from simnet.io.nccltests import parse_log

    with pytest.raises(InputError, match=says):
        parse_log(text, "x.log")


@pytest.mark.parametrize("text, says", [
    (_log(16, 2, device="AMD Instinct MI300X"), "name 'AMD Instinct MI300X', the topology's GPUs are h100"),
    (_log(16, 2, device="NVIDIA A100-SXM4-80GB"), "the topology's GPUs are h100"),
    (_log(16, 1), "place its 16 ranks on 1 host, the topology's first 16 GPUs are on 2"),
    (_log(1, 1), "one rank"),
])
def test_calibrate_refuses_a_log_of_another_machine(text, says):
    """Device lines that contradict the topology (another GPU, another host count, one rank)
    would fit the profile to a machine it is not used on."""
    from simnet.io.nccltests import parse_log
    from simnet.run.calibrate import points_of
    from simnet.topology.loader import topology_from_dict

    with pytest.raises(InputError, match=says):
        points_of([parse_log(text, "x.log")], topology_from_dict(BOX16))


def test_repeated_sizes_are_one_point_at_their_median():
    from simnet.io.nccltests import parse_log
    from simnet.run.calibrate import points_of
    from simnet.topology.loader import topology_from_dict

    rows = "\n".join(f"     1048576  262144  float  sum  -1  {t}  {2**20 / t / 1e3:.2f}  {2**20 / t / 1e3 * 1.875:.2f}  0  "
                     f"{t}  {2**20 / t / 1e3:.2f}  {2**20 / t / 1e3 * 1.875:.2f}  0" for t in (90.0, 100.0, 300.0))  # busbw: algbw x 2(n-1)/n of 16 ranks
    (point,) = points_of([parse_log(_log(16, 2, rows=rows), "x.log")], topology_from_dict(BOX16))
    assert point.measured_us == 100.0


def _box_sweep(tmp_path):
    (tmp_path / "s.yaml").write_text("name: box\ntopology: {name: box, generate: {kind: nvswitch, gpus: 8}}\n"
                                     "size: 1 MiB\nalgorithms: [ring]\n")
    return tmp_path / "s.yaml", tmp_path / "out"


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path, cli):
    """A record written whole but for its final newline is a finished point, not a torn write."""
    path, out = _box_sweep(tmp_path)
    assert cli("sweep", path, "--gpus", "2,4", "--out", out, "--workers", "1").exit_code == 0
    results = out / "results.jsonl"
    results.write_bytes(results.read_bytes().rstrip(b"\n"))
    again = cli("sweep", path, "--gpus", "2,4", "--out", out, "--workers", "1")
    assert again.exit_code == 0 and "2 points already done, 0 computed now" in again.stdout
    assert len(results.read_text().splitlines()) == 2 and results.read_text().endswith("\n")


def test_a_record_with_a_sound_key_and_broken_fields_is_named_and_computed_again(tmp_path, cli):
    """It used to end in an internal error (TypeError) while the table was drawn."""
    import json

    path, out = _box_sweep(tmp_path)
    assert cli("sweep", path, "--gpus", "2,4", "--out", out, "--workers", "1").exit_code == 0
    results = out / "results.jsonl"
    first, second = results.read_text().splitlines()
    broken = json.loads(first)
    broken["sizes"][0]["time_s"] = "fast"
    results.write_text(json.dumps(broken) + "\n" + second + "\n")
    again = cli("sweep", path, "--gpus", "2,4", "--out", out, "--workers", "1")
    assert again.exit_code == 0, again.stderr
    assert ("results.jsonl:1: a record whose sizes hold a size_bytes or time_s that is not a number; dropped (its "
            "point is computed again where the sweep runs it)") in " ".join(again.stdout.split())
    assert "1 point already done, 1 computed now" in again.stdout


def test_a_gpu_flops_without_its_unit_is_refused():
    """gpu_flops: 989 (meant as TFLOP/s) gave a 1.2e11 s step; 989e12 and '989 TFLOP/s' are one figure."""
    message = _refusal(training={**TRAINING, "gpu_flops": 989})
    assert message.split(": ")[1].startswith("training.gpu_flops") and "989 TFLOP/s" in message
    assert "989 has no unit" in message  # (fuzz round ay, F6: it said 989 FLOP/s was out of range, as README does not)
    for figure in ("989e12", 989e12, "989 TFLOP/s", "989TFLOP/s"):  # written as 400Gb/s may be (fuzz 31c)
        scenario = scenario_from_dict({"name": "s", "topology": FABRIC, "training": {**TRAINING, "gpu_flops": figure}})
        assert scenario.training.gpu_flops == 989e12


def test_a_step_whose_exchanges_pass_1_pib_is_refused():
    """A TP AllReduce carries a micro-batch's activations: 16 tokens x hidden 2^50 x 2 B (bf16) =
    2^55 B = 32 PiB, over the 1 PiB any size may be (it passed, as did 8192 TB)."""
    huge = {**TRAINING["model"], "hidden": 2**50, "heads": 1, "ffn": 1}
    message = _refusal(training={**TRAINING, "model": huge})
    assert message.split(": ")[1].startswith("training.model") and "over 1 PiB" in message


def test_a_ratio_stays_a_ratio_in_a_file_and_in_set(tmp_path, cli):
    """YAML 1.1 reads an unquoted 4:1 as the base-60 number 241: a 4:1 oversubscribed uplink
    became 241:1. The file and --set now read it as the ratio the docs write; 4 and 4:1 are
    one uplink (the leaf's 2 hosts x 2 NICs x 50 GB/s over 4, on 1 spine: 50 GB/s), and one
    sweep point."""
    from simnet.topology.loader import load_topology

    fabric = tmp_path / "t.yaml"
    fabric.write_text("name: t\ngenerate: {kind: leaf_spine, racks: 2, hosts_per_rack: 2, gpus_per_host: 2, "
                      "spines: 1, oversubscription: 4:1}\n")
    topo = load_topology(fabric)
    assert topo.capacity[topo.link_index[("tor0", "spine0")]] == pytest.approx(2 * 2 * 50e9 / 4)
    (tmp_path / "s.yaml").write_text("name: o\ntopology: t.yaml\nsize: 1 MiB\nalgorithms: [ring]\n")
    result = cli("sweep", tmp_path / "s.yaml", "--set", "topology.generate.oversubscription=4,4:1",
                 "--out", tmp_path / "out", "--workers", "1")
    assert result.exit_code == 0, result.stderr
    # 4 and 4:1 are one ratio, so one point (the first spelling), as 400Gb/s and 50 GB/s are (fuzz 31b: two)
    assert [r["set"] for r in _records(tmp_path / "out")] == [{"topology.generate.oversubscription": 4}]
    again = cli("sweep", tmp_path / "s.yaml", "--set", "topology.generate.oversubscription=2:1,8:4,2",
                "--out", tmp_path / "out2", "--workers", "1")
    assert again.exit_code == 0, again.stderr
    assert [r["set"] for r in _records(tmp_path / "out2")] == [{"topology.generate.oversubscription": "2:1"}]


@pytest.mark.parametrize("count", ["yes", "4.5", "0"])
def test_set_gpus_refuses_what_is_no_gpu_count(tmp_path, cli, count):
    path, out = _box_sweep(tmp_path)
    result = cli("sweep", path, "--set", f"gpus={count}", "--out", out)
    assert result.exit_code == 2 and "is not a GPU count" in result.stderr


def test_set_gpus_takes_all_as_gpus_all_does(tmp_path, cli):
    """Fuzz finding (31e): ``--set gpus=all,2`` was refused ('all' is not a GPU count),
    where ``gpus: all`` is a scenario's own value."""
    path, out = _box_sweep(tmp_path)
    result = cli("sweep", path, "--set", "gpus=all,1", "--out", out, "--workers", "1")
    assert result.exit_code == 0, result.stderr
    assert len(_records(out)) == 2


@pytest.mark.parametrize("keys", [{"algorithms": ["auto"]}, {"training": None}, {"workload": None},
                                  {"options": {"chunk_size": None}}])
def test_jobs_accept_keys_at_their_default(keys):
    """A key written at its default (or null) beside jobs changes nothing and is not refused."""
    scenario = scenario_from_dict({"name": "s", "topology": FABRIC, "jobs": JOBS, **keys})
    assert [job.name for job in scenario.jobs] == ["a", "b"]


def test_a_zero_straggler_delay_needs_no_unit():
    scenario = scenario_from_dict({"name": "s", "topology": FABRIC, "sizes": ["1 MiB"], "stragglers": {"r0h0-gpu0": 0}})
    assert scenario.stragglers == {"r0h0-gpu0": 0.0}  # on time: joins with the others


def test_calibrate_takes_a_log_on_a_topology_that_names_no_gpu():
    """A hand-written topology without gpu: has no generation to contradict: any device line
    goes (the links fast enough for the log's times)."""
    from simnet.io.nccltests import parse_log
    from simnet.run.calibrate import points_of
    from simnet.topology.loader import topology_from_dict

    nodes = [{"id": f"g{i}", "kind": "gpu", "host": f"h{i // 2}"} for i in range(4)] + [{"id": "sw", "kind": "switch"}]
    links = [{"a": f"g{i}", "b": "sw", "bandwidth": "400 Gb/s", "latency": "1 us"} for i in range(4)]
    topology = topology_from_dict({"name": "hand", "nodes": nodes, "links": links})
    (point,) = points_of([parse_log(_log(4, 2, device="NVIDIA A100-SXM4-80GB"), "x.log")], topology)
    assert point.ranks == 4


def test_a_yes_no_is_true_or_false_as_yaml_1_2_reads_it(tmp_path, cli):
    """YAML 1.1 read ``yes``, ``no``, ``on`` and ``off`` as a yes/no (fuzz m: ``pxn: no`` taken as
    false, ``directed: yes`` as true), and ``name: no`` was refused as "false is a yes/no": simnet
    reads numbers as YAML 1.2 does (``010`` is ten), and now its yes/noes too, in files and ``--set``."""
    from simnet.io.yamlsource import load_value

    words = ("yes", "no", "on", "off", "Yes", "NO", "true", "True", "FALSE")
    assert [load_value(w) for w in words] == ["yes", "no", "on", "off", "Yes", "NO", True, True, False]
    (tmp_path / "s.yaml").write_text("name: no\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\n")
    named = cli("run", tmp_path / "s.yaml", "--json", "-")
    assert named.exit_code == 0, named.stderr
    assert json.loads(named.stdout)["scenario"] == "no"
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\noptions: {exact: off}\n")
    refused = cli("run", tmp_path / "s.yaml")
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (f"{tmp_path / 's.yaml'}:5: options.exact: 'off' is text, not a yes/no "
                                      "(only true and false are); write true or false")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\n")
    swept = cli("sweep", tmp_path / "s.yaml", "--set", "options.exact=yes", "--out", tmp_path / "o", "--workers", "1")
    assert swept.exit_code == 2 and "options.exact: 'yes' is text, not a yes/no" in swept.stderr


def test_all_beside_named_algorithms_is_refused_in_the_file_and_with_a(tmp_path, cli):
    """Fuzz round q (#202, #448-#452): ``algorithms: [ring, all]`` and ``-a all -a ring`` ran
    what ``all`` runs, the named one absorbed without a word, where ``[ring, ring]`` is refused."""
    with pytest.raises(InputError, match=re.escape("algorithms: ring, tree beside all: all runs auto and every "
                                                   "algorithm the collective has")):
        scenario_from_dict({"name": "s", "topology": {"name": "b", "generate": {"kind": "nvswitch", "gpus": 4}},
                            "sizes": ["1 MiB"], "algorithms": ["ring", "all", "tree"]})
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\n")
    for command in (("run",), ("sweep", "--out", tmp_path / "o", "--workers", "1")):
        result = cli(*command[:1], tmp_path / "s.yaml", "-a", "all", "-a", "ring", *command[1:])
        assert result.exit_code == 2 and result.stderr.count("\n") == 1
        assert "--algorithm: all runs auto and every algorithm allreduce has, so ring beside it" in result.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("generate, options, says", [
    ({"gpus": "4"}, {}, "generate.gpus: '4' is text"),
    ({"gpus": 4.0}, {}, "generate.gpus: 4.0 is not a whole number as written; write 4"),
    ({"gpus": 4, "nvls": "no"}, {}, "generate.nvls: 'no' is text, not a yes/no"),
    ({"gpus": 4}, {"channels": "4"}, "options.channels: '4' is text"),
    ({"gpus": 4}, {"exact": 1}, "options.exact: 1 is not a yes/no")])
def test_counts_and_yes_nos_are_taken_as_written(generate, options, says):
    """pydantic converted them (``"4"`` and ``4.0`` to 4, ``"no"`` and 1 to a yes/no) while the
    scenario's own ``gpus: "2"`` was refused: one rule now, for every count and yes/no."""
    with pytest.raises(InputError, match=re.escape(says)):
        scenario_from_dict({"name": "s", "topology": {"name": "b", "generate": {"kind": "nvswitch", **generate}},
                            "sizes": ["1 MiB"], "algorithms": ["ring"], "options": options})


@pytest.mark.parametrize("extra, says", [
    ({"algorithms": ["ps"], "options": {"ps_server": "gpu0", "ps_servers": 2}},
     "options.ps_servers: ps_server names the servers")])
def test_a_key_another_makes_moot_is_refused(extra, says):
    """Fuzz finding: a server count beside the named servers was accepted and changed nothing."""
    with pytest.raises(InputError, match=re.escape(says)):
        scenario_from_dict({"name": "s", "topology": {"name": "b", "generate": {"kind": "nvswitch", "gpus": 4}},
                            "sizes": ["1 MiB"], **extra})


def test_a_set_key_given_twice_and_an_unknown_profile_key_are_refused(tmp_path, cli):
    """``--set K=1 --set K=2`` kept the second alone; a profile's unknown top-level key was read past."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\n")
    twice = cli("sweep", tmp_path / "s.yaml", "--set", "topology.generate.gpus=2", "--set", "topology.generate.gpus=4",
                "--out", tmp_path / "o", "--workers", "1")
    assert twice.exit_code == 2 and "topology.generate.gpus is given twice" in twice.stderr
    from simnet.model.calibration import load_calibration

    (tmp_path / "p.cal.yaml").write_text("calibration: {base_latency: 1 us}\ncalibraton: {base_latency: 9 us}\n")
    with pytest.raises(InputError, match="unknown key 'calibraton' in a calibration profile"):
        load_calibration(tmp_path / "p.cal.yaml")


@pytest.mark.parametrize("extra", [{"algorithms": ["ring"]}, {"options": {"channels": 1}}])
def test_a_training_step_without_sizes_refuses_algorithms_and_options(extra):
    """The step runs each exchange as NCCL picks it: algorithms and options beside training
    (and no sizes of the scenario's own) gave JSON byte-identical to leaving them out."""
    with pytest.raises(InputError, match=f"{next(iter(extra))}: the training step runs every exchange"):
        scenario_from_dict({"name": "s", "topology": {"name": "b", "generate": {"kind": "nvswitch", "gpus": 8}},
                            "training": {"model": "llama3_8b", "efficiency": 0.5}, **extra})
    scenario_from_dict({"name": "s", "topology": {"name": "b", "generate": {"kind": "nvswitch", "gpus": 8}},
                        "training": {"model": "llama3_8b", "efficiency": 0.5}, "sizes": ["1 MiB"], **extra})


@pytest.mark.parametrize("args, says", [
    (["--set", "name=a,b"], "--set: name labels the scenario and changes no point"),
    (["--set", "collective=all_gather", "-c", "reduce_scatter"], "both name the collective")])
def test_set_refuses_what_changes_no_point_or_contradicts_a_flag(tmp_path, cli, args, says):
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\n")
    result = cli("sweep", tmp_path / "s.yaml", *args, "--out", tmp_path / "o", "--workers", "1")
    assert result.exit_code == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1


LEAF2 = {"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 2,
                                   "spines": 1}}


@pytest.mark.parametrize("doc, says", [
    ({"jobs": [{"name": "a", "hosts": ["r0h0"], "size": "1 MiB"}], "placement": "spread"},
     "every job here names its GPUs or hosts"),
    ({"jobs": [{"name": "a", "gpus": 2, "placement": "packed", "size": "1 MiB"}], "placement": "spread"},
     "every job here has one or names its GPUs"),  # fuzz 31c: the job's own placement won without a word
    ({"sizes": ["1 MiB"], "variants": [{"name": "v", "set": {"name": "w"}}]}, "name: a variant sets what its runs read"),
    ({"sizes": ["1 MiB"], "variants": [{"name": "v"}, {"name": "v"}]}, "the name 'v' is taken by variants[0]"),
    ({"sizes": ["1 MiB"], "variants": [{"name": "v"}]}, "one variant is one option"),  # fuzz 31c: ranked alone
    ({"sizes": ["1 MiB"], "variants": [{"name": "v", "set": {}}, {"name": "w", "set": {}}]},
     "variants[1]: the same set and cost as variants[0]"),
    ({"sizes": ["1 MiB"], "faults": [{"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "50%"},
                                     {"at": "0 s", "node": "spine0", "bandwidth": "25%"}]},
     "faults[0] changes the same link at the same time"),
    ({"sizes": ["1 MiB"], "topology": {"name": "t", "generate": {**LEAF2["generate"], "nic_per": "gpu",
                                                                  "nics_per_host": 1}}},
     "give nic_per or nics_per_host, not both")])
def test_keys_one_of_which_would_be_ignored_are_refused(doc, says):
    """Fuzz findings: each of these was accepted, and one key (or one of two) changed nothing."""
    with pytest.raises(InputError, match=re.escape(says)):
        scenario_from_dict({"name": "s", "topology": LEAF2, **doc})


def test_an_option_no_algorithm_of_the_scenario_takes_is_said():
    """``inner`` and ``group_by`` (hierarchical's) beside ``algorithms: [ring]`` changed nothing
    without a word; the file may keep them for -a or variants, and the run says they went
    unread. Beside hierarchical (scenarios/cross_region.yaml's way) nothing is said."""
    from simnet.run.scenario import run_scenario

    racks = {"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 2,
                                       "spines": 1}}

    def warned(algorithms):  # by rack: two hosts each, not the default's grouping by node (host)
        spec = scenario_from_dict({"name": "s", "topology": racks, "sizes": ["1 MiB"], "algorithms": algorithms,
                                   "options": {"inner": "tree", "group_by": "rack"}})
        return [w.message for run in run_scenario(spec).runs for w in run.warnings if w.kind == "option_unread"
                and run.algorithm == "ring"]

    assert warned(["ring"]) == ["options group_by, inner: none of ring takes them (see simnet algorithms), so "
                                "they changed nothing here"]
    assert warned(["ring", "hierarchical"]) == []  # (hierarchical's own run says inner is moot over two racks)


@pytest.mark.parametrize("doc", [{"name": "s\x1b[31m"}, {"variants": [{"name": "v\x07"}]},
                                 {"sizes": None, "jobs": [{"name": "j\x00", "gpus": 2, "size": "1 MiB"}]}])
def test_control_characters_in_scenario_variant_and_job_names_are_refused(doc):
    """An ESC in a scenario name reached the terminal raw, one in a variant name leaked
    matplotlib warnings; topology names already refused them."""
    base = {"name": "s", "topology": LEAF2, "sizes": ["1 MiB"]}
    document = {k: v for k, v in {**base, **doc}.items() if v is not None}
    with pytest.raises(InputError, match="control character"):
        scenario_from_dict(document)


def test_a_file_given_twice_to_compare_or_calibrate_and_an_empty_host_are_refused(tmp_path, cli, root):
    """``compare s.yaml s.yaml`` compared a scenario with itself; ``calibrate a.log a.log``
    counted its rows twice; ``host: ''`` made every GPU a host of its own."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 2}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\n")
    twice = cli("compare", tmp_path / "s.yaml", tmp_path / "s.yaml")
    assert twice.exit_code == 2 and "is given twice" in twice.stderr
    log = root / "validation" / "logs" / "xe9680_2node_issue309.log"
    again = cli("calibrate", log, log, "-t", root / "validation" / "logs" / "xe9680_2node.yaml", "--gpus", "16",
                "-o", tmp_path / "x.cal.yaml")
    assert again.exit_code == 2 and "is given twice" in again.stderr and not (tmp_path / "x.cal.yaml").exists()
    from simnet import topology_from_dict

    with pytest.raises(InputError, match="host"):
        topology_from_dict({"name": "t", "nodes": [{"id": "g0", "kind": "gpu", "host": ""}], "links": []})


def test_a_host_in_two_racks_and_a_scenario_of_background_traffic_alone_are_refused():
    """Fuzz findings: a host's GPUs in two racks split it between groups; jobs that are all
    background traffic reported a time of traffic that runs as long as another job does."""
    from simnet import topology_from_dict

    with pytest.raises(InputError, match="host 'h' is in rack 'r0' .node 'g0'.; a host sits in one rack"):
        topology_from_dict({"name": "t", "nodes": [{"id": "g0", "kind": "gpu", "host": "h", "rack": "r0"},
                                                   {"id": "g1", "kind": "gpu", "host": "h", "rack": "r1"}],
                            "links": [{"a": "g0", "b": "g1", "bandwidth": "10 GB/s", "latency": "1 us"}]})
    with pytest.raises(InputError, match="every job is background traffic"):
        scenario_from_dict({"name": "s", "topology": LEAF2,
                            "jobs": [{"name": "b", "background": {"pattern": "uniform", "load": "50%"}}]})


def test_an_empty_bandwidth_mapping_in_a_profile_names_its_field(tmp_path):
    """``bandwidth: {}`` failed inside numpy ("array of sample points is empty") at run time."""
    from simnet.model.calibration import load_calibration

    (tmp_path / "e.cal.yaml").write_text("calibration:\n  bandwidth: {}\n")
    with pytest.raises(InputError, match=r"e.cal.yaml:2: calibration.bandwidth: an empty mapping"):
        load_calibration(tmp_path / "e.cal.yaml")


@pytest.mark.parametrize("doc, key, says", [
    ({"sizes": ["1 MiB"], "stragglers": {"distribution": "exponential", "mean": "10 us", "sigma": 2}},
     "stragglers.sigma", "shapes the lognormal distribution only; exponential has its mean alone"),
    ({"sizes": ["1 MiB"], "stragglers": {"distribution": "uniform", "mean": "10 us", "sigma": 2}},
     "stragglers.sigma", "uniform has its mean alone"),
    ({"jobs": [{"name": "a", "gpus": 4, "size": "1 MiB", "period": "1 ms"}]},  # (on 2, one host: spines unread too)
     "jobs[0].period", "the job runs once (repeat: 1)"),
    ({"jobs": [{"name": "a", "gpus": 2, "size": "1 MiB"},  # 4 GPUs left: uniform would draw partners
               {"name": "b", "background": {"pattern": "all_to_all", "load": "50%", "seed": 3}}],
      "topology": {**LEAF2, "generate": {**LEAF2["generate"], "racks": 3}}},
     "jobs[1].background.seed", "all_to_all sends to every other GPU, nothing is drawn")])
def test_a_key_another_makes_moot_at_some_sweep_points_is_warned(tmp_path, cli, doc, key, says):
    """Fuzz leftovers: sigma beside an exponential or uniform distribution, a seed of
    all_to_all background traffic and a period with repeat 1 were read by nothing without a
    word. Refused, they broke sweeps over the distribution, the pattern or repeat; now the
    run says, naming the file, line and key."""
    import json

    import yaml

    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "s", "topology": LEAF2, **doc}, sort_keys=False))
    spec = scenario_from_dict({"name": "s", "topology": LEAF2, **doc})
    assert [w.kind for w in spec.warnings] == ["key_unread"] and says in spec.warnings[0].message
    ran = cli("run", tmp_path / "s.yaml", "--json", tmp_path / "out.json")
    assert ran.exit_code == 0, ran.stderr
    printed = " ".join(ran.stdout.split())
    assert "warning key_unread" in printed and f"{key} ({tmp_path / 's.yaml'}:" in printed and says in printed
    written = json.loads((tmp_path / "out.json").read_text())
    said = written["warnings"] if "jobs" in doc else [w for run in written["runs"] for w in run["warnings"]]
    assert [w["kind"] for w in said] == ["key_unread"] * len(said) and said
    quiet = {**doc, "stragglers": {**doc["stragglers"], "distribution": "lognormal"}} if "stragglers" in doc else {
        **doc, "jobs": [{**job, "repeat": 2} if "period" in job else job for job in doc["jobs"]]} if "period" in str(doc) \
        else {**doc, "jobs": [doc["jobs"][0], {**doc["jobs"][1], "background": {**doc["jobs"][1]["background"],
                                                                                "pattern": "uniform"}}]}
    assert scenario_from_dict({"name": "s", "topology": LEAF2, **quiet}).warnings == []


@pytest.mark.parametrize("stragglers, gpus, key, says", [
    ({"r1h0-gpu1": "1 ms"}, 2, "stragglers.r1h0-gpu1", "r1h0-gpu1 is not among the run's 2 GPUs"),
    ({"r0h0-gpu1": "0 s"}, "all", "stragglers.r0h0-gpu1", "a delay of 0 joins on time"),
    ({"distribution": "exponential", "mean": "0 s"}, "all", "stragglers.mean", "a mean of 0 draws no delay"),
    ({"distribution": "lognormal", "mean": "1 h", "sigma": 10, "seed": 1}, "all", "stragglers.mean",
     "every GPU's draw is under 1 ps")])
def test_a_straggler_that_delays_nothing_is_warned(stragglers, gpus, key, says):
    """Fuzz finding (31d): a straggler of a GPU the run leaves out (gpus:, -g), a delay of 0
    and a distribution of mean 0 changed nothing without a word (a compute slowdown of a
    GPU left out warned already). Warned, not refused: a sweep over the GPU count or the
    delay makes them moot at some points only."""
    spec = scenario_from_dict({"name": "s", "topology": LEAF2, "sizes": ["1 MiB"], "gpus": gpus,
                               "stragglers": stragglers})
    said = [w for w in spec.warnings if not w.link.startswith("topology.")]  # (2 GPUs of one host: spines too)
    assert [(w.kind, w.link) for w in said] == [("key_unread", key)] and says in said[0].message


@pytest.mark.parametrize("job, says", [
    ({"name": "a", "gpus": 2, "size": "1 MiB", "repeat": 2, "period": "0 s"}, "0 s runs the job back to back"),
    ({"name": "n", "background": {"pattern": "uniform", "load": "50%"}, "period": "0 s"}, "0 s gives it no time")])
def test_a_period_of_zero_is_refused_on_its_line(job, says):
    """Fuzz finding (31d): a background job's period of 0 s made it offer 1 B a period
    (max(1, ...)), a plausible answer of nothing; a job's period of 0 s is no period."""
    message = _refusal(jobs=[{"name": "x", "gpus": 2, "size": "1 MiB"}, job])
    assert "jobs[1].period: " in message and says in message


def test_a_sweep_over_the_distribution_warns_at_the_points_sigma_is_moot(tmp_path, cli):
    (tmp_path / "s.yaml").write_text(
        "name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\nsizes: [1 MiB]\nalgorithms: [ring]\n"
        "stragglers: {distribution: lognormal, mean: 10 us, sigma: 2}\n"
        "sweep: {stragglers.distribution: [lognormal, exponential]}\n")
    ran = cli("sweep", tmp_path / "s.yaml", "--out", tmp_path / "out", "--workers", "1")
    assert ran.exit_code == 0, ran.stderr
    records = _records(tmp_path / "out")
    warned = {r["set"]["stragglers.distribution"]: "key_unread" in r["sizes"][0]["warnings"] for r in records}
    assert warned == {"lognormal": False, "exponential": True}


def test_a_scenario_profile_replacing_the_topology_s_is_said_naming_both(tmp_path, cli, root):
    """Fuzz leftover: the topology's own calibration profile was replaced without a word when
    the scenario named another. The scenario's still runs; the run says so, naming both files."""
    import shutil

    profile = root / "validation" / "calibrated" / "h100-ndr-309-2n.cal.yaml"
    shutil.copy(profile, tmp_path / "a.cal.yaml")
    (tmp_path / "b.cal.yaml").write_text(profile.read_text().replace("13.25 us", "2 us"))
    (tmp_path / "t.yaml").write_text("name: t\ncalibration: a.cal.yaml\ngenerate: {kind: nvswitch, gpus: 4}\n")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\ncalibration: b.cal.yaml\nsizes: [1 MiB]\n"
                                     "algorithms: [ring]\n")
    ran = cli("run", tmp_path / "s.yaml")
    assert ran.exit_code == 0, ran.stderr
    printed = " ".join(ran.stdout.split())
    assert "warning calibration_replaced" in printed and f"{tmp_path / 's.yaml'}:3" in printed
    assert f"the scenario's profile {tmp_path / 'b.cal.yaml'} replaces {tmp_path / 'a.cal.yaml'}" in printed
    assert "calibrated by " + str(tmp_path / "b.cal.yaml") in printed  # the override still runs
    (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\ncalibration: a.cal.yaml\nsizes: [1 MiB]\n"
                                     "algorithms: [ring]\n")
    assert "calibration_replaced" not in cli("run", tmp_path / "s.yaml").stdout  # the same profile: nothing replaced


@pytest.mark.parametrize("text, line, says", [
    (_log(16, 2, rows="     1048576  262144  float  sum  -1  1e300  0.00  0.00  0  82.98  12.64  23.69  0"), 17,
     "time: 1e+300 us is slower than any AllReduce nccl-tests times (over an hour)"),
    (_log(16, 2, rows="     1048576  262144  float  sum  -1  93.25  11.24  21.08  0  9e9  0.00  0.00  0"), 17,
     "time: 9e+09 us is slower than any AllReduce"),
    (_log(16, 2, rows="  17179869184  4294967296  float  sum  -1  1.5  1e7  2e7  0  1.5  1e7  2e7  0"), 17,
     "GB/s, over the 100000 GB/s any machine moves"),
    (_log(16, 2, rows="     1048576  262144  float  sum  -1  93.25  11.24  1e300  0  82.98  12.64  23.69  0"), 17,
     "busbw: 1e+300 GB/s is not a bandwidth any machine reaches"),
    (_log(4, 1).replace("#  Rank  2", "#  Rank  1"), 3, "#  Rank 1: listed twice, also at line 2"),
    (_log(4, 1).replace("#  Rank  2", "#  Rank  7"), 3, "#  Rank 7: rank 2 has no device line"),
    (_log(4, 1).replace("#  Rank  3", "#  Rank  5"), 4, "#  Rank 5: rank 3 has no device line"),
])
def test_a_row_of_impossible_rates_or_a_device_list_with_a_rank_twice_or_skipped_is_refused(text, line, says):
    """Fuzz leftovers: a row timed at 1e300 us (an algbw of 1e-294 GB/s) was fitted, and
    device lines listing a rank twice or skipping one were counted as ranks; each is now
    refused in one line naming its line."""
    from simnet.io.nccltests import parse_log

    with pytest.raises(InputError) as caught:
        parse_log(text, "x.log")
    assert str(caught.value).startswith(f"x.log:{line}: ") and says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_second_run_s_device_list_is_still_a_new_run():
    from simnet.io.nccltests import parse_log

    with pytest.raises(InputError, match="runs on 8 and 16 ranks"):
        parse_log(_log(8, 1) + _log(16, 2), "x.log")
    assert parse_log(_log(8, 1) + _log(8, 1), "x.log").ranks == 8


@pytest.mark.parametrize("second", ["65536 B: 0.5", "64KiB: 0.5", "0.0625 MiB: 0.5"])
def test_one_size_twice_in_a_profile_s_bandwidth_is_refused(tmp_path, second):
    """Fuzz leftover: ``64 KiB: 0.8`` and ``65536 B: 0.5`` are one size; the second won without
    a word (the YAML reader refuses a key written twice alike, not one size written two ways)."""
    from simnet.model.calibration import load_calibration

    (tmp_path / "d.cal.yaml").write_text(f"calibration:\n  bandwidth:\n    64 KiB: 0.8\n    {second}\n")
    with pytest.raises(InputError, match=r"d.cal.yaml:4: calibration.bandwidth.*: duplicate size: .* is 64 KiB, as "
                                         r"'64 KiB' \(line 3\) is; give each size one factor"):
        load_calibration(tmp_path / "d.cal.yaml")
    (tmp_path / "n.cal.yaml").write_text("calibration:\n  bandwidth:\n    65536: 0.8\n")
    with pytest.raises(InputError, match=r"calibration.bandwidth: key 65536: 65536 has no unit"):
        load_calibration(tmp_path / "n.cal.yaml")


@pytest.mark.parametrize("collective, reduces", [("allreduce", True), ("reduce_scatter", True), ("reduce", True),
                                                 ("all_gather", False), ("broadcast", False), ("all_to_all", False),
                                                 ("send_recv", False)])
def test_reduce_bandwidth_where_the_collective_reduces_nothing_is_said_to_change_nothing(tmp_path, cli, collective,
                                                                                          reduces):
    """Fuzz round ah: ``options.reduce_bandwidth`` (the rate of the reductions' arithmetic) on an
    AllGather, Broadcast, AllToAll or SendRecv, whose schedules reduce nothing, was taken by
    every algorithm and changed nothing, unsaid. Said there, as a collective that reduces
    nothing (the review: refusing the file also refused ``-c all_gather`` and a sweep over the
    collective, where the file's own AllReduce reads it); where it reduces, it slows the run."""
    from simnet.schedule.catalog import build_schedule
    from simnet.schedule.transfers import REDUCE

    head = f"name: s\ntopology: {LEAF2}\ncollective: {collective}\nsizes: [1 MiB]\nalgorithms: [auto]\n"
    (tmp_path / "plain.yaml").write_text(head)
    (tmp_path / "slow.yaml").write_text(head + "options: {reduce_bandwidth: 1 GB/s}\n")
    slow = cli("run", tmp_path / "slow.yaml", "--json", tmp_path / "slow.json")
    plain = cli("run", tmp_path / "plain.yaml", "--json", tmp_path / "plain.json")
    assert slow.exit_code == plain.exit_code == 0, slow.stderr + plain.stderr
    runs = [json.loads((tmp_path / f"{name}.json").read_text())["runs"][0] for name in ("plain", "slow")]
    said = [w["message"] for w in runs[1]["warnings"] if w["kind"] == "option_unread"]
    assert (runs[1]["time_s"] > runs[0]["time_s"]) == reduces and (runs[1]["time_s"] == runs[0]["time_s"]) != reduces
    assert bool(said) != reduces and all("reduces nothing (no reduction to time)" in m for m in said), said
    if collective not in ("all_to_all", "send_recv"):  # (which run no ring)
        assert (build_schedule("ring", topology_from_dict(LEAF2), 2**20, collective=collective).op == REDUCE).any() \
            == reduces


def test_an_option_one_algorithm_takes_is_said_unread_by_each_run_of_another(tmp_path, cli, root):
    """Fuzz round ax, F4: beside a ring (which reduces on GPUs), nvls rows of the same file took
    ``reduce_bandwidth`` without a word (their times those without it), where alone, or picked
    by auto, they said it changed nothing: a run's own word was dropped wherever another
    algorithm of the file took the option. An option none takes is still said once."""
    head = f"name: s\ntopology: {root / 'topologies/dgx_h100.yaml'}\nsizes: [1 MiB]\n"
    (tmp_path / "s.yaml").write_text(head + "algorithms: [ring, nvls]\noptions: {reduce_bandwidth: 1 GB/s}\n")
    (tmp_path / "plain.yaml").write_text(head + "algorithms: [ring, nvls]\n")
    (tmp_path / "none.yaml").write_text(head + "algorithms: [nvls]\noptions: {reduce_bandwidth: 1 GB/s}\n")
    for name in ("s", "plain", "none"):
        assert cli("run", tmp_path / f"{name}.yaml", "--json", tmp_path / f"{name}.json").exit_code == 0
    runs, plain, none = ({r["algorithm"]: r for r in json.loads((tmp_path / f"{name}.json").read_text())["runs"]}
                         for name in ("s", "plain", "none"))
    said = {a: [w["link"] for w in run["warnings"] if w["kind"] == "option_unread"] for a, run in runs.items()}
    assert said == {"ring": [], "nvls": ["options.reduce_bandwidth"]}, said
    assert runs["nvls"]["time_s"] == plain["nvls"]["time_s"] and runs["ring"]["time_s"] > plain["ring"]["time_s"]
    once = [[w for w in run["warnings"] if w["kind"] == "option_unread"] for run in none.values()]
    assert all(len(w) == 1 and w[0]["link"] == "" for w in once), once  # the file's one word, on every run


def test_a_run_s_json_options_are_those_its_algorithm_takes(tmp_path, cli, root):
    """Fuzz round ax, F5: in a file of several algorithms, halving_doubling's run listed
    ``channels`` and ``chunk_size`` (it takes neither; its time the one without them) and ps's
    ``channels``: a reader of --json could not tell which runs read them."""
    from simnet.schedule.catalog import algorithms_for

    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {root / 'topologies/dgx_h100.yaml'}\nsizes: [1 MiB]\n"
                                     "algorithms: [ring, halving_doubling, ps]\n"
                                     "options: {channels: 4, chunk_size: 128 KiB}\n")
    assert cli("run", tmp_path / "s.yaml", "--json", tmp_path / "r.json").exit_code == 0
    table = algorithms_for("allreduce")
    for run in json.loads((tmp_path / "r.json").read_text())["runs"]:
        assert set(run["options"]) == {"channels", "chunk_size"} & set(table[run["algorithm"]].options), run
    assert any(run["options"] for run in json.loads((tmp_path / "r.json").read_text())["runs"])


def test_reduce_bandwidth_unread_by_auto_s_switch_reducing_pick_says_why(root):
    """Fuzz round ax, F8: auto picking nvls (64 MiB on a DGX H100) said reduce_bandwidth changed
    nothing because nvls's every reduction ended before the links took its data: nvls makes no
    reduction on a GPU; the NVSwitch sums every piece, as ``algorithms: [nvls]`` said."""
    import simnet

    topology = simnet.load_topology(root / "topologies/dgx_h100.yaml")
    run = simnet.simulate(topology, "auto", 64 * 2**20, reduce_bandwidth=1e9)
    said = [w.message for w in run.warnings if w.link == "options.reduce_bandwidth"]
    assert run.algorithm == "nvls" and len(said) == 1 and "nvls sums every piece in a switch" in said[0], said


@pytest.mark.parametrize("inner", ["ring", "tree", "halving_doubling"])
def test_inner_between_two_groups_is_said_to_change_nothing(inner):
    """Fuzz round ax, F7: hierarchical's ``inner`` over two groups (2 racks of one 4-GPU host)
    gave the run without it to the ps, unsaid: between two groups every variant is one
    exchange. Over three groups the variants differ and nothing is said."""
    import simnet

    def fabric(racks):
        return topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": racks,
                                                             "hosts_per_rack": 1, "gpus_per_host": 4}})

    two = simnet.simulate(fabric(2), "hierarchical", 2**20, inner=inner)
    plain = simnet.simulate(fabric(2), "hierarchical", 2**20)
    said = [w.message for w in two.warnings if w.link == "options.inner"]
    assert two.time_s == plain.time_s and len(said) == 1 and "between two groups" in said[0], said
    three = simnet.simulate(fabric(3), "hierarchical", 2**20, inner=inner)
    assert not [w for w in three.warnings if w.link == "options.inner"], three.warnings


def test_reduce_bandwidth_of_an_allreduce_file_runs_under_another_collective_and_says_so(tmp_path, cli):
    """Review of the first fix: the file's AllReduce reads reduce_bandwidth, so ``run -c
    all_gather`` and a sweep over the collective run, saying it changed nothing where the
    collective reduces nothing, and nothing where it reduces."""
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {LEAF2}\nsizes: [1 MiB]\nalgorithms: [ring]\n"
                                     "options: {reduce_bandwidth: 1 GB/s}\n")
    other = cli("run", tmp_path / "s.yaml", "-c", "all_gather")
    assert other.exit_code == 0 and "AllGather reduces nothing" in " ".join(other.stdout.split()), other.stdout
    swept = cli("sweep", tmp_path / "s.yaml", "--set", "collective=allreduce,all_gather", "--out", tmp_path / "o",
                "--workers", "1")
    assert swept.exit_code == 0, swept.stderr
    unread = {r["collective"]: r["sizes"][0]["unread"] for r in _records(tmp_path / "o")}
    assert unread == {"allreduce": [], "all_gather": ["options.reduce_bandwidth"]}, unread
    assert "changed nothing at any point" not in swept.stdout


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_an_option_of_the_collective_c_runs_is_taken(tmp_path, cli, command):
    """Fuzz leftover: ``pxn`` was refused under ``-c all_to_all`` because the file says
    allreduce (the option check ran before -c); it now sees the collective that runs. An option
    neither collective takes is still refused, and without -c pxn still is."""
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {LEAF2}\nsizes: [1 MiB]\noptions: {{pxn: false}}\n")
    out = ["--out", tmp_path / "out", "--workers", "1"] if command == "sweep" else []
    ran = cli(command, tmp_path / "s.yaml", "-c", "all_to_all", *out)
    assert ran.exit_code == 0, ran.stderr
    assert "option_unread" not in ran.stdout  # auto runs direct for all_to_all, which takes pxn
    refused = cli(command, tmp_path / "s.yaml", *out)
    assert refused.exit_code == 2 and "s.yaml:4: options.pxn: no allreduce algorithm takes pxn" in refused.stderr
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {LEAF2}\nsizes: [1 MiB]\noptions: {{inner: ring}}\n")
    if command == "run":  # hierarchical's inner, taken by the file's collective: kept, and said unread
        kept = cli(command, tmp_path / "s.yaml", "-c", "all_to_all")
        assert kept.exit_code == 0, kept.stderr
        assert "option_unread" in kept.stdout and "options inner: none of auto takes it" in " ".join(kept.stdout.split())


def test_gpus_beyond_the_scenario_s_list_name_the_list_and_the_topology_s_count(tmp_path, cli):
    """Fuzz leftover: ``simnet run -g 3`` on a scenario whose ``gpus:`` lists 2 of a 4-GPU
    topology said "this topology has 2 GPUs"; it now names both counts and why."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\n"
                                     "gpus: [gpu0, gpu1]\nsizes: [1 MiB]\n")
    ran = cli("run", tmp_path / "s.yaml", "-g", "3")
    assert ran.exit_code == 2 and "\n" not in ran.stderr.strip()
    assert "--gpus: 3 is out of range; the scenario's gpus: picks 2 of the topology's 4 GPUs and -g takes the first N " \
           "of those: give 1 to 2, or write gpus: all in the file" in ran.stderr
    assert cli("run", tmp_path / "s.yaml", "-g", "2").exit_code == 0


@pytest.mark.parametrize("value, says", [
    (2.5, "2.5: give a GPU count as a whole number (e.g. 8), a list of GPU names, or all"),
    (2.0, "2.0: give a GPU count as a whole number without a decimal point (e.g. 2)")])
def test_a_gpu_count_that_is_no_whole_number_says_so(value, says):
    """Fuzz leftover: ``gpus: 2.5`` said "is not one of 'all'"."""
    message = _refusal(sizes=["1 MiB"], gpus=value)
    assert message.startswith(f"<scenario>: gpus: {says}")


@pytest.mark.parametrize("parameters", [1.25, 1e9 + 0.5, True])
def test_parameters_that_are_no_count_are_refused(parameters):
    """Fuzz leftover: ``parameters: 1.25`` (fp16) became a 2 B gradient, cut to whole bytes
    without a word. 1.3e9 written as a float is a count and is taken."""
    message = _refusal(sizes=["1 MiB"], workload={"compute_time": "1 s", "parameters": parameters, "dtype": "fp16"})
    assert message.startswith(f"<scenario>: workload.parameters: {parameters!r} is not a count of parameters")
    spec = scenario_from_dict({"name": "s", "topology": FABRIC, "sizes": ["1 MiB"],
                               "workload": {"compute_time": "1 s", "parameters": 1.3e9, "dtype": "fp16"}})
    assert spec.workload.parameters == 1.3e9


def test_one_size_given_twice_is_refused_not_run_once(tmp_path, cli, root):
    # sizes: [1 MiB, 1048576 B] ran one size and said nothing (run_scenario keeps each size once)
    scenario = tmp_path / "dup.yaml"
    scenario.write_text(f"name: dup\ntopology: {root / 'topologies' / 'dgx_h100.yaml'}\n"
                        "sizes: [1 MiB, 1048576 B]\nalgorithms: [ring]\n")
    result = cli("run", scenario)
    assert result.exit_code == 2 and "'1048576 B' is 1 MiB, given already as '1 MiB'" in result.output
    result = cli("run", root / "scenarios" / "single_node.yaml", "-s", "1 MiB", "-s", "1048576 B")
    assert result.exit_code == 2 and "--size: 1 MiB is given twice" in result.output


JOBS4 = {"name": "t", "generate": {**LEAF2["generate"], "gpus_per_host": 4}}


def test_set_indexes_a_list_in_a_dotted_key(tmp_path, cli):
    """Fuzz finding (31b): ``--set jobs.0.size=1 MiB,2 MiB`` replaced the whole job list by a
    mapping ``{"0": {"size": ...}}`` and was refused as "jobs: Input should be a valid list".
    A number indexes the list: job a AllReduces 1 MiB, then 2 MiB, its other keys kept. An
    index the list does not have is refused in one line, and no folder is left behind."""
    import yaml

    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "j", "topology": JOBS4, "jobs": [
        {"name": "a", "gpus": 2, "size": "1 MiB"}, {"name": "b", "gpus": 2, "size": "1 MiB"}]}))
    out = tmp_path / "out"
    ran = cli("sweep", tmp_path / "s.yaml", "--set", "jobs.0.size=1 MiB,2 MiB", "--out", out, "--workers", "1")
    assert ran.exit_code == 0, ran.stderr
    sizes = {r["set"]["jobs.0.size"]: {job["name"]: job["size_bytes"] for job in r["jobs"]} for r in _records(out)}
    assert sizes == {"1 MiB": {"a": 2**20, "b": 2**20}, "2 MiB": {"a": 2**21, "b": 2**20}}
    wrong = cli("sweep", tmp_path / "s.yaml", "--set", "jobs.2.size=1 MiB", "--out", tmp_path / "o2", "--workers", "1")
    assert wrong.exit_code == 2 and len(wrong.stderr.strip().splitlines()) == 1
    assert "jobs.2.size: jobs is a list of 2, and '2' is none of its indices (0 to 1)" in wrong.stderr
    assert not (tmp_path / "o2").exists()


def test_a_variant_sets_one_fault_of_the_list_by_its_index():
    from simnet.run.compare import compare_scenarios

    fault = {"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "50%"}
    spec = scenario_from_dict({"name": "s", "topology": LEAF2, "sizes": ["16 MiB"], "algorithms": ["ring"],
                               "faults": [fault], "variants": [{"name": "half"},
                                                               {"name": "tenth", "set": {"faults.0.bandwidth": "10%"}}]})
    rows = {row["option"]: row["collective_time_s"] for row in compare_scenarios([spec])}
    assert rows["tenth"] > rows["half"]  # the uplink at a tenth of its rate, not at half


def test_compare_of_several_files_refuses_the_variants_it_would_not_run(tmp_path, cli):
    """Fuzz finding (31b): ``compare a.yaml b.yaml`` with variants (and their costs) in a.yaml
    ranked a.yaml as one option and never ran its variants, without a word."""
    import yaml

    one = {"name": "a", "topology": LEAF2, "sizes": ["1 MiB"], "algorithms": ["ring"],
           "variants": [{"name": "slow", "set": {"topology.generate.nic_bandwidth": "10 Gb/s"}, "cost": "1 $"},
                        {"name": "fast", "cost": "2 $"}]}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(one, sort_keys=False))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump({**{k: v for k, v in one.items() if k != "variants"},
                                                     "name": "b"}, sort_keys=False))
    result = cli("compare", tmp_path / "a.yaml", tmp_path / "b.yaml", "-o", tmp_path / "c.png")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    line = (tmp_path / "a.yaml").read_text().splitlines().index("variants:") + 2  # its value's line, as every message
    assert f"{tmp_path / 'a.yaml'}:{line}: variants: compare of 2 files ranks each file as one option" in result.stderr
    assert not (tmp_path / "c.png").exists()
    assert cli("compare", tmp_path / "a.yaml", "-o", tmp_path / "c.png").exit_code == 0


def test_a_fault_share_that_leaves_a_link_under_1_kbs_is_refused():
    """Fuzz finding (31b): ``bandwidth: 1e-300%`` left the uplink at 8e-290 Gb/s: an overflow in
    the engine, and a refusal of two lines about the simulated horizon. A share is held to
    the 1 Kb/s every bandwidth is, as a rate written with its unit is; 0% still takes it down."""
    message = _refusal(sizes=["1 MiB"], faults=[{"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "1e-300%"}])
    assert message.split(": ")[1] == "faults[0].bandwidth" and "under 1 Kb/s" in message
    two = {"name": "t", "generate": {**LEAF2["generate"], "spines": 2}}
    spec = scenario_from_dict({"name": "s", "topology": two, "sizes": ["1 MiB"],
                               "faults": [{"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "0%"},
                                          {"at": "0 s", "link": ["r0h0-nic0", "tor0"], "bandwidth": "1e-6%"}]})
    assert [f.factors.tolist() for f in spec.faults] == [[0.0, 0.0], [1e-8, 1e-8]]  # 400 Gb/s x 1e-8 = 4 Kb/s


def test_a_step_whose_gradient_passes_1_pib_is_refused_not_an_internal_error():
    """Fuzz finding (31b): ``hidden: 2^40`` keeps a micro-batch's activations at 2^48 B, under
    the 1 PiB the check held them to, but a stage's gradient (about 2 x 10 h^2 values of 4 B)
    is some 10^25 B: the ring's schedule overflowed numpy (exit 70). Every exchange of the
    step is now held to 1 PiB, the gradient's among them."""
    huge = {**TRAINING["model"], "hidden": 2**40}
    message = _refusal(training={**TRAINING, "model": huge})
    assert message.split(": ")[1] == "training.model" and "(a stage's gradients), over 1 PiB" in message


def test_the_step_simulates_the_exchanges_the_check_holds_to_1_pib():
    """The sizes the check reads are the step's: tp 2 on 4 GPUs (dp 2) of the 2-layer model,
    a DP gradient of (2 layers x (4 h^2 attention + 3 h ffn gated MLP) + 2 V h embeddings)
    / tp values of 4 B (fp32): (2 x (16,384 + 24,576) + 12,800) / 2 x 4 = 189,440 B; a TP
    AllReduce of 16 tokens x 64 values of 2 B (bf16) = 2,048 B."""
    from simnet.run.scenario import run_scenario

    spec = scenario_from_dict({"name": "s", "topology": {"name": "t", "generate": {**LEAF2["generate"]}},
                               "training": {**TRAINING, "parallelism": {"tp": 2}}})
    step = run_scenario(spec).training
    sizes = {c["kind"]: c["size_bytes"] for c in step["collectives"]}
    assert sizes == {"tp": 2048, "dp": 189_440}


@pytest.mark.parametrize("flags, says", [
    (["--gpu-speedup", "nan"], "--gpu-speedup: nan is not a ratio of FLOP/s"),
    (["--gpu-speedup", "0"], "--gpu-speedup: 0 is not a ratio of FLOP/s"),
    (["--placement", "scattered"], "--placement: 'scattered': expected packed, spread or random(seed)")])
def test_replay_trace_names_the_flag_it_refuses(cli, root, tmp_path, flags, says):
    """Fuzz finding (31b): the refusal said ``gpu_speedup must be ...`` or ``placement
    'scattered': ...``, naming no flag of the command line; and nothing is written."""
    result = cli("replay-trace", root / "validation/traces/hta_nccl_data_rank0.json.gz", "--ranks-per-trace", "2",
                 "-t", root / "topologies/dgx_a100.yaml", *flags, "--json", tmp_path / "r.json")
    assert result.exit_code == 2 and result.stderr.strip().startswith(says)
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "r.json").exists()


def test_a_flops_figure_and_its_number_are_one_sweep_point(tmp_path, cli):
    """Fuzz finding (31b): ``--set training.gpu_flops=989 TFLOP/s,989e12`` ran one GPU as two
    points; like 400Gb/s and 50 GB/s, they are one (the first spelling), 500 TFLOP/s another."""
    import yaml

    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "s", "topology": LEAF2, "training": TRAINING}))
    out = tmp_path / "out"
    ran = cli("sweep", tmp_path / "s.yaml", "--set",
              "training.gpu_flops=989 TFLOP/s,989e12,0.989 PFLOP/s,989TFLOP/s,500 TFLOP/s", "--out", out,
              "--workers", "1")
    assert ran.exit_code == 0, ran.stderr
    assert [r["set"]["training.gpu_flops"] for r in _records(out)] == ["989 TFLOP/s", "500 TFLOP/s"]


@pytest.mark.parametrize("setting, says", [
    ("cost=1,2", "--set: cost is what simnet compare weighs an option by and changes no point of a sweep"),
    ("topology.name=a,b", "--set: topology.name labels the topology and changes no point"),
    ("topology.description=a,b", "--set: topology.description labels the topology and changes no point"),
    ("variants=[]", "--set: variants are simnet compare's options; a sweep runs none of them"),
    ("sweep.gpus=2", "--set: sweep.gpus holds the file's axes"),
    # fuzz round i #303/#482: an option none of the algorithms reads gave equal points without a word
    ("options.inner=ring,tree", "options.inner: read by none of ring (see simnet algorithms), so every value of it "
                                "gives the same point"),
    ("options.ps_server=gpu0,gpu1", "options.ps_server: read by none of ring")])
def test_set_refuses_what_changes_no_point_of_a_sweep(tmp_path, cli, setting, says):
    """Fuzz findings (31b): ``--set cost=1,2`` and ``--set topology.description=a,b`` ran one
    point twice with equal results; ``variants=[]`` and ``sweep.gpus=2`` were refused as
    "Input should be a valid list". Each is refused in one line, leaving no folder."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\n")
    result = cli("sweep", tmp_path / "s.yaml", "--set", setting, "--out", tmp_path / "o", "--workers", "1")
    assert result.exit_code == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args", [["-a", "hierarchical", "--set", "options.inner=ring,tree"],
                                  ["-a", "ring", "-a", "hierarchical", "--set", "options.inner=ring,tree"],
                                  ["-c", "all_to_all", "-a", "direct", "--set", "options.pxn=true,false"],
                                  ["-c", "all_to_all", "-a", "direct"]])
def test_a_sweep_s_algorithms_given_with_a_replace_the_file_s(tmp_path, cli, args):
    """Fuzz round j #273-#284, #407, #408: -a replaces the file's algorithms (sweep --help),
    but the check of an options. axis read the file's [ring], and -c all_to_all -a direct
    refused the file's ring as no algorithm of all_to_all."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, "
                                     "hosts_per_rack: 1, gpus_per_host: 2, gpu: h100}}\nsizes: [1 MiB]\n"
                                     "algorithms: [ring]\n")
    result = cli("sweep", tmp_path / "s.yaml", *args, "--out", tmp_path / "o", "--workers", "1")
    assert result.exit_code == 0, result.stderr
    records = _records(tmp_path / "o")
    assert {r["algorithm"] for r in records} == {a for a in args[1::2] if a in ("ring", "hierarchical", "direct")}


def test_a_file_s_sweep_axis_that_changes_no_point_is_refused_and_so_is_a_variant_s_label():
    message = _refusal(sizes=["1 MiB"], sweep={"cost": [1, 2]})
    assert message.split(": ")[1] == "sweep" and "cost is what simnet compare weighs" in message
    message = _refusal(sizes=["1 MiB"], variants=[{"name": "v", "set": {"topology.description": "x"}}])
    assert "topology.description: a variant sets what its runs read" in message


def test_a_sweep_on_one_gpu_draws_without_a_warning(tmp_path, cli):
    """Fuzz finding (31b): ``sweep --gpus 1`` (one GPU moves nothing: time 0) log-scaled a time
    axis with nothing positive on it, and matplotlib's UserWarning reached the terminal."""
    import warnings

    path, out = _box_sweep(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = cli("sweep", path, "--gpus", "1", "--out", out, "--workers", "1")
    assert result.exit_code == 0, result.stderr
    assert [str(w.message) for w in caught] == [] and (out / "busbw.png").exists()


def test_a_sweep_axis_with_no_values_is_refused_not_an_internal_error():
    """Fuzz finding (31b): ``sweep: {options.channels: []}`` made a sweep of no points, which
    ended in an IndexError (exit 70) after it had run nothing."""
    message = _refusal(sizes=["1 MiB"], sweep={"options.channels": []})
    assert message.split(": ")[1] == "sweep.options.channels" and "an empty list" in message


def test_a_sweep_axis_of_lists_runs_each_list(tmp_path, cli):
    """Fuzz finding (31b): ``sweep: {sizes: [[1 MiB], [2 MiB]]}`` ended in "unhashable type:
    'list'" (exit 70); a list (or mapping) is a value like any other: two points, 1 MiB and 2 MiB."""
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {LEAF2}\nsizes: [1 MiB]\nalgorithms: [ring]\n"
                                     "sweep: {sizes: [[1 MiB], [2 MiB], [1 MiB]]}\n")
    ran = cli("sweep", tmp_path / "s.yaml", "--out", tmp_path / "out", "--workers", "1")
    assert ran.exit_code == 0, ran.stderr
    assert [[s["size_bytes"] for s in r["sizes"]] for r in _records(tmp_path / "out")] == [[2**20], [2**21]]


@pytest.mark.parametrize("doc, where", [
    ({"variants": [{"name": "v", "set": {"options.channels": 2, "options": {"channels": 3}}}]},
     "variants[0].set.options.channels"),
    ({"sweep": {"options": [{"channels": 1}], "options.channels": [2]}}, "sweep.options.channels")])
def test_a_key_set_with_one_of_its_parts_is_refused(doc, where):
    """Fuzz finding (31b): a variant setting ``options.channels: 2`` and ``options: {channels:
    3}`` ran 3 channels; the 2 was replaced, by the order the keys were written, without a word."""
    message = _refusal(sizes=["1 MiB"], algorithms=["ring"], **doc)
    assert message.split(": ")[1] == where and ": options is set too" in message


def test_set_beside_the_file_s_sweep_refuses_a_part_of_an_axis(tmp_path, cli):
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\nsweep: {options: [{channels: 1}]}\n")
    result = cli("sweep", tmp_path / "s.yaml", "--set", "options.channels=2", "--out", tmp_path / "o", "--workers", "1")
    assert result.exit_code == 2 and "options.channels: options is set too" in result.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("key", ["-1 MiB", "0 B"])
def test_a_profile_factor_at_no_size_is_refused(tmp_path, key):
    """Fuzz finding (31b): ``bandwidth: {-1 MiB: 0.5, 1 MiB: 0.9}`` was taken, its -1 MiB read
    as 1 B (the factor is interpolated on log size, of at least one byte): 0.5 held at 1 B."""
    from simnet.model.calibration import load_calibration

    (tmp_path / "n.cal.yaml").write_text(f"calibration:\n  bandwidth:\n    {key}: 0.5\n    1 MiB: 0.9\n")
    with pytest.raises(InputError, match=re.escape(f"calibration.bandwidth: key '{key}': a factor is stated at a "
                                                   "size of 1 B or more")):
        load_calibration(tmp_path / "n.cal.yaml")
    (tmp_path / "n.cal.yaml").write_text("calibration:\n  bandwidth:\n    1 B: 0.5\n    1 MiB: 0.9\n")
    assert load_calibration(tmp_path / "n.cal.yaml").bandwidth == ((1, 0.5), (2**20, 0.9))


@pytest.mark.parametrize("character", ["\ufffe", "\x9b", "\x85", "\u2028"])
def test_a_name_holding_what_xml_or_a_terminal_cannot_is_refused(character):
    """Fuzz finding (31b): a host label holding U+FFFE was exported as GraphML that no XML
    parser reads; the C1 controls (``\\x9b`` is a terminal's CSI) and a line separator (a
    message of two lines) reached the output too. Each is refused as the C0 controls are;
    letters beyond ASCII stay names."""
    from simnet import topology_from_dict

    with pytest.raises(InputError, match=re.escape(f"generate.host: holds the control character {character!r}")):
        topology_from_dict({"name": "t", "generate": {"kind": "nvswitch", "gpus": 2, "host": f"a{character}b"}})
    assert topology_from_dict({"name": "t", "generate": {"kind": "nvswitch", "gpus": 2, "host": "hôte-é"}}).gpus


def test_a_name_no_font_draws_is_drawn_without_a_warning(tmp_path, cli):
    """Fuzz finding (31b): a prefix of U+D7FF (a letter DejaVu Sans lacks) drew, and two
    matplotlib UserWarnings ("Glyph 55295 missing from font") reached the terminal."""
    import warnings

    (tmp_path / "t.yaml").write_text("name: t\ngenerate: {kind: nvswitch, gpus: 4, prefix: \"\\ud7ff\"}\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = cli("topo", "draw", tmp_path / "t.yaml", "-o", tmp_path / "d.png")
    assert result.exit_code == 0, result.stderr
    assert [str(w.message) for w in caught] == [] and (tmp_path / "d.png").stat().st_size > 0


def test_a_figure_too_crowded_to_lay_out_tightly_is_saved_without_a_warning(tmp_path):
    """Fuzz round ak: a sweep of 48 curves (``algorithms: all`` x four NIC speeds) printed
    matplotlib's "Tight layout not applied" UserWarning and its source line on the terminal.
    The figure keeps its default margins and is written, and nothing reaches the terminal."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from simnet.report.figures import save

    fig, ax = plt.subplots(figsize=(4, 3))
    for i in range(48):
        ax.plot([0, 1], [i, i + 1], label=f"a series with a long name, number {i}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save(plt, fig, tmp_path / "crowded.png")
    assert [str(w.message) for w in caught] == [] and (tmp_path / "crowded.png").stat().st_size > 0


@pytest.mark.parametrize("keys, field", [
    ({"training": {**TRAINING, "efficiency": "0.5"}}, "training.efficiency"),
    ({"sizes": ["1 MiB"], "workload": {"compute_time": "1 ms", "gradient_size": "4 MiB", "bucket_size": "1 MiB",
                                       "backward_fraction": "0.5"}}, "workload.backward_fraction"),
    ({"sizes": ["1 MiB"], "workload": {"compute_time": "1 ms", "gradient_size": "1 MiB",
                                       "compute_slowdown": {"r0h0-gpu0": "2"}}}, "workload.compute_slowdown"),
    ({"sizes": ["1 MiB"], "workload": {"model_flops": "1e12", "gpu_flops": "1 TFLOP/s", "gradient_size": "1 MiB"}},
     "workload.model_flops"),
    ({"sizes": ["1 MiB"], "workload": {"compute_time": "1 ms", "parameters": "1e6"}}, "workload.parameters"),
    ({"sizes": ["1 MiB"], "stragglers": {"distribution": "lognormal", "mean": "1 us", "sigma": "1"}},
     "stragglers.sigma")])
def test_a_number_in_quotes_is_text_as_a_count_in_quotes_is(keys, field):
    """Fuzz finding (31b): ``efficiency: "0.5"``, ``sigma: "1"``, ``model_flops: "1e12"`` and the
    other plain numbers were read as numbers by pydantic, where ``gpus: "4"`` is refused as
    text: one rule for every number, in one line naming the field."""
    message = _refusal(**keys)
    assert message.split(": ")[1].startswith(field) and "is text; write the number without quotes" in message


@pytest.mark.parametrize("bandwidth, field", [('"0.9"', "bandwidth"), ('{1 MiB: "0.9"}', "bandwidth.1 MiB")])
def test_a_profile_factor_in_quotes_is_text(tmp_path, bandwidth, field):
    """A factor by size is named by its size (fuzz 31d: the refusal named the whole mapping)."""
    from simnet.model.calibration import load_calibration

    (tmp_path / "q.cal.yaml").write_text(f"calibration:\n  bandwidth: {bandwidth}\n")
    with pytest.raises(InputError, match=rf"q.cal.yaml:2: calibration.{field}: '0.9' is text; write the factor"):
        load_calibration(tmp_path / "q.cal.yaml")
    (tmp_path / "q.cal.yaml").write_text("calibration:\n  network_bandwidth: '0.9'\n")
    with pytest.raises(InputError, match=r"calibration.network_bandwidth: '0.9' is text"):
        load_calibration(tmp_path / "q.cal.yaml")


@pytest.mark.parametrize("bandwidth", ["true", "{1 MiB: true}"])
def test_a_profile_factor_written_yes_is_said_to_be_no_number(tmp_path, bandwidth):
    """Fuzz round ah (LOW): a factor by size written ``true`` was told "a yes/no is not a size"
    (the sizes are the mapping's keys; its values are factors)."""
    from simnet.model.calibration import load_calibration

    (tmp_path / "q.cal.yaml").write_text(f"calibration:\n  bandwidth: {bandwidth}\n")
    with pytest.raises(InputError, match=r"calibration.bandwidth: a yes/no \(true, false\) is not a number"):
        load_calibration(tmp_path / "q.cal.yaml")


@pytest.mark.parametrize("given", [8, 2, 15])
def test_calibrate_refuses_a_rank_count_the_log_s_own_rows_contradict(cli, root, tmp_path, given):
    """Fuzz finding (31b): the issue-309 log lists no devices, and ``--gpus 8`` (or 2) fitted its
    16-rank rows as 8 ranks on one host without a word. nccl-tests prints busbw as algbw x
    2(n-1)/n: at 8 GiB, 468.46 GB/s over 8589934592 B / 34381 us = 249.84 GB/s is 1.875,
    which is n = 16; 8 ranks make it 1.75, 15 make it 1.867. Refused in one line, nothing written."""
    log = root / "validation" / "logs" / "xe9680_2node_issue309.log"
    result = cli("calibrate", log, "-t", root / "validation" / "logs" / "xe9680_2node.yaml", "--gpus", given,
                 "-o", tmp_path / "x.cal.yaml")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"--gpus says {given} ranks, but the log's rows were measured on another count" in result.stderr
    assert "is 1.875 x the algbw" in result.stderr and "(16 ranks)" in result.stderr
    assert not (tmp_path / "x.cal.yaml").exists()


def test_calibrate_names_no_rank_count_a_ratio_no_count_gives(cli, root, tmp_path):
    """Fuzz round ah (LOW): rows whose busbw is 15/16 of their algbw (an AllGather's factor at
    16 ranks) were said to be 2(n-1)/n at "2 ranks", which makes 1.0. No n gives 0.9375 as
    2(n-1)/n: said so, with the collective whose factor it is."""
    rows = [line for line in (root / "validation" / "logs" / "xe9680_2node_issue309.log").read_text().splitlines()
            if line.startswith("#")]
    rows.append("    16777216       4194304     float     sum      -1   185.40   90.49   84.84      0   185.40   90.49"
                "   84.84      0")
    (tmp_path / "ag.log").write_text("\n".join(rows) + "\n")
    result = cli("calibrate", tmp_path / "ag.log", "-t", root / "validation" / "logs" / "xe9680_2node.yaml",
                 "--gpus", 16, "-o", tmp_path / "x.cal.yaml")
    assert result.exit_code == 2 and "is 0.9375 x the algbw" in result.stderr, result.stderr
    assert "(at no rank count: it is (n-1)/n at 16 ranks, an AllGather's or ReduceScatter's" in result.stderr
    assert "(2 ranks)" not in result.stderr and not (tmp_path / "x.cal.yaml").exists()


@pytest.mark.parametrize("args, says", [
    (["run", "s.yaml", "--json", ""], "--json: an empty value"),
    (["run", "s.yaml", "--json="], "--json: an empty value"),
    (["sweep", "s.yaml", "--out", "", "--workers", "1"], "--out: an empty value"),
    (["run", ""], "an empty argument"),
    (["run", "s.yaml", "-s", ""], "-s: an empty value; give one (a size, e.g. '64 MiB')"),
    (["servers", ""], "an empty argument; give a name (see")])
def test_an_empty_argument_is_refused(tmp_path, cli, monkeypatch, args, says):
    """Fuzz findings (31b): ``--json ''`` wrote nothing without a word (an empty path is no
    path), and ``--out ''`` wrote the sweep into the current folder (click reads '' as '.').
    (31e: ``-s ''`` and ``servers ''`` were told to give a name, or - for standard output.)"""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 2}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\n")
    result = cli(*args)
    assert result.exit_code == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


@pytest.mark.parametrize("args", [["run", "s.yaml", "--plot", "-"], ["sweep", "s.yaml", "--out", "-", "--workers", "1"]])
def test_a_folder_option_refuses_standard_output(tmp_path, cli, monkeypatch, args):
    """Fuzz findings (31b): ``--plot -`` and ``--out -`` wrote a folder named '-'; '-' is
    standard output, which only --json writes to."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 2}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\n")
    result = cli(*args)
    assert result.exit_code == 2 and "'-' (standard output) is for --json only; name a folder" in result.stderr
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_algorithm_flags_on_a_training_step_without_sizes_are_refused(tmp_path, cli, command):
    """Fuzz finding (31b): ``simnet run llm.yaml -a tree`` on a training step without sizes gave
    the JSON of leaving -a out (the step runs every exchange as NCCL picks it), where the file's
    own ``algorithms:`` is refused there; with sizes, -a runs them."""
    import yaml

    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "s", "topology": LEAF2, "training": TRAINING}))
    out = ["--out", tmp_path / "o", "--workers", "1"] if command == "sweep" else []
    result = cli(command, tmp_path / "s.yaml", "-a", "tree", *out)
    assert result.exit_code == 2 and "--algorithm: the training step runs every exchange as NCCL picks it" in \
        result.stderr and len(result.stderr.strip().splitlines()) == 1
    if command == "run":
        assert cli(command, tmp_path / "s.yaml", "-a", "tree", "-s", "1 MiB").exit_code == 0


def test_a_background_job_s_placement_without_a_count_is_refused():
    """Fuzz finding (31b): ``placement: spread`` on a background job without a GPU count was
    read by nothing (it runs on every GPU no other job holds), without a word."""
    jobs = [{"name": "a", "gpus": 2, "size": "1 MiB"},
            {"name": "bg", "placement": "spread", "background": {"pattern": "uniform", "load": "30%"}}]
    message = _refusal(jobs=jobs)
    assert message.split(": ")[1] == "jobs[1]" and "placement chooses which GPUs a count of them takes" in message
    counted = [jobs[0], {**jobs[1], "gpus": 2}]
    assert scenario_from_dict({"name": "s", "topology": FABRIC, "jobs": counted}).jobs[1].placement == "spread"


@pytest.mark.parametrize("values", ["2,,3", "2,", ",2"])
def test_set_refuses_an_empty_value_between_commas(tmp_path, cli, values):
    """Fuzz finding (31b): ``--set topology.generate.gpus=2,,3`` dropped the empty value without a word."""
    path, out = _box_sweep(tmp_path)
    result = cli("sweep", path, "--set", f"topology.generate.gpus={values}", "--out", out, "--workers", "1")
    assert result.exit_code == 2 and "has an empty value between its commas" in result.stderr
    assert not out.exists()


def test_compute_beyond_a_day_is_refused_in_a_workload_and_a_training_step():
    """Fuzz findings (31b): ``model_flops: 1e300`` at 1 TFLOP/s gave a step of 1e288 s, and a
    training step at ``efficiency: 1e-300`` (or a sequence of 10^12 tokens) one of ~1e300 s,
    where compute_time is held to a day. Both are now held to it: the 2-layer model's step at
    efficiency 1e-15 on 4 GPUs of 989 TFLOP/s (tp 2) is 3 x 2.96e6 FLOPs (2 layers of 86,016 and
    logits of 12,800 per token, 16 tokens) / (0.989 FLOP/s x 2) = 4.5e6 s of compute."""
    message = _refusal(sizes=["1 MiB"], workload={"model_flops": 1e300, "gpu_flops": "1 TFLOP/s",
                                                  "gradient_size": "1 MiB"})
    assert message.split(": ")[1] == "workload" and "1e+288 s of compute; a step's compute is 1 ps to a day" in message
    message = _refusal(training={**TRAINING, "parallelism": {"tp": 2}, "efficiency": 1e-15})
    assert message.split(": ")[1] == "training" and "would take 4.485e+06 s per GPU, over the day" in message
    scenario_from_dict({"name": "s", "topology": FABRIC, "training": {**TRAINING, "efficiency": 1e-6}})


def test_compare_says_an_option_no_run_of_an_option_felt(tmp_path, cli):
    """Fuzz round v F4: chunk_size changed nothing in ring's runs (as ``simnet run`` says) and
    halving-doubling takes none, yet compare, which says so of ``options.exact``, said nothing.
    A run of an algorithm that does not take an option counts as one it changed nothing in."""
    (tmp_path / "c.yaml").write_text(
        "name: c\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 4, "
        "oversubscription: 2}}\nsizes: [16 MiB]\nalgorithms: [ring, halving_doubling]\nvariants:\n"
        "  - {name: a, set: {options.chunk_size: 1 MiB}}\n  - {name: b, set: {options.chunk_size: 2 MiB}}\n")
    result = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
    assert result.exit_code == 0, result.stderr
    said = [line for line in result.stdout.splitlines() if line.startswith("warning option_unread")]
    assert [line.split(" in any run of ")[1].split(" (")[0] for line in said] == ["option a", "option b"]
    assert all("options.chunk_size changed nothing" in line for line in said)


def test_compare_refuses_two_files_of_one_name(tmp_path, cli):
    """Fuzz finding (31b): two scenario files both named ``a`` made two rows named ``a`` (and
    two points of one label in the plot); which was which could not be told."""
    for name, model in (("one", "nccl"), ("two", "ideal")):
        (tmp_path / f"{name}.yaml").write_text(f"name: a\ntopology: {LEAF2}\nsizes: [1 MiB]\nalgorithms: [ring]\n"
                                               f"model: {model}\n")
    result = cli("compare", tmp_path / "one.yaml", tmp_path / "two.yaml", "-o", tmp_path / "c.png")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"two.yaml:1: name: 'a' names {tmp_path / 'one.yaml'} too" in result.stderr
    assert not (tmp_path / "c.png").exists()


def test_an_algorithm_flag_given_twice_to_run_is_refused(tmp_path, cli):
    """Fuzz finding (31b): ``run -a ring -a ring`` ran ring once without a word, where ``-s 1 MiB
    -s 1 MiB`` and a file's ``algorithms: [ring, ring]`` are refused (a sweep's repeated values
    are one point each, as the README says)."""
    path, _ = _box_sweep(tmp_path)
    result = cli("run", path, "-a", "ring", "-a", "tree", "-a", "ring")
    assert result.exit_code == 2 and "--algorithm: ring is given twice" in result.stderr


@pytest.mark.parametrize("faults, index, says", [
    ([{"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "100%"}], 0, "its links run at their full rate"),
    ([{"at": "0 s", "link": ["tor0", "spine0"], "down": True}, {"at": "10 us", "link": ["tor0", "spine0"],
                                                                "bandwidth": "50%"}], 1,
     "its links are down since an earlier fault, and a link down stays down"),
    ([{"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "50%"}, {"at": "10 us", "link": ["tor0", "spine0"],
                                                                      "bandwidth": "50%"}], 1,
     "its links already run at that rate")])
def test_a_fault_that_changes_nothing_is_refused(faults, index, says):
    """Fuzz findings (31b): a fault at 100% with none before it, one on a link down since an
    earlier fault (a link down stays down) and one repeating the rate in force were read by
    nothing, as ``down: false`` would be (which is refused). A later 100% restores a link and
    is taken."""
    two = {"name": "t", "generate": {**LEAF2["generate"], "spines": 2}}
    message = _refusal(topology=two, sizes=["1 MiB"], faults=faults)
    assert message.split(": ")[1] == f"faults[{index}]" and f"changes nothing: {says}" in message
    scenario_from_dict({"name": "s", "topology": two, "sizes": ["1 MiB"], "faults": [
        {"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "50%"},
        {"at": "20 us", "link": ["tor0", "spine0"], "bandwidth": "100%"}]})


@pytest.mark.parametrize("variable, value", [("NCCL_IB_DISABLE", "1"), ("NCCL_BUFFSIZE", "1048576"),
                                             ("NCCL_P2P_DISABLE", "1"), ("NCCL_NET_GDR_LEVEL", "0"),
                                             ("NCCL_LL128_ENABLE", "0"), ("NCCL_MAX_CTAS", "1"),
                                             ("NCCL_NVLS_NCHANNELS", "1"), ("NCCL_P2P_LL_THRESHOLD", "0"),
                                             # fuzz 31h #251: one NIC of eight (the p2p channel variables
                                             # of #252-#255 are followed now: tests/test_p2p_channels.py)
                                             ("NCCL_IB_HCA", "mlx5_0"),
                                             # read by NCCL 2.30.7, silently ignored before: multi-node NVLink
                                             # off, PAT off, NIC fusion off, QPs per connection
                                             ("NCCL_MNNVL_ENABLE", "0"), ("NCCL_PAT_ENABLE", "0"),
                                             ("NCCL_NET_MERGE_LEVEL", "LOC"), ("NCCL_IB_QPS_PER_CONNECTION", "4"),
                                             # fuzz m #022: NVLS's chunk instead of NCCL's tuning (nvls.cc:206)
                                             ("NCCL_NVLS_CHUNKSIZE", "131072"),
                                             ("NCCL_NVLSTREE_MAX_CHUNKSIZE", "524288"),
                                             # rings' and trees' channels from an XML (search.cc:1111)
                                             ("NCCL_GRAPH_FILE", "/tmp/graph.xml"),
                                             ("NCCL_COLLNET_NODE_THRESHOLD", "1")])  # CollNet on one node
def test_an_nccl_variable_simnet_does_not_follow_is_refused(tmp_path, cli, variable, value):
    """Fuzz findings (31b, 31c): NCCL_IB_DISABLE=1 (sockets instead of InfiniBand),
    NCCL_BUFFSIZE, NCCL_P2P_DISABLE, NCCL_NET_GDR_LEVEL, NCCL_LL128_ENABLE, NCCL_MAX_CTAS,
    NCCL_NVLS_NCHANNELS and NCCL_P2P_LL_THRESHOLD change what NCCL runs and gave the JSON of
    leaving them unset; refused, as RCCL's unmodelled variables are. NCCL's own default
    (IB_DISABLE=0, BUFFSIZE=0x400000 as NCCL reads it) and what never changes a run
    (NCCL_DEBUG) stay taken, and model: ideal has no NCCL."""
    path, _ = _box_sweep(tmp_path)
    result = cli("run", path, env={variable: value})
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"{variable}={value} changes the transports, paths, channels, buffers, protocols or CTAs NCCL runs with" in \
        result.stderr
    assert cli("run", path, "--model", "ideal", env={variable: value}).exit_code == 0
    assert cli("run", path, env={"NCCL_IB_DISABLE": "0", "NCCL_DEBUG": "INFO", "NCCL_BUFFSIZE": "0x400000",
                                 "NCCL_MNNVL_ENABLE": "2", "NCCL_NET_MERGE_LEVEL": "PORT"}).exit_code == 0


@pytest.mark.parametrize("written", ['"4"', '"٤:1"'])
def test_a_ratio_in_quotes_or_in_another_script_s_digits_is_refused(tmp_path, cli, written):
    """A quoted ``"4"`` was read as 4 (pydantic converts text), and ``float`` reads
    Arabic-Indic digits as 0-9: a ratio is a number or down:up in ASCII digits, else one line."""
    fabric = tmp_path / "t.yaml"
    fabric.write_text(f"name: t\ngenerate: {{kind: leaf_spine, oversubscription: {written}}}\n")
    result = cli("topo", "check", fabric)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert f"{fabric}:2: generate.oversubscription:" in result.stderr and "not a ratio" in result.stderr


@pytest.mark.parametrize("size", ["١ MiB", "٤٠٠ KiB"])
def test_a_size_in_another_script_s_digits_is_refused(tmp_path, cli, size):
    """``sizes: ["١ MiB"]`` ran as 1 MiB (a regex digit matches any script's, and float reads
    them) while GPU counts refuse such digits: quantities take ASCII digits too."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology:\n  name: t\n  generate: {kind: nvswitch, gpus: 2}\n"
                                     f"sizes: ['{size}']\nalgorithms: [ring]\n")
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "sizes" in result.stderr and "is not a size" in result.stderr


def test_a_fault_after_the_run_s_end_is_named_in_a_warning():
    """A fault at 1 s on a run of microseconds came after its end and changed nothing, without
    a word: the result says which fault and why, and the time is the healthy one."""
    from simnet import simulate, topology_from_dict

    topo = topology_from_dict({"name": "two", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                           "gpus_per_host": 2, "gpu": "h100"}})
    healthy = simulate(topo, "ring", 2**20)
    late = simulate(topo, "ring", 2**20, faults=[{"at": "1 s", "link": ["tor0", "r0h0-nic0"], "bandwidth": "50%"},
                                                 {"at": "0 s", "node": "r0h1-nic1", "bandwidth": "90%"}])
    (warning,) = [w for w in late.warnings if w.kind == "fault_after_end"]
    assert "1 of 2 faults" in warning.message and "faults[0]" in warning.message and "faults[1]" not in warning.message
    assert healthy.time_s < 1e-3 and not any(w.kind == "fault_after_end" for w in healthy.warnings)


def test_faults_over_before_any_data_crosses_their_link_are_named_in_a_warning():
    """Fuzz finding (31g): an uplink at 10 % from 0 to 1 us, restored then, is over before the
    ring's first byte reaches the network (NCCL's launch and software latencies alone are
    microseconds): the run is the healthy one to the picosecond and said nothing. Now a warning
    names the faults; the same uplink at 10 % for good slows the run and draws none."""
    from simnet import simulate, topology_from_dict

    topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1,
                                                         "gpus_per_host": 2, "spines": 1}})
    slowed = {"at": "0 s", "link": ["tor0", "spine0"], "bandwidth": "10%"}
    brief = simulate(topo, "ring", 2**20, faults=[slowed, {**slowed, "at": "1 us", "bandwidth": "100%"}])
    assert brief.time_s == brief.conditions["healthy_s"]
    (warning,) = [w for w in brief.warnings if w.kind == "fault_unfelt"]
    assert "faults[0] link tor0-spine0 at 10%" in warning.message and "faults[1]" in warning.message
    lasting = simulate(topo, "ring", 2**20, faults=[slowed])
    assert lasting.time_s > lasting.conditions["healthy_s"]
    assert not any(w.kind == "fault_unfelt" for w in lasting.warnings)
    late = simulate(topo, "ring", 2**20, faults=[{**slowed, "at": "1 s"}])  # fault_after_end says it, once
    assert [w.kind for w in late.warnings if w.kind.startswith("fault_")] == ["fault_after_end"]


@pytest.mark.parametrize("profile, where", [
    ("calibration: {}\n", ":1: calibration: an empty calibration section changes nothing"),
    ("calibration: {base_latency: 1 us}\nfitted: 3\n", ":2: fitted: expected a mapping"),
    ("calibration: {base_latency: 1 us}\nfitted: {hardware: 3}\n", ":2: fitted.hardware: expected a mapping")])
def test_a_profile_section_read_by_nothing_is_refused(tmp_path, profile, where):
    """An empty calibration section changed nothing, and a ``fitted`` record that is no
    mapping silently turned off the warning for a profile run on another machine."""
    from simnet.model.calibration import load_calibration

    path = tmp_path / "p.cal.yaml"
    path.write_text(profile)
    with pytest.raises(InputError) as refused:
        load_calibration(path)
    assert str(refused.value).startswith(f"{path}{where}"), str(refused.value)


@pytest.mark.parametrize("args", [["run", "S", "-g", "2", "--gpus", "4"], ["run", "S", "--model", "ideal", "--model=nccl"],
                                  ["sweep", "S", "--gpus", "2,4", "--gpus", "8", "--out", "O"]])
def test_an_option_of_one_value_given_twice_is_refused(tmp_path, cli, args):
    """click keeps the last of ``-g 2 --gpus 4`` without a word (the run took 4 GPUs); options
    that take one value refuse a second, as -a and -s refuse a value given twice."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\ntopology:\n  name: t\n  generate: {kind: nvswitch, gpus: 8}\nsize: 1 MiB\n"
                        "algorithms: [ring]\n")
    result = cli(*[scenario if a == "S" else tmp_path / "out" if a == "O" else a for a in args])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert f"simnet {args[0]}:" in result.stderr and "is given twice; give it once" in result.stderr
    assert not (tmp_path / "out").exists()
    assert cli("run", scenario, "-s", "1 MiB", "-s", "2 MiB", "--json", tmp_path / "j.json").exit_code == 0


def test_the_twice_check_reads_values_as_click_does_and_reaches_nested_commands(tmp_path, cli, root):
    """A value that looks like an option (``--json -g.json``) is a value, not a second -g; and
    ``simnet topo export -o a -o b`` wrote only b without a word: nested commands are checked."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\ntopology:\n  name: t\n  generate: {kind: nvswitch, gpus: 8}\nsize: 1 MiB\n"
                        "algorithms: [ring]\n")
    named = tmp_path / "-g.json"
    ran = cli("run", scenario, "--json", named, "-g", "2")
    assert ran.exit_code == 0 and named.exists(), ran.stderr
    topo = root / "topologies/dgx_h100.yaml"
    refused = cli("topo", "export", topo, "-o", tmp_path / "a.json", "-o", tmp_path / "b.json", "--format", "json")
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "simnet topo export: -o is given twice" in refused.stderr
    assert not (tmp_path / "a.json").exists() and not (tmp_path / "b.json").exists()


@pytest.mark.parametrize(("text", "where"), [
    ("options: {channels: }", "t.yaml:4: options.channels: has no value; give one or leave the key out"),
    ("workload: {compute_time: 1 ms, gradient_size: 1 MiB, bucket_size: ~}",
     "t.yaml:4: workload.bucket_size: has no value; give one or leave the key out"),
    ("calibration:", "t.yaml:4: calibration: has no value; give one or leave the key out"),
    ("faults:\n  - {at: 1 us, node: gpu0, bandwidth: 50%}\n  -",
     "t.yaml:6: faults[1]: an empty item; give its value or leave it out"),
    ("variants: [{name: a, set: {cost: }}, {name: b}]",
     "t.yaml:4: variants[0].set.cost: has no value; give one or leave the key out"),
    ("description: !!binary aGVsbG8=",
     "t.yaml:4: description: a YAML binary value ('aGVsbG8='); simnet reads text, numbers and true/false"),
    ("faults: [{at: 2024-01-01, node: gpu0, bandwidth: 50%}]",
     "t.yaml:4: faults[0].at: a YAML timestamp value ('2024-01-01'); simnet reads text, numbers and true/false"),
])
def test_a_key_left_empty_or_an_exotic_yaml_value_is_refused_where_it_stands(tmp_path, text, where):
    """``channels:`` with nothing after it read as if the key were absent: an emptied value is a
    careless edit, so it is refused on its line (in every kind of file: they share the loader),
    as are YAML's binary and date values, which no simnet key takes."""
    from simnet.spec.scenario import load_scenario

    box = Path(__file__).parent.parent / "topologies" / "dgx_h100.yaml"
    (tmp_path / "t.yaml").write_text(f"name: t\ntopology: {box}\nsizes: [1 MiB]\n{text}\n")
    with pytest.raises(InputError) as refused:
        load_scenario(tmp_path / "t.yaml")
    assert str(refused.value) == f"{tmp_path}/{where}"


def test_a_topology_key_left_empty_is_refused(tmp_path):
    from simnet import load_topology

    (tmp_path / "g.yaml").write_text("name: g\ngenerate:\n  kind: leaf_spine\n  racks: 2\n  hosts_per_rack: 1\n"
                                     "  gpus_per_host: 2\n  oversubscription:\n")
    with pytest.raises(InputError, match=r"g.yaml:7: generate.oversubscription: has no value; give one or leave"):
        load_topology(tmp_path / "g.yaml")


def test_nccls_channel_variables_beside_options_channels_or_under_ideal_are_refused(tmp_path, cli):
    """Fuzz finding (31c): NCCL_MAX_NCHANNELS=1 beside ``options: {channels: 8}`` was dropped
    without a word (the option won), and under model: ideal, which runs no NCCL, it was read
    by nothing; alone under nccl it caps the channels (a different answer)."""
    path, _ = _box_sweep(tmp_path)
    capped = cli("run", path, "--json", "-", env={"NCCL_MAX_NCHANNELS": "1"})
    assert capped.exit_code == 0 and capped.stdout != cli("run", path, "--json", "-").stdout
    path.write_text(path.read_text() + "options: {channels: 8}\n")
    both = cli("run", path, env={"NCCL_MAX_NCHANNELS": "1"})
    assert both.exit_code == 2 and "options.channels and NCCL_MAX_NCHANNELS=1 both set the channels; give one" in \
        both.stderr
    path.write_text(path.read_text().replace("options: {channels: 8}\n", ""))
    ideal = cli("run", path, "--model", "ideal", env={"NCCL_MIN_NCHANNELS": "4"})
    assert ideal.exit_code == 2 and "NCCL_MIN_NCHANNELS=4 sets NCCL's channels, and model: ideal runs no NCCL" in \
        ideal.stderr


def test_a_share_and_a_time_are_one_sweep_point_however_written(tmp_path, cli):
    """Fuzz finding (31c): ``--set faults.0.bandwidth=50%,50.0%`` ran one fault as two points,
    and '1 ps' and '1 h' (the documented range runs from 1 ps to a day) were no times."""
    import yaml

    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "s", "topology": LEAF2, "sizes": ["1 MiB"],
                                                     "algorithms": ["ring"], "faults": [
                                                         {"at": "0 s", "node": "spine0", "bandwidth": "50%"}]}))
    out = tmp_path / "out"
    ran = cli("sweep", tmp_path / "s.yaml", "--set", "faults.0.bandwidth=50%,50.0%,25%", "--out", out,
              "--workers", "1")
    assert ran.exit_code == 0, ran.stderr
    assert [r["set"]["faults.0.bandwidth"] for r in _records(out)] == ["50%", "25%"]
    from simnet import units

    assert units.parse_time("1 ps") == 1e-12 and units.parse_time("1 h") == 3600.0 and units.parse_time("2min") == 120


def test_set_topology_calibration_is_relative_to_the_topology_file(tmp_path, cli):
    """Fuzz finding (31c): with the topology in a folder (``topology: sub/t.yaml``), no relative
    ``--set topology.calibration=`` found its profile beside it (the value was taken relative to
    the scenario, then to a folder named after the point's label); it now reads as the key
    written in the topology file does, and a change to the profile changes the point."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t.yaml").write_text("name: t\ngenerate: {kind: nvswitch, gpus: 4}\n")
    (tmp_path / "sub" / "a.cal.yaml").write_text("calibration: {base_latency: 5 us}\n")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: sub/t.yaml\nsizes: [1 MiB]\nalgorithms: [ring]\n")
    out = tmp_path / "out"

    def swept():
        ran = cli("sweep", tmp_path / "s.yaml", "--set", "topology.calibration=a.cal.yaml", "--out", out,
                  "--workers", "1")
        assert ran.exit_code == 0, ran.stderr
        return _records(out)[-1]["sizes"][0]["time_s"]

    before = swept()
    (tmp_path / "sub" / "a.cal.yaml").write_text("calibration: {base_latency: 50 us}\n")
    assert swept() == pytest.approx(before + 45e-6, rel=1e-9)
    missing = cli("sweep", tmp_path / "s.yaml", "--set", "topology.calibration=sub/a.cal.yaml", "--out",
                  tmp_path / "o2", "--workers", "1")
    assert missing.exit_code == 2 and f"no calibration profile '{tmp_path}/sub/sub/a.cal.yaml'" in missing.stderr


def test_a_compute_slowdown_of_a_gpu_the_run_leaves_out_is_warned():
    """Fuzz finding (31c): ``compute_slowdown: {r1h0-gpu1: 2}`` beside ``gpus: 2`` (the first two
    GPUs, both on r0h0) changed nothing without a word; warned, not refused, since a sweep over
    the GPU count takes it in at its larger points."""
    doc = {"name": "s", "topology": LEAF2, "sizes": ["1 MiB"],
           "workload": {"compute_time": "1 ms", "gradient_size": "1 MiB", "compute_slowdown": {"r1h0-gpu1": 2}}}
    left_out = scenario_from_dict({**doc, "gpus": 2})  # (LEAF2's spines are said too: the 2 GPUs share a host)
    said = [w for w in left_out.warnings if not w.link.startswith("topology.")]
    assert [w.kind for w in said] == ["key_unread"]
    assert "r1h0-gpu1 is not among the run's 2 GPUs (gpus:)" in said[0].message
    assert scenario_from_dict(doc).warnings == []


def test_a_sweep_resumes_under_an_nccl_variable_written_another_way(tmp_path, cli):
    """Fuzz finding (31c): a sweep under NCCL_ALGO=ring, resumed under NCCL_ALGO=Ring (one value
    to NCCL, which reads names in any case), was refused as another sweep."""
    path, out = _box_sweep(tmp_path)
    assert cli("sweep", path, "--gpus", "2,4", "--out", out, "--workers", "1", env={"NCCL_ALGO": "ring"}).exit_code == 0
    again = cli("sweep", path, "--gpus", "2,4", "--out", out, "--workers", "1", env={"NCCL_ALGO": "Ring"})
    assert again.exit_code == 0 and "2 points already done, 0 computed now" in again.stdout, again.stderr
    other = cli("sweep", path, "--gpus", "2,4", "--out", out, "--workers", "1", env={"NCCL_ALGO": "tree"})
    assert other.exit_code == 2 and "holds a sweep of" in other.stderr


def test_a_variant_that_sets_an_option_no_algorithm_reads_is_refused():
    """Fuzz finding (31c): ``set: {options.inner: ring}`` beside ``algorithms: [ring]`` ranked
    two identical options without a word (``simnet run`` warns option_unread for the same)."""
    from simnet.run.compare import compare_scenarios

    spec = scenario_from_dict({"name": "s", "topology": LEAF2, "sizes": ["1 MiB"], "algorithms": ["ring"],
                               "variants": [{"name": "a", "set": {"options.inner": "ring"}}, {"name": "b"}]})
    with pytest.raises(ValueError, match=re.escape("read by none of ring")) as caught:
        compare_scenarios([spec])
    assert caught.value.loc == ("variants", 0, "set", "options.inner")


@pytest.mark.parametrize("setting", ["sizes=[1 MiB]", "topology={name: x}"])
def test_a_set_value_written_as_a_list_or_mapping_says_what_set_takes(tmp_path, cli, setting):
    """Fuzz finding (31c): ``--set 'sizes=[1 MiB]'`` said "'[1 MiB]' is not a size" and a mapping
    was cut at its commas; --set takes one scalar per point, and says so."""
    path, out = _box_sweep(tmp_path)
    result = cli("sweep", path, "--set", setting, "--out", out, "--workers", "1")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "each value after = is one point's value, a single number or text" in result.stderr


def test_a_gradient_of_nothing_is_refused_as_parameters_0_is():
    """Fuzz finding (31e): gradient_size: 0 B ran a step of nothing to exchange, where
    parameters: 0 is refused."""
    message = _refusal(sizes=["1 MiB"], workload={"compute_time": "1 ms", "gradient_size": "0 B"})
    assert "workload.gradient_size: '0 B' must be more than 0" in message


@pytest.mark.parametrize("background, period, says", [
    ("{pattern: uniform, load: 1e-9%}", "", "1e-09% of a route's bandwidth offers 36 b/s, under 1 Kb/s"),
    ("{pattern: all_to_all, load: 10%}", ", period: 1 ps",
     "10% of a route's bandwidth offers 360 Gb/s, under a byte a period of 1 ps")])
def test_a_background_load_too_small_to_send_is_refused(tmp_path, cli, background, period, says):
    """Fuzz finding (31e): every background transfer was at least a byte (max(1, ...)), so
    a load of 1e-9% offered 8 Kb/s, and 10% every 1 ps offered 1 TB/s a route, without a word."""
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\ntopology: {{name: t, generate: {{kind: leaf_spine, racks: 2, hosts_per_rack: 1, "
                    f"gpus_per_host: 2, spines: 1}}}}\njobs:\n  - {{name: a, gpus: 2, size: 1 MiB}}\n"
                    f"  - {{name: n, background: {background}{period}}}\n")
    result = cli("run", path)
    assert result.exit_code == 2 and result.stderr.startswith(f"{path}:5: jobs[1].background.load: {says}"), \
        result.stderr


@pytest.mark.parametrize("parallelism, warned", [({}, True), ({"tp": 2}, False)])
def test_a_training_dtype_no_exchange_reads_is_warned_even_without_runs(parallelism, warned):
    """Fuzz finding (31e): dtype: fp8 on a pure data-parallel step changed nothing (only the
    gradient crosses a link, in grad_dtype), without a word; and a training step without
    sizes dropped every scenario warning, as they rode on the runs it has none of."""
    from simnet.run.scenario import run_scenario

    training = {**TRAINING, "dtype": "fp8", "parallelism": parallelism}
    results = run_scenario(scenario_from_dict({"name": "s", "topology": FABRIC, "training": training}))
    said = [w for w in results.to_dict().get("warnings", []) if w["link"] == "training.dtype"]
    assert bool(said) == warned and (not said or "so dtype changed nothing here" in said[0]["message"])


def test_one_delay_spelt_two_ways_is_one_answer_and_nothing_absorbed_is_0():
    """Fuzz finding (31e): a straggler 1000 ns late and one 1 us late gave other JSON (the
    delay 1.0000000000000002e-06 s), and a ring that absorbed nothing said 2.96e-21 s
    absorbed: differences of floats below the engine's 1 ps."""
    from simnet.run.scenario import run_scenario

    box = {"name": "b", "generate": {"kind": "nvswitch", "gpus": 4, "gpu_bandwidth": "100 GB/s"}}
    answers = [run_scenario(scenario_from_dict({"name": "s", "topology": box, "sizes": ["1 MiB"],
                                                "algorithms": ["ring"], "stragglers": {"gpu1": delay}}))
               .runs[0].to_dict()["conditions"] for delay in ("1000 ns", "1 us")]
    assert answers[0] == answers[1] and answers[0]["absorbed_s"] == 0.0 and answers[0]["max_delay_s"] == 1e-6


@pytest.mark.parametrize("generate, moot", [
    ({"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 2}, True),
    ({"kind": "nvswitch", "gpus": 4}, True),
    ({"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 2}, False),
    ({"kind": "leaf_spine", "racks": 3, "hosts_per_rack": 1, "gpus_per_host": 2, "spines": 1}, True),
    ({"kind": "rail_optimized", "units": 1, "nodes_per_unit": 2, "gpus_per_node": 2, "rails": 2, "planes": 2}, False)])
def test_a_routing_no_route_can_follow_is_said_to_change_nothing(generate, moot):
    """Fuzz round w F4: ``routing:`` on a fabric where every pair has one route (one rack
    under one ToR, one NVSwitch box) changed nothing without a word, where its sibling keys
    (a one-rack fabric's spines) are said to. Switches cabled together, or NICs with two
    ports (planes), give it something to choose."""
    for routing in ("ecmp", "by_destination"):
        topo = topology_from_dict({"name": "t", "routing": routing, "generate": generate})
        said = [entry for entry in topo.unread if entry.startswith("routing")]
        assert bool(said) == moot, routing
        assert all("every pair has one route and no routing chooses" in entry for entry in said)
    assert not [e for e in topology_from_dict({"name": "t", "generate": generate}).unread if e.startswith("routing")]


def test_routing_over_two_tors_cabled_to_each_other_is_said_to_change_nothing(tmp_path):
    """Fuzz round x R6: two ToRs cabled straight to each other (no spine) give every pair one
    route, so ``routing:`` changed nothing without a word; a third cable closing a loop
    through a spine gives it a choice. The times say the same: ecmp and by_destination
    agree on the tree, as they must where no route branches."""
    from simnet import load_topology, simulate

    def fabric(routing, loop):
        nodes = [{"id": f"r{r}g{g}", "kind": "gpu", "host": f"h{r}"} for r in range(2) for g in range(2)]
        nodes += [{"id": f"tor{r}", "kind": "switch"} for r in range(2)] + [{"id": "spine", "kind": "switch"}] * loop
        links = [{"a": f"r{r}g{g}", "b": f"tor{r}", "bandwidth": "100 Gb/s", "latency": "1 us"}
                 for r in range(2) for g in range(2)]
        links += [{"a": "tor0", "b": "tor1", "bandwidth": "100 Gb/s", "latency": "1 us"}]
        links += [{"a": f"tor{r}", "b": "spine", "bandwidth": "100 Gb/s", "latency": "1 us"} for r in range(2)] * loop
        path = tmp_path / f"{routing}{loop}.yaml"
        path.write_text(yaml.safe_dump({"name": "t", "routing": routing, "nodes": nodes, "links": links}))
        return load_topology(path)

    for loop in (0, 1):
        said = [[e for e in fabric(routing, loop).unread if e.startswith("routing")] for routing in ("ecmp", "by_destination")]
        assert all(bool(s) == (not loop) for s in said), (loop, said)
    times = {simulate(fabric(routing, 0), "ring", 2**20).time_s for routing in ("ecmp", "by_destination")}
    assert len(times) == 1


def test_routing_between_gpus_cabled_to_two_nvswitches_is_not_said_to_change_nothing(tmp_path):
    """Review of round x R6's fix: no switch is cabled to another, yet GPUs reach each other
    through either NVSwitch, so routing chooses (halving-doubling 2.458 ms under ecmp, 2.669 ms
    by destination, with one switch's links 4x the other's): not said to change nothing. (The
    second NVSwitch leaves out one GPU: two that join the same GPUs are one NVSwitch, whose
    links add up, and there routing chooses nothing: test_same_hardware.)"""
    from simnet import load_topology, simulate

    nodes = [{"id": f"g{i}", "kind": "gpu", "host": "h0", "gpu": "h100"} for i in range(4)]
    nodes += [{"id": f"nvs{k}", "kind": "switch", "host": "h0", "nvls": False} for k in range(2)]
    links = [{"a": f"g{i}", "b": f"nvs{k}", "bandwidth": bandwidth, "latency": "0.25 us", "type": "nvlink"}
             for i in range(4) for k, bandwidth in enumerate(("200 GB/s", "50 GB/s")) if (i, k) != (3, 1)]
    times = set()
    for routing in ("ecmp", "by_destination"):
        (tmp_path / f"{routing}.yaml").write_text(yaml.safe_dump({"name": "two", "routing": routing, "nodes": nodes,
                                                                  "links": links}))
        topo = load_topology(tmp_path / f"{routing}.yaml")
        assert not topo.unread
        times.add(simulate(topo, "halving_doubling", 64 * 2**20).time_s)
    assert len(times) == 2


@pytest.mark.parametrize("racks, said", [(2, " (in option a)"), (1, "")])
def test_compare_says_a_key_moot_in_the_file_only_of_the_options_it_is_moot_in(tmp_path, racks, said):
    """Fuzz round x R5: a one-rack file's ``routing`` was said to change nothing in the whole
    comparison, though variant b's two racks route by it (tree 4.18 against 3.49 ms). Said
    of the options it is moot in; of every option, plainly; of none, not at all."""
    from simnet.run.compare import compare_warnings
    from simnet.spec.scenario import load_scenario

    (tmp_path / "t.yaml").write_text("name: t\nrouting: ecmp\ngenerate: {kind: leaf_spine, racks: 1, "
                                     "hosts_per_rack: 1, gpus_per_host: 2}\n")
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: t.yaml\nsizes: [1 MiB]\nalgorithms: [ring]\nvariants:\n"
                                     f"  - {{name: a, set: {{topology.generate.hosts_per_rack: 2}}}}\n"
                                     f"  - {{name: b, set: {{topology.generate.racks: {racks}}}}}\n")
    routing = [f.message for f in compare_warnings([load_scenario(tmp_path / "s.yaml")]) if f.link == "routing"]
    assert len(routing) == 1 and routing[0].endswith(f"no routing chooses{said}")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\nsizes: [1 MiB]\nalgorithms: [ring]\nvariants:\n"
                                     "  - {name: a, set: {topology.generate.racks: 2}}\n"
                                     "  - {name: b, set: {topology.generate.racks: 3}}\n")
    assert not [f for f in compare_warnings([load_scenario(tmp_path / "s.yaml")]) if f.link == "routing"]


def test_a_one_rack_fabric_s_uplink_keys_are_said_to_build_nothing():
    """Fuzz finding (31e): a one-rack leaf_spine's oversubscription, uplink_bandwidth and
    spines built nothing (its ToR is the top) without a word. Warned, not refused: a sweep
    over GPU counts grows the racks, where they count (a 2-rack fabric says nothing)."""
    from simnet.topology.loader import topology_from_dict

    def fabric(racks):
        return {"name": "t", "generate": {"kind": "leaf_spine", "racks": racks, "hosts_per_rack": 1,
                                          "gpus_per_host": 2, "spines": 1, "oversubscription": 4}}

    assert [said.split(" (")[0] for said in topology_from_dict(fabric(1)).unread] == [
        "generate.spines", "generate.oversubscription"]
    assert topology_from_dict(fabric(2)).unread == ()
    spec = scenario_from_dict({"name": "s", "topology": fabric(1), "sizes": ["1 MiB"]})
    assert [w.link for w in spec.warnings if w.kind == "key_unread"] == [
        "topology.generate.spines", "topology.generate.oversubscription"]
    assert "one rack's ToR is the top of its fabric" in spec.warnings[0].message


def test_an_option_that_replaces_the_file_s_sweep_axis_says_so(tmp_path, cli):
    """Fuzz finding (31e, left open by 31c): --set K (or --gpus) beside the file's own
    ``sweep: {K: [...]}`` ran the option's values and none of the file's, without a word."""
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: t, generate: {kind: nvswitch, gpus: 4}}\nsize: 1 KiB\n"
                    "algorithms: [ring]\nsweep: {options.channels: [1, 2], gpus: [4]}\n")
    result = cli("sweep", path, "--set", "options.channels=4", "--gpus", "2", "--out", tmp_path / "o", "--workers", "1")
    said = " ".join(result.stdout.split())
    assert result.exit_code == 0 and f"--set options.channels replaces the file's sweep: axis of options.channels " \
        f"({path}:5)" in said and f"--gpus replaces the file's sweep: axis of gpus ({path}:5)" in said, result.stdout


@pytest.mark.parametrize("block, line, named", [
    ("sweep:\n  topology.generate.server: [dgx-h100, bogus]\n", 7, "sweep.topology.generate.server: the point "),
    ("sweep:\n  bogus.key: [1, 2]\n", 7, "sweep.bogus.key: the point bogus.key=1: bogus: unknown key"),
    ("sweep:\n  options.ps_server: [0, 1]\n", 7, "sweep.options.ps_server: read by none of ring"),  # fuzz v F5
    ("variants:\n  - name: fast\n    set: {topology.generate.nic_bandwidth: 400 Gb/s}\n"
     "  - name: typo\n    set: {topology.generate.nic_bandwith: 400 Gb/s}\n", 10,
     "variants[1].set.topology.generate.nic_bandwith: unknown key 'nic_bandwith'"),
])
def test_run_checks_the_axes_and_variants_that_sweep_and_compare_read(tmp_path, cli, block, line, named):
    """Fuzz findings #082/#268: ``simnet run`` of a file whose sweep axis or variant named a
    key or value ``simnet sweep``/``compare`` refuse ran without a word, leaving the typo to be
    found later. Now the whole file is checked, the refusal on the line that states it."""
    fabric = "{name: pair, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, gpus_per_host: 2, spines: 1}}"
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {fabric}\nsize: 1 MiB\nalgorithms: [ring]\n\n{block}")
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 's.yaml'}:{line}: {named}"), result.stderr


def test_run_of_a_file_with_good_axes_and_variants_runs_the_file_as_written(tmp_path, cli):
    fabric = "{name: pair, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, gpus_per_host: 2, spines: 1}}"
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {fabric}\nsize: 1 MiB\nalgorithms: [ring]\n"
                                     "sweep:\n  topology.generate.nic_bandwidth: [100 Gb/s, 400 Gb/s]\n"
                                     "variants:\n  - name: fast\n    set: {topology.generate.nic_bandwidth: 800 Gb/s}\n"
                                     "  - name: as written\n")
    assert cli("run", tmp_path / "s.yaml").exit_code == 0


@pytest.mark.parametrize("block, line, named", [
    ("sweep:\n  sizes: [[1 MiB], [1 Mb]]\n", 7, "sweep.sizes: the point sizes=[1 Mb]: '1 Mb' is not a size"),
    ("sweep:\n  topology.generate.kind: [leaf_spine, nvswitch]\n", 7,
     "sweep.topology.generate.kind: the point topology.generate.kind=nvswitch: topology.generate.racks: unknown key"),
    ("faults: [{at: 0 s, link: [tor0, spine0], bandwidth: 50%}]\nsweep:\n  faults.0.at: [1 us, 2 d]\n", 8,
     "sweep.faults.0.at: the point faults.0.at=2 d: faults[0].at: '2 d' is not a time"),
    ("sweep:\n  gpus: [2, true]\n", 7, "sweep.gpus: true is not a GPU count"),
])
def test_run_names_the_axis_line_of_list_values_and_values_refused_under_another_name(tmp_path, cli, block, line,
                                                                                       named):
    """Fuzz round g #186-#190: an axis whose values are lists (sizes, algorithms) ended in exit
    70 (unhashable list), and a value refused under another name than its axis (faults[0].at
    for faults.0.at; kind: nvswitch refused as racks) was said without a line; gpus: true was
    shown as Python's True."""
    fabric = "{name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2, spines: 2}}"
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {fabric}\nsizes: [1 MiB]\nalgorithms: [ring]\n\n{block}")
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 's.yaml'}:{line}: {named}"), result.stderr


def test_run_checks_each_axis_value_once_not_the_axes_product(tmp_path, cli, monkeypatch):
    """Fuzz round g #193: three axes of 64, 40 and 8 values are 20,480 points, each checked by
    run before it started (minutes). Each value is checked once beside the file as written,
    and run runs the file with -a and -s as given, whatever the axes hold."""
    from simnet.run.sweep import plan

    checked = []
    monkeypatch.setattr(plan, "scenario_at", lambda p, overrides, gpus: checked.append(overrides))
    fabric = "{name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2, spines: 2}}"
    (tmp_path / "s.yaml").write_text(
        f"name: s\ntopology: {fabric}\nsizes: [1 MiB]\nalgorithms: [ring]\nsweep:\n"
        f"  options.channels: {list(range(1, 65))}\n  topology.generate.racks: {list(range(1, 41))}\n"
        f"  algorithms: [[ring], [tree]]\n  sizes: [[1 MiB], [2 MiB]]\n")
    result = cli("run", tmp_path / "s.yaml", "-a", "tree", "-s", "4 MiB", "--json", "-")
    assert result.exit_code == 0, result.stderr
    assert len(checked) == 64 + 40 + 2 + 2 and all(len(o) == 1 for o in checked)
    runs = json.loads(result.stdout)["runs"]
    assert [(r["algorithm"], r["size_bytes"]) for r in runs] == [("tree", 4 << 20)]


def test_a_key_written_beside_a_merge_overrides_the_merged_one(tmp_path):
    """Fuzz round g #305: ``- {<<: *f, at: 5 us}`` (a fault like the one before, later) was
    refused as a duplicate key 'at', though YAML's merge key exists for exactly that: a key
    written in the mapping overrides the merged one. A key written twice by hand is still
    refused."""
    from simnet.errors import InputError
    from simnet.io.yamlsource import load_yaml

    path = tmp_path / "f.yaml"
    path.write_text("faults:\n  - &f {at: 0 s, link: [tor0, spine0], bandwidth: 50%}\n"
                    "  - {<<: *f, at: 5 us, bandwidth: 10%}\n")
    document = load_yaml(path)[0]
    assert document["faults"][1] == {"at": "5 us", "link": ["tor0", "spine0"], "bandwidth": "10%"}
    path.write_text("f: &f {at: 0 s}\ng: {<<: *f, at: 5 us, at: 6 us}\n")
    with pytest.raises(InputError, match="g.at: duplicate key 'at'"):
        load_yaml(path)


@pytest.mark.parametrize("stragglers", [{"distribution": "exponential", "mean": "20 h", "seed": 3},
                                        {"distribution": "uniform", "mean": "23 h", "seed": 0}])
def test_a_distribution_that_draws_a_delay_over_a_day_is_refused_on_its_mean(tmp_path, cli, stragglers):
    """Fuzz round g #087: a draw over a day (the longest delay) was refused as "s.yaml: a start
    delay is 0 or more" with no line and no field (the draws were checked again per run, out of
    the file's reach). Now on the mean's line, with the draw and its GPU."""
    fields = ", ".join(f"{k}: {v}" for k, v in stragglers.items())
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {json.dumps(LEAF2)}\nsizes: [1 MiB]\nalgorithms: [ring]\n"
                                     f"stragglers: {{{fields}}}\n")
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 's.yaml'}:5: stragglers.mean: {stragglers['distribution']} of "
                                    f"mean "), result.stderr
    assert "over a day" in result.stderr


def test_a_profile_s_latency_out_of_range_is_said_in_time_units(tmp_path, cli):
    """Fuzz finding (31h #206): 'base_latency: -1 h' was refused as 'must be at least -0.001',
    a bound with no unit."""
    (tmp_path / "p.cal.yaml").write_text("calibration:\n  base_latency: -1 h\n")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: t, generate: {kind: nvswitch, gpus: 2}, "
                                     "calibration: p.cal.yaml}\nsize: 1 MiB\nalgorithms: [ring]\n")
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert "p.cal.yaml:2: calibration.base_latency: -3600 s is outside -1 ms .. 100 ms" in result.stderr


@pytest.mark.parametrize("name, folder", [("a/../../escaped", "sweep-a_.._.._escaped"), ("n" * 300, "sweep-" + "n" * 100)])
def test_a_sweep_s_default_folder_stays_here_whatever_the_scenario_s_name(tmp_path, cli, monkeypatch, name, folder):
    """Fuzz findings (31h #281, #230): the default --out is sweep-<name>: a name with ../ wrote
    the sweep outside the working folder, one of 300 characters made a file name the system
    refuses (exit 70). The name is a label; the folder is made of its safe characters."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(f"name: '{name}'\ntopology: {{name: t, generate: {{kind: nvswitch, gpus: 2}}}}\n"
                                     "size: 1 MiB\nalgorithms: [ring]\n")
    result = cli("sweep", "s.yaml", "--gpus", "2", "--workers", "1")
    assert result.exit_code == 0, result.stderr
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == [folder]
    assert (tmp_path / folder / "results.jsonl").is_file()


def test_a_variable_simnet_does_not_follow_set_to_nccl_s_default_is_as_unset(tmp_path, cli):
    """Fuzz round j #295: a sweep run with NCCL_ALLOC_P2P_NET_LL_BUFFERS=0 (NCCL's default, the
    run the same) and resumed without it was refused as the sweep of another input."""
    from simnet.run.nccl_env import nccl_env

    assert nccl_env({"NCCL_ALLOC_P2P_NET_LL_BUFFERS": "0", "NCCL_BUFFSIZE": "0x400000"}) == {}
    assert nccl_env({"NCCL_BUFFSIZE": "8388608"}) == {"NCCL_BUFFSIZE": "8388608"}  # refused later, as it should
    scenario, out = _box_sweep(tmp_path)
    first = cli("sweep", scenario, "--gpus", "2", "--out", out, "--workers", "1",
                env={"NCCL_ALLOC_P2P_NET_LL_BUFFERS": "0"})
    again = cli("sweep", scenario, "--gpus", "2,4", "--out", out, "--workers", "1")
    assert first.exit_code == again.exit_code == 0, again.stderr


@pytest.mark.parametrize("variable, value, algorithms, unread", [
    ("NCCL_ALGO", "Tree", ["ring", "ring"], True),  # named algorithms run as named (fuzz k #065, #493)
    ("NCCL_ALGO", "Tree", ["ring", "auto"], False),  # b's pick is restricted: read
    ("NCCL_MAX_P2P_NCHANNELS", "1", ["ring", "auto"], True),  # send/recv only; jobs run AllReduces (#067)
    ("NCCL_NCHANNELS_PER_NET_PEER", "1", ["tree", "tree"], True),  # (#494)
    ("NCCL_PROTO", "Simple", ["ring", "ring"], False),  # NCCL's Ring takes its protocol from it: read
])
def test_jobs_say_which_nccl_variables_no_job_read(tmp_path, cli, variable, value, algorithms, unread):
    """A variable no job's AllReduce reads leaves the answer as it was and is named in one
    ``key_unread`` warning, as a scenario's runs say it; one that a job reads is not."""
    jobs = [{**job, "algorithm": algorithm} for job, algorithm in zip(JOBS, algorithms)]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "s", "topology": FABRIC, "jobs": jobs}))
    plain = json.loads(cli("run", tmp_path / "s.yaml", "--json", "-").stdout)
    result = cli("run", tmp_path / "s.yaml", "--json", "-", env={variable: value})
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    said = [w for w in document.get("warnings", []) if w["kind"] == "key_unread" and variable in w["message"]]
    assert len(said) == (1 if unread else 0), document.get("warnings")
    if unread:
        assert document["jobs"] == plain["jobs"] and f"warning key_unread: {variable}={value}" in result.stderr


@pytest.mark.parametrize("jobs, said", [
    ([{"name": "a", "gpus": 4, "size": "1 MiB", "algorithm": "ring"},
      {"name": "b", "gpus": 4, "size": "1 MiB", "algorithm": "tree"}], True),  # RCCL runs MSCCL for auto and direct
    ([{"name": "a", "gpus": 8, "size": "1 MiB"}], False)])  # auto on the 8 MI300X: MSCCL's file unset, ring without
def test_jobs_say_an_msccl_variable_no_job_reads(tmp_path, cli, jobs, said):
    """Fuzz round q (#455-#461): jobs never said RCCL_MSCCL_ENABLE changed nothing; now where
    every auto or direct job runs the same MSCCL file (or none) without it, and then every
    job's answer is the unset run's."""
    box = {"name": "m", "generate": {"kind": "full_mesh", "server": "amd-mi300x-platform"}}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "s", "topology": box, "jobs": jobs}))
    plain = json.loads(cli("run", tmp_path / "s.yaml", "--json", "-").stdout)
    result = cli("run", tmp_path / "s.yaml", "--json", "-", env={"RCCL_MSCCL_ENABLE": "0"})
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    unread = [w for w in document.get("warnings", []) if w["kind"] == "key_unread" and w["link"] == "RCCL_MSCCL_ENABLE"]
    assert len(unread) == int(said) and (document["jobs"] == plain["jobs"]) == said


AT_DEFAULTS = [("training", "dtype", "bf16", "fp8"), ("training", "grad_dtype", "fp32", "bf16"),
               ("training", "gpu_flops", "989 TFLOP/s", "900 TFLOP/s"),  # an H100's dense BF16 peak
               ("parallelism", "tp", 1, 2), ("parallelism", "ep", 1, None), ("parallelism", "fsdp", False, True),
               ("parallelism", "micro_batches", 1, 2), ("parallelism", "micro_batch_size", 1, 2),
               ("parallelism", "virtual_stages", 1, None),
               ("model", "experts", 1, None), ("model", "top_k", 1, None), ("model", "gated", True, False),
               ("workload", "dtype", "fp32", "bf16"),
               ("job", "algorithm", "auto", "ring"), ("job", "repeat", 1, 2), ("job", "start", "0 s", "1 us"),
               ("background", "period", "1 ms", "2 ms"), ("background", "seed", 0, 1)]


@pytest.mark.parametrize("where, key, default, other", AT_DEFAULTS, ids=[f"{w}.{k}" for w, k, _, _ in AT_DEFAULTS])
def test_a_key_written_at_its_default_is_said_to_change_nothing(where, key, default, other):
    """Fuzz round at, L2 (and review 84, L1): a training step's, a workload's or a job's key
    written at the value it takes without it changed nothing, unsaid, where an option or a
    placement at its default is said. Written so it answers as left out, and says so; at
    another value it says nothing of its default."""
    from simnet.run.scenario import run_scenario

    def scenario(value):
        def at(place: str) -> dict:
            return {key: value} if where == place and value is not None else {}

        # (dtype counts where activations cross a link: tp 2; interleaving needs stages)
        parallelism = {"pp": 2, "micro_batches": 2} if key == "virtual_stages" else {"tp": 2} if key == "dtype" else {}
        training = {**TRAINING, "model": {**TRAINING["model"], **at("model")},
                    "parallelism": {**parallelism, **at("parallelism")}, **at("training")}
        job = {"name": "a", "gpus": 2, "size": "1 MiB", **at("job")}
        inside = key == "seed"  # a background job's seed is its traffic's; its period, the job's
        background = {"name": "n", "background": {"pattern": "uniform", "load": "50%",
                                                  **(at("background") if inside else {})},
                      **({} if inside else at("background"))}
        workload = {"compute_time": "1 ms", "parameters": 1e6, **at("workload")}
        fabric = {**FABRIC, "generate": {**FABRIC["generate"], "gpus_per_host": 4}}  # (a seed draws among 6 free)
        return scenario_from_dict({"name": "s", "topology": fabric, **(
            {"jobs": [job, background]} if where in ("job", "background") else
            {"sizes": ["1 MiB"], "workload": workload} if where == "workload" else {"training": training})})

    def said(value):
        return [w for w in scenario(value).warnings if w.link.endswith(f".{key}") and (
            "is its default" in w.message or "what it takes without it" in w.message)]

    def answer(value):  # the result without what it says (a workload's runs carry the scenario's warnings)
        def unsaid(part):
            return {k: unsaid(v) for k, v in part.items() if k != "warnings"} if isinstance(part, dict) else \
                [unsaid(v) for v in part] if isinstance(part, list) else part
        return unsaid(run_scenario(scenario(value)).to_dict())

    assert answer(default) == answer(None)
    assert len(said(default)) == 1 and "so it changed nothing here" in said(default)[0].message
    assert not said(None) and (other is None or not said(other))


@pytest.mark.parametrize("parallelism, warned", [({"tp": 2, "pp": 2}, True), ({"tp": 2}, False)])
def test_a_training_grad_dtype_no_gradient_carries_is_warned(parallelism, warned):
    """Fuzz finding (k #131, #499): grad_dtype on a step without data parallelism (tp x pp is
    every GPU: dp 1) changed nothing, no gradient being reduced across GPUs, without a word,
    where dtype in the like case is warned. With dp 2 it sizes the gradient AllReduce."""
    from simnet.run.scenario import run_scenario

    def step(grad_dtype: str):
        training = {**TRAINING, "grad_dtype": grad_dtype, "parallelism": parallelism}
        return run_scenario(scenario_from_dict({"name": "s", "topology": FABRIC, "training": training})).to_dict()

    fp32, bf16 = step("fp32"), step("bf16")
    said = [w for w in bf16.get("warnings", []) if w["link"] == "training.grad_dtype"]
    assert bool(said) == warned and (not said or "grad_dtype changed nothing here" in said[0]["message"])
    assert (fp32["training"] == bf16["training"]) == warned


@pytest.mark.parametrize("where", ["scenario", "topology"])
def test_a_calibration_profile_that_is_a_folder_or_a_pipe_is_refused_for_what_it_is(tmp_path, cli, where):
    """Fuzz finding (k #507): a profile named by a folder or a FIFO was refused as missing
    ("no calibration profile"), which it is not; every other input says "not a regular file"."""
    import os

    fabric = "generate: {kind: nvswitch, gpus: 2}"
    if where == "scenario":
        (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {{name: t, {fabric}}}\nsize: 1 MiB\n"
                                         "calibration: p.cal.yaml\n")
    else:
        (tmp_path / "t.yaml").write_text(f"name: t\n{fabric}\ncalibration: p.cal.yaml\n")
        (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\nsize: 1 MiB\n")
    line = {"scenario": 4, "topology": 3}[where]
    file = tmp_path / ("s.yaml" if where == "scenario" else "t.yaml")
    for make in (os.mkdir, os.mkfifo):
        make(tmp_path / "p.cal.yaml")
        result = cli("run", tmp_path / "s.yaml")
        assert result.exit_code == 2 and result.stderr == (
            f"{file}:{line}: calibration: the calibration profile '{tmp_path / 'p.cal.yaml'}' is not a regular file "
            "(a directory, device or pipe)\n"), result.stderr
        (os.rmdir if make is os.mkdir else os.remove)(tmp_path / "p.cal.yaml")
    assert f"no calibration profile '{tmp_path / 'p.cal.yaml'}'" in cli("run", tmp_path / "s.yaml").stderr


@pytest.mark.parametrize("variable, meant", [("NCCL_PROTOCOL", "NCCL_PROTO"), ("NCCL_ALGORITHM", "NCCL_ALGO"),
                                             ("NCCL_MAX_CHANNELS", "NCCL_MAX_NCHANNELS"),
                                             ("NCCL_NVLS_ENABLED", "NCCL_NVLS_ENABLE"),
                                             ("NCCL_FOO", ""),  # like nothing any library reads: said alike
                                             ("NCCL_IB_TC", None),  # NCCL reads it (v2.30.7), near NCCL_IB_HCA
                                             # review: RCCL reads it (src/graph/paths.cc:828 at 0cbce2a7),
                                             # NCCL not: its own line (test below)
                                             ("NCCL_NCHANNELS_PER_PEER", None),
                                             ("NCCL_RINGS", None),  # review 65: RCCL reads it, near none
                                             ("NCCL_NVLS", "NCCL_NVLS_ENABLE"),  # the likest, not the longest
                                             ("NCCL_MSCCL_ENABLE", "RCCL_MSCCL_ENABLE"),
                                             ("RCCL_MSCCL_ENABLED", "RCCL_MSCCL_ENABLE"), ("RCCL_FOO", "")])
def test_a_misspelt_nccl_variable_is_warned_and_changes_nothing(tmp_path, cli, variable, meant):
    """Fuzz round k (#290-#293, #309, debatable): NCCL_PROTOCOL=Simple ran as if unset without a
    word, as NCCL would run it; whoever set it meant NCCL_PROTO. A variable NCCL 2.30.7 does not
    read but spelt nearly as one simnet reads is warned, naming the one it resembles; the answer
    stays NCCL's, the one without it. A real NCCL variable (NCCL_IB_TC) is not a misspelling.
    Fuzz round ak: one like nothing either library reads (NCCL_FOO, RCCL_FOO) was taken in
    silence; it is said alike, naming none."""
    path, _ = _box_sweep(tmp_path)
    plain = json.loads(cli("run", path, "--json", "-").stdout)
    result = cli("run", path, "--json", "-", env={variable: "Simple"})
    assert result.exit_code == 0 and json.loads(result.stdout)["runs"] == plain["runs"]
    said = [line for line in result.stderr.splitlines() if line.startswith("warning env_misspelt")
            and "read by RCCL 2.21.5 only" not in line]
    library = "NCCL or RCCL" if variable.startswith("NCCL_") else "RCCL"
    guess = f"; did you mean {meant}?" if meant else ":"
    assert said == ([f"warning env_misspelt: {variable}=Simple is not a variable {library} reads (NCCL 2.30.7, RCCL "
                     f"2.21.5){guess} {library} ignores it, and so did this run"] if meant is not None else [])


@pytest.mark.parametrize("env, said", [
    # fuzz round m (#020, debatable): NCCL_TOPO_FILE, the XML NCCL reads the machine from (graph/topo.cc:1774,
    # v2.30.7; Azure's images set it), was taken in silence
    ({"NCCL_TOPO_FILE": "/opt/microsoft/ndv5-topo.xml"},
     "warning env_unread: NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml names the XML NCCL reads the machine from; "
     "simnet reads the machine from its topology file and did not open this one (write there what the XML "
     "describes)"),
    # fuzz round u (#020): variables NCCL 2.30.7 reads (nccl_names) that simnet neither follows nor refuses
    ({"NCCL_IB_TIMEOUT": "22", "NCCL_NET_GDR_READ": "0"},
     "warning env_unread: NCCL_IB_TIMEOUT=22, NCCL_NET_GDR_READ=0 are read by NCCL and not modelled by "
     "simnet: simnet's answers are the ones without them (on the machine, a variable that tunes NCCL's "
     "transports may change the time)"),
    # fuzz round al (L2): NCCL_ALGO= (empty) ran as unset, as NCCL reads it, where an empty NCCL_FOO= is said
    ({"NCCL_ALGO": "", "NCCL_IB_TIMEOUT": " "},
     "warning env_unread: NCCL_ALGO='', NCCL_IB_TIMEOUT='' are set to nothing: NCCL (and RCCL) read an empty "
     "value as unset, and so did this run"),
    # fuzz round ak: RCCL_KERNEL_COLL_TRACE_ENABLE on H100s was said to be "read by NCCL (or RCCL)"
    ({"RCCL_KERNEL_COLL_TRACE_ENABLE": "1"},
     "warning env_unread: RCCL_KERNEL_COLL_TRACE_ENABLE=1 is read by RCCL (AMD GPUs) and not modelled by simnet: "
     "simnet's answers are the ones without it (on the machine, a variable that tunes RCCL's transports may "
     "change the time)")], ids=["topo-file", "nccl-reads", "set-to-nothing", "rccl-only"])
def test_a_variable_simnet_does_not_follow_is_said_and_changes_nothing(tmp_path, cli, env, said):
    """Variables simnet does not follow were taken in silence (the rounds above): the answer is
    the one without them (the same JSON), and one line says why, naming the library that reads
    them."""
    path, _ = _box_sweep(tmp_path)
    plain = json.loads(cli("run", path, "--json", "-").stdout)
    result = cli("run", path, "--json", "-", env=env)
    assert result.exit_code == 0 and json.loads(result.stdout)["runs"] == plain["runs"]
    assert result.stderr.splitlines() == [said]


@pytest.mark.parametrize("algorithms, unread", [(["ring"], True), (["ring", "auto"], False)])
def test_compare_says_nccl_algo_changed_nothing_where_every_option_names_its_algorithm(tmp_path, cli, algorithms,
                                                                                        unread):
    """Fuzz round l (#373): compare under NCCL_ALGO=Ring with named ring in every variant said
    nothing, where simnet run warns key_unread."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "name": "c", "topology": {"name": "t", "generate": {"kind": "nvswitch", "gpus": 4}}, "sizes": ["1 MiB"],
        "algorithms": algorithms, "variants": [{"name": "a", "set": {"topology.generate.gpus": 4}},
                                               {"name": "b", "set": {"topology.generate.gpus": 2}}]}))
    result = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png", env={"NCCL_ALGO": "Ring"})
    assert result.exit_code == 0, result.stderr
    said = " ".join(result.stdout.split())
    assert ("warning key_unread: NCCL_ALGO=Ring restricts what auto picks, and every option names ring, no auto, "
            "so it changed nothing here" in said) == unread


def test_sweep_says_nccl_algo_changed_nothing_beside_named_algorithms(tmp_path, cli):
    """Fuzz round l (#169, #418, #420, #422): a sweep of named algorithms under NCCL_ALGO said
    nothing, on the console or in its records, where simnet run warns key_unread."""
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({
        "name": "s", "topology": {"name": "t", "generate": {"kind": "nvswitch", "gpus": 4}}, "sizes": ["1 MiB"],
        "algorithms": ["ring", "tree"]}))
    result = cli("sweep", tmp_path / "s.yaml", "--gpus", "2,4", "--out", tmp_path / "o", "--workers", "1",
                 env={"NCCL_ALGO": "Ring"})
    assert result.exit_code == 0, result.stderr
    assert "warning key_unread: NCCL_ALGO=Ring restricts what auto picks, and every point names ring, tree, no auto" \
        in " ".join(result.stdout.split())
    assert all("key_unread" in size["warnings"] for record in _records(tmp_path / "o") for size in record["sizes"])


@pytest.mark.parametrize("gpu, variable, value", [("h100", "NCCL_ALGO", "Ring"), ("mi300x", "NCCL_MIN_NCHANNELS", "2")])
def test_sweep_records_say_a_variable_changed_nothing_exactly_where_the_point_is_the_unset_one(tmp_path, cli, gpu,
                                                                                               variable, value):
    """Fuzz round o (#331, #332): an all_gather auto sweep under NCCL_ALGO=Ring and an MI300X
    ring sweep under NCCL_MIN_NCHANNELS=2 listed no key_unread in records equal to the unset
    sweep's: now each size of each record lists it exactly where it is the unset one."""
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({
        "name": "s", "topology": {"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2,
                                                            "gpus_per_host": 4, "gpu": gpu}},
        "sizes": ["96 KiB", "300 MiB"], "collective": "all_gather" if gpu == "h100" else "allreduce",
        "algorithms": ["auto" if gpu == "h100" else "ring"]}))
    runs = {}
    for name, env in (("plain", {}), ("steered", {variable: value})):
        result = cli("sweep", tmp_path / "s.yaml", "--gpus", "8,16", "--out", tmp_path / name, "--workers", "1",
                     env=env)
        assert result.exit_code == 0, result.stderr
        runs[name] = _records(tmp_path / name)
    said = []
    for plain, steered in zip(runs["plain"], runs["steered"]):
        for before, after in zip(plain["sizes"], steered["sizes"]):
            same = {k: v for k, v in before.items() if k not in ("warnings", "unread")} == {
                k: v for k, v in after.items() if k not in ("warnings", "unread")}
            said.append(("key_unread" in after["warnings"]) == (variable in after["unread"]) == same)
    assert said and all(said)


def test_compare_says_what_the_file_makes_moot(tmp_path, cli):
    """Fuzz round l (#427-#429): compare showed none of the key_unread warnings simnet run shows
    (a one-rack leaf_spine's spines)."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "name": "c", "topology": {"name": "t", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                            "gpus_per_host": 2, "spines": 4}},
        "sizes": ["1 MiB"], "algorithms": ["ring"],
        "variants": [{"name": "a", "set": {"topology.generate.gpus_per_host": 2}},
                     {"name": "b", "set": {"topology.generate.gpus_per_host": 1}}]}))
    result = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
    assert result.exit_code == 0, result.stderr
    assert "warning key_unread: topology.generate.spines" in result.stdout


@pytest.mark.parametrize("gpu, variable, value, algorithm, size, unread", [
    ("a100", "NCCL_NVLS_ENABLE", "0", "ring", 2**20, True),  # fuzz k #258: no NVLS on A100s: NCCL sees the same
    ("h100", "NCCL_PROTO", "Simple", "ring", 2**30, True),  # NCCL's ring runs Simple at 1 GiB anyway
    ("h100", "NCCL_PROTO", "Simple", "ring", 2**20, False),  # at 1 MiB it would run LL: the plan changes
    ("h100", "NCCL_MAX_NCHANNELS", "2", "ring", 2**30, False),  # fewer channels
    ("h100", "NCCL_NVLS_ENABLE", "0", "ring", 2**20, True),  # a ring reads no NVLink SHARP (fuzz m #058)
    ("h100", "NCCL_NVLS_ENABLE", "0", "nvls", 2**20, None),  # NVLS itself: refused, as NCCL would not run it
])
def test_a_followed_variable_without_which_the_plan_is_the_same_says_so(gpu, variable, value, algorithm, size,
                                                                         unread):
    """Fuzz round k (#258, debatable): a variable simnet follows that left the run as it was said
    nothing. Where the model's plan without it is the same (protocol, options, channels, the
    system NCCL sees), the same schedule runs at the same timing: the run says key_unread; where
    the plan differs nothing is said, though the run may be alike."""
    import simnet

    box = simnet.topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": gpu}})
    if unread is None:
        with pytest.raises(ValueError, match=variable):
            simnet.simulate(box, algorithm, size, env={variable: value})
        return
    with_it, without = (simnet.simulate(box, algorithm, size, env=env) for env in ({variable: value}, {}))
    said = [w for w in with_it.warnings if w.kind == "key_unread" and w.link == variable]
    assert bool(said) == unread
    if unread:
        assert (with_it.time_s, with_it.protocol) == (without.time_s, without.protocol)
        assert "runs the same plan without it" in said[0].message


@pytest.mark.parametrize("size, auto_said", [("1 GiB", True), ("1 MiB", False)])
def test_auto_does_not_take_over_a_named_run_s_changed_nothing(tmp_path, cli, size, auto_said):
    """The review of the first try: auto taking over a named ring's result took its key_unread
    too, where the variable steered auto's pick. auto judges its own: on A100s under
    NCCL_PROTO=Simple at 1 GiB NCCL picks the ring on Simple either way (said, and the same
    answer as unset); at 1 MiB the ring is Simple only under it (not said, the answer moves)."""
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({
        "name": "s", "topology": {"name": "t", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": "a100"}},
        "sizes": [size], "algorithms": ["ring", "auto"]}))
    steered, plain = (json.loads(cli("run", tmp_path / "s.yaml", "--json", "-", env=env).stdout)["runs"]
                      for env in ({"NCCL_PROTO": "Simple"}, {}))
    said = {("auto" if r.get("auto") else r["algorithm"]): [w["link"] for w in r["warnings"]
                                                            if w["kind"] == "key_unread"] for r in steered}
    assert said == {"ring": ["NCCL_PROTO"] if auto_said else [], "auto": ["NCCL_PROTO"] if auto_said else []}
    auto, unset = (next(r for r in runs if r.get("auto")) for runs in (steered, plain))
    assert (auto["time_s"] == unset["time_s"]) == auto_said


def test_an_nccl_name_only_rccl_reads_is_said_on_nvidia_gpus():
    """The second review: NCCL_NCHANNELS_PER_PEER (RCCL 2.21.5's, graph/paths.cc:828; NCCL
    2.30.7 reads no such name) on NVIDIA GPUs ran without a word once RCCL's names counted as
    read; it is said, with the variable NCCL does read."""
    from simnet.run.nccl_env import misspelt

    assert misspelt({"NCCL_NCHANNELS_PER_PEER": "4"}) == [
        "NCCL_NCHANNELS_PER_PEER=4 is read by RCCL 2.21.5 only (simnet refuses it where RCCL runs), not by NCCL "
        "2.30.7; did you mean NCCL_NCHANNELS_PER_NET_PEER? NCCL ignores it, and so did this run"]


@pytest.mark.parametrize("model, refused", [("rccl", True), ("ideal", False)])
def test_a_refusal_is_its_one_line_and_a_misspelling_is_said_after_the_work(tmp_path, cli, model, refused):
    """Fuzz round m (#168-#177, #027): on MI300X under RCCL, NCCL_NCHANNELS_PER_PEER (which RCCL
    reads) was first warned "On NVIDIA GPUs NCCL ignores it", then refused: two lines, the first
    false. The warnings of misspelt variables now follow the command's work, so a refusal is its
    one line; where the run takes the variable (model ideal runs no library) it is said, true."""
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({
        "name": "s", "topology": {"name": "t", "generate": {"kind": "full_mesh", "server": "amd-mi300x-platform"}},
        "sizes": ["1 MiB"], "algorithms": ["ring"], "model": model}))
    result = cli("run", tmp_path / "s.yaml", env={"NCCL_NCHANNELS_PER_PEER": "2"})
    lines = result.stderr.strip().splitlines()
    if refused:
        assert result.exit_code == 2 and len(lines) == 1 and "NCCL_NCHANNELS_PER_PEER=2" in lines[0]
    else:
        assert result.exit_code == 0 and lines[-1].startswith("warning env_misspelt: NCCL_NCHANNELS_PER_PEER=2")
        assert "so did this run" in lines[-1]


def test_compare_refuses_a_variant_s_algorithms_it_would_not_run(tmp_path, cli):
    """The second review: a variant's set: {algorithms: [auto]} ran the file's ring instead,
    without a word."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "name": "c", "topology": {"name": "t", "generate": {"kind": "nvswitch", "gpus": 4}}, "sizes": ["1 MiB"],
        "algorithms": ["ring"], "variants": [{"name": "a", "set": {"algorithms": ["auto"]}},
                                             {"name": "b", "set": {"topology.generate.gpus": 2}}]}))
    result = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "variants[0].set.algorithms: compare runs every option with the file's algorithms (ring)" in result.stderr
    assert not (tmp_path / "c.png").exists()


@pytest.mark.parametrize("gpus, model, step_reads_it", [
    (8, {"layers": 2, "hidden": 2048, "heads": 16, "ffn": 8192, "sequence": 512, "vocabulary": 1000}, True),
    (4, TRAINING["model"], False)])  # 4 GPUs of a tiny model: NCCL picks Ring for its exchanges anyway
def test_nccl_algo_beside_a_training_step_is_said_unread_only_where_the_step_ignores_it(tmp_path, cli, gpus, model,
                                                                                          step_reads_it):
    """The second review: a training step's exchanges run NCCL's pick, so NCCL_ALGO beside a
    named ring changed the step (here 2.41 -> 2.99 ms on 8 H100s), and run said it changed
    nothing. Fuzz round o (#255): a named ring beside auto never said it, though it runs as
    named. Now a named run says it, taken back where the step beside it reads it."""
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({
        "name": "s", "topology": {"name": "t", "generate": {"kind": "nvswitch", "gpus": gpus, "gpu": "h100"}},
        "sizes": ["1 MiB"], "algorithms": ["ring"], "training": {**TRAINING, "model": model}}))
    plain = json.loads(cli("run", tmp_path / "s.yaml", "--json", "-").stdout)
    result = cli("run", tmp_path / "s.yaml", "--json", "-", env={"NCCL_ALGO": "Ring"})
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["training"] != plain["training"]) == step_reads_it
    warnings = [w for run in document["runs"] for w in run["warnings"]] + document.get("warnings", [])
    assert [w["message"] for w in warnings if w["link"] == "NCCL_ALGO"] == ([] if step_reads_it else [
        "NCCL_ALGO=Ring changed nothing here: it restricts what auto picks, and ring runs as named"])


def test_a_sweep_refuses_a_variable_before_it_looks_at_out(tmp_path, cli):
    """Fuzz round l (#404): a refused variable meeting a --out of an earlier sweep was told
    "use another --out", not why the variable is refused."""
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({
        "name": "s", "topology": {"name": "t", "generate": {"kind": "nvswitch", "gpus": 4}}, "sizes": ["1 MiB"],
        "algorithms": ["ring"]}))
    out = tmp_path / "o"
    assert cli("sweep", tmp_path / "s.yaml", "--gpus", "2,4", "--out", out, "--workers", "1").exit_code == 0
    before = (out / "results.jsonl").read_text()
    result = cli("sweep", tmp_path / "s.yaml", "--gpus", "2,4", "--out", out, "--workers", "1",
                 env={"NCCL_IB_QPS_PER_CONNECTION": "2"})
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "NCCL_IB_QPS_PER_CONNECTION=2 changes the transports" in result.stderr
    assert (out / "results.jsonl").read_text() == before


@pytest.mark.parametrize("gpu, variable, value, unread", [
    ("a100", "NCCL_NVLS_ENABLE", "0", True),  # no NVLink SHARP on A100s: NCCL sees the same system
    ("a100", "NCCL_MAX_NCHANNELS", "1", False),  # one channel instead of NCCL's: slower
    ("h100", "NCCL_NVLS_ENABLE", "0", False),  # job b's pick was NVLS
    # fuzz o (#264, #325-#327): beside auto jobs, NCCL_ALGO and NCCL_PROTO where NCCL picks alike without them
    ("a100", "NCCL_ALGO", "Ring,Tree", True),  # b's pick on 6 A100s is Ring either way
    ("h100", "NCCL_ALGO", "Ring", False),  # b's pick was NVLS
    ("a100", "NCCL_PROTO", "Simple", True),  # 64 MiB and 1 GiB rings run Simple either way
])
def test_jobs_say_a_followed_variable_no_job_s_plan_reads(tmp_path, cli, gpu, variable, value, unread):
    """Jobs ran a variable that steers NCCL's plan (NVLS, channels) without a word where no
    job's plan moved, where a scenario's run says so: now one ``key_unread`` exactly where
    every job decides alike without it, and then every job's answer is the unset run's."""
    box = {"name": "box", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": gpu}}
    jobs = [{"name": "a", "gpus": 2, "size": "64 MiB", "algorithm": "ring"},
            {"name": "b", "gpus": 6, "size": "1 GiB"}]  # NCCL's pick on 6 H100: NVLS
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "s", "topology": box, "jobs": jobs}))
    plain = json.loads(cli("run", tmp_path / "s.yaml", "--json", "-").stdout)
    result = cli("run", tmp_path / "s.yaml", "--json", "-", env={variable: value})
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    said = [w for w in document.get("warnings", []) if w["kind"] == "key_unread" and w["link"] == variable]
    assert len(said) == (1 if unread else 0), document.get("warnings")
    assert (document["jobs"] == plain["jobs"]) == unread


@pytest.mark.parametrize("variable, value", [("NCCL_ALGO", "Ring"), ("NCCL_ALGO", "Tree"), ("NCCL_NVLS_ENABLE", "0"),
                                             ("NCCL_MAX_NCHANNELS", "1")])
def test_a_training_step_says_an_nccl_variable_that_changed_none_of_its_exchanges(monkeypatch, variable, value):
    """A training step ran NCCL_ALGO and the variables that steer NCCL's plan without a word
    where no exchange moved (its exchanges run NCCL's pick). Now ``key_unread`` exactly where
    the step without the variable is the same, exchange by exchange."""
    from simnet.run.scenario import run_scenario

    scenario = scenario_from_dict({"name": "s", "topology": FABRIC, "training": TRAINING})
    plain = run_scenario(scenario).to_dict()
    monkeypatch.setenv(variable, value)
    steered = run_scenario(scenario).to_dict()
    said = [w for w in steered.get("warnings", []) if w["kind"] == "key_unread" and w["link"] == variable]
    unchanged = steered["training"] == plain["training"]
    assert len(said) == (1 if unchanged else 0), steered.get("warnings")
    assert not said or "changed nothing in the training step" in said[0]["message"]
    if (variable, value) in (("NCCL_ALGO", "Ring"), ("NCCL_ALGO", "Tree")):  # on 2 x 2 GPUs NCCL picks Ring anyway
        assert unchanged == (value == "Ring")


_STEERED = {"a100": {"kind": "nvswitch", "gpus": 8, "gpu": "a100"},
            "h100": {"kind": "nvswitch", "gpus": 8, "gpu": "h100"},
            "2x8 h100": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 8, "gpu": "h100"},
            "2x8 h100 sharp": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 8,
                               "gpu": "h100", "sharp": True},
            "mi300x": {"kind": "full_mesh", "server": "amd-mi300x-platform"},
            "2x8 mi300x": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 8, "gpu": "mi300x"},
            "1x8 h100 sharp": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 1, "gpus_per_host": 8,
                               "gpu": "h100", "sharp": True}}


@settings(max_examples=30, deadline=None)
@given(box=st.sampled_from(sorted(_STEERED)), algorithm=st.sampled_from(["ring", "tree", "auto"]),
       size=st.sampled_from([64 * 1024, 3 * 2**20, 96 * 2**20]),
       variable=st.sampled_from([("NCCL_MAX_NCHANNELS", "2"), ("NCCL_MAX_NCHANNELS", "24"),
                                 ("NCCL_MAX_NCHANNELS", "64"), ("NCCL_MIN_NCHANNELS", "2"),
                                 ("NCCL_MIN_NCHANNELS", "16"), ("NCCL_MIN_NCHANNELS", "32"),
                                 ("NCCL_NVLS_ENABLE", "0"), ("NCCL_COLLNET_ENABLE", "0"), ("NCCL_COLLNET_ENABLE", "1"),
                                 ("NCCL_PROTO", "Simple"), ("NCCL_PROTO", "LL128"), ("RCCL_LL128_FORCE_ENABLE", "1"),
                                 ("RCCL_LL128_FORCE_ENABLE", "0"), ("NCCL_ALGO", "Ring"), ("NCCL_ALGO", "^NVLS"),
                                 ("NCCL_ALGO", "Ring,Tree")]))
def test_a_followed_variable_said_to_change_nothing_changed_nothing(box, algorithm, size, variable):
    """Fuzz round m (#049-#080, #089, #105, #058): NCCL_MIN/MAX_NCHANNELS and NCCL_NVLS_ENABLE
    that left a run as it was were not said where the plan held the system NCCL sees whole (its
    channel bounds, its NVLink SHARP), and `auto` never. Now the plan is compared as the run
    reads it; whenever a run says a variable changed nothing, the run without it is the same
    (its algorithm, protocol, time and every link). Fuzz round o (#248-#332): under RCCL the
    channel bounds, and NCCL_ALGO beside auto, were never said: whenever a named run does not
    say it, the run without it differs (in its algorithm, protocol, time, channels or links).
    auto compares its candidates' plans, not their times, which it would have to simulate: a
    candidate on other channels in the same time keeps the variable (one case in 771 of this
    grid: 8 MI300X, 64 KiB, NCCL_MAX_NCHANNELS=24, where the tree candidate runs 24 channels
    instead of 32)."""
    from simnet import simulate

    topo = topology_from_dict({"name": box, "generate": _STEERED[box]})
    name, value = variable
    try:
        steered = simulate(topo, algorithm, size, env={name: value})
    except ValueError:  # the variable leaves the named algorithm nothing to run (it is read)
        return
    plain = simulate(topo, algorithm, size, env={})
    said = [w for w in steered.warnings if w.kind == "key_unread" and w.link == name]

    def answer(run):
        return (run.algorithm, run.protocol, run.time_s, run.channels, run.nccl_channels,
                (run.auto or {}).get("candidates"), (run.auto or {}).get("nccl_pick"),
                [(r.src, r.dst, r.bytes, r.peak_utilization) for r in run.links])

    if said or algorithm != "auto":
        assert bool(said) == (answer(steered) == answer(plain)), (said, answer(steered)[:5], answer(plain)[:5])


@pytest.mark.parametrize("algorithms, variable, value", [
    (["direct", "auto"], "NCCL_MAX_NCHANNELS", "4"), (["direct", "auto"], "NCCL_MIN_NCHANNELS", "2"),
    (["direct", "auto"], "NCCL_ALGO", "Ring,Tree"), (["ring", "auto"], "RCCL_MSCCL_ENABLE", "0"),
    (["direct", "auto"], "NCCL_PROTO", "Simple"),
    # fuzz p #361: at 6 MiB RCCL runs MSCCL's Simple file unset (8 channels), in the same time: not the same answer
    (["direct"], "RCCL_MSCCL_ENABLE", "0")])
def test_auto_beside_the_run_it_picks_judges_its_own_answer(algorithms, variable, value):
    """The review of round o's fixes: auto took the named run it picks (MSCCL's direct on one
    MI300X host) with that run's "changed nothing" warnings, which said nothing of auto's
    candidates or pick: NCCL_MAX_NCHANNELS=4 was said to change nothing of auto though its
    tree candidate moved, RCCL_MSCCL_ENABLE=0 though auto went from MSCCL to ring, and a
    variable was said twice. Each run now says it exactly when its answer is the unset one's."""
    from simnet.run.scenario import run_scenario

    scenario = {"name": "s", "topology": {"name": "m", "generate": {"kind": "full_mesh", "server": "amd-mi300x-platform"}},
                "sizes": ["64 KiB", "6 MiB"], "algorithms": algorithms}
    plain = run_scenario(scenario_from_dict(scenario)).to_dict()["runs"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(variable, value)
        steered = run_scenario(scenario_from_dict(scenario)).to_dict()["runs"]
    for before, after in zip(plain, steered, strict=True):
        said = [w for w in after["warnings"] if w["kind"] == "key_unread" and w["link"] == variable]
        answer = [{k: v for k, v in run.items() if k != "warnings"} for run in (before, after)]
        for run in answer:
            run["auto"] = {k: v for k, v in (run.get("auto") or {}).items() if not k.startswith("nccl_")
                           or k == "nccl_pick"}
        assert len(said) <= 1 and bool(said) == (answer[0] == answer[1]), (after["algorithm"], said)


@pytest.mark.parametrize("box, algorithm, variable, said", [
    ("2x8 h100", "ring", ("NCCL_MAX_NCHANNELS", "24"), True),  # NCCL opens 16 here: at most 24 changes nothing
    ("2x8 h100", "ring", ("NCCL_MAX_NCHANNELS", "2"), False),
    ("h100", "ring", ("NCCL_NVLS_ENABLE", "0"), True),  # a ring reads no NVLink SHARP
    ("a100", "auto", ("NCCL_NVLS_ENABLE", "0"), True),  # no NVLS on A100s: NCCL picks the same
    ("h100", "auto", ("NCCL_NVLS_ENABLE", "0"), False),  # NCCL's pick was NVLS
    # the review: NCCL picks nvls_tree either way, but CollNet leaves auto's candidates (its advice)
    ("2x8 h100 sharp", "auto", ("NCCL_COLLNET_ENABLE", "0"), False),
    # fuzz n: unset, simnet takes SHARP to be in use, as with 1 (#091-#150); RCCL's LL128 not chosen (#155)
    ("2x8 h100 sharp", "auto", ("NCCL_COLLNET_ENABLE", "1"), True),
    ("mi300x", "ring", ("RCCL_LL128_FORCE_ENABLE", "1"), True),
    # fuzz o (#248-#332): RCCL's channel bounds, where the channels RCCL opens (and its MSCCL file) are the same
    ("2x8 mi300x", "ring", ("NCCL_MIN_NCHANNELS", "2"), True),
    ("2x8 mi300x", "ring", ("NCCL_MAX_NCHANNELS", "7"), False),
    # fuzz o (#255, #323): NCCL_ALGO beside auto, where NCCL's pick and candidates are the same; a named ring
    ("2x8 h100", "auto", ("NCCL_ALGO", "Ring,Tree,NVLS,NVLSTree,CollNetDirect,CollNetChain,PAT"), True),
    ("2x8 h100", "auto", ("NCCL_ALGO", "Ring"), False),
    ("2x8 h100", "ring", ("NCCL_ALGO", "Tree"), True),
    # fuzz p (#098-#354): NCCL has no CollNet on one host (init.cc:1468-1475), SHARP switches or not
    ("1x8 h100 sharp", "auto", ("NCCL_COLLNET_ENABLE", "0"), True),
    ("1x8 h100 sharp", "nvls", ("NCCL_COLLNET_ENABLE", "0"), True),
])
def test_said_where_a_followed_variable_changes_nothing(box, algorithm, variable, said):
    from simnet import simulate

    topo = topology_from_dict({"name": box, "generate": _STEERED[box]})
    name, value = variable
    run = simulate(topo, algorithm, 96 * 2**20, env={name: value})
    assert any(w.kind == "key_unread" and w.link == name for w in run.warnings) == said


@pytest.mark.parametrize("variable", ["nccl_algo", "Nccl_Proto", "nccl_nvls_enable", "NCCL_algo", "NCCL_Nvls_Enable"])
def test_an_nccl_variable_in_other_letters_case_is_said_to_be_ignored(tmp_path, cli, variable):
    """Fuzz round m (#015, #016, debatable): nccl_algo=Ring ran as unset without a word; NCCL
    reads its variables with getenv, which is case-sensitive, so it ignores them too."""
    path, _ = _box_sweep(tmp_path)
    plain = json.loads(cli("run", path, "--json", "-").stdout)
    result = cli("run", path, "--json", "-", env={variable: "0"})
    assert result.exit_code == 0 and json.loads(result.stdout)["runs"] == plain["runs"]
    assert f"warning env_misspelt: {variable}=0 is not {variable.upper()}:" in result.stderr


@pytest.mark.parametrize("gpu, taken_back", [("h100", True), ("a100", False)])
def test_a_run_beside_a_training_step_does_not_say_what_the_step_reads_changed_nothing(monkeypatch, gpu,
                                                                                          taken_back):
    """The review of round m's fixes: beside a training step (tp 8 on one DGX), a named ring
    said NCCL_NVLS_ENABLE=0 changed nothing while the step's TP AllReduces, NCCL's pick, went
    from NVLS to the ring and the step took 6 ms longer. A run's "changed nothing" of a
    variable the step reads is taken back (on A100s the step does not read it: kept)."""
    from simnet.run.scenario import run_scenario

    scenario = scenario_from_dict({
        "name": "s", "topology": {"name": "box", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": gpu}},
        "sizes": ["64 MiB"], "algorithms": ["ring"],
        "training": {"model": "llama3_8b", "efficiency": 0.5, "parallelism": {"tp": 8, "micro_batches": 1}}})
    plain = run_scenario(scenario).to_dict()
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    steered = run_scenario(scenario).to_dict()
    said = [w for run in steered["runs"] for w in run["warnings"] if w["link"] == "NCCL_NVLS_ENABLE"]
    assert (steered["training"] != plain["training"]) == taken_back
    assert bool(said) != taken_back


@pytest.mark.parametrize("algorithm, chunk", [("ring", "1 MiB"), ("ring", "256 MiB"), ("tree", "1 MiB"),
                                              ("tree", "256 MiB")])
def test_a_chunk_size_that_cuts_no_other_pieces_is_said_to_change_nothing(algorithm, chunk):
    """Fuzz round m (#209, #400): chunk_size 1 MiB, 2 MiB or 256 MiB on a ring gave the answer
    of leaving it out (NCCL's ring keeps one piece per step) without a word. Said exactly
    where the run without it is the same; a tree pipelines in chunk_size's pieces: it moves."""
    from simnet import simulate, units

    topo = topology_from_dict({"name": "t", "generate": _STEERED["2x8 h100"]})
    given = simulate(topo, algorithm, 3 * 2**20, chunk_size=units.parse_size(chunk))
    plain = simulate(topo, algorithm, 3 * 2**20)
    said = [w for w in given.warnings if w.kind == "option_unread" and w.link == "options.chunk_size"]
    assert bool(said) == (given.time_s == plain.time_s)
    assert bool(said) == (algorithm == "ring")


@pytest.mark.parametrize("generate, said", [({"kind": "nvswitch", "gpus": 4, "gpu": "a100"}, True),
                                            ({"kind": "pcie", "gpus": 4, "gpu": "l40s"}, False)])
def test_a_chunk_size_no_candidate_of_auto_feels_is_said_to_change_nothing(generate, said):
    """Fuzz round am, M2: ``auto`` judged no option it was given. A chunk_size that cuts no
    candidate's pieces otherwise (four A100 on NVSwitch: NCCL's Tree inside one node is a chain
    pipelined in NCCL's own pieces) is said, exactly where every candidate's time is the same."""
    from simnet import simulate

    topo = topology_from_dict({"name": "t", "generate": generate})
    given, plain = simulate(topo, "auto", 3 * 2**20, chunk_size=2**20), simulate(topo, "auto", 3 * 2**20)
    told = [w.message for w in given.warnings if w.kind == "option_unread" and w.link == "options.chunk_size"]
    assert bool(told) == said == (given.auto["candidates"] == plain.auto["candidates"])
    assert not told or "NCCL's pick and every candidate auto weighs (tree, ring) cut the same pieces" in told[0]


@pytest.mark.parametrize("algorithm", ["ring", "tree", "nvls_tree", "halving_doubling", "auto"])
def test_channels_as_many_as_run_without_them_are_said_to_change_nothing(algorithm):
    """Fuzz round v (observation ch4): ``options.channels: 4`` on two hosts of 4 H100 is what
    NCCL's algorithms run there without it (4 channels standing for NCCL's 16): the same
    answer without a word. Said exactly where the run without it is the same; 2 channels
    halve the rate and move it. halving-doubling takes no channels: said of every value
    (simulate's API took it in silence; a scenario refuses it where no algorithm takes it)."""
    from simnet import simulate

    topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                         "gpus_per_host": 4, "gpu": "h100"}})
    plain = simulate(topo, algorithm, 64 * 2**20)
    for channels in (2, 4):
        given = simulate(topo, algorithm, 64 * 2**20, channels=channels)
        said = [w.message for w in given.warnings if w.kind == "option_unread" and w.link == "options.channels"]
        if plain.channels is None:
            assert given.time_s == plain.time_s and said == [
                "options.channels changed nothing here: halving_doubling takes no channels (simnet algorithms lists "
                "what each takes)"]
            continue
        if algorithm == "auto":  # fuzz round am, M2: said where no candidate auto weighs moves
            unmoved = given.auto["candidates"] == plain.auto["candidates"]
            assert bool(said) == unmoved == (channels == 4), channels
            assert not said or said[0].startswith(f"options.channels {channels} changed nothing here: NCCL's pick "
                                                  f"and every candidate auto weighs ({', '.join(plain.auto['candidates'])})")
            continue
        assert bool(said) == (given.time_s == plain.time_s) == (channels == plain.channels), channels
        if said:
            assert said[0].startswith(f"options.channels {channels} changed nothing here: {algorithm} runs "
                                      f"{plain.channels} channels")


@pytest.mark.parametrize("algorithm, options, said", [
    ("hierarchical", {"group_by": "node", "inner": "tree"}, ["options.group_by"]),  # unset inner tries both
    ("hierarchical", {"group_by": "host"}, ["options.group_by"]),  # round x R7: each host its own node
    ("ps", {"ps_servers": 1, "message_overhead": 0.0}, ["options.message_overhead", "options.ps_servers"]),
    ("ring", {"exact": False}, ["options.exact"]),
    ("ps", {"ps_servers": 2, "message_overhead": 1e-6}, []),
    ("ps", {"ps_server": "r0h0-gpu0"}, ["options.ps_server"]),  # round x R7: rank 0 serves without it
    ("ps", {"ps_server": ["r0h0-gpu0"]}, ["options.ps_server"]),
    ("ps", {"ps_server": "r0h0-gpu1"}, []),
    ("ps", {"ps_server": ["r0h0-gpu0", "r0h0-gpu1"]}, []),  # two servers, where one serves without it
    ("tree", {"chunk_size": 4 * 2**20}, []),  # round x R1: the builder's 4 MiB is not NCCL's chunk, which the plan fills
    ("nvls_tree", {"chunk_size": 128 * 2**10}, [])])
def test_options_written_at_their_own_default_are_said_to_change_nothing(algorithm, options, said):
    """Fuzz round w F9: group_by: node, ps_servers: 1, message_overhead: 0 us or exact: false
    give the run without them, without a word, where channels at their count are said to.
    Said of the value the algorithm takes without it (the model's plan's, else its builder's
    default); hierarchical's inner is not one (unset, both ways between groups run), nor a
    tree's chunk_size (round x R1: NCCL's chunk, 2.02 against 2.92 ms at 256 MiB, was said to
    be the default)."""
    from simnet import simulate

    topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                         "gpus_per_host": 4}})
    given = simulate(topo, algorithm, 2**24, **options)
    assert sorted(w.link for w in given.warnings if w.kind == "option_unread" and "own default" in w.message) == said
    if said:
        plain = {k: v for k, v in options.items() if f"options.{k}" not in said}
        assert given.time_s == simulate(topo, algorithm, 2**24, **plain).time_s


@pytest.mark.parametrize("server, said", [("ps0", True), ("worker0", False)])
def test_ps_server_naming_the_parameter_server_of_the_fabric_is_said_to_change_nothing(server, said):
    """Fuzz round x R7: without ``ps_server`` the parameter server is the fabric's first node of
    kind ps (else rank 0): naming it changed nothing without a word."""
    from simnet import simulate

    star = topology_from_dict({"name": "s", "generate": {"kind": "ps_star", "workers": 4, "servers": 1}})
    assert "ps0" in star.parameter_servers and "worker0" in star.gpus
    given = simulate(star, "ps", 2**20, ps_server=server)
    assert [w.link for w in given.warnings if w.kind == "option_unread"] == ["options.ps_server"] * said
    assert (given.time_s == simulate(star, "ps", 2**20).time_s) == said


@pytest.mark.parametrize("pxn", [True, False])
def test_pxn_on_one_node_is_said_to_change_nothing(pxn):
    """Fuzz round x R7: ``pxn: false`` on one box gave the AllToAll it gives without it, without
    a word: PXN picks the NIC a send across hosts leaves by, and on one node none does."""
    from simnet import simulate

    box = topology_from_dict({"name": "b", "generate": {"kind": "nvswitch", "gpus": 8}})
    given = simulate(box, "direct", 2**24, collective="all_to_all", pxn=pxn)
    assert given.time_s == simulate(box, "direct", 2**24, collective="all_to_all").time_s
    assert [w.link for w in given.warnings if w.kind == "option_unread"] == ["options.pxn"]
    two = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                        "gpus_per_host": 4}})
    assert not [w for w in simulate(two, "direct", 2**24, collective="all_to_all", pxn=False).warnings
                if w.kind == "option_unread"]


def test_channels_beyond_what_nccl_opens_are_said_to_be_capped():
    """Fuzz round w X1: on one DGX H100 a ring's ``channels: 64`` asks NCCL for 128 channels
    (each simulated channel stands for two of NCCL's 64 there) and ran NCCL's 64, the time of
    ``channels: 32``, without a word. Said, with the channels it ran (round x R4: which count of
    options.channels gives the same run differs by algorithm, so none is named)."""
    from pathlib import Path

    from simnet import load_topology, simulate

    topo = load_topology(Path(__file__).resolve().parent.parent / "topologies" / "dgx_h100.yaml")
    capped, fewer = simulate(topo, "ring", 2**28, channels=64), simulate(topo, "ring", 2**28, channels=32)
    assert capped.time_s == fewer.time_s and capped.nccl_channels == fewer.nccl_channels == 64
    said = [w.message for w in capped.warnings if w.kind == "channels_capped"]
    assert said == ["options.channels 64 asks NCCL for 128 channels of ring here, more than it opens (64: "
                    "MAXCHANNELS, or NVLS's own count): the run has 64"]
    assert not [w for w in fewer.warnings if w.kind == "channels_capped"]


@pytest.mark.parametrize("value, said", [("64", True), ("1", False)])
def test_compare_says_a_variable_of_nccl_s_plan_no_option_reads(tmp_path, cli, value, said):
    """Fuzz round n (#205, #206): compare under NCCL_MAX_NCHANNELS=64 (above what NCCL opens in
    every option) printed what it prints without it and said nothing, where run warns."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "name": "c", "topology": {"name": "t", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": "h100"}},
        "sizes": ["4 MiB"], "algorithms": ["ring", "tree"],
        "variants": [{"name": "a", "set": {"topology.generate.gpus": 8}},
                     {"name": "b", "set": {"topology.generate.gpus": 4}}]}))
    result = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png", env={"NCCL_MAX_NCHANNELS": value})
    assert result.exit_code == 0, result.stderr
    assert (f"warning key_unread: NCCL_MAX_NCHANNELS={value} changed nothing here: every option" in
            " ".join(result.stdout.split())) == said


@pytest.mark.parametrize("variable, value, algorithm, said", [
    ("NCCL_PROTO", "LL", "ring", True), ("NCCL_PROTO", "LL", "auto", False),  # auto's pick is NCCL's: it moves
    ("NCCL_BUFFSIZE", "8388608", "ring", True), ("NCCL_NVLS_ENABLE", "0", "ring", True)])
def test_under_model_ideal_an_nccl_variable_no_run_reads_is_said(variable, value, algorithm, said):
    """Fuzz round n (#238, debatable): under model: ideal NCCL_PROTO, NCCL_BUFFSIZE and
    NCCL_NVLS_CHUNKSIZE were taken with the answer of leaving them out and no word (refused
    under nccl, where they would change what NCCL runs). Said where the run is the same."""
    from simnet import simulate

    topo = topology_from_dict({"name": "h100", "generate": _STEERED["h100"]})
    given, plain = (simulate(topo, algorithm, 2**24, model="ideal", env=env) for env in ({variable: value}, {}))
    warned = [w for w in given.warnings if w.kind == "key_unread" and w.link == variable]
    assert bool(warned) == said and (given.time_s == plain.time_s) >= said


def test_auto_under_ideal_says_nothing_of_a_variable_that_moved_nccl_s_pick():
    """The review of round n's fixes: under model: ideal, auto said NCCL_PROTO=^LL changed
    nothing where NCCL's pick (which it reports) went from Ring/LL to Ring/LL128: auto compares
    NCCL's choice, its protocol and predicted time too."""
    from simnet import simulate

    topo = topology_from_dict({"name": "h100", "generate": _STEERED["h100"]})
    steered, plain = (simulate(topo, "auto", 16384, model="ideal", collective="broadcast", env=env)
                      for env in ({"NCCL_PROTO": "^LL"}, {}))
    assert steered.auto["nccl_pick"] != plain.auto["nccl_pick"]
    assert not [w for w in steered.warnings if w.kind == "key_unread" and w.link == "NCCL_PROTO"]


@pytest.mark.parametrize("what", ["jobs", "compare"])
def test_under_model_ideal_jobs_and_compare_say_what_no_run_reads(tmp_path, cli, what):
    """The review: jobs and compare under model: ideal said nothing of NCCL_BUFFSIZE (NCCL's
    own, read by no run here), where run warns it."""
    box = {"name": "box", "generate": {"kind": "nvswitch", "gpus": 4, "gpu": "h100"}}
    scenario = {"name": "s", "topology": box, "model": "ideal"}
    if what == "jobs":
        scenario["jobs"] = [{"name": "a", "gpus": 2, "size": "1 MiB"}, {"name": "b", "gpus": 2, "size": "1 MiB"}]
        args = ("run", tmp_path / "s.yaml")
    else:
        scenario.update(sizes=["1 MiB"], algorithms=["ring"], variants=[
            {"name": "a", "set": {"topology.generate.gpus": 4}}, {"name": "b", "set": {"topology.generate.gpus": 2}}])
        args = ("compare", tmp_path / "s.yaml", "-o", tmp_path / "c.png")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario))
    result = cli(*args, env={"NCCL_BUFFSIZE": "1048576"})
    assert result.exit_code == 0, result.stderr
    assert "warning key_unread: NCCL_BUFFSIZE=1048576 changed nothing here: it changes how NCCL runs" in \
        " ".join((result.stdout + result.stderr).split())


def test_a_sweep_says_what_changed_nothing_at_every_point_as_run_does(tmp_path, cli):
    """Fuzz round x R9: ``simnet sweep`` said nothing of an option none of its algorithms
    takes or a topology key the file makes moot, where ``simnet run`` warns each (its
    records kept them, unread). Said once, from the records, so a resumed sweep says it
    too; an option some point reads (a tree's chunk_size, which moves its time) is not."""
    from simnet import simulate

    (tmp_path / "s.yaml").write_text(
        "name: s\ntopology: {name: t, routing: ecmp, generate: {kind: nvswitch, gpus: 8}}\nsizes: [1 MiB]\n"
        "algorithms: [ring, tree]\noptions: {ps_servers: 2, chunk_size: 64 KiB}\n")
    said = []
    for _ in range(2):  # computed, then resumed from the records
        result = cli("sweep", tmp_path / "s.yaml", "--gpus", "4,8", "--out", tmp_path / "o", "--workers", "1")
        assert result.exit_code == 0, result.stderr
        said.append(" ".join(result.stdout.split()).split("warning ")[1:])
    assert said[0] == said[1] and len(said[0]) == 2, said
    assert said[0][0].startswith("option_unread: options.ps_servers changed nothing at any point of this sweep")
    assert said[0][1].startswith(f"key_unread: topology.routing ({tmp_path / 's.yaml'}:2): the cables between "
                                 "switches close no loop")
    box = topology_from_dict({"name": "t", "generate": {"kind": "nvswitch", "gpus": 8}})
    assert simulate(box, "tree", 2**20, chunk_size=64 * 2**10).time_s != simulate(box, "tree", 2**20).time_s


def test_run_says_a_warning_of_the_whole_scenario_once(tmp_path, cli):
    """A warning every run carries (an option none of the file's algorithms takes) was printed
    once per algorithm row, and hidden behind "1 more like it" where a row had another of
    its kind (ring's own chunk_size that changed nothing)."""
    (tmp_path / "s.yaml").write_text(
        "name: s\ntopology: {name: t, generate: {kind: nvswitch, gpus: 8}}\nsizes: [1 MiB, 2 MiB]\n"
        "algorithms: [ring, tree]\noptions: {ps_servers: 2, chunk_size: 64 KiB}\n")
    result = cli("run", tmp_path / "s.yaml")
    out = " ".join(result.stdout.split())
    assert result.exit_code == 0 and out.count("ps_servers: none of ring, tree takes it") == 1, out
    assert "warning option_unread: options ps_servers: none of ring, tree takes it" in out
    assert "warning option_unread (ring, 2 MiB): options.chunk_size 64 KiB changed nothing here" in out


def test_a_group_by_no_gpu_is_labelled_for_is_refused_on_the_option_s_line(tmp_path, cli):
    """Fuzz round y F8: ``options: {group_by: region}`` on a fabric without regions was refused
    on the ``algorithms`` line, which is not what is wrong; ``-a hierarchical`` names the option
    too when the file gives it."""
    (tmp_path / "s.yaml").write_text(
        "name: o\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 2, gpus_per_host: 2}}\n"
        "sizes: [1 MiB]\nalgorithms: [hierarchical]\noptions: {group_by: region}\n")
    for args in ((), ("-a", "hierarchical")):
        result = cli("run", tmp_path / "s.yaml", *args)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"{tmp_path / 's.yaml'}:5: options.group_by: region: no GPU of t has a "
                                        "region label"), result.stderr


@pytest.mark.parametrize("generate, group_by, said", [
    ({"kind": "nvswitch", "gpus": 8}, None, True),
    ({"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 4}, "rack", True),
    ({"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 4}, None, True),
    ({"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 3, "gpus_per_host": 4}, None, False)])
def test_inner_where_the_ranks_make_one_group_is_said_to_change_nothing(generate, group_by, said):
    """Fuzz round y F11: hierarchical's ``inner`` on one box, or grouped by rack on one rack,
    changed nothing without a word: with one group nothing runs between groups. Between two
    hosts every variant is one exchange (fuzz round ax, F7); between three they differ."""
    from simnet import simulate

    topo = topology_from_dict({"name": "t", "generate": generate})
    grouping = {"group_by": group_by} if group_by else {}
    given = simulate(topo, "hierarchical", 2**24, inner="halving_doubling", **grouping)
    assert [w.link for w in given.warnings if w.kind == "option_unread"] == ["options.inner"] * said
    if said:
        assert given.time_s == simulate(topo, "hierarchical", 2**24, inner="ring", **grouping).time_s


ONE_HOST_VALUES = {"nic_per": "host", "nics_per_host": 2, "nic_bandwidth": "100 Gb/s", "transport": "roce",
                   "net_latency": "50 us", "link_latency": "20 us", "sharp": True, "rails": 4, "planes": 2,
                   "switch_radix": 128, "leaf_oversubscription": 2, "pcie_bandwidth": "1 GB/s", "pcie_latency": "1 ms"}


@pytest.mark.parametrize("generate", [
    {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 1, "gpus_per_host": 8},
    {"kind": "rail_optimized", "units": 1, "nodes_per_unit": 1},
    {"kind": "nvswitch", "gpus": 8}, {"kind": "nvswitch", "gpus": 8, "gpu": "gb200", "gpus_per_tray": 4}])
def test_one_host_s_network_keys_are_said_to_change_nothing_and_change_nothing(generate):
    """Fuzz round y F12b: a one-host fabric's NIC and fabric keys (nic_bandwidth, transport,
    link_latency, ...) built what no run crosses, without a word, as a one-rack fabric's spines
    are said to: NCCL uses the network only between hosts. So did (round z #5) an nvswitch
    server's NICs, cabled to nothing. Each is said, and ring, tree, auto, hierarchical and ps
    answer the same with it; with two hosts none is said."""
    from simnet import simulate
    from simnet.topology.generators import ONE_HOST_UNREAD

    plain = topology_from_dict({"name": "t", "generate": generate})
    algorithms = ("ring", "tree", "auto", "hierarchical", "ps")
    times = {a: simulate(plain, a, 2**26).time_s for a in algorithms}
    nics = {"nic_bandwidth": "400 Gb/s"} if generate["kind"] == "nvswitch" else {}  # its NICs' keys need NICs
    for key in ONE_HOST_UNREAD[generate["kind"]]:
        if key in generate:
            continue
        topo = topology_from_dict({"name": "t", "generate": {**generate, **nics, key: ONE_HOST_VALUES[key]}})
        written = [k for k in (*generate, *nics, key) if k in ONE_HOST_UNREAD[generate["kind"]]]
        assert sorted(entry.split(" (")[0] for entry in topo.unread) == sorted({f"generate.{k}" for k in written})
        assert {a: simulate(topo, a, 2**26).time_s for a in times} == times, key
    if generate["kind"] == "nvswitch":
        return
    two = {**generate, **({"hosts_per_rack": 2} if generate["kind"] == "leaf_spine" else {"nodes_per_unit": 2})}
    assert not topology_from_dict({"name": "t", "generate": {**two, "nic_bandwidth": "100 Gb/s"}}).unread


def test_one_host_s_network_keys_are_not_said_where_its_routes_leave_through_a_nic():
    """Review 68: the one host's network keys were said to change nothing from the generator's
    parameters alone, but routes go by latency: with NVLink at 50 us a hop, its GPUs reach each
    other through their NICs and the ToR, and pcie_bandwidth 1 GB/s takes a 4 MiB ring from
    177.8 us to 8.85 ms. Said only where no route between the GPUs passes a NIC."""
    from simnet import simulate

    generate = {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 1, "gpus_per_host": 4}
    slow = {"nvlink_latency": "50 us", "link_latency": "0.1 us", "pcie_latency": "0.1 us"}
    for extra, said in (({}, True), (slow, False)):
        plain = topology_from_dict({"name": "t", "generate": {**generate, **extra}})
        written = topology_from_dict({"name": "t", "generate": {**generate, **extra, "pcie_bandwidth": "1 GB/s"}})
        assert any(entry.startswith("generate.pcie_bandwidth") for entry in written.unread) == said
        assert (simulate(written, "ring", 2**22).time_s == simulate(plain, "ring", 2**22).time_s) == said


def test_one_region_s_wan_keys_are_said_to_change_nothing():
    """Fuzz round y F12: ``cross_region`` with ``regions: 1`` builds no gateway, so its WAN keys
    changed nothing without a word."""
    from simnet import simulate

    generate = {"kind": "cross_region", "regions": 1, "hosts_per_rack": 2, "gpus_per_host": 2}
    plain = topology_from_dict({"name": "t", "generate": generate})
    topo = topology_from_dict({"name": "t", "generate": {**generate, "wan_latency": "10 ms", "wan_bandwidth": "1 Gb/s",
                                                         "gateway_bandwidth": "1 Gb/s"}})
    assert [entry.split(" (")[0] for entry in topo.unread] == [
        "generate.wan_bandwidth", "generate.wan_latency", "generate.gateway_bandwidth"]
    assert simulate(topo, "ring", 2**24).time_s == simulate(plain, "ring", 2**24).time_s


@pytest.mark.parametrize("bucket, said", [("1 GB", ["workload.bucket_size", "workload.backward_fraction"]),
                                          ("2 GB", ["workload.bucket_size", "workload.backward_fraction"]),
                                          ("256 MB", [])])
def test_a_bucket_as_large_as_the_gradient_is_said_to_change_nothing(bucket, said):
    """Fuzz round y F10: ``bucket_size`` no smaller than the gradient makes one bucket, as
    without it, so it and ``backward_fraction`` changed nothing without a word, where
    ``backward_fraction`` without ``bucket_size`` is refused saying so."""
    from simnet.run.scenario import run_scenario

    def step(workload):
        spec = scenario_from_dict({"name": "s", "topology": {"name": "t", "generate": {"kind": "nvswitch", "gpus": 4}},
                                   "sizes": ["1 MiB"], "algorithms": ["ring"],
                                   "workload": {"compute_time": "10 ms", "gradient_size": "1 GB", **workload}})
        return spec, run_scenario(spec).steps[0]["iteration_time_s"]

    spec, given = step({"bucket_size": bucket, "backward_fraction": 0.9})
    assert [w.link for w in spec.warnings if w.kind == "key_unread"] == said
    if said:
        assert given == step({})[1]


def test_a_profile_s_network_figures_on_one_node_are_said_to_change_nothing(tmp_path):
    """Fuzz round y F7: a profile's network_step_latency and network_bandwidth on one NVSwitch
    box (no step crosses a node) changed nothing without a word; on two hosts they count."""
    from simnet import simulate

    (tmp_path / "p.cal.yaml").write_text("calibration:\n  base_latency: 5 us\n  network_step_latency: 100 us\n"
                                         "  network_bandwidth: 0.5\n")
    (tmp_path / "q.cal.yaml").write_text("calibration:\n  base_latency: 5 us\n")
    box = topology_from_dict({"name": "b", "generate": {"kind": "nvswitch", "gpus": 8}})
    two = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                        "gpus_per_host": 4}})
    for topo, felt in ((box, False), (two, True)):
        given, plain = (simulate(topo, "ring", 2**24, calibration=tmp_path / f"{p}.cal.yaml") for p in "pq")
        said = [w.message for w in given.warnings if w.kind == "key_unread"]
        assert (given.time_s != plain.time_s) == felt and bool(said) == (not felt), said
        assert not said or "network_step_latency and network_bandwidth refine the steps and links of the " \
                           "network between nodes, and no route of this run crosses one" in said[0]


@pytest.mark.parametrize("gpus_per_host, felt", [(1, False), (2, True)])
def test_a_profile_s_intra_step_latency_over_hosts_of_one_gpu_is_said_to_change_nothing(tmp_path, gpus_per_host,
                                                                                       felt):
    """Fuzz round ah: the mirror of the case above. A profile's intra_step_latency over hosts of
    one GPU each (every step crosses the network) changed nothing without a word; said, and
    over hosts of two GPUs it counts (their step inside the host)."""
    from simnet import simulate

    (tmp_path / "p.cal.yaml").write_text("calibration:\n  base_latency: 0 us\n  intra_step_latency: 5 us\n")
    topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 4 //
                                                         gpus_per_host, "gpus_per_host": gpus_per_host}})
    for algorithm, size in (("ring", 2**16), ("tree", 2**24)):
        given, plain = simulate(topo, algorithm, size, calibration=tmp_path / "p.cal.yaml"), \
            simulate(topo, algorithm, size)  # (a profile of its base_latency 0 alone is refused: it changes nothing)
        said = [w.message for w in given.warnings if w.kind == "key_unread"]
        assert (given.time_s != plain.time_s) == felt and bool(said) == (not felt), said
        assert not said or "intra_step_latency refines the steps inside a node" in said[0]


def test_a_group_by_no_gpu_is_labelled_for_is_refused_on_its_line_in_run_sweep_and_compare(tmp_path, cli):
    """Fuzz round y F16: ``options.group_by: region`` as a sweep axis or a variant's set on a
    fabric without regions: ``simnet run`` accepted the file, the sweep computed its first
    point and then refused with no line, compare refused on the algorithms line. Refused
    before anything runs, on the line that states it, by all three."""
    head = ("name: h\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2}}"
            "\nsizes: [1 MiB]\nalgorithms: [hierarchical]\n")
    (tmp_path / "s.yaml").write_text(head + "sweep: {options.group_by: [host, region]}\n")
    (tmp_path / "c.yaml").write_text(head + "variants:\n  - {name: a, set: {options.group_by: host}}\n"
                                            "  - {name: b, set: {options.group_by: region}}\n")
    why = "no GPU of t has a region label"
    for args, said in ((("run", tmp_path / "s.yaml"), "s.yaml:5: sweep.options.group_by: the point "
                                                       "options.group_by=region: " + why),
                       (("sweep", tmp_path / "s.yaml", "--out", tmp_path / "o", "--workers", "1"),
                        "s.yaml:5: sweep.options.group_by: the point options.group_by=region: " + why),
                       (("compare", tmp_path / "c.yaml"), "c.yaml:7: variants[1].set.options.group_by: region: " + why)):
        result = cli(*args)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1 and said in result.stderr, result.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("case", ["ps behind the host's NIC", "one host's GPUs on a switch"])
def test_a_profile_s_network_figures_that_a_one_node_run_crosses_are_not_said_unread(tmp_path, case):
    """Review of F7's fix: one node, yet a route crosses the network (a parameter server behind
    the host's NIC; PCIe-only GPUs cabled to a switch), so the profile's network figures count
    (ps 41.6 us -> 133.9 us at 64 KiB): not said to change nothing."""
    from simnet import load_topology, simulate

    if case.startswith("ps"):
        nodes = [{"id": "g0", "kind": "gpu", "host": "h0", "gpu": "h100"},
                 {"id": "g1", "kind": "gpu", "host": "h0", "gpu": "h100"}, {"id": "nvs", "kind": "switch", "host": "h0"},
                 {"id": "nic0", "kind": "nic", "host": "h0"}, {"id": "tor", "kind": "switch"}, {"id": "ps0", "kind": "ps"}]
        links = [{"a": g, "b": "nvs", "bandwidth": "450 GB/s", "latency": "0.25 us", "type": "nvlink"} for g in ("g0", "g1")]
        links += [{"a": g, "b": "nic0", "bandwidth": "64 GB/s", "latency": "1 us"} for g in ("g0", "g1")]
        links += [{"a": end, "b": "tor", "bandwidth": "400 Gb/s", "latency": "1 us"} for end in ("nic0", "ps0")]
        algorithm = "ps"
    else:
        nodes = [{"id": f"g{i}", "kind": "gpu", "host": "h0", "gpu": "l40s"} for i in range(4)]
        nodes += [{"id": "sw", "kind": "switch"}]
        links = [{"a": f"g{i}", "b": "sw", "bandwidth": "100 Gb/s", "latency": "1 us", "type": "net"} for i in range(4)]
        algorithm = "ring"
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({"name": "t", "nodes": nodes, "links": links}))
    (tmp_path / "p.cal.yaml").write_text("calibration: {network_step_latency: 40 us, network_bandwidth: 0.3}\n")
    topo = load_topology(tmp_path / "t.yaml")
    given = simulate(topo, algorithm, 2**16, calibration=tmp_path / "p.cal.yaml")
    assert given.time_s > simulate(topo, algorithm, 2**16).time_s
    assert not [w for w in given.warnings if w.kind == "key_unread"]


def test_one_host_s_network_keys_are_read_where_the_file_cables_more_to_its_network():
    """Fuzz round z #1: the one-host rule read the generator's keys alone, so a parameter
    server cabled to the host's ToR (ps 10.8 -> 107 ms with 10 Gb/s NICs) had nic_bandwidth
    said to change nothing. With other nodes, links or generators beside it, not said."""
    from simnet import simulate

    generate = {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 1, "gpus_per_host": 4}
    extra = {"nodes": [{"id": "ps0", "kind": "ps"}],
             "links": [{"a": "ps0", "b": "tor0", "bandwidth": "400 Gb/s", "latency": "1 us"}]}
    slow, fast = (topology_from_dict({"name": "t", "generate": {**generate, **nics}, **extra})
                  for nics in ({"nic_bandwidth": "10 Gb/s"}, {}))
    assert not slow.unread
    assert simulate(slow, "ps", 2**20).time_s > 5 * simulate(fast, "ps", 2**20).time_s


def test_keys_a_server_fills_in_are_not_said_to_change_nothing():
    """Fuzz round z #3: a one-host ``server: p4d.24xlarge`` was warned for nics_per_host,
    nic_bandwidth, transport and net_latency, which the file never wrote (the catalogue's):
    only keys written are said."""
    generate = {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 1, "server": "p4d.24xlarge"}
    assert topology_from_dict({"name": "t", "generate": generate}).unread == ()
    written = topology_from_dict({"name": "t", "generate": {**generate, "nic_bandwidth": "200 Gb/s"}}).unread
    assert [entry.split(" (")[0] for entry in written] == ["generate.nic_bandwidth"]


def test_compare_says_a_variant_s_key_its_option_leaves_unread(tmp_path):
    """Fuzz round z #2: compare ranked a one-host "slow nics" option (nic_bandwidth 10 Gb/s)
    alone on the Pareto front, its time the same as without it, and said nothing, where
    ``simnet run`` on that option warns key_unread: said, on the variant's line."""
    from simnet.run.compare import compare_warnings
    from simnet.spec.scenario import load_scenario

    (tmp_path / "c.yaml").write_text(
        "name: c\ntopology: {name: t, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 1, gpus_per_host: 8}}\n"
        "sizes: [64 MiB]\nalgorithms: [auto]\ncost: 1 M$\nvariants:\n"
        "  - {name: slow nics, set: {topology.generate.nic_bandwidth: 10 Gb/s}, cost: 0.5 M$}\n"
        "  - {name: two hosts, set: {topology.generate.hosts_per_rack: 2}}\n")
    said = [(f.link, f.message) for f in compare_warnings([load_scenario(tmp_path / "c.yaml")])
            if f.kind == "key_unread"]
    assert len(said) == 1 and said[0][0] == "variants[0].set.topology.generate.nic_bandwidth"
    assert said[0][1].startswith(f"variants[0].set.topology.generate.nic_bandwidth ({tmp_path / 'c.yaml'}:7): one "
                                 "host's GPUs reach each other inside it") and said[0][1].endswith("(in option slow nics)")


def test_a_warning_that_lists_names_in_brackets_prints_them(tmp_path, cli):
    """Fuzz round z #11: ``ps_server: [ps0]`` was warned as "options.ps_server  is the server
    ...": the console read the list's brackets as markup and dropped them with the name."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: t, generate: {kind: ps_star, workers: 4}}\n"
                                     "sizes: [64 MiB]\nalgorithms: [ps]\noptions: {ps_server: [ps0]}\n")
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 0 and "options.ps_server [ps0] is the server ps takes by its own default" in \
        " ".join(result.stdout.split()), result.stdout


def test_a_sweep_of_jobs_or_of_a_training_step_says_what_changed_nothing_at_every_point(tmp_path, cli):
    """Fuzz round z #6: a sweep of a jobs scenario (a period with repeat 1) or of a training
    step alone (fp8 with tp and pp 1) printed none of the key_unread lines ``simnet run``
    prints: their records kept no unread links (jobs' sizes, a step's record)."""
    (tmp_path / "t.yaml").write_text("name: t\ngenerate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, "
                                     "gpus_per_host: 2}\n")
    (tmp_path / "j.yaml").write_text("name: j\ntopology: t.yaml\njobs:\n"
                                     "  - {name: a, gpus: 4, size: 1 MiB, algorithm: ring, period: 1 ms}\n")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: t, generate: {kind: leaf_spine, racks: 1, "
                                     "hosts_per_rack: 2}}\ntraining:\n  model: llama3_8b\n  efficiency: 0.5\n"
                                     "  dtype: fp8\n")
    for name, args, key in (("j", ("--set", "topology.generate.spines=1,2"), "jobs[0].period"),
                            ("s", ("--gpus", "8,16"), "training.dtype")):
        result = cli("sweep", tmp_path / f"{name}.yaml", *args, "--out", tmp_path / name, "--workers", "1")
        said = " ".join(result.stdout.split())
        # (the spines axis moves no point either: two racks' jobs answer alike over 1 or 2 spines, said too)
        assert result.exit_code == 0 and said.count("warning key_unread") == 1 + (name == "j"), said
        assert f"warning key_unread: {key} ({tmp_path / f'{name}.yaml'}:" in said, said
        assert (name == "j") == ("topology.generate.spines changed nothing along this sweep" in said)


FOUR_HOSTS = {"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 2,
                                        "spines": 1}}


@pytest.mark.parametrize("jobs, scenario_placement, key, other", [
    ([{"name": "a", "gpus": 8, "placement": "spread", "size": "4 MiB"}], None, "jobs[0].placement", "random(3)"),
    ([{"name": "a", "gpus": 4, "placement": "spread", "size": "4 MiB"},
      {"name": "b", "gpus": 4, "placement": "random(1)", "size": "4 MiB"}], None, "jobs[1].placement", "spread"),
    ([{"name": "a", "gpus": 8, "size": "4 MiB"}], "spread", "placement", "random(7)")])
def test_a_placement_with_nothing_to_choose_is_said_and_changes_nothing(jobs, scenario_placement, key, other):
    """Fuzz round z #8: a job asking for every GPU still free takes them all whatever its
    placement (packed, spread, random), so placement changed nothing, without a word, while
    a placement beside named GPUs is refused as moot. Said on its key, and true: the other
    placement gives the same GPUs and times."""
    from simnet.run.jobs import run_jobs

    doc = {"name": "s", "topology": FOUR_HOSTS, "jobs": jobs,
           **({"placement": scenario_placement} if scenario_placement else {})}
    spec = scenario_from_dict(doc)
    assert [(w.kind, w.link) for w in spec.warnings] == [("key_unread", key)]
    assert "nothing to choose" in spec.warnings[0].message
    swapped = [{**job, "placement": other} if key in (f"jobs[{i}].placement", "placement") else job
               for i, job in enumerate(jobs)]
    as_written = run_jobs(spec.topology, spec.jobs if not scenario_placement else
                          [{**job, "placement": scenario_placement} for job in jobs]).jobs
    assert run_jobs(spec.topology, swapped).jobs == as_written


def test_a_placement_with_a_choice_is_not_said_unread():
    spec = scenario_from_dict({"name": "s", "topology": FOUR_HOSTS, "placement": "spread",
                               "jobs": [{"name": "a", "gpus": 4, "size": "4 MiB"},
                                        {"name": "b", "gpus": 2, "placement": "packed", "size": "4 MiB"}]})
    assert spec.warnings == []


def test_a_seed_of_uniform_background_left_two_gpus_is_said_and_changes_nothing():
    """Fuzz round z #7: background traffic given no GPUs takes every GPU no job holds; left
    two, each one's only partner is the other and its seed draws nothing, said only where its
    own gpus: said 2. Said, and true: another seed gives the same times."""
    from simnet.run.jobs import run_jobs

    def jobs(seed):
        return [{"name": "a", "gpus": 6, "size": "4 MiB"},
                {"name": "noise", "background": {"pattern": "uniform", "load": "90%", "seed": seed}}]

    spec = scenario_from_dict({"name": "s", "topology": FOUR_HOSTS, "jobs": jobs(3)})
    assert [(w.kind, w.link) for w in spec.warnings] == [("key_unread", "jobs[1].background.seed")]
    assert "on two GPUs" in spec.warnings[0].message
    assert run_jobs(spec.topology, jobs(3)).jobs == run_jobs(spec.topology, jobs(4)).jobs
    four = scenario_from_dict({"name": "s", "topology": FOUR_HOSTS, "jobs": [{**jobs(3)[0], "gpus": 4}, jobs(3)[1]]})
    # (the seed draws there; each job now under a leaf of its own, no route crosses the spine: round ae F1)
    assert [w.link for w in four.warnings] == ["topology.generate.spines"]


@pytest.mark.parametrize("gpus, said", [(8, True), (["r1h0-gpu2", "r1h0-gpu5"], True), (16, False),
                                        (["r0h0-gpu0", "r1h0-gpu0"], False)])
def test_network_keys_of_a_run_inside_one_host_of_a_larger_fabric_are_said(gpus, said):
    """Fuzz round z #10: a `gpus:` subset inside one host of a two-host fabric read none of the
    fabric's network keys (no route of the run leaves the host), without a word, while a
    straggler of a GPU left out is said. Said where the run's GPUs are one NVLink domain, and
    true: every algorithm answers the same without the keys."""
    from simnet import simulate

    generate = {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 8}
    keys = {"nic_bandwidth": "10 Gb/s", "net_latency": "1 ms", "transport": "efa", "spines": 3,
            "oversubscription": 4}  # round aa F2: the fabric above the NICs too
    spec = scenario_from_dict({"name": "s", "topology": {"name": "t", "generate": {**generate, **keys}},
                               "sizes": ["1 MiB"], "gpus": gpus})
    assert sorted(w.link for w in spec.warnings if w.kind == "key_unread") == (
        sorted(f"topology.generate.{key}" for key in keys) if said else [])
    plain = topology_from_dict({"name": "t", "generate": generate}).subset(gpus)
    same = [simulate(plain, algorithm, 2**20).time_s == simulate(spec.topology, algorithm, 2**20).time_s
            for algorithm in ("ring", "tree", "auto", "ps", "hierarchical")]
    assert all(same) if said else not any(same)


def test_routing_where_only_a_switch_beyond_no_endpoint_is_reached_two_ways_is_said_unread():
    """Fuzz round z #9: a parameter server cabled to both ToRs of a one-spine fabric reaches
    the spine two ways of equal cost, yet the spine is no endpoint and the server forwards
    nothing: every pair of endpoints still has one route, and ecmp and by_destination answer
    alike. ``routing`` changed nothing without a word (without the second cable it was said);
    said now, and GPUs cabled to two NVSwitches that join different GPUs (two ways between the
    GPUs on both) still read it (two that join the same GPUs are one NVSwitch: test_same_hardware)."""
    from simnet import simulate

    def fabric(routing):
        return topology_from_dict({
            "name": "t", "routing": routing,
            "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 2, "spines": 1},
            "nodes": [{"id": "ps0", "kind": "ps"}],
            "links": [{"a": "ps0", "b": f"tor{r}", "bandwidth": "100 Gb/s", "latency": "1 us"} for r in range(2)]})

    ecmp, by_destination = fabric("ecmp"), fabric("by_destination")
    assert [e.split(" (")[0] for e in ecmp.unread] == ["routing"] == [e.split(" (")[0] for e in by_destination.unread]
    for algorithm in ("ps", "ring", "tree", "direct"):
        assert simulate(ecmp, algorithm, 2**26).time_s == simulate(by_destination, algorithm, 2**26).time_s
    two_switches = topology_from_dict({
        "name": "t", "routing": "ecmp",
        "nodes": [{"id": f"g{i}", "kind": "gpu", "host": "h"} for i in range(4)]
        + [{"id": f"nvs{k}", "kind": "switch", "host": "h"} for k in range(2)],
        "links": [{"a": f"g{i}", "b": f"nvs{k}", "bandwidth": "100 GB/s", "latency": "1 us", "type": "nvlink"}
                  for i in range(4) for k in range(2) if (i, k) != (3, 1)]})
    assert not two_switches.joined and not [e for e in two_switches.unread if e.startswith("routing")]


@pytest.mark.parametrize("fault", [{"at": "0 s", "link": ["r0h0-gpu0", "r0h0-nvswitch"], "bandwidth": 0},
                                   {"at": "10 us", "node": "r0h0-nvswitch", "down": True}])
def test_a_fault_that_sends_one_host_s_traffic_over_its_nics_makes_its_network_keys_count(tmp_path, fault):
    """Fuzz round aa F1: with the host's NVLink cut, its GPUs reach each other through their
    NICs and the ToR, so the host's NIC keys and a profile's network figures count (ring 4 MiB
    5.59 ms against 0.165 ms without them), yet both were said to change nothing. Not said
    where a fault takes a link down; still said where faults only slow links."""
    from simnet.run.scenario import run_scenario

    (tmp_path / "p.cal.yaml").write_text("calibration: {network_step_latency: 40 us, network_bandwidth: 0.3}\n")
    generate = {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 1, "gpus_per_host": 4}
    keys = {"nic_bandwidth": "10 Gb/s", "transport": "roce", "link_latency": "50 us"}

    def scenario(extra, faults, calibration=None):
        return scenario_from_dict({"name": "s", "topology": {"name": "t", "generate": {**generate, **extra}},
                                   "sizes": ["4 MiB"], "algorithms": ["ring"], "faults": faults,
                                   **({"calibration": calibration} if calibration else {})}, base=tmp_path)

    written = scenario(keys, [fault])
    assert not [w for w in written.warnings if w.kind == "key_unread"]
    assert run_scenario(written).runs[0].time_s > 10 * run_scenario(scenario({}, [fault])).runs[0].time_s
    profiled = run_scenario(scenario({}, [fault], "p.cal.yaml")).runs[0]
    assert not [w for w in profiled.warnings if w.kind == "key_unread"]
    slowed = {**fault, "bandwidth": "50%"} if "link" in fault else {"at": "10 us", "node": "r0h0-nvswitch",
                                                                      "bandwidth": "50%"}
    slowed.pop("down", None)
    assert sorted(w.link for w in scenario(keys, [slowed]).warnings if w.kind == "key_unread") == sorted(
        f"topology.generate.{key}" for key in keys)


def test_compare_says_a_job_s_period_every_run_outlasts(tmp_path, cli):
    """Fuzz round aa F3: ``simnet run`` says a job's period every run outlasts changed
    nothing (judged once the jobs ran), ``simnet sweep`` too, but ``simnet compare`` dropped it,
    in the file or set by a variant, and ranked the option as if it were felt. Said once, with
    a key the file makes moot (a placement with nothing to choose) not said twice."""
    jobs = ("jobs:\n  - {name: a, gpus: 4, algorithm: ring, size: 16 MiB, repeat: 3, placement: spread}\n"
            "  - {name: b, gpus: 4, algorithm: ring, size: 16 MiB, placement: spread}\n")
    (tmp_path / "c.yaml").write_text("name: c\ntopology: {name: t, generate: {kind: nvswitch, gpus: 8}}\n" + jobs +
                                     "variants:\n  - {name: base}\n  - {name: per, set: {jobs.0.period: 1 us}}\n")
    printed = _compared(cli, tmp_path / "c.yaml")
    assert printed.count("warning key_unread: jobs[0].period") == 1
    assert "jobs[0].period changed nothing in any run of option per" in printed
    assert printed.count("jobs[1].placement") == 1  # b asks for the 4 GPUs a leaves: the file's word, once
    assert printed.count("jobs[0].placement") == 1  # a's choice in one host is packed's (round ae F2)


@pytest.mark.parametrize("algorithm, size, chunk, unread", [
    ("ps", 2**20, "64 MiB", True), ("ps", 2**26, "64 MiB", True), ("ps", 2**26, "256 KiB", False),
    ("hierarchical", 2**20, "64 MiB", True), ("hierarchical", 2**26, "64 MiB", False)])
def test_a_chunk_size_ps_or_hierarchical_cut_no_differently_is_said(algorithm, size, chunk, unread):
    """Fuzz round aa F5: ``options.chunk_size`` no smaller than what ps and hierarchical cut
    changed nothing without a word (ring's and nvls's were said: judged on their lane
    programs, which these algorithms are not). Judged on their schedules, transfer by
    transfer (hierarchical in each variant it runs), and true: the time is the same."""
    from simnet import simulate

    topo = topology_from_dict({"name": "t", "generate": {"kind": "nvswitch", "gpus": 8}})
    given = simulate(topo, algorithm, size, chunk_size=chunk)
    said = [w for w in given.warnings if w.link == "options.chunk_size"]
    assert bool(said) == unread and (given.time_s == simulate(topo, algorithm, size).time_s) == unread


def test_what_a_sweep_or_a_comparison_says_names_where_it_comes_from(tmp_path, cli):
    """Fuzz round aa F10: a key only --set gives that changed nothing anywhere pointed at
    "simnet run on the scenario", which does not write it; comparing two files, one file's
    moot key did not say which option it was in, as a variant's does."""
    box = "name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 4}}\nsizes: [1 MiB]\nalgorithms: [ring]\n"
    (tmp_path / "s.yaml").write_text(box)
    swept = cli("sweep", tmp_path / "s.yaml", "--set", "topology.generate.nic_bandwidth=10Gb/s,100Gb/s",
                "--out", tmp_path / "out")
    assert swept.exit_code == 0, swept.stderr
    assert "simnet run on a scenario that writes it says why" in " ".join(swept.stdout.split())
    (tmp_path / "one.yaml").write_text(box.replace("name: s", "name: one").replace(
        "{kind: nvswitch, gpus: 4}", "{kind: leaf_spine, racks: 1, hosts_per_rack: 2, gpus_per_host: 2, spines: 2}"))
    (tmp_path / "two.yaml").write_text(box.replace("name: s", "name: two").replace(
        "{kind: nvswitch, gpus: 4}", "{kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2, spines: 2}"))
    compared = cli("compare", tmp_path / "one.yaml", tmp_path / "two.yaml", "-o", tmp_path / "c.png")
    assert compared.exit_code == 0, compared.stderr
    printed = " ".join(compared.stdout.split())
    assert "warning key_unread: topology.generate.spines" in printed and "(in option one)" in printed


def test_a_pcie_box_s_uplinks_are_not_the_network_a_subset_of_it_leaves_unread():
    """Review of 2848d64/c7793df: a pcie box's ``uplink_bandwidth`` (its PCIe switches' link
    up to the host bridge) was taken for a fabric's uplinks, so a ``gpus:`` subset across two
    PCIe switches was told it changed nothing (ring 64 MiB 22.04 ms at 4 GB/s, 3.37 ms at
    32 GB/s): a false warning. Not said, and the time moves with it."""
    from simnet import simulate

    def box(uplink):
        return {"name": "t", "generate": {"kind": "pcie", "gpus": 8, "gpus_per_switch": 2, "uplink_bandwidth": uplink}}

    spec = scenario_from_dict({"name": "s", "topology": box("4 GB/s"), "sizes": ["64 MiB"], "gpus": ["gpu0", "gpu2"]})
    assert not [w for w in spec.warnings if w.kind == "key_unread"]
    slow, fast = (simulate(topology_from_dict(box(b)).subset(["gpu0", "gpu2"]), "ring", 2**26).time_s
                  for b in ("4 GB/s", "32 GB/s"))
    assert slow > 2 * fast


def test_compare_keeps_what_an_option_s_runs_say_of_a_key_said_of_another_option():
    """Review of c8d9b10: compare dropped every finding of an option's runs whose key the
    files' warnings said, even where those named another option only: option B's word was
    lost. Dropped only of the options already named (or where said of every option)."""
    from simnet.results.result import Finding
    from simnet.run.compare import unsaid

    def ran(option):
        return Finding("key_unread", "jobs[0].period", f"jobs[0].period changed nothing in any run of option {option} "
                                                       "(taken by none or unfelt; ...); leave it out")

    of_a = [Finding("key_unread", "jobs[0].period", "jobs[0].period (s.yaml:6): ... (in option A)")]
    assert unsaid([ran("A"), ran("B")], of_a) == [ran("B")]
    assert unsaid([ran("A"), ran("B")], [Finding("key_unread", "jobs[0].period", "jobs[0].period: ...")]) == []
    assert unsaid([ran("A")], []) == [ran("A")]


def test_a_ps_server_outside_a_one_host_run_makes_the_network_count(tmp_path):
    """Fuzz round ab F1: a run's GPUs on one host with ``ps_server`` a GPU of another host
    sends every gradient across the fabric, yet the fabric's keys and a profile's network
    figures were said to change nothing (ps 4 MiB 50.7 ms against 0.735 ms without them): the
    server was no route end. It is one now; said of neither."""
    from simnet.run.scenario import run_scenario

    (tmp_path / "p.cal.yaml").write_text("calibration: {network_step_latency: 40 us, network_bandwidth: 0.3}\n")
    generate = {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 4}
    keys = {"nic_bandwidth": "10 Gb/s", "spines": 3, "oversubscription": 4}

    def scenario(extra, **more):
        return scenario_from_dict({"name": "s", "topology": {"name": "t", "generate": {**generate, **extra}},
                                   "gpus": [f"r0h0-gpu{i}" for i in range(4)], "sizes": ["4 MiB"],
                                   "algorithms": ["ps"], "options": {"ps_server": "r1h0-gpu0"}, **more}, base=tmp_path)

    written = scenario(keys)
    assert not [w for w in written.warnings if w.kind == "key_unread"]
    assert run_scenario(written).runs[0].time_s > 10 * run_scenario(scenario({})).runs[0].time_s
    profiled = run_scenario(scenario({}, calibration="p.cal.yaml")).runs[0]
    assert not [w for w in profiled.warnings if w.kind == "key_unread"]
    assert profiled.time_s > run_scenario(scenario({})).runs[0].time_s


def test_compare_says_a_file_key_only_a_variant_leaves_unread(tmp_path, cli):
    """Fuzz round ab F4: a variant whose ``gpus:`` keep its run inside one host reads none of
    the fabric's keys, as run and sweep say; compare said nothing (the file's own reading reads
    them, and the variant's set writes gpus, not them). Said once, of that option."""
    (tmp_path / "v.yaml").write_text(
        "name: s\ntopology:\n  name: t\n  generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 4, "
        "nic_bandwidth: 10 Gb/s, spines: 3}\nsizes: [4 MiB]\nalgorithms: [ring]\nvariants:\n  - {name: two, set: "
        "{gpus: all}}\n  - {name: onehost, set: {gpus: [r0h0-gpu0, r0h0-gpu1, r0h0-gpu2, r0h0-gpu3]}}\n")
    printed = _compared(cli, tmp_path / "v.yaml")
    for key in ("nic_bandwidth", "spines"):
        assert printed.count(f"warning key_unread: topology.generate.{key} ") == 1
    assert printed.count("(in option onehost)") == 2 and "(in option two" not in printed


def test_compare_says_each_unread_key_on_the_line_that_writes_it(tmp_path, cli):
    """Fuzz round ac F9: in an option with a ``set``, the file's key was placed at "(v.yaml with
    gpus=4)" instead of its line, and a key inside a mapping the set writes (a straggler, an
    inline topology's spines) by the option's reading instead of the variant's line; a topology
    file of the option's own was said as the scenario's key, of every option."""
    (tmp_path / "v.yaml").write_text(
        "name: s\ntopology:\n  name: t\n  generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 4, "
        "nic_bandwidth: 100 Gb/s}\nsizes: [4 MiB]\nalgorithms: [ring]\nvariants:\n  - {name: base}\n"
        "  - {name: one, set: {gpus: 4}}\n"
        "  - {name: late, set: {gpus: 4, stragglers: {r1h0-gpu0: 100 us}}}\n"
        "  - {name: rack, set: {topology: {name: r, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, "
        "gpus_per_host: 4, spines: 2}}}}\n  - {name: filed, set: {topology: t2.yaml}}\n")
    (tmp_path / "t2.yaml").write_text("name: t2\ngenerate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, "
                                      "gpus_per_host: 4, spines: 4}\n")
    printed = _compared(cli, tmp_path / "v.yaml")
    assert f"topology.generate.nic_bandwidth ({tmp_path / 'v.yaml'}:4): " in printed and " with gpus=4" not in printed
    assert f"variants[2].set.stragglers.r1h0-gpu0 ({tmp_path / 'v.yaml'}:10): r1h0-gpu0 is not among" in printed
    assert f"variants[3].set.topology.generate.spines ({tmp_path / 'v.yaml'}:11): " in printed
    assert printed.count("(in option late)") == 1 and printed.count("(in option rack)") == 1
    # an option's own topology file: its key on that file's line, of that option alone
    assert f"generate.spines ({tmp_path / 't2.yaml'}:2): " in printed and printed.count("(in option filed)") == 1


def test_routing_over_one_tor_whose_gpus_have_several_nics_is_said_unread():
    """Fuzz round ab F2: one ToR under hosts whose GPUs reach it through two NICs each: the
    NICs are bound to the GPU's channels (``Topology.nic_binding``), so no routing chooses
    anything (every algorithm and all_to_all bit-identical under ecmp and by_destination),
    yet the loop through a host's PCIe switch and two NICs counted as one between switches,
    and routing changed nothing without a word. Said, and true."""
    from simnet import simulate

    def fabric(routing):
        return topology_from_dict({"name": "t", "routing": routing, "generate": {
            "kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 4, "nics_per_host": 8}})

    ecmp, by_destination = fabric("ecmp"), fabric("by_destination")
    assert [e.split(" (")[0] for e in ecmp.unread] == ["routing"] == [e.split(" (")[0] for e in by_destination.unread]
    for algorithm, collective in (("ring", "allreduce"), ("tree", "allreduce"), ("auto", "allreduce"),
                                  ("direct", "all_to_all")):
        assert simulate(ecmp, algorithm, 2**26, collective=collective).time_s == \
            simulate(by_destination, algorithm, 2**26, collective=collective).time_s
    two_racks = {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 4, "nics_per_host": 8}
    assert not topology_from_dict({"name": "t", "routing": "ecmp", "generate": two_racks}).unread  # spines choose


def test_a_profile_s_network_figures_are_said_where_the_run_is_no_ps_despite_a_ps_server(tmp_path):
    """Review of a4043ce: a ps_server outside a one-host run is a route end only for ps, which
    sends to it; a ring beside it crosses no network, so a profile's network figures change
    nothing there and are said so."""
    from simnet import simulate

    (tmp_path / "p.cal.yaml").write_text("calibration: {network_step_latency: 40 us, network_bandwidth: 0.3}\n")
    topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1,
                                                         "gpus_per_host": 4}})
    host = [f"r0h0-gpu{i}" for i in range(4)]
    ring = simulate(topo, "ring", 2**22, gpus=host, ps_server="r1h0-gpu0", calibration=tmp_path / "p.cal.yaml")
    assert [w.link for w in ring.warnings if w.kind == "key_unread"] == [
        f"{tmp_path / 'p.cal.yaml'}: network_step_latency, network_bandwidth"]
    assert ring.time_s == simulate(topo, "ring", 2**22, gpus=host, ps_server="r1h0-gpu0").time_s


def test_fsdp_with_no_data_parallelism_is_said_to_change_nothing():
    """Fuzz round ac F3: ``fsdp: true`` where tp x pp is every GPU (dp 1) has no replica to
    shard parameters over: a bit-identical step without a word, while ``grad_dtype`` there is
    said. Said, and true; with two replicas it is not."""
    from simnet.run.scenario import run_scenario

    def scenario(fsdp, gpus):
        parallelism = {"tp": 4, "pp": 2, **({"fsdp": fsdp} if fsdp is not None else {})}
        return scenario_from_dict({"name": "s", "topology": {"name": "t", "generate": {"kind": "nvswitch",
                                                                                         "gpus": gpus}},
                                   "training": {"model": "llama3_8b", "efficiency": 0.5, "gpu_flops": 1e15,
                                                "parallelism": parallelism}})

    sharded = scenario(True, 8)
    assert [w.link for w in sharded.warnings] == ["training.parallelism.fsdp"]
    assert run_scenario(sharded).training["step_s"] == run_scenario(scenario(None, 8)).training["step_s"]
    assert scenario(True, 16).warnings == []


def test_a_compute_slowdown_below_another_gpu_s_is_said_to_change_nothing():
    """Fuzz round ac F4: every bucket waits for the slowest GPU alone, so a slowdown below
    another GPU's (1.1 beside 1.2) changed nothing, without a word, where one of exactly 1 is
    said. Said, and true: the step is the same without it."""
    from simnet.run.scenario import run_scenario

    def scenario(slowdown):
        return scenario_from_dict({"name": "s", "topology": {"name": "t", "generate": {"kind": "nvswitch",
                                                                                         "gpus": 8}},
                                   "sizes": ["1 MiB"], "algorithms": ["ring"],
                                   "workload": {"compute_time": "10 ms", "gradient_size": "64 MiB",
                                                "bucket_size": "16 MiB", "compute_slowdown": slowdown}})

    both = scenario({"gpu3": 1.2, "gpu2": 1.1})
    assert [(w.link, "slower still (1.2x)" in w.message) for w in both.warnings] == [
        ("workload.compute_slowdown.gpu2", True)]
    assert run_scenario(both).steps == run_scenario(scenario({"gpu3": 1.2})).steps
    assert scenario({"gpu3": 1.2, "gpu2": 1.2}).warnings == []  # (either alone is the slowest)


@pytest.mark.parametrize("generate, gpus, said", [
    ({"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 4, "spines": 4, "oversubscription": 4,
      "nic_bandwidth": "100 Gb/s"}, [f"r0h{h}-gpu{g}" for h in range(2) for g in range(4)],
     ["spines", "oversubscription", "routing"]),
    ({"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 4, "spines": 4, "oversubscription": 4,
      "nic_bandwidth": "100 Gb/s"}, [f"r{r}h0-gpu{g}" for r in range(2) for g in range(4)], []),
    ({"kind": "cross_region", "regions": 2, "hosts_per_rack": 2, "gpus_per_host": 4, "wan_bandwidth": "10 Gb/s",
      "wan_latency": "5 ms", "gateway_bandwidth": "40 Gb/s"}, 8, ["wan_bandwidth", "wan_latency", "gateway_bandwidth"])])
def test_a_run_under_one_leaf_or_in_one_region_says_the_keys_above_it(generate, gpus, said):
    """Fuzz round ac F2: a run whose GPUs share one ToR (or one region) crosses no spine (or
    WAN), yet its fabric's spines and oversubscription (or WAN keys), and the routing (its
    routes have no two ways between switches), were read without a word, as on a one-rack
    (one-region) fabric they are said. Said, and true: every algorithm answers the same
    without them; across racks none is said."""
    from simnet import simulate

    routing = {"routing": "by_destination"} if generate["kind"] == "leaf_spine" else {}
    spec = scenario_from_dict({"name": "s", "topology": {"name": "t", "generate": generate, **routing},
                               "sizes": ["1 MiB"], "gpus": gpus})
    assert sorted(w.link for w in spec.warnings if w.kind == "key_unread") == sorted(
        "topology.routing" if key == "routing" else f"topology.generate.{key}" for key in said)
    bare = topology_from_dict({"name": "t", "generate": {k: v for k, v in generate.items() if k not in said},
                               **({} if "routing" in said else routing)})
    same = [simulate(spec.topology, a, 2**26).time_s == simulate(bare.subset(gpus), a, 2**26).time_s
            for a in ("ring", "tree", "direct", "ps", "halving_doubling")]
    assert all(same) or not said


def test_a_backward_fraction_said_to_change_nothing_changes_no_bit_of_the_step():
    """Fuzz round ac F7: with one bucket (bucket_size no smaller than the gradient) the
    backward_fraction is said to change nothing, yet the step differed in its last bits
    (0.012478037352000003 against 0.012478037352 s): the one bucket was ready at forward +
    backward, summed in floating point. The last bucket is ready as the backward pass ends,
    at the compute time itself."""
    from simnet.run.scenario import run_scenario

    def scenario(**fraction):
        return scenario_from_dict({"name": "s", "topology": LEAF2, "sizes": ["1 MiB"], "algorithms": ["ring"],
                                   "workload": {"compute_time": "10 ms", "gradient_size": "64 MiB",
                                                "bucket_size": "100 MiB", **fraction}})

    said = scenario(backward_fraction=0.1)
    assert "workload.backward_fraction" in [w.link for w in said.warnings]
    assert run_scenario(said).steps == run_scenario(scenario()).steps


def test_a_variant_setting_a_neutral_value_over_the_file_s_own_is_not_said_to_change_nothing(tmp_path, cli):
    """Fuzz round ad F1 (a false warning): a variant setting a bucket as large as the gradient,
    a slowdown of 1 or a delay of 0 over the file's own values (or a period every run outlasts
    over the file's period) was told it changed nothing, judged against the key's absence;
    leaving it out gives the file's value, another answer. Not said, and the options differ."""
    (tmp_path / "c.yaml").write_text(
        "name: c\ntopology:\n  name: t\n  generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2}\n"
        "sizes: [1 MiB]\nalgorithms: [ring]\n"
        "workload: {compute_time: 1 ms, gradient_size: 8 MiB, bucket_size: 2 MiB, compute_slowdown: {r0h0-gpu1: 1.5}}\n"
        "variants:\n  - {name: base}\n"
        "  - {name: onebucket, set: {workload.bucket_size: 16 MiB}}\n"
        "  - {name: cs1, set: {workload.compute_slowdown.r0h0-gpu1: 1}}\n")
    (tmp_path / "s.yaml").write_text(  # (stragglers beside buckets are refused: fuzz round ay, F3)
        "name: s\ntopology:\n  name: t\n  generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2}\n"
        "sizes: [1 MiB]\nalgorithms: [ring]\nworkload: {compute_time: 1 ms, gradient_size: 8 MiB}\n"
        "stragglers: {r0h0-gpu0: 500 us}\nvariants:\n  - {name: base}\n  - {name: st0, set: {stragglers.r0h0-gpu0: 0 us}}\n")
    (tmp_path / "j.yaml").write_text(
        "name: j\ntopology:\n  name: t\n  generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2}\n"
        "jobs:\n  - {name: a, gpus: [r0h0-gpu0, r1h0-gpu0], algorithm: ring, size: 4 MiB, repeat: 3, period: 2 ms}\n"
        "  - {name: b, gpus: [r0h0-gpu1, r1h0-gpu1], algorithm: ring, size: 4 MiB, repeat: 3}\n"
        "variants:\n  - {name: base}\n  - {name: short, set: {jobs.0.period: 1 us}}\n")
    for name in ("c", "s", "j"):
        compared = cli("compare", tmp_path / f"{name}.yaml", "-o", tmp_path / f"{name}.png")
        assert compared.exit_code == 0, compared.stderr
        assert "changed nothing" not in compared.stdout, compared.stdout
    from simnet.run.compare import compare_scenarios
    from simnet.spec.scenario import load_scenario

    rows = {row["option"]: row["merit_s"] for row in compare_scenarios([load_scenario(tmp_path / "c.yaml")])}
    assert all(rows[option] != rows["base"] for option in ("onebucket", "cs1")), rows
    rows = {row["option"]: row["merit_s"] for row in compare_scenarios([load_scenario(tmp_path / "s.yaml")])}
    assert rows["st0"] != rows["base"], rows
    rows = {row["option"]: row["merit_s"] for row in compare_scenarios([load_scenario(tmp_path / "j.yaml")])}
    assert rows["short"] != rows["base"], rows


@pytest.mark.parametrize("hosts, said", [(["r0h0"], ["nic_bandwidth", "spines", "oversubscription"]),
                                         (["r0h0", "r0h1"], ["spines", "oversubscription"]),
                                         (["r0h0", "r1h0"], [])])
def test_jobs_held_under_one_host_or_leaf_say_the_network_keys_they_leave_unread(hosts, said):
    """Fuzz round ad F4: jobs whose GPUs all sit in one host (or under one leaf) left the NIC
    keys (spines, oversubscription) unread, byte for byte, where the same GPUs as ``gpus:`` say
    so. Said of the jobs' GPUs, and true: the jobs answer the same without them."""
    from simnet.run.jobs import run_jobs

    generate = {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 4, "spines": 2,
                "oversubscription": 4, "nic_bandwidth": "400 Gb/s"}
    jobs = [{"name": name, "gpus": [f"{host}-gpu{g}" for host in hosts for g in gpus], "algorithm": "ring",
             "size": "4 MiB"} for name, gpus in (("a", (0, 1)), ("b", (2, 3)))]
    spec = scenario_from_dict({"name": "s", "topology": {"name": "t", "generate": generate}, "jobs": jobs})
    assert sorted(w.link for w in spec.warnings if w.kind == "key_unread") == sorted(
        f"topology.generate.{key}" for key in said)
    assert all("no job's routes read it" in w.message for w in spec.warnings if w.kind == "key_unread")
    bare = topology_from_dict({"name": "t", "generate": {k: v for k, v in generate.items() if k not in said}})
    if said:
        assert run_jobs(spec.topology, spec.jobs).to_dict() == run_jobs(bare, spec.jobs).to_dict()


@pytest.mark.parametrize("hosts, sequence, unread", [(2, 4096, True), (1, 1024, False)])
def test_an_amd_training_step_says_an_msccl_variable_that_changed_none_of_its_exchanges(monkeypatch, hosts, sequence,
                                                                                        unread):
    """Fuzz round ad F5: ``RCCL_MSCCL_ENABLE=0`` on an MI300X training step whose exchanges no
    MSCCL schedule takes (its 64 MiB TP AllReduces are above MSCCL's sizes) changed nothing
    without a word, where a run says so. Said exactly where the step is the same without it
    (one host's 8 MiB TP AllReduces run MSCCL's schedule)."""
    from simnet.run.scenario import run_scenario

    fabric = {"name": "m", "generate": {"kind": "leaf_spine", "gpu": "mi300x", "racks": 1, "hosts_per_rack": hosts,
                                        "gpus_per_host": 8}}
    model = {"layers": 2, "hidden": 4096, "heads": 32, "ffn": 14336, "sequence": sequence, "vocabulary": 1000}
    scenario = scenario_from_dict({"name": "s", "topology": fabric, "training": {
        "model": model, "parallelism": {"tp": 8, "micro_batches": 2}, "efficiency": 0.5}})
    plain = run_scenario(scenario).to_dict()
    monkeypatch.setenv("RCCL_MSCCL_ENABLE", "0")
    steered = run_scenario(scenario).to_dict()
    said = [w for w in steered.get("warnings", []) if w["kind"] == "key_unread" and w["link"] == "RCCL_MSCCL_ENABLE"]
    assert (steered["training"] == plain["training"]) == unread
    assert len(said) == (1 if unread else 0), steered.get("warnings")


@pytest.mark.parametrize("variable, value, said", [("NCCL_MIN_P2P_NCHANNELS", "4", True),
                                                   ("NCCL_NCHANNELS_PER_NET_PEER", "1", True),
                                                   ("NCCL_MAX_NCHANNELS", "1", False)])
def test_compare_says_an_nccl_variable_no_option_reads_once(tmp_path, cli, variable, value, said):
    """Fuzz round ad F9: NCCL's send/recv channel variables beside AllReduce options changed
    nothing, and run and sweep said so, compare did not. Once, where every option's every run
    says it; not where a run reads it (NCCL_MAX_NCHANNELS=1 narrows the ring)."""
    (tmp_path / "c.yaml").write_text(
        "name: c\ntopology:\n  name: t\n  generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2}\n"
        "sizes: [16 MiB]\nalgorithms: [ring]\nvariants:\n  - {name: a}\n"
        "  - {name: b, set: {topology.generate.nic_bandwidth: 100 Gb/s}}\n")
    compared = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png", env={variable: value})
    assert compared.exit_code == 0, compared.stderr
    printed = " ".join(compared.stdout.split())
    assert printed.count(f"warning key_unread: {variable}={value} changed nothing") == (1 if said else 0), printed


@pytest.mark.parametrize("key, text", [("stragglers", "stragglers: {}"), ("faults", "faults: []"),
                                       ("options", "options: {}"), ("sweep", "sweep: {}"),
                                       ("variants", "variants: []"),
                                       ("workload.compute_slowdown", "workload: {compute_time: 1 ms, gradient_size: "
                                                                     "1 MiB, compute_slowdown: {}}")])
def test_an_empty_mapping_or_list_is_said_to_change_nothing(key, text):
    """Fuzz round ad F14: empty stragglers, faults, options, sweep, variants and slowdowns ran
    without a word (as without them), where ``jobs: []`` is refused. Said on their line."""
    spec = scenario_from_dict(yaml.safe_load(f"name: s\ntopology: {{name: b, generate: {{kind: nvswitch, gpus: 2}}}}\n"
                                             f"sizes: [1 MiB]\nalgorithms: [ring]\n{text}\n"))
    said = [w for w in spec.warnings if w.kind == "key_unread"]
    assert [w.link for w in said] == [key] and "an empty " in said[0].message


def test_a_spine_oversubscription_of_one_on_one_spine_tier_is_said_to_change_nothing():
    """Fuzz round ad F14: ``spine_oversubscription: 1`` where the leaves fit one spine tier was
    taken without a word, where 2 is refused (no core tier is built for it to shape)."""
    said = topology_from_dict({"name": "r", "generate": {"kind": "rail_optimized", "nodes_per_unit": 2,
                                                         "spine_oversubscription": 1}}).unread
    assert len(said) == 1 and said[0].startswith("generate.spine_oversubscription") and "one spine tier" in said[0]


def test_compare_says_an_option_that_answers_as_another_does(tmp_path, cli):
    """Fuzz round ad F14: a variant whose set repeats the file's values (collective, model, a
    generator default) was ranked as an option of its own, identical, without a word. An
    option answering as an earlier one does, run for run to the picosecond, is said; one
    that differs is not."""
    (tmp_path / "c.yaml").write_text(
        "name: c\ntopology: {name: b, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2}}\n"
        "sizes: [1 MiB]\nalgorithms: [ring]\nvariants:\n  - {name: base}\n"
        "  - {name: same, set: {collective: allreduce, model: nccl, topology.generate.oversubscription: 1}}\n"
        "  - {name: slow, set: {topology.generate.nic_bandwidth: 10 Gb/s}}\n"
        "  - {name: dear, cost: 2 M$, set: {model: nccl}}\n")
    printed = _compared(cli, tmp_path / "c.yaml")
    assert "option same answers as option base does, every run to the picosecond: what sets them apart" in printed
    assert "option dear answers as option base does, every run to the picosecond: their sets change no run here, " \
        "only their costs differ" in printed  # (the cost does set them apart: per M$)
    assert "option slow answers" not in printed
    from simnet.run.compare import compare_scenarios
    from simnet.spec.scenario import load_scenario

    rows = {row["option"]: row for row in compare_scenarios([load_scenario(tmp_path / "c.yaml")])}
    assert rows["same"]["collective_time_s"] == rows["base"]["collective_time_s"] != rows["slow"]["collective_time_s"]


def test_a_sweep_setting_a_neutral_value_over_the_file_s_own_is_not_said_to_change_nothing(tmp_path, cli):
    """As compare's variants (fuzz round ad F1): ``--set stragglers.GPU=0us`` over the file's
    500 us was said to change nothing at any point, judged against the key's absence, while
    every point differs from the file's run. Not said there; said where the file has no such
    key (a delay of 0 on another GPU)."""
    (tmp_path / "s.yaml").write_text(
        "name: s\ntopology: {name: b, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2}}\n"
        "sizes: [1 MiB]\nalgorithms: [ring]\nstragglers: {r0h0-gpu0: 500 us}\n")
    over = cli("sweep", tmp_path / "s.yaml", "--set", "stragglers.r0h0-gpu0=0us", "--out", tmp_path / "a")
    assert over.exit_code == 0, over.stderr
    assert "changed nothing" not in over.stdout
    point = json.loads((tmp_path / "a" / "results.jsonl").read_text().splitlines()[0])
    assert point["sizes"][0]["time_s"] < 400e-6  # the file's run waits 500 us for its late GPU
    other = cli("sweep", tmp_path / "s.yaml", "--set", "stragglers.r1h0-gpu1=0us", "--out", tmp_path / "b")
    assert "stragglers.r1h0-gpu1 changed nothing at any point" in " ".join(other.stdout.split())


@pytest.mark.parametrize("hosts, said", [((["r0h0"], ["r1h0"]), ["nic_bandwidth", "spines", "oversubscription"]),
                                         ((["r0h0", "r0h1"], ["r1h0", "r1h1"]), ["spines", "oversubscription"]),
                                         ((["r0h0"], ["r0h1", "r1h0"]), [])])
def test_jobs_each_under_their_own_host_or_leaf_say_the_keys_no_job_reads(hosts, said):
    """Fuzz round ae F1: two jobs each in a host (or under a leaf) of their own left the NIC keys
    (spines, oversubscription) unread, byte for byte, unsaid: they were judged on all the jobs'
    GPUs together, which span the fabric. Judged job by job: said where no job's routes cross
    them, and true: the jobs answer the same without them."""
    from simnet.run.jobs import run_jobs

    generate = {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 2, "spines": 2,
                "oversubscription": 4, "nic_bandwidth": "400 Gb/s"}
    jobs = [{"name": name, "hosts": held, "algorithm": "ring", "size": "4 MiB"} for name, held in zip("ab", hosts)]
    spec = scenario_from_dict({"name": "s", "topology": {"name": "t", "generate": generate}, "jobs": jobs})
    assert sorted(w.link for w in spec.warnings if w.kind == "key_unread") == sorted(
        f"topology.generate.{key}" for key in said)
    assert all("no job's routes read it" in w.message for w in spec.warnings if w.kind == "key_unread")
    if said:
        bare = topology_from_dict({"name": "t", "generate": {k: v for k, v in generate.items() if k not in said}})
        assert run_jobs(spec.topology, spec.jobs).to_dict() == run_jobs(bare, spec.jobs).to_dict()


def test_a_set_over_the_file_s_value_that_counts_in_neither_is_still_said(tmp_path, cli):
    """Review of 4d77e48/47e2b9d: judging a variant's (a --set's) key against the file's own value
    dropped the warning where neither counts: a straggler of a GPU the option's gpus: leaves out
    was said before and nothing after. Said again there, in compare and in sweep; a neutral
    value over the file's felt one stays unsaid, also in a sweep of all algorithms (the skipped
    ones' note overwrote the swept keys)."""
    head = ("name: c\ntopology:\n  name: t\n  generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, "
            "gpus_per_host: 2}\nsizes: [1 MiB]\n")
    (tmp_path / "v.yaml").write_text(head + "algorithms: [ring]\nstragglers: {r0h0-gpu0: 500 us}\nvariants:\n"
                                     "  - {name: base}\n  - {name: sub, set: {gpus: [r1h0-gpu0, r1h0-gpu1], "
                                     "stragglers.r0h0-gpu0: 200 us}}\n")
    compared = cli("compare", tmp_path / "v.yaml", "-o", tmp_path / "v.png")
    assert "variants[1].set.stragglers.r0h0-gpu0 (" in " ".join(compared.stdout.split()), compared.stdout
    (tmp_path / "s.yaml").write_text(head + "algorithms: [ring]\ngpus: [r1h0-gpu0, r1h0-gpu1]\n"
                                     "stragglers: {r0h0-gpu0: 500 us}\n")
    swept = cli("sweep", tmp_path / "s.yaml", "--set", "stragglers.r0h0-gpu0=0us,100us", "--out", tmp_path / "a")
    assert "warning key_unread: stragglers.r0h0-gpu0 (" in " ".join(swept.stdout.split()), swept.stdout
    (tmp_path / "all.yaml").write_text(head + "algorithms: all\nstragglers: {r0h0-gpu0: 500 us}\n")
    neutral = cli("sweep", tmp_path / "all.yaml", "--set", "stragglers.r0h0-gpu0=0us", "--out", tmp_path / "b")
    assert neutral.exit_code == 0 and "skipped" in neutral.stdout and "changed nothing" not in neutral.stdout


@pytest.mark.parametrize("mapping", [False, True])
@pytest.mark.parametrize("size, file_chunk, set_chunk, said", [("1 MiB", "4 MiB", "8 MiB", ["a", "b"]),
                                                              ("1 MiB", "64 KiB", "8 MiB", ["a", "b"]),
                                                              ("64 MiB", "2 MiB", "1 GiB", [])])
def test_an_option_set_over_the_file_s_option_is_said_where_neither_counts(tmp_path, cli, size, file_chunk,
                                                                           set_chunk, said, mapping):
    """Left from the review of round ad: compare dropped an ``options.`` key a variant sets over
    the file's own wherever both were written, so a chunk_size no run cuts by (pieces of 1 MiB
    over 4 GPUs are far below 4 or 8 MiB) was said of the option that keeps the file's value
    only. Judged against the file's value as scenario keys are: said of both where the file's
    value answers as no chunk_size does (too coarse to cut, or finer than NCCL's chunk and
    raised to it, which compare said of no option either); where the file's 2 MiB cuts a
    64 MiB run's pieces and the variant's 1 GiB does not, the set moves the option's time and
    is not said. The same where the variant sets a mapping of options (the review: the whole
    mapping was put back, message_overhead and all, so the set always seemed to count)."""
    written = (f"options: {{chunk_size: {set_chunk}, message_overhead: 1 us}}" if mapping else
               f"options.chunk_size: {set_chunk}")
    (tmp_path / "c.yaml").write_text(
        "name: c\ntopology:\n  name: t\n  generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2}"
        f"\nsizes: [{size}]\nalgorithms: [ring]\noptions: {{chunk_size: {file_chunk}}}\nvariants:\n"
        "  - {name: a, set: {topology.generate.nic_bandwidth: 100 Gb/s}}\n"
        f"  - {{name: b, set: {{topology.generate.nic_bandwidth: 200 Gb/s, {written}}}}}\n")
    compared = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
    assert compared.exit_code == 0, compared.stderr
    text = " ".join(compared.stdout.split())
    assert [o for o in "ab" if f"options.chunk_size changed nothing in any run of option {o} " in text] == said, text
    if not said:  # the file's value cuts the pieces: b's set gives b another time than the file's value would
        from simnet.run.compare import compare_scenarios
        from simnet.spec.scenario import load_scenario

        (tmp_path / "k.yaml").write_text((tmp_path / "c.yaml").read_text().replace(
            f"chunk_size: {set_chunk}", f"chunk_size: {file_chunk}"))
        rows, kept = ({row["option"]: row["merit_s"] for row in compare_scenarios([load_scenario(tmp_path / name)])}
                      for name in ("c.yaml", "k.yaml"))
        assert rows["b"] != kept["b"], (rows, kept)


@pytest.mark.parametrize("variable, value, what", [
    ("NCCL_MAX_P2P_NCHANNELS", "1", "training:\n  model: {layers: 4, hidden: 4096, heads: 32, ffn: 14336, sequence: "
                                    "4096, vocabulary: 1000}\n  parallelism: {tp: 2, pp: 2, micro_batches: 4}\n"
                                    "  efficiency: 0.5\n"),
    ("NCCL_MAX_NCHANNELS", "1", "workload: {compute_time: 1 ms, gradient_size: 64 MiB, bucket_size: 32 MiB}\n")])
def test_a_variable_what_compare_ranks_by_reads_is_not_said_to_change_nothing(tmp_path, cli, variable, value, what):
    """Review of 690dadc: an NCCL variable the sizes' runs leave unread but the training step
    (its pipeline sends) or the workload's buckets read was said to change nothing in any run of
    any option, while the ranked step moved (77.80 -> 81.02 ms; 2.08 -> 9.42 ms). Not said;
    the step moves with it."""
    (tmp_path / "c.yaml").write_text(
        "name: c\ntopology:\n  name: t\n  generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2}"
        "\nsizes: [1 KiB]\nalgorithms: [ring]\n" + what + "variants:\n  - {name: a}\n"
        "  - {name: b, set: {topology.generate.nic_bandwidth: 100 Gb/s}}\n")
    plain = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "p.png")
    steered = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "s.png", env={variable: value})
    assert steered.exit_code == plain.exit_code == 0, steered.stderr
    assert variable not in steered.stdout, steered.stdout
    ranked = [line for line in steered.stdout.splitlines() if line.startswith("│ a ")]
    assert ranked != [line for line in plain.stdout.splitlines() if line.startswith("│ a ")]


@pytest.mark.parametrize("topology, said", [("dgx_a100.yaml", True), ("two_racks.yaml", False)])
def test_a_placement_that_chooses_what_packed_does_is_said(root, topology, said):
    """Fuzz round ae F2: ``placement: spread`` on GPUs that all sit in one host chose exactly
    packed's GPUs, and run, sweep and compare said nothing (only a job taking every GPU still
    free was said). Said where the jobs land where packed puts them, and true: the same times;
    across hosts spread chooses otherwise, unsaid."""
    from simnet.run.jobs import run_jobs

    def scenario(placement: str):
        return scenario_from_dict({"name": "j", "topology": str(root / "topologies" / topology), "jobs": [
            {"name": "a", "gpus": 2, "placement": placement, "size": "16 MiB"},
            {"name": "b", "gpus": 2, "placement": placement, "size": "4 MiB"}]})

    spread = scenario("spread")
    links = [w.link for w in spread.warnings if w.kind == "key_unread" and w.link.endswith("placement")]
    assert links == (["jobs[0].placement", "jobs[1].placement"] if said else [])
    assert (run_jobs(spread.topology, spread.jobs).jobs == run_jobs(spread.topology, scenario("packed").jobs).jobs) \
        == said
    if said:  # round af: under the scenario's own spread, the job's spread is said as the scenario's, not the default
        both = scenario_from_dict({**spread.data, "placement": "spread", "jobs": [
            {k: v for k, v in spread.data["jobs"][0].items() if k != "placement"}, spread.data["jobs"][1]]})
        assert any("spread chose the GPUs spread does (as the scenario's placement)" in w.message
                   for w in both.warnings)


def test_a_topology_s_empty_nodes_or_links_are_said_to_change_nothing():
    """Fuzz round ae F7: a topology's ``nodes: []`` or ``links: []`` ran without a word, where a
    scenario's empty containers are said and ``generate: []`` is refused."""
    said = topology_from_dict({"name": "t", "generate": {"kind": "nvswitch", "gpus": 2}, "nodes": [],
                               "links": []}).unread
    assert [entry.partition(" ")[0] for entry in said] == ["nodes", "links"]
    assert all("an empty list, so it changed nothing here" in entry for entry in said)


def test_sweep_and_compare_say_a_fault_after_every_run(tmp_path, cli):
    """Round af (LOW): a fault at 5 s, after every run of every point, changed nothing in a
    sweep or a comparison, and they said nothing, where simnet run says fault_after_end."""
    head = ("name: s\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2}}"
            "\nsizes: [1 MiB]\nalgorithms: [ring]\nfaults: [{at: 5 s, link: [tor1, spine0], bandwidth: 25%}]\n")
    (tmp_path / "s.yaml").write_text(head)
    swept = cli("sweep", tmp_path / "s.yaml", "--gpus", "2,4", "--out", tmp_path / "out")
    assert "warning fault_after_end: at every point of this sweep every run ended before" in " ".join(
        swept.stdout.split()), swept.stdout
    (tmp_path / "c.yaml").write_text(head + "variants:\n  - {name: a}\n"
                                            "  - {name: b, set: {topology.generate.nic_bandwidth: 100 Gb/s}}\n")
    compared = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
    printed = " ".join(compared.stdout.split())
    assert "option a: every run ended before some of its faults" in printed and "option b: every run" in printed


def test_a_run_beside_a_workload_whose_buckets_read_a_variable_does_not_say_it_unread(monkeypatch):
    """Fuzz round ag: a size's run said NCCL_PROTO=Simple changed nothing there while the
    workload's buckets read it (the iteration moved 5.265 -> 6.433 ms): the run's word is
    taken back where the buckets beside it read the variable, as where a training step does."""
    from simnet.run.scenario import run_scenario

    scenario = scenario_from_dict({"name": "s", "topology": {"name": "b", "generate": {"kind": "nvswitch", "gpus": 8}},
                                   "sizes": ["256 MiB"], "algorithms": ["ring"],  # (Simple there anyway)
                                   "workload": {"compute_time": "1 ms", "gradient_size": "16 MiB",
                                                "bucket_size": "1 MiB"}})  # LL128 there
    plain = run_scenario(scenario)
    monkeypatch.setenv("NCCL_PROTO", "Simple")
    steered = run_scenario(scenario)
    assert steered.steps[0]["iteration_time_s"] != plain.steps[0]["iteration_time_s"]
    assert not [w for run in steered.runs for w in run.warnings if w.link == "NCCL_PROTO"]


def _compared(cli, path: Path) -> str:
    """``simnet compare PATH`` as a user types it: its output, lines joined, once it succeeded."""
    compared = cli("compare", path, "-o", path.with_suffix(".png"))
    assert compared.exit_code == 0, compared.stderr
    return " ".join(compared.stdout.split())


@pytest.mark.parametrize("algorithm", ["ring", "auto"])
@pytest.mark.parametrize("gpus, size, said", [(1, "1 MiB", True), (4, "0 B", True), (2, "1 MiB", False)])
def test_options_of_a_run_that_exchanges_nothing_are_said_to_change_nothing(tmp_path, cli, gpus, size, said,
                                                                            algorithm):
    """Fuzz round ah: ``gpus: 1`` answered every algorithm with 0 ns while its options
    (channels, chunk_size, reduce_bandwidth) changed nothing, unsaid (a job of one GPU is
    refused). One GPU, or a run of 0 B, exchanges nothing: each option given is said, of
    ``auto`` too (the review: auto at 0 B weighed its candidates and said none)."""
    (tmp_path / "s.yaml").write_text(
        f"name: s\ntopology: {{name: t, generate: {{kind: nvswitch, gpus: 4}}}}\nsizes: [{size}]\n"
        f"algorithms: [{algorithm}]\ngpus: {gpus}\noptions: {{chunk_size: 256 KiB, reduce_bandwidth: 1 GB/s}}\n")
    ran = cli("run", tmp_path / "s.yaml", "--json", tmp_path / "s.json")
    assert ran.exit_code == 0, ran.stderr
    run = json.loads((tmp_path / "s.json").read_text())["runs"][0]
    unread = sorted(w["link"] for w in run["warnings"] if w["kind"] == "option_unread")
    assert (run["time_s"] == 0) == said
    assert (unread == ["options.chunk_size", "options.reduce_bandwidth"]) == said, run["warnings"]


def test_a_swept_key_the_file_writes_that_counts_in_neither_is_said(tmp_path, cli):
    """Fuzz round ai: sweeping stragglers.sigma (and the distribution to exponential, which has
    no sigma) over a file that writes sigma for its lognormal said nothing, though every point
    left sigma unread and the file's own sigma answers alike there. Judged against the file's
    value by running a point with it: said here; a neutral value over the file's felt one
    (a straggler's 0 us over its 500 us) stays unsaid."""
    head = ("name: s\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2}}"
            "\nsizes: [1 MiB]\nalgorithms: [ring]\n")
    (tmp_path / "s.yaml").write_text(head + "stragglers: {distribution: lognormal, mean: 50 us, sigma: 1, seed: 7}\n")
    swept = cli("sweep", tmp_path / "s.yaml", "--set", "stragglers.distribution=exponential", "--set",
                "stragglers.sigma=0.5,2", "--out", tmp_path / "a", "--workers", "1")
    assert swept.exit_code == 0 and "stragglers.sigma changed nothing at any point" in " ".join(swept.stdout.split())
    assert len({r["sizes"][0]["time_s"] for r in _records(tmp_path / "a")}) == 1
    (tmp_path / "n.yaml").write_text(head + "stragglers: {r0h0-gpu0: 500 us}\n")
    neutral = cli("sweep", tmp_path / "n.yaml", "--set", "stragglers.r0h0-gpu0=0us", "--out", tmp_path / "b",
                  "--workers", "1")
    assert neutral.exit_code == 0 and "changed nothing" not in neutral.stdout, neutral.stdout


def test_a_variant_s_mapping_that_keeps_a_key_moot_in_its_option_is_said(tmp_path, cli):
    """Fuzz round ai: a variant setting ``training.parallelism: {tp: 8, pp: 2, ..., fsdp: true}``
    over a file whose own parallelism shards (dp 16) left fsdp moot in that option (dp 1), and
    compare said nothing: the key was judged against the file's whole mapping (dp 16, where
    fsdp counts), not against the file's fsdp inside the variant's mapping. Said now."""
    (tmp_path / "c.yaml").write_text(
        "name: c\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 8}}\n"
        "training:\n  model: {layers: 8, hidden: 4096, heads: 32, ffn: 14336, sequence: 4096, vocabulary: 32000}\n"
        "  parallelism: {fsdp: true}\n  efficiency: 0.5\nvariants:\n  - {name: FSDP}\n"
        "  - {name: 3D, set: {training.parallelism: {tp: 8, pp: 2, micro_batches: 16}}}\n"
        "  - {name: 3Dfsdp, set: {training.parallelism: {tp: 8, pp: 2, micro_batches: 16, fsdp: true}}}\n")
    compared = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
    assert compared.exit_code == 0, compared.stderr
    text = " ".join(compared.stdout.split())
    assert "variants[2].set.training.parallelism.fsdp" in text and "fsdp changed nothing here (in option 3Dfsdp)" in text
    assert "(in option FSDP" not in text


@pytest.mark.parametrize("rails, said", [(1, True), (2, False)])
def test_leaf_oversubscription_under_one_leaf_is_said_to_change_nothing(rails, said):
    """Fuzz round ai: a rail_optimized fabric of one unit and one rail puts every NIC under one
    leaf, so leaf_oversubscription (the leaves' uplinks) changed nothing, unsaid. Said there;
    with two rails, routes between rails climb to the spines and it counts."""
    from simnet import simulate

    def fabric(oversubscription):
        return topology_from_dict({"name": "r", "generate": {
            "kind": "rail_optimized", "units": 1, "nodes_per_unit": 2, "gpus_per_node": 8, "rails": rails,
            "leaf_oversubscription": oversubscription}})

    plain, written = fabric(1), fabric(4)
    assert any(e.startswith("generate.leaf_oversubscription") for e in written.unread) == said
    times = {simulate(topo, "direct", 2**24).time_s for topo in (plain, written)}
    assert (len(times) == 1) == said


@pytest.mark.parametrize("kv_heads", [None, 8])
def test_heads_without_kv_heads_is_said_to_change_no_time(kv_heads):
    """Fuzz round ai: a model's heads without kv_heads gave the same step, MFU and FLOPs at 8,
    32 and 128 heads, unsaid: without grouped-query attention every head has its own keys and
    values, so the FLOPs and sizes follow hidden. Said; with kv_heads it sizes K and V, and
    counts (the step moves)."""
    from simnet.run.training import training_step
    from simnet.spec.scenario import scenario_from_dict

    def step(heads):
        model = {"layers": 4, "hidden": 4096, "heads": heads, "ffn": 14336, "sequence": 4096, "vocabulary": 32000,
                 **({"kv_heads": kv_heads} if kv_heads else {})}
        spec = scenario_from_dict({"name": "s", "topology": LEAF2, "training": {
            "model": model, "parallelism": {"tp": 2}, "efficiency": 0.5}})
        return spec, training_step(spec)["step_s"]

    (spec, fewer), (_, more) = step(32), step(64)
    said = [w.link for w in spec.warnings if w.kind == "key_unread"]
    assert ("training.model.heads" in said) == (kv_heads is None)
    assert (fewer == more) == (kv_heads is None)


@pytest.mark.parametrize("node_by_node", [False, True])
@pytest.mark.parametrize("key, value, readers", [("nvls", False, ("nvls", "nvls_tree")),
                                                 ("sharp", True, ("collnet_direct", "collnet_chain", "nvls"))])
def test_a_switch_capability_no_algorithm_of_the_run_reduces_on_is_said(key, value, readers, node_by_node):
    """Fuzz round ai: a generator's ``nvls: false`` or ``sharp: true`` beside ring and tree
    changed nothing, unsaid, while NCCL_NVLS_ENABLE=0 in the same run was said. Said of each
    run whose algorithm does not reduce on such a switch (and true: the same time without it);
    not of auto, which weighs the algorithms that do. The same key written on the switches
    node by node (the generator's fabric exported) is said alike, of the first switch with it."""
    from simnet import simulate

    generate = {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 8}
    written, plain = (topology_from_dict({"name": "t", "generate": {**generate, **extra}})
                      for extra in ({key: value}, {}))
    if node_by_node:
        from simnet.topology.export import topology_as_dict

        nodes = topology_as_dict(written)
        nodes["nodes"] = [{k: v for k, v in node.items() if k != "nvls" or key == "nvls"} for node in nodes["nodes"]]
        written = topology_from_dict(nodes)
        first = next(i for i, node in enumerate(nodes["nodes"]) if key in node)
    link = f"nodes[{first}].{key}" if node_by_node else f"generate.{key}"
    for algorithm in ("ring", "tree", "auto"):
        run = simulate(written, algorithm, 2**26)
        said = [w.message for w in run.warnings if w.kind == "key_unread" and w.link == link]
        assert bool(said) == (algorithm != "auto"), (algorithm, said)
        assert not said or f"({' and '.join(readers)} do, and auto weighs them)" in said[0]
        if said:
            assert run.time_s == simulate(plain, algorithm, 2**26).time_s


@pytest.mark.parametrize("env", [{}, {"NCCL_ALGO": "Ring"}, {"NCCL_ALGO": "Tree"}])  # review 68: NCCL_ALGO too
@pytest.mark.parametrize("algorithm", ["ring", "tree", "auto"])
def test_sharp_that_gives_nccl_more_channels_is_not_said_unread(algorithm, env):
    """Fuzz round am, M1: on two hosts of four H100, ``sharp: true`` was said to change nothing
    of ring and tree, yet NCCL opens half as many channels again where CollNet may run and a
    host's GPUs outrun its NICs (connect.cc ncclTopoPostset; ``search.comm_channels``): 16 -> 22
    at 1 MiB, and the times moved (tree 65.36 -> 66.69 us). Not said where the plan reads it;
    still said of simnet's own algorithms, whose runs it leaves alike."""
    from simnet import simulate

    generate = {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 4, "gpu": "h100"}
    marked, plain = (topology_from_dict({"name": "t", "generate": {**generate, **extra}})
                     for extra in ({"sharp": True}, {}))
    run, without = simulate(marked, algorithm, 2**20, env=env), simulate(plain, algorithm, 2**20, env=env)
    assert run.time_s != without.time_s
    if run.algorithm == without.algorithm:  # (auto unrestricted picks CollNet with it: read as a reader's)
        assert (run.nccl_channels, without.nccl_channels) == (22, 16)
    assert not [w for w in run.warnings if w.kind == "key_unread" and w.link == "generate.sharp"]
    own = simulate(marked, "binary_tree", 2**20, env=env)
    assert "generate.sharp" in [w.link for w in own.warnings if w.kind == "key_unread"]
    assert own.time_s == simulate(plain, "binary_tree", 2**20).time_s


def test_nvls_true_that_makes_a_shared_switch_nvlink_is_not_said_unread():
    """Review 65 (of the node-by-node keys above): ``nvls: true`` on a switch two hosts share
    makes its links NVLink (docs/topologies.md, an NVL72 rack's switch), which every run reads:
    a ring over it took 1.317 ms with the key and 9.818 ms without, yet was said to change
    nothing. Not said where it changes the fabric."""
    from simnet import simulate

    def rack(nvls):
        nodes, links = [{"id": "nvsw", "kind": "switch", **({"nvls": True} if nvls else {})}], []
        for h in range(2):
            for g in range(4):
                nodes.append({"id": f"h{h}g{g}", "kind": "gpu", "host": f"h{h}", "gpu": "h100"})
                links.append({"a": f"h{h}g{g}", "b": "nvsw", "bandwidth": "450 GB/s", "latency": "0.25 us"})
        return topology_from_dict({"name": "x", "nodes": nodes, "links": links})

    marked, plain = simulate(rack(True), "ring", 2**28), simulate(rack(False), "ring", 2**28)
    assert marked.time_s < plain.time_s
    assert not [w for w in marked.warnings if w.kind == "key_unread"]


@pytest.mark.parametrize("key, variable, value, said_so", [
    ("nvls", "NCCL_NVLS_ENABLE", "0", "NCCL_NVLS_ENABLE=0 turns it off"),
    ("sharp", "NCCL_COLLNET_ENABLE", "0", "NCCL_COLLNET_ENABLE=0 turns it off"),
    ("nvls", "NCCL_ALGO", "Ring,Tree", "NCCL_ALGO=Ring,Tree leaves auto no algorithm that reads it"),  # review 65
    ("sharp", "NCCL_ALGO", "^CollNetDirect,CollNetChain,NVLS", "leaves auto no algorithm that reads it")])
def test_a_switch_capability_the_environment_turns_off_is_said_of_auto(key, variable, value, said_so):
    """A generator's ``nvls: true`` (on A100s' successors) or ``sharp: true`` beside auto under
    the variable that turns that reduction off (NCCL_NVLS_ENABLE=0, NCCL_COLLNET_ENABLE=0)
    changed nothing, unsaid: auto weighs no algorithm that reduces there. Said, and true: the
    same pick and time as the fabric without it."""
    from simnet import simulate

    generate = {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 8, "nvls": False}
    written, plain = (topology_from_dict({"name": "t", "generate": {**generate, **extra}})
                      for extra in ({key: True}, {}))
    for env in ({variable: value}, {}):
        run = simulate(written, "auto", 2**26, env=env)
        said = [w.message for w in run.warnings if w.kind == "key_unread" and w.link == f"generate.{key}"]
        assert bool(said) == bool(env), (env, said)
        if said:
            assert said_so in said[0]
            other = simulate(plain, "auto", 2**26, env=env)
            assert (run.algorithm, run.time_s) == (other.algorithm, other.time_s)


@pytest.mark.parametrize("ps_server", ["worker0", ["worker1", "worker2"], "ps1", "ps0"])
def test_a_ps_star_s_servers_ps_does_not_serve_from_are_said(ps_server):
    """A ps_star's ``servers`` and ``ps_bandwidth`` beside a ps whose ``ps_server`` names GPUs
    changed nothing, unsaid (the run used none of the parameter servers), and the idle
    servers' remedy asked for ``ps_servers``, which ps_server overrides. Said, and true: the
    same time on the star without them; the remedy names ps_server."""
    from simnet import simulate

    generate = {"kind": "ps_star", "workers": 4, "gpu": "h100"}
    written, plain = (topology_from_dict({"name": "t", "generate": {**generate, **extra}})
                      for extra in ({"servers": 4, "ps_bandwidth": "100 Gb/s"}, {}))
    run = simulate(written, "ps", 2**24, ps_server=ps_server)
    said = {w.link for w in run.warnings if w.kind == "key_unread"}
    on_gpus = ps_server not in ("ps0", "ps1")  # (review 65: ps0, the first, was taken for ps_servers' pick)
    assert said == ({"generate.servers", "generate.ps_bandwidth"} if on_gpus else set()), said
    if on_gpus:
        assert run.time_s == simulate(plain, "ps", 2**24, ps_server=ps_server).time_s
    (idle,) = [w.message for w in run.warnings if w.kind == "idle_servers"]
    assert "options.ps_server names" in idle and "ps_servers: 4" in idle


def test_compare_of_files_one_with_a_workload_prices_what_it_ranks_by(tmp_path, cli, figures):
    """Fuzz round aj (SERIOUS): comparing a file with a workload beside one without ranked them
    by their collective's time and priced busbw per M$, under a column headed "speedup per M$"
    (352 shown where the speedup per M$ is 7.74); the plot was titled after the first file
    alone. The column says what it holds; the plot names both files."""
    head = "topology: {name: t, generate: {kind: nvswitch, gpus: 8}}\nsizes: [64 MiB]\nalgorithms: [ring]\n"
    (tmp_path / "a.yaml").write_text("name: A\n" + head + "cost: 2 M$\n")
    (tmp_path / "d.yaml").write_text("name: D\n" + head + "cost: 1 M$\n"
                                     "workload: {compute_time: 10 ms, gradient_size: 64 MiB}\n")
    compared = cli("compare", tmp_path / "a.yaml", tmp_path / "d.yaml", "-o", tmp_path / "c.png")
    assert compared.exit_code == 0, compared.stderr
    assert "busbw per M$" in compared.stdout and "speedup per M$" not in compared.stdout
    from simnet.run.compare import compare_scenarios
    from simnet.spec.scenario import load_scenario

    rows = compare_scenarios([load_scenario(tmp_path / name) for name in ("a.yaml", "d.yaml")])
    assert all(row["per_cost"] == pytest.approx(row["busbw_GBps"] / (row["cost"] / 1e6)) for row in rows)
    (ax,) = figures["c.png"].axes
    assert ax.get_title().startswith("A vs D:")


@pytest.mark.parametrize("collective, own", [("all_to_all", "pairwise"), ("reduce_scatter", "pat")])
def test_algorithms_all_under_c_runs_every_algorithm_of_that_collective(tmp_path, cli, collective, own):
    """Fuzz round aj: ``algorithms: all`` in an AllReduce file run with ``-c all_to_all`` (or
    ``reduce_scatter``) ran the AllReduce algorithms that collective has, and left out its own
    (pairwise, pat) without a word. ``all`` is that collective's all (a GPU per host: PAT's)."""
    alone = {**LEAF2, "generate": {**LEAF2["generate"], "gpus_per_host": 1}}
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {alone}\nsizes: [1 MiB]\nalgorithms: all\n")
    (tmp_path / "c.yaml").write_text(f"name: s\ntopology: {alone}\nsizes: [1 MiB]\nalgorithms: all\n"
                                     f"collective: {collective}\n")
    ran = cli("run", tmp_path / "s.yaml", "-c", collective, "--json", tmp_path / "s.json")
    written = cli("run", tmp_path / "c.yaml", "--json", tmp_path / "c.json")
    assert ran.exit_code == written.exit_code == 0, ran.stderr + written.stderr
    algorithms = [[r["algorithm"] for r in json.loads((tmp_path / f"{n}.json").read_text())["runs"]] for n in "sc"]
    assert own in algorithms[0] and sorted(algorithms[0]) == sorted(algorithms[1])


@pytest.mark.parametrize("gpus, said", [("4", True), ("[r0h0-gpu0, r0h0-gpu1, r1h0-gpu0, r1h0-gpu1]", True),
                                        ("2", False), ("[r1h0-gpu0, r1h0-gpu1, r0h0-gpu0, r0h0-gpu1]", True),
                                        ("[r1h0-gpu0, r0h0-gpu0]", False)])
def test_gpus_that_take_every_gpu_are_said_to_change_nothing(tmp_path, gpus, said):
    """Fuzz round aj: ``gpus: 8`` on an 8-GPU topology was silent while ``-g 8`` was said to
    change nothing. Said where gpus: takes every GPU (a count of all, or a list of all, which
    takes them in rank order whatever order it lists them in: fuzz round ap M2); not of fewer."""
    from simnet.spec.scenario import load_scenario

    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {LEAF2}\nsizes: [1 MiB]\nalgorithms: [ring]\ngpus: {gpus}\n")
    spec = load_scenario(tmp_path / "s.yaml")
    assert ("gpus" in [w.link for w in spec.warnings if w.kind == "key_unread"]) == said


def test_a_fault_cutting_off_only_gpus_outside_g_runs_as_with_gpus_in_the_file(tmp_path, cli):
    """Fuzz round aj: a fault that cuts off rack 1 was refused ("the run would hang") under
    ``-g 4`` and ``sweep --gpus 4`` whose runs stay in rack 0, while ``gpus: 4`` in the file ran
    it and said the fault changed nothing. Judged on the GPUs each run has, both ways."""
    head = f"name: s\ntopology: {LEAF2}\nsizes: [1 MiB]\nalgorithms: [ring]\n"
    cut = "faults: [{at: 0 s, link: [r1h0-nic0, tor1], down: true}, {at: 0 s, link: [r1h0-nic1, tor1], down: true}]\n"
    (tmp_path / "s.yaml").write_text(head + cut)
    (tmp_path / "g.yaml").write_text(head + cut + "gpus: 2\n")
    subset = cli("run", tmp_path / "s.yaml", "-g", "2", "--json", tmp_path / "s.json")
    written = cli("run", tmp_path / "g.yaml", "--json", tmp_path / "g.json")
    assert subset.exit_code == written.exit_code == 0, subset.stderr + written.stderr
    runs = [json.loads((tmp_path / f"{n}.json").read_text())["runs"][0] for n in "sg"]
    assert runs[0]["time_s"] == runs[1]["time_s"] and "fault_unfelt" in [w["kind"] for w in runs[0]["warnings"]]
    swept = cli("sweep", tmp_path / "s.yaml", "--gpus", "2", "--out", tmp_path / "o", "--workers", "1")
    assert swept.exit_code == 0, swept.stderr
    (tmp_path / "w.yaml").write_text(head + cut + "sweep: {gpus: [2]}\n")  # (the review: the file's axis, --set)
    for args in ([tmp_path / "w.yaml"], [tmp_path / "s.yaml", "--set", "gpus=2"]):
        axis = cli("sweep", *args, "--out", tmp_path / f"o{len(args)}", "--workers", "1")
        assert axis.exit_code == 0, axis.stderr
    whole = cli("run", tmp_path / "s.yaml")
    assert whole.exit_code == 2 and "would hang" in whole.stderr


@pytest.mark.parametrize("per_switch, said", [(8, True), (2, False)])
def test_a_pcie_box_s_uplink_under_one_switch_is_said_to_change_nothing(per_switch, said):
    """Fuzz round aj: a pcie box with every GPU under one PCIe switch left uplink_bandwidth (the
    switch's link to the host bridge) unread, unsaid. Said there; with two GPUs a switch the
    routes between switches climb it and it counts."""
    from simnet import simulate

    def box(uplink):
        return topology_from_dict({"name": "p", "generate": {"kind": "pcie", "gpus": 8, "gpu": "l40s",
                                                             "gpus_per_switch": per_switch, **uplink}})

    written, plain = box({"uplink_bandwidth": "1 GB/s"}), box({})
    assert any(e.startswith("generate.uplink_bandwidth") for e in written.unread) == said
    assert (simulate(written, "ring", 2**24).time_s == simulate(plain, "ring", 2**24).time_s) == said


@pytest.mark.parametrize("algorithm, said", [("ring", True), ("auto", True), ("ps", False)])
def test_a_ps_star_s_servers_beside_an_algorithm_that_runs_none_are_said(algorithm, said):
    """Fuzz round aj: a ps_star's servers and ps_bandwidth beside ring or tree changed nothing,
    unsaid. Said of each run that runs no parameter server (auto too: NCCL has none); ps
    reads them."""
    from simnet import simulate

    star = topology_from_dict({"name": "s", "generate": {"kind": "ps_star", "workers": 4, "servers": 2,
                                                         "ps_bandwidth": "10 Gb/s"}})
    run = simulate(star, algorithm, 2**22)
    assert sorted(w.link for w in run.warnings if w.kind == "key_unread") == \
        (["generate.ps_bandwidth", "generate.servers"] if said else [])


def test_a_scenario_calibration_naming_the_topology_s_own_profile_is_said(tmp_path):
    """Fuzz round aj: a scenario's ``calibration:`` naming the very profile its topology names
    changed nothing, unsaid (another profile there is said to replace it)."""
    from simnet.spec.scenario import load_scenario

    (tmp_path / "p.cal.yaml").write_text("calibration: {base_latency: 5 us}\n")
    (tmp_path / "t.yaml").write_text("name: t\ncalibration: p.cal.yaml\ngenerate: {kind: nvswitch, gpus: 4}\n")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\nsizes: [1 MiB]\nalgorithms: [ring]\n"
                                     "calibration: p.cal.yaml\n")
    said = [w for w in load_scenario(tmp_path / "s.yaml").warnings if w.link == "calibration"]
    assert [w.kind for w in said] == ["key_unread"] and "names already, so it changed nothing" in said[0].message


def test_a_parameter_server_down_beside_a_run_that_uses_none_is_unfelt_not_refused(tmp_path, cli):
    """Fuzz round aj: taking down a parameter server in a ring run (which uses none), or one ps
    leaves out (ps_servers: 1 of two), was refused as cutting a worker off ("the run would
    hang"). Judged on the servers the run uses: the ring and ps of ps0 run and say the fault
    changed nothing; ps of both servers is still refused."""
    head = "name: s\ntopology: {name: t, generate: {kind: ps_star, workers: 4, servers: 2}}\nsizes: [1 MiB]\n"
    (tmp_path / "s.yaml").write_text(head + "algorithms: [ring]\nfaults: [{at: 0 s, node: ps1, down: true}]\n")
    (tmp_path / "p.yaml").write_text(head + "algorithms: [ps]\nfaults: [{at: 0 s, node: ps1, down: true}]\n")
    for name in ("s", "p"):
        ran = cli("run", tmp_path / f"{name}.yaml", "--json", tmp_path / f"{name}.json")
        assert ran.exit_code == 0, ran.stderr
        run = json.loads((tmp_path / f"{name}.json").read_text())["runs"][0]
        assert "fault_unfelt" in [w["kind"] for w in run["warnings"]]
    (tmp_path / "b.yaml").write_text(head + "algorithms: [ps]\noptions: {ps_servers: 2}\n"
                                     "faults: [{at: 0 s, node: ps1, down: true}]\n")
    both = cli("run", tmp_path / "b.yaml")
    assert both.exit_code == 2 and "would hang" in both.stderr


def test_keys_some_algorithm_of_the_scenario_reads_are_not_said_of_the_others(root, tmp_path, cli):
    """Review of fdd8da8/dc5d565: NVLS across hosts reads sharp (its inter-node part is SHARP's),
    so sharp beside nvls is not said; the shipped ps_overload scenario's ring and tree rows said
    its servers and ps_bandwidth changed nothing, though its own ps row reads them (judged over
    the scenario's algorithms now, as its options are); -c with algorithms: all notes no
    algorithm dropped (the collective's all runs)."""
    from simnet import simulate

    racks = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1,
                                                          "gpus_per_host": 8, "sharp": True}})
    assert not [w for w in simulate(racks, "nvls", 2**24).warnings if w.link == "generate.sharp"]
    shipped = cli("run", root / "scenarios" / "ps_overload.yaml", "-s", "1 MiB")
    assert shipped.exit_code == 0 and "key_unread" not in shipped.stdout, shipped.stdout
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {LEAF2}\nsizes: [1 MiB]\nalgorithms: all\n")
    other = cli("run", tmp_path / "s.yaml", "-c", "all_gather")
    assert other.exit_code == 0 and "not run for all_gather" not in other.stdout, other.stdout


def test_a_congested_link_under_a_fault_says_whose_full_speed():
    """Fuzz round ak: under a fault that left a link 1 % of its rate, ``link_congestion`` said
    "16 MiB crossed it, 4.768 ms even at full speed": the time at the mean rate the fault left
    (3.5 GB/s), not at the link's 200 GB/s. It says so."""
    from simnet import simulate, units

    topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "gpu": "h100", "racks": 2,
                                                         "hosts_per_rack": 1, "spines": 2}})
    run = simulate(topo, "ring", 16 * 2**20, faults=[{"at": "50 us", "link": ["tor0", "spine0"], "bandwidth": "1%"}])
    (said,) = [w.message for w in run.warnings if w.kind == "link_congestion" and w.link == "spine0->tor0"]
    (link,) = [link for link in run.links if (link.src, link.dst) == ("spine0", "tor0")]
    assert link.mean_capacity_Bps < link.capacity_Bps
    assert f"{units.format_time(link.bytes / link.mean_capacity_Bps)} even at full speed of what the faults left it" \
        in said


@pytest.mark.parametrize("fraction", [0.5, 0.9, 1.0, 0.05])
def test_a_backward_fraction_that_moves_no_step_is_said(fraction):
    """Fuzz round ak: ``backward_fraction`` 0.5, 0.9 and 1 gave the 2/3 default's step to the
    bit (10.12 ms: every bucket but the last hides in the backward pass either way), unsaid.
    Said where every algorithm's step equals the default's, and only there (0.05 moves it)."""
    from simnet.run.scenario import run_scenario
    from simnet.spec.scenario import scenario_from_dict

    def run(extra):
        spec = scenario_from_dict({"name": "w", "topology": {"name": "t", "generate": {
            "kind": "leaf_spine", "gpu": "h100", "racks": 1, "hosts_per_rack": 2}}, "sizes": ["1 MiB"], "algorithms": ["ring"],
                                   "workload": {"compute_time": "10 ms", "gradient_size": "256 MiB",
                                                "bucket_size": "25 MiB", **extra}})
        return run_scenario(spec)

    given, usual = run({"backward_fraction": fraction}), run({})
    same = [a["iteration_time_s"] for a in given.steps] == [a["iteration_time_s"] for a in usual.steps]
    said = {w.link for run in given.runs for w in run.warnings if w.kind == "key_unread"}
    assert ("workload.backward_fraction" in said) == same
    assert same == (fraction != 0.05)


@pytest.mark.parametrize("kind, per_host", [("leaf_spine", "gpus_per_host"), ("rail_optimized", "gpus_per_node")])
@pytest.mark.parametrize("key, value", [("nvlink_latency", "5 us"), ("nvlink_bandwidth", "100 GB/s"),
                                        ("nic_per", "host"), ("gpus_per_tray", 1), ("nvls", False), ("nvls", True)])
def test_a_host_of_one_gpu_says_its_nvlink_and_nic_keys_change_nothing(kind, per_host, key, value):
    """Fuzz round al: with one GPU a host, nvlink_latency, nvlink_bandwidth, nic_per: host and
    gpus_per_tray: 1 gave the answer without them to the picosecond, unsaid: there is no
    NVLink to another GPU and one NIC either way. Said, and true (the same times); with two
    GPUs a host the NVLink keys count."""
    from simnet import simulate

    if key == "nic_per" and kind == "rail_optimized":
        pytest.skip("rail_optimized has a NIC per GPU, no nic_per")
    if key == "nic_per":  # review 67: two NICs for the one GPU are two NICs: read, not said
        two = topology_from_dict({"name": "t", "generate": {"kind": kind, "gpu": "h100", per_host: 1, "racks": 1,
                                                            "hosts_per_rack": 2, "nics_per_host": 2}})
        assert not any(entry.startswith("generate.nics_per_host") for entry in two.unread)
    base = {"kind": kind, "gpu": "h100", per_host: 1, **({"racks": 1, "hosts_per_rack": 2} if kind == "leaf_spine"
                                                         else {"nodes_per_unit": 2})}
    written, plain = (topology_from_dict({"name": "t", "generate": {**base, **extra}}) for extra in ({key: value}, {}))
    assert any(entry.startswith(f"generate.{key}") for entry in written.unread), written.unread
    assert f"generate.{key}" not in written.algorithm_keys  # said once (fuzz round am, M3: nvls was said nowhere)
    for algorithm in ("ring", "tree"):
        assert simulate(written, algorithm, 2**24).time_s == simulate(plain, algorithm, 2**24).time_s
    if key == "nvlink_latency":
        two = {**base, per_host: 2}
        counted = topology_from_dict({"name": "t", "generate": {**two, key: value}})
        assert not any(entry.startswith(f"generate.{key}") for entry in counted.unread)
        assert simulate(counted, "ring", 2**16).time_s != simulate(topology_from_dict(
            {"name": "t", "generate": two}), "ring", 2**16).time_s


@pytest.mark.parametrize("kind, value, said", [("leaf_spine", "roce", True), ("leaf_spine", "tcp", True),
                                               ("leaf_spine", "efa", False),
                                               ("ps_star", "ib", True), ("ps_star", "efa", False)])
def test_a_transport_that_times_as_the_default_is_said(kind, value, said):
    """Fuzz round al: ``transport: roce`` or ``tcp`` (and ``ib`` on a ps_star, whose default is tcp)
    gave the default's answer to the picosecond, unsaid: NCCL's InfiniBand and socket transports
    report no latency of their own (net_ib/init.cc:558, net_socket.cc:174). Said, and true (the
    same times); EFA's latency counts."""
    from simnet import simulate

    base = {"kind": kind, **({"racks": 1, "hosts_per_rack": 2, "gpus_per_host": 2, "gpu": "h100"}
                             if kind == "leaf_spine" else {"workers": 4, "gpu": "h100"})}
    written, plain = (topology_from_dict({"name": "t", "generate": {**base, **extra}})
                      for extra in ({"transport": value}, {}))
    assert any(entry.startswith("generate.transport") for entry in written.unread) == said, written.unread
    same = all(simulate(written, a, 2**16).time_s == simulate(plain, a, 2**16).time_s for a in ("ring", "tree"))
    assert same == said
    # its own default written (the presets' transport: ib) says what the hardware is: not said
    own = topology_from_dict({"name": "t", "generate": {**base, "transport": plain_transport(kind)}})
    assert not any(entry.startswith("generate.transport") for entry in own.unread)


def plain_transport(kind: str) -> str:
    """A generator's own default transport (docs/topologies.md)."""
    return "tcp" if kind == "ps_star" else "ib"


@pytest.mark.parametrize("algo, variable", [("NVLS", "NCCL_COLLNET_ENABLE"), ("CollNetDirect", "NCCL_COLLNET_ENABLE"),
                                            ("NVLSTree", "NCCL_NVLS_ENABLE")])
def test_what_the_environment_turned_off_is_named_when_nccl_algo_leaves_nothing(algo, variable):
    """Fuzz round al: with sharp: true written and NCCL_COLLNET_ENABLE=0, NCCL_ALGO=NVLS was refused
    as if the switches lacked ``sharp: true`` ("needs SHARP switches in the network"); the cause
    is the variable, which the refusal now names."""
    from simnet import simulate
    from simnet.errors import Unsupported

    topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                         "gpus_per_host": 4, "sharp": True}})
    with pytest.raises(Unsupported, match=f"{variable}=0 turns .* off, as in NCCL: no {algo}"):
        simulate(topo, "auto", 2**20, env={"NCCL_ALGO": algo, variable: "0"})


@pytest.mark.parametrize("fraction", [0.25, 0.3])
def test_a_backward_fraction_that_moves_a_straggler_s_cost_is_not_said(fraction):
    """Fuzz round am, L4: with a GPU computing 1.5x slower, ``backward_fraction`` 0.25 left the
    step at 15.02 ms but moved the step without the slow GPU, so the straggler's cost (5.000 ->
    4.418 ms) and what the step absorbed (0 -> 581.9 us): said to change nothing all the same.
    Judged on every figure the step reports."""
    from simnet.run.scenario import run_scenario

    def run(extra):
        return run_scenario(scenario_from_dict({
            "name": "bf", "topology": {"name": "t", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 1,
                                                                 "gpus_per_host": 4, "gpu": "h100"}},
            "sizes": ["1 MiB"], "algorithms": ["ps"],
            "workload": {"compute_time": "10 ms", "gradient_size": "100 MB", "bucket_size": "1 MiB",
                         "compute_slowdown": {"r0h0-gpu1": 1.5}, **extra}}))

    given, usual = run({"backward_fraction": fraction}), run({})
    assert given.steps[0]["iteration_time_s"] == usual.steps[0]["iteration_time_s"]
    assert given.steps[0]["straggler_cost_s"] != usual.steps[0]["straggler_cost_s"]
    assert not [w for r in given.runs for w in r.warnings if w.link == "workload.backward_fraction"]


@pytest.mark.parametrize("regions, gateway, said", [(2, "200 Gb/s", True), (2, "100 Gb/s", True),
                                                    (2, "50 Gb/s", False), (3, "200 Gb/s", True),
                                                    (3, "150 Gb/s", False)])
def test_a_gateway_no_slower_than_its_wan_links_is_said_to_change_nothing(regions, gateway, said):
    """Fuzz round an, L3: cross_region's gateway_bandwidth at or above what its WAN links carry
    (100 Gb/s each, to each other region) never binds, yet changed nothing unsaid. Said, and true:
    every algorithm answers as with a gateway ten times faster; below it, not said."""
    from simnet import simulate

    base = {"kind": "cross_region", "regions": regions, "gpu": "h100", "racks": 2, "hosts_per_rack": 1,
            "gpus_per_host": 2, "wan_bandwidth": "100 Gb/s"}
    written = topology_from_dict({"name": "t", "generate": {**base, "gateway_bandwidth": gateway}})
    wide = topology_from_dict({"name": "t", "generate": {**base, "gateway_bandwidth": "10 Tb/s"}})
    assert any(entry.startswith("generate.gateway_bandwidth") for entry in written.unread) == said
    if said:
        for algorithm in ("ring", "tree", "halving_doubling"):
            for model in ("nccl", "ideal"):
                assert simulate(written, algorithm, 2**24, model=model).time_s == \
                    simulate(wide, algorithm, 2**24, model=model).time_s, (algorithm, model)



def test_reduce_bandwidth_times_the_gpus_sums_not_the_switch_s(root):
    """reduce_bandwidth, a GPU's reduction rate, also delayed what NVLS's NVSwitch sums (fuzz
    round ap L3: a DGX H100's NVLS 1 GiB 4.096 -> 4.935 ms at 20 GB/s). NVLS on one host sums
    only in the switch: the same time, and said; NVLSTree across hosts sums between hosts on
    GPUs: slower, by lanes and on the fluid network alike."""
    import simnet

    box = simnet.load_topology(root / "topologies" / "dgx_h100.yaml")
    free, slow = (simnet.simulate(box, "nvls", 2**20, **rate) for rate in ({}, {"reduce_bandwidth": 1e9}))
    assert slow.time_s == free.time_s
    assert [w.kind for w in slow.warnings if w.link == "options.reduce_bandwidth"] == ["option_unread"]
    two = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                        "gpus_per_host": 8}})
    free = simnet.simulate(two, "nvls_tree", 2**20)
    lanes, fluid = (simnet.simulate(two, "nvls_tree", 2**20, reduce_bandwidth=1e9, timeline=on) for on in (False, True))
    assert lanes.time_s == fluid.time_s > free.time_s
    assert (lanes.replay.engine, fluid.replay.engine) == ("lanes", "fluid")
    assert not any(w.link == "options.reduce_bandwidth" for w in lanes.warnings)


def test_a_sweep_of_reduce_bandwidth_over_nvls_alone_is_refused_as_over_a_gather(tmp_path, cli):
    """Every value of it gives nvls the same point, as for AllGather's ring (fuzz round aq L4);
    beside ring, whose GPUs sum, it runs."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: t, generate: {kind: nvswitch, gpus: 8, gpu: h100}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [nvls]\n")
    refused = cli("sweep", tmp_path / "s.yaml", "--set", "options.reduce_bandwidth=1GB/s,2GB/s", "--out",
                  tmp_path / "a", "--workers", "1")
    assert refused.exit_code == 2 and "options.reduce_bandwidth: read by none of nvls" in refused.stderr, refused.stderr
    assert not (tmp_path / "a").exists()
    ran = cli("sweep", tmp_path / "s.yaml", "-a", "nvls", "-a", "ring", "--set", "options.reduce_bandwidth=1GB/s,2GB/s",
              "--out", tmp_path / "b", "--workers", "1")
    assert ran.exit_code == 0, ran.stderr


def test_a_sweep_of_gpu_counts_over_a_scenario_that_names_its_gpus_is_refused(tmp_path, cli, root):
    """The sweep's counts took the topology's first ranks and dropped the file's gpus: list
    without a word, where run -g takes the first N of it (fuzz round aq L4): 291 us against
    run's 2.129 ms at 4 GPUs."""
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {root / 'topologies' / 'two_racks.yaml'}\nsizes: [1 MiB]\n"
                                     "algorithms: [ring]\ngpus: [r1h0-gpu0, r0h0-gpu0, r1h1-gpu0, r0h1-gpu0]\n")
    result = cli("sweep", tmp_path / "s.yaml", "--gpus", "2,4", "--out", tmp_path / "sw", "--workers", "1")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "gpus: the scenario names its GPUs" in result.stderr and not (tmp_path / "sw").exists()
    assert cli("sweep", tmp_path / "s.yaml", "--set", "options.channels=2,4", "--out", tmp_path / "ok",
               "--workers", "1").exit_code == 0  # no GPU counts swept: the list runs as named


@pytest.mark.parametrize("channels", [1, 2, 3])
def test_channels_said_to_change_nothing_claim_no_count_of_their_own(channels):
    """Fuzz round ar, L1: a ring at line rate over one switch, whose time no channel count
    moves, was said to run "1 channels", "2 channels" or "3 channels" without options.channels:
    the count written, given as the run's own. The count is said only where it is the run's
    own without the option (one channel here), else the same pieces timed alike."""
    from simnet import simulate

    star = topology_from_dict({"name": "s", "generate": {"kind": "nvswitch", "gpus": 4, "gpu_bandwidth": "12.5 GB/s"}})
    result = simulate(star, "ring", 16 * 2**20, model="ideal", channels=channels)
    said = [w.message for w in result.warnings if w.link == "options.channels"]
    own = "ring runs 1 channel without it, the same pieces timed alike" if channels == 1 else \
        "ring runs the same pieces timed alike without it"
    assert said == [f"options.channels {channels} changed nothing here: {own}"]


def test_a_reduction_rate_the_links_hide_is_said_to_change_nothing_and_one_they_do_not_is_not():
    """A ring whose every reduction ends before the links could take the data it feeds (2:1
    uplinks at 200 Gb/s, sums at 50 GB/s) ended with free reductions' time to the picosecond,
    unsaid (fuzz round ao, L3): said now; summing at 1 GB/s is slower, and says nothing."""
    from simnet import simulate

    topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1,
                                                         "gpus_per_host": 4, "gpu": "h100", "oversubscription": 2,
                                                         "nic_bandwidth": "200 Gb/s"}})
    free = simulate(topo, "ring", 16 * 2**20)
    hidden, felt = (simulate(topo, "ring", 16 * 2**20, reduce_bandwidth=rate) for rate in (50e9, 1e9))
    said = [w for w in hidden.warnings if w.link == "options.reduce_bandwidth"]
    assert hidden.time_s == free.time_s and [w.kind for w in said] == ["option_unread"]
    assert "changed nothing here" in said[0].message
    assert felt.time_s > free.time_s and not any(w.link == "options.reduce_bandwidth" for w in felt.warnings)


def test_an_option_the_workload_s_buckets_feel_is_not_said_to_change_nothing(tmp_path, cli):
    """Fuzz round ap, M1: a reduction rate the 256 MiB run hides slows the 25 MiB buckets of
    the workload's iteration; run, compare and sweep must not say it changed nothing."""
    topology = ("{name: t, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, gpus_per_host: 8, gpu: a100, "
                "nic_bandwidth: 200 Gb/s}}")
    common = (f"topology: {topology}\nsizes: [256 MiB]\nalgorithms: [ring]\n"
              "workload: {compute_time: 10 ms, gradient_size: 1 GB, bucket_size: 25 MiB}\n")
    (tmp_path / "free.yaml").write_text(f"name: free\n{common}")
    (tmp_path / "rb.yaml").write_text(f"name: rb\n{common}options: {{reduce_bandwidth: 50 GB/s}}\n")
    (tmp_path / "c.yaml").write_text(f"name: c\n{common}variants:\n  - {{name: free}}\n"
                                     "  - {name: rb50, set: {options.reduce_bandwidth: 50 GB/s}}\n")
    free, slowed = (json.loads(cli("run", tmp_path / f"{name}.yaml", "--json", "-").stdout) for name in ("free", "rb"))
    assert slowed["steps"][0]["iteration_time_s"] > free["steps"][0]["iteration_time_s"]
    assert not any(w["link"] == "options.reduce_bandwidth" for run in slowed["runs"] for w in run["warnings"])
    compared = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
    swept = cli("sweep", tmp_path / "rb.yaml", "--set", "options.reduce_bandwidth=50GB/s,60GB/s", "--out",
                tmp_path / "s", "--workers", "1")
    for result in (compared, swept):
        assert result.exit_code == 0 and "reduce_bandwidth changed nothing" not in " ".join(result.stdout.split())


def test_a_file_s_own_sweep_axis_over_its_felt_value_is_not_said_to_change_nothing(tmp_path, cli):
    """Fuzz round av, S1: a file writing fsdp: true and sweeping fsdp: [false] (its default)
    beside tp was told fsdp changed nothing at any point, where each point moved against the
    file's value: the file's own sweep: axes were not judged against it, as --set ones are."""
    training = {**TRAINING, "parallelism": {"fsdp": True}}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({
        "name": "s", "topology": FABRIC, "training": training,
        "sweep": {"training.parallelism.fsdp": [False], "training.parallelism.tp": [1, 2]}}))
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({"name": "t", "topology": FABRIC, "training": training}))
    swept = cli("sweep", tmp_path / "s.yaml", "--out", tmp_path / "o", "--workers", "1")
    sharded = json.loads(cli("run", tmp_path / "t.yaml", "--json", "-").stdout)["training"]["step_s"]
    records = [json.loads(line) for line in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert swept.exit_code == 0 and "fsdp changed nothing" not in " ".join(swept.stdout.split())
    assert next(r["step_s"] for r in records if r["set"]["training.parallelism.tp"] == 1) != sharded


@pytest.mark.parametrize("parallelism, variants", [
    ({"tp": 4}, [{"name": "file"}, {"name": "pp2", "set": {"training.parallelism.tp": 1,
                                                            "training.parallelism.pp": 2,
                                                            "training.parallelism.micro_batches": 2}}]),
    ({"tp": 2, "fsdp": True}, [{"name": "file"},
                               {"name": "tp1", "set": {"training.parallelism": {"tp": 1, "fsdp": True}}},
                               {"name": "ddp", "set": {"training.parallelism": {"tp": 2, "fsdp": False}}}]),
], ids=["the file's tp beside the option's pp fits no GPUs", "options written as mappings"])
def test_compare_judges_an_option_s_default_against_the_file_without_breaking_the_options(tmp_path, cli, parallelism,
                                                                                      variants):
    """Fuzz round av, M1 and M2: judging an option's tp: 1 (its default) against the file's
    tp, compare put the file's tp 4 beside the option's pp 2 (8 GPUs of 4) and refused after
    printing its table; and it wrote the file's value into the option's own mapping, so two
    different options became one and were refused as the same option twice."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "name": "c", "topology": FABRIC, "training": {**TRAINING, "parallelism": parallelism},
        "variants": variants}))
    compared = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
    assert compared.exit_code == 0, compared.stderr
    assert (tmp_path / "c.png").exists() and all(v["name"] in compared.stdout for v in variants)


def test_a_dtype_on_one_gpu_is_moot_even_beside_fsdp():
    """Fuzz round av, L3: on one GPU (dp 1) fsdp: true shards nothing and was said so, but
    dtype, which then crosses no link either, was judged as if FSDP moved parameters."""
    from simnet.run.scenario import run_scenario

    def step(dtype):
        training = {**TRAINING, "parallelism": {"fsdp": True}, **({"dtype": dtype} if dtype else {})}
        return scenario_from_dict({"name": "s", "topology": FABRIC, "gpus": 1, "training": training})

    said = {w.link for w in step("fp8").warnings if w.kind == "key_unread"}
    assert {"training.dtype", "training.parallelism.fsdp"} <= said
    assert run_scenario(step("fp8")).to_dict()["training"] == run_scenario(step(None)).to_dict()["training"]


def test_spellings_of_one_file_in_set_are_one_point(tmp_path, cli):
    """Fuzz round ay, F10: ``--set topology=t.yaml,./t.yaml`` (or a profile by its name, with
    ./ and by its absolute path) made a point per spelling, each computed alike, and then said
    the key changed nothing along the sweep: the scenario reads one file."""
    (tmp_path / "t.yaml").write_text("name: box\ngenerate: {kind: nvswitch, gpus: 4}\n")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\nsize: 1 MiB\nalgorithms: [ring]\n")
    result = cli("sweep", tmp_path / "s.yaml", "--set", f"topology=t.yaml,./t.yaml,{tmp_path / 't.yaml'}",
                 "--out", tmp_path / "o", "--workers", "1")
    assert result.exit_code == 0, result.stderr
    assert len(_records(tmp_path / "o")) == 1 and "changed nothing" not in result.stdout, result.stdout


def test_a_chunk_size_cutting_other_pieces_that_change_nothing_is_said():
    """Fuzz round ax F6: under ideal, a 64 MiB ring over two hosts of 4 H100 at 1:1 took
    593.202560 us with no chunk_size and with 64 KiB, 256 KiB or 1 MiB (other pieces, the same
    run: the NICs at line rate set the pace), and none was said. Said, by the run simulated
    again without it; where the pieces change the answer (one DGX H100, 256 KiB) nothing is said."""
    from simnet import load_topology, simulate

    fabric = topology_from_dict({"name": "ls", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1,
                                                            "gpus_per_host": 4, "oversubscription": 1}})
    plain = simulate(fabric, "ring", 64 * 2**20, model="ideal")
    for chunk in ("64 KiB", "256 KiB", "1 MiB"):
        run = simulate(fabric, "ring", 64 * 2**20, model="ideal", chunk_size=chunk)
        said = [w.message for w in run.warnings if w.link == "options.chunk_size"]
        assert run.time_s == plain.time_s and len(said) == 1 and "simulated again without it" in said[0], said
    box = load_topology(Path(__file__).resolve().parent.parent / "topologies/dgx_h100.yaml")
    moved = simulate(box, "ring", 64 * 2**20, model="ideal", chunk_size="256 KiB")
    assert moved.time_s != simulate(box, "ring", 64 * 2**20, model="ideal").time_s
    assert not [w for w in moved.warnings if w.link == "options.chunk_size"]


def test_a_point_s_key_is_the_planner_s_wherever_it_is_computed(tmp_path, monkeypatch):
    """Review 93, LOW 2: a point's key read the file system each time it was computed, from
    the scenario's folder as typed (relative): a Dask worker in another folder found no file
    and keyed the record otherwise, and the sweep exited 70 (KeyError). The plan keeps what
    its values name."""
    from simnet import load_scenario
    from simnet.run.sweep.plan import plan_sweep

    (tmp_path / "t.yaml").write_text("name: box\ngenerate: {kind: nvswitch, gpus: 4}\n")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\nsize: 1 MiB\nalgorithms: [ring]\n")
    monkeypatch.chdir(tmp_path)
    point = plan_sweep(load_scenario("s.yaml"), sets={"topology": ["t.yaml"]}).points[0]
    here = point.key
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert point.key == here and '"file"' in here


def test_a_scenario_s_own_cost_that_no_option_takes_is_said(tmp_path, cli):
    """Fuzz round az F4: a scenario's `cost:` beside variants that each give their own cost is
    no option's (5 M$, 999 M$ or none gave one table) and was not said; said on its line."""
    text = ("name: c\ntopology: {name: box, generate: {kind: nvswitch, gpus: 4}}\nsizes: [1 MiB]\n"
            "algorithms: [ring]\ncost: 5 M$\nvariants:\n  - {name: a, cost: 1 M$}\n"
            "  - {name: b, set: {topology.generate.gpus: 8}, cost: 2 M$}\n")
    (tmp_path / "c.yaml").write_text(text)
    result = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
    assert result.exit_code == 0, result.stderr
    assert f"key_unread: cost ({tmp_path / 'c.yaml'}:5): every variant gives its own cost" in \
        " ".join(result.stdout.split())
    (tmp_path / "c.yaml").write_text(text.replace("{name: a, cost: 1 M$}", "{name: a}"))  # a takes the file's
    again = cli("compare", tmp_path / "c.yaml", "-o", tmp_path / "c.png")
    assert again.exit_code == 0 and "key_unread: cost" not in " ".join(again.stdout.split())


@pytest.mark.parametrize("gpus", [65, 72])
def test_a_whole_nvl72_rack_of_a_larger_fabric_says_the_network_keys_it_never_reads(root, tmp_path, cli, gpus):
    """Fuzz round az F12: a run of 64 GPUs of one NVL72 rack of gb200_nvl72_2racks said its
    network keys (rails, nic_bandwidth) changed nothing, one of 65 or of the whole rack (72)
    said nothing: routes were judged up to 64 ends. A whole rack is judged."""
    (tmp_path / "r.yaml").write_text(f"name: r\ntopology: {root / 'topologies/gb200_nvl72_2racks.yaml'}\n"
                                     f"gpus: {gpus}\nsizes: [1 MiB]\nalgorithms: [ring]\n")
    result = cli("run", tmp_path / "r.yaml")
    assert result.exit_code == 0, result.stderr
    assert "generate.rails (" in result.stdout and "one NVLink domain" in " ".join(result.stdout.split())


def test_a_float_too_large_to_write_as_typed_is_not_advised_digit_by_digit(tmp_path, cli):
    """Fuzz round az F9: `channels: 1e308` was answered 'write 1000000...(309 digits)', a number
    no one typed (and refused next as out of range); a whole float beyond 2^53 is asked for in
    digits, as one below it is shown (2.0: write 2)."""
    (tmp_path / "s.yaml").write_text("name: x\ntopology: {name: b, generate: {kind: nvswitch, gpus: 2}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\noptions: {channels: 1e308}\n")
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and result.stderr.rstrip().endswith(
        "options.channels: 1e+308 is not a whole number as written; write one in the digits 0-9"), result.stderr


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_a_bound_met_by_nan_or_infinity_says_it_is_no_finite_number(tmp_path, cli, value):
    """Fuzz round az F9: `oversubscription: .nan` (or .inf) was said to be "nan must be at most
    1000" (pydantic checks the bound before finiteness), where -.inf was "not a finite number"."""
    (tmp_path / "s.yaml").write_text(
        "name: x\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2, "
        f"oversubscription: {value}}}}}\nsizes: [1 MiB]\nalgorithms: [ring]\n")
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and result.stderr.rstrip().endswith(
        f"topology.generate.oversubscription: {value[1:]} is not a finite number"), result.stderr
