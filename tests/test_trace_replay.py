"""Replaying profiler traces (simnet replay-trace): hand-written Kineto traces whose step
time follows on paper, the replay rules as properties, the public HTA trace, the CLI."""

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simnet.errors import InputError
from simnet.run.groups import simulate_groups
from simnet.run.replay_trace import read_traces, simulate_trace
from simnet.run.simulate import simulate
from simnet.topology.loader import topology_from_dict
from simnet.workloads.chakra import read_chakra, write_chakra
from simnet.workloads.kineto import read_kineto, read_kineto_events
from simnet.workloads.trace import Comm, Op, RankTrace, recorded, replay

ROOT = Path(__file__).resolve().parent.parent
WIDE = {**os.environ, "COLUMNS": "250"}  # test workers say 80: keep table cells on one line
HTA_TRACE = ROOT / "validation" / "traces" / "hta_nccl_data_rank0.json.gz"
SIZE = 64 * 2**20  # bytes of the hand-written AllReduce: 16 Mi floats


def _kernel(name, ts, dur, stream, corr=None, **args):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur,
            "args": {"stream": stream, **({"correlation": corr} if corr is not None else {}), **args}}


def _launch(ts, corr, name="cudaLaunchKernel"):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "ts": ts, "dur": 5, "args": {"correlation": corr}}


def _allreduce(ts, dur, nelems=SIZE // 4, ranks="[0, 1]", corr=None):
    return _kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", ts, dur, 20, corr,
                   **{"Collective name": "allreduce", "In msg nelems": nelems, "Out msg nelems": nelems,
                      "dtype": "Float", "Process Group Ranks": ranks, "Process Group Name": "0", "Group size": 2})


def _step_trace(rank, gemm_us, world=2):
    """A data-parallel step: a GEMM, the gradients' AllReduce once it is done (launched at
    once, held back by the GEMM), the optimizer 50 us after the AllReduce (launched early,
    held back by it). Times in us, as Kineto writes them."""
    return {"distributedInfo": {"rank": rank, "world_size": world},
            "deviceProperties": [{"name": "NVIDIA H100 80GB HBM3"}],
            "traceEvents": [
                {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 0, "dur": 20_000},
                _launch(5, 1), _launch(10, 2), _launch(15, 3),
                _kernel("gemm", 100, gemm_us, 7, 1),
                _allreduce(100 + gemm_us, 8_000, corr=2),
                _kernel("sgd", 100 + gemm_us + 8_000 + 50, 1_000, 7, 3)]}


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _two_gpus():
    return topology_from_dict({"name": "pair", "generate": {"kind": "nvswitch", "gpus": 2, "gpu": "h100"}})


def _pair_path(topo):
    """(bandwidth B/s, latency s) of the path gpu0 -> NVSwitch -> gpu1, read off the topology."""
    up, down = topo.graph.edges["gpu0", "nvswitch"], topo.graph.edges["nvswitch", "gpu1"]
    return up["bandwidth"], up["latency"] + down["latency"]


def test_two_ranks_step_is_the_late_rank_then_the_ring_then_the_gap(tmp_path):
    # rank 1's GEMM takes 2 ms, rank 0's 1 ms: the AllReduce starts when rank 1 is ready,
    # runs as the ideal ring over 2 GPUs does, 2(N-1) L + 2(N-1)/N S/B (docs/model.md), then
    # the recorded 50 us gap and the 1 ms optimizer
    paths = [_write(tmp_path, "r0.json", _step_trace(0, 1_000)), _write(tmp_path, "r1.json", _step_trace(1, 2_000))]
    topo = _two_gpus()
    bandwidth, path_latency = _pair_path(topo)
    ring = 2 * path_latency + SIZE / bandwidth  # the ideal ring over 2 GPUs: 2(N-1) L + 2(N-1)/N S/B
    replayed = simulate_trace(read_traces(paths), topo, model="ideal")
    assert replayed.step_s == pytest.approx(2e-3 + ring + 50e-6 + 1e-3, rel=1e-6)
    # recorded: rank 1's step, from its GEMM's start to the optimizer's end
    assert replayed.recorded_step_s == pytest.approx(2e-3 + 8e-3 + 50e-6 + 1e-3, rel=1e-9)
    (row,) = replayed.collectives
    assert (row["collective"], row["calls"], row["bytes"], row["recorded_ran"]) == ("allreduce", 1, SIZE, "ring/LL")
    # exposed: nothing computes while the AllReduce runs
    assert row["simulated_exposed_s"] == pytest.approx(ring, rel=1e-6)
    # at line rate the ring fills gpu0's port for the whole call; under NCCL's model its
    # ceilings (NVLink at a fraction of line rate) set the pace and no link fills
    assert replayed.bottlenecks == [{"link": "gpu0->nvswitch", "seconds": pytest.approx(ring, rel=1e-6)}]
    assert simulate_trace(read_traces(paths), topo, model="nccl").bottlenecks == []


def test_a_faster_gpu_shortens_kernels_not_copies():
    ops = (Op("gemm", 7, 0.0, 2e-3), Op("memcpy", 7, 2e-3, 1e-3, (0,), scaled=False))
    timeline = replay([RankTrace(0, ops, "r0.json")], lambda inst: 0.0, compute_speedup=4.0)
    assert timeline.end[0].tolist() == pytest.approx([0.5e-3, 1.5e-3])


def test_held_back_rule_finds_what_an_op_waited_for():
    trace = read_kineto_events(_step_trace(0, 1_000), "r0.json")
    names = [op.name.split("(")[0] for op in trace.ops]
    assert names == ["gemm", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "sgd"]
    # the AllReduce (launched at 10 us) waited for the GEMM; the optimizer for its stream
    # predecessor (the GEMM) and, held back past its launch, for the AllReduce
    assert trace.ops[1].deps == (0,)
    assert trace.ops[2].deps == (0, 1)


def test_an_op_that_started_before_the_other_stream_finished_did_not_wait_for_it():
    data = _step_trace(0, 1_000)
    data["traceEvents"].append(_kernel("unrelated", 3_000, 10, 9))  # on its own stream, mid-AllReduce
    trace = read_kineto_events(data, "r0.json")
    unrelated = next(op for op in trace.ops if op.name == "unrelated")
    assert unrelated.deps == ()


def test_stream_wait_events_are_taken_as_written():
    # with cuda_sync events the trace says which op waits: here the optimizer waits for the
    # GEMM's event only, not for the AllReduce it started after
    data = _step_trace(0, 1_000)
    data["traceEvents"] += [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "ts": 6, "dur": 1, "args": {"correlation": 40}},
        _launch(8, 41, "cudaStreamWaitEvent"),  # after the GEMM's record (6 us), before the AllReduce's launch
        {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "ts": 8, "dur": 1,
         "args": {"cuda_sync_kind": "Stream Wait Event", "stream": 20, "wait_on_stream": 7,
                  "wait_on_cuda_event_record_corr_id": 40, "correlation": 41}}]
    trace = read_kineto_events(data, "r0.json")
    assert trace.ops[1].deps == (0,)  # the AllReduce after the GEMM's event
    assert trace.ops[2].deps == (0,)  # the optimizer: its stream only


