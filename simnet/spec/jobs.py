"""The ``jobs:`` of a scenario: each job's schema, and where it runs (placement on GPUs).

>>> from simnet.topology.loader import topology_from_dict
>>> topo = topology_from_dict({"name": "t", "generate": {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2,
...                                                      "gpus_per_host": 2, "spines": 1}})
>>> place_jobs(topo, [{"name": "a", "gpus": 4, "placement": "spread", "size": "1 MiB"},
...                   {"name": "b", "gpus": 2, "size": "1 MiB"}])
[['r0h0-gpu0', 'r0h1-gpu0', 'r1h0-gpu0', 'r1h1-gpu0'], ['r0h0-gpu1', 'r0h1-gpu1']]
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, field_validator, model_validator

from simnet.errors import SpecError
from simnet.schedule.catalog import ALGORITHMS
from simnet.topology.graph import Topology
from simnet.topology.schema import Latency, Name, Strict
from simnet.units import parse_share, parse_size

MAX_JOBS = 16
"""Most jobs in one scenario: the interference matrix runs every pair (n(n-1)/2 replays)."""


_RANDOM = re.compile(r"^random\(([0-9]+)\)$")  # digits 0-9: \d takes any script's (random(٣) as 3)


class JobError(SpecError):
    """A job that does not fit the topology; ``loc`` is its place in the job list."""


def _share(value: Any) -> float:
    try:
        share = parse_share(value)
    except ValueError:
        share = 0.0
    if share <= 0:
        raise ValueError(f"{value!r} is not a load: give a share of each GPU's bandwidth, 0% < load <= 100%")
    return share


BACKGROUND_PERIOD = 1e-3
"""How often a background job offers its load when the scenario does not say, s."""


class BackgroundSpec(Strict):
    """Traffic that is not a collective: every ``period`` each GPU offers ``load`` of its
    route's bandwidth as a ``pattern``: ``uniform`` (to one partner drawn with ``seed``),
    ``all_to_all`` (to every other GPU) or ``incast`` (every GPU to one target drawn with ``seed``)."""

    pattern: Literal["uniform", "all_to_all", "incast"]
    load: Annotated[float, BeforeValidator(_share)]
    seed: Annotated[int, Field(ge=0, strict=True)] = 0


class JobSpec(Strict):
    """One job: where it runs, what it AllReduces (or the background traffic it makes),
    when and how often. A background job runs on every GPU no other job holds unless told
    where, every ``period`` (1 ms by default) for as long as the other jobs run."""

    name: Name
    gpus: Annotated[int, Field(ge=2, strict=True)] | list[str] | None = None
    hosts: Annotated[list[str], Field(min_length=1)] | None = None
    placement: str = "packed"  # for a GPU count: packed, spread or random(seed)
    algorithm: str = "auto"
    size: Annotated[int, Field(ge=1)] | None = None
    start: Latency = 0.0
    repeat: Annotated[int, Field(ge=1, le=10_000, strict=True)] = 1
    period: Latency | None = None
    background: BackgroundSpec | None = None

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        size = parse_size(value)
        if size < 1:
            raise ValueError(f"{value!r}: a job's collective moves at least 1 B")
        return size

    @field_validator("gpus", "hosts")
    @classmethod
    def _each_once(cls, value):
        """A GPU or host named twice would run once: refused, as a scenario's gpus: refuses it."""
        names = value if isinstance(value, list) else []
        twice = next((name for k, name in enumerate(names) if name in names[:k]), None)
        if twice is not None:
            raise ValueError(f"{twice!r} is listed twice; name each once")
        return value

    @field_validator("placement")
    @classmethod
    def _placement(cls, value: str) -> str:
        return known_placement(value)

    @field_validator("algorithm")
    @classmethod
    def _known(cls, value: str) -> str:
        if value != "auto" and value not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {value!r}; expected {', '.join(ALGORITHMS)} or auto")
        return value

    @model_validator(mode="after")
    def _where(self) -> JobSpec:
        if self.period == 0:
            raise ValueError("period: a background job offers its load once a period, and 0 s gives it no time "
                             "(the default is 1 ms)" if self.background is not None else
                             "period: 0 s runs the job back to back, as no period does; leave it out")
        if self.background is not None:
            if self.size is not None or self.algorithm != "auto" or "repeat" in self.model_fields_set:
                raise ValueError("a background job makes its own traffic: no size, algorithm or repeat")
            if self.gpus is not None and self.hosts is not None:
                raise ValueError("give gpus or hosts, not both")
            if "placement" in self.model_fields_set and not isinstance(self.gpus, int):
                raise ValueError("placement chooses which GPUs a count of them takes (gpus: 16, say); without one a "
                                 "background job runs on every GPU no other job holds, or on the GPUs or hosts it "
                                 "names")
            return self
        if self.size is None:
            raise ValueError("give size (what the job AllReduces), or background: {pattern, load}")
        if (self.gpus is None) == (self.hosts is None):
            raise ValueError("give gpus (a count or a list of GPU ids) or hosts (a list of host labels)")
        if "placement" in self.model_fields_set and not isinstance(self.gpus, int):  # packed too: it changes nothing
            raise ValueError("placement chooses which GPUs a count of them takes (gpus: 16, say); named GPUs and "
                             "hosts are placed already")
        return self


