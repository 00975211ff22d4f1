"""YAML documents that remember where each value came from, for one-line error messages.

``load_yaml`` returns plain Python data plus a ``Source`` that maps a path inside the
document (``("links", 3, "bandwidth")``) to its 1-based line, and turns pydantic
validation errors into an ``InputError`` naming file, line and field.
"""

from __future__ import annotations

import math
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from simnet import units
from simnet.errors import InputError, kind_of, shown
from simnet.io.budget import memory_budget
from simnet.io.files import read_text

__all__ = ["Source", "load_yaml", "load_value", "format_loc", "dotted_loc", "dotted_within", "MAX_VALUES"]

Loc = tuple[Any, ...]

MAX_VALUES = 20_000_000
"""Most values one document may hold once its aliases are expanded (billion-laughs guard)."""

VALUE_BYTES = 200
"""Memory per built value (a 20-million-value alias expansion peaked at 3.16 GB: 158 B each)."""

_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LOADER(_BASE_LOADER):
    """libyaml's C parser when installed (~30x faster, same marks, nesting bounded), else
    PyYAML's; with YAML 1.1's base-60 numbers left out, so an unquoted ratio ``4:1`` stays the
    text the field parses as 4, never the number 241; and numbers and yes/noes as YAML 1.2 and
    people read them: ``010`` is ten, not octal eight, ``1e3`` a thousand, not text, ``1_000``
    and ``0b100`` text, not numbers, and only ``true``/``false`` a yes/no (``no``, ``on``,
    ``off`` stay text: ``name: no`` is a name)."""

    yaml_implicit_resolvers = {first: [(tag, rx) for tag, rx in resolvers if rx.match("4:1") is None
                                       and rx.match("1:30.5") is None and rx.match("yes") is None]
                               for first, resolvers in _BASE_LOADER.yaml_implicit_resolvers.items()}


_INT = re.compile(r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+)$")  # YAML 1.2's core schema: hexadecimal has no sign
_FLOAT = re.compile(r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+"
                    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_LOADER.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
_LOADER.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
_LOADER.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))


def _decimal_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """An integer as a person reads it: ``010`` is ten (YAML 1.1 would read eight, an octal),
    ``0x10`` sixteen (YAML 1.2's hexadecimal); YAML 1.1's ``0b100`` and ``1_000`` are text,
    as in YAML 1.2 (``_INT``)."""
    text = loader.construct_scalar(node)
    return int(text[2:], 16) if text.startswith("0x") else int(text, 10)


_LOADER.add_constructor("tag:yaml.org,2002:int", _decimal_int)



def load_value(text: str):
    """One YAML scalar as a file's value would read (``4:1`` stays text, ``64`` is a number)."""
    return yaml.load(text, Loader=_LOADER)  # a safe loader: no Python objects

