"""Schedules: who sends which bytes after what, as numpy columns (``transfers``) or lanes
(``lanes``); one module per algorithm family in ``algorithms/``, registered by name
(``registry``) and built by name (``catalog``); what each collective means (``kinds``) and
the numpy-data check that every schedule computes its collective (``verify``). Knows nothing
of SimPy or time."""
