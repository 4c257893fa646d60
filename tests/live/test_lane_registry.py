"""Every lane type builds through the one registry: a spec in the ``LaneSpec`` union without a lane class (or with
another type's) is caught here, not by the first user of the new type."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from evalglass.engine.spec.config import Config
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.registry import LANE_TYPES, build_lane
from evalglass.lanes.specs import LaneSpec

LANE = "def answer(record):\n    return record['q']\n"
SPECS: dict[str, dict[str, typing.Any]] = {
    "python": {"type": "python", "function": "lane.py:answer"},
    "command": {"type": "command", "argv": ["cat"]},
    "chat": {"type": "chat", "model": "m", "base_url": "http://127.0.0.1:9/v1", "prompt": "{{ q }}"},
    "agent": {
        "type": "agent",
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "prompt": "{{ q }}",
        "tools": {"answer": "lane.py:answer", "look": "recorded"},
    },
}


def test_every_lane_spec_has_its_lane_class_and_a_case_here() -> None:
    types = {typing.get_args(cls.model_fields["type"].annotation)[0] for cls in typing.get_args(LaneSpec)}
    assert set(LANE_TYPES) == types == set(SPECS)


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_a_config_task_builds_the_lane_class_its_type_names(kind: str, tmp_path: Path) -> None:
    (tmp_path / "lane.py").write_text(LANE)
    config = Config.model_validate(
        {
            "dataset": {"name": "d", "path": "d.jsonl"},
            "task": SPECS[kind],
            # An agent's answer is its trajectory's text (the whole trajectory is refused: outputfields.py).
            "metrics": {
                "m": {"type": "exact_match", "reference": "a", **({"field": "text"} if kind == "agent" else {})}
            },
        }
    )
    assert config.lane is not None and config.lane.type == kind

    async def build() -> object:
        lane = build_lane(config.lane, base_dir=tmp_path, executor=AsyncioExecutor(2), env={})
        await lane.aclose()
        return lane

    import asyncio

    lane = asyncio.run(build())
    assert type(lane) is LANE_TYPES[kind]
    assert lane.spec is config.lane  # type: ignore[attr-defined]
