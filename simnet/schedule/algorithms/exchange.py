"""AllToAll and SendRecv: point-to-point exchanges, as NCCL runs them on its send/recv.

Both address their data in one space of N x size bytes (``simnet.schedule.kinds``):
block (i, j) of ``all_to_all`` is what rank i sends rank j; rank i's buffer in
``send_recv`` is ``[i*size, (i+1)*size)``, sent to rank i+1 (nccl-tests' sendrecv_perf).

* ``direct``: every send at once. Across hosts NCCL routes a send through PXN by default
  (``NCCL_P2P_PXN_LEVEL=2``, src/graph/search.cc; the NIC is the one nearest the GPU with
  the peer's local index, src/graph/search.cc ``ncclTopoGetNetDev``): the data first
  crosses NVLink to the local GPU with the peer's local index and leaves through that GPU's
  NIC, so on a rail-optimized fabric it stays on the peer's rail. ``pxn: false`` sends it
  through the sender's own NIC instead. Where a network plugin groups several NICs of a GPU
  into one device (EFA, ``search.net_devices``) it stripes every send over them, NCCL's
  send/recv too (aws-ofi-nccl 2daf7d30 src/nccl_ofi_scheduler.cpp:77-120), so a send that
  leaves its host through such a GPU is cut into one stripe per NIC of the group, each its
  own connection, which routing takes through consecutive NICs (``simnet.topology.routing``).
* ``pairwise`` (all_to_all, textbook): N-1 rounds; in round k rank i sends block (i, i+k)
  to rank i+k and starts round k+1 once its round-k send and receive are done.
"""

from __future__ import annotations

import numpy as np

from simnet.schedule.registry import register
from simnet.schedule.transfers import COPY, Schedule, ScheduleBuilder, split_range
from simnet.topology.graph import Topology
from simnet.tuning.search import net_devices

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


def _striping(topology: Topology, ranks: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per rank position: its host (an index), and how many NICs the network plugin stripes
    its sends over (the NICs of its device, ``search.net_devices``: more than one only where
    EFA's plugin groups a GPU's NICs; else 1)."""
    hosts = {}
    host_of = np.array([hosts.setdefault(topology.label(gpu, "node"), len(hosts)) for gpu in ranks], dtype=np.int64)
    position = {gpu: i for i, gpu in enumerate(ranks)}
    stripes = np.ones(len(ranks), dtype=np.int64)
    for host, gpus in topology.groups("node").items():
        if host in hosts:
            for device in net_devices(topology, topology.rails(gpus)):
                for _, gpu in device:
                    if gpu in position:
                        stripes[position[gpu]] = len(device)
    return host_of, stripes


def _send(b: ScheduleBuilder, topology: Topology, ranks: list[str], src: np.ndarray, dst: np.ndarray,
          lo: np.ndarray, hi: np.ndarray, relay: np.ndarray) -> None:
    """Sends ``src -> dst`` of ``[lo, hi)``, through ``relay`` where it is not -1 (a copy over
    to it first). The hop that leaves the host (from the relay, or from the sender) is cut
    into one stripe per NIC its GPU's plugin device stripes over (``_striping``), stripe j on
    connection j, so consecutive stripes leave through consecutive NICs of the group."""
    hop = relay >= 0
    if hop.any():
        first = b.add(src[hop], relay[hop], lo[hop], hi[hop], COPY)
    sender = np.where(hop, relay, src)
    host_of, stripes = _striping(topology, ranks)
    parts = np.where(host_of[sender] != host_of[dst], stripes[sender], 1)
    parts = np.maximum(1, np.minimum(parts, hi - lo))  # no empty stripes
    send = np.repeat(np.arange(len(src)), parts)
    j = np.arange(len(send)) - np.repeat(np.cumsum(parts) - parts, parts)
    span, cut = (hi - lo)[send], parts[send]
    after = np.full(len(src), -1, dtype=np.int64)
    if hop.any():
        after[hop] = first
    b.add(sender[send], dst[send], lo[send] + span * j // cut, lo[send] + span * (j + 1) // cut, COPY,
          deps=[after[send]], channel=j)


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
    _send(b, topology, ranks, src, dst, blocks[src * n + dst], blocks[src * n + dst + 1], relay)
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
        _send(b, topology, ranks, src, dst, src * size, (src + 1) * size, relay)
    return b.build()
