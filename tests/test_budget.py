"""A run too large for the memory simnet may use is refused in one line before it allocates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simnet import simulate
from simnet.errors import Unsupported
from simnet.io.budget import TooLarge, gigabytes, memory_budget
from simnet.schedule.algorithms.hierarchical import INNER_ALGORITHMS
from simnet.schedule.catalog import algorithms_for, build_schedule
from simnet.schedule.kinds import COLLECTIVES
from simnet.schedule.transfers import TRANSFER_BYTES, count_transfers, transfer_bytes
from simnet.topology.loader import topology_from_dict

EFA = topology_from_dict({"name": "efa", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2,
                                                       "gpus_per_host": 8, "gpu": "h100", "transport": "efa",
                                                       "nics_per_host": 16, "nic_bandwidth": "200 Gb/s"}})


def _cluster(gpus: int):
    hosts = max(1, gpus // 8)
    return topology_from_dict({"name": "ls", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": hosts,
                                                           "gpus_per_host": min(gpus, 8), "spines": 2}})


def test_budget_is_free_memory_or_the_override(monkeypatch):
    monkeypatch.delenv("SIMNET_MEMORY", raising=False)
    assert 0 < memory_budget()
    monkeypatch.setenv("SIMNET_MEMORY", "3 GiB")
    assert memory_budget() == 3 * 2**30
    monkeypatch.setenv("SIMNET_MEMORY", "lots")
    with pytest.raises(ValueError, match="SIMNET_MEMORY"):
        memory_budget()


@pytest.mark.parametrize("gpus, options", [(16, {}), (32, {"chunk_size": 2**20}), (24, {"channels": 3}),
                                           (8, {"chunk_size": 100_000})])
def test_ring_knows_its_transfer_count_before_building(monkeypatch, gpus, options):
    """The ring's up-front count is exact: a budget of exactly its transfers builds, one byte
    less is refused by the count ("needs N", not "needs over N"), before any transfer exists."""
    topo = _cluster(gpus)
    n = len(build_schedule("ring", topo, 2**26, **options))
    monkeypatch.setenv("SIMNET_MEMORY", f"{n * TRANSFER_BYTES} B")
    assert len(build_schedule("ring", topo, 2**26, **options)) == n
    monkeypatch.setenv("SIMNET_MEMORY", f"{n * TRANSFER_BYTES - 1} B")
    with pytest.raises(TooLarge, match=rf"^ring over {gpus} GPUs at 64 MiB needs {n:,} transfers"):
        build_schedule("ring", topo, 2**26, **options)


@pytest.mark.parametrize("algorithm", ["tree", "hierarchical", "halving_doubling", "direct", "ps"])
def test_every_algorithm_stops_at_the_budget(monkeypatch, algorithm):
    topo = _cluster(16)
    n = len(build_schedule(algorithm, topo, 2**26))
    monkeypatch.setenv("SIMNET_MEMORY", f"{n * transfer_bytes(algorithm)} B")
    assert len(build_schedule(algorithm, topo, 2**26)) == n
    monkeypatch.setenv("SIMNET_MEMORY", f"{n * transfer_bytes(algorithm) - 1} B")
    with pytest.raises(TooLarge, match=rf"^{algorithm} over 16 GPUs at 64 MiB needs"):
        build_schedule(algorithm, topo, 2**26)


def test_cli_refuses_in_one_line_and_writes_nothing(cli, root, tmp_path):
    out = tmp_path / "r.json"
    result = cli("run", root / "scenarios/cross_rack.yaml", "-a", "direct", "-s", "1 GiB", "--json", out,
                 env={"SIMNET_MEMORY": "1 MiB"})
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "cross_rack.yaml: direct over 64 GPUs at 1 GiB needs" in lines[0]
    assert "fewer GPUs, a larger chunk_size" in lines[0]
    assert not out.exists()


@pytest.mark.parametrize("algorithm", ["ring", "tree", "direct", "naive", "hierarchical", "halving_doubling"])
def test_the_estimate_bounds_the_memory_a_run_really_takes(algorithm, tmp_path):
    """Run in a fresh process: the peak resident memory the run adds stays below transfers x
    transfer_bytes(algorithm) + 64 MB of fixed tables, so the guard refuses before the kernel
    would have to. Fixed costs are left out of what it adds: the interpreter, the loaded
    topology and the compiled network's code (loaded first: whether a run takes the compiled
    network depends on how long SimPy took, so on the machine's load)."""
    import subprocess
    import sys

    script = f"""
import gc, resource
from simnet import simulate, topology_from_dict
from simnet.engine.replay import compiled_available, replay
from simnet.schedule.catalog import build_schedule
topo = topology_from_dict({{"name": "ls", "generate": {{"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 4,
                                                        "gpus_per_host": 8, "spines": 4}}}})
count = len(build_schedule("{algorithm}", topo, 2**28))
replay(build_schedule("{algorithm}", topo, 2**10), topo, compiled=compiled_available())  # load the compiled code
gc.collect()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
simulate(topo, "{algorithm}", 2**28, model="ideal")
print(count, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    count, extra = map(int, out.split())
    assert extra <= count * transfer_bytes(algorithm) + 64e6, (count, extra)


@pytest.mark.parametrize("collective, algorithm", [(c, a) for c in COLLECTIVES for a in algorithms_for(c)])
def test_a_count_without_building_is_the_built_schedule_s_length(collective, algorithm):
    """``count_transfers`` (what a scenario checks before its first run) runs the algorithm's
    own builder, keeping nothing: every schedule of every collective counts as long as it is."""
    for topo in (_cluster(16), EFA):  # (EFA: the sends across hosts striped over each GPU's two NICs, counted)
        try:
            built = len(build_schedule(algorithm, topo, 2**24, collective=collective))
        except Unsupported:
            continue
        assert count_transfers(lambda t=topo: build_schedule(algorithm, t, 2**24, collective=collective)) == built


def test_hierarchical_answers_with_the_way_between_groups_that_fits(monkeypatch):
    """A ring between groups too large for the memory leaves hierarchical the tree's run,
    whose time it is (the same run as ``inner: tree``), said in a warning, not a refusal."""
    topo = _cluster(32)
    tree, ring = (len(build_schedule("hierarchical", topo, 2**26, inner=inner)) for inner in ("tree", "ring"))
    assert tree < ring
    monkeypatch.setenv("SIMNET_MEMORY", f"{tree * transfer_bytes('hierarchical')} B")
    result = simulate(topo, "hierarchical", 2**26)
    assert result.time_s == simulate(topo, "hierarchical", 2**26, inner="tree").time_s
    assert result.variants == {"inner": {"tree": result.time_s}}
    said = [w for w in result.warnings if w.kind == "variant_too_large"]
    assert len(said) == 1 and "a ring between groups was not simulated" in said[0].message
    # its count is known from its first piece (every piece adds as many), so the need is said exactly
    need, have = gigabytes(ring * transfer_bytes("hierarchical"), tree * transfer_bytes("hierarchical"))
    assert f"it needs ~{need} GB, more than the {have} GB" in said[0].message
    monkeypatch.setenv("SIMNET_MEMORY", f"{min(tree, ring) * transfer_bytes('hierarchical') - 1} B")
    with pytest.raises(TooLarge):  # neither fits: refused
        simulate(topo, "hierarchical", 2**26)


def test_auto_leaves_out_a_candidate_too_large_and_refuses_a_pick_too_large(monkeypatch):
    """A ReduceScatter over eight one-GPU hosts: at 16 MiB NCCL picks the ring (a lane
    program, no schedule built) and times PAT beside it, at 64 KiB it picks PAT, whose
    schedule does not fit here: left out beside the ring, refused as the pick."""
    topo = topology_from_dict({"name": "ls", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 4,
                                                           "gpus_per_host": 1, "spines": 2}})
    pat = min(len(build_schedule("pat", topo, size, collective="reduce_scatter")) for size in (2**16, 2**24))
    monkeypatch.setenv("SIMNET_MEMORY", f"{(pat - 1) * transfer_bytes('pat')} B")
    result = simulate(topo, "auto", 2**24, collective="reduce_scatter")
    assert result.algorithm == "ring" and list(result.auto["candidates"]) == ["ring"]
    assert result.time_s == simulate(topo, "ring", 2**24, collective="reduce_scatter").time_s
    said = [w.message for w in result.warnings if w.kind == "candidate_too_large"]
    assert len(said) == 1 and said[0].startswith("auto: pat was not simulated beside NCCL's pick")
    with pytest.raises(TooLarge, match="^pat over 8 GPUs at 64 KiB"):
        simulate(topo, "auto", 2**16, collective="reduce_scatter")


def test_a_scenario_refuses_a_run_too_large_before_any_run(monkeypatch, tmp_path):
    """hierarchical at 1 GiB does not fit (in either way between groups); the runs at 1 MiB
    before it would: none is simulated (the scenario counts every run's schedule first), and
    the refusal names the large one."""
    import simnet.run.scenario as scenario_module
    from simnet.spec.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: ls, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 4, "
                    "gpus_per_host: 8, spines: 2}}\nsizes: [1 MiB, 1 GiB]\nalgorithms: [tree, hierarchical]\n")
    scenario = load_scenario(path)
    small = max(len(build_schedule("hierarchical", scenario.topology, 2**20, inner=inner)) for inner in ("tree", "ring"))
    monkeypatch.setenv("SIMNET_MEMORY", f"{small * transfer_bytes('hierarchical')} B")
    calls = []
    monkeypatch.setattr(scenario_module, "simulate", lambda *a, **k: calls.append(a))
    with pytest.raises(TooLarge, match="^hierarchical over 32 GPUs at 1 GiB"):
        scenario_module.run_scenario(scenario)
    assert calls == []


def test_compare_refuses_an_option_too_large_before_simulating_any(monkeypatch, tmp_path):
    """Fuzz round t #292: compare simulated its first variant, then refused the second as too
    large for the memory. Every option's runs are counted first: nothing is simulated."""
    import simnet.run.sweep.evaluate as evaluate
    from simnet.run.compare import CompareError, compare_scenarios
    from simnet.spec.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: t, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 6, "
                    "gpus_per_host: 4, gpu: h200}}\nsizes: [4 MiB]\nalgorithms: [hierarchical]\n"
                    "variants:\n  - {name: ok, set: {options.chunk_size: 256 KiB}}\n"
                    "  - {name: fine, set: {options.chunk_size: 16 KiB}}\n")
    scenario = load_scenario(path)

    def transfers(chunk: int) -> int:
        return max(len(build_schedule("hierarchical", scenario.topology, 4 * 2**20, inner=inner, chunk_size=chunk))
                   for inner in ("tree", "ring"))

    assert transfers(2**18) < transfers(2**14)
    monkeypatch.setenv("SIMNET_MEMORY", f"{transfers(2**18) * transfer_bytes('hierarchical')} B")
    simulated = []
    monkeypatch.setattr(evaluate, "simulate", lambda *a, **k: simulated.append(a))
    with pytest.raises(CompareError, match="the point options.chunk_size=16 KiB at 24 GPUs: hierarchical over 24 GPUs "
                                           "at 4 MiB needs") as refused:
        compare_scenarios([scenario])
    assert refused.value.loc == ("variants", 1) and simulated == []


