"""NCCL's algorithms (Ring over rails, Tree between hosts, NVLS, NVLSTree, CollNet), the
pipelined hierarchical and direct: expectations from bounds and closed forms on paper, on
the line-rate model."""

import json

import numpy as np
import pytest

from simnet import topology_from_dict
from simnet.run.simulate import simulate
from simnet.schedule.catalog import build_schedule
from simnet.schedule.channels import channel_groups


def cluster(hosts=4, gpus=8, **extra):
    return topology_from_dict({"name": "c", "generate": {
        "kind": "leaf_spine", "racks": 1, "hosts_per_rack": hosts, "gpus_per_host": gpus, **extra}})


def line_rate(topo, algorithm, size, **options):
    return simulate(topo, algorithm, size, model="ideal", **options)


def test_ring_uses_every_nic_rail():
    # 4 hosts x 8 H100, a 400 Gb/s NIC per GPU: each host's 8 NICs carry one channel each,
    # so busbw is bounded by 8 x 50 GB/s = 400 GB/s, not one NIC's 50
    topo = cluster()
    size = 2**30
    result = line_rate(topo, "ring", size)
    assert result.channels == 8
    assert 340 <= result.busbw_GBps <= 400 * (1 + 1e-9)
    n = len(topo.gpus)
    sent = [link.bytes for link in result.links if link.src.endswith(("nic0", "nic3", "nic7"))
            and link.dst.startswith("tor")]
    assert sent and np.allclose(sent, 2 * (n - 1) / n * size / 8)  # one channel per NIC, in and out


def test_one_channel_is_the_textbook_ring_through_one_nic_pair():
    topo = cluster()
    result = line_rate(topo, "ring", 2**28, channels=1)
    assert 0.9 * 50 <= result.busbw_GBps <= 50 * (1 + 1e-9)


def test_channels_alike_share_the_links_of_one_host():
    # on one switch every channel takes the same links: C channels of S/C each take as long
    # as one ring of S, 2(N-1)(L + S/(N B))
    n, size, bandwidth = 8, 8 * 2**20, 10e9
    topo = topology_from_dict({"name": "s", "generate": {"kind": "nvswitch", "gpus": n, "gpu_bandwidth": "10 GB/s",
                                                         "latency": "1 us"}})
    expected = 2 * (n - 1) * (2e-6 + size / (n * bandwidth))
    for channels in (1, 4):
        assert line_rate(topo, "ring", size, channels=channels).time_s == pytest.approx(expected, rel=1e-6)


def test_rings_leave_each_host_on_the_rail_they_enter_the_next():
    topo = cluster(hosts=4)
    for group in channel_groups(topo, topo.gpus, 8, "ring"):
        for here, there in zip(group.hosts, group.hosts[1:] + group.hosts[:1]):
            assert here[-1] % 8 == there[0] % 8  # the same GPU index: the same NIC rail


def _hosts_on_a_full_mesh(n):
    """n single-GPU hosts, each pair joined directly: every tree edge is its own link."""
    nodes = [{"id": f"g{i}", "kind": "gpu", "host": f"h{i}"} for i in range(n)]
    links = [{"a": f"g{i}", "b": f"g{j}", "bandwidth": "10 GB/s", "latency": "1 us"}
             for i in range(n) for j in range(i + 1, n)]
    return topology_from_dict({"name": "mesh", "nodes": nodes, "links": links})


@pytest.mark.parametrize("n", [7, 9])
def test_nccl_tree_between_hosts_is_the_double_binary_tree(n):
    # one GPU per host: NCCL's Tree is the double binary tree over hosts, its two trees on
    # two channels of half the data each, exactly the textbook double binary tree
    topo = _hosts_on_a_full_mesh(n)
    size, piece = 2**22, 2**18
    nccl = line_rate(topo, "tree", size, channels=1, chunk_size=piece).time_s
    textbook = line_rate(topo, "double_binary_tree", size, chunk_size=piece).time_s
    assert nccl == pytest.approx(textbook, rel=1e-9)


