"""The calling and return rules of a ``python`` metric (``metrics/host.py`` states them): which arguments a function
is given, and what whatever it returns, or raises, comes to. Apart from the spec so that a metric's worker process
(``metrics/hostscoring.py``), where the function is called, and the deciding process, which checks each answer the
worker sends by the same :func:`interpret`, share one piece of code without importing each other.
"""

from __future__ import annotations

import inspect
import math
import numbers
import traceback
from collections.abc import Callable
from typing import Any

from evalglass import redaction
from evalglass.core.score import Score, score_violation
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.support import one_line, preview

MetricResult = float | Score

ARGUMENT_NAMES = ("output", "record", "reference", "example")
_TRACEBACK_CHARS = 2000
_RETURN_HINT = "return a finite number, a Score, or (None, 'reason') to decline"


def call_host(function: Callable[..., Any], arguments: dict[str, Any]) -> MetricResult:
    """One call of a host metric function and what it comes to (the calling rule's return rule); the one place
    a python metric's function is called, in its worker process or on a cluster worker. ``KeyboardInterrupt``
    propagates."""
    try:
        result = function(**arguments)
    except (Exception, SystemExit) as exc:
        return raised(exc)
    return interpret(result)


def wanted_arguments(signature: inspect.Signature, where: str, *, has_reference: bool) -> tuple[str, ...]:
    """The argument names to pass, checked once at build time against the calling rule."""
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
            raise MetricLoadError(f"python metric: {where} {problem}")
        wanted.append(parameter.name)
    if not wanted:
        raise MetricLoadError(
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


def interpret(result: Any) -> MetricResult:
    """Turn whatever the host returned into a legal result, or an ``error`` saying what was wrong with it."""
    if type(result) is float and math.isfinite(result):
        return result
    if isinstance(result, Score):
        why = score_violation(result.status, result.validity, result.value, bool(result.diagnostics))
        return result if why is None else bad_return(f"returned an illegal Score ({why})", result)
    if isinstance(result, bool) or type(result).__name__ in {"bool", "bool_"}:
        return bad_return("returned a bool, which is not a measurement; return 1.0 or 0.0", result)
    if isinstance(result, numbers.Real):
        return _real(result)
    if isinstance(result, tuple) and len(result) == 2 and result[0] is None:
        reason = result[1]
        if isinstance(reason, str) and reason.strip():
            return Score.non_evaluable("host_declined", one_line(reason))
        return bad_return("declined without a reason; return (None, 'a non-empty reason')", result)
    if result is None:
        return bad_return(f"returned None (a missing 'return'?); {_RETURN_HINT}", result)
    return bad_return(f"returned a {type(result).__name__}; {_RETURN_HINT}", result)


def _real(result: numbers.Real) -> MetricResult:
    try:
        value = float(result)
    except (OverflowError, TypeError, ValueError):
        return bad_return("returned a number that does not fit a float", result)
    if not math.isfinite(value):
        return bad_return(f"returned {value!r}; a measurement must be finite", result)
    return value


def bad_return(message: str, result: Any) -> Score:
    return Score.error("host_bad_return", f"the metric function {message}", detail=preview(result))


def raised(exc: BaseException) -> Score:
    """``host_raised`` with the exception type and message, and the traceback tail as detail (both redacted
    before they are cut)."""
    redactor = redaction.current()
    said = redactor.text(str(exc))
    text = one_line(said)
    message = f"{type(exc).__name__}: {text}" if said.strip() else type(exc).__name__
    tail = "".join(traceback.format_exception(exc)[-6:]).strip()
    detail = redactor.tail(tail, _TRACEBACK_CHARS, "")
    return Score.error("host_raised", f"the metric function raised {message}", detail=detail)
