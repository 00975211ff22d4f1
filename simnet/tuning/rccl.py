"""RCCL's tables and constants, per AMD GPU architecture, each with the file it comes from.

RCCL (AMD's fork of NCCL) times every (algorithm, protocol) pair with NCCL's formula,
``latency + bytes / (1000 * algBw)``, but on AMD GPUs it compiles NCCL's per-architecture
caps out and takes every figure from a *tuning model* per platform: per-hop latencies
(``hwLat``), bandwidth ratios (``bwRatio``) and size corrections for Tree and for Ring
across nodes (``src/graph/tuning.cc``). Two RCCL versions are read:

* **A** = ROCm/rccl ``develop`` @ ``0cbce2a7571c`` (RCCL 2.21.5 for ROCm 6.3, NCCL 2.21.5
  inside), with file:line: gfx942 (MI300X, MI325X) takes its ``tuning_model_5``
  (``rome_models.cc:549``: every 8-GPU all-xGMI gfx942 host matches ``tuning=5``);
* **B** = ROCm/rocm-systems ``projects/rccl`` @ ``03a89144e7d8`` (RCCL 2.30.3, unreleased,
  for ROCm 7.11; NCCL 2.30.3 inside), read through a text index without line numbers, so
  B's citations name the file and symbol: gfx950 (MI355X) takes ``tuning_model_6``
  (``rcclGetTuningIndexForArch``: gfx950 -> 6); A has no gfx950.

Protocols in order LL, LL128, Simple; RCCL runs Tree and Ring only (no NVLS without an
NVSwitch, no CollNet without its plugin; PAT is B's and off there, ``NCCL_PAT_ENABLE`` 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from simnet.topology.hardware import NET, NVLINK, PCIE

__all__ = ["Tuning", "TUNINGS", "tuning", "BASE_LATENCY", "LL_CHUNK", "LL128_CHUNK", "MAX_CHANNELS",
           "MAX_MULTI_NODE_CHANNELS", "MAX_THREADS", "THREAD_THRESHOLD", "LL128_DATA", "SPEEDS", "MESH_GPUS",
           "single_node_rings", "multi_node_rings", "UNMODELLED", "MSCCL_VARIABLES", "Msccl", "MSCCL_ALLREDUCE",
           "MSCCL_ELEMENT_BYTES", "msccl"]

VERSION_A = "RCCL 2.21.5 (ROCm/rccl@0cbce2a)"
VERSION_B = "RCCL 2.30.3 (ROCm/rocm-systems@03a89144 projects/rccl)"

BASE_LATENCY = {"Tree": (12.0, 12.0, 17.0), "Ring": (12.0, 12.0, 17.0)}
"""baseLat[algo][proto], us: A src/graph/tuning.cc:57-58; the same in B tuning.cc."""


@dataclass(frozen=True)
class Tuning:
    """One RCCL tuning model and the version-dependent rules around it.

    ``hw_latency[hw][algo]``: us per step by link class (NVLINK is xGMI: RCCL types it
    LINK_NVL); ``bw_ratio[0|1][algo]``: on the bus bandwidth up to 2 nodes / more;
    ``tree_correction`` / ``ring_correction``: per protocol, 27 factors by log2(bytes/64),
    Ring's across nodes only; ``ll128``: LL128 on by default (else only with
    ``RCCL_LL128_FORCE_ENABLE=1``); ``single_node_channels``: channels of an 8-GPU mesh
    host; ``inter_steps_every_node``: a ring AllReduce across n nodes pays n*2 network steps
    (A) rather than NCCL's 2(n-1) (B); ``one_gpu_nodes_tree_latency``: with one GPU per node
    a network step costs Tree's latency, as in NCCL (B); ``protocol_ranges``: B's post-pick protocol choice
    across nodes by bytes per rank, per function ((LL low, high], (LL128 low, high]), and
    ``single_node_ll``: B's single-node LL below bytes per rank, per function."""

    version: str
    model: str
    hw_latency: dict
    bw_ratio: tuple[dict, dict]
    tree_correction: tuple[tuple[float, ...], ...]
    ring_correction: tuple[tuple[float, ...], ...]
    ll128: bool
    single_node_channels: int
    inter_steps_every_node: bool
    one_gpu_nodes_tree_latency: bool  # with one GPU per node the network step takes Tree's hwLat (B, as NCCL)
    protocol_ranges: dict | None = None
    single_node_ll: dict | None = None

    @property
    def step_latency(self) -> dict:
        """The per-step latencies a replay charges (us, ``hw_latency``'s layout): the table's,
        but a Simple ring's network step at Tree's Simple figure. RCCL reads its latencies only
        to pick (``comm->latencies`` in ``ncclTopoGetAlgoTime``, whose times choose the cheapest
        pair: A tuning.cc:632-670, enqueue.cc:1574-1625; the same in B); no kernel or proxy
        waits on them. Ring's Simple network figure, 320 us in models 5 and 6 (A tuning.cc:231;
        B tuning_model_6), is such a weight: ROCm/rccl a25ca9bb (#1288, 2024-08-09, "adding
        new tunning table for very large number of nodes") raised it from 19.8 us together
        with Ring/Simple's size corrections cut to 0.1 below 512 MiB, steering the pick to
        Tree at scale, while the step itself (a Simple chunk the proxy posts to the NIC,
        src/transport/net.cc, the same for both algorithms) did not change. RCCL times that
        step at Tree's Simple figure where it models a ring's chunks (A tuning.cc:441, "Add
        some chunk latency"), and B at Tree's network figure for any ring with one GPU per
        node: here 25 us (A tuning.cc:231; B tuning_model_6)."""
        table = {hw: dict(rows) for hw, rows in self.hw_latency.items()}
        ring, tree = table[NET]["Ring"], table[NET]["Tree"]
        table[NET]["Ring"] = (ring[0], ring[1], tree[2])
        return table