@dataclass
class Source:
    """Where a document came from and the line of every value in it."""

    file: str
    lines: dict[Loc, int] = field(default_factory=dict)

    def line(self, loc: Loc) -> int | None:
        """Line of ``loc`` or of its nearest ancestor that has one."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get((), None)

    def writes(self, dotted: str) -> bool:
        """Whether the document writes the key ``dotted`` names (``workload.bucket_size``;
        ``jobs[0].period`` and ``jobs.0.period`` alike), not only a mapping around it."""
        return dotted_loc(dotted) in self.lines

    def error(self, loc: Loc, message: str) -> InputError:
        """An InputError for the value at ``loc``."""
        name = format_loc(loc)
        return InputError(f"{name}: {message}" if name else message, self.file, self.line(loc))

    def from_validation(self, exc: ValidationError, prefix: Loc = (), model: type | None = None) -> InputError:
        """The first pydantic error as one line naming file, line and field.

        An unknown key is reported before the required key it was probably meant to be
        (``bandwith:`` is a typo, not a missing ``bandwidth:``), with the closest known
        keys of ``model`` (the validated pydantic model) as a suggestion.
        """
        errors = exc.errors()
        unknown = [e for e in errors if e["type"] == "extra_forbidden"]
        first = unknown[0] if unknown else errors[0]
        field_loc = _without_union_tags(first["loc"])
        if not unknown:  # the union member that read furthest into the value matched its kind: its error says most
            deeper = [e for e in errors if _without_union_tags(e["loc"])[:len(field_loc)] == field_loc]
            first = max(deeper, key=lambda e: len(_without_union_tags(e["loc"])))
            field_loc = _without_union_tags(first["loc"])
        loc = tuple(prefix) + field_loc
        # the members of a union that refused the same value: a bound broken says most, else all they expect
        rivals = [e for e in errors if _without_union_tags(e["loc"]) == field_loc and e["type"] in _EXPECTED]
        bounds = [e for e in errors if _without_union_tags(e["loc"]) == field_loc and e["type"] in _BOUNDS]
        first = bounds[0] if bounds and first["type"] in _EXPECTED else first
        message = first["msg"].removeprefix("Value error, ")
        named, _, rest = message.partition(": ")
        if first["type"] == "value_error" and rest and isinstance(first.get("input"), dict) and \
                named in first["input"]:
            loc, message = loc + (named,), rest  # a check of a whole mapping that names one key: that key's line
        if first["type"] == "extra_forbidden":
            message = f"unknown key {loc[-1]!r}" + _suggestion(str(loc[-1]), _known_keys(model, first["loc"][:-1]))
        elif first["type"] == "missing":
            message = "is required but missing"
        elif first["type"] == "string_too_short":
            message = "is empty; give it a value (or leave the key out where it may be)"
        elif first["type"] in ("too_short", "too_long"):  # a list of a bounded length
            value, bound = first.get("input"), first["ctx"].get("min_length" if first["type"] == "too_short" else
                                                                 "max_length")
            message = (f"{shown(value)} has {len(value)} item{'s' * (len(value) != 1)}; give "
                       f"{'at least' if first['type'] == 'too_short' else 'at most'} {bound}")
        elif first["type"] == "finite_number" or (  # NaN and infinity meet a bound first (fuzz round az, F9)
                first["type"] in _BOUNDS and isinstance(first.get("input"), float)
                and not math.isfinite(first["input"])):
            message = f"{shown(first.get('input'))} is not a finite number"
        elif first["type"] == "invalid_key":
            message = f"the key {shown(loc[-1])} is not a name; write keys as text"
        elif first["type"] in _BOUNDS:
            word, key = _BOUNDS[first["type"]]
            message = f"{first.get('input')!r} must be {word} {first['ctx'][key]}"
        elif first["type"] in _EXPECTED and first in rivals:
            wanted = dict.fromkeys(_expected(e, _known_keys(model, first["loc"])) for e in rivals)
            value = first.get("input")
            if isinstance(value, str) and [e["type"] for e in rivals] == ["literal_error"]:
                message = f"{shown(value)} is not {next(iter(wanted))}"  # text, but none of the names
            else:
                message = f"{shown(value)} is {kind_of(value)}; expected {' or '.join(wanted)}"
        return self.error(loc, message)


def _known_keys(model: type | None, loc: Loc) -> list[str]:
    """The field names of the pydantic model found at ``loc`` inside ``model`` (or none)."""
    for part in loc:
        if model is None:
            return []
        if isinstance(part, str):
            field = getattr(model, "model_fields", {}).get(part)
            model = _model_in(field.annotation) if field is not None else None
        # an int indexes a list: the list's item model was found with its field
    return list(getattr(model, "model_fields", {})) if model is not None else []


def _model_in(annotation) -> type | None:
    """The pydantic model inside an annotation such as ``list[X] | None`` or ``Annotated[X, ...]``."""
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _suggestion(word: str, known: list[str]) -> str:
    """``; did you mean 'bandwidth'?`` when a known key is close to ``word``."""
    import difflib  # for a mistake only: every run reads its files through this module

    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else (f"; expected one of {', '.join(known)}" if known else "")


def _without_union_tags(loc: Loc) -> Loc:
    return tuple(part for part in loc if not _UNION_TAG.match(str(part)))


_EXPECTED = {"list_type": "a list (e.g. [a, b], or one '- item' per line)", "tuple_type": "a list",
             "dict_type": "a mapping ('key: value' lines)", "model_type": "a mapping",
             "model_attributes_type": "a mapping",
             "string_type": "text", "float_type": "a number", "float_parsing": "a number",
             "int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
             "bool_type": "true or false", "bool_parsing": "true or false", "literal_error": "one of",
             **{bound: "" for bound in ("greater_than_equal", "greater_than", "less_than_equal", "less_than")}}
"""What the value should have been, by pydantic error type, in the words of a YAML file."""


def _expected(error: dict, keys: list[str]) -> str:
    """What one refusing type wanted: ``a mapping with keys such as at, node, bandwidth``."""
    if error["type"] == "literal_error":
        return "one of " + error["msg"].removeprefix("Input should be ")
    if error["type"] in ("model_type", "model_attributes_type") and keys:
        return f"a mapping with keys such as {', '.join(keys[:4])}"
    if error["type"] == "list_type" and isinstance(error.get("input"), str | int | float) and \
            not isinstance(error.get("input"), bool):
        return f"a list (e.g. [{error['input']}])"
    return _EXPECTED[error["type"]]


_UNION_TAG = re.compile(r"^(constrained-\w+|function-\w+\[.*\]|(list|dict|tuple|set|frozenset|literal|nullable|union|"
                        r"tagged-union|is-instance|is-subclass|default|chain|lax-or-strict|json-or-python|model|"
                        r"dataclass|typed-dict|definition-ref)\[.*\]|str|int|float|bool|none)$")
"""Labels pydantic puts in an error's location for the member of a union that failed (its
type words only: a key of the file's own such as ``foo[1]`` is no label)."""

