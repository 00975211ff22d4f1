"""PyTorch profiler (Kineto) traces as ``RankTrace``: what one rank's GPU did.

A Kineto trace is Chrome trace JSON (``.json`` or ``.json.gz``): ``traceEvents`` with GPU
activity (``cat`` kernel, gpu_memcpy, gpu_memset; ``args.stream``), the CUDA runtime
calls that launched it (``cuda_runtime``, linked by ``args.correlation``), profiler steps
(``ProfilerStep#N``) and, from PyTorch 2.1 with ``record_shapes``, each NCCL kernel's
collective in its args ("Collective name", "In msg nelems", "Out msg nelems", "dtype",
"Process Group Ranks", "Process Group Name", and a send's "Dst Rank" or a recv's "Src
Rank": torch/csrc/profiler/util.cpp, the keys Holistic Trace Analysis reads).
``distributedInfo`` gives the rank and world size.

What an operation waited for (``Op.deps``):

* the one before it on its stream (a stream runs in order);
* where the trace has CUDA synchronisation events (``cat`` cuda_sync, "Stream Wait
  Event", recorded with ``enable_cuda_sync_events``), exactly what they say: the first
  operation launched on the waiting stream after the wait waits for the last one launched
  on the recorded stream before its ``cudaEventRecord``;
* otherwise the *held-back rule*: an operation that was launched (its runtime call is in
  the trace) and whose stream was free, yet started only after an operation on another
  stream ended, waited for the last such operation to end. (PyTorch's ProcessGroupNCCL makes its stream wait for the
  caller's, and ``work.wait()`` the reverse, with events such a trace does not show.)

>>> trace = read_kineto_events({"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": [
...     {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "args": {"correlation": 2}},
...     {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 0, "dur": 1000, "args": {"stream": 7}},
...     {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ts": 1000, "dur": 500,
...      "args": {"stream": 20, "correlation": 2, "Collective name": "allreduce", "In msg nelems": 1024,
...               "Out msg nelems": 1024, "dtype": "Float", "Process Group Ranks": "[0, 1]",
...               "Process Group Name": "0"}}]}, "r0.json")
>>> [(op.name[:14], op.deps, op.comm and (op.comm.size_bytes, op.comm.algorithm, op.comm.protocol))
...  for op in trace.ops]
[('gemm', (), None), ('ncclDevKernel_', (0,), (4096, 'ring', 'LL'))]
"""

from __future__ import annotations

import bisect
import json
import math
import re
from dataclasses import replace
from pathlib import Path

from simnet.errors import InputError
from simnet.io.files import read_text
from simnet.workloads.trace import Comm, Op, RankTrace

__all__ = ["read_kineto", "read_kineto_events", "kernel_algorithm", "gpu_generation", "DTYPE_BYTES",
           "COLLECTIVE_NAMES"]

DTYPE_BYTES = {"Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2, "Char": 1,
               "Byte": 1, "Bool": 1, "ComplexFloat": 8, "ComplexDouble": 16, "ComplexHalf": 4,
               "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1, "UInt16": 2,
               "UInt32": 4, "UInt64": 8}
"""Bytes per element of each dtype as the profiler spells it (c10's ScalarType names)."""

COLLECTIVE_NAMES = {
    "allreduce": "allreduce", "allreduce_coalesced": "allreduce", "barrier": "allreduce",
    "allgather": "all_gather", "all_gather": "all_gather", "_allgather_base": "all_gather",
    "allgather_into_tensor_coalesced": "all_gather", "allgather_coalesced": "all_gather",
    "reduce_scatter": "reduce_scatter", "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "broadcast": "broadcast", "reduce": "reduce",
    "all_to_all": "all_to_all", "alltoall": "all_to_all", "alltoall_base": "all_to_all", "all_to_allv": "all_to_all",
}
"""ProcessGroupNCCL's "Collective name" for each call, as simnet's collective."""

