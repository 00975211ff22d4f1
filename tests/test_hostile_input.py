"""Hostile and careless input: every file, however broken, is read in bounded time and
memory and either accepted or refused in one line (file:line: what), exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simnet
from simnet import InputError, load_topology

LAUGHS = 'name: x\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
"""Billion laughs: nine levels of nine aliases, 9^9 ~ 390 million strings once expanded."""

YAML_ABUSE = {
    "laughs.yaml": (LAUGHS, "490,329,066 values once aliases are expanded, over the "),
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


TOPOLOGY = """name: t
nodes:
  - {{id: g0, kind: gpu}}
  - {{id: g1, kind: gpu}}
  - {{id: sw, kind: switch}}
  - {{id: ps0, kind: ps}}
links:
  - {{a: g0, b: sw, bandwidth: {bandwidth}, latency: {latency}}}
  - {{a: g1, b: sw, bandwidth: 100 Gb/s, latency: 1 us}}
  - {{a: ps0, b: sw, bandwidth: 100 Gb/s, latency: 1 us}}
"""
SCENARIO = """name: s
topology: t.yaml
sizes: [{size}]
algorithms: [{algorithms}]
options: {{{options}}}
"""


def _files(tmp_path, bandwidth="100 Gb/s", latency="1 us", size="1 MiB", algorithms="ring", options="", extra=""):
    (tmp_path / "t.yaml").write_text(TOPOLOGY.format(bandwidth=bandwidth, latency=latency))
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(size=size, algorithms=algorithms, options=options) + extra)
    return path


REFUSED = [  # (what the user wrote, where, the message it gets)
    ({"bandwidth": "1e400 Gb/s"}, "t.yaml:8", "links[0].bandwidth: '1e400 Gb/s' is outside 1 Kb/s to 10,000 Tb/s"),
    ({"bandwidth": "1e30 Tb/s"}, "t.yaml:8", "is outside 1 Kb/s to 10,000 Tb/s"),
    ({"bandwidth": "1e-300 B/s"}, "t.yaml:8", "is outside 1 Kb/s to 10,000 Tb/s"),
    ({"bandwidth": "1 b/s"}, "t.yaml:8", "is outside 1 Kb/s to 10,000 Tb/s"),
    ({"bandwidth": "1e-400 GB/s"}, "t.yaml:8", "is outside 1 Kb/s to 10,000 Tb/s"),  # (fuzz ah: "must be positive")
    ({"latency": "1e10 s"}, "t.yaml:8", "links[0].latency: '1e10 s' is outside 1 ps to 1 day"),
    ({"latency": "1e400 s"}, "t.yaml:8", "is outside 1 ps to 1 day"),
    ({"latency": "1e-15 s"}, "t.yaml:8", "is outside 1 ps to 1 day"),
    ({"size": "1e20 B"}, "s.yaml:3", "sizes: '1e20 B' is outside 0 B to 1 PiB"),
    ({"size": "1e400 B"}, "s.yaml:3", "is outside 0 B to 1 PiB"),
    ({"options": "channels: 1000000"}, "s.yaml:5", "options.channels: 1000000 must be at most 64"),
    ({"options": "reduce_bandwidth: 1e-300 B/s"}, "s.yaml:5", "options.reduce_bandwidth: '1e-300 B/s' is outside"),
    ({"options": "message_overhead: 1e400 s"}, "s.yaml:5", "options.message_overhead: '1e400 s' is outside"),
    # model: ideal keeps a chunk finer than NCCL's (model: nccl raises it to NCCL's own)
    ({"options": "chunk_size: 1 B", "size": "1 GiB", "memory": "1 GiB", "extra": "model: ideal\n"}, "s.yaml",
     "ring: chunk_size 1 B cuts 1 GiB into 1,073,741,824"),
    ({"options": "chunk_size: 1 KiB", "size": "1 GiB", "memory": "400 MB", "extra": "model: ideal\n"}, "s.yaml",
     "ring over 2 GPUs at 1 GiB needs 2,097,152 transfers"),
    ({"bandwidth": "2 Kb/s", "size": "1 TiB"}, "s.yaml", "the simulated time passes 1,000,000 s (11.6 days)"),
    ({"algorithms": ""}, "s.yaml:4", "algorithms: no algorithms: list at least one"),
    ({"algorithms": "ring, tree, ring"}, "s.yaml:4", "algorithms: 'ring' is listed twice"),
    ({"algorithms": "ps", "options": "ps_server: [g1, g1]"}, "s.yaml:5", "options.ps_server: 'g1' is listed twice"),
    ({"algorithms": "ps", "options": "ps_server: []"}, "s.yaml:5", "options.ps_server: an empty list"),
    ({"algorithms": "ps", "options": "ps_server: sw"}, "s.yaml:5", "'sw' is a switch, which cannot sum gradients"),
    ({"algorithms": "ps", "options": "ps_servers: 2"}, "s.yaml:5", "options.ps_servers: 2 requested but there are "
                                                                   "only 1 parameter servers"),
    ({"extra": "gpus: [g0, g0]\n"}, "s.yaml:6", "gpus: 'g0' is listed twice"),
    ({"extra": "gpus: 0\n"}, "s.yaml:6", "gpus: 0: give a GPU count of at least 1, a list of GPU names, or all"),
    ({"size": ""}, "s.yaml:3", "sizes: an empty list: give at least one size"),
    ({"extra": "workload: {compute_time: 0 s, gradient_size: 1 MiB}\n"}, "s.yaml:6", "compute_time must be positive"),
    ({"extra": "variants: [{name: a, set: {model: ideal}, cost: -1 M$}]\n"}, "s.yaml:6",
     "variants[0].cost: '-1 M$': a cost is a finite amount, zero or more"),
]


@pytest.mark.parametrize("given, where, message", REFUSED, ids=[str(r[0]) for r in REFUSED])
def test_out_of_range_and_contradictory_input_is_one_line(cli, tmp_path, given, where, message):
    given = dict(given)
    memory = given.pop("memory", "16 GiB")  # the same refusal on any machine
    path = _files(tmp_path, **given)
    out = tmp_path / "r.json"
    result = cli("run", path, "--json", out, env={"SIMNET_MEMORY": memory})
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(str(tmp_path / where)) and message in result.stderr, result.stderr
    assert not out.exists()


@pytest.mark.parametrize("change, message", [
    ({"tor": "{id: tor, kind: switch, host: h0}"}, "t.yaml:7: nodes[4].host: the link n0 -> tor joins the NIC to a network switch "
                                                   "(cabled to several hosts), its network port, but is pcie, as tor's "
                                                   "host: label makes it"),
    ({"n1": "{id: n1, kind: nic, host: h1, transport: efa}"}, "t.yaml:6: nodes[3].transport: n1's transport (efa) "
                                                              "differs from n0's (ib)"),
    ({"n1": "{id: n1, kind: nic, host: h1, net_latency: 75 us}"}, "t.yaml:6: nodes[3].net_latency: n1's net_latency "
                                                                  "(75.00 us) differs from n0's (not given)"),
])
def test_nics_that_nccl_could_not_run_as_one_network_are_refused(cli, tmp_path, change, message):
    """Fuzz round au, S1 and M3: a ToR labelled with a host made its NIC's cable PCIe (a NIC with
    no network port: NCCL's ring ran at 0.12 GB/s), and a transport or net_latency on any NIC
    but the first host's changed nothing (NCCL's model reads the first node's, taking nodes
    alike), where on the first it moved a 64 KiB ring 3-9x."""
    nodes = {"g0": "{id: g0, kind: gpu, host: h0, gpu: h100}", "g1": "{id: g1, kind: gpu, host: h1, gpu: h100}",
             "n0": "{id: n0, kind: nic, host: h0}", "n1": "{id: n1, kind: nic, host: h1}",
             "tor": "{id: tor, kind: switch}"}
    nodes.update(change)
    (tmp_path / "t.yaml").write_text("name: t\nnodes:\n" + "".join(f"  - {nodes[k]}\n" for k in
                                                                  ("g0", "g1", "n0", "n1", "tor")) +
                                     "links:\n  - {a: g0, b: n0, bandwidth: 64 GB/s, latency: 1 us}\n  - {a: g1, b: n1, bandwidth: 64 GB/s, latency: 1 us}\n"
                                     "  - {a: n0, b: tor, bandwidth: 400 Gb/s, latency: 1 us}\n  - {a: n1, b: tor, bandwidth: 400 Gb/s, latency: 1 us}\n")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\nsizes: [64 KiB]\nalgorithms: [ring]\n")
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / message}"), result.stderr


@pytest.mark.parametrize("generate, link", [
    ("{kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2, oversubscription: 1e-9}", "tor0 -> spine0 runs at 400000000 Tb/s"),
    ("{kind: rail_optimized, units: 1, planes: 2, nic_bandwidth: 1 Kb/s}", "su0h0-nic0 -> su0-leaf0-p0 runs at 500 b/s"),
])
def test_a_generated_link_beyond_the_bandwidths_simnet_takes_is_refused(cli, tmp_path, generate, link):
    """Fuzz round au, L8: generators built links 8 orders of magnitude beyond 10,000 Tb/s, or
    below 1 Kb/s, and topo check said ok; a run then ended on the time limit naming no line."""
    (tmp_path / "t.yaml").write_text(f"name: t\ngenerate: {generate}\n")
    result = cli("topo", "check", tmp_path / "t.yaml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 't.yaml'}:2: the link {link}, outside 1 Kb/s to 10,000 Tb/s")


@pytest.mark.parametrize("extra_nodes, extra_links", [
    # a spare NIC on a PCIe switch inside its host (review 83: refused as having no network port)
    ("  - {id: plx, kind: switch, host: h0}\n  - {id: n2, kind: nic, host: h0}\n",
     "  - {a: g0, b: plx, bandwidth: 64 GB/s, latency: 1 us}\n  - {a: n2, b: plx, bandwidth: 64 GB/s, latency: 1 us, "
     "type: pcie}\n"),
    # a second NIC speaking RoCE beside InfiniBand ones: NCCL's IB verbs both, timed alike
    ("  - {id: n4, kind: nic, host: h1, transport: roce}\n",
     "  - {a: g1, b: n4, bandwidth: 64 GB/s, latency: 1 us}\n  - {a: n4, b: tor, bandwidth: 400 Gb/s, latency: 1 us}\n"),
    # a parameter server's NIC of another transport: no rank of the job (review 83)
    ("  - {id: ps0, kind: ps, host: hs}\n  - {id: n3, kind: nic, host: hs, transport: tcp}\n",
     "  - {a: ps0, b: n3, bandwidth: 64 GB/s, latency: 1 us}\n  - {a: n3, b: tor, bandwidth: 100 Gb/s, latency: 1 us}\n"),
])
def test_nics_beside_the_job_s_network_stay_valid(cli, tmp_path, extra_nodes, extra_links):
    """The refusals above judge the job's network only: NICs inside a host and a parameter
    server's NIC are no NCCL rank's way to the network."""
    (tmp_path / "t.yaml").write_text(
        "name: t\nnodes:\n  - {id: g0, kind: gpu, host: h0, gpu: h100}\n  - {id: g1, kind: gpu, host: h1, gpu: h100}\n"
        "  - {id: n0, kind: nic, host: h0}\n  - {id: n1, kind: nic, host: h1}\n  - {id: tor, kind: switch}\n"
        + extra_nodes + "links:\n  - {a: g0, b: n0, bandwidth: 64 GB/s, latency: 1 us}\n"
        "  - {a: g1, b: n1, bandwidth: 64 GB/s, latency: 1 us}\n  - {a: n0, b: tor, bandwidth: 400 Gb/s, latency: 1 us}\n"
        "  - {a: n1, b: tor, bandwidth: 400 Gb/s, latency: 1 us}\n" + extra_links)
    result = cli("topo", "check", tmp_path / "t.yaml")
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("transport", ["efa", "tcp"])
def test_sharp_over_nics_without_collnet_is_refused(cli, tmp_path, transport):
    """Fuzz round au, M3: sharp: true over EFA or TCP sockets made NCCL's pick NVLS across hosts
    (403.9 us against the ring's 588.0 us on two p5s), where NCCL has no CollNet plugin."""
    (tmp_path / "t.yaml").write_text("name: t\ngenerate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, "
                                     f"gpus_per_host: 8, gpu: h100, nvls: true, sharp: true, transport: {transport}}}\n")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\nsizes: [1 MiB]\nalgorithms: [ring]\n")
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 't.yaml'}:2: generate.sharp: 'tor0' reduces in the "
                                    f"network, and the NICs speak {transport} ("), result.stderr


