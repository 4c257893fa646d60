"""One call of a python lane's host function and what it comes to, in whichever process makes it (a host worker,
``lanes/hostworker.py``; a cluster worker, ``engine/produce/raycluster.py``), so every one says exactly the same:
its value when JSON, else the :class:`~evalglass.lanes.ports.LaneFailure` of what it raised or returned. Light on
purpose (no pydantic, no lane machinery): a host worker's fork server preloads it.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from evalglass import redaction
from evalglass.core.outputparse import DECLARED_JSON, UnparsedOutput
from evalglass.core.redact import Redactor
from evalglass.lanes.ports import MAX_DETAIL, LaneFailure, LaneOutcome, LaneOutput
from evalglass.readers.jsonvalues import json_problem, non_finite

#: What a host function returns most often: built-in JSON types, which are never awaitable.
_PLAIN_TYPES = frozenset({str, int, float, bool, type(None), list, dict})


@dataclass(frozen=True, slots=True)
class _Returned:
    """A value of any type but :data:`_PLAIN_TYPES` a host function returned (an awaitable, a LaneFailure of its
    own making...), so it is never mistaken for what :func:`python_value` says about the call."""

    value: Any


def python_value(
    function: Callable[..., Any], name: str, kwargs: dict[str, Any], sample: int, argument: dict[str, Any]
) -> Any:
    """One call of a python-lane function: its value when of a built-in JSON type (not yet checked to be JSON: a
    list may hold a set), any other value wrapped in :class:`_Returned`, or the :class:`LaneFailure` of what it
    raised. The least a lane thread does per call (see :meth:`PythonLane._sync_run`)."""
    try:
        value = function(argument, **kwargs)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt ... raised by host code: this example's error
        return _raised(name, exc, sample, function)
    return value if type(value) in _PLAIN_TYPES else _Returned(value)


def python_call(
    function: Callable[..., Any], name: str, argument: dict[str, Any], kwargs: dict[str, Any], sample: int
) -> LaneOutcome | Awaitable[Any]:
    """One call of a python-lane function and what it produced, in whichever process runs it (a lane thread here,
    a cluster worker there), so both say exactly the same. An awaitable it returned is handed back unawaited."""
    called = python_value(function, name, kwargs, sample, argument)
    if type(called) is LaneFailure:
        return called
    value = called.value if type(called) is _Returned else called
    if inspect.isawaitable(value):
        return value
    return lane_value(value, name, sample)


def shipped_python_call(
    function: Callable[..., Any], name: str, argument: dict[str, Any], kwargs: dict[str, Any], sample: int
) -> LaneOutcome:
    """:func:`python_call` on a cluster worker: an awaitable (an async function shipped on request) is run to its
    end on an event loop of the worker's own. The driver enforces the timeout."""
    called = python_call(function, name, argument, kwargs, sample)
    if isinstance(called, LaneOutput | LaneFailure):
        return called

    async def finish() -> Any:
        return await called

    try:
        value = asyncio.run(finish())
    except BaseException as exc:
        return _raised(name, exc, sample, function)
    return lane_value(value, name, sample)


#: How much of the ``repr`` of an answer that is not JSON is kept as its text (redacted first).
NOT_JSON_TEXT = 2000


def lane_value(value: Any, name: str, sample: int) -> LaneOutput:
    """A host function's return value as an outcome: the value when it is JSON, else the system's wrong answer.

    The function is the system under test, and what it returned is its answer: a set, bytes, an object, NaN or an
    infinity is an answer JSON cannot hold, measured like a live lane's answer that does not parse (an
    :class:`~evalglass.core.outputparse.UnparsedOutput`: every metric's worst value with ``output_not_json``,
    ``json_valid`` 0.0), its ``repr`` kept as its text. It used to be a lane failure (``task_output_unserialisable``,
    an error blocking every gate on a mistake only the system can mend), and orjson alone wrote a NaN or an infinity
    as ``null``, another answer than the one given."""
    problem = json_problem(value)
    if problem is not None:
        message = (
            f"{name} returned a {type(value).__name__} that is not JSON ({problem}); return text, numbers, "
            "booleans, null, lists and mappings with text keys"
        )
        return LaneOutput(UnparsedOutput(shown(value), message, declared=DECLARED_JSON), sample)
    return LaneOutput(value, sample)


def shown(value: Any) -> str:
    """The text kept for an answer that is not JSON: a ``repr`` made the same run after run (a set's items sorted,
    since string hashing is randomised per process; no memory address), redacted and bounded (host code's
    ``__repr__`` may raise)."""
    try:
        text = _stable_repr(value, 0)
    except Exception as exc:
        text = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    return redaction.current().head(text, NOT_JSON_TEXT, "...")


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _stable_repr(value: Any, depth: int) -> str:
    if depth > 20:
        return "..."
    if isinstance(value, set | frozenset):
        items = sorted(_stable_repr(item, depth + 1) for item in value)
        return "{" + ", ".join(items) + "}" if items else f"{type(value).__name__}()"
    if isinstance(value, dict):
        pairs = (f"{_stable_repr(k, depth + 1)}: {_stable_repr(v, depth + 1)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, list | tuple):
        inner = ", ".join(_stable_repr(item, depth + 1) for item in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return _ADDRESS.sub("", repr(value))


def _raised(name: str, exc: BaseException, sample: int, function: Callable[..., Any] | None = None) -> LaneFailure:
    """``task_raised``; the traceback starts at the host function's own frame, so what EvalGlass called it through
    (a lane thread, a cluster worker) is not in it and every executor records the same detail."""
    redactor = redaction.current()
    frames = exc.__traceback__
    code = getattr(function, "__code__", None)
    start = frames
    while start is not None and start.tb_frame.f_code is not code:
        start = start.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, start or frames)).strip()
    return LaneFailure(
        "task_raised",
        f"{name} raised {type(exc).__name__}: {_one_line(exc, redactor)}",
        sample,
        detail=redactor.tail(text, MAX_DETAIL + 1),
    )


def _one_line(exc: BaseException, redactor: Redactor) -> str:
    text = redactor.text(str(exc)).strip().splitlines()
    return redactor.head(text[0] if text else "", 300, "")


__all__ = [
    "NOT_JSON_TEXT",
    "json_problem",
    "lane_value",
    "non_finite",
    "python_call",
    "python_value",
    "shipped_python_call",
    "shown",
]
