"""Golden inputs of every builtin evaluator, and how to compute its outputs from them.

The inputs below are written once into ``tests/golden/<kind>/<name>.json`` together with the outputs and the
evaluator's version (``python -m tests.golden.record``); ``test_golden.py`` recomputes the outputs from the stored
inputs and fails when they change while the version in ``evalglass.metrics.versions`` did not.
"""

from __future__ import annotations

import asyncio
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from evalglass.core.example import Example
from evalglass.core.outputparse import parse_json_output
from evalglass.core.score import Score
from evalglass.core.stats import Direction, Method, Reducer, ScaleSpec, confidence_interval, reduce_samples
from evalglass.metrics.base import BuildContext
from evalglass.metrics.registry import parse_metric_spec
from evalglass.metrics.versions import EvaluatorKind

FOLDER = Path(__file__).parent

# Outputs and references exercising each metric's options and edges (missing fields, wrong types, unicode).
TEXTS = ["Yes", " yes ", "YES!", "no", "Café", "cafe\u0301", "", None, 3, {"a": 1}]


def _examples(outputs: list[Any], references: list[Any] | None = None) -> list[dict[str, Any]]:
    rows = []
    for index, output in enumerate(outputs):
        fields: dict[str, Any] = {"id": f"e{index}"}
        if references is not None and references[index] is not None:
            fields["gold"] = references[index]
        rows.append({"fields": fields, "output": output})
    return rows


def _pairs(spec: dict[str, Any], outputs: list[Any], references: list[Any] | None = None) -> dict[str, Any]:
    return {"spec": spec, "examples": _examples(outputs, references)}


def _wrong_answers(spec: dict[str, Any], good: Any, gold: Any = None) -> list[dict[str, Any]]:
    """Wrong answers (issue 27): the metric reads field ``x``; examples with it, without it, and text that
    ``task.parse: json`` could not parse (the last one also without its reference, which decides first). Scored
    for a metric whose higher values are better, one whose lower values are better, and with ``exclude``."""
    fields: dict[str, Any] = {} if gold is None else {"gold": gold}
    rows = [
        {"fields": fields, "output": {"x": good}},
        {"fields": fields, "output": {"y": good}},
        {"fields": fields, "output": "x is not JSON"},
        {"fields": fields, "unparsed": '{"x": '},
        {"fields": {}, "unparsed": "```json\n{}\n```"},
    ]
    spec = {**spec, "field": "x"}
    return [
        {"spec": spec, "examples": rows},
        {"spec": spec, "examples": rows, "direction": "lower_is_better"},
        {"spec": {**spec, "on_invalid_output": "exclude"}, "examples": rows},
    ]


#: Tool calls expected, and trajectories in each shape they are read from (the last two against no expected call,
#: and without any).
EXPECTED_CALLS = [{"name": "search", "arguments": {"q": "paris"}}, {"name": "book", "arguments": {"day": 3}}]
TRAJECTORIES: list[Any] = [
    [{"name": "search", "arguments": {"q": "paris"}}, {"name": "book", "arguments": {"day": 3}}],
    [{"name": "book", "arguments": {"day": 3.0}}, {"name": "search", "arguments": {"q": "paris"}}],
    [
        {"role": "user", "content": "book"},
        {"role": "assistant", "tool_calls": [{"function": {"name": "search", "arguments": '{"q": "paris"}'}}]},
        {"role": "assistant", "tool_calls": [{"function": {"name": "search", "arguments": '{"q":"paris"}'}}]},
        {"role": "assistant", "tool_calls": [{"function": {"name": "book", "arguments": '{"day": 4, "seat": 1}'}}]},
    ],
    [{"role": "assistant", "content": [{"type": "tool_use", "name": "search", "input": {"q": "paris", "n": 1}}]}],
    {"tool_calls": [{"name": "search", "arguments": {"q": "paris"}}, {"name": "news"}], "steps": 3},
    [{"name": "book", "invalid_arguments": "{day: 3}"}, {"name": "search", "arguments": {"q": "paris"}}],
    [],
    42,
    [{"role": "assistant", "tool_calls": "search"}],
    [{"name": "search", "arguments": {}}],
    [],
]

#: Trajectories whose redundant fields disagree (``core.trajectory.check_consistent``): an error, never a number.
_THREE_SEARCHES = [
    {"role": "assistant", "parts": [{"type": "tool_call", "name": "search", "arguments": {"q": "paris"}}]}
] * 3
INCONSISTENT = [
    {"tool_calls": [], "messages": _THREE_SEARCHES},
    {"tool_calls": [{"name": "search", "arguments": {"q": "paris"}}] * 3, "messages": _THREE_SEARCHES, "steps": 1},
    {"tool_calls": [{"name": "search", "arguments": {"q": "rome"}}], "messages": _THREE_SEARCHES[:1]},
]

#: Calls whose arguments are recorded as JSON text outside the OpenAI chat shape (``tool_calls@3``, ``loop@3``: text
#: holding a JSON object is that object), and text that is not an object's, which stays as recorded.
TEXT_ARGUMENTS: list[Any] = [
    [{"name": "search", "arguments": '{"q": "paris"}'}, {"name": "book", "arguments": '{"day":3}'}],
    [
        {"type": "function_call", "call_id": "c1", "name": "search", "arguments": '{"q":"paris"}'},
        {"type": "function_call", "call_id": "c2", "name": "book", "arguments": '{"day": 3}'},
    ],
    [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "search", "arguments": '{"q":"paris"}'},
                {"type": "tool_call", "id": "c2", "name": "book", "arguments": ' {"day": 3.0}'},
            ],
        }
    ],
    [{"function": {"name": "search", "arguments": '"{\\"q\\": \\"paris\\"}"'}}, {"name": "book", "arguments": "day=3"}],
    [{"name": "search", "arguments": '{"q": "paris"}'}, {"name": "search", "arguments": '{"q":"paris"}'}],
    [{"name": "search", "arguments": '["paris"]'}, {"name": "book", "arguments": "{day: 3}"}],
]

