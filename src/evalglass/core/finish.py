"""What an API's finish reason says about an answer: declined (:data:`DECLINED`) or cut off at its token limit
(:data:`TRUNCATED`).

Kept apart from ``lanes/chatcall.py`` (which re-exports them) so that a recorded run, which reads a recorded
trajectory's finish reason, does not import the chat call's modules (the call cache, the endpoint specs).
"""

from __future__ import annotations

#: Finish reasons with which an API says the model, or the provider's safety system, declined to answer: OpenAI's
#: ``content_filter``, Anthropic's ``refusal``, Gemini's ``SAFETY``, ``RECITATION``, ``BLOCKLIST``,
#: ``PROHIBITED_CONTENT``, ``SPII``, ``IMAGE_SAFETY`` (also a blocked prompt's ``blockReason``). Such an answer
#: without text is the system's answer, empty (or the text of OpenAI's ``refusal``), measured like any other: the
#: system under test declined, which is what a task lane measures; a judge that declines answers nothing it can
#: read (``judge_unparseable``). Only an answer without text and without any stated reason is malformed.
DECLINED = frozenset(
    {"content_filter", "refusal", "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)


def declined(finish: object) -> bool:
    """Whether ``finish`` (an API's finish reason, as read: any JSON value) is one of :data:`DECLINED`."""
    return type(finish) is str and finish in DECLINED


#: Finish reasons with which an API says the answer was cut off at its token limit: OpenAI's ``length``,
#: Anthropic's ``max_tokens``, Gemini's ``MAX_TOKENS``. Such an answer is the system's, scored as it is (a
#: measurement, not an error), and marked: its finish reason is kept in ``outputs.jsonl`` and each of its scores
#: carries the note ``output_truncated`` (``engine.produce.livescorer``), so a low score is not read as a wrong answer
#: when it is a limit set too low.
TRUNCATED = frozenset({"length", "max_tokens", "MAX_TOKENS"})


def truncated(finish: object) -> bool:
    """Whether ``finish`` (an API's finish reason, as read: any JSON value) is one of :data:`TRUNCATED`."""
    return type(finish) is str and finish in TRUNCATED
