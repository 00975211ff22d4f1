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
from simnet.units import SIZE_MAX
from simnet.workloads.trace import MAX_RANKS, Comm, Op, RankTrace

__all__ = ["read_kineto", "read_kineto_events", "kernel_algorithm", "gpu_generation", "DTYPE_BYTES",
           "COLLECTIVE_NAMES", "MAX_DURATION_US", "MAX_TIMESTAMP_US"]

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
MAX_DURATION_US = 86_400e6  # a GPU operation or profiler step longer than a day is no recording
MAX_TIMESTAMP_US = 1e17  # us since the epoch a timestamp may give (year 5138): beyond it, a corrupt field
_GENERATIONS = re.compile(r"\b(GB300|GB200|B300|B200|H200|H100|A100|L40S|V100|MI355X|MI325X|MI300X)", re.I)


def read_kineto(path: Path) -> RankTrace:
    """The ``RankTrace`` of one Kineto trace file; refused in one line if it is not one."""
    text = read_text(Path(path), "a PyTorch profiler trace (Kineto JSON, .json or .json.gz)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg} at line {exc.lineno}; expected a PyTorch profiler trace", path,
                         exc.lineno) from None
    except RecursionError:  # arrays nested thousands deep: no profiler writes them
        raise InputError("JSON nested too deep to read: not a PyTorch profiler trace", path) from None
    return read_kineto_events(data, str(path))


def read_kineto_events(data: object, source: str) -> RankTrace:
    """The ``RankTrace`` of a parsed Kineto trace (see the module docstring)."""
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise InputError("no traceEvents list: not a PyTorch profiler (Kineto) trace", source)
    rank, world = _rank_and_world(data.get("distributedInfo"), source)
    launches: dict[int, float] = {}  # correlation -> CPU time of the runtime call (us)
    records: dict[int, float] = {}  # cudaEventRecord's correlation -> its CPU time (us)
    steps: list[tuple[float, float, str]] = []
    gpu: list[dict] = []
    waits: list[dict] = []
    for k, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = str(e.get("cat", "")).lower()
        match = _STEP.match(str(e.get("name", ""))) if cat in ("user_annotation", "cpu_op") else None
        if cat not in ("cuda_runtime", "cuda_driver", "cuda_sync", *_GPU_CATEGORIES) and not match:
            continue  # an event simnet does not read
        where = f"traceEvents[{k}] ({str(e.get('name'))[:60]!r})"
        args = e.get("args")
        if args is None:
            args = {}
        elif not isinstance(args, dict):
            raise InputError(f"{where}: \"args\" must be an object, not {_shown(args)}", source)
        ts = _time_field(e, "ts", where, source)
        corr = args.get("correlation")
        if corr is not None and not _is_whole(corr):
            raise InputError(f"{where}: \"correlation\" must be a whole number, not {_shown(corr)}", source)
        if cat == "cuda_runtime" or cat == "cuda_driver":
            if corr is not None:
                launches[corr] = ts
                if e.get("name") == "cudaEventRecord":
                    records[corr] = ts
        elif cat in _GPU_CATEGORIES:
            if not _is_whole(args.get("stream")):
                raise InputError(f"{where}: a GPU operation needs its stream, a whole number, in args \"stream\" "
                                 f"(not {_shown(args.get('stream'))})", source)
            if not isinstance(e.get("name"), str):
                raise InputError(f"{where}: \"name\" must be a string (the kernel's name)", source)
            _time_field(e, "dur", where, source)
            gpu.append(e)
        elif cat == "cuda_sync":
            if args.get("cuda_sync_kind") == "Stream Wait Event":
                waits.append(e)
        else:
            steps.append((ts, ts + _time_field(e, "dur", where, source), f"ProfilerStep#{match.group(1)}"))
    if not gpu:
        raise InputError("the trace holds no GPU kernels (record it with ProfilerActivity.CUDA)", source)
    steps.sort()
    step_starts = [s[0] for s in steps]
    gpu.sort(key=lambda e: (e["ts"], e["dur"]))

    def launched(e: dict) -> float | None:
        """CPU time (us) of the runtime call that launched ``e``, None if the trace lacks it."""
        corr = (e.get("args") or {}).get("correlation")
        return launches.get(corr) if isinstance(corr, int) else None

    def step_of(t: float) -> int | None:
        if not steps:
            return 0
        k = bisect.bisect_right(step_starts, t) - 1
        return k if k >= 0 and t <= steps[k][1] else None

    kept = [(e, step) for e in gpu if (step := step_of(_first(launched(e), e["ts"]))) is not None]
    if not kept:
        raise InputError("no GPU work was launched inside the trace's profiler steps", source)
    origin = kept[0][0]["ts"]
    ops: list[Op] = []
    for e, step in kept:
        args = e.get("args") or {}
        ts, dur = e["ts"], e["dur"]
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
    return RankTrace(rank, tuple(ops), source, world, _device_name(data.get("deviceProperties"), source), names)


