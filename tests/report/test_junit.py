"""junit.xml renders the verdict payload: one testcase per gate and check, valid against the Jenkins JUnit schema."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import xmlschema
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.authority import BlockReason
from evalglass.core.checks import CheckOutcome
from evalglass.core.gates import Outcome
from evalglass.report.junit import render_junit
from tests.report.cards import card, check, gate

XSD = Path(__file__).with_name("junit-10.xsd")


@cache
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(XSD)


def parse(document: bytes) -> ET.Element:
    schema().validate(document.decode())
    return ET.fromstring(document)


def case(root: ET.Element, name: str) -> ET.Element:
    found = [item for item in root.iter("testcase") if item.get("name") == name]
    assert len(found) == 1, f"{name}: {len(found)} testcases"
    return found[0]


def outcome_of(testcase: ET.Element) -> str:
    tags = [child.tag for child in testcase if child.tag in ("failure", "error", "skipped")]
    assert len(tags) <= 1
    return tags[0] if tags else "passed"


def test_each_gate_outcome_becomes_its_junit_outcome():
    root = parse(
        render_junit(
            card(
                [
                    gate("ok", Outcome.PASS),
                    gate("short", Outcome.FAIL, value=0.75, threshold=0.8),
                    gate(
                        "unsure",
                        Outcome.BLOCKED,
                        reasons=[
                            (BlockReason.APPROVAL_STALE, "the gate changed since it was approved"),
                            (BlockReason.INCOMPLETE_MEASUREMENT, "2 of 8 examples were not measured validly"),
                        ],
                    ),
                    gate("evidence", Outcome.INFORMATIONAL),
                ]
            )
        )
    )
    assert [outcome_of(case(root, name)) for name in ("ok", "short", "unsure", "evidence")] == [
        "passed",
        "failure",
        "error",
        "skipped",
    ]
    failure = case(root, "short").find("failure")
    assert failure is not None
    assert "0.75" in failure.get("message", "") and "≥ 0.8" in failure.get("message", "")
    error = case(root, "unsure").find("error")
    assert error is not None and error.get("type") == "blocked"
    for text in (error.get("message", ""), error.text or ""):
        assert "approval_stale: the gate changed since it was approved" in text
        assert "incomplete_measurement: 2 of 8 examples were not measured validly" in text
    skipped = case(root, "evidence").find("skipped")
    assert skipped is not None and "not an active gate" in skipped.get("message", "")


def test_one_suite_per_run_with_counts_verdict_and_a_stable_name():
    document = render_junit(card([gate("a", Outcome.FAIL), gate("b", Outcome.INFORMATIONAL)], run_id="r-42"))
    root = parse(document)
    suites = root.findall("testsuite")
    assert len(suites) == 1
    suite = suites[0]
    assert (suite.get("name"), suite.get("id"), suite.get("timestamp")) == (
        "evalglass.suite",
        "r-42",
        "2026-01-02T03:04:05",
    )
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "2",
        "1",
        "0",
        "1",
    )
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
    properties = {item.get("name"): item.get("value") for item in suite.iter("property")}
    assert properties["evalglass.verdict"] == "fail"
    assert properties["evalglass.exit_code"] == "1"


def test_checks_are_testcases_and_only_a_check_an_active_gate_decides_on_can_fail_the_report():
    checks = [
        check("gated-fail", CheckOutcome.FAIL, detail="marker still present"),
        check("gated-error", CheckOutcome.ERROR),
        check("gated-pass", CheckOutcome.PASS),
        check("evidence-fail", CheckOutcome.FAIL),
    ]
    gates = [
        gate("g1", Outcome.FAIL, check="gated-fail"),
        gate("g2", Outcome.BLOCKED, check="gated-error"),
        gate("g3", Outcome.PASS, check="gated-pass"),
        gate("g4", Outcome.INFORMATIONAL, check="evidence-fail"),
    ]
    root = parse(render_junit(card(gates, checks)))
    outcomes = {
        name: outcome_of(case(root, name)) for name in ("gated-fail", "gated-error", "gated-pass", "evidence-fail")
    }
    assert outcomes == {
        "gated-fail": "failure",
        "gated-error": "error",
        "gated-pass": "passed",
        "evidence-fail": "skipped",
    }
    assert case(root, "gated-fail").get("classname") == "evalglass.suite.checks"
    assert "marker still present" in (case(root, "gated-fail").findtext("failure") or "")
    assert "not an active gate" in (case(root, "evidence-fail").find("skipped").get("message") or "")  # type: ignore[union-attr]


def test_an_informational_run_reports_nothing_that_fails_even_when_a_check_failed():
    root = parse(render_junit(card([gate("g", Outcome.INFORMATIONAL)], [check("lint", CheckOutcome.FAIL)])))
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "0", "2")


TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    outcomes=st.lists(st.sampled_from(list(Outcome)), max_size=6),
    checks=st.lists(st.sampled_from(list(CheckOutcome)), max_size=4),
    names=st.lists(TEXT, min_size=10, max_size=10, unique=True),
    message=TEXT,
)
def test_any_payload_renders_valid_junit_whose_failures_match_the_verdict(outcomes, checks, names, message):
    """Whatever the names and reasons hold (control characters, markup, quotes), the file validates, keeps one
    testcase per gate and check, and shows a failure or an error exactly when the verdict fails CI."""
    gates = [
        gate(names[index], outcome, reasons=[(BlockReason.NO_MEASURED_VALUE, message)])
        for index, outcome in enumerate(outcomes)
    ]
    summaries = [check(f"c{index}-{names[6 + index]}", outcome, detail=message) for index, outcome in enumerate(checks)]
    scorecard = card(gates, summaries, run_id=names[-1] or "r")
    root = parse(render_junit(scorecard))
    cases = list(root.iter("testcase"))
    assert len(cases) == len(gates) + len(summaries)
    failing = sum(outcome_of(item) in ("failure", "error") for item in cases)
    assert (failing > 0) == scorecard.decision.ci_should_fail
    suite = root.find("testsuite")
    assert suite is not None
    assert int(suite.get("failures", "")) + int(suite.get("errors", "")) == failing


@pytest.mark.parametrize("text", ["a\x00b", "bell\x07", "\ufffe", "esc\x1b[31m"])
def test_characters_xml_cannot_hold_are_shown_escaped(text):
    root = parse(render_junit(card([gate("g", Outcome.BLOCKED, reasons=[(BlockReason.NO_MEASURED_VALUE, text)])])))
    message = case(root, "g").find("error").get("message")  # type: ignore[union-attr]
    # shown as escapes (``report.safetext.visible`` for control characters, ``\\x..`` for what XML cannot hold)
    assert message is not None and ("\\x" in message or "\\u" in message)
    assert not any(char in message for char in "\x00\x07\x1b\ufffe")
