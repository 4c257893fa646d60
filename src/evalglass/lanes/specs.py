"""The declarations of live lanes and endpoints: validated config, no network, no template engine at import.

These models are what ``evalglass.yaml`` holds under ``task:`` (the judge metric's spec, which shares
:class:`EndpointSpec`, is in ``evalglass.metrics.llm_judge``). They live
apart from the clients that act on them (``chat``, ``task``, ``judge``) so that loading a config for a recorded run
needs neither the ``openai`` SDK nor Jinja2; a template is compiled (to report a syntax error at load time) only
when one is declared, and a missing ``live`` extra then says how to install it.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import re
import shlex
from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_serializer, field_validator, model_validator

from evalglass.core.endpoint import serving_origin
from evalglass.core.outputshape import OutputShape

if TYPE_CHECKING:
    from evalglass.lanes.executor import EndpointLimit


def check_template(source: str, *, where: str) -> None:
    """Compile once at load time so a Jinja2 syntax error is a config error, not a per-example failure."""
    try:
        from evalglass.lanes.templating import compile_template
    except ImportError as exc:
        from evalglass.dependencies import install_hint

        raise ValueError(f"{where} needs {exc.name or 'Jinja2'}: {install_hint(exc.name)}") from None
    compile_template(source, where=where)


# ---------------------------------------------------------------------- retries
# The declarations only; the retry loop is in ``retry``, which needs asyncio (a recorded run does not).
class FaultKind(StrEnum):
    """Why an attempt produced no value. The value is also the diagnostic code suffix (``call_<kind>``)."""

    CONNECTION = "connection"  # refused, reset, dropped before an answer
    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"  # HTTP 429
    SERVER_ERROR = "server_error"  # HTTP 5xx
    CLIENT_ERROR = "client_error"  # HTTP 4xx other than 400/408/429
    INVALID_REQUEST = "invalid_request"  # HTTP 400, or a request we refuse to send
    MALFORMED_RESPONSE = "malformed_response"  # an answer that is not the expected JSON
    CONFIGURATION = "configuration"  # e.g. the API key's environment variable is not set
    INTERNAL = "internal"  # the attempt function raised


#: Retried unless a policy says otherwise.
TRANSIENT_KINDS: frozenset[FaultKind] = frozenset(
    {FaultKind.CONNECTION, FaultKind.TIMEOUT, FaultKind.RATE_LIMITED, FaultKind.SERVER_ERROR}
)


class RetryPolicy(BaseModel):
    """How hard to try. Declared in config as ``retry:`` on a chat lane or a judge."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    max_attempts: int = Field(default=4, ge=1, le=100, description="Attempts in total, the first one included.")
    initial_delay: float = Field(default=0.5, ge=0, description="Backoff ceiling for the first retry, seconds.")
    multiplier: float = Field(default=2.0, ge=1)
    max_delay: float = Field(default=30.0, ge=0, description="Backoff ceiling never exceeds this, seconds.")
    max_retry_after: float = Field(
        default=120.0,
        ge=0,
        description="A Retry-After longer than this ends the call instead of stalling the run, seconds.",
    )
    retry_on: frozenset[FaultKind] = Field(default=TRANSIENT_KINDS, description="Fault kinds worth another attempt.")

    @model_validator(mode="after")
    def _never_retry_permanent(self) -> "RetryPolicy":
        forbidden = self.retry_on & {FaultKind.CONFIGURATION, FaultKind.INTERNAL, FaultKind.INVALID_REQUEST}
        if forbidden:
            names = ", ".join(sorted(kind.value for kind in forbidden))
            raise ValueError(f"retry_on cannot include permanent faults ({names})")
        return self

    @field_serializer("retry_on", when_used="json")
    def _retry_on_in_order(self, kinds: frozenset[FaultKind]) -> list[str]:
        """In a fixed order: a set's order changes between processes, and a variant's lane (retry policy and all)
        is part of every gate's fingerprint in a run with variants."""
        return sorted(kind.value for kind in kinds)

    def backoff_ceiling(self, retry_number: int) -> float:
        """Upper bound of the jittered delay before retry ``retry_number`` (1 = the first retry)."""
        return float(min(self.max_delay, self.initial_delay * self.multiplier ** (retry_number - 1)))


# ---------------------------------------------------------------------- endpoints
class Provider(StrEnum):
    """Which wire format an endpoint speaks (docs/providers.md)."""

    OPENAI = "openai"  # chat completions, and every server compatible with it
    ANTHROPIC = "anthropic"  # the Messages API
    GEMINI = "gemini"  # the Gemini API's generateContent


