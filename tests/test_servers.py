"""The server catalogue: ``server: <product>`` builds what its vendor's facts describe (the
same as writing those facts out), keys written in the generator win, every entry cites its
sources, and ``simnet servers`` lists and explains them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import simnet
from simnet.errors import InputError
from simnet.topology.hardware import GPUS
from simnet.topology.loader import topology_from_dict
from simnet.topology.servers import SERVERS
from simnet.tuning.search import system_of


def _pair(**generate):
    return topology_from_dict({"name": "pair", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                            "spines": 1, **generate}})


# What each product is, written out from its public facts (the catalogue's sources):
WRITTEN_OUT = {
    # AWS instance data: 8 H100, 32 x 100 Gb/s EFA, which aws-ofi-nccl groups per GPU (8 x 400 Gb/s); it reports
    # 75 us, the efa transport's figure for NCCL's pick, while a step takes AWS's modelled 20 us
    "p5.48xlarge": dict(gpu="h100", gpus_per_host=8, nics_per_host=8, nic_bandwidth="400 Gb/s", transport="efa"),
    # 8 A100, 4 x 100 Gb/s EFA, one NCCL device per EFA, 75 us
    "p4d.24xlarge": dict(gpu="a100", gpus_per_host=8, nics_per_host=4, nic_bandwidth="100 Gb/s", transport="efa",
                         net_latency="75 us"),
    # OCI: 8 H100, '8 x 2 x 200 Gbps' RoCE: a dual-port ConnectX-7 per GPU (OCI's topology file), whose ports NCCL
    # merges into one 400 Gb/s device (v2.21.5 net_ib.cc:313/371-386/478-501; v2.30.7 topo.cc:1160-1208, :1744)
    "BM.GPU.H100.8": dict(gpu="h100", gpus_per_host=8, nics_per_host=8, nic_bandwidth="400 Gb/s", transport="roce"),
    # OCI: 8 A100, 16 x 100 Gb/s RoCE on 8 dual-port NICs: 8 devices of 200 Gb/s to NCCL
    "BM.GPU4.8": dict(gpu="a100", gpus_per_host=8, nics_per_host=8, nic_bandwidth="200 Gb/s", transport="roce"),
}


@pytest.mark.parametrize("name", sorted(WRITTEN_OUT))
def test_a_server_is_its_facts_written_out(name):
    by_name = simnet.simulate(_pair(server=name), "auto", 2**26)
    written = simnet.simulate(_pair(**WRITTEN_OUT[name]), "auto", 2**26)
    assert (by_name.algorithm, by_name.protocol, by_name.time_s) == (written.algorithm, written.protocol,
                                                                     written.time_s)


def test_keys_written_win_over_the_catalogue():
    """A key written wins; the latency the server's plugin reports is its transport's, so
    another transport written takes its own (fuzz round y F14: a p4d with ``transport: ib``
    kept EFA's 75 us and came out 4.4x slower at 64 KiB than the same IB hosts written out)."""
    system = system_of(_pair(server="p4d.24xlarge", nic_bandwidth="200 Gb/s"))
    assert (system.transport, system.nic_latency) == ("efa", 75.0)  # the catalogue's latency where none is written
    assert system == system_of(_pair(**{**WRITTEN_OUT["p4d.24xlarge"], "nic_bandwidth": "200 Gb/s"}))
    ib = {k: v for k, v in WRITTEN_OUT["p4d.24xlarge"].items() if k != "net_latency"}
    system = system_of(_pair(server="p4d.24xlarge", transport="ib"))
    assert (system.transport, system.nic_latency) == ("ib", None)
    assert system == system_of(_pair(**{**ib, "transport": "ib"}))
    assert system_of(_pair(server="p4d.24xlarge", transport="ib", net_latency="75 us")).nic_latency == 75.0


def test_two_p5_instances_by_name_take_an_efa_step_as_aws_models_it():
    """The plugin reports 75 us on p5, a figure NCCL's pick weighs; a network step takes
    AWS's modelled 20 us (+3 us for Simple), not 75: two p5.48xlarge by name answer 8 B as
    the same hardware written with transport: efa (the validation page's writing, 65.2 us
    against 64.9-70.9 us measured), not 2.7x slower as when the catalogue wrote 75 us."""
    by_name = simnet.simulate(_pair(server="p5.48xlarge"), "auto", 8)
    written = simnet.simulate(_pair(gpu="h100", gpus_per_host=8, nics_per_host=8, nic_bandwidth="400 Gb/s",
                                    transport="efa"), "auto", 8)
    assert by_name.time_s == written.time_s < 75e-6
    assert system_of(_pair(server="p5.48xlarge")).net_latency == 75.0  # what NCCL's pick weighs


def test_an_nvl72_rack_from_the_catalogue_is_18_trays_of_4():
    topo = topology_from_dict({"name": "nvl", "generate": {"kind": "rail_optimized", "server": "gb200-nvl72",
                                                           "units": 1, "nodes_per_unit": 2, "rails": 18}})
    assert len(topo.groups("host")) == 36 and len(topo.groups("node")) == 2
    assert {topo.gpu_model(g) for g in topo.gpus} == {"gb200"}


def test_a_rail_fabric_refuses_a_server_without_a_nic_per_gpu():
    with pytest.raises(InputError, match="p4d.24xlarge has 4 NICs for 8 GPUs"):
        topology_from_dict({"name": "x", "generate": {"kind": "rail_optimized", "server": "p4d.24xlarge"}})
    with pytest.raises(InputError, match="generate.server: 'p5' is not one of"):
        _pair(server="p5")


@pytest.mark.parametrize("name", sorted(n for n in SERVERS if GPUS[SERVERS[n].gpu].amd))
def test_an_nvswitch_of_an_amd_server_is_refused_as_of_its_gpu(name):
    """Fuzz finding: ``kind: nvswitch, server: amd-mi300x-platform`` built an NVSwitch of
    MI300X GPUs, where ``gpu: mi300x`` is refused (their GPUs are an xGMI mesh)."""
    with pytest.raises(InputError, match=f"generate.server: {name} has mi3..x GPUs, which are a fully connected xGMI"):
        topology_from_dict({"name": "x", "generate": {"kind": "nvswitch", "server": name}})


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_every_server_cites_its_sources_and_builds(name):
    server = SERVERS[name]
    assert server.sources and all(len(source) > 20 for source in server.sources)
    assert server.nics % server.gpus == 0 or server.gpus % server.nics == 0  # NICs dealt evenly over GPUs
    # an AMD GPU whose xGMI line rate is not public asks for it
    given = {} if GPUS[server.gpu].nvlink_link_rate else {"nvlink_bandwidth": "448 GB/s"}
    system = system_of(_pair(server=name, **given))
    assert (system.ranks, system.nodes, system.nics) == (2 * server.gpus, 2, server.nics)


def _servers(*args):
    return subprocess.run([sys.executable, "-m", "simnet", "servers", *args], capture_output=True, text=True,
                          env={"COLUMNS": "200", "PATH": ""})


def test_simnet_servers_lists_every_product_and_explains_one():
    listing = _servers()
    assert listing.returncode == 0
    assert all(name in listing.stdout for name in SERVERS)
    one = _servers("p5.48xlarge")
    assert "PLAT (p5.48xlarge entry): .latency = 75" in one.stdout
    assert [s["name"] for s in json.loads(_servers("--json").stdout)] == list(SERVERS)
    unknown = _servers("p5")  # the products it begins (fuzz 31e: no suggestion, where `server:` lists them)
    assert unknown.returncode == 2 and unknown.stderr.strip() == (
        "no server 'p5' in the catalogue; did you mean p5.48xlarge, p5e.48xlarge, p5en.48xlarge? (`simnet servers` "
        "lists them)")
    assert "did you mean dgx-h100?" in _servers("DGX-H100").stderr


@pytest.mark.parametrize("name, per_host, written", [
    ("dgx-h100", 2, dict(gpu="h100", nics_per_host=2, nic_bandwidth="400 Gb/s", transport="ib")),
    ("p4d.24xlarge", 4, dict(gpu="a100", nics_per_host=2, nic_bandwidth="100 Gb/s", transport="efa",
                             net_latency="75 us")),
    ("gb200-nvl72", 8, dict(gpu="gb200", gpus_per_tray=4, nics_per_host=8, nic_bandwidth="400 Gb/s", transport="ib")),
])
def test_a_host_of_fewer_gpus_than_the_server_keeps_its_nics_per_gpu(name, per_host, written):
    """Fuzz 31f: ``server: dgx-h100, gpus_per_host: 2`` kept the server's 8 NICs for 2 GPUs
    (1,600 Gb/s each), and an 8-GPU host of ``gb200-nvl72`` had the rack's 72."""
    by_name = _pair(server=name, gpus_per_host=per_host)
    assert system_of(by_name).nics == system_of(_pair(gpus_per_host=per_host, **written)).nics == \
        written["nics_per_host"]  # per host
    assert simnet.simulate(by_name, "ring", 2**20).time_s == \
        simnet.simulate(_pair(gpus_per_host=per_host, **written), "ring", 2**20).time_s


def test_nic_keys_written_beside_a_server_win_or_are_asked_for():
    """``nic_per: host`` beside a server was refused as if nics_per_host had been written
    too (the catalogue's); NICs a server's share of GPUs cannot have are asked for."""
    one_each = _pair(server="dgx-h100", nic_per="host")
    assert system_of(one_each) == system_of(_pair(gpu="h100", gpus_per_host=8, nic_per="host", nic_bandwidth="400 Gb/s",
                                                  transport="ib"))
    with pytest.raises(InputError, match=r"generate.gpus_per_host: p4d.24xlarge has 4 NICs for its 8 GPUs, so 3 GPUs "
                                         r"would have 1.5: give nics_per_host too"):
        _pair(server="p4d.24xlarge", gpus_per_host=3)
    assert system_of(_pair(server="p4d.24xlarge", gpus_per_host=3, nics_per_host=2)).nics == 2


@pytest.mark.parametrize("kind", ["pcie", "ps_star"])
def test_a_server_on_a_generator_that_builds_none_is_refused_in_words(kind):
    """Fuzz 31f: ``kind: ps_star, server: dgx-h100`` was refused as an unknown key with
    "did you mean 'servers'?" (ps_star's count of parameter servers)."""
    with pytest.raises(InputError, match=f"generate.server: kind: {kind} builds no server of the catalogue; nvswitch, "
                                         "leaf_spine, rail_optimized and cross_region do, and full_mesh an AMD one"):
        topology_from_dict({"name": "x", "generate": {"kind": kind, "server": "dgx-h100"}})


def test_one_amd_server_by_name_is_its_xgmi_mesh():
    """``nvswitch`` refuses an AMD server and points to ``full_mesh`` for one host, which then
    took no ``server:`` at all (a dead end). Now it builds the product's mesh: the same GPUs and
    links as ``gpu:`` and ``gpus:`` written out, the same answer at every size as the one host
    of ``leaf_spine`` by name; an NVIDIA server on it is pointed to nvswitch."""
    from simnet.run.simulate import simulate

    with pytest.raises(InputError, match="use kind: full_mesh"):
        topology_from_dict({"name": "x", "generate": {"kind": "nvswitch", "server": "amd-mi300x-platform"}})
    by_name = topology_from_dict({"name": "x", "generate": {"kind": "full_mesh", "server": "amd-mi300x-platform"}})
    written = topology_from_dict({"name": "x", "generate": {"kind": "full_mesh", "gpu": "mi300x", "gpus": 8}})
    assert by_name.links == written.links and (by_name.capacity == written.capacity).all()
    host = topology_from_dict({"name": "x", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 1,
                                                         "server": "amd-mi300x-platform"}})
    for size in (8, 2**20, 2**30):
        assert simulate(by_name, "auto", size).time_s == simulate(host, "auto", size).time_s
    with pytest.raises(InputError, match="server: dgx-h100 has h100 GPUs on an NVSwitch, no xGMI mesh: use kind: "
                                         "nvswitch"):
        topology_from_dict({"name": "x", "generate": {"kind": "full_mesh", "server": "dgx-h100"}})