@pytest.mark.parametrize("cable", ["pcie", "nvlink"])
def test_a_nic_s_network_cable_typed_otherwise_is_refused(cli, tmp_path, cable):
    """Fuzz round au, M1: a NIC cabled to the network switch by a link typed pcie or nvlink left
    the NIC no network port in NCCL's model, whose ring then ran at its search's last speed:
    8.948 s for 1 GiB where type: net gives 22.40 ms, without a word."""
    (tmp_path / "t.yaml").write_text(f"""name: t
nodes:
  - {{id: g0, kind: gpu, host: h0, gpu: h100}}
  - {{id: g1, kind: gpu, host: h1, gpu: h100}}
  - {{id: n0, kind: nic, host: h0}}
  - {{id: n1, kind: nic, host: h1}}
  - {{id: sw, kind: switch}}
links:
  - {{a: g0, b: n0, bandwidth: 64 GB/s, latency: 1 us}}
  - {{a: g1, b: n1, bandwidth: 64 GB/s, latency: 1 us}}
  - {{a: n0, b: sw, bandwidth: 400 Gb/s, latency: 1 us, type: {cable}}}
  - {{a: n1, b: sw, bandwidth: 400 Gb/s, latency: 1 us}}
""")
    (tmp_path / "s.yaml").write_text("name: s\ntopology: t.yaml\nsizes: [1 MiB]\nalgorithms: [ring]\n")
    result = cli("run", tmp_path / "s.yaml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 't.yaml'}:11: links[2].type: the link n0 -> sw joins the NIC to a network switch "
                                    f"(cabled to several hosts), its network port, but is typed {cable}: NCCL would "
                                    "see no way to the network from n0")


