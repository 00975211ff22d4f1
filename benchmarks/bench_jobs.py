"""Jobs benchmark: two small AllReduces repeated on one fabric, as ``simnet run`` runs a ``jobs:`` scenario.

Each case is two jobs on a 2-rack leaf-spine with 100 Gb/s uplinks, one repeating every
7 us and the other every 11 us, ``--runs`` times each. Their runs outlast those periods
(NCCL's launch latency alone is ~10 us), so each is issued when the one before ends, and
while both jobs run the network is never idle; ``simnet run`` replays each job alone, then
both together (the interference matrix's pair is that replay). Cases:

* ``2gpu-1m``: fuzz 31d case 526 (issue 34's "repeat: 10000 on two jobs"): 2-GPU rings of
  1 KiB and 1 MiB (the 1 KiB job is done first; the other then repeats alone);
* ``2gpu-64k``: the same with 64 KiB for the second job (both run to the end together);
* ``8gpu-64k``: 8-GPU jobs (4 GPUs on each of 2 hosts; NCCL picks Tree) of 1 KiB and 64 KiB.

Each run is a fresh Python process (``simnet run FILE --json``): wall and CPU seconds from
start-up to the answer (import included), peak resident memory, and each job's last run's
end. Run: ``python -m benchmarks.bench_jobs --case 2gpu-1m 2gpu-64k --runs 10000 --repeat 3``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from benchmarks.bench_engine import in_fresh_process

_RUN = """
import json, os, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from simnet.cli.main import main
spec = json.loads(sys.argv[1])
sys.argv = ["simnet", "run", spec["file"], "--json", spec["out"]]
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
document = json.load(open(spec["out"]))
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                  "peak_MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "finished_s": [job["finished_s"] for job in document["jobs"]]}))
"""

_FABRIC = "{{name: ls, generate: {{kind: leaf_spine, racks: 2, hosts_per_rack: 1, gpus_per_host: {per_host}, " \
          "spines: 1, uplink_bandwidth: 100 Gb/s}}}}"

CASES = {  # name: (GPUs per host, GPUs of each job on each host, sizes)
    "2gpu-1m": (2, 1, ("1 KiB", "1 MiB")),
    "2gpu-64k": (2, 1, ("1 KiB", "64 KiB")),
    "8gpu-64k": (8, 4, ("1 KiB", "64 KiB")),
}


def scenario(case: str, runs: int) -> str:
    """The ``jobs:`` scenario of ``case`` with ``runs`` runs of each job, as YAML."""
    per_host, each, sizes = CASES[case]
    lines = [f"name: {case}", "topology: " + _FABRIC.format(per_host=per_host), "jobs:"]
    for j, (name, size, period) in enumerate(zip("ab", sizes, ("7 us", "11 us"))):
        gpus = [f"r{rack}h0-gpu{j * each + g}" for rack in (0, 1) for g in range(each)]
        lines.append(f"  - {{name: {name}, gpus: [{', '.join(gpus)}], size: {size}, repeat: {runs}, "
                     f"period: {period}}}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", nargs="+", choices=sorted(CASES), default=["2gpu-1m"])
    parser.add_argument("--runs", type=int, nargs="+", default=[10_000], help="runs of each job; several: a row each")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| case | runs each | wall s (median; each) | CPU s (median) | peak MB | last runs end (a, b) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.case:
            for count in args.runs:
                path = Path(tmp) / f"{case}.yaml"
                path.write_text(scenario(case, count))
                spec = {"file": str(path), "out": str(Path(tmp) / f"{case}.json")}
                rows = [in_fresh_process(_RUN, spec) for _ in range(args.repeat)]
                each = ", ".join(f"{r['wall_s']:.1f}" for r in rows)
                ends = ", ".join(f"{end * 1e3:.6f} ms" for end in rows[0]["finished_s"])
                print(f"| {case} | {count:,} | {statistics.median(r['wall_s'] for r in rows):.1f} ({each}) "
                      f"| {statistics.median(r['cpu_s'] for r in rows):.1f} | {max(r['peak_MB'] for r in rows):,.0f} "
                      f"| {ends} |", flush=True)
                assert all(r["finished_s"] == rows[0]["finished_s"] for r in rows), "runs disagree"


if __name__ == "__main__":
    main()