@pytest.mark.parametrize("server", ["dgx-h100", "gb200-nvl72"])
def test_one_named_server_holds_no_more_gpus_than_its_product(server, tmp_path, cli):
    """Fuzz round aa F4: ``server: gb200-nvl72, gpus: 144`` on ``nvswitch`` built one NVLink
    domain of 144 GPUs, a machine no vendor sells, and ``simnet sweep --gpus 144`` of the
    shipped one-rack file grew into it without a word. Refused in one line, before any point
    of a sweep runs; up to the product's count, as before."""
    count = SERVERS[server].gpus
    assert len(topology_from_dict({"name": "t", "generate": {"kind": "nvswitch", "server": server,
                                                              "gpus": count // 2}}).gpus) == count // 2
    with pytest.raises(InputError, match=rf"gpus: {2 * count} GPUs in one server, where a {server} has {count}"):
        topology_from_dict({"name": "t", "generate": {"kind": "nvswitch", "server": server, "gpus": 2 * count}})
    # round ab F3: the same on the fabrics a refusal points at, before any tray rule; trays other than the product's
    for kind, key in (("leaf_spine", "gpus_per_host"), ("rail_optimized", "gpus_per_node")):
        with pytest.raises(InputError, match=rf"{key}: {count + 1} GPUs in one server, where a {server} has {count}"):
            topology_from_dict({"name": "t", "generate": {"kind": kind, "server": server, key: count + 1}})
    trays = SERVERS[server].gpus_per_tray
    with pytest.raises(InputError, match=rf"gpus_per_tray: a {server} has "):
        topology_from_dict({"name": "t", "generate": {"kind": "nvswitch", "server": server,
                                                      "gpus_per_tray": 2 * trays if trays else 4}})
    (tmp_path / "s.yaml").write_text(f"name: s\ntopology: {{name: t, generate: {{kind: nvswitch, server: {server}}}}}\n"
                                     "sizes: [1 MiB]\nalgorithms: [ring]\n")
    swept = cli("sweep", tmp_path / "s.yaml", "--gpus", f"2,{2 * count}", "--out", tmp_path / "out")
    assert swept.exit_code == 2 and swept.stderr.count("\n") == 1 and f"where a {server} has {count}" in swept.stderr
    assert not (tmp_path / "out").exists()
