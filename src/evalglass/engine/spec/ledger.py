"""Reading the authority ledger. EvalGlass only ever reads it: there is no code path that writes one.

The ledger is checked against the config it is used with: every name it gives (a gate, a forbidden gate, a judge, a
dataset) must be one the config declares, and every threshold must be a number the gated metric can take. An entry
that silently did nothing (a typo, a forbid that forbids nothing, a threshold outside the scale) would make a green
run mean less than the host approved.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalglass.core.authority import DEFAULT_LEDGER, Ledger
from evalglass.core.calendar import day_problem
from evalglass.core.fingerprint import fingerprint_of_bytes
from evalglass.core.names import suggest
from evalglass.engine.spec.validation import validate_document
from evalglass.errors import SetupError
from evalglass.readers.userfiles import may_exist
from evalglass.readers.yamlsource import Loc, YamlDocument, load_yaml, parse_yaml

if TYPE_CHECKING:
    from evalglass.engine.spec.config import Config, LoadedConfig
    from evalglass.report.explain import LedgerLayout


@dataclass(frozen=True)
class LoadedLedger:
    ledger: Ledger
    path: Path
    fingerprint: str
    doc: YamlDocument | None = None

    @property
    def raw(self) -> bytes:
        return b"" if self.doc is None else self.doc.raw

    def where(self, loc: Loc) -> str:
        return str(self.path) if self.doc is None else self.doc.where(loc)

    def gate_where(self) -> dict[str, str]:
        """``file:line`` of each gate entry, for the messages that point the host at it."""
        return {name: self.where(("gates", name)) for name in self.ledger.gates}


def load_ledger(path: Path) -> LoadedLedger:
    if not may_exist(path):
        raise SetupError(
            "authority ledger not found",
            where=str(path),
            fix=(
                "create it (an empty ledger approves nothing; `evalglass init` writes one) "
                "or fix `ledger:` in the config"
            ),
        )
    return ledger_of(load_yaml(path, what="authority ledger"))


def parse_ledger(raw: bytes, path: Path) -> LoadedLedger:
    """A ledger from its bytes (a run record's snapshot), read exactly as :func:`load_ledger` reads the file."""
    return ledger_of(parse_yaml(raw, path, what="authority ledger"))


def ledger_of(doc: YamlDocument) -> LoadedLedger:
    fingerprint = fingerprint_of_bytes(doc.raw)
    if doc.data is None:
        return LoadedLedger(ledger=Ledger(), path=doc.path, fingerprint=fingerprint, doc=doc)
    ledger = validate_document(Ledger, doc, what="the authority ledger", numbers_as_written=True)
    return LoadedLedger(ledger=ledger, path=doc.path, fingerprint=fingerprint, doc=doc)


def check_against_config(loaded: LoadedLedger, config: Config) -> None:
    """Refuse, in one line naming ``file:line``, the first ledger entry that names nothing or approves nothing.

    Gate entries the config does not declare are not refused here: an active one blocks the run
    (``gate_undeclared``) and an inactive one is a retired approval, kept as history.
    """
    for loc, problem, fix in ledger_problems(loaded.ledger, config):
        raise SetupError(problem, where=loaded.where(loc), fix=fix)


def ledger_problems(ledger: Ledger, config: Config) -> Iterator[tuple[Loc, str, str]]:
    """Each problem as (where in the ledger, what, how to fix it)."""
    gates = list(config.gates)
    for index, name in enumerate(ledger.policy.forbid_gates):
        if name not in config.gates:
            yield (
                ("policy", "forbid_gates", index),
                f"the ledger forbids gate '{name}', which the config does not declare (it forbids nothing)",
                _fix(name, gates),
            )
    for name in ledger.judges:
        if name not in config.judges:
            yield (
                ("judges", name),
                f"the ledger sets a requirement for judge '{name}', which is not an llm_judge metric of the config",
                _fix(name, list(config.judges)),
            )
    for name in ledger.datasets:
        if name != config.dataset.name:
            yield (
                ("datasets", name),
                f"the ledger validates dataset '{name}', but the config's dataset is '{config.dataset.name}'",
                _fix(name, [config.dataset.name]),
            )
    yield from _undated_problems(ledger)
    compared_with = list(dict.fromkeys(g.compare_to for g in config.gates.values() if g.compare_to is not None))
    for name in ledger.baselines:
        if name not in compared_with:
            yield (
                ("baselines", name),
                f"the ledger approves baseline '{name}', which no gate of the config compares with (`compare_to`)",
                _fix(name, compared_with),
            )
    for name, approval in ledger.gates.items():
        gate = config.gates.get(name)
        if gate is None:
            continue
        if approval.margin is not None and gate.compare_to is None:
            yield (
                ("gates", name, "margin"),
                f"gate '{name}' compares with no baseline: a margin approves comparative gates (`compare_to`) only",
                "approve a `threshold` instead, or remove `margin` from this ledger entry",
            )
        if gate.compare_to is not None and approval.threshold is not None:
            yield (
                ("gates", name, "threshold"),
                f"gate '{name}' compares with baseline '{gate.compare_to}': it approves a `margin`, and a threshold "
                "means nothing here",
                "replace `threshold` with `margin` (the largest drop from the baseline you accept)",
            )
        if approval.judge_endpoint is not None and (gate.check is not None or gate.metric not in config.judges):
            yield (
                ("gates", name, "judge_endpoint"),
                f"gate '{name}' decides on {'check' if gate.check is not None else 'metric'} "
                f"'{gate.decided_subject}', which calls no LLM judge: a judge_endpoint approves nothing here",
                "remove `judge_endpoint` from this ledger entry",
            )
        if gate.check is not None:
            if approval.threshold is not None:
                yield (
                    ("gates", name, "threshold"),
                    f"gate '{name}' decides on check '{gate.check}', which passes only on PASS: a threshold means "
                    "nothing here",
                    "remove `threshold` from this ledger entry",
                )
            continue
        if approval.require_binding is not None and not config.metrics[str(gate.metric)].check_references():
            yield (
                ("gates", name, "require_binding"),
                f"gate '{name}' decides on metric '{gate.decided_subject}', which runs no check: require_binding "
                "applies to check gates and gates on a `check` metric only",
                "remove `require_binding` from this ledger entry",
            )
        if approval.threshold is not None:
            problem = threshold_problem(
                approval.threshold, config, str(gate.metric), difference=gate.compare_to_variant is not None
            )
            if problem is not None:
                yield (("gates", name, "threshold"), f"gate '{name}': {problem}", "approve a threshold inside it")


def _undated_problems(ledger: Ledger) -> Iterator[tuple[Loc, str, str]]:
    """Under ``max_age_days`` the day an approval was made decides when it expires: text that is not a date there
    would make its age a guess. (Without the policy, ``approved_on`` stays the free provenance text it always was;
    a missing date is not refused here: that approval blocks as expired, see ``core.expiry``.)"""
    if ledger.policy.max_age_days is None:
        return
    dated: list[tuple[Loc, str | None]] = [
        (("gates", name, "approved_on"), e.approved_on) for name, e in ledger.gates.items()
    ]
    dated += [(("datasets", name, "validated_on"), e.validated_on) for name, e in ledger.datasets.items()]
    dated += [(("baselines", name, "approved_on"), e.approved_on) for name, e in ledger.baselines.items()]
    for loc, text in dated:
        problem = None if text is None else day_problem(text)
        if problem is not None:
            yield (
                loc,
                f"{problem}; the policy's max_age_days counts from this day",
                "write the day it was made as YYYY-MM-DD",
            )


def threshold_problem(threshold: float, config: Config, metric: str, *, difference: bool = False) -> str | None:
    """Why an approved threshold approves nothing: outside the metric's declared scale, where every value (or none)
    meets it. The ends of the scale are inside it: "every example must pass" is 1.0 on a higher-is-better rate. A
    gate between two variants (``difference``) decides on a difference, which spans ``±(max - min)``."""
    scale = config.metrics[metric].value_scale()
    if scale is None:
        return None
    low, high = (scale.min - scale.max, scale.max - scale.min) if difference else (scale.min, scale.max)
    if low <= threshold <= high:
        return None
    what = "a difference of" if difference else "values in"
    return f"threshold {threshold:g} is outside the scale: metric '{metric}' takes {what} [{low:g}, {high:g}]"


def _fix(name: str, known: list[str]) -> str:
    hint = suggest(name, known)
    return f"{hint} (or remove the entry)" if hint.startswith("did you mean") else f"{hint}; or remove the entry"


def refuse_unpinned_ledger(loaded: LoadedConfig, pinned_ledger: Path | None) -> None:
    """The config is what a pull request edits, so it never chooses the ledger that approves its gates: a run
    pinned to one (``--ledger``) refuses a config naming another, and an unpinned run refuses a config naming any
    ledger but the default one beside it (``authority.yaml``), which a pull request could otherwise point at a
    ledger of its own. A host keeping its ledger elsewhere pins it: the pin is in the command, not the config."""
    named = loaded.ledger_path
    if pinned_ledger is not None and pinned_ledger.resolve() != named.resolve():
        raise SetupError(
            f"the config names the ledger {named}, but this run is pinned to {pinned_ledger} (--ledger)",
            where=str(loaded.path),
            fix=f"set `ledger:` in the config to the host's ledger, {pinned_ledger}",
        )
    default = loaded.base_dir / DEFAULT_LEDGER
    if pinned_ledger is None and named.resolve() != default.resolve():
        raise SetupError(
            f"the config names the ledger {named}, not the default {DEFAULT_LEDGER} beside it, and nothing pins it: "
            "a config (which a pull request edits) cannot choose the ledger that approves its gates",
            where=str(loaded.path),
            fix=f"pass --ledger {named} to confirm the host's ledger (in CI, always), or keep it at {default}",
        )


#: The ledger's sections whose entries `evalglass explain` proposes.
ENTRY_SECTIONS = ("gates", "datasets", "baselines", "judges")


def ledger_layout(path: Path) -> LedgerLayout | None:
    """Where each section and entry of the ledger file stands, so `explain` can say exactly where an entry goes
    (None: no such file, or not one that reads as YAML: `explain` then says where entries go in words)."""
    from evalglass.report.explain import LedgerLayout

    try:
        doc = load_yaml(path, what="authority ledger")
    except SetupError:
        return None
    data = doc.data if isinstance(doc.data, dict) else {}
    sections = {key: doc.lines[(key,)] for key in ENTRY_SECTIONS if key in data and (key,) in doc.lines}
    entries = {
        (section, name): doc.lines[(section, name)]
        for section in sections
        if isinstance(data[section], dict)
        for name in data[section]
        if (section, name) in doc.lines
    }
    # A mapping written with nothing in it is `{}` (a block mapping cannot be empty): nothing goes under it as is.
    flow_empty = frozenset(section for section in sections if data[section] == {})
    return LedgerLayout(path=str(path), sections=sections, flow_empty=flow_empty, entries=entries)
