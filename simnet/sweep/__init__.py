"""Sweeps: a scenario over GPU counts and any dotted parameter, as first-class data.

* ``plan``: which points (overrides, GPU count, algorithm) a sweep has, and the scenario
  at each point;
* ``evaluate``: one point -> its JSON record (a top-level function, so it travels to
  worker processes and Dask workers unchanged);
* ``executors``: local processes or a Dask cluster behind one interface;
* ``store``: the on-disk results (``OUT/results.jsonl``) that make sweeps resumable;
* ``run``: plan + executor + store.
"""

from simnet.sweep.evaluate import evaluate_point
from simnet.sweep.executors import DaskExecutor, LocalExecutor
from simnet.sweep.plan import Point, SweepPlan, apply_overrides, plan_sweep, scenario_at
from simnet.sweep.run import run_sweep
from simnet.sweep.store import META, RESULTS, load_records

__all__ = ["Point", "SweepPlan", "plan_sweep", "scenario_at", "evaluate_point", "run_sweep", "load_records",
           "apply_overrides", "LocalExecutor", "DaskExecutor", "RESULTS", "META"]
