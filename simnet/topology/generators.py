"""Topology generators: ``generate: {kind: <name>, ...}`` in a topology file.

Each generator is a plain function from its validated parameters to lists of nodes and
links; they can be combined with explicit ``nodes``/``links`` (and with each other, via
``prefix``) in one file. Defaults follow public specs (cited per parameter).

>>> nodes, links = generate({"kind": "nvswitch", "gpus": 4})
>>> [n.id for n in nodes]
['gpu0', 'gpu1', 'gpu2', 'gpu3', 'nvswitch']
>>> links[0].bandwidth  # H100 NVLink 4: 900 GB/s total, 450 GB/s each direction
450000000000.0
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from simnet.budget import TooLarge, check_fits
from simnet.topology.hardware import GPUS, pcie_bandwidth
from simnet.topology.schema import Bandwidth, Count, GpuName, Latency, LinkSpec, NodeSpec, Strict, Transport

__all__ = ["GENERATORS", "GROWTH", "generate", "grown", "GeneratorError", "ELEMENT_BYTES"]

ELEMENT_BYTES = 3000
"""Memory one generated node or link costs once loaded (specs, graph, link arrays): 2.16 KB
measured (tracemalloc peak of a 2,048-GPU leaf-spine and a 300-GPU full mesh), plus headroom."""


class GeneratorError(ValueError):
    """A generator's parameters are wrong; ``loc`` is relative to the ``generate`` mapping."""

    def __init__(self, loc: tuple, message: str):
        super().__init__(message)
        self.loc = loc
        self.message = message


def _link(a: str, b: str, bandwidth: float, latency: float, type: str | None = None) -> LinkSpec:
    return LinkSpec.model_construct(a=a, b=b, bandwidth=bandwidth, latency=latency, directed=False, type=type)


def _node(id: str, kind: str, **attributes) -> NodeSpec:
    fields = ("host", "rack", "region", "gpu", "transport", "net_latency", "nvls", "sharp")
    return NodeSpec.model_construct(id=id, kind=kind, rank=None, **{key: attributes.get(key) for key in fields})


class NVSwitchParams(Strict):
    """One server whose GPUs all attach to an NVSwitch fabric (DGX/HGX style).

    ``gpu`` sets the NVLink bandwidth, PCIe generation and NVLS capability of its
    generation (``simnet.topology.hardware.GPUS``); explicit values win.
    """

    kind: Literal["nvswitch"]
    gpus: Count = 8
    gpu: GpuName = "h100"
    gpu_bandwidth: Bandwidth | None = None  # default: the GPU's NVLink line rate per direction
    latency: Latency = 0.5e-6  # GPU -> NVSwitch hop
    nvls: bool | None = None  # NVLink SHARP in the switch; default: what the GPU generation supports
    nic_bandwidth: Bandwidth | None = None  # one NIC per GPU when given (e.g. 400 Gb/s CX-7)
    pcie_bandwidth: Bandwidth | None = None  # GPU <-> NIC; default: the GPU's PCIe generation, x16
    transport: Transport = "ib"
    host: str = "node0"
    prefix: str = ""

    def footprint(self) -> tuple[int, int]:
        """(GPUs, nodes + links) this generator will make."""
        nics = self.gpus if self.nic_bandwidth is not None else 0
        return self.gpus, (self.gpus + 1 + nics) + (self.gpus + nics)


