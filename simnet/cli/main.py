"""The ``simnet`` command: a thin shell over the Python API.

Bad input ends with one line on stderr naming file, line and field, and exit code 2.
"""

from __future__ import annotations

import os
import sys

from simnet.cli.shell import loading

with loading():  # the subcommands' rich, yaml and pydantic: the garbage collector skips them (shell.loading)
    import click

    from simnet.cli.algorithms import algorithms_command
    from simnet.cli.calibrate import calibrate
    from simnet.cli.compare import compare
    from simnet.cli.replay_trace import replay_trace
    from simnet.cli.run import run
    from simnet.cli.servers import servers_command
    from simnet.cli.shell import DEBUG, OneLineUsage
    from simnet.cli.sweep import sweep
    from simnet.cli.topo import topo

__all__ = ["main"]

# numpy's OpenBLAS starts a thread per core as it loads (40 ms of CPU in a 256-GPU ring's run
# on 2 cores, more with more cores) for matrix products simnet does not make (calibrate's
# are a dozen parameters wide): a command asks for one thread, unless the user says otherwise
# (read when numpy loads, which nothing above does: tests/test_architecture.py)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@click.group(cls=OneLineUsage, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="simnet")
@click.option("--debug", is_flag=True, help="Show a traceback on an internal error (for bug reports).")
def main(debug: bool) -> None:
    """Predict collective time (AllReduce and NCCL's others), bus bandwidth and link saturation on a GPU cluster.

    \b
    Example:
      simnet run scenarios/cross_rack.yaml
      simnet topo check topologies/two_racks.yaml
    """
    DEBUG["traceback"] = debug
    _tolerant_streams()


def _tolerant_streams() -> None:
    """Standard output and error that print what their encoding cannot hold escaped
    (``Gr\\xf6\\xdfe``), not as an internal error: a name in any script on a terminal or
    log that is ASCII or Latin-1 (``PYTHONIOENCODING=ascii``, an old locale)."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if encoding not in ("utf8", "utf8sig") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


for command in (run, sweep, compare, calibrate, replay_trace, algorithms_command, servers_command, topo):
    main.add_command(command)


