"""Hostile and careless input: every file, however broken, is read in bounded time and
memory and either accepted or refused in one line (file:line: what), exit code 2."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simnet import InputError, load_topology
from simnet.yamlsource import MAX_VALUES

LAUGHS = 'name: x\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
"""Billion laughs: nine levels of nine aliases, 9^9 ~ 390 million strings once expanded."""

YAML_ABUSE = {
    "laughs.yaml": (LAUGHS, f"values once aliases are expanded, over the {MAX_VALUES:,} simnet reads"),
    "recursive.yaml": ("name: x\nnodes: &a [1, *a]\n", "2: an alias refers to a node that contains it"),
    "deep_flow.yaml": ("name: x\nnodes: " + "[" * 50_000 + "]" * 50_000 + "\n", "2: YAML syntax error: exceeded "
                                                                               "maximum nesting depth"),
    "deep_block.yaml": ("".join(" " * i + "k:\n" for i in range(5000)), "YAML syntax error: exceeded maximum nesting"),
    "dict_key.yaml": ("name: x\n? {a: 1}\n: 2\n", "2: the document: a key must be a plain value, not a list or mapping"),
    "binary.yaml": (b"\xff\xfe\x00\x81garbage", "binary.yaml: not UTF-8 text (byte 0); expected a YAML file"),
}


@pytest.mark.parametrize("name", sorted(YAML_ABUSE))
def test_yaml_abuse_is_refused_in_one_line_quickly(cli, tmp_path, name):
    text, message = YAML_ABUSE[name]
    path = tmp_path / name
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    start = time.monotonic()
    result = cli("topo", "check", path)
    assert time.monotonic() - start < 10
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr and result.stderr.startswith(str(path))


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_files_that_are_not_files_are_refused_without_reading(tmp_path, kind):
    """A FIFO would block a reader forever and /dev/zero never ends: refused by their type."""
    path = {"fifo": tmp_path / "pipe.yaml", "device": Path("/dev/zero"), "directory": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    result = subprocess.run([sys.executable, "-m", "simnet", "topo", "check", str(path)] if kind != "directory" else
                            [sys.executable, "-m", "simnet", "run", str(path / "missing.yaml")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    if kind != "directory":
        assert "not a regular file (a directory, device or pipe)" in result.stderr


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_any_bytes_load_or_are_refused_in_one_line(tmp_path, data):
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(data)
    try:
        load_topology(path)
    except InputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path))


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))
_YAMLISH = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(["name", "nodes", "links", "generate", "calibration", "extra"]), _YAMLISH,
                       max_size=4))
def test_any_document_shape_loads_or_is_refused_in_one_line(tmp_path, document):
    """Any mapping of the right keys with any values (lists, nulls, NaN, huge ints)."""
    import yaml

    path = tmp_path / "shape.yaml"
    path.write_text(yaml.safe_dump(document))
    try:
        load_topology(path)
    except InputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path))
