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

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator

from simnet.errors import SpecError, shown
from simnet.io.budget import TooLarge, check_fits
from simnet.topology.hardware import GPUS, pcie_bandwidth
from simnet.topology.schema import (
    Bandwidth,
    Count,
    GpuName,
    Label,
    Latency,
    LinkSpec,
    Name,
    NodeSpec,
    Strict,
    Transport,
)
from simnet.topology.servers import SERVER_NAMES, SERVERS, Server

__all__ = ["GENERATORS", "GROWTH", "generate", "grown", "GeneratorError", "ELEMENT_BYTES"]

ELEMENT_BYTES = 3000
"""Memory one generated node or link costs once loaded (specs, graph, link arrays): 2.16 KB
measured (tracemalloc peak of a 2,048-GPU leaf-spine and a 300-GPU full mesh), plus headroom."""


class GeneratorError(SpecError):
    """A generator's parameters are wrong; ``loc`` is relative to the ``generate`` mapping."""


def _link(a: str, b: str, bandwidth: float, latency: float, type: str | None = None) -> LinkSpec:
    return LinkSpec.model_construct(a=a, b=b, bandwidth=bandwidth, latency=latency, directed=False, type=type)


def _node(id: str, kind: str, **attributes) -> NodeSpec:
    fields = ("host", "rack", "region", "gpu", "transport", "net_latency", "nvls", "sharp")
    return NodeSpec.model_construct(id=id, kind=kind, rank=None, **{key: attributes.get(key) for key in fields})


def _ratio(value: object) -> object:
    """A down:up ratio as written ``"4:1"`` (or a number) as a number; both sides finite and above 0.
    Text without a colon is refused, as a count in quotes is: ``"4"`` is not read as 4."""
    if isinstance(value, str) and (":" not in value or not value.isascii()):
        raise ValueError(f"{value!r} is not a ratio: write a number (4) or down:up (4:1), without quotes")
    if isinstance(value, str):
        down, _, up = value.partition(":")
        try:
            sides = float(down), float(up)
        except ValueError:
            sides = ()
        if len(sides) != 2 or not all(math.isfinite(x) and x > 0 for x in sides):
            raise ValueError(f"{value!r} is not a ratio (e.g. 4:1 or 4; both sides above 0)")
        return sides[0] / sides[1]
    return value


GPU_LINK_LATENCY = 0.25e-6
"""Every generator's default latency of a GPU's own link (s): one GPU-to-NVSwitch hop (0.5 us GPU
to GPU) or one xGMI link of an AMD host's mesh. One default, so one server is the same whichever
generator writes it; below the libraries' own per-step latency over these links (NCCL 0.6 us
Ring/LL over NVLink, tuning.cc:157-176 v2.30.7; RCCL 0.8 us over xGMI, tuning_model_5), which
already holds wire and software together and so rules under ``model: nccl`` / ``rccl``."""

Ratio = Annotated[float, BeforeValidator(_ratio), Field(allow_inf_nan=False, le=1000)]
"""A down:up port ratio: 4, or 4:1 as the docs write it (at most 1000:1)."""


ServerName = Literal[SERVER_NAMES]  # type: ignore[valid-type]


class _NvSwitchHosts(Strict):
    """Generators of GPU servers of one generation: NVSwitch hosts, whose GPU needs NVLink
    (with more than one per host), and ``nvls: true`` a GPU that has NVLink SHARP; or, for
    an AMD GPU (``GPU.amd``), xGMI mesh hosts: every GPU one link to each other GPU of its
    host, so a host holds at most one GPU more than the GPU has links (8 MI300X).

    ``server: <name>`` (``simnet.topology.servers``) fills in what the catalogue knows of
    that product and the parameters leave out (``_from_server``): keys given win."""

    server: ServerName | None = None

    @classmethod
    def _from_server(cls, server: Server, written: dict) -> dict:
        """The parameters ``server`` sets, as a user would write them, beside the keys
        ``written`` in the generator (which win)."""
        # the server's network latency is its transport's (p4d's 75 us is the EFA plugin's):
        # another transport written brings its own default
        other_transport = "transport" in written and written["transport"] != server.transport
        return {"gpu": server.gpu, "gpus_per_tray": server.gpus_per_tray, "transport": server.transport,
                "nic_bandwidth": server.nic_bandwidth, "net_latency": None if other_transport else server.net_latency}

    @model_validator(mode="before")
    @classmethod
    def _server_defaults(cls, data):
        if isinstance(data, dict) and isinstance(data.get("server"), str) and data["server"] in SERVERS:
            known = {k: v for k, v in cls._from_server(SERVERS[data["server"]], data).items()
                     if v is not None and k in cls.model_fields}
            data = {**known, **data}
        return data

    @model_validator(mode="after")
    def _no_more_than_the_server(self):
        """A named server's GPUs are the most one of its boxes holds, in its trays: more GPUs
        (written, or a sweep growing them) or other trays would be a machine no vendor sells.
        Fewer GPUs stay allowed (part of a box)."""
        if self.server is None:
            return self
        server = SERVERS[self.server]
        count_key = next(key for key in ("gpus", "gpus_per_host", "gpus_per_node") if hasattr(self, key))
        if getattr(self, count_key) > server.gpus:
            more = "join servers with leaf_spine or rail_optimized" if count_key == "gpus" else "join more of them"
            raise ValueError(f"{count_key}: {getattr(self, count_key)} GPUs in one server, where a {self.server} has "
                             f"{server.gpus}: {more} (or name no server, for a box of that many GPUs)")
        if getattr(self, "gpus_per_tray", None) != server.gpus_per_tray:
            trays = f"trays of {server.gpus_per_tray} GPUs" if server.gpus_per_tray else "no compute trays"
            raise ValueError(f"gpus_per_tray: a {self.server} has {trays}; leave gpus_per_tray out (or name no "
                             "server, for another machine)")
        return self

    @model_validator(mode="after")
    def _nvls_needs_the_gpu(self):
        count_key = next(key for key in ("gpus", "gpus_per_host", "gpus_per_node") if hasattr(self, key))
        per_host = getattr(self, count_key)
        if per_host > 1 and not GPUS[self.gpu].nvlink_links:
            raise ValueError(f"gpu: {self.gpu} has no NVLink, so no NVSwitch joins its GPUs; describe its "
                             "servers with kind: pcie")
        if GPUS[self.gpu].amd:
            _check_mesh(self.gpu, per_host, self.mesh_bandwidth_given(), "nvlink_bandwidth", count_key)
            if getattr(self, "gpus_per_tray", None) is not None:
                raise ValueError(f"gpus_per_tray: the GPUs of a {self.gpu} server are one xGMI mesh, not trays of an "
                                 "NVLink domain; leave it out")
            if "nvls" in self.model_fields_set:  # nvls: false as much as true: no switch to say it of
                raise ValueError(f"nvls: the GPUs of a {self.gpu} server are one xGMI mesh, with no NVSwitch to have "
                                 "NVLink SHARP or not; leave it out")
        if getattr(self, "nvls", None) and not GPUS[self.gpu].nvls:
            raise ValueError(f"nvls: {self.gpu} has no NVLink SHARP (NCCL runs NVLS from H100 on)")
        tray = getattr(self, "gpus_per_tray", None)
        if tray is not None and per_host % tray:
            raise ValueError(f"gpus_per_tray: {tray} does not divide the {per_host} GPUs of a server")
        return self

    def mesh_bandwidth_given(self) -> bool:
        """Whether the GPUs' fabric bandwidth is written (``nvlink_bandwidth``)."""
        return getattr(self, "nvlink_bandwidth", None) is not None

    def fabric_links(self, gpus: int) -> int:
        """Links inside one server of ``gpus`` GPUs: one per pair in an xGMI mesh, else one per GPU to the NVSwitch."""
        return gpus * (gpus - 1) // 2 if GPUS[self.gpu].amd else gpus * (gpus > 1)