@pytest.mark.parametrize("n, k", [(4, 1), (8, 4), (5, 16)])
def test_nccl_tree_inside_one_host_is_a_chain(n, k):
    # a chain of n GPUs on dedicated links: a chunk climbs n-1 hops and comes back down,
    # the k-1 chunks behind it one chunk time apart: 2(n-1)(L + c/B) + (k-1) c/B; NCCL's two
    # channels (one per tree) take the same chain on one host and move their chunks together
    topo = topology_from_dict({"name": "m", "generate": {"kind": "full_mesh", "gpus": n, "bandwidth": "10 GB/s",
                                                         "latency": "1 us"}})
    size = k * 2**20
    chunk = size / k
    expected = 2 * (n - 1) * (1e-6 + chunk / 10e9) + (k - 1) * chunk / 10e9
    result = line_rate(topo, "tree", size, channels=1, chunk_size=size // (2 * k))
    assert result.time_s == pytest.approx(expected, rel=1e-6)


def test_nvls_moves_each_byte_once_each_way():
    # every GPU sends S up to the switch and gets S back: 2(L + c/B) + (k-1) c/B, where a
    # ring moves 2(N-1)/N S each way; on 8 H100 its busbw is far above the ring's 450 GB/s
    topo = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": "h100"}})
    size, k = 2**30, 1024
    chunk = size / k
    result = line_rate(topo, "nvls", size, chunk_size=size // k, channels=1)
    expected = 2 * (0.25e-6 + chunk / 450e9) + (k - 1) * chunk / 450e9  # GPU -> switch -> GPU, 0.25 us a hop
    assert result.time_s == pytest.approx(expected, rel=1e-6)
    for link in result.links:
        assert link.bytes == size
    assert result.busbw_GBps > 1.7 * line_rate(topo, "ring", size).busbw_GBps


def test_nvls_tree_uses_nvls_inside_and_the_rails_between_hosts():
    topo = cluster(hosts=2)
    size = 2**30
    result = line_rate(topo, "nvls_tree", size)
    # each host's 8 NICs carry its share once each way: S/8 per NIC and direction
    nics = [link for link in result.links if link.dst.startswith("tor")]
    assert len(nics) == 16 and np.allclose([link.bytes for link in nics], size / 8)
    assert result.busbw_GBps > line_rate(topo, "ring", size).busbw_GBps


@pytest.mark.parametrize("name, needs", [("nvls", "NVSwitch that reduces"), ("collnet_direct", "sharp: true"),
                                         ("nvls_tree", "runs across hosts")])
def test_in_network_algorithms_say_what_they_need(name, needs):
    box = topology_from_dict({"name": "a100", "generate": {"kind": "nvswitch", "gpus": 8, "gpu": "a100"}})
    topo = box if name != "collnet_direct" else cluster(hosts=2)
    with pytest.raises(ValueError, match=needs):
        build_schedule(name, topo, 2**20)


@pytest.mark.parametrize("name", ["collnet_direct", "collnet_chain"])
def test_collnet_sends_each_host_share_once_each_way_through_sharp(name):
    # one GPU per host on a SHARP switch: each NIC carries S up and S down, where a ring
    # carries 2(N-1)/N S; the switch does the adding
    topo = cluster(hosts=8, gpus=1, sharp=True)
    size = 2**26
    result = line_rate(topo, name, size)
    up = [link.bytes for link in result.links if link.dst == "tor0"]
    assert len(up) == 8 and np.allclose(up, size)
    assert result.time_s < 0.7 * line_rate(topo, "ring", size).time_s


def test_direct_closed_form():
    n, size = 8, 8 * 2**20
    topo = topology_from_dict({"name": "s", "generate": {"kind": "nvswitch", "gpus": n, "gpu_bandwidth": "10 GB/s",
                                                         "latency": "1 us"}})
    expected = 2 * (2e-6 + (n - 1) / n * size / 10e9)
    assert line_rate(topo, "direct", size).time_s == pytest.approx(expected, rel=1e-6)


def test_hierarchical_overlaps_its_phases_piece_by_piece():
    # slow NVLink and one slow NIC per host make the three phases comparable; in pieces the
    # next piece reduce-scatters while the last one crosses the network
    topo = cluster(hosts=4, nvlink_bandwidth="10 GB/s", nic_per="host", nic_bandwidth="100 Gb/s")
    size = 2**28
    whole = line_rate(topo, "hierarchical", size, inner="ring", chunk_size=size).time_s
    pieces = line_rate(topo, "hierarchical", size, inner="ring", chunk_size=size // 32).time_s
    assert pieces < 0.6 * whole


def test_hierarchical_pieces_pipeline_through_a_ring_step_by_step():
    """Fuzz round ar, M2: each piece's ring inside a group queued behind the previous piece's
    last transfer, so k pieces paid k(g-1) step latencies in series (a 72-GPU box: 1.12 ms
    against one piece's 659 us). One group of g on a switch: no faster than line rate,
    2(g-1) S / (g B), and no slower than one piece, 2(g-1)(L + S/(g B)), the ring's closed form."""
    g, size, bandwidth = 32, 2**26, 100e9
    topo = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": g,
                                                           "gpu_bandwidth": "100 GB/s", "latency": "1 us"}})
    path = topo.path_latency(topo.gpus[0], topo.gpus[1])
    one_piece = 2 * (g - 1) * (path + size / (g * bandwidth))
    assert line_rate(topo, "hierarchical", size, chunk_size=size).time_s == pytest.approx(one_piece, rel=1e-6)
    assert build_schedule("hierarchical", topo, size).info["pieces"] == 16  # the default: 4 MiB each
    assert 2 * (g - 1) * size / (g * bandwidth) <= line_rate(topo, "hierarchical", size).time_s <= one_piece