METRIC_CASES: dict[str, list[dict[str, Any]]] = {
    "exact_match": [
        _pairs({"type": "exact_match", "reference": "gold"}, TEXTS, ["Yes"] * 9 + [None]),
        _pairs(
            {
                "type": "exact_match",
                "reference": "gold",
                "normalize": {"case": True, "whitespace": True, "punctuation": True, "unicode": True},
            },
            TEXTS,
            ["yes", "yes", "yes", "yes", "café", "café", "", "x", "3", "{}"],
        ),
        _pairs({"type": "exact_match", "field": "a", "expected": 1}, [{"a": 1}, {"a": 1.0}, {"a": "1"}, {"b": 1}, 5]),
        # Case alone: a precomposed and a decomposed text are one text (canonical caseless match); a full-width
        # letter is not its ASCII form (that is NFKC's, `unicode: true`).
        _pairs(
            {"type": "exact_match", "reference": "gold", "normalize": {"case": True}},
            ["Café", "CAFE\u0301", "café", "ǰ", "ﬁle", "Straße", "Ｐaris"],
            ["cafe\u0301", "café", "CAFÉ", "J\u030c", "file", "STRASSE", "paris"],
        ),
        # exact_match@5: text against a number or a boolean is the value it spells, either side; other text is not
        _pairs(
            {"type": "exact_match", "reference": "gold"},
            ["42", " 42.0\n", "+42", "42 apples", "4e1", "true", "True", "false", "null", 42, True, "0.1", "1" * 5000],
            [42, 42, 42, 42, 40, True, True, True, None, "42", "true", 0.1, 1],
        ),
        _pairs(
            {"type": "exact_match", "reference": "gold", "normalize": {"case": True}}, ["True", "FALSE"], [True, True]
        ),
    ],
    "contains": [
        _pairs({"type": "contains", "value": ["[1]", "[2]"], "mode": "any"}, ["see [1]", "none", "[2][1]", None, 7]),
        _pairs({"type": "contains", "value": ["a", "B"], "mode": "all", "case_sensitive": False}, ["ab", "A", "xb"]),
        _pairs(
            {"type": "contains", "reference": "gold", "case_sensitive": False},
            ["Paris is big", "Rome", "x"],
            ["paris", "paris", None],
        ),
        _pairs(
            {"type": "contains", "value": ["CAFÉ", "cafe"], "mode": "any", "case_sensitive": False},
            ["un cafe\u0301 noir", "Café", "un café", "decaf"],
        ),
        _pairs(
            {"type": "contains", "value": "cafe", "case_sensitive": False},
            ["un cafe\u0301 noir", "CAFE"],
        ),
        # References it cannot compare with (contains@5): the gold's problem, non_evaluable.
        _pairs({"type": "contains", "reference": "gold"}, ["a 7", "a 1", "a"], [7, ["a", 1], {"a": "a"}]),
    ],
    "regex": [
        _pairs({"type": "regex", "pattern": r"\d{4}-\d{2}-\d{2}"}, ["on 2026-12-01", "12/01/2026", "", None, 5]),
        _pairs(
            {"type": "regex", "pattern": "^yes$", "match": "fullmatch", "flags": ["ignorecase"]}, ["YES", "yes!", "yes"]
        ),
        _pairs(
            {"type": "regex", "pattern": r"\bcafé\b|straße", "flags": ["ignorecase"]},
            ["un CAFE\u0301 noir", "un café", "STRASSE", "strasse", "cafe", "decaf"],
        ),
        _pairs(
            {"type": "regex", "pattern": "cafe", "flags": ["ignorecase"]},
            ["un cafe\u0301 noir", "CAFE", "Café"],
        ),
    ],
    "json_valid": [
        _pairs({"type": "json_valid"}, ['{"a": 1}', "[1, 2", "null", "", {"a": 1}, 3, None, '{"a": 1, "a": 2}']),
    ],
    "json_schema": [
        _pairs(
            {
                "type": "json_schema",
                "schema": {
                    "type": "object",
                    "required": ["priority", "summary"],
                    "properties": {
                        "priority": {"enum": ["low", "high"]},
                        "summary": {"type": "string", "maxLength": 5},
                    },
                },
            },
            [
                {"priority": "low", "summary": "ok"},
                {"priority": "mid", "summary": "ok"},
                '{"priority": "high", "summary": "fine"}',
                {"summary": "too long here"},
                "not json",
                None,
            ],
        ),
        _pairs(
            {"type": "json_schema", "schema": {"type": "string", "format": "date"}, "check_formats": True},
            ['"2026-12-01"', '"yesterday"'],
        ),
    ],
    "field_present": [
        _pairs(
            {"type": "field_present", "fields": ["a", "b.c"]},
            [{"a": 1, "b": {"c": 2}}, {"a": 1}, {"a": None, "b": {"c": None}}, "x", None],
        ),
        _pairs({"type": "field_present", "fields": ["a"], "non_null": True}, [{"a": None}, {"a": 0}]),
    ],
    "numeric_bounds": [
        _pairs({"type": "numeric_bounds", "min": 0, "max": 1}, [0, 1, 0.5, -0.1, 1.1, "0.5", True, None, float("nan")]),
        _pairs({"type": "numeric_bounds", "max": 2.5, "coerce": True, "inclusive": False}, ["1.8", "2.5", 2.5, "x"]),
    ],
    "recorded_score": [
        _pairs(
            {"type": "recorded_score", "scorer": "m"},
            [
                {"scores": {"m": {"value": value}}}
                for value in (1, 0, 0.5, True, False, "C", "I", "P", "N", "Z", None, 1.5, [1])
            ]
            + [
                {"scores": {"m": {"value": None, "passed": True}}},
                {"scores": {"m": {"value": None, "error": "grader failed"}}},
                {"scores": {}, "error": "sample failed"},
                {"scores": {}},
                "not an object",
                {"scores": {"m": {"value": "Y", "worth": 0.75}}},
                # The sample's declared scores (promptfoo's per-test assertions): undeclared is not applicable,
                # declared but absent is missing.
                {"scores": {"promptfoo": {"value": 1}}, "declared": ["promptfoo", "other"]},
                {"scores": {"promptfoo": {"value": 1}}, "declared": ["promptfoo", "m"]},
                {"scores": {"m": {"value": 1}}, "declared": ["promptfoo"]},
            ],
        ),
        # What a config over an inspect log fills in (``format_labels``); a declared label wins over a recorded worth.
        _pairs(
            {"type": "recorded_score", "scorer": "m", "values": {"C": 1, "I": 0, "P": 0.5, "N": 0, "Y": 0}},
            [{"scores": {"m": {"value": value}}} for value in ("C", "I", "P", "N", "Z")]
            + [{"scores": {"m": {"value": "Y", "worth": 1}}}],
        ),
        _pairs(
            {
                "type": "recorded_score",
                "scorer": "m",
                "key": "k",
                "values": {"good": 1},
                "scale": {"min": 0, "max": 10},
            },
            [
                {"scores": {"m": {"value": {"k": 7}}}},
                {"scores": {"m": {"value": {"k": "good"}}}},
                {"scores": {"m": {"value": {}}}},
            ],
        ),
    ],
    "word_count": [
        _pairs(
            {"type": "word_count", "min": 2, "max": 4}, ["one", "one two", "a b c d e", "  spaced   out  ", "", None, 5]
        ),
    ],
    "set_overlap": [
        _pairs(
            {"type": "set_overlap", "reference": "gold", "measure": measure},
            [["a", "b"], [], ["a"], [], "x", ["A", "c"]],
            [["a", "c"], ["a"], [], [], ["a"], "bad"],
        )
        for measure in ("f1", "precision", "recall")
    ]
    + [
        _pairs(
            {"type": "set_overlap", "reference": "gold", "case_sensitive": False},
            [["A", "b"], [{"k": "X"}]],
            [["a", "B"], [{"k": "x"}]],
        ),
        _pairs(
            {"type": "set_overlap", "reference": "gold", "case_sensitive": False},
            [["Café", "Zoë"]],
            [["cafe\u0301", "ZOE\u0308"]],
        ),
    ],
    "enum": [
        _pairs({"type": "enum", "values": ["positive", "negative"]}, ["positive", "Positive", "neutral", None, 1]),
        _pairs(
            {"type": "enum", "field": "label", "values": ["a", "b"], "case_sensitive": False},
            [{"label": "A"}, {"x": 1}],
        ),
        _pairs({"type": "enum", "values": ["Café"], "case_sensitive": False}, ["cafe\u0301", "CAFÉ", "cafe"]),
        # Text read against a number or a boolean as the value it spells, either side (enum@5, exact_match@5's rule).
        _pairs(
            {"type": "enum", "values": [4, True]},
            ["4", " 4.0 ", "true", "True", "four", "4 apples", "4e0", 4, 5, True, False],
        ),
        _pairs({"type": "enum", "values": [4, True], "case_sensitive": False}, ["True", "TRUE", "False"]),
        _pairs({"type": "enum", "values": ["4", "true", "x"]}, [4, 4.0, True, False, 5, "4"]),
    ],
    "tool_calls": [
        _pairs({"type": "tool_calls", "reference": "gold", **rule}, TRAJECTORIES, [EXPECTED_CALLS] * 9 + [[], None])
        for rule in (
            {"mode": "exact"},
            {"mode": "in_order"},
            {"mode": "in_order", "extra_calls": "forbid"},
            {"mode": "any_order"},
            {"mode": "subset"},
            {"mode": "superset", "vacuous": "pass"},
            {"measure": "precision"},
            {"measure": "recall"},
            {"measure": "f1"},
            {"mode": "any_order", "arguments": "json_subset"},
            {
                "mode": "any_order",
                "tools": {"book": {"schema": {"required": ["day"]}, "arguments": {"day": {"tolerance": 1}}}},
            },
        )
    ]
    + [_pairs({"type": "tool_calls", "reference": "gold", "mode": "subset"}, INCONSISTENT, [EXPECTED_CALLS] * 3)]
    + [
        _pairs({"type": "tool_calls", "reference": "gold", "mode": "any_order"}, TEXT_ARGUMENTS, [EXPECTED_CALLS] * 6),
        _pairs({"type": "tool_calls", "reference": "gold", "mode": "exact"}, [EXPECTED_CALLS], [TEXT_ARGUMENTS[0]]),
        # References holding no calls, or calls that do not add up (tool_calls@5): the gold's problem, non_evaluable.
        _pairs(
            {"type": "tool_calls", "reference": "gold", "mode": "exact"},
            [EXPECTED_CALLS] * 4,
            ["search", 3, {"tool_calls": "x"}, INCONSISTENT[0]],
        ),
    ],
    "steps": [
        _pairs({"type": "steps", "count": count, **budget}, TRAJECTORIES + INCONSISTENT)
        for count in ("model_turns", "tool_calls")
        for budget in ({}, {"max": 2})
    ],
    "loop": [
        _pairs({"type": "loop", **rule}, TRAJECTORIES + INCONSISTENT)
        for rule in ({}, {"repeats": 2}, {"repeats": 2, "consecutive": False})
    ]
    + [_pairs({"type": "loop", "repeats": 2}, TEXT_ARGUMENTS)],
}

