"""AllToAll and SendRecv: point-to-point exchanges, as NCCL runs them on its send/recv.

Both address their data in one space of N x size bytes (``simnet.collectives.kinds``):
block (i, j) of ``all_to_all`` is what rank i sends rank j; rank i's buffer in
``send_recv`` is ``[i*size, (i+1)*size)``, sent to rank i+1 (nccl-tests' sendrecv_perf).

* ``direct``: every send at once. Across hosts NCCL routes a send through PXN by default
  (``NCCL_P2P_PXN_LEVEL=2``, src/graph/search.cc; the NIC is the one nearest the GPU with
  the peer's local index, src/graph/search.cc ``ncclTopoGetNetDev``): the data first
  crosses NVLink to the local GPU with the peer's local index and leaves through that GPU's
  NIC, so on a rail-optimized fabric it stays on the peer's rail. ``pxn: false`` sends it
  through the sender's own NIC instead.
* ``pairwise`` (all_to_all, textbook): N-1 rounds; in round k rank i sends block (i, i+k)
  to rank i+k and starts round k+1 once its round-k send and receive are done.
"""

from __future__ import annotations

import numpy as np

from simnet.collectives.channels import host_positions
from simnet.collectives.registry import register
from simnet.collectives.schedule import COPY, Schedule, ScheduleBuilder, split_range
from simnet.topology.model import Topology

__all__ = ["pxn_relays", "direct_all_to_all", "pairwise_all_to_all", "direct_send_recv"]


def pxn_relays(topology: Topology, ranks: list[str], src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Per send (rank positions ``src`` -> ``dst``), the rank PXN relays it through: the GPU
    on the sender's host with the receiver's local index, when the two are on different
    hosts that have NICs of their own and that GPU is not the sender; else -1."""
    hosts = host_positions(topology, ranks)
    host_of = np.empty(len(ranks), dtype=np.int64)
    local = np.empty(len(ranks), dtype=np.int64)
    for h, members in enumerate(hosts):
        host_of[members], local[members] = h, np.arange(len(members))
    if len(hosts) < 2:
        return np.full(len(src), -1, dtype=np.int64)
    width = max(len(m) for m in hosts)
    table = np.full((len(hosts), width), -1, dtype=np.int64)  # host, local index -> rank position
    for h, members in enumerate(hosts):
        if topology.rails([ranks[i] for i in members]):
            table[h, : len(members)] = members
    relay = table[host_of[src], local[dst]]
    return np.where((host_of[src] != host_of[dst]) & (relay != src), relay, -1)


def _send(b: ScheduleBuilder, src: np.ndarray, dst: np.ndarray, lo: np.ndarray, hi: np.ndarray,
          relay: np.ndarray, deps: list[np.ndarray] = (), step=0) -> np.ndarray:
    """Sends ``src -> dst`` of ``[lo, hi)``, through ``relay`` where it is not -1 (a copy over
    to it first); returns the ids whose delivery completes each send."""
    hop = relay >= 0
    first = b.add(src, np.where(hop, relay, dst), lo, hi, COPY, deps=list(deps), step=step)
    done = first.copy()
    if hop.any():
        done[hop] = b.add(relay[hop], dst[hop], lo[hop], hi[hop], COPY, deps=[first[hop]], step=step)
    return done


@register("direct", "every rank sends block j of its buffer to rank j at once (PXN across hosts, as NCCL)",
          "L + (N-1)/N * S/B through one switch (each port carries (N-1)/N of S each way)",
          options=("pxn",), collective="all_to_all")
def direct_all_to_all(topology: Topology, ranks: list[str], size: int, pxn: bool = True) -> Schedule:
    """NCCL's AllToAll: N-1 sends of S/N per rank, all at once. Through one switch, path
    latency L, bandwidth B: ``L + (N-1)/N * S/B``."""
    n = len(ranks)
    b = ScheduleBuilder("direct", ranks, n * size)
    blocks = split_range(0, n * size, n * n)
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    relay = pxn_relays(topology, ranks, src, dst) if pxn else np.full(len(src), -1)
    _send(b, src, dst, blocks[src * n + dst], blocks[src * n + dst + 1], relay)
    return b.build()


@register("pairwise", "textbook pairwise exchange: N-1 rounds, round k pairing rank i with rank i+k",
          "(N-1) * (L + S/(N*B)) through one switch", collective="all_to_all")
def pairwise_all_to_all(topology: Topology, ranks: list[str], size: int) -> Schedule:
    """Pairwise AllToAll. Through one switch: ``(N-1) * (L + S/(N*B))``."""
    n = len(ranks)
    b = ScheduleBuilder("pairwise", ranks, n * size)
    blocks = split_range(0, n * size, n * n)
    r = np.arange(n)
    sent = received = np.full(n, -1, dtype=np.int64)
    for k in range(1, n):
        peer = (r + k) % n
        ids = b.add(r, peer, blocks[r * n + peer], blocks[r * n + peer + 1], COPY, deps=[sent, received], step=k)
        sent, received = ids, ids[(r - k) % n]
    return b.build()


@register("direct", "rank i sends its buffer to rank i+1, all at once (nccl-tests' sendrecv; PXN across hosts)",
          "L + S/B", options=("pxn",), collective="send_recv")
def direct_send_recv(topology: Topology, ranks: list[str], size: int, pxn: bool = True) -> Schedule:
    """nccl-tests' SendRecv: every rank sends ``size`` bytes to the next and receives as
    many from the previous. Contention-free: ``L + S/B``."""
    n = len(ranks)
    b = ScheduleBuilder("direct", ranks, n * size)
    if n > 1:
        src = np.arange(n)
        dst = (src + 1) % n
        relay = pxn_relays(topology, ranks, src, dst) if pxn else np.full(n, -1)
        _send(b, src, dst, src * size, (src + 1) * size, relay)
    return b.build()