_GPU_CATEGORIES = {"kernel": True, "gpu_memcpy": False, "gpu_memset": False}  # -> a faster GPU shortens it
_NCCL_KERNEL = re.compile(r"^(nccl|rccl)(Dev)?Kernel_")
_ALGO_PROTO = re.compile(r"_(RING|TREE|COLLNET_DIRECT|COLLNET_CHAIN|NVLS_TREE|NVLS|PAT)_(LL128|LL|SIMPLE)(?=_|\(|$)")
_ALGORITHMS = {"RING": "ring", "TREE": "tree", "COLLNET_DIRECT": "collnet_direct", "COLLNET_CHAIN": "collnet_chain",
               "NVLS": "nvls", "NVLS_TREE": "nvls_tree", "PAT": "pat"}
_PROTOCOLS = {"LL": "LL", "LL128": "LL128", "SIMPLE": "Simple"}
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_GENERATIONS = re.compile(r"\b(GB300|GB200|B300|B200|H200|H100|A100|L40S|V100|MI355X|MI325X|MI300X)", re.I)


def read_kineto(path: Path) -> RankTrace:
    """The ``RankTrace`` of one Kineto trace file; refused in one line if it is not one."""
    text = read_text(Path(path), "a PyTorch profiler trace (Kineto JSON, .json or .json.gz)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg} at line {exc.lineno}; expected a PyTorch profiler trace", path,
                         exc.lineno) from None
    return read_kineto_events(data, str(path))


def read_kineto_events(data: object, source: str) -> RankTrace:
    """The ``RankTrace`` of a parsed Kineto trace (see the module docstring)."""
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise InputError("no traceEvents list: not a PyTorch profiler (Kineto) trace", source)
    info = data.get("distributedInfo") or {}
    rank, world = _whole(info.get("rank"), 0), _whole(info.get("world_size"), None)
    launches: dict[int, float] = {}  # correlation -> CPU time of the runtime call (us)
    records: dict[int, float] = {}  # cudaEventRecord's correlation -> its CPU time (us)
    steps: list[tuple[float, float, str]] = []
    gpu: list[dict] = []
    waits: list[dict] = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat, args = str(e.get("cat", "")).lower(), e.get("args") or {}
        ts = _number(e.get("ts"))
        if ts is None:
            continue
        if cat == "cuda_runtime" or cat == "cuda_driver":
            corr = args.get("correlation")
            if isinstance(corr, int):
                launches[corr] = ts
                if e.get("name") == "cudaEventRecord":
                    records[corr] = ts
        elif cat in _GPU_CATEGORIES and isinstance(args.get("stream"), int):
            gpu.append(e)
        elif cat == "cuda_sync" and args.get("cuda_sync_kind") == "Stream Wait Event":
            waits.append(e)
        elif (match := _STEP.match(str(e.get("name", "")))) and cat in ("user_annotation", "cpu_op"):
            steps.append((ts, ts + (_number(e.get("dur")) or 0.0), f"ProfilerStep#{match.group(1)}"))
    if not gpu:
        raise InputError("the trace holds no GPU kernels (record it with ProfilerActivity.CUDA)", source)
    steps.sort()
    gpu.sort(key=lambda e: (_number(e["ts"]), _number(e.get("dur")) or 0.0))

    def launched(e: dict) -> float | None:
        """CPU time (us) of the runtime call that launched ``e``, None if the trace lacks it."""
        corr = (e.get("args") or {}).get("correlation")
        return launches.get(corr) if isinstance(corr, int) else None

    def step_of(t: float) -> int | None:
        if not steps:
            return 0
        k = bisect.bisect_right([s[0] for s in steps], t) - 1
        return k if k >= 0 and t <= steps[k][1] else None

    kept = [(e, step) for e in gpu if (step := step_of(_first(launched(e), _number(e["ts"])))) is not None]
    if not kept:
        raise InputError("no GPU work was launched inside the trace's profiler steps", source)
    origin = _number(kept[0][0]["ts"])
    ops: list[Op] = []
    for e, step in kept:
        args = e.get("args") or {}
        ts, dur = _number(e["ts"]), max(_number(e.get("dur")) or 0.0, 0.0)
        comm = _comm(e, rank, world, source) if _NCCL_KERNEL.match(str(e.get("name", ""))) else None
        launch = launched(e)
        ops.append(Op(str(e.get("name", "")), int(args["stream"]), (ts - origin) * 1e-6, dur * 1e-6, (), comm,
                      step, _GPU_CATEGORIES[str(e.get("cat")).lower()],
                      None if launch is None else (launch - origin) * 1e-6))
    deps = _dependencies(ops, waits, {c: (t - origin) * 1e-6 for c, t in launches.items()},
                         {c: (t - origin) * 1e-6 for c, t in records.items()})
    names = tuple(steps[k][2] for k in sorted({op.step for op in ops})) if steps else ()
    renumber = {s: k for k, s in enumerate(sorted({op.step for op in ops}))}
    ops = [replace(op, deps=tuple(sorted(d)), step=renumber[op.step]) for op, d in zip(ops, deps)]
    devices = data.get("deviceProperties") or []
    name = devices[0].get("name") if devices and isinstance(devices[0], dict) else None
    return RankTrace(rank, tuple(ops), source, world, name, names)


