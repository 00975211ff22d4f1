"""Engine benchmark: NCCL's Ring (or another algorithm) AllReduce of 1 GiB (or other sizes), end to end.

Each run is one fresh Python process that loads the cluster and calls ``simnet.simulate``
as ``simnet run`` does (schedule or lane program, the model's timing, the replay, link
reports); it reports the wall time from topology load to result, the peak resident
memory of the process (``ru_maxrss``, the interpreter and imports included; the table gives
the median of the runs and each run's), which engine ran (``lanes``, ``lanes-bounds-meet``,
``lanes-steady`` or ``fluid``, ``simnet.engine.lanes``), the transfers the schedule holds (or
would hold, expanded) and the simulated time (to the picosecond). ``--engine fluid`` forces the fluid
engine (``timeline=True``), for comparison where it fits in memory.

The cluster is ``cluster(N)`` (a leaf-spine of H100 hosts, 8 GPUs each) unless ``--preset``
names topology files (the rail-optimized SuperPOD presets) or ``--rail`` counts of scalable
units of the ``rail_optimized`` generator (256 H100s each: ``--rail 4`` is 1,024 GPUs, which
no preset has).
Run: ``python -m benchmarks.bench_engine --gpus 64 256 1024 4096 --repeat 3``;
``--plot scaling.png`` draws wall time and memory against GPUs. NVLSTree over NVL72 racks:
``--preset topologies/gb200_nvl72_20racks.yaml --algorithm nvls_tree --size 536870912 1073741824``;
the ideal ring over rail fabrics: ``--rail 1 4 --model ideal``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from simnet import topology_from_dict, units


def cluster(gpus: int, sharp: bool = False):
    """A leaf-spine of ``gpus`` GPUs (H100): 8 per host, up to 16 hosts per rack, 8 spines, 1:1;
    ``sharp``: the ToRs and spines reduce in the network (for CollNet)."""
    hosts = max(1, gpus // 8)
    racks = max(1, hosts // 16)
    return topology_from_dict({"name": f"leaf-spine-{gpus}", "generate": {
        "kind": "leaf_spine", "racks": racks, "hosts_per_rack": hosts // racks, "gpus_per_host": min(gpus, 8),
        "spines": 8, "oversubscription": 1, "sharp": sharp}})


_RUN = """
import json, resource, sys, time
t0 = time.perf_counter()
from benchmarks.bench_engine import cluster
from simnet import load_topology, simulate
from simnet.schedule.catalog import ALGORITHMS
from simnet.schedule.catalog import build_program
from simnet.model.interface import plan
spec = json.loads(sys.argv[1])
if spec.get("rail"):
    from simnet import topology_from_dict
    topo = topology_from_dict({"name": f"rail-{spec['rail']}su",
                               "generate": {"kind": "rail_optimized", "units": spec["rail"]}})
else:
    topo = load_topology(spec["preset"]) if spec["preset"] else cluster(spec["gpus"])
t1 = time.perf_counter()
options = {"channels": spec["channels"]} if spec["channels"] else {}
result = simulate(topo, spec["algorithm"], spec["size"], model=spec["model"], timeline=spec["engine"] == "fluid",
                  **options)
t2 = time.perf_counter()
run = result.replay
if run.schedule is not None:
    transfers = len(run.schedule)
else:  # the transfers the lane program stands for
    decided = plan(spec["model"], topo, spec["algorithm"], spec["size"], options, ALGORITHMS[spec["algorithm"]].options)
    transfers = len(build_program(spec["algorithm"], topo, spec["size"], **decided.options))
