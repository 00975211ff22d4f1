"""The README's two commands are the ones that work; CI runs the second verbatim."""

import re


def _commands(root):
    return re.findall(r"```sh\n(python3 -m venv[^\n]*)\n```", (root / "README.md").read_text())


def test_readme_starts_with_two_fresh_machine_commands(root):
    install_and_run, run_tests = _commands(root)[:2]
    assert "pip install ." in install_and_run and install_and_run.split("&& ")[-1].startswith("simnet ")
    assert "'.[test]'" in run_tests and "pytest" in run_tests


def test_ci_runs_the_readme_test_command_verbatim(root):
    run_tests = _commands(root)[1]
    assert run_tests in (root / ".ci/run").read_text().splitlines()
