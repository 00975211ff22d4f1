"""The training step of a transformer under data, tensor, pipeline and expert parallelism.

Compute follows Megatron-LM's accounting (Narayanan et al., "Efficient Large-Scale Language
Model Training on GPU Clusters Using Megatron-LM", SC21, section 5.1): a forward pass costs
2 FLOPs per parameter per token plus the attention scores, ``2 x 2 x s x h`` per token and
layer (QK^T and the attention-weighted values, counted in full), and the backward pass twice
the forward. A mixture-of-experts layer runs ``top_k`` of its experts per token. MFU is
those model FLOPs per second over the GPUs' dense peak (PaLM's definition, Chowdhery et
al. 2022, appendix B: no recomputation counted).

Parallelism (Megatron's rank order, tensor-parallel ranks adjacent): rank = ``t + tp x (d +
dp x p)`` for tensor rank t, data rank d and pipeline stage p, so a TP group is ``tp``
consecutive GPUs (inside a server when tp divides its GPUs) and pipeline stages are the
farthest apart. Expert-parallel groups are ``ep`` consecutive data ranks.

Communication per micro-batch of ``b`` sequences of ``s`` tokens, activations of ``a``
bytes per value (all simulated, every group of a kind at once on the shared fabric,
``simnet.run.groups.simulate_groups``):

* TP: 2 AllReduces of ``b s h a`` bytes per layer forward and 2 backward (Shoeybi et al.
  2019, the f and g operators), on the critical path;
* EP: 2 AllToAlls (dispatch, combine) of ``b s k h a`` bytes per MoE layer forward and 2
  backward, on the critical path;
* PP: per micro-batch a forward activation of ``b s h a`` bytes into every stage and a
  backward gradient as large out of it, each on the critical path, sent as Megatron-LM
  sends it across a stage boundary (Narayanan et al. SC21, section 4.1, "scatter/gather
  communication optimization"): every TP rank sends its ``1/tp`` share to the rank of the
  same TP index in the next stage, which all-gathers the whole tensor inside its TP group.
  The sends are simulated as every stage sending to the next at once (the moment of 1F1B's
  steady state when all stages forward), so shared NICs and uplinks count;
* DP: the gradient AllReduce of each GPU's parameter shard (dense over the data group,
  experts over the expert-data group) after the last micro-batch, overlapping that
  micro-batch's backward compute (with ``virtual_stages`` v only its last chunk's, 1/v
  of it); with FSDP instead, per layer an AllGather of its parameters before its forward
  and before its backward, and a ReduceScatter of its gradients after the backward,
  each overlapping the neighbouring layer's compute (the next layer's gather prefetched).

The step is 1F1B's: ``(m + p - 1) x (t_f + t_b)`` for m micro-batches over p stages, the
slowest stage's forward and backward times per micro-batch (compute, TP and EP exchanges,
the stage-boundary send, FSDP's exposed part), plus the DP gradient sync not hidden. With
``virtual_stages`` v (Megatron's interleaved schedule, Narayanan et al. SC21 section
2.2.2) every stage holds v chunks of its layers, the bubble shrinks to ``(p - 1) / v``
slots and every micro-batch crosses v stage boundaries each way instead of one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from simnet.model.interface import resolve_model
from simnet.run.groups import simulate_groups
from simnet.run.point import calibration_of
from simnet.topology.hardware import GPUS
from simnet.units import DTYPE_BYTES
from simnet.workloads.transformer import Parallelism, Transformer, exchange_bytes, forward_seconds, rank_groups

__all__ = ["step_time", "training_step", "TrainingStep", "one_f_one_b"]


@dataclass(frozen=True)
class TrainingStep:
    """One step's figures (seconds unless named otherwise). ``exposed`` holds the
    communication on the critical path per kind (tp, ep, pp, fsdp over the m micro-batch
    slots; dp after them) and the pipeline ``bubble`` ((p - 1) / v slots), so that ``compute_s``
    plus every part of ``exposed`` is ``step_s``; ``collectives`` lists each simulated
    exchange: kind, collective, bytes, groups, algorithm, time. ``slot`` holds the parts of
    one micro-batch's ``forward`` and ``backward`` on the slowest stage (compute, tp, ep,
    fsdp, pp) and ``dp_sync_s`` the data-parallel gradient sync, for the step's timeline;
    ``warnings`` what its exchanges say (``calibration_capped``), once a link."""

    gpus: int
    parallelism: dict
    step_s: float
    compute_s: float
    exposed: dict
    tokens_per_step: int
    tokens_per_s: float
    model_flops: float  # per step
    mfu: float
    collectives: list
    slot: dict
    dp_sync_s: float
    warnings: list = field(default_factory=list)  # what the exchanges say (a calibration factor the wire cut short)


def one_f_one_b(stages: int, micro_batches: int, forward_s: float, backward_s: float,
                chunks: int = 1) -> list[tuple]:
    """Megatron's 1F1B pipeline schedule, timed: ``(stage, "F" | "B", micro-batch, chunk,
    start, end)`` for every pass. Stage k runs warm-up forwards, then alternates a forward
    and a backward, then drains its backwards; a forward waits for the stage before (stage
    0's chunk c for the last stage's chunk c-1), a backward for the stage after (the last
    stage's for stage 0's next chunk, or its own forward). Without interleaving (``chunks``
    1) stage k warms up with ``p - k - 1`` forwards and the schedule lasts
    ``(m + p - 1) x (t_f + t_b)``; with ``chunks`` v model chunks per stage, each pass a
    chunk (``t_f / v``, ``t_b / v``) in Megatron's interleaved order (micro-batches in
    groups of p, ``2 (p - k - 1) + (v - 1) p`` warm-up passes), ``(m + (p - 1) / v) x
    (t_f + t_b)`` (Narayanan et al., SC21, section 2.2.2).

    >>> max(end for *_, end in one_f_one_b(4, 8, 1.0, 2.0))
    33.0
    >>> max(end for *_, end in one_f_one_b(4, 8, 1.0, 2.0, chunks=2))
    28.5
    """
    p, v = stages, chunks
    if v > 1 and micro_batches % p:
        raise ValueError(f"chunks: interleaving needs micro-batches in groups of {p} stages, not {micro_batches}")
    total = micro_batches * v

    def task(i: int, backward: bool) -> tuple[int, int]:  # a stage's i-th forward or backward: (micro, chunk)
        chunk = (i // p) % v
        return (i // (p * v)) * p + i % p, v - 1 - chunk if backward else chunk

    order = []
    for k in range(p):
        warm = min(p - k - 1 if v == 1 else 2 * (p - k - 1) + (v - 1) * p, total)
        ops = [("F", *task(i, False)) for i in range(warm)]
        for j in range(total - warm):
            ops += [("F", *task(warm + j, False)), ("B", *task(j, True))]
        order.append(ops + [("B", *task(i, True)) for i in range(total - warm, total)])
    ends: dict[tuple, float] = {}
    passes = []
    position, free = [0] * p, [0.0] * p
    while len(passes) < 2 * p * total:
        for k in range(p):
            if position[k] == len(order[k]):
                continue
            kind, i, c = order[k][position[k]]
            if kind == "F":
                after = ("F", i, c, k - 1) if k > 0 else ("F", i, c - 1, p - 1) if c > 0 else None
            elif k < p - 1:
                after = ("B", i, c, k + 1)
            else:
                after = ("B", i, c + 1, 0) if c < v - 1 else ("F", i, c, k)
            if after is not None and after not in ends:
                continue
            start = max(free[k], ends[after] if after else 0.0)
            free[k] = ends[(kind, i, c, k)] = start + (forward_s if kind == "F" else backward_s) / v
            passes.append((k, kind, i, c, start, free[k]))
            position[k] += 1
    return passes


def step_time(topology, model: Transformer, par: Parallelism, *, gpu_flops: float | None = None,
              efficiency: float, dtype: str = "bf16", grad_dtype: str = "fp32", gpus: list[str] | None = None,
              comm_model: str | None = None, env=None, calibration=None) -> TrainingStep:
    """Simulate the communication of one training step of ``model`` laid out as ``par`` on
    ``topology``'s GPUs (or ``gpus``) and compose the step (see the module docstring).

    ``gpu_flops``: dense peak FLOP/s per GPU (default: the GPUs' generation's BF16 peak,
    ``hardware.GPUS``); ``efficiency``: the fraction of it the model's kernels reach;
    ``dtype``: activations and FSDP parameters; ``grad_dtype``: gradients reduced by DP.
    """
    gpus = list(topology.gpus if gpus is None else gpus)
    par = par.resolved(len(gpus), model)
    if gpu_flops is None:
        gpu_flops = GPUS[topology.gpu_model(gpus[0])].bf16_flops
        if not gpu_flops:
            raise ValueError(f"gpu_flops: gpu {topology.gpu_model(gpus[0])}'s dense BF16 peak is in no public source "
                             "simnet cites; give gpu_flops, the dense peak FLOP/s per GPU")
    groups = rank_groups(gpus, par)
    a, g = DTYPE_BYTES[dtype], DTYPE_BYTES[grad_dtype]
    m, b, s = par.micro_batches, par.micro_batch_size, model.sequence
    tokens = b * s
    sizes = exchange_bytes(model, par, a, g)
    layers = model.layers // par.pp
    simulated, said = [], {}

    def exchange(kind: str, collective: str, size: int, among: str | None = None, options: dict | None = None) -> float:
        """Seconds of ``collective`` on ``size`` bytes in every group of ``among`` (default:
        ``kind``) at once, listed under ``kind``."""
        members = groups[among or kind]
        if size <= 0 or not members or len(members[0]) < 2:
            return 0.0
        result = simulate_groups(topology, members, collective, size, model=comm_model, env=env,
                                 calibration=calibration, options=options)
        simulated.append({"kind": kind, "collective": collective, "size_bytes": size, "groups": len(members),
                          "algorithm": result.algorithm, "protocol": result.protocol, "time_s": result.time_s})
        said.update({(w.kind, w.link): w for w in result.warnings if (w.kind, w.link) not in said})
        return result.time_s

    layer_fwd, logits_fwd = model.forward_flops_per_token()
    speed = gpu_flops * efficiency * par.tp  # a TP group splits every layer's work
    compute_f = forward_seconds(model, par, gpu_flops * efficiency)  # the last stage, with the output layer
    layer_f, logits_f = layer_fwd * tokens / speed, logits_fwd * tokens / speed
    activation = sizes["tp"]
    tp_t = exchange("tp", "allreduce", activation)
    ep_t = exchange("ep", "all_to_all", sizes["ep"]) if model.moe else 0.0
    pp_f = pp_b = 0.0
    if par.pp > 1:  # Megatron's scatter/gather across a stage boundary: 1/tp per rank, all-gathered on arrival;
        # activations each stage to the next, gradients back to the previous, the last (first) to none unless
        # the chunks wrap round (virtual stages)
        wrap = par.virtual_stages > 1
        sent = exchange("pp", "send_recv", sizes["pp"], options={"wrap": wrap})
        back = exchange("pp back", "send_recv", sizes["pp"], among="pp", options={"wrap": wrap, "back": True})
        gathered = exchange("pp", "all_gather", activation, among="tp")
        pp_f, pp_b = sent + gathered, back + gathered
    fsdp_f = fsdp_b = 0.0
    if par.fsdp:  # per layer: gather before forward and backward, reduce-scatter after backward, each the next
        # layer's prefetched behind this one's compute; the root unit (the embeddings) gathered before the
        # forward and reduce-scattered after the backward, with nothing to hide behind, as the last layer's
        gather = exchange("dp", "all_gather", sizes["fsdp_gather"])
        scatter = exchange("dp", "reduce_scatter", sizes["fsdp_scatter"])
        root_gather = exchange("dp", "all_gather", sizes["fsdp_root_gather"])
        root_scatter = exchange("dp", "reduce_scatter", sizes["fsdp_root_scatter"])
        fsdp_f = root_gather + gather + max(gather - layer_f, 0.0) * (layers - 1)
        # the backward's first gather behind the output layer's backward, its last scatter in the open (with
        # pp > 1 the first stage has no output layer to hide it, but the last stage, 3 output layers' compute
        # slower, still bounds the slot)
        fsdp_b = max(gather - 2 * logits_f, 0.0) + max(gather + scatter - 2 * layer_f, 0.0) * (layers - 1) + \
            scatter + root_scatter
    # one crossing per chunk boundary each way; one micro-batch on the slowest stage: 2 TP AllReduces and 2 EP
    # AllToAlls per layer each way
    parts = {"forward": {"pp": par.virtual_stages * pp_f, "fsdp": fsdp_f, "compute": compute_f,
                         "tp": 2 * layers * tp_t, "ep": 2 * layers * ep_t},
             "backward": {"pp": par.virtual_stages * pp_b, "tp": 2 * layers * tp_t, "ep": 2 * layers * ep_t,
                          "fsdp": fsdp_b,
                          "compute": 2 * compute_f}}  # compute last: the DP sync overlaps the final one
    slot = sum(parts["forward"].values()) + sum(parts["backward"].values())
    bubble = (par.pp - 1) / par.virtual_stages  # slots
    dp_exposed = sync = 0.0
    if not par.fsdp:
        sync = exchange("dp", "allreduce", sizes["dp"])
        sync += exchange("edp", "allreduce", sizes["edp"]) if model.moe else 0.0
        # overlaps the last backward compute: a micro-batch's, or with v chunks one chunk's (1/v of it)
        dp_exposed = max(sync - 2 * compute_f / par.virtual_stages, 0.0)
    step = (m + bubble) * slot + dp_exposed
    global_tokens = par.dp * m * tokens
    flops = model.training_flops_per_token() * global_tokens
    # the parts add up to the step: m slots of work, (p - 1) / v slots of bubble, the DP tail
    both = {k: parts["forward"][k] + parts["backward"][k] for k in ("tp", "ep", "pp", "fsdp")}
    exposed = {**{k: m * v for k, v in both.items()}, "dp": dp_exposed, "bubble": bubble * slot}
    return TrainingStep(gpus=len(gpus), parallelism=asdict(par), step_s=step, compute_s=m * 3 * compute_f,
                        exposed=exposed, tokens_per_step=global_tokens, tokens_per_s=global_tokens / step,
                        model_flops=flops, mfu=flops / (step * len(gpus) * gpu_flops), collectives=simulated,
                        slot=parts, dp_sync_s=sync, warnings=list(said.values()))


def training_step(scenario, env: Mapping[str, str] | None = None) -> dict | None:
    """The scenario's transformer training step (``simnet.run.training.step_time``) as plain
    data, under the scenario's model and calibration and the NCCL variables ``env`` (default:
    the process environment); None without ``training``."""
    spec = scenario.training
    if spec is None:
        return None
    step = step_time(scenario.topology, spec.transformer(), spec.layout(), gpu_flops=spec.gpu_flops,
                     efficiency=spec.efficiency, dtype=spec.dtype, grad_dtype=spec.grad_dtype,
                     comm_model=scenario.model, env=env, calibration=scenario.calibration)
    fit = calibration_of(scenario.calibration, scenario.topology)
    refined = fit is not None and resolve_model(scenario.model, scenario.topology) != "ideal"
    return {"model": spec.model if isinstance(spec.model, str) else "custom", **asdict(step),
            "calibration": (fit.source or "(a Calibration)") if refined else None}
