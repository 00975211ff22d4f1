"""Every NCCL collective beyond AllReduce: each schedule computes what its collective
defines (numpy replay), the closed forms each algorithm states (ideal model), NCCL's model
rows for them (tuning.cc by hand), nccl-tests' bus bandwidth factors, scenarios and the CLI."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simnet import topology_from_dict
from simnet.engine.replay import replay
from simnet.run.simulate import simulate
from simnet.schedule.algorithms.gather import bruck_steps
from simnet.schedule.catalog import REGISTRY, build_schedule
from simnet.schedule.kinds import COLLECTIVES
from simnet.schedule.verify import CollectiveMismatch, check_collective
from simnet.tuning import predict, search, tables

OTHERS = [(c, a) for c, table in REGISTRY.items() if c != "allreduce" for a in table]
# 2 racks x 2 hosts x 4 GPUs, a NIC per GPU: NVLS inside hosts, PXN across them
CLUSTER = topology_from_dict({"name": "cluster", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2,
                                                              "gpus_per_host": 4}})
UNEVEN = topology_from_dict({  # hosts of 3, 1 and 4 GPUs on one switch, no NICs
    "name": "uneven",
    "nodes": [{"id": f"h{h}g{g}", "kind": "gpu", "host": f"h{h}"} for h, size in enumerate((3, 1, 4))
              for g in range(size)] + [{"id": "sw", "kind": "switch"}],
    "links": [{"a": f"h{h}g{g}", "b": "sw", "bandwidth": "10 GB/s", "latency": "1 us"}
              for h, size in enumerate((3, 1, 4)) for g in range(size)],
})
B = 10e9
LINK = 1e-6


ALONE = topology_from_dict({"name": "alone", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 8,
                                                          "gpus_per_host": 1}})
"""One GPU on each of 16 hosts: where NCCL runs PAT (ncclPatEnable), which the other fabrics refuse."""


def _build(collective, name, topology, n, size, **options):
    topology = ALONE if name == "pat" else topology
    return build_schedule(name, topology, size, ranks=topology.gpus[:n], collective=collective, **options)


def _across_hosts(name, n):
    """Whether NVLS (ReduceScatter/AllGather: one host only) is asked to span CLUSTER's hosts."""
    return name == "nvls" and len(CLUSTER.groups("host", CLUSTER.gpus[:n])) > 1


COUNTS = [(collective, name, n) for collective, name in OTHERS for n in (1, 2, 3, 4, 5, 8, 13, 16)]


@pytest.mark.parametrize("collective, name, n", [c for c in COUNTS if not _across_hosts(c[1], c[2])])
def test_every_schedule_computes_its_collective(collective, name, n):
    schedule = _build(collective, name, CLUSTER, n, 4096 + 7 * n, chunk_size=300, channels=3)
    on = ALONE if name == "pat" else CLUSTER
    check_collective(schedule, collective, timed=replay(schedule, on) if n in (2, 5, 16) else None)


@pytest.mark.parametrize("collective, name, n", [c for c in COUNTS if _across_hosts(c[1], c[2])])
def test_nvls_refuses_ranks_across_hosts(collective, name, n):
    with pytest.raises(ValueError, match="across hosts"):
        _build(collective, name, CLUSTER, n, 4096 + 7 * n, chunk_size=300, channels=3)


@settings(max_examples=40, deadline=None)
@given(pick=st.sampled_from(OTHERS), n=st.integers(1, 8), size=st.integers(0, 3000),
       chunk=st.sampled_from([None, 1, 64, 1000]), channels=st.integers(1, 4), pxn=st.booleans())
