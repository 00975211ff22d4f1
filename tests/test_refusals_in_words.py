"""Refusals in the words of the file a user wrote: values quoted as YAML writes them (not
Python's dict repr), YAML syntax errors said without PyYAML's tokens, a check of a whole
mapping on the line of the key it names."""

from __future__ import annotations

import pytest

from simnet.errors import InputError
from simnet.spec.scenario import load_scenario

TOPOLOGY = "topology: {name: t, generate: {kind: nvswitch, gpus: 2, gpu_bandwidth: 100 GB/s}}\n"


def _refusal(tmp_path, text: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}:")
    return message.removeprefix(f"{path}:")


@pytest.mark.parametrize("line, says", [
    ("faults: {at: 1 ms, node: gpu0, bandwidth: 50%}", "faults: {at: 1 ms, node: gpu0, bandwidth: 50%} is a mapping"),
    ("sizes: {a: 1 MiB, b: [1, 2]}", "sizes: {a: 1 MiB, b: [1, 2]} is a mapping, not a size"),
    ("options: {channels: {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10, k: 11}}",
     "options.channels: {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j:... is a mapping")])
def test_a_list_or_mapping_is_quoted_as_yaml_writes_it(tmp_path, line, says):
    """Fuzz finding: long messages quoted Python's dict repr ({'at': '1 ms', ...}), whole."""
    message = _refusal(tmp_path, f"name: s\n{TOPOLOGY}{line}\n" + ("sizes: [1 MiB]\n" * ("sizes" not in line)))
    assert says in message and "'at'" not in message and "{'" not in message


@pytest.mark.parametrize("text, says", [("hello\n", "1: 'hello' is text; expected a mapping"),
                                        ("42\n", "1: 42 is a number; expected a mapping"),
                                        ("- a\n", "1: [a] is a list; expected a mapping")])
def test_a_document_that_is_no_mapping_says_what_it_is_in_yaml_words(tmp_path, text, says):
    """It said 'got a str', 'got a int': Python's type names."""
    assert _refusal(tmp_path, text).startswith(says)


@pytest.mark.parametrize("text, line, says", [
    ("name: s\nsizes:\n\t- 1 MiB\n", 3, "a tab where YAML wants spaces"),
    ("name: s\n\tsizes: [1 MiB]\n", 2, "a tab where YAML wants spaces"),
    ("name: s\n---\nname: t\n", 2, "a second YAML document (after '---' or '...') follows the first"),
    ("name: s\n...\nname: t\n", 3, "a second YAML document"),
    ("name: [a, b\n", 2, "a list opened with '[' is not closed with ']'"),
    ("name: &x s\ndescription: *y\n", 2, "an alias (*name) that no anchor (&name) before it defines"),
    ("name: a: b\n", 1, "a ': ' where no key can start"),
    ("name: s\n- x\n", 2, "this line is indented unlike the lines around it"),
    ("name: @s\n", 1, "'@' cannot start a value: put the value in quotes"),
    ("%YAML 1.3\n---\nname: s\n", 1, "a %YAML or %TAG line simnet does not read"),
    ("name: s\ndescription: a\x00b\n", 2, "a control character (U+0000)"),
    ("name: s\noptions: {channels: 2}}\n", 2, "a '}' that closes no '{': check the brackets on this line"),  # 31e
    ("name: s\nsizes: [1 MiB]]\n", 2, "a ']' that closes no '['")])
def test_yaml_syntax_errors_are_said_without_pyyaml_s_tokens(tmp_path, text, line, says):
    """It said 'found character that cannot start any token' for a tab, 'but found another
    document', 'did not find expected <document start>', and no line for a NUL."""
    message = _refusal(tmp_path, text)
    assert message.startswith(f"{line}: YAML syntax error: {says}"), message
    assert "<" not in message and "found" not in message