_MODEL_5_A = Tuning(
    VERSION_A, "tuning_model_5 (src/graph/tuning.cc:224-252)",
    hw_latency={NVLINK: {"Tree": (0.9, 0.0, 2.3), "Ring": (0.8, 0.0, 2.1)},  # :227
                PCIE: {"Tree": (2.2, 2.2, 5.7), "Ring": (2.2, 2.2, 5.7)},  # :229
                NET: {"Tree": (10.5, 0.0, 25.0), "Ring": (9.5, 0.0, 320.0)}},  # :231
    bw_ratio=({"Tree": (0.06, 0.00, 0.11), "Ring": (0.08, 0.00, 1.00)},  # :236, up to 2 nodes
              {"Tree": (0.06, 0.00, 0.59), "Ring": (0.08, 0.00, 1.00)}),  # :238, more
    tree_correction=((0.1,) * 6 + (1.0,) * 5 + (0.6, 1.0, 0.9, 1.0, 1.0) + (0.1,) * 11,  # :242
                     (0.0,) * 27,  # :243
                     (0.1,) * 15 + (0.7,) + (1.0,) * 10 + (0.8,)),  # :244
    ring_correction=((0.1,) * 11 + (1.0, 0.2, 1.0, 0.4, 0.4, 0.1, 0.2, 0.2) + (0.1,) * 8,  # :248
                     (0.0,) * 27,  # :249
                     (0.1,) * 23 + (0.8, 1.0, 1.0, 1.0)),  # :250
    # LL128 "by default only on gfx90a" (tuning.cc:512-514), else RCCL_LL128_FORCE_ENABLE (init.cc:463,1506)
    ll128=False,
    # rome_model_79's 28 rings (rome_models.cc:558) duplicated: 28 <= MAXCHANNELS/2 (connect.cc:628-660)
    single_node_channels=56,
    inter_steps_every_node=True,  # tuning.cc:354: AllReduce nInterSteps = nNodes > 1 ? 2*nNodes : 0
    one_gpu_nodes_tree_latency=False,  # tuning.cc:431: interLat = hwLat[NET][a][p]
)

