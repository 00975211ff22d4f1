"""NCCL's own cost model, re-implemented from its source: what NCCL would pick and why.

NCCL times every (algorithm, protocol) pair of a collective as
``time = latency + bytes / (1000 * algBw)`` (microseconds, GB/s) and runs the cheapest
(``src/graph/tuning.cc``: ``ncclTopoTuneModel``, ``ncclTopoGetAlgoTime``;
``src/enqueue.cc``: ``topoGetAlgoInfo``). Every constant below is from **NCCL v2.30.7**
(tag ``v2.30.7-1``), with the file and lines it comes from. The bandwidths feed on the
channel graphs NCCL's topology search finds (``src/graph/search.cc``); ``graph()`` states
how simnet estimates them.

>>> from simnet.topology.loader import load_topology
>>> box = system_of(load_topology("topologies/dgx_h100.yaml"))
>>> [(c.algorithm, c.protocol) for c in (pick(box, n) for n in (8, 2**20, 2**30))]
[('Ring', 'LL'), ('Ring', 'LL'), ('NVLS', 'Simple')]
>>> round(predict(box, "Ring", "Simple", 2**30) * 1e3, 2)   # ms: 12 channels x 30 GB/s of busBw
5.28
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from simnet.topology.hardware import GPUS, NET, NVLINK, PCIE, pcie_effective

__all__ = ["ALGORITHMS", "PROTOCOLS", "System", "Graph", "Choice", "system_of", "graph", "bus_bandwidth",
           "algorithm_bandwidth", "sized_bandwidth", "latency", "step_latencies", "plateau", "predict", "enabled",
           "pick", "unavailable", "parse_nccl_list", "NET_LATENCY", "SIMNET_NAMES", "NCCL_NAMES", "chunk_size",
           "pipeline_step", "pipeline_stages", "nvls_channels", "FUNCTION_ALGORITHMS", "native", "comm_channels",
           "collective_channels", "network_wait"]

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
SIMNET_NAMES = {"Tree": "tree", "Ring": "ring", "CollNetDirect": "collnet_direct", "CollNetChain": "collnet_chain",
                "NVLS": "nvls", "NVLSTree": "nvls_tree", "PAT": "pat"}
NCCL_NAMES = {v: k for k, v in SIMNET_NAMES.items()}


def native(function: str, algorithm: str) -> str | None:
    """NCCL's name for simnet's ``algorithm`` when NCCL's tuner times it for ``function``
    (an NCCL function name), else None: it runs on NCCL's point-to-point sends."""
    name = NCCL_NAMES.get(algorithm)
    return name if name in FUNCTION_ALGORITHMS.get(function, ()) else None

_HW = {NVLINK: 0, PCIE: 1, NET: 2}

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
NET_OVERHEAD = {"intel": 1.0, "amd": 2.0}  # getNetOverhead, us (tuning.cc:226-233), x3 for Simple
RING_PLATEAU = 1.4  # "plateau effect of ring": multi-node Ring/Simple latency x1.4 on SM80+ (:641-645)
COLLNET_ARITY_LATENCY = 0.4  # CollNetDirect arity serialization latency, us (:418-421)
NVLS_HEAD_ARITY = 32  # NCCL_MAX_NVLS_ARITY
# speed candidates of the topology search, GB/s per channel (search.cc:1051-1067)
SPEED_INTRA = {80: (40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3),
               90: (60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3),
               100: (90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18)}
SPEED_INTER = {80: (48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12),
               90: (48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12),
               100: (96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12)}
MAX_RING_CHANNELS = 32  # MAXCHANNELS / 2 (device.h: MAXCHANNELS 64 since v2.25)

NET_LATENCY = {"ib": 0.0, "roce": 0.0, "tcp": 0.0, "efa": 75.0}
"""The latency a network plugin reports to NCCL (``props->latency``, us), which NCCL's model
adds to every network step (twice for Simple, tuning.cc:386-389). NCCL's IB and socket
transports report 0 (src/transport/net_ib/init.cc:558, net_socket.cc:174; RoCE runs on
the IB transport); the AWS OFI plugin reports 75 us on p4d/p5-class instances
(aws/aws-ofi-nccl src/platform-aws.cpp, the default since v1.13.0). It steers NCCL's
choice; simnet's simulated time uses the transport's physical latency instead
(``simnet.model.nccl``)."""


