"""The RCCL model (``model: rccl``): chosen for AMD GPUs, RCCL's own tables and rules
(simnet.tuning.rccl), its rings over the xGMI mesh, and the closed forms of the mesh under
``model: ideal``. Expected values are worked out on paper from RCCL's constants, or taken
from a cited public rccl-tests result."""

from __future__ import annotations

import pytest

import simnet
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
    n, latency, link = 8, 0.25e-6, 64e9  # full_mesh: 0.25 us per link, MI300X 64 GB/s per xGMI link each way
    closed = 2 * (n - 1) * (latency + GiB / (n * link))
    assert simnet.simulate(_mesh(), "ring", GiB, model="ideal", channels=1).time_s == pytest.approx(closed, rel=1e-6)
    unnamed = topology_from_dict({"name": "mesh", "generate": {"kind": "full_mesh", "gpus": n}})  # NCCL's layout
    assert simnet.simulate(unnamed, "ring", GiB, model="ideal").time_s == pytest.approx(closed, rel=1e-6)


def test_one_shot_direct_allreduce_uses_the_seven_links():
    n, latency, link = 8, 0.25e-6, 64e9  # each piece S/N goes straight to its owner and back: two link hops
    closed = 2 * (latency + GiB / (n * link))
    assert simnet.simulate(_mesh(), "direct", GiB, model="ideal").time_s == pytest.approx(closed, rel=1e-6)


def test_rccl_rings_run_at_seven_links_rate_at_line_rate():
    # 14 rings (7 and their reverses) share every directed link two by two: S/14 per ring at B/2
    n, latency, link = 8, 0.25e-6, 64e9
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


@pytest.mark.parametrize("hosts,tree_channels", [(1, 56), (2, 64)])
def test_rccl_runs_its_trees_on_the_communicators_channels(hosts, tree_channels):
    # connectTrees (A connect.cc:284-365): over 32 channels (gfx94 channelLimit 2 x CHANNEL_LIMIT 16,
    # device.h:66) the search's channels are split, half on each tree; at most 32 they are duplicated,
    # c on the first tree and c + C on the second. Either way the trees run on comm->nChannels: 56 on one
    # host (28 rings doubled), 64 across nodes (rome_model_81's 64, not doubled past 64, :628-660)
    from simnet.schedule.algorithms.tree import tree_program

    topo = _mesh() if hosts == 1 else _hosts(hosts)
    assert comm_channels(system_of(topo)) == tree_channels
    assert sum(tree_program(topo, topo.gpus, 2**27, chunk_size=65536).info["channel_weights"]) == tree_channels


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


def test_rccl_times_a_simple_rings_network_step_at_trees_figure_not_at_its_pick_weight():
    # RCCL reads comm->latencies only in ncclTopoGetAlgoTime, whose times only pick the cheapest pair
    # (A tuning.cc:632-670, enqueue.cc:1574-1625); the 320 us of hwLat[NET][Ring][Simple] (tuning.cc:231,
    # raised from 19.8 by a25ca9bb "new tuning table for very large number of nodes") weighs that pick.
    # A Simple step into the network is the same proxy send for either algorithm, and RCCL itself times
    # a ring's Simple step at Tree's figure where it models chunks (:441): 25 us (tuning.cc:231).
    from simnet.model.calibration import Calibration
    from simnet.model.nccl import NcclPlan, step_latencies
    from simnet.topology.hardware import NET, NVLINK

    system = system_of(_hosts(2))
    assert predict.latency(system, "Ring", "Simple") == pytest.approx(17 + (30 - 4) * 6.0 + 4 * 320.0)  # the pick
    steps = step_latencies(NcclPlan("Simple", {}, "Ring", True, system, Calibration()))
    # RoCE adds no latency of its own (IB verbs); xGMI max(hwLat 2.1, net overhead 2 x 3 on EPYC)
    assert (steps[NET], steps[NVLINK]) == (pytest.approx(25.0), pytest.approx(6.0))
    gfx950 = system_of(_hosts(2, "mi355x", nvlink_bandwidth="448 GB/s"))  # tuning_model_6: the same rows (B)
    assert step_latencies(NcclPlan("Simple", {}, "Ring", True, gfx950, Calibration()))[NET] == pytest.approx(25.0)
    # LL keeps Ring's own 9.5 us: only the Simple entry is a weight
    assert step_latencies(NcclPlan("LL", {}, "Ring", True, system, Calibration()))[NET] == pytest.approx(9.5)