def _dependencies(ops: list[Op], waits: list[dict], launches: dict[int, float],
                  records: dict[int, float]) -> list[set[int]]:
    """Each op's waited-for ops (indices): stream order, then the trace's stream waits if
    it has any, else the held-back rule (module docstring). ``launches`` and ``records``:
    runtime calls' and event records' times (s, the ops' clock) by correlation."""
    deps: list[set[int]] = [set() for _ in ops]
    by_stream: dict[int, list[int]] = {}
    for i, op in enumerate(ops):
        line = by_stream.setdefault(op.stream, [])
        if line:
            deps[i].add(line[-1])
        line.append(i)
    if waits:
        launched_on = {s: sorted((_first(ops[i].launch_s, ops[i].start_s), i) for i in line)
                       for s, line in by_stream.items()}
        for w in waits:
            args = w.get("args") or {}
            waiting, on = args.get("stream"), args.get("wait_on_stream")
            t_wait = launches.get(args.get("correlation"))
            t_record = records.get(args.get("wait_on_cuda_event_record_corr_id"))
            if waiting not in launched_on or on not in launched_on or t_record is None or t_wait is None:
                continue
            before = [i for t, i in launched_on[on] if t <= t_record]
            after = [i for t, i in launched_on[waiting] if t >= t_wait]
            if before and after and ops[before[-1]].start_s <= ops[after[0]].start_s:
                deps[after[0]].add(before[-1])
        return deps
    ends = {s: sorted((ops[i].end_s, i) for i in line) for s, line in by_stream.items()}
    end_keys = {s: [x[0] for x in v] for s, v in ends.items()}
    for i, op in enumerate(ops):
        if op.launch_s is None:  # when it could have started is not known: nothing to infer
            continue
        free = max([ops[d].end_s for d in deps[i]] + [op.launch_s])
        best = None
        for s in ends:
            if s == op.stream:
                continue
            k = bisect.bisect_right(end_keys[s], op.start_s) - 1
            if k >= 0 and end_keys[s][k] > free and (best is None or end_keys[s][k] > ops[best].end_s):
                best = ends[s][k][1]
        if best is not None:
            deps[i].add(best)
    return deps


