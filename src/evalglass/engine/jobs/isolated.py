"""A run in a forked copy of the calling process: what ``evalglass.run()`` (and so the pytest plugin) does.

Host code runs in the process that runs the evaluation, and some of what it can do ends that process without an
exception (``os._exit(0)``, ``exit(0)`` from C, a signal). In the caller's own process that would end the caller: a
pytest session or a CI script exiting 0 with nothing decided. So the run happens in a supervised child
(:mod:`evalglass.supervisor`): the same function on a copy of the caller's memory (its ``sys.path``, its imported
modules, every object passed in), which reports the folder it wrote and its warnings, or the error it ended with;
the caller then reads the artifacts from that folder, as ``load_run`` would. A child that ends without a report is
a :class:`SetupError` naming the host code that was running (:class:`Interrupted` when a stop signal reached the
caller meanwhile).

Limits: what host code changes in the child (its module's globals, a cache it fills) stays there; an error the
child ends with comes back as its message (a ``SetupError`` subclass as ``SetupError``, an unexpected exception as a
``SetupError`` naming its type); a process that cannot fork (Windows) runs in place, unprotected. The fork copies a
caller's threads' memory but not the threads: a caller whose other threads hold locks the run needs (rare: the
run's own modules and C libraries are fork-safe) is the documented hazard of ``fork``; ``isolate=False`` avoids it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalglass import redaction, supervisor
from evalglass.engine.jobs.pipeline import RunInterrupted, RunOutcome
from evalglass.engine.runs.artifacts import load_runrecord, load_scorecard
from evalglass.errors import Interrupted, SetupError, SetupErrors

#: The longest text of one problem or warning a report carries.
_TEXT_LIMIT = 600


def run_apart(work: Callable[[], RunOutcome]) -> RunOutcome:
    """``work()`` (a run) in a supervised child, its outcome read back here; in place when this process is itself
    supervised (the command line's child) or cannot fork."""
    if supervisor.supervised() or not supervisor.can_supervise():
        return work()
    supervision = supervisor.fork(main_thread=threading.current_thread() is threading.main_thread())
    if supervision is None:
        supervisor.in_child(lambda: _outcome_report(work()), _error_report)
    ending = supervision.wait()
    try:
        report = json.loads(ending.report) if ending.report is not None else None
    except ValueError:
        report = None
    if not isinstance(report, dict):
        if ending.stopped:
            raise Interrupted(f"interrupted: {ending.died()}")
        raise SetupError(ending.died())
    return _outcome_of(report)


def _outcome_report(outcome: RunOutcome) -> bytes:
    return _fit({"folder": str(outcome.folder), "warnings": [_cut(line) for line in outcome.warnings]}, "warnings")


def _error_report(exc: BaseException) -> bytes:
    if isinstance(exc, RunInterrupted):
        fields = {"folder": str(exc.folder), "done": exc.done, "total": exc.total, "reason": exc.reason}
        return _fit({"interrupted": {**fields, "warnings": [_cut(line) for line in exc.warnings]}}, "warnings")
    if isinstance(exc, SetupError):
        problems = [_problem(problem) for problem in (exc.problems if isinstance(exc, SetupErrors) else (exc,))]
        return _fit({"setup": problems, "warnings": [_cut(line) for line in exc.warnings]}, "setup")
    if isinstance(exc, Interrupted | KeyboardInterrupt):
        return _fit({"interrupted": None}, "")
    said = redaction.current().text(f"{type(exc).__name__}: {exc}")
    return _fit({"internal": _cut(said)}, "")


def _problem(error: SetupError) -> dict[str, str | None]:
    cut = _cut
    return {"what": cut(error.what), "where": cut(error.where or "") or None, "fix": cut(error.fix or "") or None}


def _cut(text: str) -> str:
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"


def _fit(payload: dict[str, Any], shrinking: str) -> bytes:
    """The report as JSON within the supervisor's limit: the list under ``shrinking`` loses its last entries
    (the first say what matters) until it fits."""
    while True:
        data = json.dumps(payload).encode()
        entries = _find_list(payload, shrinking)
        if len(data) <= supervisor.REPORT_LIMIT or entries is None or len(entries) <= 1:
            return data
        entries.pop()


def _find_list(payload: dict[str, Any], key: str) -> list[Any] | None:
    if not key:
        return None
    for value in (payload, *(item for item in payload.values() if isinstance(item, dict))):
        found = value.get(key)
        if isinstance(found, list):
            return found
    return None


def _outcome_of(report: dict[str, Any]) -> RunOutcome:
    """What the child's report says, here: the run read from its folder, or the error it ended with."""
    if "folder" in report:
        folder = Path(report["folder"])
        warnings = tuple(report.get("warnings") or ())
        return RunOutcome(
            folder=folder, scorecard=load_scorecard(folder), record=load_runrecord(folder), warnings=warnings
        )
    if "setup" in report:
        problems = [SetupError(item["what"], where=item["where"], fix=item["fix"]) for item in report["setup"]]
        error = problems[0] if len(problems) == 1 else SetupErrors(problems)
        error.warnings = tuple(report.get("warnings") or ())
        raise error
    if "interrupted" in report:
        stop = report["interrupted"]
        if stop is None:
            raise Interrupted()
        raise RunInterrupted(
            Path(stop["folder"]), stop["done"], stop["total"], stop["reason"], warnings=tuple(stop["warnings"])
        )
    raise SetupError(f"internal error: {report.get('internal', 'no report')} (rerun with the CLI's --debug)")


__all__ = ["run_apart"]
