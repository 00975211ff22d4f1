"""NCCL's own cost model, re-implemented from its source: what NCCL would pick and why.

NCCL times every (algorithm, protocol) pair of a collective as
``time = latency + bytes / (1000 * algBw)`` (microseconds, GB/s) and runs the cheapest
(``src/graph/tuning.cc``: ``ncclTopoTuneModel``, ``ncclTopoGetAlgoTime``;
``src/enqueue.cc``: ``topoGetAlgoInfo``), on the constants of ``simnet.tuning.tables``
(NCCL v2.30.7). The bandwidths feed on the channel graphs NCCL's topology search finds
(``simnet.tuning.search``).

>>> from simnet.topology.loader import load_topology
>>> from simnet.tuning.search import system_of
>>> box = system_of(load_topology("topologies/dgx_h100.yaml"))
>>> [(c.algorithm, c.protocol) for c in (pick(box, n) for n in (8, 2**20, 2**30))]
[('Ring', 'LL'), ('Ring', 'LL'), ('NVLS', 'Simple')]
>>> round(predict(box, "Ring", "Simple", 2**30) * 1e3, 2)   # ms: 12 channels x 30 GB/s of busBw
5.28
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from simnet.errors import Unsupported
from simnet.topology.hardware import NET, NVLINK
from simnet.tuning import rccl
from simnet.tuning.search import System, comm_channels, graph
from simnet.tuning.tables import (
    ALGORITHMS,
    BASE_LATENCY,
    COLLNET_ARITY_LATENCY,
    FUNCTION_ALGORITHMS,
    FUNCTIONS,
    HW_LATENCY,
    LL_MAX_BW,
    NET_OVERHEAD,
    NVLS_EFFICIENCY,
    PER_CH_MAX_NVLS_TREE_BW,
    PER_CH_MAX_RING_LL128_BW,
    PER_CH_MAX_TREE_BW,
    PER_CH_MAX_TREE_LL128_BW,
    PROTOCOLS,
    RING_PLATEAU,
    RING_PLATEAU_BEFORE_SM80,
    TREE_CORRECTION,
    arch_index,
    node_column,
)

__all__ = ["Choice", "bus_bandwidth", "algorithm_bandwidth", "sized_bandwidth", "latency", "step_latencies",
           "same_channels", "plateau", "predict", "enabled", "pick", "unavailable", "parse_nccl_list",
           "hw_latency", "base_latency", "rccl_protocol"]


def hw_latency(system: System, replay: bool = False) -> dict:
    """Per-step latencies by link class, algorithm and protocol (us): NCCL's, or RCCL's tuning
    model; with ``replay``, the ones a simulated step takes (RCCL: ``rccl.Tuning.step_latency``,
    its pick weights left out; NCCL's are the same either way)."""
    if system.library != "rccl":
        return HW_LATENCY
    tune = rccl.tuning(system.arch)
    return tune.step_latency if replay else tune.hw_latency


def base_latency(system: System) -> dict:
    """Base latency by algorithm and protocol (us): NCCL's, or RCCL's."""
    return rccl.BASE_LATENCY if system.library == "rccl" else BASE_LATENCY


# ---------------------------------------------------------------- enabled
def enabled(system: System, algorithm: str, protocol: str, function: str = "AllReduce") -> bool:
    """Whether NCCL would consider (algorithm, protocol) for ``function`` (an NCCL function:
    AllReduce, ReduceScatter, AllGather, Broadcast, Reduce) here by default
    (tuning.cc:293-305, 345-365, 440-541; enqueue.cc:1989-2026)."""
    if algorithm not in FUNCTION_ALGORITHMS[function]:
        return False
    if system.library == "rccl":
        if algorithm not in ("Tree", "Ring"):
            return False  # no NVSwitch (NVLS), no CollNet plugin, PAT off (B: NCCL_PAT_ENABLE 0)
        if algorithm == "Tree" and protocol == "Simple" and system.nodes == 1:
            return False  # tuning.cc:365 (A, gfx94; B gfx942 and gfx950): no Tree/Simple on one node
        if protocol == "LL128":  # A tuning.cc:509-514, enqueue.cc:1598: all GPUs xGMI-connected
            return (rccl.tuning(system.arch).ll128 or system.ll128_forced) and system.mesh
        return True
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
        # NCCL skips CollNet where a node holds more than NCCL_MAX_DIRECT_ARITY + 1 (src/enqueue.cc:2001-2003)
        return system.collnet and system.nodes > 1 and (system.max_local or system.ppn) <= 8
    if protocol == "LL128":
        # LL128 needs NVLink inside the node and a PCIe-or-PXN path to the NIC (tuning.cc:514-536)
        return system.cc >= 70 and system.intra_hw == NVLINK
    return True


# ---------------------------------------------------------------- bandwidth
def bus_bandwidth(system: System, algorithm: str, protocol: str, function: str = "AllReduce",
                  share: float = 1.0, ceiling: bool = False) -> float:
    """NCCL's bus bandwidth for (algorithm, protocol) of ``function``, GB/s; 0 when
    unavailable (tuning.cc:305-382). ``share``: of the channels' capacity in use (fewer
    channels or threads, ``collective_channels``): it scales every per-channel term, not
    the whole-GPU cap of LL (llMaxBw).

    RCCL's (A tuning.cc:365-381): channels x bw (bwIntra up to 2 nodes, else bwInter),
    times its tuning model's bwRatio and, for a one-node Ring/LL Broadcast or Reduce, 1.65.
    ``ceiling``: the rate the simulation holds a connection to; for RCCL that leaves out
    bwRatio, a weight that steers its pick (0.08 for LL, 0.11 for a 2-node Tree/Simple), not
    a rate (NCCL's figures are the same either way)."""
    if not enabled(system, algorithm, protocol, function):
        return 0.0
    g = graph(system, algorithm)
    channels = g.channels * share  # of the search's channels, in capacity
    if system.library == "rccl":
        bus = channels * (g.bw_intra if system.nodes <= 2 else g.bw_inter)
        if ceiling:
            return bus
        ratio = rccl.tuning(system.arch).bw_ratio[0 if system.nodes <= 2 else 1][algorithm][PROTOCOLS.index(protocol)]
        single_node_ll = algorithm == "Ring" and protocol == "LL" and system.nodes == 1
        return bus * ratio * (1.65 if single_node_ll and function in ("Broadcast", "Reduce") else 1.0)
    arch, column, nodes, ppn = arch_index(system.cc), node_column(system.nodes), system.nodes, system.ppn
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
                        share: float = 1.0, ceiling: bool = False) -> float:
    """NCCL's algorithm bandwidth (bytes of the buffer per second / 1e9): busBw times
    n/nsteps for Ring and NVLS* (n/(2(n-1)) for AllReduce), 1/2 otherwise, and busBw itself
    for ReduceScatter and AllGather on anything but Ring (tuning.cc:377-382; RCCL's the
    same, A tuning.cc:416-423). ``ceiling``: see ``bus_bandwidth``."""
    bus = bus_bandwidth(system, algorithm, protocol, function, share, ceiling)
    n = system.ranks
    if algorithm != "Ring" and function in ("ReduceScatter", "AllGather"):
        return bus
    ratio = n / _steps(function, n) if algorithm in ("Ring", "NVLS", "NVLSTree") and n > 1 else 0.5
    return bus * ratio


