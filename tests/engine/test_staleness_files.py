"""A stale approval without its `definition:` names the bound files that changed (engine/spec/staleness.py): from an
earlier run whose hashes reproduce the approved fingerprint, exactly the labels whose hashes differ, are new or are
gone; never a file that did not change, and nothing at all from a run that does not match."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.authority import Ledger
from evalglass.engine.spec.config import Config, imports_key
from evalglass.engine.spec.staleness import stale_causes

CONFIG = Config.model_validate(
    {
        "version": 1,
        "dataset": {"name": "s", "path": "d.jsonl"},
        "metrics": {"host": {"type": "python", "function": "scorer.py:score"}},
        "gates": {"g": {"metric": "host"}},
    }
)
LABELS = st.sampled_from(["scorer.py", "../lib/a.py", "../lib/b.py", "helpers.py", "../lib/pkg/__init__.py"])
HASHES = st.sampled_from([f"sha256:{digit * 64}" for digit in "0123"])
IMPORTS = st.dictionaries(LABELS.filter(lambda label: label != "scorer.py"), HASHES, max_size=4)


def files_of(own: str, imported: dict[str, str]) -> dict[str, dict[str, str]]:
    files: dict[str, dict[str, str]] = {"host": {"scorer.py": own}}
    if imported:
        files[imports_key("host")] = imported
    return files


def ledger_for(fingerprint: str) -> Ledger:
    entry: dict[str, Any] = {"active": True, "fingerprint": fingerprint, "threshold": 0.5}
    return Ledger.model_validate({"version": 1, "gates": {"g": entry}})


@given(own_then=HASHES, own_now=HASHES, then=IMPORTS, now=IMPORTS)
def test_an_earlier_run_names_exactly_the_files_that_changed(own_then, own_now, then, now):
    approved_files, current = files_of(own_then, then), files_of(own_now, now)
    approved = CONFIG.gate_fingerprint("g", approved_files)
    causes = stale_causes(CONFIG, current, ledger_for(approved), earlier=lambda: [approved_files])
    if approved_files == current:
        assert causes == {}
        return
    before = {"scorer.py": own_then, **then}
    after = {"scorer.py": own_now, **now}
    changed = sorted(label for label in after if label in before and before[label] != after[label])
    added = sorted(label for label in after if label not in before)
    removed = sorted(label for label in before if label not in after)
    cause = causes["g"]
    if not then and own_then == own_now:
        # Indistinguishable from an approval made before imports were bound, which is said first (docs/config.md).
        assert cause.startswith("it was approved before EvalGlass bound the host code its python metric imports")
        return
    assert cause.startswith("files it binds changed since approval")
    said = dict(part.split(" ", 1) for part in cause.split("): ", 1)[1].split("; "))
    assert said == {
        word: ", ".join(labels)
        for word, labels in (("changed", changed), ("added", added), ("removed", removed))
        if labels
    }


@given(own=HASHES, then=IMPORTS, now=IMPORTS)
def test_a_run_that_does_not_reproduce_the_approval_names_nothing_it_cannot_prove(own, then, now):
    """The approval was of another declaration (here: another function): an earlier run's files do not reproduce
    it, so no file is named as the change; what the gate binds is listed, and the reason says it cannot tell."""
    other = CONFIG.model_copy(
        update={"metrics": {"host": CONFIG.metrics["host"].model_copy(update={"function": "scorer.py:other"})}}
    )
    approved = other.gate_fingerprint("g", files_of(own, then))
    causes = stale_causes(CONFIG, files_of(own, now), ledger_for(approved), earlier=lambda: [files_of(own, then)])
    cause = causes["g"]
    assert cause.startswith("its declaration or a file it binds changed since approval; which cannot be told")
    assert "files it binds changed" not in cause and "was added" not in cause
