"""Task lanes: how each example's output is produced when the dataset does not already record it.

Three lane types, declared under ``task:`` in ``evalglass.yaml`` and discriminated by ``type``:

* ``python``: a callable, ``module:function`` or ``path/to/file.py:function`` (sync or async), given the example's
  fields as a dict (and ``sample=`` when it accepts that keyword);
* ``command``: an argv list, the example's fields as JSON on stdin, stdout parsed as JSON or kept as text;
* ``chat``: an OpenAI-compatible endpoint; a Jinja2 prompt template over the example's fields (StrictUndefined:
  a missing field fails that example with a clear diagnostic, it never renders as an empty string).

``epochs: K`` asks for K samples of every example (sample indexes ``0..K-1``). Every (example, sample) ends in a
:data:`LaneOutcome`: a :class:`LaneOutput` carrying the value, or a :class:`LaneFailure` carrying a diagnostic that
the pipeline turns into ``error`` scores with :func:`failure_score` for every metric of that example. A lane never
raises for a per-example problem; configuration problems raise :class:`LaneConfigError` when the lane is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import inspect
import os
import signal
import sys
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evalglass.core.score import Score, Status
from evalglass.engine.cache import CallCache, cache_key, canonical_json
from evalglass.lanes.daemonpool import DaemonThreadPool
from evalglass.lanes.executor import EndpointLimit, Executor
from evalglass.lanes.retry import Attempt, Retrier
from evalglass.lanes.specs import (
    OPERATIONAL_FIELDS,
    ChatLaneSpec,
    CommandLaneSpec,
    LaneSpec,
    MessageTemplate,
    PythonLaneSpec,
    TaskSpec,
    parse_task_spec,
)
from evalglass.lanes.templating import TemplateFailure, compile_template, render, template_context
from evalglass.metrics.hostload import exec_file_as_module

if TYPE_CHECKING:  # the chat client (openai SDK, aiohttp) is imported only when a chat lane is built
    from evalglass.lanes.chat import ChatReply, TransportChoice, Usage

_MAX_DETAIL = 2000


class LaneConfigError(ValueError):
    """A lane cannot be built: one line saying what and how to fix it."""


# ---------------------------------------------------------------------- outcomes
@dataclass(frozen=True, slots=True)
class LaneOutput:
    """What the system under test produced for one (example, sample)."""

    value: Any
    sample: int
    cached: bool = False
    attempts: tuple[Attempt, ...] = ()
    usage: Usage | None = None
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class LaneFailure:
    """No output for one (example, sample), and why. ``code`` is a diagnostic code (snake_case)."""

    code: str
    message: str
    sample: int
    detail: str | None = None
    attempts: tuple[Attempt, ...] = ()
    call_id: str | None = None


LaneOutcome = LaneOutput | LaneFailure


def failure_score(failure: LaneFailure) -> Score:
    """The ``error`` score every metric of the example gets when its lane failed: no value, the lane's reason."""
    evidence = (f"lane_call:{failure.call_id}",) if failure.call_id else ()
    return Score.unmeasured(
        Status.ERROR,
        failure.code,
        f"the task lane produced no output: {failure.message}",
        failure.detail,
        evidence=evidence,
    )


# ---------------------------------------------------------------------- lanes
class TaskLane(ABC):
    """A built lane: ``produce`` one (example, sample) at a time; the pipeline fans out over ``executor.map``."""

    spec: LaneSpec
    fingerprint: str

    @abstractmethod
    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        """Never raises for a per-example problem."""

    def samples(self) -> range:
        return self.spec.samples()

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        pass


def fingerprint_of(payload: Any) -> str:
    return hashlib.sha256(canonical_json(payload)).hexdigest()


