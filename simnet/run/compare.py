"""Compare hardware options: a scenario's ``variants`` (each a set of overrides with a
cost), or several scenario files, each with its fastest algorithm, and the Pareto front
of cost against time.

Each option's fastest algorithm is the one with the shortest transformer step when every
option has ``training``, else the shortest training-step (iteration) time when every option
has a workload, else the shortest collective time at the largest size every option ran
(options that share no size are not compared); each is kept in its own field of every row,
so a report never puts one in the other's column.

The Pareto front weighs what an option does per second against its cost, since options may
do different work in a step: the seconds a token takes (a step's time over its tokens), a
GPU's batch (a workload's iteration time over its GPUs: every GPU keeps its batch), or the
collective (``seconds_per_work`` of each row).
"""

from __future__ import annotations

from dataclasses import replace

from simnet.errors import EnvironmentRefused, InputError, SpecError, Unsupported
from simnet.io.yamlsource import dotted_loc, dotted_within
from simnet.results.result import Finding
from simnet.run.nccl_env import nccl_env
from simnet.run.point import SAME_TIME, Setup
from simnet.run.scenario import run_sizes, scenario_choices_unread
from simnet.run.simulate import unread_by_every, unread_options
from simnet.run.sweep.evaluate import after_every_end, answers_of, check_point_fits, evaluate_point, unread_everywhere
from simnet.run.sweep.plan import Point, as_the_file_writes, plan_sweep, scenario_at, setting_named
from simnet.spec.scenario import Scenario, source_of
from simnet.topology.schema import TopologySpec

__all__ = ["compare_scenarios", "compare_rows", "compare_warnings", "option_findings", "unsaid", "PARTIAL",
           "pareto_front", "PARETO_TOLERANCE", "CompareError"]


class CompareError(SpecError):
    """A comparison refused for one of its options: ``scenario`` is the index of the file
    it comes from, ``loc`` where in that file (a variant's ``set`` key, ``sizes``...)."""

    def __init__(self, scenario: int, loc: tuple, message: str):
        super().__init__(loc, message)
        self.scenario = scenario


def _key(where: tuple, key: str, *also: str) -> tuple:
    """Where an option states ``key`` (or one of ``also``, which set it too: a job's size sets
    what a jobs scenario runs): a variant's ``set`` entry for it (or the variant), a file's own
    key (``where``: the scenario's index and the variant's place, if any)."""
    index, variant = where[0], where[1:]
    keys = (key, *also)
    setting = next((k for k in variant[-1] if any(k == n or k.startswith(n + ".") for n in keys)), None) \
        if variant else None
    return index, variant[:-1] + ("set", setting) if setting else (key,)


def _at(record: dict, size: int | None) -> dict:
    """The record's point at ``size`` (its largest when None)."""
    if size is None:
        return max(record["sizes"], key=lambda s: s["size_bytes"])
    return next(s for s in record["sizes"] if s["size_bytes"] == size)


def _common_size(options: list[tuple]) -> int | None:
    """The largest size every option's records ran; ``ValueError`` (``CompareError`` at the
    first option that shares none with those before it, where known) when they share none."""
    common: set[int] | None = None
    for name, _, records, *where in options:
        for record in records:
            if not record["sizes"]:  # a training step alone: no collective to rank it by beside the others
                message = (f"option {name} is a training step without sizes, and not every option has one, so "
                           "they are ranked by a collective's time; give it sizes, or compare training steps alone")
                if len(where) > 1:
                    raise CompareError(*_key(where[1], "training"), message)
                raise ValueError(f"compare: {message}")
            sizes = {s["size_bytes"] for s in record["sizes"]}
            if common is not None and not common & sizes:
                message = "compare: the options share no size to rank them by; give them one size in common"
                if len(where) > 1:
                    raise CompareError(*_key(where[1], "sizes", "size", "jobs"), f"option {name} runs none of the "
                                                                                  "sizes of the "
                                                                  "options before it, so none ranks them all; give "
                                                                  "them one size in common")
                raise ValueError(message)
            common = sizes if common is None else common & sizes
    return max(common) if common else None


