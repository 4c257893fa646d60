"""The scores block: one line of ``scores.jsonl``, its encoding, its decoding and its JSON Schema, in one place.

A block is consecutive examples stored as columns (one ``orjson.dumps`` per block, no object per example)::

    {"ids": [...], "lines": [...], "scores": {metric: [...]}, "clusters": [...]}

Row ``i`` is ``ids[i]`` on dataset line ``lines[i]``; ``scores[metric][i]`` is its encoded score (:func:`encode_score`:
a bare number for scored+valid without diagnostics, else the full score), or the list of its samples' scores when the
task has samples; ``clusters[i]`` (a clustered run only) its cluster, or null. Every list has one entry per id.

The writer (``artifacts.ScoresWriter``) encodes with :func:`encode_block`; every reader (``load_columns`` for
``verify``, ``compare`` and comparative baselines; the failing-examples reader; the HTML report's rows) decodes with
:func:`decode_block`, which parses exactly (:mod:`evalglass.readers.jsonsource`) and checks the shape, so no reader
reads a block differently from another; ``evalglass schema scores`` prints :func:`block_schema`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import orjson

from evalglass.core.score import Diagnostic, Score, Status, Validity
from evalglass.readers import jsonsource

IDS = "ids"
LINES = "lines"
SCORES = "scores"
CLUSTERS = "clusters"


class BadBlock(ValueError):
    """A line that is not a scores block; the message says what is wrong with it (one line)."""


@dataclass(frozen=True, slots=True)
class ScoresBlock:
    """A decoded block: parallel lists, one entry per example; ``clusters`` None when the block records none."""

    ids: list[Any]
    lines: list[Any]
    scores: dict[str, list[Any]]
    clusters: list[Any] | None


def encode_score(result: float | Score) -> Any:
    """Scored+valid without diagnostics is stored as a bare number; every other score in full."""
    if not isinstance(result, Score):
        return float(result)
    if result.included and not result.diagnostics and not result.evidence:
        return result.value
    return _in_full(result)


def encode_scored(score: Score) -> Any:
    """:func:`encode_score` of a Score already known to be scored+valid (``ScoreColumn.extend_scored`` took it:
    the Score type itself, its states the two members), without asking again: its value, or in full when it
    carries notes or evidence."""
    fields = score.__dict__
    if not fields["diagnostics"] and not fields["evidence"]:
        return fields["value"]
    return _in_full(score)


def _in_full(score: Score) -> dict[str, Any]:
    plain = _plain_dump(score)
    return plain if plain is not None else score.model_dump(mode="json", exclude_defaults=True)


def _plain_dump(score: Score) -> dict[str, Any] | None:
    """``score.model_dump(mode="json", exclude_defaults=True)`` built by hand (the same keys, in the same order, the
    same values) for a :class:`Score` and :class:`Diagnostic` themselves holding a finite float or no value: a
    replay writes a noted score for most lines that fall short, and pydantic's serializer cost several times this.
    None for anything else (a subclass, a value that is not a finite float), which pydantic then writes."""
    fields = score.__dict__
    value, diagnostics, evidence = fields["value"], fields["diagnostics"], fields["evidence"]
    status, validity = _TEXT.get(fields["status"]), _TEXT.get(fields["validity"])
    if (
        type(score) is not Score
        or not (value is None or (type(value) is float and math.isfinite(value)))
        or status is None
        or validity is None
    ):
        return None
    dumped: dict[str, Any] = {"status": status, "validity": validity}
    if value is not None:
        dumped["value"] = value
    if diagnostics:
        notes = []
        for diagnostic in diagnostics:
            if type(diagnostic) is not Diagnostic:
                return None
            note = diagnostic.__dict__
            detail = note["detail"]
            notes.append(
                {"code": note["code"], "message": note["message"]}
                if detail is None
                else {"code": note["code"], "message": note["message"], "detail": detail}
            )
        dumped["diagnostics"] = notes
    if evidence:
        dumped["evidence"] = list(evidence)
    return dumped


#: Each state's JSON text (an enum's ``value`` is a property lookup, several times a dict's).
_TEXT: dict[Status | Validity, str] = {member: member.value for member in (*Status, *Validity)}


def decode_score(entry: Any) -> float | Score:
    """An encoded score as the column takes it: a bare number, or a validated :class:`Score` (pydantic's
    ``ValidationError`` when it is not one)."""
    return entry if isinstance(entry, int | float) else Score.model_validate(entry)


def encode_block(
    ids: list[str], lines: list[int], scores: dict[str, list[Any]], clusters: list[str | None] | None
) -> bytes:
    """One block as its line of ``scores.jsonl`` (newline included); ``clusters`` only in a clustered run."""
    if any(len(entries) != len(ids) for entries in scores.values()) or len(lines) != len(ids):
        raise ValueError("a block needs one line number and one score per metric for every id")
    block: dict[str, Any] = {IDS: ids, LINES: lines, SCORES: scores}
    if clusters is not None:
        block[CLUSTERS] = clusters
    return orjson.dumps(block, option=orjson.OPT_APPEND_NEWLINE)


def decode_block(raw: bytes) -> ScoresBlock:
    """One line of ``scores.jsonl``, parsed exactly and checked for shape: lists of one entry per id (each metric's
    scores too). :class:`jsonsource.JsonRefused` for JSON whose meaning a fast parser would change; :class:`BadBlock`
    for anything else that is not a block."""
    try:
        block = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BadBlock("scores line is not a block of recorded examples") from None
    if not _plainly_exact(raw, block) and not jsonsource.batch_is_exact([raw], [block]):
        jsonsource.check_exact(raw)  # JsonRefused
    if not isinstance(block, dict):
        raise BadBlock("scores line is not a block of recorded examples")
    ids, lines, scores, clusters = block.get(IDS), block.get(LINES), block.get(SCORES), block.get(CLUSTERS)
    if not (
        isinstance(ids, list)
        and isinstance(lines, list)
        and isinstance(scores, dict)
        and (clusters is None or isinstance(clusters, list))
        and len(lines) == len(ids)
        and (clusters is None or len(clusters) == len(ids))
    ):
        raise BadBlock("scores line is not a block of recorded examples")
    for name, entries in scores.items():
        if not isinstance(entries, list) or len(entries) != len(ids):
            raise BadBlock(f"metric '{name}' does not have one score per example of the block")
    return ScoresBlock(ids, lines, scores, clusters)


def _plainly_exact(raw: bytes, block: Any) -> bool:
    """A block proven exact without writing it back (:func:`jsonsource.batch_is_exact` re-serialises the value,
    which costs twice the parse); False means only "look closer".

    Every key in the text is followed by a colon. Counted are the block's own keys, its metrics' names and the
    colons inside its ids, metric names and clusters (spelled literally: no ``\\u003a``); anything else in the text
    can only add colons (a full score's keys, a repeated key). So equal counts prove that no key was dropped by a
    repeat. An integer beyond 64 bits shows as a run of 19 digits, and nesting beyond the limit needs that many
    brackets: either sends the line to the general check."""
    if type(block) is not dict:
        return False
    ids, scores, clusters = block.get(IDS), block.get(SCORES), block.get(CLUSTERS)
    if type(ids) is not list or type(scores) is not dict or not (clusters is None or type(clusters) is list):
        return False
    try:
        strings = "".join(ids) + "".join(scores)
        if clusters is not None:
            strings += "".join([cluster for cluster in clusters if cluster is not None])
    except TypeError:  # a value that is not a string
        return False
    if b"\\u" in raw:  # any escaped character (a colon could be one): rare in a block, left to the general check
        return False
    marks = raw.translate(_MARKS)
    if _LONG_DIGITS in marks or marks.count(b"[") > jsonsource.MAX_DEPTH:
        return False
    return marks.count(b":") == len(block) + len(scores) + strings.count(":")


#: Each digit becomes "0", each opening bracket "[", each colon ":", every other byte a space: one pass over the line
#: serves the digit-run, depth and colon tests.
_MARKS = bytes(
    ord("0") if chr(byte) in "0123456789" else ord("[") if chr(byte) in "[{" else ord(":") if chr(byte) == ":" else 32
    for byte in range(256)
)
_LONG_DIGITS = b"0" * 19


def block_schema() -> dict[str, Any]:
    """The JSON Schema of one block (``evalglass schema scores``)."""
    score = Score.model_json_schema()
    defs = score.pop("$defs", {})
    entry = {"anyOf": [{"type": "number"}, {"$ref": "#/$defs/Score"}]}
    return {
        "title": "EvalGlass scores.jsonl line",
        "description": "A block of consecutive examples, as columns: row i is ids[i] on dataset line lines[i], with "
        "scores[metric][i] (a list of sample scores when the task has samples) and, in a clustered run, "
        "clusters[i]. A bare number is shorthand for a scored, valid score. Every list has one entry per id.",
        "type": "object",
        "additionalProperties": False,
        "required": [IDS, LINES, SCORES],
        "properties": {
            IDS: {"type": "array", "items": {"type": "string"}, "minItems": 1},
            LINES: {"type": "array", "items": {"type": "integer", "minimum": 1}},
            SCORES: {
                "type": "object",
                "additionalProperties": {
                    "type": "array",
                    "items": {"anyOf": [entry, {"type": "array", "items": entry, "minItems": 1}]},
                },
            },
            CLUSTERS: {"type": "array", "items": {"type": ["string", "null"]}},
        },
        "$defs": {**defs, "Score": score},
    }


__all__ = [
    "BadBlock",
    "ScoresBlock",
    "block_schema",
    "decode_block",
    "decode_score",
    "encode_block",
    "encode_score",
    "encode_scored",
]