def test_every_option_combination_computes_its_collective(pick, n, size, chunk, channels, pxn):
    collective, name = pick
    if name == "nvls":
        n = min(n, 3)  # the first host of UNEVEN; NVLS needs an NVLS switch: use CLUSTER's first host
        topology = CLUSTER
    else:
        topology = ALONE if name == "pat" else UNEVEN  # (PAT at one GPU per node only)
    schedule = build_schedule(name, topology, size, ranks=topology.gpus[:n], collective=collective, chunk_size=chunk,
                              channels=channels, pxn=pxn)
    check_collective(schedule, collective, seed=size)


@pytest.mark.parametrize("collective, name", OTHERS)
def test_a_schedule_missing_a_transfer_is_caught(collective, name):
    """The check is not vacuous: a rank that must receive (the root of a Reduce, rank 1
    otherwise) receives nothing, and the check fails."""
    schedule = _build(collective, name, CLUSTER, 4, 4096)
    starved = schedule.dst == (0 if collective == "reduce" else 1)
    schedule.hi[starved] = schedule.lo[starved]  # they now carry nothing
    with pytest.raises(CollectiveMismatch, match=collective):
        check_collective(schedule, collective)


# ------------------------------------------------------------------ closed forms (ideal)
def switch(n):
    """N GPUs on one NVLS-capable switch: path latency 2 us, B per direction."""
    return topology_from_dict({"name": "switch", "generate": {"kind": "nvswitch", "gpus": n,
                                                              "gpu_bandwidth": "10 GB/s", "latency": "1 us"}})


def hosts_on_a_switch(n):
    """N hosts of one GPU each on one switch: path latency 2 us, B per direction (PAT's place)."""
    return topology_from_dict({"name": "star", "nodes": [
        *({"id": f"g{i}", "kind": "gpu", "host": f"h{i}"} for i in range(n)), {"id": "sw", "kind": "switch"}],
        "links": [{"a": f"g{i}", "b": "sw", "bandwidth": "10 GB/s", "latency": "1 us"} for i in range(n)]})


def timed(collective, name, topology, size, **options):
    return replay(build_schedule(name, topology, size, collective=collective, **options), topology).time


@pytest.mark.parametrize("n", [2, 3, 5, 8])
@pytest.mark.parametrize("collective", ["reduce_scatter", "all_gather"])
def test_ring_halves_closed_form(collective, n):
    size = n * 3 * 2**20
    expected = (n - 1) * (2 * LINK + size / (n * B))
    assert timed(collective, "ring", switch(n), size, channels=1) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n", [2, 3, 4, 6, 8, 13])
@pytest.mark.parametrize("collective", ["reduce_scatter", "all_gather"])
def test_pat_is_bruck_log_steps(collective, n):
    size = n * 2**20
    steps = int(np.ceil(np.log2(n)))
    expected = steps * 2 * LINK + (n - 1) / n * size / B
    assert len(bruck_steps(n)) == steps
    assert timed(collective, "pat", hosts_on_a_switch(n), size) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n, k", [(2, 1), (4, 3), (8, 2)])
@pytest.mark.parametrize("collective", ["reduce_scatter", "all_gather"])
def test_nvls_closed_form(collective, n, k):
    """Each GPU's link carries S one way (all of it up for ReduceScatter, every part down
    for AllGather), one chunk behind the first: 2L + c/B + S/B, c = S/(N k)."""
    c = 2**16
    size = n * k * c
    expected = 2 * LINK + c / B + size / B
    assert timed(collective, "nvls", switch(n), size, chunk_size=c, channels=1) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n", [2, 5, 8])
@pytest.mark.parametrize("collective", ["reduce_scatter", "all_gather", "all_to_all"])
def test_direct_exchanges_closed_form(collective, n):
    size = n * 2**20
    expected = 2 * LINK + (n - 1) / n * size / B
    assert timed(collective, "direct", switch(n), size) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n", [2, 5, 8])
def test_pairwise_all_to_all_closed_form(n):
    size = n * 2**20
    expected = (n - 1) * (2 * LINK + size / (n * B))
    assert timed("all_to_all", "pairwise", switch(n), size) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n", [2, 5])
