"""Issue 26: for random single-field edits of a real run's scorecard and run record, and random consistent
multi-field edits of its decision, either every renderer refuses the run or the edit changed no decision-bearing
field. The forger rewrites ``digests.json`` after every edit, as one who knows the format does.

Renderers: ``view``, ``view --junit``, ``view --github`` (annotations and the step summary), ``explain``,
``report`` (HTML) and ``load_run``, each through the real command line in this process (click's runner), so each example costs
milliseconds, not a subprocess.

Decision-bearing: the verdict, its CI flag and exit code, and per gate its activity, outcome, threshold, compared
number and favourable bound, value, n, direction, rule, level and reason codes. What a run measured (a metric's estimate, its population,
a check's record) is evidence: with the digests rewritten, an edit of the evidence that the decision follows is
past what the files alone can tell (``evalglass verify`` re-derives it from the scores; each renderer says so), so
evidence is edited one field at a time here, where the property still demands that the renderers agree.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalglass
from evalglass.cli import main
from evalglass.core.gatespec import GateRule, rule_decision
from evalglass.core.stats import Direction
from tests.e2e.project import DEFAULT_ROWS, make_project
from tests.e2e.test_forgery import SCRIPT_PASSES
from tests.e2e.test_forgery import _reseal as reseal

PRECEDENCE = {"informational": 0, "pass": 1, "fail": 2, "blocked": 3}
OUTCOMES = list(PRECEDENCE)
DIRECTIONS = ["higher_is_better", "lower_is_better"]
GATE_FIELDS = (
    "active", "outcome", "threshold", "compared", "favourable_bound", "value", "n", "direction", "rule", "level",
)  # fmt: skip


@dataclass(frozen=True)
class Base:
    """A finished run: an active gate that fails, one that passes, one under ``lower_bound`` that is undecided
    (Wilson: 6 of 8 against 0.5), an informational one, and a check gate that fails (its check exits 1)."""

    root: Path
    folder: Path

    def card(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.folder / "scorecard.json").read_text())
        return loaded

    def record(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.folder / "runrecord.json").read_text())
        return loaded


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    root = tmp_path_factory.mktemp("property")
    project = make_project(
        root,
        metrics={
            "exact": {"type": "exact_match", "reference": "expected"},
            "says_yes": {"type": "regex", "pattern": "yes"},
        },
        checks={"lint": {"command": ["{python}", "checker.py"]}},
        gates={
            "accuracy": {"metric": "exact", "proposed_threshold": 0.9},
            "loose": {"metric": "exact", "proposed_threshold": 0.5},
            "bounded": {"metric": "exact", "proposed_threshold": 0.5, "rule": "lower_bound"},
            "evidence": {"metric": "says_yes"},
            "lint_ok": {"check": "lint"},
        },
    )
    (project.evals / "checker.py").write_text(SCRIPT_PASSES.replace("exit(0)", "exit(1)"))
    project.write_rows(DEFAULT_ROWS)
    assert project.run().code in (0, 1)
    fingerprints = {name: project.gate_fingerprint(name) for name in ("accuracy", "loose", "bounded", "lint_ok")}
    ledger = {
        "version": 1,
        "gates": {
            "accuracy": {"active": True, "threshold": 0.9, "fingerprint": fingerprints["accuracy"]},
            "loose": {"active": True, "threshold": 0.5, "fingerprint": fingerprints["loose"]},
            "bounded": {"active": True, "threshold": 0.5, "fingerprint": fingerprints["bounded"]},
            "lint_ok": {"active": True, "fingerprint": fingerprints["lint_ok"]},
        },
        "datasets": {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}},
    }
    project.write_ledger(ledger)
    assert project.run("--out", "run").code == 1
    card = json.loads((root / "run" / "scorecard.json").read_text())
    outcomes = {gate["name"]: gate["outcome"] for gate in card["decision"]["gates"]}
    expected = {
        "accuracy": "fail",
        "loose": "pass",
        "bounded": "blocked",
        "evidence": "informational",
        "lint_ok": "fail",
    }
    assert outcomes == expected
    return Base(root=root, folder=root / "run")


def decision(card: dict[str, Any]) -> Any:
    """Every decision-bearing field of a scorecard, order aside."""
    payload = card["decision"]
    gates = {
        gate["name"]: (
            *(gate.get(field) for field in GATE_FIELDS),
            sorted(reason["code"] for reason in gate.get("reasons", [])),
        )
        for gate in payload["gates"]
    }
    return payload["verdict"], payload["ci_should_fail"], payload["exit_code"], gates


def consistent_verdict(card: dict[str, Any]) -> None:
    """What a careful forger does after editing gates: the verdict, CI flag and exit code that the gates imply."""
    worst = max((gate["outcome"] for gate in card["decision"]["gates"]), key=PRECEDENCE.__getitem__)
    card["decision"].update(
        verdict=worst, ci_should_fail=worst in ("fail", "blocked"), exit_code=int(worst in ("fail", "blocked"))
    )


def consistent_outcome(gate: dict[str, Any]) -> None:
    """The outcome (and reasons) that the gate's own numbers imply, as its validator checks them: the forger asks
    the project's own rule, so that the forged gate loads."""
    if not gate["active"]:
        gate.update(outcome="informational", reasons=[])
        return
    if gate["compared"] is None or gate["threshold"] is None:
        return
    decision = rule_decision(
        GateRule(gate["rule"]),
        Direction(gate["direction"]),
        gate["threshold"],
        gate["compared"],
        gate.get("favourable_bound") if gate["rule"] == "lower_bound" else None,
    )
    gate["outcome"] = {"undecided": "blocked"}.get(decision.value, decision.value)
    gate["reasons"] = {
        "pass": [],
        "fail": [{"code": "below_threshold", "message": "forged"}],
        "undecided": [{"code": "undecided", "message": "forged"}],
    }[decision.value]