def rack_of(topology: Topology, gpu: str) -> str:
    """The GPU's rack: its label, or where it has none the switches its host is cabled to (a
    ToR, or an SU's rail leaves: a generator's rack is that group of servers), so a file
    written node by node without ``rack:`` groups its servers as the generator does; a host
    cabled to no switch is a rack of its own (a host sits in one rack, so the GPUs of one
    server are one rack, not a rack each)."""
    return topology.graph.nodes[gpu].get("rack") or \
        topology.derived("racks_by_cabling", _racks_by_cabling).get(topology.label(gpu, "host")) or \
        topology.label(gpu, "host")


def _racks_by_cabling(topology: Topology) -> dict[str, str]:
    """Each host's switches outside it, the first its traffic enters (past its NICs), named
    by the first of them in node order: hosts on the same ToR (the same rail leaves) alike."""
    inside: dict[str, set[str]] = {}
    for node in topology.graph.nodes:
        inside.setdefault(topology.label(node, "host"), set()).add(node)
    racks = {}
    for host, nodes in inside.items():
        if not any(topology.kind(n) == "gpu" for n in nodes):
            continue
        seen, leaves, frontier = set(nodes), set(), list(nodes)
        while frontier:
            for ahead in topology.graph.successors(frontier.pop()):
                if ahead in seen:
                    continue
                seen.add(ahead)
                if topology.kind(ahead) == "switch" and not set(topology.graph[ahead]) <= nodes:
                    leaves.add(ahead)  # (a switch cabled to this host alone is its own, labelled or not)
                elif topology.kind(ahead) == "nic":  # a NIC written without the host's label: through it
                    frontier.append(ahead)
        if leaves:
            racks[host] = "+".join(sorted(leaves, key=topology.node_index.__getitem__))
    return racks


def _spread_order(topology: Topology, free: list[str]) -> list[str]:
    """Free GPUs taking turns across racks, then across the hosts of a rack."""
    racks: dict[str, dict[str, list[str]]] = {}
    for gpu in free:
        racks.setdefault(rack_of(topology, gpu), {}).setdefault(topology.label(gpu, "host"), []).append(gpu)
    return _interleave([_interleave(list(hosts.values())) for hosts in racks.values()])


def _interleave(lists: list[list[str]]) -> list[str]:
    out = []
    for i in range(max((len(x) for x in lists), default=0)):
        out += [x[i] for x in lists if i < len(x)]
    return out


def known_placement(value: str) -> str:
    """``value`` if it is a placement (packed, spread or random(seed)), else a ValueError."""
    if value not in ("packed", "spread") and not _RANDOM.match(value):
        raise ValueError(f"{value!r}: expected packed, spread or random(seed)")
    return value