def _reference_times(traces, collective_s):
    """Times by the rules in their plainest form: sweep until nothing changes."""
    end = {t.rank: [None] * len(t.ops) for t in traces}
    by_rank = {t.rank: t for t in traces}

    def ready(rank, op):  # when the op may start: what it waited for and its launch, plus its gap
        launch = [op.launch_s] if op.launch_s is not None else []
        waited = [by_rank[rank].ops[d].end_s for d in op.deps] + launch
        now = [end[rank][d] for d in op.deps] + launch
        return (max(now) if now else 0.0) + max(op.start_s - (max(waited) if waited else 0.0), 0.0)

    changed = True
    while changed:
        changed = False
        for t in traces:
            for i, op in enumerate(t.ops):
                if end[t.rank][i] is not None or any(end[t.rank][d] is None for d in op.deps):
                    continue
                if op.comm is None:
                    end[t.rank][i] = ready(t.rank, op) + op.duration_s
                    changed = True
                    continue
                k = [j for j, o in enumerate(t.ops) if o.comm is not None].index(i)
                peers = [(r, [j for j, o in enumerate(by_rank[r].ops) if o.comm is not None][k]) for r in op.comm.group]
                if all(all(end[r][d] is not None for d in by_rank[r].ops[j].deps) for r, j in peers):
                    begin = max(ready(r, by_rank[r].ops[j]) for r, j in peers)
                    for r, j in peers:
                        end[r][j] = begin + collective_s
                    changed = True
    return end


@st.composite
def _traces(draw):
    """2-3 ranks of one group: compute on two streams, collectives in the same order on
    every rank, each op waiting for earlier ones at random (times made consistent)."""
    ranks = draw(st.integers(2, 3))
    shape = draw(st.lists(st.sampled_from(["compute", "comm"]), min_size=1, max_size=8))
    deps = [draw(st.sets(st.integers(0, i - 1), max_size=2)) if i else set() for i in range(len(shape))]
    traces = []
    for r in range(ranks):
        ops, t = [], 0.0
        for i, kind in enumerate(shape):
            t_ready = max([ops[d].end_s for d in deps[i]] + [0.0])
            start = max(t, t_ready) + draw(st.floats(0, 1e-3))
            duration = draw(st.floats(1e-6, 2e-3))
            launch = draw(st.one_of(st.none(), st.floats(-1e-3, start)))  # the host may launch before the origin
            comm = Comm("allreduce", 1024, tuple(range(ranks)), "0") if kind == "comm" else None
            ops.append(Op(f"{kind}{i}", 20 if comm else 7 + i % 2, start, duration, tuple(sorted(deps[i])), comm,
                          launch_s=launch))
            t = start
        traces.append(RankTrace(r, tuple(ops), f"r{r}.json"))
    return traces


@settings(max_examples=60, deadline=None)
@given(_traces(), st.floats(1e-6, 5e-3))
def test_replay_follows_the_rules(traces, collective_s):
    timeline = replay(traces, lambda inst: collective_s)
    reference = _reference_times(traces, collective_s)
    for t in traces:
        assert timeline.end[t.rank].tolist() == pytest.approx(reference[t.rank], rel=1e-12, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(_traces())
def test_replaying_a_lone_rank_with_its_recorded_times_gives_the_recording(traces):
    lone = [RankTrace(0, tuple(Op(o.name, o.stream, o.start_s, o.duration_s, o.deps,
                                  o.comm and Comm(o.comm.collective, o.comm.size_bytes, (0,), "0"),
                                  launch_s=o.launch_s) for o in traces[0].ops), "r0.json")]
    durations = [o.duration_s for o in lone[0].ops if o.comm is not None]
    timeline = replay(lone, lambda inst: durations[inst.k])
    assert timeline.start[0].tolist() == pytest.approx(recorded(lone).start[0].tolist(), abs=1e-15)


SHARED_UPLINK = {"name": "fabric", "generate": {
    "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 1, "gpus_per_host": 2, "spines": 1,
    "gpu": "h100", "nic_bandwidth": "400 Gb/s", "uplink_bandwidth": "400 Gb/s"}}
"""Two racks of one host of 2 GPUs under one spine: one uplink each way between the racks."""


def _pairs_traces(pairs: tuple[tuple[int, int], ...]) -> list:
    """Four ranks' data-parallel steps (``_step_trace``), each pair of ranks AllReducing at once."""
    traces = []
    for rank in range(4):
        group = str(list(next(pair for pair in pairs if rank in pair)))
        data = _step_trace(rank, 1_000, world=4)
        data["traceEvents"][5] = _allreduce(1_100, 8_000, ranks=group, corr=2)
        data["traceEvents"][5]["args"]["Process Group Name"] = "dp" + group
        traces.append(read_kineto_events(data, f"r{rank}.json"))
    return traces


def test_calls_of_one_size_by_disjoint_groups_at_once_share_the_fabric(tmp_path):
    # two pairs, each across the two racks of a fabric whose single spine uplink is shared:
    # their AllReduces overlap, so they run together and take simulate_groups' time
    topo = topology_from_dict(SHARED_UPLINK)
    gpus = topo.gpus  # r0h0-gpu0, r0h0-gpu1, r1h0-gpu0, r1h0-gpu1: ranks 0-3 in order
    replayed = simulate_trace(_pairs_traces(((0, 2), (1, 3))), topo, model="ideal")
    together = simulate_groups(topo, [[gpus[0], gpus[2]], [gpus[1], gpus[3]]], "allreduce", SIZE, model="ideal")
    alone = simulate_groups(topo, [[gpus[0], gpus[2]]], "allreduce", SIZE, model="ideal")
    assert together.time_s > 1.5 * alone.time_s  # the uplink is shared: a real effect to see
    assert replayed.step_s == pytest.approx(1e-3 + together.time_s + 50e-6 + 1e-3, rel=1e-6)


def test_a_trace_s_ranks_take_the_gpus_of_those_ranks_whatever_order_the_file_lists_them_in():
    # review 71 M1: the ranks' GPUs were put in the file's order, so the fabric above written
    # with its GPUs interleaved across racks (ranks 0, 2, 1, 3, each with its rank:) put the
    # pair [0, 1] across the racks, sharing the uplink with [2, 3]
    from simnet.topology.export import topology_as_dict

    generated = topology_from_dict(SHARED_UPLINK)
    written = topology_as_dict(generated)
    gpus = [{**node, "rank": rank} for rank, node in enumerate(n for n in written["nodes"] if n["kind"] == "gpu")]
    written["nodes"] = [gpus[0], gpus[2], gpus[1], gpus[3]] + [n for n in written["nodes"] if n["kind"] != "gpu"]
    interleaved = topology_from_dict(written)
    traces = _pairs_traces(((0, 1), (2, 3)))
    on_host = simulate_trace(traces, generated, model="ideal")
    assert simulate_trace(traces, interleaved, model="ideal").step_s == on_host.step_s
    pair = simulate_groups(generated, [generated.gpus[:2], generated.gpus[2:]], "allreduce", SIZE, model="ideal")
    assert on_host.step_s == pytest.approx(1e-3 + pair.time_s + 50e-6 + 1e-3, rel=1e-6)  # each pair inside its host


def test_dp_groups_share_the_fabric_bucket_by_bucket_when_one_group_runs_late(tmp_path):
    # the fabric above; each rank: a GEMM, two AllReduce buckets back to back, the optimizer
    # once the second is done. Group [1, 3]'s GEMM takes 1.5 ms, group [0, 2]'s 1 ms, so
    # [0, 2]'s second bucket starts while [1, 3]'s first still runs: bucket k of one group
    # runs with bucket k of the other (both take simulate_groups' time T), and the step is
    # the late group's: 1.5 ms + 2 T + 50 us + 1 ms
    topo = topology_from_dict(SHARED_UPLINK)
    gpus = topo.gpus
    traces = []
    for rank in range(4):
        group = "[0, 2]" if rank in (0, 2) else "[1, 3]"
        gemm = 1_000 if rank in (0, 2) else 1_500
        events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 0, "dur": 40_000},
                  _launch(5, 1), _launch(10, 2), _launch(12, 4), _launch(15, 3),
                  _kernel("gemm", 100, gemm, 7, 1),
                  _allreduce(100 + gemm, 8_000, ranks=group, corr=2),
                  _allreduce(100 + gemm + 8_000, 8_000, ranks=group, corr=4),
                  _kernel("sgd", 100 + gemm + 16_050, 1_000, 7, 3)]
        for e in events[6:8]:
            e["args"]["Process Group Name"] = "dp" + group
        traces.append(read_kineto_events({"distributedInfo": {"rank": rank, "world_size": 4},
                                          "traceEvents": events}, f"r{rank}.json"))
    together = simulate_groups(topo, [[gpus[0], gpus[2]], [gpus[1], gpus[3]]], "allreduce", SIZE, model="ideal")
    alone = simulate_groups(topo, [[gpus[0], gpus[2]]], "allreduce", SIZE, model="ideal")
    assert alone.time_s > 0.5e-3  # bucket 1 of [1, 3] starts (1.5 ms) before that of [0, 2] ends
    assert max(together.times_s) > 1.5 * alone.time_s
    replayed = simulate_trace(traces, topo, model="ideal")
    assert replayed.step_s == pytest.approx(1.5e-3 + 2 * max(together.times_s) + 50e-6 + 1e-3, rel=1e-6)