def test_send_recv_closed_form(n):
    assert timed("send_recv", "direct", switch(n), 2**24) == pytest.approx(2 * LINK + 2**24 / B, rel=1e-6)


@pytest.mark.parametrize("n, k", [(2, 1), (4, 4), (7, 3)])
@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_ring_chain_closed_form(collective, n, k):
    c = 2**18
    expected = (n - 1) * (2 * LINK + c / B) + (k - 1) * c / B
    assert timed(collective, "ring", switch(n), k * c, chunk_size=c, channels=1) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n", [2, 5])
@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_direct_rooted_closed_form(collective, n):
    """The root's link carries N-1 whole buffers."""
    assert timed(collective, "direct", switch(n), 2**22) == pytest.approx(2 * LINK + (n - 1) * 2**22 / B, rel=1e-6)


def test_pxn_keeps_an_all_to_all_on_the_rails():
    """Across hosts, PXN crosses NVLink to the GPU with the peer's local index and leaves
    through its NIC: on a rail-optimized fabric no byte reaches a spine; without PXN, sends
    to other rails do."""
    topo = topology_from_dict({"name": "rails", "generate": {"kind": "rail_optimized", "nodes_per_unit": 3,
                                                             "gpus_per_node": 4}})
    spines = {n for n in topo.nodes if "spine" in n}

    def spine_bytes(pxn):
        run = replay(build_schedule("direct", topo, 2**20, collective="all_to_all", pxn=pxn), topo)
        return sum(b for (src, dst), b in zip(topo.links, run.stats.bytes) if src in spines or dst in spines)

    assert spine_bytes(True) == 0 < spine_bytes(False)


# ------------------------------------------------------------------ NCCL's model rows
BOX = search.System(ranks=8, nodes=1, cc=90, nvlink_bw=18 * 20.6, pci_bw=24.0)
PAIR = search.System(ranks=16, nodes=2, cc=90, nvlink_bw=18 * 20.6, pci_bw=24.0, nic_bw=48.0, nics=8)
SINGLES = search.System(ranks=64, nodes=64, cc=90, nvlink_bw=0.0, pci_bw=24.0, nic_bw=48.0, nics=1)


def test_nccl_latency_rows_per_function():
    """tuning.cc:383-435 by hand (us): Ring AllGather N-1 steps; Broadcast one step on
    identical channels, N steps at the network's Tree/Simple latency otherwise; PAT
    log2(nodes) * netLat/3.5 + 2.8 per rank."""
    assert predict.latency(BOX, "Ring", "LL", "AllGather") == pytest.approx(6.6 + 7 * 0.6)
    assert predict.latency(BOX, "Ring", "Simple", "Broadcast") == pytest.approx(8.4 + 3.4)
    assert predict.latency(PAIR, "Ring", "Simple", "Broadcast") == pytest.approx(8.4 + 16 * 14.0)
    assert predict.latency(PAIR, "Ring", "LL", "ReduceScatter") == pytest.approx(6.6 + 14 * 1.0 + 1 * 2.7)
    assert predict.latency(SINGLES, "PAT", "Simple", "AllGather") == pytest.approx(8.0 + 6 * 14.0 / 3.5 + 64 * 2.8)


