"""The NCCL-faithful performance model (``model: nccl``): how NCCL's software times a schedule.

Between the schedule and the fluid network it adds, from NCCL's published tuning model
(``simnet.tuning.predict``, NCCL v2.30.7) and vendor figures:

* **effective link rates** (``simnet.tuning.rates``): NVLink, PCIe and the network at the
  rates NCCL's topology model assumes, not the datasheet line rates;
* **protocols**: LL carries 8 data bytes in every 16 (flags interleaved, device.h:75-88),
  LL128 120 in every 128 (device.h:110-118), Simple all of them; the protocol is NCCL's
  pick for the algorithm at this size (``NCCL_PROTO`` honoured), and sets the pipeline
  step the schedule pipelines (``enqueue.pipeline_step``: NCCL's chunk, a loop of them for NVLS);
* **NCCL's bandwidth ceiling**: a connection of an NCCL algorithm that carries b of the
  collective's S bytes may not exceed b/S of the algorithm bandwidth NCCL's model gives it
  (per-channel caps, LL's and LL128's limits, NVLS and tree efficiencies all live there,
  and for LL and LL128 the tree's size correction; Simple's pipeline fill the replay
  simulates itself);
  uncontended, the simulation can therefore not beat NCCL's own model, and contention
  (oversubscribed uplinks, shared NICs) slows it down further;
* **software latency**: every transfer is delivered no earlier than NCCL's per-step
  latency for its link class (NVLink, PCIe or network; ``hwLat``) after it starts, the
  network's figure raised by the transport's own latency (``TRANSPORT_LATENCY``); the
  collective starts after NCCL's base latency (``baseLat``: launch and setup).

Other collectives take their own rows of NCCL's model (its ReduceScatter, AllGather,
Broadcast and Reduce: latency steps, bandwidth conversion, chunk sizes). Under RCCL, ``direct``
where RCCL 2.21.5 runs an MSCCL all-pairs schedule (``rccl.msccl``) takes that schedule's
protocol and channels, and Ring's latencies. Algorithms NCCL
does not have for a collective (halving-doubling, recursive doubling, direct, naive, ps,
hierarchical, the textbook trees, every AllToAll and SendRecv) run on NCCL-style
point-to-point sends: Ring's (or, for
the textbook trees, Tree's) latencies, LL up to 16 KiB and Simple above (NCCL's
``NCCL_P2P_LL_THRESHOLD`` default), no ceiling beyond the links; AllToAll's and SendRecv's
``direct`` cut each send over the channels NCCL gives it (``enqueue.send_channels``), LL up
to 16 KiB per channel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from simnet.errors import Unsupported
from simnet.model.calibration import Calibration
from simnet.model.timing import Timing
from simnet.schedule.transfers import Schedule
from simnet.topology.graph import PS_PER_SECOND, Topology
from simnet.topology.hardware import NET, NVLINK, PCIE
from simnet.tuning import enqueue, predict, rccl, search, tables
from simnet.tuning.rates import effective_capacity

__all__ = ["NcclPlan", "plan", "timing", "connection_timing", "launch_latency", "step_latencies", "fitted_capacity",
           "connections", "wire_factor",
           "TRANSPORT_LATENCY", "WIRE_FACTOR", "P2P_LL_THRESHOLD", "MAX_PIECES"]

WIRE_FACTOR = {"LL": 2.0, "LL128": 128 / 120, "Simple": 1.0}
"""Bytes on the wire per data byte: LL lines are 8 data + 8 flag bytes, LL128 lines 120 + 8."""
MAX_PIECES = 64
"""Most pipeline chunks simnet simulates per channel, counted over every channel the communicator
opens (the whole buffer's chunks are so bounded: a lane that stands for a few running channels
carries theirs, up to MAX_PIECES x opened / running). NCCL's own chunks (128 KiB - 2 MiB) would
give a 16 GiB AllReduce tens of thousands of transfers per connection. Coarser chunks fill a
pipeline more slowly, (D + k - 1) / k of the streaming time for k chunks over D hops, and the
bandwidth ceiling is raised by the ratio of that to NCCL's own chunks' fill, so the coarsening
costs simulation time only (``_pipeline_fill``)."""
P2P_LL_THRESHOLD = 16384
"""NCCL_P2P_LL_THRESHOLD's default: point-to-point sends up to 16 KiB use LL (NCCL env docs)."""
TRANSPORT_LATENCY = {
    "ib": (0.0, 0.0),
    "roce": (0.0, 0.0),
    "tcp": (0.0, 0.0),
    "efa": (20.0, 3.0),
}
"""(per network step, extra for Simple) us a transport adds to NCCL's hwLat[NET]: InfiniBand,
RoCE (NCCL's IB verbs transport) and sockets report no latency of their own
(src/transport/net_ib/init.cc:558, net_socket.cc:174); for EFA, AWS's own model of the
aws-ofi-nccl plugin charges 20 us per network hop on P5 and 3 us more for Simple's device
completion (aws/aws-ofi-nccl src/tuner/nccl_ofi_model.cpp, include/nccl_ofi_param.h)."""