def compare_scenarios(scenarios: list[Scenario]) -> list[dict]:
    """One row per option: the variants of a single scenario, or each of several scenarios.
    An option's algorithms of ``all`` that its topology cannot run are left out, each row
    saying which and why (``skipped``); ``ValueError`` when none is left."""
    if len(scenarios) == 1 and not scenarios[0].variants:
        raise CompareError(0, ("variants",), "compare needs variants: in the file, or two or more scenario files")
    if len(scenarios) > 1 and any(s.variants for s in scenarios):
        index, named = next((k, s) for k, s in enumerate(scenarios) if s.variants)
        raise CompareError(index, ("variants",), f"compare of {len(scenarios)} scenarios ranks each as one option, "
                                                 f"so the {len(named.variants)} variants of {named.name} would not "
                                                 "run; compare it alone")
    plans = [plan_sweep(scenario) for scenario in scenarios]
    every = [(index, name, cost, overrides, where) for index, scenario in enumerate(scenarios)
             for name, cost, overrides, where in _options_of(index, scenario)]
    for index, scenario in enumerate(scenarios):
        for i, variant in enumerate(scenario.variants):
            if "algorithms" in variant.set:  # every option runs the file's (it was dropped without a word)
                raise CompareError(index, ("variants", i, "set", "algorithms"), (
                    f"compare runs every option with the file's algorithms ({', '.join(scenario.algorithms)}) and "
                    f"ranks it by its fastest, so {variant.name}'s would not run; give them in the file, or compare "
                    "files"))
            given = {key.removeprefix("options."): value for key, value in variant.set.items()
                     if key.startswith("options.")}
            unread = unread_options(given, list(scenario.algorithms), scenario.collective) if given else []
            if unread:
                raise CompareError(index, ("variants", i, "set", f"options.{unread[0]}"), (
                    f"read by none of {', '.join(scenario.algorithms)} (see simnet algorithms), so it changes "
                    f"nothing in this comparison of {variant.name}; leave it out, or name an algorithm that reads it"))
    at_line_rate = [(name, where) for index, name, _, overrides, where in every
                    if dict(overrides).get("model", scenarios[index].model) == "ideal"]
    if at_line_rate and len(at_line_rate) < len(every):  # (ideal is nccl's lower bound, not another machine)
        name, where = at_line_rate[0]
        other = next(o[1] for o in every if o[1] not in {n for n, _ in at_line_rate})
        raise CompareError(*_key(where, "model"), (
            f"option {name} runs model: ideal (line rate, no NCCL software costs) and option {other} does not, so "
            "the ranking would weigh the model, not the hardware; give every option the same model"))
    with_jobs = [index for index, scenario in enumerate(scenarios) if scenario.jobs]
    if with_jobs and len(with_jobs) < len(scenarios):  # (fuzz round au, L5: ranked in one column, unsaid)
        jobs, other = with_jobs[0], next(k for k in range(len(scenarios)) if k not in with_jobs)
        raise CompareError(jobs, ("jobs",), (
            f"{scenarios[jobs].name} runs jobs, ranked by its slowest beside the others, and {scenarios[other].name} "
            "one collective over its GPUs, so one column would rank unlike things; compare files of jobs alone"))
    for index, _, _, overrides, where in every:  # a run too large for the memory: refused before any runs
        for algorithm in scenarios[index].algorithms:
            _evaluate(plans[index], Point(overrides, None, algorithm), where, check_point_fits)
    options = []
    for index, name, cost, overrides, where in every:
        records = [_evaluate(plans[index], Point(overrides, None, algorithm), where)
                   for algorithm in scenarios[index].algorithms]
        ran = [r for r in records if "skipped" not in r]
        if not ran:
            raise CompareError(*_key(where, "algorithms"), f"option {name}: none of its algorithms runs here "
                                                           f"({records[0]['skipped']})")
        options.append((name, cost, ran, {r["algorithm"]: r["skipped"] for r in records if "skipped" in r}, where))
    rows = compare_rows(options)
    answers = [answers_of(records, names=False) for _, _, records, *_ in options]  # (at L3: renamed copies)
    for i, row in enumerate(rows):  # an option whose every answer another's is: what tells them apart changes nothing
        row["same_as"] = next((options[j][0] for j in range(i) if answers[j] == answers[i]), None)
    sources = [source_of(scenario) for scenario in scenarios]
    as_written: dict[tuple[int, str], str] = {}  # (scenario, overrides) -> its answers, each computed once
    for row, (index, _, _, overrides, where), (_, _, ran, *_) in zip(rows, every, options):
        written = where[-1] if len(where) > 1 else {}
        row["unread"] = [name for name in row["unread"] if not _counts_against_the_file(
            name, next((key for key in written if dotted_within(name, key)), None), overrides, ran,
            source=sources[index], plan=plans[index],
            answered=lambda changed, index=index, where=where: as_written.setdefault(
                (index, repr(changed)), _answers_of(plans[index], changed, scenarios[index].algorithms, where)))]
    return rows


