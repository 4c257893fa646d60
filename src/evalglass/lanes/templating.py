"""Jinja2 prompt templates for chat lanes and judges: sandboxed, and strict about undefined variables.

A template that refers to a field the example lacks fails that example (``template_field_missing``); it never
renders as an empty string, because an empty slot in a prompt silently changes what is being measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jinja2
import orjson
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


__all__ = ["TemplateFailure", "compile_template", "render", "template_context"]