@pytest.mark.parametrize("yaml_text, where", [
    ('name: t\nnodes:\n  - {id: "g\\t0", kind: gpu}\n', "t.yaml:3: nodes[0].id"),
    ('name: t\nnodes:\n  - {id: g0, kind: gpu, host: "h\\u0000"}\n', "t.yaml:3: nodes[0].host"),
    ('name: "t\\n"\nnodes:\n  - {id: g0, kind: gpu}\n', "t.yaml:1: name"),
    ('name: t\ngenerate: {kind: nvswitch, gpus: 2, prefix: "a\\x1bb"}\n', "t.yaml:2: generate.prefix"),
])
def test_names_with_control_characters_are_refused(cli, tmp_path, yaml_text, where):
    """GraphML and GEXF cannot hold them: an export would not be XML (and a table breaks)."""
    (tmp_path / "t.yaml").write_text(yaml_text)
    result = cli("topo", "export", tmp_path / "t.yaml", "--format", "graphml", "-o", tmp_path / "t.graphml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / where}: holds the control character"), result.stderr
    assert not (tmp_path / "t.graphml").exists()


def test_a_parameter_server_nobody_can_reach_is_refused(cli, tmp_path):
    (tmp_path / "t.yaml").write_text(TOPOLOGY.format(bandwidth="100 Gb/s", latency="1 us").rsplit("  - {a: ps0", 1)[0])
    result = cli("topo", "check", tmp_path / "t.yaml")
    assert result.exit_code == 2
    assert result.stderr == f"{tmp_path / 't.yaml'}:6: nodes[3]: GPU 'g0' cannot reach parameter server 'ps0': " \
                            "it has no links\n"


@pytest.mark.parametrize("generate", ["{kind: nvswitch, gpus: 100000000}", "{kind: full_mesh, gpus: 100000}",
                                      "{kind: leaf_spine, racks: 10000000}", "{kind: pcie, gpus: 100000000}",
                                      "{kind: leaf_spine, racks: 1000000000000000000000000000000}",
                                      "{kind: cross_region, regions: 10000000}", "{kind: ps_star, workers: 100000000}"])
def test_generators_too_large_for_memory_are_refused_before_building(cli, tmp_path, generate):
    path = tmp_path / "big.yaml"
    path.write_text(f"name: big\ngenerate: {generate}\n")
    start = time.monotonic()
    result = cli("topo", "check", path, env={"SIMNET_MEMORY": "16 GiB"})
    assert time.monotonic() - start < 5
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert f"{path}:2: generate: " in result.stderr and "more than the 17.2 GB simnet may use here" in result.stderr


_GENERATE = st.one_of(
    st.fixed_dictionaries({"kind": st.just("nvswitch"), "gpus": st.integers(1, 16)},
                          optional={"nic_bandwidth": st.just("400 Gb/s")}),
    st.fixed_dictionaries({"kind": st.just("pcie"), "gpus": st.integers(1, 16), "gpus_per_switch": st.integers(1, 5)}),
    st.fixed_dictionaries({"kind": st.sampled_from(["leaf_spine", "cross_region"]), "racks": st.integers(1, 3),
                           "hosts_per_rack": st.integers(1, 3), "gpus_per_host": st.integers(1, 8),
                           "spines": st.integers(1, 3)},
                          optional={"nic_per": st.sampled_from(["gpu", "host"]), "nics_per_host": st.integers(1, 9),
                                    "regions": st.integers(1, 3)}),
    st.fixed_dictionaries({"kind": st.just("ps_star"), "workers": st.integers(1, 9), "servers": st.integers(1, 3)}),
    st.fixed_dictionaries({"kind": st.just("full_mesh"), "gpus": st.integers(1, 12)}),
)


@settings(max_examples=120, deadline=None)
@given(_GENERATE)
def test_a_generator_knows_its_size_before_building(params):
    """The footprint that guards memory counts the GPUs exactly and never undercounts
    nodes + links (so the guard never lets through what it should refuse)."""
    from simnet.topology.generators import GENERATORS, generate

    if params["kind"] != "cross_region":
        params.pop("regions", None)
    if "nics_per_host" in params:
        params.pop("nic_per", None)  # one way to say the NICs: both are refused
    gpus, elements = GENERATORS[params["kind"]].params.model_validate(params).footprint()
    nodes, links = generate(params)
    assert gpus == sum(1 for n in nodes if n.kind == "gpu")
    assert len(nodes) + len(links) <= elements <= 2 * (len(nodes) + len(links)) + 8


def test_one_gpu_alone_is_checked_and_drawn(cli, tmp_path):
    path = tmp_path / "one.yaml"
    path.write_text("name: one\ngenerate: {kind: full_mesh, gpus: 1}\n")
    check = cli("topo", "check", path)
    assert check.exit_code == 0, check.stderr
    assert "bandwidth: no links" in check.output and "none (one GPU: an AllReduce moves no data)" in check.output
    draw = cli("topo", "draw", path, "-o", tmp_path / "one.png")
    assert draw.exit_code == 0 and (tmp_path / "one.png").stat().st_size > 0


@pytest.mark.parametrize("args, message", [
    (["run", "--jsn", "x"], "simnet run: No such option '--jsn'"),
    (["run"], "simnet run: Missing argument 'SCENARIO'"),
    (["topo", "show", "x.yaml", "--limit", "-1"], "simnet topo show: Invalid value for '--limit'"),
    (["sweep", "x.yaml", "--workers", "-1"], "simnet sweep: Invalid value for '--workers'"),
    (["bogus"], "simnet: No such command 'bogus'"),
    # fuzz 31d: click's "'2.0' is not a valid integer." said in a user's words
    (["run", "x.yaml", "-g", "2.0"], "simnet run: Invalid value for '-g' / '--gpus': '2.0' is not a whole number"),
    (["replay-trace", "x.json", "-t", "t.yaml", "--gpu-speedup", "fast"],
     "simnet replay-trace: Invalid value for '--gpu-speedup': 'fast' is not a number"),
    # fuzz r #206: click's "'0x2' is not a valid integer range." where -g says it in the user's words
    (["replay-trace", "x.json", "-t", "t.yaml", "--ranks-per-trace", "0x2"],
     "simnet replay-trace: Invalid value for '--ranks-per-trace': '0x2' is not a whole number; write one in the "
     "digits 0-9"),
])
def test_usage_errors_are_one_line(cli, args, message):
    result = cli(*args)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(message)


