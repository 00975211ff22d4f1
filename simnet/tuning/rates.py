"""Effective link rates: what NCCL's topology model assumes each link class delivers.

NVLink runs at NCCL's per-link figure over the datasheet's (``topo.h`` SMxx_NVLINK_BW:
20.0 of 25 GB/s on A100, 20.6 of 25 on H100/H200, 40.1 of 50 on B200), an AMD GPU's xGMI
link at RCCL's (``topo.h`` GFX94X/GFX95X_XGMI_WIDTH: 48 GB/s; 48 of 64 on MI300X; where the
line rate is not public, at most 48 GB/s of what the link is written at), PCIe at NCCL's
``width x speed / 80`` over the line rate (0.76: x16 Gen5 is 48 of 63 GB/s, ``topo.cc``
kvDictPciGen, v2.30.7 :545-557, :657; Gen6 0.79, 96 of 121 GB/s: its FLIT encoding is not
Gen3-5's), the network at line rate (``net.bw = Mb/s / 8000``, ``topo.cc``), but a GPU's own
cable to the network (the GPU its own NIC) at most at its PCIe generation's x16 figure, the
link its NIC would sit behind (48 GB/s under a 400 Gb/s H100 cable).
"""

from __future__ import annotations

import numpy as np

from simnet.topology.hardware import (
    GPUS,
    NVLINK,
    PCIE,
    nvlink_efficiency,
    pcie_effective,
    pcie_efficiency,
    pcie_lanes_of,
)

__all__ = ["effective_capacity", "efficiency", "nccl_reading"]


def efficiency(topology) -> np.ndarray:
    """Effective / line rate of every directed link of ``topology`` (one read-only array per network)."""
    return topology.derived("efficiency", _efficiency)


def _efficiency(topology) -> np.ndarray:
    factor = np.ones(len(topology.links))
    for i, (u, v) in enumerate(topology.links):
        kind = topology.link_type[i]
        if kind == NVLINK:
            gpu = u if topology.kind(u) == "gpu" else v
            model = topology.gpu_model(gpu) if topology.kind(gpu) == "gpu" else None
            if model in GPUS and GPUS[model].nvlink_links and not GPUS[model].nvlink_link_rate:
                # no public line rate: one xGMI link of a mesh, at RCCL's per-link figure at most
                factor[i] = min(1.0, GPUS[model].nccl_link_rate / topology.capacity[i])
            else:
                factor[i] = nvlink_efficiency(model)
        elif kind == PCIE:  # the generation's own figure: Gen6's FLIT encoding is not Gen3-5's
            factor[i] = pcie_efficiency(topology.pcie_generation(i))
        elif (topology.kind(u) == "gpu" or topology.kind(v) == "gpu") and \
                (model := topology.gpu_model(u if topology.kind(u) == "gpu" else v)) in GPUS:
            # a GPU cabled straight to the network is its own NIC: the cable stands for the GPU's PCIe
            # link to a NIC too, which NCCL reads at the generation's figure (an unnamed GPU: none assumed)
            factor[i] = min(1.0, pcie_effective(GPUS[model].pcie_generation) / topology.capacity[i])
    factor.flags.writeable = False  # shared by every view of the network
    return factor


def nccl_reading(topology) -> np.ndarray:
    """B/s per directed link as NCCL's topology detection reads it, for its search and model
    (``simnet.tuning.search.system_of``): ``effective_capacity``, but a PCIe link written at a
    standard link's rate (``pcie_lanes_of``: 31.5 or 32 GB/s for Gen4 x16) at that link's
    figure exactly. NCCL reads a PCIe link's negotiated speed and width, never its throughput
    (v2.30.7 topo.cc kvDictPciGen, :545-557), so every way of writing one link's rate gives
    NCCL one figure: 31.5 GB/s read as 23.994 GB/s fell below the search's 24 GB/s step and
    opened other rings than 31.5077 does. (``Topology`` runs such a link at the standard
    link's line rate; here its figure is NCCL's exactly, whatever the floating point of
    line rate x efficiency.) The replay keeps ``effective_capacity``."""
    return topology.derived("nccl_reading", _nccl_reading)


def _nccl_reading(topology) -> np.ndarray:
    reading = effective_capacity(topology).copy()
    for i in np.flatnonzero(topology.link_type == PCIE):
        generation = topology.pcie_generation(i)
        lanes = pcie_lanes_of(topology.capacity[i], generation)
        if lanes is not None:
            reading[i] = pcie_effective(generation, lanes)
    reading.flags.writeable = False
    return reading


def effective_capacity(topology) -> np.ndarray:
    """B/s per directed link as NCCL's model assumes it (see the module docstring); one
    read-only array per network."""
    return topology.derived("effective_capacity", _effective_capacity)


def _effective_capacity(topology) -> np.ndarray:
    capacity = topology.capacity * efficiency(topology)
    capacity.flags.writeable = False
    return capacity