def _counts_against_the_file(name: str, key: str | None, overrides: tuple, ran: list[dict], *, source, plan,
                             answered) -> bool:
    """Whether the run-level key ``name`` (``options.chunk_size``, ``jobs[0].period``), unread
    in an option's records ``ran``, is written by its set's ``key`` (the key itself, or a
    mapping holding it) over a value the file writes that answers otherwise (``answered``:
    the option's answers with its overrides changed so): then the set replaces a value that
    counts, and is not said to change nothing. Where the file's value answers alike (unread,
    or raised to what the run takes without it), it is said; where the option cannot run with
    the file's value, the set counts."""
    if key is None or source is None or not source.writes(name):
        return False
    try:
        return answered(as_the_file_writes(overrides, key, name, plan.document)) != answers_of(ran)
    except (InputError, SpecError, Unsupported):
        return True


def _answers_of(plan, overrides: tuple, algorithms, where) -> str:
    """``answers_of`` an option's records with ``overrides``, every algorithm it runs."""
    return answers_of([record for record in (_evaluate(plan, Point(overrides, None, a), where) for a in algorithms)
                     if "skipped" not in record])


def _options_of(index: int, scenario: Scenario) -> list[tuple]:
    """The hardware options of the ``index``-th scenario: (name, cost, overrides, where it is
    written) of each variant, a variant's cost overriding the scenario's as its ``set``
    overrides the scenario's keys; the scenario itself where it has no variants."""
    return ([(v.name, scenario.cost if v.cost is None else v.cost, tuple(v.set.items()), (index, "variants", i, v.set))
             for i, v in enumerate(scenario.variants)] or [(scenario.name, scenario.cost, (), (index,))])


def compare_warnings(scenarios: list[Scenario]) -> list[Finding]:
    """What the options leave unread, once each (``key_unread``, as ``simnet run`` says them):
    the keys each file makes moot (``Scenario.warnings``: a one-rack leaf_spine's spines),
    NCCL_ALGO beside options that each name their algorithms, NCCL_PROTO where none runs
    NCCL's collective algorithms (``scenario_choices_unread``), a variable of NCCL's plan no
    option reads (``_steering_unread``)."""
    said: dict[str, Finding] = {}
    for index, scenario in enumerate(scenarios):
        heard = _options_heard(index, scenario)
        moot = _moot_in(scenario, heard)
        for finding in [*scenario.warnings, *scenario_choices_unread(scenario, nccl_env(), list(scenario.algorithms),
                                                                     "every option")]:
            options = moot.get(finding.message)
            if options is not None and not options:
                continue  # moot in the file as written, but every variant makes it count
            if not options and not scenario.variants and len(scenarios) > 1:  # a file that is one option of several
                options = [scenario.name]
            if options:
                finding = replace(finding, message=f"{finding.message} (in option {', '.join(options)})")
            said.setdefault(finding.message, finding)
        for finding in _set_unread(scenario, heard) + _options_own(scenario, heard) + _cost_unread(scenario):
            said.setdefault(finding.message, finding)
    return list(said.values()) + _steering_unread(scenarios)


def _cost_unread(scenario: Scenario) -> list[Finding]:
    """``key_unread`` of the scenario's own ``cost`` where every variant gives its own: it
    costs no option (fuzz round az, F4: 5 M$ or 999 M$ gave the same table)."""
    if scenario.cost is None or not scenario.variants or any(v.cost is None for v in scenario.variants):
        return []
    source = source_of(scenario)
    where = f" ({scenario.source}:{source.lines[('cost',)]})" if source is not None and source.writes("cost") else ""
    return [Finding("key_unread", "cost", (
        f"cost{where}: every variant gives its own cost, so the scenario's (${scenario.cost:,.0f}) is "
        "no option's and changed nothing; leave it out, or a variant's cost"))]


