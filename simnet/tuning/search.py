"""NCCL's view of a topology and the channel graphs its search finds (``src/graph/search.cc``,
``src/graph/connect.cc``): ``System`` (GPU generation, nodes, GPUs per node, NVLink and
network rates, SHARP), ``system_of`` (that view of a ``Topology``), ``graph`` (channels and
per-channel speeds, as simnet estimates the search's result) and ``comm_channels`` (the
channels a communicator opens).

>>> from simnet.topology.loader import load_topology
>>> box = system_of(load_topology("topologies/dgx_h100.yaml"))
>>> box.nodes, graph(box, "Ring").channels
(1, 12)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simnet.topology.hardware import GPUS, NVLINK, PCIE, UNNAMED_GPU_CC, pcie_effective
from simnet.tuning import rccl
from simnet.tuning.rates import nccl_reading
from simnet.tuning.tables import (
    CHANNEL_DUPLICATION,
    COLLNET_NODE_THRESHOLD,
    MAX_CHANNELS,
    MAX_RING_CHANNELS,
    NET_LATENCY,
    NVLS_HEAD_ARITY,
    SPEED_INTER,
    SPEED_INTRA,
)

__all__ = ["System", "Graph", "system_of", "graph", "comm_channels", "mesh_rings", "net_devices"]


def _speeds(system: System, table: dict) -> tuple:
    """The speeds the search tries (``table``: NCCL's inside or across nodes; RCCL has one list)."""
    if system.library == "rccl":
        return rccl.SPEEDS
    cc = system.cc
    return table[100 if cc >= 100 else 90 if cc >= 90 else 80]


# ---------------------------------------------------------------- the system
@dataclass(frozen=True)
class System:
    """What NCCL's model sees of a communicator (bandwidths in GB/s, latencies in us).

    ``nvlink_bw``: NVLink bandwidth per GPU as NCCL models it (links x per-link, or 0 with
    no NVLink); ``pci_bw``: a GPU's PCIe bandwidth; ``nic_bw``: a GPU's path to one NIC
    (min of PCIe and the NIC, a NIC's ports together, an EFA group's NICs together); ``nics``: network devices per node
    (NICs; one per GPU for EFA's grouped NICs, ``net_devices``); ``cpu``: the hosts' CPU as NCCL's
    model classes it (intel, amd, arm); ``nvls``: the NVSwitch can reduce;
    ``collnet``: the network can reduce (SHARP) and NCCL_COLLNET_ENABLE would be set.
    ``library``: ``nccl``, or ``rccl`` on AMD GPUs, whose ``arch`` (gfx942, gfx950) picks
    RCCL's tuning model; ``mesh``: every GPU of a node has an xGMI link to every other
    (RCCL's RCCL_TOPO_XGMI_ALL; ``nvlink_bw`` is then the sum of a GPU's links to the
    others, RCCL's totalBw); ``ll128_forced``: RCCL_LL128_FORCE_ENABLE=1;
    ``min_channels``/``max_channels``: NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS (0: unset);
    ``min_p2p_channels``/``max_p2p_channels``/``net_peer_channels``: NCCL_MIN_P2P_NCHANNELS,
    NCCL_MAX_P2P_NCHANNELS, NCCL_NCHANNELS_PER_NET_PEER (0: unset; ``enqueue.p2p_channels``);
    ``msccl``: RCCL_MSCCL_ENABLE (default 1), ``msccl_forced``: RCCL_MSCCL_FORCE_ENABLE=1
    (``rccl.msccl``); ``max_local``: the most GPUs of the communicator on one node (NCCL's
    ``maxLocalRanks``, which CollNet is held to); ``turned_off``: the variables (``NAME=value``) that took ``nvls`` or
    ``collnet`` away, and ``lone_gpu``: a node holds one GPU of the communicator (which takes
    ``nvls`` away), for the words of what then cannot run.
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
    library: str = "nccl"
    arch: str = ""
    mesh: bool = False
    ll128_forced: bool = False
    min_channels: int = 0
    max_channels: int = 0
    min_p2p_channels: int = 0
    max_p2p_channels: int = 0
    net_peer_channels: int = 0
    msccl: bool = True
    msccl_forced: bool = False
    turned_off: tuple[str, ...] = field(default=(), compare=False)  # (words only: the same plan either way)
    lone_gpu: bool = field(default=False, compare=False)
    max_local: int = 0  # the most GPUs of the communicator on one node (NCCL's maxLocalRanks; 0: ppn's)

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
    gpus = list(topology.gpus if gpus is None else gpus)
    hosts = topology.groups("node", gpus)
    models = {topology.gpu_model(g) for g in gpus}
    cc = min((GPUS[m].compute_capability if m in GPUS else UNNAMED_GPU_CC) for m in models)
    cpu = next((GPUS[m].host_cpu for m in sorted(models, key=str) if m in GPUS), "intel")
    rate = nccl_reading(topology) / 1e9
    first = next(iter(hosts.values()))
    probe = first[0]
    out = [topology.link_index[(probe, nxt)] for nxt in topology.graph.successors(probe)]
    nvlink = max((rate[i] for i in out if topology.link_type[i] == NVLINK), default=0.0)
    amd = sorted(GPUS[m].gcn_arch for m in models if m in GPUS and GPUS[m].amd)
    mesh = False
    if amd:  # RCCL's totalBw: the sum of the GPU's xGMI links to the node's others (search.cc:31-38)
        peers = set(first) - {probe}
        nvlink = sum(rate[i] for i in out if topology.link_type[i] == NVLINK and topology.links[i][1] in peers)
        mesh = all(topology.link_index.get((a, b)) is not None and topology.link_type[topology.link_index[(a, b)]]
                   == NVLINK for a in first for b in first if a != b)
    # a GPU with no PCIe link written (its own NIC, or NVLink alone) has its generation's, as NCCL reads it
    generation = min((GPUS[m].pcie_generation for m in models if m in GPUS), default=4)
    pci = max((rate[i] for i in out if topology.link_type[i] == PCIE), default=pcie_effective(generation) / 1e9)
    rails = topology.rails(first) if len(hosts) > 1 else []
    devices = net_devices(topology, rails)
    nic_bw = 0.0
    if devices:
        nic, near = devices[0][0]
        # no route: the GPU is its own NIC (cabled straight to the network)
        to_nic = min((rate[i] for i in topology.route_indices(near, nic)), default=float("inf"))
        # a NIC's ports (planes) are one device of their summed speed (Topology.ports), an EFA group's NICs one too
        wire = sum(rate[topology.link_index[(n, port)]] for n, _ in devices[0] for port in topology.ports(n))
        nic_bw = float(min(to_nic, wire))
    marked = topology.derived("switch_features", _switch_features)
    # NCCL sets NVLS up on nodes of two GPUs of the communicator or more (ncclNvlsInit, src/transport/nvls.cc:262,
    # v2.30.7; up to v2.28.3 three or more: gpuCount <= 2)
    lone_gpu = cc >= 90 and "nvls" in marked and min(len(on) for on in hosts.values()) < 2
    nvls = cc >= 90 and "nvls" in marked and not lone_gpu
    # CollNet needs COLLNET_NODE_THRESHOLD (2) nodes at least: NCCL turns it off below (init.cc:1468-1475, v2.30.7)
    collnet = "sharp" in marked and len(hosts) >= COLLNET_NODE_THRESHOLD
    transport = topology.transport(rails[0][0]) if rails else "ib"
    nic_latency = topology.graph.nodes[rails[0][0]].get("net_latency") if rails else None
    return System(ranks=len(gpus), nodes=len(hosts), cc=cc, nvlink_bw=float(nvlink), pci_bw=float(pci),
                  nic_bw=nic_bw, nics=len(devices), transport=transport, cpu=cpu, nvls=nvls, collnet=collnet,
                  nic_latency=None if nic_latency is None else nic_latency * 1e6,
                  library="rccl" if amd else "nccl", arch=amd[0] if amd else "", mesh=mesh, lone_gpu=lone_gpu,
                  max_local=max(len(on) for on in hosts.values()))


def net_devices(topology, rails: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The network devices NCCL sees among one host's ``rails`` (``Topology.rails``), each
    as the rails it drives. NCCL itself fuses only the ports of one NIC (NCCL_NET_MERGE_LEVEL
    defaults to PORT, NVIDIA/nccl v2.30.7 src/graph/topo.cc:1744; separate NICs are at PIX or
    farther, topo.cc:1199-1213), so with InfiniBand and RoCE every NIC is a device. The
    aws-ofi-nccl plugin's (master 2daf7d30) RDMA protocol, which it runs on EFA whenever NICs group (P5 and
    later by default, aws/aws-ofi-nccl src/platform-aws.cpp:139, else when a group has
    several NICs, src/nccl_ofi_net.cpp:246-330), groups the NICs nearest each GPU into one
    device (src/nccl_ofi_topo.cpp nccl_ofi_topo_group: as many groups as GPUs share the NICs'
    PCIe subtree, create_groups_from_info_list) of their combined rate (get_properties:
    port_speed x max_group_size, src/nccl_ofi_rdma.cpp:413), striping each send over them
    (src/nccl_ofi_scheduler.cpp): here the NICs of one GPU."""
    if not rails or topology.transport(rails[0][0]) != "efa":
        return [[rail] for rail in rails]
    groups: dict[str, list[tuple[str, str]]] = {}
    for nic, gpu in rails:
        groups.setdefault(gpu, []).append((nic, gpu))
    return list(groups.values())


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
      NIC holds (a NIC carries floor(nic / speed) channels), no more than the GPUs' NVLink
      forwards (``_ring_across_nodes``): DGX H100 8 x 48 GB/s, an NVL72 rack 15 x 48.
    * Tree: the ring's channel count and inter-node speed (NCCL searches the tree with the
      ring's channel count), the intra-node speed raised by pass 2 while below twice the
      inter-node one and the channels fit the GPU's links (p4d: 4 x 12 GB/s across, 30
      inside; NCCL's model uses the intra speed up to two nodes).
    * NVLS: one channel per GPU of the node (at most 32), each using bandwidth on every
      GPU link and twice on its head's, so (G+1) x bw fits the NVLink; bwInter raised while
      below 2 x bwIntra (pass 2), or the NIC path across nodes.
    * CollNet: one channel per NIC at the NIC path speed.
    * RCCL on hosts of 8 fully connected AMD GPUs: its Rome model's rings (``mesh_rings``:
      28 alone, 64 across nodes with a NIC per GPU) at totalBw / channels each (A
      rome_models.cc:1229), Tree on the same; elsewhere the estimates above with RCCL's
      speeds (``rccl.SPEEDS``).
    """
    if algorithm == "PAT":  # PAT runs on the tree's graph (init.cc: graphs[] = {tree, ring, ..., tree})
        algorithm = "Tree"
    rings = mesh_rings(system)
    if rings is not None:  # RCCL's Rome model: its rings, Tree's chains alike, bw = totalBw / channels
        return Graph(len(rings), system.nvlink_bw / len(rings), system.nvlink_bw / len(rings))
    cc, ppn = system.cc, max(1, round(system.ppn))
    local = system.nvlink_bw if system.nvlink_bw > 0 else system.pci_bw
    if algorithm in ("NVLS", "NVLSTree"):
        channels = min(NVLS_HEAD_ARITY, ppn)
        intra = _first_speed(_speeds(system, SPEED_INTRA), local / (channels + 1))
        inter = _first_speed(_speeds(system, SPEED_INTRA), 2 * intra - 1e-9) if system.nodes == 1 else \
            _first_speed(_speeds(system, SPEED_INTER), system.nic_bw)
        return Graph(channels, intra, inter)
    if system.nodes > 1 and system.nics > 0:
        channels, speed = _ring_across_nodes(system, local)
        intra = speed
        if algorithm in ("Tree", "CollNetChain", "CollNetDirect"):
            # search pass 2 raises a tree's intra-node speed while it is below twice the
            # inter-node one and the channels still fit the GPU's links (search.cc:1262-1281)
            for faster in sorted(s for s in _speeds(system, SPEED_INTRA) if s > speed):
                if intra >= 2 * speed or faster * channels > local + 1e-9:
                    break
                intra = faster
        return Graph(channels, intra, speed, tree_pattern=algorithm == "Tree" and ppn > 1 and system.nics < 2)
    speed = _first_speed(_speeds(system, SPEED_INTRA), local)
    channels = max(1, min(MAX_RING_CHANNELS, int(local // speed + 1e-9)))
    if speed >= 25 and not (cc > 80 and speed < 50 and channels > 4):
        channels, speed = min(2 * channels, MAX_RING_CHANNELS), speed / 2
    return Graph(channels, speed, speed)


def nvlink_ring_channels(speed: float, nvlink: float, ppn: int) -> int:
    """The most ring channels of ``speed`` GB/s whose intra-node hops one GPU's NVLink
    (``nvlink`` GB/s each way) carries, on a node of ``ppn`` GPUs: NCCL's search takes
    ``speed`` off the GPU's NVLink for every channel it forwards to the next GPU of the node
    (NVIDIA/nccl v2.30.7 src/graph/search.cc:80-121 followPath, called for each GPU-to-GPU
    hop by ncclTopoFollowPath, :126-170; the link's bandwidth must stay >= 0), and a
    channel's last GPU hands it to its NIC instead. The channels' exits are spread over the
    GPUs (one NIC each), so the busiest GPU forwards all but ``channels // ppn`` of them
    over NVLink: 8 channels of 48 GB/s on 8 H100 (7 x 48 <= 370.8), but on a 72-GPU NVL72
    clique only 15 (15 x 48 = 720 <= 721.8), not one per NIC."""
    if ppn < 2 or speed <= 0:
        return MAX_RING_CHANNELS
    channels = 0
    while channels < MAX_RING_CHANNELS:
        more = channels + 1
        if (more - more // ppn) * speed > nvlink + 1e-9:
            break
        channels = more
    return channels


def _ring_across_nodes(system: System, local: float) -> tuple[int, float]:
    """(channels, speed) of NCCL's ring search across nodes (search.cc ncclTopoCompute,
    v2.30.7 :1165-1257): from the first inter-node speed a GPU's path to its NIC holds, as
    many channels as the NICs carry (a NIC floor(nic / speed) of them) and, over NVLink,
    the GPUs' NVLink forwards (``nvlink_ring_channels``). Pass 1 stops once channels x speed
    reach the GPU's total bandwidth (:1198, ``totalBw``), else it tries the next lower
    speed while that is above 0.49 of the best found (:1241-1244), keeping a graph only if
    channels x speed grows (ncclTopoCompareGraphs, :455-460)."""
    speeds = _speeds(system, SPEED_INTER)
    first = _first_speed(speeds, min(system.nic_bw, local))
    ppn = max(1, round(system.ppn))
    best = None
    for speed in (s for s in speeds if s <= first + 1e-9):
        if best is not None and speed / best[1] <= 0.49:
            break
        per_nic = max(1, int(system.nic_bw // speed + 1e-9)) if speed > 0 else 1
        channels = min(MAX_RING_CHANNELS, system.nics * per_nic)
        if system.intra_hw == NVLINK:
            channels = min(channels, nvlink_ring_channels(speed, local, ppn))
        if channels > 0 and (best is None or channels * speed > best[0] * best[1] + 1e-9):
            best = (channels, speed)
        if best is not None and best[0] * best[1] >= local - 1e-9:
            break
    return best if best is not None else (1, first)


def mesh_rings(system: System) -> list[tuple[int, ...]] | None:
    """RCCL's search channels on hosts of 8 fully connected AMD GPUs, as each channel's GPU
    order (device indices in the host), when one of RCCL's Rome models describes them:
    one such host (``rccl.single_node_rings``), or across nodes with a NIC per GPU
    (``rccl.multi_node_rings``). Across nodes with the same number of NICs for every GPU
    (2 x 200G for one 400G, say), no Rome model matches; simnet takes rome_model_81's rings
    there too, each GPU's channels dealt over its NICs (``channels.channel_groups``), as NCCL
    deals them, so the same GPUs and network rate answer alike (fuzz round an: RCCL's generic
    search taken as rank-order rings put every channel on the same xGMI links, 4.8x slower).
    None elsewhere (NVIDIA, or RCCL's generic search)."""
    if system.library != "rccl" or not system.mesh or round(system.ppn) != rccl.MESH_GPUS:
        return None
    if system.nodes == 1:
        return rccl.single_node_rings()
    return rccl.multi_node_rings() if system.nics and system.nics % rccl.MESH_GPUS == 0 else None


def layout_channels(system: System, algorithm: str) -> int:
    """The channels simnet lays NCCL's ``algorithm`` ("Ring" or "Tree") out on when all of
    ``comm_channels`` run, in the units of a schedule's ``channels`` option: the ring search's
    rings (NCCL runs each as ``comm_channels / this`` channels); RCCL's trees, half its
    communicator's channels (the two trees of the double binary tree share them)."""
    if algorithm == "Tree" and system.library == "rccl":
        return max(1, comm_channels(system) // 2)
    return graph(system, "Ring").channels


def comm_channels(system: System) -> int:
    """Channels of the communicator (``comm->nChannels``, connect.cc ncclTopoPostset): the
    ring search's, duplicated; half as many again for CollNet when a node's GPUs outrun its
    network; doubled again on SM90+ across nodes when the ring's intra speed is above 45
    GB/s and fewer than 16 ("4 compute channels per search channel"): 16 on H100 nodes with
    4 or 8 NICs of 400G. RCCL's: a Rome model's (56 on one host of 8 MI300X, 112 of 8
    MI355X, 64 across nodes), else the search's doubled while at most half the cap (128 on
    one node, 64 across; connect.cc:628-660)."""
    if system.library == "rccl":
        tune = rccl.tuning(system.arch)
        cap = rccl.MAX_CHANNELS if system.nodes == 1 else rccl.MAX_MULTI_NODE_CHANNELS
        if mesh_rings(system) is not None:
            return tune.single_node_channels if system.nodes == 1 else cap
        found = graph(system, "Ring").channels
        return min(cap, CHANNEL_DUPLICATION * found if found <= cap // 2 else found)
    channels = min(MAX_CHANNELS, CHANNEL_DUPLICATION * graph(system, "Ring").channels)
    chain = graph(system, "CollNetChain")
    if system.collnet and chain.bw_intra > chain.bw_inter and system.ranks > system.nodes:
        channels = min(MAX_CHANNELS, channels + channels // 2)
    if system.cc >= 90 and system.nodes > 1 and graph(system, "Ring").bw_intra > 45.0 and channels < 16:
        channels *= 2
    return channels
