"""Performance models: how a schedule's transfers are timed on the fluid network.

* ``nccl`` (the default): NCCL's protocols (LL, LL128, Simple), its per-step software
  latency by link class and transport, its effective link rates and its bandwidth
  ceiling per algorithm (``simnet.model.nccl``), so times are what nccl-tests measures;
* ``rccl``: the same model on AMD Instinct GPUs, with RCCL's tables and rules
  (``simnet.tuning.rccl``): the default wherever the ranks' GPUs are AMD's;
* ``ideal``: line rate and no software costs: the network model alone, on which every
  algorithm's closed form holds exactly; NCCL's Tree and NVLSTree, and the chains of
  Broadcast and Reduce over the ring, pipeline in NCCL's finest pieces (of any protocol) unless
  ``chunk_size`` says otherwise, so ideal is a lower bound of nccl for them.

The runner asks the model for a ``ModelPlan`` before building a schedule (the protocol,
and default schedule options such as NCCL's chunk size), then for the schedule's
``Timing`` before replaying it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simnet.model import nccl
from simnet.model.nccl import NcclPlan
from simnet.model.timing import Timing
from simnet.schedule.algorithms.innetwork import NVLS_CHUNK
from simnet.schedule.transfers import Schedule
from simnet.topology.graph import Topology
from simnet.topology.hardware import AMD_GPUS, GPUS
from simnet.tuning import enqueue, search, tables

__all__ = ["MODELS", "DEFAULT_MODEL", "ModelPlan", "plan", "timing", "lane_timing", "library_model", "resolve_model"]

MODELS = ("nccl", "rccl", "ideal")
DEFAULT_MODEL = None
"""No model named: the collective library of the ranks' GPUs (``library_model``)."""


@dataclass(frozen=True)
class ModelPlan:
    """A model's decisions for one collective: ``protocol`` (None under ``ideal``), the
    schedule ``options`` to build with, and ``detail``, what the nccl model needs to time
    it (None under ``ideal``)."""

    model: str
    protocol: str | None
    options: dict
    detail: NcclPlan | None = field(default=None, repr=False)


def _check(model: str) -> None:
    if model not in MODELS:
        raise ValueError(f"model: {model!r} is not one of {', '.join(MODELS)}")


def library_model(topology: Topology) -> str:
    """The model of the library the ranks' GPUs run: ``rccl`` for AMD Instinct GPUs, else
    ``nccl`` (unnamed GPUs too); ValueError for AMD and other GPUs in one communicator."""
    models = {topology.gpu_model(g) for g in topology.gpus}
    amd = sorted(m for m in models if m in GPUS and GPUS[m].amd)
    if amd and len(amd) < len(models):
        other = sorted(str(m) for m in models - set(amd))
        raise ValueError(f"model: the ranks mix AMD GPUs ({', '.join(amd)}) with others ({', '.join(other)}): no "
                         "collective library runs one communicator over both; choose GPUs of one vendor (gpus:)")
    return "rccl" if amd else "nccl"


def resolve_model(model: str | None, topology: Topology) -> str:
    """``model`` checked against the ranks' GPUs, or their library's (``library_model``)
    when None: ``nccl`` on AMD GPUs (which run RCCL) and ``rccl`` on others are refused."""
    if model is not None:
        _check(model)
    library = library_model(topology)
    if model is None or model in ("ideal", library):
        return model or library
    gpus = sorted({str(topology.gpu_model(g)) if topology.gpu_model(g) else "GPUs without a gpu: generation"
                   for g in topology.gpus})
    if model == "nccl":
        raise ValueError(f"model: nccl: the GPUs are AMD Instinct ({', '.join(gpus)}), which run RCCL, not NCCL: "
                         "take the rccl model, or leave the model out (the GPUs' library is the default)")
    raise ValueError(f"model: rccl: RCCL's tables are AMD Instinct GPUs' (gpu: {' | '.join(AMD_GPUS)}), these are "
                     f"{', '.join(gpus)}: take the nccl model, or leave the model out (the GPUs' library is the "
                     "default)")


def plan(model: str, topology: Topology, algorithm: str, size: int, options: dict,
         accepts: tuple[str, ...], nccl_proto: str | None = None, calibration=None,
         function: str = "AllReduce", message: int | None = None, system=None) -> ModelPlan:
    """The model's decisions before ``algorithm``'s schedule is built (``accepts``: its
    options; ``nccl_proto``: an NCCL_PROTO value constraining the protocol;
    ``calibration``: a ``Calibration`` refining the nccl model; ``function``: the NCCL
    function of the collective; ``message``: the bytes of one point-to-point send, default
    ``size``; ``system``: what NCCL sees of the topology under its environment, default
    the topology's own ``tuning.system_of``)."""
    _check(model)
    if model == "ideal":
        options = dict(options)
        name = tables.native(function, algorithm)
        chain = name in ("Tree", "NVLSTree") or (name == "Ring" and function in ("Broadcast", "Reduce"))
        if chain and "chunk_size" in accepts and options.get("chunk_size") is None and size > 0:
            # a tree (NVLSTree's too), and the chain Broadcast and Reduce run around the ring, pipeline in
            # NCCL's finest pieces, of any protocol, not in whole buffers stored and forwarded hop by hop:
            # ideal (no protocol costs) is then a lower bound of nccl. AllReduce's ring keeps one
            # piece per step, the textbook ring of the closed form (docs/model.md says when NCCL's
            # pipelined ring beats it)
            system = system or search.system_of(topology)
            pieces = [nccl.pipeline_chunk(system, name, protocol, size, function) for protocol in tables.PROTOCOLS]
            # (NVLSTree's own pieces, NVLS_CHUNK, where finer than NCCL's: its builder's, as before)
            options["chunk_size"] = min(pieces + ([NVLS_CHUNK] if name == "NVLSTree" else []))
        if "send_channels" in accepts and options.get("send_channels") is None:
            # NCCL's send/recv cuts each send over its channels (nccl.plan): the same connections at
            # line rate, so ideal stays a lower bound of nccl where they leave through several NICs
            system = system or search.system_of(topology)
            if system.library == "nccl":
                options["send_channels"] = enqueue.send_channels(system, size if message is None else message)
        return ModelPlan("ideal", None, options)
    decided = nccl.plan(topology, algorithm, size, options, accepts, nccl_proto, calibration, function, message,
                        system)
    return ModelPlan(model, decided.protocol, decided.options, decided)


def timing(decided: ModelPlan, schedule: Schedule, topology: Topology) -> Timing:
    """How ``schedule`` is timed under the plan's model."""
    if decided.model == "ideal":
        return Timing()
    return nccl.timing(schedule, topology, decided.detail)


def lane_timing(decided: ModelPlan, program, topology: Topology) -> Timing:
    """How a ``LaneProgram``'s lanes are timed under the plan's model (arrays per lane): lanes
    of one connection (channel, sender, receiver; NVLS's switch to head on the way up and
    down) are timed as the connection, by all of them carry, as ``timing`` times a schedule."""
    if decided.model == "ideal":
        return Timing()
    _, which = nccl.connections(program.channel, program.src, program.dst)
    carried = np.bincount(which, weights=program.carried())[which]
    return nccl.connection_timing(decided.detail, topology, program.nodes, program.channel, program.src, program.dst,
                                  carried, program.info)
