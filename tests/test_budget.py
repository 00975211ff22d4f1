"""A run too large for the memory simnet may use is refused in one line before it allocates."""

from __future__ import annotations

import pytest

from simnet.io.budget import TooLarge, memory_budget
from simnet.schedule.catalog import build_schedule
from simnet.schedule.transfers import TRANSFER_BYTES, transfer_bytes
from simnet.topology.loader import topology_from_dict


def _cluster(gpus: int):
    hosts = max(1, gpus // 8)
    return topology_from_dict({"name": "ls", "generate": {"kind": "leaf_spine", "racks": 1, "hosts_per_rack": hosts,
                                                           "gpus_per_host": min(gpus, 8), "spines": 2}})


def test_budget_is_free_memory_or_the_override(monkeypatch):
    monkeypatch.delenv("SIMNET_MEMORY", raising=False)
    assert 0 < memory_budget()
    monkeypatch.setenv("SIMNET_MEMORY", "3 GiB")
    assert memory_budget() == 3 * 2**30
    monkeypatch.setenv("SIMNET_MEMORY", "lots")
    with pytest.raises(ValueError, match="SIMNET_MEMORY"):
        memory_budget()


@pytest.mark.parametrize("gpus, options", [(16, {}), (32, {"chunk_size": 2**20}), (24, {"channels": 3}),
                                           (8, {"chunk_size": 100_000})])
def test_ring_knows_its_transfer_count_before_building(monkeypatch, gpus, options):
    """The ring's up-front count is exact: a budget of exactly its transfers builds, one byte
    less is refused by the count ("needs N", not "needs over N"), before any transfer exists."""
    topo = _cluster(gpus)
    n = len(build_schedule("ring", topo, 2**26, **options))
    monkeypatch.setenv("SIMNET_MEMORY", f"{n * TRANSFER_BYTES} B")
    assert len(build_schedule("ring", topo, 2**26, **options)) == n
    monkeypatch.setenv("SIMNET_MEMORY", f"{n * TRANSFER_BYTES - 1} B")
    with pytest.raises(TooLarge, match=rf"^ring over {gpus} GPUs at 64 MiB needs {n:,} transfers"):
        build_schedule("ring", topo, 2**26, **options)


@pytest.mark.parametrize("algorithm", ["tree", "hierarchical", "halving_doubling", "direct", "ps"])
def test_every_algorithm_stops_at_the_budget(monkeypatch, algorithm):
    topo = _cluster(16)
    n = len(build_schedule(algorithm, topo, 2**26))
    monkeypatch.setenv("SIMNET_MEMORY", f"{n * transfer_bytes(algorithm)} B")
    assert len(build_schedule(algorithm, topo, 2**26)) == n
    monkeypatch.setenv("SIMNET_MEMORY", f"{n * transfer_bytes(algorithm) - 1} B")
    with pytest.raises(TooLarge, match=rf"^{algorithm} over 16 GPUs at 64 MiB needs"):
        build_schedule(algorithm, topo, 2**26)


def test_cli_refuses_in_one_line_and_writes_nothing(cli, root, tmp_path):
    out = tmp_path / "r.json"
    result = cli("run", root / "scenarios/cross_rack.yaml", "-a", "direct", "-s", "1 GiB", "--json", out,
                 env={"SIMNET_MEMORY": "1 MiB"})
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "cross_rack.yaml: direct over 64 GPUs at 1 GiB needs" in lines[0]
    assert "fewer GPUs, a larger chunk_size" in lines[0]
    assert not out.exists()


@pytest.mark.parametrize("algorithm", ["ring", "tree", "direct", "naive", "hierarchical", "halving_doubling"])
def test_the_estimate_bounds_the_memory_a_run_really_takes(algorithm, tmp_path):
    """Run in a fresh process: the peak resident memory the run adds stays below transfers x
    transfer_bytes(algorithm) + 64 MB of fixed tables, so the guard refuses before the kernel
    would have to. Fixed costs are left out of what it adds: the interpreter, the loaded
    topology and the compiled network's code (loaded first: whether a run takes the compiled
    network depends on how long SimPy took, so on the machine's load)."""
    import subprocess
    import sys

    script = f"""
import gc, resource
from simnet import simulate, topology_from_dict
from simnet.engine.replay import compiled_available, replay
from simnet.schedule.catalog import build_schedule
topo = topology_from_dict({{"name": "ls", "generate": {{"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 4,
                                                        "gpus_per_host": 8, "spines": 4}}}})
count = len(build_schedule("{algorithm}", topo, 2**28))
replay(build_schedule("{algorithm}", topo, 2**10), topo, compiled=compiled_available())  # load the compiled code
gc.collect()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
simulate(topo, "{algorithm}", 2**28, model="ideal")
print(count, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    count, extra = map(int, out.split())
    assert extra <= count * transfer_bytes(algorithm) + 64e6, (count, extra)