def test_missing_ranks_and_mismatched_calls_are_refused_in_one_line(tmp_path):
    r0 = _write(tmp_path, "r0.json", _step_trace(0, 1_000))
    with pytest.raises(InputError, match="rank 1 has no trace.*--ranks-per-trace") as refused:
        read_traces([r0])
    assert str(refused.value).startswith(f"{r0}: ")  # the trace whose world size says so (fuzz round au, L4)
    assert [t.rank for t in read_traces([r0], ranks_per_trace=2)] == [0, 1]
    other = _step_trace(1, 1_000)
    other["traceEvents"].append(_allreduce(20_000, 100))
    r1 = _write(tmp_path, "r1.json", other)
    with pytest.raises(InputError, match="different numbers of collective calls"):
        simulate_trace(read_traces([r0, r1]), _two_gpus())
    with pytest.raises(InputError, match="rank 0 is given twice"):
        read_traces([r0, r0])


@pytest.mark.parametrize("env, message", [
    ({"NCCL_IB_DISABLE": "1"}, "NCCL_IB_DISABLE=1 changes the transports"),
    ({"NCCL_ALGO": "Butterfly"}, "NCCL_ALGO='Butterfly': unknown name"),
    ({"RCCL_LL128_FORCE_ENABLE": "1"}, "RCCL_LL128_FORCE_ENABLE=1 is RCCL's"),
])
@pytest.mark.parametrize("model", [None, "ideal"])
def test_an_environment_simnet_does_not_follow_is_refused_before_any_pricing(tmp_path, env, message, model):
    """Fuzz 31f: NCCL_IB_DISABLE=1 (and an RCCL_ variable on NVIDIA GPUs) ended a replay as
    an internal error (exit 70), raised while the first call was priced. (Under model: ideal
    the calls still take NCCL's pick, which reads the environment.)"""
    traces = read_traces([_write(tmp_path, "r0.json", _step_trace(0, 1_000))], ranks_per_trace=2)
    if model == "ideal" and "NCCL_IB_DISABLE" in env:  # ideal follows no NCCL transport: nothing to refuse
        assert simulate_trace(traces, _two_gpus(), env=env, model=model).steps
        return
    with pytest.raises(InputError, match=re.escape(message)):
        simulate_trace(traces, _two_gpus(), env=env, **({"model": model} if model else {}))


@pytest.mark.parametrize("text, message", [
    ("not json", "not JSON"),
    ('{"traceEvents": {}}', "no traceEvents list"),
    ('{"traceEvents": []}', "no GPU kernels"),
    (json.dumps({"traceEvents": [_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 0, 5, 20)]}),
     "carries no collective"),
    (json.dumps({"traceEvents": [_kernel("ncclKernel_SendRecv", 0, 5, 20, **{
        "Collective name": "send", "In msg nelems": 1, "Out msg nelems": 1, "dtype": "Float"})]}),
     "a send needs its peer's rank in 'Dst Rank'"),
    (json.dumps({"traceEvents": [_kernel("ncclKernel_Gather", 0, 5, 20, **{
        "Collective name": "gather", "In msg nelems": 1, "Out msg nelems": 1, "dtype": "Float"})]}),
     '"gather" is not one simnet replays'),
    (json.dumps({"traceEvents": [_allreduce(0, 5, nelems=True)]}), "must be whole numbers"),
])
def test_what_is_not_a_trace_is_refused_in_one_line(tmp_path, text, message):
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as caught:
        read_kineto(path)
    assert "\n" not in str(caught.value)


def test_gzipped_traces_read_as_written(tmp_path):
    path = tmp_path / "r0.json.gz"
    path.write_bytes(gzip.compress(json.dumps(_step_trace(0, 1_000)).encode()))
    assert len(read_kineto(path).ops) == 3
    broken = tmp_path / "bad.json.gz"
    broken.write_bytes(b"\x1f\x8b not really")
    with pytest.raises(InputError, match="not a readable gzip file"):
        read_kineto(broken)


