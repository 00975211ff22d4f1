"""Transformer models and their parallel layout: sizes, FLOPs and the rank groups of each kind.

Parallelism (Megatron's rank order, tensor-parallel ranks adjacent): rank = ``t + tp x (d +
dp x p)`` for tensor rank t, data rank d and pipeline stage p, so a TP group is ``tp``
consecutive GPUs (inside a server when tp divides its GPUs) and pipeline stages are the
farthest apart. Expert-parallel groups are ``ep`` consecutive data ranks.
"""

from __future__ import annotations

from dataclasses import dataclass


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

    def activation_bytes(self, tokens: int, value_bytes: int) -> int:
        """Bytes of ``tokens`` tokens' hidden activations at ``value_bytes`` a value: what a
        TP AllReduce or a pipeline stage boundary carries (an MoE's AllToAll, ``top_k`` times that)."""
        return tokens * self.hidden * value_bytes

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
            field = "tp" if gpus % self.tp else "pp"  # the one that breaks it: pp: 64 on 16 GPUs is pp's
            raise ValueError(f"{field}: tp x pp = {self.tp * self.pp} does not divide the {gpus} GPUs")
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


def forward_seconds(model: Transformer, par: Parallelism, gpu_flops: float) -> float:
    """One micro-batch's forward compute on the last (slowest) pipeline stage, whose TP group
    of ``par.tp`` GPUs splits its layers and the output layer, each GPU at ``gpu_flops``
    (its peak times the kernels' efficiency); the backward pass takes twice this."""
    layer, logits = model.forward_flops_per_token()
    return (model.layers // par.pp * layer + logits) * par.micro_batch_size * model.sequence / (gpu_flops * par.tp)


def exchange_bytes(model: Transformer, par: Parallelism, value_bytes: int, grad_bytes: int) -> dict[str, int]:
    """Bytes each exchange of one training step carries (``simnet.run.training``), by kind:
    ``tp`` (a micro-batch's activations; the PP all-gather carries as much), ``ep`` (an
    MoE's AllToAll, ``top_k`` times that), ``pp`` (a TP rank's share across a stage
    boundary), and the gradients: with FSDP ``fsdp_gather`` and ``fsdp_scatter`` (one
    layer's shard) and ``fsdp_root_gather`` and ``fsdp_root_scatter`` (the root unit's: the
    input embedding and the output layer, or with ``pp > 1`` the one the largest stage
    holds), else ``dp`` (the largest stage's dense shard: the first or last, which holds an
    embedding beside its layers) and ``edp`` (its experts').

    >>> m = Transformer(layers=4, hidden=8, heads=2, ffn=16, sequence=4, vocabulary=100)
    >>> dense = m.attention_parameters() + m.expert_parameters()
    >>> exchange_bytes(m, Parallelism(pp=4), 1, 2)["dp"] == (dense + 100 * 8) * 2  # a layer and an embedding
    True
    >>> fsdp = exchange_bytes(m, Parallelism(fsdp=True), 1, 2)  # every weight gathered: 4 layers and the root
    >>> 4 * fsdp["fsdp_gather"] + fsdp["fsdp_root_gather"] == m.parameters()
    True
    >>> moe = Transformer(layers=4, hidden=8, heads=2, ffn=16, sequence=4, vocabulary=100, experts=4, top_k=2)
    >>> fsdp = exchange_bytes(moe, Parallelism(fsdp=True), 1, 2)  # its experts and router in each layer's unit
    >>> 4 * fsdp["fsdp_gather"] + fsdp["fsdp_root_gather"] == moe.parameters()
    True
    >>> ddp = exchange_bytes(moe, Parallelism(), 1, 1)  # DDP syncs the same weights: dense (router too), experts
    >>> ddp["dp"] + ddp["edp"] == moe.parameters()
    True
    """
    activation = model.activation_bytes(par.micro_batch_size * model.sequence, value_bytes)
    sizes = {"tp": activation}
    if model.moe:
        sizes["ep"] = model.top_k * activation
    if par.pp > 1:
        sizes["pp"] = activation // par.tp
    # what every data rank holds whole: attention, and the MLP or an MoE's router (its experts are edp's)
    dense = model.attention_parameters() + (model.hidden * model.experts if model.moe else model.expert_parameters())
    layers = model.layers // par.pp
    # the input embedding on the first stage, the output layer on the last: with pp > 1 each
    # of those stages holds one of them, and the step waits for the largest stage's exchanges
    embeddings = (1 if par.pp > 1 else 2) * model.vocabulary * model.hidden
    if par.fsdp:  # a unit per layer (every weight of it: an MoE's experts and router too, ep being 1), the
        # embeddings in the root unit (PyTorch FSDP's auto-wrap)
        layer = (model.parameters() - 2 * model.vocabulary * model.hidden) // model.layers
        sizes["fsdp_gather"] = layer // par.tp * value_bytes
        sizes["fsdp_scatter"] = layer // par.tp * grad_bytes
        sizes["fsdp_root_gather"] = embeddings // par.tp * value_bytes
        sizes["fsdp_root_scatter"] = embeddings // par.tp * grad_bytes
    else:
        sizes["dp"] = (layers * dense + embeddings) // par.tp * grad_bytes
        if model.moe:
            sizes["edp"] = layers * (model.experts * model.expert_parameters() // par.ep) // par.tp * grad_bytes
    return sizes


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
