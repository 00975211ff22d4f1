"""The engines that replay a schedule in time: the fluid network (max-min fair sharing on
SimPy, ``fluid``, ``maxmin``) on the simulated clock both keep (``clock``: integer
picoseconds, the whole-picosecond slack, the horizon), per-link accounting, the
transfer-by-transfer replay, the lane replay and faults as the network applies them. Knows
nothing of what a collective is: it sees flows."""
