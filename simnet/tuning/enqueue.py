"""NCCL's decisions when it enqueues one collective (``src/enqueue.cc``, ``src/transport/nvls.cc``,
``src/transport/net.cc``): the channels it runs on, its chunk size, the pipeline steps NVLS
hands on, and how long a step of LL/LL128 waits whole at the network; and the channels
its send/recv splits a send over (``src/graph/paths.cc``, ``src/enqueue.cc``).
"""

from __future__ import annotations

import math
from dataclasses import replace

from simnet.tuning import rccl
from simnet.tuning.predict import algorithm_bandwidth, sized_bandwidth
from simnet.tuning.search import System, comm_channels, graph
from simnet.tuning.tables import (
    COLLNET_THREAD_THRESHOLD,
    MAX_CHANNELS,
    MAX_P2P_PER_BATCH,
    MAX_THREADS,
    MAX_THREADS_ANY,
    MIN_TRAFFIC_PER_CHANNEL,
    P2P_CHUNK,
    P2P_PER_CHANNEL_NET_BW,
    PCI_BW,
    THREAD_THRESHOLD,
    nvlink_bw_per_link,
)

__all__ = ["nvls_channels", "nvls_heads", "pipeline_step", "pipeline_stages", "lane_channels", "collective_channels",
           "network_wait", "chunk_size", "opened_channels", "p2p_channels", "send_channels"]


def opened_channels(system: System) -> int | None:
    """The channels NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS open instead of the
    communicator's own, or None when neither is set: at most the maximum, at least the
    minimum (copyChannels), within MAXCHANNELS (connect.cc ncclTopoPostset, A connect.cc:706-707)."""
    if not (system.min_channels or system.max_channels):
        return None
    channels = comm_channels(system)
    if system.max_channels:
        channels = min(channels, system.max_channels)
    limit = rccl.MAX_CHANNELS if system.library == "rccl" else MAX_CHANNELS
    return max(1, min(limit, max(channels, system.min_channels)))


def _nvls_tuning(system: System) -> tuple[int, int, int]:
    """(channels, chunk, NVLSTree's largest chunk) of NCCL's NVLS, bytes (nvls.cc
    ncclNvlsTuning, v2.30.7): 16 channels on Hopper, 24 on one Blackwell node, and 128 KiB
    chunks, NVLSTree's 64 KiB from 4 nodes up. Blackwell across nodes is tuned by its NICs
    (ncclNvlsTreeSm100Tuning): two nodes with 400G NICs 32 channels; more nodes 24 with
    400G NICs, and with 800G 24 channels of 256 KiB chunks up to 8 GPUs per node; NVLSTree
    chunks of 64 KiB where the NIC sits behind the GPU's PCIe switch (PXB, as simnet's
    generators place it) and is below 800G."""
    multi_blackwell = system.cc >= 100 and system.nodes > 1
    channels = (32 if system.nodes > 1 else 24) if system.cc >= 100 else 16
    chunk, tree_max = 128 * 1024, None
    ppn, nic = round(system.ppn), system.nic_bw
    if multi_blackwell and system.nodes == 2 and nic >= 48:
        channels, tree_max = 32, 128 * 1024
        if ppn <= 4:
            chunk = tree_max = 256 * 1024
        elif ppn >= 16 or (ppn <= 8 and nic < 96):
            tree_max = 64 * 1024
    elif multi_blackwell and nic >= 96:
        if ppn <= 8:
            channels, chunk, tree_max = 24, 256 * 1024, 256 * 1024
        else:
            channels, tree_max = 32, 128 * 1024 if ppn < 32 else 64 * 1024
    elif multi_blackwell and nic >= 48:
        channels, tree_max = 24, 64 * 1024
    if tree_max is None:
        tree_max = 64 * 1024 if system.nodes >= 4 else chunk
    return channels, chunk, tree_max