def test_the_public_hta_trace_replays_on_the_machine_it_was_recorded_on():
    # Holistic Trace Analysis' tests/data/nccl_parser_config (rank 0 of a 2-rank DDP job,
    # A100 SXM4 40GB, NCCL 2.17.1; validation/traces/README.md): a host-bound step (its GPU
    # idles 82 % of the time waiting for launches), so on a DGX A100 the replay must give the
    # recorded step times, whatever the AllReduces cost
    replayed = simulate_trace(read_traces([HTA_TRACE], ranks_per_trace=2), ROOT / "topologies" / "dgx_a100.yaml")
    assert [s["step"] for s in replayed.steps] == ["ProfilerStep#4", "ProfilerStep#5", "ProfilerStep#6"]
    for step in replayed.steps:
        assert step["simulated_s"] == pytest.approx(step["recorded_s"], rel=0.01)
    calls = {row["collective"]: row["calls"] for row in replayed.collectives}
    assert calls == {"allreduce": 15, "broadcast": 6}


def test_nccl_algo_and_proto_beside_as_recorded_are_said_to_change_nothing():
    """Fuzz round g #233: ``NCCL_ALGO=Ring ... --as-recorded`` ran every call with the
    algorithm and protocol its kernel recorded, so the variables restricted a pick no call
    took, without a word. Without --as-recorded they steer the pick: said where it is the same."""
    traces = read_traces([HTA_TRACE], ranks_per_trace=2)
    topology = ROOT / "topologies" / "dgx_a100.yaml"
    env = {"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL"}
    unread = [w.link for w in simulate_trace(traces, topology, as_recorded=True, env=env).warnings
              if w.kind == "key_unread"]
    # --as-recorded is judged against NCCL's pick without them (ring/Simple), which it changes: not said
    # (fuzz round av, M7: it was, true only beside them, so dropping all three moved the calls)
    assert unread == ["NCCL_ALGO", "NCCL_PROTO"]
    # without --as-recorded they steer NCCL's pick: each is said only where the replay without it is the same
    # (fuzz o: NCCL_ALGO=Ring on two A100s of one host, where NCCL picks Ring anyway, was never said)
    steered = simulate_trace(traces, topology, env=env)
    said = {w.link for w in steered.warnings if w.kind == "key_unread"}
    for name in env:
        plain = simulate_trace(traces, topology, env={k: v for k, v in env.items() if k != name})
        same = (plain.steps, plain.collectives) == (steered.steps, steered.collectives)
        assert (name in said) == same, name
    assert said == {"NCCL_ALGO"}  # LL moves the pick's protocol


def test_groups_beside_a_kineto_trace_name_the_option():
    """Fuzz round g #214: the refusal of --groups beside a Kineto trace did not name --groups."""
    with pytest.raises(InputError, match=r"^--groups: .*a Kineto trace names them itself.*leave --groups out"):
        read_traces([HTA_TRACE], ranks_per_trace=2, groups={"a": [0, 1]})


def test_ranks_per_trace_past_the_recorded_world_names_the_trace_and_the_option():
    """Fuzz round ai (LOW): --ranks-per-trace 8 on a trace of a 2-rank job was refused in a
    line naming neither the trace nor the option."""
    with pytest.raises(InputError) as refused:
        read_traces([HTA_TRACE], ranks_per_trace=8)
    assert str(HTA_TRACE) in str(refused.value) and "ranks 2-7 lie beyond it (--ranks-per-trace 8 makes each trace " \
        "stand for 8 ranks; the trace records a world of 2)" in str(refused.value)


@pytest.mark.parametrize("groups", [{"x": [0, 1]}, {"world": [0]}, {"world": [0, 1]}, {"x": [0, 1], "world": [0, 1]}])
def test_groups_no_call_of_a_chakra_trace_names_are_said_to_change_nothing(groups):
    """Fuzz round ah: --groups naming a group none of the trace's calls names (a typo, or
    'world', the name the table shows for calls that name no group) changed nothing, unsaid.
    Said (not refused, the review: a dump of every process group of a job lists groups one
    trace need not run), with the replay the same as without --groups."""
    said = read_traces([CHAKRA_TRACE], ranks_per_trace=2, groups=groups)
    plain = read_traces([CHAKRA_TRACE], ranks_per_trace=2)
    assert [op.comm for op in said[0].ops if op.comm] == [op.comm for op in plain[0].ops if op.comm]
    (note,) = [n for n in said[0].notes if n.startswith("--groups")]
    assert all(repr(name) in note for name in groups) and note.endswith("changed nothing") and not plain[0].notes


def test_cli_replays_and_writes_json_and_a_perfetto_trace(tmp_path):
    paths = [_write(tmp_path, f"r{r}.json", _step_trace(r, 1_000)) for r in (0, 1)]
    out = subprocess.run([sys.executable, "-m", "simnet", "replay-trace", *map(str, paths), "-t",
                          str(ROOT / "topologies" / "dgx_h100.yaml"), "--json", "-"],
                         capture_output=True, text=True, check=True, env=WIDE)
    data = json.loads(out.stdout)
    assert data["ranks"] == 2 and data["steps"][0]["step"] == "ProfilerStep#3"
    assert data["step_s"]["simulated"] < data["step_s"]["recorded"]  # 64 MiB over NVLink is far under 8 ms
    trace = tmp_path / "replay.json"
    out = subprocess.run([sys.executable, "-m", "simnet", "replay-trace", *map(str, paths), "-t",
                          str(ROOT / "topologies" / "dgx_h100.yaml"), "--trace", str(trace)],
                         capture_output=True, text=True, env=WIDE)
    assert out.returncode == 0, out.stderr
    assert "ProfilerStep#3" in out.stdout and "allreduce" in out.stdout
    events = json.loads(trace.read_text())["traceEvents"]
    processes = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert processes == {"rank 0 recorded", "rank 1 recorded", "rank 0 simulated", "rank 1 simulated"}
    slices = [e for e in events if e["ph"] == "X"]
    assert len(slices) == 12 and {e["cat"] for e in slices} == {"compute", "communication"}
    bad = subprocess.run([sys.executable, "-m", "simnet", "replay-trace", str(paths[0]), "-t",
                          str(ROOT / "topologies" / "dgx_h100.yaml")], capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert np.isfinite(data["step_s"]["simulated"])


CHAKRA_TRACE = ROOT / "validation" / "traces" / "chakra_feeder_tests.0.et.gz"


def _chakra_rank(folder, rank, gemm_us):
    """A hand-written Chakra ET: GEMM, the 64 MiB AllReduce after it, the optimizer after
    that 50 us later (start times in us, as Chakra's converter writes them)."""
    return write_chakra(Path(folder) / f"step.{rank}.et", [
        {"id": 10, "name": "gemm", "start_time_micros": 100, "duration_micros": gemm_us},
        {"id": 11, "name": "ncclKernel_AllReduce_RING_SIMPLE_Sum_float", "type": "COMM_COLL_NODE", "data_deps": [10],
         "start_time_micros": 100 + gemm_us, "duration_micros": 8_000,
         "attr": {"comm_type": 0, "comm_size": SIZE, "pg_name": "dp", "is_cpu_op": False}},
        {"id": 12, "name": "sgd", "data_deps": [11], "start_time_micros": 100 + gemm_us + 8_050,
         "duration_micros": 1_000}])


def test_a_chakra_step_gives_the_same_closed_form(tmp_path):
    paths = [_chakra_rank(tmp_path, 0, 1_000), _chakra_rank(tmp_path, 1, 2_000)]
    topo = _two_gpus()
    bandwidth, path_latency = _pair_path(topo)
    ring = 2 * path_latency + SIZE / bandwidth  # the ideal ring over 2 GPUs: 2(N-1) L + 2(N-1)/N S/B
    replayed = simulate_trace(read_traces(paths), topo, model="ideal")
    assert replayed.step_s == pytest.approx(2e-3 + ring + 50e-6 + 1e-3, rel=1e-6)
    assert replayed.recorded_step_s == pytest.approx(2e-3 + 8e-3 + 50e-6 + 1e-3, rel=1e-9)
    (row,) = replayed.collectives
    assert (row["group"], row["ranks"], row["recorded_ran"]) == ("dp", 2, "ring/Simple")


def test_chakra_groups_name_the_ranks_of_each_process_group(tmp_path):
    paths = [_chakra_rank(tmp_path, r, 1_000) for r in range(4)]
    with pytest.raises(InputError, match="group 'dp'.*list of distinct ranks"):
        read_traces(paths, groups={"dp": [0, 0]})
    pairs = read_traces([paths[0], paths[2]], ranks_per_trace=2, groups={"dp": [0, 2]})
    assert [t.rank for t in pairs] == [0, 1, 2, 3] and pairs[0].ops[1].comm.group == (0, 2)
    with pytest.raises(InputError, match="rank 1's .* names group \\[0, 2\\], which does not hold rank 1"):
        simulate_trace(pairs, topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 4}}))
    with pytest.raises(InputError, match="a Kineto trace names them itself"):
        read_traces([_write(tmp_path, "r0.json", _step_trace(0, 1_000))], groups={"dp": [0]})


