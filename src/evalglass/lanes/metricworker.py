"""The worker's side of a ``python`` metric (``metrics/hostscoring.py`` is the deciding process's): load the host
function, call it, and say what each call came to as JSON, importing nothing the calls do not need.

Why here and this light. A metric worker is forked from the lanes' clean fork server (``lanes/hostworker.py``) and
imports what its target's module imports: a target in ``evalglass.metrics`` would load that package (its specs,
pydantic) in every worker, about 0.08 s of CPU per metric source before any host code runs. This module needs only
the standard library, ``orjson``, redaction and the lanes' host-code loader. The calling rule's return rule is
applied here as far as it needs no pydantic (:func:`answer_of`); the deciding process turns each answer into a score
and checks its shape (``metrics.hostrules.decoded``): a worker runs code under test, so what it sends is never
trusted.

An answer, per call: a finite float; ``["error", code, message, detail]`` (an ``error`` score: the function raised,
returned what is not a measurement, or ran past its timeout); ``["declined", message]`` (``non_evaluable``,
``host_declined``); a :class:`~evalglass.core.score.Score` the function returned, as its JSON fields (already found
legal here: host code that returns a Score has imported it); or ``"interrupted"`` (the function raised
``KeyboardInterrupt``, which stops the run).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import numbers
import pickle
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evalglass import redaction

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from evalglass.lanes.hostguard import BoundCode, Guard
    from evalglass.lanes.hostworker import LogWriter, _Setting

ARGUMENT_NAMES = ("output", "record", "reference", "example")
#: What a worker answers for a call whose function raised ``KeyboardInterrupt`` (the run stops, as in process).
INTERRUPTED = "interrupted"
#: The code of a call over the metric's ``timeout`` (its worker is ended: the call cannot be stopped).
TIMED_OUT = "metric_timeout"
_TRACEBACK_CHARS = 2000
_PREVIEW_CHARS = 160
_RETURN_HINT = "return a finite number, a Score, or (None, 'reason') to decline"


class SignatureError(ValueError):
    """A function's parameters do not fit the calling rule: the message says how to fix it."""


