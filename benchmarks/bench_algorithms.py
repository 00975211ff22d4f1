"""Every algorithm on a leaf-spine (H100, 8 GPUs per host, 16 hosts per rack, 8 spines), 1 GiB.

Run: ``python -m benchmarks.bench_algorithms --gpus 8 256 --repeat 3`` (and
``--sharp --algorithms collnet_direct collnet_chain`` for CollNet, which needs SHARP
switches). Times the full ``simnet.simulate`` path under ``--model`` (default ``nccl``,
simnet's default) and prints, per algorithm: NCCL's protocol, channels, transfers, wall
time (median), simulated AllReduce time and busbw; "n/a" where the algorithm refuses the
cluster (e.g. ``nvls_tree`` on one host).
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.bench_engine import cluster
from simnet.model.interface import DEFAULT_MODEL, MODELS, plan
from simnet.run.simulate import simulate
from simnet.schedule.catalog import ALGORITHMS, build_program


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, nargs="+", default=[8, 256])
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS))
    parser.add_argument("--size", type=int, default=2**30)
    parser.add_argument("--model", choices=MODELS, default=DEFAULT_MODEL)
    parser.add_argument("--sharp", action="store_true", help="ToRs and spines reduce in the network (CollNet)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| N | algorithm | protocol | channels | engine | transfers | wall s (median) | simulated time "
          "| busbw GB/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for gpus in args.gpus:
        topo = cluster(gpus, sharp=args.sharp)
        for algorithm in args.algorithms:
            walls = []
            try:
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    result = simulate(topo, algorithm, args.size, model=args.model)
                    walls.append(time.perf_counter() - start)
            except ValueError as error:
                print(f"| {gpus} | {algorithm} | n/a: {error} | | | | | | |", flush=True)
                continue
            run = result.replay  # a lane replay holds no schedule: count what it would expand to
            transfers = len(run.schedule) if run.schedule is not None else len(build_program(
                algorithm, topo, args.size, **plan(args.model, topo, algorithm, args.size, {},
                                                   ALGORITHMS[algorithm].options).options))
            print(f"| {gpus} | {algorithm} | {result.protocol or '-'} | {result.channels or '-'} | {run.engine} | "
                  f"{transfers:,} | {statistics.median(walls):.2f} | "
                  f"{result.time_s * 1e3:.2f} ms | {result.busbw_GBps:.1f} |", flush=True)


if __name__ == "__main__":
    main()
