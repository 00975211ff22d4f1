"""AllToAll benchmark: NCCL's AllToAll (``direct``, PXN across hosts) of 64 MiB per rank on
DGX SuperPOD H100 fabrics of 1, 4 and 16 scalable units (256, 1,024, 4,096 GPUs; the 4-SU
fabric is the 1-SU preset with ``units: 4``). Each run is one fresh Python process: wall
time from topology load to result (or to the one-line refusal), peak resident memory, the
simulated time. ``python -m benchmarks.bench_alltoall --units 1 4 16 --repeat 3``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, resource, sys, time
import yaml
import simnet
from simnet.errors import CannotSimulate
units, size = int(sys.argv[1]), int(sys.argv[2])
t = time.time()
document = yaml.safe_load(open(sys.argv[3]))
document["name"], document["generate"]["units"] = f"superpod-h100-{units}su", units
topo = simnet.topology_from_dict(document)
try:
    result = simnet.simulate(topo, "auto", size, collective="all_to_all")
    answer = {"algorithm": result.algorithm, "simulated_s": result.time_s}
except CannotSimulate as exc:
    answer = {"refused": str(exc)}
answer.update(gpus=len(topo.gpus), wall_s=time.time() - t,
              peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(answer))
"""


def run(units: int, size: int) -> dict:
    """One fresh process: the AllToAll over ``units`` SUs."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(units), str(size),
                          str(ROOT / "topologies" / "superpod_h100_1su.yaml")],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--size", type=int, default=64 * 2**20, help="bytes per rank's send buffer")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print("| SUs | GPUs | answer | wall s (median; runs) | peak MB (median) |")
    print("|---|---|---|---|---|")
    for units in args.units:
        runs = [run(units, args.size) for _ in range(args.repeat)]
        first = runs[0]
        answer = (f"{first['algorithm']}, {first['simulated_s'] * 1e3:.6f} ms" if "refused" not in first
                  else "refused: " + first["refused"].split(":")[0])
        walls = [r["wall_s"] for r in runs]
        print(f"| {units} | {first['gpus']:,} | {answer} | {statistics.median(walls):.1f} "
              f"({', '.join(f'{w:.1f}' for w in walls)}) | {statistics.median(r['peak_mb'] for r in runs):,.0f} |")


if __name__ == "__main__":
    main()