def test_the_public_chakra_trace_reads_as_its_converter_wrote_it():
    # mlcommons/chakra tests/data/feeder_tests_trace.tar.gz (validation/traces/README.md):
    # 3,664 nodes converted from a PyTorch DDP run, 7 NCCL kernels among its COMM_COLL_NODEs
    # (the c10d calls, is_cpu_op, run as host work); no start times, so no recorded step
    trace = read_chakra(CHAKRA_TRACE, world=2)
    assert len(trace.ops) == 3664
    calls = sorted((op.comm.collective, op.comm.size_bytes) for op in trace.ops if op.comm)
    # the same bucket sizes as the HTA trace's AllReduces: 2,049,000 floats and 7,875,584
    assert calls.count(("allreduce", 2_049_000 * 4)) == 1 and ("allreduce", 7_875_584 * 4) in calls
    assert [c for c, _ in calls].count("broadcast") == 2
    replayed = simulate_trace([trace, trace.as_rank(1)], ROOT / "topologies" / "dgx_a100.yaml")
    assert replayed.recorded_step_s is None and replayed.steps[0]["recorded_s"] is None
    # with durations only the step is the longest path through the data dependencies: at
    # least the busiest op's time, at most every op's end to end
    durations = [op.duration_s for op in trace.ops if op.comm is None]
    assert max(durations) <= replayed.step_s <= sum(durations) + sum(r["simulated_s"] for r in replayed.collectives)


@pytest.mark.parametrize("data, message", [
    (b"\x05abc", "runs past the end"),
    (b"\xff\xff", "cut short"),
])
def test_what_is_not_a_chakra_trace_is_refused_in_one_line(tmp_path, data, message):
    path = tmp_path / "bad.0.et"
    path.write_bytes(data)
    with pytest.raises(InputError, match=message):
        read_chakra(path)


def test_chakra_nodes_simnet_cannot_replay_are_refused(tmp_path):
    send = write_chakra(tmp_path / "p2p.0.et", [{"id": 1, "name": "send", "type": "COMM_SEND_NODE",
                                                 "attr": {"comm_size": 8}}])
    with pytest.raises(InputError, match="point-to-point send/recv: not replayed yet"):
        read_chakra(send)
    gather = write_chakra(tmp_path / "g.0.et", [{"id": 1, "name": "gather", "type": "COMM_COLL_NODE",
                                                 "attr": {"comm_type": 3, "comm_size": 8}}])
    with pytest.raises(InputError, match="comm_type 3 is not one simnet replays"):
        read_chakra(gather)
    with pytest.raises(InputError, match="NAME.RANK.et"):
        read_chakra(tmp_path / "noname.et")


def test_a_trace_from_another_gpu_says_its_kernels_keep_their_times(tmp_path):
    # recorded on H100 (989 TFLOP/s dense BF16, datasheet), replayed on a DGX A100 (312)
    paths = [_write(tmp_path, f"r{r}.json", _step_trace(r, 1_000)) for r in (0, 1)]
    replayed = simulate_trace(read_traces(paths), ROOT / "topologies" / "dgx_a100.yaml")
    (warning,) = [w for w in replayed.warnings if w.kind == "gpu_differs"]
    assert "NVIDIA H100 80GB HBM3" in warning.message and f"--gpu-speedup {312 / 989:.2f}" in warning.message
    same = simulate_trace(read_traces(paths), ROOT / "topologies" / "dgx_h100.yaml")
    assert not [w for w in same.warnings if w.kind == "gpu_differs"]
    faster = simulate_trace(read_traces(paths), ROOT / "topologies" / "dgx_a100.yaml", gpu_speedup=312 / 989)
    assert not [w for w in faster.warnings if w.kind == "gpu_differs"]
    # (fuzz round av, L5: --gpu-speedup 1, given, still said "give --gpu-speedup")
    kept = simulate_trace(read_traces(paths), ROOT / "topologies" / "dgx_a100.yaml", gpu_speedup=1)
    assert not [w for w in kept.warnings if w.kind == "gpu_differs"] and kept.step_s == replayed.step_s


def _p2p(name, peer_key, peer, ts, dur, nelems=SIZE // 4):
    return _kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", ts, dur, 30, None, **{
        "Collective name": name, "In msg nelems": nelems, "Out msg nelems": nelems, "dtype": "Float",
        peer_key: peer, "Process Group Name": "pp"})


def test_a_pipeline_stage_waits_for_the_send_of_the_one_before(tmp_path):
    # rank 0 computes 1 ms and sends 64 MiB to rank 1; rank 1's recv was posted at once and
    # waits; its next kernel starts 20 us after the data arrived. Ideal send over 2 GPUs on
    # one NVSwitch: L + S/B (the path's latency, one link's rate)
    first = {"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": [
        _launch(5, 1), _kernel("forward", 100, 1_000, 7, 1), _p2p("send", "Dst Rank", 1, 1_100, 3_000)]}
    second = {"distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": [
        _launch(5, 1), _launch(10, 2), _p2p("recv", "Src Rank", 0, 100, 4_000) | {"args": {
            **_p2p("recv", "Src Rank", 0, 100, 4_000)["args"], "correlation": 1}},
        _kernel("forward", 4_120, 1_000, 7, 2)]}
    paths = [_write(tmp_path, "r0.json", first), _write(tmp_path, "r1.json", second)]
    topo = _two_gpus()
    bandwidth, path_latency = _pair_path(topo)
    send = path_latency + SIZE / bandwidth
    traces = read_traces(paths)
    assert traces[1].ops[1].deps == (0,)  # the forward waited for the recv
    replayed = simulate_trace(traces, topo, model="ideal")
    (row,) = replayed.collectives
    assert (row["collective"], row["group"], row["calls"]) == ("send_recv", "p2p 0->1", 1)
    # rank 1's step: from its recv's start (rank 0's forward, 1 ms, then the send) to its forward's end
    assert replayed.step_s == pytest.approx(1e-3 + send + 20e-6 + 1e-3, rel=1e-6)