def test_nccl_bandwidth_rows_per_function():
    """Ring converts busBw by N/nsteps; PAT keeps busBw x 0.75 (no conversion for
    AllGather/ReduceScatter off Ring); NVLS scales its intra-node rate by (ppn-1)/ppn
    instead of AllReduce's 2 (tuning.cc:305-382)."""
    ring = predict.bus_bandwidth(BOX, "Ring", "Simple", "AllGather")
    assert ring == predict.bus_bandwidth(BOX, "Ring", "Simple")  # the same rings
    assert predict.algorithm_bandwidth(BOX, "Ring", "Simple", "AllGather") == pytest.approx(ring * 8 / 7)
    assert predict.algorithm_bandwidth(BOX, "Ring", "Simple", "Broadcast") == pytest.approx(ring)
    tree = search.graph(SINGLES, "Tree")
    assert predict.algorithm_bandwidth(SINGLES, "PAT", "Simple", "ReduceScatter") == pytest.approx(
        tree.channels * tree.bw_inter * 0.75)
    boxed = search.System(**{**BOX.__dict__, "nvls": True})
    g = search.graph(boxed, "NVLS")
    intra = g.bw_intra * 0.85 * (g.channels - 1) / g.channels
    assert predict.bus_bandwidth(boxed, "NVLS", "Simple", "AllGather") == pytest.approx(
        g.channels * min(intra * 7 / 8, g.bw_inter))


def test_which_algorithms_nccl_considers_per_function():
    boxed = search.System(**{**BOX.__dict__, "nvls": True})
    assert predict.pick(PAIR, 2**20, function="Broadcast").algorithm == "Ring"
    assert predict.unavailable(BOX, "PAT", "AllGather") == "PAT runs with one GPU per node only (ncclPatEnable)"
    assert predict.unavailable(boxed, "NVLS", "AllGather") is None
    assert "across nodes" in predict.unavailable(search.System(**{**PAIR.__dict__, "nvls": True}), "NVLS", "AllGather")
    assert "no Tree" in predict.unavailable(PAIR, "Tree", "ReduceScatter")
    assert predict.unavailable(SINGLES, "PAT", "ReduceScatter") is None
    # at 64 nodes PAT's 8 + 6 x 4 + 64 x 2.8 us beats Ring/LL's 6.6 + 63 x 5 us
    assert predict.pick(SINGLES, 64, function="AllGather").algorithm == "PAT"
    assert predict.parse_nccl_list("allreduce:tree;allgather:pat", tables.ALGORITHMS, "NCCL_ALGO",
                                  "AllGather") == {"PAT"}


# ------------------------------------------------------------------ results, scenarios, CLI
@pytest.mark.parametrize("collective, factor", [("allreduce", 2 * 7 / 8), ("reduce_scatter", 7 / 8),
                                                ("all_gather", 7 / 8), ("broadcast", 1), ("reduce", 1),
                                                ("all_to_all", 7 / 8), ("send_recv", 1)])
def test_bus_bandwidth_is_nccl_tests_convention(collective, factor):
    """nccl-tests src/*.cu GetBw: busbw = algbw x factor, algbw = size / time."""
    result = simulate(switch(8), "auto", 2**24, collective=collective, model="ideal")
    assert result.collective == collective
    assert result.algbw_GBps == pytest.approx(2**24 / result.time_s / 1e9)
    assert result.busbw_GBps == pytest.approx(result.algbw_GBps * factor)
    assert COLLECTIVES[collective].busbw_factor(8) == pytest.approx(factor)


def test_point_to_point_collectives_run_direct_under_auto():
    result = simulate(CLUSTER, "auto", 2**20, collective="all_to_all")
    assert result.algorithm == "direct" and result.auto["nccl_pick"]["algorithm"] == "SendRecv"


def test_scenario_collective_and_its_errors(tmp_path, cli):
    topology = {"name": "box", "generate": {"kind": "nvswitch", "gpus": 8}}
    good = tmp_path / "ag.yaml"
    good.write_text(json.dumps({"name": "ag", "topology": topology, "collective": "all_gather",
                                "sizes": ["1 MiB", "64 MiB"], "algorithms": ["ring", "nvls", "auto"]}))
    result = cli("run", good, "--json", "-")
    assert result.exit_code == 0, result.stderr
    runs = json.loads(result.stdout)["runs"]
    assert {r["collective"] for r in runs} == {"all_gather"} and len(runs) == 6
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ntopology: {name: box, generate: {kind: nvswitch, gpus: 8}}\n"
                   "collective: all_gather\nsize: 1 MiB\nalgorithms: [ring, tree]\n")
    result = cli("run", bad)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "bad.yaml:5: algorithms[1]: unknown algorithm 'tree' for all_gather" in result.stderr