class PCIeParams(Strict):
    """One server whose GPUs talk over PCIe: GPUs behind PCIe switches under one host bridge."""

    kind: Literal["pcie"]
    gpus: Count = 8
    gpus_per_switch: Count = 2
    pcie_bandwidth: Bandwidth = 32e9  # PCIe Gen4 x16: ~32 GB/s each way
    uplink_bandwidth: Bandwidth = 32e9  # PCIe switch -> root complex, Gen4 x16
    latency: Latency = 1e-6
    host: str = "node0"
    prefix: str = ""

    def footprint(self) -> tuple[int, int]:
        """(GPUs, nodes + links) this generator will make."""
        switches = -(-self.gpus // self.gpus_per_switch)
        return self.gpus, (1 + switches + self.gpus) + (switches + self.gpus)


class LeafSpineParams(Strict):
    """Racks of GPU servers: NVSwitch inside a host, NICs to a ToR leaf, leaves to spines.

    ``gpu`` sets the NVLink bandwidth, PCIe generation and NVLS capability of its
    generation; explicit values win. ``transport`` is what the NICs speak; ``sharp: true``
    makes the ToRs and spines reduce in the network (SHARP, for CollNet).
    """

    kind: Literal["leaf_spine"]
    racks: Count = 2
    hosts_per_rack: Count = 4
    gpus_per_host: Count = 8
    gpu: GpuName = "h100"
    nvlink_bandwidth: Bandwidth | None = None  # per GPU each way; default: the GPU's NVLink line rate
    nvlink_latency: Latency = 0.25e-6  # per hop: GPU -> NVSwitch -> GPU is 0.5 us
    nvls: bool | None = None  # NVLink SHARP in each host's NVSwitch; default: what the GPU supports
    nic_per: Literal["gpu", "host"] = "gpu"
    nics_per_host: Count | None = None  # instead of nic_per: N NICs per host, GPUs spread over them evenly
    nic_bandwidth: Bandwidth = 50e9  # 400 Gb/s ConnectX-7
    transport: Transport = "ib"
    net_latency: Latency | None = None  # what the NICs' transport adds per network step; default: the transport's
    pcie_bandwidth: Bandwidth | None = None  # GPU <-> NIC; default: the GPU's PCIe generation, x16
    pcie_latency: Latency = 1e-6  # GPU -> NIC through a PCIe switch; above NVLink, so peers talk over NVLink
    link_latency: Latency = 1e-6  # NIC <-> ToR and ToR <-> spine, cable + switch hop
    spines: Count = 2
    uplink_bandwidth: Bandwidth | None = None  # each ToR -> spine link
    oversubscription: Annotated[float, Field(gt=0)] | None = None  # ToR down:up ratio
    sharp: bool = False  # ToRs and spines reduce in the network (NVIDIA SHARP)
    prefix: str = ""

    @model_validator(mode="after")
    def _one_uplink_rule(self) -> LeafSpineParams:
        if self.uplink_bandwidth is not None and self.oversubscription is not None:
            raise ValueError("give uplink_bandwidth or oversubscription, not both")
        return self

    def host_nics(self) -> int:
        """NICs per host: ``nics_per_host``, else one per GPU or one per host (``nic_per``)."""
        if self.nics_per_host is not None:
            return self.nics_per_host
        return self.gpus_per_host if self.nic_per == "gpu" else 1

    def nics_of(self, gpu: int) -> list[int]:
        """The NICs (indices in the host) GPU ``gpu`` is attached to over PCIe: with more NICs
        than GPUs each GPU has its own few, with fewer the GPUs share them in order."""
        nics, gpus = self.host_nics(), self.gpus_per_host
        if nics >= gpus:
            return [j for j in range(nics) if j * gpus // nics == gpu]
        return [gpu * nics // gpus]

    def footprint(self) -> tuple[int, int]:
        """(GPUs, nodes + links) this generator will make, at most."""
        hosts = self.racks * self.hosts_per_rack
        nics, gpus = self.host_nics(), self.gpus_per_host
        per_host = (1 + nics + gpus) + (nics + gpus + max(nics, gpus))  # nodes, then NIC, NVLink and PCIe links
        return hosts * gpus, hosts * per_host + self.racks * (1 + self.spines) + self.spines

    def tor_uplink(self) -> float:
        """Bandwidth of one ToR -> spine link in bytes/s (each direction)."""
        if self.uplink_bandwidth is not None:
            return self.uplink_bandwidth
        down = self.hosts_per_rack * self.host_nics() * self.nic_bandwidth
        return down / (self.oversubscription or 1.0) / self.spines


class CrossRegionParams(LeafSpineParams):
    """Several leaf-spine regions whose spines meet at a gateway; gateways joined by WAN."""

    kind: Literal["cross_region"]  # type: ignore[assignment]
    regions: Count = 2
    racks: Count = 1
    wan_bandwidth: Bandwidth = 100e9 / 8  # 100 Gb/s long-haul wave
    wan_latency: Latency = 30e-3  # e.g. Frankfurt <-> Virginia one way ~ 40 ms
    gateway_bandwidth: Bandwidth | None = None  # spine -> gateway; default the WAN bandwidth

    def footprint(self) -> tuple[int, int]:
        """(GPUs, nodes + links) this generator will make, at most."""
        gpus, elements = super().footprint()
        return self.regions * gpus, self.regions * (elements + 1 + self.spines) + self.regions**2


class PSStarParams(Strict):
    """Workers and parameter servers on one Ethernet switch."""

    kind: Literal["ps_star"]
    workers: Count = 16
    servers: Count = 1
    worker_bandwidth: Bandwidth = 25e9 / 8
    ps_bandwidth: Bandwidth = 25e9 / 8
    latency: Latency = 5e-6  # host -> switch over TCP
    prefix: str = ""

    def footprint(self) -> tuple[int, int]:
        """(GPUs, nodes + links) this generator will make."""
        return self.workers, 2 * (self.workers + self.servers) + 1


class FullMeshParams(Strict):
    """GPUs with a direct link between every pair (e.g. AMD MI300X Infinity Fabric); the
    links count as the GPU fabric (link type nvlink)."""

    kind: Literal["full_mesh"]
    gpus: Count = 8
    bandwidth: Bandwidth = 64e9  # MI300X: 7 links x 64 GB/s each way, one per peer
    latency: Latency = 1e-6
    host: str = "node0"
    prefix: str = ""

    def footprint(self) -> tuple[int, int]:
        """(GPUs, nodes + links) this generator will make."""
        return self.gpus, self.gpus + self.gpus * (self.gpus - 1) // 2


Nodes = list[NodeSpec]
Links = list[LinkSpec]


def nvswitch(p: NVSwitchParams) -> tuple[Nodes, Links]:
    """``gpus`` GPUs each linked to one NVSwitch node; optional per-GPU NICs."""
    gpu = GPUS[p.gpu]
    switch = f"{p.prefix}nvswitch"
    nodes = [_node(f"{p.prefix}gpu{i}", "gpu", host=p.host, gpu=p.gpu) for i in range(p.gpus)]
    nodes.append(_node(switch, "switch", host=p.host, nvls=gpu.nvls if p.nvls is None else p.nvls))
    links = [_link(n.id, switch, p.gpu_bandwidth or gpu.nvlink_bandwidth, p.latency, "nvlink") for n in nodes[:-1]]
    if p.nic_bandwidth is not None:
        for i in range(p.gpus):
            nic = f"{p.prefix}nic{i}"
            nodes.append(_node(nic, "nic", host=p.host, transport=p.transport))
            links.append(_link(f"{p.prefix}gpu{i}", nic, p.pcie_bandwidth or pcie_bandwidth(gpu.pcie_generation),
                               p.latency, "pcie"))
    return nodes, links


def pcie(p: PCIeParams) -> tuple[Nodes, Links]:
    """GPUs in groups of ``gpus_per_switch`` under PCIe switches, all under one host bridge."""
    bridge = f"{p.prefix}hostbridge"
    nodes = [_node(bridge, "host", host=p.host)]
    links = []
    for s in range((p.gpus + p.gpus_per_switch - 1) // p.gpus_per_switch):
        switch = f"{p.prefix}pcisw{s}"
        nodes.append(_node(switch, "switch", host=p.host))
        links.append(_link(switch, bridge, p.uplink_bandwidth, p.latency, "pcie"))
    for i in range(p.gpus):
        gpu = f"{p.prefix}gpu{i}"
        nodes.insert(i, _node(gpu, "gpu", host=p.host))
        links.append(_link(gpu, f"{p.prefix}pcisw{i // p.gpus_per_switch}", p.pcie_bandwidth, p.latency, "pcie"))
    return nodes, links


def _leaf_spine(p: LeafSpineParams, prefix: str, region: str | None) -> tuple[Nodes, Links, list[str]]:
    """A leaf-spine fabric; also returns the ids of its top switches (spines, or the ToR)."""
    preset = GPUS[p.gpu]
    nvlink = p.nvlink_bandwidth or preset.nvlink_bandwidth
    pcie = p.pcie_bandwidth or pcie_bandwidth(preset.pcie_generation)
    nvls = preset.nvls if p.nvls is None else p.nvls
    sharp = p.sharp or None
    gpus: Nodes = []
    infra: Nodes = []
    links: Links = []
    tors = [f"{prefix}tor{r}" for r in range(p.racks)]
    for r, tor in enumerate(tors):
        rack = f"{prefix}r{r}"
        infra.append(_node(tor, "switch", rack=rack, region=region, sharp=sharp))
        for h in range(p.hosts_per_rack):
            host = f"{prefix}r{r}h{h}"
            labels = dict(host=host, rack=rack, region=region)
            nvswitch_id = f"{host}-nvswitch"
            if p.gpus_per_host > 1:
                infra.append(_node(nvswitch_id, "switch", nvls=nvls, **labels))
            nics = [f"{host}-nic"] if p.nic_per == "host" and p.nics_per_host is None else \
                [f"{host}-nic{j}" for j in range(p.host_nics())]
            for nic in nics:
                infra.append(_node(nic, "nic", transport=p.transport, net_latency=p.net_latency, **labels))
                links.append(_link(nic, tor, p.nic_bandwidth, p.link_latency, "net"))
            for g in range(p.gpus_per_host):
                gpu = f"{host}-gpu{g}"
                gpus.append(_node(gpu, "gpu", gpu=p.gpu, **labels))
                if p.gpus_per_host > 1:
                    links.append(_link(gpu, nvswitch_id, nvlink, p.nvlink_latency, "nvlink"))
                for j in p.nics_of(g):
                    links.append(_link(gpu, nics[j], pcie, p.pcie_latency, "pcie"))
    if p.racks == 1:
        return gpus + infra, links, tors
    spines = [f"{prefix}spine{s}" for s in range(p.spines)]
    infra += [_node(s, "switch", region=region, sharp=sharp) for s in spines]
    uplink = p.tor_uplink()
    links += [_link(tor, spine, uplink, p.link_latency, "net") for tor in tors for spine in spines]
    return gpus + infra, links, spines


def leaf_spine(p: LeafSpineParams) -> tuple[Nodes, Links]:
    """``racks`` x ``hosts_per_rack`` x ``gpus_per_host`` GPUs on a two-tier Clos fabric.

    Node ids: ``r0h1-gpu3`` (GPU 3 of host 1 in rack 0), ``r0h1-nic3``, ``r0h1-nvswitch``,
    ``tor0``, ``spine1``. Each ToR has one link to every spine of bandwidth
    ``uplink_bandwidth``, or (its NIC bandwidth) / ``oversubscription`` / ``spines``.
    """
    nodes, links, _ = _leaf_spine(p, p.prefix, None)
    return nodes, links


def cross_region(p: CrossRegionParams) -> tuple[Nodes, Links]:
    """``regions`` leaf-spine fabrics, each with a gateway; gateways pairwise joined by WAN."""
    nodes: Nodes = []
    links: Links = []
    gateways = []
    for g in range(p.regions):
        region = f"{p.prefix}region{g}"
        sub_nodes, sub_links, tops = _leaf_spine(p, f"{region}-", region)
        gateway = f"{region}-gw"
        gateways.append(gateway)
        nodes += sub_nodes + [_node(gateway, "switch", region=region)]
        links += sub_links
        links += [_link(top, gateway, p.gateway_bandwidth or p.wan_bandwidth, p.link_latency, "net") for top in tops]
    for i, a in enumerate(gateways):
        for b in gateways[i + 1:]:
            links.append(_link(a, b, p.wan_bandwidth, p.wan_latency, "net"))
    return nodes, links


def ps_star(p: PSStarParams) -> tuple[Nodes, Links]:
    """``workers`` single-GPU hosts and ``servers`` parameter servers on one switch."""
    switch = f"{p.prefix}switch"
    nodes = [_node(f"{p.prefix}worker{i}", "gpu", host=f"{p.prefix}w{i}") for i in range(p.workers)]
    nodes += [_node(f"{p.prefix}ps{i}", "ps", host=f"{p.prefix}ps{i}") for i in range(p.servers)]
    nodes.append(_node(switch, "switch"))
    links = [_link(n.id, switch, p.ps_bandwidth if n.kind == "ps" else p.worker_bandwidth, p.latency, "net")
             for n in nodes[:-1]]
    return nodes, links


def full_mesh(p: FullMeshParams) -> tuple[Nodes, Links]:
    """``gpus`` GPUs, one direct full-duplex link between every pair."""
    ids = [f"{p.prefix}gpu{i}" for i in range(p.gpus)]
    nodes = [_node(i, "gpu", host=p.host) for i in ids]
    links = [_link(a, b, p.bandwidth, p.latency, "nvlink") for i, a in enumerate(ids) for b in ids[i + 1:]]
    return nodes, links


@dataclass(frozen=True)
class Generator:
    """A registered generator: its parameter model and its function."""

    params: type[Strict]
    build: Callable[..., tuple[Nodes, Links]]


GENERATORS: dict[str, Generator] = {
    "nvswitch": Generator(NVSwitchParams, nvswitch),
    "pcie": Generator(PCIeParams, pcie),
    "leaf_spine": Generator(LeafSpineParams, leaf_spine),
    "cross_region": Generator(CrossRegionParams, cross_region),
    "ps_star": Generator(PSStarParams, ps_star),
    "full_mesh": Generator(FullMeshParams, full_mesh),
}


def _per_rack(p: LeafSpineParams) -> int:
    return p.hosts_per_rack * p.gpus_per_host


GROWTH: dict[str, tuple[str, Callable[[Strict], int]]] = {
    "nvswitch": ("gpus", lambda p: 1),
    "pcie": ("gpus", lambda p: 1),
    "full_mesh": ("gpus", lambda p: 1),
    "ps_star": ("workers", lambda p: 1),
    "leaf_spine": ("racks", _per_rack),
    "cross_region": ("racks", lambda p: _per_rack(p) * p.regions),
}
"""For each generator, the parameter that scales it and how many GPUs one unit of it adds."""


def grown(params: dict, gpus: int) -> dict:
    """Generator parameters scaled up (never down) so the topology has at least ``gpus`` GPUs.

    >>> grown({"kind": "leaf_spine", "hosts_per_rack": 4, "gpus_per_host": 8}, 100)["racks"]
    4
    """
    kind = params.get("kind")
    if kind not in GROWTH:
        raise GeneratorError(("kind",), f"cannot scale generator {kind!r} to {gpus} GPUs")
    name, unit = GROWTH[kind]
    model = GENERATORS[kind].params.model_validate(params)
    per_unit = unit(model)
    needed = -(-gpus // per_unit)
    return {**params, name: max(getattr(model, name), needed)}


def generate(params: dict) -> tuple[Nodes, Links]:
    """Run the generator named by ``params["kind"]``; raise GeneratorError or ValidationError."""
    if not isinstance(params, dict):
        raise GeneratorError((), "expected a mapping with a 'kind'")
    kind = params.get("kind")
    if kind not in GENERATORS:
        raise GeneratorError(("kind",), f"unknown generator {kind!r}; expected one of {', '.join(GENERATORS)}")
    generator = GENERATORS[kind]
    model = generator.params.model_validate(params)
    gpus, elements = model.footprint()
    try:
        check_fits(elements * ELEMENT_BYTES, f"{kind} of {gpus:,} GPUs makes {elements:,} nodes and links to load",
                   "make it smaller")
    except TooLarge as exc:
        raise GeneratorError((), str(exc)) from None
    return generator.build(model)

