"""Turn a pydantic ValidationError on a YAML document into actionable lines: one per problem, each naming its
``file:line``."""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from evalglass.core.names import closest, suggest
from evalglass.errors import LocatedValueError, SetupError, SetupErrors, problem_message
from evalglass.readers.yamlsource import Loc, YamlDocument

ModelT = TypeVar("ModelT", bound=BaseModel)
PRIORITY = {"extra_forbidden": 0, "union_tag_invalid": 1, "union_tag_not_found": 2, "missing": 3}


def validate_document(
    model: type[ModelT],
    doc: YamlDocument,
    *,
    what: str,
    context: dict[str, Any] | None = None,
    numbers_as_written: bool = False,
) -> ModelT:
    """``doc`` as ``model``, or every problem as one line at its ``file:line``. ``numbers_as_written``: refuse a
    number the model took from text (:func:`refuse_numbers_from_text`), as a file the host writes now is read; a
    snapshot a run kept is read as it was accepted then."""
    if not isinstance(doc.data, Mapping):
        raise SetupError(
            f"{what} must be a YAML mapping of keys to values, not {type(doc.data).__name__}",
            where=str(doc.path),
        )
    refuse_non_finite(doc, what)
    try:
        validated = model.model_validate(doc.data, context=context)
    except ValidationError as exc:
        raise setup_error_from(exc, doc, model, what) from None
    if numbers_as_written:
        refuse_numbers_from_text(validated, doc, what)
    return validated


def refuse_numbers_from_text(validated: BaseModel, doc: YamlDocument, what: str) -> None:
    """One line at its ``file:line`` for the first number the model holds where the document wrote text
    (``proposed_threshold: "0.8"``, ``min_n: "5"``, ``level: "0.9"``).

    The ledger reads its numbers strictly, so a quoted ``threshold: "0.8"`` is refused; pydantic's lax mode made the
    same text in the config a number, so one file took what the other refused. Every field would need its own
    ``strict=True`` (and the next field added would forget it), so the validated model is walked beside the
    document instead: wherever the model holds an ``int`` or ``float`` (never a bool) and the document, at the same
    place, holds text that spells a number, the text was converted; or a boolean, which lax mode reads as 1 or 0.
    Text a validator reads on purpose (a duration,
    a name) spells no plain number and is left alone; where a validator reshaped the document the walk stops."""
    pending: list[tuple[Loc, Any, Any]] = [((), validated, doc.data)]
    while pending:
        loc, value, written = pending.pop()
        if isinstance(value, BaseModel):
            if not isinstance(written, Mapping):
                continue
            for name, field in type(value).model_fields.items():
                key = field.alias or name
                if key in written:
                    pending.append(((*loc, key), getattr(value, name), written[key]))
        elif isinstance(value, Mapping):
            if isinstance(written, Mapping):
                pending.extend(((*loc, key), item, written[key]) for key, item in value.items() if key in written)
        elif isinstance(value, list | tuple):
            if isinstance(written, list) and len(written) == len(value):
                pending.extend(((*loc, index), item, written[index]) for index, item in enumerate(value))
        elif type(value) in (int, float) and isinstance(written, bool):
            # Lax mode reads true as 1 and false as 0: `proposed_threshold: true`, `max: yes` became numbers.
            spelled = "true" if written else "false"
            raise SetupError(
                f"{_dotted(loc)}: {spelled} is a boolean to YAML (yes/no/on/off/true/false), not a number",
                where=doc.where(loc),
                fix=f"write a number in {what}",
            )
        elif type(value) in (int, float) and isinstance(written, str):
            refused = refused_text(written)
            if refused is not None:
                reason, fix = refused
                raise SetupError(f"{_dotted(loc)}: {reason}", where=doc.where(loc), fix=f"{fix} in {what}")


def refuse_non_finite(doc: YamlDocument, what: str) -> None:
    """One line at its ``file:line`` for the first ``.nan``, ``.inf`` or ``-.inf`` anywhere in the document.

    Wherever a config or ledger means a number (a threshold, a proposal, a margin, a timeout, a price), a NaN
    compares false with everything and an infinity passes every lower bound, so each field would need its own
    guard; no field means one, so the document is refused whole, before its models read it."""
    pending: list[tuple[Loc, Any]] = [((), doc.data)]
    while pending:
        loc, value = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise SetupError(
                f"{_dotted(loc)}: {value} is not a finite number",
                where=doc.where(loc),
                fix=f"write a real number in {what} (.nan and .inf are refused)",
            )
        if isinstance(value, Mapping):
            pending.extend(((*loc, key), item) for key, item in value.items())
        elif isinstance(value, list):
            pending.extend(((*loc, index), item) for index, item in enumerate(value))