#: Each builtin reading field ``x`` of wrong answers: spec, a good answer, its reference.
WRONG_ANSWER_SPECS: dict[str, tuple[dict[str, Any], Any, Any]] = {
    "exact_match": ({"type": "exact_match", "reference": "gold"}, "refund", "refund"),
    "contains": ({"type": "contains", "value": "a"}, "abc", None),
    "regex": ({"type": "regex", "pattern": "a"}, "a", None),
    "json_valid": ({"type": "json_valid"}, '{"a": 1}', None),
    "json_schema": ({"type": "json_schema", "schema": {"type": "object", "required": ["a"]}}, {"a": 1}, None),
    "field_present": ({"type": "field_present", "fields": ["a"]}, {"a": 1}, None),
    "numeric_bounds": ({"type": "numeric_bounds", "min": 0, "max": 1}, 0.5, None),
    "word_count": ({"type": "word_count", "max": 3}, "two words", None),
    "set_overlap": ({"type": "set_overlap", "reference": "gold"}, ["a", "b"], ["a"]),
    "enum": ({"type": "enum", "values": ["a"]}, "a", None),
}
for _name, (_spec, _good, _gold) in WRONG_ANSWER_SPECS.items():
    METRIC_CASES[_name] += _wrong_answers(_spec, _good, _gold)