# ------------------------------------------------------------------------------------- the rules, without pydantic
def call_metric(function: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    """One call of a host metric function and its answer (see the module doc); ``KeyboardInterrupt`` propagates."""
    try:
        result = function(**arguments)
    except (Exception, SystemExit) as exc:
        return raised(exc)
    if type(result) is float and math.isfinite(result):
        return result
    return answer_of(result)


def answer_of(result: Any) -> Any:
    """What a value the function returned comes to, as an answer (the calling rule's return rule)."""
    if type(result) is float and math.isfinite(result):
        return result
    scores = sys.modules.get("evalglass.core.score")  # loaded when host code made a Score: nothing to import
    if scores is not None and isinstance(result, scores.Score):
        why = scores.score_violation(result.status, result.validity, result.value, bool(result.diagnostics))
        if why is not None:
            return bad_return(f"returned an illegal Score ({why})", result)
        return result.model_dump(mode="json")
    if isinstance(result, bool) or type(result).__name__ in {"bool", "bool_"}:
        return bad_return("returned a bool, which is not a measurement; return 1.0 or 0.0", result)
    if isinstance(result, numbers.Real):
        try:
            value = float(result)
        except (OverflowError, TypeError, ValueError):
            return bad_return("returned a number that does not fit a float", result)
        if not math.isfinite(value):
            return bad_return(f"returned {value!r}; a measurement must be finite", result)
        return value
    if isinstance(result, tuple) and len(result) == 2 and result[0] is None:
        reason = result[1]
        if isinstance(reason, str) and reason.strip():
            return ["declined", one_line(reason)]
        return bad_return("declined without a reason; return (None, 'a non-empty reason')", result)
    if result is None:
        return bad_return(f"returned None (a missing 'return'?); {_RETURN_HINT}", result)
    return bad_return(f"returned a {type(result).__name__}; {_RETURN_HINT}", result)


def bad_return(message: str, result: Any) -> list[Any]:
    return ["error", "host_bad_return", f"the metric function {message}", preview(result)]


def raised(exc: BaseException) -> list[Any]:
    """``host_raised`` with the exception type and message, and the traceback tail as detail (both redacted
    before they are cut)."""
    redactor = redaction.current()
    said = redactor.text(str(exc))
    text = one_line(said)
    message = f"{type(exc).__name__}: {text}" if said.strip() else type(exc).__name__
    tail = "".join(traceback.format_exception(exc)[-6:]).strip()
    return ["error", "host_raised", f"the metric function raised {message}", redactor.tail(tail, _TRACEBACK_CHARS, "")]


def timed_out(timeout: float) -> list[Any]:
    return ["error", TIMED_OUT, f"the metric function did not return within {timeout:g}s", None]


def preview(value: Any) -> str:
    """A bounded repr for diagnostics: outputs can be megabytes long, reports should not be."""
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    return clip(text)


def clip(text: str, limit: int = _PREVIEW_CHARS) -> str:
    """``text``, redacted (see ``evalglass.redaction``), then cut to ``limit`` characters with an ellipsis when it
    was longer."""
    return redaction.current().head(text, limit, "...")


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace so a message (e.g. from a parser) fits the one-line diagnostics and error style."""
    return clip(" ".join(text.split()), limit) or "(no message)"


def wanted_arguments(signature: inspect.Signature, where: str, *, has_reference: bool) -> tuple[str, ...]:
    """The argument names to pass, checked once at load time against the calling rule (:class:`SignatureError`)."""
    offered = tuple(name for name in ARGUMENT_NAMES if has_reference or name != "reference")
    wanted: list[str] = []
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_KEYWORD:
            return offered
        if parameter.kind is parameter.VAR_POSITIONAL or parameter.default is not parameter.empty:
            if parameter.name in offered and parameter.kind is not parameter.POSITIONAL_ONLY:
                wanted.append(parameter.name)
            continue
        problem = _unfillable(parameter, has_reference)
        if problem:
            raise SignatureError(f"python metric: {where} {problem}")
        wanted.append(parameter.name)
    if not wanted:
        raise SignatureError(
            f"python metric: {where} takes none of {', '.join(ARGUMENT_NAMES)}; "
            "declare at least one, e.g. 'def metric(output)'"
        )
    return tuple(wanted)


def _unfillable(parameter: inspect.Parameter, has_reference: bool) -> str:
    """Why a required parameter cannot be given a value, or an empty string when it can."""
    name = parameter.name
    if parameter.kind is parameter.POSITIONAL_ONLY:
        return f"has positional-only parameter {name!r}, but arguments are passed by keyword; remove the '/'"
    if name not in ARGUMENT_NAMES:
        return (
            f"has parameter {name!r}, which cannot be filled: parameters are matched by name from "
            f"{', '.join(ARGUMENT_NAMES)}; rename it or give it a default"
        )
    if name == "reference" and not has_reference:
        return "takes 'reference' but the metric sets no 'reference:' path; add one or drop the parameter"
    return ""


# ---------------------------------------------------------------------------------------------- the worker's life
def serve_metrics(
    conn: Connection,
    alive: Connection,
    base_dir: str,
    secrets: tuple[str, ...],
    setting: _Setting,
    path: list[str],
    guarded: BoundCode | None,
    log: int,
) -> None:
    """A metric worker's life: answer ``load`` and ``score`` requests until the pipe closes, then end as an
    interpreter does (see :func:`_end`). A request is a pickle (the deciding process trusts what it sends). A gated
    source's worker loads and calls under ``lanes.hostguard``'s rule (``guarded``): once it refused unbound project
    code, every call answers that error. ``log``: the file of the deciding process's answer log
    (``hostworker.AnswerLog``), mapped before any host code loads."""
    from evalglass.lanes.hostworker import LogWriter, enter_worker

    enter_worker(alive, secrets, setting)
    writer = LogWriter(log)
    sys.path[:] = path  # the deciding process's import path, as the function would have had it there
    guard = None
    if guarded is not None:
        from evalglass.lanes.hostguard import install

        guard = install(*guarded)
    functions: list[Callable[..., Any] | None] = []
    batch = _Batch(conn, guard, writer)
    try:
        while True:
            request = pickle.loads(conn.recv_bytes())
            if request[0] == "load":
                answer = _load(request[1], Path(base_dir), request[2], functions)
                if guard is not None and guard.refused and "error" in answer:
                    # The load failed on what was refused: its calls say so (the gate blocks), not the run's end.
                    functions.append(None)
                    answer = {"index": len(functions) - 1, "wanted": ["output"]}
                conn.send_bytes(orjson.dumps(answer))
                continue
            _, index, columns, count, timeout, added = request
            if added:
                sys.path[:0] = [entry for entry in added if entry not in sys.path]
            batch.run(functions[index], columns, count, timeout)
    except (EOFError, OSError):  # the deciding process closed the pipe (or is gone): nothing is left to answer
        _end()


class _Batch:
    """Makes a batch of calls and sends their answers in one message; each answer is also logged as soon as its
    call returns (``hostworker.AnswerLog``: shared memory, no message), so a worker that ends mid-batch leaves every
    answer it made to the deciding process, which marks only the call in flight and sends the rest to a fresh
    worker. A call over its timeout is seen by the worker's :class:`~evalglass.lanes.hostworker.Watchdog`, which
    sends the answers before it and that call's ``metric_timeout``, and ends the worker; the deciding process scores
    the rest of the batch on a fresh one."""

    def __init__(self, conn: Connection, guard: Guard | None, writer: LogWriter) -> None:
        from evalglass.lanes.hostworker import Watchdog  # not at module level: the metrics' text helpers live here

        self.conn, self.guard, self.writer = conn, guard, writer
        self.answers: list[Any] = []
        self.watch = Watchdog(conn, self._expired)

    def run(
        self, function: Callable[..., Any] | None, columns: dict[str, list[Any]], count: int, timeout: float | None
    ) -> None:
        guard = self.guard
        refusal = guard.answer() if guard is not None else None
        if function is None or refusal is not None:
            self.conn.send_bytes(orjson.dumps([refusal] * count))
            return
        names = tuple(columns)
        answers: list[Any] = []
        append, watch, monotonic = answers.append, self.watch, time.monotonic
        writer = self.writer
        write, dumps, newline = writer.write, orjson.dumps, orjson.OPT_APPEND_NEWLINE
        self.answers = answers
        writer.begin()
        watch.begin(timeout)
        for index, values in enumerate(zip(*columns.values(), strict=True) if names else [()] * count):
            watch.index, watch.started = index, monotonic()
            try:
                answer = call_metric(function, dict(zip(names, values, strict=True)))
            except KeyboardInterrupt:
                answer = INTERRUPTED
            append(answer)
            if guard is not None and guard.refused:
                # The batch's every answer is then the refusal (below): logged as such, a log holding it is read so
                # (``hostscoring.MetricWorker``).
                answer = guard.answer()
            line = dumps(answer, option=newline)
            try:
                write(line)  # the fast path of ``writer.add``: one copy
            except ValueError:
                writer.add(line)
        if watch.finish():
            refusal = guard.answer() if guard is not None else None
            self.conn.send_bytes(orjson.dumps(answers if refusal is None else [refusal] * count))

    def _expired(self, index: int, timeout: float) -> bytes:
        refusal = self.guard.answer() if self.guard is not None else None
        made = self.answers[:index] if refusal is None else [refusal] * index
        return orjson.dumps([*made, timed_out(timeout)])


def _end() -> None:
    """What an interpreter does before it exits, which a forked worker would skip: wait for host code's non-daemon
    threads, run its ``atexit`` hooks, flush what it printed."""
    import atexit

    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _load(
    reference: str, base_dir: Path, has_reference: bool, functions: list[Callable[..., Any] | None]
) -> dict[str, Any]:
    from evalglass.lanes.hostload import HostLoadError, load_function

    try:
        function = load_function(reference, base_dir)
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            raise SignatureError(
                f"python metric: cannot read the parameters of {reference}; wrap it in a plain 'def'"
            ) from None
        wanted = wanted_arguments(signature, reference, has_reference=has_reference)
    except (HostLoadError, SignatureError) as exc:
        return {"error": str(exc)}
    functions.append(function)
    return {"index": len(functions) - 1, "wanted": list(wanted)}


__all__ = [
    "INTERRUPTED",
    "TIMED_OUT",
    "SignatureError",
    "answer_of",
    "call_metric",
    "clip",
    "one_line",
    "preview",
    "serve_metrics",
    "timed_out",
    "wanted_arguments",
]