_TEXTBOOK_TREES = ("binary_tree", "double_binary_tree")


@dataclass(frozen=True)
class NcclPlan:
    """What the model decided before the schedule is built."""

    protocol: str
    options: dict  # the schedule's options, with the model's defaults filled in
    row: str  # the NCCL algorithm whose constants time it (its own, or Ring/Tree for p2p algorithms)
    native: bool  # an NCCL algorithm: NCCL's bandwidth ceiling applies
    system: search.System
    calibration: Calibration
    coarsening: float = 1.0  # the simulated chunk over NCCL's own chunk (>= 1, see MAX_PIECES)
    function: str = "AllReduce"  # NCCL's function (its rows of the model)
    size: int = 0  # bytes of the collective, in nccl-tests' convention
    channel_share: float = 1.0  # of NCCL's per-channel capacity in use: the channels and threads it runs
    running_channels: int | None = None  # the channels NCCL runs this collective on (its own algorithms)
    channels_capped: tuple[int, int] | None = None  # (NCCL channels options.channels asked, those NCCL opens)


def wire_factor(system: search.System, protocol: str) -> float:
    """Bytes on the wire per data byte of ``protocol``: ``WIRE_FACTOR``; RCCL's LL128 lines are
    64 bytes with 56 of data (``rccl.LL128_DATA``)."""
    return 1 / rccl.LL128_DATA if system.library == "rccl" and protocol == "LL128" else WIRE_FACTOR[protocol]