def test_a_call_the_environment_leaves_nccl_nothing_to_run_is_refused_in_one_line(cli, root, tmp_path):
    """Fuzz round l (#343): NCCL_ALGO=Tree on a trace with a Broadcast, which NCCL runs by Ring
    only (its tuner has no Tree Broadcast: NCCL fails the call), ended as an internal error
    (exit 70); it is refused in one line naming the call, and nothing is written."""
    out = tmp_path / "r.json"
    result = cli("replay-trace", root / "validation/traces/hta_nccl_data_rank0.json.gz", "--ranks-per-trace", "2",
                 "-t", root / "topologies/dgx_a100.yaml", "--json", out, env={"NCCL_ALGO": "Tree"})
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("the trace's broadcast of ") and \
        "NCCL_ALGO=Tree leaves nothing NCCL could run here: NCCL has no Tree Broadcast" in result.stderr
    assert not out.exists()


def test_a_send_recv_variable_no_call_of_the_trace_reads_is_said(cli, root):
    """Fuzz round l (#460): NCCL_MAX_P2P_NCHANNELS=1 on a trace of collectives changed nothing
    (only NCCL's send/recv reads it) and replay-trace said nothing, where a run says key_unread."""
    args = ("replay-trace", root / "validation/traces/hta_nccl_data_rank0.json.gz", "--ranks-per-trace", "2", "-t",
            root / "topologies/dgx_a100.yaml", "--json", "-")
    plain, varied = cli(*args), cli(*args, env={"NCCL_MAX_P2P_NCHANNELS": "1"})
    assert plain.exit_code == varied.exit_code == 0, varied.stderr
    with_it, without = json.loads(varied.stdout), json.loads(plain.stdout)
    said = [w for w in with_it["warnings"] if w["kind"] == "key_unread"]
    assert [w["link"] for w in said] == ["NCCL_MAX_P2P_NCHANNELS"] and "changed nothing" in said[0]["message"]
    assert with_it["step_s"] == without["step_s"] and not without["warnings"]


@pytest.mark.parametrize("topology, variable, value, said", [
    ("dgx_h100.yaml", "NCCL_NVLS_ENABLE", "0", True),  # NCCL picks the ring for every call anyway (fuzz m #137)
    ("dgx_a100.yaml", "NCCL_MAX_NCHANNELS", "64", True),  # above the channels NCCL opens (#134, #140)
    ("dgx_a100.yaml", "NCCL_MAX_NCHANNELS", "1", False),  # one channel: slower
])
def test_a_followed_variable_no_call_of_the_trace_reads_is_said(cli, root, topology, variable, value, said):
    """Fuzz round m (#134-#144): a replay under NCCL_MAX_NCHANNELS, NCCL_MIN_NCHANNELS or
    NCCL_NVLS_ENABLE that moved no call said nothing (replay-trace left the variables that
    steer NCCL's plan out). Said now where every call's plan and NCCL's pick are the same
    without it, and then the replay's answer is the one without it."""
    args = ("replay-trace", root / "validation/traces/hta_nccl_data_rank0.json.gz", "--ranks-per-trace", "2", "-t",
            root / "topologies" / topology, "--json", "-")
    plain, varied = cli(*args), cli(*args, env={variable: value})
    assert plain.exit_code == varied.exit_code == 0, varied.stderr
    with_it, without = json.loads(varied.stdout), json.loads(plain.stdout)
    warned = [w for w in with_it["warnings"] if w["kind"] == "key_unread" and w["link"] == variable]
    same = with_it["step_s"] == without["step_s"] and with_it["collectives"] == without["collectives"]
    assert bool(warned) == said and same == said
    if warned:
        assert "changed nothing" in warned[0]["message"]


def test_replay_trace_says_what_changed_nothing_as_run_does(tmp_path, cli):
    """Fuzz round aa F6: replay-trace (and calibrate) printed none of the topology's unread
    keys that ``simnet run`` says (an nvswitch box's NIC keys), nor that a ``--placement``
    had nothing to choose where the traces' ranks take every GPU. Said, and true: the JSON
    is the same without the keys and with the packed placement."""
    paths = [_write(tmp_path, f"r{r}.json", _step_trace(r, 1_000)) for r in (0, 1)]
    (tmp_path / "nics.yaml").write_text("name: b\ngenerate: {kind: nvswitch, gpus: 2, nic_bandwidth: 10 Gb/s}\n")
    (tmp_path / "bare.yaml").write_text("name: b\ngenerate: {kind: nvswitch, gpus: 2}\n")
    said = cli("replay-trace", *paths, "-t", tmp_path / "nics.yaml", "--placement", "spread",
               "--json", tmp_path / "a.json")
    assert said.exit_code == 0, said.stderr
    printed = " ".join(said.stdout.split())
    assert "warning key_unread: generate.nic_bandwidth" in printed
    assert "--placement spread: the traces' 2 ranks take every GPU of b" in printed
    plain = cli("replay-trace", *paths, "-t", tmp_path / "bare.yaml", "--json", tmp_path / "b.json")
    assert plain.exit_code == 0 and "warning" not in plain.stdout
    assert json.loads((tmp_path / "a.json").read_text()) == json.loads((tmp_path / "b.json").read_text())


def test_as_recorded_that_changes_no_call_is_said():
    """Fuzz round ad F8a: under ``model: ideal`` (no protocol) --as-recorded ran every call as
    NCCL's pick does, byte for byte, without a word. Said where every call is the same, and
    true; not under the nccl model, where the recorded LL is not the pick's Simple."""
    traces = read_traces([HTA_TRACE], ranks_per_trace=2)
    topology = ROOT / "topologies" / "dgx_a100.yaml"
    ideal = simulate_trace(traces, topology, as_recorded=True, model="ideal")
    assert [w.link for w in ideal.warnings if w.kind == "key_unread"] == ["--as-recorded"]
    assert ideal.steps == simulate_trace(traces, topology, model="ideal").steps
    nccl = simulate_trace(traces, topology, as_recorded=True)
    assert "--as-recorded" not in [w.link for w in nccl.warnings]
    assert nccl.collectives != simulate_trace(traces, topology).collectives