#: json_valid on the whole output measures the text that did not parse, whatever on_invalid_output says.
METRIC_CASES["json_valid"] += [
    {"spec": spec, "examples": [{"fields": {}, "unparsed": '{"a": '}, {"fields": {}, "output": {"a": 1}}]}
    for spec in ({"type": "json_valid"}, {"type": "json_valid", "on_invalid_output": "exclude"})
]

#: Per-example check: the output is written as the target; the checker exits with the code the output names.
CHECK_CASES = [
    {
        "check": {
            "command": [
                "{python}",
                "-c",
                "import sys, pathlib; sys.exit(int((pathlib.Path(sys.argv[1]) / 'output.txt').read_text()))",
                "{target}",
            ],
            "policy": {"id": "golden-v1", "pass_codes": [0], "fail_codes": [1], "inconclusive_codes": [3]},
        },
        "examples": _examples(["0", "1", "3", "7"]),
    }
]
#: The same check on field ``x`` of wrong answers: the check is not run for an answer it cannot be given.
CHECK_CASES += [
    {"check": CHECK_CASES[0]["check"], "metric": case.pop("spec"), **case} for case in _wrong_answers({}, "0")
]

#: final_state: the state and the expected state written as JSON files, compared by the checker.
FINAL_STATE_CASES = [
    {
        "check": {
            "command": [
                "{python}",
                "-c",
                "import sys, json, pathlib; t = pathlib.Path(sys.argv[1]); "
                "sys.exit(0 if json.loads((t / 'state.json').read_text()) == "
                "json.loads((t / 'expected.json').read_text()) else 1)",
                "{target}",
            ],
        },
        "metric": {"reference": "gold"},
        "examples": [
            {"fields": {"gold": {"cart": ["soup"]}}, "output": {"final_state": {"cart": ["soup"]}}},
            {"fields": {"gold": {"cart": ["soup"]}}, "output": {"final_state": {"cart": []}}},
            {"fields": {}, "output": {"final_state": {"cart": []}}},
            {"fields": {"gold": {"cart": []}}, "output": {"messages": []}},
            {"fields": {"gold": {"cart": []}}, "unparsed": "{"},
        ],
    }
]

JUDGE_CASES = [
    {
        "spec": {
            "type": "llm_judge",
            "rubric": "rubric.md",
            "scale": {"min": 1, "max": 5},
            "model": "m",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": None,
            "reference": "gold",
        },
        "rubric": "Grade helpfulness.\n",
        "examples": _examples(["an answer", {"structured": True}, "no gold"], ["the gold", "g", None]),
    },
    {
        "spec": {
            "type": "llm_judge",
            "rubric": "rubric.md",
            "scale": {"labels": {"bad": 0, "good": 1}},
            "model": "m",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": None,
            "system": "You grade. {{ scale }}",
            "prompt": "{{ rubric }} | {{ output }} | {{ example_id }}",
        },
        "rubric": "Be strict.",
        "examples": _examples(["fine"]),
    },
]

#: A judge on field ``x`` of wrong answers: scored without a call, on a numeric and on a label scale.
JUDGE_CASES += [
    {**JUDGE_CASES[0], **case, "spec": {**JUDGE_CASES[0]["spec"], **case["spec"]}}
    for case in _wrong_answers({}, "an answer", "the gold")
] + [
    {**JUDGE_CASES[1], **case, "spec": {**JUDGE_CASES[1]["spec"], **case["spec"]}}
    for case in _wrong_answers({}, "fine")
]

