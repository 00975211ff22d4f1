"""``simnet topo``: as a user types it, including the picture it draws."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

TOPOLOGIES = sorted((Path(__file__).parent.parent / "topologies").glob("*.yaml"))


# the 16,384-GPU preset is loaded and routed in tests/test_topology.py (6 s), and checked here at
# 4,096 GPUs (superpod_h100_16su.yaml): its check would add 9 s to the suite for no other path
@pytest.mark.parametrize("path", [p for p in TOPOLOGIES if p.name != "superpod_h100_64su.yaml"], ids=lambda p: p.name)
def test_check_succeeds_on_every_library_file(cli, path):
    result = cli("topo", "check", path)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"ok: {path}")
    assert "worst GPU-to-GPU path" in result.stdout


def test_check_reports_counts_and_worst_path(cli, root):
    out = cli("topo", "check", root / "topologies/two_racks.yaml").stdout
    assert "GPUs:      64 in 8 hosts, 2 racks" in out
    assert "64 NICs, 12 switches" in out
    assert "400 Gb/s .. 3.6 Tb/s (50 .. 450 GB/s)" in out
    assert "6 us over 6 hops (r0h0-gpu0 -> r1h" in out  # 1 us PCIe + 4 x 1 us fabric + 1 us PCIe
    assert "routing:   ECMP (each connection hashed onto one of the equal-cost paths)\n" in out  # no routing: key


def test_check_says_an_efa_fabric_is_routed_by_destination(cli, tmp_path):
    """A fabric of EFA NICs whose file names no routing is routed by destination
    (docs/topologies.md, "Routing"): check says which routing, and why."""
    (tmp_path / "p5.yaml").write_text("name: p5s\ngenerate: {kind: leaf_spine, racks: 2, hosts_per_rack: 1, "
                                      "server: p5.48xlarge}\n")
    out = cli("topo", "check", tmp_path / "p5.yaml").stdout
    assert "routing:   by destination (as InfiniBand routes a fat tree: D-mod-k); every NIC speaks EFA, whose SRD " \
           "sprays each flow over every path (an EFA fabric's default)\n" in out
    (tmp_path / "p5.yaml").write_text("name: p5s\nrouting: ecmp\ngenerate: {kind: leaf_spine, racks: 2, "
                                      "hosts_per_rack: 1, server: p5.48xlarge}\n")
    out = cli("topo", "check", tmp_path / "p5.yaml").stdout
    assert "routing:   ECMP (each connection hashed onto one of the equal-cost paths); every NIC speaks EFA, whose " \
           "SRD sprays each flow over every path: the file's routing: ecmp hashes it onto one, as SRD does not\n" in out


def test_check_reads_the_calibration_profile_the_topology_names(cli, tmp_path):
    """Fuzz finding (31e): topo check said ok of a topology whose profile every run refuses
    (a unit-less latency, or the topology itself named as its profile)."""
    (tmp_path / "p.cal.yaml").write_text("calibration:\n  base_latency: 5\n")
    (tmp_path / "t.yaml").write_text("name: t\ngenerate: {kind: nvswitch, gpus: 2}\ncalibration: p.cal.yaml\n")
    result = cli("topo", "check", tmp_path / "t.yaml")
    assert result.exit_code == 2 and result.stderr == f"{tmp_path / 'p.cal.yaml'}:2: calibration.base_latency: 5 has " \
                                                      "no unit; a time needs one (e.g. '1.5 us', '20 ms')\n"
    (tmp_path / "p.cal.yaml").write_text("calibration:\n  base_latency: 5 us\n")
    assert f"calibration: {tmp_path / 'p.cal.yaml'}" in cli("topo", "check", tmp_path / "t.yaml").stdout


def test_show_lists_ranks_and_link_classes(cli, root):
    out = cli("topo", "show", root / "topologies/dgx_h100.yaml").stdout
    assert "gpu7" in out and "dgx0" in out
    assert "3.6 Tb/s" in out and "450" in out


def test_draw_shows_every_gpu_host_and_link(cli, root, tmp_path, figures):
    import matplotlib.image as mpimg
    from matplotlib.collections import LineCollection, PathCollection
    from matplotlib.patches import FancyBboxPatch

    from simnet import load_topology

    png = tmp_path / "two_racks.png"
    result = cli("topo", "draw", root / "topologies/two_racks.yaml", "-o", png)
    assert result.exit_code == 0
    assert mpimg.imread(png).shape[:2] >= (400, 800)
    topo = load_topology(root / "topologies/two_racks.yaml")
    ax = figures["two_racks.png"].axes[0]
    links = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(links) == 1 and len(links[0].get_segments()) == len({frozenset(e) for e in topo.links})
    markers = {c.get_label(): len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection)}
    assert markers[next(k for k in markers if k.lower().startswith("gpu"))] == len(topo.gpus)
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    assert len(boxes) == len(topo.groups("host")) + len(topo.groups("rack"))


def test_layout_puts_gpus_below_the_fabric(root):
    from simnet import load_topology
    from simnet.report.topology_plot import layout

    topo = load_topology(root / "topologies/two_racks.yaml")
    pos = layout(topo)
    assert {pos[g][1] for g in topo.gpus} == {0.0}
    assert pos["tor0"][1] < pos["spine0"][1]
    xs = [pos[g][0] for g in topo.gpus]
    assert xs == sorted(xs)  # rank order left to right


@pytest.mark.parametrize("fmt", ["graphml", "gexf", "json"])
def test_export_opens_in_networkx(cli, root, tmp_path, fmt):
    out = tmp_path / f"t.{fmt}"
    assert cli("topo", "export", root / "topologies/two_racks.yaml", "--format", fmt, "-o", out).exit_code == 0
    if fmt == "graphml":
        graph = nx.read_graphml(out)
    elif fmt == "gexf":
        graph = nx.read_gexf(out)
    else:
        graph = nx.node_link_graph(json.loads(out.read_text()), edges="links")
    assert graph.number_of_edges() == 392
    assert float(graph.edges["tor0", "spine0"]["bandwidth"]) == pytest.approx(200e9)


def test_export_writes_the_format_its_file_is_named_for(cli, root, tmp_path):
    """Fuzz round g #235-#238: ``-o racks.yaml`` without --format wrote GraphML into a .yaml
    file, and ``--format graphml -o x.json`` wrote XML under a JSON name, both without a word.
    The suffix now picks the format, and one that contradicts --format is refused."""
    from simnet import load_topology

    source = root / "topologies/two_racks.yaml"
    assert cli("topo", "export", source, "-o", tmp_path / "racks.yaml").exit_code == 0
    assert sorted(load_topology(tmp_path / "racks.yaml").links) == sorted(load_topology(source).links)
    assert cli("topo", "export", source, "-o", tmp_path / "racks.gexf").exit_code == 0
    assert nx.read_gexf(tmp_path / "racks.gexf").number_of_edges() == 392
    result = cli("topo", "export", source, "--format", "graphml", "-o", tmp_path / "racks.json")
    assert result.exit_code == 2 and not (tmp_path / "racks.json").exists()
    assert "--format graphml" in result.stderr and "json" in result.stderr and len(result.stderr.splitlines()) == 1


def test_export_as_yaml_is_a_topology_file_of_the_same_network(cli, root, tmp_path):
    """Node by node, as a user edits it: it loads, its GPUs are the ranks in order, every link
    is there once per direction at its rate, and the default name keeps the input intact."""
    from simnet import load_topology

    source = tmp_path / "two_racks.yaml"
    shutil.copy(root / "topologies/two_racks.yaml", source)
    assert cli("topo", "export", source, "--format", "yaml").exit_code == 0
    written = load_topology(tmp_path / "two_racks.nodes.yaml")
    original = load_topology(root / "topologies/two_racks.yaml")
    assert written.gpus == original.gpus and sorted(written.links) == sorted(original.links)
    assert written.graph.edges["tor0", "spine0"]["bandwidth"] == pytest.approx(200e9)
    assert (written.graph.nodes["r0h0-gpu0"]["gpu"], written.kind("r0h0-nvswitch")) == ("h100", "switch")


def test_console_script_runs_as_a_user_types_it(root):
    result = subprocess.run([sys.executable, "-m", "simnet", "topo", "check", "topologies/ps_star.yaml"],
                            cwd=root, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "16 in 16 hosts" in result.stdout


@pytest.mark.parametrize("command", [[], ["run"], ["sweep"], ["compare"], ["algorithms"], ["topo"],
                                     ["topo", "check"], ["topo", "show"], ["topo", "draw"], ["topo", "export"]])
def test_every_help_shows_an_example(cli, command):
    out = cli(*command, "--help").stdout
    assert "Example:" in out
    assert "simnet " + " ".join(command) in out


@pytest.mark.parametrize("name", ["dgx_h100.yaml", "two_racks.yaml", "gb200_nvl72_2racks.yaml"])
def test_export_as_yaml_writes_the_routing_only_where_it_is_read(cli, root, tmp_path, name):
    """Fuzz round aa F9: the export wrote ``routing: ecmp`` for one NVSwitch box, which every
    run of the exported file then said changed nothing. Written only where it is not the
    file's default and some route chooses by it (the NVL72 racks' by_destination), and the
    exported file routes as the original."""
    from simnet import load_topology

    source = tmp_path / name
    shutil.copy(root / "topologies" / name, source)
    assert cli("topo", "export", source, "--format", "yaml").exit_code == 0
    exported = tmp_path / name.replace(".yaml", ".nodes.yaml")
    written, original = load_topology(exported), load_topology(root / "topologies" / name)
    assert written.unread == () and written.routing == original.routing
    assert ("routing:" in exported.read_text()) == (name == "gb200_nvl72_2racks.yaml")


def test_check_says_a_switch_of_one_host_s_gpus_read_as_a_network_switch(tmp_path, cli):
    """Fuzz round az F10: an NVSwitch written with no host label, no nvls and no link type is
    read as a network switch (docs/topologies.md's inference), 1.7-6.8x slower, and `topo check`
    said ok without a word. Said; labelled with its host it is the host's NVSwitch, unsaid."""
    text = ("name: t\nnodes:\n  - {id: gpu0, kind: gpu, host: h0}\n  - {id: gpu1, kind: gpu, host: h0}\n"
            "  - {id: sw, kind: switch}\nlinks:\n  - {a: gpu0, b: sw, bandwidth: 450 GB/s, latency: 1 us}\n"
            "  - {a: gpu1, b: sw, bandwidth: 450 GB/s, latency: 1 us}\n")
    (tmp_path / "t.yaml").write_text(text)
    result = cli("topo", "check", tmp_path / "t.yaml")
    assert result.exit_code == 0 and "warning network_inside_host: sw joins only the GPUs of h0" in result.stdout
    (tmp_path / "t.yaml").write_text(text.replace("{id: sw, kind: switch}", "{id: sw, kind: switch, host: h0}"))
    labelled = cli("topo", "check", tmp_path / "t.yaml")
    assert labelled.exit_code == 0 and "network_inside_host" not in labelled.stdout