def setup_error_from(exc: ValidationError, doc: YamlDocument, model: type[BaseModel], what: str) -> SetupError:
    """Every problem pydantic found, each as one line naming its ``file:line`` (one problem per location).

    A misspelt key usually also causes a "missing" error for the key it was meant to be; the typo comes first, so
    the first line is the one that fixes both.
    """
    errors = sorted(exc.errors(), key=lambda error: PRIORITY.get(error["type"], len(PRIORITY)))
    problems: dict[Loc, SetupError] = {}
    members: dict[Loc, list[str]] = {}
    for error in _without_typo_echoes(errors):
        for loc, problem in _problems(error, doc, model, what):
            member = None if error["type"] in ("missing", "extra_forbidden") else _union_member_of(loc, doc)
            if member is None:
                problems.setdefault(loc, problem)
            else:
                members.setdefault(loc[:-1], []).append(member)
                problems.setdefault(loc[:-1], problem)
    for loc, kinds in members.items():
        if len(kinds) > 1:
            # A value that fits no member of a union (`where: {a: {b: 1}}`) was one line per member ("….str:
            # should be a valid string", "….bool: …", …): one value, one line, naming what each member takes.
            problems[loc] = SetupError(
                f"{_dotted(loc)}: {_shown(_value_at(doc.data, loc))} is none of the kinds this value may be "
                f"({', '.join(dict.fromkeys(kinds))})",
                where=doc.where(loc),
                fix=f"write one of those in {what}",
            )
    found = list(problems.values())
    return found[0] if len(found) == 1 else SetupErrors(found)


def _union_member_of(loc: Loc, doc: YamlDocument) -> str | None:
    """The union member a pydantic location ends in (``where.a.str``: "str"), or None: a last part that is no key
    or index of the document below a value that is (only a missing key's error, excluded by the caller, has
    another such last part)."""
    if len(loc) < 2 or loc in doc.lines or _value_at(doc.data, loc) is not _NOWHERE:
        return None
    return None if _value_at(doc.data, loc[:-1]) is _NOWHERE else str(loc[-1])


#: What :func:`_value_at` answers for a location the document does not have.
_NOWHERE = object()


def _value_at(data: Any, loc: Loc) -> Any:
    for part in loc:
        found = (isinstance(data, Mapping) and part in data) or (
            isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)
        )
        if not found:
            return _NOWHERE
        data = data[part]
    return data


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _without_typo_echoes(errors: list[ErrorDetails]) -> list[ErrorDetails]:
    """Drop each "missing key" error that a misspelt key beside it explains: ``actve: true`` is one mistake, and
    the unknown-key line ("did you mean 'active'?") fixes both, so it is the only line shown for it."""
    unknown: dict[Loc, list[str]] = {}
    for error in errors:
        if error["type"] == "extra_forbidden":
            unknown.setdefault(tuple(error["loc"][:-1]), []).append(str(error["loc"][-1]))
    return [
        error
        for error in errors
        if error["type"] != "missing"
        or closest(str(error["loc"][-1]), unknown.get(tuple(error["loc"][:-1]), [])) is None
    ]


def _problems(
    error: ErrorDetails, doc: YamlDocument, model: type[BaseModel], what: str
) -> list[tuple[Loc, SetupError]]:
    """The problems one pydantic error stands for: one, or one per location a validator named."""
    loc: Loc = tuple(error["loc"])
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, LocatedValueError):
        return [
            (
                yaml_loc,
                SetupError(
                    f"{_dotted(yaml_loc)}: {message}", where=doc.where(yaml_loc), fix=f"fix this value in {what}"
                ),
            )
            for yaml_loc, message in ((_yaml_loc((*loc, *inner), doc), message) for inner, message in cause.problems)
        ]
    yaml_loc = _yaml_loc(loc, doc)
    return [(yaml_loc, _problem(error, loc, yaml_loc, doc, model, what))]


def _problem(
    error: ErrorDetails, loc: Loc, yaml_loc: Loc, doc: YamlDocument, model: type[BaseModel], what: str
) -> SetupError:
    where = doc.where(yaml_loc)
    parent = ".".join(str(part) for part in yaml_loc[:-1]) or "top level"
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        allowed = _allowed_keys(model, loc[:-1])
        return SetupError(f"unknown key '{key}' in {parent}", where=where, fix=suggest(key, allowed))
    if kind == "missing":
        return SetupError(f"missing required key '{loc[-1]}' in {parent}", where=where, fix=f"add it to {what}")
    if kind == "union_tag_invalid":
        ctx = error.get("ctx", {})
        tag = str(ctx.get("tag", ""))
        expected = [part.strip().strip("'") for part in str(ctx.get("expected_tags", "")).split(",")]
        return SetupError(f"unknown type '{tag}' at {_dotted(yaml_loc)}", where=where, fix=suggest(tag, expected))
    if kind == "union_tag_not_found":
        return SetupError(f"{_dotted(yaml_loc)} needs a 'type'", where=where, fix="add `type: <metric type>`")
    refused = _refused_number(error)
    if refused is not None:
        reason, fix = refused
        return SetupError(f"{_dotted(yaml_loc)}: {reason}", where=where, fix=f"{fix} in {what}")
    return SetupError(f"{_dotted(yaml_loc)}: {problem_message(error)}", where=where, fix=f"fix this value in {what}")