#: A judge in a run whose recorded outputs are in the dataset (``output_fields``: the run's gold-excluded fields,
#: here the graded variant's ``output``, another variant's ``answer_b`` and a nested one): its ``example`` is the
#: record as gold sees it (llm_judge@3), so neither the other variant's answer nor the graded one under its field's
#: name is shown; a template that walks the record shows what is left.
JUDGE_CASES += [
    {
        **JUDGE_CASES[0],
        "output_fields": ["output", "answer_b", "extra.b"],
        "examples": [
            {
                "fields": {
                    "id": "e0",
                    "question": "2+2?",
                    "gold": "4",
                    "output": "4",
                    "answer_b": "5",
                    "extra": {"a": 1, "b": "five"},
                },
                "output": "4",
            },
            {"fields": {"id": "e1", "gold": "x"}, "output": "x"},
        ],
    },
    {
        **JUDGE_CASES[1],
        "output_fields": ["output", "answer_b"],
        "spec": {
            **JUDGE_CASES[1]["spec"],
            "prompt": "{% for key, value in example.items() %}{{ key }}={{ value }};{% endfor %} | {{ output }}",
        },
        "examples": [{"fields": {"id": "e0", "q": "hi", "answer_b": "B says", "output": "A says"}, "output": "A says"}],
    },
]

PARSER_CASES = [
    {
        "scale": {"min": 1, "max": 5},
        "answers": [
            '{"score": 4, "rationale": "ok"}',
            '```json\n{"score": 5}\n```',
            'I think {"score": 2} overall',
            '{"score": 6}',
            '{"score": 2.5}',
            '{"score": "4"}',
            '{"score": true}',
            '{"rationale": "none"}',
            "no json here",
            '{"score": 1e999}',
            'The answer {"answer": "yes"} misses the point. {"score": 2, "rationale": "partial"}',
            'It claims {"score": 5}, but it is wrong: {"score": 1, "rationale": "wrong"}',
            '{"score": 4, "score": 1}',
            'draft {"score": 3} then {"score": 3.0, "rationale": "same"}',
            '{"score": 4,}',
        ],
    },
    {
        "scale": {"labels": {"bad": 0, "good": 1}},
        "answers": ['{"score": "good"}', '{"score": " GOOD "}', '{"score": "great"}', '{"score": 1}'],
    },
]

#: Per (example, sample): example ids and 0/1 or graded values, including ties and single samples.
REDUCER_INPUT = {
    "examples": [0, 0, 0, 1, 1, 2, 3, 3, 3, 3, 4, 4],
    "values": [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0],
}
#: pass_at_k and at_least_k need at least k samples of 0/1 per example.
K_REDUCER_INPUT = {
    "examples": [0, 0, 0, 1, 1, 3, 3, 3, 3, 4, 4],
    "values": [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0],
}
GRADED_REDUCER_INPUT = {"examples": [0, 0, 0, 1, 1, 2], "values": [0.2, 0.9, 0.5, 3.0, 1.0, 0.7]}

BINARY = [1.0] * 17 + [0.0] * 6
CONTINUOUS = [0.12, 0.5, 0.91, 0.33, 0.77, 0.64, 0.05, 0.48, 0.82, 0.29, 0.71, 0.58, 0.4, 0.95, 0.2]
CLUSTERS = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11]


BASE_BINARY = [1.0] * 12 + [0.0] * 11
#: A pairwise judge's scores (a tie is 0.5) near the top of [0, 1]: the t interval's high end lies past 1.
TIES = [1.0, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0]
#: Three equal scores: no spread (a t interval of these is the point alone).
FLAT = [4.0, 4.0, 4.0]


def interval_cases(method: Method) -> list[dict[str, Any]]:
    if method is Method.NEWCOMBE_PAIRED:  # a paired method: candidate and baseline outcomes per example
        return [
            {"base": BASE_BINARY, "candidate": BINARY, "sides": sides, "level": 0.9}
            for sides in ("two_sided", "lower", "upper")
        ]
    data = BINARY if method.binary_only else CONTINUOUS
    cases = []
    for sides in ("two_sided", "lower", "upper"):
        case: dict[str, Any] = {"values": data, "sides": sides, "level": 0.9}
        if method.clustered:
            case["clusters"] = CLUSTERS[: len(data)]
        cases.append(case)
    single = {**cases[0], "values": data[:1]}  # one value: undefined for most methods
    if method.clustered:
        single["clusters"] = CLUSTERS[:1]
    cases.append(single)
    if method in (Method.STUDENT_T, Method.CLUSTER_T):  # ties near the top of [0, 1]: the high end is clipped
        ties: dict[str, Any] = {**cases[0], "values": TIES, "level": 0.99, "scale": [0.0, 1.0]}
        if method.clustered:
            ties["clusters"] = CLUSTERS[: len(TIES)]
        cases.append(ties)
    if not method.binary_only:  # no spread: three equal values on a 1-5 scale take the range floor, not a point
        flat: dict[str, Any] = {**cases[0], "values": FLAT, "level": 0.95, "scale": [1.0, 5.0]}
        if method.clustered:
            flat["clusters"] = [0, 1, 2]
        cases.append(flat)
    return cases


def score_json(result: float | Score) -> Any:
    """A metric result as a golden output: the value, or status/validity/value and diagnostic codes (the wording
    of a message is not a result)."""
    if not isinstance(result, Score):
        return {"value": result}
    return {
        "status": result.status.value,
        "validity": result.validity.value,
        "value": result.value,
        "codes": [diagnostic.code for diagnostic in result.diagnostics],
    }


def _example(index: int, row: dict[str, Any]) -> Example:
    """A golden row: its output, or (``unparsed``) the text ``task.parse: json`` would fail to parse."""
    output = parse_json_output(row["unparsed"]) if "unparsed" in row else row["output"]
    return Example(id=f"e{index}", line=index + 1, fields=row["fields"], output=output)


