"""The RCCL model (``model: rccl``): chosen for AMD GPUs, RCCL's own tables and rules
(simnet.tuning.rccl), its rings over the xGMI mesh, and the closed forms of the mesh under
``model: ideal``. Expected values are worked out on paper from RCCL's constants, or taken
from a cited public rccl-tests result."""

from __future__ import annotations

import pytest

import simnet
from simnet.run.nccl_env import nccl_system
from simnet.schedule.algorithms.ring import ring
from simnet.schedule.verify import check_collective
from simnet.topology.loader import topology_from_dict
from simnet.tuning import predict
from simnet.tuning.search import comm_channels, graph, system_of

GiB = 2**30


def _mesh(gpu: str = "mi300x", **more):
    return topology_from_dict({"name": "mesh", "generate": {"kind": "full_mesh", "gpu": gpu, **more}})


def _hosts(hosts: int = 2, gpu: str = "mi300x", **more):
    return topology_from_dict({"name": "amd", "generate": {"kind": "leaf_spine", "gpu": gpu, "racks": 1,
                                                           "hosts_per_rack": hosts, "spines": 1,
                                                           "transport": "roce", **more}})


# ------------------------------------------------------------------ model: ideal on the mesh
def test_one_ring_over_the_mesh_runs_at_one_links_rate():
    n, latency, link = 8, 1e-6, 64e9  # full_mesh: 1 us per link, MI300X 64 GB/s per xGMI link each way
    closed = 2 * (n - 1) * (latency + GiB / (n * link))
    assert simnet.simulate(_mesh(), "ring", GiB, model="ideal", channels=1).time_s == pytest.approx(closed, rel=1e-6)
    unnamed = topology_from_dict({"name": "mesh", "generate": {"kind": "full_mesh", "gpus": n}})  # NCCL's layout
    assert simnet.simulate(unnamed, "ring", GiB, model="ideal").time_s == pytest.approx(closed, rel=1e-6)


def test_one_shot_direct_allreduce_uses_the_seven_links():
    n, latency, link = 8, 1e-6, 64e9  # each piece S/N goes straight to its owner and back: two link hops
    closed = 2 * (latency + GiB / (n * link))
    assert simnet.simulate(_mesh(), "direct", GiB, model="ideal").time_s == pytest.approx(closed, rel=1e-6)


def test_rccl_rings_run_at_seven_links_rate_at_line_rate():
    # 14 rings (7 and their reverses) share every directed link two by two: S/14 per ring at B/2
    n, latency, link = 8, 1e-6, 64e9
    closed = 2 * (n - 1) * (latency + GiB / 14 / (n * link / 2))
    assert simnet.simulate(_mesh(), "ring", GiB, model="ideal").time_s == pytest.approx(closed, rel=1e-6)


# ------------------------------------------------------------------ RCCL's channels on the mesh
def _gpu_links(result):
    return {(link.src, link.dst): link.bytes for link in result.links
            if "gpu" in link.src and "gpu" in link.dst}


def test_rccl_channels_use_every_directed_xgmi_link_alike():
    result = simnet.simulate(_mesh(), "ring", GiB)
    assert result.model == "rccl" and result.channels == 28  # rome_model_79's 28 search channels
    used = _gpu_links(result)
    assert len(used) == 8 * 7 and max(used.values()) == pytest.approx(min(used.values()), rel=1e-6)


def test_across_nodes_every_directed_xgmi_link_of_every_host_carries_a_channel():
    result = simnet.simulate(_hosts(), "ring", 2**28)
    used = _gpu_links(result)
    assert len(used) == 2 * 8 * 7  # rome_model_81's 8 rings use each host's 56 directed links once
    nics = {(link.src, link.dst) for link in result.links if link.src.endswith(tuple(f"nic{g}" for g in range(8)))
            and "tor" in link.dst}
    assert len(nics) == 16  # every NIC sends one ring's channels


@pytest.mark.parametrize("hosts", [1, 2])
def test_the_mesh_rings_compute_an_allreduce(hosts):
    topo = _mesh() if hosts == 1 else _hosts(hosts)
    channels = graph(system_of(topo), "Ring").channels
    check_collective(ring(topo, topo.gpus, 8 * channels * 3, channels=channels), "allreduce")