def test_a_gradient_too_large_from_parameters_names_parameters(tmp_path):
    """Fuzz finding: `parameters: 1e18` was refused on the workload's line as 'a gradient of
    4e+18 B', a key the file does not have."""
    message = _refusal(tmp_path, f"name: s\n{TOPOLOGY}sizes: [1 MiB]\nworkload:\n  compute_time: 1 ms\n"
                                 "  parameters: 1e18\n")
    assert message.startswith("6: workload.parameters: 1e+18 parameters of 4 B (fp32) make a gradient of 4e+18 B")


def test_a_check_of_a_whole_mapping_is_put_on_the_key_it_names(tmp_path):
    """A model's own check that names one of its keys ('backward_fraction: without
    bucket_size ...') is reported on that key's line, as a field's own check is."""
    message = _refusal(tmp_path, f"name: s\n{TOPOLOGY}sizes: [1 MiB]\nworkload:\n  compute_time: 1 ms\n"
                                 "  gradient_size: 1 MiB\n  backward_fraction: 0.5\n")
    assert message.startswith("7: workload.backward_fraction: without bucket_size")


@pytest.mark.parametrize("value, says", [
    ("{gpu1: 0.5}", "workload.compute_slowdown.gpu1: 0.5 is not a slowdown; give how many times longer this GPU "
                    "computes than the others, a number from 1 (as fast) to 1,000: 1.2 for 20% slower"),
    ("{gpu1: '20%'}", "workload.compute_slowdown.gpu1: '20%' is not a slowdown"),
    ("{gpu1: true}", "workload.compute_slowdown.gpu1: true is a yes/no, not a slowdown"),  # (round ac: named no GPU)
    ("1.2", "workload.compute_slowdown: 1.2 is a number; give each slow GPU how many times longer it computes than "
            "the others, e.g. {gpu3: 1.2} for 20% slower")])
def test_a_compute_slowdown_refused_says_what_the_number_means(tmp_path, value, says):
    """Fuzz finding: '0.5 must be at least 1.0' and ''20%' is text' said nothing of what a
    slowdown is (a factor on the GPU's compute time)."""
    message = _refusal(tmp_path, f"name: s\n{TOPOLOGY}sizes: [1 MiB]\nworkload: {{compute_time: 1 ms, "
                                 f"gradient_size: 1 MiB, compute_slowdown: {value}}}\n")
    assert message.startswith(f"4: {says}"), message


