"""Live-lane tests: a real HTTP server on 127.0.0.1 (evalglass.testing.fake_openai), real subprocesses, real SQLite."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from pydantic import TypeAdapter

from evalglass.lanes.retry import Retrier, RetryPolicy
from evalglass.lanes.specs import LaneSpec, TaskSpec
from evalglass.testing.fake_openai import FakeOpenAI

T = TypeVar("T")

#: Looks like a real key; tests assert it never reaches an artifact, a cache file or an attempt record.
SECRET = "sk-test-5f3c9a1e0b7d4c2a8e6f"
KEY_ENV = {"EVALGLASS_TEST_KEY": SECRET}


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type]


class FakeSleep:
    """Records requested delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def fast_retrier(max_attempts: int = 3, *, random: Callable[[], float] = lambda: 0.5, **policy: Any) -> Retrier:
    """Real retry logic with no real waiting."""
    return Retrier(RetryPolicy(max_attempts=max_attempts, **policy), sleep=FakeSleep(), random=random)


def parse_task_spec(data: Any) -> LaneSpec:
    """A ``task:`` mapping validated as the config validates it (raises pydantic.ValidationError)."""
    spec: LaneSpec = TypeAdapter(TaskSpec).validate_python(data)
    return spec