def test_compare_says_an_option_answered_by_one_way_between_groups(monkeypatch, tmp_path):
    """Fuzz round t #251: where hierarchical's ring between groups did not fit the memory,
    ``simnet run`` says so (``variant_too_large``) but compare's row looked whole."""
    from simnet.run.compare import compare_scenarios, option_findings
    from simnet.spec.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: ls, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 4, "
                    "gpus_per_host: 8, spines: 2}}\nsizes: [64 MiB]\nalgorithms: [hierarchical]\n"
                    "variants:\n  - {name: two, set: {}}\n  - {name: four, set: {topology.generate.spines: 4}}\n")
    topo = _cluster(32)
    tree, ring = (len(build_schedule("hierarchical", topo, 2**26, inner=inner)) for inner in ("tree", "ring"))
    assert tree < ring
    monkeypatch.setenv("SIMNET_MEMORY", f"{tree * transfer_bytes('hierarchical')} B")
    said = option_findings(compare_scenarios([load_scenario(path)]))
    assert [(f.kind, f.message.split(":")[0]) for f in said] == [("variant_too_large", "option two"),
                                                                  ("variant_too_large", "option four"),
                                                                  # (one rack: its spines build nothing)
                                                                  ("key_unread", "option four answers as option two "
                                                                                 "does, every run to the picosecond")]