class NVSwitchParams(_NvSwitchHosts):
    """One server whose GPUs all attach to an NVSwitch fabric (DGX/HGX style).

    ``gpu`` sets the NVLink bandwidth, PCIe generation and NVLS capability of its
    generation (``simnet.topology.hardware.GPUS``); explicit values win.
    """

    kind: Literal["nvswitch"]
    gpus: Count = 8
    gpu: GpuName = "h100"
    gpu_bandwidth: Bandwidth | None = None  # default: the GPU's NVLink line rate per direction
    latency: Latency = GPU_LINK_LATENCY  # GPU -> NVSwitch hop
    nvls: bool | None = None  # NVLink SHARP in the switch; default: what the GPU generation supports
    gpus_per_tray: Count | None = None  # GPUs per compute tray (its own host) of a multi-node NVLink domain
    nic_bandwidth: Bandwidth | None = None  # one NIC per GPU when given (e.g. 400 Gb/s CX-7)
    pcie_bandwidth: Bandwidth | None = None  # GPU <-> NIC; default: the GPU's PCIe generation, x16
    pcie_latency: Latency = 1e-6  # GPU -> NIC, as leaf_spine's and rail_optimized's (not the NVSwitch hop's)
    transport: Transport = "ib"
    net_latency: Latency | None = None  # what the NICs' transport adds per network step; default: the transport's
    host: Name = "node0"  # an empty label would make each GPU a host of its own
    prefix: Label = ""

    @classmethod
    def _from_server(cls, server: Server, written: dict) -> dict:
        """The server's GPUs; its NICs only when it has one per GPU (this generator's only layout)."""
        keys = {**super()._from_server(server, written), "gpus": server.gpus}
        return keys if server.nics == server.gpus else {k: keys[k] for k in ("gpu", "gpus", "gpus_per_tray")}

    def mesh_bandwidth_given(self) -> bool:
        """An NVSwitch server writes its GPUs' bandwidth as ``gpu_bandwidth``."""
        return self.gpu_bandwidth is not None

    @model_validator(mode="before")
    @classmethod
    def _no_switch_for_a_mesh(cls, data):
        gpu = data.get("gpu") if isinstance(data, dict) else None
        server = data.get("server") if isinstance(data, dict) and gpu is None else None
        if isinstance(server, str) and server in SERVERS:  # the server's GPUs, when no gpu: is written
            gpu = SERVERS[server].gpu
        if isinstance(gpu, str) and gpu in GPUS and GPUS[gpu].amd:
            named = f"server: {server} has {gpu} GPUs, which" if server else f"gpu: {gpu} GPUs"
            raise ValueError(f"{named} are a fully connected xGMI mesh, on no NVSwitch: use kind: full_mesh "
                             "(one host) or leaf_spine / rail_optimized (hosts of a mesh each)")
        return data

    @model_validator(mode="after")
    def _nic_keys_need_nics(self) -> NVSwitchParams:
        given = [key for key in ("pcie_bandwidth", "pcie_latency", "transport", "net_latency")
                 if key in self.model_fields_set]
        if given and self.nic_bandwidth is None:
            raise ValueError(f"{given[0]}: describes the GPUs' NICs, and without nic_bandwidth this server has "
                             "none; give nic_bandwidth too (one NIC per GPU), or leave it out")
        return self

    def footprint(self) -> tuple[int, int]:
        """(GPUs, nodes + links) this generator will make."""
        nics = self.gpus if self.nic_bandwidth is not None else 0
        return self.gpus, (self.gpus + 1 + nics) + (self.gpus + nics)


class _NoServer(Strict):
    """A generator that builds no product of the catalogue: ``server:`` on it is refused in
    words, not as an unknown key that might be ps_star's ``servers``."""

    @model_validator(mode="before")
    @classmethod
    def _no_server(cls, data):
        if isinstance(data, dict) and "server" in data:
            raise ValueError(f"server: kind: {data.get('kind')} builds no server of the catalogue; nvswitch, "
                             "leaf_spine, rail_optimized and cross_region do, and full_mesh an AMD one (or write its "
                             "gpu: and other keys here)")
        return data