@pytest.mark.parametrize("option", ["--json", "--csv", "--trace"])
def test_unwritable_places_are_refused_before_simulating(cli, root, option):
    result = cli("run", root / "scenarios/single_node.yaml", option, "/proc/simnet-out.x")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"{option}: cannot write /proc/simnet-out.x: cannot create files in /proc")


@pytest.mark.parametrize("option", ["--csv", "--trace"])
def test_standard_output_is_for_json_only(cli, root, option):
    # '-' was silently dropped: exit 0, nothing written anywhere
    result = cli("run", root / "scenarios/single_node.yaml", option, "-")
    assert result.exit_code == 2 and result.stderr == f"{option}: '-' (standard output) is for --json only; name a file\n"


@pytest.mark.parametrize("option, name, message", [
    ("--trace", "time_vs_size.png", "is a plot --plot writes"), ("--json", "link_heatmap.png", "is a plot --plot writes"),
    ("--csv", "", "is the --plot folder")])
def test_a_file_option_never_names_what_plot_writes(cli, root, tmp_path, option, name, message):
    # --trace plots/time_vs_size.png wrote the trace, then the plot over it (or the reverse)
    plots = tmp_path / "plots"
    if name:
        plots.mkdir()
    target = plots / name if name else plots
    result = cli("run", root / "scenarios/single_node.yaml", "-s", "1 MiB", "--plot", plots, option, target)
    assert result.exit_code == 2 and result.stderr == f"{option}: {target} {message}; name another file\n"
    assert not plots.exists() or not any(plots.iterdir())


def test_the_python_api_refuses_a_negative_size_by_name(root):
    with pytest.raises(ValueError, match="size: -5 bytes; a size cannot be negative"):
        simnet.simulate(root / "topologies/dgx_h100.yaml", "ring", -5)


@pytest.mark.parametrize("size, message", [("-1 MiB", "'-1 MiB': a size cannot be negative"),
                                           ("0", "'0' has no unit; a size needs one")])
def test_a_negative_or_unitless_size_option_says_so(cli, root, size, message):
    result = cli("run", root / "scenarios/single_node.yaml", "-s", size)
    assert result.exit_code == 2 and result.stderr.strip().endswith(f"--size: {message} (e.g. '64 MiB', '1 GB')"
                                                                    if size == "0" else f"--size: {message}")


SWEEP = """name: sw
topology: t.yaml
size: 1 MiB
algorithms: [ring]
sweep: {gpus: [2]}
"""