def test_a_trace_s_ranks_in_one_host_say_the_fabric_keys_they_leave_unread(cli, root):
    """Fuzz round ad F8b: two ranks packed on one host of two_racks.yaml read none of its
    network keys (the JSON the same at 100 Gb/s and 1:1), and replay-trace said nothing where
    gpus: on one host says them."""
    result = cli("replay-trace", HTA_TRACE, "--ranks-per-trace", "2", "-t", root / "topologies/two_racks.yaml")
    assert result.exit_code == 0, result.stderr
    printed = " ".join(result.stdout.split())
    for key in ("nic_bandwidth", "oversubscription", "spines"):
        assert f"warning key_unread: generate.{key} (" in printed and "the traces' 2 ranks' GPUs are one NVLink " \
            "domain" in printed


def test_as_recorded_beside_a_variable_nccl_s_pick_cannot_run_under_is_no_internal_error():
    """Fuzz round ae F4: --as-recorded with NCCL_ALGO=Tree on a trace holding a Broadcast (NCCL
    has no Tree Broadcast) ended as an internal error (exit 70): judging whether --as-recorded
    changed anything ran NCCL's pick, which the variable leaves nothing. It counts there."""
    replayed = simulate_trace(read_traces([HTA_TRACE], ranks_per_trace=2), ROOT / "topologies" / "dgx_a100.yaml",
                              as_recorded=True, env={"NCCL_ALGO": "Tree"})
    assert [w.link for w in replayed.warnings if w.kind == "key_unread"] == ["NCCL_ALGO"]


def test_a_placement_that_chooses_what_packed_does_is_said_of_a_trace(cli, root):
    """Fuzz round ae F2: ``--placement spread`` of two ranks on one DGX A100 chose packed's GPUs
    (the JSON byte for byte the same) without a word."""
    args = ("replay-trace", HTA_TRACE, "--ranks-per-trace", "2", "-t", root / "topologies/dgx_a100.yaml")
    spread, packed = cli(*args, "--placement", "spread"), cli(*args)
    assert spread.exit_code == packed.exit_code == 0, spread.stderr
    assert "warning key_unread: --placement spread chose the GPUs packed does" in " ".join(spread.stdout.split())


def test_a_chakra_trace_alone_is_not_taken_for_a_one_rank_job_whose_collectives_are_free(cli, root, tmp_path):
    """Fuzz round ar, L2: the public Chakra trace of rank 0, given alone, replayed as a job of
    one rank: its five AllReduces (36.68 ms recorded on NCCL's ring) took 0 ns, without a word,
    where a Kineto trace names its world and a missing rank is refused. Refused in one line
    saying what to give; with --ranks-per-trace it replays."""
    alone = cli("replay-trace", CHAKRA_TRACE, "-t", root / "topologies/dgx_h100.yaml")
    assert alone.exit_code == 2 and alone.stderr.count("\n") == 1, alone.stderr
    assert alone.stderr.startswith(f"{CHAKRA_TRACE}: a trace of rank 0 alone stands for a job of one rank")
    assert cli("replay-trace", CHAKRA_TRACE, "--ranks-per-trace", "8", "-t",
               root / "topologies/dgx_h100.yaml").exit_code == 0
    # review 79, L2: process groups naming the ranks it lacks said only that they were no ranks 0..0
    (tmp_path / "groups.yaml").write_text("g: [0, 1]\n")
    grouped = cli("replay-trace", CHAKRA_TRACE, "--groups", tmp_path / "groups.yaml", "-t",
                  root / "topologies/dgx_h100.yaml")
    assert grouped.exit_code == 2 and grouped.stderr == alone.stderr, grouped.stderr
    (tmp_path / "dup.yaml").write_text("g: [0, 0]\n")  # review 83: a group wrong in itself says so
    dup = cli("replay-trace", CHAKRA_TRACE, "--groups", tmp_path / "dup.yaml", "-t", root / "topologies/dgx_h100.yaml")
    assert dup.exit_code == 2 and "g: expected a list of distinct ranks 0..0, not [0, 0]" in dup.stderr, dup.stderr
    # fuzz round au, L4: a group of ranks the job lacks was refused naming neither file nor line
    (tmp_path / "bad.yaml").write_text("g: [0, 1]\nh: [0, 9]\n")
    bad = cli("replay-trace", CHAKRA_TRACE, "--ranks-per-trace", "8", "--groups", tmp_path / "bad.yaml", "-t",
              root / "topologies/dgx_h100.yaml")
    assert bad.exit_code == 2 and bad.stderr == f"{tmp_path / 'bad.yaml'}:2: h: expected a list of distinct ranks " \
                                                "0..7, not [0, 9]\n", bad.stderr


def test_as_recorded_onto_a_cluster_without_the_recorded_algorithm_s_hardware_runs_nccl_s_pick(tmp_path):
    """Fuzz round ar, L4: a trace whose AllReduce ran CollNetChain, replayed --as-recorded onto
    a cluster without SHARP switches, was refused whole in a line naming neither the trace nor
    the call, where an algorithm simnet does not run at all falls back to NCCL's pick with a
    recorded_algorithm warning. A recorded algorithm the cluster cannot run does the same."""
    trace = _step_trace(0, 1_000)
    trace["traceEvents"][-2]["name"] = "ncclDevKernel_AllReduce_Sum_f32_COLLNET_CHAIN_SIMPLE(ncclDevComm*)"
    path = _write(tmp_path, "collnet.0.json", trace)
    replayed = simulate_trace(read_traces([path], ranks_per_trace=2), _two_gpus(), as_recorded=True)
    said = [w.message for w in replayed.warnings if w.kind == "recorded_algorithm"]
    assert said and said[0].startswith("allreduce ran collnet_chain in the recording, which cannot run here (")
    assert said[0].endswith("; NCCL's pick ran instead")
    plain = simulate_trace(read_traces([path], ranks_per_trace=2), _two_gpus())
    assert replayed.steps == plain.steps
    # review 79: NCCL_ALGO steers that pick, so it is not said to change nothing, nor is --as-recorded
    steered = simulate_trace(read_traces([path], ranks_per_trace=2), _two_gpus(), as_recorded=True,
                             env={"NCCL_ALGO": "Tree"})
    assert "NCCL_ALGO" not in {w.link for w in steered.warnings if w.kind == "key_unread"}
    assert [w.message for w in replayed.warnings if w.link == "--as-recorded"] == [
        "--as-recorded changed nothing here: every call runs the algorithm NCCL picks, in the same time (each whose "
        "recorded algorithm could not run took NCCL's pick: recorded_algorithm)"]
    # review 79, M1: calls of disjoint groups at once (replayed together) fall back alike
    pairs = _pairs_traces(((0, 2), (1, 3)))
    for trace in pairs:
        for op in trace.ops:
            if op.comm is not None:
                object.__setattr__(op.comm, "algorithm", "collnet_chain")
    together = simulate_trace(pairs, topology_from_dict(SHARED_UPLINK), as_recorded=True)
    assert together.step_s == simulate_trace(_pairs_traces(((0, 2), (1, 3))), topology_from_dict(SHARED_UPLINK)).step_s


