"""NCCL's tuner as plain functions of the system it sees: its tables, topology search, enqueue
decisions and cost model (NVIDIA/nccl ``src/graph/tuning.cc``, ``search.cc``, ``enqueue.cc``).
Knows nothing of schedules or time."""
