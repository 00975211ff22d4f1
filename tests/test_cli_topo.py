"""``simnet topo``: as a user types it, including the picture it draws."""

import json
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

TOPOLOGIES = sorted((Path(__file__).parent.parent / "topologies").glob("*.yaml"))


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.name)
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


def test_show_lists_ranks_and_link_classes(cli, root):
    out = cli("topo", "show", root / "topologies/dgx_h100.yaml").stdout
    assert "gpu7" in out and "dgx0" in out
    assert "3.6 Tb/s" in out and "450" in out


def test_draw_writes_a_picture_with_structure(cli, root, tmp_path):
    import matplotlib.image as mpimg

    png = tmp_path / "two_racks.png"
    result = cli("topo", "draw", root / "topologies/two_racks.yaml", "-o", png)
    assert result.exit_code == 0
    image = mpimg.imread(png)
    assert image.shape[0] > 400 and image.shape[1] > 800
    rgb = image[..., :3]
    green = (np.abs(rgb - np.array([0x76, 0xB9, 0x00]) / 255).sum(axis=-1) < 0.1).sum()  # GPU markers
    host_boxes = (np.abs(rgb - np.array([0xE8, 0xF4, 0xE0]) / 255).sum(axis=-1) < 0.03).sum()
    assert green > 500 and host_boxes > 5000


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