def test_two_mi300x_nodes_1gib_ring_within_10_percent_of_public_time():
    # validation/rccl_tests_public.yaml mi300x-2n-aac10-1GiB: 5908.3 us out-of-place, 16 MI300X over
    # RoCE (RCCL 2.22.3), https://github.com/hisohara/ai-scripts/blob/9acb273b1d0e7072f064d158a1d38102d407123c/
    # training/01_rccl-smoketest/README.md; 400 Gb/s NICs as that file assumes
    topo = _hosts(2, nic_bandwidth="400 Gb/s")
    assert predict.pick(system_of(topo), GiB).algorithm == "Ring"
    assert simnet.simulate(topo, "ring", GiB).time_s == pytest.approx(5908.3e-6, rel=0.10)


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
    with pytest.raises(ValueError, match="RCCL_OVERRIDE_ALGO=Ring changes what RCCL runs"):
        simnet.simulate(_mesh(), "ring", 2**20, env={"RCCL_OVERRIDE_ALGO": "Ring"})
    # an NCCL_ name RCCL 2.21.5 reads and NCCL does not (graph/paths.cc:828): refused under RCCL, as in
    # NCCL ignored on NVIDIA GPUs (the review: it ran both ways without a word)
    with pytest.raises(ValueError, match="NCCL_NCHANNELS_PER_PEER=4 changes what RCCL runs"):
        simnet.simulate(_mesh(), "direct", 2**20, env={"NCCL_NCHANNELS_PER_PEER": "4"}, collective="send_recv")
    h100 = topology_from_dict({"name": "b", "generate": {"kind": "nvswitch", "gpus": 4}})
    assert simnet.simulate(h100, "ring", 2**20, env={"NCCL_NCHANNELS_PER_PEER": "4"}).time_s == \
        simnet.simulate(h100, "ring", 2**20).time_s
    # MSCCL is read from RCCL 2.21.5 (gfx942) only: on gfx950 its variables stay refused
    with pytest.raises(ValueError, match="RCCL_MSCCL_ENABLE=0 changes what RCCL runs .* on gfx950"):
        simnet.simulate(_mesh("mi355x", bandwidth="64 GB/s"), "ring", 2**20, env={"RCCL_MSCCL_ENABLE": "0"})


@pytest.mark.parametrize("name, value", [("RCCL_LL128_FORCE_ENABLE", "1"), ("RCCL_MSCCL_ENABLE", "0"),
                                         ("RCCL_OVERRIDE_ALGO", "Ring")])
def test_rccl_variables_on_gpus_that_run_nccl_are_refused(name, value):
    """Fuzz 31f: RCCL_LL128_FORCE_ENABLE=1 (or any RCCL_ variable) on H100s ran without a
    word and changed nothing: NCCL reads none of them. Under model: ideal no library's
    variable is read, and none is refused."""
    h100 = topology_from_dict({"name": "b", "generate": {"kind": "nvswitch", "gpus": 4}})
    with pytest.raises(ValueError, match=f"{name}={value} is RCCL's \\(AMD Instinct GPUs\\), and these GPUs run NCCL, "
                                         "which does not read it"):
        simnet.simulate(h100, "auto", 2**20, env={name: value})
    assert simnet.simulate(h100, "ring", 2**20, env={name: value}, model="ideal").time_s > 0


# ------------------------------------------------------------------ MSCCL on one MI300X host (RCCL 2.21.5)
# tools/msccl-algorithms/allreduce-allpairs-8n-*-op.xml @0cbce2a, line 1 of each (rccl.MSCCL_ALLREDUCE):
# LL, 4 channels, 256 chunks per loop, 0-65536 B; LL, 8 channels, 512 chunks, 65537-524287 B; Simple, 8
# channels, 512 chunks, 524288-16777216 B; a size counts if it is a whole number of chunks of floats
KiB, MiB = 2**10, 2**20
SIDES = [  # (size, MSCCL's protocol and channels, or None for RCCL's own pick), each threshold from both sides
    (512, None),  # 128 floats: not a multiple of 256 (msccl_lifecycle.cc:333)
    (1 * KiB, ("LL", 4)),
    (64 * KiB, ("LL", 4)),  # maxBytes 65536, inclusive
    (64 * KiB + 2 * KiB, ("LL", 8)),  # the next multiple of 512 floats
    (512 * KiB - 2 * KiB, ("LL", 8)),  # below minBytes 524288 of the Simple file
    (512 * KiB, ("Simple", 8)),
    (16 * MiB, ("Simple", 8)),  # maxBytes 16777216, inclusive
    (16 * MiB + 2 * KiB, None),
    (64 * KiB + 1024, None),  # in the LL 8-channel range but not a multiple of 512 floats
]


@pytest.mark.parametrize("size,msccl", SIDES)
def test_auto_runs_msccl_all_pairs_exactly_within_its_files_ranges(size, msccl):
    result = simnet.simulate(_mesh(), "auto", size)
    if msccl is None:
        assert result.algorithm in ("ring", "tree") and result.auto["nccl_pick"]["algorithm"] != "MSCCL"
    else:
        assert (result.algorithm, result.auto["nccl_pick"]["algorithm"]) == ("direct", "MSCCL")
        assert (result.protocol, result.nccl_channels) == msccl
        assert "RCCL_MSCCL_ENABLE=0" in result.auto["nccl_pick"]["why"]


