"""What a metric reads from a whole output, and what a task's output is: checked against each other when the config
is loaded (``engine.spec.outputfields``), so a metric that cannot read what the task produces is refused at its line
instead of scoring every example its worst value (or an error) on the config's mistake.

Only the whole output is declared: a metric with ``field`` reads what that field holds, which the output's shape
does not say.
"""

from __future__ import annotations

from enum import StrEnum


class OutputShape(StrEnum):
    """``text``: a metric that reads only text (a string is its input); ``answer``: text, or a value parsed from it
    (what a chat lane answers, a trajectory's ``text``; a metric comparing values); ``trajectory``: a conversation or
    an agent's trajectory (messages, tool calls, usage), which an agent lane produces and a trace record's
    ``output`` is; ``any``: a metric that reads either, or an output that may be either (host code, a command, a
    recorded field)."""

    TEXT = "text"
    ANSWER = "answer"
    TRAJECTORY = "trajectory"
    ANY = "any"


__all__ = ["OutputShape"]
