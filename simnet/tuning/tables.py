"""NCCL's tables and constants, each from **NCCL v2.30.7** (tag ``v2.30.7-1``) with the file and
lines it comes from (``src/graph/tuning.cc``, ``src/include/device.h``, ``comm.h``, ``topo.h``,
``nccl_tuner.h``): algorithm and protocol names, base and per-hop latencies, per-channel
bandwidth caps, the speeds its topology search tries.
"""

from __future__ import annotations

from simnet.topology.hardware import NET, NVLINK, PCIE

ALGORITHMS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
"""NCCL's algorithms in its own order (nccl_tuner.h:28-35)."""


FUNCTION_ALGORITHMS = {
    "AllReduce": ALGORITHMS[:6],
    "ReduceScatter": ("Ring", "CollNetDirect", "NVLS", "PAT"),
    "AllGather": ("Ring", "CollNetDirect", "NVLS", "PAT"),
    "Broadcast": ("Ring",),
    "Reduce": ("Ring",),
}
"""The algorithms NCCL's tuner times for each function (tuning.cc:293-298): PAT is
AllGather/ReduceScatter only, Broadcast and Reduce run on Ring alone."""


PROTOCOLS = ("LL", "LL128", "Simple")
"""NCCL's protocols in its own order (nccl_tuner.h:38-40)."""


FUNCTIONS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
"""The functions an ``NCCL_ALGO``/``NCCL_PROTO`` section may name (``ncclFuncStr``, init.cc:52)."""


SIMNET_NAMES = {"Tree": "tree", "Ring": "ring", "CollNetDirect": "collnet_direct", "CollNetChain": "collnet_chain",
                "NVLS": "nvls", "NVLSTree": "nvls_tree", "PAT": "pat"}


NCCL_NAMES = {v: k for k, v in SIMNET_NAMES.items()}


def native(function: str, algorithm: str) -> str | None:
    """NCCL's name for simnet's ``algorithm`` when NCCL's tuner times it for ``function``
    (an NCCL function name), else None: it runs on NCCL's point-to-point sends."""
    name = NCCL_NAMES.get(algorithm)
    return name if name in FUNCTION_ALGORITHMS.get(function, ()) else None


# ---------------------------------------------------------------- constants
# baseLatencies[algo][proto], us (tuning.cc:150-155)
BASE_LATENCY = {
    "Tree": (6.8, 14.0, 8.4), "Ring": (6.6, 14.0, 8.4), "CollNetDirect": (0.0, 0.0, 0.0),
    "CollNetChain": (0.0, 0.0, 0.0), "NVLS": (0.0, 0.0, 0.0), "NVLSTree": (0.0, 0.0, 0.0), "PAT": (8.0, 8.0, 8.0),
}


# hwLatencies[hw][algo][proto], us (tuning.cc:157-176); hw = NVLINK, PCI, NET
HW_LATENCY = {
    NVLINK: {"Tree": (0.6, 1.25, 4.0), "Ring": (0.6, 1.9, 3.4), "CollNetDirect": (0.0, 0.0, 3.7),
             "CollNetChain": (0.0, 0.0, 2.8), "NVLS": (0.0, 0.0, 25.0), "NVLSTree": (0.0, 0.0, 25.0),
             "PAT": (0.0, 0.0, 4.0)},
    PCIE: {"Tree": (1.0, 1.9, 4.0), "Ring": (1.0, 2.5, 5.7), "CollNetDirect": (0.0, 0.0, 3.7),
           "CollNetChain": (0.0, 0.0, 2.8), "NVLS": (0.0, 0.0, 0.0), "NVLSTree": (0.0, 0.0, 0.0),
           "PAT": (0.0, 0.0, 4.0)},
    NET: {"Tree": (5.0, 8.5, 14.0), "Ring": (2.7, 4.0, 14.0), "CollNetDirect": (0.0, 0.0, 31.0),
          "CollNetChain": (0.0, 0.0, 30.0), "NVLS": (0.0, 0.0, 18.0), "NVLSTree": (0.0, 0.0, 20.9),
          "PAT": (0.0, 0.0, 14.0)},
}


# per-arch (Volta, Ampere, Hopper, Blackwell) x node column (1 node, 2 nodes, more) tables, GB/s
LL_MAX_BW = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))  # :178-183


PER_CH_MAX_RING_LL128_BW = ((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (40.0,) * 3)  # :184-190


PER_CH_MAX_TREE_LL128_BW = ((20.0,) * 3, (20.0,) * 3, (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))  # :191-197


PER_CH_MAX_TREE_BW = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))  # :198-204


PER_CH_MAX_NVLS_TREE_BW = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))  # :205-211


NVLS_EFFICIENCY = (0.0, 0.0, 0.85, 0.74)  # nvlsEfficiency, :139-144


# treeCorrectionFactor[proto][log2(bytes/64)], :623-627
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)