#: The key's variable when a config names none.
DEFAULT_KEY_ENV: dict[Provider, str] = {
    Provider.OPENAI: "OPENAI_API_KEY",
    Provider.ANTHROPIC: "ANTHROPIC_API_KEY",
    Provider.GEMINI: "GEMINI_API_KEY",
}

#: Declared fields a provider's API has no parameter for: refused at load rather than silently not sent.
_UNSUPPORTED: dict[Provider, tuple[str, ...]] = {
    Provider.OPENAI: (),
    Provider.ANTHROPIC: ("seed", "json_mode"),
    Provider.GEMINI: (),
}


class EndpointSpec(BaseModel):
    """Fields every model endpoint declares (chat task lanes and LLM judges), whichever API it speaks."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    provider: Provider = Field(
        default=Provider.OPENAI,
        description="The API the endpoint speaks: `openai` (chat completions, and compatible servers), `anthropic` "
        "(Messages API) or `gemini` (generateContent).",
    )
    base_url: str = Field(
        description="e.g. https://api.openai.com/v1, https://api.anthropic.com/v1, "
        "https://generativelanguage.googleapis.com/v1beta or http://127.0.0.1:8000/v1"
    )
    model: str = Field(min_length=1)
    api_key_env: str | None = Field(
        default="OPENAI_API_KEY",
        description="Name of the environment variable holding the API key (default per provider: OPENAI_API_KEY, "
        "ANTHROPIC_API_KEY, GEMINI_API_KEY); null for keyless local servers.",
    )
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    json_mode: bool = Field(default=False, description="Ask for response_format json_object.")
    timeout: float = Field(default=60.0, gt=0, description="Seconds for one attempt (connect + answer).")
    concurrency: int | None = Field(default=None, ge=1, description="Calls in flight to this base_url at most.")
    rpm: float | None = Field(default=None, gt=0, description="Requests per minute to this base_url at most.")
    retry: RetryPolicy = Field(default_factory=RetryPolicy)

    @model_validator(mode="before")
    @classmethod
    def _provider_key_env(cls, data: Any) -> Any:
        """The default key variable is the provider's own (an explicit ``api_key_env``, null included, wins)."""
        if isinstance(data, dict) and "api_key_env" not in data and data.get("provider") not in (None, "openai"):
            try:
                return {**data, "api_key_env": DEFAULT_KEY_ENV[Provider(data["provider"])]}
            except ValueError:
                return data  # an unknown provider: the field's own error names it
        return data

    @model_validator(mode="after")
    def _provider_parameters(self) -> "EndpointSpec":
        unsupported = [name for name in _UNSUPPORTED[self.provider] if getattr(self, name) not in (None, False)]
        if unsupported:
            raise ValueError(
                f"provider {self.provider.value} has no parameter for {', '.join(unsupported)}: remove it, or use "
                "a provider whose API has it"
            )
        if self.provider is Provider.ANTHROPIC and self.max_tokens is None:
            raise ValueError("provider anthropic needs max_tokens (the Messages API requires it): declare max_tokens")
        return self

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"base_url must be an http:// or https:// URL, got {value!r}")
        # Where a judge is served is bound by a gate approval in this canonical form: a URL it cannot read (a port
        # that is not a number) is refused here, once, rather than when the run asks where the judge is served.
        serving_origin(Provider.OPENAI.value, value)
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", value):
            raise ValueError(
                f"api_key_env must be the NAME of an environment variable (e.g. OPENAI_API_KEY), got {value[:4]!r}…"
                if len(value) > 8
                else f"api_key_env must be the NAME of an environment variable, got {value!r}"
            )
        return value

    def sampling(self) -> dict[str, Any]:
        """The sampling parameters sent with every request (only those declared)."""
        params: dict[str, Any] = {}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.seed is not None:
            params["seed"] = self.seed
        if self.stop is not None:
            params["stop"] = list(self.stop)
        if self.json_mode:
            params["response_format"] = {"type": "json_object"}
        return params

    def endpoint_limit(self) -> "EndpointLimit":
        from evalglass.lanes.executor import EndpointLimit

        return EndpointLimit(key=self.base_url, concurrency=self.concurrency, rpm=self.rpm)