def test_hierarchical_by_region_closed_form():
    # 2 regions of 2 single-GPU hosts: a ring inside each region (g = 2) on S, then for each
    # of the g shards a ring across the G = 2 regions, the g shards sharing the WAN:
    # 2(g-1)(L_in + S/(g B_in)) + 2(G-1)(L_wan + (S/g/G) / (B_wan/g))
    topo = topology_from_dict({"name": "x", "generate": {
        "kind": "cross_region", "regions": 2, "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 1,
        "nic_bandwidth": "400 Gb/s", "wan_bandwidth": "100 Gb/s", "wan_latency": "10 ms",
        "gateway_bandwidth": "400 Gb/s"}})
    size = 2**26
    g = G = 2
    a, b = topo.gpus[0], topo.gpus[1]  # same region
    far = topo.gpus[2]
    intra = 2 * (g - 1) * (topo.path_latency(a, b) + size / (g * topo.path_bandwidth(a, b)))
    inter = 2 * (G - 1) * (topo.path_latency(a, far) + (size / g / G) / (100e9 / 8 / g))
    result = line_rate(topo, "hierarchical", size, inner="ring", group_by="region", chunk_size=size)
    assert result.time_s == pytest.approx(intra + inter, rel=1e-6)


@pytest.mark.parametrize("size", [2**12, 2**26])
def test_hierarchical_without_inner_keeps_the_faster_of_tree_and_ring(cli, tmp_path, size):
    """Unset, ``inner`` is whichever of NCCL's tree and a ring simulates faster, and the
    result says which: the same time as asking for that one, never slower than the other."""
    topo = topology_from_dict({"name": "ls", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 4, "gpus_per_host": 2, "nic_per": "host",
        "spines": 2, "oversubscription": 2}})
    chosen = line_rate(topo, "hierarchical", size)
    each = {inner: line_rate(topo, "hierarchical", size, inner=inner).time_s for inner in ("tree", "ring")}
    assert chosen.variants == {"inner": each}
    assert chosen.time_s == min(each.values()) and chosen.options["inner"] == min(each, key=each.get)


def _hierarchical_1mib(cli, tmp_path, topology, extra=""):
    """``simnet run`` of hierarchical at 1 MiB on ``topology``: its table and its run's JSON."""
    path = tmp_path / "s.yaml"
    path.write_text(f"name: v\ntopology: {topology}\n{extra}size: 1 MiB\nalgorithms: [hierarchical]\n")
    result = cli("run", path, "--json", tmp_path / "r.json")
    return result.stdout, json.loads((tmp_path / "r.json").read_text())["runs"][0]


def test_the_table_names_the_variant_hierarchical_kept(cli, tmp_path, root):
    # which variant is kept depends on the size, that the table names it does not: 1 MiB
    # replays in a fraction of a second (64 MiB, 12 s)
    table, run = _hierarchical_1mib(cli, tmp_path, root / "topologies/two_racks.yaml", "model: ideal\n")
    assert f"hierarchical (inner {run['options']['inner']})" in table
    assert set(run["variants"]["inner"]) == {"tree", "ring"}