def _context(folder: str, case: dict[str, Any], **kw: Any) -> BuildContext:
    """The build context of a case: which way the metric improves is the case's ``direction`` (default higher)."""
    return BuildContext(Path(folder), direction=Direction(case.get("direction", "higher_is_better")), **kw)


def compute_metric(case: dict[str, Any]) -> list[Any]:
    spec = parse_metric_spec(case["spec"])
    with tempfile.TemporaryDirectory() as folder:
        function = spec.build(_context(folder, case))
        return [score_json(function(_example(i, row))) for i, row in enumerate(case["examples"])]


def compute_check(case: dict[str, Any]) -> list[Any]:
    from evalglass.lanes.checkspec import CheckSpec
    from evalglass.metrics.check import CheckMetricSpec

    declared = dict(case["check"])
    declared["command"] = [sys.executable if part == "{python}" else part for part in declared["command"]]
    check = CheckSpec.model_validate(declared)
    metric = CheckMetricSpec.model_validate({"check": "golden", **case.get("metric", {})})
    with tempfile.TemporaryDirectory() as folder:
        function = metric.build(_context(folder, case, checks={"golden": check}))
        return [score_json(function(_example(i, row))) for i, row in enumerate(case["examples"])]


def compute_final_state(case: dict[str, Any]) -> list[Any]:
    from evalglass.lanes.checkspec import CheckSpec
    from evalglass.metrics.trajectories import FinalStateSpec

    declared = dict(case["check"])
    declared["command"] = [sys.executable if part == "{python}" else part for part in declared["command"]]
    check = CheckSpec.model_validate(declared)
    metric = FinalStateSpec.model_validate({"check": "golden", **case.get("metric", {})})
    with tempfile.TemporaryDirectory() as folder:
        function = metric.build(_context(folder, case, checks={"golden": check}))
        return [score_json(function(_example(i, row))) for i, row in enumerate(case["examples"])]


def compute_judge(case: dict[str, Any]) -> list[Any]:
    """What the llm_judge metric sends: the rendered messages (or the score explaining why there are none)."""
    from evalglass.lanes.judge import Judge
    from evalglass.metrics.llm_judge import LlmJudgeSpec

    spec = parse_metric_spec(case["spec"])
    assert isinstance(spec, LlmJudgeSpec)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "rubric.md").write_text(case["rubric"])
        hidden = tuple(case.get("output_fields", ()))
        definition = spec.judge_definition(_context(folder, case, output_fields=hidden))

        async def build() -> list[Any]:
            judge = Judge(definition, executor=None, env={})  # type: ignore[arg-type]
            try:
                out = []
                for i, row in enumerate(case["examples"]):
                    rendered = judge.render(_example(i, row))
                    out.append(score_json(rendered) if isinstance(rendered, Score) else [list(m) for m in rendered])
                return out
            finally:
                await judge.aclose()

        return asyncio.run(build())


def compute_parser(case: dict[str, Any]) -> list[Any]:
    from evalglass.lanes.judge import parse_judge_answer
    from evalglass.lanes.judgespec import JudgeScale

    scale = JudgeScale.model_validate(case["scale"])
    out = []
    for answer in case["answers"]:
        verdict = parse_judge_answer(answer, scale)
        out.append({**score_json(verdict.score), "label": verdict.label, "rationale": verdict.rationale})
    return out


def compute_reducer(reducer: Reducer, case: dict[str, Any]) -> Any:
    k = case.get("k")
    result = reduce_samples(case["examples"], case["values"], reducer, k=k)
    return {
        "examples": result.examples.tolist(),
        "values": result.values.tolist(),
        "samples": result.samples.tolist(),
    }


def reducer_cases(reducer: Reducer) -> list[dict[str, Any]]:
    if reducer.needs_k:
        return [{**REDUCER_INPUT, "k": 1}, {**K_REDUCER_INPUT, "k": 2}]
    return [REDUCER_INPUT, GRADED_REDUCER_INPUT]


def scale_of(case: dict[str, Any]) -> ScaleSpec | None:
    """A case's declared scale, ``[min, max]``; None (unbounded) when it declares none."""
    return None if "scale" not in case else ScaleSpec(min=case["scale"][0], max=case["scale"][1])


def compute_interval(method: Method, case: dict[str, Any]) -> Any:
    if "base" in case:
        return compute_paired({**case, "method": method.value})
    interval = confidence_interval(
        case["values"],
        level=case["level"],
        sides=case["sides"],
        method=method,
        clusters=case.get("clusters"),
        seed=7,
        resamples=500,
        scale=scale_of(case),
    )
    assert interval is not None
    return {
        "point": interval.point,
        "low": interval.low,
        "high": interval.high,
        "notes": [note.value for note in interval.notes],
        "method": interval.method.value,
    }


PAIRED_CASES = [
    {"base": BASE_BINARY, "candidate": BINARY, "sides": "two_sided", "level": 0.95},
    {"base": BASE_BINARY, "candidate": BINARY, "sides": "lower", "level": 0.9, "clusters": CLUSTERS},
    {"base": CONTINUOUS[::-1], "candidate": CONTINUOUS, "sides": "two_sided", "level": 0.95},
    {"base": CONTINUOUS[::-1], "candidate": CONTINUOUS, "sides": "upper", "level": 0.9, "method": "bootstrap_bca"},
    {"base": [1.0, 0.0], "candidate": [1.0, 1.0], "sides": "two_sided", "level": 0.95},
    # A tie-scored judge on [0, 1], three pairs: the paired t interval reaches past ±1 and is clipped to it.
    {"base": [1.0, 1.0, 0.0], "candidate": [0.0, 0.5, 1.0], "sides": "two_sided", "level": 0.95, "scale": [0.0, 1.0]},
    # Every pair moved by the same 0.5: no spread, the range floor instead of a point.
    {"base": [0.5, 0.0, 0.5], "candidate": [1.0, 0.5, 1.0], "sides": "two_sided", "level": 0.95, "scale": [0.0, 1.0]},
]