NET_OVERHEAD = {"intel": 1.0, "amd": 2.0, "arm": 1.0}  # getNetOverhead, us (tuning.cc:226-233, else 1.0); x3 Simple


RING_PLATEAU = 1.4  # "plateau effect of ring": multi-node Ring/Simple latency x1.4 on SM80+ (:647-649)
RING_PLATEAU_BEFORE_SM80 = 1.9  # the same factor below SM80 (tuning.cc:649, ``minCompCap < 80 ? 1.9 : 1.4``)
CHANNEL_DUPLICATION = 2  # connect.cc ncclTopoPostset duplicates the search's channels (:459-460, nChannels * 2)


COLLNET_ARITY_LATENCY = 0.4  # CollNetDirect arity serialization latency, us (:418-421)


NVLS_HEAD_ARITY = 32  # NCCL_MAX_NVLS_ARITY


def nvls_reduces(dtype: str, op: str) -> bool:
    """Whether NVLink SHARP reduces values of nccl-tests' type name ``dtype`` with its redop
    ``op`` (src/include/device.h:587-599 ncclNvlsSupported, v2.30.7: sums, mins and maxes of
    32- and 64-bit integers, half and bfloat16; sums alone of float and double; nothing else).
    Where it does not, NCCL leaves NVLS and NVLSTree out of an AllReduce's pick
    (enqueue.cc:426)."""
    if dtype in ("int32", "uint32", "int64", "uint64", "half", "bfloat16"):
        return op in ("sum", "min", "max")
    return dtype in ("float", "double") and op == "sum"


# speed candidates of the topology search, GB/s per channel (search.cc:1051-1067)
SPEED_INTRA = {80: (40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3),
               90: (60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3),
               100: (90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18)}


SPEED_INTER = {80: (48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12),
               90: (48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12),
               100: (96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12)}


COLLNET_NODE_THRESHOLD = 2
"""Nodes a communicator needs for NCCL to run CollNet (init.cc:857 ``CollNetNodeThreshold``,
:1468-1475, v2.30.7): on fewer it turns CollNet off whatever NCCL_COLLNET_ENABLE says."""


MAX_RING_CHANNELS = 32  # MAXCHANNELS / 2 (device.h: MAXCHANNELS 64 since v2.25)


NET_LATENCY = {"ib": 0.0, "roce": 0.0, "tcp": 0.0, "efa": 75.0}
"""The latency a network plugin reports to NCCL (``props->latency``, us), which NCCL's model
adds to every network step (twice for Simple, tuning.cc:386-389). NCCL's IB and socket
transports report 0 (src/transport/net_ib/init.cc:558, net_socket.cc:174; RoCE runs on
the IB transport); the AWS OFI plugin reports 75 us on p4d/p5-class instances
(aws/aws-ofi-nccl src/platform-aws.cpp, the default since v1.13.0). It steers NCCL's
choice; simnet's simulated time uses the transport's physical latency instead
(``simnet.model.nccl``)."""


def arch_index(cc: int) -> int:
    return 3 if cc >= 100 else 2 if cc >= 90 else 1 if cc >= 80 else 0


def node_column(nodes: int) -> int:
    return nodes - 1 if nodes <= 2 else 2


MAX_THREADS = {"LL": 512, "LL128": 640, "Simple": 512}  # NCCL_{LL,LL128,SIMPLE}_MAX_NTHREADS (device.h:93-114)


MAX_THREADS_ANY = 640  # NCCL_MAX_NTHREADS (device.h:93)


THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}  # NCCL_*_THREAD_THRESHOLD, bytes per thread (comm.h:49-51)


COLLNET_THREAD_THRESHOLD = 512  # CollNet's Simple threshold (tuning.cc:594-595)


MIN_TRAFFIC_PER_CHANNEL = 32 * 1024  # enqueue.cc scheduleCollTasksToPlan: MinTrafficPerChannel


PCI_BW = 12.0  # GB/s, "PCI Gen3 x16" (topo.h:25): below it a ring's Simple runs 256 threads


MAX_CHANNELS = 64  # MAXCHANNELS (device.h, v2.25+)


UNMODELLED = {"NCCL_P2P_DISABLE": "0", "NCCL_P2P_LEVEL": None, "NCCL_SHM_DISABLE": "0", "NCCL_IB_DISABLE": "0",
              "NCCL_NET": None, "NCCL_NET_GDR_LEVEL": None, "NCCL_CROSS_NIC": "2", "NCCL_PXN_DISABLE": "0",
              "NCCL_BUFFSIZE": "4194304", "NCCL_NTHREADS": None, "NCCL_LL128_ENABLE": None,
              "NCCL_MIN_CTAS": None, "NCCL_MAX_CTAS": None, "NCCL_NVLS_NCHANNELS": None,
              "NCCL_P2P_LL_THRESHOLD": "16384", "NCCL_IB_HCA": None, "NCCL_ALLOC_P2P_NET_LL_BUFFERS": "0",
              "NCCL_MNNVL_ENABLE": "2", "NCCL_PAT_ENABLE": "2", "NCCL_NET_MERGE_LEVEL": "PORT",
              "NCCL_NET_FORCE_MERGE": None, "NCCL_IB_QPS_PER_CONNECTION": "1", "NCCL_NVLS_CHUNKSIZE": None,
              "NCCL_NVLSTREE_MAX_CHUNKSIZE": "-2", "NCCL_GRAPH_FILE": None, "NCCL_COLLNET_NODE_THRESHOLD": "2"}
