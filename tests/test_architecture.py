"""The layout docs/architecture.md promises, read from the code: packages in the order data
flows, every import downstream (imports inside functions count), no cycle, no private name
borrowed across modules, and a package face that loads nothing until asked."""

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

import simnet

PACKAGE = Path(__file__).resolve().parent.parent / "simnet"

LAYERS = ("", "io", "topology", "tuning", "schedule", "model", "engine", "results", "workloads", "spec", "run",
          "report", "cli")
"""simnet's packages in the order data flows ("" is the top-level modules: errors, units,
version). A module may import its own package and the ones before it, never one after."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["simnet", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()
FACE = simnet._API
"""The package face's names and the modules they load from (``from simnet import simulate``)."""


def _imports(module: str, path: Path) -> list[tuple[str, list[str], int]]:
    """(imported simnet module, names taken from it, line) for every import in ``module``,
    at its top or inside a function."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if a.name.split(".")[0] == "simnet"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base]).strip(".")
            if base.split(".")[0] != "simnet":
                continue
            for alias in node.names:
                child = f"{base}.{alias.name}"
                if base == "simnet" and alias.name in FACE:  # a name of the lazy face: the module behind it
                    found.append((FACE[alias.name], [alias.name], node.lineno))
                else:
                    found.append((child, [], node.lineno) if child in MODULES else (base, [alias.name], node.lineno))
    return found


def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for module, path in MODULES.items():
        graph.add_node(module)
        for target, _, _ in _imports(module, path):
            while target not in MODULES:
                target = target.rpartition(".")[0]
            if target != module:
                graph.add_edge(module, target)
    return graph


def _layer(module: str) -> str:
    """The package ``module`` belongs to ("" for the top-level modules)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else ""


def test_no_import_cycle():
    cycles = [sorted(c) for c in nx.strongly_connected_components(_graph()) if len(c) > 1]
    assert cycles == []


def test_every_package_is_in_the_data_flow_order():
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(LAYERS) - {""}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m not in ("simnet", "simnet.__main__")))
def test_imports_go_downstream(module):
    """A module imports its own package and the ones upstream of it; the package face
    (``simnet``, whose names load lazily) and ``python -m simnet`` are the two ends."""
    mine = LAYERS.index(_layer(module))
    upstream = [(target, line) for target, _, line in _imports(module, MODULES[module])
                if target != "simnet" and LAYERS.index(_layer(target if target in MODULES else
                                                              target.rpartition(".")[0])) > mine]
    assert upstream == [], f"{module} imports downstream packages"


def test_no_module_borrows_a_private_name():
    borrowed = [(module, target, name, line) for module, path in MODULES.items()
                for target, names, line in _imports(module, path) for name in names
                if name.startswith("_") and not name.startswith("__") and target != module]
    assert borrowed == []


def test_at_most_eight_modules_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top


def test_importing_units_loads_no_simulation_code():
    """``import simnet.units`` (or the package face) loads neither the engines nor SimPy."""
    probe = ("import sys, simnet, simnet.units; "
             "print(sorted(m for m in sys.modules if m.startswith(('simnet.', 'simpy', 'pydantic', 'matplotlib'))))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            cwd=PACKAGE.parent).stdout.strip()
    assert loaded == "['simnet.units', 'simnet.version']"


def test_the_command_line_loads_no_simulation_code_until_a_command_runs():
    """``simnet --help`` (and every command's parsing) loads neither the engines, SimPy,
    networkx, numpy nor matplotlib: a command imports them when it runs."""
    probe = ("import sys, simnet.cli.main; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'simpy', 'networkx', 'numpy', 'matplotlib'}), "
             "sorted(m for m in sys.modules if m.startswith(('simnet.engine', 'simnet.spec', 'simnet.topology'))))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            cwd=PACKAGE.parent).stdout.strip()
    assert loaded == "[] []"


def test_a_run_by_lanes_without_plots_loads_no_plotting_nor_the_fluid_engine(tmp_path):
    """``simnet run`` draws only with ``--plot``, and a run the lanes replay needs neither
    the fluid engine, SimPy nor numba (its compiled kernel): none of them is imported
    (matplotlib was a third of a small run's start-up; issue 34 asks a 256-GPU ring for
    under a second, start-up included)."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\ntopology: {name: box, generate: {kind: nvswitch, gpus: 8}}\nsizes: [1 MiB]\n"
                        "algorithms: [ring]\nmodel: ideal\noptions: {channels: 1}\n")
    probe = ("import sys\nfrom simnet.cli.main import main\ntry:\n    main(sys.argv[1:], standalone_mode=False)\n"
             "finally:\n    print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('matplotlib', 'numba', 'pandas', 'simpy') or m in ('simnet.engine.fluid', 'simnet.engine.compiled')), "
             "file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, "run", str(scenario)], capture_output=True, text=True,
                          cwd=PACKAGE.parent)
    assert done.returncode == 0 and "ring" in done.stdout, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


def test_a_small_run_on_the_fluid_engine_loads_no_numba(tmp_path):
    """The compiled fluid network pays for numba's import (0.5-1 s) from
    ``replay.COMPILED_FROM`` transfers on: a smaller run on the fluid engine (a parameter
    server and 4 workers) runs on SimPy and does not import numba."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\ntopology: {name: star, generate: {kind: ps_star, workers: 4, servers: 1, "
                        "worker_bandwidth: 1 Gb/s, ps_bandwidth: 1 Gb/s, latency: 50 us}}\nsizes: [1 MiB]\n"
                        "algorithms: [ps]\n")
    probe = ("import sys\nfrom simnet.cli.main import main\ntry:\n    main(sys.argv[1:], standalone_mode=False)\n"
             "finally:\n    print('simnet.engine.fluid' in sys.modules, 'numba' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, "run", str(scenario)], capture_output=True, text=True,
                          cwd=PACKAGE.parent)
    assert done.stderr.strip().splitlines()[-1] == "True False", done.stderr
