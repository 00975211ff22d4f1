"""The scenario choices ``run`` and ``sweep`` share: algorithms (``-a``) and the collective (``-c``)."""

from __future__ import annotations

from pathlib import Path

from simnet.errors import InputError


def algorithm_option(algorithms: tuple[str, ...], scenario: Path, collective: str = "allreduce") -> list[str]:
    """The algorithms ``-a`` names for ``collective`` (``all`` expanded, each once), or ``InputError``."""
    from simnet.schedule.catalog import algorithms_for

    table = algorithms_for(collective)
    unknown = [a for a in algorithms if a not in table and a not in ("auto", "all")]
    if unknown:
        raise InputError(f"--algorithm: unknown algorithm {unknown[0]!r} for {collective}; expected one of "
                         f"{', '.join(table)}, auto or all", scenario)
    if "all" in algorithms and len(set(algorithms)) > 1:
        raise InputError(f"--algorithm: all runs auto and every algorithm {collective} has, so "
                         f"{', '.join(a for a in dict.fromkeys(algorithms) if a != 'all')} beside it would run once "
                         "anyway; give -a all alone, or name the algorithms", scenario)
    every = ["auto", *table]  # all: NCCL's own pick too, beside every algorithm the collective has
    return list(dict.fromkeys(n for a in algorithms for n in (every if a == "all" else [a])))


def refuse_algorithms_no_size_reads(spec, algorithms: tuple[str, ...], sizes: tuple[str, ...], scenario: Path) -> None:
    """``InputError`` for ``-a`` on a training step without sizes of the scenario's own: the
    step runs every exchange as NCCL picks it, so -a changed nothing (the file's own
    ``algorithms:`` is refused there alike)."""
    if algorithms and spec.training is not None and not spec.sizes and not sizes:
        raise InputError("--algorithm: the training step runs every exchange as NCCL picks it; -a applies to sizes "
                         "of the scenario's own, and it has none: give sizes (-s on run), or leave -a out", scenario)


def collective_option(spec, collective: str | None, algorithms: tuple[str, ...], scenario: Path) -> dict:
    """The scenario changes ``-c`` asks for: the collective, no workload (a data-parallel
    step is AllReduces) and the algorithms: ``-a``'s where it names them (they replace the
    file's, which this collective may not have), else the file's that this collective has
    (``auto`` when none)."""
    if collective is None or collective == spec.collective:
        return {}
    if spec.jobs or spec.training is not None:
        what = "jobs, which run AllReduces" if spec.jobs else "training, which picks the collectives of its step"
        raise InputError(f"--collective: the scenario has {what}; remove it to run another collective", scenario)
    changes = {"collective": collective, **({"workload": None} if spec.workload is not None else {})}
    if algorithms:
        changes["algorithms"] = algorithm_option(algorithms, scenario, collective)
        changes["every_algorithm"] = "all" in algorithms
    else:
        from simnet.schedule.catalog import algorithms_for

        table = algorithms_for(collective)
        changes["algorithms"] = ["auto", *table] if spec.every_algorithm else \
            [a for a in spec.algorithms if a in table or a == "auto"] or ["auto"]  # (all: this collective's all)
        changes["every_algorithm"] = spec.every_algorithm
    return changes


def collective_notes(spec, changes: dict, algorithms: tuple[str, ...] = ()) -> list[str]:
    """What ``-c`` left out of the file, one line each (``algorithms``: ``-a``'s, which replace
    the file's whatever the collective)."""
    if "collective" not in changes:
        return []
    notes = []
    dropped = [] if algorithms or spec.every_algorithm else [  # (all: the collective's all, nothing dropped)
        a for a in spec.algorithms if a not in changes.get("algorithms", spec.algorithms)]
    if dropped:
        instead = "; NCCL's pick (auto) runs in their place" if changes["algorithms"] == ["auto"] and \
            "auto" not in spec.algorithms else ""
        notes.append(f"not run for {changes['collective']} (it has no such algorithm): {', '.join(dropped)}{instead}")
    if "workload" in changes:
        notes.append(f"the scenario's training step is a data-parallel step of AllReduces: not shown for "
                     f"{changes['collective']}")
    return notes
