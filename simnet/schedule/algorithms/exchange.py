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
  own connection, which routing takes through consecutive NICs (``simnet.topology.routing``);
  and as NCCL splits every send of a NIC over its ports (net_ib/p2p.cc:110-116, v2.30.7), one
  stripe per port of each NIC, through consecutive ports.
  Under ``model: nccl`` each send is first cut into the parts NCCL runs it on, one per
  channel (``send_channels``, from ``simnet.tuning.enqueue.send_channels``; NCCL's
  ncclP2pPartBounds, src/include/device.h:260-270, v2.30.7: parts of ceil(bytes / parts)
  rounded up to 4 KiB, the last one shorter), each its own connection (channel), so ECMP
  hashes them apart and a GPU with several NICs sends them through consecutive NICs. Where
  every part of every send would take its send's one route, the parts are one connection:
  the fluid network shares a link among connections alike, so k equal parts of every send
  on one path move as one does.
* ``pairwise`` (all_to_all, textbook): N-1 rounds; in round k rank i sends block (i, i+k)
  to rank i+k and starts round k+1 once its round-k send and receive are done.
"""

from __future__ import annotations

import numpy as np

from simnet.schedule.channels import send_stripes
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


def _parts(lo: np.ndarray, hi: np.ndarray, parts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the send each part cuts, its part index, its byte range ``[lo, hi)`` as rows): every
    send ``[lo, hi)`` cut into ``parts`` parts as NCCL cuts a send over its channels
    (ncclP2pPartBounds, src/include/device.h:260-270, v2.30.7: ceil(bytes / parts) rounded up
    to 4 KiB each, the last shorter); an empty part is no transfer, an empty send one."""
    span = hi - lo
    size = (-(-span // parts) + 4095) // 4096 * 4096
    send = np.repeat(np.arange(len(lo)), parts)
    part = np.tile(np.arange(parts), len(lo))
    begin, end = np.minimum(part * size[send], span[send]), np.minimum((part + 1) * size[send], span[send])
    keep = (end > begin) | ((part == 0) & (span[send] == 0))
    return send[keep], part[keep], np.stack([lo[send] + begin, lo[send] + end])[:, keep]


def _parts_part_ways(topology: Topology, ranks: list[str], hops: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                     parts: int, stride: int) -> bool:
    """Whether any part but the first of a send would take another route than the first
    (``hops``: (from, to, flow) rank positions and connection of every hop of a first part;
    part j's flow is j x ``stride`` more)."""
    route = topology.route_indices
    for u, v, flow in hops:
        for a, b, f in set(zip(u.tolist(), v.tolist(), flow.tolist())):
            first = route(ranks[a], ranks[b], f)
            if any(route(ranks[a], ranks[b], f + j * stride) != first for j in range(1, parts)):
                return True
    return False


def _send(b: ScheduleBuilder, topology: Topology, ranks: list[str], src: np.ndarray, dst: np.ndarray,
          lo: np.ndarray, hi: np.ndarray, relay: np.ndarray, parts: int = 1) -> None:
    """Sends ``src -> dst`` of ``[lo, hi)``, through ``relay`` where it is not -1 (a copy over
    to it first), each cut into ``parts`` parts on channels of their own (``_parts``), unless
    every part would take its send's one route (``_parts_part_ways``). The hop that leaves
    the host (from the relay, or from the sender) is cut into one stripe per NIC its GPU's
    plugin device stripes over and per port of each NIC (``send_stripes``), stripe j of part p
    on connection p x the most stripes + j, so consecutive stripes leave through consecutive
    NICs of the group and ports of each."""
    sender = np.where(relay >= 0, relay, src)
    host_of, stripes = send_stripes(topology, ranks)
    striped = np.where(host_of[sender] != host_of[dst], stripes[sender], 1)
    stride = int(striped.max(initial=1))
    if parts > 1:
        first = [(src[relay >= 0], relay[relay >= 0], np.zeros(int((relay >= 0).sum()), dtype=np.int64))]
        first += [(sender[striped > s], dst[striped > s], np.full(int((striped > s).sum()), s)) for s in range(stride)]
        parts = parts if _parts_part_ways(topology, ranks, first, parts, stride) else 1
    send, part, (lo, hi) = _parts(lo, hi, parts)
    src, dst, relay, sender, channel = src[send], dst[send], relay[send], sender[send], part * stride
    hop = relay >= 0
    if hop.any():
        copied = b.add(src[hop], relay[hop], lo[hop], hi[hop], COPY, channel=channel[hop])
    cut = np.maximum(1, np.minimum(striped[send], hi - lo))  # no empty stripes
    piece = np.repeat(np.arange(len(src)), cut)
    j = np.arange(len(piece)) - np.repeat(np.cumsum(cut) - cut, cut)
    span, count = (hi - lo)[piece], cut[piece]
    after = np.full(len(src), -1, dtype=np.int64)
    if hop.any():
        after[hop] = copied
    b.add(sender[piece], dst[piece], lo[piece] + span * j // count, lo[piece] + span * (j + 1) // count, COPY,
          deps=[after[piece]], channel=channel[piece] + j)


@register("direct", "every rank sends block j of its buffer to rank j at once (PXN across hosts, as NCCL)",
          "L + (N-1)/N * S/B through one switch (each port carries (N-1)/N of S each way)",
          options=("pxn", "send_channels"), collective="all_to_all", lays_out_nics=True)
def direct_all_to_all(topology: Topology, ranks: list[str], size: int, pxn: bool = True,
                      send_channels: int = 1) -> Schedule:
    """NCCL's AllToAll: N-1 sends of S/N per rank, all at once, each over ``send_channels``
    channels (``_send``). Through one switch, path latency L, bandwidth B: ``L + (N-1)/N * S/B``."""
    n = len(ranks)
    b = ScheduleBuilder("direct", ranks, n * size, size)
    b.expect(n * (n - 1))  # one send per pair at least (PXN adds a hop to some): refused before it is built
    blocks = split_range(0, n * size, n * n)
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    relay = pxn_relays(topology, ranks, src, dst) if pxn else np.full(len(src), -1)
    _send(b, topology, ranks, src, dst, blocks[src * n + dst], blocks[src * n + dst + 1], relay, send_channels)
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
          "L + S/B", options=("pxn", "send_channels", "wrap", "back"), collective="send_recv", lays_out_nics=True)
def direct_send_recv(topology: Topology, ranks: list[str], size: int, pxn: bool = True,
                     send_channels: int = 1, wrap: bool = True, back: bool = False) -> Schedule:
    """nccl-tests' SendRecv: every rank sends ``size`` bytes to the next and receives as
    many from the previous, each send over ``send_channels`` channels (``_send``); without
    ``wrap`` the last rank sends to none and the first receives nothing (a pipeline's stages
    passing activations on, ``simnet.run.training``); ``back``: each to the previous instead
    (the gradients coming back), without ``wrap`` the first to none. Contention-free: ``L + S/B``."""
    n = len(ranks)
    b = ScheduleBuilder("direct", ranks, n * size, size)
    if n > 1:
        src = np.arange(0 if wrap or not back else 1, n if wrap or back else n - 1)
        dst = (src + (-1 if back else 1)) % n
        relay = pxn_relays(topology, ranks, src, dst) if pxn else np.full(len(src), -1)
        _send(b, topology, ranks, src, dst, src * size, (src + 1) * size, relay, send_channels)
    return b.build()
