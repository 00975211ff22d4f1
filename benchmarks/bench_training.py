"""Training-step benchmark: one step of a transformer laid out over a SuperPOD preset.

Each run is one fresh Python process that loads the preset and calls
``simnet.run.training.step_time`` (as ``simnet run`` does for a ``training:`` scenario): every
tensor-, pipeline- and data-parallel group's collective simulated with all groups of a kind
at once on the shared fabric. It reports the wall time from topology load to result, the
peak resident memory (``ru_maxrss``), and the simulated step time and MFU.

Run: ``python -m benchmarks.bench_training --preset topologies/superpod_h100_1su.yaml
topologies/superpod_h100_16su.yaml topologies/superpod_h100_64su.yaml --repeat 3``
(default layout: Llama 3 70B, tp 8, pp 4, 16 micro-batches, 50 % of the H100's peak).
"""

from __future__ import annotations

import argparse
import statistics

from benchmarks.bench_engine import in_fresh_process

_RUN = """
import json, resource, sys, time
t0 = time.perf_counter()
from simnet import load_topology
from simnet.workloads.transformer import PRESETS, Parallelism
from simnet.run.training import step_time
spec = json.loads(sys.argv[1])
topo = load_topology(spec["preset"])
t1 = time.perf_counter()
par = Parallelism(tp=spec["tp"], pp=spec["pp"], fsdp=spec["fsdp"], micro_batches=spec["micro_batches"])
step = step_time(topo, PRESETS[spec["model"]], par, efficiency=spec["efficiency"])
t2 = time.perf_counter()
print(json.dumps({"gpus": step.gpus, "groups": {f"{c['kind']} {c['collective']}": c["groups"]
                                                 for c in step.collectives},
                  "load_s": t1 - t0, "total_s": t2 - t0, "step_s": step.step_s, "mfu": step.mfu,
                  "peak_MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", nargs="+", required=True, help="topology files")
    parser.add_argument("--model", default="llama3_70b")
    parser.add_argument("--tp", type=int, default=8)
    parser.add_argument("--pp", type=int, default=4)
    parser.add_argument("--fsdp", action="store_true")
    parser.add_argument("--micro-batches", type=int, default=16)
    parser.add_argument("--efficiency", type=float, default=0.5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| preset | GPUs | groups (kind collective: count) | import + load s | total s (median) | peak MB "
          "| step | MFU |")
    print("|---|---|---|---|---|---|---|---|")
    for preset in args.preset:
        spec = {"preset": preset, "model": args.model, "tp": args.tp, "pp": args.pp, "fsdp": args.fsdp,
                "micro_batches": args.micro_batches, "efficiency": args.efficiency}
        runs = [in_fresh_process(_RUN, spec) for _ in range(args.repeat)]
        first = runs[0]
        groups = ", ".join(f"{kind}: {count:,}" for kind, count in first["groups"].items())
        each = ", ".join(f"{r['total_s']:.1f}" for r in runs)
        print(f"| {preset} | {first['gpus']:,} | {groups} | {statistics.median(r['load_s'] for r in runs):.1f} "
              f"| {statistics.median(r['total_s'] for r in runs):.1f} ({each}) "
              f"| {max(r['peak_MB'] for r in runs):,.0f} | {first['step_s']:.3f} s | {first['mfu']:.1%} |", flush=True)


if __name__ == "__main__":
    main()
