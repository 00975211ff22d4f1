"""Chakra execution traces (MLCommons' standard, what ASTRA-sim reads) as ``RankTrace``.

A Chakra ET file (``NAME.RANK.et``, or gzipped ``.et.gz``) is a stream of protobuf messages, each preceded by its
length as a varint: one ``GlobalMetadata``, then the rank's ``Node``s (schema:
mlcommons/chakra ``schema/protobuf/et_def.proto``; the messages are declared here with
the field numbers that file gives, so no generated code is needed). A node has an id,
name, type (``COMP_NODE``, ``COMM_COLL_NODE``, ...), data dependencies (ids of the same
rank's nodes), ``start_time_micros`` and ``duration_micros``, and attributes:
a collective's ``comm_type`` (``CollectiveCommType``), ``comm_size`` (bytes: the sum of
its input tensors, as Chakra's PyTorch converter computes it) and ``pg_name``; a node
with ``is_cpu_op`` true is the host's side (its c10d call) and runs as compute.

Every node becomes an operation that waits for its data dependencies, the ones Chakra's
own feeder resolves (src/feeder/et_feeder.cpp; ``ctrl_deps`` of converted PyTorch traces
hold self-loops and cycles, and the feeder does not read them either); a dependency on a
node the file does not hold is left out, and the trace's notes count them. The rank is
the file name's last number; a collective's group is the process group ``groups`` names
for its ``pg_name``, else every rank of the job.

>>> from pathlib import Path
>>> from tempfile import mkdtemp
>>> path = write_chakra(Path(mkdtemp()) / "step.0.et", [
...     {"id": 1, "name": "gemm", "start_time_micros": 100, "duration_micros": 1000},
...     {"id": 2, "name": "all_reduce", "type": "COMM_COLL_NODE", "data_deps": [1], "start_time_micros": 1100,
...      "duration_micros": 500, "attr": {"comm_type": 0, "comm_size": 2**20}}])
>>> trace = read_chakra(path, world=2)
>>> [(op.name, op.deps, op.comm and (op.comm.collective, op.comm.size_bytes, op.comm.group)) for op in trace.ops]
[('gemm', (), None), ('all_reduce', (0,), ('allreduce', 1048576, (0, 1)))]
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path

from simnet.errors import InputError
from simnet.io.files import read_bytes
from simnet.units import SIZE_MAX
from simnet.workloads.kineto import MAX_DURATION_US, MAX_TIMESTAMP_US, kernel_algorithm
from simnet.workloads.trace import Comm, Op, RankTrace

__all__ = ["read_chakra", "write_chakra", "rank_of", "COMM_TYPES"]

COMM_TYPES = {0: "allreduce", 1: "reduce", 2: "all_gather", 5: "broadcast", 6: "all_to_all", 7: "reduce_scatter",
              8: "reduce_scatter", 9: "allreduce"}
"""et_def.proto's ``CollectiveCommType`` values simnet replays (BARRIER as a tiny AllReduce,
REDUCE_SCATTER_BLOCK as ReduceScatter); GATHER (3) and SCATTER (4) are refused."""

_NODE_TYPES = {"INVALID_NODE": 0, "METADATA_NODE": 1, "MEM_LOAD_NODE": 2, "MEM_STORE_NODE": 3, "COMP_NODE": 4,
               "COMM_SEND_NODE": 5, "COMM_RECV_NODE": 6, "COMM_COLL_NODE": 7}
_RANK = re.compile(r"(\d+)\.et(\.gz)?$")
_MAX_NODES = 5_000_000


@cache
def _messages():
    """The protobuf classes of et_def.proto's GlobalMetadata, Node and AttributeProto."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="simnet_chakra_et_def.proto", package="ChakraProtoMsg",
                                               syntax="proto3")

    def message(name: str, fields: list[tuple[str, int, int, int, str | None]]):
        m = proto.message_type.add(name=name)
        for field_name, number, kind, label, type_name in fields:
            f = m.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                f.type_name = type_name
        return m

    one, many = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    attr = message("AttributeProto", [("name", 1, F.TYPE_STRING, one, None)])
    attr.oneof_decl.add(name="value")
    for field_name, number, kind in (("double_val", 3, F.TYPE_DOUBLE), ("float_val", 5, F.TYPE_FLOAT),
                                     ("int32_val", 7, F.TYPE_INT32), ("int64_val", 9, F.TYPE_INT64),
                                     ("uint32_val", 11, F.TYPE_UINT32), ("uint64_val", 13, F.TYPE_UINT64),
                                     ("sint32_val", 15, F.TYPE_SINT32), ("sint64_val", 17, F.TYPE_SINT64),
                                     ("bool_val", 27, F.TYPE_BOOL), ("string_val", 29, F.TYPE_STRING)):
        attr.field.add(name=field_name, number=number, type=kind, label=one, oneof_index=0)
    message("GlobalMetadata", [("version", 1, F.TYPE_STRING, one, None),
                               ("attr", 2, F.TYPE_MESSAGE, many, ".ChakraProtoMsg.AttributeProto")])
    node_type = proto.enum_type.add(name="NodeType")
    for name, number in _NODE_TYPES.items():
        node_type.value.add(name=name, number=number)
    message("Node", [("id", 1, F.TYPE_UINT64, one, None), ("name", 2, F.TYPE_STRING, one, None),
                     ("type", 3, F.TYPE_ENUM, one, ".ChakraProtoMsg.NodeType"),
                     ("data_deps", 5, F.TYPE_UINT64, many, None),
                     ("start_time_micros", 6, F.TYPE_UINT64, one, None),
                     ("duration_micros", 7, F.TYPE_UINT64, one, None),
                     ("attr", 10, F.TYPE_MESSAGE, many, ".ChakraProtoMsg.AttributeProto")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"ChakraProtoMsg.{name}"))
            for name in ("GlobalMetadata", "Node", "AttributeProto")}


