"""Engine benchmark: NCCL's Ring AllReduce of 1 GiB over a leaf-spine cluster (8 GPUs per host).

Builds and replays the schedule as ``simnet.simulate`` does (less its link reports and
warnings) under each ``--model`` (``nccl``, the default model, and ``ideal``, line rate),
with NCCL's default channel count for the cluster (8 here, one ring per NIC rail) unless
``--channels`` is given (``--channels 1`` is the single textbook ring). Measures, per N and
model: schedule build time, the model's timing of it, replay wall time, transfers per
second, peak memory (tracemalloc, one extra run) and the simulated AllReduce time.
Run: ``python -m benchmarks.bench_engine --gpus 64 256 1024 --model nccl ideal --repeat 3``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

from simnet import topology_from_dict
from simnet.collectives import ALGORITHMS, build_schedule, replay
from simnet.model import MODELS, plan, timing


def cluster(gpus: int, sharp: bool = False):
    """A leaf-spine of ``gpus`` GPUs (H100): 8 per host, up to 16 hosts per rack, 8 spines, 1:1;
    ``sharp``: the ToRs and spines reduce in the network (for CollNet)."""
    hosts = max(1, gpus // 8)
    racks = max(1, hosts // 16)
    return topology_from_dict({"name": f"leaf-spine-{gpus}", "generate": {
        "kind": "leaf_spine", "racks": racks, "hosts_per_rack": hosts // racks, "gpus_per_host": min(gpus, 8),
        "spines": 8, "oversubscription": 1, "sharp": sharp}})


def measure(gpus: int, size: int, algorithm: str = "ring", model: str = "nccl", channels: int | None = None,
            memory: bool = False) -> dict:
    if memory:
        tracemalloc.start()
    t0 = time.perf_counter()
    topo = cluster(gpus)
    t1 = time.perf_counter()
    options = {"channels": channels} if channels else {}
    decided = plan(model, topo, algorithm, size, options, ALGORITHMS[algorithm].options)
    schedule = build_schedule(algorithm, topo, size, **decided.options)
    t2 = time.perf_counter()
    timed = timing(decided, schedule, topo)
    t3 = time.perf_counter()
    result = replay(schedule, topo, timing=timed)
    t4 = time.perf_counter()
    peak = tracemalloc.get_traced_memory()[1] if memory else 0
    if memory:
        tracemalloc.stop()
    return {"gpus": gpus, "transfers": len(schedule), "channels": schedule.info.get("channels"),
            "protocol": decided.protocol, "topology_s": t1 - t0, "build_s": t2 - t1, "model_s": t3 - t2,
            "replay_s": t4 - t3, "total_s": t4 - t0, "sim_time_s": result.time, "peak_MB": peak / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--size", type=int, default=2**30)
    parser.add_argument("--algorithm", default="ring")
    parser.add_argument("--model", nargs="+", choices=MODELS, default=["nccl"])
    parser.add_argument("--channels", type=int, default=None, help="default: NCCL's for the cluster")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| N | model (protocol) | channels | transfers | build s | model s | replay s | total s (median) "
          "| transfers/s | peak MB | simulated |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for gpus in args.gpus:
        for model in args.model:
            runs = [measure(gpus, args.size, args.algorithm, model, args.channels) for _ in range(args.repeat)]
            mem = measure(gpus, args.size, args.algorithm, model, args.channels, memory=True)["peak_MB"]
            med = {k: statistics.median(r[k] for r in runs) for k in ("total_s", "build_s", "model_s", "replay_s")}
            first = runs[0]
            label = f"{model} ({first['protocol']})" if first["protocol"] else model
            runs_s = ", ".join(f"{r['total_s']:.2f}" for r in runs)
            print(f"| {gpus} | {label} | {first['channels']} | {first['transfers']:,} | {med['build_s']:.2f} | "
                  f"{med['model_s']:.2f} | {med['replay_s']:.2f} | {med['total_s']:.2f} ({runs_s}) | "
                  f"{first['transfers'] / med['total_s']:,.0f} | {mem:,.0f} | {first['sim_time_s'] * 1e3:.2f} ms |",
                  flush=True)


if __name__ == "__main__":
    main()