def test_compare_says_a_workload_s_iteration_time_rests_on_one_way_between_groups(monkeypatch, tmp_path):
    """Fuzz round u (cause E): ranked by a workload's iteration time, whose 64 MiB bucket's
    hierarchical ran its tree between groups only, compare's rows said nothing."""
    from simnet.run.compare import compare_scenarios, option_findings
    from simnet.spec.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntopology: {name: ls, generate: {kind: leaf_spine, racks: 1, hosts_per_rack: 4, "
                    "gpus_per_host: 8, spines: 2}}\nsizes: [1 MiB]\nalgorithms: [hierarchical]\n"
                    "workload: {gradient_size: 64 MiB, compute_time: 10 ms, bucket_size: 64 MiB}\n"
                    "variants:\n  - {name: two, set: {}}\n  - {name: four, set: {topology.generate.spines: 4}}\n")
    tree, ring = (len(build_schedule("hierarchical", _cluster(32), 2**26, inner=inner)) for inner in ("tree", "ring"))
    assert tree < ring
    monkeypatch.setenv("SIMNET_MEMORY", f"{tree * transfer_bytes('hierarchical')} B")
    said = option_findings(compare_scenarios([load_scenario(path)]))
    assert [f.kind for f in said] == ["variant_too_large", "variant_too_large", "key_unread"]  # (four's spines)


def test_a_run_too_large_through_its_options_is_refused_on_their_line(tmp_path, cli):
    """Fuzz round ab F7: ``chunk_size: 1 B`` made a ps run too large for the memory, and the
    refusal named neither the key nor its line. On the line of the option without which the
    run fits (chunk_size here; channels, written too, is not what makes it large)."""
    (tmp_path / "a.yaml").write_text("name: s\ntopology:\n  name: t\n  generate: {kind: leaf_spine, racks: 2, "
                                     "hosts_per_rack: 1, gpus_per_host: 4}\nsizes: [1 MiB]\nalgorithms: [ps]\n"
                                     "options:\n  channels: 2\n  chunk_size: 1 B\n")
    refused = cli("run", tmp_path / "a.yaml", env={"SIMNET_MEMORY": "200 MB"})  # 1 MiB in 1 B pieces: millions
    assert refused.exit_code == 2 and refused.stderr.startswith(f"{tmp_path / 'a.yaml'}:9: options.chunk_size: ")
    assert refused.stderr.rstrip().endswith("(it fits without this option)")


UNEVEN = topology_from_dict({"name": "uneven", "nodes": [
    {"id": f"h{h}-g{g}", "kind": "gpu", "host": f"h{h}"} for h, gpus in enumerate((4, 2, 3)) for g in range(gpus)
] + [{"id": "sw", "kind": "switch"}], "links": [
    {"a": f"h{h}-g{g}", "b": "sw", "bandwidth": "50 GB/s", "latency": "1 us"}
    for h, gpus in enumerate((4, 2, 3)) for g in range(gpus)]})


@settings(max_examples=40, deadline=None)
@given(topology=st.sampled_from([_cluster(16), UNEVEN]), inner=st.sampled_from(sorted(INNER_ALGORITHMS)),
       size=st.integers(1, 5000), pieces=st.integers(1, 6))
def test_every_piece_of_hierarchical_adds_as_many_transfers(topology, inner, size, pieces):
    """What lets hierarchical refuse after its first piece (fuzz round ak, S6: at 1 B pieces
    it built for minutes before its budget stopped it): every piece adds as many transfers as
    the first, whatever its bytes (zero-byte transfers kept), for every way between groups
    and for groups of unequal sizes."""
    chunk = -(-size // pieces)
    whole = count_transfers(lambda: build_schedule("hierarchical", topology, size, inner=inner, chunk_size=chunk))
    first = count_transfers(lambda: build_schedule("hierarchical", topology, chunk, inner=inner, chunk_size=chunk))
    assert whole == first * -(-size // chunk)


def test_hierarchical_refuses_tiny_pieces_with_their_count_after_building_one(monkeypatch):
    """Fuzz round ak, S6: 1 MiB over 16 GPUs in 1 B pieces, 301,989,888 transfers: refused
    with the whole count ("needs N", not "needs more than ... where its build was stopped")
    from the first piece's."""
    monkeypatch.setenv("SIMNET_MEMORY", "1 GiB")
    per_piece = count_transfers(lambda: build_schedule("hierarchical", _cluster(16), 1, chunk_size=1))
    with pytest.raises(TooLarge, match=rf"^hierarchical over 16 GPUs at 1 MiB needs {per_piece * 2**20:,} transfers"):
        build_schedule("hierarchical", _cluster(16), 2**20, chunk_size=1)


def test_a_lane_program_whose_lanes_wait_for_every_gpu_asks_the_budget_first(monkeypatch):
    """Fuzz round au, M2: NVLS on one switch of N GPUs builds an N x N dependency matrix (each
    multicast lane waits for every GPU's reduction) that no estimate counted: 4,096 GPUs peaked
    at 1.30 GB under a 100 MiB budget, 100,000 died on numpy's allocation. Now refused first."""
    topo = topology_from_dict({"name": "s", "generate": {"kind": "nvswitch", "gpus": 1024, "gpu": "h100"}})
    monkeypatch.setenv("SIMNET_MEMORY", "50 MB")
    with pytest.raises(TooLarge, match="^a lane program over 1,024 GPUs whose 1,024 lanes each wait for 1,024 others"):
        simulate(topo, "nvls", 2**24)
    monkeypatch.setenv("SIMNET_MEMORY", "200 MB")  # what it takes (74 B an entry measured), allowed
    assert simulate(topo, "nvls", 2**24).time_s > 0