# ---------------------------------------------------------------------- task lanes
class _LaneFields(BaseModel):
    """What python and command lanes share. What the engine needs to know of a lane type beyond its lane class it
    asks the spec (``shippable``, :meth:`tokens_model`), so no engine module tests which type a lane is."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    #: Its calls run host code or commands, which a cluster executor ships to its workers (``executor.overrides``
    #: may name it as ``task``). A model call is I/O that stays on the driver.
    shippable: ClassVar[bool] = True

    description: str | None = None
    epochs: int = Field(default=1, ge=1, le=10_000, description="Samples per example: indexes 0..epochs-1.")
    parse: Literal["json"] | None = Field(
        default=None, description="`json`: parse a JSON-text output before metrics see it (see docs/config.md)."
    )

    def samples(self) -> range:
        return range(self.epochs)

    def tokens_model(self) -> str | None:
        """The model whose token usage this lane's calls report (None: its calls use no tokens)."""
        return None

    def priced_model(self) -> str | None:
        """The model whose ``prices:`` entry prices this lane's outputs (an agent's trajectory holds a ``cost``);
        None: no output of it holds a price the config sets."""
        return None

    def unrecorded_field(self, field: str, priced: Iterable[str]) -> str | None:
        """Why no output of this lane holds the top-level field ``field`` (None: it may; ``priced``, the models
        ``prices:`` names). Host code answers what it likes."""
        return None

    def output_shape(self) -> OutputShape:
        """What its whole output is (``core.outputshape``): host code and commands answer what they like."""
        return OutputShape.ANY

    def host_reference(self) -> str:
        """What this lane runs, as the config names it: the name the supervisor gives when the process dies while
        the lane's calls are in flight (evalglass/hostwatch.py)."""
        raise NotImplementedError

    def host_functions(self) -> tuple[str, ...]:
        """The host Python functions this lane calls (``file.py:function``, ``module:function``): they run in host
        worker processes, whose fork server a run starts early when there are any."""
        return ()

    def record_inputs(self) -> list[tuple[str, str]]:
        """The record fields this lane reads by name, each with how (``its prompt``): none for host code, which is
        given the whole record as gold sees it, without any recorded output (docs/config.md "What gold covers")."""
        return []


class PythonLaneSpec(_LaneFields):
    type: Literal["python"]
    function: str = Field(description="module:function or path/to/file.py:function; sync or async.")
    timeout: float | None = Field(default=None, gt=0, description="Seconds per call; none by default.")
    concurrency: int | None = Field(default=None, ge=1, description="Calls of this function in flight at most.")
    cache: bool = Field(default=False, description="Cache outputs (keyed by the function's source file hash).")

    @field_validator("function")
    @classmethod
    def _function_ref(cls, value: str) -> str:
        return function_reference(value)

    def host_reference(self) -> str:
        return self.function

    def host_functions(self) -> tuple[str, ...]:
        return (self.function,)


def function_reference(value: str) -> str:
    """``value`` when it names a host function (``package.module:function``, ``file.py:function``)."""
    target, sep, name = value.rpartition(":")
    if not sep or not target or not name or not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"function must look like 'package.module:function' or 'file.py:function', got {value!r}")
    return value


class CommandLaneSpec(_LaneFields):
    type: Literal["command"]
    argv: tuple[str, ...] = Field(min_length=1, description="Program and arguments; no shell.")
    output: Literal["json", "text"] = "text"
    timeout: float = Field(default=60.0, gt=0)
    cwd: str | None = Field(default=None, description="Working directory, relative to the evals folder.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")
    concurrency: int | None = Field(default=None, ge=1)
    cache: bool = False

    def host_reference(self) -> str:
        return shlex.join(self.argv)[:200]


class MessageTemplate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    role: Literal["system", "user", "assistant"]
    content: str


