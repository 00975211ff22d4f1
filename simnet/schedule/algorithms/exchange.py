"""AllToAll and SendRecv: point-to-point exchanges, as NCCL runs them on its send/recv.

Both address their data in one space of N x size bytes (``simnet.schedule.kinds``):
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

from simnet.schedule.registry import register
from simnet.schedule.transfers import COPY, Schedule, ScheduleBuilder, split_range
from simnet.topology.graph import Topology

__all__ = ["pxn_relays", "direct_all_to_all", "pairwise_all_to_all", "direct_send_recv"]


def pxn_relays(topology: Topology, ranks: list[str], src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Per send (rank positions ``src`` -> ``dst``), the rank PXN relays it through: on the
    sender's host, the GPU next to the NIC rail the receiver sits on (rails numbered in NIC
    order over each host's GPUs), when the two hosts differ, that GPU is one of ``ranks``
    and is not the sender; else -1."""
    position = {gpu: i for i, gpu in enumerate(ranks)}
    hosts, host_of = np.unique(np.array([topology.label(gpu, "node") for gpu in ranks], dtype=object),
                               return_inverse=True)
    rail_of = np.full(len(ranks), -1, dtype=np.int64)  # the rail index of each rank's own NIC
    rails = {host: topology.rails(gpus) for host, gpus in topology.groups("node").items() if host in set(hosts)}
    near = np.full((len(hosts), max((len(r) for r in rails.values()), default=0) + 1), -1, dtype=np.int64)
    for h, host in enumerate(hosts):  # near[host, rail index]: the rank position next to that rail
        for index, (_, gpu) in enumerate(rails.get(host, [])):
            if gpu in position:
                rail_of[position[gpu]] = index
                near[h, index] = position[gpu]
    relay = near[host_of[src], rail_of[dst]]  # a rail index of -1 reads the last column: -1
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
    b = ScheduleBuilder("direct", ranks, n * size, size)
    b.expect(n * (n - 1))  # one send per pair at least (PXN adds a hop to some): refused before it is built
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
    b = ScheduleBuilder("pairwise", ranks, n * size, size)
    b.expect(n * (n - 1))
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
    b = ScheduleBuilder("direct", ranks, n * size, size)
    if n > 1:
        src = np.arange(n)
        dst = (src + 1) % n
        relay = pxn_relays(topology, ranks, src, dst) if pxn else np.full(n, -1)
        _send(b, src, dst, src * size, (src + 1) * size, relay)
    return b.build()
