"""``simnet servers``: the catalogue of real servers and instances ``server:`` names."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from simnet.cli.console import stdout_console
from simnet.cli.shell import friendly


@click.command("servers")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the catalogue (or NAME) as JSON.")
@friendly
def servers_command(name: str | None, as_json: bool) -> None:
    """List the servers and cloud instances a generator's ``server:`` key names, with the
    facts each sets and their sources; NAME shows one.

    \b
    Example:
      simnet servers
      simnet servers p5.48xlarge
    """
    from rich.table import Table

    from simnet.errors import InputError
    from simnet.topology.servers import SERVERS

    if name is not None and name not in SERVERS:
        import difflib

        close = [n for n in SERVERS if n.lower() == name.lower() or n.lower().startswith(name.lower())] or \
            difflib.get_close_matches(name, list(SERVERS), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close[:4])}{', ...' if len(close) > 4 else ''}?" if close else ""
        raise InputError(f"no server {name!r} in the catalogue{hint} (`simnet servers` lists them)")
    chosen = [SERVERS[name]] if name else list(SERVERS.values())
    if as_json:
        click.echo(json.dumps([asdict(server) for server in chosen], indent=2))
        return
    table = Table(title="Servers and instances for `server:` (NICs as NCCL or RCCL sees them; keys written in "
                        "the generator win)", title_justify="left", show_lines=name is not None)
    for column in ("server", "vendor", "GPUs", "NICs", "transport", "net plugin", "plugin reports",
                   "net_latency written", "what is there"):
        table.add_column(column, overflow="fold")
    for server in chosen:
        gpus = f"{server.gpus} {server.gpu}" + (f" ({server.gpus // server.gpus_per_tray} trays of "
                                                 f"{server.gpus_per_tray})" if server.gpus_per_tray else "")
        table.add_row(server.name, server.vendor, gpus, f"{server.nics} x {server.nic_bandwidth}", server.transport,
                      server.plugin or "-", server.plugin_latency or "-",
                      server.net_latency or "none (the transport's)", server.hardware)
    console = stdout_console()
    console.print(table)
    for server in chosen if name else []:
        console.print(f"{server.product}. Sources:")
        for source in server.sources:
            console.print(f"  - {source}", markup=False, highlight=False)
    if not name:
        console.print("Sources of each: simnet servers NAME. Abbreviations: simnet.topology.servers.")