_BOUNDS = {"greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt"),
           "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt"),
           "too_short": ("", "min_length"), "too_long": ("", "max_length")}
"""A bound the value broke (the member of a union that read it as its kind: it says most)."""


def format_loc(loc: Loc) -> str:
    """``("links", 3, "bandwidth")`` -> ``"links[3].bandwidth"``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def dotted_loc(dotted: str) -> Loc:
    """A key's place written dotted, as a tuple of keys and list indices.

    >>> dotted_loc("jobs[0].period"), dotted_loc("jobs.0.period")
    (('jobs', 0, 'period'), ('jobs', 0, 'period'))
    """
    return tuple(int(part) if part.isdigit() else part for part in re.sub(r"\[(\d+)\]", r".\1", dotted).split("."))


def dotted_within(dotted: str, outer: str) -> bool:
    """Whether the key ``dotted`` is ``outer`` or lies inside it (``stragglers.gpu0`` inside
    ``stragglers``; ``jobs[0].period`` inside ``jobs.0``)."""
    inner, around = dotted_loc(dotted), dotted_loc(outer)
    return inner[:len(around)] == around


def _expanded_size(root: yaml.Node, file: Path) -> int:
    """Values in the document once aliases are expanded, counted over the node graph
    (shared nodes once each); refuses an alias that contains itself."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in active:
            raise InputError("an alias refers to a node that contains it (a recursive alias)", file,
                             node.start_mark.line + 1)
        active.add(id(node))
        children = [part for pair in node.value for part in pair] if isinstance(node, yaml.MappingNode) else (
            node.value if isinstance(node, yaml.SequenceNode) else [])
        sizes[id(node)] = total = 1 + sum(size(child) for child in children)
        active.discard(id(node))
        return total

    return size(root)