def test_hierarchical_over_one_group_names_no_variant(cli, tmp_path, root):
    """Fuzz round at, L4: over one group (one DGX H100) nothing runs between groups, yet the
    table said "hierarchical (inner tree)" and the JSON inner: tree, both variants simulated."""
    table, run = _hierarchical_1mib(cli, tmp_path, root / "topologies/dgx_h100.yaml")
    assert "inner" not in table and "inner" not in run["options"] and run.get("variants") is None


@pytest.mark.parametrize("algorithm", ["ring", "tree"])
def test_one_channel_of_the_option_is_two_of_nccl_s_as_the_readme_says(root, algorithm):
    """Fuzz round ar, L3: options.channels 1 (62.65 ms for 1 GiB on a DGX H100) and
    NCCL_MAX_NCHANNELS=1 (125.3 ms) answered 2x apart with nothing saying why: the option counts
    the rings of NCCL's topology search, each of which NCCL runs as two channels
    (CHANNEL_DUPLICATION). The README says so: channels 1 times as NCCL_MAX_NCHANNELS=2. It did
    not everywhere: under the variable the replay spread NCCL's 2 channels over all 24 at their
    rate, so a 64 MiB tree on Simple took 15.5 ms against the option's 5.9 ms."""
    import simnet

    topology = simnet.load_topology(root / "topologies/dgx_h100.yaml")
    for size in (2**10, 2**16, 2**20, 2**22, 2**26, 2**28, 2**30):
        option = simnet.simulate(topology, algorithm, size, channels=1)
        variable = simnet.simulate(topology, algorithm, size, env={"NCCL_MAX_NCHANNELS": "2"})
        assert option.nccl_channels == variable.nccl_channels <= 2
        assert option.time_s == pytest.approx(variable.time_s, abs=2e-9), size
    text = " ".join((root / "README.md").read_text().split())
    assert ("so on one H100 box it times as `NCCL_MAX_NCHANNELS=2` does, not `=1` (to the ns, ring or tree, at every "
            "size") in text


MI355X_BOX = {"name": "m", "generate": {"kind": "full_mesh", "server": "BM.GPU.MI355X-v1.8", "bandwidth": "64 GB/s"}}


@pytest.mark.parametrize("machine, model, channels, env", [
    ("dgx_h100", "nccl", 32, {"NCCL_MIN_NCHANNELS": "64"}),  # above the 24 NCCL opens by default
    ("mi355x", "rccl", 1, {"NCCL_MAX_NCHANNELS": "4"}),  # RCCL's trees laid out on 56, its ring search 28 rings
    ("mi355x", "rccl", 4, {"NCCL_MAX_NCHANNELS": "16"}),
    ("mi355x", "rccl", 28, {})])  # the search's every ring: the default
@pytest.mark.parametrize("algorithm", ["ring", "tree"])
def test_the_option_and_the_variable_that_run_the_same_channels_give_one_time(root, machine, model, channels, env,
                                                                             algorithm):
    """Review 89, H2 and M2: the replay laid out only fewer channels than the option's, so
    where NCCL runs more than its default (NCCL_MIN_NCHANNELS=64 against channels: 32 on a
    DGX H100 tree: 47.6 vs 73.7 us at 1 MiB) or where RCCL lays its trees out on more channels
    than its ring search has rings (one MI355X host: channels 1 45.1 us, NCCL_MAX_NCHANNELS=4
    57.4 us at 64 KiB), the same running channels answered apart."""
    import simnet

    topology = simnet.load_topology(root / "topologies/dgx_h100.yaml") if machine == "dgx_h100" else \
        simnet.topology_from_dict(MI355X_BOX)
    for size in (2**16, 2**20, 2**24):
        option = simnet.simulate(topology, algorithm, size, model=model, channels=channels)
        variable = simnet.simulate(topology, algorithm, size, model=model, env=env)
        assert option.nccl_channels == variable.nccl_channels, size
        assert option.time_s == pytest.approx(variable.time_s, abs=2e-9), size