def test_rccl_msccl_enable_0_gives_rccls_ring_back_and_nccl_algo_does_not():
    size = 1 * MiB
    off = simnet.simulate(_mesh(), "auto", size, env={"RCCL_MSCCL_ENABLE": "0"})
    assert (off.algorithm, off.protocol) == ("ring", "Simple")  # RCCL's own pick (predict.pick above)
    assert off.time_s == simnet.simulate(_mesh(), "ring", size).time_s
    on = simnet.simulate(_mesh(), "auto", size)
    assert on.algorithm == "direct" and on.time_s != off.time_s
    # MSCCL runs before RCCL's tuner (collectives.cc:60-63): NCCL_ALGO and NCCL_PROTO do not reach it
    pinned = simnet.simulate(_mesh(), "auto", size, env={"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL"})
    assert (pinned.algorithm, pinned.protocol) == ("direct", "Simple")


def test_msccl_runs_only_where_rccl_enables_it():
    hosts = _hosts(2)  # 16 ranks: no 8-GPU file, and rome_model_81 does not enable MSCCL
    assert simnet.simulate(hosts, "auto", 1 * MiB).auto["nccl_pick"]["algorithm"] != "MSCCL"
    # fewer than 8 GPUs: no rome_model_79, no file for their rank count
    assert simnet.simulate(_mesh(), "auto", 1 * MiB, gpus=4).auto["nccl_pick"]["algorithm"] != "MSCCL"
    # NCCL_MAX_NCHANNELS below a file's nchannels drops that file (msccl_lifecycle.cc:129-133)
    few = simnet.simulate(_mesh(), "auto", 1 * MiB, env={"NCCL_MAX_NCHANNELS": "4"})
    assert few.auto["nccl_pick"]["algorithm"] != "MSCCL"
    assert simnet.simulate(_mesh(), "auto", 1 * KiB, env={"NCCL_MAX_NCHANNELS": "4"}).algorithm == "direct"


def test_msccl_time_on_paper():
    # direct under MSCCL: RCCL's base latency for the protocol (baseLat Ring: LL 12, Simple 17 us), then
    # two steps, each S/8 over one xGMI link (every directed link carries one piece per step) at RCCL's
    # 48 GB/s (GFX94X_XGMI_WIDTH), LL's lines twice the data; a step's latency is hwLat[xGMI][Ring]
    # (LL 0.8, Simple 2.1 us) or the mesh link's own 0.25 us, whichever is larger (nccl.connection_timing
    # delays a transfer by hwLat less its path's latency, at least 0)
    link = 48e9
    simple, ll = 1 * MiB, 64 * KiB
    assert simnet.simulate(_mesh(), "auto", simple).time_s == pytest.approx(
        17e-6 + 2 * (2.1e-6 + simple / 8 / link), rel=1e-3)
    assert simnet.simulate(_mesh(), "auto", ll).time_s == pytest.approx(
        12e-6 + 2 * (0.8e-6 + 2 * ll / 8 / link), rel=1e-3)


def test_sharp_switches_under_amd_gpus_are_refused_and_collnet_is_no_rccl_algorithm():
    """Fuzz 31f: ``algorithms: [collnet_direct]`` on a ``sharp: true`` fabric of MI300X exited
    70 (KeyError 'CollNetDirect' in RCCL's tables): RCCL runs Ring and Tree only, and a
    switch that reduces changes nothing when every GPU runs RCCL."""
    from simnet.errors import InputError, Unsupported

    with pytest.raises(InputError, match="generate.sharp: 'tor0' reduces in the network, and the GPUs are AMD "
                                         "Instinct \\(mi300x\\), whose RCCL runs no CollNet"):
        topology_from_dict({"name": "f", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                      "gpus_per_host": 2, "gpu": "mi300x", "sharp": True}})
    # a fabric of both vendors keeps its SHARP switch; a run on its AMD GPUs has no CollNet
    nodes = [{"id": "g0", "kind": "gpu", "host": "h0", "gpu": "mi300x"},
             {"id": "g1", "kind": "gpu", "host": "h1", "gpu": "mi300x"},
             {"id": "g2", "kind": "gpu", "host": "h2", "gpu": "h100"}, {"id": "sw", "kind": "switch", "sharp": True}]
    mixed = topology_from_dict({"name": "m", "nodes": nodes, "links": [
        {"a": g, "b": "sw", "bandwidth": "400 Gb/s", "latency": "1 us"} for g in ("g0", "g1", "g2")]})
    for algorithm in ("collnet_direct", "collnet_chain"):
        with pytest.raises(Unsupported, match="RCCL runs Ring and Tree only, no CollNet"):
            simnet.simulate(mixed, algorithm, 2**20, gpus=["g0", "g1"])
        assert simnet.simulate(mixed, algorithm, 2**20, gpus=["g0", "g1"], model="ideal").time_s > 0


