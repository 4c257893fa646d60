"""The one YAML reader (config, ledger, YAML schema files): safe, bounded, and remembering where each key came from.

YAML lets a file say things a reader of it does not see, and PyYAML's defaults accept them silently. This reader
refuses each of them with one line naming ``file:line``, before anything is built from the document:

- a key repeated in one mapping (at any depth): PyYAML keeps the last one, so a second ``threshold:`` or
  ``metrics:`` block would quietly replace the first. Both lines are named.
- a key YAML reads as something other than text: ``yes``, ``no``, ``on``, ``off``, ``true``, ``null``, numbers.
  Every key of an EvalGlass file is a name, and YAML 1.1 turns an unquoted ``yes:`` into the boolean true.
- an integer outside the signed 64-bit range: every artifact is JSON, and JSON tools disagree on such numbers.
- nesting deeper than :data:`MAX_DEPTH` (PyYAML's composer recurses, so a deep file would hit the recursion limit).
- anchors and aliases are allowed (``<<: *defaults`` is a common way to share settings), but an alias that refers to
  a value containing itself is refused, and all aliases together may add at most :data:`MAX_ALIAS_VALUES` values
  and :data:`MAX_ALIAS_TEXT` characters of text to the document. A "billion laughs" document fails at once, in the
  memory the file itself takes, instead of being expanded.
- text that is not UTF-8, or characters YAML forbids (a NUL byte), are named by line; so is a NUL character
  written as an escape (``"\\0"``, ``"\\x00"``): no name, path or text of these files may hold one (a path
  holding it cannot be opened, and Python says only "embedded null byte", naming neither file nor line).
- a value YAML reads as a date that is no date (``2026-13-45``, year 0): PyYAML's constructor raises a bare
  ``ValueError`` naming neither.

Only a regular file is read (see :mod:`evalglass.readers.userfiles`): a FIFO or a device never hangs a run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import MethodType
from typing import Any

import yaml

from evalglass.collector import collector_paused
from evalglass.errors import SetupError
from evalglass.readers.userfiles import read_regular

Loc = tuple[str | int, ...]

#: Deepest nesting of mappings and sequences (aliases included) a document may have.
MAX_DEPTH = 64
#: Values (mappings, sequences, scalars) that aliases may add to a document once expanded.
MAX_ALIAS_VALUES = 100_000
#: Characters of scalar text that aliases may add to a document once expanded.
MAX_ALIAS_TEXT = 16 << 20
INT64 = (-(1 << 63), (1 << 63) - 1)

_FLATTEN = "flatten the document"
_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_INT = "tag:yaml.org,2002:int"
_MAP = "tag:yaml.org,2002:map"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_SEQ = "tag:yaml.org,2002:seq"
_KIND_OF_TAG = {
    "tag:yaml.org,2002:bool": "the boolean {value}",
    "tag:yaml.org,2002:null": "null (no value)",
    _INT: "a number",
    "tag:yaml.org,2002:float": "a number",
    _TIMESTAMP: "a date",
}


@dataclass(frozen=True)
class YamlDocument:
    path: Path
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)
    raw: bytes = b""

    def where(self, loc: Loc) -> str:
        """``file:line`` of the deepest known prefix of ``loc``."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return f"{self.path}:{line}"
        return str(self.path)


class _Refused(Exception):
    def __init__(self, message: str, node: yaml.Node | yaml.Mark, fix: str) -> None:
        super().__init__(message)
        mark = node if isinstance(node, yaml.Mark) else node.start_mark
        self.line = mark.line + 1
        self.fix = fix


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer stops at :data:`MAX_DEPTH` instead of recursing into the recursion limit."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self._depth >= MAX_DEPTH:
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise _Refused(f"nested deeper than {MAX_DEPTH} levels", event.start_mark, _FLATTEN)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


