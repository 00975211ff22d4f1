"""Schedules: the contract between algorithms (which build them) and the replay (which runs them).

A schedule is a set of transfers held as numpy arrays, one entry per transfer:

* ``src``, ``dst``: indices into ``nodes`` (node ids of the topology);
* ``lo``, ``hi``: the byte range ``[lo, hi)`` of the buffer it carries (``hi - lo`` bytes);
* ``op``: ``REDUCE`` (the receiver adds the data into its buffer) or ``COPY`` (overwrites);
* ``step``, ``chunk``: the algorithm's step and pipeline chunk, for traces;
* ``channel``: the connection it travels on (ECMP hashes on it, as on a QP or socket);
* dependencies: a transfer starts once every transfer in ``deps(t)`` has been *delivered*
  (and reduced, if it was a reduction) and, when ``after_sent[t] >= 0``, once that
  transfer's last byte has *left* its sender (a FIFO connection: pieces queue behind
  each other on one channel).

Data semantics, used by ``simnet.schedule.verify``: a transfer reads its bytes from the
sender's buffer when it starts and applies them at the receiver when delivered. Ranks start
with their own input; other nodes (a parameter server) start with zeros.

>>> b = ScheduleBuilder("demo", ranks=["a", "b"], size=8)
>>> send = b.add(src=0, dst=1, lo=0, hi=8, op=REDUCE)
>>> back = b.add(src=1, dst=0, lo=0, hi=8, op=COPY, deps=[send])
>>> s = b.build()
>>> len(s), s.deps(1).tolist(), int(s.nbytes.sum())
(2, [0], 16)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np

from simnet import units
from simnet.io.budget import TooLarge, check_fits, in_gb, memory_budget

__all__ = ["Schedule", "ScheduleBuilder", "count_transfers", "counted_more", "COPY", "REDUCE", "summed_at",
           "split_range",
           "in_order", "csr_rows", "TRANSFER_BYTES", "transfer_bytes"]

COPY = 0
REDUCE = 1

_DTYPES = {"src": np.int32, "dst": np.int32, "lo": np.int64, "hi": np.int64, "op": np.int8,
           "after_sent": np.int32, "step": np.int32, "chunk": np.int32, "channel": np.int32}
"""Column types: transfer ids fit int32 (2^31 transfers is far beyond a 2-core machine)."""

TRANSFER_BYTES = 320
"""Memory one transfer costs to build, time and replay (columns, dependencies, per-transfer
times, its flow and route): peak resident memory / transfers is 248 B for NCCL's 8-channel
ring of 1 GiB over 1,024 GPUs and 158 B for NCCL's Tree over 256 (BENCHMARKS.md)."""

HEAVY_TRANSFER_BYTES = {"naive": 2400, "direct": 1200, "ps": 3400, "hierarchical": 1000, "recursive_doubling": 900,
                        "halving_doubling": 600}
"""Algorithms whose transfers cost more, each being a long concurrent flow with a route of its
own: peak resident memory / transfers at 256 GPUs, 1 GiB, ideal model (naive: 2,249 B at 512)."""


def transfer_bytes(algorithm: str) -> int:
    """Memory per transfer of ``algorithm``'s schedule, for the budget check."""
    return HEAVY_TRANSFER_BYTES.get(algorithm, TRANSFER_BYTES)


def split_range(lo: int, hi: int, parts: int) -> np.ndarray:
    """``parts + 1`` boundaries cutting ``[lo, hi)`` into near-equal whole-byte pieces.

    >>> split_range(0, 10, 3).tolist()
    [0, 3, 6, 10]
    """
    return lo + (np.arange(parts + 1, dtype=np.int64) * (hi - lo)) // parts