def test_cli_collective_option_on_the_headline_scenario(cli, root):
    result = cli("run", root / "scenarios/cross_rack.yaml", "-c", "reduce_scatter", "-s", "1 MiB")
    assert result.exit_code == 0, result.stderr
    assert "ReduceScatter on 64 GPUs" in result.stdout and "ring" in result.stdout
    assert "not shown for reduce_scatter" in result.stdout  # the DDP step needs AllReduces
    # and in the JSON too (fuzz k #108: only the table said what -c left out)
    as_json = json.loads(cli("run", root / "scenarios/cross_rack.yaml", "-c", "reduce_scatter", "-s", "1 MiB",
                             "--json", "-").stdout)
    assert [w["message"] for w in as_json["warnings"] if w["link"] == "--collective"] == [
        "not run for reduce_scatter (it has no such algorithm): tree, hierarchical, ps",
        "the scenario's training step is a data-parallel step of AllReduces: not shown for reduce_scatter"]
    listing = cli("algorithms", "-c", "all_to_all")
    assert listing.exit_code == 0 and "pairwise" in listing.stdout and "pxn" in listing.stdout


def test_a_collective_without_the_file_s_algorithms_says_nccl_s_pick_runs_instead(cli, tmp_path):
    """Fuzz round au, L3: -c all_to_all on a file of algorithms: [ring] said ring was not run,
    and ran NCCL's pick in its place without a word."""
    path = tmp_path / "ring.yaml"
    path.write_text("name: r\ntopology: {name: t, generate: {kind: nvswitch, gpus: 4}}\nsizes: [1 MiB]\n"
                    "algorithms: [ring]\n")
    result = json.loads(cli("run", path, "-c", "all_to_all", "--json", "-").stdout)
    assert [w["message"] for w in result["warnings"] if w["link"] == "--collective"] == [
        "not run for all_to_all (it has no such algorithm): ring; NCCL's pick (auto) runs in their place"]
    assert [run["algorithm"] for run in result["runs"]] == ["direct"]


# ------------------------------------------------------------------ the model's rows, simulated
def test_simulated_pat_and_nvls_keep_to_nccls_own_prediction():
    """Uncontended, a simulated NCCL algorithm costs what NCCL's model says (tuning.cc): PAT
    at bandwidth (each rank's sends over the whole collective share its cap, though the peer
    changes every step), NVLS AllGather at latency (its 25 us, not half)."""
    singles = topology_from_dict({"name": "s", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 16,
                                                            "gpus_per_host": 1}})
    system = search.system_of(singles)
    for size in (2**24, 2**30):
        simulated = simulate(singles, "pat", size, collective="all_gather").time_s
        assert simulated == pytest.approx(predict.predict(system, "PAT", "Simple", size, "AllGather"), rel=0.05)
    box = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8}})
    assert simulate(box, "nvls", 1024, collective="all_gather").time_s == pytest.approx(
        predict.predict(search.system_of(box), "NVLS", "Simple", 1024, "AllGather"), rel=0.01)


def test_an_all_to_all_picks_its_protocol_per_send():
    """NCCL picks LL for sends up to NCCL_P2P_LL_THRESHOLD (16 KiB): 128 KiB over 8 ranks
    is 16 KiB per peer."""
    box = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8}})
    assert simulate(box, "direct", 2**17, collective="all_to_all").protocol == "LL"
    assert simulate(box, "direct", 2**17 + 8, collective="all_to_all").protocol == "Simple"


