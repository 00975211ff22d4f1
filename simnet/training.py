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
``simnet.runner.simulate_groups``):

* TP: 2 AllReduces of ``b s h a`` bytes per layer forward and 2 backward (Shoeybi et al.
  2019, the f and g operators), on the critical path;
* EP: 2 AllToAlls (dispatch, combine) of ``b s k h a`` bytes per MoE layer forward and 2
  backward, on the critical path;
* PP: per micro-batch a forward activation of ``b s h a`` bytes into every stage and a
  backward gradient as large out of it, each on the critical path; simulated as every
  stage sending to the next at once (the moment of 1F1B's steady state when all stages
  forward), so shared NICs and uplinks count;
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

from dataclasses import asdict, dataclass

from simnet.topology.hardware import GPUS

__all__ = ["Transformer", "Parallelism", "PRESETS", "rank_groups", "step_time", "TrainingStep", "one_f_one_b"]

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


@dataclass(frozen=True)
class Transformer:
    """A decoder-only transformer: ``layers`` of width ``hidden`` with ``heads`` attention
    heads (``kv_heads`` for grouped-query attention), an MLP of width ``ffn`` (gated, as
    SwiGLU, or plain), ``sequence`` tokens per sample, a ``vocabulary``; ``experts`` MLPs per
    layer with ``top_k`` used per token make it a mixture of experts."""

    layers: int
    hidden: int
    heads: int
    ffn: int
    sequence: int
    vocabulary: int
    kv_heads: int | None = None
    experts: int = 1
    top_k: int = 1
    gated: bool = True

    @property
    def moe(self) -> bool:
        return self.experts > 1

    def attention_parameters(self) -> int:
        """Q, K, V and output projections of one layer."""
        kv = (self.kv_heads or self.heads) * (self.hidden // self.heads)
        return 2 * self.hidden * self.hidden + 2 * self.hidden * kv

    def expert_parameters(self) -> int:
        """One MLP (one expert) of one layer."""
        return (3 if self.gated else 2) * self.hidden * self.ffn

    def parameters(self) -> int:
        """All weights: layers (attention, every expert, the router) and the input and output
        embeddings (untied); norms and biases left out.

        >>> round(PRESETS["llama3_70b"].parameters() / 1e9, 1)   # Meta reports 70.6 B
        70.6
        """
        router = self.hidden * self.experts if self.moe else 0
        layer = self.attention_parameters() + self.experts * self.expert_parameters() + router
        return self.layers * layer + 2 * self.vocabulary * self.hidden

    def forward_flops_per_token(self) -> tuple[float, float]:
        """(per layer, logits) forward FLOPs per token: 2 per active weight, plus attention
        scores ``4 s h`` per layer; the output layer ``2 h V``."""
        active = self.attention_parameters() + self.top_k * self.expert_parameters()
        return 2 * active + 4 * self.sequence * self.hidden, 2 * self.hidden * self.vocabulary

    def training_flops_per_token(self) -> float:
        """Model FLOPs of one training token (forward and a backward of twice its cost)."""
        layer, logits = self.forward_flops_per_token()
        return 3 * (self.layers * layer + logits)


PRESETS = {
    # Llama 3 paper (Meta, arXiv 2407.21783, table 3) and its config.json (vocabulary 128,256)
    "llama3_8b": Transformer(32, 4096, 32, 14336, 8192, 128256, kv_heads=8),
    "llama3_70b": Transformer(80, 8192, 64, 28672, 8192, 128256, kv_heads=8),
    "llama3_405b": Transformer(126, 16384, 128, 53248, 8192, 128256, kv_heads=8),
    # Mixtral 8x22B config.json (mistralai): 56 layers, 6144 wide, 8 experts of 16,384, top 2
    "mixtral_8x22b": Transformer(56, 6144, 48, 16384, 4096, 32768, kv_heads=8, experts=8, top_k=2),
    # GPT-3 175B (Brown et al. 2020, table 2.1): 96 layers, 12,288 wide, 2,048 tokens, plain MLP of 4h
    "gpt3_175b": Transformer(96, 12288, 96, 4 * 12288, 2048, 50257, gated=False),
}


@dataclass(frozen=True)
class Parallelism:
    """How the GPUs split the work: ``tp`` x ``pp`` x ``dp`` GPUs (``dp`` derived from the
    GPU count when None), ``ep`` expert-parallel ranks among the data ranks, ``fsdp``
    (ZeRO-3) sharding, ``micro_batches`` per step of ``micro_batch_size`` sequences each,
    ``virtual_stages`` model chunks per pipeline stage (Megatron's interleaved 1F1B, its
    "virtual pipeline" size; NeMo's VP)."""

    tp: int = 1
    pp: int = 1
    dp: int | None = None
    ep: int = 1
    fsdp: bool = False
    micro_batches: int = 1
    micro_batch_size: int = 1
    virtual_stages: int = 1

    def resolved(self, gpus: int, model: Transformer) -> Parallelism:
        """This layout on ``gpus`` GPUs with ``dp`` filled in; ``ValueError`` ("field: why")
        when it does not fit the GPUs or the model."""
        if gpus % (self.tp * self.pp):
            raise ValueError(f"tp: tp x pp = {self.tp * self.pp} does not divide the {gpus} GPUs")
        dp = gpus // (self.tp * self.pp)
        if self.dp is not None and self.dp != dp:
            raise ValueError(f"dp: {self.dp} x tp {self.tp} x pp {self.pp} is not the {gpus} GPUs")
        if model.layers % self.pp:
            raise ValueError(f"pp: {self.pp} stages do not divide the model's {model.layers} layers")
        if dp % self.ep or (model.experts % self.ep):
            raise ValueError(f"ep: {self.ep} must divide the data-parallel size {dp} and the {model.experts} experts")
        if self.fsdp and self.ep > 1:
            raise ValueError("fsdp: FSDP with expert parallelism is not modelled; use ep: 1 or fsdp: false")
        for name in ("hidden", "heads", "ffn"):
            if getattr(model, name) % self.tp:
                raise ValueError(f"tp: {self.tp} does not divide the model's {name} ({getattr(model, name)})")
        if self.virtual_stages > 1:
            if self.pp == 1:
                raise ValueError("virtual_stages: interleaving needs pipeline stages (pp > 1)")
            if (model.layers // self.pp) % self.virtual_stages:
                raise ValueError(f"virtual_stages: {self.virtual_stages} chunks do not divide the "
                                 f"{model.layers // self.pp} layers of a stage")
            if self.micro_batches % self.pp:
                raise ValueError(f"virtual_stages: Megatron interleaves micro-batches in groups of pp; "
                                 f"{self.micro_batches} micro-batches are not a multiple of pp {self.pp}")
        return Parallelism(self.tp, self.pp, dp, self.ep, self.fsdp, self.micro_batches, self.micro_batch_size,
                           self.virtual_stages)


def rank_groups(gpus: list[str], par: Parallelism) -> dict[str, list[list[str]]]:
    """The communicating groups of each kind (``tp``, ``dp``, ``ep``, ``edp`` (expert data),
    ``pp`` (the stages of one pipeline, in order)), in Megatron's rank order (see the module
    docstring).

    >>> g = rank_groups([f"g{i}" for i in range(8)], Parallelism(tp=2, pp=2, dp=2))
    >>> g["tp"][:2], g["dp"][:2], g["pp"][:2]
    ([['g0', 'g1'], ['g2', 'g3']], [['g0', 'g2'], ['g1', 'g3']], [['g0', 'g4'], ['g1', 'g5']])
    """
    tp, pp, dp, ep = par.tp, par.pp, par.dp, par.ep

    def rank(t: int, d: int, p: int) -> str:
        return gpus[t + tp * (d + dp * p)]

    blocks = [range(b, b + ep) for b in range(0, dp, ep)]
    return {
        "tp": [[rank(t, d, p) for t in range(tp)] for p in range(pp) for d in range(dp)],
        "dp": [[rank(t, d, p) for d in range(dp)] for p in range(pp) for t in range(tp)],
        "ep": [[rank(t, d, p) for d in block] for p in range(pp) for t in range(tp) for block in blocks],
        "edp": [[rank(t, d, p) for d in range(i, dp, ep)] for p in range(pp) for t in range(tp) for i in range(ep)],
        "pp": [[rank(t, d, p) for p in range(pp)] for d in range(dp) for t in range(tp)],
    }


@dataclass(frozen=True)
class TrainingStep:
    """One step's figures (seconds unless named otherwise). ``exposed`` holds the
    communication on the critical path per kind (tp, ep, pp, fsdp over the m micro-batch
    slots; dp after them) and the pipeline ``bubble`` ((p - 1) / v slots), so that ``compute_s``
    plus every part of ``exposed`` is ``step_s``; ``collectives`` lists each simulated
    exchange: kind, collective, bytes, groups, algorithm, time. ``slot`` holds the parts of
    one micro-batch's ``forward`` and ``backward`` on the slowest stage (compute, tp, ep,
    fsdp, pp) and ``dp_sync_s`` the data-parallel gradient sync, for the step's timeline."""

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
              comm_model: str = "nccl", env=None, calibration=None) -> TrainingStep:
    """Simulate the communication of one training step of ``model`` laid out as ``par`` on
    ``topology``'s GPUs (or ``gpus``) and compose the step (see the module docstring).

    ``gpu_flops``: dense peak FLOP/s per GPU (default: the GPUs' generation's BF16 peak,
    ``hardware.GPUS``); ``efficiency``: the fraction of it the model's kernels reach;
    ``dtype``: activations and FSDP parameters; ``grad_dtype``: gradients reduced by DP.
    """
    from simnet.runner import simulate_groups

    gpus = list(topology.gpus if gpus is None else gpus)
    par = par.resolved(len(gpus), model)
    if gpu_flops is None:
        gpu_flops = GPUS[topology.gpu_model(gpus[0])].bf16_flops
    groups = rank_groups(gpus, par)
    a, g = DTYPE_BYTES[dtype], DTYPE_BYTES[grad_dtype]
    m, b, s, h = par.micro_batches, par.micro_batch_size, model.sequence, model.hidden
    tokens = b * s
    layers = model.layers // par.pp
    simulated = []

    def exchange(kind: str, collective: str, size: int) -> float:
        members = groups[kind]
        if size <= 0 or not members or len(members[0]) < 2:
            return 0.0
        result = simulate_groups(topology, members, collective, size, model=comm_model, env=env,
                                 calibration=calibration)
        simulated.append({"kind": kind, "collective": collective, "size_bytes": size, "groups": len(members),
                          "algorithm": result.algorithm, "protocol": result.protocol, "time_s": result.time_s})
        return result.time_s

    layer_fwd, logits_fwd = model.forward_flops_per_token()
    speed = gpu_flops * efficiency * par.tp  # a TP group splits every layer's work
    compute_f = (layers * layer_fwd + logits_fwd) * tokens / speed  # the last stage, with the output layer
    layer_f = layer_fwd * tokens / speed
    tp_t = exchange("tp", "allreduce", tokens * h * a)
    ep_t = exchange("ep", "all_to_all", tokens * model.top_k * h * a) if model.moe else 0.0
    pp_t = exchange("pp", "send_recv", tokens * h * a)
    fsdp_f = fsdp_b = 0.0
    dense = model.attention_parameters() + (0 if model.moe else model.expert_parameters())
    experts = model.experts * model.expert_parameters() // par.ep if model.moe else 0
    if par.fsdp:  # per layer: gather before forward and backward, reduce-scatter after backward
        shard = dense // par.tp
        gather = exchange("dp", "all_gather", shard * a)
        scatter = exchange("dp", "reduce_scatter", shard * g)
        fsdp_f = gather + max(gather - layer_f, 0.0) * (layers - 1)
        fsdp_b = max(gather + scatter - 2 * layer_f, 0.0) * layers
    boundary = par.virtual_stages * pp_t if par.pp > 1 else 0.0  # one send per chunk boundary
    # one micro-batch on the slowest stage: 2 TP AllReduces and 2 EP AllToAlls per layer each way
    parts = {"forward": {"pp": boundary, "fsdp": fsdp_f, "compute": compute_f, "tp": 2 * layers * tp_t,
                         "ep": 2 * layers * ep_t},
             "backward": {"pp": boundary, "tp": 2 * layers * tp_t, "ep": 2 * layers * ep_t, "fsdp": fsdp_b,
                          "compute": 2 * compute_f}}  # compute last: the DP sync overlaps the final one
    slot = sum(parts["forward"].values()) + sum(parts["backward"].values())
    bubble = (par.pp - 1) / par.virtual_stages  # slots
    dp_exposed = sync = 0.0
    if not par.fsdp:
        embeddings = 2 * model.vocabulary * h // par.pp  # an embedding on the first stage, the output on the last
        sync = exchange("dp", "allreduce", (layers * dense + embeddings) // par.tp * g)
        sync += exchange("edp", "allreduce", layers * experts // par.tp * g) if model.moe else 0.0
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
                        slot=parts, dp_sync_s=sync)
