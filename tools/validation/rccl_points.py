"""simnet's RCCL model against public rccl-tests AllReduce results: the geometric-mean error
per GPU generation, overall, large (>= 128 MiB) and small (<= 1 MiB), as validate.py
measures NCCL (``max(predicted/measured, measured/predicted) - 1``, measured the faster of
the out-of-place and in-place times).

Each system is built from what its source states: one host of 8 GPUs is ``full_mesh``,
several are ``leaf_spine`` hosts on one switch with a 400 Gb/s RoCE NIC per GPU (the NIC
rate where the source does not state it). MI325X and MI355X have no public xGMI line rate:
their links are written at 64 GB/s (MI300X's); under ``model: rccl`` any rate of 48 GB/s or
more gives the same answer (RCCL's 48 GB/s per link is the effective rate). Each point runs
what RCCL would pick (``auto``'s pick, simulated alone), under the NCCL/RCCL variables of
its system that simnet follows.

    python -m tools.validation.rccl_points PATH/public_rccl_tests.yaml
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict

import yaml

import simnet
from simnet.run.calibrate import error_factor
from simnet.run.nccl_env import NCCL_VARIABLES, nccl_system
from simnet.topology.hardware import GPUS
from simnet.topology.loader import topology_from_dict
from simnet.tuning import predict, tables

__all__ = ["topology_of", "predict_point", "summary"]

LARGE, SMALL = 128 * 2**20, 2**20


def topology_of(system: dict):
    """The topology of one system of the file (its ``hardware``)."""
    hardware = system["hardware"]
    gpu, nodes = hardware["gpu"], hardware["nodes"]
    rate = {} if GPUS[gpu].nvlink_link_rate else {"bandwidth": "64 GB/s"}
    if nodes == 1:
        return topology_from_dict({"name": system["id"], "generate": {"kind": "full_mesh", "gpu": gpu, **rate}})
    fabric = {"kind": "leaf_spine", "gpu": gpu, "racks": 1, "hosts_per_rack": nodes, "spines": 1,
              "nic_bandwidth": "400 Gb/s", "transport": "roce"}
    if rate:
        fabric["nvlink_bandwidth"] = "448 GB/s"  # 7 links x 64 GB/s
    return topology_from_dict({"name": system["id"], "generate": fabric})


def predict_point(topology, point: dict, env: dict) -> tuple[str, str, float]:
    """(algorithm, protocol, time in us) simnet predicts for one AllReduce point."""
    size = int(point["size_bytes"])
    choice = predict.pick(nccl_system(topology, env), max(size, 1), env.get("NCCL_ALGO"), env.get("NCCL_PROTO"))
    result = simnet.simulate(topology, tables.SIMNET_NAMES[choice.algorithm], size, env=env)
    return result.algorithm, result.protocol, result.time_s * 1e6


def _geomean(errors: list[float]) -> float:
    return math.exp(sum(math.log1p(e) for e in errors) / len(errors)) - 1 if errors else float("nan")


def summary(path: str) -> list[tuple]:
    """Per GPU generation: (gpu, points, error overall, large, small) and every point's row."""
    data = yaml.safe_load(open(path))
    systems = {s["id"]: s for s in data["systems"]}
    errors: dict[str, list[tuple[int, float]]] = defaultdict(list)
    rows = []
    topologies = {}
    for point in data["points"]:
        system = systems[point["system"]]
        env = {k: str(v) for k, v in (system.get("env") or {}).items() if k in NCCL_VARIABLES} \
            if isinstance(system.get("env"), dict) else {}
        topology = topologies.setdefault(system["id"], topology_of(system))
        algorithm, protocol, predicted = predict_point(topology, point, env)
        measured = min(t for t in (point["time_us"], point.get("inplace_time_us")) if t)
        error = error_factor(predicted, measured)
        gpu = system["hardware"]["gpu"]
        errors[gpu].append((int(point["size_bytes"]), error))
        rows.append((point["id"], algorithm, protocol, predicted, measured, error))
    table = []
    for gpu, points in sorted(errors.items()):
        table.append((gpu, len(points), _geomean([e for _, e in points]),
                      _geomean([e for s, e in points if s >= LARGE]), _geomean([e for s, e in points if s <= SMALL])))
    every = [e for points in errors.values() for e in points]
    table.append(("all", len(every), _geomean([e for _, e in every]), _geomean([e for s, e in every if s >= LARGE]),
                  _geomean([e for s, e in every if s <= SMALL])))
    return table + [("rows", rows)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--rows", action="store_true", help="print every point too")
    args = parser.parse_args()
    *table, (_, rows) = summary(args.path)
    if args.rows:
        for name, algorithm, protocol, predicted, measured, error in rows:
            print(f"{name:45s} {algorithm:5s} {protocol:6s} {predicted:12.1f} {measured:12.1f} {error:7.1%}")
    print(f"{'gpu':8s} {'points':>6s} {'all':>7s} {'>=128MiB':>9s} {'<=1MiB':>7s}")
    for gpu, count, overall, large, small in table:
        print(f"{gpu:8s} {count:6d} {overall:7.1%} {large:9.1%} {small:7.1%}")


if __name__ == "__main__":
    main()
