"""The NCCL-faithful performance model (``model: nccl``): how NCCL's software times a schedule.

Between the schedule and the fluid network it adds, from NCCL's published tuning model
(``simnet.model.tuning``, NCCL v2.30.7) and vendor figures:

* **effective link rates** (``simnet.model.rates``): NVLink, PCIe and the network at the
  rates NCCL's topology model assumes, not the datasheet line rates;
* **protocols**: LL carries 8 data bytes in every 16 (flags interleaved, device.h:75-88),
  LL128 120 in every 128 (device.h:110-118), Simple all of them; the protocol is NCCL's
  pick for the algorithm at this size (``NCCL_PROTO`` honoured), and sets the pipeline
  chunk the schedule moves (``tuning.chunk_size``);
* **NCCL's bandwidth ceiling**: a connection of an NCCL algorithm that carries b of the
  collective's S bytes may not exceed b/S of the algorithm bandwidth NCCL's model gives it
  (per-channel caps, LL's and LL128's limits, NVLS and tree efficiencies all live there);
  uncontended, the simulation can therefore not beat NCCL's own model, and contention
  (oversubscribed uplinks, shared NICs) slows it down further;
* **software latency**: every transfer is delivered no earlier than NCCL's per-step
  latency for its link class (NVLink, PCIe or network; ``hwLat``) after it starts, the
  network's figure raised by the transport's own latency (``TRANSPORT_LATENCY``); the
  collective starts after NCCL's base latency (``baseLat``: launch and setup).

Algorithms NCCL does not have (halving-doubling, recursive doubling, direct, naive, ps,
hierarchical, the textbook trees) run on NCCL-style point-to-point sends: Ring's (or, for
the textbook trees, Tree's) latencies, LL up to 16 KiB and Simple above (NCCL's
``NCCL_P2P_LL_THRESHOLD`` default), no ceiling beyond the links.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from simnet.collectives.replay import Timing
from simnet.collectives.schedule import Schedule
from simnet.model import tuning
from simnet.model.rates import effective_capacity
from simnet.topology.hardware import NET, NVLINK, PCIE
from simnet.topology.model import PS_PER_SECOND, Topology

__all__ = ["NcclPlan", "plan", "timing", "TRANSPORT_LATENCY", "WIRE_FACTOR", "P2P_LL_THRESHOLD"]

WIRE_FACTOR = {"LL": 2.0, "LL128": 128 / 120, "Simple": 1.0}
"""Bytes on the wire per data byte: LL lines are 8 data + 8 flag bytes, LL128 lines 120 + 8."""
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
    system: tuning.System


def _protocols(value: str | None) -> set[str]:
    return tuning.parse_nccl_list(value, tuning.PROTOCOLS, "NCCL_PROTO")


def plan(topology: Topology, algorithm: str, size: int, options: dict, accepts: tuple[str, ...]) -> NcclPlan:
    """The protocol NCCL would use for ``algorithm`` at ``size`` and the schedule options
    (NCCL's chunk size for it unless ``chunk_size`` was given; ``accepts``: the options the
    algorithm takes)."""
    system = tuning.system_of(topology)
    allowed = _protocols(os.environ.get("NCCL_PROTO"))
    name = tuning.NCCL_NAMES.get(algorithm)
    options = dict(options)
    if name is not None:
        times = {p: tuning.predict(system, name, p, size) for p in tuning.PROTOCOLS if p in allowed}
        times = {p: t for p, t in times.items() if t is not None}
        protocol = min(times, key=times.get) if times else "Simple"
        row = name
    else:
        p2p = ["LL"] if size <= P2P_LL_THRESHOLD else ["Simple"]
        protocol = next((p for p in p2p + ["Simple", "LL", "LL128"] if p in allowed), "Simple")
        row = "Tree" if algorithm in _TEXTBOOK_TREES else "Ring"
    if name is not None and "chunk_size" in accepts and options.get("chunk_size") is None:
        options["chunk_size"] = tuning.chunk_size(name, protocol)
    return NcclPlan(protocol, options, row, name is not None, system)


def _connections(schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """(unique connections as rows of (channel, src, dst), each transfer's index into them)."""
    keys = np.stack([schedule.channel, schedule.src, schedule.dst], axis=1).astype(np.int64)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    return unique, inverse.reshape(-1)


def timing(schedule: Schedule, topology: Topology, decided: NcclPlan) -> Timing:
    """The ``Timing`` of ``schedule`` under NCCL's model (see the module docstring)."""
    system, protocol, row = decided.system, decided.protocol, decided.row
    n = len(schedule)
    size = schedule.size
    wire = WIRE_FACTOR[protocol]
    factor = tuning.plateau(system, row, protocol, size)
    intra, inter = tuning.step_latencies(system, row, protocol)
    physical, simple_extra = TRANSPORT_LATENCY[system.transport]
    inter += -system.net_latency * (2 if protocol == "Simple" else 1) + physical + (
        simple_extra if protocol == "Simple" else 0.0)  # the transport's real latency, not the plugin's knob
    if row == "Ring" and system.nodes > 1:
        intra = max(intra, tuning.NET_OVERHEAD[system.cpu] * (3 if protocol == "Simple" else 1))
    pci = tuning.HW_LATENCY[PCIE][row][tuning.PROTOCOLS.index(protocol)]
    per_class = {NVLINK: intra if system.intra_hw == NVLINK else pci, PCIE: pci, NET: inter}
    switches = {i for i, node in enumerate(schedule.nodes)
                if topology.kind(node) == "switch"}  # NVLS and SHARP reduce in switches
    nvls_share = 2 if (schedule.algorithm == "nvls" and system.nodes == 1) else 4
    sharp_share = 2 * max(1, int(schedule.info.get("sharp_height", 1)))

    connections, which = _connections(schedule)
    nodes = schedule.nodes
    step_ps = np.zeros(len(connections), dtype=np.int64)
    for c, (channel, src, dst) in enumerate(connections.tolist()):
        if src == dst:
            continue
        path = topology.route_indices(nodes[src], nodes[dst], channel)
        classes = topology.link_type[list(path)]
        kind = NET if (classes == NET).any() else NVLINK if (classes == NVLINK).all() else PCIE
        step = per_class[kind]
        if src in switches or dst in switches:  # a reducing switch: its latency is spread over its steps
            step = inter / sharp_share if kind == NET else intra / nvls_share
        wire_latency = int(topology.latency_ps[list(path)].sum())
        step_ps[c] = max(0, round(step * factor * 1e-6 * PS_PER_SECOND) - wire_latency)
    delay = step_ps[which]

    caps = None
    if decided.native and size > 0 and system.ranks > 1:
        bandwidth = tuning.sized_bandwidth(system, row, protocol, size) * 1e9  # B/s of the buffer
        carried = np.bincount(which, weights=schedule.nbytes.astype(float), minlength=len(connections))
        caps = carried[which] / size * bandwidth * wire
        caps[caps <= 0] = np.inf
    base = tuning.BASE_LATENCY[row][tuning.PROTOCOLS.index(protocol)] * factor
    if row == "CollNetDirect":
        base += 2 * (max(1, round(system.ppn)) - 1) * tuning.COLLNET_ARITY_LATENCY
    return Timing(capacity=effective_capacity(topology), wire_bytes=schedule.nbytes * wire, rate_cap=caps,
                  delay_ps=delay if n else None, start_ps=round(base * 1e-6 * PS_PER_SECOND))
