"""``simnet algorithms``: every algorithm of a collective, its options and closed form."""

from __future__ import annotations

import click

from simnet.cli.console import stdout_console
from simnet.cli.shell import friendly
from simnet.schedule.kinds import COLLECTIVES


@click.command("algorithms")
@click.option("-c", "--collective", type=click.Choice(list(COLLECTIVES)), default="allreduce", show_default=True,
              help="The collective whose algorithms to list.")
@friendly
def algorithms_command(collective: str) -> None:
    """List a collective's algorithms, their options and contention-free closed forms.

    \b
    Example:
      simnet algorithms
      simnet algorithms -c reduce_scatter
    """
    from rich.table import Table

    from simnet.schedule.catalog import algorithms_for
    from simnet.schedule.kinds import collective as lookup
    from simnet.schedule.registry import MODEL_OPTIONS, common_options

    kind = lookup(collective)
    table = Table(title=f"{kind.title} algorithms (S bytes, N ranks, path latency L, bandwidth B "
                        f"per direction): {kind.description}", title_justify="left", show_lines=True)
    for column in ("name", "what it does", "options", "closed form (contention-free)"):
        table.add_column(column, overflow="fold")
    for algorithm in algorithms_for(collective).values():
        given = [option for option in algorithm.options if option not in MODEL_OPTIONS]
        table.add_row(algorithm.name, algorithm.description, ", ".join(given) or "-", algorithm.closed_form)
    table.add_row("auto", "what NCCL would run: its cost model's pick (NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE, "
                  "NCCL_COLLNET_ENABLE honoured), simulated beside every other algorithm NCCL could run here; the "
                  "table names any that was faster", "-",
                  "the pick's")
    console = stdout_console()
    console.print(table)
    common = common_options(kind.name)
    console.print(f"Every algorithm also takes {', '.join(common[:-1])} and {common[-1]}"
                  + ("." if kind.reduces else f" ({kind.title} reduces nothing: no reduce_bandwidth)."))