def build_lane(
    spec: LaneSpec,
    *,
    base_dir: Path,
    executor: Executor,
    cache: CallCache | None = None,
    env: Mapping[str, str] | None = None,
    retrier: Retrier | None = None,
    transport: TransportChoice = "auto",
) -> TaskLane:
    """Build a lane. Raises :class:`LaneConfigError` when the function, file or template cannot be used."""
    if isinstance(spec, PythonLaneSpec):
        return PythonLane(spec, base_dir=base_dir, executor=executor, cache=cache)
    if isinstance(spec, CommandLaneSpec):
        return CommandLane(spec, base_dir=base_dir, executor=executor, cache=cache, env=env)
    return ChatLane(spec, executor=executor, cache=cache, env=env, retrier=retrier, transport=transport)


def _cached_output(cache: CallCache | None, key: str, sample: int) -> LaneOutput | None:
    if cache is None:
        return None
    hit = cache.get(key)
    if hit is None or not isinstance(hit, dict) or "value" not in hit:
        return None
    return LaneOutput(hit["value"], sample, cached=True, call_id=key)


def _store(cache: CallCache | None, key: str, value: Any, *, kind: str, request: Any) -> None:
    if cache is None:
        return
    with contextlib.suppress(TypeError):  # an output that is not JSON is simply not cached
        cache.put(key, {"value": value}, kind=kind, request=request)


