"""Jinja2 prompt templates for chat lanes and judges: sandboxed, and strict about undefined variables.

A template that refers to a field the example lacks fails that example (``template_field_missing``); it never
renders as an empty string, because an empty slot in a prompt silently changes what is being measured.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jinja2
import jinja2.nodes
import orjson
from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

_ENV = ImmutableSandboxedEnvironment(
    undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True, trim_blocks=False
)
_ENV.filters["json"] = lambda value: orjson.dumps(value).decode()


def compile_template(source: str, *, where: str = "template") -> jinja2.Template:
    try:
        return _ENV.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ValueError(f"{where}: Jinja2 syntax error on line {exc.lineno}: {exc.message}") from None


class TemplateFailure(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def render(template: jinja2.Template, context: Mapping[str, Any], *, what: str, example_id: str) -> str:
    """Render or raise :class:`TemplateFailure` (``template_field_missing`` / ``template_error``)."""
    try:
        return template.render(context)
    except jinja2.UndefinedError as exc:
        raise TemplateFailure(
            "template_field_missing",
            f"{what} needs a value the example {example_id} does not have: {exc.message}",
        ) from None
    except Exception as exc:
        raise TemplateFailure("template_error", f"{what} failed on example {example_id}: {exc}") from None


def template_context(fields: Mapping[str, Any], example_id: str, sample: int) -> dict[str, Any]:
    """Fields at the top level, plus ``example`` (the whole record), ``example_id`` and ``sample_index``."""
    context = dict(fields)
    context.update(example=fields, example_id=example_id, sample_index=sample)
    return context


@functools.lru_cache(maxsize=256)  # every judge of a config shares the default prompt: parsed once
def record_fields_read(source: str, *, top_level: bool) -> frozenset[str]:
    """The record's top-level fields a template reads by name: ``example.X`` / ``example['X']`` (every template
    is given the record as ``example``), and with ``top_level`` (a lane's prompt, where the fields are variables
    too) every variable it does not define itself, bar the names the context adds. ``{{ example }}`` shown whole
    reads no field by name (it is left to the caller's rule on the whole record). A template that does not parse
    reads nothing here: its own validation refuses it."""
    try:
        tree = _ENV.parse(source)
    except jinja2.TemplateSyntaxError:
        return frozenset()
    found: set[str] = set()
    for node in tree.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem)):
        if not isinstance(node, jinja2.nodes.Getattr | jinja2.nodes.Getitem):
            continue
        inner = node.node
        if not (isinstance(inner, jinja2.nodes.Name) and inner.name == "example"):
            continue
        if isinstance(node, jinja2.nodes.Getattr):
            found.add(node.attr)
        elif isinstance(node.arg, jinja2.nodes.Const) and isinstance(node.arg.value, str):
            found.add(node.arg.value)
    if top_level:
        found |= meta.find_undeclared_variables(tree) - _CONTEXT_NAMES
    return frozenset(found)


#: The names :func:`template_context` adds beside the record's fields.
_CONTEXT_NAMES = frozenset({"example", "example_id", "sample_index"})


__all__ = ["TemplateFailure", "compile_template", "record_fields_read", "render", "template_context"]