# ------------------------------------------------------------------ RCCL's cost model, on paper
def test_rccl_tuning_on_one_mi300x_host():
    system = system_of(_mesh())
    # RCCL 2.21.5: 28 channels of totalBw / 28 = 7 x 48 / 28 GB/s, doubled to 56 (connect.cc)
    assert (graph(system, "Ring").channels, graph(system, "Ring").bw_intra, comm_channels(system)) == (28, 12.0, 56)
    # Ring/Simple: baseLat 17 + 14 steps x hwLat 2.1 us, busBw 336 x bwRatio 1.0 x 8/14
    expected = (17 + 14 * 2.1 + GiB / (1000 * 336 * 8 / 14)) * 1e-6
    assert predict.predict(system, "Ring", "Simple", GiB) == pytest.approx(expected, rel=1e-9)
    assert not predict.enabled(system, "Tree", "Simple")  # tuning.cc:365: no Tree/Simple on one gfx94 node
    assert not predict.enabled(system, "Ring", "LL128")  # LL128 off on gfx942 in RCCL 2.21.5
    assert predict.pick(system, 64 * 1024).protocol == "LL" and predict.pick(system, GiB).protocol == "Simple"


def test_rccl_ring_latency_counts_every_node_twice_in_2_21_5():
    system = system_of(_hosts(4))
    # nInterSteps = 2 x nNodes = 8 of 2 x 31 steps; intra max(hwLat 2.1, net overhead 2 x 3 on an EPYC host)
    expected = 17 + (62 - 8) * max(2.1, 6.0) + 8 * 320.0
    assert predict.latency(system, "Ring", "Simple") == pytest.approx(expected)


def test_one_mi300x_node_1gib_ring_within_10_percent_of_public_busbw():
    # validation/rccl_tests_public.yaml mi300x-1n-aac8-1GiB: 313.66 GB/s busbw, 8 MI300X, -g 1
    # https://github.com/hisohara/ai-scripts/blob/9acb273b1d0e7072f064d158a1d38102d407123c/training/01_rccl-smoketest/README.md
    choice = predict.pick(system_of(_mesh()), GiB)
    assert (choice.algorithm, choice.protocol) == ("Ring", "Simple")  # what auto runs
    result = simnet.simulate(_mesh(), "ring", GiB)
    assert result.protocol == "Simple" and result.busbw_GBps == pytest.approx(313.66, rel=0.10)


def test_gfx950_picks_its_protocol_by_bytes_per_rank_across_nodes():
    topo = _hosts(2, "mi355x", nvlink_bandwidth="448 GB/s")
    system = system_of(topo)
    assert comm_channels(system) == 64 and comm_channels(system_of(_mesh("mi355x", bandwidth="64 GB/s"))) == 112
    # tuning_model_6 llProtoRanges, AllReduce: LL up to 256 KiB, LL128 up to 70640910 B
    assert [predict.pick(system, size).protocol for size in (64 * 1024, 4 * 2**20, GiB)] == ["LL", "LL128", "Simple"]
    assert predict.pick(system, 4 * 2**20, nccl_proto="Simple").protocol == "Simple"  # NCCL_PROTO wins


# ------------------------------------------------------------------ which model, which variables
def test_amd_gpus_take_rccl_and_refuse_nccl_in_one_line():
    assert simnet.simulate(_mesh(), "ring", 2**20).model == "rccl"
    with pytest.raises(ValueError, match="model: nccl: the GPUs are AMD Instinct \\(mi300x\\), which run RCCL"):
        simnet.simulate(_mesh(), "ring", 2**20, model="nccl")
    h100 = topology_from_dict({"name": "b", "generate": {"kind": "nvswitch", "gpus": 8}})
    with pytest.raises(ValueError, match="model: rccl: RCCL's tables are AMD Instinct GPUs'"):
        simnet.simulate(h100, "ring", 2**20, model="rccl")


def test_rccl_variables_it_does_not_follow_are_refused():
    with pytest.raises(ValueError, match="RCCL_MSCCL_ENABLE=0 changes what RCCL runs"):
        simnet.simulate(_mesh(), "ring", 2**20, env={"RCCL_MSCCL_ENABLE": "0"})


def test_nccl_channel_bounds_and_rccl_ll128_switch():
    few = simnet.simulate(_mesh(), "ring", GiB, env={"NCCL_MAX_NCHANNELS": "28"})
    assert few.nccl_channels == 28 and few.time_s > simnet.simulate(_mesh(), "ring", GiB).time_s
    forced = nccl_system(_mesh(), {"RCCL_LL128_FORCE_ENABLE": "1"})
    assert predict.enabled(forced, "Ring", "LL128")
    # ... but RCCL 2.21.5's tuning_model_5 has no LL128 bandwidth (bwRatio 0.00): NCCL_PROTO=LL128 leaves nothing
    with pytest.raises(ValueError, match="leave nothing"):
        predict.pick(forced, 2**20, nccl_proto="LL128")
