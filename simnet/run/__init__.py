"""Runs: one collective (``simulate``), many groups at once, scenarios, jobs, training steps,
compare, calibrate and sweeps; the Python API the CLI and notebooks share."""