#: libyaml's parser when PyYAML was built with it (every binary wheel is), else the bounded pure-Python one. Both
#: build the same nodes with the same marks and use the same safe constructors; the pure-Python scanner costs ~10 µs
#: a character, so a 20 MB description took minutes with it and takes about a second with libyaml. libyaml refuses
#: nesting beyond its own limit (1,000 levels) while composing, so its composer cannot exhaust the stack;
#: :data:`MAX_DEPTH` is then enforced by the node walk below.
_SAFE_LOADER: type[yaml.CSafeLoader] | type[_BoundedLoader] = getattr(yaml, "CSafeLoader", _BoundedLoader)


def load_yaml(path: Path, *, what: str) -> YamlDocument:
    """Parse a YAML file safely (see the module docstring), mapping every key path to its line."""
    raw = read_regular(path, what=what, missing_fix="check the path or run `evalglass init`")
    return parse_yaml(raw, path, what=what)


def parse_yaml(raw: bytes, path: Path, *, what: str) -> YamlDocument:
    """Parse YAML bytes as :func:`load_yaml` does; ``path`` only names them (``verify`` re-parses snapshots)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = raw[: exc.start].count(b"\n") + 1
        raise SetupError(
            f"{what} is not UTF-8 text (byte 0x{raw[exc.start]:02x})", where=f"{path}:{number}", fix="save it as UTF-8"
        ) from None
    try:
        # ~60,000 nodes and values for a 2,000-gate config, none in a cycle (a recursive alias, the one way to
        # make one, is refused and its nodes collected at the next pass).
        with collector_paused():
            data, lines = _compose_and_build(text)
    except _Refused as exc:
        raise SetupError(f"{what}: {exc}", where=f"{path}:{exc.line}", fix=exc.fix) from None
    except yaml.reader.ReaderError as exc:
        number = text[: exc.position].count("\n") + 1
        raise SetupError(
            f"{what} holds a character YAML does not allow (#x{exc.character:04x})"
            if isinstance(exc.character, int)
            else f"{what} holds a character YAML does not allow",
            where=f"{path}:{number}",
            fix="remove it (a NUL byte or control character)",
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        if "maximum nesting depth" in str(exc.problem):  # libyaml's own bound, far beyond MAX_DEPTH
            raise SetupError(f"{what}: nested deeper than {MAX_DEPTH} levels", where=line, fix=_FLATTEN) from None
        if mark is not None and _indented_with_a_tab(text, mark):
            # PyYAML says "found character that cannot start any token" (or "found a tab character that violates
            # indentation"), which names neither the tab nor what to do; an editor shows a tab as spaces.
            raise SetupError(
                f"{what} is not valid YAML: a tab indents this line, and YAML indents with spaces only",
                where=line,
                fix="replace the tab with spaces",
            ) from None
        raise SetupError(
            f"{what} is not valid YAML: {exc.problem or exc.context}", where=line, fix="fix the YAML syntax"
        ) from None
    except yaml.YAMLError as exc:
        raise SetupError(f"{what} is not valid YAML: {exc}", where=str(path)) from None
    return YamlDocument(path=path, data=data, lines=lines, raw=raw)


def _indented_with_a_tab(text: str, mark: yaml.Mark) -> bool:
    """True when the line ``mark`` points into starts with whitespace holding a tab, up to the mark."""
    start = text.rfind("\n", 0, mark.index) + 1
    lead = text[start : mark.index + 1]
    return "\t" in lead and not lead.rstrip(" \t")


def _compose_and_build(text: str) -> tuple[Any, dict[Loc, int]]:
    """The document's value and line index, by the plain path when it applies, else by the general one. Its nodes
    are dropped on return, while the cycle collector is still paused, so they never cost a collection."""
    loader = _SAFE_LOADER(text)
    _memoise_resolve(loader)
    try:
        node = loader.get_single_node()
        plain = _PlainBuilder(loader).build_document(node) if node is not None else None
        return plain if plain is not None else _build_checked(node, loader)
    finally:
        loader.dispose()


def _memoise_resolve(loader: yaml.SafeLoader | yaml.CSafeLoader) -> None:
    """Answer the parser's "which tag has this scalar?" once per distinct scalar of the document.

    PyYAML asks for every scalar, keys included, and answers by trying its implicit resolvers' regular expressions
    one by one: for a 2,000-gate config that was ~56,000 calls and a fifth of the time spent reading it, while the
    distinct scalars are a few thousand. The answer depends only on the arguments as long as no path resolver is
    registered (PyYAML's path resolvers are experimental and EvalGlass registers none); with one, nothing is cached.
    """
    if loader.yaml_path_resolvers:
        return
    resolve: Callable[[type[yaml.Node], str | None, tuple[bool, bool] | bool], str] = loader.resolve
    answers: dict[tuple[type[yaml.Node], str | None, tuple[bool, bool] | bool], str] = {}

    def memoised(kind: type[yaml.Node], value: str | None, implicit: tuple[bool, bool] | bool) -> str:
        key = (kind, value, implicit)
        tag = answers.get(key)
        if tag is None:
            tag = answers[key] = resolve(kind, value, implicit)
        return tag

    loader.resolve = memoised  # type: ignore[method-assign]


def _build_checked(node: yaml.Node | None, loader: yaml.SafeLoader | yaml.CSafeLoader) -> tuple[Any, dict[Loc, int]]:
    """The general path: check every node (:func:`_refuse_hidden_meaning`), construct with PyYAML's safe
    constructors (merge keys, aliases and every safe tag), then index the lines. It decides every error."""
    lines: dict[Loc, int] = {}
    if node is None:
        return None, lines
    _refuse_hidden_meaning(node, loader)
    data = loader.construct_document(node)
    _index(node, (), lines)
    return data, lines


class _NotPlain(Exception):
    """The document needs the general path: it uses a feature the plain path leaves to it, or it has a problem,
    which the general path then reports exactly as it always has."""


#: Scalar tags the plain path builds itself (the ledger's dates are timestamps); any other tag takes the general path.
_PLAIN_SCALARS = frozenset(
    {
        _STR,
        _INT,
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:null",
        _TIMESTAMP,
    }
)


class _PlainBuilder:
    """One walk that builds the value and the line index of a plain document, or ``None`` to say "take the general
    path". Plain means what nearly every config and ledger is: no merge keys, only core tags, and none of the
    problems the general path refuses (a non-text or repeated key, an integer beyond 64 bits, nesting deeper than
    :data:`MAX_DEPTH` once aliases are expanded, a recursive alias, aliases adding more than their bounds). Aliases
    are fine: a node met again gives the value built the first time (PyYAML shares it the same way), and adds its
    expanded size, memoised per node, to what aliases add. Whatever this builds equals what the general path builds
    from the same text (a property test holds the two paths to that); anything else it leaves to the general path,
    which then reports it exactly as before, so no check is weakened."""

    def __init__(self, loader: yaml.SafeLoader | yaml.CSafeLoader) -> None:
        self.constructors: dict[str, Callable[[yaml.ScalarNode], Any]] = {
            tag: MethodType(loader.yaml_constructors[tag], loader) for tag in _PLAIN_SCALARS if tag != _STR
        }
        self.lines: dict[Loc, int] = {}
        # node id -> its value once built; _BUILDING while its children are being built (met then: recursive alias).
        self.built: dict[int, Any] = {}
        # What aliases have added so far: values and characters of text (as _refuse_hidden_meaning counts them).
        self.added_values = self.added_text = 0
        self.sizes: dict[int, tuple[int, int, int]] = {}

    def build_document(self, root: yaml.Node) -> tuple[Any, dict[Loc, int]] | None:
        self.lines[()] = root.start_mark.line + 1
        try:
            return self.build(root, (), 0), self.lines
        except Exception:  # any surprise (a constructor's ValueError too) is the general path's to report, as before
            return None

    def build(self, node: yaml.Node, loc: Loc, level: int) -> Any:
        """The value of ``node``, at key path ``loc`` under ``level`` mappings and sequences."""
        built = self.built
        key = id(node)
        if key in built:
            value = self.again(node, level)
            _index(node, loc, self.lines)
            return value
        kind = type(node)
        if kind is yaml.ScalarNode:
            tag = node.tag
            if tag == _STR:
                value = node.value
                if "\x00" in value:
                    raise _NotPlain
            elif tag in self.constructors:
                value = self.constructors[tag](node)  # type: ignore[arg-type]
                if tag == _INT and not INT64[0] <= value <= INT64[1]:
                    raise _NotPlain
            else:
                raise _NotPlain
            built[key] = value
            return value
        if level >= MAX_DEPTH:
            raise _NotPlain
        built[key] = _BUILDING
        lines = self.lines
        if kind is yaml.MappingNode and node.tag == _MAP:
            mapping: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if (
                    type(key_node) is not yaml.ScalarNode
                    or key_node.tag != _STR
                    or key_node.value in mapping
                    or "\x00" in key_node.value
                ):
                    raise _NotPlain
                name = key_node.value
                if id(key_node) in built:  # an aliased key counts as an alias like any other node
                    self.again(key_node, level + 1)
                else:
                    built[id(key_node)] = name
                at = (*loc, name)
                lines[at] = key_node.start_mark.line + 1
                mapping[name] = self.build(value_node, at, level + 1)
            built[key] = mapping
            return mapping
        if kind is yaml.SequenceNode and node.tag == _SEQ:
            items = []
            for index, item in enumerate(node.value):
                at = (*loc, index)
                lines.setdefault(at, item.start_mark.line + 1)
                items.append(self.build(item, at, level + 1))
            built[key] = items
            return items
        raise _NotPlain

    def again(self, node: yaml.Node, level: int) -> Any:
        """The value of a node met before, through an alias, after counting what the alias adds."""
        value = self.built[id(node)]
        if value is _BUILDING:
            raise _NotPlain
        values, text, height = _expanded_size(node, self.sizes)
        self.added_values += values
        self.added_text += text
        if self.added_values > MAX_ALIAS_VALUES or self.added_text > MAX_ALIAS_TEXT or level + height > MAX_DEPTH:
            raise _NotPlain
        return value


#: Marks a node whose value is being built (see :func:`_build_plain`).
_BUILDING = object()


def _expanded_size(node: yaml.Node, sizes: dict[int, tuple[int, int, int]]) -> tuple[int, int, int]:
    """Values, characters of scalar text and nesting depth of ``node`` once its aliases are expanded, memoised in
    ``sizes`` (so an alias bomb costs its file's size). Only called on nodes already built, whose depth is bounded."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    if isinstance(node, yaml.ScalarNode):
        size = (1, len(node.value), 0)
    else:
        parts = [_expanded_size(child, sizes) for child in _children(node)]
        size = (1 + sum(p[0] for p in parts), sum(p[1] for p in parts), 1 + max((p[2] for p in parts), default=0))
    sizes[id(node)] = size
    return size


def _refuse_hidden_meaning(root: yaml.Node, loader: yaml.SafeLoader | yaml.CSafeLoader) -> None:
    """Walk every distinct node once (iteratively: aliases can chain deeper than the composer nested) and refuse
    what the module docstring lists. Sizes are memoised per node, so an alias bomb costs its file's size."""
    unique_values = unique_text = 0
    # node id -> (values, text characters, depth) once expanded; absent while the node is being visited.
    expanded: dict[int, tuple[int, int, int]] = {}
    visiting: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            visiting.discard(key)
            children = _children(node)
            values = 1 + sum(expanded[id(child)][0] for child in children)
            text = sum(expanded[id(child)][1] for child in children)
            depth = 1 + max((expanded[id(child)][2] for child in children), default=0)
            if depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels (aliases included)", node, _FLATTEN)
            expanded[key] = (values, text, depth)
            continue
        if key in expanded:
            continue
        if key in visiting:
            raise _Refused("an alias refers to a value that contains it", node, "remove the recursive alias")
        visiting.add(key)
        unique_values += 1
        if isinstance(node, yaml.ScalarNode):
            visiting.discard(key)
            unique_text += len(node.value)
            _check_scalar(node, loader)
            expanded[key] = (1, len(node.value), 0)
            continue
        if isinstance(node, yaml.MappingNode):
            _check_keys(node)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))
    values, text, _ = expanded[id(root)]
    if values - unique_values > MAX_ALIAS_VALUES or text - unique_text > MAX_ALIAS_TEXT:
        raise _Refused(
            f"aliases expand the document to {values} values and {text} characters of text "
            f"(aliases may add at most {MAX_ALIAS_VALUES} values and {MAX_ALIAS_TEXT >> 20} MiB)",
            root,
            "write the values out instead of nesting aliases",
        )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_scalar(node: yaml.ScalarNode, loader: yaml.SafeLoader | yaml.CSafeLoader) -> None:
    if "\x00" in node.value:
        raise _Refused(
            'a value holds a NUL character (an escape such as "\\0" or "\\x00")',
            node,
            "remove it: no name, path or text here may hold one",
        )
    construct = loader.yaml_constructors.get(node.tag)
    if construct is None:  # an unknown tag: construct_document says so, at its line
        return
    try:
        value = construct(loader, node)
    except yaml.MarkedYAMLError:  # PyYAML's own error, with its line: reported as every other one
        raise
    except Exception as exc:  # a constructor's bare error (a date that is none, an explicit `!!int x`)
        if node.tag == _TIMESTAMP:
            raise _Refused(
                f"{node.value!r} reads as a date to YAML, but it is not one ({exc})",
                node,
                "write a real date as YYYY-MM-DD (or quote the value to make it text)",
            ) from None
        raise _Refused(
            f"{node.value!r} is not a valid {node.tag.rsplit(':', 1)[-1]} ({exc or type(exc).__name__})",
            node,
            "write a value of that kind, or drop the tag (quote the value to make it text)",
        ) from None
    if node.tag != _INT:
        return
    if not INT64[0] <= value <= INT64[1]:
        raise _Refused(
            f"the integer {_digits(node.value)} does not fit in 64 bits", node, "use a number between -2^63 and 2^63-1"
        )