def _records(data: bytes, source: str):
    """The length-delimited messages of ``data`` (a base-128 varint length, then the
    message: protobuf's encoding, as Chakra's protolib writes them)."""
    at = 0
    while at < len(data):
        length, shift = 0, 0
        while True:
            if at >= len(data) or shift > 63:
                raise InputError(f"cut short at byte {at:,}: not a Chakra execution trace", source)
            byte = data[at]
            length |= (byte & 0x7F) << shift
            at, shift = at + 1, shift + 7
            if byte < 0x80:
                break
        if at + length > len(data):
            raise InputError(f"a message at byte {at:,} runs past the end of the file: not a Chakra execution "
                             "trace, or cut short", source)
        yield data[at: at + length]
        at += length


def _attrs(node) -> dict:
    return {a.name: getattr(a, a.WhichOneof("value")) for a in node.attr if a.WhichOneof("value")}


def rank_of(path: Path) -> int:
    """The rank a Chakra ET file's name gives (NAME.RANK.et)."""
    match = _RANK.search(Path(path).name)
    if not match:
        raise InputError("a Chakra execution trace is named NAME.RANK.et (chakra.0.et): no rank in the name", path)
    return int(match.group(1))


def read_chakra(path: str | Path, world: int | None = None,
                groups: Mapping[str, tuple[int, ...]] | None = None) -> RankTrace:
    """The ``RankTrace`` of one Chakra ET file (module docstring); ``world``: the job's
    ranks (default: the rank + 1), ``groups``: process group name -> its ranks."""
    from google.protobuf.message import DecodeError

    path = Path(path)
    source = str(path)
    rank = rank_of(path)
    world = world if world is not None else rank + 1
    classes = _messages()
    records = _records(read_bytes(path, "a Chakra execution trace (.et)"), source)
    nodes = []
    try:
        next(records, None)  # GlobalMetadata: its version and attributes change nothing here
        for record in records:
            node = classes["Node"]()
            node.ParseFromString(record)
            nodes.append(node)
            if len(nodes) > _MAX_NODES:
                raise InputError(f"over {_MAX_NODES:,} nodes: more than simnet replays", path)
    except DecodeError as exc:
        raise InputError(f"not a Chakra execution trace: node {len(nodes) + 1} does not decode ({exc})", path) \
            from None
    if not nodes:
        raise InputError("no nodes: an empty Chakra execution trace", path)
    index = {}
    for node in nodes:
        if node.id in index:
            raise InputError(f"node id {node.id} is given twice", path)
        index[node.id] = len(index)
    for node in nodes:  # the Kineto reader's bounds: no operation lasts a day, no clock reads 1e17 us
        if node.duration_micros > MAX_DURATION_US or node.start_time_micros > MAX_TIMESTAMP_US:
            field = "duration_micros" if node.duration_micros > MAX_DURATION_US else "start_time_micros"
            bound = MAX_DURATION_US if field == "duration_micros" else MAX_TIMESTAMP_US
            raise InputError(f"node {node.id} ({node.name!r}): {field} {getattr(node, field):,} is past "
                             f"{bound:.4g} us: no recording", path)
    origin = min(n.start_time_micros for n in nodes)
    ops, dangling, named = [], 0, set()
    for node in nodes:
        wanted = tuple(node.data_deps)
        deps = sorted({index[d] for d in wanted if d in index})
        dangling += sum(d not in index for d in wanted)
        host = _attrs(node).get("is_cpu_op", False)  # the host's side of a call: it runs as compute
        if not isinstance(host, bool):
            raise InputError(f"node {node.id} ({node.name!r}): is_cpu_op must be a bool, not {host!r:.40}", path)
        comm = _comm(node, rank, world, groups, source) \
            if node.type == _NODE_TYPES["COMM_COLL_NODE"] and not host else None
        if comm is not None:
            named.add(_attrs(node).get("pg_name", ""))
        if node.type in (_NODE_TYPES["COMM_SEND_NODE"], _NODE_TYPES["COMM_RECV_NODE"]) and not host:
            raise InputError(f"node {node.id} ({node.name!r}) is a point-to-point send/recv: not replayed yet", path)
        ops.append(Op(node.name, 1 if comm else 0, (node.start_time_micros - origin) * 1e-6,
                      node.duration_micros * 1e-6, tuple(deps), comm, on_host=host))
    _refuse_cycle(nodes, ops, path)
    order = sorted(range(len(ops)), key=lambda i: (ops[i].start_s, i))
    renumber = {old: new for new, old in enumerate(order)}
    ops = [replace(ops[i], deps=tuple(sorted(renumber[d] for d in ops[i].deps))) for i in order]
    notes = (f"{dangling:,} dependencies on nodes the file does not hold (Chakra's converter leaves the CPU "
             "operations it drops named) were left out",) if dangling else ()
    return RankTrace(rank, tuple(ops), source, world, notes=notes, timed=origin > 0 or any(
        n.start_time_micros != origin for n in nodes), groups_named=frozenset(named))