def _options_own(scenario: Scenario, heard: list[tuple[str, list[Finding]]]) -> list[Finding]:
    """``key_unread`` an option's own scenario says (``heard``) of a key neither the file says
    (``_moot_in``'s) nor its variant's ``set`` writes (``_set_unread``'s): a fabric key no route
    of a variant's ``gpus:`` crosses, say; once, with the options that say it."""
    file_keys = {(w.kind, w.link.removeprefix("topology.")) for w in scenario.warnings}
    source = source_of(scenario)
    found: dict[tuple[str, str], tuple[Finding, list[str]]] = {}
    for variant, (name, warnings) in zip(scenario.variants, heard):
        for finding in warnings:
            key = (finding.kind, finding.link.removeprefix("topology."))
            if finding.kind == "key_unread" and key not in file_keys and _set_key(variant, finding) is None:
                found.setdefault(key, (finding, []))[1].append(name)
    said = []
    for finding, names in found.values():
        if source is not None and source.writes(finding.link):  # the file's key, where it writes it (not the option's)
            finding = _placed(finding, finding.link, f"{scenario.source}:{source.lines[dotted_loc(finding.link)]}")
        said.append(replace(finding, message=f"{finding.message} (in option {', '.join(names)})"))
    return said


_TOPOLOGY_KEYS = frozenset(TopologySpec.model_fields) - {"name", "calibration"}
"""A topology file's own keys (a scenario's ``calibration`` shares its name)."""


def _set_key(variant, finding: Finding) -> str | None:
    """The key of ``variant``'s ``set`` that writes what ``finding`` names (the key itself, or
    one of the mapping it sets: ``stragglers`` for ``stragglers.GPU``), or None."""
    if isinstance(variant.set.get("topology"), str) and finding.link.split(".")[0] in _TOPOLOGY_KEYS:
        return "topology"  # a topology file of the option's own: its keys are said as that file's
    links = {finding.link, finding.link.removeprefix("topology.")}
    return next((key for key in variant.set for link in links for written in {key, key.removeprefix("topology.")}
                 if dotted_within(link, written)), None)


def _placed(finding: Finding, name: str, where: str) -> Finding:
    """``finding`` said of ``name`` at ``where`` (file:line) instead of the place its message names."""
    why = finding.message.partition("): ")[2] or finding.message
    return Finding(finding.kind, name, f"{name} ({where}): {why}")


def _options_heard(index: int, scenario: Scenario) -> list[tuple[str, list[Finding]]]:
    """Each variant's name and the warnings its own scenario says when read (none without
    variants): one reading per option for ``_moot_in`` and ``_set_unread``."""
    if not scenario.variants:
        return []
    plan = plan_sweep(scenario)
    return [(name, scenario_at(plan, overrides, None).warnings)
            for name, _, overrides, _ in _options_of(index, scenario)]


def _set_unread(scenario: Scenario, heard: list[tuple[str, list[Finding]]]) -> list[Finding]:
    """``key_unread`` of each key a variant's ``set`` writes that its own option leaves
    unread (``heard``: a one-host fabric's nic_bandwidth, a one-rack fabric's spines), on the
    variant's line: compare would rank that option as if the key were felt. One that replaces
    a value the file writes is judged against it: said where the file's value changes nothing
    in that option either."""
    if not heard:
        return []
    source = source_of(scenario)
    plan = plan_sweep(scenario)
    said = []
    for i, (variant, (_, warnings)) in enumerate(zip(scenario.variants, heard)):
        for finding in warnings:
            key = _set_key(variant, finding)  # an option's topology is inlined: topology.KEY is the set's KEY
            if key is not None and source is not None and source.writes(finding.link) and \
                    _counts_as_the_file_writes(plan, variant, key, finding.link):
                continue  # it replaces the file's own value, which counts in this option: judged against it
            if finding.kind == "key_unread" and key is not None and key == "topology" and \
                    isinstance(variant.set[key], str):  # in the option's topology file, on its own line
                said.append(replace(finding, message=f"{finding.message} (in option {variant.name})"))
            elif finding.kind == "key_unread" and key is not None:
                inner = next(finding.link.removeprefix(written) for written in (key, f"topology.{key}",
                                                                                 key.removeprefix("topology."))
                             if finding.link.startswith(written))
                name = f"variants[{i}].set.{key}{inner}"
                loc = ("variants", i, "set", key, *inner.split(".")[1:])
                placed = _placed(finding, name, f"{scenario.source}:{source.line(loc)}") if source else \
                    Finding(finding.kind, name, f"{name}: {finding.message.partition('): ')[2] or finding.message}")
                said.append(replace(placed, message=f"{placed.message} (in option {variant.name})"))
    return said


