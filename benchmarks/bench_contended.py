"""Contended fabrics as a user runs them: ``simnet run S.yaml`` in a fresh process, start-up
included, for the cases where links are shared (issue 34, item 4): a rail fabric routed by
ECMP hashing (ring and tree), 2:1 and 4:1 oversubscribed leaf-spine fabrics, a spine down
mid-run, two jobs sharing the uplinks, an AllToAll of 64 MiB, and a ring and a tree healthy,
with a leaf at 50 % from 1 ms and with lognormal stragglers (the fault's cost against the
healthy run's).

Each run reports wall seconds, the child's peak resident memory (``os.wait4``), and the
answer: the simulated time and engine, the one-line refusal, or that no answer came within
``--timeout`` seconds (the run is then killed). Rail fabrics are DGX SuperPOD H100 scalable
units of 256 GPUs (``rail_optimized``); leaf-spine fabrics are racks of 4 hosts of 8 H100
under 8 spines. ``python -m benchmarks.bench_contended --gpus 1024 4096 --repeat 3``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SIZE = "1 GiB"


LEAF_AT_HALF = {"at": "1 ms", "node": "su0-leaf0", "bandwidth": "50%"}
STRAGGLERS = {"distribution": "lognormal", "mean": "20 us", "sigma": 1.0, "seed": 1}


def _rail(gpus: int, **keys) -> dict:
    return {"name": f"rail-{gpus}", "generate": {"kind": "rail_optimized", "units": gpus // 256}, **keys}


def _leaf_spine(gpus: int, oversubscription: int) -> dict:
    return {"name": f"leaf-spine-{gpus}-{oversubscription}to1",
            "generate": {"kind": "leaf_spine", "racks": gpus // 32, "hosts_per_rack": 4, "gpus_per_host": 8,
                         "spines": 8, "oversubscription": oversubscription}}


def _first_spine(gpus: int) -> str:
    """The first spine of the rail fabric of ``gpus`` GPUs (``spine0``, or ``pod0-spine0``
    where a core tier joins pods of units)."""
    from simnet.topology.loader import topology_from_dict

    nodes = topology_from_dict(_rail(gpus)).graph.nodes
    return next(name for name in ("spine0", "pod0-spine0") if name in nodes)


CASES = {
    "ecmp ring": lambda n: {"topology": _rail(n, routing="ecmp"), "sizes": [SIZE], "algorithms": ["ring"]},
    "ecmp tree": lambda n: {"topology": _rail(n, routing="ecmp"), "sizes": [SIZE], "algorithms": ["tree"]},
    "2:1 leaf-spine ring": lambda n: {"topology": _leaf_spine(n, 2), "sizes": [SIZE], "algorithms": ["ring"]},
    "4:1 leaf-spine ring": lambda n: {"topology": _leaf_spine(n, 4), "sizes": [SIZE], "algorithms": ["ring"]},
    "spine down at 1 ms, ring": lambda n: {"topology": _rail(n), "sizes": [SIZE], "algorithms": ["ring"],
                                           "faults": [{"at": "1 ms", "node": _first_spine(n), "down": True}]},
    "two jobs on 2:1 uplinks": lambda n: {"topology": _leaf_spine(n, 2), "jobs": [
        {"name": name, "gpus": n // 2, "placement": "spread", "size": "256 MiB"} for name in ("a", "b")]},
    "AllToAll 64 MiB": lambda n: {"topology": _rail(n), "sizes": ["64 MiB"], "algorithms": ["auto"],
                                  "collective": "all_to_all"},
    # issue 34's "a fault mid-run or lognormal stragglers: at most 2x the healthy run"
    **{f"{what}, {algorithm}": (lambda n, algorithm=algorithm, keys=keys: {
        "topology": _rail(n), "sizes": [SIZE], "algorithms": [algorithm], **keys})
       for algorithm in ("ring", "tree")
       for what, keys in (("healthy", {}), ("leaf at 50 % at 1 ms", {"faults": [LEAF_AT_HALF]}),
                          ("lognormal stragglers", {"stragglers": STRAGGLERS}))},
}
"""Case name -> the scenario (a mapping, as a user writes it) at a GPU count."""


def run(case: str, gpus: int, timeout: float) -> dict:
    """One fresh ``simnet run`` of ``case`` at ``gpus``: wall s, peak MB and the answer."""
    with tempfile.TemporaryDirectory() as folder:
        scenario, answer = Path(folder) / "s.yaml", Path(folder) / "result.json"
        scenario.write_text(yaml.safe_dump({"name": case.replace(" ", "-").replace(":", "to"),
                                            **CASES[case](gpus)}, sort_keys=False))
        start = time.time()
        child = subprocess.Popen([sys.executable, "-m", "simnet", "run", str(scenario), "--json", str(answer)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=folder,
                                 start_new_session=True)
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)  # reaped here, for its rusage
        while not pid and time.time() - start < timeout:
            time.sleep(0.05)
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if not pid:
            os.killpg(child.pid, signal.SIGKILL)
            _, status, usage = os.wait4(child.pid, 0)
        child.returncode = -1  # reaped: keep Popen from waiting for it again
        wall = time.time() - start
        out = {"case": case, "gpus": gpus, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
               "peak_mb": usage.ru_maxrss / 1024}
        if os.WIFSIGNALED(status):
            return {**out, "answer": f"no answer in {timeout:.0f} s"}
        if not answer.exists():
            return {**out, "answer": "refused: " + (child.stderr.read().strip().splitlines() or ["?"])[-1]}
        return {**out, "answer": _answer(json.loads(answer.read_text()))}


def _answer(document: dict) -> str:
    """The simulated time(s) of a ``--json`` result, each marked where it is an upper bound."""
    runs = document.get("runs") or []
    if runs:
        return "; ".join(f"{r['algorithm']} {r['time_s'] * 1e3:.6f} ms"
                         + (" (upper bound)" if any(w["kind"] == "upper_bound" for w in r["warnings"]) else "")
                         for r in runs)
    jobs = document.get("jobs") or []
    return "; ".join(f"{j['name']} {j['together_s'] * 1e3:.6f} ms ({j['slowdown']:.2f}x alone)" for j in jobs) or "?"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--case", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a run is killed")
    args = parser.parse_args(argv)
    print("| case | GPUs | answer | wall s (median; runs) | CPU s (median) | peak MB (median) |")
    print("|---|---|---|---|---|---|")
    for gpus in args.gpus:
        for case in args.case:
            runs = [run(case, gpus, args.timeout) for _ in range(args.repeat)]
            walls = ", ".join(f"{r['wall_s']:.2f}" for r in runs)
            print(f"| {case} | {gpus:,} | {runs[0]['answer']} | {statistics.median(r['wall_s'] for r in runs):.2f} "
                  f"({walls}) | {statistics.median(r['cpu_s'] for r in runs):.2f} "
                  f"| {statistics.median(r['peak_mb'] for r in runs):,.0f} |", flush=True)


if __name__ == "__main__":
    main()
