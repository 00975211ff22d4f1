"""Start-up included: ``simnet run`` end to end, as a user types it, on issue 34's ASTRA-sim
comparison point, a 1 GiB single-channel ring under ``model: ideal`` over N GPUs on one
switch (``{kind: nvswitch, gpus: N}``) and with a leaf per GPU (``{kind: leaf_spine,
racks: N, hosts_per_rack: 1, gpus_per_host: 1, spines: 1}``).

Each run is a new process (``simnet run FILE > /dev/null``): wall seconds and CPU seconds
(user + system, the children's), medians over ``--repeat``. With ``--before PATH`` (a
checkout of another commit) the runs alternate between that checkout (put first on
``PYTHONPATH``) and the installed simnet, so both see the same load. Where
``PYTHONDONTWRITEBYTECODE`` is set, compile both checkouts first (``python -m compileall -q
simnet``), as ``pip install`` does: else every run compiles simnet's modules anew (0.2 s).

Run: ``python -m benchmarks.bench_startup --gpus 256 1024 --repeat 7`` or
``python -m benchmarks.bench_startup --gpus 256 --before /path/to/old/checkout``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAYOUTS = {
    "one switch": "{{kind: nvswitch, gpus: {n}}}",
    "a leaf per GPU": "{{kind: leaf_spine, racks: {n}, hosts_per_rack: 1, gpus_per_host: 1, spines: 1}}",
}
"""The two fabrics of issue 34's comparison with ASTRA-sim's analytical backend."""


def scenario(folder: Path, layout: str, gpus: int) -> Path:
    path = folder / f"ring_{gpus}_{layout.replace(' ', '_')}.yaml"
    path.write_text(f"name: ring\ntopology: {{name: fabric, generate: {LAYOUTS[layout].format(n=gpus)}}}\n"
                    "sizes: [1 GiB]\nalgorithms: [ring]\nmodel: ideal\noptions: {channels: 1}\n")
    return path


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one run of ``command``, its output thrown away."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, nargs="+", default=[256])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", type=Path, help="a checkout of another commit, run alternately with this one")
    args = parser.parse_args()
    simnet = shutil.which("simnet") or sys.exit("simnet is not on PATH (pip install -e .)")
    versions = {"this": os.environ.copy()}
    if args.before:
        versions = {"before": {**os.environ, "PYTHONPATH": str(args.before.resolve())}, **versions}
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| layout | GPUs | simnet | wall s (median) | CPU s (median) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for gpus in args.gpus:
            for layout in LAYOUTS:
                path = scenario(Path(folder), layout, gpus)
                runs: dict[str, list[tuple[float, float]]] = {name: [] for name in versions}
                for _ in range(args.repeat):
                    for name, env in versions.items():
                        runs[name].append(timed([simnet, "run", str(path)], env))
                for name, times in runs.items():
                    walls = [w for w, _ in times]
                    print(f"| {layout} | {gpus:,} | {name} | {statistics.median(walls):.2f} "
                          f"({', '.join(f'{w:.2f}' for w in walls)}) | "
                          f"{statistics.median(c for _, c in times):.2f} |", flush=True)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