def _counts_as_the_file_writes(plan, variant, key: str, link: str) -> bool:
    """Whether the key ``link`` counts in ``variant``'s option with the file's own value put
    back for the set's: no ``key_unread`` of it there, or no such option at all (the file's
    value beside the set's other keys is no valid scenario: a tp the set's pp does not fit)."""
    try:
        said = scenario_at(plan, as_the_file_writes(tuple(variant.set.items()), key, link, plan.document),
                           None).warnings
    except InputError:
        return True
    return link not in {w.link for w in said if w.kind == "key_unread"}


def _moot_in(scenario: Scenario, heard: list[tuple[str, list[Finding]]]) -> dict[str, list[str] | None]:
    """Per key the file makes moot (``Scenario.warnings``' messages): None where every option
    (``heard``) leaves it moot, else the options that do (a variant's own topology may read
    it: a one-rack file's routing, with a variant of two racks)."""
    if not heard:
        return {}

    def key(finding: Finding) -> tuple[str, str]:  # an option's scenario inlines the topology: topology.KEY
        return finding.kind, finding.link.removeprefix("topology.")

    per_option = [(name, {key(w) for w in warnings if _set_key(variant, w) is None})  # (not the file's: the set's)
                  for variant, (name, warnings) in zip(scenario.variants, heard)]
    return {w.message: (None if all(key(w) in said for _, said in per_option)
                        else [name for name, said in per_option if key(w) in said])
            for w in scenario.warnings}


PARTIAL = {"upper_bound": "its time is an upper bound (too large to replay exactly)",
           "lower_bound": "its time is a lower bound (too large to replay exactly under model: ideal)",
           "variant_too_large": "hierarchical ran one way between groups only (the other too large for the memory)",
           "candidate_too_large": "auto left out a candidate too large for the memory"}
"""Warning kinds of a run whose answer is less than a whole one, and what compare says of them."""


def option_findings(rows: list[dict]) -> list[Finding]:
    """What ``simnet run`` says of an option's runs that its row would hide: an option given to
    it that changed nothing in any of its runs (``option_unread``, from ``compare_rows``'
    ``unread``: ``options.exact`` where no run would have been bounded, say), a job's key
    judged after its runs (``key_unread``: a period every run outlasts), an NCCL (RCCL) variable
    that changed nothing in any run of any option (once), and a ranked time that is less than a
    whole answer (``PARTIAL``, from ``partial``)."""
    env = nccl_env()
    costs = {row["option"]: row["cost"] for row in rows}
    variables = set.intersection(*({name for name in row["unread"] if name in env} for row in rows)) if rows else set()
    return [Finding("key_unread", name, (
        f"{name}={env[name]} changed nothing in any run of any option (simnet run on an option says why of each "
        "run)")) for name in sorted(variables)] + [
        Finding("option_unread" if name.startswith("options.") else "key_unread", name, (
            f"{name} changed nothing in any run of option {row['option']} (taken by none, unfelt, or raised to "
            "NCCL's; simnet run on it says why of each run that takes it); "
            "leave it out")) for row in rows for name in row["unread"] if name not in env] + [
        Finding(kind, "", f"option {row['option']}: {PARTIAL[kind]}; simnet run on it says more")
        for row in rows for kind in row["partial"]] + [
        Finding("fault_after_end", "", f"option {row['option']}: every run ended before some of its faults, which "
                                       "changed nothing there (simnet run on it says which)")
        for row in rows if row.get("after_end")] + [
        Finding("key_unread", row["option"], (
            f"option {row['option']} answers as option {row['same_as']} does, every run to the picosecond: "
            + ("what sets them apart changed nothing here (the same values, or ones no run reads)"
               if row["cost"] == costs[row["same_as"]] else "their sets change no run here, only their costs differ")))
        for row in rows if row.get("same_as")]


