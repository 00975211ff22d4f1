"""Every mistake in a topology file is one line naming file, line and field; exit code 2."""

from pathlib import Path

import pytest

from simnet import InputError, load_topology

BAD = Path(__file__).parent / "bad_topologies"

# file -> (line, the rest of the message after "file:line: ")
EXPECTED = {
    "yaml_syntax.yaml": (4, "YAML syntax error: a mapping opened with '{' is not closed with '}' (or an item lacks "
                            "its comma)"),
    "unknown_key.yaml": (4, "nodes[1].colour: unknown key 'colour'; expected one of id, kind, host, rack, region, rank, gpu, "
                           "transport, net_latency, nvls, sharp"),
    "missing_id.yaml": (4, "nodes[1].id: is required but missing"),
    "duplicate_id.yaml": (5, "nodes[2].id: duplicate id 'gpu0' (first defined on line 3)"),
    "unknown_node.yaml": (7, "links[1].a: unknown node 'gpu9'"),
    "bandwidth_no_unit.yaml": (6, "links[0].bandwidth: 400 has no unit; a bandwidth needs one "
                                  "(e.g. '400 Gb/s', '50 GB/s')"),
    "misspelt_unit.yaml": (6, "links[0].bandwidth: '40 Gbq' is not a bandwidth (e.g. '400 Gb/s', '50 GB/s')"),
    "zero_bandwidth.yaml": (6, "links[0].bandwidth: must be positive"),
    "negative_bandwidth.yaml": (6, "links[0].bandwidth: must be positive"),
    "negative_latency.yaml": (6, "links[0].latency: must not be negative"),
    "unknown_kind.yaml": (4, "nodes[1].kind: 'router' is not one of 'gpu', 'switch', 'nic', 'host' or 'ps'"),
    "unknown_generator.yaml": (3, "generate.kind: unknown generator 'dragonfly'; expected one of nvswitch, "
                                  "pcie, leaf_spine, rail_optimized, cross_region, ps_star, full_mesh"),
    "unknown_generator_parameter.yaml": (5, "generate.gpus_per_node: unknown key 'gpus_per_node'; did you mean 'gpus_per_host'?"),
    "unreachable.yaml": (4, "nodes[1]: GPU 'gpu0' cannot reach GPU 'gpu1': no path through switches or NICs"),
    "unlinked_gpu.yaml": (5, "nodes[2]: GPU 'g0' cannot reach GPU 'g2': it has no links"),
    # the one-way link, not the GPU it leaves unreachable (fuzz finding: blamed on the node)
    "one_way_link.yaml": (8, "links[1]: a one-way link (directed: true) gpu1 -> sw, and no route leads into 'gpu1' the "
                             "other way, so GPU 'gpu0' cannot reach GPU 'gpu1'; give the way back too"),
    # a cable between switches written one way: its line, not the GPU it leaves unreachable (fuzz round ah)
    "one_way_switch_cable.yaml": (10, "links[2]: a one-way link (directed: true) tor0 -> tor1, and no route leads the "
                                      "other way, so GPU 'gpu1' cannot reach GPU 'gpu0'; give the way back too"),
    "typo_key.yaml": (7, "links[0].bandwith: unknown key 'bandwith'; did you mean 'bandwidth'?"),
    "scenario_not_topology.yaml": (1, "this is a scenario file (it has 'topology:'), not a topology; give its "
                                      "topology (box.yaml) or use simnet run"),
    "empty.yaml": (1, "the file is empty; expected a mapping"),
    "list_not_mapping.yaml": (1, "[{id: gpu0, kind: gpu}, {id: gpu1, kind: gpu}] is a list; expected a mapping "
                                 "with name, nodes and links"),
    "rank_twice.yaml": (4, "nodes[1].rank: rank 1 given twice (also 'gpu0')"),
    "uplink_and_oversubscription.yaml": (3, "generate: give uplink_bandwidth or oversubscription, not both"),
    "nvls_on_a100.yaml": (5, "generate.nvls: a100 has no NVLink SHARP (NCCL runs NVLS from H100 on)"),
    "bad_ratio.yaml": (4, "generate.oversubscription: '4:0' is not a ratio (e.g. 4:1 or 4; both sides above 0)"),
    "missing_latency.yaml": (6, "links[0].latency: is required but missing"),
    "duplicate_key.yaml": (2, "name: duplicate key 'name'"),
    "duplicate_link.yaml": (9, "links[2]: a link sw -> gpu0 already exists (line 7); only two switches take parallel "
                                 "cables (their bandwidths add): write one link"),
    "no_gpus.yaml": (3, "nodes: no GPUs: at least one node needs kind: gpu"),
    # a switch no link names changed nothing and was kept without a word (fuzz finding, 31e)
    "lonely_switch.yaml": (6, "nodes[3].id: the switch 'spare' is joined to nothing: no link names it, so it changes "
                              "nothing; link it, or leave it out"),
}


def test_corpus_is_complete():
    assert sorted(EXPECTED) == sorted(p.name for p in BAD.glob("*.yaml"))
    assert len(EXPECTED) >= 15


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_api_raises_one_line(name):
    line, message = EXPECTED[name]
    with pytest.raises(InputError) as info:
        load_topology(BAD / name)
    assert str(info.value) == f"{BAD / name}:{line}: {message}"
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cli_prints_one_line_and_exits_2(cli, name):
    line, message = EXPECTED[name]
    result = cli("topo", "check", BAD / name)
    assert result.exit_code == 2
    assert result.stderr == f"{BAD / name}:{line}: {message}\n"
    assert result.stdout == ""


def test_missing_file_is_refused(cli, tmp_path):
    result = cli("topo", "check", tmp_path / "nope.yaml")
    assert result.exit_code == 2
    assert "cannot read file" in result.stderr and "Traceback" not in result.stderr
