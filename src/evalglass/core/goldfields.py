"""Which fields of a dataset record hold a system output, so the gold fingerprint leaves them out.

A run's outputs are what it measures, never its gold: a new batch of outputs must not make validated gold stale,
while an edited reference, input or id always does. The fields holding outputs are those a recorded task reads from
the dataset file itself: the task's ``field``, or, in a run with variants, every recorded variant's ``field`` (each
variant is a task of its own, and re-recording any variant's outputs is what a variant run is for). A task whose
outputs come from their own file (``path``), or from a live lane, holds none in the dataset file.

A field left out here must hold nothing but that output, or leaving it out would hide gold (or an input the run
feeds a system, which gold binds too) from the fingerprint, and an approval from what it approved. So a field that
holds a recorded output of the dataset file may be nothing else (:func:`field_conflicts`, which the config's
validation applies: ``Config._fields_apart``): not the dataset's ``id_field`` or ``cluster_field``, not (in or
around) the reference any metric reads, not another variant's recorded output (one answer measured as two systems),
and not a field a template reads as an input: a live variant's prompt (``{{ draft }}``, ``{{ example.draft }}``) or
a judge's (``{{ example.draft }}``, or its ``transcript.input``). What is not read by name is hidden instead
(:func:`record_without`): judges, juries and every live lane are shown the record as gold sees it, so host code (a
python or command lane) and a template that shows the record whole (the judges' default ``{{ example | json }}``)
never receive a recorded output. A python metric, which measures one task's answer, is shown the record without
any other task's recorded output (:func:`others_outputs`): its own answer stays in it, under its field's name.

These are plain functions of the config's raw values (as declared, or as a run record stores them), so the config
and the reports that explain a run's gold (``report.explain``) read the same answer from one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from evalglass.core.fieldpath import parse_path

RECORDED = "recorded"
DEFAULT_OUTPUT_FIELD = "output"
#: Other evaluation tools' results (``dataset.format``), read by ``engine.datasets.toollogs``.
TOOL_FORMATS = ("inspect", "promptfoo", "lm-eval", "openai-evals")
#: What a tool's reader adds to each record about the tool's run rather than the sample: ``source`` (the run's id,
#: the tool's version, the model, the log's status). It is not gold: a new run of the tool on the same samples must
#: keep a validated gold, as new outputs do. ``not_captured`` (which outputs the file does not hold) is gold, as a
#: trace record's is: it decides whether a missing answer is the system's (measured) or the evaluator's
#: (``non_evaluable``, which a gate may tolerate), and a new run of the same task captures the same, while a file
#: edited to drop its failing samples' answers (an lm-eval answer made a log-likelihood pair) would otherwise turn
#: those samples tolerated with every approval fresh.
TOOL_RUN_FIELDS = ("source",)


def merged_task(task: Mapping[str, Any] | None, override: Mapping[str, Any]) -> dict[str, Any]:
    """The task a variant runs, as raw config values: ``override`` over ``task`` key by key (a nested value such
    as ``retry`` is replaced whole), or ``override`` alone when it names another ``type``."""
    base = dict(task or {})
    if "type" in override and override["type"] != base.get("type", RECORDED):
        return dict(override)
    return {**base, **override}


def run_tasks(task: Mapping[str, Any] | None, variants: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Every task a run scores, as raw values: each variant's (in declared order), or the task itself."""
    if not variants:
        return [dict(task or {})]
    return [merged_task(task, override) for override in variants.values() if isinstance(override, Mapping)]


def gold_excluded_fields(
    task: Mapping[str, Any] | None, variants: Mapping[str, Any] | None, dataset_format: object = None
) -> tuple[str, ...]:
    """The dataset fields holding a recorded output of some task the run scores, in declared order, each once;
    empty when no output is recorded in the dataset file. One field for a run without variants: the same field,
    and so the same fingerprint, as before variants existed. Another tool's results (``dataset_format``) also leave
    out what their reader records about the tool's run (:data:`TOOL_RUN_FIELDS`)."""
    fields: dict[str, None] = dict.fromkeys(TOOL_RUN_FIELDS) if dataset_format in TOOL_FORMATS else {}
    for one in run_tasks(task, variants):
        if one.get("type", RECORDED) == RECORDED and one.get("path") is None:
            field = one.get("field", DEFAULT_OUTPUT_FIELD)
            if isinstance(field, str):
                fields[field] = None
    return tuple(fields)


def others_outputs(excluded_fields: Sequence[str], own: str | None) -> tuple[str, ...]:
    """Of the fields gold leaves out (:func:`gold_excluded_fields`), those host code scoring one task is never
    shown (a ``python`` metric's ``record``): every other task's recorded output. Kept: ``own``, the task's own
    recorded output field in the dataset file (None when its outputs are elsewhere), which is the answer measured,
    and what a tool's reader records of the tool's run (:data:`TOOL_RUN_FIELDS`: the run that produced that
    answer). Another variant's answer is a value a pull request re-records with gold and every approval unchanged:
    a metric that read it would decide on it unbound."""
    return tuple(field for field in excluded_fields if field != own and field not in TOOL_RUN_FIELDS)


class FieldRole(StrEnum):
    """What a dataset field is to a run: a recorded output, or one of the things gold binds."""

    OUTPUT = "output"
    ID = "id"
    CLUSTER = "cluster"
    REFERENCE = "reference"
    INPUT = "input"


