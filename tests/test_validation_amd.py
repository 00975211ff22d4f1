"""docs/validation_amd.md and validation/rccl_tests_public.yaml: the data loads and is sourced,
its logs are sampled as the NVIDIA pages' are, the page is what simnet gives today for it (it
takes about a second) against issue 32's targets for AMD, large messages on the plainest
systems are within the page's own target for the large class, and a catalogue product is
built by its name as the hand-written system it is. Measured values are the public rows the
yaml quotes."""

import re
from collections import defaultdict
from dataclasses import replace

import pytest
import yaml

from simnet.topology.hardware import GPUS
from tools.validation import rccl_points
from tools.validation.validate import GRID, ROOT, load_points, server_topology

DATA = yaml.safe_load(rccl_points.DATA.read_text())
POINTS = load_points(rccl_points.DATA)
ROW = re.compile(r"^\s*(\d+)\s+\d+\s+float\s+sum\s+-?\d+\s+([\d.]+)\s+[\d.]+\s+([\d.]+)\s+\d+\s+([\d.]+)")


@pytest.fixture(scope="module")
def rows():
    return rccl_points.predict_all()


def test_every_point_has_a_source_and_quotes_its_row():
    systems = {s["id"]: s for s in DATA["systems"]}
    assert len(POINTS) == len(DATA["points"]) >= 40
    for point in DATA["points"]:
        assert point["source"] and point["url"].startswith("https://"), point["id"]
        assert GPUS[systems[point["system"]]["hardware"]["gpu"]].name.startswith("mi3"), point["id"]
        size, time, busbw, inplace = ROW.match(point["row"]).groups()
        assert (int(size), float(time), float(busbw), float(inplace)) == (
            point["size_bytes"], point["time_us"], point["busbw_GBps"], point["inplace_time_us"]), point["id"]
        if point["nodes"] > 1:
            assert {"nic_bandwidth", "transport"} <= set(systems[point["system"]]["hardware"]), point["id"]
    assert all(DATA["excluded_systems"].values())  # every log left out says why


def test_every_log_gives_the_rows_at_the_same_sizes():
    logs = defaultdict(set)
    for point in DATA["points"]:
        logs[point["system"], point["source"]].add(point["size_bytes"])
    for log, sizes in logs.items():
        assert sizes <= set(GRID) | {min(sizes), max(sizes)}, log


def test_the_page_is_what_the_data_and_simnet_give(rows):
    assert rccl_points.DOC.read_text() == rccl_points.markdown(*rows)


@pytest.mark.parametrize("point_id", ["mi300x-1n-rocm-blog-16GiB", "mi325x-2n-aac11-16GiB"])
def test_large_messages_on_a_plain_mesh_and_two_nodes_are_within_the_large_target(rows, point_id):
    # one MI300X host (ROCm blog, 318.98 GB/s busbw) and two MI325X hosts (AAC11, 350.24 GB/s):
    # within the page's target for its large class (rccl_points.TARGETS), not a bound chosen here
    row = next(r for r in rows[0] if r.point.id == point_id)
    assert row.error <= rccl_points.TARGETS["large (>= 128 MiB)"]


def test_the_summary_shows_issue_32s_targets_for_amd():
    # issue 32: <= 20 % over all sizes and <= 10 % at >= 128 MiB on AMD (NVIDIA's page: 15/30/10)
    page = rccl_points.DOC.read_text()
    for size_class, target in (("all sizes", "<= 20%"), ("small (<= 1 MiB)", "-"), ("large (>= 128 MiB)", "<= 10%")):
        assert re.search(rf"^\| {re.escape(size_class)} \| \d+ \| [\d.]+% \| {re.escape(target)} \|$", page, re.M), size_class


def test_an_amd_product_by_name_is_one_xgmi_mesh_host():
    # docs/topologies.md's writing by product name: one host of AMD's MI300X platform is a full
    # xGMI mesh (ROCm's MI300 docs: 8 OAM, seven links each), 8 GPUs and a link per pair
    point = next(p for p in POINTS if p.system == "mi300x-1n-rocm-blog")
    topology = server_topology(replace(point, server="amd-mi300x-platform"))
    gpus = set(topology.gpus)
    assert len(gpus) == 8
    assert {(a, b) for a, b in topology.links if {a, b} <= gpus} == {(a, b) for a in gpus for b in gpus if a != b}


def test_oci_pollara_by_name_is_the_system_its_guide_states(rows):
    # OCI's MI355X-Pollara guide states 8x MI355X and 8x 400 Gb/s Pollara RoCE NICs a node; the
    # catalogue's BM.GPU.MI355X-v0.8 says the same: the two writings give the same times
    named = [r for r in rows[0] if r.point.server == "BM.GPU.MI355X-v0.8"]
    assert {r.point.nodes for r in named} == {2, 4}
    assert all(r.by_name[:2] == (r.algorithm, r.protocol) and r.spread == pytest.approx(0, abs=1e-9) for r in named)


def test_the_readme_quotes_the_page_as_it_is(rows):
    readme = (ROOT / "README.md").read_text()
    counted = [r for r in rows[0] if r.point.not_counted is None]
    *_, (_, count, overall, large, small) = rccl_points.summary(rows[0])
    assert count == len(counted)
    sentence = re.search(r"Over (\d+) public rccl-tests AllReduce points.*?([\d.]+) % at\s+>= 128 MiB but "
                         r"([\d.]+) % over all sizes and ([\d.]+) % at <= 1 MiB", readme, re.S)
    assert sentence, "README's AMD sentence"
    assert sentence.groups() == (str(count), f"{100 * large:.1f}", f"{100 * overall:.1f}", f"{100 * small:.1f}")