def _arch(cc: int) -> int:
    return 3 if cc >= 100 else 2 if cc >= 90 else 1 if cc >= 80 else 0


def _column(nodes: int) -> int:
    return nodes - 1 if nodes <= 2 else 2


def _speeds(table: dict, cc: int) -> tuple:
    return table[100 if cc >= 100 else 90 if cc >= 90 else 80]


# ---------------------------------------------------------------- the system
@dataclass(frozen=True)
class System:
    """What NCCL's model sees of a communicator (bandwidths in GB/s, latencies in us).

    ``nvlink_bw``: NVLink bandwidth per GPU as NCCL models it (links x per-link, or 0 with
    no NVLink); ``pci_bw``: a GPU's PCIe bandwidth; ``nic_bw``: a GPU's path to one NIC
    (min of PCIe and the NIC); ``nics``: NICs per node; ``nvls``: the NVSwitch can reduce;
    ``collnet``: the network can reduce (SHARP) and NCCL_COLLNET_ENABLE would be set.
    """

    ranks: int
    nodes: int
    cc: int = 90
    nvlink_bw: float = 0.0
    pci_bw: float = 24.0
    nic_bw: float = 0.0
    nics: int = 0
    transport: str = "ib"
    cpu: str = "intel"
    nvls: bool = False
    collnet: bool = False
    nic_latency: float | None = None  # us a NIC's transport adds per network step, when the topology says

    @property
    def ppn(self) -> float:
        return self.ranks / self.nodes

    @property
    def intra_hw(self) -> int:
        """NVLINK when GPUs of a node talk over NVLink, else PCI (tuning.cc:284-285)."""
        return NVLINK if self.nvlink_bw > 0 else PCIE

    @property
    def net_latency(self) -> float:
        """The latency the network plugin reports to NCCL (us): the topology's own figure for
        its NICs, else the transport's (``NET_LATENCY``)."""
        return NET_LATENCY[self.transport] if self.nic_latency is None else self.nic_latency


def system_of(topology, gpus: list[str] | None = None) -> System:
    """NCCL's view of a topology's ranks: nodes are hosts; rates are NCCL's effective ones
    (``simnet.tuning.rates``), read off the first host (NCCL assumes nodes alike)."""
    from simnet.tuning.rates import effective_capacity

    gpus = list(topology.gpus if gpus is None else gpus)
    hosts = topology.groups("host", gpus)
    models = {topology.gpu_model(g) for g in gpus}
    cc = min((GPUS[m].compute_capability if m in GPUS else 80) for m in models)
    rate = effective_capacity(topology) / 1e9
    first = next(iter(hosts.values()))
    probe = first[0]
    out = [topology.link_index[(probe, nxt)] for nxt in topology.graph.successors(probe)]
    nvlink = max((rate[i] for i in out if topology.link_type[i] == NVLINK), default=0.0)
    pci = max((rate[i] for i in out if topology.link_type[i] == PCIE), default=pcie_effective(4) / 1e9)
    rails = topology.rails(first) if len(hosts) > 1 else []
    nic_bw = 0.0
    if rails:
        nic, near = rails[0]
        to_nic = min(rate[i] for i in topology.route_indices(near, nic))
        wire = min(rate[topology.link_index[(nic, n)]] for n in topology.graph.successors(nic)
                   if topology.kind(n) != "gpu")
        nic_bw = float(min(to_nic, wire))
    marked = topology.derived("switch_features", _switch_features)
    nvls = cc >= 90 and len(first) > 1 and "nvls" in marked
    collnet = "sharp" in marked
    transport = topology.transport(rails[0][0]) if rails else "ib"
    nic_latency = topology.graph.nodes[rails[0][0]].get("net_latency") if rails else None
    return System(ranks=len(gpus), nodes=len(hosts), cc=cc, nvlink_bw=float(nvlink), pci_bw=float(pci),
                  nic_bw=nic_bw, nics=len(rails), transport=transport, nvls=nvls, collnet=collnet,
                  nic_latency=None if nic_latency is None else nic_latency * 1e6)