# ---------------------------------------------------------------- latency
def step_latencies(system: System, algorithm: str, protocol: str, replay: bool = False) -> tuple[float, float]:
    """(intra-node, inter-node) latency of one step, us (tuning.cc:383-392): the hardware
    latency of the link class, plus the plugin's reported latency on the network (twice
    for Simple); with one GPU per node the network step uses Tree's figure (RCCL 2.21.5:
    the algorithm's own, tuning.cc:431). ``replay``: see ``hw_latency``."""
    p = PROTOCOLS.index(protocol)
    table = hw_latency(system, replay)
    intra = table[system.intra_hw][algorithm][p]
    tree_row = system.library != "rccl" or rccl.tuning(system.arch).one_gpu_nodes_tree_latency
    net_row = "Tree" if system.ppn == 1 and tree_row else algorithm
    inter = table[NET][net_row][p] + system.net_latency * (2 if protocol == "Simple" else 1)
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
    base = base_latency(system)[algorithm][p]
    intra, inter = step_latencies(system, algorithm, protocol)
    ppn_int = n // nodes
    log_nodes = int(math.log2(nodes)) if nodes > 0 else 0
    steps = _steps(function, n)
    if algorithm == "Ring" and function in ("Broadcast", "Reduce"):
        hw = system.intra_hw if nodes == 1 else NET
        lat = hw_latency(system)[hw]["Ring"][p]
        if same_channels(system):
            return base + lat
        if protocol == "Simple":  # "some chunk latency, waiting for proper chunk modeling"
            lat = hw_latency(system)[hw]["Tree"][p]
        return base + steps * lat
    if algorithm == "Ring":
        overhead = NET_OVERHEAD[system.cpu] * (3 if protocol == "Simple" else 1) if nodes > 1 else 0.0
        intra = max(intra, overhead)
        every = system.library == "rccl" and rccl.tuning(system.arch).inter_steps_every_node
        inter_steps = (2 * (nodes - (0 if every else 1)) if function == "AllReduce" else nodes - 1) if nodes > 1 else 0
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
                    share: float = 1.0, ceiling: bool = False) -> float:
    """The algorithm bandwidth NCCL's model uses for ``nbytes`` (GB/s): an AllReduce Tree's
    is corrected by size (treeCorrectionFactor, below 512 MiB), and so is NVLSTree's on
    Blackwell with an x86 host, below 1 GiB (tuning.cc:635-646 in v2.30.7); a GB200's or
    GB300's Grace (Arm) host (``System.cpu``) does not take it.

    RCCL corrects every Tree, and a Ring across nodes, by its tuning model's factors at
    log2(bytes/64), the last one from 2^26 up (A tuning.cc:648-660); they steer its pick
    (down to 0.1), so with ``ceiling`` (the simulation's rate) they are left out."""
    bw = algorithm_bandwidth(system, algorithm, protocol, function, share, ceiling)
    if system.library == "rccl":
        if ceiling:
            return bw
        tune, p = rccl.tuning(system.arch), PROTOCOLS.index(protocol)
        index = min((nbytes >> 6).bit_length() - 1 if nbytes >> 6 else 0, 26)  # log2i, 0 for 0
        if algorithm == "Tree":
            return bw * tune.tree_correction[p][index]
        return bw * (tune.ring_correction[p][index] if system.nodes > 1 else 1.0)
    log_size = int(math.log2(nbytes >> 6)) if nbytes >> 6 else -1
    corrected = (algorithm == "Tree" and log_size < 23) or (
        algorithm == "NVLSTree" and log_size < 24 and system.cc >= 100 and system.cpu in ("intel", "amd"))
    if corrected and log_size >= 0 and function == "AllReduce":
        bw *= TREE_CORRECTION[PROTOCOLS.index(protocol)][log_size]
    return bw