def _shown(value: object) -> str:
    """A value of the trace as its JSON says it (``true``, ``null``, ``"text"``), at most 40 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _rank_and_world(info: object, source: str) -> tuple[int, int | None]:
    """The trace's rank (0 if it names none) and world size (None if it names none), from
    ``distributedInfo``; refused in one line if mistyped or out of range."""
    if info is None:
        return 0, None
    if not isinstance(info, dict):
        raise InputError(f"\"distributedInfo\" must be an object (rank, world_size), not {_shown(info)}", source)
    rank, world = info.get("rank", 0), info.get("world_size")
    if not _is_whole(rank) or rank < 0:
        raise InputError(f"distributedInfo: \"rank\" must be a whole number >= 0, not {_shown(rank)}", source)
    if world is not None and (not _is_whole(world) or not 1 <= world <= MAX_RANKS):
        raise InputError(f"distributedInfo: \"world_size\" must be a whole number 1..{MAX_RANKS:,}, not "
                         f"{_shown(world)}", source)
    if world is not None and rank >= world:
        raise InputError(f"distributedInfo: rank {rank} lies beyond the job's world_size {world}", source)
    return rank, world


def _device_name(devices: object, source: str) -> str | None:
    """The recorded GPU's name (``deviceProperties[0].name``), None if the trace gives none."""
    if devices is None or devices == []:
        return None
    if not isinstance(devices, list) or not isinstance(devices[0], dict):
        raise InputError(f"\"deviceProperties\" must be a list of objects (one per GPU), not {_shown(devices)}", source)
    name = devices[0].get("name")
    if name is not None and not isinstance(name, str):
        raise InputError(f"deviceProperties[0]: \"name\" must be a string, not {_shown(name)}", source)
    return name


def _time_field(e: dict, key: str, where: str, source: str) -> float:
    """An event's ``ts`` or ``dur`` (us): a finite number, a ``dur`` from 0 to a day, a
    ``ts`` within 10^17 us of the clock's zero (Kineto's clock is the epoch's: ~1.7e15)."""
    value = e.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not (0 <= value <= MAX_DURATION_US if key == "dur" else abs(value) <= MAX_TIMESTAMP_US):  # NaN fails too
        bound = f"from 0 to {MAX_DURATION_US:.4g} us (a day)" if key == "dur" else f"within {MAX_TIMESTAMP_US:.0e} us"
        raise InputError(f"{where}: \"{key}\" must be a number of microseconds {bound}, not {_shown(value)}", source)
    value = float(value)
    e[key] = value
    return value


def _dependencies(ops: list[Op], waits: list[dict], launches: dict[int, float],
                  records: dict[int, float]) -> list[set[int]]:
    """Each op's waited-for ops (indices): stream order, then the trace's stream waits if
    it has any, else the held-back rule (module docstring). ``launches`` and ``records``:
    runtime calls' and event records' times (s, the ops' clock) by correlation. Times are
    compared in whole ns, the trace's resolution: rebased and summed in floating point, an end
    and a start written alike would otherwise compare by their rounding (fuzz round ar, M5)."""
    def ns(seconds: float) -> int:
        return round(seconds * 1e9)

    deps: list[set[int]] = [set() for _ in ops]
    by_stream: dict[int, list[int]] = {}
    for i, op in enumerate(ops):
        line = by_stream.setdefault(op.stream, [])
        if line:
            deps[i].add(line[-1])
        line.append(i)
    if waits:
        launched_on = {s: sorted((ns(_first(ops[i].launch_s, ops[i].start_s)), i) for i in line)
                       for s, line in by_stream.items()}
        launch_keys = {s: [t for t, _ in line] for s, line in launched_on.items()}
        for w in waits:
            args = w.get("args") or {}
            waiting, on = args.get("stream"), args.get("wait_on_stream")
            t_wait = launches.get(args.get("correlation"))
            t_record = records.get(args.get("wait_on_cuda_event_record_corr_id"))
            if not _is_whole(waiting) or not _is_whole(on) or waiting not in launched_on or on not in launched_on \
                    or t_record is None or t_wait is None:
                continue
            k_before = bisect.bisect_right(launch_keys[on], ns(t_record)) - 1  # last launched by the record
            k_after = bisect.bisect_left(launch_keys[waiting], ns(t_wait))  # first launched at or after the wait
            if k_before < 0 or k_after >= len(launch_keys[waiting]):
                continue
            before, after = launched_on[on][k_before][1], launched_on[waiting][k_after][1]
            if before < after and ns(ops[before].start_s) <= ns(ops[after].start_s):
                deps[after].add(before)
        return deps
    ends = {s: sorted((ns(ops[i].end_s), i) for i in line) for s, line in by_stream.items()}
    end_keys = {s: [x[0] for x in v] for s, v in ends.items()}  # (end, index) sorted: ties in list order
    for i, op in enumerate(ops):
        if op.launch_s is None:  # when it could have started is not known: nothing to infer
            continue
        free = max([ns(ops[d].end_s) for d in deps[i]] + [ns(op.launch_s)])
        best = None
        for s in ends:
            if s == op.stream:
                continue
            # the last op ending by op's start, and earlier in the list (zero-length ones may share its start)
            k = bisect.bisect_right(ends[s], (ns(op.start_s), i)) - 1
            if k >= 0 and end_keys[s][k] > free and (best is None or end_keys[s][k] > ns(ops[best].end_s)):
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
    collective = None if not isinstance(name, str) else "send_recv" if name in ("send", "recv") else \
        COLLECTIVE_NAMES.get(name)
    if collective is None:
        raise InputError(f"{where}: collective {_shown(name)} is not one simnet replays (it replays "
                         f"{', '.join(sorted({*COLLECTIVE_NAMES, 'send', 'recv'}))})", source)
    dtype = args.get("dtype")
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise InputError(f"{where}: dtype {_shown(dtype)} is not one of {', '.join(DTYPE_BYTES)}", source)
    n_in, n_out = args.get("In msg nelems"), args.get("Out msg nelems")
    if not _is_whole(n_in) or not _is_whole(n_out) or n_in < 0 or n_out < 0:
        raise InputError(f"{where}: \"In msg nelems\"/\"Out msg nelems\" must be whole numbers >= 0, not "
                         f"{n_in!r:.30}/{n_out!r:.30}", source)
    if max(n_in, n_out) * DTYPE_BYTES[dtype] > SIZE_MAX:
        raise InputError(f"{where}: {max(n_in, n_out):,} elements of {dtype} is over 1 PiB, the largest size "
                         "simnet simulates", source)
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
    if nbytes > SIZE_MAX:
        raise InputError(f"{where}: {nbytes:,} B over its {g} ranks is over 1 PiB, the largest size simnet "
                         "simulates", source)
    group_name = args.get("Process Group Name", "default")
    if not isinstance(group_name, str):
        raise InputError(f"{where}: \"Process Group Name\" must be a string, not {_shown(group_name)}", source)
    return Comm(collective, nbytes, group, group_name, *kernel_algorithm(str(e.get("name", ""))))


