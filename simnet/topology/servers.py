"""A catalogue of real servers and cloud instances, by the names their vendors sell them
under: ``server: p5.48xlarge`` on a generator sets the GPU generation and count, the trays
of a multi-node NVLink rack, and the GPU fabric's NICs as NCCL sees them (after a network
plugin's fusion) with their transport and the latency the plugin reports. Keys written in
the generator win over the catalogue.

Every fact names its public source: a vendor's datasheet, instance data or reference
architecture, or the file of the network plugin (repository@commit:path). Abbreviations:
KIT = aws/karpenter-provider-aws@692ccdd0:website/content/en/docs/reference/instance-types.md
(AWS's instance data, generated from EC2); PLAT = aws/aws-ofi-nccl@5b1f6dd4:src/platform-aws.cpp
(the plugin's per-platform table: protocol, NIC grouping and ``.latency``); MLC-x =
mlcommons/training_results NVIDIA/systems/*.json (NVIDIA's system descriptions);
OCI-SHAPES = docs.oracle.com Compute shapes, Bare Metal GPU shapes table; OCI-NCCL =
oracle-quickstart/oci-hpc@b5285a68:playbooks/roles/nccl-conf/templates (the NCCL settings
OCI's HPC stack writes per shape). AMD Instinct servers: ROCM-ARCH =
ROCm/ROCm@e396b489:docs/conceptual/gpu-arch/mi300.md; AMD-NICS =
rocm.docs.amd.com/projects/ai-ecosystem/en/latest/inference/distributed/sglang-mori-recipe.html
(AMD's cluster recipe); OCI-AMD = oracle-quickstart/oci-gpu-quickstarts@6a0abdc:amd/;
OCI-RCCL = oracle-quickstart/oci-hpc-oke@61d210a:docs/recommended-nccl-rccl-parameters-by-shape.md;
OCI-TOPO-H100 = oracle-quickstart/oci-hpc@7f6f2740:samples/gpu/H100-topology.xml and OCI-TOPO-B4 =
oracle-quickstart/oci-hpc@99d57096:samples/gpu/topo-flattened-b4.xml (OCI's NCCL topology files).

>>> SERVERS["p5.48xlarge"].nics, SERVERS["p5.48xlarge"].nic_bandwidth
(8, '400 Gb/s')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Server", "SERVERS", "SERVER_NAMES"]


@dataclass(frozen=True)
class Server:
    """One product: ``gpus`` of generation ``gpu`` (``gpus_per_tray`` per compute tray of a
    multi-node NVLink rack), ``nics`` GPU-fabric NICs per server of ``nic_bandwidth`` each
    (a quantity with its unit) as NCCL sees them, speaking ``transport``, with the latency
    the network plugin reports (``net_latency``, none for NCCL's own IB transport, which
    reports 0); ``hardware`` says what is physically there; ``sources`` cite each fact;
    ``plugin`` is the network plugin the collective library loads for those NICs, as its
    vendor names it (None: the library's own IB verbs transport); ``plugin_latency`` the
    latency that plugin reports to NCCL (a tuning input, shown by ``simnet servers``).
    ``net_latency`` is what the generator writes on the NICs (a network step's latency, for
    NCCL's pick and the replay alike) only where the reported figure is also what a step
    takes; elsewhere the transport's own figures stand (``transport: efa``: 75 us reported,
    20 us a step, AWS's model of P5)."""

    name: str
    vendor: str
    product: str
    gpu: str
    gpus: int
    nics: int
    nic_bandwidth: str
    transport: str
    hardware: str
    sources: tuple[str, ...]
    net_latency: str | None = None
    gpus_per_tray: int | None = None
    plugin: str | None = None
    plugin_latency: str | None = None


def _aws(name, product, gpu, nics, bandwidth, hardware, latency, fusion, per_step=False):
    """An AWS instance; ``per_step``: the plugin's reported ``latency`` is also what a network
    step takes there (first-generation EFA, p4d/p4de: their public small-message times match
    it, docs/validation.md); on later EFA a step takes the transport's 20 us, AWS's own
    model (aws-ofi-nccl src/tuner/nccl_ofi_model.cpp), whatever the plugin reports."""
    return Server(name, "AWS", product, gpu, 8, nics, bandwidth, "efa", hardware, (
        f"KIT ### `{name}`: GPU name, count and EFA bandwidth", fusion,
        f"PLAT ({name} entry): .latency = {latency.split()[0]}"), net_latency=latency if per_step else None,
        plugin="aws-ofi-nccl", plugin_latency=latency)


_GROUPED = ("PLAT: the RDMA protocol groups the EFA NICs nearest each GPU into one NCCL device whose speed is "
            "one NIC's times the group (aws-ofi-nccl@fa8d6886 src/nccl_ofi_rdma.cpp:410-413)")
_OWN_IB = "NCCL's IB transport reports no latency (NVIDIA/nccl src/transport/net_ib/init.cc: props->latency = 0)"
_PORTS = ("NCCL merges the ports of one NIC into one device of their summed speed: NVIDIA/nccl v2.21.5 "
          "src/transport/net_ib.cc:313 (NCCL_IB_MERGE_NICS defaults to 1), :322-325 (a card's PCI functions share "
          "one path), :371-386 (same path, sys_image_guid and link layer), :478-501 (speeds summed); v2.30.7 "
          "src/graph/topo.cc:1160-1208 (ports of one card are at PATH_PORT), :1738-1744 (NCCL_NET_MERGE_LEVEL "
          "defaults to PORT)")
_RCCL_IB = ("RCCL's IB verbs transport is NCCL's and reports no latency (ROCm/rccl@0cbce2a "
            "src/transport/net_ib.cc:695: props->latency = 0)")

SERVERS: dict[str, Server] = {s.name: s for s in (
    # ------------------------------------------------------------------ NVIDIA
    Server("dgx-a100", "NVIDIA", "NVIDIA DGX A100", "a100", 8, 8, "200 Gb/s", "ib",
           "8 x ConnectX-6 HDR 200 Gb/s (compute), plus 2 for storage", (
               "MLC-A100 (training_results_v1.0 NVIDIA/systems/dgxa100_n8_ngc21.05_merlin_hugectr.json): 8 A100, "
               "8x ConnectX-6 HDR 200 Gb/s", _OWN_IB)),
    Server("dgx-h100", "NVIDIA", "NVIDIA DGX H100", "h100", 8, 8, "400 Gb/s", "ib",
           "8 x ConnectX-7 NDR 400 Gb/s on 4 OSFP ports (compute), plus 2 dual-port for storage", (
               "MLC-H100 (training_results_v4.0 NVIDIA/systems/eos_n8_ngc24.04_pytorch.json); NVIDIA DGX BasePOD "
               "reference architecture, core components", _OWN_IB)),
    Server("dgx-h200", "NVIDIA", "NVIDIA DGX H200", "h200", 8, 8, "400 Gb/s", "ib",
           "8 x ConnectX-7 NDR 400 Gb/s (compute), plus 2 for storage", (
               "MLC-H200 (training_results_v4.0 NVIDIA/systems/h200_ngc24.04_pytorch.json); DGX BasePOD RA", _OWN_IB)),
    Server("dgx-b200", "NVIDIA", "NVIDIA DGX B200", "b200", 8, 8, "400 Gb/s", "ib",
           "8 x ConnectX-7 single-port 400 Gb/s on 4 OSFP ports, plus 2 BlueField-3 for storage", (
               "NVIDIA DGX B200 user guide, introduction (docs.nvidia.com/dgx/dgxb200-user-guide)", _OWN_IB)),
    Server("hgx-b300", "NVIDIA", "NVIDIA HGX B300 (AI Factory reference architecture)", "b300", 8, 8, "800 Gb/s",
           "roce", "8 x ConnectX-8 SuperNIC, 800 Gb/s per GPU, Spectrum-X Ethernet, rail-optimized", (
               "NVIDIA HGX AI Factory enterprise RA (docs.nvidia.com/reference-architectures/hgx-ai-factory): "
               "'2-8-9-800 ... 8 GPUs, 9 NICs at 800 Gb/s bandwidth per GPU', Spectrum-X", _OWN_IB)),
    Server("gb200-nvl72", "NVIDIA", "NVIDIA GB200 NVL72 rack (18 compute trays)", "gb200", 72, 72, "400 Gb/s", "ib",
           "18 trays of 4 GPUs, each tray 4 x ConnectX-7 NDR 400 Gb/s; 9 NVLink switch trays", (
               "MLC-GB200 (training_results_v5.1 NVIDIA/systems/tyche_ngpu72_ngc25.09_nemo.json): 18 nodes, "
               "4 accelerators per node, 'NVLINK Gen5 1800 GB/s + NVSWITCH Gen5', '4x ConnectX-7 IB NDR 400 Gb/s'",
               _OWN_IB), gpus_per_tray=4),
    Server("gb300-nvl72", "NVIDIA", "NVIDIA GB300 NVL72 rack (18 compute trays)", "gb300", 72, 72, "800 Gb/s", "ib",
           "18 trays of 4 GPUs, each tray 4 x ConnectX-8 XDR 800 Gb/s", (
               "MLC-GB300 (training_results_v5.1 NVIDIA/systems/theia_ngpu72_ngc25.09_nemo.json): 18 nodes, "
               "4 accelerators per node, '4x ConnectX-8 IB XDR 800 Gb/s'", _OWN_IB), gpus_per_tray=4),
    # ------------------------------------------------------------------ AWS
    _aws("p4d.24xlarge", "Amazon EC2 P4d", "a100", 4, "100 Gb/s",
         "4 x 100 Gb/s EFA (first generation); a PCIe switch holds 2 GPUs and 1 EFA", "75 us",
         "PLAT: SENDRECV protocol, one NCCL device per EFA; aws-ofi-nccl@0bac2382 topology/p4d-24xl-topo.xml: "
         "2 GPUs and 1 NIC per PCIe switch", per_step=True),
    _aws("p4de.24xlarge", "Amazon EC2 P4de", "a100", 4, "100 Gb/s",
         "4 x 100 Gb/s EFA; a PCIe switch holds 2 GPUs and 1 EFA", "75 us",
         "PLAT: SENDRECV protocol, one NCCL device per EFA; aws-ofi-nccl@0bac2382 topology/p4de-24xl-topo.xml",
         per_step=True),
    _aws("p5.48xlarge", "Amazon EC2 P5", "h100", 8, "400 Gb/s",
         "32 x 100 Gb/s EFA, 4 behind each GPU's PCIe switch, presented as 8 devices of 400 Gb/s", "75 us", _GROUPED),
    _aws("p5e.48xlarge", "Amazon EC2 P5e", "h200", 8, "400 Gb/s",
         "32 x 100 Gb/s EFA, presented as 8 devices of 400 Gb/s (the p5 platform entry)", "75 us", _GROUPED),
    _aws("p5en.48xlarge", "Amazon EC2 P5en", "h200", 8, "400 Gb/s",
         "16 x 200 Gb/s EFA, presented as 8 devices of 2 NICs (400 Gb/s)", "35 us", _GROUPED),
    _aws("p6-b200.48xlarge", "Amazon EC2 P6-B200", "b200", 8, "400 Gb/s",
         "8 x 400 Gb/s EFA, one per GPU", "35 us", _GROUPED),
    # ------------------------------------------------------------------ Azure
    Server("Standard_ND96asr_v4", "Azure", "Azure ND A100 v4", "a100", 8, 8, "200 Gb/s", "ib",
           "8 x 200 Gb/s HDR InfiniBand, one per GPU; 2 GPUs and 2 NICs per PCIe switch", (
               "MicrosoftDocs azure-compute-docs ndasra100v4-series.md: 8 A100, 8 x 200 Gb/s HDR InfiniBand",
               "Azure/azhpc-images@4a4565a0 topology/ndv4-topo.xml (Azure's NCCL_TOPO_FILE)", _OWN_IB)),
    Server("Standard_ND96isr_H100_v5", "Azure", "Azure ND H100 v5", "h100", 8, 8, "400 Gb/s", "ib",
           "8 x 400 Gb/s Quantum-2 ConnectX-7 InfiniBand, one per GPU and PCIe switch", (
               "MicrosoftDocs azure-compute-docs@a18807c4 ndh100v5-series-summary.md",
               "Azure/azhpc-images@992d7759 topology/ndv5-topo.xml", _OWN_IB)),
    Server("Standard_ND96isr_H200_v5", "Azure", "Azure ND H200 v5", "h200", 8, 8, "400 Gb/s", "ib",
           "8 x 400 Gb/s Quantum-2 ConnectX-7 InfiniBand, one per GPU", (
               "MicrosoftDocs azure-compute-docs@a18807c4 nd-h200-v5-series-summary.md",
               "Azure/azhpc-images setup_sku_customizations.sh: the ND H100 v5 topology file", _OWN_IB)),
    # ------------------------------------------------------------------ Google Cloud
    Server("a3-ultragpu-8g", "Google Cloud", "Compute Engine A3 Ultra", "h200", 8, 8, "400 Gb/s", "roce",
           "8 x ConnectX-7, 3,200 Gb/s together, GPUDirect RDMA over RoCE, each NIC aligned with a GPU", (
               "cloud.google.com/compute/docs/gpus/gpu-network-bandwidth: A3 Ultra, 8 CX-7, 3,200 Gbps",)),
    Server("a4-highgpu-8g", "Google Cloud", "Compute Engine A4", "b200", 8, 8, "400 Gb/s", "roce",
           "8 x ConnectX-7, 3,200 Gb/s together, GPUDirect RDMA over RoCE, each NIC aligned with a GPU", (
               "cloud.google.com/compute/docs/gpus/gpu-network-bandwidth: A4, 8 CX-7, 3,200 Gbps",)),
    # ------------------------------------------------------------------ OCI
    Server("BM.GPU4.8", "OCI", "OCI BM.GPU4.8", "a100", 8, 8, "200 Gb/s", "roce",
           "1,600 Gb/s of RDMA (RoCE v2) as 16 x 100 Gb/s ports on 8 dual-port NICs, two NICs and two GPUs "
           "under each of 4 PCIe switches; NCCL merges a NIC's two ports into one 200 Gb/s device", (
               "OCI-SHAPES: BM.GPU4.8, 8 A100, RDMA cluster network", "OCI-NCCL bm.gpu4.8: 16 RDMA HCAs in "
               "NCCL_IB_HCA, listed as the first ports (mlx5_0,2,6,...,16) then the second (mlx5_1,3,7,...,17)",
               "OCI-TOPO-B4 (the same 16-port A100 host, BM.GPU.B4.8): 8 NIC PCI devices (class 0x020000), two "
               "beside two GPUs under each of 4 PCIe switches, for its 16 HCAs: two ports per NIC (inferred for "
               "BM.GPU4.8 from the shared layout)", _PORTS, _OWN_IB)),
    Server("BM.GPU.H100.8", "OCI", "OCI BM.GPU.H100.8", "h100", 8, 8, "400 Gb/s", "roce",
           "8 x 2 x 200 Gb/s RDMA (RoCE v2): one dual-port ConnectX-7 beside each GPU, whose two 200 Gb/s ports "
           "NCCL merges into one 400 Gb/s device", (
               "OCI-SHAPES: BM.GPU.H100.8, '8 x 2 x 200 Gbps' RDMA", "OCI-NCCL h100: 16 HCAs in NCCL_IB_HCA",
               "OCI-TOPO-H100: each GPU's PCIe switch holds one ConnectX-7 (PCI 15b3:1021) whose two nets are "
               "mlx5_0/mlx5_1, mlx5_3/mlx5_4, ... as its port 1 and port 2 under one guid", _PORTS, _OWN_IB)),
    Server("BM.GPU.H200.8", "OCI", "OCI BM.GPU.H200.8", "h200", 8, 8, "400 Gb/s", "roce",
           "8 x 400 Gb/s RDMA (RoCE v2)", ("OCI-SHAPES: BM.GPU.H200.8, '8 x 400 Gbps' RDMA",
                                            "OCI-NCCL h200: 8 HCAs in NCCL_IB_HCA")),
    Server("BM.GPU.B200.8", "OCI", "OCI BM.GPU.B200.8", "b200", 8, 8, "400 Gb/s", "roce",
           "8 x 400 Gb/s RDMA (RoCE v2)", ("OCI-SHAPES: BM.GPU.B200.8, '8 x 400 Gbps' RDMA",
                                            "oracle-quickstart/oci-hpc@90e8205e nccl-conf/templates/b200: 8 HCAs")),
    # ------------------------------------------------------------------ AMD Instinct (RCCL)
    Server("amd-mi300x-platform", "AMD", "AMD Instinct MI300X platform (8 OAM)", "mi300x", 8, 8, "400 Gb/s", "roce",
           "8 MI300X OAM, fully connected over xGMI, on PCIe Gen5 x16 to dual AMD EPYC hosts; 8 x 400 Gb/s RDMA "
           "NICs, one per GPU (AMD Pensando Pollara 400, ConnectX-7 or Broadcom Thor 2)", (
               "ROCM-ARCH l.119-125: '8 fully interconnected MI300X OAM modules', seven Infinity Fabric links each, "
               "PCIe Gen 5 x16, 'AMD EPYC processors in a dual-socket configuration'",
               "AMD-NICS: '8x RDMA-capable NICs per node (AMD Pensando Pollara 400, NVIDIA Mellanox ConnectX-7, or "
               "Broadcom Thor 2), providing a dedicated 1:1 mapping between GPUs and network interfaces'", _RCCL_IB),
           plugin="none for ConnectX-7 and Thor 2 (RCCL's IB verbs); AMD's ANP (librccl-anp.so) for Pollara 400"),
    Server("Standard_ND96isr_MI300X_v5", "Azure", "Azure ND MI300X v5", "mi300x", 8, 8, "400 Gb/s", "ib",
           "8 x 400 Gb/s NVIDIA Quantum-2 ConnectX-7 InfiniBand, one per GPU, GPUDirect RDMA; 4th Gen Intel Xeon "
           "host (simnet's RCCL model takes the AMD platform's EPYC: docs/model.md)", (
               "MicrosoftDocs/azure-docs@5204bbc0 articles/virtual-machines/sizes/gpu-accelerated/includes/"
               "nd-mi300x-v5-series-summary.md: 8 MI300X, 'dedicated, topology-agnostic 400 Gb/s NVIDIA Quantum-2 "
               "CX7 InfiniBand connection' per GPU, '3.2Tb/s of interconnect bandwidth per VM'",
               "MicrosoftDocs/azure-docs@0f100e6b nd-mi300x-v5-series.md: 'Infiniband: Supported, GPUDirect RDMA, "
               "8x400 Gigabit NDR', 96 4th Gen Intel Xeon cores", _RCCL_IB)),
    Server("BM.GPU.MI300X.8", "OCI", "OCI BM.GPU.MI300X.8", "mi300x", 8, 8, "400 Gb/s", "roce",
           "8 x 400 Gb/s RDMA (RoCE) ConnectX-7 (mlx5), one per GPU; 2 x Intel Xeon Platinum 8480+ host "
           "(simnet's RCCL model takes the AMD platform's EPYC: docs/model.md)", (
               "OCI-AMD MI300X/README-MI300X.md:34: 8 MI300X 192 GB, '8 x 1 x 400 Gb/s = 3.2 Tb/s' RDMA (RoCE), "
               "2 x Intel Xeon Platinum 8480+",
               "OCI-RCCL:192-206: NCCL_IB_HCA==mlx5_0,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_7,mlx5_8,mlx5_9 (8 HCAs), "
               "NCCL_NET_PLUGIN=none", _RCCL_IB), plugin="none (NCCL_NET_PLUGIN=none: RCCL's IB verbs)"),
    Server("BM.GPU.MI355X-v0.8", "OCI", "OCI BM.GPU.MI355X-v0.8 (MI355X-Pollara)", "mi355x", 8, 8, "400 Gb/s", "roce",
           "8 x AMD Pensando Pollara 400 AI NIC (ionic), 8 x 400 Gb/s Ethernet RoCE, one per GPU; 2 x AMD EPYC "
           "9575F", (
               "OCI-AMD MI355X/README-MI355X-Pollara.md:44: 'AMD Pensando Pollara 400 AI NIC, 8x400Gb/s Ethernet = "
               "3.2 Tb/s'; :11 RoCE/RDMA; MI355X/README-MI355X.md:38: 288 GB MI355X, AMD EPYC 9575F (x2)",
               "OCI-RCCL:211-229: NCCL_NET_PLUGIN=librccl-anp.so (AMD's ANP plugin for the Pollara AI NIC, "
               "README-MI355X-Pollara.md:61), NCCL_IB_HCA==ionic_0..ionic_9 (8 HCAs)",
               "the ANP plugin's reported latency was not read: taken as none (RoCE's)"),
           plugin="librccl-anp.so (AMD ANP)"),
    Server("BM.GPU.MI355X-v1.8", "OCI", "OCI BM.GPU.MI355X-v1.8", "mi355x", 8, 8, "400 Gb/s", "roce",
           "8 x 400 Gb/s Mellanox ConnectX-7 RoCE, one per GPU; 2 x AMD EPYC 9575F (Turin)", (
               "OCI-AMD MI355X/README-MI355X.md:39: 'Mellanox ConnectX-7, 8 1x400Gb/s=3.2 Tb/s', 2 x AMD TURIN 9575F",
               "OCI-RCCL:232-243: NCCL_IB_HCA==mlx5_0..mlx5_7 (8 HCAs)", _RCCL_IB),
           plugin="none (RCCL's IB verbs)"),
)}
SERVER_NAMES = tuple(SERVERS)