def leaves(document: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(document, dict):
        for key, value in document.items():
            yield from leaves(value, (*path, key))
    elif isinstance(document, list) and document:
        for index, value in enumerate(document):
            yield from leaves(value, (*path, index))
    else:
        yield path, document


def mutated(value: Any, draw: Any) -> Any:
    """Another value of the same kind (the kind is what a forger keeps so that the file still loads)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + draw(st.sampled_from([-1, 1, 7]))
    if isinstance(value, float):
        return draw(st.sampled_from([0.0, 0.5, 0.95, 1.0, value + 0.01, value - 0.25]))
    if isinstance(value, str):
        return draw(st.sampled_from([*OUTCOMES, *DIRECTIONS, "lower_bound", "point", "PASS", "ERROR", value + "x", ""]))
    return draw(st.sampled_from([0.5, "pass", True, []]))


def put(document: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        document = document[key]
    document[path[-1]] = value


@st.composite
def edits(draw: Any, card: dict[str, Any], record: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    card, record = copy.deepcopy(card), copy.deepcopy(record)
    kind = draw(st.sampled_from(["scorecard field", "run record field", "consistent decision"]))
    if kind == "consistent decision":
        for gate in draw(st.lists(st.sampled_from(card["decision"]["gates"]), min_size=1, max_size=3, unique_by=id)):
            field = draw(st.sampled_from((*GATE_FIELDS[:-1], "reasons")))
            if field == "active":
                gate["active"] = not gate["active"]
                if gate["active"] and gate["threshold"] is None:
                    gate["threshold"] = draw(st.sampled_from([0.0, 0.5, 1.0]))
                    gate["compared"] = gate["compared"] if gate["compared"] is not None else gate["value"]
            elif field == "outcome":
                gate["outcome"] = draw(st.sampled_from(OUTCOMES))
                gate["reasons"] = {
                    "fail": [{"code": "below_threshold", "message": "forged"}],
                    "blocked": [{"code": "no_measured_value", "message": "forged"}],
                }.get(gate["outcome"], [])
                if gate["outcome"] == "informational":
                    gate.update(active=False, threshold=None, reasons=[])
                else:
                    gate["active"] = True
            elif field == "direction":
                gate["direction"] = DIRECTIONS[1 - DIRECTIONS.index(gate["direction"])]
            elif field == "rule" and gate["rule"] == "lower_bound":
                gate.update(rule="point", level=None, bound_method=None, favourable_bound=None, compared=gate["value"])
            elif field == "rule":
                gate.update(rule="lower_bound", level=0.95, bound_method="wilson")
            elif field == "reasons":
                gate["reasons"] = []
            elif field == "favourable_bound":
                gate["favourable_bound"] = draw(st.sampled_from([None, 0.5, 0.9, 1.0]))
            else:
                gate[field] = draw(st.sampled_from([0.0, 0.5, 0.8, 0.95, 1.0])) if field != "n" else gate["n"] or 1
            if field not in ("outcome", "reasons"):
                consistent_outcome(gate)
        consistent_verdict(card)
        return kind, card, record
    document = card if kind == "scorecard field" else record
    path, value = draw(st.sampled_from(list(leaves(document))))
    put(document, path, mutated(value, draw))
    return f"{kind} {'.'.join(map(str, path))}", card, record


def refusals(folder: Path, scratch: Path) -> dict[str, bool]:
    """Per renderer: did it refuse (exit 2 / SetupError)? Anything else than showing or refusing fails here."""
    runner = CliRunner()
    summary = scratch / "summary.md"
    invocations = {
        "view": ["view", str(folder)],
        "view --junit": ["view", str(folder), "--junit", str(scratch / "junit.xml")],
        "view --github": ["view", str(folder), "--github"],
        "explain": ["explain", "--run", str(folder)],
        "report": ["report", str(folder), "--out", str(scratch / "page.html")],
    }
    found: dict[str, bool] = {}
    for name, args in invocations.items():
        result = runner.invoke(main, args, env={"GITHUB_STEP_SUMMARY": str(summary), "COLUMNS": "200"})
        assert result.exit_code in (0, 2), (name, result.exit_code, result.output, result.exception)
        assert "internal error" not in result.output, (name, result.output)
        found[name] = result.exit_code == 2
    try:
        evalglass.load_run(folder)
        found["load_run"] = False
    except evalglass.SetupError:
        found["load_run"] = True
    return found


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_renderer_refuses_or_the_decision_is_unchanged(base: Base, data: st.DataObject) -> None:
    original_card, original_record = base.card(), base.record()
    kind, card, record = data.draw(edits(original_card, original_record), label="edit")
    scratch = Path(tempfile.mkdtemp(dir=base.root))
    folder = scratch / "run"
    shutil.copytree(base.folder, folder)
    (folder / "scorecard.json").write_text(json.dumps(card, indent=2) + "\n")
    (folder / "runrecord.json").write_text(json.dumps(record, indent=2) + "\n")
    reseal(folder)
    refused = refusals(folder, scratch)
    assert len(set(refused.values())) == 1, (kind, refused)  # one check: every renderer decides the same
    if not any(refused.values()):
        assert decision(card) == decision(original_card), kind
    shutil.rmtree(scratch)
