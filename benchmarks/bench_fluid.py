"""Fluid engine benchmark: the cost of one simulated instant where max-min sharing binds.

Each run is one fresh Python process that calls ``simnet.simulate`` for ``hierarchical``
(both its variants, replayed by the fluid engine: its cross-rack shards contend on 4:1
oversubscribed uplinks) on ``topologies/two_racks.yaml`` (64 H100), 256 MiB by default,
and reports the wall and CPU time of the call (the schedules' build included), the
instants the fluid network settled (``FluidNetwork._settle`` calls), the wall time per
instant and the simulated time, which must not change with the engine's speed.
Run: ``python -m benchmarks.bench_fluid --repeat 3``.
"""

from __future__ import annotations

import argparse
import statistics

from benchmarks.bench_engine import in_fresh_process

_RUN = """
import json, sys, time
from simnet import load_topology, simulate
from simnet.engine.fluid import FluidNetwork
spec = json.loads(sys.argv[1])
settle, instants = FluidNetwork._settle, [0]
def counted(self):
    instants[0] += 1
    settle(self)
FluidNetwork._settle = counted
topo = load_topology(spec["topology"])
t0, c0 = time.perf_counter(), time.process_time()
result = simulate(topo, spec["algorithm"], spec["size"])
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "instants": instants[0],
                  "sim_time_s": result.time_s}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--topology", default="topologies/two_racks.yaml")
    parser.add_argument("--algorithm", default="hierarchical")
    parser.add_argument("--size", type=int, default=256 * 2**20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spec = {"topology": args.topology, "algorithm": args.algorithm, "size": args.size}
    runs = [in_fresh_process(_RUN, spec) for _ in range(args.repeat)]
    wall = statistics.median(r["wall_s"] for r in runs)
    instants = runs[0]["instants"]
    each = ", ".join(f"{r['wall_s']:.2f}" for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    print(f"{args.algorithm} on {args.topology}, {args.size:,} B: wall {wall:.2f} s (median; {each}), CPU {cpu:.2f} s, "
          f"{instants:,} instants, {wall / instants * 1e6:.0f} us per instant, simulated {runs[0]['sim_time_s']!r} s")


if __name__ == "__main__":
    main()
