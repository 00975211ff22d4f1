"""Topology benchmark: build a leaf-spine (8 GPUs per host) and route every ring neighbour;
or load preset files and route every ring neighbour and 256 pairs far apart.

Run: ``python -m benchmarks.bench_topology --gpus 1024 4096 --repeat 5`` or
``python -m benchmarks.bench_topology --preset topologies/superpod_h100_64su.yaml --repeat 3``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.bench_engine import cluster


def _route_ring(topo) -> None:
    n = len(topo.gpus)
    for i in range(n):
        topo.route_indices(topo.gpus[i], topo.gpus[(i + 1) % n])


def measure(gpus: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    topo = cluster(gpus)
    t1 = time.perf_counter()
    _route_ring(topo)
    return t1 - t0, time.perf_counter() - t1


def measure_preset(path: str) -> tuple[int, float, float, float]:
    """(GPUs, load s, ring neighbours s, 256 far pairs s) for one topology file."""
    from simnet import load_topology

    t0 = time.perf_counter()
    topo = load_topology(path)
    t1 = time.perf_counter()
    _route_ring(topo)
    n = len(topo.gpus)
    t2 = time.perf_counter()
    for i in range(256):  # rank i*n/256 to the rank half the cluster away: across pods where there are pods
        a = i * n // 256
        topo.route_indices(topo.gpus[a], topo.gpus[(a + n // 2 + 1) % n])
    return n, t1 - t0, t2 - t1, time.perf_counter() - t2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--preset", nargs="+", help="topology files to load and route instead of --gpus")
    args = parser.parse_args()
    if args.preset:
        print("| file | GPUs | load s | ring neighbours s | 256 far pairs s |")
        print("|---|---|---|---|---|")
        for path in args.preset:
            runs = [measure_preset(path) for _ in range(args.repeat)]
            cells = " | ".join(f"{statistics.median(r[k] for r in runs):.2f}" for k in (1, 2, 3))
            print(f"| `{path}` | {runs[0][0]:,} | {cells} |", flush=True)
        return
    print("| N | load s (median) | route all ring neighbours s (median) | total s |")
    print("|---|---|---|---|")
    for gpus in args.gpus:
        runs = [measure(gpus) for _ in range(args.repeat)]
        load = statistics.median(r[0] for r in runs)
        route = statistics.median(r[1] for r in runs)
        print(f"| {gpus} | {load:.2f} | {route:.2f} | {load + route:.2f} |", flush=True)


if __name__ == "__main__":
    main()
