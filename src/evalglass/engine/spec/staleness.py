"""Why an approval went stale, when the engine can tell: an evaluator's version, the host code a python metric
imports (newly bound), or, when the approval carries its ``definition:``, which fields and files changed.

A ledger keeps only the fingerprint it approved, a hash. To say *which* evaluator changed and between which
versions, the fingerprint is recomputed with earlier versions of the evaluators the gate depends on (versions are
whole numbers counting up from 1) until one matches the approved fingerprint; a match proves the definition is
otherwise unchanged. The fingerprint without any versions is tried too: an approval made before evaluators were
versioned. Only gates whose approval does not match are searched, and the search is bounded.

The fingerprint without the host code its python metric imports is tried too (``imports`` in the definition, bound
since EvalGlass found it): an approval made before that, of an unchanged metric, is stale for that reason alone and
says which files it now binds. An approval that carries the ``definition:`` it approved names every changed field,
a bound file's label included (``imports.helpers.py: "sha256:…" → "sha256:…"``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from evalglass.core.authority import Ledger
from evalglass.core.changes import definition_changes
from evalglass.engine.spec.config import Config, imports_key
from evalglass.metrics.versions import evaluator

#: Most combinations of earlier versions tried for one gate (a gate depends on a handful of evaluators).
MAX_COMBINATIONS = 512


def stale_causes(
    config: Config,
    files: dict[str, dict[str, str]],
    ledger: Ledger,
    current: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Per declared gate whose active approval is stale because of evaluator versions only, what changed.
    ``current`` holds the gate fingerprints when the caller has them already."""
    causes: dict[str, str] = {}
    for name in config.gates:
        approval = ledger.gates.get(name)
        if approval is None or not approval.active or approval.fingerprint is None:
            continue
        now = current[name] if current is not None else config.gate_fingerprint(name, files)
        if approval.fingerprint == now:
            continue
        cause = evaluator_change(config, name, files, approval.fingerprint) or imports_bound(
            config, name, files, approval.fingerprint
        )
        if cause is None and approval.definition is not None:
            cause = _changed_fields(approval.definition, config.gate_definition(name, files))
        if cause is not None:
            causes[name] = cause
    return causes


def imports_bound(config: Config, name: str, files: dict[str, dict[str, str]], approved: str) -> str | None:
    """Said when ``approved`` is the gate's fingerprint from before the host code its metric imports was bound:
    the definition is otherwise unchanged, and the approval needs the host to review what is bound now."""
    metric = config.gates[name].metric
    imported = files.get(imports_key(metric)) if metric is not None else None
    if not imported:
        return None
    before = {key: value for key, value in files.items() if key != imports_key(str(metric))}
    if config.gate_fingerprint(name, before) != approved:
        return None
    return (
        "it was approved before EvalGlass bound the host code its python metric imports; the definition is "
        f"otherwise unchanged, and the fingerprint now also binds {', '.join(imported)}"
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
