"""Sweeps: a scenario over GPU counts and any dotted parameter, as first-class data.

* ``plan``: which points (overrides, GPU count, algorithm) a sweep has, and the scenario
  at each point;
* ``evaluate``: one point -> its JSON record (a top-level function, so it travels to
  worker processes and Dask workers unchanged);
* ``executors``: local processes or a Dask cluster behind one interface;
* ``store``: the on-disk results (``OUT/results.jsonl``) that make sweeps resumable;
* ``run``: plan + executor + store.
"""