@dataclass
class Schedule:
    """Transfers and their dependencies (see the module docstring for the fields)."""

    algorithm: str
    nodes: list[str]
    ranks: list[str]
    size: int
    src: np.ndarray
    dst: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    op: np.ndarray
    step: np.ndarray
    chunk: np.ndarray
    channel: np.ndarray
    dep_ptr: np.ndarray
    dep_idx: np.ndarray
    after_sent: np.ndarray
    # what the performance model needs to know of the algorithm: "channels" (count),
    # "channel_weights", and "pipeline": {channel: (hops, chunks, hops between hosts)} of a
    # pipelined chain or tree, for its fill (simnet.model.nccl)
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.src)

    @property
    def nbytes(self) -> np.ndarray:
        """Bytes carried by each transfer."""
        return self.hi - self.lo

    def deps(self, t: int) -> np.ndarray:
        """Transfers that must be delivered before transfer ``t`` may start."""
        return self.dep_idx[self.dep_ptr[t]: self.dep_ptr[t + 1]]


def in_order(ids: np.ndarray, first: np.ndarray | int = -1) -> np.ndarray:
    """``after_sent`` for a FIFO connection per row of ``ids`` (rows x pieces, rows of any
    shape): piece j waits for piece j-1 of its row to leave; piece 0 waits for ``first`` (per
    row, -1 = nothing).

    >>> in_order(np.array([[5, 6, 7]]), first=2).tolist()
    [[2, 5, 6]]
    """
    first = np.broadcast_to(np.asarray(first, dtype=np.int64), ids.shape[:-1])
    return np.concatenate([first[..., None], ids[..., :-1]], axis=-1)


def csr_rows(ptr: np.ndarray, idx: np.ndarray, items: np.ndarray) -> np.ndarray:
    """The entries of rows ``items`` of a CSR list (row r is ``idx[ptr[r]:ptr[r + 1]]``, as
    ``Schedule.dep_ptr``/``dep_idx`` hold each transfer's dependencies), concatenated in the
    order of ``items``, vectorised.

    >>> ptr, idx = np.array([0, 2, 2, 3]), np.array([7, 8, 9])  # rows [7, 8], [], [9]
    >>> csr_rows(ptr, idx, np.array([2, 0, 1])).tolist()
    [9, 7, 8]
    """
    starts, ends = ptr[items], ptr[items + 1]
    lengths = ends - starts
    if lengths.max(initial=0) <= 1:  # the common case: at most one entry each
        return idx[starts[lengths == 1]]
    total = int(lengths.sum())
    if total == 0:
        return idx[:0]
    offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
    return idx[offsets + np.arange(total)]


_COUNTED: ContextVar[list[int] | None] = ContextVar("counted", default=None)
"""Where builders made inside ``count_transfers`` put their counts (None: they build)."""


def count_transfers(build: Callable[[], object]) -> int:
    """The transfers the schedules ``build()`` makes would hold, counted without building them:
    the builders it makes check the memory budget as they go (``TooLarge``), as when they
    build, and return counted schedules, which hold only each transfer's ends and byte range
    (what ``counted_more`` callers read, such as striping over NICs after building).

    >>> def two():
    ...     b = ScheduleBuilder("demo", ranks=["a", "b"], size=8)
    ...     b.add(src=[0, 1], dst=[1, 0], lo=0, hi=8, op=REDUCE)
    ...     return b.build()
    >>> count_transfers(two), len(two())
    (2, 2)
    """
    counts: list[int] = []
    token = _COUNTED.set(counts)
    try:
        build()
    finally:
        _COUNTED.reset(token)
    return sum(counts)


def counted_more(transfers: int) -> bool:
    """Inside ``count_transfers``: count ``transfers`` more, what a counted schedule becomes
    after building (each send striped over NICs, say), and say True; else False."""
    counts = _COUNTED.get()
    if counts is not None:
        counts.append(transfers)
    return counts is not None


def _flat(values: np.ndarray, shape: tuple[int, ...], n: int) -> np.ndarray:
    """``values`` broadcast to ``shape`` (``n`` elements), flattened; a view where it has that shape
    already (``np.broadcast_to`` costs microseconds a call, and a schedule makes tens of thousands)."""
    if values.shape == shape:
        return values.reshape(-1)
    if values.size == 1:
        return np.full(n, values.reshape(-1)[0], dtype=values.dtype)
    return np.broadcast_to(values, shape).reshape(-1)