@pytest.mark.parametrize("args, env, message", [
    (["--gpus", "2,,4"], {}, "s.yaml: --gpus: '' is not a GPU count"),
    (["--gpus", "2,x"], {}, "s.yaml: --gpus: 'x' is not a GPU count"),
    (["--gpus", "0"], {}, "s.yaml: --gpus: '0' is not a GPU count"),
    (["-a", "foo"], {}, "s.yaml: --algorithm: unknown algorithm 'foo'"),
    (["--scheduler", "garbage"], {}, "--scheduler: cannot reach the Dask scheduler at 'garbage'"),
    ([], {"NCCL_ALGO": "Foo"}, "s.yaml: NCCL_ALGO='Foo': unknown name 'Foo'"),
    ([], {"NCCL_PROTO": "LL256"}, "s.yaml: NCCL_PROTO='LL256': unknown name 'LL256'"),
])
def test_bad_sweep_options_are_one_line_and_write_nothing(cli, tmp_path, args, env, message):
    _files(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    out = tmp_path / "out"
    result = cli("sweep", path, "--out", out, *args, env=env)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr
    assert not (out / "results.jsonl").exists()


@pytest.mark.parametrize("gpus", ["null", "[2, banana]", "[0]", "[true]", "[1.5]"])
def test_bad_gpu_counts_in_a_sweep_file_are_one_line(cli, tmp_path, gpus):
    _files(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP.replace("gpus: [2]", f"gpus: {gpus}"))
    result = cli("sweep", path, "--out", tmp_path / "out")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{path}:5: sweep")


@given(st.text(alphabet="0123456789,x- ", max_size=12))
def test_any_gpus_option_is_counts_or_one_line(text):
    from simnet.cli.sweep import _gpu_counts
    from simnet.errors import InputError

    try:
        counts = _gpu_counts(text, Path("s.yaml"))
    except InputError as exc:
        assert str(exc).startswith("s.yaml: --gpus: ") and "\n" not in str(exc)
        return
    assert counts and all(isinstance(c, int) and c >= 1 for c in counts)


@pytest.mark.parametrize("given, where, message", [
    ({"size": "-1 MiB"}, "s.yaml:3", "sizes: '-1 MiB': a size cannot be negative"),
    ({"extra": "workload: {compute_time: 1 s, gradient_size: 1 GiB, bucket_size: 1 B}\n"}, "s.yaml:6",
     "bucket_size 1 B cuts the gradient into 1,073,741,824 buckets, over the 100,000"),
    ({"extra": "workload: {compute_time: 1 s, parameters: 1e30}\n"}, "s.yaml:6", "a gradient of 4e+30 B, over 1 PiB"),
    ({"extra": "gpus: true\n"}, "s.yaml:6", "gpus"),
    ({"algorithms": "tree", "options": "chunk_size: 1 B", "size": "1 GiB", "extra": "model: ideal\n"}, "s.yaml",
     "tree: chunk_size 1 B cuts 1 GiB into 1,073,741,824 pieces"),
    ({"algorithms": "ps", "options": "chunk_size: 1 B", "size": "1 GiB"}, "s.yaml", "ps: chunk_size 1 B cuts"),
])
def test_more_input_that_would_hang_or_exhaust_memory_is_one_line(cli, tmp_path, given, where, message):
    path = _files(tmp_path, **given)
    start = time.monotonic()
    result = cli("run", path, env={"SIMNET_MEMORY": "16 GiB"})
    assert time.monotonic() - start < 10
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(str(tmp_path / where)) and message in result.stderr, result.stderr


def test_a_size_range_of_millions_is_refused(cli, tmp_path):
    path = _files(tmp_path)
    path.write_text(path.read_text().replace("sizes: [1 MiB]", "sizes: '1 B .. 1 TB x1.00001'"))
    result = cli("run", path)
    assert result.exit_code == 2
    assert result.stderr == f"{path}:3: sizes: '1 B .. 1 TB x1.00001' takes 2,763,116 steps, over the 200 sizes " \
                            "simnet runs in one scenario; use a larger factor (nccl-tests uses x2)\n"


def test_results_never_overwrite_an_input(cli, tmp_path):
    path = _files(tmp_path)
    before = path.read_text(), (tmp_path / "t.yaml").read_text()
    for target in (path, tmp_path / "t.yaml"):
        result = cli("run", path, "--json", target)
        assert result.exit_code == 2 and "it is an input of this command" in result.stderr
    assert cli("topo", "export", tmp_path / "t.yaml", "--format", "json", "-o", tmp_path / "t.yaml").exit_code == 2
    assert (path.read_text(), (tmp_path / "t.yaml").read_text()) == before


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_calibrate_refuses_logs_that_are_not_files(tmp_path, root, kind):
    log = Path("/dev/zero") if kind == "device" else tmp_path / "log.fifo"
    if kind == "fifo":
        os.mkfifo(log)
    result = subprocess.run([sys.executable, "-m", "simnet", "calibrate", str(log), "-t",
                             str(root / "topologies/dgx_h100.yaml"), "-o", str(tmp_path / "c.yaml")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "not a regular file (a directory, device or pipe); expected an nccl-tests log" in result.stderr


def test_a_refused_sweep_leaves_no_folder_behind(cli, tmp_path):
    _files(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP + "options: {chunk_size: 1 KiB}\nmodel: ideal\n")  # nccl would raise it to NCCL's chunk
    out = tmp_path / "out"
    result = cli("sweep", path, "--out", out, env={"SIMNET_MEMORY": "60 KB"})  # the topology fits, the schedule not
    assert result.exit_code == 2 and "the point at 2 GPUs" in result.stderr, result.stderr
    assert not out.exists()


@pytest.mark.parametrize("command, name", [("sweep", "results.jsonl"), ("sweep", "results.csv"),
                                           ("sweep", "sweep.json"), ("sweep", ".lock"), ("run", "busbw_vs_size.png")])
def test_a_folder_where_an_output_file_goes_is_refused_before_the_work(cli, tmp_path, name, command):
    """Fuzz finding: OUT/results.jsonl as a folder was said to be results whose sweep.json
    is gone; results.csv or sweep.json as a folder exited 70 after every point had run."""
    _files(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    result = cli(command, path, "--out" if command == "sweep" else "--plot", out)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert f"{out / name} is a folder, where simnet writes its {name}" in result.stderr
    assert [p.name for p in out.iterdir()] == [name]


@pytest.mark.parametrize("command, option, name", [
    ("run", "--plot", "dang"), ("run", "--plot", "dang/sub"), ("run", "--json", "dang"), ("sweep", "--out", "dang")])
def test_an_output_through_a_link_to_nothing_is_refused_before_the_work(cli, tmp_path, command, option, name):
    """Fuzz round aw, M1: a dangling symbolic link as --plot or --out exited 70 after the run
    (its JSON and CSV written), and a file's link into no folder (compare -o, topo draw -o)
    too. (A file's link to a file not yet written, in a folder that is there, is written:
    review 88, M4.)"""
    _files(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    (tmp_path / "dang").symlink_to(tmp_path / "nowhere" / "plots")
    result = cli(command, path, option, tmp_path / name, *(["--csv", tmp_path / "r.csv"] if command == "run" else []))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert f"{tmp_path / 'dang'} is a link to {tmp_path / 'nowhere' / 'plots'}, which does not exist" in result.stderr
    assert (tmp_path / "dang").is_symlink() and not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("command, option, name", [
    ("run", "--json", "loop"), ("run", "--csv", "loop"), ("run", "--plot", "loop"), ("run", "--json", "loop/out.json"),
    ("sweep", "--out", "loop")])
def test_an_output_through_a_loop_of_links_is_refused_in_one_line(cli, tmp_path, command, option, name):
    """Review 88, low: a link that leads back to itself as an output exited 70 (pathlib's
    RuntimeError) or was said to lead to a file that does not exist."""
    _files(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    result = cli(command, path, option, tmp_path / name)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert f"{tmp_path / 'loop'} is a link to {tmp_path / 'loop'}, which leads back to itself" in result.stderr


@pytest.mark.parametrize("leads_to, says", [("nowhere/x.png", "which does not exist"),
                                             ("time_vs_size.png", "which leads back to itself")])
def test_a_link_to_nowhere_inside_a_plot_folder_is_refused_before_the_work(cli, tmp_path, leads_to, says):
    """Review 88, low: links inside an output folder were not checked; one to nowhere failed
    the plot after the run (and a loop exited 70 in the check for inputs)."""
    _files(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "time_vs_size.png").symlink_to(leads_to)
    result = cli("run", path, "--plot", tmp_path / "plots", "--json", tmp_path / "r.json")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert f"{tmp_path / 'plots' / 'time_vs_size.png'} is a link to {leads_to}, {says}" in result.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("command, option, link", [("run", "--json", "out.json"), ("run", "--plot", "plots/step.png"),
                                                   ("run", "--plot", "plots/time_vs_size.png"),
                                                   ("sweep", "--out", "plots/results.csv")])
def test_an_output_link_into_a_folder_simnet_cannot_write_is_refused_before_the_work(cli, tmp_path, command, option,
                                                                                    link):
    """Review 89, H1 and M1: written through a link, a file is made beside the file the link
    names, but the checks proved only the link's own folder writable: a link into /proc (or
    any folder the user cannot write) passed, and the command exited 70 after its work."""
    _files(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    (tmp_path / "plots").mkdir()
    (tmp_path / link).symlink_to("/proc/simnet-out")
    out = tmp_path / link.split("/")[0]
    result = cli(command, path, option, out, *(["--csv", tmp_path / "r.csv"] if command == "run" else []))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "cannot create files in /proc" in result.stderr and not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("target_there", [False, True])
def test_an_output_through_a_file_s_link_writes_the_file_it_names_and_keeps_the_link(cli, tmp_path, target_there):
    """Review 88, M4: a link to a file that does not exist yet, in a folder that does, was
    refused as a link to nothing; M5: written through, the link itself was replaced by the
    file (its target left as it was), where a shell's ``>`` writes the target and keeps the
    link."""
    _files(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    target = tmp_path / "later.json"
    if target_there:
        target.write_text("old\n")
    (tmp_path / "out.json").symlink_to(target)
    result = cli("run", path, "--json", tmp_path / "out.json")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "out.json").is_symlink() and (tmp_path / "out.json").readlink() == target
    assert json.loads(target.read_text())["runs"], "the link's target holds the run"
    assert [p.name for p in tmp_path.glob(".simnet-*")] == []


LONG = "x" * 300  # past the 255 bytes a file name may have on Linux file systems


@pytest.mark.parametrize("command, option, name", [
    ("run", "--csv", LONG + ".csv"), ("run", "--json", LONG + ".json"), ("run", "--plot", LONG),
    ("run", "--trace", LONG + ".json"), ("run", "--plot", "/".join(["d" * 200] * 25)), ("sweep", "--out", LONG),
    ("sweep", "--out", "new/" + LONG)])  # round j #307: a folder to create, in one that does not exist yet
def test_an_output_name_longer_than_the_file_system_takes_is_refused_in_one_line(cli, tmp_path, command, option, name):
    """Fuzz round i: every output option with a 300-character name (or a 5,000-character path)
    exited 70 with 'File name too long' before anything was simulated."""
    _files(tmp_path)
    path = tmp_path / "s.yaml"
    if command == "sweep":
        path.write_text(SWEEP)
    result = cli(command, path, option, tmp_path / name)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{option}: cannot write")
    assert "File name too long" in result.stderr or "bytes, over the 255 a name may have here" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml", "t.yaml"]


@pytest.mark.parametrize("option", ["--json", "--csv"])
def test_an_output_name_the_file_system_takes_is_written_whatever_its_length(cli, tmp_path, option):
    """Fuzz round j #299-#413: a 250-byte name is a good one, but the results went through
    '.NAME.partial', 10 bytes longer, and exited 70."""
    _files(tmp_path)
    name = tmp_path / ("y" * 245 + option.replace("--", "."))
    result = cli("run", tmp_path / "s.yaml", option, name)
    assert result.exit_code == 0, result.stderr
    assert name.stat().st_size > 0 and sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["s.yaml", "t.yaml", name.name])


def test_simnet_alone_shows_its_help(cli):
    result = cli()
    assert "Usage: simnet [OPTIONS] COMMAND" in result.output and "run" in result.output


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["", "new", "x.json", "dir", "file", "fifo", ".", "a b", "y" * 300]), min_size=1,
                max_size=4),
       st.sampled_from(["", ".json", ".png", ".xyz"]))
def test_any_output_path_is_writable_or_one_line(tmp_path, parts, suffix):
    """Paths inside a sandbox (no '..', nothing absolute: the check itself creates a scratch
    file where it would write) that mix folders, files, a FIFO and missing parents."""
    from simnet.errors import InputError
    from simnet.report.paths import IMAGE_SUFFIXES, output_file

    box = tmp_path / "box"
    (box / "dir").mkdir(parents=True, exist_ok=True)
    (box / "file").touch()
    if not (box / "fifo").exists():
        os.mkfifo(box / "fifo")
    path = box.joinpath(*parts)
    path = path.with_name(path.name + suffix) if path.name else path
    try:
        checked = output_file(path, "-o", IMAGE_SUFFIXES if suffix in (".png", ".xyz") else None)
    except InputError as exc:
        assert str(exc).startswith("-o: cannot write ") and "\n" not in str(exc)
        return
    assert not checked.exists() or checked.is_file()  # never a device or pipe: results replace the file whole
    if not checked.exists():
        checked.write_text("ok")  # what output_file accepts can really be written
        checked.unlink()


_RECORD = {"set": {}, "gpus": 2, "algorithm": "ring", "sizes": [{"size_bytes": 8, "time_s": 1e-5}]}  # as evaluate writes
_LINE = st.one_of(st.builds(lambda k: json.dumps({"key": k, **_RECORD}), st.text(alphabet="abc", min_size=1, max_size=3)),
                  st.sampled_from(["", "  ", "[1]", "3", '{"key": 5}', '{"gpus": 1}', "{oops", "\x00\xff"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_LINE, max_size=6), st.booleans())
def test_a_results_file_keeps_every_good_record_or_names_the_bad_line(tmp_path, lines, torn):
    from simnet.errors import InputError
    from simnet.run.sweep.store import load_records

    path = tmp_path / "results.jsonl"
    text = "".join(line + "\n" for line in lines) + ('{"key": "torn' if torn else "")
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    good = [line for line in lines if line.startswith('{"key": "')]
    try:
        records = load_records(path)
    except InputError as exc:
        assert "is not" in str(exc) and "\n" not in str(exc)
        assert path.read_bytes() == text.encode("utf-8", "surrogateescape")  # nothing cut
        return
    assert len(records) == len(good)  # every good record, nothing else
    assert path.read_bytes() == "".join(line + "\n" for line in lines).encode()  # only the torn tail cut


def test_calibrate_never_overwrites_its_log_or_topology(cli, tmp_path, root):
    log = tmp_path / "run.log"
    log.write_text((root / "validation/logs/xe9680_2node_issue309.log").read_text())
    topo = tmp_path / "t.yaml"
    topo.write_text((root / "validation/logs/xe9680_2node.yaml").read_text())
    before = log.read_text(), topo.read_text()
    for target in (log, topo):
        result = cli("calibrate", log, "-t", topo, "--gpus", "16", "-o", target)
        assert result.exit_code == 2 and "it is an input of this command" in result.stderr
    assert (log.read_text(), topo.read_text()) == before


def test_run_never_overwrites_the_topologys_calibration_profile(cli, tmp_path):
    path = _files(tmp_path)
    profile = tmp_path / "p.cal.yaml"
    profile.write_text("calibration: {}\n")
    (tmp_path / "t.yaml").write_text((tmp_path / "t.yaml").read_text() + "calibration: p.cal.yaml\n")
    result = cli("run", path, "--json", profile)
    assert result.exit_code == 2 and "it is an input of this command" in result.stderr, result.stderr
    assert profile.read_text() == "calibration: {}\n"


def test_worst_path_is_exact_on_small_topologies(cli, tmp_path):
    """A star of 20 GPUs whose slowest pair is g4 -> g9 (50 us + 50 us): every GPU is searched."""
    nodes = "".join(f"  - {{id: g{i}, kind: gpu}}\n" for i in range(20))
    links = "".join(f"  - {{a: g{i}, b: sw, bandwidth: 100 Gb/s, latency: {50 if i in (4, 9) else 1} us}}\n"
                    for i in range(20))
    path = tmp_path / "star.yaml"
    path.write_text(f"name: star\nnodes:\n{nodes}  - {{id: sw, kind: switch}}\nlinks:\n{links}")
    result = cli("topo", "check", path)
    assert result.exit_code == 0, result.stderr
    assert "worst GPU-to-GPU path: 100 us over 2 hops (g4 -> g9)\n" in result.stdout


@pytest.mark.parametrize("value", ["lots", "0 B", "-1 GiB", "1.5 B"])
def test_a_bad_simnet_memory_is_one_line(cli, root, value):
    result = cli("run", root / "scenarios/single_node.yaml", "-a", "ring", "-s", "1 MiB",
                 env={"SIMNET_MEMORY": value})
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "SIMNET_MEMORY: " in result.stderr


def test_unicode_digits_are_not_gpu_counts(cli, tmp_path):
    _files(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    result = cli("sweep", path, "--gpus", "2,\u00b2", "--out", tmp_path / "out")
    assert result.exit_code == 2 and "is not a GPU count" in result.stderr


@pytest.mark.parametrize("args, says", [
    (["run", "{s}", "-g", "\u0662"], "'-g' / '--gpus': '\u0662' is not a number written in digits 0-9"),
    (["sweep", "{s}", "--workers", "\uff12"], "'--workers': '\uff12' is not a number written in digits 0-9"),
    (["run", "{s}", "-s", "1 KiB .. 8 KiB x\u0662"], "--size: '1 KiB .. 8 KiB x\u0662'"),
    (["run", "{c}"], "cost: '\u0661 M$' is not a cost")])
def test_numbers_in_another_script_are_not_read_as_digits(cli, tmp_path, args, says):
    """Fuzz finding (31e): click's int and float, and the cost, range-factor and random(seed)
    patterns (``\\d``) read Arabic-Indic and full-width digits: ``-g \u0662`` ran 2 GPUs,
    ``cost: \u0661 M$`` cost 1 M$."""
    s = _files(tmp_path)
    c = tmp_path / "c.yaml"
    c.write_text(s.read_text() + "cost: '\u0661 M$'\n")
    result = cli(*[a.format(s=s, c=c) for a in args], "--out" if args[0] == "sweep" else "--json",
                 tmp_path / "o" if args[0] == "sweep" else "-")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and says in result.stderr, result.stderr


def test_yaml_aliases_are_bounded_by_the_memory_budget_too(cli, tmp_path):
    """Five levels of ten aliases: 100,000-odd values, fine by the count, refused in 1 MB."""
    text = "name: x\na: &a [1,1,1,1,1,1,1,1,1,1]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(4))
    path = tmp_path / "wide.yaml"
    path.write_text(text)
    result = cli("topo", "check", path, env={"SIMNET_MEMORY": "1 MB"})
    assert result.exit_code == 2 and "values once aliases are expanded, over the 5,000 simnet reads here" in result.stderr


def test_a_memory_budget_too_small_for_a_file_without_aliases_says_so(cli, tmp_path):
    """Fuzz finding (31e): SIMNET_MEMORY='1 KiB' refused a plain scenario as '21 values once
    aliases are expanded', a file that has none."""
    path = _files(tmp_path)
    result = cli("run", path, env={"SIMNET_MEMORY": "1 KiB"})
    assert result.exit_code == 2 and "aliases" not in result.stderr, result.stderr
    assert "the memory budget holds at ~200 B each (1 KiB: SIMNET_MEMORY" in result.stderr


def test_sweep_workers_share_the_memory_budget(monkeypatch):
    from concurrent.futures import ProcessPoolExecutor

    from simnet.run.sweep.executors import LocalExecutor

    monkeypatch.setenv("SIMNET_MEMORY", "1 GiB")
    executor = LocalExecutor(4)
    assert isinstance(executor._pool, ProcessPoolExecutor)
    shares = {executor.submit(os.getenv, "SIMNET_MEMORY").result() for _ in range(4)}
    executor.close()
    assert shares == {f"{2**30 // 4} B"}


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_name_its_terminal_cannot_encode_is_printed_escaped(tmp_path, encoding):
    """A scenario named in any script, printed to an ASCII or Latin-1 terminal or log
    (PYTHONIOENCODING, an old locale): escaped, never an internal error."""
    path = tmp_path / "s.yaml"
    path.write_text("name: 'Größe ☃'\ntopology: {name: box, generate: {kind: nvswitch, gpus: 2}}\nsizes: [1 KiB]\n"
                    "algorithms: [ring]\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "simnet", "run", str(path)], capture_output=True, timeout=60,
                            env={**os.environ, "PYTHONIOENCODING": encoding})
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert b"\\u2603" in result.stdout and b"Traceback" not in result.stderr


@pytest.mark.parametrize("text, said", [
    ('"foo[1]": 2\n', ":5: foo[1]: unknown key 'foo[1]'"),
    ('options: {"chan[1]": 2}\n', ":5: options.chan[1]: unknown key 'chan[1]'"),
    ('variants:\n  - {name: x}\n  - {name: y, set: {"foo[1]": 2}}\n',
     ":7: variants[1]: foo[1]: the scenario has no list foo for 1 to index")])
def test_a_key_with_brackets_is_an_unknown_key_not_an_internal_error(tmp_path, cli, text, said):
    """Fuzz round ad F11: a key holding '[' (``jobs[1].placement`` typed for ``jobs.1.placement``)
    was taken for one of pydantic's union labels and dropped from the error's place: exit 70.
    Refused in one line naming it, as any unknown key; in a variant's ``set`` (and ``--set``)
    brackets index a list, as simnet's messages write it (fuzz round au, L6)."""
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 2}}\nsizes: [1 MiB]\n"
                    "algorithms: [ring]\n" + text)
    result = cli("run", path)
    assert result.exit_code == 2 and result.stderr.startswith(f"{path}{said}"), result.stderr


def test_a_set_key_with_brackets_indexes_the_list_as_simnet_writes_it(tmp_path, cli):
    """Fuzz round ad F11: ``--set 'sizes[0]=1MiB,2MiB'`` exited 70. Fuzz round au, L6: the form
    simnet's own messages use for a list's item (``jobs[0].size``) was refused where only
    ``jobs.0.size`` worked. It sweeps that item, the same points as the dotted form."""
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 2}}\nsizes: [1 MiB]\n")
    points = []
    for key in ("sizes[0]", "sizes.0"):
        swept = cli("sweep", path, "--set", f"{key}=1MiB,2MiB", "--out", tmp_path / key, "--workers", "1")
        assert swept.exit_code == 0, swept.stderr
        points.append(sorted((r["set"]["sizes.0"], r["sizes"][0]["time_s"]) for r in map(
            json.loads, (tmp_path / key / "results.jsonl").read_text().splitlines())))
    assert points[0] == points[1] and len(points[0]) == 2