def pipeline_chunk(system: search.System, name: str, protocol: str, size: int, function: str = "AllReduce") -> int:
    """The piece (bytes per channel) a replay pipelines NCCL's ``name`` in: NCCL's own step
    for ``protocol`` (enqueue.cc), coarsened so that no channel pipelines more than
    ``MAX_PIECES`` of them."""
    own = enqueue.pipeline_step(system, name, protocol, size, function)
    channels = (enqueue.nvls_channels(system) if name in ("NVLS", "NVLSTree")
                else search.comm_channels(system) if system.library == "rccl"
                else tables.CHANNEL_DUPLICATION * search.graph(system, name).channels)
    return max(own, -(-size // (channels * MAX_PIECES)))


def plan(topology: Topology, algorithm: str, size: int, options: dict, accepts: tuple[str, ...],
         nccl_proto: str | None = None, calibration: Calibration | None = None,
         function: str = "AllReduce", message: int | None = None, system: search.System | None = None) -> NcclPlan:
    """The protocol NCCL would use for ``function``'s ``algorithm`` at ``size`` (within
    ``nccl_proto``, an NCCL_PROTO value) and the schedule options (NCCL's chunk size for it
    unless ``chunk_size`` was given; ``accepts``: the options the algorithm takes). A
    point-to-point algorithm picks LL or Simple by ``message``, the bytes of one send
    (default ``size``), as NCCL decides per send; NCCL's own send/recv (an algorithm that
    accepts ``send_channels``, under NCCL) is split over the channels NCCL gives that send
    (``enqueue.send_channels``), LL up to the threshold per channel. ``system``: what NCCL
    sees of ``topology`` under its environment (``NCCL_NVLS_ENABLE``, ``NCCL_COLLNET_ENABLE``),
    default its own."""
    system = system or search.system_of(topology)
    allowed = predict.parse_nccl_list(nccl_proto, tables.PROTOCOLS, "NCCL_PROTO", function)
    name = tables.native(function, algorithm)
    options = dict(options)
    if system.library == "rccl" and name is not None and name not in ("Ring", "Tree"):
        raise Unsupported(predict.unavailable(system, name, function))  # (RCCL's tables have no row for it)
    if name is not None:
        every = {p: predict.predict(system, name, p, size, function) for p in tables.PROTOCOLS}
        times = {p: t for p, t in every.items() if t is not None and p in allowed}
        # where NCCL's model has no time for it at all (PAT on hosts of several GPUs: named, it runs
        # as simnet schedules it), Simple, which every algorithm of NCCL's runs
        possible = [p for p, t in every.items() if t is not None] or ["Simple"]
        if not times and not set(possible) & set(allowed):
            raise Unsupported(f"NCCL_PROTO={nccl_proto} leaves {algorithm} no protocol: NCCL runs it with "
                              f"{', '.join(possible)} only; allow one of them, or leave {algorithm} out")
        protocol = min(times, key=times.get) if times else "Simple"
        if system.library == "rccl" and not (nccl_proto or "").strip() and times:
            protocol = predict.rccl_protocol(system, name, protocol, size, function)
        row = name
    else:
        send = size if message is None else message
        parts = 1
        if "send_channels" in accepts and system.library == "nccl":  # NCCL's own send/recv: its channels per send
            parts = options["send_channels"] = enqueue.send_channels(system, send)
        # LL while the send is at most the threshold per channel (enqueue.cc:931-932, v2.30.7), over
        # connections with LL buffers: a network peer's send/recv connection has none unless
        # NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 (transport/net.cc:915-930, init.cc:859, default 0), so
        # across hosts NCCL's sends run Simple. NCCL_PROTO is not consulted: it restricts the
        # collectives' tuning (graph/tuning.cc:453-456), not addP2pToPlan (enqueue.cc)
        network = system.nodes > 1 and system.library == "nccl"
        protocol = "LL" if send <= parts * P2P_LL_THRESHOLD and not network else "Simple"
        row = "Tree" if algorithm in _TEXTBOOK_TREES else "Ring"
    channel_share, running, capped = 1.0, None, None
    schedule = rccl.msccl(system, function, int(size)) if algorithm == "direct" else None
    if schedule is not None:
        # RCCL runs MSCCL's all-pairs file here, whose protocol its XML fixes (NCCL_PROTO is not
        # consulted); RCCL has no cost model for it, so its steps take Ring's per-step and
        # base latencies for that protocol, as simnet's other point-to-point algorithms do
        protocol, row, running = schedule.protocol, "Ring", schedule.channels
    if name is not None:  # the channels it runs on, of those NCCL would open (fewer for a small collective)
        nvls = name in ("NVLS", "NVLSTree")
        full = enqueue.nvls_channels(system, name) if nvls else search.comm_channels(system)
        opened = None if nvls else enqueue.opened_channels(system)  # NCCL_MIN/MAX_NCHANNELS
        if options.get("channels"):  # NVLS on one node counts NVLS channels, the others the ring search's
            given = options["channels"]
            most = rccl.MAX_CHANNELS if system.library == "rccl" else tables.MAX_CHANNELS
            asked = given if name == "NVLS" and system.nodes == 1 else \
                round(full * given / search.graph(system, "Ring").channels)
            opened = max(1, min(full if nvls else most, asked))
            capped = (asked, opened) if asked > opened else None
        running, threads = enqueue.collective_channels(system, name, protocol, size, function, opened)
        channel_share = running / full * threads
        if not nvls and name != "PAT" and "channels" in accepts:
            # the replay lays out the channels that run (enqueue.cc topoGetAlgoInfo, the first ones of the
            # communicator's: connect.cc:443-503, v2.30.7), not every one at a share of its rate: each
            # channel's pipeline then carries NCCL's share of the buffer, in as many chunks as NCCL's;
            # however the count came about (options.channels is in the ring search's rings, which RCCL's
            # trees are not laid out in: its count is what it opened, above)
            options["channels"] = max(1, -(-running * search.layout_channels(system, name) // full))
    if name == "NVLS" and options.get("channels") is None:
        options["channels"] = enqueue.nvls_channels(system)
    coarsening = 1.0
    if name is not None and "chunk_size" in accepts:
        own = enqueue.pipeline_step(system, name, protocol, size, function)
        if options.get("chunk_size") is None or options["chunk_size"] < own:
            # NCCL's pipeline step per channel (it pipelines no finer: a smaller chunk_size is raised to it)
            options["chunk_size"] = pipeline_chunk(system, name, protocol, size, function)
            coarsening = options["chunk_size"] / own
    return NcclPlan(protocol, options, row, name is not None, system, calibration or Calibration(), coarsening,
                    function, int(size), channel_share, running, capped)


def connections(channel: np.ndarray, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct connections as rows of (channel, src, dst), sorted, each entry's index
    into them), by one integer key per entry (sorting rows is 50x slower: 14 s for 4.5 M)."""
    channel, src, dst = (np.asarray(a, dtype=np.int64) for a in (channel, src, dst))
    width = int(max(src.max(initial=0), dst.max(initial=0))) + 1
    keys, inverse = np.unique((channel * width + src) * width + dst, return_inverse=True)
    return np.stack([keys // (width * width), keys // width % width, keys % width], axis=1), inverse.reshape(-1)


def _pipeline_fill(channel: np.ndarray, info: dict, protocol: str, coarsening: float,
                   stages: Callable[[int], float | None] | None = None, network_wait: float = 1.0,
                   lane_channels: float = 1.0) -> np.ndarray | float:
    """Per connection (its ``channel``), how much faster NCCL fills a tree's pipeline than
    the replay does: the replay forwards its chunks whole, so a channel of k chunks over D
    hops takes (D + k - 1) / k of the streaming time. NCCL forwards whole steps of its own,
    finer chunks (k times ``coarsening``) where a stage waits for them: with Simple at every
    hop (or its own ``stages`` of a lane that crosses the network so many times, where
    they are not the replay's hops: ``enqueue.pipeline_stages``); with LL and LL128 only
    where the proxy sends a step into the network, which it does once the GPU has written
    all of it (src/transport/net.cc sendProxyProgress: one isend per step, after the step's
    tail or, for LL, every line's flag), while over NVLink and PCIe every line streams on as
    soon as its flag arrives. A lane that stands for ``lane_channels`` NCCL channels passing
    their chunks side by side (NVLSTree's) takes one NCCL step per that many of its chunks.
    The bandwidth ceiling is scaled by the ratio so the two agree when it binds (rings keep
    every connection busy and need none)."""
    pipeline = info.get("pipeline")
    staged = stages is not None and stages(0) is not None
    if not pipeline or (protocol == "Simple" and coarsening <= 1.0 and not staged):
        return 1.0
    factor = np.ones(int(channel.max(initial=0)) + 1)
    for ch, (hops, chunks, between_hosts) in pipeline.items():
        hops = max(hops, 1)
        own = max(1.0, chunks * coarsening / lane_channels)
        if protocol == "Simple":
            nccl = ((stages(between_hosts) if staged else hops) + own - 1) / own
        else:
            nccl = (own + between_hosts * network_wait) / own
        factor[ch] = (hops + chunks - 1) / chunks / nccl
    return factor[channel]


def timing(schedule: Schedule, topology: Topology, decided: NcclPlan) -> Timing:
    """The ``Timing`` of ``schedule``'s transfers under NCCL's model (see the module docstring)."""
    unique, which = connections(schedule.channel, schedule.src, schedule.dst)
    channel, src, dst = unique.T
    # a connection's share of the buffer: what it carries over the whole collective; PAT talks
    # to a new peer every step, so there its sender's share over the whole collective counts
    if decided.row == "PAT":
        carried = np.bincount(schedule.src, weights=schedule.nbytes.astype(float), minlength=len(schedule.nodes))[src]
        # the stripes of one pair (a plugin striping its sends over NICs) share that one send's ceiling
        _, pair, stripes = np.unique(src * len(schedule.nodes) + dst, return_inverse=True, return_counts=True)
        carried = carried / stripes[pair]
    else:
        carried = np.bincount(which, weights=schedule.nbytes.astype(float), minlength=len(unique))
    per = connection_timing(decided, topology, schedule.nodes, channel, src, dst, carried, schedule.info)
    return replace(per, delay_ps=per.delay_ps[which] if len(schedule) else None,
                   rate_cap=None if per.rate_cap is None else per.rate_cap[which])


def connection_timing(decided: NcclPlan, topology: Topology, nodes: list[str], channel: np.ndarray, src: np.ndarray,
                      dst: np.ndarray, carried: np.ndarray, info: dict) -> Timing:
    """The ``Timing`` of connections ``src[i] -> dst[i]`` on ``channel[i]`` (indices into
    ``nodes``; rate caps and delays indexed like them), each carrying ``carried[i]`` bytes
    of the collective (PAT: its sender's); ``info`` is the schedule's."""
    system, protocol, row, fit = decided.system, decided.protocol, decided.row, decided.calibration
    size = decided.size  # the schedule addresses N x size bytes for an exchange (simnet.schedule.kinds)
    wire = wire_factor(system, protocol)
    factor = predict.plateau(system, row, protocol, size, decided.function)
    latency = step_latencies(decided)
    intra, inter = latency[NVLINK], latency[NET]
    per_class = {**latency, NVLINK: intra if system.intra_hw == NVLINK else latency[PCIE]}
    reducing = np.array([topology.kind(node) == "switch" for node in nodes], dtype=bool)  # NVLS, SHARP reduce there
    # NCCL charges a reducing switch's latency once per collective: NVLS intraLat (+ interLat
    # across nodes), CollNet one interLat (tuning.cc:419-426). The replay's critical path
    # crosses the switch in several steps, so each carries its share: NVLS on one node 2 (to
    # the NVSwitch, back from it), across nodes 4 (to it and back on the way up to the head,
    # again on the way down); SHARP 2 per level of its aggregation tree (up, down).
    nvls_share = 2 if (row == "NVLS" and system.nodes == 1) else 4
    sharp_share = 2 * max(1, int(info.get("sharp_height", 1)))

    paths, wire_latency = topology.route_matrix([nodes[i] for i in src.tolist()], [nodes[i] for i in dst.tolist()],
                                                channel)
    classes = np.append(topology.link_type, -1)[paths]  # -1: padding
    kind = np.where((classes == NET).any(axis=1), NET,
                    np.where(((classes == NVLINK) | (classes < 0)).all(axis=1), NVLINK, PCIE))
    for used in sorted({int(k) for k in kind.tolist()}):
        if per_class[used] < 0:  # the clamp below would take it to no time without a word
            name = "network_step_latency" if used == NET else "intra_step_latency"
            raise fit.refusal(name, (
                f"{getattr(fit, name) * 1e6:.4g} us takes {row}/{protocol}'s per-step latency over "
                f"{'the network' if used == NET else 'NVLink' if used == NVLINK else 'PCIe'} below zero "
                f"({per_class[used] - getattr(fit, name) * 1e6:.4g} us in {system.library.upper()}'s model here); "
                "a step takes no less than no time (simnet calibrate fits within that)"))
    step = np.select([kind == NET, kind == NVLINK], [per_class[NET], per_class[NVLINK]], per_class[PCIE])
    at_switch = reducing[src] | reducing[dst]  # a reducing switch: its latency is spread over its steps
    step = np.where(at_switch, np.where(kind == NET, inter / sharp_share, intra / nvls_share), step)
    step_ps = np.maximum(0, np.round(step * factor * 1e-6 * PS_PER_SECOND).astype(np.int64) - wire_latency)
    step_ps[src == dst] = 0

    capacity = effective_capacity(topology)  # shared by every group of a training step: read-only
    if fit.bandwidth_at(size) != 1.0 or fit.network_bandwidth != 1.0:
        # a fitted factor may slow a link down, never run it above its line rate: a factor
        # above 1 raises NCCL's ceiling (below) as far as the wire allows, no further
        capacity = np.minimum(fitted_capacity(topology, fit, size), topology.capacity)
    caps = None
    if decided.native and size > 0 and system.ranks > 1:
        # Simple: NCCL's algorithm bandwidth without its size correction for trees, whose fill the
        # replay simulates chunk by chunk. LL and LL128 stream every line (the replay's fill is
        # cancelled, _pipeline_fill), so NCCL's correction is their only mid-size loss: keep it.
        rate = predict.algorithm_bandwidth if protocol == "Simple" else partial(predict.sized_bandwidth, nbytes=size)
        bandwidth = rate(system, row, protocol, function=decided.function, share=decided.channel_share,
                         ceiling=True) * 1e9
        caps = np.asarray(carried, dtype=float) / size * bandwidth * wire
        caps[caps <= 0] = np.inf
        stages = partial(enqueue.pipeline_stages, system, row, decided.function)
        wait = 1.0 if protocol == "Simple" else enqueue.network_wait(system, row, protocol, size, decided.function)
        lanes = enqueue.lane_channels(system, row, decided.running_channels or 1)
        fill = _pipeline_fill(channel, info, protocol, decided.coarsening, stages, wait, lanes)
        caps *= fill * fit.bandwidth_at(size) * (fit.network_bandwidth if system.nodes > 1 else 1.0)
    launch = launch_latency(decided)
    start_ps = round((launch + fit.base_latency * 1e6) * 1e-6 * PS_PER_SECOND)
    if start_ps < 0:  # it was clamped at 0 without a word: the profile's base_latency cannot hold here
        raise fit.refusal("base_latency", (
            f"{fit.base_latency * 1e6:.4g} us takes the launch latency of {row}/{protocol} ({launch:.4g} us in "
            f"{system.library.upper()}'s model here) below zero; a launch takes no less than no time: give a "
            f"base_latency of at least {0.0 - launch:.4g} us (simnet calibrate fits within that)"))  # (not -0)
    return Timing(capacity=capacity, wire_factor=wire, rate_cap=caps, delay_ps=step_ps, start_ps=start_ps)


def fitted_capacity(topology: Topology, fit: Calibration, size: int) -> np.ndarray:
    """B/s per directed link as NCCL's model assumes it, times the profile's bandwidth factor
    at ``size`` bytes (and its network factor on network links), before the line rate bounds
    it: where this is above ``topology.capacity``, the wire cut the factor short."""
    capacity = effective_capacity(topology) * fit.bandwidth_at(size)
    capacity[topology.link_type == NET] *= fit.network_bandwidth
    return capacity


def step_latencies(decided: NcclPlan) -> dict[int, float]:
    """NCCL's latency per step (us) of a connection over each link class (NVLINK, PCIE,
    NET) for this plan, its calibration's step latencies added: the row's and protocol's
    ``hwLat`` (the network's with the transport's real latency for the plugin's knob, and
    a multi-node ring's per-step host overhead; RCCL's without the figures that only weigh its
    pick, ``rccl.Tuning.step_latency``). NVLINK is the NVLink figure even on a host
    whose GPUs talk over PCIe (``connection_timing`` takes PCIe's there)."""
    system, protocol, row, fit = decided.system, decided.protocol, decided.row, decided.calibration
    intra, inter = predict.step_latencies(system, row, protocol, replay=True)
    physical, simple_extra = TRANSPORT_LATENCY[system.transport]
    if system.nic_latency is not None:  # the topology states its NICs' latency: that, once per step
        physical, simple_extra = system.nic_latency, 0.0
    inter += -system.net_latency * (2 if protocol == "Simple" else 1) + physical + (
        simple_extra if protocol == "Simple" else 0.0)  # the transport's real latency, not the plugin's knob
    if row == "Ring" and system.nodes > 1 and decided.function not in ("Broadcast", "Reduce"):
        intra = max(intra, tables.NET_OVERHEAD[system.cpu] * (3 if protocol == "Simple" else 1))
    pci = predict.hw_latency(system, replay=True)[PCIE][row][tables.PROTOCOLS.index(protocol)]
    intra += fit.intra_step_latency * 1e6
    pci += fit.intra_step_latency * 1e6
    inter += fit.network_step_latency * 1e6
    return {NVLINK: intra, PCIE: pci, NET: inter}


def launch_latency(decided: NcclPlan) -> float:
    """The collective's start-up latency in NCCL's model before a calibration's
    ``base_latency`` (us): ``baseLat`` of the row and protocol (times the ring plateau
    factor), with CollNetDirect's arity serialization."""
    system, row, protocol = decided.system, decided.row, decided.protocol
    factor = predict.plateau(system, row, protocol, decided.size, decided.function)
    base = predict.base_latency(system)[row][tables.PROTOCOLS.index(protocol)] * factor
    if row == "CollNetDirect":
        # the arity serialization, both ways: 2 x (ranks per node - 1) x 0.4 us (tuning.cc:419-421)
        base += 2 * (max(1, round(system.ppn)) - 1) * tables.COLLNET_ARITY_LATENCY
    return base