def plateau(system: System, algorithm: str, protocol: str, nbytes: int, function: str = "AllReduce") -> float:
    """The factor on a multi-node Ring/Simple AllReduce's latency once each rank's share of a
    channel reaches 64 bytes: 1.4 on SM80+, 1.9 before ("plateau effect", tuning.cc:647-649);
    RCCL has none (compiled out on AMD, A tuning.cc:661-668)."""
    if (system.library != "rccl" and algorithm == "Ring" and protocol == "Simple" and system.nodes > 1
            and function == "AllReduce"):
        if nbytes // (comm_channels(system) * system.ranks) >= 64:
            return RING_PLATEAU if system.cc >= 80 else RING_PLATEAU_BEFORE_SM80
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
    lower = {n.lower(): n for n in names}

    def enabled_by(text: str) -> set[str]:
        exclude = text.strip().startswith("^")
        tokens = [t.strip() for t in text.strip().lstrip("^").split(",") if t.strip()]
        unknown = [t for t in tokens if t.lower() not in lower]
        if unknown:  # NCCL compares names without case only (strcasecmp): NVLS_TREE is no name of its
            ours = lower.get(unknown[0].lower().replace("_", ""))
            raise ValueError(f"{what}={value!r}: unknown name {unknown[0]!r}" + (
                f" to NCCL, which calls it {ours} and would refuse the run" if ours else "") +
                f"; expected {', '.join(names)}")
        chosen = {lower[t.lower()] for t in tokens}
        return set(names) - chosen if exclude else chosen

    # as NCCL's parseList (tuning.cc:55-135): a section without a function applies to every
    # function and may only come first; a later "function:list" replaces it for that function;
    # an unknown function or name is refused (ncclInvalidUsage)
    enabled = set(names)
    functions = {f.lower() for f in FUNCTIONS}
    for i, part in enumerate(p for p in value.split(";") if p.strip()):
        func, sep, rest = part.partition(":")
        if not sep:
            if i:
                raise ValueError(f"{what}={value!r}: every section after the first names its function "
                                 "(e.g. allreduce:ring), as NCCL requires")
            enabled = enabled_by(part)
        elif func.strip().lower() not in functions:
            raise ValueError(f"{what}={value!r}: unknown function {func.strip()!r}; expected "
                             f"{', '.join(f.lower() for f in FUNCTIONS)}")
        else:
            chosen = enabled_by(rest)
            if func.strip().lower() == function.lower():
                enabled = chosen
    return enabled


