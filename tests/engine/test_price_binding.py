"""A trajectory's `cost` is made of the config's `prices:` (a file a pull request edits): a gate on a metric that
may read it binds the price of the run's agent lanes' models, and no other gate does (``Config.output_prices``,
``reads_cost``)."""

from __future__ import annotations

from typing import Any

import pytest

from evalglass.engine.spec.config import Config

AGENT = {
    "type": "agent",
    "base_url": "http://127.0.0.1:9/v1",
    "model": "m",
    "prompt": "{{ q }}",
    "tools": {"t": "tools.py:t"},
}
PRICE = {"prompt_per_million": 1.0, "completion_per_million": 2.0}
CHEAPER = {"prompt_per_million": 0.5, "completion_per_million": 2.0}


def fingerprint(metric: dict[str, Any], prices: dict[str, Any], task: dict[str, Any] = AGENT) -> str:
    config = Config.model_validate(
        {
            "dataset": {"name": "d", "path": "d.jsonl"},
            "task": task,
            "metrics": {"x": metric},
            "gates": {"g": {"metric": "x", "proposed_threshold": 0.5}},
            "prices": prices,
        }
    )
    return config.gate_fingerprint("g")


@pytest.mark.parametrize(
    ("metric", "binds"),
    [
        ({"type": "numeric_bounds", "field": "cost", "max": 1}, True),
        ({"type": "python", "function": "m.py:f"}, True),
        ({"type": "python", "function": "m.py:f", "field": "text"}, True),
        ({"type": "numeric_bounds", "field": "usage.input_tokens", "max": 1}, False),
        ({"type": "steps", "count": "tool_calls", "max": 3}, False),
        ({"type": "contains", "field": "text", "value": "x"}, False),
    ],
)
def test_a_price_is_bound_exactly_where_a_metric_may_read_the_cost(metric: dict[str, Any], binds: bool) -> None:
    priced = fingerprint(metric, {"m": PRICE})
    assert (fingerprint(metric, {"m": CHEAPER}) != priced) is binds
    # A price for a model no lane uses is nothing the gate reads: the fingerprint of no prices (a metric on the
    # cost needs its model's price: refused without).
    if metric.get("field") != "cost":
        assert fingerprint(metric, {"other": PRICE}) == fingerprint(metric, {})
    # Moving the lane to a model priced otherwise is a new approval too.
    moved = fingerprint(metric, {"m": PRICE, "n": CHEAPER}, task={**AGENT, "model": "n"})
    assert (moved != fingerprint(metric, {"m": PRICE, "n": CHEAPER})) is binds