#: The difference between two variants of one run (``metric@a-vs-b``) as a gate between them decides on it: per
#: example the first minus the second (None: unmeasured there), its interval clipped to ±(max - min) of the range.
VARIANT_DIFFERENCE_CASES: list[dict[str, Any]] = [
    # Four examples of a [0, 1] metric: the t interval ran to -1.419 before the clip.
    {
        "first": [0.0, 1.0, 1.0, 0.0],
        "second": [1.0, 1.0, 1.0, 1.0],
        "sides": "two_sided",
        "level": 0.95,
        "scale": [0.0, 1.0],
    },
    {
        "first": [0.0, 1.0, 1.0, 0.0],
        "second": [1.0, 1.0, 1.0, 1.0],
        "sides": "lower",
        "level": 0.9,
        "scale": [0.0, 1.0],
    },
    {"first": [1.0, 0.5, 0.0, None, 1.0], "second": [0.0, 0.5, 1.0, 1.0, 0.5], "sides": "two_sided", "level": 0.95},
    {"first": CONTINUOUS, "second": CONTINUOUS[::-1], "sides": "two_sided", "level": 0.95, "scale": [0.0, 1.0]},
    {"first": [5.0, 1.0, 3.0], "second": [1.0, 5.0, 1.0], "sides": "upper", "level": 0.9, "scale": [1.0, 5.0]},
    # One variant never worse: the differences are all 0 or 1, and still a difference (student_t), not a proportion.
    {
        "first": [1.0] * 3 + [0.0] * 7,
        "second": [0.0] + [0.0] * 2 + [0.0] * 7,
        "sides": "two_sided",
        "level": 0.9,
        "scale": [0.0, 1.0],
    },
    {"first": [1.0] + [1.0] * 9, "second": [0.0] + [1.0] * 9, "sides": "lower", "level": 0.95, "scale": [0.0, 1.0]},
    # Every pair differs by the same amount: no spread, the range floor instead of a point (three pairs decided).
    {"first": [1.0, 1.0, 1.0], "second": [1.0, 1.0, 1.0], "sides": "lower", "level": 0.95, "scale": [0.0, 1.0]},
    {"first": [1.0, 0.5, 1.0], "second": [0.5, 0.0, 0.5], "sides": "two_sided", "level": 0.95, "scale": [0.0, 1.0]},
    # Values off the declared scale: the scale is not theirs, nothing is clipped.
    {"first": [1.5, 0.0, 1.0], "second": [0.0, 1.0, 0.0], "sides": "two_sided", "level": 0.95, "scale": [0.0, 1.0]},
]


def compute_variant_difference(case: dict[str, Any]) -> Any:
    from evalglass.core.columns import ScoreColumn
    from evalglass.core.estimate import IntervalSpec
    from evalglass.core.score import Score
    from evalglass.core.variants import difference_column, difference_interval, difference_scale

    def column(values: list[float | None]) -> ScoreColumn:
        out = ScoreColumn()
        for value in values:
            out.append(Score.error("unmeasured", "no value") if value is None else value)
        return out

    first, second = column(case["first"]), column(case["second"])
    difference = difference_column(first, second)
    scale = difference_scale(first, second, scale_of(case))
    values = [
        value
        for value, a, b in zip(difference.values(), case["first"], case["second"], strict=True)
        if None not in (a, b)
    ]
    method = difference_interval(IntervalSpec(), clustered=False).override
    interval = confidence_interval(values, level=case["level"], sides=case["sides"], method=method, scale=scale)
    assert interval is not None
    return {
        "scale": None if scale is None else [scale.min, scale.max],
        "point": interval.point,
        "low": interval.low,
        "high": interval.high,
        "method": interval.method.value,
    }


def compute_paired(case: dict[str, Any]) -> Any:
    from evalglass.core.stats import paired_difference

    result = paired_difference(
        case["base"],
        case["candidate"],
        level=case["level"],
        sides=case["sides"],
        method=case.get("method"),
        clusters=case.get("clusters"),
        seed=7,
        resamples=500,
        scale=scale_of(case),
    )
    assert result is not None
    interval = result.interval
    return {
        "point": interval.point,
        "low": interval.low,
        "high": interval.high,
        "method": interval.method.value,
        "notes": [note.value for note in interval.notes],
        "std_error": result.std_error,
        "test": result.test.value,
        "p_value": result.p_value,
        "table": None if result.table is None else result.table.model_dump(),
    }


#: The three-way rule on a metric's values (absolute gates) and on paired values (comparative gates): thresholds
#: that pass, fail and leave the interval straddling, in both directions, for binary and continuous values.
RULE_CASES = [
    *(
        {"values": BINARY, "threshold": threshold, "direction": "higher_is_better", "level": 0.95}
        for threshold in (0.5, 0.6, 0.74, 0.9, 0.95)
    ),
    *(
        {"values": CONTINUOUS, "threshold": threshold, "direction": direction, "level": 0.9}
        for threshold in (0.3, 0.5, 0.7)
        for direction in ("higher_is_better", "lower_is_better")
    ),
    *(
        {"base": BASE_BINARY, "candidate": BINARY, "margin": margin, "direction": "higher_is_better", "level": 0.95}
        for margin in (0.0, 0.1, 0.3)
    ),
    *(
        {"base": BINARY, "candidate": BASE_BINARY, "margin": margin, "direction": "higher_is_better", "level": 0.95}
        for margin in (0.0, 0.1, 0.5)
    ),
    {"base": CONTINUOUS[::-1], "candidate": CONTINUOUS, "margin": 0.05, "direction": "lower_is_better", "level": 0.9},
]


