"""The README's commands, code and numbers are the ones that work: CI runs the test command
verbatim, the commands a reader copies run here, the Python examples print what their
comments say, and the numbers quoted from the headline and the validation are what
simnet computes."""

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from simnet.run.compare import PARETO_TOLERANCE
from simnet.topology.generators import GENERATORS


def _readme(root):
    return (root / "README.md").read_text()


def _fresh_machine_commands(root):
    return re.findall(r"```sh\n(python3 -m venv[^\n]*)\n```", _readme(root))


def test_readme_starts_with_two_fresh_machine_commands(root):
    install_and_run, run_tests = _fresh_machine_commands(root)[:2]
    assert "pip install ." in install_and_run
    assert install_and_run.split("&& ")[-1] == "simnet run scenarios/cross_rack.yaml"
    assert "'.[test]'" in run_tests and "pytest" in run_tests
    assert _readme(root).index(install_and_run) < _readme(root).index("## Concepts")


def test_ci_runs_the_readme_test_command_verbatim(root):
    run_tests = _fresh_machine_commands(root)[1]
    assert run_tests in (root / ".ci/run").read_text().splitlines()


def _simnet_commands(root):
    """Every shell line of the README that runs simnet (with its environment prefix)."""
    blocks = re.findall(r"```sh\n(.*?)```", _readme(root), re.S)
    return [line.split(" #")[0].strip() for block in blocks for line in block.splitlines()
            if re.match(r"(\w+=\S+ )*simnet ", line)]


def test_every_generator_parameter_is_documented(root):
    text = (root / "docs/topologies.md").read_text()
    for name, generator in GENERATORS.items():
        assert f"`{name}`" in text
        for parameter in generator.params.model_fields:
            if parameter != "kind":
                assert f"`{parameter}`" in text, f"{name}.{parameter} is not in docs/topologies.md"


def test_the_yaml_reference_is_a_topology_that_loads(root, tmp_path):
    # a reader pastes it to start from: it must pass `simnet topo check` as it stands
    from simnet import load_topology

    text = (root / "docs/topologies.md").read_text()
    reference = re.search(r"## YAML reference\n\n```yaml\n(.*?)```", text, re.S).group(1)
    (tmp_path / "ref.yaml").write_text(reference)
    topology = load_topology(tmp_path / "ref.yaml")
    assert topology.gpus == ["gpu1", "gpu0"] and topology.kind("nvs0") == "switch"


def test_the_readme_jobs_example_places_on_the_topology_its_gpu_names_come_from(root):
    # its GPU names (r1h3-gpu6) are two_racks.yaml's: pasted there, every job gets its GPUs
    # (placing them is what a reader's paste first hits; running them takes a minute)
    import yaml

    from simnet import load_topology
    from simnet.spec.jobs import place_jobs

    block = re.search(r"### Many jobs on one fabric\n\n```yaml\n(.*?)```", _readme(root), re.S).group(1)
    jobs = yaml.safe_load(block)["jobs"]
    placed = place_jobs(load_topology(root / "topologies/two_racks.yaml"), jobs)
    assert [len(gpus) for gpus in placed[:3]] == [16, 16, 2]
    assert not set(placed[0]) & set(placed[1]) and not set(placed[2]) & (set(placed[0]) | set(placed[1]))