def nvls_channels(system: System, algorithm: str = "NVLSTree") -> int:
    """Channels NCCL runs NVLS on (``_nvls_tuning``); NVLS across nodes (with SHARP) no
    more than the communicator's channels (enqueue.cc:2085-2087)."""
    channels = _nvls_tuning(system)[0]
    if algorithm == "NVLS" and system.nodes > 1:
        channels = min(channels, comm_channels(system))
    return channels


def pipeline_step(system: System, algorithm: str, protocol: str, nbytes: int, function: str = "AllReduce") -> int:
    """Bytes one channel hands down its pipeline per step: NCCL's chunk (``chunk_size``), except
    for NVLS AllReduce on one node, whose scatter, reduce and gather warps pass whole loops of
    nHeads chunks, one per GPU (src/device/all_reduce.h:414, ``loopCount = nHeads * chunkSize``;
    the heads are the NVLS graph's channels, one per GPU). A 16 MiB AllReduce on 8 H100 is
    then 4 steps per channel, not 32: its pipeline fills as NCCL's does."""
    chunk = chunk_size(system, algorithm, protocol, nbytes, function)
    return chunk * graph(system, "NVLS").channels if _nvls_one_node(system, algorithm, function) else chunk


def nvls_heads(system: System) -> int:
    """NCCL's NVLS heads (``nvls.nHeads``): one GPU per channel of its NVLS graph, no more than
    the NICs it found them with across nodes (search.cc:754-770, connect.cc:248-266, v2.30.7)."""
    heads = graph(system, "NVLS").channels
    return heads if system.nodes == 1 else min(heads, max(system.nics, 1))


def pipeline_stages(system: System, algorithm: str, function: str = "AllReduce",
                    network_hops: int = 0) -> float | None:
    """Stages of NCCL's Simple pipeline a step passes through, in steps of the replay's lane,
    where they are not the replay's hops (None). Each warp group is taken to run at the
    channel's rate.

    NVLS AllReduce on one node runs three warp groups at once, each a stage fed by the one
    before through NCCL's step FIFO: scatter (send buffer into the NVLS buffers), reduce
    (multimem load-reduce and multicast store) and gather (into the receive buffer)
    (src/device/all_reduce.h:418-457), where the replay has two hops, GPU to NVSwitch and back.

    NVLSTree (all_reduce.h:527-634, v2.30.7) passes each channel's data in loops of nHeads
    chunks (:535 ``loopCount = nHeads * chunkCount``): its scatter and gather warps move a
    whole loop per step (:562-579, ``nelem = loopCount``), two stages of a loop each; its
    reduce warps (a head's NVLS load-reduce, sent on up the tree), the root's reduce-and-
    broadcast and the broadcast warps (received from the tree, multicast) move one chunk,
    the head's (:589-632, ``nelem = chunkCount``), and so does each network send (the
    proxy's, one step a chunk): a path ``network_hops`` sends long (2 x the tree's depth over
    nodes, up and down) passes ``network_hops + 1`` such warp groups, each a chunk, 1/nHeads
    of a loop. In loops: 2 + (2 x network_hops + 1) / nHeads (2.625 on two nodes of 8 H100)."""
    if _nvls_one_node(system, algorithm, function):
        return 3
    if algorithm == "NVLSTree":
        return 2 + (2 * network_hops + 1) / nvls_heads(system)
    return None


def lane_channels(system: System, algorithm: str, channels: int) -> float:
    """NCCL channels one of the replay's lanes stands for that each pass a chunk of it per
    step, side by side, when the collective runs on ``channels``: NVLSTree's lanes are a
    head of one of the two trees, and the channels alternate trees (connect.cc:310-317,
    ``treeUp[c % 2]``, v2.30.7), each passing that head one chunk per loop: half the
    channels. One elsewhere (a lane is a channel, or its pieces are NCCL's whole steps)."""
    return channels / 2 if algorithm == "NVLSTree" else 1.0