class ChatLaneSpec(EndpointSpec):
    type: Literal["chat"]
    shippable: ClassVar[bool] = False
    description: str | None = None
    epochs: int = Field(default=1, ge=1, le=10_000)
    system: str | None = Field(default=None, description="Jinja2 template for a system message.")
    prompt: str | None = Field(default=None, description="Jinja2 template for the user message.")
    messages: tuple[MessageTemplate, ...] | None = Field(default=None, description="Full message list instead.")
    output: Literal["json", "text"] = "text"
    cache: bool = True
    parse: Literal["json"] | None = Field(
        default=None, description="`json`: parse a JSON-text output before metrics see it (see docs/config.md)."
    )

    def samples(self) -> range:
        return range(self.epochs)

    def tokens_model(self) -> str | None:
        """The model whose token usage this lane's calls report."""
        return self.model

    def priced_model(self) -> str | None:
        """None: a chat answer holds no cost (its tokens are priced in the run's usage line only)."""
        return None

    def unrecorded_field(self, field: str, priced: Iterable[str]) -> str | None:
        """None: a chat answer (parsed as JSON) holds whatever the model answered."""
        return None

    def output_shape(self) -> OutputShape:
        """Its answer's text; parsed as JSON (``output: json``, ``parse: json``), whatever the model wrote, which
        may be a list of calls."""
        return OutputShape.ANSWER if self.output == "text" and self.parse is None else OutputShape.ANY

    def host_reference(self) -> str:
        return f"model {self.model}"

    def host_functions(self) -> tuple[str, ...]:
        return ()

    @model_validator(mode="after")
    def _one_prompt_form(self) -> "ChatLaneSpec":
        check_prompt_form("a chat lane", self.system, self.prompt, self.messages)
        return self

    def message_templates(self) -> list[tuple[str, str]]:
        return message_templates(self.system, self.prompt, self.messages)

    def record_inputs(self) -> list[tuple[str, str]]:
        """The record fields its message templates read by name, each with the message that reads it."""
        return templates_read(_read_by(self.message_templates()))


def check_prompt_form(
    what: str, system: str | None, prompt: str | None, messages: tuple[MessageTemplate, ...] | None
) -> None:
    """Exactly one of ``prompt`` (with an optional ``system``) or ``messages``, every template compiling."""
    if (prompt is None) == (messages is None):
        raise ValueError(f"{what} needs exactly one of 'prompt' (with optional 'system') or 'messages'")
    if messages is not None and system is not None:
        raise ValueError("'system' goes with 'prompt'; with 'messages', put the system message in the list")
    for role, template in message_templates(system, prompt, messages):
        check_template(template, where=f"{role} message template")


def message_templates(
    system: str | None, prompt: str | None, messages: tuple[MessageTemplate, ...] | None
) -> list[tuple[str, str]]:
    """(role, template) of every message a lane renders per example."""
    if messages is not None:
        return [(message.role, message.content) for message in messages]
    templates = [("system", system)] if system is not None else []
    templates.append(("user", prompt or ""))
    return templates


def templates_read(templates: Iterable[tuple[str, str]], *, top_level: bool = True) -> list[tuple[str, str]]:
    """(field, how) for every record field the (how, template) pairs read by name (``top_level``: as a lane's
    templates see the record's fields, else as ``example.NAME``, as a judge's do). ``lanes.templating`` (jinja2) is
    imported only here, for a config that has templates: a recorded run loads none (tests/test_lazy_imports.py)."""
    templates = list(templates)
    if not templates:
        return []
    from evalglass.lanes.templating import record_fields_read

    return [
        (read, how) for how, template in templates for read in sorted(record_fields_read(template, top_level=top_level))
    ]


