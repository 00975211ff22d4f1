"""The README's commands and code are the ones that work: CI runs the test command verbatim,
and the examples a reader copies are executed here."""

import re
import shlex
import shutil
import subprocess
import sys

import pytest

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
    blocks = re.findall(r"```sh\n(.*?)```", _readme(root), re.S)
    return [line.split("#")[0].strip() for block in blocks for line in block.splitlines()
            if line.startswith("simnet ")]


def test_every_generator_parameter_is_documented(root):
    text = (root / "docs/topologies.md").read_text()
    for name, generator in GENERATORS.items():
        assert f"`{name}`" in text
        for parameter in generator.params.model_fields:
            if parameter != "kind":
                assert f"`{parameter}`" in text, f"{name}.{parameter} is not in docs/topologies.md"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    work = tmp_path_factory.mktemp("readme")
    for folder in ("scenarios", "topologies"):
        shutil.copytree(root / folder, work / folder)
    return work


def test_readme_simnet_commands_run(root, workdir):
    commands = _simnet_commands(root)
    assert len(commands) >= 8
    for command in commands:
        args = shlex.split(command.replace("tcp://SCHEDULER:8786", "local"))  # the Dask example, on this machine
        result = subprocess.run([sys.executable, "-m", "simnet", *args[1:]], cwd=workdir, capture_output=True,
                                text=True, timeout=600, check=False)
        assert result.returncode == 0, f"{command}: {result.stderr}"
    assert (workdir / "plots" / "link_heatmap.png").exists() and (workdir / "trace.json").exists()
    assert (workdir / "sweep-cross-rack" / "speedup.png").exists() and (workdir / "compare.png").exists()


def test_readme_python_examples_run(root, monkeypatch):
    monkeypatch.chdir(root)
    for block in re.findall(r"```python\n(.*?)```", _readme(root), re.S):
        exec(compile(block, "README.md", "exec"), {})


def test_readme_bad_input_example_is_what_simnet_says(root, tmp_path, cli):
    line = next(text for text in _readme(root).splitlines() if text.startswith("topologies/x.yaml:14:"))
    topo = tmp_path / "x.yaml"
    links = "\n".join(f"  - {{a: g{i}, b: sw, bandwidth: 1 GB/s, latency: 1 us}}" for i in range(3))
    topo.write_text("name: x\nnodes:\n" + "".join(f"  - {{id: g{i}, kind: gpu}}\n" for i in range(4)) +
                    "  - {id: sw, kind: switch}\nlinks:\n" + links + "\n\n\n  - {a: g3, b: sw, bandwidth: 40 Gbq, latency: 1 us}\n")
    result = cli("topo", "check", topo)
    assert result.stderr.strip() == line.replace("topologies/x.yaml", str(topo))