def unsaid(findings: list[Finding], said: list[Finding]) -> list[Finding]:
    """``option_findings`` that ``compare_warnings`` (``said``) has not said already: a key it
    says of every option, or of the option a finding names (``(in option A, B)``), is not
    said again of that option."""
    options_said: dict[str, set[str] | None] = {}
    for finding in said:
        _, suffix, named = finding.message.rpartition(" (in option ")
        options = set(named.removesuffix(")").split(", ")) if suffix else None
        known = options_said.get(finding.link, set())
        options_said[finding.link] = None if options is None or known is None else known | options
    return [finding for finding in findings if finding.link not in options_said or (
        options_said[finding.link] is not None
        and not any(f"of option {option} " in finding.message for option in options_said[finding.link]))]


def _steering_unread(scenarios: list[Scenario]) -> list[Finding]:
    """``simulate.unread_by_every`` over every option's every algorithm at every size it runs
    (its workload's buckets too), as ``simnet run`` says of a run; none where an option has
    jobs or a training step."""
    env = nccl_env()
    options = []
    for scenario in scenarios:
        plan = plan_sweep(scenario, env=env)
        options += [scenario_at(plan, tuple(v.set.items()), None) for v in scenario.variants] or [scenario]
    if any(option.jobs or option.training is not None for option in options):
        return []
    return unread_by_every(env, [(Setup(o.topology, o.collective, o.model, env, o.calibration), algorithm, size,
                                  o.options) for o in options for algorithm in o.algorithms for size in run_sizes(o)],
                           "every option")


def _evaluate(plan, point: Point, where: tuple, evaluate=evaluate_point):
    """``evaluate(plan, point)`` (default ``evaluate_point``), its refusal put where the option
    states what is refused: a variant's ``set`` key the message names (or the variant), an
    algorithm a file's topology cannot run on its ``algorithms``."""
    try:
        return evaluate(plan, point)
    except InputError as exc:
        if exc.line is not None:  # named in its own file already (a topology's, a profile's)
            raise
        variant = where[1:]
        setting = setting_named(exc.message, list(variant[-1] if variant else {}))
        if setting is not None:
            raise CompareError(where[0], variant[:-1] + ("set", setting),
                               exc.message.removeprefix(f"{setting}: ")) from None
        if isinstance(exc.__cause__, Unsupported):
            raise CompareError(*_key(where, "algorithms"), exc.message) from None
        if isinstance(exc.__cause__, EnvironmentRefused):  # the environment's, unless a variant sets the model
            index, loc = _key(where, "model")
            raise CompareError(index, loc if "set" in loc else (), exc.message) from None
        raise CompareError(where[0], variant[:-1], exc.message) from None