# running every README command (the module fixture below, in the setup of whichever test
# asks first) takes about a minute alone and twice that on a loaded machine: beyond the
# suite's per-test timeout (pyproject.toml), so the tests that ask for it have their own
READ_ME_RUNS = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def ran_readme(tmp_path_factory):
    """Run every README simnet command, as a user would, in a fresh directory."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    work = tmp_path_factory.mktemp("readme")
    for folder in ("scenarios", "topologies", "validation"):
        shutil.copytree(root / folder, work / folder)
    outcomes = []
    for command in _simnet_commands(root):
        words = shlex.split(command.replace("tcp://SCHEDULER:8786", "local"))  # the Dask example, on this machine
        env = {**os.environ, "COLUMNS": "250"}  # test workers say 80: keep table cells on one line
        while "=" in words[0]:
            key, value = words.pop(0).split("=", 1)
            env[key] = value
        result = subprocess.run([sys.executable, "-m", "simnet", *words[1:]], cwd=work, capture_output=True,
                                text=True, timeout=600, check=False, env=env)
        outcomes.append((command, result))
    return work, outcomes


@READ_ME_RUNS
def test_readme_simnet_commands_run(ran_readme):
    work, outcomes = ran_readme
    assert len(outcomes) >= 8
    for command, result in outcomes:
        assert result.returncode == 0, f"{command}: {result.stderr}"
    for made in ("plots/link_heatmap.png", "trace.json", "results.json", "sweep-ps/speedup.png",
                 "sweep-ps-dask/results.jsonl", "compare.png", "two_racks.png"):
        assert (work / made).exists(), made
    forced = next(r for c, r in outcomes if c.startswith("NCCL_ALGO=Ring"))
    assert "NCCL_ALGO=Ring applied" in forced.stdout and "auto -> ring" in forced.stdout


@READ_ME_RUNS
def test_readme_headline_numbers_are_what_simnet_prints(root, ran_readme):
    work, _ = ran_readme
    runs = json.loads((work / "results.json").read_text())
    by = {(r["size_bytes"], "auto" in r, r["algorithm"]): r for r in runs["runs"]}

    def auto(size):
        return next(r for (s, is_auto, _), r in by.items() if s == size and is_auto)

    def plain(size, algorithm):
        return by[(size, False, algorithm)]

    text = _readme(root)
    mib = 2**20
    small, mid, large = auto(mib), auto(16 * mib), auto(256 * mib)
    assert (small["algorithm"], small["protocol"]) == ("tree", "LL128")
    assert f"({small['time_s'] * 1e6:.1f} us)" in text
    assert mid["algorithm"] == large["algorithm"] == "nvls_tree"
    assert mid["auto"]["fastest"] == "tree"  # the simulation finds plain Tree faster than NCCL's pick
    tree = plain(16 * mib, "tree")["time_s"]
    assert f"NVLSTree takes {mid['time_s'] * 1e6:.1f} us to plain Tree's {tree * 1e6:.1f} us" in text
    assert f"NVLSTree takes {large['time_s'] * 1e3:.3f} ms (bus bandwidth {large['busbw_GBps']:.0f} GB/s)" in text
    assert f"the\n  ring {plain(256 * mib, 'ring')['time_s'] * 1e3:.3f} ms" in text
    hierarchical = plain(256 * mib, "hierarchical")
    assert hierarchical["options"]["inner"] == "ring"
    assert min(hierarchical["variants"]["inner"].values()) == hierarchical["time_s"]
    assert f"here the ring, {hierarchical['time_s'] * 1e3:.3f} ms at 256 MiB" in text
    congested = [w["link"] for w in hierarchical["warnings"] if w["kind"] == "link_congestion"]
    assert {end[:3] for end in congested[0].split("->")} == {"tor", "spi"}  # a ToR's uplink, one way or the other
    assert f"`link_congestion` on\n  `{congested[0]}`" in text  # the one the table's warning names first
    ps = plain(256 * mib, "ps")
    assert f"needs {ps['time_s'] * 1e3:.1f} ms for 256 MiB" in text
    assert any(w["kind"] == "nic_overload" for w in ps["warnings"])
    steps = {s["algorithm"]: s for s in runs["steps"]}
    assert f"speedup {steps['ps']['speedup']:.2f})" in text
    assert all(round(s["speedup"], 1) == 63.9 for a, s in steps.items() if a != "ps")


@READ_ME_RUNS
def test_readme_buying_decision_is_what_compare_prints(root, ran_readme):
    _, outcomes = ran_readme
    compare = next(r for c, r in outcomes if c.startswith("simnet compare scenarios/capacity_planning.yaml"))
    rows = {cells[0]: cells for cells in ([c.strip() for c in line.split("│")[1:-1]]
                                          for line in compare.stdout.splitlines() if line.startswith("│"))}
    text = " ".join(_readme(root).split())
    # columns: option, cost, best algorithm, iteration, speedup, AllReduce, busbw, bottleneck, per M$, Pareto
    assert rows["100G 1:1"][2] == "hierarchical" and rows["100G 1:1"][9] == "*"
    assert all(rows[o][9] == "" for o in ("200G 1:1", "200G 3:1", "400G 1:1", "400G 3:1"))
    hidden = rows["200G 3:1"][3]
    assert all(rows[o][3] == hidden for o in ("200G 1:1", "400G 1:1", "400G 3:1")) and f"hides everything ({hidden})" in text
    slow = rows["100G 1:1"][3]
    assert 0 <= float(slow.split()[0]) / float(hidden.split()[0]) - 1 < PARETO_TOLERANCE  # counted as equal
    assert f"hierarchical hides it as well: {slow}, within the 1 % `compare` counts as equal" in text
    per = (rows["100G 1:1"][8], rows["200G 3:1"][8])
    assert float(per[0]) > float(per[1]) and f"per M$ ({per[0]} against {per[1]} for 200G 3:1)" in text


def test_readme_python_examples_print_what_their_comments_say(root, monkeypatch):
    monkeypatch.chdir(root)
    blocks = re.findall(r"```python\n(.*?)```", _readme(root), re.S)
    assert blocks
    for block in blocks:
        expected = [line[2:].split("  (")[0] for line in block.splitlines() if line.startswith("# ")]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, "README.md", "exec"), {})
        assert printed.getvalue().splitlines() == expected


def test_validation_summary_quoted_in_readme_and_model_doc_is_the_validation_page(root):
    page = (root / "docs/validation.md").read_text()
    table = [line for line in page.splitlines() if line.startswith("| sizes |")]
    start = page.index(table[0])
    summary = page[start:page.index("\n\n", start)]
    assert summary.count("\n") >= 5
    assert summary in _readme(root) and summary in (root / "docs/model.md").read_text()


def test_readme_bad_input_example_is_what_simnet_says(root, tmp_path, cli):
    line = next(text for text in _readme(root).splitlines() if text.startswith("topologies/x.yaml:14:"))
    topo = tmp_path / "x.yaml"
    links = "\n".join(f"  - {{a: g{i}, b: sw, bandwidth: 1 GB/s, latency: 1 us}}" for i in range(3))
    topo.write_text("name: x\nnodes:\n" + "".join(f"  - {{id: g{i}, kind: gpu}}\n" for i in range(4)) +
                    "  - {id: sw, kind: switch}\nlinks:\n" + links + "\n\n\n  - {a: g3, b: sw, bandwidth: 40 Gbq, latency: 1 us}\n")
    result = cli("topo", "check", topo)
    assert result.stderr.strip() == line.replace("topologies/x.yaml", str(topo))


def test_the_limits_the_readme_states_are_simnet_s(root):
    """The README's **Limits** paragraph quotes simnet's own limits (fuzz k #377: the log row
    limit calibrate refuses at was written nowhere)."""
    from simnet.io.nccltests import MAX_ROWS
    from simnet.spec.values import MAX_SIZES
    from simnet.workloads.ddp import MAX_BUCKETS

    limits = re.search(r"\*\*Limits\.\*\*(.*?)\n\n", _readme(root), re.S).group(1)
    text = " ".join(limits.split())
    assert f"a scenario at most {MAX_SIZES} sizes" in text
    assert f"a step at most {MAX_BUCKETS:,} gradient buckets" in text
    assert f"an nccl-tests log for `calibrate` at most {MAX_ROWS:,} rows" in text