def _refuse_cycle(nodes, ops: list[Op], path: Path) -> None:
    """Refuse in one line data dependencies that wait on themselves (a node, through its
    ``data_deps``, on itself): no order runs them (Kahn's algorithm leaves them over)."""
    waits = [len(op.deps) for op in ops]
    dependents: list[list[int]] = [[] for _ in ops]
    for i, op in enumerate(ops):
        for d in op.deps:
            dependents[d].append(i)
    ready = [i for i, n in enumerate(waits) if n == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for j in dependents[i]:
            waits[j] -= 1
            if waits[j] == 0:
                ready.append(j)
    if done < len(ops):
        stuck = next(i for i, n in enumerate(waits) if n > 0)
        raise InputError(f"node {nodes[stuck].id} ({nodes[stuck].name!r}) waits, through data_deps, on itself: "
                         f"{len(ops) - done:,} nodes' data dependencies form a cycle", path)


def _comm(node, rank: int, world: int, groups, source: str) -> Comm:
    attrs = _attrs(node)
    where = f"node {node.id} ({node.name!r})"
    kind, size = attrs.get("comm_type"), attrs.get("comm_size")
    if isinstance(kind, bool) or not isinstance(kind, int) or kind not in COMM_TYPES:  # no bool, no 0.0
        raise InputError(f"{where}: comm_type {kind!r} is not one simnet replays "
                         f"({', '.join(f'{k} {v}' for k, v in COMM_TYPES.items())})", source)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise InputError(f"{where}: comm_size must be a whole number of bytes, not {size!r}", source)
    name = attrs.get("pg_name", "")
    if not isinstance(name, str):
        raise InputError(f"{where}: pg_name must be a string, not {name!r:.40}", source)
    group = tuple(groups[name]) if groups and name in groups else tuple(range(world))
    collective = COMM_TYPES[kind]
    if collective == "all_gather":  # comm_size is this rank's input; nccl-tests' size is the whole output
        size *= len(group)
    if size > SIZE_MAX:
        raise InputError(f"{where}: {size:,} B is over 1 PiB, the largest size simnet simulates", source)
    return Comm(collective, size, group, name or "world", *kernel_algorithm(node.name))


def write_chakra(path: str | Path, nodes: list[dict]) -> Path:
    """Write a Chakra ET as Chakra's tools do: ``nodes`` as dicts of Node fields (``id``,
    ``name``, ``type`` by name, ``data_deps``, ``start_time_micros``, ``duration_micros``)
    and ``attr`` (name -> an int, bool or str); a synthetic trace for tests and what-ifs."""
    classes = _messages()

    def varint(n: int) -> bytes:
        out = bytearray()
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        return bytes(out + bytes([n]))

    messages = [classes["GlobalMetadata"](version="0.0.4")]
    for fields in nodes:
        fields = dict(fields)
        attrs = fields.pop("attr", {})
        node = classes["Node"](**{**fields, "type": _NODE_TYPES[fields.get("type", "COMP_NODE")]})
        for name, value in attrs.items():
            kind = "bool_val" if isinstance(value, bool) else "int64_val" if isinstance(value, int) else "string_val"
            node.attr.add(name=name, **{kind: value})
        messages.append(node)
    path = Path(path)
    path.write_bytes(b"".join(varint(len(m.SerializeToString())) + m.SerializeToString() for m in messages))
    return path