class PythonLane(TaskLane):
    spec: PythonLaneSpec

    def __init__(self, spec: PythonLaneSpec, *, base_dir: Path, executor: Executor, cache: CallCache | None) -> None:
        self.spec = spec
        self.executor = executor
        self.cache = cache if spec.cache else None
        self.function, source = load_function(spec.function, base_dir)
        self.is_async = inspect.iscoroutinefunction(self.function)
        try:
            self.takes_sample = "sample" in inspect.signature(self.function).parameters
        except (TypeError, ValueError):
            self.takes_sample = False
        code_hash = hashlib.sha256(source.read_bytes()).hexdigest() if source is not None else None
        self.fingerprint = fingerprint_of({"type": "python", "function": spec.function, "source_sha256": code_hash})
        self.limit = EndpointLimit(key=f"python:{spec.function}", concurrency=spec.concurrency)
        self._threads: DaemonThreadPool | None = None

    def _pool(self) -> DaemonThreadPool:
        if self._threads is None:
            # Daemon workers: an abandoned (timed-out) call can never keep the finished run from exiting.
            self._threads = DaemonThreadPool(self.spec.concurrency or 32, name="evalglass-python")
        return self._threads

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        key = cache_key(self.fingerprint, {"fields": fields}, sample) if self.cache is not None else None
        if key is not None:
            hit = _cached_output(self.cache, key, sample)
            if hit is not None:
                return hit
        kwargs = {"sample": sample} if self.takes_sample else {}
        argument = dict(fields)

        async def call() -> Any:
            if self.is_async:
                result = self.function(argument, **kwargs)
            else:
                loop = asyncio.get_running_loop()
                result = await loop.run_in_executor(self._pool(), lambda: self.function(argument, **kwargs))
            if inspect.isawaitable(result):
                result = await result
            return result

        async def guarded() -> LaneOutcome:
            try:
                async with asyncio.timeout(self.spec.timeout):
                    value = await call()
            except TimeoutError:
                return LaneFailure(
                    "task_timeout", f"{self.spec.function} did not return within {self.spec.timeout:g}s", sample
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return LaneFailure(
                    "task_raised",
                    f"{self.spec.function} raised {type(exc).__name__}: {_one_line(exc)}",
                    sample,
                    detail=_tail("".join(traceback.format_exception(exc))),
                )
            return LaneOutput(value, sample, call_id=key)

        outcome = await self.executor.submit(guarded, endpoint=self.limit)
        if key is not None and isinstance(outcome, LaneOutput):
            _store(self.cache, key, outcome.value, kind="python", request=None)
        return outcome

    async def aclose(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None


def load_function(reference: str, base_dir: Path) -> tuple[Callable[..., Any], Path | None]:
    """Resolve ``module:attr`` or ``file.py:attr``; returns the callable and its source file (when known)."""
    target, _, attribute = reference.rpartition(":")
    if target.endswith(".py"):
        path = (base_dir / target).resolve()
        if not path.is_file():
            raise LaneConfigError(f"python lane: file {target} not found (looked for {path})")
        module_name = "evalglass_user_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
        try:
            loaded = exec_file_as_module(path, module_name)
        except Exception as exc:
            raise LaneConfigError(f"python lane: importing {target} raised {type(exc).__name__}: {exc}") from exc
        if loaded is None:
            raise LaneConfigError(f"python lane: cannot load {path} as a module")
        module = loaded
    else:
        base = str(base_dir.resolve())
        if base not in sys.path:
            sys.path.insert(0, base)
        try:
            module = importlib.import_module(target)
        except Exception as exc:
            raise LaneConfigError(
                f"python lane: cannot import module {target!r} ({type(exc).__name__}: {exc}); "
                "is it installed or in the evals folder?"
            ) from exc
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise LaneConfigError(f"python lane: {target} has no attribute {attribute!r}")
        value = getattr(value, part)
    if not callable(value):
        raise LaneConfigError(f"python lane: {reference} is not callable")
    source = getattr(module, "__file__", None)
    return value, Path(source) if source else None


class CommandLane(TaskLane):
    spec: CommandLaneSpec

    def __init__(
        self,
        spec: CommandLaneSpec,
        *,
        base_dir: Path,
        executor: Executor,
        cache: CallCache | None,
        env: Mapping[str, str] | None,
    ) -> None:
        self.spec = spec
        self.executor = executor
        self.cache = cache if spec.cache else None
        self.cwd = (base_dir / spec.cwd).resolve() if spec.cwd else base_dir.resolve()
        if not self.cwd.is_dir():
            raise LaneConfigError(f"command lane: cwd {spec.cwd} is not a directory (looked for {self.cwd})")
        self.base_env = dict(os.environ if env is None else env)
        program = self.cwd / spec.argv[0]
        program_hash = hashlib.sha256(program.read_bytes()).hexdigest() if program.is_file() else None
        self.fingerprint = fingerprint_of(
            {
                "type": "command",
                "argv": list(spec.argv),
                "output": spec.output,
                "cwd": spec.cwd,
                "env": spec.env,
                "program_sha256": program_hash,
            }
        )
        self.limit = EndpointLimit(key=f"command:{spec.argv[0]}", concurrency=spec.concurrency)

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        key = cache_key(self.fingerprint, {"fields": fields}, sample) if self.cache is not None else None
        if key is not None:
            hit = _cached_output(self.cache, key, sample)
            if hit is not None:
                return hit
        outcome = await self.executor.submit(lambda: self._run(example_id, fields, sample), endpoint=self.limit)
        if key is not None and isinstance(outcome, LaneOutput):
            _store(self.cache, key, outcome.value, kind="command", request=None)
        return outcome

    async def _run(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        spec = self.spec
        try:
            stdin = orjson.dumps(dict(fields))
        except TypeError as exc:
            return LaneFailure("task_input_unserialisable", f"example {example_id} is not JSON: {exc}", sample)
        env = {**self.base_env, **spec.env, "EVALGLASS_EXAMPLE_ID": example_id, "EVALGLASS_SAMPLE": str(sample)}
        try:
            process = await asyncio.create_subprocess_exec(
                *spec.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            return LaneFailure("task_spawn_failed", f"cannot start {spec.argv[0]!r}: {exc}", sample)
        try:
            async with asyncio.timeout(spec.timeout):
                stdout, stderr = await process.communicate(stdin)
        except TimeoutError:
            _kill_group(process)
            await process.wait()
            return LaneFailure(
                "task_timeout", f"{spec.argv[0]} did not finish within {spec.timeout:g}s (killed)", sample
            )
        except BaseException:
            _kill_group(process)
            raise
        if process.returncode != 0:
            return LaneFailure(
                "task_exit_nonzero",
                f"{spec.argv[0]} exited with code {process.returncode}",
                sample,
                detail=_tail(stderr.decode("utf-8", "replace")) or None,
            )
        text = stdout.decode("utf-8", "replace")
        if spec.output == "text":
            return LaneOutput(text.rstrip("\r\n"), sample)
        try:
            return LaneOutput(orjson.loads(text), sample)
        except orjson.JSONDecodeError as exc:
            return LaneFailure(
                "task_output_unparseable",
                f"{spec.argv[0]} printed something that is not JSON ({exc})",
                sample,
                detail=_tail(text) or "(empty output)",
            )


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


class ChatLane(TaskLane):
    spec: ChatLaneSpec

    def __init__(
        self,
        spec: ChatLaneSpec,
        *,
        executor: Executor,
        cache: CallCache | None,
        env: Mapping[str, str] | None,
        retrier: Retrier | None,
        transport: TransportChoice,
    ) -> None:
        self.spec = spec
        self.executor = executor
        self.cache = cache if spec.cache else None
        self.templates = [(role, compile_template(source)) for role, source in spec.message_templates()]
        self.retrier = retrier or Retrier(spec.retry)
        from evalglass.lanes import chat

        self._chat = chat
        self.client = chat.ChatClient(spec, env=env, transport=transport)
        self.fingerprint = fingerprint_of(chat_lane_definition(spec))

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        context = template_context(fields, example_id, sample)
        messages: list[tuple[str, str]] = []
        try:
            for role, template in self.templates:
                messages.append((role, render(template, context, what=f"the {role} prompt", example_id=example_id)))
        except TemplateFailure as failure:
            return LaneFailure(failure.code, failure.message, sample)
        request = self._chat.ChatRequest.build(self.spec, messages)
        body = request.body()
        key = cache_key(self.fingerprint, body, sample)
        reply: ChatReply | None = None
        attempts: tuple[Attempt, ...] = ()
        cached = False
        if self.cache is not None:
            hit = self.cache.get(key)
            if isinstance(hit, dict) and "content" in hit:
                reply, cached = self._chat.ChatReply.from_json(hit), True
        if reply is None:
            outcome = await self.client.call(request, executor=self.executor, retrier=self.retrier)
            attempts = outcome.attempts
            if outcome.fault is not None or outcome.value is None:
                fault = outcome.fault
                assert fault is not None
                return LaneFailure(fault.code, fault.message, sample, fault.detail, attempts, key)
            reply = outcome.value
            if self.cache is not None:
                self.cache.put(key, reply.to_json(), kind="chat", request=body)
        if self.spec.output == "text":
            return LaneOutput(reply.content, sample, cached, attempts, reply.usage, key)
        try:
            value = orjson.loads(reply.content)
        except orjson.JSONDecodeError as exc:
            return LaneFailure(
                "task_output_unparseable",
                f"the endpoint answered text that is not JSON ({exc})",
                sample,
                _tail(reply.content),
                attempts,
                key,
            )
        return LaneOutput(value, sample, cached, attempts, reply.usage, key)

    async def aclose(self) -> None:
        await self.client.aclose()


def chat_lane_definition(spec: ChatLaneSpec) -> dict[str, Any]:
    return spec.model_dump(mode="json", exclude=set(OPERATIONAL_FIELDS))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else "")[:300]


def _tail(text: str, limit: int = _MAX_DETAIL) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


__all__ = [
    "OPERATIONAL_FIELDS",
    "ChatLane",
    "ChatLaneSpec",
    "CommandLane",
    "CommandLaneSpec",
    "LaneConfigError",
    "LaneFailure",
    "LaneOutcome",
    "LaneOutput",
    "MessageTemplate",
    "PythonLane",
    "PythonLaneSpec",
    "TaskLane",
    "TaskSpec",
    "TemplateFailure",
    "build_lane",
    "compile_template",
    "failure_score",
    "load_function",
    "parse_task_spec",
    "render",
    "template_context",
]