class PCIeParams(_NoServer):
    """One server whose GPUs talk over PCIe: GPUs behind PCIe switches under one host bridge.

    ``gpu`` names the generation (e.g. ``l40s``); the PCIe rates default to its PCIe
    generation, x16 (Gen4 without a ``gpu``)."""

    kind: Literal["pcie"]
    gpus: Count = 8
    gpu: GpuName | None = None
    gpus_per_switch: Count = 2
    pcie_bandwidth: Bandwidth | None = None  # GPU -> PCIe switch; default x16 of the GPU's generation (Gen4: 31.5 GB/s)
    uplink_bandwidth: Bandwidth | None = None  # PCIe switch -> root complex; default as pcie_bandwidth
    latency: Latency = 1e-6
    host: Name = "node0"  # an empty label would make each GPU a host of its own
    prefix: Label = ""

    def footprint(self) -> tuple[int, int]:
        """(GPUs, nodes + links) this generator will make."""
        switches = -(-self.gpus // self.gpus_per_switch)
        return self.gpus, (1 + switches + self.gpus) + (switches + self.gpus)


class LeafSpineParams(_NvSwitchHosts):
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
    nvlink_latency: Latency = GPU_LINK_LATENCY  # per hop (an NVSwitch's) or per link (an AMD host's mesh)
    nvls: bool | None = None  # NVLink SHARP in each host's NVSwitch; default: what the GPU supports
    gpus_per_tray: Count | None = None  # GPUs per compute tray (its own host) of a multi-node NVLink server
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
    oversubscription: Annotated[Ratio, Field(gt=0)] | None = None  # ToR down:up ratio (4 or 4:1)
    sharp: bool = False  # ToRs and spines reduce in the network (NVIDIA SHARP)
    prefix: Label = ""

    @classmethod
    def _from_server(cls, server: Server, written: dict) -> dict:
        """The server's GPUs and its NICs per GPU: with ``gpus_per_host`` written, as many NICs
        for each GPU as the server has (a DGX H100's one each, OCI's H100 shape's two, a p4d's
        one per two GPUs), not the whole server's beside fewer or more GPUs (an 8-GPU host of
        an NVL72 rack's 72 NICs); none with ``nic_per`` or ``nics_per_host`` written."""
        keys = {**super()._from_server(server, written), "gpus_per_host": server.gpus}
        if "nic_per" in written or "nics_per_host" in written:
            return keys
        per_host = written.get("gpus_per_host", server.gpus)
        if isinstance(per_host, bool) or not isinstance(per_host, int) or per_host < 1:
            return keys  # refused as gpus_per_host is
        nics = server.nics * per_host / server.gpus
        if not nics.is_integer():
            raise ValueError(f"gpus_per_host: {server.name} has {server.nics} NICs for its {server.gpus} GPUs, so "
                             f"{per_host} GPU{'s' * (per_host != 1)} would have {nics:g}: give nics_per_host too "
                             f"(the NICs of a host of {per_host})")
        return {**keys, "nics_per_host": int(nics)}

    @model_validator(mode="after")
    def _one_uplink_rule(self) -> LeafSpineParams:
        if self.uplink_bandwidth is not None and self.oversubscription is not None:
            raise ValueError("give uplink_bandwidth or oversubscription, not both")
        if self.nics_per_host is not None and "nic_per" in self.model_fields_set:
            raise ValueError("give nic_per or nics_per_host, not both (nics_per_host would win)")
        return self

    @model_validator(mode="after")
    def _nics_of_each_tray(self) -> LeafSpineParams:
        """With trays (``gpus_per_tray``) each tray is a host of its own, with its own NICs: a
        GPU reaches no other tray's NIC over PCIe, so the trays share the NICs evenly."""
        tray, per_host = self.gpus_per_tray, self.gpus_per_host
        if tray is not None and tray < per_host and per_host % tray == 0 and self.host_nics() % (per_host // tray):
            key = "nics_per_host" if self.nics_per_host is not None else "nic_per"
            raise ValueError(f"{key}: {self.host_nics()} NIC{'s' * (self.host_nics() != 1)} for the {per_host // tray} "
                             f"trays of a server, and each tray is a host of its own whose GPUs reach no other tray's "
                             f"NIC: give a multiple of {per_host // tray} NICs per server (nics_per_host)")
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
        switches = gpus if nics > gpus else 0  # a PCIe switch for each GPU of several NICs (and its link)
        per_host = (1 + nics + gpus + switches) + (nics + self.fabric_links(gpus) + max(nics, gpus) + switches)
        spines = self.spines if self.racks > 1 else 0  # one rack: its ToR is the top, no spines
        return hosts * gpus, hosts * per_host + self.racks * (1 + spines) + spines

    def tor_uplink(self) -> float:
        """Bandwidth of one ToR -> spine link in bytes/s (each direction)."""
        if self.uplink_bandwidth is not None:
            return self.uplink_bandwidth
        down = self.hosts_per_rack * self.host_nics() * self.nic_bandwidth
        return down / (self.oversubscription or 1.0) / self.spines


class RailOptimizedParams(_NvSwitchHosts):
    """A rail-optimized Clos fabric of GPU servers, as NVIDIA's DGX SuperPOD builds it.

    Scalable units (SUs) of ``nodes_per_unit`` servers; every GPU has its own NIC, and NIC
    ``i`` of every server in a unit goes to the unit's leaf for rail ``i mod rails`` (one
    switch hop between the same GPU index of any two servers of a unit). Leaves connect to
    a spine tier; when one spine tier cannot reach every leaf (more leaves than
    ``switch_radix``), leaves and spines form pods of units and a core tier joins the pods.
    ``planes`` > 1 splits every NIC into that many ports on as many independent fabrics
    (multi-plane). Parallel cables between two switches are one link of their summed
    bandwidth (flows spread evenly over them, as adaptive routing aims to). A last pod with
    fewer units than the others gets as many spines as a full one.
    """

    kind: Literal["rail_optimized"]
    units: Count = 1
    nodes_per_unit: Count = 32  # DGX SuperPOD H100 / B200 reference architectures: 32 DGX per SU
    gpus_per_node: Count = 8
    rails: Count | None = None  # leaves per unit and plane; default one per GPU of a server
    gpu: GpuName = "h100"
    nvlink_bandwidth: Bandwidth | None = None  # per GPU each way; default: the GPU's NVLink line rate
    nvlink_latency: Latency = GPU_LINK_LATENCY  # per hop (an NVSwitch's) or per link (an AMD host's mesh)
    nvls: bool | None = None  # NVLink SHARP in each server's NVSwitch; default: what the GPU supports
    gpus_per_tray: Count | None = None  # GPUs per compute tray (its own host) of an NVL72-like server (4)
    nic_bandwidth: Bandwidth = 50e9  # 400 Gb/s ConnectX-7 per GPU, all planes together
    planes: Annotated[int, Field(ge=1, le=8, strict=True)] = 1
    transport: Transport = "ib"
    net_latency: Latency | None = None  # what the NICs' transport adds per network step; default: the transport's
    pcie_bandwidth: Bandwidth | None = None  # GPU <-> NIC; default: the GPU's PCIe generation, x16
    pcie_latency: Latency = 1e-6  # GPU -> NIC through a PCIe switch
    link_latency: Latency = 1e-6  # every switch-to-switch and NIC-to-leaf hop, cable + switch
    switch_radix: Annotated[int, Field(ge=2, strict=True)] = 64  # NVIDIA Quantum-2 QM9700: 64 x 400 Gb/s ports
    leaf_oversubscription: Annotated[Ratio, Field(ge=1)] = 1.0  # leaf down:up port ratio
    spine_oversubscription: Annotated[Ratio, Field(ge=1)] = 1.0  # spine down:up port ratio (with a core tier)
    sharp: bool = False  # leaves, spines and cores reduce in the network (NVIDIA SHARP)
    prefix: Label = ""

    @classmethod
    def _from_server(cls, server: Server, written: dict) -> dict:
        return {**super()._from_server(server, written), "gpus_per_node": server.gpus}

    @model_validator(mode="after")
    def _ports_fit(self) -> RailOptimizedParams:
        if self.server is not None and SERVERS[self.server].nics != SERVERS[self.server].gpus:
            server = SERVERS[self.server]
            raise ValueError(f"server: {server.name} has {server.nics} NICs for {server.gpus} GPUs, and a rail fabric "
                             "here gives each GPU one: use kind: leaf_spine, which takes its NICs as they are")
        if self.rail_count() > self.gpus_per_node:
            raise ValueError(f"rails: {self.rails} is more than the {self.gpus_per_node} NICs of a server")
        used = self.leaf_down() + self.leaf_up()
        if used > self.switch_radix:
            raise ValueError(f"a leaf needs {self.leaf_down()} ports down and {self.leaf_up()} up, more than "
                             f"switch_radix {self.switch_radix}: use more rails, fewer nodes_per_unit, a larger "
                             "radix or more leaf_oversubscription")
        if self.tiers() == 2 and self.spine_oversubscription != 1:
            raise ValueError(f"spine_oversubscription: its {self.leaves()} leaves per plane fit one spine tier "
                             f"(switch_radix {self.switch_radix}), so no core tier sits above the spines to "
                             "oversubscribe; leave it out, or give a switch_radix below the leaves")
        if self.tiers() == 3:
            if self.units_per_pod() < 1:
                raise ValueError(f"a spine with {self.spine_down()} ports down cannot reach the {self.rail_count()} "
                                 "leaves of one unit: use fewer rails or a larger switch_radix")
            if self.pods() > self.switch_radix:
                raise ValueError(f"{self.pods()} pods need a fourth switch tier (a core switch reaches at most "
                                 f"switch_radix = {self.switch_radix} pods); simnet builds up to three")
        return self

    def rail_count(self) -> int:
        """Leaves per unit and plane."""
        return self.rails or self.gpus_per_node

    def leaf_down(self) -> int:
        """NIC ports on one leaf: every server of the unit brings its NICs of that rail."""
        return self.nodes_per_unit * -(-self.gpus_per_node // self.rail_count())

    def leaf_up(self) -> int:
        """Uplink ports of one leaf."""
        return math.ceil(self.leaf_down() / self.leaf_oversubscription)

    def leaves(self) -> int:
        """Leaves per plane."""
        return self.units * self.rail_count()

    def tiers(self) -> int:
        """2 when one spine tier reaches every leaf of a plane, else 3 (pods and a core)."""
        return 2 if self.leaves() <= self.switch_radix else 3

    def spine_down(self) -> int:
        """Leaf-facing ports of a spine: all of them in two tiers, else what oversubscription leaves."""
        if self.tiers() == 2:
            return self.switch_radix
        return math.floor(self.switch_radix * self.spine_oversubscription / (1 + self.spine_oversubscription))

    def spine_up(self) -> int:
        """Core-facing ports of a spine (three tiers only)."""
        return self.switch_radix - self.spine_down() if self.tiers() == 3 else 0

    def units_per_pod(self) -> int:
        """Units whose leaves one spine reaches: all of them in two tiers."""
        return self.units if self.tiers() == 2 else self.spine_down() // self.rail_count()

    def pods(self) -> int:
        """Groups of units sharing a set of spines."""
        return -(-self.units // self.units_per_pod())

    def spines_per_pod(self) -> int:
        """Spines that take the uplinks of one pod's leaves."""
        leaves = min(self.units, self.units_per_pod()) * self.rail_count()
        return -(-leaves * self.leaf_up() // self.spine_down())

    def cores_per_group(self) -> int:
        """Core switches joined to spine ``j`` of every pod (three tiers only)."""
        return -(-self.pods() * self.spine_up() // self.switch_radix) if self.tiers() == 3 else 0

    def port_bandwidth(self) -> float:
        """One switch port, B/s each way: a NIC's bandwidth over its planes."""
        return self.nic_bandwidth / self.planes

    def footprint(self) -> tuple[int, int]:
        """(GPUs, nodes + links) this generator will make."""
        servers = self.units * self.nodes_per_unit
        g = self.gpus_per_node
        per_server = (2 * g + (g > 1)) + (self.fabric_links(g) + g + g * self.planes)
        spines = self.pods() * self.spines_per_pod()
        cores = self.spines_per_pod() * self.cores_per_group()
        switches = self.leaves() + spines + cores
        fabric_links = self.leaves() * self.spines_per_pod() + spines * self.cores_per_group()
        return servers * g, servers * per_server + self.planes * (switches + fabric_links)


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
        tops = self.spines if self.racks > 1 else 1  # the links up to the gateway
        return self.regions * gpus, self.regions * (elements + 1 + tops) + self.regions**2


class PSStarParams(_NoServer):
    """Workers and parameter servers on one Ethernet switch."""

    kind: Literal["ps_star"]
    workers: Count = 16
    servers: Count = 1
    gpu: GpuName | None = None  # the workers' GPU generation (NCCL's model takes an unnamed one as an A100)
    worker_bandwidth: Bandwidth = 25e9 / 8
    ps_bandwidth: Bandwidth = 25e9 / 8
    latency: Latency = 5e-6  # host -> switch over TCP
    transport: Transport = "tcp"  # what the workers' ports speak (NCCL's socket transport over Ethernet)
    prefix: Label = ""

    def footprint(self) -> tuple[int, int]:
        """(GPUs, nodes + links) this generator will make."""
        return self.workers, 2 * (self.workers + self.servers) + 1


class FullMeshParams(Strict):
    """GPUs with a direct link between every pair: an AMD Instinct host's xGMI (Infinity
    Fabric) mesh, e.g. 8 MI300X, each with one link to each of the other 7; the links
    count as the GPU fabric (link type nvlink: NVLink or xGMI). ``server:`` an AMD product
    of the catalogue sets its GPU and count (keys written win); one host has no network, so
    its NICs take no part."""

    kind: Literal["full_mesh"]
    server: ServerName | None = None
    gpus: Count = 8
    gpu: GpuName | None = None  # the GPU generation (NCCL's model takes an unnamed one as an A100)
    bandwidth: Bandwidth | None = None  # per link each way; default: an AMD GPU's xGMI link rate, else 64 GB/s
    latency: Latency = GPU_LINK_LATENCY  # per link of the mesh
    host: Name = "node0"  # an empty label would make each GPU a host of its own
    prefix: Label = ""

    @model_validator(mode="before")
    @classmethod
    def _server_gpus(cls, data):
        if isinstance(data, dict) and isinstance(data.get("server"), str) and data["server"] in SERVERS:
            server = SERVERS[data["server"]]
            if not GPUS[server.gpu].amd:
                raise ValueError(f"server: {server.name} has {server.gpu} GPUs on an NVSwitch, no xGMI mesh: use kind: "
                                 "nvswitch (one host) or leaf_spine / rail_optimized (hosts)")
            data = {"gpu": server.gpu, "gpus": server.gpus, **data}
        return data

    @model_validator(mode="after")
    def _links_of_the_gpu(self) -> FullMeshParams:
        if self.gpu is not None and GPUS[self.gpu].amd:
            _check_mesh(self.gpu, self.gpus, self.bandwidth is not None, "bandwidth", "gpus")
        return self

    def link_bandwidth(self) -> float:
        """B/s of every link each way: ``bandwidth``, else the AMD GPU's xGMI link (MI300X 64
        GB/s), else 64 GB/s."""
        if self.bandwidth is not None:
            return self.bandwidth
        return GPUS[self.gpu].nvlink_link_rate if self.gpu is not None and GPUS[self.gpu].amd else 64e9

    def footprint(self) -> tuple[int, int]:
        """(GPUs, nodes + links) this generator will make."""
        return self.gpus, self.gpus + self.gpus * (self.gpus - 1) // 2


def _check_mesh(gpu: str, per_host: int, bandwidth_given: bool, key: str, count_key: str) -> None:
    """An xGMI mesh host of ``per_host`` GPUs (the key ``count_key``) of generation ``gpu``: one
    link per pair, so at most links + 1 GPUs; ``key`` must give the bandwidth where AMD's line
    rate is not public."""
    links = GPUS[gpu].nvlink_links
    if per_host > links + 1:
        raise ValueError(f"{count_key}: {per_host}: a {gpu} has {links} xGMI links, one to each other GPU of its "
                         f"host: at most {links + 1} GPUs per host")
    if per_host > 1 and not GPUS[gpu].nvlink_link_rate and not bandwidth_given:
        raise ValueError(f"gpu: {gpu}: its xGMI link rate is in no public source simnet cites; give {key} "
                         f"(RCCL takes {GPUS[gpu].nccl_link_rate / 1e9:g} GB/s per link)")


Nodes = list[NodeSpec]
Links = list[LinkSpec]


def _tray_hosts(host: str, gpus: int, per_tray: int | None) -> tuple[Callable[[int], str], str | None]:
    """(GPU index -> its host label, the NVSwitch's host label) of a server of ``gpus`` GPUs:
    one host, or with ``per_tray`` a host per compute tray (``host-tray3``) and an NVSwitch
    of no one host (the rack's NVLink switch trays)."""
    if per_tray is None or per_tray >= gpus:
        return (lambda g: host), host
    return (lambda g: f"{host}-tray{g // per_tray}"), None


def _rack_scale(gpu: str, switch_host: str | None) -> bool:
    """Whether a server is a rack of its own (its GPUs' rack label is the server): one written
    as compute trays (``_tray_hosts``: its NVSwitch is no one host's), and, written as one
    host, a Grace-Blackwell server (gb200, gb300), which NVIDIA builds as an NVL72 rack
    (GB200 NVL72 reference architecture): trays or one host, the same racks."""
    return switch_host is None or (GPUS[gpu].host_cpu == "arm" and GPUS[gpu].nvls)


def nvswitch(p: NVSwitchParams) -> tuple[Nodes, Links]:
    """``gpus`` GPUs each linked to one NVSwitch node; optional per-GPU NICs. With
    ``gpus_per_tray`` the GPUs' hosts are trays (``node0-tray3``) of one NVLink domain."""
    gpu = GPUS[p.gpu]
    switch = f"{p.prefix}nvswitch"
    host_of, switch_host = _tray_hosts(p.host, p.gpus, p.gpus_per_tray)
    rack = p.host if _rack_scale(p.gpu, switch_host) else None
    nodes = [_node(f"{p.prefix}gpu{i}", "gpu", host=host_of(i), rack=rack, gpu=p.gpu) for i in range(p.gpus)]
    nodes.append(_node(switch, "switch", host=switch_host, rack=rack, nvls=gpu.nvls if p.nvls is None else p.nvls))
    links = [_link(n.id, switch, p.gpu_bandwidth or gpu.nvlink_bandwidth, p.latency, "nvlink") for n in nodes[:-1]]
    if p.nic_bandwidth is not None:
        for i in range(p.gpus):
            nic = f"{p.prefix}nic{i}"
            nodes.append(_node(nic, "nic", host=host_of(i), rack=rack, transport=p.transport,
                               net_latency=p.net_latency))
            links.append(_link(f"{p.prefix}gpu{i}", nic, p.pcie_bandwidth or pcie_bandwidth(gpu.pcie_generation),
                               p.pcie_latency, "pcie"))
    return nodes, links


def pcie(p: PCIeParams) -> tuple[Nodes, Links]:
    """GPUs in groups of ``gpus_per_switch`` under PCIe switches, all under one host bridge."""
    bridge = f"{p.prefix}hostbridge"
    x16 = pcie_bandwidth(GPUS[p.gpu].pcie_generation if p.gpu else 4)
    down = p.pcie_bandwidth or x16
    nodes = [_node(bridge, "host", host=p.host)]
    links = []
    for s in range((p.gpus + p.gpus_per_switch - 1) // p.gpus_per_switch):
        switch = f"{p.prefix}pcisw{s}"
        nodes.append(_node(switch, "switch", host=p.host))
        links.append(_link(switch, bridge, p.uplink_bandwidth or down, p.latency, "pcie"))
    for i in range(p.gpus):
        gpu = f"{p.prefix}gpu{i}"
        nodes.insert(i, _node(gpu, "gpu", host=p.host, gpu=p.gpu))
        links.append(_link(gpu, f"{p.prefix}pcisw{i // p.gpus_per_switch}", down, p.latency, "pcie"))
    return nodes, links


@dataclass(frozen=True)
class _Server:
    """How one GPU server is built: NVLink inside, one PCIe link from each GPU to its NICs."""

    gpus: int
    gpu: str
    nvlink: float  # B/s per GPU each way
    nvlink_latency: float
    nvls: bool
    pcie: float  # B/s GPU <-> NIC each way
    pcie_latency: float
    transport: str
    net_latency: float | None
    nics_of: Callable[[int], list[int]]  # GPU index in the server -> its NICs' indices
    gpus_per_tray: int | None = None  # a host per compute tray of this many GPUs (NVL72: 4), else one host
    mesh: bool = False  # an xGMI mesh (AMD): a link of ``nvlink`` B/s each way between every pair, no NVSwitch

    def build(self, host: str, nics: list[str], labels: dict) -> tuple[Nodes, Nodes, Links]:
        """(GPU nodes, NIC and NVSwitch nodes, links) of server ``host`` with NICs ``nics``;
        with trays the server's rack label is the server itself (an NVL72 rack)."""
        gpus: Nodes = []
        infra: Nodes = []
        links: Links = []
        host_of, switch_host = _tray_hosts(host, self.gpus, self.gpus_per_tray)
        if _rack_scale(self.gpu, switch_host):
            labels = {**labels, "rack": host}
        nic_host = {j: host_of(g) for g in reversed(range(self.gpus)) for j in self.nics_of(g)}
        nvswitch_id = f"{host}-nvswitch"
        switched = self.gpus > 1 and not self.mesh
        if switched:
            infra.append(_node(nvswitch_id, "switch", nvls=self.nvls, host=switch_host, **labels))
        for j, nic in enumerate(nics):
            infra.append(_node(nic, "nic", transport=self.transport, net_latency=self.net_latency,
                               host=nic_host.get(j, host_of(0)), **labels))
        for g in range(self.gpus):
            gpu = f"{host}-gpu{g}"
            gpus.append(_node(gpu, "gpu", gpu=self.gpu, host=host_of(g), **labels))
            if switched:
                links.append(_link(gpu, nvswitch_id, self.nvlink, self.nvlink_latency, "nvlink"))
            if self.mesh:
                links += [_link(f"{host}-gpu{peer}", gpu, self.nvlink, self.nvlink_latency, "nvlink")
                          for peer in range(g)]
            own = self.nics_of(g)
            if len(own) > 1 and all(sum(j in self.nics_of(h) for h in range(self.gpus)) == 1 for j in own):
                # several NICs of one GPU share its x16 link through a PCIe switch (a p5's 4 EFA, OCI's two
                # cards): the link's rate is the GPU's, whatever the NICs add up to; the microsecond split
                switch = f"{host}-pcisw{g}"
                infra.append(_node(switch, "switch", host=host_of(g), **labels))
                links.append(_link(gpu, switch, self.pcie, self.pcie_latency / 2, "pcie"))
                links += [_link(switch, nics[j], self.pcie, self.pcie_latency / 2, "pcie") for j in own]
                continue
            for j in own:
                links.append(_link(gpu, nics[j], self.pcie, self.pcie_latency, "pcie"))
        return gpus, infra, links


def _server(p: LeafSpineParams | RailOptimizedParams, gpus: int, nics_of: Callable[[int], list[int]]) -> _Server:
    """The server a fabric generator's parameters describe (GPU generation defaults filled in):
    an AMD GPU's is an xGMI mesh whose links carry its link rate each, or ``nvlink_bandwidth``
    (per GPU each way) over its links to the other GPUs."""
    preset = GPUS[p.gpu]
    if preset.amd:
        per_link = p.nvlink_bandwidth / max(gpus - 1, 1) if p.nvlink_bandwidth else preset.nvlink_link_rate
        return _Server(gpus=gpus, gpu=p.gpu, nvlink=per_link, nvlink_latency=p.nvlink_latency, nvls=False,
                       pcie=p.pcie_bandwidth or pcie_bandwidth(preset.pcie_generation), pcie_latency=p.pcie_latency,
                       transport=p.transport, net_latency=p.net_latency, nics_of=nics_of, mesh=True)
    return _Server(gpus=gpus, gpu=p.gpu, nvlink=p.nvlink_bandwidth or preset.nvlink_bandwidth,
                   nvlink_latency=p.nvlink_latency, nvls=preset.nvls if p.nvls is None else p.nvls,
                   pcie=p.pcie_bandwidth or pcie_bandwidth(preset.pcie_generation), pcie_latency=p.pcie_latency,
                   transport=p.transport, net_latency=p.net_latency, nics_of=nics_of, gpus_per_tray=p.gpus_per_tray)


def _leaf_spine(p: LeafSpineParams, prefix: str, region: str | None) -> tuple[Nodes, Links, list[str]]:
    """A leaf-spine fabric; also returns the ids of its top switches (spines, or the ToR)."""
    server = _server(p, p.gpus_per_host, p.nics_of)
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
            nics = [f"{host}-nic"] if p.nic_per == "host" and p.nics_per_host is None else \
                [f"{host}-nic{j}" for j in range(p.host_nics())]
            host_gpus, host_infra, host_links = server.build(host, nics, dict(rack=rack, region=region))
            gpus += host_gpus
            infra += host_infra
            links += [_link(nic, tor, p.nic_bandwidth, p.link_latency, "net") for nic in nics] + host_links
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


def rail_optimized(p: RailOptimizedParams) -> tuple[Nodes, Links]:
    """SUs of servers on a rail-optimized two- or three-tier Clos (see ``RailOptimizedParams``).

    Node ids: ``su0h3-gpu5`` (GPU 5 of server 3 in unit 0, its host label ``su0h3``, its rack
    label the unit ``su0``), ``su0h3-nic5``, ``su0h3-nvswitch``; leaves ``su0-leaf5``; spines
    ``spine7`` (two tiers) or ``pod1-spine7`` and cores ``core7-0`` (core 0 of spine group 7).
    With several planes every switch id ends in ``-p0``, ``-p1``, ...
    """
    rails = p.rail_count()
    server = _server(p, p.gpus_per_node, lambda g: [g])
    port = p.port_bandwidth()
    sharp = p.sharp or None
    planes = [f"-p{k}" for k in range(p.planes)] if p.planes > 1 else [""]
    gpus: Nodes = []
    infra: Nodes = []
    links: Links = []
    for u in range(p.units):
        unit = f"{p.prefix}su{u}"
        for h in range(p.nodes_per_unit):
            host = f"{unit}h{h}"
            nics = [f"{host}-nic{g}" for g in range(p.gpus_per_node)]
            host_gpus, host_infra, host_links = server.build(host, nics, dict(rack=unit))
            gpus += host_gpus
            infra += host_infra
            links += host_links
            links += [_link(nic, f"{unit}-leaf{g % rails}{plane}", port, p.link_latency, "net")
                      for g, nic in enumerate(nics) for plane in planes]
    leaf_uplink = p.leaf_up() * port / p.spines_per_pod()
    spine_uplink = p.spine_up() * port / max(p.cores_per_group(), 1)
    for plane in planes:
        for u in range(p.units):
            infra += [_node(f"{p.prefix}su{u}-leaf{r}{plane}", "switch", rack=f"{p.prefix}su{u}", sharp=sharp)
                      for r in range(rails)]
        for q in range(p.pods()):
            pod = f"{p.prefix}pod{q}-" if p.tiers() == 3 else p.prefix
            units = range(q * p.units_per_pod(), min((q + 1) * p.units_per_pod(), p.units))
            for j in range(p.spines_per_pod()):
                spine = f"{pod}spine{j}{plane}"
                infra.append(_node(spine, "switch", sharp=sharp))
                links += [_link(f"{p.prefix}su{u}-leaf{r}{plane}", spine, leaf_uplink, p.link_latency, "net")
                          for u in units for r in range(rails)]
                cores = [f"{p.prefix}core{j}-{k}{plane}" for k in range(p.cores_per_group())]
                links += [_link(spine, core, spine_uplink, p.link_latency, "net") for core in cores]
        infra += [_node(f"{p.prefix}core{j}-{k}{plane}", "switch", sharp=sharp)
                  for j in range(p.spines_per_pod()) for k in range(p.cores_per_group())]
    return gpus + infra, links


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
    nodes = [_node(f"{p.prefix}worker{i}", "gpu", host=f"{p.prefix}w{i}", gpu=p.gpu, transport=p.transport)
             for i in range(p.workers)]
    nodes += [_node(f"{p.prefix}ps{i}", "ps", host=f"{p.prefix}ps{i}") for i in range(p.servers)]
    nodes.append(_node(switch, "switch"))
    links = [_link(n.id, switch, p.ps_bandwidth if n.kind == "ps" else p.worker_bandwidth, p.latency, "net")
             for n in nodes[:-1]]
    return nodes, links


def full_mesh(p: FullMeshParams) -> tuple[Nodes, Links]:
    """``gpus`` GPUs, one direct full-duplex link between every pair."""
    ids = [f"{p.prefix}gpu{i}" for i in range(p.gpus)]
    nodes = [_node(i, "gpu", host=p.host, gpu=p.gpu) for i in ids]
    links = [_link(a, b, p.link_bandwidth(), p.latency, "nvlink") for i, a in enumerate(ids) for b in ids[i + 1:]]
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
    "rail_optimized": Generator(RailOptimizedParams, rail_optimized),
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
    "rail_optimized": ("units", lambda p: p.nodes_per_unit * p.gpus_per_node),
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


ONE_HOST_UNREAD = {"leaf_spine": ("nic_per", "nics_per_host", "nic_bandwidth", "transport", "net_latency",
                                   "link_latency", "sharp", "pcie_bandwidth", "pcie_latency"),
                   "rail_optimized": ("rails", "nic_bandwidth", "planes", "transport", "net_latency", "link_latency",
                                      "switch_radix", "leaf_oversubscription", "sharp", "pcie_bandwidth",
                                      "pcie_latency"),
                   "nvswitch": ("nic_bandwidth", "pcie_bandwidth", "pcie_latency", "transport", "net_latency")}
"""Per generator, its keys of the network between hosts (NICs, the PCIe links to them, their
transport, the fabric above them): with one host they build what no healthy run crosses, since NCCL uses the
network only between NVLink domains, and the GPUs reach each other over NVLink; an
``nvswitch`` server's NICs are cabled to nothing but their GPUs."""


ALGORITHM_KEYS = {"nvls": ("nvls", "nvls_tree"), "sharp": ("collnet_direct", "collnet_chain", "nvls"),
                  "servers": ("ps",), "ps_bandwidth": ("ps",)}
"""Generator keys only some algorithms read (``auto`` too where it weighs one of them: NVLS,
CollNet): a switch's reduction (NVLink SHARP, SHARP: CollNet's, and NVLS's across hosts) and
a ps_star's parameter servers."""

FABRIC_KEYS = {"leaf_spine": ("spines", "uplink_bandwidth", "oversubscription"),
               "cross_region": ("spines", "uplink_bandwidth", "oversubscription", "wan_bandwidth", "wan_latency",
                                "gateway_bandwidth"),
               "rail_optimized": ("spine_oversubscription",)}
"""Per generator of hosts joined by a network, its keys of the fabric above the NICs
(spines, uplinks, the WAN between regions); a ``pcie`` box's ``uplink_bandwidth`` is its
PCIe switches' own link, inside the box."""


def network_keys(params: dict) -> list[str]:
    """The keys of the network between NVLink domains (``ONE_HOST_UNREAD``, ``FABRIC_KEYS``)
    a valid generator call (``params``) writes: what no run inside one NVLink domain reads."""
    kind = params["kind"]
    keys = (*ONE_HOST_UNREAD.get(kind.replace("cross_region", "leaf_spine"), ()), *FABRIC_KEYS.get(kind, ()))
    return [key for key in keys if key in params]


ONE_HOST_WHY = ("one host's GPUs reach each other inside it, and NCCL uses the network only between hosts, so it "
                "changed nothing here; it counts from two hosts")
"""Why ``unread_keys`` says one host's ``ONE_HOST_UNREAD`` keys: true where no route between its
GPUs leaves the host (routes go by latency), which the loader checks on the routes."""


def unread_keys(params: dict, alone: bool = True) -> list[tuple[str, str]]:
    """(key, why) per parameter written in a valid generator call (``params``; not the ones
    its ``server:`` fills in) that builds nothing here: a one-rack leaf_spine's (or
    cross_region's) ``spines``, ``oversubscription`` or ``uplink_bandwidth``, since that
    rack's ToR is the top of its fabric; one region's WAN; one host's network
    (``ONE_HOST_UNREAD``; not one server's compute trays, whose NICs the shipped one-rack NVL72
    file writes to describe the rack), where the generator builds the whole fabric (``alone``:
    no other generator, node or link that a route could reach its NICs from). Said, not
    refused: a sweep over GPU counts grows the racks, regions and hosts, and there they are
    read (an ``nvswitch`` server's NICs count once ``links:`` cable them)."""
    model = GENERATORS[params["kind"]].params.model_validate(params)
    written = set(params)
    said: list[tuple[str, str]] = []
    if isinstance(model, CrossRegionParams) and model.regions == 1:
        said += [(key, "one region has no WAN to cross (no gateway is built), so it changed nothing here; it counts "
                       "from regions: 2")
                 for key in ("wan_bandwidth", "wan_latency", "gateway_bandwidth") if key in written]
    if isinstance(model, CrossRegionParams) and model.regions > 1 and model.gateway_bandwidth is not None and \
            model.gateway_bandwidth >= model.wan_bandwidth * (model.regions - 1):
        said.append(("gateway_bandwidth", "every byte a spine sends its gateway goes on over the WAN (and every byte "
                                          "it gets from it came over it): at the WAN links' rate or more it never "
                                          "binds, so it changed nothing here"))
    if isinstance(model, LeafSpineParams) and model.racks == 1:
        said += [(key, "one rack's ToR is the top of its fabric (no spines, no ToR uplinks are built), so it changed "
                       "nothing here; it counts from racks: 2")
                 for key in ("spines", "oversubscription", "uplink_bandwidth") if key in written]
    if isinstance(model, RailOptimizedParams) and model.tiers() == 2 and "spine_oversubscription" in written:
        said.append(("spine_oversubscription", f"its {model.leaves()} leaves per plane fit one spine tier, so no "
                                               "core tier is built and it changed nothing here (as 1; any other is "
                                               "refused)"))
    if isinstance(model, PCIeParams) and model.gpus <= model.gpus_per_switch and alone \
            and "uplink_bandwidth" in written:
        said.append(("uplink_bandwidth", "every GPU sits under one PCIe switch, so no route climbs to the host bridge "
                                         "and it changed nothing here; it counts from gpus_per_switch below gpus"))
    if isinstance(model, RailOptimizedParams) and model.leaves() == 1 and model.units * model.nodes_per_unit > 1 \
            and "leaf_oversubscription" in written:
        said.append(("leaf_oversubscription", "every NIC sits under the one leaf of its plane (one unit, one rail), so "
                                              "no route climbs to a spine and it changed nothing here; it counts from "
                                              "two leaves (rails: 2 or more, or units: 2)"))
    per_server = _gpus_per_server(model)
    if per_server == 1:  # (a sweep grows racks and hosts, never a host's GPUs)
        said += [(key, "a host of one GPU is joined to no other GPU over NVLink (no NVSwitch is built), so it changed "
                       "nothing here; it counts from two GPUs a host") for key in ("nvlink_bandwidth", "nvlink_latency")
                 if key in written]
        said += [(key, "a host of one GPU has one NIC either way (a NIC per GPU is a NIC per host), so it changed "
                       "nothing here") for key in ("nic_per", "nics_per_host")
                 if key in written and (key == "nic_per" or model.nics_per_host == 1)]
        said += [("gpus_per_tray", "a host of one GPU is one tray, so it changed nothing here")] \
            if "gpus_per_tray" in written else []
        said += [("nvls", "a host of one GPU has no NVSwitch to reduce on (none is built), so it changed nothing "
                          "here; it counts from two GPUs a host")] if "nvls" in written else []
    servers = model.racks * model.hosts_per_rack * getattr(model, "regions", 1) if isinstance(model, LeafSpineParams) \
        else model.units * model.nodes_per_unit if isinstance(model, RailOptimizedParams) else None
    if isinstance(model, NVSwitchParams) and alone:
        said += [(key, "an nvswitch server's NICs are cabled to nothing but their GPUs, so no route crosses them and "
                       "it changed nothing here; it counts where links: cable them to a network")
                 for key in ONE_HOST_UNREAD["nvswitch"] if key in written]
    elif servers == 1 and model.gpus_per_tray is None and alone:
        said += [(key, ONE_HOST_WHY)
                 for key in ONE_HOST_UNREAD[model.kind.replace("cross_region", "leaf_spine")]
                 if key in written and key not in dict(said)]
    if "transport" in written and hasattr(model, "transport"):
        without = GENERATORS[params["kind"]].params.model_validate({k: v for k, v in params.items()
                                                                     if k != "transport"})
        if model.transport != without.transport and {model.transport, without.transport} <= {"ib", "roce", "tcp"} \
                and "transport" not in dict(said):  # (its own default written, as the presets do, says the hardware)
            said.append(("transport", f"{model.transport} times as {without.transport}, its default here: in NCCL's "
                                      "model InfiniBand, RoCE and sockets report no latency of their own (NVIDIA/nccl "
                                      "v2.30.7 src/transport/net_ib/init.cc:558, net_socket.cc:174), and what a "
                                      "socket or RoCE fabric carries is the NICs' bandwidth, so it changed nothing "
                                      "here"))
    return said


def _gpus_per_server(model) -> int | None:
    """GPUs per server of a leaf_spine's (or cross_region's) or rail_optimized's parameters; None for others."""
    return model.gpus_per_host if isinstance(model, LeafSpineParams) else \
        model.gpus_per_node if isinstance(model, RailOptimizedParams) else None


def library_capped_keys(params: dict) -> list[tuple[str, str]]:
    """(key, why) for the xGMI rate a generator call (``params``) writes for AMD GPUs whose link
    rate no public source gives (MI325X, MI355X: required, ``_check_mesh``) where it is RCCL's
    per-link figure or more: NCCL's and RCCL's models run those links at that figure at most
    (``rates.efficiency``), so more changes nothing under them; ``model: ideal`` reads it."""
    model = GENERATORS[params["kind"]].params.model_validate(params)
    gpu = GPUS.get(getattr(model, "gpu", None) or "")
    if gpu is None or not gpu.amd or not gpu.nvlink_links or gpu.nvlink_link_rate:
        return []
    per_server = _gpus_per_server(model)
    key = "bandwidth" if isinstance(model, FullMeshParams) else "nvlink_bandwidth"
    written = getattr(model, key, None)
    per_link = written if key == "bandwidth" else written / (per_server - 1) if written and per_server and \
        per_server > 1 else None
    if key not in params or per_link is None or per_link < gpu.nccl_link_rate:
        return []
    return [(key, f"{gpu.name}'s xGMI link rate is in no public source, so NCCL's and RCCL's models run its links at "
                  f"RCCL's per-link figure, {gpu.nccl_link_rate / 1e9:g} GB/s, at most: the {per_link / 1e9:g} GB/s a "
                  f"link written here changed nothing beyond it (model: ideal reads it)")]


def generate(params: dict) -> tuple[Nodes, Links]:
    """Run the generator named by ``params["kind"]``; raise GeneratorError or ValidationError."""
    if not isinstance(params, dict):
        raise GeneratorError((), "expected a mapping with a 'kind'")
    kind = params.get("kind")
    if "kind" not in params:
        raise GeneratorError(("kind",), f"is required but missing: name the generator, one of {', '.join(GENERATORS)}")
    if not isinstance(kind, str) or kind not in GENERATORS:
        raise GeneratorError(("kind",), f"unknown generator {shown(kind)}; expected one of {', '.join(GENERATORS)}")
    generator = GENERATORS[kind]
    model = generator.params.model_validate(params)
    gpus, elements = model.footprint()
    try:
        check_fits(elements * ELEMENT_BYTES, f"{kind} of {gpus:,} GPUs makes {elements:,} nodes and links to load",
                   "make it smaller")
    except TooLarge as exc:
        raise GeneratorError((), str(exc)) from None
    return generator.build(model)

