"""Engine benchmark: a ring AllReduce of 1 GiB over a leaf-spine cluster (8 GPUs per host).

Measures, per N: schedule build time, replay wall time, transfers per second and peak
memory (tracemalloc). Run: ``python -m benchmarks.bench_engine --gpus 64 256 1024 --repeat 3``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

from simnet import topology_from_dict
from simnet.collectives import build_schedule, replay


def cluster(gpus: int):
    """A leaf-spine of ``gpus`` GPUs: 8 per host, up to 16 hosts per rack, 8 spines, 1:1."""
    hosts = max(1, gpus // 8)
    racks = max(1, hosts // 16)
    return topology_from_dict({"name": f"leaf-spine-{gpus}", "generate": {
        "kind": "leaf_spine", "racks": racks, "hosts_per_rack": hosts // racks, "gpus_per_host": min(gpus, 8),
        "spines": 8, "oversubscription": 1}})


def measure(gpus: int, size: int, algorithm: str = "ring", memory: bool = False) -> dict:
    if memory:
        tracemalloc.start()
    t0 = time.perf_counter()
    topo = cluster(gpus)
    t1 = time.perf_counter()
    schedule = build_schedule(algorithm, topo, size)
    t2 = time.perf_counter()
    result = replay(schedule, topo)
    t3 = time.perf_counter()
    peak = tracemalloc.get_traced_memory()[1] if memory else 0
    if memory:
        tracemalloc.stop()
    return {"gpus": gpus, "transfers": len(schedule), "topology_s": t1 - t0, "build_s": t2 - t1,
            "replay_s": t3 - t2, "total_s": t3 - t0, "sim_time_s": result.time, "peak_MB": peak / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--size", type=int, default=2**30)
    parser.add_argument("--algorithm", default="ring")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| N | transfers | build s | replay s | total s (median) | transfers/s | peak MB | simulated |")
    print("|---|---|---|---|---|---|---|---|")
    for gpus in args.gpus:
        runs = [measure(gpus, args.size, args.algorithm) for _ in range(args.repeat)]
        mem = measure(gpus, args.size, args.algorithm, memory=True)["peak_MB"]
        median = statistics.median(r["total_s"] for r in runs)
        build = statistics.median(r["build_s"] for r in runs)
        rep = statistics.median(r["replay_s"] for r in runs)
        n = runs[0]["transfers"]
        print(f"| {gpus} | {n} | {build:.2f} | {rep:.2f} | {median:.2f} | {n / median:,.0f} | {mem:.0f} | "
              f"{runs[0]['sim_time_s'] * 1e3:.2f} ms |", flush=True)


if __name__ == "__main__":
    main()