class _Builder:
    def __init__(self, source: Source, loader: yaml.SafeLoader):
        self.source = source
        self.loader = loader

    def build(self, node: yaml.Node, loc: Loc) -> Any:
        self.source.lines[loc] = node.start_mark.line + 1
        if isinstance(node, yaml.CollectionNode) and node.tag not in _COLLECTIONS:  # !mine [1 MiB]: read as a list
            kind = "list" if isinstance(node, yaml.SequenceNode) else "mapping"
            raise InputError(f"{format_loc(loc) or 'the document'}: a YAML tag ({_tag(node.tag)}) on a {kind}; simnet "
                             "reads plain lists and mappings, so the tag would change nothing: remove it",
                             self.source.file, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            own = sum(key.tag != _MERGE for key, _ in node.value)
            self.loader.flatten_mapping(node)  # merged pairs first, so a key written here overrides them
            merged = len(node.value) - own
            result: dict[Any, Any] = {}
            from_merge: set[Any] = set()
            for i, (key_node, value_node) in enumerate(node.value):
                if not isinstance(key_node, yaml.ScalarNode):
                    raise InputError(f"{format_loc(loc) or 'the document'}: a key must be a plain value, not a "
                                     "list or mapping", self.source.file, key_node.start_mark.line + 1)
                if key_node.tag == _NULL:  # `~:`, `null:` or `: 5`: YAML reads no name there
                    raise InputError(f"{format_loc(loc) or 'the document'}: the key {key_node.value or '(none)'!r} "
                                     "reads as null, not a name; quote it if it is one",
                                     self.source.file, key_node.start_mark.line + 1)
                key = self.loader.construct_object(key_node, deep=True)
                if isinstance(key, bool):  # `yes:` or `on:` as a key: YAML reads a yes/no, never a name
                    raise InputError(f"{format_loc(loc) or 'the document'}: the key {key_node.value!r} reads as a "
                                     f"yes/no ({'true' if key else 'false'}), not a name; quote it if it is one",
                                     self.source.file, key_node.start_mark.line + 1)
                if key in result and key not in from_merge:
                    raise InputError(f"{format_loc(loc + (key,))}: duplicate key {key!r}",
                                     self.source.file, key_node.start_mark.line + 1)
                if value_node.tag == _NULL:
                    raise InputError(f"{format_loc(loc + (key,))}: has no value; give one or leave the key out",
                                     self.source.file, value_node.start_mark.line + 1)
                (from_merge.add if i < merged else from_merge.discard)(key)
                result[key] = self.build(value_node, loc + (key,))
            return result
        if isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                if item.tag == _NULL:
                    raise InputError(f"{format_loc(loc + (i,))}: an empty item; give its value or leave it out",
                                     self.source.file, item.start_mark.line + 1)
            return [self.build(item, loc + (i,)) for i, item in enumerate(node.value)]
        if node.tag not in _PLAIN:
            raise InputError(f"{format_loc(loc) or 'the document'}: a YAML {node.tag.rpartition(':')[2]} value "
                             f"({node.value!r}); simnet reads text, numbers and true/false", self.source.file,
                             node.start_mark.line + 1)
        return self.loader.construct_object(node, deep=True)


_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_COLLECTIONS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


def _tag(tag: str) -> str:
    """A tag as the file wrote it: ``!mine``, or ``!!omap`` for YAML's own."""
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag
_PLAIN = {f"tag:yaml.org,2002:{kind}" for kind in ("str", "int", "float", "bool")}
"""The scalar tags a simnet file may hold (a null is refused where it stands: a key emptied by mistake)."""


_IN_WORDS = (
    ("tab character", "a tab where YAML wants spaces: indent with spaces only"),
    ("another document|single document|<document start>|document separator|document indicator",
     "a second YAML document (after '---' or '...') follows the first; a simnet file holds one document"),
    ("undefined alias", "an alias (*name) that no anchor (&name) before it defines"),
    ("duplicate anchor|second occurrence", "an anchor name (&name) given twice; give each anchor its own name"),
    ("incompatible YAML document|directive", "a %YAML or %TAG line simnet does not read; remove it"),
    ("mapping values are not allowed", "a ': ' where no key can start: quote a value that holds ': ', or check this "
                                       "line's indentation"),
    ("sequence entries are not allowed", "a '- item' where none can start: check this line's indentation"),
    ("expected key|<block end>", "this line is indented unlike the lines around it, or holds no 'key: value': check "
                                 "its indentation"),
    ("expected ',' or ']'", "a list opened with '[' is not closed with ']' (or an item lacks its comma)"),
    ("expected ',' or '}'", "a mapping opened with '{' is not closed with '}' (or an item lacks its comma)"),
    ("expected ':'", "a line that is neither 'key: value' nor '- item' (a key without its ':'?)"),
    ("unexpected end of stream", "the file ends inside a quoted value: close its quote"),
    ("unknown escape|escape sequence", "an unknown escape (a backslash) in a double-quoted value: use single quotes, "
                                       "or write \\\\ for a backslash"),
    ("tag handle|non-specific tag", "a !tag simnet does not read (it reads text, numbers and true/false); remove it"),
    ("indentation indicator|chomping", "a block value's | or > with an indicator simnet cannot read: write | or >"),
    ("alphabetic or numeric character", "an anchor or alias (& or *) without its name"),
    ("node content", "a value is missing here (two commas in a row?)"),
)
"""PyYAML's and libyaml's words for a syntax error (a pattern of them) and what they mean to a
reader of the file, who knows no ``<block end>`` token."""


def _in_words(exc: yaml.MarkedYAMLError, text: str) -> str:
    """What a YAML syntax error means, in the file's words: a tab, a second document, an
    unclosed bracket... (``_IN_WORDS``); a character no value starts with is named."""
    said = f"{exc.problem or ''} {exc.context or ''}"
    mark = exc.problem_mark or exc.context_mark
    lines = text.splitlines()
    at = lines[mark.line][mark.column:mark.column + 1] if mark and mark.line < len(lines) else ""
    if at in ("}", "]") and re.search(r"expected key|<block end>|expected ',' or|did not find expected", said):
        opener = "{" if at == "}" else "["
        return f"a '{at}' that closes no '{opener}': check the brackets on this line (one too many?)"
    if "cannot start any token" in said:
        return _IN_WORDS[0][1] if at == "\t" else \
            f"{at!r} cannot start a value: put the value in quotes" if at else "a value cannot start here"
    for pattern, words in _IN_WORDS:
        if re.search(pattern, said):
            return words
    return (exc.problem or exc.context or "").replace("<", "").replace(">", "")


def _has_alias(text: str) -> bool:
    """Whether the document may use an alias (``*name``): a rough look, enough to say why it is large."""
    return re.search(r"(^|[\s\[{,:-])\*[^\s,\]}]", text) is not None


def load_yaml(path: str | Path, text: str | None = None) -> tuple[Any, Source]:
    """Parse one YAML document into plain data and its ``Source`` (line map)."""
    path = Path(path)
    source = Source(str(path))
    if text is None:
        text = read_text(path, "a YAML file")
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"
                            and not node.value):  # no document, or a document marker alone ('---')
            raise InputError("the file is empty; expected a mapping", path, 1)
        values = _expanded_size(node, path)
        budget = memory_budget()
        limit = min(MAX_VALUES, budget // VALUE_BYTES)
        if values > limit and not _has_alias(text):  # no alias: the budget itself is too small for the file
            raise InputError(f"{values:,} values, over the {limit:,} the memory budget holds at ~{VALUE_BYTES} B each "
                             f"({units.format_size(budget)}: SIMNET_MEMORY, default 80% of the free memory); give "
                             "simnet more memory", path, node.start_mark.line + 1)
        if values > limit:
            raise InputError(f"{values:,} values once aliases are expanded, over the {limit:,} simnet reads here "
                             f"(at most {MAX_VALUES:,}, and ~{VALUE_BYTES} B each within the memory budget)",
                             path, node.start_mark.line + 1)
        return _Builder(source, loader).build(node, ()), source
    except RecursionError:
        raise InputError("nested too deeply", path) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise InputError(f"YAML syntax error: {_in_words(exc, text)}", path, line) from None
    except yaml.reader.ReaderError as exc:  # a control character: no line mark, a position
        raise InputError(f"YAML syntax error: a control character (U+{exc.character:04X}); a YAML file holds "
                         "printable text", path, text.count("\n", 0, exc.position) + 1) from None
    except yaml.YAMLError as exc:  # no line mark, a multi-line text
        raise InputError(f"YAML syntax error: {' '.join(str(exc).split())}", path) from None
    finally:
        loader.dispose()
