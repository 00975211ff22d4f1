"""Direct algorithms: a parameter server, every rank sending to every other (naive), and
reduce-scatter + all-gather as all-to-all exchanges (direct, and its two halves as the
direct ReduceScatter and AllGather)."""

from __future__ import annotations

import numpy as np

from simnet.schedule.registry import chunk_count, register
from simnet.schedule.transfers import COPY, REDUCE, Schedule, ScheduleBuilder, in_order, split_range
from simnet.topology.graph import Topology

__all__ = ["ps", "naive", "direct", "direct_reduce_scatter", "direct_all_gather", "parameter_servers", "named_servers"]


def named_servers(options: dict) -> list[str]:
    """The nodes ``options["ps_server"]`` names (one or a list; none when not given)."""
    named = options.get("ps_server")
    return [] if named is None else [named] if isinstance(named, str) else list(named)


def servers_used(topology: Topology, algorithm: str, options: dict) -> list[str]:
    """The parameter servers a run of ``algorithm`` uses: ps's (its ``ps_server``, else its
    first ``ps_servers``; every one where the options name them wrongly, which ps refuses
    itself); none for any other algorithm."""
    if algorithm != "ps":
        return []
    try:
        return parameter_servers(topology, topology.gpus, options.get("ps_server"), options.get("ps_servers") or 1)
    except ValueError:
        return topology.parameter_servers


def parameter_servers(topology: Topology, ranks: list[str], ps_server: str | list[str] | None,
                      ps_servers: int) -> list[str]:
    """The server nodes: ``ps_server`` if given (nodes of kind ps or host, or GPUs that also work),
    else the first ``ps_servers`` nodes of kind ps, else the first ``ps_servers`` ranks;
    ``ValueError`` ("field: what is wrong") for anything else."""
    if ps_servers < 1:
        raise ValueError("ps_servers must be at least 1")
    if ps_server is not None:
        servers = [ps_server] if isinstance(ps_server, str) else list(ps_server)
        if not servers:
            raise ValueError("ps_server: an empty list; name at least one node, or leave ps_server out")
        for i, server in enumerate(servers):
            if server not in topology.node_index:
                raise ValueError(f"ps_server: {server!r} is not a node of {topology.name}")
            if server in servers[:i]:
                raise ValueError(f"ps_server: {server!r} is listed twice")
            kind = topology.graph.nodes[server]["kind"]
            if kind in ("switch", "nic"):
                raise ValueError(f"ps_server: {server!r} is a {kind}, which cannot sum gradients; name a node of "
                                 "kind ps (a parameter server on the network) or host (a host's CPU, behind its "
                                 "PCIe), or a GPU (a worker that also serves)")
        return servers
    pool = topology.parameter_servers or ranks
    if ps_servers > len(pool):
        what = "parameter servers (kind: ps)" if topology.parameter_servers else "ranks"
        raise ValueError(f"ps_servers: {ps_servers} requested but there are only {len(pool)} {what}")
    return pool[:ps_servers]


@register("ps", "every worker pushes its gradient to a parameter server, which sums it and sends it back",
          "2*L + 2*N*S/B_ps on a dedicated server whose NIC has bandwidth B_ps (N workers); "
          "K shards: 2*L + 2*N*S/(K*B_ps)",
          options=("ps_server", "ps_servers", "chunk_size"))
def ps(topology: Topology, ranks: list[str], size: int, ps_server: str | list[str] | None = None,
       ps_servers: int = 1, chunk_size: int | None = None) -> Schedule:
    """Push (reduce at the server), then pull (copy back), per shard and chunk.

    Shard k of K (S/K bytes) lives on server k. A chunk is pulled once every worker's push
    of that chunk has arrived. Contention-free, one dedicated server with NIC bandwidth
    B_ps, N workers, path latency L: ``2*L + 2*N*S/B_ps`` (the N pushes share the server's
    ingress, then the N pulls its egress).
    """
    b = ScheduleBuilder("ps", ranks, size)
    servers = parameter_servers(topology, ranks, ps_server, ps_servers)
    shards = split_range(0, size, len(servers))
    ranks_index = np.arange(len(ranks))
    for k, server in enumerate(servers):
        s = b.node(server)
        workers = ranks_index[ranks_index != s]
        if len(workers) == 0:
            continue
        chunks = chunk_count(int(shards[k + 1] - shards[k]), chunk_size)
        cuts = split_range(int(shards[k]), int(shards[k + 1]), chunks)
        piece = {"lo": cuts[None, :-1], "hi": cuts[None, 1:], "chunk": np.arange(chunks)[None, :], "channel": k}
        push = b.next_ids((len(workers), chunks))
        b.add(workers[:, None], s, op=REDUCE, after_sent=in_order(push), step=0, **piece)
        summed = b.join(s, push.T)  # the server holds chunk j's sum once every push of it arrived
        pull = b.next_ids((len(workers), chunks))
        b.add(s, workers[:, None], op=COPY, deps=[summed[None, :]], after_sent=in_order(pull), step=1, **piece)
    b.info["servers"] = servers
    return b.build()