#: pydantic's "this is not a number" errors: a config or ledger number is read strictly, so text never becomes one.
_NUMBER_ERRORS = frozenset({"float_type", "int_type", "float_parsing", "int_parsing"})


def _refused_number(error: ErrorDetails) -> tuple[str, str] | None:
    """``(what is wrong, how to fix it)`` for every spelling of a number that a number field refuses, so none gets
    pydantic's generic "Input should be a valid number": text YAML 1.1 reads as a string though it spells a number
    (``7e-1``, ``1e3``, a quoted ``"0.7"``: an exponent is a number to PyYAML only with a dot and a signed exponent),
    a percentage (``70%``), and text beyond a float's range (``1e400``). None for a value
    that spells no number at all (``high``), which keeps pydantic's message."""
    value = error.get("input")
    if error["type"] not in _NUMBER_ERRORS:
        return None
    return refused_text(value)


def refused_text(value: Any) -> tuple[str, str] | None:
    """:func:`_refused_number` of a value written where a number is read: ``(what is wrong, how to fix it)`` for
    text that spells a number, a percentage or a number beyond a float's range; None for anything else."""
    if not isinstance(value, str):  # (a float YAML read as inf, 1.0e+400, is refused as not finite before this)
        return None
    text = value.strip().replace("_", "")
    percent = text.endswith("%")
    try:
        number = float(text[:-1] if percent else text)
    except ValueError:
        return None
    if not math.isfinite(number):
        return (
            f"{value!r} is out of range (beyond a 64-bit float)",
            "write a number within range (a threshold is between 0 and 1)",
        )
    if percent:
        return f"{value!r} is a percentage, which is text to YAML", f"write the fraction {_spelled(number / 100)}"
    return (
        f"{value!r} is text to YAML, not a number (PyYAML reads YAML 1.1: an exponent needs a dot and a sign, "
        "1.0e-3, and a quoted value is text)",
        f"write {_spelled(number)} unquoted",
    )


def _spelled(number: float) -> str:
    """``number`` as YAML 1.1 reads it back as the same number."""
    if number.is_integer() and abs(number) < 1e16:
        return str(int(number))
    spelled = repr(number)
    if "e" in spelled and "." not in spelled.split("e")[0]:
        spelled = spelled.replace("e", ".0e")
    return spelled


def _dotted(loc: Loc) -> str:
    return ".".join(str(part) for part in loc) or "top level"


def _yaml_loc(loc: Loc, doc: YamlDocument) -> Loc:
    """Drop pydantic's discriminator tags and other parts that do not exist in the document."""
    kept: list[str | int] = []
    for index, part in enumerate(loc):
        candidate = (*kept, part)
        if candidate in doc.lines or index == len(loc) - 1:
            kept.append(part)
    return tuple(kept)


def _unwrap(annotation: Any) -> Any:
    """Strip Annotated and Optional wrappers down to the type that carries the keys."""
    while True:
        if get_origin(annotation) is typing.Annotated:
            # An entry validated by its declared type (``metrics.registry.MetricEntry``) stands for its union.
            stands_for = [meta.validated_as for meta in annotation.__metadata__ if hasattr(meta, "validated_as")]
            annotation = stands_for[0]() if stands_for else get_args(annotation)[0]
            continue
        if get_origin(annotation) in (Union, types.UnionType):
            members = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def _allowed_keys(model: type[BaseModel], loc: Loc) -> list[str]:
    """Field names of the model found by following ``loc`` through models, dicts, lists and tagged unions."""
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        origin = get_origin(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return []
            current = field.annotation
        elif origin in (dict, Mapping):
            current = get_args(current)[1]
        elif origin in (list, tuple):
            current = get_args(current)[0]
        elif origin in (Union, types.UnionType):
            current = _union_member(current, part)
            if current is None:
                return []
        else:
            return []
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _union_member(union: Any, tag: str | int) -> Any:
    for member in get_args(union):
        member = _unwrap(member)
        if not (isinstance(member, type) and issubclass(member, BaseModel)):
            continue
        type_field = member.model_fields.get("type")
        if type_field is not None and tag in get_args(type_field.annotation):
            return member
        if member.__name__ == tag:
            return member
    return None