#: Where a majority tie goes (``majority_ties``): the reducer's inputs (ties in both) under each direction.
MAJORITY_TIES_CASES: list[dict[str, Any]] = [
    {**case, "direction": direction}
    for case in (REDUCER_INPUT, GRADED_REDUCER_INPUT)
    for direction in ("higher_is_better", "lower_is_better")
]


def compute_majority_ties(case: dict[str, Any]) -> Any:
    from evalglass.core.stats import Direction, Ties

    ties = Ties.against(Direction(case["direction"]))
    result = reduce_samples(case["examples"], case["values"], Reducer.MAJORITY, ties=ties)
    return {"ties": ties.value, "values": result.values.tolist()}


def compute_rule(case: dict[str, Any]) -> Any:
    """What ``lower_bound`` decides: the interval at ``2 * level - 1`` (its ends are the one-sided bounds at the
    gate's level), its unfavourable and favourable ends, and the rule's decision against the threshold."""
    from evalglass.core.gates import interval_ends
    from evalglass.core.gatespec import GateRule, margin_threshold, rule_decision
    from evalglass.core.stats import Direction, paired_difference

    direction = Direction(case["direction"])
    level = 2.0 * case["level"] - 1.0
    if "base" in case:
        difference = paired_difference(case["base"], case["candidate"], level=level)
        assert difference is not None
        interval, threshold = difference.interval, margin_threshold(case["margin"], direction)
    else:
        found = confidence_interval(case["values"], level=level)
        assert found is not None
        interval, threshold = found, case["threshold"]
    compared, favourable = interval_ends(interval, direction)
    assert compared is not None
    decision = rule_decision(GateRule.LOWER_BOUND, direction, threshold, compared, favourable)
    return {"compared": compared, "favourable": favourable, "threshold": threshold, "decision": decision.value}


#: A jury's rule on votes (None: that judge cast no vote), on a 1..5 scale: the verdict is what it computes.
JURY_CASES: list[dict[str, Any]] = [
    {"rule": rule, "quorum": quorum, "votes": votes}
    for rule in ("majority", "mean", "unanimous")
    for quorum, votes in (
        (3, [4, 4, 4]),
        (3, [3, 3, 5]),
        (3, [1, 3, 5]),
        (3, [4, 4, None]),
        (2, [4, 4, None]),
        (2, [1, 2, None]),
        (1, [2, 5, 5, 2]),
    )
]


def compute_jury(case: dict[str, Any]) -> Any:
    from evalglass.core.jury import JuryRule, jury_verdict

    values = {category: float(category) for category in range(1, 6)}
    verdict = jury_verdict(case["votes"], values, JuryRule(case["rule"]), case["quorum"])
    return {
        "value": verdict.value,
        "label": verdict.label,
        "missing": None if verdict.missing is None else verdict.missing.value,
    }


def inputs(kind: EvaluatorKind, name: str) -> list[dict[str, Any]]:
    """The golden inputs of one evaluator (what ``record`` writes)."""
    if kind is EvaluatorKind.METRIC:
        if name == "check":
            return CHECK_CASES
        if name == "final_state":
            return FINAL_STATE_CASES
        if name == "llm_judge":
            return JUDGE_CASES
        if name == "jury":
            return JURY_CASES
        return METRIC_CASES[name]
    if kind is EvaluatorKind.REDUCER:
        return reducer_cases(Reducer(name))
    if kind is EvaluatorKind.INTERVAL:
        return interval_cases(Method(name))
    if kind is EvaluatorKind.PAIRED:
        return VARIANT_DIFFERENCE_CASES if name == "variant_difference" else PAIRED_CASES
    if kind is EvaluatorKind.RULE:
        return MAJORITY_TIES_CASES if name == "majority_ties" else RULE_CASES
    return PARSER_CASES


def compute(kind: EvaluatorKind, name: str, case: dict[str, Any]) -> Any:
    if kind is EvaluatorKind.METRIC:
        if name == "check":
            return compute_check(case)
        if name == "final_state":
            return compute_final_state(case)
        if name == "llm_judge":
            return compute_judge(case)
        if name == "jury":
            return compute_jury(case)
        return compute_metric(case)
    if kind is EvaluatorKind.REDUCER:
        return compute_reducer(Reducer(name), case)
    if kind is EvaluatorKind.INTERVAL:
        return compute_interval(Method(name), case)
    if kind is EvaluatorKind.PAIRED:
        return compute_variant_difference(case) if name == "variant_difference" else compute_paired(case)
    if kind is EvaluatorKind.RULE:
        return compute_majority_ties(case) if name == "majority_ties" else compute_rule(case)
    return compute_parser(case)


def same(recorded: Any, computed: Any) -> bool:
    """Equal, with floats equal to 1e-9 relative (numeric libraries may differ in the last bits across releases)."""
    if isinstance(recorded, float) and isinstance(computed, float):
        return recorded == computed or math.isclose(recorded, computed, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(recorded, list) and isinstance(computed, list):
        return len(recorded) == len(computed) and all(same(a, b) for a, b in zip(recorded, computed, strict=True))
    if isinstance(recorded, dict) and isinstance(computed, dict):
        return recorded.keys() == computed.keys() and all(same(recorded[k], computed[k]) for k in recorded)
    return recorded == computed and type(recorded) is type(computed)


def path_of(kind: EvaluatorKind, name: str) -> Path:
    return FOLDER / kind.value / f"{name}.json"