_MODEL_6_B = Tuning(
    VERSION_B, "tuning_model_6 (src/graph/tuning.cc; rcclGetTuningIndexForArch: gfx950 -> 6)",
    hw_latency={NVLINK: {"Tree": (0.9, 0.9, 2.3), "Ring": (0.8, 0.8, 2.1)},
                PCIE: {"Tree": (2.2, 2.2, 5.7), "Ring": (2.2, 2.2, 5.7)},
                NET: {"Tree": (10.5, 10.5, 25.0), "Ring": (9.5, 9.5, 320.0)}},
    bw_ratio=({"Tree": (0.06, 0.06, 0.11), "Ring": (0.08, 0.08, 1.00)},
              {"Tree": (0.06, 0.06, 0.59), "Ring": (0.08, 0.08, 1.00)}),
    tree_correction=((0.1,) * 6 + (1.0,) * 5 + (0.6, 1.0, 0.9, 1.0, 1.0) + (0.1,) * 11,
                     (0.1,) * 6 + (1.0,) * 5 + (0.6, 1.0, 0.9) + (1.0,) * 5 + (2.0, 2.0, 1.0, 0.1, 0.9, 0.9, 0.1, 0.1),
                     (0.1,) * 15 + (0.7, 1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.7, 0.15, 0.6, 0.7, 0.6)),
    ring_correction=((0.1,) * 11 + (1.0, 0.2, 1.0, 0.4, 0.4, 0.1, 0.2, 0.2) + (0.1,) * 8,
                     (0.1,) * 11 + (1.0, 0.2, 1.0, 0.4, 0.4, 0.1, 0.2, 0.1, 0.1, 0.1, 0.1, 5.5, 0.1, 0.1, 1.0, 1.0),
                     (0.1,) * 20 + (0.9, 0.1, 1.0, 0.1, 0.6, 1.0, 1.0)),
    # CHANGELOG 2.26.6 (ROCm 7.0.0) "Enabled LL128 protocol on gfx950"; AMD's RCCL doc: "gfx950: enabled by default"
    ll128=True,
    # CHANGELOG 2.26.6 "a default of 112 channels for a single node with 8 * gfx950"; connect.cc
    # RCCL_MI3XX_MAX_SINGLE_NODE_CHANNELS * 2 for gfx950 (rccl_common.h@00b959fc: 56)
    single_node_channels=112,
    inter_steps_every_node=False,  # tuning.cc: nNodes == 1 ? 0 : AllReduce ? 2*(nNodes-1) : nNodes-1
    one_gpu_nodes_tree_latency=True,  # tuning.cc: interLat = ppn == 1 ? hwLatencies[NET][TREE][p] : ...[NET][a][p]
    # llProtoRanges of tuning_model_6, applied by rcclUpdateCollectiveProtocol (rccl_wrap.cc@006a440c)
    # on bytes per rank (rcclGetSizePerRank, rccl_common.h@00b959fc: nBytes for AllReduce, nBytes/nRanks else)
    protocol_ranges={"ReduceScatter": ((0, 65536), (65536, 8388608)), "AllGather": ((0, 65536), (65536, 8388608)),
                     "AllReduce": ((0, 262144), (262144, 70640910)), "Reduce": ((0, 16383), (16383, 16777216)),
                     "Broadcast": ((0, 2048), (2048, 16777216))},
    single_node_ll={"AllGather": 88448, "ReduceScatter": 1048576},  # rcclUpdateCollectiveProtocol, gfx950
)

TUNINGS = {"gfx942": _MODEL_5_A, "gfx950": _MODEL_6_B}
"""The tuning model of each AMD architecture simnet knows."""


def tuning(arch: str) -> Tuning:
    """RCCL's tuning model for ``arch`` (gfx942, gfx950)."""
    return TUNINGS[arch]