def test_an_msccl_variable_that_changes_nothing_says_why():
    """Fuzz round j #355: RCCL_MSCCL_FORCE_ENABLE=1 on two MI300X hosts (16 ranks: RCCL 2.21.5's
    MSCCL files are for 8 ranks of one host) changed nothing without a word; on one host at
    1 MiB, where RCCL runs MSCCL anyway, it changes nothing either, and RCCL_MSCCL_ENABLE=0 does
    change the pick (no warning)."""
    from simnet import simulate, topology_from_dict

    one = topology_from_dict({"name": "one", "generate": {"kind": "full_mesh", "server": "amd-mi300x-platform"}})
    two = topology_from_dict({"name": "two", "generate": {"kind": "leaf_spine", "server": "amd-mi300x-platform",
                                                          "racks": 1, "hosts_per_rack": 2}})

    def unread(topology, env):
        return [w.message for w in simulate(topology, "auto", 2**20, env=env).warnings if w.kind == "key_unread"]

    assert unread(two, {"RCCL_MSCCL_FORCE_ENABLE": "1"}) == [
        "RCCL_MSCCL_FORCE_ENABLE=1 changed nothing here: no MSCCL file of RCCL's fits this run with it or without "
        "(RCCL 2.21.5's are AllReduces over 8 MI300X of one host, of sizes in whole chunks)"]
    assert unread(one, {"RCCL_MSCCL_FORCE_ENABLE": "1"}) == [
        "RCCL_MSCCL_FORCE_ENABLE=1 changed nothing here: RCCL runs the same MSCCL file with it as without"]
    assert unread(one, {"RCCL_MSCCL_ENABLE": "0"}) == []
    # fuzz p #361: a named ring on the same host reads no MSCCL file; a named direct at 6 MiB runs one unset
    ring = simulate(one, "ring", 2**20, env={"RCCL_MSCCL_ENABLE": "0"})
    assert [w.message for w in ring.warnings if w.kind == "key_unread"] == [
        "RCCL_MSCCL_ENABLE=0 changed nothing here: RCCL runs an MSCCL file for auto and direct only, and ring runs "
        "as named"]
    # fuzz q (#453-#461): under model: ideal too (its auto and direct run RCCL's MSCCL schedule)
    ideal = simulate(one, "ring", 640 * 1024, env={"RCCL_MSCCL_FORCE_ENABLE": "1"}, model="ideal")
    assert [w.link for w in ideal.warnings if w.kind == "key_unread"] == ["RCCL_MSCCL_FORCE_ENABLE"]
    direct = simulate(one, "direct", 6 * 2**20, env={"RCCL_MSCCL_ENABLE": "0"})
    assert direct.nccl_channels != simulate(one, "direct", 6 * 2**20, env={}).nccl_channels
    assert not [w for w in direct.warnings if w.kind == "key_unread"]


def test_a_variable_said_unread_on_amd_names_rccl_as_the_library_that_picks():
    """Fuzz round ac F10: on MI300X, RCCL_LL128_FORCE_ENABLE=1 was said to change nothing
    because "NCCL picks direct with the same plan": the library there is RCCL."""
    from simnet import simulate, topology_from_dict

    box = topology_from_dict({"name": "t", "generate": {"kind": "full_mesh", "gpus": 8, "gpu": "mi300x"}})
    said = [w.message for w in simulate(box, "auto", 2**20, env={"RCCL_LL128_FORCE_ENABLE": "1"}).warnings
            if w.kind == "key_unread"]
    assert said and "RCCL picks direct" in said[0] and "NCCL picks" not in said[0]


def test_a_protocol_no_algorithm_runs_here_is_refused_saying_which_run_what(tmp_path):
    """Fuzz round aj (LOW): NCCL_PROTO=LL128 on MI300X (gfx942 has no LL128) was refused in ~900
    characters repeating RCCL's reason once per algorithm, and never said that Ring and Tree run
    without LL128 here. Each reason once; the protocols Ring and Tree do run, named."""
    from simnet.errors import Unsupported

    topo = topology_from_dict({"name": "m", "generate": {"kind": "full_mesh", "gpus": 8, "gpu": "mi300x"}})
    with pytest.raises(Unsupported) as refused:
        predict.pick(system_of(topo), 2**20, nccl_proto="LL128")
    message = str(refused.value)
    assert "Ring runs LL, Simple only here" in message and message.count("RCCL runs Ring and Tree only") == 1