def test_a_row_of_calls_that_ran_different_algorithms_names_every_one(tmp_path):
    """Fuzz round av, M4: a group's calls of 1 KiB and of 64 MiB took different protocols,
    and the row named only the most common (the first, on a tie): every one is named now,
    the one that took most of the row's time first."""
    def trace(rank):
        return {"distributedInfo": {"rank": rank, "world_size": 2},
                "deviceProperties": [{"name": "NVIDIA H100 80GB HBM3"}],
                "traceEvents": [
                    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 0, "dur": 20_000},
                    _launch(5, 1), _launch(10, 2), _launch(15, 3),
                    _allreduce(100, 50, nelems=256, corr=1), _allreduce(200, 8_000, corr=2),
                    _kernel("sgd", 9_000, 1_000, 7, 3)]}

    paths = [_write(tmp_path, f"r{rank}.json", trace(rank)) for rank in (0, 1)]
    replayed = simulate_trace(read_traces(paths), _two_gpus())
    (row,) = replayed.collectives
    ran = {call: simulate(_two_gpus(), "auto", size) for call, size in (("small", 1024), ("large", SIZE))}
    names = {call: f"{r.algorithm}/{r.protocol}" for call, r in ran.items()}
    assert names["small"] != names["large"]  # (else the row has one to name)
    assert row["ran"] == f"{names['large']}, {names['small']}"


def test_a_trace_replayed_under_a_calibration_profile_names_it_and_says_what_a_run_says(tmp_path):
    """Fuzz round av, M5: the profile refined every call and the replay said nothing of it: not
    its name, nor a term no call reads (a network factor on one NVSwitch box), nor a factor the
    wire cut short, all of which a run of the same call says."""
    from simnet.model.calibration import Calibration

    paths = [_write(tmp_path, "r0.json", _step_trace(0, 1_000)), _write(tmp_path, "r1.json", _step_trace(1, 2_000))]
    profile = Calibration(bandwidth=2.0, network_bandwidth=2.0, source="x.cal.yaml")
    replayed = simulate_trace(read_traces(paths), _two_gpus(), calibration=profile)
    run = simulate(_two_gpus(), "auto", SIZE, calibration=profile)
    kinds = {(w.kind, w.link) for w in run.warnings}
    assert ("key_unread", "x.cal.yaml: network_bandwidth") in kinds and "calibration_capped" in {k for k, _ in kinds}
    assert kinds <= {(w.kind, w.link) for w in replayed.warnings}
    assert replayed.to_dict()["calibration"] == "x.cal.yaml"
    assert simulate_trace(read_traces(paths), _two_gpus(), model="ideal", calibration=profile).to_dict()[
        "calibration"] is None


def test_nccl_proto_and_as_recorded_are_never_both_said_where_only_each_beside_the_other_changes_nothing():
    """Fuzz round av, M7: on the HTA trace (its kernels ran ring/LL), NCCL_PROTO=LL and
    --as-recorded were each said to change nothing, each true only beside the other: a user
    dropping both moved the AllReduces 2.4x. What is said to change nothing, dropped together,
    answers alike."""
    traces = read_traces([HTA_TRACE], ranks_per_trace=2)
    topology = ROOT / "topologies" / "dgx_a100.yaml"
    both = simulate_trace(traces, topology, as_recorded=True, env={"NCCL_PROTO": "LL"})
    said = {w.link for w in both.warnings if w.kind == "key_unread"} & {"NCCL_PROTO", "--as-recorded"}
    assert said and said != {"NCCL_PROTO", "--as-recorded"}
    dropped = simulate_trace(traces, topology, as_recorded="--as-recorded" not in said,
                             env={} if "NCCL_PROTO" in said else {"NCCL_PROTO": "LL"})
    assert [r["simulated_s"] for r in dropped.collectives] == [r["simulated_s"] for r in both.collectives]


def test_what_is_said_to_change_nothing_beside_as_recorded_may_be_dropped_one_by_one(tmp_path):
    """Review 86, H1: a recording of NCCL's own pick (ring/Simple) under NCCL_PROTO=LL said
    both changed nothing; dropping --as-recorded alone ran ring/LL, 2.4x slower. Each that is
    said may be dropped, alone or with the others, and the calls answer alike."""
    def simple(rank):
        trace = _step_trace(rank, 1_000 * (rank + 1))
        for event in trace["traceEvents"]:
            event["name"] = event["name"].replace("RING_LL", "RING_SIMPLE")
        return trace

    traces = read_traces([_write(tmp_path, f"r{r}.json", simple(r)) for r in (0, 1)])

    def replayed(as_recorded: bool, env: dict):
        return simulate_trace(traces, _two_gpus(), as_recorded=as_recorded, env=env)

    given = replayed(True, {"NCCL_PROTO": "LL"})
    said = {w.link for w in given.warnings if w.kind == "key_unread"}
    assert said == {"NCCL_PROTO"}  # (--as-recorded counts: without it, NCCL_PROTO=LL's pick runs)
    assert replayed(True, {}).collectives == given.collectives


def test_the_calibration_words_of_a_replay_are_its_calls_own(tmp_path):
    """Review 86, H3: judging --as-recorded priced NCCL's pick (ring/Simple) too, left it in
    the pricer's cache, and the replay said that run's calibration_capped although its calls
    ran ring/LL, which fills no link."""
    from simnet.model.calibration import Calibration

    paths = [_write(tmp_path, f"r{r}.json", _step_trace(r, 1_000 * (r + 1))) for r in (0, 1)]
    profile = Calibration(bandwidth=1.3, source="x.cal.yaml")
    replayed = simulate_trace(read_traces(paths), _two_gpus(), calibration=profile, as_recorded=True)
    assert [row["ran"] for row in replayed.collectives] == ["ring/LL"]
    own = simulate(_two_gpus(), "ring", SIZE, env={"NCCL_PROTO": "LL"}, calibration=profile).warnings
    assert not any(w.kind == "calibration_capped" for w in own)
    assert not any(w.kind == "calibration_capped" for w in replayed.warnings)


def test_ranks_whose_profilers_named_their_steps_otherwise_are_said_to_be_paired_in_order(tmp_path):
    """Fuzz round av, L8: rank 0 recorded ProfilerStep#3, rank 1 ProfilerStep#7; the replay
    paired them under rank 0's name without a word."""
    other = _step_trace(1, 2_000)
    other["traceEvents"][0]["name"] = "ProfilerStep#7"
    paths = [_write(tmp_path, "r0.json", _step_trace(0, 1_000)), _write(tmp_path, "r1.json", other)]
    replayed = simulate_trace(read_traces(paths), _two_gpus())
    notes = [w.message for w in replayed.warnings if w.kind == "trace_note"]
    assert [s["step"] for s in replayed.steps] == ["ProfilerStep#3"]
    assert len(notes) == 1 and "r1.json names its steps ProfilerStep#7 where" in notes[0]
    alike = [_write(tmp_path, f"s{r}.json", _step_trace(r, 1_000)) for r in (0, 1)]
    assert not [w for w in simulate_trace(read_traces(alike), _two_gpus()).warnings if w.kind == "trace_note"]
