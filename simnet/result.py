"""``Result``: what one simulated AllReduce tells a person (DESIGN section 8).

Times in seconds, sizes in bytes, bandwidths in GB/s = 1e9 B/s as nccl-tests prints them:
``algbw = size / time`` and ``busbw = algbw * 2(N-1)/N``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from simnet import units
from simnet.collectives.replay import Replay
from simnet.topology.model import PS_PER_SECOND, Topology

__all__ = ["LinkReport", "Finding", "Result", "link_reports", "find_warnings",
           "OVERLOAD_SATURATION", "OVERLOAD_FLOWS", "ENDPOINT_KINDS"]

OVERLOAD_SATURATION = 0.5
"""A link saturated for at least this share of the run is worth a warning..."""
OVERLOAD_FLOWS = 8
"""...when at least this many flows crowded it at once (incast), or 2 on a switch-to-switch link.
Algorithms that keep a few flows per link (a double binary tree has 4) are not incast."""
ENDPOINT_KINDS = frozenset({"nic", "host", "ps", "gpu"})
"""A link touching one of these is a machine's network attachment (nic_overload), else a fabric link."""


@dataclass(frozen=True)
class LinkReport:
    """One directed link's use during a run."""

    src: str
    dst: str
    capacity_Bps: float
    bytes: float
    mean_utilization: float
    peak_utilization: float
    saturated_fraction: float
    max_flows: int

    @property
    def name(self) -> str:
        return f"{self.src}->{self.dst}"


@dataclass(frozen=True)
class Finding:
    """A warning: ``kind`` is ``nic_overload`` or ``link_congestion``."""

    kind: str
    link: str
    message: str


@dataclass
class Result:
    """One AllReduce of ``size_bytes`` over ``gpus`` ranks with ``algorithm``."""

    algorithm: str
    gpus: int
    size_bytes: int
    time_s: float
    links: list[LinkReport]
    warnings: list[Finding]
    options: dict = field(default_factory=dict)
    auto: dict | None = None  # when chosen by ``auto``: {"candidates": {name: time_s}, "nccl_algo": str|None}
    replay: Replay | None = field(default=None, repr=False, compare=False)

    @property
    def algbw_GBps(self) -> float:
        """size / time in GB/s (1e9 B/s)."""
        return self.size_bytes / self.time_s / 1e9 if self.time_s > 0 else float("inf")

    @property
    def busbw_GBps(self) -> float:
        """algbw * 2(N-1)/N: the per-link rate a ring would need (nccl-tests' bus bandwidth)."""
        return self.algbw_GBps * 2 * (self.gpus - 1) / self.gpus if self.gpus > 1 else 0.0

    @property
    def bottleneck(self) -> LinkReport | None:
        """The link that limited the run most: longest saturated, then busiest on average."""
        if not self.links:
            return None
        return max(self.links, key=lambda link: (link.saturated_fraction, link.mean_utilization))

    def to_dict(self) -> dict:
        """The JSON form of DESIGN section 8 (plus options, bottleneck and auto details)."""
        data = {
            "algorithm": self.algorithm, "gpus": self.gpus, "size_bytes": self.size_bytes, "time_s": self.time_s,
            "algbw_GBps": self.algbw_GBps, "busbw_GBps": self.busbw_GBps,
            "bottleneck": self.bottleneck.name if self.bottleneck else None,
            "links": [asdict(link) for link in self.links],
            "warnings": [asdict(w) for w in self.warnings],
            "options": {k: v for k, v in self.options.items() if v is not None},
        }
        if self.auto is not None:
            data["auto"] = self.auto
        return data


def link_reports(replay: Replay) -> list[LinkReport]:
    """Every link that carried data, busiest first."""
    topo, stats = replay.topology, replay.stats
    duration = replay.duration_ps
    used = np.flatnonzero(stats.bytes > 0)
    if duration <= 0 or not len(used):
        return []
    seconds = duration / PS_PER_SECOND
    mean = stats.bytes[used] / (topo.capacity[used] * seconds)
    order = used[np.argsort(-mean, kind="stable")]
    return [LinkReport(src=topo.links[i][0], dst=topo.links[i][1], capacity_Bps=float(topo.capacity[i]),
                       bytes=float(stats.bytes[i]),
                       mean_utilization=float(stats.bytes[i] / (topo.capacity[i] * seconds)),
                       peak_utilization=float(min(stats.peak[i], 1.0)),
                       saturated_fraction=float(stats.saturated_ps[i] / duration),
                       max_flows=int(stats.max_flows[i])) for i in order]


def _machine(topo: Topology, link: LinkReport) -> str | None:
    """The machine (GPU, NIC, host bridge, ps) this link attaches to the network, if any."""
    if topo.kind(link.dst) in ENDPOINT_KINDS:
        return link.dst
    if topo.kind(link.src) in ENDPOINT_KINDS:
        return link.src
    return None


def find_warnings(topo: Topology, links: list[LinkReport], time_s: float) -> list[Finding]:
    """``nic_overload`` for a machine's port and ``link_congestion`` for a fabric link, when
    saturated most of the run by many flows at once.

    A port's two directions count together (a parameter server is saturated inbound while
    workers push, then outbound while they pull: 50 % + 50 % = the whole run).
    """
    findings = []
    ports: dict[tuple[str, frozenset], list[LinkReport]] = {}
    for link in links:
        machine = _machine(topo, link)
        if machine is None:
            if link.saturated_fraction >= OVERLOAD_SATURATION and link.max_flows >= 2:
                findings.append(Finding("link_congestion", link.name, (
                    f"{link.name}: {link.max_flows} flows shared {link.capacity_Bps / 1e9:.4g} GB/s for "
                    f"{link.saturated_fraction:.0%} of the {units.format_time(time_s)} run; "
                    f"{units.format_size(link.bytes)} crossed it, {units.format_time(link.bytes / link.capacity_Bps)}"
                    " even at full speed")))
            continue
        ports.setdefault((machine, frozenset((link.src, link.dst))), []).append(link)
    for (machine, _), pair in ports.items():
        saturated = min(1.0, sum(link.saturated_fraction for link in pair))
        flows = max(link.max_flows for link in pair)
        if saturated < OVERLOAD_SATURATION or flows < OVERLOAD_FLOWS:
            continue
        worst = max(pair, key=lambda link: link.saturated_fraction)
        directions = ", ".join(f"{'in' if link.dst == machine else 'out'} {link.saturated_fraction:.0%}"
                               for link in sorted(pair, key=lambda link: link.dst != machine))
        moved = " and ".join(f"{units.format_size(link.bytes)} {'in' if link.dst == machine else 'out'}"
                             for link in sorted(pair, key=lambda link: link.dst != machine))
        findings.append(Finding("nic_overload", worst.name, (
            f"{machine} port ({worst.name}): {flows} flows shared {worst.capacity_Bps / 1e9:.4g} GB/s, saturated "
            f"{saturated:.0%} of the {units.format_time(time_s)} run ({directions}); {moved} "
            f"through this one port")))
    return findings