MAX_CHANNELS = 128  # MAXCHANNELS (A src/include/device.h:65); gfx94 keeps all of them (connect.cc:628-631)
MAX_MULTI_NODE_CHANNELS = 64  # connect.cc:633-635 (A); RCCL_MI3XX_MAX_MULTI_NODE_CHANNELS 64 (B rccl_common.h)
MAX_THREADS = {"LL": 256, "LL128": 256, "Simple": 256}  # NCCL_MAX_NTHREADS 256 (A device.h:68-87), tuning.cc:305-313
THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}  # A src/include/comm.h:40-42; Ring's LL x nRanks (tuning.cc:595)
LL128_DATA = 7 / 8
"""Of an LL128 line on AMD, the data: 64-byte lines of 8 words, 7 of them data (A device.h:76-78
NCCL_LL128_LINESIZE 64, NCCL_LL128_DATAELEMS = LINEELEMS - 1); NVIDIA's lines are 128 bytes, 120 data."""
LL_CHUNK = 262144 // 8 // 2
"""LL's chunk, bytes: the LL buffer (8 lines x 256 threads x 8 steps x 16 B, A init.cc:837) over 8
steps, half of it data (enqueue.cc:1850)."""
LL128_CHUNK = 458752 // 8 // 8 * 7
"""LL128's chunk, bytes: the LL128 buffer (28 x 256 threads x 8 steps x 8 B, A init.cc:838) over 8 steps,
7 of every 8 words data (enqueue.cc:1851)."""

SPEEDS = (48.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12)
"""GB/s per channel RCCL's generic topology search tries, inside and across nodes alike (A
search.cc:901-902), where no Rome model matches (a host of fewer than 8 GPUs)."""

MESH_GPUS = 8
"""GPUs of the hosts RCCL's Rome models describe as fully connected (8, 7 xGMI links each)."""

_MODEL_79 = ((0, 1, 2, 3, 4, 5, 6, 7), (0, 1, 2, 3, 4, 5, 7, 6), (0, 2, 4, 1, 3, 6, 5, 7), (0, 2, 4, 6, 1, 7, 3, 5),
             (0, 3, 1, 5, 2, 7, 4, 6), (0, 3, 5, 1, 6, 2, 7, 4), (0, 4, 1, 7, 3, 6, 2, 5), (7, 6, 5, 4, 3, 2, 1, 0),
             (6, 7, 5, 4, 3, 2, 1, 0), (7, 5, 6, 3, 1, 4, 2, 0), (5, 3, 7, 1, 6, 4, 2, 0), (6, 4, 7, 2, 5, 1, 3, 0),
             (4, 7, 2, 6, 1, 5, 3, 0), (5, 2, 6, 3, 7, 1, 4, 0))
"""rome_model_79's ringBase (A rome_models.cc:558): one 8-GPU all-xGMI host without NICs (RCCL
trims a single node's NICs, paths.cc:812-815), 7 rings and their 7 reverses, listed twice (28
channels): every directed xGMI link carries 2 of the 14."""

_MODEL_81 = ((0, 1, 2, 3, 4, 5, 6, 7), (1, 0, 2, 4, 3, 5, 7, 6), (2, 5, 0, 3, 6, 1, 7, 4), (3, 7, 0, 4, 2, 1, 6, 5),
             (4, 6, 2, 7, 3, 0, 5, 1), (5, 4, 7, 1, 3, 2, 6, 0), (6, 3, 1, 4, 0, 7, 5, 2), (7, 2, 0, 6, 4, 1, 5, 3))
"""rome_model_81's ringBase (A rome_models.cc:598-605): an 8-GPU all-xGMI host with 8 NICs, ring
r entering through the NIC of its first GPU and leaving through its last's ("N0 0 1 2 3 4 5 6 7
N7"); 8 rings that use every directed xGMI link once, listed 8 times, block k rotated by k (64
channels); hosts of odd index run them reversed (parseA2a8P, rome_models.cc:1872-1875)."""


def single_node_rings() -> list[tuple[int, ...]]:
    """RCCL's 28 search channels on one 8-GPU mesh host, as GPU orders (device indices)."""
    return [_MODEL_79[c % len(_MODEL_79)] for c in range(2 * len(_MODEL_79))]


