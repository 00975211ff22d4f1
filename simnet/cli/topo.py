"""``simnet topo``: check, show, draw and export a topology."""

from __future__ import annotations

from pathlib import Path

import click

from simnet.cli.console import stdout_console
from simnet.cli.shell import WholeRange, friendly
from simnet.errors import InputError


@click.group()
def topo() -> None:
    """Check, show, draw or export a topology file.

    \b
    Example:
      simnet topo draw topologies/two_racks.yaml -o two_racks.png
    """


_TOPOLOGY = click.argument("topology", type=click.Path(dir_okay=False, path_type=Path))


_KIND_NAMES = {"ps": "parameter server", "host": "host bridge", "nic": "NIC"}
_ROUTING = {"ecmp": "ECMP (each connection hashed onto one of the equal-cost paths)",
            "by_destination": "by destination (as InfiniBand routes a fat tree: D-mod-k)"}


def _plural(word: str, count: int) -> str:
    if count == 1:
        return word
    return word + ("es" if word.endswith(("ch", "s")) else "s")


@topo.command("check")
@_TOPOLOGY
@friendly
def topo_check(topology: Path) -> None:
    """Validate TOPOLOGY and print its size, bandwidth range and worst path.

    \b
    Example:
      simnet topo check topologies/dgx_h100.yaml
    """
    from simnet import units
    from simnet.topology.loader import default_routing, load_topology
    from simnet.topology.summary import SAMPLED_SOURCES, network_switches_inside_a_host, summarize

    loaded = load_topology(topology)
    if loaded.calibration is not None:  # a profile the topology names is part of it: checked as a run reads it
        from simnet.model.calibration import load_calibration

        load_calibration(loaded.calibration)
    s = summarize(loaded)
    others = ", ".join(f"{count} {_plural(_KIND_NAMES.get(kind, kind), count)}"
                       for kind, count in sorted(s.kinds.items()) if kind != "gpu")
    groups = ", ".join(f"{count} {_plural(level, count)}" for level, count in
                       (("host", s.hosts), ("NVLink domain", s.nvlink_domains), ("rack", s.racks),
                        ("region", s.regions)) if count)
    sampled = "" if s.worst_exact else (f" (searched from one GPU per host, of at most {SAMPLED_SOURCES} hosts spread "
                                        "over the racks)")
    click.echo(f"ok: {topology}: {s.name}")
    click.echo(f"  GPUs:      {s.gpus} in {groups}")
    click.echo(f"  other:     {others or 'none'}")
    click.echo(f"  links:     {s.links} ({s.directed_links} directed)")
    for kept, chips in loaded.joined:  # (the counts above are of the switches NCCL sees)
        click.echo(f"  NVSwitch:  {', '.join(chips)} join the same GPUs over NVLink: one NVSwitch {kept}, as NCCL "
                   "sees it, its link to each GPU all of that GPU's links to them")
    if loaded.calibration is not None:
        click.echo(f"  calibration: {loaded.calibration}")
    if s.min_bandwidth is None:
        click.echo("  bandwidth: no links")
    else:
        click.echo(f"  bandwidth: {units.format_bandwidth(s.min_bandwidth)} .. "
                   f"{units.format_bandwidth(s.max_bandwidth)} ({s.min_bandwidth / 1e9:.4g} .. "
                   f"{s.max_bandwidth / 1e9:.4g} GB/s) per direction")
    efa = default_routing(loaded) == "by_destination"  # every NIC speaks EFA
    why = "" if not efa else ("; every NIC speaks EFA, whose SRD sprays each flow over every path (an EFA fabric's "
                              "default)" if loaded.routing == "by_destination" else
                              "; every NIC speaks EFA, whose SRD sprays each flow over every path: the file's "
                              "routing: ecmp hashes it onto one, as SRD does not")
    click.echo(f"  routing:   {_ROUTING[loaded.routing]}{why}")
    if s.gpus == 1:
        click.echo("  worst GPU-to-GPU path: none (one GPU: an AllReduce moves no data)")
    else:
        click.echo(f"  worst GPU-to-GPU path: {units.format_time(s.worst_latency, short=True)} over {s.worst_hops} hops"
                   f" ({s.worst_pair[0]} -> {s.worst_pair[1]}){sampled}")
    for said in loaded.unread:  # a generator parameter that built nothing
        click.echo(f"warning key_unread: {said}")
    for switch, host in network_switches_inside_a_host(loaded):
        click.echo(f"warning network_inside_host: {switch} joins only the GPUs of {host} and is read as a network "
                   f"switch (it has no host label, no nvls and its links no type): if it is {host}'s NVSwitch, give it "
                   f"host: {host} (or its links type: nvlink)")