def _point_to_point(args: dict, name: str, rank: int, nbytes: int, where: str, source: str) -> Comm:
    """A send (recv) with its peer's global rank ("Dst Rank" / "Src Rank"): a call of the
    pair (sender, receiver), so the k-th send from a to b is the k-th recv on b from a."""
    key = "Dst Rank" if name == "send" else "Src Rank"
    peer = _whole(args.get(key), None)
    if peer is None or peer < 0 or peer == rank or peer >= MAX_RANKS:
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
    given = ranks = args.get("Process Group Ranks")
    limit = world if world is not None else MAX_RANKS
    for key in ("Group size", "Global rank start", "Global rank stride"):
        if args.get(key) is not None and not _is_whole(args[key]):
            raise InputError(f"{where}: \"{key}\" {json.dumps(args[key])[:40]} is not a whole number", source)
    if ranks is not None:
        if isinstance(ranks, str):
            try:
                ranks = json.loads(ranks)
            except (json.JSONDecodeError, RecursionError):
                ranks = None
        if not isinstance(ranks, list) or not ranks or not all(_is_whole(r) and 0 <= r < limit for r in ranks):
            raise InputError(f"{where}: \"Process Group Ranks\" {given!r:.60} is not a list of the job's ranks "
                             f"(0..{limit - 1})", source)
        if len(set(ranks)) < len(ranks):
            raise InputError(f"{where}: \"Process Group Ranks\" {ranks} names a rank twice", source)
        if args.get("Group size") is not None and args["Group size"] != len(ranks):
            raise InputError(f"{where}: \"Group size\" {args['Group size']} beside \"Process Group Ranks\" of "
                             f"{len(ranks)} ranks: the record contradicts itself", source)
        return tuple(ranks)
    size = _whole(args.get("Group size"), None)
    start, stride = _whole(args.get("Global rank start"), None), _whole(args.get("Global rank stride"), None)
    if size is not None and not 1 <= size <= limit:
        raise InputError(f"{where}: \"Group size\" {size:,} is not 1..{limit:,} (the job's ranks)", source)
    if size and start is not None and stride:
        group = tuple(start + k * stride for k in range(size))
        if not all(0 <= r < limit for r in group) or len(set(group)) < len(group):
            raise InputError(f"{where}: \"Global rank start\" {start}, stride {stride} and size {size} name "
                             f"ranks outside the job's 0..{limit - 1}", source)
        return group
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
    return value if _is_whole(value) else default


def _is_whole(value: object) -> bool:
    """An int that is no bool (JSON's true is not a number)."""
    return isinstance(value, int) and not isinstance(value, bool)


def gpu_generation(device_name: str | None) -> str | None:
    """simnet's GPU name (``simnet.topology.hardware.GPUS``) for a device name as the CUDA
    or HIP runtime reports it (``NVIDIA A100-PG509-200`` -> a100), None if it names none."""
    match = _GENERATIONS.search(device_name or "")
    return match.group(1).lower() if match else None