@register("naive", "every rank sends its full buffer to every other rank, which adds them up (N^2 traffic)",
          "L + (N-1)*S/B through one switch")
def naive(topology: Topology, ranks: list[str], size: int) -> Schedule:
    """All-to-all of whole buffers. Through one switch: ``L + (N-1)*S/B`` (each rank's
    link carries N-1 full buffers each way)."""
    b = ScheduleBuilder("naive", ranks, size)
    n = len(ranks)
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    b.add(src, dst, 0, size, REDUCE, channel=0)
    return b.build()


def _scatter(b: ScheduleBuilder, n: int, bounds: np.ndarray, step: int = 0) -> np.ndarray:
    """Every rank sends part j to rank j, which adds it; returns (n,) ids after which rank j's part is summed."""
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    scattered = b.add(src, dst, bounds[dst], bounds[dst + 1], REDUCE, step=step, channel=0)
    into = np.full((n, n), -1, dtype=np.int64)  # into[j, i]: rank i's part j sent to rank j
    into[dst, src] = scattered
    return b.join(np.arange(n), into)


def _gather(b: ScheduleBuilder, n: int, bounds: np.ndarray, owned: np.ndarray | None = None, step: int = 0) -> None:
    """Every rank sends its part (final once ``owned[rank]`` is delivered) to every other rank."""
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    deps = [owned[src]] if owned is not None else []
    b.add(src, dst, bounds[src], bounds[src + 1], COPY, deps=deps, step=step, channel=0)


@register("direct", "reduce-scatter then all-gather as all-to-all exchanges of S/N pieces",
          "2*(L + (N-1)/N * S/B) through one switch (each port carries (N-1)/N of S each way, twice)")
def direct(topology: Topology, ranks: list[str], size: int) -> Schedule:
    """Direct AllReduce (as ASTRA-sim and MPI call it): rank j owns piece j of N; every rank
    sends piece j to rank j, which adds them up, then rank j sends the summed piece to
    every other rank. Through one switch: ``2*(L + (N-1)/N * S/B)``."""
    b = ScheduleBuilder("direct", ranks, size)
    n = len(ranks)
    if n > 1:
        bounds = split_range(0, size, n)
        _gather(b, n, bounds, _scatter(b, n, bounds), step=1)
    return b.build()


_HALF = "L + (N-1)/N * S/B through one switch (each port carries (N-1)/N of S)"


@register("direct", "every rank sends part j of its buffer to rank j at once, which adds them", _HALF,
          collective="reduce_scatter")
def direct_reduce_scatter(topology: Topology, ranks: list[str], size: int) -> Schedule:
    """Direct ReduceScatter: the first half of ``direct``. Through one switch: ``L + (N-1)/N * S/B``."""
    b = ScheduleBuilder("direct", ranks, size)
    if len(ranks) > 1:
        _scatter(b, len(ranks), split_range(0, size, len(ranks)))
    return b.build()


@register("direct", "every rank sends its part to every other rank at once", _HALF, collective="all_gather")
def direct_all_gather(topology: Topology, ranks: list[str], size: int) -> Schedule:
    """Direct AllGather: the second half of ``direct``. Through one switch: ``L + (N-1)/N * S/B``."""
    b = ScheduleBuilder("direct", ranks, size)
    if len(ranks) > 1:
        _gather(b, len(ranks), split_range(0, size, len(ranks)))
    return b.build()
