"""Reading input safely: bounded regular files, YAML with line marks, nccl-tests logs, and the
memory budget every large allocation is checked against."""
