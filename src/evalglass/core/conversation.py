"""Messages, tool calls and the record an imported trace becomes: one internal shape, whatever the source.

The shape follows the OpenTelemetry GenAI conventions' message form (a role and a list of typed parts: text, a tool
call with its arguments, a tool call's response), so that spans written under any convention (current ``gen_ai.*``,
the pre-1.36 events and attributes, OpenInference) and other tools' transcripts map onto one thing metrics, judges
and host code read the same way.

Records are built as plain JSON objects on the hot path (a pydantic object per span would cost more than parsing
the span); these frozen models are their declared form: their JSON Schema is what the reader promises
(``evalglass schema trace-record``), and tests validate what the reader produces against them.

**Missing is not empty.** Content the instrumentation did not capture (message content is opt-in in every
convention) is left out of the record, never written as ``""`` or ``[]``, and its path is listed in
``not_captured``: a metric that needs it is ``non_evaluable`` with ``content_not_captured``
(:func:`uncaptured_overlap` says whether a path a metric reads is one of them).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from evalglass.core.notcaptured import NOT_CAPTURED, uncaptured_overlap


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class TextPart(_Frozen):
    type: Literal["text"] = "text"
    content: str


class ToolCallPart(_Frozen):
    """A model's request to call a tool. ``arguments`` is absent when not captured, or when the model sent text that
    is not JSON (kept as ``invalid_arguments``)."""

    type: Literal["tool_call"] = "tool_call"
    id: str | None = None
    name: str
    arguments: JsonValue = None
    invalid_arguments: str | None = Field(
        default=None, description="The arguments as the model sent them, when they are not JSON."
    )


class ToolCallResponsePart(_Frozen):
    """A tool's answer, as the next request gave it to the model."""

    type: Literal["tool_call_response"] = "tool_call_response"
    id: str | None = None
    response: JsonValue = None
    error: bool | None = Field(default=None, description="True when the response reports the tool's failure.")


class OtherPart(_Frozen):
    """Any other part a convention defines (``reasoning``, ``blob``, ``uri``, ...), kept as it came."""

    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)

    type: str = Field(min_length=1, description="Not text, tool_call or tool_call_response: those have their shape.")

    @field_validator("type")
    @classmethod
    def _not_a_known_kind(cls, kind: str) -> str:
        if kind in ("text", "tool_call", "tool_call_response"):
            raise ValueError(f"a {kind} part does not have the shape its type requires")
        return kind


Part = Annotated[TextPart | ToolCallPart | ToolCallResponsePart | OtherPart, Field(union_mode="left_to_right")]


class Message(_Frozen):
    role: str = Field(description="system, user, assistant, tool, or what the source named.")
    parts: tuple[Part, ...] = ()
    name: str | None = None
    finish_reason: str | None = Field(default=None, description="On an output message: why generation stopped.")


class ToolDefinition(_Frozen):
    type: str = "function"
    name: str
    description: str | None = None
    parameters: JsonValue = None


class ToolCall(_Frozen):
    """One tool call of the trajectory: from a tool-execution span, or from the messages when no span ran it.

    ``arguments`` and ``result`` are absent when not captured (``not_captured`` then lists
    ``output.tool_calls.arguments`` / ``output.tool_calls.result``)."""

    id: str | None = None
    name: str
    arguments: JsonValue = None
    invalid_arguments: str | None = Field(
        default=None, description="The arguments as the model sent them, when they are not JSON (no tool ran)."
    )
    result: JsonValue = None
    error_type: str | None = Field(
        default=None,
        description="Why the call failed: a trace's `error.type`; from an agent lane, the exception's type for a tool "
        "that raised, or `unknown_tool`, `arguments_not_json`, `arguments_rejected`, `tool_timeout`, "
        "`result_not_json`, `no_recorded_result`.",
    )
    error: str | None = Field(default=None, description="What the failed call told the model.")
    span_id: str | None = Field(default=None, description="The tool-execution span, when one recorded the call.")


class Usage(_Frozen):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class TraceInput(_Frozen):
    """What the system was given."""

    messages: tuple[Message, ...] = ()
    system_instructions: tuple[Part, ...] = ()
    tool_definitions: tuple[ToolDefinition, ...] = ()
    model: str | None = Field(default=None, description="The model requested.")


class TraceOutput(_Frozen):
    """What the system produced: the output a metric measures (``field: text`` for the answer's text)."""

    text: str | None = Field(
        default=None,
        description="The text parts of the last output message, joined; absent when the output was not captured.",
    )
    messages: tuple[Message, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reasons: tuple[str, ...] = ()
    model: str | None = Field(default=None, description="The model that answered.")
    response_id: str | None = None
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float | None = None
    error_type: str | None = Field(default=None, description="`error.type`, or the span status's error.")


class Trajectory(TraceOutput):
    """What an agent did, as an agent lane records it (``evalglass schema trajectory``): the whole conversation, the
    rendered prompt first (``messages``), every tool call with its result or error (``tool_calls``), and how it
    ended. A trace record's ``output`` is read the same way, so metrics on trajectories read either."""

    finish: str | None = Field(
        default=None,
        description="Why the trajectory ended: `stop` (the model answered without calling a tool), `max_steps` (the "
        "step budget ran out while the model still called tools), or the model's own finish reason (`length`...).",
    )
    steps: int | None = Field(default=None, ge=0, description="Model turns taken (each with the calls it made).")
    final_state: JsonValue = Field(
        default=None, description="The state the tools left behind (absent when no tool keeps state)."
    )
    cost: float | None = Field(
        default=None,
        description="What the trajectory's model calls cost, from the config's `prices:`; absent (and listed in "
        "`not_recorded`) when a model call did not report the tokens it is priced from.",
    )
    not_recorded: tuple[str, ...] = Field(
        default=(),
        description="Totals left out because a model call did not report them (`usage.input_tokens`, `cost`...): "
        "never a sum over the calls that did. A metric reading one is non_evaluable `not_recorded`. Its absence "
        "proves nothing a recorded file could not claim: see docs/agents.md.",
    )


class TraceRecord(_Frozen):
    """One example read from traces: the span it is rooted at, what went in and what came out."""

    id: str = Field(description="`<trace id>:<span id>` of the example's span: stable across re-exports.")
    trace_id: str
    span_id: str
    name: str
    operation: str | None = Field(default=None, description="`gen_ai.operation.name`, or the OpenInference kind.")
    provider: str | None = None
    start_time_unix_nano: int
    convention: Literal["gen_ai", "gen_ai_pre_1_36", "openinference"]
    input: TraceInput
    output: TraceOutput
    metadata: dict[str, JsonValue] = Field(default_factory=dict, description="Attributes the mapping copies.")
    not_captured: tuple[str, ...] = Field(
        default=(), description="Paths of content the instrumentation did not capture (absent from the record)."
    )


__all__ = [
    "NOT_CAPTURED",
    "Message",
    "OtherPart",
    "Part",
    "TextPart",
    "ToolCall",
    "ToolCallPart",
    "ToolCallResponsePart",
    "ToolDefinition",
    "TraceInput",
    "TraceOutput",
    "TraceRecord",
    "Trajectory",
    "Usage",
    "uncaptured_overlap",
]