@pytest.mark.parametrize("env, channels", [({"NCCL_MAX_NCHANNELS": "2"}, 2), ({}, 24)])
def test_a_tree_runs_each_channel_nccl_runs_in_nccl_s_steps(root, env, channels):
    """A 64 MiB tree on one DGX H100 (Simple: NCCL's tree steps are 512 KiB, enqueue.cc
    chunkSteps 1 for trees, v2.30.7) on ``channels`` NCCL channels has 64 MiB / channels /
    512 KiB steps per channel: 64 on 2, 5.33 on all 24. The replay's pipeline per lane, in
    NCCL's steps (its chunks x the coarsening), must be NCCL's: spread over every channel, the
    2 channels of NCCL_MAX_NCHANNELS=2 had 5.33."""
    import simnet
    from simnet.model.interface import plan
    from simnet.run.nccl_env import nccl_system
    from simnet.schedule.catalog import algorithms_for, build_program

    topology = simnet.load_topology(root / "topologies/dgx_h100.yaml")
    size = 64 * 2**20
    decided = plan("nccl", topology, "tree", size, {}, algorithms_for("allreduce")["tree"].options,
                   system=nccl_system(topology, env))
    assert decided.detail.protocol == "Simple" and decided.detail.running_channels == channels
    program = build_program("tree", topology, size, **decided.options)
    steps = [chunks * decided.detail.coarsening for _, chunks, _ in program.info["pipeline"].values()]
    assert steps == pytest.approx([size / channels / (512 * 1024)] * len(steps), rel=0.2)


@pytest.mark.parametrize("algorithm, size, channels, chunk", [
    # enqueue.cc:2231-2257 (v2.30.7) on paper, 2 hosts of 8 H100 under a SHARP ToR (8 heads):
    # Direct, 2 deep: 512 KiB halved while nBytes / (channels x 8 heads x chunk) < 2 x 64 (down to
    # 128 KiB), < 2 x 8 (64 KiB), < 2 x 8 (32 KiB): 64 MiB on 16 channels: 1, 2, 4 | 8 | 16 -> 32 KiB
    ("CollNetDirect", 2**26, 16, 32768),
    # Chain, 8 deep (GPUs a node): 256 KiB halved while nBytes / (channels x chunk) < 8 x 64 (to
    # 128 KiB), < 8 x 8 (64 KiB), < 8 (32 KiB): 64 MiB on 16: 16, 32 | 64 -> 64 KiB; 1 MiB on 3: 1, 2 |
    # 5 | 5 -> 32 KiB
    ("CollNetChain", 2**26, 16, 65536),
    ("CollNetChain", 2**20, 3, 32768),
])
def test_collnet_pipelines_in_nccl_s_own_smaller_chunks(algorithm, size, channels, chunk):
    """Fuzz round aw, S1: CollNet ran in 512 KiB steps at every size, where NCCL halves them
    down to 32 KiB to fill its pipeline: an 8 MiB CollNetChain took 441 us, against 536 us at
    1 MiB, 768 us at 256 KiB."""
    from simnet.tuning import enqueue, search

    sharp = topology_from_dict({"name": "c", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                          "gpus_per_host": 8, "gpu": "h100", "sharp": True,
                                                          "nvls": False}})
    system = search.system_of(sharp)
    assert enqueue.collective_channels(system, algorithm, "Simple", size)[0] == channels
    assert enqueue.chunk_size(system, algorithm, "Simple", size) == chunk


def test_collnet_chain_is_as_deep_as_nccl_s_ranks_over_nodes_truncated():
    """Review 88, M7: hosts of 8, 8 and 4 GPUs: NCCL's chain depth is nRanks / nNodes = 20 / 3 =
    6 (connect.cc:472, integer division), not 7. 6 MiB on 16 channels: 256 KiB -> 128 KiB (1, 3
    chunks a channel < 6 x 64), -> 64 KiB (6 < 6 x 8), and 6 is not under 6: 64 KiB (7 deep
    would halve once more)."""
    from simnet.tuning import enqueue, search

    sharp = topology_from_dict({"name": "c", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 3,
                                                          "gpus_per_host": 8, "gpu": "h100", "sharp": True,
                                                          "nvls": False}})
    system = search.system_of(sharp.subset(sharp.gpus[:20]))
    assert (system.ranks, system.nodes) == (20, 3)
    assert enqueue.collective_channels(system, "CollNetChain", "Simple", 6 * 2**20)[0] == 16
    assert enqueue.chunk_size(system, "CollNetChain", "Simple", 6 * 2**20) == 65536