print(json.dumps({"gpus": len(topo.gpus), "engine": run.engine, "protocol": result.protocol,
                  "channels": result.channels, "transfers": transfers, "load_s": t1 - t0, "simulate_s": t2 - t1,
                  "total_s": t2 - t0, "sim_time_s": result.time_s,
                  "peak_MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(gpus: int, size: int = 2**30, algorithm: str = "ring", model: str = "nccl", channels: int | None = None,
            preset: str | None = None, engine: str = "auto", rail: int | None = None) -> dict:
    """One run in a fresh process (see the module docstring)."""
    return in_fresh_process(_RUN, {"gpus": gpus, "size": size, "algorithm": algorithm, "model": model,
                                   "channels": channels, "preset": preset, "engine": engine, "rail": rail})


def in_fresh_process(script: str, spec: dict) -> dict:
    """Run ``script`` in a new interpreter with ``spec`` as JSON in ``sys.argv[1]``; the
    JSON object its last line prints."""
    out = subprocess.run([sys.executable, "-c", script, json.dumps(spec)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, nargs="*", default=[64, 256, 1024])
    parser.add_argument("--preset", nargs="*", default=[], help="topology files instead of --gpus")
    parser.add_argument("--rail", type=int, nargs="*", default=[],
                        help="rail_optimized fabrics of these many scalable units (256 H100s each) instead of --gpus")
    parser.add_argument("--size", type=int, nargs="+", default=[2**30], help="bytes; several: a row each")
    parser.add_argument("--algorithm", default="ring")
    parser.add_argument("--model", nargs="+", choices=("nccl", "ideal"), default=["nccl"])
    parser.add_argument("--channels", type=int, default=None, help="default: NCCL's for the cluster")
    parser.add_argument("--engine", choices=("auto", "fluid"), default="auto")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--plot", help="draw wall time and peak memory against GPUs into this PNG")
    args = parser.parse_args()
    print("| cluster | N | size | model (protocol) | channels | engine | transfers | import + load s "
          "| total s (median) | peak MB (median) | simulated |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    clusters = ([(p, {"preset": p}) for p in args.preset]
                or [(f"rail_optimized, {u} SU", {"rail": u}) for u in args.rail]
                or [("leaf-spine", {"gpus": g}) for g in args.gpus])
    for name, where in clusters:
        for size, model in ((size, model) for size in args.size for model in args.model):
            runs = [measure(where.get("gpus", 0), size, args.algorithm, model, args.channels, where.get("preset"),
                            args.engine, where.get("rail")) for _ in range(args.repeat)]
            first = runs[0]
            total = statistics.median(r["total_s"] for r in runs)
            rows.append((first["gpus"], total, statistics.median(r["peak_MB"] for r in runs)))
            label = f"{model} ({first['protocol']})" if first["protocol"] else model
            each = ", ".join(f"{r['total_s']:.2f}" for r in runs)
            peaks = ", ".join(f"{r['peak_MB']:,.0f}" for r in runs)
            print(f"| {name} | {first['gpus']:,} | {units.format_size(size)} | {label} "
                  f"| {first['channels']} | {first['engine']} | {first['transfers']:,} "
                  f"| {statistics.median(r['load_s'] for r in runs):.2f} | {total:.2f} ({each}) "
                  f"| {rows[-1][2]:,.0f} ({peaks}) "
                  f"| {first['sim_time_s'] * 1e3:.9f} ms |", flush=True)
    if args.plot:
        _plot(rows, args.plot)


ASTRA_SIM = [(1024, 3.8, None), (4096, 167.0, 6600.0)]
"""ASTRA-sim's analytical backend, one 1 GiB single-channel ring on a ring topology, built
and run on this machine by a simnet session (issue "Plan the clusters people build now"):
(NPUs, wall s, peak MB where measured)."""


def _plot(rows: list[tuple[int, float, float]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gpus, wall, memory = zip(*sorted(rows))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    left.loglog(gpus, wall, "o-", label="simnet, NCCL's Ring (8 channels)")
    left.loglog([a[0] for a in ASTRA_SIM], [a[1] for a in ASTRA_SIM], "s", color="#c44e52",
                label="ASTRA-sim analytical, 1 ring (measured here)")
    left.axhline(60, color="grey", linestyle=":", label="60 s")
    left.set_xlabel("GPUs")
    left.set_ylabel("wall time, s (1 GiB AllReduce)")
    left.legend(fontsize=8)
    right.loglog(gpus, memory, "o-", label="simnet peak resident")
    right.loglog([a[0] for a in ASTRA_SIM if a[2]], [a[2] for a in ASTRA_SIM if a[2]], "s", color="#c44e52",
                 label="ASTRA-sim")
    right.set_xlabel("GPUs")
    right.set_ylabel("peak memory, MB")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.set_xticks(gpus)
        ax.set_xticklabels([f"{g:,}" for g in gpus])
        ax.minorticks_off()
    fig.suptitle("simnet's cost against cluster size, this 2-core machine")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