def test_pxn_relays_through_the_receivers_rail_on_any_subset():
    topo = topology_from_dict({"name": "rails", "generate": {"kind": "rail_optimized", "nodes_per_unit": 2,
                                                             "gpus_per_node": 4}})
    first = [g for g in topo.gpus if topo.label(g, "host") == topo.label(topo.gpus[0], "host")]
    ranks = first + [g for g in topo.gpus if g not in first][2:]  # all of host 0, GPUs 2 and 3 of host 1
    from simnet.schedule.algorithms.exchange import pxn_relays

    assert pxn_relays(topo, ranks, np.array([0, 0, 4]), np.array([4, 1, 0])).tolist() == [2, -1, -1]


@pytest.mark.parametrize("document, line, message", [
    ("options: {pxn: false}\n", 5, "options.pxn: no allreduce algorithm takes pxn"),
    ("collective: all_gather\ntraining: {model: llama3_8b, efficiency: 0.5}\n", 5,
     "collective: training picks the collectives of its step itself"),
])
def test_settings_the_collective_would_ignore_are_refused(tmp_path, cli, document, line, message):
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: box, generate: {kind: nvswitch, gpus: 8}}\nsize: 1 MiB\n"
                    "algorithms: [auto]\n" + document)
    result = cli("run", path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert f"s.yaml:{line}: {message}" in result.stderr


def test_compare_refuses_options_of_different_collectives(tmp_path, cli, root):
    path = tmp_path / "a2a.yaml"
    path.write_text("name: a2a\ntopology: {name: box, generate: {kind: nvswitch, gpus: 8}}\n"
                    "collective: all_to_all\nsize: 64 MiB\n")
    result = cli("compare", path, root / "scenarios/single_node.yaml", "-o", tmp_path / "c.png")
    assert result.exit_code == 2
    assert "collective: option single_node runs allreduce, the options before it all_to_all" in result.stderr
    assert not (tmp_path / "c.png").exists()


def test_compare_rows_name_the_collective_they_time(tmp_path):
    """A comparison of ReduceScatter options: each row's collective_time_s is that
    collective's time at the largest size, as simulate gives it."""
    from simnet import load_scenario, simulate, topology_from_dict
    from simnet.run.compare import compare_scenarios

    path = tmp_path / "rs.yaml"
    path.write_text("name: rs\ntopology: {name: box, generate: {kind: nvswitch, gpus: 8}}\n"
                    "collective: reduce_scatter\nsizes: [1 MiB, 64 MiB]\nalgorithms: [ring]\n"
                    "variants: [{name: full}, {name: half, set: {topology.generate.gpu_bandwidth: 225 GB/s}}]\n")
    rows = {row["option"]: row for row in compare_scenarios([load_scenario(path)])}
    assert {row["collective"] for row in rows.values()} == {"reduce_scatter"}
    box = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8}})
    full = simulate(box, "ring", 2**26, collective="reduce_scatter")
    assert rows["full"]["collective_time_s"] == pytest.approx(full.time_s)
    assert rows["full"]["collective_size_bytes"] == 2**26
    assert rows["half"]["collective_time_s"] > rows["full"]["collective_time_s"]


@pytest.mark.parametrize("collective", ["reduce_scatter", "all_gather"])
def test_pat_is_refused_where_a_node_holds_several_gpus_as_nccl_has_it_off(collective):
    """Fuzz round ar, M1: PAT on hosts of several GPUs was answered (by `all` too) while NCCL
    enables it at one GPU per node only (ncclPatEnable: nNodes == nRanks) and NCCL_ALGO=PAT
    was refused there. Refused, naming the node; at one GPU per node it runs."""
    from simnet.errors import Unsupported

    with pytest.raises(Unsupported, match="pat runs at one GPU per node .* node 'r0h0' holds 4 of these GPUs"):
        build_schedule("pat", CLUSTER, 4096, ranks=CLUSTER.gpus[:8], collective=collective)
    check_collective(_build(collective, "pat", CLUSTER, 8, 4096), collective)  # (_build takes ALONE for pat)