_REMEDY = "use fewer GPUs, a larger chunk_size (or fewer channels, where the algorithm takes them) or another algorithm"


class ScheduleBuilder:
    """Collects transfers batch by batch (all arguments broadcast), then ``build()``s.

    ``ranks`` become nodes 0..N-1; ``node(id)`` adds any other node (a parameter server).
    ``size`` is the byte space the transfers address; ``collective_size`` the size as the
    user gave it, for messages (an exchange addresses N x that, ``simnet.schedule.kinds``).
    """

    def __init__(self, algorithm: str, ranks: Sequence[str], size: int, collective_size: int | None = None):
        self.algorithm = algorithm
        self.ranks = list(ranks)
        self.size = int(size)
        self.collective_size = self.size if collective_size is None else int(collective_size)
        self.nodes = list(ranks)
        self._node_index = {n: i for i, n in enumerate(self.nodes)}
        self._batches: list[dict[str, np.ndarray]] = []
        self._count = 0
        self._budget = memory_budget()
        self._per_transfer = transfer_bytes(algorithm)
        self._counted = _COUNTED.get()  # inside count_transfers: count, keep only ends and byte ranges
        self.info: dict = {}

    def expect(self, transfers: int) -> None:
        """Refuse (``TooLarge``) now if ``transfers`` will not fit the memory budget; algorithms
        that know their count up front call this before adding anything."""
        self._check(f"needs {transfers:,} transfers", transfers)

    @property
    def transfers(self) -> int:
        """Transfers added so far."""
        return self._count

    def node(self, node_id: str) -> int:
        """Index of ``node_id``, adding it if it is not a rank."""
        if node_id not in self._node_index:
            self._node_index[node_id] = len(self.nodes)
            self.nodes.append(node_id)
        return self._node_index[node_id]

    def add(self, src, dst, lo, hi, op, deps: Sequence = (), after_sent=-1, step=0, chunk=0,
            channel=0) -> np.ndarray:
        """Add transfers; returns their ids in the arguments' broadcast shape (C order).

        ``deps`` is a list of id arrays (each broadcast like the others; ``-1`` = none).
        Dependencies must point at smaller ids, which may lie in this same batch:
        ``next_ids(shape)`` tells the ids a batch will get.
        """
        values = [np.asarray(v, dtype=np.int64) for v in (src, dst, lo, hi, op, after_sent, step, chunk, channel)]
        dep_values = [np.asarray(d, dtype=np.int64) for d in deps]
        shape = np.broadcast_shapes(*(v.shape for v in values + dep_values))
        n = int(np.prod(shape))
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if (self._count + n) * self._per_transfer > self._budget:
            self._check_over(self._count + n)
        columns = [_flat(v, shape, n) for v in values[:4]]  # src, dst, lo, hi: what a count keeps
        if self._counted is not None:
            self._batches.append({name: col.astype(_DTYPES[name]) for name, col in zip(_DTYPES, columns)})
            self._count += n
            return np.arange(self._count - n, self._count, dtype=np.int64).reshape(shape)
        columns += [_flat(v, shape, n) for v in values[4:]]
        matrix = (np.stack([_flat(d, shape, n) for d in dep_values], axis=1) if dep_values
                  else np.full((n, 0), -1, dtype=np.int64))
        own = np.arange(self._count, self._count + n)
        if (matrix >= own[:, None]).any() or (columns[5] >= own).any():
            raise ValueError("a transfer can only depend on transfers with smaller ids (no cycles)")
        if (columns[2] > columns[3]).any() or (columns[2] < 0).any() or (columns[3] > self.size).any():
            raise ValueError("byte ranges must satisfy 0 <= lo <= hi <= size")
        batch = {name: col.astype(_DTYPES[name]) for name, col in zip(_DTYPES, columns)}
        batch["deps"] = matrix
        self._batches.append(batch)
        ids = np.arange(self._count, self._count + n, dtype=np.int64).reshape(shape)
        self._count += n
        return ids

    def _check(self, needs: str, transfers: int) -> None:
        check_fits(transfers * self._per_transfer, f"{self._what()} {needs} to build and replay", _REMEDY,
                   self._budget)

    def _check_over(self, transfers: int) -> None:
        """Refuse a build stopped where its first ``transfers`` pass the budget: what it needs is
        more, so its size in GB would only repeat the budget's."""
        budget = in_gb(self._budget)
        raise TooLarge(f"{self._what()} needs more than the {budget} GB simnet may use here: over "
                       f"{transfers:,} transfers of ~{self._per_transfer:,} B to build and replay, where its build "
                       f"was stopped (SIMNET_MEMORY; default 80% of the free memory): {_REMEDY}",
                       transfers * self._per_transfer, self._budget, self._what(), stopped=True)

    def _what(self) -> str:
        """The schedule in a few words, for its refusal."""
        return f"{self.algorithm} over {len(self.ranks):,} GPUs at {units.format_size(self.collective_size)}"

    def next_ids(self, shape: tuple[int, ...]) -> np.ndarray:
        """The ids the next ``add`` of this broadcast shape will return."""
        return np.arange(self._count, self._count + int(np.prod(shape)), dtype=np.int64).reshape(shape)

    def join(self, node, deps: np.ndarray) -> np.ndarray:
        """Zero-byte markers at ``node`` (broadcast) delivered once all ``deps`` (last axis) are.

        A join turns "all of these" into one id that later transfers can depend on; the
        replay completes it instantly, without the network.
        """
        deps = np.asarray(deps, dtype=np.int64)
        node = np.asarray(node, dtype=np.int64)
        columns = [deps[..., i] for i in range(deps.shape[-1])]
        return self.add(node, node, 0, 0, COPY, deps=columns, step=-1, chunk=-1)

    def build(self) -> Schedule:
        """The finished ``Schedule`` (inside ``count_transfers``, counted: its ``src``, ``dst``,
        ``lo`` and ``hi`` only, every other column empty)."""
        def column(name: str) -> np.ndarray:
            if not self._batches or name not in self._batches[0]:
                return np.zeros(0, dtype=_DTYPES[name])
            return np.concatenate([b[name] for b in self._batches])

        if self._counted is not None:
            self._counted.append(self._count)

        dep_ptr = [np.zeros(1, dtype=np.int64)]
        dep_idx = []
        offset = 0
        for batch in self._batches if self._counted is None else ():
            matrix = batch["deps"]
            valid = matrix >= 0
            counts = valid.sum(axis=1)
            dep_ptr.append(offset + np.cumsum(counts))
            offset += int(counts.sum())
            dep_idx.append(matrix[valid].astype(np.int32))
        return Schedule(
            algorithm=self.algorithm, nodes=list(self.nodes), ranks=list(self.ranks), size=self.size,
            src=column("src"), dst=column("dst"), lo=column("lo"), hi=column("hi"), op=column("op"),
            step=column("step"), chunk=column("chunk"), channel=column("channel"),
            dep_ptr=np.concatenate(dep_ptr),
            dep_idx=np.concatenate(dep_idx) if dep_idx else np.zeros(0, dtype=np.int32),
            after_sent=column("after_sent"),
            info=dict(self.info),
        )


def summed_at(nodes: list[str], topology) -> np.ndarray:
    """Per node of ``nodes``: whether a ``REDUCE`` transfer's data is summed there by the
    node itself, so that ``reduce_bandwidth`` (a GPU's, or a parameter server's, reduction
    rate) times it; False at a switch, which sums in the network (NVLS's multimem, SHARP)."""
    return np.array([topology.kind(node) != "switch" for node in nodes], dtype=bool)
