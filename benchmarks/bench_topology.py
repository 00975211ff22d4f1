"""Topology benchmark: build a leaf-spine (8 GPUs per host) and route every ring neighbour.

Run: ``python -m benchmarks.bench_topology --gpus 1024 4096 --repeat 5``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.bench_engine import cluster


def measure(gpus: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    topo = cluster(gpus)
    t1 = time.perf_counter()
    n = len(topo.gpus)
    for i in range(n):
        topo.route_indices(topo.gpus[i], topo.gpus[(i + 1) % n])
    return t1 - t0, time.perf_counter() - t1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print("| N | load s (median) | route all ring neighbours s (median) | total s |")
    print("|---|---|---|---|")
    for gpus in args.gpus:
        runs = [measure(gpus) for _ in range(args.repeat)]
        load = statistics.median(r[0] for r in runs)
        route = statistics.median(r[1] for r in runs)
        print(f"| {gpus} | {load:.2f} | {route:.2f} | {load + route:.2f} |", flush=True)


if __name__ == "__main__":
    main()