def _comm(e: dict, rank: int, world: int | None, source: str) -> Comm:
    """What an NCCL kernel exchanged, from the collective the profiler recorded on it."""
    args = e.get("args") or {}
    where = f"{e.get('name')} at ts {e.get('ts')}"
    name = args.get("Collective name")
    if name is None:
        raise InputError(f"{where} carries no collective (\"Collective name\", sizes, group): record the trace "
                         "with PyTorch 2.1 or later and record_shapes=True", source)
    collective = "send_recv" if name in ("send", "recv") else COLLECTIVE_NAMES.get(str(name))
    if collective is None:
        raise InputError(f"{where}: collective {name!r} is not one simnet replays (it replays "
                         f"{', '.join(sorted({*COLLECTIVE_NAMES, 'send', 'recv'}))})", source)
    dtype = args.get("dtype")
    if dtype not in DTYPE_BYTES:
        raise InputError(f"{where}: dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}", source)
    n_in, n_out = _whole(args.get("In msg nelems"), None), _whole(args.get("Out msg nelems"), None)
    if n_in is None or n_out is None or n_in < 0 or n_out < 0:
        raise InputError(f"{where}: \"In msg nelems\"/\"Out msg nelems\" must be whole numbers", source)
    if collective == "send_recv":
        return _point_to_point(args, str(name), rank, n_in * DTYPE_BYTES[dtype], where, source)
    group = _group(args, world, where, source)
    if rank not in group:
        raise InputError(f"{where}: its group {list(group)} does not hold this trace's rank {rank}", source)
    g, size = len(group), DTYPE_BYTES[dtype]
    if collective == "all_gather":  # nccl-tests' size: the whole output
        nbytes = max(n_out, n_in * g) * size
    elif collective == "reduce_scatter":  # the whole input
        nbytes = max(n_in, n_out * g) * size
    else:
        nbytes = n_in * size
    return Comm(collective, nbytes, group, str(args.get("Process Group Name", "default")),
                *kernel_algorithm(str(e.get("name", ""))))


def _point_to_point(args: dict, name: str, rank: int, nbytes: int, where: str, source: str) -> Comm:
    """A send (recv) with its peer's global rank ("Dst Rank" / "Src Rank"): a call of the
    pair (sender, receiver), so the k-th send from a to b is the k-th recv on b from a."""
    key = "Dst Rank" if name == "send" else "Src Rank"
    peer = _whole(args.get(key), None)
    if peer is None or peer < 0 or peer == rank:
        raise InputError(f"{where}: a {name} needs its peer's rank in {key!r} (PyTorch 2.4 and later record it)",
                         source)
    pair = (rank, peer) if name == "send" else (peer, rank)
    return Comm("send_recv", nbytes, pair, f"p2p {pair[0]}->{pair[1]}")


def kernel_algorithm(name: str) -> tuple[str | None, str | None]:
    """simnet's algorithm and NCCL's protocol an NCCL kernel's name says it ran
    (``ncclDevKernel_AllReduce_Sum_f32_RING_LL`` -> ring, LL); (None, None) if it names none."""
    match = _ALGO_PROTO.search(name)
    return (_ALGORITHMS[match.group(1)], _PROTOCOLS[match.group(2)]) if match else (None, None)


def _group(args: dict, world: int | None, where: str, source: str) -> tuple[int, ...]:
    """The group's global ranks: "Process Group Ranks", else start/stride/size, else the world."""
    ranks = args.get("Process Group Ranks")
    if isinstance(ranks, str):
        try:
            ranks = json.loads(ranks)
        except json.JSONDecodeError:
            ranks = None
    if isinstance(ranks, list) and ranks and all(isinstance(r, int) and not isinstance(r, bool) and r >= 0
                                                 for r in ranks):
        if len(set(ranks)) < len(ranks):
            raise InputError(f"{where}: \"Process Group Ranks\" {ranks} names a rank twice", source)
        return tuple(ranks)
    size = _whole(args.get("Group size"), None)
    start, stride = _whole(args.get("Global rank start"), None), _whole(args.get("Global rank stride"), None)
    if size and start is not None and stride:
        return tuple(start + k * stride for k in range(size))
    if size and size == world:
        return tuple(range(size))
    raise InputError(f"{where}: no \"Process Group Ranks\" (nor start, stride and size) to say which ranks "
                     "took part", source)


def _first(*values: float | None) -> float:
    return next(v for v in values if v is not None)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _whole(value: object, default):
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def gpu_generation(device_name: str | None) -> str | None:
    """simnet's GPU name (``simnet.topology.hardware.GPUS``) for a device name as the CUDA
    or HIP runtime reports it (``NVIDIA A100-PG509-200`` -> a100), None if it names none."""
    match = _GENERATIONS.search(device_name or "")
    return match.group(1).lower() if match else None
