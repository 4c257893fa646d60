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
- text that is not UTF-8, or characters YAML forbids (a NUL byte), are named by line.

Only a regular file is read (see :mod:`evalglass.engine.userfiles`): a FIFO or a device never hangs a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalglass.engine.userfiles import read_regular
from evalglass.errors import SetupError

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
_KIND_OF_TAG = {
    "tag:yaml.org,2002:bool": "the boolean {value}",
    "tag:yaml.org,2002:null": "null (no value)",
    _INT: "a number",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:timestamp": "a date",
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
        loader = _SAFE_LOADER(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _refuse_hidden_meaning(node, loader)
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
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
        raise SetupError(
            f"{what} is not valid YAML: {exc.problem or exc.context}", where=line, fix="fix the YAML syntax"
        ) from None
    except yaml.YAMLError as exc:
        raise SetupError(f"{what} is not valid YAML: {exc}", where=str(path)) from None
    lines: dict[Loc, int] = {}
    if node is not None:
        _index(node, (), lines)
    return YamlDocument(path=path, data=data, lines=lines, raw=raw)


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
    if node.tag != _INT:
        return
    value = loader.construct_yaml_int(node)
    if not INT64[0] <= value <= INT64[1]:
        raise _Refused(
            f"the integer {node.value} does not fit in 64 bits", node, "use a number between -2^63 and 2^63-1"
        )


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