@dataclass(frozen=True, slots=True)
class FieldUse:
    """One use of a dataset field: its path, its role, who uses it (``variant 'b'``, ``metric 'exact'``, ``the
    dataset``), how (``its prompt``; empty when the role says it), and where the config declares it (``at``, the
    key path a problem is reported at, and ``label``, that key as the message names it). ``in_file``: for an
    output, whether it is read from the dataset file itself (only then does gold leave it out)."""

    path: str
    role: FieldRole
    owner: str
    at: tuple[str | int, ...]
    label: str = ""
    how: str = ""
    in_file: bool = True
    #: How to fix a problem at this output (default: record the outputs in a field of their own).
    fix: str = "record outputs in a field of their own"


def _overlap(first: str, second: str) -> bool:
    """Whether one path is the other, or inside it."""
    left, right = parse_path(first), parse_path(second)
    shorter = min(len(left), len(right))
    return left[:shorter] == right[:shorter]


def field_conflicts(uses: Sequence[FieldUse]) -> list[tuple[tuple[str | int, ...], str]]:
    """Every recorded output field that is (or overlaps) another use of a field, each once, at the output's key:
    the message says what else the field is and how to fix it. A reference is refused for any recorded output (an
    output read from its own file beside a reference of the same name is refused too, as it always was: it reads as
    the gold answer); the other roles only for outputs the dataset file holds (the fields gold leaves out)."""
    outputs = [use for use in uses if use.role is FieldRole.OUTPUT]
    problems: dict[tuple[str | int, ...], str] = {}
    for index, output in enumerate(outputs):
        for other in uses:
            if other is output:
                continue
            if other.role is FieldRole.OUTPUT:
                # Two outputs share a field only in the dataset file; reported once, at the later one.
                later = outputs.index(other) > index
                if other.owner == output.owner or later or not (output.in_file and other.in_file):
                    continue
            elif other.role is not FieldRole.REFERENCE and not output.in_file:
                continue
            if _overlap(output.path, other.path):
                problems.setdefault(output.at, _message(output, other))
    return list(problems.items())


def _message(output: FieldUse, other: FieldUse) -> str:
    named = f"{output.label} '{output.path}'"
    fix = output.fix
    if other.role is FieldRole.ID:
        return f"{named} is the dataset's id_field '{other.path}': an example's id is gold, never an answer; {fix}"
    if other.role is FieldRole.CLUSTER:
        return f"{named} is the dataset's cluster_field '{other.path}': the clusters are gold, never an answer; {fix}"
    if other.role is FieldRole.REFERENCE:
        return (
            f"{named} overlaps the reference '{other.path}' of {other.owner}: the recorded output would be "
            f"compared with the gold answer itself; {fix}"
        )
    if other.role is FieldRole.OUTPUT:
        return (
            f"{named} is also the recorded output of {other.owner}: one recorded answer would be measured as two "
            f"systems (and gold could not tell which it leaves out); give each variant a field of its own"
        )
    return (
        f"{named} is read as an input by {other.owner} ({other.how}): a system's answer fed to the run as part of "
        f"the example, which gold leaves out, so editing it would change what is measured without the approval "
        f"going stale; {fix}, or compare variants' outputs with `compare_variants`"
    )


# ---------------------------------------------------------------------- the record as gold sees it
_Trie = dict[str | int, "_Trie | None"]


def _trie(paths: Sequence[str]) -> _Trie:
    """``paths`` as a tree of their parts; None marks a value removed whole (with everything inside it)."""
    root: _Trie = {}
    for path in paths:
        node = root
        parts = parse_path(path)
        for depth, part in enumerate(parts):
            if depth == len(parts) - 1:
                node[part] = None
                break
            child = node.get(part, {})
            if child is None:  # an outer value is already removed whole
                break
            node[part] = child
            node = child
    return root


def _removed(node: Any, trie: _Trie) -> Any:
    """``node`` without the values ``trie`` marks, from a copy (the mappings and lists on the way down only).
    Items of one list are removed from the highest index down, so removing one never shifts another."""
    if type(node) is list:
        indices = sorted((part for part in trie if isinstance(part, int) and part < len(node)), reverse=True)
        if not indices:
            return node
        items: list[Any] = list(node)
        for index in indices:
            inner = trie[index]
            if inner is None:
                del items[index]
            else:
                items[index] = _removed(items[index], inner)
        return items
    if type(node) is dict or isinstance(node, Mapping):  # a dict (every reader's) without the ABC check
        keys = [part for part in trie if str(part) in node]
        if not keys:
            return node
        copy = dict(node)
        for part in keys:
            inner = trie[part]
            if inner is None:
                del copy[str(part)]
            else:
                copy[str(part)] = _removed(copy[str(part)], inner)
        return copy
    return node


def record_without(paths: Sequence[str]) -> Callable[[Mapping[str, Any]], Any]:
    """A function giving a record without the values at ``paths`` (the record itself, unchanged, when it has none
    of them). The dataset's records are shared with the metrics, so the values are removed from a copy.

    With the run's :func:`gold_excluded_fields` it is the record as gold sees it, and as everything that scores or
    produces a variant's output is shown it (judges' ``example``, every task lane's record): no recorded output of
    any variant, so no system under test is fed another's answer and no judge sees a competing one; the output it
    grades it is shown as ``output`` only."""
    if not paths:
        return _same
    trie = _trie(paths)
    return lambda record: _removed(record, trie)


def _same(record: Mapping[str, Any]) -> Mapping[str, Any]:
    return record