def multi_node_rings() -> list[tuple[int, ...]]:
    """RCCL's 64 search channels of an 8-GPU, 8-NIC mesh host across nodes, as GPU orders."""
    n = len(_MODEL_81)
    return [_MODEL_81[(block + j) % n] for block in range(n) for j in range(n)]


UNMODELLED = ("RCCL_MSCCLPP_ENABLE", "RCCL_MSCCLPP_THRESHOLD", "RCCL_PIVOT_ALLTOALL_ENABLE", "RCCL_P2P_NET_DISABLE",
              "RCCL_P2P_NET_THRESHOLD", "RCCL_INTRANET_THRESHOLD", "RCCL_ENABLE_INTRANET",
              "RCCL_CLIQUE_ALLREDUCE_BYTE_LIMIT", "RCCL_CLIQUE_ALLREDUCE_NCHANNELS", "RCCL_OVERRIDE_ALGO",
              "RCCL_OVERRIDE_PROTO", "RCCL_CHANNEL_TUNING_ENABLE", "RCCL_DISABLE_RAIL_TREES", "RCCL_CE_ALLREDUCE",
              "RCCL_DIRECT_ALLGATHER_THRESHOLD", "RCCL_DIRECT_REDUCE_SCATTER_THRESHOLD", "RCCL_DDA_ENABLE",
              "RCCL_UNROLL_FACTOR", "RCCL_THREADS_PER_BLOCK", "NCCL_NCHANNELS_PER_PEER")
"""RCCL variables that change its algorithm, protocol or channels (A init.cc, enqueue.cc,
msccl_lifecycle.cc; B rccl_wrap.cc, CHANGELOG) which simnet does not follow: a run under
``model: rccl`` with one of them set is refused, as its answer would not be RCCL's (and
``MSCCL_VARIABLES`` on gfx950, whose MSCCL was not read). NCCL_NCHANNELS_PER_PEER is RCCL's
only (A graph/paths.cc:828, :910: its send/recv channels per peer; NCCL 2.30.7 reads no such
name, so under NCCL it changes nothing, as in NCCL)."""

# ---------------------------------------------------------------- MSCCL (A only)
MSCCL_VARIABLES = ("RCCL_MSCCL_ENABLE", "RCCL_MSCCL_FORCE_ENABLE", "RCCL_MSCCL_ENABLE_SINGLE_PROCESS")
"""RCCL_PARAM(MscclEnabled, "MSCCL_ENABLE", 1), (MscclForceEnabled, "MSCCL_FORCE_ENABLE", 0),
(MscclEnableSingleProcess, "MSCCL_ENABLE_SINGLE_PROCESS", 1) (A src/misc/msccl/msccl_lifecycle.cc:29-31;
RCCL_PARAM prefixes "RCCL_", src/include/param.h:34-41). MSCCL is compiled in by default
(CMakeLists.txt:28 ENABLE_MSCCL_KERNEL ON -> COMPILE_MSCCL_KERNEL, :658-659; mscclEnabled(),
msccl_lifecycle.cc:34-40). SINGLE_PROCESS=0 only refuses a communicator with two ranks in one
process (allProcessHostsUnique, :66-88); simnet models one process per GPU, so it changes
nothing here and is honoured as such. Followed on gfx942 (A); refused on gfx950 (B not read)."""

MSCCL_ELEMENT_BYTES = 4
"""Bytes per element simnet takes for MSCCL's divisibility rule (``count % nchunksperloop == 0``,
msccl_lifecycle.cc:331-334, on elements): simnet's sizes carry no data type, and rccl-tests'
default (-d float) is 4 bytes, the type of every validation row. A 2-byte type meets the rule at
every size a float does."""


