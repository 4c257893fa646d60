"""Why an approval went stale, when the engine can tell: an evaluator's version, the host code a python metric
imports (newly bound), or, when the approval carries its ``definition:``, which fields and files changed.

A ledger keeps only the fingerprint it approved, a hash. To say *which* evaluator changed and between which
versions, the fingerprint is recomputed with earlier versions of the evaluators the gate depends on (versions are
whole numbers counting up from 1) until one matches the approved fingerprint; a match proves the definition is
otherwise unchanged. The fingerprint without any versions is tried too: an approval made before evaluators were
versioned. Only gates whose approval does not match are searched, and the search is bounded.

The fingerprint without the host code its python metric imports (``imports`` in the definition) or its check runs
by name (``code``) is tried too: an approval made before EvalGlass bound that, of an unchanged gate, is stale for
that reason alone and says which files it now binds. An approval that carries the ``definition:`` it approved names
every changed field, a bound file's label included (``imports.helpers.py: "sha256:…" → "sha256:…"``).

Without ``definition:``, the files a gate binds by their hashes (its metric's own files and imports, its check's
named files and host code) are named from an earlier run: the fingerprint is recomputed with the current config and
the hashes an earlier run record kept for those files; a match proves the declaration is unchanged and those files
are what changed, and says which (changed, added, removed). Without such a run, a file the gate binds now is tried
left out, one at a time (a file added since approval). When neither tells, the reason says so and lists what the gate
binds: the ledger keeps a hash, and a hash cannot say what it was made of.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping

from evalglass.core.authority import Ledger
from evalglass.core.changes import definition_changes
from evalglass.core.checks import check_code_key
from evalglass.core.fingerprint import fingerprint_of
from evalglass.engine.spec.config import Config, check_files_key, imports_key
from evalglass.engine.spec.samplecount import SAMPLES_KEY
from evalglass.metrics.versions import evaluator

#: Most combinations of earlier versions tried for one gate (a gate depends on a handful of evaluators).
MAX_COMBINATIONS = 512

#: Most files named in one reason (the rest are counted).
MAX_NAMED_FILES = 8

#: Most bound files tried left out, one at a time, for a file added since approval: each try hashes the gate's whole
#: definition, so a gate binding thousands of files is not searched (its reason says it cannot tell instead).
MAX_LEFT_OUT = 256

#: Earlier runs' ``definition_files`` (newest first), read only when a gate's staleness needs them.
EarlierFiles = Callable[[], Iterable[Mapping[str, dict[str, str]]]]


def stale_causes(
    config: Config,
    files: dict[str, dict[str, str]],
    ledger: Ledger,
    current: Mapping[str, str] | None = None,
    earlier: EarlierFiles | None = None,
    used: list[dict[str, dict[str, str]]] | None = None,
) -> dict[str, str]:
    """Per declared gate whose active approval is stale, what changed, when it can be told (see the module).
    ``current`` holds the gate fingerprints when the caller has them already; ``earlier`` gives earlier runs'
    ``definition_files``, read at most once and only for a gate binding files that no ``definition:`` explains;
    ``used`` receives the bound files of each earlier run a reason was named from (what a run records, so that
    ``verify`` re-derives the same reason from the record alone)."""
    causes: dict[str, str] = {}
    remembered: list[Mapping[str, dict[str, str]]] | None = None

    def earlier_files() -> list[Mapping[str, dict[str, str]]]:
        nonlocal remembered
        if remembered is None:
            remembered = list(earlier()) if earlier is not None else []
        return remembered

    for name in config.gates:
        approval = ledger.gates.get(name)
        if approval is None or not approval.active or approval.fingerprint is None:
            continue
        now = current[name] if current is not None else config.gate_fingerprint(name, files)
        if approval.fingerprint == now:
            continue
        cause = (
            evaluator_change(config, name, files, approval.fingerprint)
            or imports_bound(config, name, files, approval.fingerprint)
            or samples_bound(config, name, files, approval.fingerprint)
        )
        if cause is None and approval.definition is not None:
            cause = _changed_fields(approval.definition, config.gate_definition(name, files))
        if cause is None and approval.definition is None:
            cause = bound_files_change(config, name, files, approval.fingerprint, earlier_files, used)
        if cause is not None:
            causes[name] = cause
    return causes


def _checks_of(config: Config, name: str) -> tuple[str, ...]:
    """The checks a gate runs: its own, or those its metric runs per example."""
    gate = config.gates[name]
    if gate.check is not None:
        return (gate.check,)
    return tuple(config.metrics[str(gate.metric)].check_references().values())


def bound_keys(config: Config, name: str) -> tuple[str, ...]:
    """The ``definition_files`` keys of the files the gate binds by their hashes: its metric's own files and the host
    code it imports, and the files and host code of each check it runs."""
    gate = config.gates[name]
    checked = tuple(
        key for check in _checks_of(config, name) for key in (check_files_key(check), check_code_key(check))
    )
    return checked if gate.metric is None else (gate.metric, imports_key(gate.metric), *checked)


def bound_files_change(
    config: Config,
    name: str,
    files: dict[str, dict[str, str]],
    approved: str,
    earlier: EarlierFiles,
    used: list[dict[str, dict[str, str]]] | None = None,
) -> str | None:
    """Which files the gate binds changed since ``approved``, told without the approved ``definition:`` (see the
    module); None for a gate that binds no host code beyond its config (nothing to name)."""
    keys = bound_keys(config, name)
    bound = {key: files[key] for key in keys if files.get(key)}
    if not bound:
        return None
    rest = {key: value for key, value in files.items() if key not in keys}
    for before in earlier():
        then = {key: dict(before[key]) for key in keys if before.get(key)}
        if then != bound and config.gate_fingerprint(name, {**rest, **then}) == approved:
            if used is not None and then not in used:
                used.append(then)
            return (
                "files it binds changed since approval (an earlier run with the approved fingerprint kept their "
                f"hashes; the declaration is unchanged): {_file_changes(then, bound)}"
            )
    searched = sum(len(labelled) for labelled in bound.values()) <= MAX_LEFT_OUT
    for key, labelled in bound.items() if searched else ():
        for label in labelled:
            without = {**rest, **bound, key: {other: h for other, h in labelled.items() if other != label}}
            if config.gate_fingerprint(name, {k: v for k, v in without.items() if v}) == approved:
                return f"a file it binds was added since approval (the declaration is unchanged): {label}"
    metric = config.gates[name].metric
    if not any(key != metric for key in bound) and (metric is None or config.metrics[metric].type != "python"):
        return None  # a schema, a rubric: no host code, and the generic reason says enough
    labels = sorted({label for labelled in bound.values() for label in labelled})
    shown = ", ".join(labels[:MAX_NAMED_FILES]) + (
        f" and {len(labels) - MAX_NAMED_FILES} more" if len(labels) > MAX_NAMED_FILES else ""
    )
    return (
        "its declaration or a file it binds changed since approval; which cannot be told: the ledger entry keeps "
        "only the approved fingerprint (add the `definition:` `evalglass explain` prints to have changes named), "
        f"and no earlier run at hand has it. It binds {shown}"
    )


def _file_changes(before: Mapping[str, Mapping[str, str]], after: Mapping[str, Mapping[str, str]]) -> str:
    """``changed a.py; added b.py; removed c.py`` between two sets of bound files (labels across keys)."""
    old = {label: digest for labelled in before.values() for label, digest in labelled.items()}
    new = {label: digest for labelled in after.values() for label, digest in labelled.items()}
    parts = []
    for word, labels in (
        ("changed", [label for label in new if label in old and old[label] != new[label]]),
        ("added", [label for label in new if label not in old]),
        ("removed", [label for label in old if label not in new]),
    ):
        if labels:
            parts.append(f"{word} {', '.join(sorted(labels))}")
    return "; ".join(parts)


def imports_bound(config: Config, name: str, files: dict[str, dict[str, str]], approved: str) -> str | None:
    """Said when ``approved`` is the gate's fingerprint from before the host code its metric imports, or its check
    runs by name, was bound: the definition is otherwise unchanged, and the approval needs the host to review what
    is bound now."""
    gate = config.gates[name]
    code_keys = {check_code_key(check) for check in _checks_of(config, name)}
    newly = [key for key in bound_keys(config, name) if key == imports_key(str(gate.metric)) or key in code_keys]
    bound = {key: files[key] for key in newly if files.get(key)}
    if not bound:
        return None
    before = {key: value for key, value in files.items() if key not in bound}
    if config.gate_fingerprint(name, before) != approved:
        return None
    labels = ", ".join(label for labelled in bound.values() for label in labelled)
    what = "its python metric imports" if imports_key(str(gate.metric)) in bound else "its check runs by name"
    return (
        f"it was approved before EvalGlass bound the host code {what}; the definition is "
        f"otherwise unchanged, and the fingerprint now also binds {labels}"
    )


def samples_bound(config: Config, name: str, files: dict[str, dict[str, str]], approved: str) -> str | None:
    """Said when ``approved`` is the gate's fingerprint without the samples per example it now binds
    (``engine.spec.samplecount``): approved before EvalGlass bound the count under a reducer that depends on it, so
    whatever count it ran with was never approved; the definition is otherwise unchanged."""
    definition = config.gate_definition(name, files)
    count = definition.pop(SAMPLES_KEY, None)
    if count is None or fingerprint_of(definition) != approved:
        return None
    reducer = config.metrics[str(config.gates[name].metric)].reducer.value
    return (
        f"it was approved before EvalGlass bound how many samples each example is reduced from under a reducer "
        f"that depends on it ({reducer}); the definition is otherwise unchanged, and the fingerprint now also binds "
        f"{SAMPLES_KEY}: {count}"
    )


def _changed_fields(approved: Mapping[str, object], current: Mapping[str, object]) -> str | None:
    """What the approved ``definition:`` and the current one differ in, field by field (a bound file by its
    label), or None when they are equal (the encoding differs, not the definition)."""
    changes = definition_changes(approved, current)
    if not changes:
        return None
    return "the definition changed since approval: " + "; ".join(changes)


def evaluator_change(config: Config, name: str, files: dict[str, dict[str, str]], approved: str) -> str | None:
    """What differs between the evaluators ``approved`` was made under and the current ones, or None when no
    combination of earlier versions explains the difference (the definition itself changed)."""
    current = config.gate_evaluators(name)
    if not current:
        return None
    labels = ", ".join(evaluator(key).label for key in sorted(current))
    if config.gate_fingerprint(name, files, versions={}) == approved:
        return (
            f"it was approved before EvalGlass versioned its evaluators; the definition is unchanged, and the "
            f"fingerprint now includes the evaluators it depends on ({labels})"
        )
    keys = sorted(current)
    choices = [range(1, current[key] + 1) for key in keys]
    for count, combination in enumerate(itertools.product(*choices)):
        if count >= MAX_COMBINATIONS:
            break
        versions = dict(zip(keys, combination, strict=True))
        if versions == current:
            continue
        if config.gate_fingerprint(name, files, versions=versions) == approved:
            changed = [
                f"{evaluator(key).name}@{versions[key]} → {evaluator(key).label}"
                for key in keys
                if versions[key] != current[key]
            ]
            return (
                f"an evaluator it depends on has a new version since approval ({', '.join(changed)}); its results "
                "can differ from what was approved"
            )
    return None
