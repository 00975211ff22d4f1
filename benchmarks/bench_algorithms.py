"""Every algorithm on a leaf-spine (8 GPUs per host, 16 hosts per rack, 8 spines), 1 GiB.

Run: ``python -m benchmarks.bench_algorithms --gpus 8 256 1024 --repeat 3``. Prints wall
time (median), transfers and the simulated AllReduce time and busbw per algorithm.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.bench_engine import cluster
from simnet.collectives import ALGORITHMS
from simnet.runner import simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, nargs="+", default=[8, 256, 1024])
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS))
    parser.add_argument("--size", type=int, default=2**30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| N | algorithm | transfers | wall s (median) | simulated time | busbw GB/s |")
    print("|---|---|---|---|---|---|")
    for gpus in args.gpus:
        topo = cluster(gpus)
        for algorithm in args.algorithms:
            walls = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                result = simulate(topo, algorithm, args.size)
                walls.append(time.perf_counter() - start)
            print(f"| {gpus} | {algorithm} | {len(result.replay.schedule):,} | {statistics.median(walls):.2f} | "
                  f"{result.time_s * 1e3:.2f} ms | {result.busbw_GBps:.1f} |", flush=True)


if __name__ == "__main__":
    main()