@pytest.mark.parametrize("key", ["sizes.0.x", "algorithms.0.x", "sizes.0.0"])
def test_a_set_key_through_a_value_of_a_list_is_refused_not_an_internal_error(tmp_path, cli, key):
    """Fuzz round ae F3: a dotted key through a text element of a list (``sizes.0.x``) ended in
    a TypeError, exit 70, in sweep, compare and run; refused in one line naming it."""
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 2}}\nsizes: [1 MiB]\n"
                    "algorithms: [ring]\n")
    swept = cli("sweep", path, "--set", f"{key}=1", "--out", tmp_path / "out")
    assert swept.exit_code == 2 and f"{key}: " in swept.stderr and "a value, not a mapping or list" in swept.stderr
    assert not (tmp_path / "out").exists()


def test_a_swept_option_no_option_is_named_is_an_unknown_key(tmp_path, cli):
    """Fuzz round ae F8: ``--set options.channels[0]=2`` was refused as an option ring does not
    read, though ring reads channels: it indexes a list the scenario does not have, refused so."""
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: b, generate: {kind: nvswitch, gpus: 2}}\nsizes: [1 MiB]\n"
                    "algorithms: [ring]\n")
    swept = cli("sweep", path, "--set", "options.channels[0]=2", "--out", tmp_path / "out")
    assert swept.exit_code == 2 and "the scenario has no list options.channels for 0 to index" in swept.stderr