def _switch_features(topology) -> frozenset[str]:
    """Which of NVLS and SHARP some switch of ``topology`` offers."""
    return frozenset(key for key in ("nvls", "sharp") if any(topology.graph.nodes[n].get(key) for n in topology.nodes))


# ---------------------------------------------------------------- graphs
@dataclass(frozen=True)
class Graph:
    """A channel graph as NCCL's topology search would find it: ``channels`` (search
    channels, before NCCL duplicates them for more SMs), per-channel bandwidth inside a
    node and across nodes (GB/s), and whether the tree graph puts all network traffic on
    one GPU (pattern TREE, which NCCL's model charges 0.85 for)."""

    channels: int
    bw_intra: float
    bw_inter: float
    tree_pattern: bool = False


def _first_speed(speeds: tuple, limit: float) -> float:
    return next((s for s in speeds if s <= limit + 1e-9), speeds[-1])


def graph(system: System, algorithm: str) -> Graph:
    """simnet's estimate of NCCL's search result (search.cc ncclTopoCompute, connect.cc).

    * Ring on one node: channels of the first speed the GPU's NVLink (or PCIe) holds, as
      many as fit, then doubled at half the speed when that speed is >= 25 GB/s and not
      (SM90+, < 50 GB/s, > 4 channels) (``ncclTopoDupChannels``): DGX H100 12 x 30 GB/s,
      DGX A100 12 x 20 GB/s.
    * Ring across nodes: one channel per NIC at the first inter speed a GPU's path to its
      NIC holds (a NIC carries floor(nic / speed) channels): DGX H100 8 x 48 GB/s.
    * Tree: the ring's channel count and inter-node speed (NCCL searches the tree with the
      ring's channel count), the intra-node speed raised by pass 2 while below twice the
      inter-node one and the channels fit the GPU's links (p4d: 4 x 12 GB/s across, 30
      inside; NCCL's model uses the intra speed up to two nodes).
    * NVLS: one channel per GPU of the node (at most 32), each using bandwidth on every
      GPU link and twice on its head's, so (G+1) x bw fits the NVLink; bwInter raised while
      below 2 x bwIntra (pass 2), or the NIC path across nodes.
    * CollNet: one channel per NIC at the NIC path speed.
    """
    if algorithm == "PAT":  # PAT runs on the tree's graph (init.cc: graphs[] = {tree, ring, ..., tree})
        algorithm = "Tree"
    cc, ppn = system.cc, max(1, round(system.ppn))
    local = system.nvlink_bw if system.nvlink_bw > 0 else system.pci_bw
    if algorithm in ("NVLS", "NVLSTree"):
        channels = min(NVLS_HEAD_ARITY, ppn)
        intra = _first_speed(_speeds(SPEED_INTRA, cc), local / (channels + 1))
        inter = _first_speed(_speeds(SPEED_INTRA, cc), 2 * intra - 1e-9) if system.nodes == 1 else \
            _first_speed(_speeds(SPEED_INTER, cc), system.nic_bw)
        return Graph(channels, intra, inter)
    if system.nodes > 1 and system.nics > 0:
        speed = _first_speed(_speeds(SPEED_INTER, cc), min(system.nic_bw, local))
        per_nic = max(1, int(system.nic_bw // speed + 1e-9)) if speed > 0 else 1
        channels = min(MAX_RING_CHANNELS, system.nics * per_nic)
        intra = speed
        if algorithm in ("Tree", "CollNetChain", "CollNetDirect"):
            # search pass 2 raises a tree's intra-node speed while it is below twice the
            # inter-node one and the channels still fit the GPU's links (search.cc:1262-1281)
            for faster in sorted(s for s in _speeds(SPEED_INTRA, cc) if s > speed):
                if intra >= 2 * speed or faster * channels > local + 1e-9:
                    break
                intra = faster
        return Graph(channels, intra, speed, tree_pattern=algorithm == "Tree" and ppn > 1 and system.nics < 2)
    speed = _first_speed(_speeds(SPEED_INTRA, cc), local)
    channels = max(1, min(MAX_RING_CHANNELS, int(local // speed + 1e-9)))
    if speed >= 25 and not (cc > 80 and speed < 50 and channels > 4):
        channels, speed = min(2 * channels, MAX_RING_CHANNELS), speed / 2
    return Graph(channels, speed, speed)


# ---------------------------------------------------------------- enabled
def enabled(system: System, algorithm: str, protocol: str, function: str = "AllReduce") -> bool:
    """Whether NCCL would consider (algorithm, protocol) for ``function`` (an NCCL function:
    AllReduce, ReduceScatter, AllGather, Broadcast, Reduce) here by default
    (tuning.cc:293-305, 345-365, 440-541; enqueue.cc:1989-2026)."""
    if algorithm not in FUNCTION_ALGORITHMS[function]:
        return False
    if algorithm in ("NVLS", "NVLSTree", "CollNetDirect", "CollNetChain", "PAT") and protocol != "Simple":
        return False
    if algorithm == "PAT":  # ncclPatEnable: SM60+, one GPU per node (tuning.cc:216-223)
        return system.cc >= 60 and system.nodes == system.ranks
    if function in ("ReduceScatter", "AllGather") and algorithm in ("NVLS", "CollNetDirect") and system.nodes > 1:
        return False  # needs the CollNet plugin's iallgather/ireducescatter and a head per GPU (tuning.cc:345-365)
    if algorithm == "NVLS":
        return system.nvls and (system.nodes == 1 or system.collnet)
    if algorithm == "NVLSTree":
        return system.nvls and system.nodes > 1
    if algorithm in ("CollNetDirect", "CollNetChain"):
        return system.collnet and system.nodes > 1 and system.ppn <= 8
    if protocol == "LL128":
        # LL128 needs NVLink inside the node and a PCIe-or-PXN path to the NIC (tuning.cc:514-536)
        return system.cc >= 70 and system.intra_hw == NVLINK
    return True


# ---------------------------------------------------------------- bandwidth
def bus_bandwidth(system: System, algorithm: str, protocol: str, function: str = "AllReduce",
                  share: float = 1.0) -> float:
    """NCCL's bus bandwidth for (algorithm, protocol) of ``function``, GB/s; 0 when
    unavailable (tuning.cc:305-382). ``share``: of the channels' capacity in use (fewer
    channels or threads, ``collective_channels``): it scales every per-channel term, not
    the whole-GPU cap of LL (llMaxBw)."""
    if not enabled(system, algorithm, protocol, function):
        return 0.0
    g = graph(system, algorithm)
    channels = g.channels * share  # of the search's channels, in capacity
    arch, column, nodes, ppn = _arch(system.cc), _column(system.nodes), system.nodes, system.ppn
    collnet = algorithm in ("CollNetDirect", "CollNetChain")
    bw = g.bw_intra if (nodes <= 2 or collnet) else g.bw_inter
    if algorithm in ("NVLS", "NVLSTree"):
        if g.channels < 2:
            return 0.0
        intra = g.bw_intra * NVLS_EFFICIENCY[arch] * (g.channels - 1) / g.channels
        intra *= 2 if function == "AllReduce" else (ppn - 1) / ppn  # AllReduce pipelines two operations
        inter = g.bw_inter * (2 if nodes <= 2 and algorithm == "NVLSTree" else 1)
        cap = PER_CH_MAX_NVLS_TREE_BW[arch][column] if algorithm == "NVLSTree" else math.inf
        bw = min(intra, inter, cap)
    bus = channels * bw
    ll_max = LL_MAX_BW[arch if nodes == 1 else (1 if system.cpu == "amd" else 0)][column]
    if algorithm == "Ring" and protocol == "LL":
        bus = min(ll_max, bus * 0.5)
    elif algorithm == "Ring" and protocol == "LL128":
        bus = min(bus * 0.92, channels * PER_CH_MAX_RING_LL128_BW[arch][column])
    elif algorithm == "Tree":
        bus = min(bus * 0.92, channels * PER_CH_MAX_TREE_BW[arch][column])
        if protocol == "LL":
            bus = min(bus / 3.8, ll_max)
        elif protocol == "LL128":
            bus = min(bus * (7 / 9 if nodes == 1 else 120 / 128),
                      channels * PER_CH_MAX_TREE_LL128_BW[arch][column])
        if g.tree_pattern:
            bus *= 0.85
    elif algorithm == "PAT":
        bus *= 0.75
    elif algorithm == "CollNetDirect":
        factor = ppn / g.channels
        factor -= (factor - 1) / 2
        bus /= factor
        if system.cc >= 90:
            bus *= 0.85
    return bus


def _steps(function: str, n: int) -> int:
    """NCCL's nsteps of a ring over n ranks (tuning.cc:288-291)."""
    return 2 * (n - 1) if function == "AllReduce" else n - 1 if function in ("ReduceScatter", "AllGather") else n


def algorithm_bandwidth(system: System, algorithm: str, protocol: str, function: str = "AllReduce",
                        share: float = 1.0) -> float:
    """NCCL's algorithm bandwidth (bytes of the buffer per second / 1e9): busBw times
    n/nsteps for Ring and NVLS* (n/(2(n-1)) for AllReduce), 1/2 otherwise, and busBw itself
    for ReduceScatter and AllGather on anything but Ring (tuning.cc:377-382)."""
    bus = bus_bandwidth(system, algorithm, protocol, function, share)
    n = system.ranks
    if algorithm != "Ring" and function in ("ReduceScatter", "AllGather"):
        return bus
    ratio = n / _steps(function, n) if algorithm in ("Ring", "NVLS", "NVLSTree") and n > 1 else 0.5
    return bus * ratio


# ---------------------------------------------------------------- latency
def step_latencies(system: System, algorithm: str, protocol: str) -> tuple[float, float]:
    """(intra-node, inter-node) latency of one step, us (tuning.cc:383-392): the hardware
    latency of the link class, plus the plugin's reported latency on the network (twice
    for Simple); with one GPU per node the network step uses Tree's figure."""
    p = PROTOCOLS.index(protocol)
    intra = HW_LATENCY[system.intra_hw][algorithm][p]
    net_row = "Tree" if system.ppn == 1 else algorithm
    inter = HW_LATENCY[NET][net_row][p] + system.net_latency * (2 if protocol == "Simple" else 1)
    return intra, inter


def same_channels(system: System) -> bool:
    """Whether NCCL's ring channels all take the same path (``graph->sameChannels``):
    simnet's estimate is one node or one NIC per node; across nodes with several NICs each
    channel pair uses its own rails (``simnet.schedule.channels``)."""
    return system.nodes == 1 or system.nics <= 1


def latency(system: System, algorithm: str, protocol: str, function: str = "AllReduce") -> float:
    """NCCL's latency of one ``function``, us, before the size-dependent plateau (tuning.cc:383-435)."""
    p = PROTOCOLS.index(protocol)
    n, nodes = system.ranks, system.nodes
    base = BASE_LATENCY[algorithm][p]
    intra, inter = step_latencies(system, algorithm, protocol)
    ppn_int = n // nodes
    log_nodes = int(math.log2(nodes)) if nodes > 0 else 0
    steps = _steps(function, n)
    if algorithm == "Ring" and function in ("Broadcast", "Reduce"):
        hw = system.intra_hw if nodes == 1 else NET
        lat = HW_LATENCY[hw]["Ring"][p]
        if same_channels(system):
            return base + lat
        if protocol == "Simple":  # "some chunk latency, waiting for proper chunk modeling"
            lat = HW_LATENCY[hw]["Tree"][p]
        return base + steps * lat
    if algorithm == "Ring":
        overhead = NET_OVERHEAD[system.cpu] * (3 if protocol == "Simple" else 1) if nodes > 1 else 0.0
        intra = max(intra, overhead)
        inter_steps = (2 * (nodes - 1) if function == "AllReduce" else nodes - 1) if nodes > 1 else 0
        return base + (steps - inter_steps) * intra + inter_steps * inter
    if algorithm == "PAT":
        return base + log_nodes * (inter / 3.5) + n * 2.8
    if algorithm == "Tree":
        return base + 2 * ((ppn_int - 1) * intra + log_nodes * inter)
    if algorithm == "CollNetDirect":
        return base + 2 * (min(1, ppn_int - 1) * intra + (ppn_int - 1) * COLLNET_ARITY_LATENCY) + inter
    if algorithm == "CollNetChain":
        return base + 2 * (ppn_int - 1) * intra + inter
    if algorithm == "NVLS":
        return intra + (inter if nodes > 1 else 0.0)
    return base + intra + 2 * log_nodes * inter  # NVLSTree


def sized_bandwidth(system: System, algorithm: str, protocol: str, nbytes: int, function: str = "AllReduce",
                    share: float = 1.0) -> float:
    """The algorithm bandwidth NCCL's model uses for ``nbytes`` (GB/s): an AllReduce Tree's
    is corrected by size (treeCorrectionFactor, below 512 MiB), and so is NVLSTree's on
    Blackwell with an x86 host, below 1 GiB (tuning.cc:635-646 in v2.30.7). simnet's hosts
    are x86 (``System.cpu``): a GB200's Grace (Arm) host would not take it."""
    bw = algorithm_bandwidth(system, algorithm, protocol, function, share)
    log_size = int(math.log2(nbytes >> 6)) if nbytes >> 6 else -1
    corrected = (algorithm == "Tree" and log_size < 23) or (
        algorithm == "NVLSTree" and log_size < 24 and system.cc >= 100 and system.cpu in ("intel", "amd"))
    if corrected and log_size >= 0 and function == "AllReduce":
        bw *= TREE_CORRECTION[PROTOCOLS.index(protocol)][log_size]
    return bw


def plateau(system: System, algorithm: str, protocol: str, nbytes: int, function: str = "AllReduce") -> float:
    """The factor on a multi-node Ring/Simple AllReduce's latency once each rank's share of a
    channel reaches 64 bytes: 1.4 on SM80+, 1.9 before ("plateau effect", tuning.cc:641-645)."""
    if algorithm == "Ring" and protocol == "Simple" and system.nodes > 1 and function == "AllReduce":
        if nbytes // (comm_channels(system) * system.ranks) >= 64:
            return RING_PLATEAU if system.cc >= 80 else 1.9
    return 1.0


def predict(system: System, algorithm: str, protocol: str, nbytes: int, function: str = "AllReduce") -> float | None:
    """NCCL's predicted time of one ``function`` of ``nbytes`` (for ReduceScatter and
    AllGather the whole buffer, count x ranks, as NCCL times it: enqueue.h
    ncclFuncMaxSendRecvCount), in seconds; None when NCCL would not run (algorithm,
    protocol) here (tuning.cc:620-655)."""
    bw = sized_bandwidth(system, algorithm, protocol, nbytes, function)
    if bw <= 0:
        return None
    lat = latency(system, algorithm, protocol, function) * plateau(system, algorithm, protocol, nbytes, function)
    return (lat + nbytes / (1000 * bw)) * 1e-6


# ---------------------------------------------------------------- choosing
def parse_nccl_list(value: str | None, names: tuple[str, ...], what: str, function: str = "AllReduce") -> set[str]:
    """The names an ``NCCL_ALGO``/``NCCL_PROTO`` value enables: ``Ring``, ``ring,tree``, or
    ``^LL128`` to disable; case-insensitive; sections for ``function`` (``allreduce:tree;
    allgather:ring``) are honoured, other functions' ignored.

    >>> sorted(parse_nccl_list("^LL128", PROTOCOLS, "NCCL_PROTO"))
    ['LL', 'Simple']
    """
    if value is None or not value.strip():
        return set(names)
    text = value.strip()
    sections = [part for part in text.split(";") if part.strip()]
    for part in sections:  # "allreduce:tree,ring" applies to AllReduce; other functions' sections are ignored
        func, sep, rest = part.partition(":")
        if sep and func.strip().lower() == function.lower():
            text = rest
            break
        if not sep:
            text = part
    else:
        if all(":" in part for part in sections):
            return set(names)
    exclude = text.strip().startswith("^")
    tokens = [t.strip() for t in text.strip().lstrip("^").split(",") if t.strip()]
    lower = {n.lower(): n for n in names}

    def key(token: str) -> str:  # simnet's names too: nvls_tree is NVLSTree
        return token.lower().replace("_", "")

    unknown = [t for t in tokens if key(t) not in lower]
    if unknown:
        raise ValueError(f"{what}={value!r}: unknown name {unknown[0]!r}; expected {', '.join(names)}")
    chosen = {lower[key(t)] for t in tokens}
    return set(names) - chosen if exclude else chosen


def unavailable(system: System, algorithm: str, function: str = "AllReduce") -> str | None:
    """Why NCCL could not run ``algorithm`` for ``function`` here (one line), or None if it could."""
    if any(enabled(system, algorithm, p, function) and bus_bandwidth(system, algorithm, p, function) > 0
           for p in PROTOCOLS):
        return None
    if algorithm not in FUNCTION_ALGORITHMS[function]:
        return f"NCCL has no {algorithm} {function} (its tuner times {', '.join(FUNCTION_ALGORITHMS[function])})"
    if algorithm == "PAT":
        return "PAT runs with one GPU per node only (ncclPatEnable)"
    if function in ("ReduceScatter", "AllGather") and system.nodes > 1 and algorithm in ("NVLS", "CollNetDirect"):
        return (f"{algorithm} {function} across nodes needs CollNet heads for every GPU and the SHARP plugin's "
                f"i{function.lower()}, which simnet does not model")
    if algorithm == "NVLS":
        if not system.nvls:
            return "NVLS needs an NVSwitch that reduces (nvls: true; an H100 or later GPU)"
        return "NVLS across hosts needs SHARP switches in the network (sharp: true; NCCL pairs it with CollNet)"
    if algorithm == "NVLSTree":
        return ("NVLSTree needs an NVSwitch that reduces (nvls: true; H100 or later)" if not system.nvls
                else "NVLSTree runs across hosts; this is one host")
    if algorithm in ("CollNetDirect", "CollNetChain"):
        return (f"{algorithm} needs switches that reduce in the network (sharp: true)" if not system.collnet
                else f"{algorithm} runs across hosts of at most 8 GPUs each")
    return f"{algorithm} has no bandwidth here"


@dataclass(frozen=True)
class Choice:
    """NCCL's pick for one size: the cheapest enabled (algorithm, protocol) and the whole table."""

    algorithm: str
    protocol: str
    time_s: float
    table: dict[tuple[str, str], float] = field(default_factory=dict)


def pick(system: System, nbytes: int, nccl_algo: str | None = None, nccl_proto: str | None = None,
         algorithms: tuple[str, ...] = ALGORITHMS, function: str = "AllReduce") -> Choice:
    """What NCCL runs for a ``function`` of ``nbytes``: the argmin of ``predict`` over the
    enabled pairs, algorithm-major then protocol, first on ties (enqueue.cc:2028-2117)."""
    algos = parse_nccl_list(nccl_algo, ALGORITHMS, "NCCL_ALGO", function) & set(algorithms)
    protos = parse_nccl_list(nccl_proto, PROTOCOLS, "NCCL_PROTO", function)
    table = {}
    for algorithm in ALGORITHMS:
        for protocol in PROTOCOLS:
            if algorithm in algos and protocol in protos:
                time = predict(system, algorithm, protocol, nbytes, function)
                if time is not None:
                    table[(algorithm, protocol)] = time
    if not table:
        reasons = "; ".join(r for a in sorted(algos) if (r := unavailable(system, a, function)))
        raise ValueError(f"NCCL_ALGO={nccl_algo or ''} NCCL_PROTO={nccl_proto or ''} leave nothing NCCL could run "
                         f"here{': ' + reasons if reasons else ''}")
    (algorithm, protocol), time = min(table.items(), key=lambda item: item[1])
    return Choice(algorithm, protocol, time, table)


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


def pipeline_stages(system: System, algorithm: str, function: str = "AllReduce") -> int | None:
    """Stages of NCCL's Simple pipeline a step passes through, where they are not the
    replay's hops (None): NVLS AllReduce on one node runs three warp groups at once, each a
    stage fed by the one before through NCCL's step FIFO: scatter (send buffer into the
    NVLS buffers), reduce (multimem load-reduce and multicast store) and gather (into the
    receive buffer) (src/device/all_reduce.h:418-457), where the replay has two hops, GPU to
    NVSwitch and back. Each stage is taken to run at the channel's rate."""
    return 3 if _nvls_one_node(system, algorithm, function) else None


MAX_THREADS = {"LL": 512, "LL128": 640, "Simple": 512}  # NCCL_{LL,LL128,SIMPLE}_MAX_NTHREADS (device.h:93-114)
MAX_THREADS_ANY = 640  # NCCL_MAX_NTHREADS (device.h:93)
THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}  # NCCL_*_THREAD_THRESHOLD, bytes per thread (comm.h:49-51)
COLLNET_THREAD_THRESHOLD = 512  # CollNet's Simple threshold (tuning.cc:594-595)
MIN_TRAFFIC_PER_CHANNEL = 32 * 1024  # enqueue.cc scheduleCollTasksToPlan: MinTrafficPerChannel
PCI_BW = 12.0  # GB/s, "PCI Gen3 x16" (topo.h:25): below it a ring's Simple runs 256 threads
MAX_CHANNELS = 64  # MAXCHANNELS (device.h, v2.25+)


def comm_channels(system: System) -> int:
    """Channels of the communicator (``comm->nChannels``, connect.cc ncclTopoPostset): the
    ring search's, duplicated; half as many again for CollNet when a node's GPUs outrun its
    network; doubled again on SM90+ across nodes when the ring's intra speed is above 45
    GB/s and fewer than 16 ("4 compute channels per search channel"): 16 on H100 nodes with
    4 or 8 NICs of 400G."""
    channels = min(MAX_CHANNELS, 2 * graph(system, "Ring").channels)
    chain = graph(system, "CollNetChain")
    if system.collnet and chain.bw_intra > chain.bw_inter and system.ranks > system.nodes:
        channels = min(MAX_CHANNELS, channels + channels // 2)
    if system.cc >= 90 and system.nodes > 1 and graph(system, "Ring").bw_intra > 45.0 and channels < 16:
        channels *= 2
    return channels


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
        heads = max(1, min(graph(system, "CollNetDirect").channels, round(system.ppn)))
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
    here = sized_bandwidth(system, algorithm, protocol, nbytes, function, running / comm * threads) / running
    one = replace(system, ranks=max(1, round(system.ppn)), nodes=1)
    alone = algorithm_bandwidth(one, algorithm, protocol, function) / comm_channels(one)
    return min(1.0, here / alone) if alone > 0 else 1.0


def _nvls_one_node(system: System, algorithm: str, function: str) -> bool:
    """NCCL's one-node NVLS AllReduce kernel (all_reduce.h:410-457): scatter, reduce and gather warps."""
    return algorithm == "NVLS" and function == "AllReduce" and system.nodes == 1


def chunk_size(system: System, algorithm: str, protocol: str, nbytes: int, function: str = "AllReduce") -> int:
    """NCCL's pipeline chunk for one ``function`` (AllReduce unless named), bytes per channel
    (enqueue.cc calcCollChunking, init.cc:810-826, collectives.h:19-34): Simple moves 4 MiB
    / 8 = 512 KiB steps, Ring's in 1 MiB slices of its 2 MiB chunks; LL carries 8 of every
    16 bytes of its 64 KiB steps (32 KiB); LL128 15 of every 16 lines of its 600 KiB steps,
    smaller for trees of small messages; NVLS 128 KiB, halved down to 16 KiB, and NVLSTree
    down to 32 KiB, as the message gets small against channels x heads x chunk."""
    ppn = max(1, round(system.ppn))
    # NCCL chunks each channel's own bytes (enqueue.cc:717-736): the channels the collective runs on
    channels = collective_channels(system, algorithm, protocol, nbytes, function)[0]
    if algorithm in ("NVLS", "NVLSTree"):
        ops = channels * (ppn if system.nodes == 1 else max(system.nics, 1))
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
    if protocol == "LL":
        return 32 * 1024
    if protocol == "LL128":
        chunk = 614400 // 16 * 15
        if algorithm == "Tree":
            steps = 1 + int(math.log2(system.nodes)) + 0.1 * system.ppn
            while nbytes // (channels * chunk) < steps * 64 / ppn and chunk > 131072:
                chunk //= 2
            while nbytes // (channels * chunk) < steps * 16 / ppn and chunk > 32768:
                chunk //= 2
        return chunk
    if function in ("Broadcast", "Reduce"):  # BROADCAST/REDUCE_CHUNKSTEPS = 1 step of 512 KiB (collectives.h:27-34)
        return 512 * 1024
    return 1024 * 1024 if algorithm == "Ring" else 512 * 1024