def choose_gpus(topology: Topology, free: list[str], count: int, placement: str) -> list[str]:
    """``count`` of the ``free`` GPUs as ``placement`` (packed, spread or random(seed))
    chooses them, in the order of ``free`` (its ranks'); a ValueError for another placement."""
    if placement == "packed":
        return free[:count]
    if placement == "spread":
        chosen = set(_spread_order(topology, free)[:count])
        return [gpu for gpu in free if gpu in chosen]
    if not isinstance(placement, str) or not _RANDOM.match(placement):
        raise ValueError(f"placement {placement!r}: expected packed, spread or random(seed)")
    rng = np.random.default_rng(int(_RANDOM.match(placement).group(1)))
    return [free[k] for k in sorted(rng.choice(len(free), count, replace=False).tolist())]


def place_jobs(topology: Topology, specs: list[dict | JobSpec]) -> list[list[str]]:
    """Each job's GPUs in rank order, placed in list order on GPUs no earlier job holds."""
    specs = [raw if isinstance(raw, JobSpec) else JobSpec.model_validate(raw) for raw in specs]
    taken: dict[str, str] = {}
    placed: dict[int, list[str]] = {}
    rank = {gpu: r for r, gpu in enumerate(topology.gpus)}  # the run's ranks: rank: fields, else file order
    running = set(rank)
    leftover = [i for i, spec in enumerate(specs) if spec.background and spec.gpus is None and spec.hosts is None]
    for i in [i for i in range(len(specs)) if i not in leftover] + leftover:
        spec = specs[i]
        free = [g for g in topology.gpus if g not in taken]
        if i in leftover:
            gpus = free
        elif isinstance(spec.gpus, int):
            if spec.gpus > len(free):
                raise JobError((i, "gpus"), f"{spec.gpus} GPUs asked, {len(free)} of {len(topology.gpus)} are free")
            gpus = choose_gpus(topology, free, spec.gpus, spec.placement)
        elif spec.hosts is not None:
            hosts = topology.groups("host")
            every = topology.groups("host", [n for n in topology.nodes if topology.kind(n) == "gpu"])
            for host in spec.hosts:
                if host not in every:
                    raise JobError((i, "hosts"), f"no host {host!r} with GPUs in {topology.name}")
                if len(hosts.get(host, [])) < len(every[host]):  # the run's GPUs (gpus:, -g) leave some out
                    raise JobError((i, "hosts"), f"host {host!r} has {len(every[host])} GPUs, "
                                                 f"{len(hosts.get(host, []))} of them among the run's "
                                                 f"{len(topology.gpus)}; name its GPUs, or run on more GPUs")
            gpus = [g for host in spec.hosts for g in hosts[host]]
        else:
            for gpu in spec.gpus:
                if gpu not in topology.node_index or topology.kind(gpu) != "gpu":
                    raise JobError((i, "gpus"), f"{gpu!r} is not a GPU of {topology.name}")
                if gpu not in running:
                    raise JobError((i, "gpus"), f"{gpu!r} is not among the run's {len(topology.gpus)} GPUs "
                                                "(gpus:, -g); name one of them, or run on more GPUs")
            gpus = list(spec.gpus)
        for gpu in gpus:
            if gpu in taken:
                raise JobError((i,), f"{gpu} already belongs to job {taken[gpu]!r}; jobs may not share a GPU")
        if len(set(gpus)) < 2:
            raise JobError((i,), "a job needs at least 2 GPUs to exchange anything" if i not in leftover else
                           f"fewer than 2 GPUs are left for background job {spec.name!r}; give it gpus or hosts")
        taken.update({g: spec.name for g in gpus})
        placed[i] = sorted(set(gpus), key=rank.__getitem__)
    return [placed[i] for i in range(len(specs))]


def check_jobs(topology: Topology, specs: list[JobSpec]) -> list[list[str]]:
    """Each job's GPUs (``place_jobs``); ``JobError`` for a job that cannot be placed, or too
    many jobs."""
    if len(specs) > MAX_JOBS:
        raise JobError((MAX_JOBS,), f"{len(specs)} jobs; simnet runs every pair of them, at most {MAX_JOBS} jobs")
    names = [s.name for s in specs]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise JobError((i, "name"), f"{name!r} names two jobs")
    return place_jobs(topology, specs)
