"""YAML loading that remembers where each key came from, so config errors can name file:line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalglass.errors import SetupError

Loc = tuple[str | int, ...]


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


def load_yaml(path: Path, *, what: str) -> YamlDocument:
    """Parse a YAML file safely, mapping every key path to its line."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SetupError(f"{what} not found", where=str(path), fix="check the path or run `evalglass init`") from None
    except OSError as exc:
        raise SetupError(f"cannot read {what}: {exc.strerror}", where=str(path)) from None
    return parse_yaml(raw, path, what=what)


def parse_yaml(raw: bytes, path: Path, *, what: str) -> YamlDocument:
    """Parse YAML bytes as :func:`load_yaml` does; ``path`` only names them (``verify`` re-parses snapshots)."""
    try:
        loader = yaml.SafeLoader(raw.decode("utf-8"))
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except UnicodeDecodeError:
        raise SetupError(f"{what} is not UTF-8 text", where=str(path)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise SetupError(
            f"{what} is not valid YAML: {exc.problem or exc.context}", where=line, fix="fix the YAML syntax"
        ) from None
    except yaml.YAMLError as exc:
        raise SetupError(f"{what} is not valid YAML: {exc}", where=str(path)) from None
    lines: dict[Loc, int] = {}
    if node is not None:
        _index(node, (), lines)
    return YamlDocument(path=path, data=data, lines=lines, raw=raw)


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