def compare_rows(options: list[tuple]) -> list[dict]:
    """One row per hardware option (name, cost, its points' records[, the algorithms it
    skipped: why[, where it is written: its file's index and variant]]): its fastest
    algorithm and what it buys. ``merit_s`` is the time its algorithms are ranked by and
    ``seconds_per_work`` what the Pareto front weighs (module docstring)."""
    every = [record for _, _, records, *_ in options for record in records]
    kinds = {record.get("collective", "allreduce") for record in every}
    if len(kinds) > 1 and not all("step_s" in record for record in every):
        first = every[0].get("collective", "allreduce")
        name, _, records, *where = next(o for o in options if any(r.get("collective", "allreduce") != first
                                                                  for r in o[2]))
        message = (f"compare: the options run different collectives ({', '.join(sorted(kinds))}); compare "
                   "scenarios of one collective")
        if len(where) > 1:
            raise CompareError(*_key(where[1], "collective"), f"option {name} runs "
                               f"{records[0].get('collective', 'allreduce')}, the options before it {first}; compare "
                               "options of one collective")
        raise ValueError(message)
    training = all("step_s" in record for record in every)
    workload = not training and all("iteration_time_s" in record for record in every)
    size = None if training or workload else _common_size(options)
    rows = []
    for name, cost, records, *skipped in options:
        def merit(record: dict) -> float:
            if training:
                return record["step_s"]
            return record["iteration_time_s"] if workload else _at(record, size)["time_s"]

        best = min(records, key=merit)
        largest = _at(best, size) if best["sizes"] else {"ran": best["algorithm"], "time_s": None,
                                                         "size_bytes": None, "busbw_GBps": None, "bottleneck": None}
        neck = {key: largest.get(key) for key in ("bottleneck", "busiest", "bottleneck_saturated_fraction",
                                                   "bottleneck_mean_utilization")}
        ran = largest.get("ran", best["algorithm"])
        algorithm = best["algorithm"] if ran == best["algorithm"] else f"{best['algorithm']} -> {ran}"
        row = {"option": name, "cost": cost, "algorithm": algorithm, "gpus": best["gpus"],
               "collective": best.get("collective", "allreduce"),
               "iteration_time_s": best.get("iteration_time_s"), "collective_time_s": largest["time_s"],
               "collective_size_bytes": largest["size_bytes"], "speedup": best.get("speedup"),
               "busbw_GBps": largest["busbw_GBps"], **neck, "merit_s": merit(best),
               "step_s": best.get("step_s"), "tokens_per_s": best.get("tokens_per_s"), "mfu": best.get("mfu"),
               "seconds_per_work": (1 / best["tokens_per_s"] if training else
                                    merit(best) / best["gpus"] if workload else merit(best)),
               "per_cost": None, "skipped": skipped[0] if skipped else {},
               # (a workload's iteration time is its buckets' runs'; a training step's exchanges are its own)
               "after_end": after_every_end(records),
               "partial": [] if training else sorted(PARTIAL.keys() & set(
                   best.get("bucket_warnings", ()) if workload else largest.get("warnings", ()))),
               # options, and jobs' keys judged once the jobs ran (a period every run outlasts), that changed
               # nothing in any run of this option (each run said so)
               "unread": unread_everywhere(records, "options.") + unread_everywhere(records, "jobs[")
               + unread_everywhere(records, "NCCL_") + unread_everywhere(records, "RCCL_")}
        if cost:
            # throughput per unit of cost: tokens/s, GPU-equivalents of work (speedup) or bus GB/s per million
            value = best["tokens_per_s"] if training else best["speedup"] if workload else largest["busbw_GBps"]
            row["per_cost"] = value / (cost / 1e6) if value is not None else None
        rows.append(row)
    return rows


PARETO_TOLERANCE = SAME_TIME
"""Times within 1 % of each other count as equal when judging the Pareto front: the model
cannot tell them apart, so the cheaper option dominates (as ``auto`` names no faster
algorithm than its pick, ``runner.SAME_TIME``)."""


def pareto_front(rows: list[dict]) -> list[dict]:
    """Rows no row of the front beats on both cost and the time a unit of their work takes
    (``seconds_per_work``; rows without a cost are left out), in their order; times within
    ``PARETO_TOLERANCE`` count as equal."""
    priced = [r for r in rows if r["cost"] is not None]

    def faster(o, r):  # o's time below r's beyond the tolerance
        return o["seconds_per_work"] < r["seconds_per_work"] * (1 - PARETO_TOLERANCE)

    def not_slower(o, r):
        return o["seconds_per_work"] <= r["seconds_per_work"] * (1 + PARETO_TOLERANCE)

    # judged against the front itself, cheapest first: with a tolerance "dominates" does not chain (an option
    # within 1 % of one that is itself off the front may be beyond 1 % of all on it: fuzz round aq L1)
    front: list[dict] = []
    for r in sorted(priced, key=lambda r: (r["cost"], r["seconds_per_work"])):
        if not any(o["cost"] <= r["cost"] and not_slower(o, r) and (o["cost"] < r["cost"] or faster(o, r))
                   for o in front):
            front.append(r)
    kept = {id(r) for r in front}
    return [r for r in priced if id(r) in kept]
