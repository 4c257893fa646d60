"""A tool call's arguments recorded as JSON text are the object the text holds, in every shape a call is read from.

The OpenAI chat shape (``{function: {name, arguments}}``) always sent its arguments as text, and EvalGlass read them
as JSON. The same text in the other shapes was compared as a string: OpenAI's function object on its own
(``tool_call.function.model_dump()``: ``{name, arguments}``), the Responses API's ``function_call`` output items
(``{type: function_call, call_id, name, arguments}``), and OpenTelemetry GenAI ``tool_call`` parts as
instrumentations record them. A correct call then matched no expected call (its text is not the expected object,
and differs from expected text by key order or spacing): a wrong answer the system never gave, scored 0.0, and a
gate that fails for it.

Only text holding a JSON object is read so; any other text stays what it was (a model's double-encoded arguments,
text that is not JSON), so no wrong answer is read as a right one.
"""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.project import make_project
from tests.e2e.test_verdicts import approve

EXPECTED = [{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]
TEXT = '{"days": 2, "city": "Paris"}'  # the same object, keys in another order


def _calls_config() -> dict[str, Any]:
    return {
        "metrics": {"exact": {"type": "tool_calls", "reference": "expected", "mode": "exact"}},
        "gates": {"accuracy": {"metric": "exact", "proposed_threshold": 1.0}},
    }


RIGHT = {
    "openai-function-object": [{"name": "get_weather", "arguments": TEXT}],
    "responses-function-call": [
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": TEXT,
            "status": "completed",
        }
    ],
    "genai-parts": [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris for two days?"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": TEXT}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "sunny"}]},
    ],
    "openai-chat": [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": TEXT}}],
        }
    ],
}


def test_a_right_call_with_its_arguments_as_json_text_passes_whatever_shape_recorded_it(tmp_path) -> None:
    project = make_project(tmp_path, task={"type": "recorded", "field": "output"}, **_calls_config())
    rows = [{"id": name, "expected": EXPECTED, "output": output} for name, output in RIGHT.items()]
    # Expected calls written as text too (a dataset exported from logs), against a call recorded as an object.
    rows.append(
        {"id": "expected-as-text", "expected": [{"name": "get_weather", "arguments": TEXT}], "output": EXPECTED}
    )
    project.write_rows(rows)
    project.write_ledger(approve(project, threshold=1.0))

    result = project.run("--format", "json")

    card = result.json()
    exact = next(m for m in card["metrics"] if m["name"] == "exact")
    assert exact["estimate"]["point"] == 1.0, json.dumps(exact["population"])
    assert (result.code, card["decision"]["verdict"]) == (0, "pass")


def test_text_that_is_not_a_json_object_is_still_not_the_expected_object(tmp_path) -> None:
    """The fix reads what the text says, never more: double-encoded arguments (a JSON string holding the object's
    text, a real model failure), text that is not JSON, and a JSON array stay mismatches, and the gate fails."""
    project = make_project(tmp_path, task={"type": "recorded", "field": "output"}, **_calls_config())
    double = json.dumps(TEXT)
    wrong = {
        "double-encoded": [{"type": "function", "id": "c1", "function": {"name": "get_weather", "arguments": double}}],
        "not-json": [{"name": "get_weather", "arguments": "city=Paris days=2"}],
        "array": [{"name": "get_weather", "arguments": '["Paris", 2]'}],
        "right": [{"name": "get_weather", "arguments": TEXT}],
    }
    project.write_rows([{"id": name, "expected": EXPECTED, "output": output} for name, output in wrong.items()])
    project.write_ledger(approve(project, threshold=0.5))

    result = project.run("--format", "json")

    card = result.json()
    exact = next(m for m in card["metrics"] if m["name"] == "exact")
    assert exact["estimate"]["point"] == 0.25 and exact["population"]["included"] == 4
    assert (result.code, card["decision"]["verdict"]) == (1, "fail")
