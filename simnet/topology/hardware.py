"""Hardware vocabulary users already speak: GPU generations, PCIe generations, link types
and network transports, with the public figures simnet builds on.

Line rates are datasheet figures per direction. Effective rates are what NCCL's own
topology model (NVIDIA/nccl v2.30.7, ``src/graph/topo.h`` and ``topo.cc``) assumes a
link delivers, or RCCL's for AMD Instinct GPUs (ROCm/rccl, ``src/graph/topo.h``);
``model: nccl`` and ``model: rccl`` use them, ``model: ideal`` uses line rates. An AMD
GPU's "NVLink" is its xGMI (Infinity Fabric) links, which RCCL types as NVLink
(LINK_NVL): the GPUs of an AMD host are a fully connected mesh, one link per pair.

>>> GPUS["h100"].nvlink_bandwidth / 1e9, GPUS["h100"].nvlink_effective / 1e9
(450.0, 370.8)
>>> round(pcie_bandwidth(5) / 1e9, 2), pcie_effective(5) / 1e9
(63.02, 48.0)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GPU", "GPUS", "GPU_NAMES", "LINK_TYPES", "NVLINK", "PCIE", "NET", "TRANSPORTS", "pcie_bandwidth",
           "pcie_effective", "pcie_efficiency", "pcie_generation_of", "pcie_lanes_of", "nvlink_efficiency",
           "PCIE_EFFICIENCY",
           "NCCL_FALLBACK_NVLINK_EFFICIENCY",
           "UNNAMED_GPU_CC", "AMD_GPUS"]

NVLINK, PCIE, NET = 0, 1, 2
LINK_TYPES = ("nvlink", "pcie", "net")
"""Link classes, as NCCL's tuning model distinguishes them (NCCL_HW_NVLINK, _PCI, _NET)."""

TRANSPORTS = ("ib", "roce", "efa", "tcp")
"""Network transports a NIC speaks: InfiniBand, RDMA over Converged Ethernet, AWS Elastic
Fabric Adapter, and NCCL's socket (TCP) transport."""


@dataclass(frozen=True)
class GPU:
    """One GPU generation: NVLink (or xGMI) links and rates, compute capability, host interface.

    ``nvlink_link_rate`` is 0 where no public source simnet cites gives the line rate (the
    generators then ask for it); ``bf16_flops`` is 0 where none gives the dense peak (a
    training step then asks for ``gpu_flops``). ``gcn_arch`` is an AMD GPU's LLVM target
    (gfx942, gfx950), which selects RCCL's tables; None for NVIDIA."""

    name: str
    compute_capability: int
    nvlink_links: int
    nvlink_link_rate: float  # B/s per link per direction (line rate); 0: not public here
    nccl_link_rate: float  # B/s per link NCCL's (RCCL's) topology model assumes (topo.h SMxx_NVLINK_BW, *_XGMI_WIDTH)
    pcie_generation: int
    nvls: bool  # NVLink SHARP in the NVSwitch: NCCL requires SM90+ (search.cc, nvls.cc)
    source: str
    # dense BF16 tensor-core peak, FLOP/s (datasheet; sparsity figures halved); 0: not public here
    bf16_flops: float = 0.0
    host_cpu: str = "intel"  # the host's CPU as NCCL's model classes it: intel, amd (x86) or arm (Grace)
    gcn_arch: str | None = None  # an AMD GPU's LLVM target (gfx942, gfx950): RCCL runs on it, its GPUs form a mesh

    @property
    def amd(self) -> bool:
        """An AMD Instinct GPU: RCCL is its collective library, its host a fully connected xGMI mesh."""
        return self.gcn_arch is not None

    @property
    def nvlink_bandwidth(self) -> float:
        """Aggregate NVLink line rate per GPU per direction, B/s."""
        return self.nvlink_links * self.nvlink_link_rate

    @property
    def nvlink_effective(self) -> float:
        """What NCCL's model assumes the GPU's NVLinks deliver per direction, B/s."""
        return self.nvlink_links * self.nccl_link_rate

    @property
    def nvlink_efficiency(self) -> float:
        """NCCL's (RCCL's) per-link figure over the line rate (0 for a GPU without NVLink or
        whose line rate is not public)."""
        return self.nccl_link_rate / self.nvlink_link_rate if self.nvlink_links and self.nvlink_link_rate else 0.0


