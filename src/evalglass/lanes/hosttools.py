"""An agent lane's host tools run in worker processes, never in the process that measures and decides.

A tool named by ``tools: {name: module:function}`` is host code a pull request edits freely and no approval binds:
run in the deciding process it could replace what decides (``evalglass.core.gates.meets``) and make ``run`` pass
on any value. So the agent lane never imports it. A :class:`ToolWorkers` pool (``lanes/hostworker.py``: the same
fork server, pipes, kills and checks as a python lane's) starts workers that import every host tool of the lane;
each call goes to an idle worker as JSON (the tool's name, its arguments, the trajectory's state when the tool
takes one) and comes back as data: the result and the state as the tool left them, or the error it raised, or why
its arguments were refused. The lane keeps the trajectory; the worker keeps nothing between calls the lane relies
on (module-level state is per worker process, and calls go to whichever worker is idle).

What a worker sends is written next to code under test, so it is checked, never trusted (:func:`decode_reply`):
a reply of another shape is the call's ``tool_worker_lost``, as is a worker that ends mid-call. A call over
``step_timeout`` has its worker killed (the call cannot be stopped otherwise); nothing it did to the state is kept.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

import orjson

from evalglass.lanes.hostworker import HostFunctionInfo, HostWorkers, _Setting, enter_worker
from evalglass.readers.jsonvalues import json_problem

if TYPE_CHECKING:
    from pathlib import Path

#: A reply: the tool returned (``[0, result]``), raised or was refused (``[1, kind, message]``), or left the state
#: as what is not JSON (``[2, message]``: the trajectory's ``state_not_json``). A tool that takes the state and ran
#: adds the state as it left it (``[0, result, state]``, ``[1, kind, message, state]``).
RETURNED, ERRED, STATE_NOT_JSON = 0, 1, 2


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """What the deciding process knows of a host tool, as the first worker read it."""

    takes_state: bool
    #: The JSON Schema of its arguments made from its signature (None: the spec declares them).
    parameters: Any
    description: str | None
    #: The file a module reference was imported from (None for a file reference, or a module without one).
    source: str | None


class ToolWorkers(HostWorkers):
    """Worker processes for an agent lane's host tools (``tools``: name -> reference), each able to run any of
    them; at most one call in flight per worker, ``width`` workers at most in flight (the lane's gate)."""

    def __init__(
        self,
        tools: Mapping[str, str],
        base_dir: str,
        *,
        declared: frozenset[str],
        width: int,
        secrets: tuple[str, ...] = (),
    ) -> None:
        super().__init__(
            ", ".join(f"{name}={reference}" for name, reference in tools.items()),
            base_dir,
            what="agent tools",
            width=width,
            secrets=secrets,
        )
        self.tools = dict(tools)
        #: Tools whose parameters the spec declares: no schema is made of their signature.
        self.declared = declared
        self.infos: dict[str, ToolInfo] = {}

    #: A tool call is one call per message, answered or not: there is no run whose answers a log would keep.
    logs_answers = False

    def _target(self) -> tuple[Callable[..., None], tuple[Any, ...]]:
        # Only the first worker describes the tools (their schemas need pydantic, which the others never import).
        return serve_tools, (self.tools, self.base_dir, self.secrets, not self.infos, sorted(self.declared))

    def _described(self, hello: dict[str, Any]) -> None:
        self._info = HostFunctionInfo(False, False)
        described = hello.get("tools")
        if not self.infos and isinstance(described, dict):
            for name in self.tools:
                entry = described.get(name)
                if not isinstance(entry, dict):
                    continue
                description, source = entry.get("description"), entry.get("source")
                self.infos[name] = ToolInfo(
                    bool(entry.get("takes_state")),
                    entry.get("parameters"),
                    description if type(description) is str else None,
                    source if type(source) is str else None,
                )

    def _keeps(self, reply: bytes) -> bool:
        return True  # a worker that answered is still serving (a timed-out one is killed, never answers)


def tool_request(name: str, arguments: Mapping[str, Any], state: Any) -> bytes:
    """One call as the worker reads it. Arguments are the model's (parsed from its JSON text): an integer beyond
    64 bits is JSON orjson does not write, so the standard library writes those."""
    try:
        return orjson.dumps([name, arguments, state])
    except TypeError:
        return json.dumps([name, arguments, state], ensure_ascii=False).encode()


def decode_reply(reply: bytes) -> list[Any] | None:
    """A worker's reply to one call (see :data:`RETURNED`), or None when it is not of that shape (the worker runs
    code under test, which may write to its pipe: what it sends is checked, never trusted)."""
    try:
        value = orjson.loads(reply)
    except orjson.JSONDecodeError:
        return None
    if type(value) is not list or not value or type(value[0]) is not int:
        return None
    kind = value[0]
    if kind == RETURNED and len(value) in (2, 3):
        return value
    if kind == ERRED and len(value) in (3, 4) and type(value[1]) is str and type(value[2]) is str:
        return value
    if kind == STATE_NOT_JSON and len(value) == 2 and type(value[1]) is str:
        return value
    return None


# ---------------------------------------------------------------------------------------------- the worker's side
@dataclass(frozen=True, slots=True)
class _Loaded:
    function: Callable[..., Any]
    takes_state: bool
    signature: inspect.Signature | None
    keywords: Keywords | None


def serve_tools(
    conn: Connection,
    alive: Connection,
    tools: dict[str, str],
    base_dir: str,
    secrets: tuple[str, ...],
    describe: bool,
    declared: list[str],
    setting: _Setting,
) -> None:
    """A tool worker's life: load every tool, describe them (the first worker), then answer calls until the pipe
    closes."""
    import asyncio
    from pathlib import Path

    from evalglass.lanes.hostload import HostLoadError, load_function

    enter_worker(alive, secrets, setting)
    loaded: dict[str, _Loaded] = {}
    described: dict[str, Any] = {}
    for name, reference in tools.items():
        try:
            function = load_function(
                reference, Path(base_dir), what=f"agent tool {name!r}", allow_async=True, search_base=True
            )
        except HostLoadError as exc:
            conn.send_bytes(orjson.dumps({"error": str(exc)}))
            return
        try:
            signature: inspect.Signature | None = inspect.signature(function)
        except (TypeError, ValueError):
            signature = None
        takes_state = signature is not None and "state" in signature.parameters
        keywords = _keywords(signature) if signature is not None else None
        loaded[name] = _Loaded(function, takes_state, signature, keywords)
        if describe:
            try:
                parameters = None if name in declared else parameters_of(name, function, takes_state)
            except ValueError as exc:
                conn.send_bytes(orjson.dumps({"error": str(exc)}))
                return
            source = getattr(sys.modules.get(reference.rpartition(":")[0]), "__file__", None)
            described[name] = {
                "takes_state": takes_state,
                "parameters": parameters,
                "description": inspect.getdoc(function),
                "source": source,
            }
    conn.send_bytes(orjson.dumps({"tools": described}))
    loop = asyncio.new_event_loop()
    try:
        while True:
            request = conn.recv_bytes()
            conn.send_bytes(_answer(loaded, request, loop))
    except (EOFError, OSError):  # the deciding process closed the pipe (or is gone): nothing is left to answer
        return


def _answer(loaded: dict[str, _Loaded], request: bytes, loop: Any) -> bytes:
    """One call made, as its reply."""
    try:
        name, kwargs, state = orjson.loads(request)
    except orjson.JSONDecodeError:
        name, kwargs, state = json.loads(request)
    tool = loaded[name]
    if tool.takes_state:
        kwargs["state"] = state
    if tool.signature is not None and (tool.keywords is None or not tool.keywords.fit(kwargs)):
        try:
            tool.signature.bind(**kwargs)
        except TypeError as exc:
            return _erred("arguments_rejected", f"{name} does not take these arguments: {exc}", b"")
    raised: BaseException | None = None
    try:
        value = tool.function(**kwargs)
        if inspect.isawaitable(value):
            value = loop.run_until_complete(_awaited(value))
    except BaseException as exc:  # SystemExit, KeyboardInterrupt ... raised by a tool: that call's error
        raised = exc
    # The state as the tool left it, encoded once (empty: the tool does not take it).
    kept = b""
    if tool.takes_state:
        problem = json_problem(state)  # a NaN too: orjson alone would write it as null, another state
        if problem is not None:
            why = f"{name} left the trajectory's state as what is not JSON ({problem})"
            return orjson.dumps([STATE_NOT_JSON, why])
        kept = orjson.dumps(state)
    if raised is not None:
        try:
            said = f"{type(raised).__name__}: {raised}"
        except BaseException:  # its __str__ raised too
            said = f"{type(raised).__name__}: (its message could not be read)"
        return _erred(type(raised).__name__, said, kept)
    problem = json_problem(value)  # a NaN too: orjson alone would answer the model null, another result
    if problem is not None:
        return _erred("result_not_json", f"{name} returned a {type(value).__name__} that is not JSON ({problem})", kept)
    return b"[0," + orjson.dumps(value) + (b"," + kept if kept else b"") + b"]"


async def _awaited(value: Any) -> Any:
    return await value


def _erred(kind: str, message: str, state: bytes) -> bytes:
    """``state``: the state as the tool left it, encoded (empty: the tool does not take it, or never ran)."""
    from evalglass import redaction

    text = redaction.current().text(message)
    return b"[1," + orjson.dumps(kind) + b"," + orjson.dumps(text) + (b"," + state if state else b"") + b"]"


@dataclass(frozen=True, slots=True)
class Keywords:
    """What a signature accepts when called with keywords only: the names it takes (None: any, it has ``**kwargs``)
    and the names it needs (no default)."""

    names: frozenset[str] | None
    required: frozenset[str]

    def fit(self, arguments: Mapping[str, Any]) -> bool:
        """True when ``Signature.bind(**arguments)`` would succeed (False: bind says why)."""
        given = arguments.keys()
        return (self.names is None or given <= self.names) and self.required <= given


def _keywords(signature: inspect.Signature) -> Keywords | None:
    """The signature's :class:`Keywords`, or None for one with a positional-only parameter (whose rules ``bind``
    keeps)."""
    names: set[str] = set()
    required: set[str] = set()
    open_ended = False
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            return None
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            open_ended = True
        elif parameter.kind is not inspect.Parameter.VAR_POSITIONAL:
            names.add(parameter.name)
            if parameter.default is inspect.Parameter.empty:
                required.add(parameter.name)
    return Keywords(None if open_ended else frozenset(names), frozenset(required))


def parameters_of(name: str, function: Callable[..., Any], takes_state: bool) -> dict[str, Any]:
    """The JSON Schema of a function's arguments, from its signature and annotations (pydantic's), without the
    ``state`` it is given by the lane; raises ValueError saying how to fix it."""
    from pydantic import TypeAdapter

    try:
        schema: dict[str, Any] = TypeAdapter(function).json_schema()  # type: ignore[arg-type]
    except Exception as exc:
        raise ValueError(
            f"agent tool {name!r}: no JSON Schema can be made from its signature ({type(exc).__name__}: {exc}); "
            "declare its 'parameters'"
        ) from None
    if takes_state:
        schema.get("properties", {}).pop("state", None)
        required = [item for item in schema.get("required", ()) if item != "state"]
        if required:
            schema["required"] = required
        else:
            schema.pop("required", None)
    return schema


def tool_source(info: ToolInfo | None, reference: str, base_dir: Path) -> Path | None:
    """The file a tool's reference names (a file reference) or was imported from (the worker's word)."""
    from evalglass.lanes.hostload import reported_source

    return reported_source(reference, base_dir, info.source if info is not None else None)


__all__ = [
    "ERRED",
    "RETURNED",
    "STATE_NOT_JSON",
    "Keywords",
    "ToolInfo",
    "ToolWorkers",
    "decode_reply",
    "parameters_of",
    "serve_tools",
    "tool_request",
    "tool_source",
]
