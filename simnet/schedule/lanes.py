"""Lane programs: schedules whose transfers repeat along connections.

A **lane** is one connection ``src -> dst`` on ``channel``, carrying ``flows[l]``
transfers one after another (FIFO: transfer q starts once transfer q-1 has left the
sender). Transfer q of lane l also waits, for each column d with ``after[l, d] >= 0`` and
``q >= lag[l, d]``, for transfer ``q - lag[l, d]`` of lane ``after[l, d]`` to be
delivered. ``pieces(q)`` says what every lane's transfer q carries. NCCL's rings are lane
programs: lane (channel, rank) sends to the next rank, and its k pieces of step s wait for
the k pieces the previous rank sent at step s-1 (lag k). A 1 GiB ring over 16,384 GPUs is
4·10^9 transfers but only 131,072 lanes of 32,766 transfers each. NCCL's trees are too:
a lane per tree edge and direction, chunk j going up once the children's chunk j arrived
(lag 0: same-index dependencies order the lanes in *waves*, replayed one after another).

A program expands (``to_schedule()``) into an explicit ``Schedule`` for the fluid engine, the
numpy data check and traces; ``simnet.engine.lanes.replay_lanes`` replays it without a
transfer each.

>>> import numpy as np
>>> # a 2-lane ping-pong: a -> b, then b -> a once a's piece is delivered
>>> prog = LaneProgram("demo", ["a", "b"], ["a", "b"], 8, src=np.array([0, 1]), dst=np.array([1, 0]),
...                    channel=np.zeros(2, dtype=np.int64), flows=np.array([1, 2]), after=np.array([-1, 0]),
...                    lag=np.array([1, 1]), per_step=np.array([1, 1]),
...                    pieces=lambda q: (np.zeros(2, dtype=np.int64), np.full(2, 8), np.zeros(2, dtype=np.int8)))
>>> s = prog.to_schedule()
>>> len(s), s.deps(2).tolist(), s.after_sent.tolist()
(3, [0], [-1, -1, 1])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from simnet.io.budget import check_fits
from simnet.schedule.transfers import Schedule, ScheduleBuilder, split_range

DEPENDENCY_BYTES = 80
"""Peak memory per entry of a lane program's dependency matrix (lanes x the most lanes one
waits for), from building it to replaying it: 74 B measured (peak resident memory of NVLS
over 1,024 and 2,048 GPUs on one switch, whose multicast lanes each wait for every GPU's
reduction: N^2 entries), rounded up."""

__all__ = ["LaneProgram", "ChunkLanes", "merge_programs"]


@dataclass
class LaneProgram:
    """Lanes (numpy arrays, one entry each; see the module docstring) and ``pieces``.

    ``after`` and ``lag`` are (lanes,) or (lanes, D) (-1 in ``after``: no dependency);
    same-index dependencies (lag 0) must not form a cycle.
    ``pieces(q)`` returns ``(lo, hi, op)`` arrays over every lane: the byte range and
    operation (``REDUCE``/``COPY``) of each lane's transfer q (ignored for lanes with
    ``flows <= q``). ``per_step[l]`` transfers of lane l make one algorithm step (for
    traces: step ``first_step + q // per_step``, chunk ``q % per_step``). Node indices refer to ``nodes``, the
    first ``len(ranks)`` of which are the ranks. ``carried_bytes`` and ``sizes(q)`` (the
    bytes and op of every lane's transfer q), when the algorithm gives them, are
    ``carried()`` without a pass over every transfer and ``pieces`` without the ranges.
    """

    algorithm: str
    nodes: list[str]
    ranks: list[str]
    size: int
    src: np.ndarray
    dst: np.ndarray
    channel: np.ndarray
    flows: np.ndarray
    after: np.ndarray
    lag: np.ndarray
    per_step: np.ndarray
    pieces: Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]]
    carried_bytes: np.ndarray | None = None
    sizes: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None
    first_step: np.ndarray | int = 0
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        after = np.asarray(self.after, dtype=np.int64)
        self.after = after.reshape(len(self.src), after.shape[1] if after.ndim == 2 else 1)
        lag = np.asarray(self.lag, dtype=np.int64)
        self.lag = np.broadcast_to(lag.reshape(len(self.src), lag.shape[1] if lag.ndim == 2 else 1), self.after.shape)
        self.wave = self._waves()

    def _waves(self) -> np.ndarray:
        """Per lane, the longest chain of same-index dependencies leading to it: lanes of
        wave w depend at their own index only on lanes of earlier waves."""
        lane, column = np.nonzero((self.after >= 0) & (self.lag == 0))  # by lane: a lane's dependencies in a row
        on = self.after[lane, column]
        waiting, first = np.unique(lane, return_index=True)
        wave = np.zeros(len(self.src), dtype=np.int64)
        for _ in range(len(self.src) + 1):
            deeper = np.zeros_like(wave)
            if len(on):
                deeper[waiting] = np.maximum.reduceat(wave[on] + 1, first)
            if (deeper == wave).all():
                return wave
            wave = deeper
        raise ValueError("same-index (lag 0) dependencies between lanes form a cycle")

    def waves(self) -> list[np.ndarray]:
        """The lanes of each wave, in replay order."""
        order = np.argsort(self.wave, kind="stable")
        return np.split(order, np.flatnonzero(np.diff(self.wave[order])) + 1) if len(order) else []

    def __len__(self) -> int:
        """Transfers in the program (what ``to_schedule`` would hold)."""
        return int(self.flows.sum())

    @property
    def lanes(self) -> int:
        """Number of lanes (connections)."""
        return len(self.src)

    def carried(self) -> np.ndarray:
        """Bytes each lane carries over the whole program."""
        if self.carried_bytes is not None:
            return self.carried_bytes
        total = np.zeros(self.lanes)
        for q in range(int(self.flows.max(initial=0))):
            total += np.where(self.flows > q, self.nbytes(q)[0], 0)
        return total

    def nbytes(self, q: int) -> tuple[np.ndarray, np.ndarray]:
        """(bytes, op) of every lane's transfer q."""
        if self.sizes is not None:
            return self.sizes(q)
        lo, hi, op = self.pieces(q)
        return hi - lo, op

    def part(self, keep: np.ndarray) -> LaneProgram:
        """The program of the lanes ``keep`` (a mask over lanes) alone, in their order: they
        must wait for no lane outside them (a part closed under its dependencies)."""
        index = np.flatnonzero(keep)
        renumber = np.full(self.lanes, -1, dtype=np.int64)
        renumber[index] = np.arange(len(index))
        after = self.after[index]
        if (renumber[after[after >= 0]] < 0).any():
            raise ValueError("a part's lanes wait for lanes outside it")
        sizes = self.sizes
        return LaneProgram(
            self.algorithm, self.nodes, self.ranks, self.size, src=self.src[index], dst=self.dst[index],
            channel=self.channel[index], flows=self.flows[index], after=np.where(after >= 0, renumber[after], -1),
            lag=self.lag[index], per_step=self.per_step[index],
            pieces=lambda q: tuple(values[index] for values in self.pieces(q)),
            carried_bytes=None if self.carried_bytes is None else self.carried_bytes[index],
            sizes=None if sizes is None else (lambda q: tuple(values[index] for values in sizes(q))),
            first_step=np.broadcast_to(self.first_step, (self.lanes,))[index], info=self.info)

    def transfer_lanes(self) -> np.ndarray:
        """The lane of each transfer ``to_schedule`` holds, in its order (``emit``'s: transfer
        q of every live lane, wave by wave)."""
        waves = self.waves()
        return np.concatenate([lanes[self.flows[lanes] > q] for q in range(int(self.flows.max(initial=0)))
                               for lanes in waves] or [np.zeros(0, dtype=np.int64)]).astype(np.int64)

    def to_schedule(self) -> Schedule:
        """The explicit ``Schedule``: transfer q of every live lane in one batch per q."""
        b = ScheduleBuilder(self.algorithm, self.ranks, self.size)
        for node in self.nodes[len(self.ranks):]:
            b.node(node)
        b.expect(len(self))
        self.emit(b)
        b.info.update(self.info)
        return b.build()

    def emit(self, b: ScheduleBuilder, extra: Callable[[int], list[np.ndarray]] | None = None) -> None:
        """Add the program's transfers to ``b`` (whose node indices ``src`` and ``dst`` are):
        transfer q of every live lane in one batch per q, wave after wave, so a program whose lanes
        all carry as many transfers, in one wave, numbers transfer q of lane l
        ``q * lanes + l`` from ``b``'s next id on. ``extra(q)``: more dependencies of every
        lane's transfer q (arrays over all lanes, ids or -1), after the program's own: how a
        program joins a larger schedule."""
        depth = int(self.lag.max(initial=0)) + 1
        ids = np.full((depth, self.lanes), -1, dtype=np.int64)  # ids of the last `depth` transfers per lane
        last = np.full(self.lanes, -1, dtype=np.int64)  # each lane's previous transfer: it queues behind it
        order = np.concatenate(self.waves() or [np.zeros(0, dtype=np.int64)])  # lanes wave after wave
        # the lanes' fixed columns in that order (indexed again only at transfers some of them lack)
        used = np.flatnonzero((self.after >= 0).any(axis=0))
        flows = self.flows[order]
        columns = [self.src[order], self.dst[order], self.channel[order], self.after[order][:, used],
                   self.lag[order][:, used], self.per_step[order],
                   np.broadcast_to(self.first_step, (self.lanes,))[order]]
        for q in range(int(self.flows.max(initial=0))):
            lo, hi, op = self.pieces(q)
            more = [] if extra is None else extra(q)
            here = flows > q
            if here.all():
                live, (src, dst, channel, after, lag, per_step, step0) = order, columns
            else:
                live = order[here]
                src, dst, channel, after, lag, per_step, step0 = (column[here] for column in columns)
            # one batch a transfer index, wave after wave: a same-index dependency (lag 0) is on a
            # lane of an earlier wave, so on an id earlier in the batch
            ids[q % depth] = -1
            ids[q % depth, live] = new = b.next_ids((len(live),))
            waits = (after >= 0) & (q >= lag)
            deps = np.where(waits, ids[(q - lag) % depth, np.maximum(after, 0)], -1)
            b.add(src, dst, lo[live], hi[live], op[live], deps=list(deps.T) + [d[live] for d in more],
                  after_sent=last[live], step=step0 + q // per_step, chunk=q % per_step, channel=channel)
            last[live] = new


class ChunkLanes:
    """Collects the lanes of a pipeline in chunks, then builds its ``LaneProgram``: every lane
    of channel c carries that channel's k_c chunks in order, and its chunk j waits for chunk
    j of the lanes it names (same-index dependencies, lag 0), as in pipelined trees and the
    NVLS and CollNet phases. Nodes past the ranks (switches that reduce) are added by name.

    >>> lanes = ChunkLanes(["a", "b"])
    >>> up = lanes.add(0, lanes.node("sw"), 0, 1, 0, [[]])  # a -> sw, reducing
    >>> lanes.add(lanes.node("sw"), 1, 0, 0, 1, [up]).tolist()  # sw -> b once a's chunk is in
    [1]
    >>> prog = lanes.program("demo", 10, np.array([0, 10]), [2], {})  # 10 bytes in 2 chunks
    >>> prog.nodes, len(prog), prog.to_schedule().deps(3).tolist()  # sw -> b's chunk 1 waits for a -> sw's
    (['a', 'b', 'sw'], 4, [2])
    """

    def __init__(self, ranks: list[str]):
        self.ranks = list(ranks)
        self.nodes = list(ranks)
        self._index = {n: i for i, n in enumerate(self.nodes)}
        self._blocks: list[tuple[np.ndarray, ...]] = []
        self.count = 0

    def node(self, name: str) -> int:
        """Index of node ``name``, adding it if it is not a rank."""
        if name not in self._index:
            self._index[name] = len(self.nodes)
            self.nodes.append(name)
        return self._index[name]

    def add(self, src, dst, channel: int, op: int, step: int, after: list) -> np.ndarray:
        """Lanes ``src[i] -> dst[i]`` (node indices, broadcast to ``len(after)``) on ``channel``,
        reducing or copying (``op``) in algorithm step ``step``, lane i waiting for the lanes
        ``after[i]``; returns their ids (lanes count from 0 in the order they are added)."""
        n = len(after)
        width = max((len(a) for a in after), default=0)
        if n * width > 1 << 16:  # (a quadratic program: the memory it will take, asked before it is taken)
            check_fits(n * width * DEPENDENCY_BYTES, f"a lane program over {len(self.ranks):,} GPUs whose {n:,} lanes "
                       f"each wait for {width:,} others", "use fewer GPUs under one switch, or another algorithm")
        matrix = np.full((n, max(width, 1)), -1, dtype=np.int64)
        for i, theirs in enumerate(after):
            matrix[i, : len(theirs)] = theirs
        ids = self.count + np.arange(n, dtype=np.int64)
        self._blocks.append((np.broadcast_to(np.asarray(src, dtype=np.int64), (n,)),
                             np.broadcast_to(np.asarray(dst, dtype=np.int64), (n,)),
                             np.full(n, channel, dtype=np.int64), np.full(n, op, dtype=np.int8),
                             np.full(n, step, dtype=np.int64), matrix))
        self.count += n
        return ids

    def program(self, algorithm: str, size: int, edges: np.ndarray, chunks: list[int], info: dict) -> LaneProgram:
        """The program: channel c carries bytes ``[edges[c], edges[c + 1])`` in ``chunks[c]`` chunks."""
        src, dst, channel, op, step = (np.concatenate([b[i] for b in self._blocks]) for i in range(5))
        after = np.full((self.count, max(b[5].shape[1] for b in self._blocks)), -1, dtype=np.int64)
        start = 0
        for block in self._blocks:  # in place: no padded copy of each block (72 columns for NVL72's lanes)
            after[start: start + len(block[5]), : block[5].shape[1]] = block[5]
            start += len(block[5])
        k = np.array(chunks, dtype=np.int64)[channel]
        cuts = np.zeros((len(chunks), max(chunks, default=1) + 1), dtype=np.int64)
        for c, count in enumerate(chunks):
            cuts[c, : count + 1] = split_range(int(edges[c]), int(edges[c + 1]), count)

        def pieces(q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            return cuts[channel, min(q, cuts.shape[1] - 2)], cuts[channel, min(q + 1, cuts.shape[1] - 1)], op

        return LaneProgram(algorithm, list(self.nodes), self.ranks, size, src=src, dst=dst, channel=channel, flows=k,
                           after=after, lag=np.zeros(len(src), dtype=np.int64), per_step=k, pieces=pieces,
                           carried_bytes=np.diff(np.asarray(edges)).astype(float)[channel], first_step=step, info=info)


def merge_programs(programs: list[LaneProgram]) -> LaneProgram:
    """One program that runs ``programs`` (over disjoint ranks) at the same time: their
    lanes one after another, in order, each program's dependencies kept within its own."""
    nodes: dict[str, int] = {}
    for name in [r for p in programs for r in p.ranks] + [n for p in programs for n in p.nodes[len(p.ranks):]]:
        nodes.setdefault(name, len(nodes))
    width = max(p.after.shape[1] for p in programs)
    offsets = np.cumsum([0] + [p.lanes for p in programs])
    remap = [np.array([nodes[n] for n in p.nodes], dtype=np.int64) for p in programs]

    def joined(arrays) -> np.ndarray:
        return np.concatenate(list(arrays))

    def padded(p: LaneProgram, array: np.ndarray, fill: int) -> np.ndarray:
        return np.pad(array, ((0, 0), (0, width - array.shape[1])), constant_values=fill)

    def each(q: int, part: Callable[[LaneProgram], tuple], count: int) -> tuple[np.ndarray, ...]:
        rows = [part(p) if q < int(p.flows.max(initial=0)) else
                (np.zeros(p.lanes, dtype=np.int64),) * (count - 1) + (np.zeros(p.lanes, dtype=np.int8),)
                for p in programs]
        return tuple(joined(row[k] for row in rows) for k in range(count))

    every_size = all(p.sizes is not None for p in programs)
    return LaneProgram(
        "+".join(sorted({p.algorithm for p in programs})), list(nodes), [r for p in programs for r in p.ranks],
        max(p.size for p in programs),
        src=joined(m[p.src] for m, p in zip(remap, programs)), dst=joined(m[p.dst] for m, p in zip(remap, programs)),
        channel=joined(p.channel for p in programs), flows=joined(p.flows for p in programs),
        after=joined(padded(p, np.where(p.after >= 0, p.after + off, -1), -1) for p, off in zip(programs, offsets)),
        lag=joined(padded(p, p.lag, 0) for p in programs), per_step=joined(p.per_step for p in programs),
        pieces=lambda q: each(q, lambda p: p.pieces(q), 3),
        carried_bytes=joined(p.carried() for p in programs),
        sizes=(lambda q: each(q, lambda p: p.sizes(q), 2)) if every_size else None,
        first_step=joined(np.broadcast_to(p.first_step, (p.lanes,)) for p in programs))
