"""GitHub annotations render the payload, escaped so that no name or reason can forge a workflow command."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.authority import BlockReason
from evalglass.core.gates import Outcome
from evalglass.report.github import escape_data, escape_property, gate_annotations, workflow_command
from evalglass.report.safetext import visible
from tests.report.cards import card, gate

# How the Actions runner reads one line: `::name key=value,key=value::message`, unescaping %25 %0D %0A %3A %2C.
COMMAND = re.compile(r"^::(?P<name>[a-z-]+)(?: (?P<properties>[^:]*))?::(?P<message>.*)$")
UNESCAPE = {"%25": "%", "%0D": "\r", "%0A": "\n", "%3A": ":", "%2C": ","}


def unescape(text: str) -> str:
    return re.sub("%25|%0D|%0A|%3A|%2C", lambda match: UNESCAPE[match.group()], text)


def read(line: str) -> tuple[str, dict[str, str], str]:
    match = COMMAND.match(line)
    assert match is not None, line
    pairs = [item.split("=", 1) for item in (match["properties"] or "").split(",") if item]
    return match["name"], {key: unescape(value) for key, value in pairs}, unescape(match["message"])


def test_failing_and_blocked_gates_are_errors_at_their_declaration_and_passing_ones_are_silent():
    scorecard = card(
        [
            gate("ok", Outcome.PASS),
            gate("short", Outcome.FAIL, value=0.75, threshold=0.8),
            gate(
                "unsure",
                Outcome.BLOCKED,
                reasons=[(BlockReason.APPROVAL_STALE, "stale"), (BlockReason.NO_MEASURED_VALUE, "nothing measured")],
            ),
            gate("evidence", Outcome.INFORMATIONAL),
        ]
    )
    lines = gate_annotations(scorecard, {"short": ("evals/evalglass.yaml", 12)})
    assert len(lines) == 2
    name, properties, message = read(lines[0])
    assert (name, properties["file"], properties["line"]) == ("error", "evals/evalglass.yaml", "12")
    assert "0.75" in message and "≥ 0.8" in message
    name, properties, message = read(lines[1])
    assert name == "error" and "file" not in properties and "line" not in properties
    assert "approval_stale: stale" in message and "no_measured_value: nothing measured" in message


def test_an_informational_run_warns_that_no_gate_was_active():
    lines = gate_annotations(card([gate("evidence", Outcome.INFORMATIONAL)]), {})
    assert len(lines) == 1
    name, _, message = read(lines[0])
    assert name == "warning" and "does not mean quality was checked" in message


def test_a_pass_run_has_no_annotation():
    assert gate_annotations(card([gate("ok", Outcome.PASS), gate("evidence", Outcome.INFORMATIONAL)]), {}) == []


ANY_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
HOSTILE = st.sampled_from(["::error::forged", "\n::add-mask::x", "%0A::warning::y", "a,b=c", "x\r\n::stop-commands::t"])


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(ANY_TEXT, HOSTILE, st.lists(HOSTILE).map("".join)))
def test_escaping_round_trips_and_keeps_a_command_on_one_line(text):
    for escaped in (escape_data(text), escape_property(text)):
        assert "\n" not in escaped and "\r" not in escaped
        assert unescape(escaped) == visible(text)  # control characters from data read back as their escapes
    assert ":" not in escape_property(text) and "," not in escape_property(text)


@settings(max_examples=100, deadline=None)
@given(name=st.one_of(ANY_TEXT, HOSTILE), reason=st.one_of(ANY_TEXT, HOSTILE), path=st.one_of(ANY_TEXT, HOSTILE))
def test_any_name_reason_or_path_gives_exactly_one_command_per_gate_that_reads_back_as_written(name, reason, path):
    scorecard = card([gate(name, Outcome.BLOCKED, reasons=[(BlockReason.NO_MEASURED_VALUE, reason)])])
    lines = gate_annotations(scorecard, {name: (path, 7)})
    assert len(lines) == 1 and "\n" not in lines[0] and "\r" not in lines[0]
    command, properties, message = read(lines[0])
    assert command == "error"
    assert properties == {"file": visible(path), "line": "7", "title": visible(f"EvalGlass gate {name} blocked")}
    assert visible(f"no_measured_value: {reason}") in message


def test_a_property_that_is_none_is_left_out():
    assert workflow_command("error", "m", file=None, line=None, title="t") == "::error title=t::m"