def _digits(text: str) -> str:
    """An integer as written, cut to its first and last digits when long: a 400-digit one filled the error line."""
    return text if len(text) <= 40 else f"{text[:20]}…{text[-8:]} ({len(text)} characters)"


def _check_keys(node: yaml.MappingNode) -> None:
    first_line: dict[tuple[str, str], int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise _Refused("a key must be a name, not a mapping or list", key_node, "write the key as plain text")
        if key_node.tag not in (_STR, _MERGE):
            kind = _KIND_OF_TAG.get(key_node.tag, f"a value tagged {key_node.tag}")
            shown = kind.format(value="true" if key_node.value.lower() in ("yes", "on", "true") else "false")
            raise _Refused(
                f"the key {key_node.value!r} is read by YAML as {shown}, not as a name",
                key_node,
                f"quote it: '{key_node.value}'",
            )
        seen = (key_node.tag, key_node.value)
        if seen in first_line:
            raise _Refused(
                f"duplicate key '{key_node.value}' (first at line {first_line[seen]}); "
                "YAML would silently keep only the last",
                key_node,
                "remove one of them",
            )
        first_line[seen] = key_node.start_mark.line + 1


def _index(node: yaml.Node, loc: Loc, lines: dict[Loc, int]) -> None:
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.start_mark.line)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            _index(value_node, (*loc, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index(item, (*loc, index), lines)