def test_a_file_simnet_writes_gets_the_mode_a_plain_write_gives(tmp_path):
    """Fuzz round ah: --json, --csv, --trace and topo export wrote 0600 files under umask 022
    (the temporary file's mode, renamed into place) and turned a replaced 0644 file into 0600.
    A new file gets what the umask leaves of 0666; a replaced one keeps its own mode."""
    import os
    import stat

    from simnet.io.files import write_text

    mask = os.umask(0o022)
    try:
        made = write_text(tmp_path / "new.json", "{}")
        assert stat.S_IMODE(made.stat().st_mode) == 0o644
        kept = tmp_path / "kept.json"
        kept.write_text("old")
        kept.chmod(0o640)
        write_text(kept, "{}")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text() == "{}\n"
    finally:
        os.umask(mask)


@pytest.mark.parametrize("command, says", [("run", "interrupted\n"), ("compare", "interrupted\n"),
                                           ("sweep", "interrupted (a sweep keeps every finished point: run it again "
                                                     "to resume)\n")])
def test_ctrl_c_says_a_sweep_resumes_only_of_a_sweep(command, says):
    """Fuzz round ax, F3: Ctrl-C in run, compare or calibrate said "a sweep keeps every finished
    point: run it again to resume", where there is no sweep and nothing to resume."""
    program = ("from simnet.cli.shell import friendly\n"
               f"def {command}():\n    raise KeyboardInterrupt\n"
               f"friendly({command})()\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and done.stderr == says, done.stderr
    from simnet.cli.sweep import sweep  # the words hang on the command's name (review 89, L4)

    assert sweep.callback.__name__ == "sweep"


MARKUP_TOPOLOGY = """name: markup
nodes:
  - {id: gpu0, kind: gpu, host: h0, gpu: h100}
  - {id: gpu1, kind: gpu, host: h0, gpu: h100}
  - {id: "NAME", kind: switch, host: h0}
links:
  - {a: gpu0, b: "NAME", bandwidth: 450 GB/s, latency: 0.25 us}
  - {a: gpu1, b: "NAME", bandwidth: 450 GB/s, latency: 0.25 us}
"""


@pytest.mark.parametrize("name", ["nv[/]", "nv[/bold]", "nv[s]", "[red]nv"])
@pytest.mark.parametrize("command", ["run", "sweep", "compare"])
def test_a_name_that_reads_as_rich_markup_prints_as_written(cli, tmp_path, name, command):
    """Fuzz round ay, F4: a node id ``nv[/]`` made run and sweep exit 70 (rich's MarkupError on
    the table cell naming the link), after sweep had written its records; ``nv[s]`` printed as
    ``nv`` struck through. Scenario, job and variant names the same. Names print as written."""
    (tmp_path / "t.yaml").write_text(MARKUP_TOPOLOGY.replace("NAME", name))
    variants = "variants:\n  - {name: 'A[/]'}\n  - {name: B, set: {options: {channels: 1}}}\n" if command == "compare" else ""
    (tmp_path / "s.yaml").write_text(f"name: 's[/]'\ntopology: t.yaml\nsize: 1 MiB\nalgorithms: [ring]\n{variants}")
    args = {"run": (), "sweep": ("--gpus", "2", "--out", tmp_path / "o"), "compare": ("-o", tmp_path / "c.png")}
    result = cli(command, tmp_path / "s.yaml", *args[command])
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert ("A[/]" if command == "compare" else "s[/]") in text and (command == "sweep" or name in text), text


@pytest.mark.parametrize("bucket, refused", [("", False), ("1 GiB", False), ("100 MiB", True)])
def test_stragglers_beside_a_bucketed_gradient_are_refused(tmp_path, cli, root, bucket, refused):
    """Fuzz round ay, F3: one GPU 2 ms late cost a step ~1 ms with one bucket, 20 ms with 10
    and 192 ms with 100: the delay was charged on each bucket's AllReduce, one after another.
    Refused in one line where the gradient is several buckets (compute_slowdown is the slow
    GPU of every step); one bucket (or none given) runs."""
    workload = "{compute_time: 10 ms, gradient_size: 1 GiB" + (f", bucket_size: {bucket}" if bucket else "") + "}"
    (tmp_path / "s.yaml").write_text(f"name: w\ntopology: {root / 'topologies/dgx_h100.yaml'}\nsizes: [64 MiB]\n"
                                     f"algorithms: [ring]\nworkload: {workload}\nstragglers: {{gpu3: 2 ms}}\n")
    result = cli("run", tmp_path / "s.yaml")
    if refused:
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
        assert "s.yaml:6: stragglers: they join each collective late, and the workload AllReduces its gradient in " \
               "11 buckets" in result.stderr
    else:
        assert result.exit_code == 0, result.stderr


def test_a_profile_or_picture_to_standard_output_is_refused_not_written_as_a_file_named_dash(cli, tmp_path, root):
    """Fuzz round ay, F6: ``simnet calibrate ... -o -`` wrote a file named ``-``, where
    ``run --json -`` means standard output; ``topo draw -o -`` likewise."""
    log = root / "validation/logs/h100_ndr_issue309_2node.log"
    for args in (("calibrate", log, "-t", root / "validation/logs/h100_ndr_8node.yaml", "--gpus", "16", "-o", "-"),
                 ("topo", "draw", root / "topologies/dgx_h100.yaml", "-o", "-")):
        result = cli(*args)
        assert result.exit_code == 2 and "'-' (standard output) is for --json" in result.stderr, result.stderr
    assert not (Path.cwd() / "-").exists()


@pytest.mark.parametrize("stragglers, args", [("{gpu3: 0 ms}", ()), ("{gpu7: 2 ms}", ("-g", "2"))])
def test_stragglers_the_run_does_not_feel_are_not_refused_beside_buckets(tmp_path, cli, root, stragglers, args):
    """Review 92, M2: the refusal of stragglers beside a bucketed gradient also refused a delay
    of 0 and a GPU outside the run (-g 2), which run and say they changed nothing."""
    (tmp_path / "s.yaml").write_text(f"name: w\ntopology: {root / 'topologies/dgx_h100.yaml'}\nsizes: [64 MiB]\n"
                                     "algorithms: [ring]\nworkload: {compute_time: 10 ms, gradient_size: 1 GiB, "
                                     f"bucket_size: 100 MiB}}\nstragglers: {stragglers}\n")
    result = cli("run", tmp_path / "s.yaml", *args)
    assert result.exit_code == 0, result.stderr
    assert "changed nothing here" in " ".join(result.stdout.split())