GPUS: dict[str, GPU] = {
    "a100": GPU("a100", 80, 12, 25e9, 20.0e9, 4, False,
                "NVIDIA A100 datasheet: NVLink 3, 12 links, 600 GB/s bidirectional; PCIe Gen4. "
                "NCCL topo.h SM80_NVLINK_BW 20.0 GB/s per link; BF16 tensor 312 TFLOP/s dense", 312e12),
    "h100": GPU("h100", 90, 18, 25e9, 20.6e9, 5, True,
                "NVIDIA H100 SXM datasheet: NVLink 4, 18 links, 900 GB/s bidirectional; PCIe Gen5. "
                "NCCL topo.h SM90_NVLINK_BW 20.6 GB/s per link (v2.20+); BF16 tensor 1,979 TFLOP/s with sparsity, "
                "989 dense", 989e12),
    "h200": GPU("h200", 90, 18, 25e9, 20.6e9, 5, True,
                "NVIDIA H200 SXM datasheet: NVLink 900 GB/s bidirectional (18 NVLink 4 links); PCIe Gen5. "
                "NCCL topo.h SM90_NVLINK_BW 20.6 GB/s per link; BF16 tensor 989 TFLOP/s dense (as H100 SXM)",
                989e12),
    "b200": GPU("b200", 100, 18, 50e9, 40.1e9, 5, True,
                "NVIDIA DGX B200 datasheet: NVLink 5, 1.8 TB/s bidirectional per GPU (18 links); its ConnectX-7 "
                "NICs on PCIe Gen5. NCCL topo.h SM100_NVLINK_BW 40.1 GB/s per link (v2.27.5+); HGX B200 datasheet: "
                "FP16/BF16 tensor 36 PFLOP/s with sparsity for 8 GPUs, 2.25 PFLOP/s dense per GPU", 2.25e15),
    "b300": GPU("b300", 103, 18, 50e9, 40.1e9, 6, True,
                "NVIDIA HGX B300 (Blackwell Ultra, compute capability 10.3): NVLink 5, 1.8 TB/s bidirectional per GPU "
                "on NVLink 5 switches; its ConnectX-8 SuperNICs sit on the HGX board on PCIe Gen6 (DGX B300 user "
                "guide). NCCL topo.h SM100_NVLINK_BW 40.1 GB/s per link (compute capability >= 100); FP16/BF16 "
                "tensor 2.25 PFLOP/s dense per GPU (verda.com/blog/gb300-nvl72-architecture, per-GPU table)",
                2.25e15),
    "gb200": GPU("gb200", 100, 18, 50e9, 40.1e9, 5, True,
                 "NVIDIA GB200 NVL72: a B200 GPU of a Grace-Blackwell superchip (two GPUs and one Arm Grace CPU), "
                 "18 NVLink 5 links, 1.8 TB/s bidirectional per GPU across the rack's NVLink switch trays; its "
                 "ConnectX-7 on PCIe Gen5. NCCL topo.h SM100_NVLINK_BW 40.1 GB/s per link; FP16/BF16 tensor "
                 "2.25 PFLOP/s dense per GPU (verda.com/blog/gb300-nvl72-architecture, per-GPU table)",
                 2.25e15, "arm"),
    "gb300": GPU("gb300", 103, 18, 50e9, 40.1e9, 6, True,
                 "NVIDIA GB300 NVL72: a B300 (Blackwell Ultra) GPU of a Grace-Blackwell Ultra superchip (Arm Grace "
                 "host), NVLink 5 at 1.8 TB/s bidirectional (900 GB/s each way) per GPU; ConnectX-8 SuperNICs on "
                 "PCIe Gen6. NCCL topo.h SM100_NVLINK_BW 40.1 GB/s per link; FP16/BF16 tensor 2.5 PFLOP/s dense per "
                 "GPU (verda.com/blog/gb300-nvl72-architecture, per-GPU table)", 2.5e15, "arm"),
    "l40s": GPU("l40s", 89, 0, 0.0, 0.0, 4, False,
                "NVIDIA L40S datasheet (Ada Lovelace, compute capability 8.9): PCIe Gen4 x16, 64 GB/s "
                "bidirectional, no NVLink; BF16 tensor 362.05 TFLOP/s dense (733 with sparsity)", 362.05e12),
    "v100": GPU("v100", 70, 6, 25e9, 20.0e9, 3, False,
                "NVIDIA V100 SXM2 datasheet: NVLink 2, 6 links, 300 GB/s bidirectional (25 GB/s per link each way); "
                "PCIe Gen3. NCCL topo.h SM70_NVLINK_BW 20.0 GB/s per link; 125 TFLOP/s FP16 tensor (no BF16: "
                "simnet uses the FP16 figure)", 125e12),
    # ------------------------------------------------------------------ AMD Instinct (xGMI mesh, RCCL)
    # ROCM-ARCH = ROCm/ROCm@e396b489 docs/conceptual/gpu-arch/mi300.md; ROCM-SPECS = its
    # docs/reference/gpu-arch-specs.rst (and rocm.docs.amd.com 7.13.0-preview gpu-specs for MI355X);
    # RCCL-HWDOC = ROCm/rocm-systems projects/rccl/docs/conceptual/hardware-specific-optimizations.rst;
    # MLC-5.1 = mlcommons/training_results_v5.1@4da2d1cd AMD/systems/*.json (AMD's submissions)
    "mi300x": GPU("mi300x", 0, 7, 64e9, 48e9, 5, False,
                  "ROCM-ARCH l.124-125: 'seven high-bandwidth, low-latency AMD Infinity Fabric links ... to form a "
                  "fully connected 8-GPU system'; l.123-124: PCIe Gen 5 x16 to the host; l.79-81: Matrix BF16 "
                  "1307.4 peak TFLOPS (per-CU rate x CUs, no sparsity: dense); ROCM-SPECS: gfx942. RCCL-HWDOC: "
                  "'Each link operates at a raw bandwidth of 64 GB/s, with approximately 46-48 GB/s of effective "
                  "bandwidth' (direction not stated; taken per direction, as its '7 x 46 GB/s = 322 GB/s' is what a "
                  "ring's busbw measures). RCCL 2.21.5 (ROCm/rccl@0cbce2a) src/graph/topo.h:33 GFX94X_XGMI_WIDTH "
                  "48.0 GB/s per link; host: 'AMD EPYC processors in a dual-socket configuration' (ROCM-ARCH l.122)",
                  1307.4e12, "amd", "gfx942"),
    "mi325x": GPU("mi325x", 0, 7, 0.0, 48e9, 5, False,
                  "ROCM-SPECS: gfx942, 304 CUs (as MI300X); MLC-5.1 MI325X_EPYC_9575F_pytorch_llama2_70b.json: 8 "
                  "per node on 'XGMI', 'PCIe Gen 5 x16', host 'AMD EPYC 9575F'. 7 xGMI links: RCCL matches every "
                  "8-GPU gfx942 host against its Rome models of 8 GPUs with nLinks 7, all-to-all (RCCL 2.21.5 "
                  "src/graph/rome_models.cc:549 rome_model_79, :575 rome_model_81); RCCL's figure GFX94X_XGMI_WIDTH "
                  "48.0 GB/s (topo.h:33). AMD's per-link line rate and dense BF16 peak for MI325X were not in a "
                  "source simnet cites: give nvlink_bandwidth (bandwidth on full_mesh) and training.gpu_flops",
                  0.0, "amd", "gfx942"),
    "mi355x": GPU("mi355x", 0, 7, 0.0, 48e9, 5, False,
                  "ROCM-SPECS: gfx950, 256 CUs; RCCL-HWDOC: 'MI350 nodes (gfx950) use the same fully connected xGMI "
                  "mesh topology as MI300X but with updated link speeds' (8 GPUs, 7 links each; the speed not "
                  "stated); RCCL 2.30.3 (ROCm/rocm-systems@03a89144 projects/rccl/src/graph/topo.h) "
                  "GFX95X_XGMI_WIDTH 48.0 GB/s per link; MLC-5.1 MI355X_EPYC_9575F_pytorch.json: 'PCIe Gen 5 x16', "
                  "host 'AMD EPYC 9575F'. AMD's per-link line rate and dense BF16 peak were not in a source simnet "
                  "cites: give nvlink_bandwidth (bandwidth on full_mesh) and training.gpu_flops",
                  0.0, "amd", "gfx950"),
}
GPU_NAMES = tuple(GPUS)
AMD_GPUS = tuple(name for name, gpu in GPUS.items() if gpu.amd)
"""The AMD Instinct generations: RCCL runs on them (``model: rccl``)."""

