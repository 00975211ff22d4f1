"""Run points: ``simulate`` one AllReduce, ``auto`` selection with ``NCCL_ALGO``, ``Results``.

>>> from simnet.topology import topology_from_dict
>>> topo = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8}})
>>> result = simulate(topo, "ring", 2**30)
>>> round(result.busbw_GBps)        # 450 GB/s NVLink per direction, less 14 steps of 1 us latency
448
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

from simnet import __version__
from simnet.collectives import ALGORITHMS, build_schedule, replay
from simnet.collectives.registry import COMMON_OPTIONS
from simnet.result import Result, find_warnings, link_reports
from simnet.topology.loader import load_topology
from simnet.topology.model import Topology

__all__ = ["simulate", "Results", "AUTO_CANDIDATES", "nccl_algo_filter"]

AUTO_CANDIDATES = ("ring", "tree", "double_binary_tree", "halving_doubling", "recursive_doubling", "hierarchical")
"""What ``auto`` chooses among: the collective algorithms (a parameter server and naive
all-to-all are architectures a person picks, not a library's choice)."""


def nccl_algo_filter(candidates: list[str], value: str | None) -> list[str]:
    """Apply an ``NCCL_ALGO`` value: ``Ring``, ``ring,tree`` keep those; ``^ring`` drops them.

    Names are simnet's (``ring``, ``tree``, ``double_binary_tree``, ...), case-insensitive.

    >>> nccl_algo_filter(["ring", "tree", "hierarchical"], "^Ring")
    ['tree', 'hierarchical']
    >>> nccl_algo_filter(["ring", "tree"], "Tree")
    ['tree']
    """
    if not value or not value.strip():
        return list(candidates)
    text = value.strip()
    exclude = text.startswith("^")
    names = [t.strip().lower() for t in text.lstrip("^").split(",") if t.strip()]
    unknown = [n for n in names if n not in ALGORITHMS]
    if unknown:
        raise ValueError(f"NCCL_ALGO={value!r}: unknown algorithm {unknown[0]!r}; "
                         f"expected names from {', '.join(ALGORITHMS)}")
    chosen = [c for c in candidates if (c in names) != exclude]
    if not chosen:
        raise ValueError(f"NCCL_ALGO={value!r} leaves no algorithm to choose from")
    return chosen


def simulate(topology: Topology | str | Path, algorithm: str, size: int, *, gpus: int | list[str] | None = None,
             timeline: bool = False, **options) -> Result:
    """Simulate one AllReduce of ``size`` bytes; ``algorithm`` may be ``"auto"``.

    ``options`` are algorithm options and ``reduce_bandwidth`` (B/s) / ``message_overhead``
    (s). ``timeline=True`` keeps per-link load over time on ``result.replay.stats``.
    """
    topo = topology if isinstance(topology, Topology) else load_topology(topology)
    topo = topo.subset(gpus)
    if algorithm == "auto":
        return _auto(topo, size, timeline, options)
    engine = {k: options[k] for k in COMMON_OPTIONS if options.get(k) is not None}
    schedule = build_schedule(algorithm, topo, size, **options)
    run = replay(schedule, topo, timeline=timeline, **engine)
    links = link_reports(run)
    return Result(algorithm=algorithm, gpus=len(topo.gpus), size_bytes=int(size), time_s=run.time, links=links,
                  warnings=find_warnings(topo, links, run.time), options=dict(options), replay=run)


def _auto(topo: Topology, size: int, timeline: bool, options: dict) -> Result:
    nccl_algo = os.environ.get("NCCL_ALGO")
    candidates = nccl_algo_filter(list(AUTO_CANDIDATES), nccl_algo)
    results = [simulate(topo, name, size, timeline=timeline, **options) for name in candidates]
    best = min(results, key=lambda r: r.time_s)
    best.auto = {"candidates": {r.algorithm: r.time_s for r in results}, "nccl_algo": nccl_algo or None}
    return best


@dataclass
class Results:
    """The results of a scenario run, in (size, algorithm) order."""

    scenario: str
    runs: list[Result]

    def winners(self) -> dict[int, Result]:
        """The fastest run per size."""
        best: dict[int, Result] = {}
        for run in self.runs:
            if run.size_bytes not in best or run.time_s < best[run.size_bytes].time_s:
                best[run.size_bytes] = run
        return best

    def to_dict(self) -> dict:
        return {"simnet": __version__, "scenario": self.scenario, "runs": [r.to_dict() for r in self.runs]}

    def to_json(self, path: str | Path | None = None) -> str:
        """DESIGN section 8's JSON; written to ``path`` when given (``-`` is not a path here)."""
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            Path(path).write_text(text + "\n")
        return text

    FLAT_COLUMNS = ("scenario", "algorithm", "gpus", "size_bytes", "time_s", "algbw_GBps", "busbw_GBps",
                    "bottleneck", "bottleneck_saturated_fraction", "warnings")

    def rows(self) -> list[dict]:
        """One flat dict per run (the CSV and DataFrame rows)."""
        rows = []
        for r in self.runs:
            neck = r.bottleneck
            rows.append({"scenario": self.scenario, "algorithm": r.algorithm, "gpus": r.gpus,
                         "size_bytes": r.size_bytes, "time_s": r.time_s, "algbw_GBps": r.algbw_GBps,
                         "busbw_GBps": r.busbw_GBps, "bottleneck": neck.name if neck else "",
                         "bottleneck_saturated_fraction": neck.saturated_fraction if neck else 0.0,
                         "warnings": ";".join(w.kind for w in r.warnings)})
        return rows

    def to_csv(self, path: str | Path | None = None) -> str:
        """The flat table as CSV; written to ``path`` when given."""
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=self.FLAT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.rows())
        if path is not None:
            Path(path).write_text(buffer.getvalue())
        return buffer.getvalue()

    def to_dataframe(self):
        """The flat table as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=list(self.FLAT_COLUMNS))