def unavailable(system: System, algorithm: str, function: str = "AllReduce") -> str | None:
    """Why NCCL could not run ``algorithm`` for ``function`` here (one line), or None if it could."""
    if any(enabled(system, algorithm, p, function) and bus_bandwidth(system, algorithm, p, function) > 0
           for p in PROTOCOLS):
        return None
    if algorithm not in FUNCTION_ALGORITHMS[function]:
        return f"NCCL has no {algorithm} {function} (its tuner times {', '.join(FUNCTION_ALGORITHMS[function])})"
    if system.library == "rccl" and algorithm not in ("Tree", "Ring"):
        return (f"RCCL runs Ring and Tree only, no {algorithm} (no NVLS without an NVSwitch, no CollNet without "
                "NCCL's SHARP plugin, PAT off)")
    if algorithm == "PAT":
        return "PAT runs with one GPU per node only (ncclPatEnable)"
    if function in ("ReduceScatter", "AllGather") and system.nodes > 1 and algorithm in ("NVLS", "CollNetDirect"):
        return (f"{algorithm} {function} across nodes needs CollNet heads for every GPU and the SHARP plugin's "
                f"i{function.lower()}, which simnet does not model")
    off = {name.partition("=")[0]: name for name in system.turned_off}  # what the environment took away
    nvls_off = f"{off['NCCL_NVLS_ENABLE']} turns NVLink SHARP off, as in NCCL: no {algorithm}" \
        if "NCCL_NVLS_ENABLE" in off else ""
    collnet_off = f"{off['NCCL_COLLNET_ENABLE']} turns network SHARP (CollNet) off, as in NCCL: no {algorithm}" \
        if "NCCL_COLLNET_ENABLE" in off else ""
    lone = f"{algorithm} needs two GPUs of the communicator on every node (NCCL's ncclNvlsInit, " \
           "src/transport/nvls.cc), and a node here holds one" if system.lone_gpu else ""
    if algorithm == "NVLS":
        if not system.nvls:
            return nvls_off or lone or "NVLS needs an NVSwitch that reduces (nvls: true; an H100 or later GPU)"
        return collnet_off or "NVLS across hosts needs SHARP switches in the network (sharp: true; NCCL pairs it " \
                              "with CollNet)"
    if algorithm == "NVLSTree":
        return (nvls_off or lone or "NVLSTree needs an NVSwitch that reduces (nvls: true; H100 or later)") \
            if not system.nvls \
            else "NVLSTree runs across hosts; this is one host"
    if algorithm in ("CollNetDirect", "CollNetChain"):
        return (collnet_off or f"{algorithm} needs switches that reduce in the network (sharp: true)") \
            if not system.collnet else f"{algorithm} runs across hosts of at most 8 GPUs each"
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
        said = [unavailable(system, a, function) for a in ALGORITHMS if a in algos]
        runs_with: dict[tuple[str, ...], list[str]] = {}  # algorithms that run here, only with protocols excluded
        for a, why in zip([a for a in ALGORITHMS if a in algos], said):
            possible = tuple(p for p in PROTOCOLS if predict(system, a, p, nbytes, function) is not None)
            if why is None and possible:
                runs_with.setdefault(possible, []).append(a)
        said = [f"{' and '.join(names)} run{'s' * (len(names) == 1)} {', '.join(possible)} only here"
                for possible, names in runs_with.items()] + said
        said = [re.sub(r"^(RCCL runs Ring and Tree only), no \w+ \(", r"\1 (", r) if r else r for r in said]  # (one)
        reasons = "; ".join(dict.fromkeys(r for r in said if r))  # (one reason said once, whatever it covers)
        given = [f"{name}={value}" for name, value in (("NCCL_ALGO", nccl_algo), ("NCCL_PROTO", nccl_proto))
                 if (value or "").strip()]
        raise Unsupported(f"{' '.join(given)} {'leaves' if len(given) == 1 else 'leave'} nothing NCCL could run "
                         f"here{': ' + reasons if reasons else ''}")
    (algorithm, protocol), time = min(table.items(), key=lambda item: item[1])
    if system.library == "rccl" and not (nccl_proto or "").strip():
        protocol = rccl_protocol(system, algorithm, protocol, nbytes, function)
        time = table.get((algorithm, protocol), time)
    return Choice(algorithm, protocol, time, table)