def test_a_compute_slowdown_of_one_is_warned_as_changing_nothing(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\n{TOPOLOGY}sizes: [1 MiB]\nworkload: {{compute_time: 1 ms, gradient_size: 1 MiB, "
                    "compute_slowdown: {gpu1: 1}}\n")
    (warning,) = load_scenario(path).warnings
    assert warning.kind == "key_unread" and "a slowdown of 1 computes as fast as the other GPUs" in warning.message


FABRIC = "topology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: 2, spines: 1}}\n"


@pytest.mark.parametrize("files, args, says", [
    ({"a.yaml": "sizes: [1 MiB]\nalgorithms: [ring]\nvariants:\n  - {name: a}\n  - name: b\n"
                "    set: {topology.generate.racks: 0}\n"}, ["a.yaml"],
     "a.yaml:9: variants[1].set.topology.generate.racks: 0 must be at least 1"),
    ({"a.yaml": "sizes: [1 MiB]\nalgorithms: [ring]\nvariants:\n  - {name: a}\n  - name: b\n"
                "    set: {options.pxn: true}\n"}, ["a.yaml"], "a.yaml:9: variants[1].set.options.pxn: read by none"),
    ({"a.yaml": "sizes: [1 MiB]\nalgorithms: [ring]\nvariants:\n  - {name: a}\n  - name: b\n"
                "    set: {sizes: [2 MiB]}\n"}, ["a.yaml"], "a.yaml:9: variants[1].set.sizes: option b runs none of"),
    ({"a.yaml": "sizes: [1 MiB]\nalgorithms: [nvls]\nvariants:\n  - {name: a}\n  - {name: b, cost: 1 M$}\n"},
     ["a.yaml"], "a.yaml:5: algorithms: the point at 4 GPUs: nvls across hosts"),
    ({"a.yaml": "sizes: [1 MiB]\n"}, ["a.yaml"], "a.yaml:1: variants: compare needs variants"),
    ({"a.yaml": "sizes: [1 MiB]\n", "b.yaml": "sizes: [2 MiB]\n"}, ["a.yaml", "b.yaml"],
     "b.yaml:4: sizes: option b runs none of the sizes of the options before it"),
    ({"a.yaml": "sizes: [1 MiB]\n", "b.yaml": "sizes: [1 MiB]\ncollective: all_gather\n"}, ["a.yaml", "b.yaml"],
     "b.yaml:5: collective: option b runs all_gather, the options before it allreduce"),
    ({"a.yaml": "training: {model: {layers: 1, hidden: 8, heads: 1, ffn: 8, sequence: 4, vocabulary: 8}, "
                "efficiency: 0.5}\n", "b.yaml": "sizes: [1 MiB]\n"}, ["a.yaml", "b.yaml"],  # was StopIteration, exit 70
     "a.yaml:4: training: option a is a training step without sizes, and not every option has one"),
    ({"a.yaml": "jobs:\n  - {name: x, gpus: 2, size: 1 MiB}\nvariants:\n  - {name: a}\n"
                "  - {name: b, set: {jobs.0.size: 2 MiB}}\n"}, ["a.yaml"],  # 31e: said as line 1's 'sizes'
     "a.yaml:8: variants[1].set.jobs.0.size: option b runs none of the sizes")])
def test_compare_refusals_name_the_line_of_the_option_refused(cli, tmp_path, files, args, says):
    """Fuzz finding: compare's refusals named the first file, not the line (nor the file) of
    the option refused."""
    for name, text in files.items():
        (tmp_path / name).write_text(f"name: {name[0]}\n{FABRIC}model: ideal\n{text}")
    result = cli("compare", *[tmp_path / a for a in args], "-o", tmp_path / "c.png")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path}/{says}"), result.stderr
    assert not (tmp_path / "c.png").exists()


@pytest.mark.parametrize("text, says", [
    (f"name: s\n{FABRIC}sizes: [1 MiB]\nfaults: [{{at: 0 s, link: [tor0, spine0, tor1], down: true}}]\n",
     "4: faults[0].link: [tor0, spine0, tor1] has 3 items; give at most 2"),
    ("name: s\ntopology: {name: t, generate: []}\nsizes: [1 MiB]\n", "2: topology.generate: [] has 0 items; give at least 1"),
    ("name: s\ntopology: {name: t, generate: {kind: nvswitch, gpus: 2, host: ''}}\nsizes: [1 MiB]\n",
     "2: topology.generate.host: is empty"),
    (f"name: s\n{FABRIC}sizes: [1 MiB]\nstragglers: {{r0h0-gpu0: true}}\n",
     "4: stragglers.r0h0-gpu0: true is a yes/no, not a time")])
def test_lengths_labels_and_yes_no_are_refused_in_the_file_s_words(tmp_path, text, says):
    """Fuzz findings (31d): "List should have at most 2 items after validation, not 3"
    (pydantic's words), an empty generator list said to have no GPUs, a generator's empty
    host label making every GPU a host of its own, a straggler of `true` said as "True has no unit"."""
    assert _refusal(tmp_path, text).startswith(says)


@pytest.mark.parametrize("setting, says", [
    ("options.channels=true", "with options.channels=true: options.channels: a yes/no"),
    ("faults.0.at=1 us", "faults.0.at: the scenario has no list faults for 0 to index")])
def test_a_set_value_is_named_as_typed(cli, tmp_path, setting, says):
    """Fuzz findings (31d): a --set yes/no was named `True` (Python's), and an index into a
    list the file lacks made a mapping {'0': ...} refused as 'faults: ... is a mapping'."""
    (tmp_path / "s.yaml").write_text(f"name: s\n{TOPOLOGY}sizes: [1 MiB]\nalgorithms: [ring]\n")
    result = cli("sweep", tmp_path / "s.yaml", "--set", setting, "--out", tmp_path / "o", "--workers", "1")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and says in result.stderr, result.stderr


@pytest.mark.parametrize("axis, says", [
    ("topology.generate.gpus: [2, 0]", "6: sweep.topology.generate.gpus: the point topology.generate.gpus=0: "
                                       "0 must be at least 1"),
    ("bogus.key: [1, 2]", "6: sweep.bogus.key: the point bogus.key=1: bogus: unknown key 'bogus'")])
def test_a_value_of_the_file_s_sweep_axis_is_refused_on_the_axis_line(cli, tmp_path, axis, says):
    """Fuzz finding (31d): a value the file's own sweep: lists was refused as 'FILE with
    KEY=VALUE: ...', naming no line, as if typed with --set."""
    (tmp_path / "s.yaml").write_text(f"name: s\n{TOPOLOGY}sizes: [1 MiB]\nalgorithms: [ring]\nsweep:\n  {axis}\n")
    result = cli("sweep", tmp_path / "s.yaml", "--out", tmp_path / "o", "--workers", "1")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{tmp_path / 's.yaml'}:{says}") and not (tmp_path / "o").exists()


@pytest.mark.parametrize("value, says", [("!mine [1 MiB]", "a YAML tag (!mine) on a list"),
                                         ("!!set {1 MiB}", "a YAML tag (!!set) on a mapping")])
def test_a_tag_on_a_list_or_mapping_is_refused_where_it_stands(tmp_path, value, says):
    """Fuzz finding (31e): a tag on a scalar was refused, one on a list or mapping dropped
    without a word (``sizes: !mine [1 MiB]`` ran as ``[1 MiB]``)."""
    assert _refusal(tmp_path, f"name: s\n{TOPOLOGY}sizes: {value}\n").startswith(f"3: sizes: {says}")


@pytest.mark.parametrize("text, says", [
    (f"name: '   '\n{TOPOLOGY}sizes: [1 MiB]\n", "1: name: '   ' is only spaces"),
    ("name: s\ntopology: {name: t, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, gpus_per_host: 2}}\n"
     "jobs:\n  - {name: a, gpus: 2, size: 1 MiB}\n  - {name: 'a ', gpus: 2, size: 1 MiB}\n",
     "5: jobs[1].name: 'a ' has a space at its start or end"),
    # fuzz 31g #143: a name of a zero-width space was accepted, a job every table shows as nothing
    (f"name: s\n{TOPOLOGY}jobs:\n  - {{name: a, gpus: 2, size: 1 MiB}}\n  - {{name: \"\\u200b\", gpus: 2, "
     "size: 1 MiB}\n", "5: jobs[1].name: '\\u200b' shows nothing (invisible characters only)"),
    (f"name: \"s\\u2060\"\n{TOPOLOGY}sizes: [1 MiB]\n", "1: name: 's\\u2060' has an invisible character (U+2060)")])
def test_a_name_with_a_space_at_an_end_is_refused(tmp_path, text, says):
    """Fuzz finding (31e): a scenario named '   ', and jobs 'a' and 'a ' (two jobs every table
    shows alike), were accepted."""
    assert _refusal(tmp_path, text).startswith(says)


@pytest.mark.parametrize("text, says", [
    ("name: s\ntopology: ''\nsizes: [1 MiB]\n", "2: topology: is empty"),
    ("name: s\ntopology: sub\nsizes: [1 MiB]\n", "2: topology: '{dir}/sub' is a folder; name the topology file in it"),
    (f"name: s\n{TOPOLOGY}sizes: [1 MiB]\ncalibration: ' '\n", "4: calibration: ' ' is only spaces"),
    ("name: s\ntopology: {name: t, generate: {gpus: 2}}\nsizes: [1 MiB]\n",
     "2: topology.generate.kind: is required but missing: name the generator, one of nvswitch"),
    (f"name: s\n{TOPOLOGY}sizes: [1 MiB]\nTrue: 1\n", "4: the document: the key 'True' reads as a yes/no (true), not a name"),
    (f"name: s\n{TOPOLOGY}sizes: [1 MiB]\nyes: 1\n", "4: yes: unknown key 'yes'"),
    (f"name: s\n{TOPOLOGY}jobs:\n  - {{name: a, hosts: [], size: 1 MiB}}\n", "4: jobs[0].hosts: [] has 0 items"),
    # fuzz o #064: the scenario's own placement was said as placement.placement
    (f"name: s\n{TOPOLOGY}placement: 'off'\njobs:\n  - {{name: a, gpus: 2, size: 1 MiB}}\n",
     "3: placement: 'off': expected packed, spread or random(seed)")])
def test_an_empty_file_name_a_missing_kind_and_a_yes_no_key_are_said_as_written(tmp_path, text, says):
    """Fuzz findings (31e): ``topology: ''`` was read as this folder ('.: not a regular file',
    no line), a generator without kind was an 'unknown generator None', the key ``yes``
    was 'the key 1', and a job's ``hosts: []`` was said as a job of under 2 GPUs."""
    (tmp_path / "sub").mkdir()
    assert _refusal(tmp_path, text).startswith(says.format(dir=tmp_path))


@pytest.mark.parametrize("text, says", [
    (f"name: s\n{TOPOLOGY}sizes: [1 MiB]\n~: 5\n", "4: the document: the key '~' reads as null, not a name"),
    (f"name: s\n{TOPOLOGY}sizes: [1 MiB]\noptions: {{null: 2}}\n", "4: options: the key 'null' reads as null"),
    (f"name: s\n{TOPOLOGY}sizes: [1 MiB]\nfaults: [{{at: 0 s, node: nvswitch, bandwidth: true}}]\n",
     "4: faults[0].bandwidth: true is not a bandwidth")])
def test_a_null_key_and_a_yes_no_bandwidth_are_said_as_written(tmp_path, text, says):
    """Fuzz round g #033, #316: a key ``~`` was "None: the key 'None' is not a name" and a
    fault's ``bandwidth: true`` "True is not a bandwidth": Python's words, not the file's."""
    assert _refusal(tmp_path, text).startswith(says)


@pytest.mark.parametrize("text, says", [
    ("name: s\ntopology: /dev/null\nsizes: [1 MiB]\n", "2: topology: '/dev/null': not a regular file"),
    ("name: s\ntopology: bin.yaml\nsizes: [1 MiB]\n", "2: topology: '{dir}/bin.yaml': not UTF-8 text"),
    (f"name: s\n{TOPOLOGY}sizes: [1 MiB]\ncalibration: bin.yaml\n", "4: calibration: '{dir}/bin.yaml': not UTF-8")])
def test_a_named_file_refused_whole_is_said_on_the_scenario_s_line(tmp_path, text, says):
    """Fuzz round g #337-#339: a topology or profile that is a device or not text was refused
    as "/dev/null: not a regular file", naming neither the scenario's line nor its key (a
    folder was said on the line already)."""
    (tmp_path / "bin.yaml").write_bytes(bytes(range(128, 256)))
    assert _refusal(tmp_path, text).startswith(says.format(dir=tmp_path))


@pytest.mark.parametrize("value, says", [
    ("0o1", "2: topology.generate.gpus: '0o1' is not a whole number; write one in the digits 0-9"),
    ("８", "2: topology.generate.gpus: '８' is not a whole number; write one in the digits 0-9"),
    ("'8'", "2: topology.generate.gpus: '8' is text; write the whole number without quotes")])
def test_a_count_that_is_no_number_is_not_said_to_be_quoted(tmp_path, value, says):
    """Fuzz 31f: ``spines: 0o1`` and ``gpus: ８`` (a full-width digit), written without quotes,
    were refused as "is text; write the whole number without quotes"."""
    assert _refusal(tmp_path, f"name: s\ntopology: {{name: t, generate: {{kind: nvswitch, gpus: {value}}}}}\n"
                              "sizes: [1 MiB]\n").startswith(says)


@pytest.mark.parametrize("text, says", [
    ("---\n", "1: the file is empty; expected a mapping"),  # it said 'a YAML null value ('')'
    (f"name: s\n{TOPOLOGY}jobs: []\n", "3: jobs: an empty list: give the jobs that share the fabric"),  # 'no sizes'
    (f"name: s\n{TOPOLOGY}jobs: [{{name: a, gpus: 2, size: 0 B}}]\n",
     "3: jobs[0].size: '0 B': a job's collective moves at least 1 B"),  # '0 must be at least 1'
    ("name: s\ntopology: {name: t, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 2, gpus_per_host: 9, "
     "gpu: mi300x}}\nsizes: [1 MiB]\n", "2: topology.generate.gpus_per_host: 9: a mi300x has 7 xGMI links")])
def test_fuzz_round_i_s_weak_refusals_name_what_the_user_wrote(tmp_path, text, says):
    """Fuzz round i: one line and exit 2 each, but naming a key or value the user never wrote."""
    assert says in _refusal(tmp_path, text)


def test_rccl_on_gpus_of_no_generation_says_so_not_none():
    """Fuzz round i #66: 'these are None'."""
    from simnet import simulate, topology_from_dict

    topology = topology_from_dict({"name": "t", "nodes": [{"id": "a", "kind": "gpu"}, {"id": "b", "kind": "gpu"}],
                                   "links": [{"a": "a", "b": "b", "bandwidth": "100 GB/s", "latency": "1 us"}]})
    with pytest.raises(ValueError, match="these are GPUs without a gpu: generation: take the nccl model"):
        simulate(topology, "ring", 2**20, model="rccl")


def test_an_output_under_a_file_and_an_environment_compare_cannot_follow_are_said_as_they_are(tmp_path, cli):
    """Fuzz round o: ``--json f.txt/out.json`` with f.txt a file said "folder f.txt does not
    exist" (#301); compare put an NCCL variable it refuses on its first variant's line, as if
    the variant were wrong (#086): the environment is the whole comparison's."""
    (tmp_path / "f.txt").write_text("")
    (tmp_path / "s.yaml").write_text(f"name: s\n{TOPOLOGY}sizes: [1 MiB]\nalgorithms: [ring]\n"
                                     "variants:\n  - {name: a, set: {topology.generate.gpus: 2}}\n"
                                     "  - {name: b, set: {topology.generate.gpus: 1}}\n")
    under_a_file = cli("run", tmp_path / "s.yaml", "--json", tmp_path / "f.txt" / "out.json")
    assert under_a_file.exit_code == 2
    assert under_a_file.stderr.strip().endswith(f"f.txt/out.json: {tmp_path / 'f.txt'} is a file, not a folder")
    deeper = cli("run", tmp_path / "s.yaml", "--json", tmp_path / "f.txt" / "sub" / "out.json")  # the review
    assert deeper.exit_code == 2 and deeper.stderr.strip().endswith(f"{tmp_path / 'f.txt'} is a file, not a folder")
    compared = cli("compare", tmp_path / "s.yaml", "-o", tmp_path / "c.png", env={"NCCL_GRAPH_FILE": "/tmp/g.xml"})
    assert compared.exit_code == 2 and compared.stderr.count("\n") == 1
    assert compared.stderr.startswith(f"{tmp_path / 's.yaml'}:1: NCCL_GRAPH_FILE=/tmp/g.xml changes the transports")
    # the review: NCCL's channels under model: ideal, refused of the variant that sets the model
    (tmp_path / "s.yaml").write_text(f"name: s\n{TOPOLOGY}sizes: [1 MiB]\nalgorithms: [ring]\n"
                                     "variants:\n  - {name: a, set: {model: ideal}}\n"
                                     "  - {name: b, set: {model: ideal, gpus: 2}}\n")  # (ideal beside nccl: refused)
    ideal = cli("compare", tmp_path / "s.yaml", "-o", tmp_path / "c.png", env={"NCCL_MAX_NCHANNELS": "4"})
    assert ideal.exit_code == 2 and ideal.stderr.count("\n") == 1
    assert ideal.stderr.startswith(f"{tmp_path / 's.yaml'}:6: variants[0].set.model: NCCL_MAX_NCHANNELS=4 sets "
                                   "NCCL's channels, and model: ideal runs no NCCL"), ideal.stderr
