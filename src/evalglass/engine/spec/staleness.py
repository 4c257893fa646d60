"""Why an approval went stale, when the reason is an evaluator's version rather than an edit.

A ledger keeps only the fingerprint it approved, a hash. To say *which* evaluator changed and between which
versions, the fingerprint is recomputed with earlier versions of the evaluators the gate depends on (versions are
whole numbers counting up from 1) until one matches the approved fingerprint; a match proves the definition is
otherwise unchanged. The fingerprint without any versions is tried too: an approval made before evaluators were
versioned. Only gates whose approval does not match are searched, and the search is bounded.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from evalglass.core.authority import Ledger
from evalglass.engine.spec.config import Config
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
        cause = evaluator_change(config, name, files, approval.fingerprint)
        if cause is not None:
            causes[name] = cause
    return causes


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