def rccl_protocol(system: System, algorithm: str, protocol: str, nbytes: int, function: str = "AllReduce") -> str:
    """The protocol RCCL 2.30.3 (B, gfx950) runs after its pick of ``protocol``, unless
    NCCL_PROTO is set (rccl_wrap.cc@006a440c ``rcclUpdateCollectiveProtocol``): on one node
    LL for an AllGather or ReduceScatter up to a size per rank; across nodes Simple, or LL
    or LL128 within its tuning model's ranges of bytes per rank (LL128's top x3.8 for an
    AllReduce over more than 2 nodes), as far as ``algorithm`` runs that protocol here.
    RCCL 2.21.5 (A, gfx942) keeps its pick."""
    tune = rccl.tuning(system.arch)
    per_rank = nbytes if function == "AllReduce" else nbytes // max(system.ranks, 1)  # rcclGetSizePerRank
    chosen = protocol
    if system.nodes == 1:
        limit = (tune.single_node_ll or {}).get(function)
        chosen = "LL" if limit is not None and per_rank <= limit else protocol
    elif tune.protocol_ranges is not None and function in tune.protocol_ranges:
        (ll_low, ll_high), (ll128_low, ll128_high) = tune.protocol_ranges[function]
        if function == "AllReduce" and system.nodes > 2:
            ll128_high *= 3.8
        chosen = "Simple"
        if ll_low < per_rank <= ll_high:
            chosen = "LL"
        if ll128_low < per_rank <= ll128_high and enabled(system, algorithm, "LL128", function):
            chosen = "LL128"
    return chosen if enabled(system, algorithm, chosen, function) else protocol


