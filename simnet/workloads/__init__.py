"""Training workloads as arithmetic: a data-parallel step (``ddp``) and transformer models
with their parallel layout (``transformer``). Knows nothing of networks."""
