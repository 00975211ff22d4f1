"""Performance models: how a schedule's transfers are timed on the network (``interface``:
``nccl`` or ``ideal``), NCCL's per-transfer timing (``nccl``) and calibration profiles."""