@topo.command("show")
@_TOPOLOGY
@click.option("--limit", type=WholeRange(min=1), default=64, show_default=True, help="Most GPU rows to list.")
@friendly
def topo_show(topology: Path, limit: int) -> None:
    """Print TOPOLOGY's GPUs (rank, host, rack, region) and its links by class.

    \b
    Example:
      simnet topo show topologies/two_racks.yaml
    """
    from simnet.report.tables import link_classes_table, ranks_table
    from simnet.topology.loader import load_topology

    topo_ = load_topology(topology)
    console = stdout_console()
    console.print(ranks_table(topo_, limit))
    console.print(link_classes_table(topo_))


@topo.command("draw")
@_TOPOLOGY
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="Image to write (.png, .svg, .pdf).")
@friendly
def topo_draw(topology: Path, output: Path) -> None:
    """Draw TOPOLOGY: GPUs grouped by host and rack, links coloured by bandwidth.

    \b
    Example:
      simnet topo draw topologies/two_racks.yaml -o two_racks.png
    """
    from simnet.report.paths import IMAGE_SUFFIXES, output_file
    from simnet.report.topology_plot import draw_topology
    from simnet.topology.loader import load_topology

    output_file(output, "--output", IMAGE_SUFFIXES, inputs=[topology])
    topo_ = load_topology(topology)
    click.echo(f"wrote {draw_topology(topo_, output)}")


_SUFFIX_FORMATS = {".yaml": "yaml", ".yml": "yaml", ".graphml": "graphml", ".gexf": "gexf", ".json": "json"}
"""The format an export's file name asks for: ``-o racks.yaml`` writes YAML without --format."""


@topo.command("export")
@_TOPOLOGY
@click.option("--format", "fmt", type=click.Choice(list(_SUFFIX_FORMATS.values())), default=None,
              help="yaml, graphml, gexf or json (default: the one -o's suffix names, else graphml).")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="File to write (default: TOPOLOGY with the format's suffix, .nodes.yaml for yaml); '-' for stdout.")
@friendly
def topo_export(topology: Path, fmt: str | None, output: Path | None) -> None:
    """Export TOPOLOGY node by node as simnet YAML (a generated fabric to edit), or as
    GraphML, GEXF (Gephi) or node-link JSON for networkx.

    \b
    Example:
      simnet topo export topologies/two_racks.yaml --format graphml -o two_racks.graphml
      simnet topo export topologies/two_racks.yaml --format yaml -o my_racks.yaml
    """
    from simnet.report.paths import output_file
    from simnet.topology.export import export_text, export_topology
    from simnet.topology.loader import load_topology

    named = _SUFFIX_FORMATS.get(output.suffix.lower()) if output is not None and str(output) != "-" else None
    if fmt is not None and named is not None and named != fmt:  # x.json of GraphML: a file no reader expects
        raise InputError(f"--format {fmt} writes {fmt}, but -o {output} names a {named} file: leave --format out, "
                         f"or name the file .{fmt}", topology)
    fmt = fmt or named or "graphml"
    if output is not None and str(output) == "-":  # standard output, as --json - is
        click.echo(export_text(load_topology(topology), fmt), nl=False)
        return
    output = output_file(output or topology.with_suffix(".nodes.yaml" if fmt == "yaml" else f".{fmt}"), "--output",
                         inputs=[topology])
    topo_ = load_topology(topology)
    click.echo(f"wrote {export_topology(topo_, output, fmt)}")