def _read_by(templates: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A lane's (role, template) pairs as (how the record is read, template)."""
    return [("its prompt" if role == "user" else f"its {role} message", template) for role, template in templates]


class AgentToolSpec(BaseModel):
    """One tool an agent lane offers: a host function (``module:function``), or results recorded in the example
    (``recorded``), with what the model is told about it. The shorthand ``NAME: module:function`` or ``NAME:
    recorded`` is the same with nothing else said."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    function: str | None = Field(default=None, description="module:function or path/to/file.py:function.")
    recorded: bool = Field(default=False, description="Answer from the results recorded in the example.")
    description: str | None = Field(
        default=None, description="What the model is told the tool does (default: the function's docstring)."
    )
    parameters: dict[str, JsonValue] | None = Field(
        default=None,
        description="The JSON Schema of its arguments (default: from the function's signature; for a recorded "
        "tool, any object).",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"recorded": True} if data == "recorded" else {"function": data}
        return data

    @model_validator(mode="after")
    def _one_source(self) -> "AgentToolSpec":
        if (self.function is None) == (not self.recorded):
            raise ValueError("a tool is either a host function ('module:function') or 'recorded'")
        if self.function is not None:
            function_reference(self.function)
        return self


#: Every field an agent lane's trajectory can hold (lanes/agent.py ``AgentLane._trajectory``).
AGENT_FIELDS = (
    "messages",
    "tool_calls",
    "text",
    "finish",
    "steps",
    "finish_reasons",
    "model",
    "usage",
    "cost",
    "final_state",
)


class AgentLaneSpec(EndpointSpec):
    """``task: {type: agent}``: the model and tool loop against an OpenAI-compatible endpoint or a native API
    (``provider: anthropic | gemini``; lanes/agent.py)."""

    type: Literal["agent"]
    shippable: ClassVar[bool] = False
    description: str | None = None
    epochs: int = Field(default=1, ge=1, le=10_000)
    system: str | None = Field(default=None, description="Jinja2 template for a system message.")
    prompt: str | None = Field(default=None, description="Jinja2 template for the user message.")
    messages: tuple[MessageTemplate, ...] | None = Field(default=None, description="Full message list instead.")
    tools: dict[str, AgentToolSpec] = Field(min_length=1, description="Tool name -> module:function | recorded.")
    max_steps: int = Field(default=10, ge=1, le=1000, description="Model turns at most (each with its tool calls).")
    step_timeout: float | None = Field(
        default=None,
        gt=0,
        description="Seconds for one model step (all its attempts, from the first's sending) and for one tool call "
        "(from its start).",
    )
    trajectory_timeout: float | None = Field(default=None, gt=0, description="Seconds for the whole trajectory.")
    recorded_results: str = Field(
        default="tool_results",
        description="Record path of the results recorded tools answer with: a list of {name, arguments?, result | "
        "error}.",
    )
    state: str | None = Field(
        default=None, description="Record path of the state tools start from (a copy per trajectory); default {}."
    )
    cache: bool = True

    @model_validator(mode="after")
    def _one_prompt_form(self) -> "AgentLaneSpec":
        check_prompt_form("an agent lane", self.system, self.prompt, self.messages)
        for name in self.tools:
            if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
                raise ValueError(
                    f"tool name {name!r}: use 1 to 64 letters, digits, '_' or '-' (what model APIs accept)"
                )
        return self

    def message_templates(self) -> list[tuple[str, str]]:
        return message_templates(self.system, self.prompt, self.messages)

    def record_inputs(self) -> list[tuple[str, str]]:
        """The record fields its message templates read by name, its recorded tool results and its state."""
        state = [(self.state, "its state")] if self.state is not None else []
        read = templates_read(_read_by(self.message_templates()))
        return [*read, (self.recorded_results, "its recorded_results"), *state]

    def samples(self) -> range:
        return range(self.epochs)

    def tokens_model(self) -> str | None:
        return self.model

    def priced_model(self) -> str | None:
        return self.model

    def unrecorded_field(self, field: str, priced: Iterable[str]) -> str | None:
        """Its output is a trajectory, whose fields the lane writes (lanes/agent.py ``AgentLane._trajectory``);
        ``cost`` only with a price for its model. ``final_state`` needs a tool that keeps state, which only the
        loaded tools tell (``AgentLane.keeps_state``)."""
        if field not in AGENT_FIELDS:
            return f"an agent's trajectory never holds '{field}' (it holds {', '.join(AGENT_FIELDS)})"
        if field == "cost" and self.model not in set(priced):
            return (
                f"an agent's trajectory holds a cost only with a price for its model: declare `prices: "
                f"{{{self.model}: {{prompt_per_million: ..., completion_per_million: ...}}}}`"
            )
        return None

    def output_shape(self) -> OutputShape:
        """Its trajectory (``core.conversation.Trajectory``): a metric of its answer reads ``field: text``."""
        return OutputShape.TRAJECTORY

    def host_reference(self) -> str:
        """The model and the host functions the lane's tools call (host code runs in the loop)."""
        functions = self.host_functions()
        return (f"model {self.model}" + (f", tools {', '.join(functions)}" if functions else ""))[:200]

    def host_functions(self) -> tuple[str, ...]:
        return tuple(tool.function for tool in self.tools.values() if tool.function is not None)

    @property
    def parse(self) -> None:
        """An agent's output is its trajectory, never text to parse."""
        return None


LaneSpec = PythonLaneSpec | CommandLaneSpec | ChatLaneSpec | AgentLaneSpec
TaskSpec = Annotated[LaneSpec, Field(discriminator="type")]


#: Endpoint fields that change how a call is made, not what it asks: left out of fingerprints.
OPERATIONAL_FIELDS = frozenset({"timeout", "concurrency", "rpm", "retry", "api_key_env", "cache", "description"})


__all__ = [
    "DEFAULT_KEY_ENV",
    "OPERATIONAL_FIELDS",
    "TRANSIENT_KINDS",
    "AgentLaneSpec",
    "AgentToolSpec",
    "ChatLaneSpec",
    "CommandLaneSpec",
    "EndpointSpec",
    "FaultKind",
    "LaneSpec",
    "MessageTemplate",
    "Provider",
    "PythonLaneSpec",
    "RetryPolicy",
    "TaskSpec",
    "check_template",
]