def collective_channels(system: System, algorithm: str, protocol: str, nbytes: int, function: str = "AllReduce",
                        opened: int | None = None) -> tuple[int, float]:
    """(channels, share of each channel's threads) NCCL runs one ``function`` of ``nbytes`` on
    (the whole buffer, as ``predict`` takes it), v2.30.7. ``opened``: the channels open to
    it, if not NCCL's own (``comm_channels``, or ``nvls_channels`` for NVLS and NVLSTree).

    enqueue.cc topoGetAlgoInfo (:2069-2114): Ring, Tree and CollNetChain drop channels while
    the bytes are fewer than channels x threads x the protocol's bytes per thread (8 for LL
    and LL128, 64 for Simple, a ring's LL times the ranks, CollNet 512; tuning.cc:586-595),
    then halve their threads the same way down to 3 warps (a tree then takes all of them);
    CollNetDirect steps its channels down by halves with nHeads in the product; NVLS and
    NVLSTree take their own count (``nvls_channels``) and PAT every channel (NCCL sets it no
    thread count). scheduleCollTasksToPlan then gives no channel less than 32 KiB of
    traffic (2 bytes per byte for AllReduce, 1 otherwise, x4 on LL's wire), except CollNet
    and NVLS across nodes, which run on all they were given."""
    nvls = algorithm in ("NVLS", "NVLSTree")
    comm = opened or (nvls_channels(system, algorithm) if nvls else comm_channels(system))
    if nbytes <= 0:
        return comm, 1.0
    threads_share = 1.0
    if nvls:
        channels = comm
    elif algorithm == "CollNetDirect":
        channels, threshold = comm, COLLNET_THREAD_THRESHOLD
        heads = collnet_heads(system)
        switch = 16
        while switch >= 1:  # enqueue.cc:2073-2082
            while (dropping := nbytes < channels * MAX_THREADS_ANY * heads * threshold) and channels > switch:
                if channels == switch + switch // 2:
                    threshold //= 2
                channels -= 1
            if not dropping:
                break
            switch //= 2
    elif algorithm == "PAT":
        channels = comm
    elif system.library == "rccl":  # A enqueue.cc:1677-1686: channels drop, threads stay ("do not reduce threads")
        threshold = rccl.THREAD_THRESHOLD[protocol] * (system.ranks if algorithm == "Ring" and protocol == "LL" else 1)
        channels = comm
        while nbytes < channels * rccl.MAX_THREADS[protocol] * threshold and channels >= 2:
            channels -= 1
        return channels, 1.0  # RCCL 2.21.5 has no minimum traffic per channel (scheduleCollTasksToPlan)
    else:
        if algorithm == "CollNetChain":
            threads, threshold = MAX_THREADS_ANY, COLLNET_THREAD_THRESHOLD
        else:
            threads, threshold = MAX_THREADS[protocol], THREAD_THRESHOLD[protocol]
            ring = graph(system, "Ring")
            if algorithm == "Ring" and protocol == "Simple" and ring.bw_intra * ring.channels <= PCI_BW:
                threads = 256
            if algorithm == "Ring" and protocol == "LL":
                threshold *= system.ranks
        full, channels = threads, comm
        while nbytes < channels * threads * threshold and channels >= 2:
            channels -= 1
        while nbytes < channels * threads * threshold and threads % 128 == 0:
            threads //= 2
        if algorithm != "Tree":  # NCCL gives a tree every thread after all
            threads_share = min(1.0, max(threads, 3 * 32) / full)
    if algorithm in ("CollNetDirect", "CollNetChain") or (algorithm == "NVLS" and system.nodes > 1):
        return channels, threads_share
    traffic = nbytes * (2 if function == "AllReduce" else 1) * (4 if protocol == "LL" else 1)
    cells = -(-traffic // MIN_TRAFFIC_PER_CHANNEL)
    per_channel = -(-(max(MIN_TRAFFIC_PER_CHANNEL, traffic) // channels) // MIN_TRAFFIC_PER_CHANNEL)
    return max(1, min(channels, -(-cells // per_channel))), threads_share


def network_wait(system: System, algorithm: str, protocol: str, nbytes: int, function: str = "AllReduce") -> float:
    """How long a step of LL or LL128 waits, in steps at the channel's own rate, before the
    proxy sends it into the network: the proxy sends whole steps only, once the GPU has
    written all of it (src/transport/net.cc sendProxyProgress), and the GPU writes it at
    the rate NCCL's model gives a channel of the same GPUs on one node, where no network
    holds it back: the ratio of this system's per-channel rate to that one's, at most 1.
    On two H100 nodes LL128 waits a whole step, LL 0.3-0.6 of one by size. A step that
    comes off the network rather than NVLink (one GPU per node) waits a whole step."""
    if system.nodes <= 1 or system.ppn < 2:
        return 1.0
    running, threads = collective_channels(system, algorithm, protocol, nbytes, function)
    comm = comm_channels(system)
    here = sized_bandwidth(system, algorithm, protocol, nbytes, function, running / comm * threads, ceiling=True)
    here /= running
    one = replace(system, ranks=max(1, round(system.ppn)), nodes=1)
    alone = algorithm_bandwidth(one, algorithm, protocol, function, ceiling=True) / comm_channels(one)
    return min(1.0, here / alone) if alone > 0 else 1.0


def _nvls_one_node(system: System, algorithm: str, function: str) -> bool:
    """NCCL's one-node NVLS AllReduce kernel (all_reduce.h:410-457): scatter, reduce and gather warps."""
    return algorithm == "NVLS" and function == "AllReduce" and system.nodes == 1


def chunk_size(system: System, algorithm: str, protocol: str, nbytes: int, function: str = "AllReduce") -> int:
    """NCCL's pipeline chunk for one ``function`` (AllReduce unless named), bytes per channel
    (enqueue.cc calcCollChunking, init.cc:810-826, collectives.h:19-34): Simple moves 4 MiB
    / 8 = 512 KiB steps, Ring's in 1 MiB slices of its 2 MiB chunks (RCCL's too); LL carries
    8 of every 16 bytes of its 64 KiB steps (32 KiB; RCCL's steps are 32 KiB, ``rccl.LL_CHUNK``);
    LL128 15 of every 16 lines of its 600 KiB steps (RCCL 7 of 8 words of 56 KiB),
    smaller for trees of small messages; NVLS 128 KiB, halved down to 16 KiB, and NVLSTree
    down to 32 KiB, as the message gets small against channels x heads x chunk; RCCL's Tree
    on Simple halves its 512 KiB down to 32 KiB while the channel has fewer steps than the
    tree is deep (8, 4 and 1 times)."""
    ppn = max(1, round(system.ppn))
    # NCCL chunks each channel's own bytes (enqueue.cc:717-736): the channels the collective runs on
    channels = collective_channels(system, algorithm, protocol, nbytes, function)[0]
    if algorithm in ("NVLS", "NVLSTree"):
        # concurrentOps = channels x the NVLS heads (enqueue.cc:2280, v2.30.7): one per GPU of the NVLS
        # graph, no more than the NICs it found them with (search.cc:754-770), not one per NIC
        ops = channels * (ppn if system.nodes == 1 else nvls_heads(system))
        if algorithm == "NVLS":
            chunk = 32 * 1024 if system.nodes > 1 and algorithm_bandwidth(system, "NVLS", "Simple") < 150 \
                else _nvls_tuning(system)[1]
            for factor, smaller in ((64, 65536), (8, 32768), (2, 16384)):
                if nbytes < factor * ops * chunk and chunk > smaller:
                    chunk = smaller
            return chunk
        _, nvls_chunk, tree_max = _nvls_tuning(system)
        chunk = min(nvls_chunk, tree_max)
        for factor, smaller in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
            if nbytes < factor * ops * chunk and chunk > smaller:
                chunk = smaller
        return chunk
    if algorithm in ("CollNetDirect", "CollNetChain"):
        return _collnet_chunk(system, algorithm, nbytes, channels)
    amd = system.library == "rccl"
    if protocol == "LL":
        return rccl.LL_CHUNK if amd else 32 * 1024
    if protocol == "LL128":
        chunk = rccl.LL128_CHUNK if amd else 614400 // 16 * 15
        if algorithm == "Tree":  # the same halving in RCCL (A enqueue.cc:1899-1904)
            steps = 1 + int(math.log2(system.nodes)) + 0.1 * system.ppn
            while nbytes // (channels * chunk) < steps * 64 / ppn and chunk > 131072:
                chunk //= 2
            while nbytes // (channels * chunk) < steps * 16 / ppn and chunk > 32768:
                chunk //= 2
        return chunk
    if function in ("Broadcast", "Reduce"):  # BROADCAST/REDUCE_CHUNKSTEPS = 1 step of 512 KiB (collectives.h:27-34)
        return 512 * 1024
    # RCCL halves a tree's step for a deep tree (A enqueue.cc:1853-1858, connect.cc:292)
    if amd and algorithm == "Tree":
        depth, chunk = ppn - 1 + int(math.log2(system.nodes)), 512 * 1024
        for steps, smallest in ((8, 131072), (4, 65536), (1, 32768)):
            while nbytes // (channels * chunk) < depth * steps and chunk > smallest:
                chunk //= 2
        return chunk
    return 1024 * 1024 if algorithm == "Ring" else 512 * 1024


def collnet_heads(system: System) -> int:
    """NCCL's CollNetDirect heads (``collnetDirect.nHeads``): one per channel of its graph, no
    more than the GPUs of a node (connect.cc:233)."""
    return max(1, min(graph(system, "CollNetDirect").channels, round(system.ppn)))


def _collnet_chunk(system: System, algorithm: str, nbytes: int, channels: int) -> int:
    """CollNet's chunk (enqueue.cc:2231-2257, v2.30.7), Simple's 512 KiB step (CollNetChain's
    at most 256 KiB) halved while a channel (CollNetDirect: each of its heads) has fewer
    chunks than 64, then 8, then 8 (Chain: 1) times the pattern is deep, down to 128, 64 and
    32 KiB: CollNetDirect is 2 deep (leaves up to the heads, the heads through the network;
    1 with one GPU a node: connect.cc:238), CollNetChain as deep as the ranks over the nodes
    (``nRanks / nNodes``, truncated: connect.cc:472), so a mid-size collective pipelines in many
    small chunks."""
    per_node = max(1, system.ranks // max(1, system.nodes))  # NCCL's nRanks / nNodes, truncated
    if algorithm == "CollNetDirect":
        spread, depth, chunk = channels * collnet_heads(system), (2 if per_node > 1 else 1), 512 * 1024
        rounds = ((64, 131072), (8, 65536), (8, 32768))
    else:
        spread, depth, chunk = channels, per_node, 256 * 1024
        rounds = ((64, 131072), (8, 65536), (1, 32768))
    for loops, smallest in rounds:
        while nbytes // (spread * chunk) < depth * loops and chunk > smallest:
            chunk //= 2
    return chunk


def _pow2_up(n: int) -> int:
    """The least power of 2 at or above ``n`` (>= 1): NCCL's pow2Up."""
    return 1 << max(0, n - 1).bit_length()


def _net_peer_channels(system: System) -> int:
    """Channels per peer across the network when NCCL_NCHANNELS_PER_NET_PEER is unset
    (ncclTopoGetNchannels, src/graph/paths.cc:943-951, v2.30.7): one per NIC the GPU counts
    (ncclTopoGetLocalNetCountByBw, src/graph/topo.cc:1974-2000: its nearest NICs, added
    until their rate reaches the GPU's own PCIe path), and more to drive those NICs at
    ``P2P_PER_CHANNEL_NET_BW`` a channel; 2 with no NIC."""
    if system.nics < 1:
        return 2
    local = max(1, system.nics // max(1, round(system.ppn)))  # the NICs nearest the GPU
    count = next((k for k in range(1, local + 1) if k * system.nic_bw >= system.pci_bw), local)
    return max(count, -(-int(count * system.nic_bw) // P2P_PER_CHANNEL_NET_BW))


def p2p_channels(system: System) -> tuple[int, int]:
    """(channels NCCL's send/recv runs on, most channels of one peer): NCCL's p2pnChannels
    and p2pnChannelsPerPeer (src/graph/paths.cc, v2.30.7).

    p2pnChannels (ncclTopoComputeP2pChannels :977-991): the communicator's channels
    (``opened_channels``, else ``comm_channels``) at most NCCL_MAX_P2P_NCHANNELS, at least
    NCCL_MIN_P2P_NCHANNELS, rounded up to a power of 2, at most MAXCHANNELS. Per peer
    (ncclTopoComputeP2pChannelsPerPeer :962-975, ncclTopoGetNchannels :920-955): the fewest
    any peer takes; an NVLink peer 2 per NVLink, a PCIe peer 2, a peer across the network
    NCCL_NCHANNELS_PER_NET_PEER, else ``_net_peer_channels``; rounded up to a power of 2
    (:989). Across nodes with NCCL_NCHANNELS_PER_NET_PEER unset it is halved while one
    round of every peer (``MAX_P2P_PER_BATCH`` a batch) would need more than p2pnChannels;
    otherwise it is at most p2pnChannels (:993-1003)."""
    channels = min(opened_channels(system) or comm_channels(system), system.max_p2p_channels or MAX_CHANNELS)
    channels = min(MAX_CHANNELS, _pow2_up(max(channels, system.min_p2p_channels or 1)))
    peers = []
    if system.ranks > system.nodes:  # peers on the same node
        links = int(system.nvlink_bw / nvlink_bw_per_link(system.cc))
        peers.append(2 * max(1, links) if system.nvlink_bw > 0 else 2)
    if system.nodes > 1:
        peers.append(system.net_peer_channels or _net_peer_channels(system))
    per_peer = _pow2_up(min(peers, default=MAX_CHANNELS))
    if system.nodes > 1 and not system.net_peer_channels:
        while per_peer * -(-system.ranks // MAX_P2P_PER_BATCH) > channels and per_peer > 1:
            per_peer //= 2
    return channels, min(channels, per_peer)


def p2p_step(system: System) -> int:
    """NCCL's point-to-point step (p2pChunkSize), bytes: ``P2P_CHUNK`` by what the ranks
    reach each other over, twice the network's on Arm hosts of SM100+ GPUs
    (src/init.cc:829-838 computeBuffSizes, v2.30.7)."""
    if system.nodes > 1:
        return P2P_CHUNK["net"] * (2 if system.cpu == "arm" and system.cc >= 100 else 1)
    return P2P_CHUNK["nvlink" if system.nvlink_bw > 0 else "pci"]


def send_channels(system: System, nbytes: int) -> int:
    """Channels NCCL splits one send of ``nbytes`` over (v2.30.7). scheduleP2pTasksToPlan
    (src/enqueue.cc:1143-1146) gives every send at most p2pnChannelsPerPeer and aims at
    one round of all peers: at least that halved while channels x ranks exceed
    p2pnChannels. addP2pToPlan (:913-926) then takes no more of the latter than parts of
    half a step across nodes (an eighth on one node) need, and doubles them, up to the
    former, while a part is over a step (32 steps on one node)."""
    channels, most = p2p_channels(system)
    fewest = most
    while fewest * system.ranks > channels and fewest > 1:
        fewest //= 2
    if nbytes <= 0:
        return 1
    step = p2p_step(system)
    least, largest = (step // 2, step) if system.nodes > 1 else (step // 8, step * 32)
    parts = min(fewest, -(-nbytes // least))
    while max(least, -(-nbytes // parts)) > largest and parts <= most // 2:
        parts *= 2
    return parts