"""NCCL variables that change the transports, paths, channels, buffers, threads, protocols or CTAs NCCL
runs with (NCCL's environment-variable guide,
docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html), which simnet does not follow,
each with the value that is NCCL's default (None: NCCL picks per system;
NCCL_P2P_LL_THRESHOLD's is enqueue.cc's ``P2pLLThreshold``, simnet.model.nccl's
``P2P_LL_THRESHOLD``; NCCL_ALLOC_P2P_NET_LL_BUFFERS's is init.cc's ``AllocP2pNetLLBuffers``,
v2.30.7: with it send/recv over the network may run LL, which simnet's plan gives only on one
host; NCCL_IB_HCA chooses the NICs, which a topology writes as it has them;
v2.30.7's defaults of the others: MNNVLEnable 2 (init.cc:862: multi-node NVLink where the
fabric has it, as simnet's NVL72 racks), PatEnable 2 (graph/tuning.cc:215), NCCL_NET_MERGE_LEVEL
PORT (graph/topo.cc:1740-1745: a NIC's ports fuse, as simnet fuses them), NCCL_NET_FORCE_MERGE
unset, IbQpsPerConn 1 (transport/net_ib/connect.cc:60: simnet's flows are one per connection),
NCCL_NVLS_CHUNKSIZE unset (transport/nvls.cc:206-207: set to any value, NCCL takes it as NVLS's
chunk instead of its own tuning's), NvlsTreeMaxChunkSize -2 (nvls.cc:161, :228-233: NCCL's own),
NCCL_GRAPH_FILE unset (graph/search.cc:1111-1122: set, NCCL loads its rings' and trees' channels
from that XML instead of searching), CollNetNodeThreshold 2 (``COLLNET_NODE_THRESHOLD``);
the point-to-point channels are ``P2P_CHANNEL_VARIABLES``): a run under
``model: nccl`` or ``rccl`` with one set otherwise (an
integer read as NCCL reads it: ``0x400000`` is 4194304) is refused, as its answer would not be
NCCL's (RCCL reads them too). ``options: {pxn: false}`` is simnet's PXN off."""


P2P_CHANNEL_VARIABLES = ("NCCL_MIN_P2P_NCHANNELS", "NCCL_MAX_P2P_NCHANNELS", "NCCL_NCHANNELS_PER_NET_PEER")
"""The variables that set the channels NCCL's send/recv runs on (``enqueue.p2p_channels``):
NCCL_PARAM(MinP2pNChannels, "MIN_P2P_NCHANNELS", 1), (MaxP2pNChannels, "MAX_P2P_NCHANNELS",
MAXCHANNELS) (src/graph/paths.cc:957-958, v2.30.7) and NCCL_NCHANNELS_PER_NET_PEER
(src/init.cc:1729 and :2038-2050, v2.30.7: the channels per peer across the network)."""


P2P_PER_CHANNEL_NET_BW = 14  # GB/s one p2p channel drives, NCCL_P2P_PER_CHANNEL_NET_BW (paths.cc:918, v2.30.7)


MAX_P2P_PER_BATCH = 8  # NCCL_MAX_DEV_WORK_P2P_PER_BATCH, p2p ops a channel runs at once (device.h:391, v2.30.7)


P2P_CHUNK = {"net": 128 * 1024, "nvlink": 512 * 1024, "pci": 128 * 1024}
"""NCCL's point-to-point step, bytes: NCCL_P2P_NET_CHUNKSIZE across nodes (twice that on Arm
hosts of SM100+ GPUs), NCCL_P2P_NVL_CHUNKSIZE on one node all NVLink, else
NCCL_P2P_PCI_CHUNKSIZE (src/init.cc:818-838 computeBuffSizes, v2.30.7)."""


def nvlink_bw_per_link(cc: int) -> float:
    """GB/s of one NVLink in NCCL's topology for compute capability ``cc`` (ncclTopoNVLinkBw,
    src/graph/topo.h:274-282, SMxx_NVLINK_BW :19-24, v2.30.7)."""
    return 40.1 if cc >= 100 else 20.6 if cc >= 90 else 12.0 if cc == 86 else 20.0 if cc >= 70 else \
        18.0 if cc >= 60 else 20.0
