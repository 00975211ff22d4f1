"""The compiled fluid network against the SimPy one, on runs that take the fluid network.

Each run is one fresh Python process that builds or loads the cluster and calls
``simnet.simulate`` (faults as a scenario writes them), with the fluid network forced to
one engine (``simnet.engine.replay.COMPILED_FROM`` 0: compiled, past any schedule: SimPy);
it reports wall and CPU seconds of the call (loading numba's cached code included, not
importing simnet), the peak resident memory of the process and the simulated time, which
must be the same on both. Run the compiled engine once before measuring (its first run
after an install compiles it).

Run: ``python -m benchmarks.bench_compiled --repeat 3`` (``--case NAME`` for some).
"""

from __future__ import annotations

import argparse
import statistics

from benchmarks.bench_engine import in_fresh_process

CASES = {
    "hierarchical-two-racks": {"topology": "topologies/two_racks.yaml", "algorithm": "hierarchical",
                               "size": 2**28},
    "tree-leaf-at-50%": {"topology": "topologies/superpod_h100_1su.yaml", "algorithm": "tree", "size": 2**30,
                         "faults": [{"at": "1 ms", "node": "su0-leaf0", "bandwidth": "50%"}]},
    "tree-healthy": {"topology": "topologies/superpod_h100_1su.yaml", "algorithm": "tree", "size": 2**30},
    "ideal-ring-rail-1024": {"rail": 4, "algorithm": "ring", "size": 2**30, "model": "ideal"},
    "nvls-tree-20-racks": {"topology": "topologies/gb200_nvl72_20racks.yaml", "algorithm": "nvls_tree",
                           "size": 2**30},
}
"""Runs the lanes cannot prove and the fluid network times: contended uplinks, a fault
mid-run (its healthy run for scale: by lanes, no fluid network), NVLink ports shared by
seven channels, NVLSTree heads asked beyond capacity."""

_RUN = """
import json, resource, sys, time
spec = json.loads(sys.argv[1])
import simnet.engine.replay as replay
from simnet import load_topology, simulate, topology_from_dict
replay.COMPILED_FROM = 0 if spec["compiled"] else 2**62
if spec.get("rail"):
    topo = topology_from_dict({"name": "rail", "generate": {"kind": "rail_optimized", "units": spec["rail"]}})
else:
    topo = load_topology(spec["topology"])
t0, c0 = time.perf_counter(), time.process_time()
result = simulate(topo, spec["algorithm"], spec["size"], model=spec.get("model"), faults=spec.get("faults"))
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "engine": result.replay.engine, "sim_time_s": result.time_s}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", nargs="*", choices=sorted(CASES), default=sorted(CASES))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| run | engine | wall s (median; runs) | CPU s (median) | peak MB (median) | simulated |")
    print("|---|---|---|---|---|---|")
    for name in args.case:
        for compiled in (False, True):
            runs = [in_fresh_process(_RUN, {**CASES[name], "compiled": compiled}) for _ in range(args.repeat)]
            walls = [run["wall_s"] for run in runs]
            times = {run["sim_time_s"] for run in runs}
            print(f"| {name} | {'compiled' if compiled else 'SimPy'} ({runs[0]['engine']}) | "
                  f"{statistics.median(walls):.2f} ({', '.join(f'{w:.2f}' for w in walls)}) | "
                  f"{statistics.median(run['cpu_s'] for run in runs):.2f} | "
                  f"{statistics.median(run['peak_mb'] for run in runs):,.0f} | "
                  f"{', '.join(f'{t * 1e3:.9f} ms' for t in sorted(times))} |", flush=True)


if __name__ == "__main__":
    main()
