"""Effective link rates: what NCCL's topology model assumes each link class delivers.

NVLink runs at NCCL's per-link figure over the datasheet's (``topo.h`` SMxx_NVLINK_BW:
20.0 of 25 GB/s on A100, 20.6 of 25 on H100/H200, 40.1 of 50 on B200), an AMD GPU's xGMI
link at RCCL's (``topo.h`` GFX94X/GFX95X_XGMI_WIDTH: 48 GB/s; 48 of 64 on MI300X; where the
line rate is not public, at most 48 GB/s of what the link is written at), PCIe at NCCL's
``width x speed / 80`` over the line rate (0.76: x16 Gen5 is 48 of 63 GB/s, ``topo.cc``
kvDictPciGen, v2.30.7 :545-557, :657; Gen6 0.79, 96 of 121 GB/s: its FLIT encoding is not
Gen3-5's), the network at line rate (``net.bw = Mb/s / 8000``, ``topo.cc``).
"""

from __future__ import annotations

import numpy as np

from simnet.topology.hardware import GPUS, NVLINK, PCIE, nvlink_efficiency, pcie_efficiency, pcie_generation_of

__all__ = ["effective_capacity", "efficiency"]


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
            gpu = next((topology.gpu_model(end) for end in (u, v) if topology.kind(end) == "gpu"), None)
            factor[i] = pcie_efficiency(pcie_generation_of(topology.capacity[i], gpu))
    factor.flags.writeable = False  # shared by every view of the network
    return factor


def effective_capacity(topology) -> np.ndarray:
    """B/s per directed link as NCCL's model assumes it (see the module docstring); one
    read-only array per network."""
    return topology.derived("effective_capacity", _effective_capacity)


def _effective_capacity(topology) -> np.ndarray:
    capacity = topology.capacity * efficiency(topology)
    capacity.flags.writeable = False
    return capacity