UNNAMED_GPU_CC = 80
"""The compute capability simnet's NCCL model takes for a GPU that names no generation
(SM80, the generation NCCL's own topo.h ncclTopoNVLinkBw falls back to)."""

NCCL_FALLBACK_NVLINK_EFFICIENCY = 20.0 / 25.0
"""For a GPU of unknown generation NCCL assumes SM80's 20.0 GB/s per link (topo.h
ncclTopoNVLinkBw default); against NVLink 3's 25 GB/s line rate that is 0.8."""


def nvlink_efficiency(gpu: str | None) -> float:
    """Effective / line rate of NVLink for a GPU generation (NCCL's assumption); 0 for a
    generation whose line rate is not public (``GPU.nvlink_link_rate`` 0: see ``rates``)."""
    if gpu in GPUS and GPUS[gpu].nvlink_links:
        return GPUS[gpu].nvlink_efficiency
    return NCCL_FALLBACK_NVLINK_EFFICIENCY


_PCIE_GT = {3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
"""Transfer rate per lane, GT/s (PCI-SIG: Gen3 8, Gen4 16, Gen5 32, Gen6 64)."""


def pcie_bandwidth(generation: int, lanes: int = 16) -> float:
    """PCIe line rate per direction in B/s: GT/s x lanes / 8 with 128b/130b encoding
    (Gen3-5); Gen6 uses FLIT mode (242/256)."""
    encoding = 242 / 256 if generation >= 6 else 128 / 130
    return _PCIE_GT[generation] * 1e9 * lanes / 8 * encoding


def pcie_effective(generation: int, lanes: int = 16) -> float:
    """What NCCL assumes a PCIe link delivers, B/s: width x speed / 80 GB/s with speed 60,
    120, 240, 480 for Gen3-6 (NCCL v2.30.7 topo.cc kvDictPciGen): x16 = 12/24/48/96 GB/s."""
    return lanes * {3: 60, 4: 120, 5: 240, 6: 480}[generation] / 80 * 1e9


def pcie_efficiency(generation: int) -> float:
    """NCCL's figure for a PCIe link over its line rate: NCCL takes 0.75 of the signalling rate
    (GT/s x lanes / 8) whatever the generation, while the line rate carries the generation's
    encoding, 128b/130b for Gen3-5 (0.76) and PCIe 6.0's FLIT mode 242/256 (0.79: x16 is 96 of
    121 GB/s).

    >>> round(pcie_efficiency(5), 4), round(pcie_efficiency(6), 4)
    (0.7617, 0.7934)
    """
    return pcie_effective(generation) / pcie_bandwidth(generation)


PCIE_EFFICIENCY = pcie_efficiency(5)
"""NCCL's PCIe figure over the line rate for Gen3-5 (0.76, the same for each)."""


def pcie_lanes_of(bandwidth: float, generation: int) -> int | None:
    """The width (lanes) of the ``generation`` PCIe link that a link written at ``bandwidth``
    B/s per direction is: one written between 1 % below its line rate (as a datasheet rounds it:
    Gen4 x16's 31.5077 GB/s written 31.5) and 1 % above its signalling rate (GT/s x lanes / 8:
    32 GB/s); None for any other rate. (The widths' windows do not overlap.)

    >>> pcie_lanes_of(31.5e9, 4), pcie_lanes_of(32e9, 4), pcie_lanes_of(63e9, 5), pcie_lanes_of(28e9, 4)
    (16, 16, 16, None)
    """
    for lanes in (1, 2, 4, 8, 16):
        if 0.99 * pcie_bandwidth(generation, lanes) <= bandwidth <= 1.01 * _PCIE_GT[generation] * 1e9 * lanes / 8:
            return lanes
    return None


def pcie_spelling_of(bandwidth: float, generation: int) -> int | None:
    """The width (lanes) of the ``generation`` PCIe link whose line rate or signalling rate a
    link written at ``bandwidth`` B/s per direction spells, as datasheets round them (to
    0.1 %: Gen5 x16 as 63, 63.02 or 64 GB/s); None for any other rate, a link's own.

    >>> pcie_spelling_of(63e9, 5), pcie_spelling_of(64e9, 5), pcie_spelling_of(64.6e9, 5), pcie_spelling_of(121e9, 6)
    (16, 16, None, 16)
    """
    for lanes in (1, 2, 4, 8, 16):
        if any(abs(bandwidth / rate - 1) <= 1e-3 for rate in (pcie_bandwidth(generation, lanes),
                                                             _PCIE_GT[generation] * 1e9 * lanes / 8)):
            return lanes
    return None


def pcie_generation_of(bandwidth: float, gpu: str | None = None) -> int:
    """The PCIe generation of a link of ``bandwidth`` B/s (per direction): the generation of
    ``gpu`` (a GPU at one end, of a named generation) when given, else 6 above Gen5 x16's
    signalling rate (64 GB/s, which no Gen5 link reaches), else 5 (Gen3-5 share one encoding,
    so which of them does not change NCCL's figure).

    >>> pcie_generation_of(121e9), pcie_generation_of(64e9), pcie_generation_of(60.5e9, "b300")
    (6, 5, 6)
    """
    if gpu in GPUS and GPUS[gpu].pcie_generation:
        return GPUS[gpu].pcie_generation
    return 6 if bandwidth > _PCIE_GT[5] * 1e9 * 16 / 8 else 5