@dataclass(frozen=True)
class Msccl:
    """One MSCCL algorithm file RCCL 2.21.5 ships (A ``tools/msccl-algorithms/``, installed to
    share/rccl/msccl-algorithms, CMakeLists.txt:879-882): its ``<algo>`` tag, line 1.
    ``channels``: nchannels; ``blocks``: thread blocks per GPU (one per peer and channel, 7 x
    channels, plus one local reducer per channel); ``chunks``: nchunksperloop; sizes in bytes,
    inclusive (msccl_lifecycle.cc:334: nBytes >= minBytes && (maxBytes == 0 || nBytes <= maxBytes))."""

    file: str
    protocol: str
    channels: int
    blocks: int
    chunks: int
    min_bytes: int
    max_bytes: int


MSCCL_ALLREDUCE = (
    Msccl("allreduce-allpairs-8n-ll-32tb-op.xml", "LL", 4, 32, 256, 0, 65536),
    Msccl("allreduce-allpairs-8n-ll-64tb-op.xml", "LL", 8, 64, 512, 65537, 524287),
    Msccl("allreduce-allpairs-8n-simple-op.xml", "Simple", 8, 64, 512, 524288, 16777216),
)
"""RCCL 2.21.5's out-of-place AllReduce schedules for 8 GPUs (ngpus="8" coll="allreduce"
inplace="0" outofplace="1"), all named allreduce_pairs: every GPU sends part j of its buffer to
GPU j (one "s" of 8 chunks per peer and channel), reduces the 7 it receives ("re"), then sends
its reduced part to the 7 (a second "s"), two steps over every xGMI link. rccl-tests times
out-of-place first (simnet's size convention); the in-place files (``-ll-32tb.xml``,
``-ll-64tb.xml``: the same ranges; ``-simple.xml`` 524288-11534336 and ``-simple_2.xml``
14680065-16777216) leave in-place AllReduce of (11 MiB, 14 MiB] to RCCL's ring, which simnet
does not follow. Every send is one protocol step: a chunk is nBytes/nchunksperloop and a step
holds chunkEffectiveSize / chunk >= 8 of them up to maxBytes (msccl_setup.cc:49-60; LL 16 KiB
of data per step, Simple 4 MiB / 8 x ALLREDUCE_CHUNKSTEPS 4), so one loop (:140)."""


def msccl(system, function: str, size: int) -> Msccl | None:
    """The MSCCL schedule RCCL 2.21.5 runs for ``function`` of ``size`` bytes (out-of-place,
    sum, ``MSCCL_ELEMENT_BYTES`` per element) on ``system``, else None (RCCL's own pick).

    RCCL calls MSCCL before its own enqueue for every collective (A src/collectives.cc:60-63;
    NCCL_ALGO and NCCL_PROTO are not consulted) when RCCL_MSCCL_ENABLE is on
    (msccl_lifecycle.cc:62-64) and the topology enables it: only Rome models with
    ``mscclEnabled=1`` do (rome_models.cc:1373-1374), among gfx942 hosts rome_model_79, one
    host of 8 all-xGMI GPUs and no NIC (rome_models.cc:549-559), ANDed over ranks
    (init.cc:1589), or RCCL_MSCCL_FORCE_ENABLE=1 (msccl_lifecycle.cc:354). It runs the first
    file whose ngpus is the communicator's ranks, func and placement match and the size is in
    range and a multiple of nchunksperloop elements (:329-342); files needing more channels
    than NCCL_MAX_NCHANNELS are dropped (:129-133, connect.cc:642,692). Avg is not scheduled
    (:308); simnet's collectives sum."""
    if system.library != "rccl" or system.arch != "gfx942" or function != "AllReduce" or size <= 0:
        return None
    if not system.msccl or system.ranks != MESH_GPUS:
        return None
    if not (system.msccl_forced or (system.nodes == 1 and system.mesh)):
        return None
    for algo in MSCCL_ALLREDUCE:
        fits = algo.min_bytes <= size <= algo.max_bytes and size % (algo.chunks * MSCCL_ELEMENT_BYTES) == 0
        if fits and not (system.max_channels and algo.channels > system.max_channels):
            return algo
    return None
