"""The agent lane (``task: {type: agent}``): the model and tool loop, against an OpenAI-compatible endpoint or a
native API (``provider: anthropic | gemini``: ``lanes/modelstep.py`` speaks each API's tool-call shape).

Per (example, sample): the prompt templates are rendered into the first messages, then up to ``max_steps`` times
the model is asked (the conversation so far and the tool definitions) and each tool call it makes is run, in
order, and its result appended for the next step. The output is the whole trajectory
(:class:`~evalglass.core.conversation.Trajectory`, as plain JSON): every message, every call with its result or
error, why it ended (``finish``), the steps taken, tokens and cost, and the state the tools left.

**What goes wrong in an agent is kept as it happened**, as a property of the trajectory, not a failure of the run:

* a tool that raises, times out (``step_timeout``), returns something that is not JSON, is given arguments its
  signature refuses, or ends its worker process: the model gets a tool message with the error and the trajectory
  goes on; the call records ``error_type`` (the exception's type, ``tool_timeout``, ``result_not_json``,
  ``arguments_rejected``, ``tool_worker_lost``) and ``error``;
* a call of a tool that is not offered (``unknown_tool``), or with arguments that are not JSON
  (``arguments_not_json``, the text kept as ``invalid_arguments``): recorded as such, answered with the error;
* the step budget spent while the model still calls tools: ``finish: max_steps``.

What the evaluator lacks is not a trajectory, and is a lane failure (``error`` for every metric of the example,
never a wrong answer): the model endpoint failing after its retries (``call_*``), a model step over
``step_timeout`` counted from its first attempt's sending (``agent_step_timeout``; the wait for a concurrency slot
before it is not the step's), the whole trajectory over ``trajectory_timeout`` (``agent_timeout``: how long an
endpoint takes is not the agent's doing), a recorded tool without a recorded result for the call
(``no_recorded_result``: the replay cannot say what the environment answered), a declared ``state`` the example
lacks, a state a tool left as what is not JSON (``state_not_json``).

**Where host tools run.** In worker processes (``lanes/hosttools.py``), never in this one: a tool is host code no
approval binds, and here it could replace what decides. Its arguments (and the state) go out as JSON, its result,
error and state come back as data; a call over ``step_timeout`` has its worker killed. Each call is made once.

**Resuming.** Every model step goes through the call cache, keyed by the lane's fingerprint, the conversation so
far and the sample: a resumed (or repeated) run replays the steps it has and makes only the others, so a killed run
loses no completed step and asks none twice. Host tools run again on a replay (their results are what the next
step's key holds): they should be deterministic functions of their arguments and the trajectory's state; a tool
with effects outside the trajectory is one to record (``recorded``), not to re-run.

**State.** A tool whose function takes a ``state`` keyword gets the trajectory's state: a fresh dict per trajectory
(or a copy of the record's ``state`` path), which it may change; what it holds at the end is ``final_state``. It
crosses to the tool's worker and back as JSON, so a call's result and arguments are kept as they were when the tool
returned (copies): a tool that returns part of its state, or changes an argument in place, does not rewrite an
earlier step. A tool that leaves the state as what is not JSON fails the trajectory (``state_not_json``); one over
its timeout is killed, and none of its changes to the state are kept.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evalglass import redaction
from evalglass.core.fieldpath import ABSENT, get_path, parse_path
from evalglass.core.fingerprint import content_address
from evalglass.core.notcaptured import NOT_RECORDED
from evalglass.lanes.callcache import CallStore, GrowingKey, GrownRequest, Hit, KeyFrame, through_cache
from evalglass.lanes.specs import OPERATIONAL_FIELDS, AgentLaneSpec, AgentToolSpec
from evalglass.readers.jsonvalues import json_problem

if TYPE_CHECKING:
    from evalglass.core.usage import Price
    from evalglass.lanes.base import LaneContext
    from evalglass.lanes.chatcall import Usage
    from evalglass.lanes.executor import Executor
    from evalglass.lanes.hosttools import ToolWorkers
    from evalglass.lanes.modelstep import AssistantTurn, ModelStepClient, StepCall, StepRequest, WireMemo
    from evalglass.lanes.ports import Job, LaneColumn, LaneFailure, LaneOutcome
    from evalglass.lanes.retry import Attempt, Fault, Retrier

#: How much of a tool's error the model and the record get (redacted first).
_ERROR_CHARS = 500
#: Host tool calls in flight at once, each in a worker process of its own (lanes/hosttools.py).
TOOL_THREADS = 32
#: Lane fields that change how the loop is run, not what it asks: left out of the fingerprint.
_OPERATIONAL = OPERATIONAL_FIELDS | {"step_timeout", "trajectory_timeout", "epochs"}


@dataclass(frozen=True)
class Tool:
    """A tool as offered: its definition (what the model is told) and what answers it (a host function, run in
    the lane's tool workers, or the results recorded in the example)."""

    name: str
    definition: dict[str, Any]
    #: The host function's reference (None: the tool's results are recorded in the example).
    reference: str | None = None
    takes_state: bool = False
    source_sha256: str | None = None

    @property
    def recorded(self) -> bool:
        return self.reference is None


def build_tools(
    tools: Mapping[str, AgentToolSpec], base_dir: Path, *, width: int = TOOL_THREADS
) -> tuple[dict[str, Tool], ToolWorkers | None]:
    """Every declared tool and its definition, and the workers that run the host ones (None: there are none),
    started and asked to describe them; raises ``LaneConfigError``. The host functions are never imported here
    (``lanes/hosttools.py``)."""
    from evalglass.lanes.base import LaneConfigError
    from evalglass.lanes.hostimports import code_digest
    from evalglass.lanes.hostload import is_file_reference, put_on_path
    from evalglass.lanes.hosttools import ToolWorkers, tool_source
    from evalglass.lanes.hostworker import WorkerStartError

    hosted = {name: spec.function for name, spec in tools.items() if spec.function is not None}
    workers: ToolWorkers | None = None
    if hosted:
        workers = ToolWorkers(
            hosted,
            str(base_dir.resolve()),
            declared=frozenset(name for name, spec in tools.items() if spec.parameters is not None),
            width=width,
            secrets=redaction.current().secrets,
        )
        try:
            workers.describe()
        except WorkerStartError as exc:
            workers.close()
            raise LaneConfigError(str(exc)) from None
        if any(not is_file_reference(reference.rpartition(":")[0]) for reference in hosted.values()):
            put_on_path(base_dir)  # as the workers did: a metric importing a module beside the config finds it
    built: dict[str, Tool] = {}
    for name, spec in tools.items():
        if spec.function is None:
            parameters = spec.parameters if spec.parameters is not None else {"type": "object"}
            built[name] = Tool(name, _definition(name, spec.description, parameters))
            continue
        assert workers is not None
        info = workers.infos.get(name)
        if info is None:
            workers.close()
            raise LaneConfigError(f"agent tool {name!r}: its worker did not describe it")
        parameters = spec.parameters if spec.parameters is not None else info.parameters
        description = spec.description if spec.description is not None else info.description
        digest = code_digest(spec.function, base_dir, tool_source(info, spec.function, base_dir))
        built[name] = Tool(name, _definition(name, description, parameters), spec.function, info.takes_state, digest)
    return built, workers


def _definition(name: str, description: str | None, parameters: Any) -> dict[str, Any]:
    definition: dict[str, Any] = {"name": name}
    if description:
        definition["description"] = description
    definition["parameters"] = parameters
    return definition


@dataclass
class _Step:
    """One model step through the cache: the turn or the fault, and how it was answered."""

    turn: AssistantTurn | None
    fault: Fault | None
    cached: bool
    replayed: bool
    attempts: tuple[Attempt, ...]
    tries: int
    #: The step did not end within ``step_timeout`` (its fault says so).
    timed_out: bool = False


@dataclass
class _Trajectory:
    """What one trajectory has done so far."""

    messages: list[dict[str, Any]]
    state: Any
    recorded: list[Mapping[str, Any]]
    calls: list[dict[str, Any]] = field(default_factory=list)
    turns: list[AssistantTurn] = field(default_factory=list)
    model_calls: list[tuple[Usage | None, bool]] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    tries: int = 0
    #: The model steps ``tries`` counts the attempts of (a step that failed before any attempt is not one).
    steps_tried: int = 0
    cached: bool = True
    replayed: bool = True
    first_key: str | None = None
    used: set[int] = field(default_factory=set)
    #: The conversation's wire form, kept across its steps (only new messages are converted at a step).
    wire: WireMemo | None = None
    #: The conversation's cache keys, kept across its steps alike (only new messages are hashed at a step), and
    #: what starts them (one object per trajectory: ``WireMemo`` starts afresh when it is another).
    keys: WireMemo | None = None
    key_start: Callable[[], GrowingKey] | None = None


class AgentLane:
    """A built agent lane: the :class:`~evalglass.lanes.ports.Lane` port, one trajectory per (example, sample)."""

    spec: AgentLaneSpec
    fingerprint: str

    @classmethod
    def build(cls, spec: Any, context: LaneContext) -> AgentLane:
        assert isinstance(spec, AgentLaneSpec)
        return cls(
            spec,
            base_dir=context.base_dir,
            executor=context.executor,
            cache=context.cache,
            env=context.env,
            retrier=context.retrier,
            transport=context.transport,
            prices=context.prices,
        )

    def __init__(
        self,
        spec: AgentLaneSpec,
        *,
        base_dir: Path,
        executor: Executor,
        cache: CallStore | None = None,
        env: Mapping[str, str] | None = None,
        retrier: Retrier | None = None,
        transport: Any = "auto",
        prices: Mapping[str, Price] | None = None,
        client: ModelStepClient | None = None,
        tool_threads: int = TOOL_THREADS,
    ) -> None:
        from evalglass.lanes.modelstep import AssistantTurn, StepRequest, WireMemo, open_step_client
        from evalglass.lanes.retry import Retrier
        from evalglass.lanes.templating import compile_template

        self._turn_of, self._request, self._wire_memo = AssistantTurn.from_json, StepRequest, WireMemo
        self.spec = spec
        self.executor = executor
        self.cache = cache if spec.cache else None
        self.retrier = retrier or Retrier(spec.retry)
        self.templates = [(role, compile_template(source)) for role, source in spec.message_templates()]
        self.tools, self._workers = build_tools(spec.tools, base_dir, width=tool_threads)
        self.definitions = tuple(tool.definition for tool in self.tools.values())
        self.params = tuple(sorted(spec.sampling().items()))
        self.client: ModelStepClient = client or open_step_client(spec, env=env, transport=transport)
        self.price = (prices or {}).get(spec.model)
        self._state_path = parse_path(spec.state) if spec.state is not None else None
        self._recorded_path = parse_path(spec.recorded_results)
        self._keeps_state = spec.state is not None or any(tool.takes_state for tool in self.tools.values())
        #: At most ``tool_threads`` host tool calls in flight (one worker process each); made on the loop.
        self._tool_gate: asyncio.Semaphore | None = None
        self._tool_threads = tool_threads
        self.fingerprint = content_address(
            {
                "type": "agent",
                "definition": spec.model_dump(mode="json", exclude=set(_OPERATIONAL)),
                "tools": list(self.definitions),
                "sources": {name: tool.source_sha256 for name, tool in self.tools.items() if not tool.recorded},
            }
        )
        # Every step's request holds these three as they are here; only its messages grow.
        self._key_frame = KeyFrame(
            self.fingerprint, StepRequest(spec.model, (), self.definitions, self.params).key_rest()
        )

    @property
    def keeps_state(self) -> bool:
        """Whether its trajectories hold a ``final_state``: a tool takes ``state``, or the task declares one."""
        return self._keeps_state

    # ------------------------------------------------------------------ the Lane port
    @property
    def chunked(self) -> bool:
        return False

    def column_size(self) -> int:
        return 0

    async def produce_many(self, jobs: Sequence[Job]) -> list[LaneOutcome]:
        return list(await asyncio.gather(*(self.produce(*job) for job in jobs)))

    async def produce_column(self, ids: Sequence[str], records: Sequence[Mapping[str, Any]], epochs: int) -> LaneColumn:
        jobs = [
            (example_id, fields, sample)
            for example_id, fields in zip(ids, records, strict=True)
            for sample in range(epochs)
        ]
        from evalglass.lanes.ports import LaneColumn

        return LaneColumn.of(await self.produce_many(jobs))

    async def aclose(self) -> None:
        await self.client.aclose()
        if self._workers is not None:
            self._workers.close()

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        """The trajectory of one (example, sample); never raises for a per-example problem."""
        from evalglass.lanes.ports import LaneFailure, LaneOutput
        from evalglass.lanes.templating import TemplateFailure, render, template_context

        context = template_context(fields, example_id, sample)
        try:
            messages = [
                {
                    "role": role,
                    "parts": [
                        {
                            "type": "text",
                            "content": render(template, context, what=f"the {role} prompt", example_id=example_id),
                        }
                    ],
                }
                for role, template in self.templates
            ]
        except TemplateFailure as failure:
            return LaneFailure(failure.code, failure.message, sample)
        run = self._start(example_id, fields, messages, sample)
        if not isinstance(run, _Trajectory):
            return run
        limit = self.spec.trajectory_timeout
        scope: asyncio.Timeout | None = None
        try:
            if limit is None:
                finish = await self._loop(run, sample)
            else:
                async with asyncio.timeout(limit) as scope:
                    finish = await self._loop(run, sample)
        except TimeoutError:
            if scope is None or not scope.expired():
                raise
            return self._failure(
                run,
                "agent_timeout",
                f"the trajectory did not end within {limit:g}s ({len(run.turns)} steps taken)",
                sample,
            )
        if not isinstance(finish, str):
            return finish
        if run.state is not None:
            # outputs.jsonl could not hold it (a NaN it would hold as null), and a replay would not see what metrics saw
            problem = json_problem(run.state)
            if problem is not None:
                return self._state_not_json(run, f"the trajectory's final state is not JSON ({problem})", sample)
        usage = _summed([usage for usage, _ in run.model_calls])
        from evalglass.core.finish import truncated

        return LaneOutput(
            self._trajectory(run, finish, usage),
            sample,
            cached=run.cached,
            attempts=tuple(run.attempts),
            usage=usage,
            call_id=run.first_key,
            tries=run.tries,
            replayed=run.cached and run.replayed,
            model_calls=tuple(run.model_calls),
            # The final answer cut off at its token limit: noted on every score, as a chat lane's (output_truncated).
            truncated=finish if truncated(finish) else None,
        )

    # ------------------------------------------------------------------ the loop
    def _start(
        self, example_id: str, fields: Mapping[str, Any], messages: list[dict[str, Any]], sample: int
    ) -> _Trajectory | LaneFailure:
        from evalglass.lanes.ports import LaneFailure

        state: Any = None
        if self._state_path is not None:
            state = get_path(fields, self._state_path)
            if state is ABSENT:
                return LaneFailure(
                    "state_missing", f"example {example_id} has no '{self.spec.state}' (the agent lane's state)", sample
                )
            state = copy.deepcopy(state)
        elif self._keeps_state:
            state = {}
        recorded: Any = []
        if any(tool.recorded for tool in self.tools.values()):
            recorded = get_path(fields, self._recorded_path)
            if recorded is ABSENT:
                recorded = []
            if not isinstance(recorded, list) or not all(isinstance(item, Mapping) for item in recorded):
                return LaneFailure(
                    "recorded_results_malformed",
                    f"example {example_id}: '{self.spec.recorded_results}' must be a list of "
                    "{name, arguments?, result | error} objects",
                    sample,
                )
        return _Trajectory(
            messages,
            state,
            recorded,
            wire=self._wire_memo(),
            keys=self._wire_memo(),
            key_start=functools.partial(self._key_frame.start, sample),
        )

    async def _loop(self, run: _Trajectory, sample: int) -> str | LaneFailure:
        """Steps until the model answers without calling a tool (its finish reason, ``stop`` by default) or the
        budget is spent (``max_steps``)."""
        for _ in range(self.spec.max_steps):
            request = self._request(self.spec.model, tuple(run.messages), self.definitions, self.params, run.wire)
            # The first step's key is the trajectory's call id; later ones are needed only to look up the cache.
            # Each is ``cache_key(fingerprint, request.key_body(), sample)``, made from the messages added since
            # the last step (``callcache.KeyFrame``: the lane never changes a message it holds).
            keyed: GrownRequest | None = None
            if self.cache is not None or run.first_key is None:
                assert run.keys is not None and run.key_start is not None
                keyed = run.keys.extend(request.messages, run.key_start, GrowingKey.add).current()
                if run.first_key is None:
                    run.first_key = keyed.key
            step = await self._step(request, keyed)
            run.attempts.extend(step.attempts)
            run.tries += step.tries
            run.steps_tried += 1 if step.tries else 0
            if step.turn is None:
                assert step.fault is not None
                code = "agent_step_timeout" if step.timed_out else step.fault.code
                return self._failure(run, code, step.fault.message, sample, step.fault.detail)
            turn = step.turn
            run.cached = run.cached and step.cached
            run.replayed = run.replayed and step.replayed
            run.model_calls.append((turn.usage, step.cached and not step.replayed))
            run.turns.append(turn)
            run.messages.append(turn.message())
            if not turn.calls:
                return turn.finish_reason or "stop"
            for call in turn.calls:
                answered = await self._tool(call, run, sample)
                if not isinstance(answered, dict):
                    return answered
                run.messages.append({"role": "tool", "parts": [answered]})
        return "max_steps"

    async def _step(self, request: StepRequest, keyed: GrownRequest | None) -> _Step:
        """One model step through the call cache (``keyed``: its key and the request as keyed): replayed, or made
        and stored when it succeeded. Without a cache, just made."""
        cache = self.cache
        if cache is None or keyed is None:
            return await self._call(request)
        from evalglass.lanes.chatcall import recorded_tries

        def replay(hit: Hit) -> _Step | None:
            value = hit.value
            if isinstance(value, dict) and isinstance(value.get("turn"), dict):
                return _Step(self._turn_of(value["turn"]), None, True, hit.replayed, (), recorded_tries(value))
            return None

        def stored(made: _Step) -> dict[str, Any] | None:
            return None if made.turn is None else {"turn": made.turn.to_json(), "attempts": made.tries}

        return await through_cache(
            cache,
            keyed.key,
            kind="agent",
            request=keyed,
            replay=replay,
            call=lambda: self._call(request),
            stored=stored,
        )

    async def _call(self, request: StepRequest) -> _Step:
        """One model step made: with retries, within ``step_timeout`` counted from when its first attempt is sent.

        The time a step waits for a concurrency slot before that (other trajectories' steps in flight) is not the
        step's: counted, a step would time out without being sent, as if the endpoint had been slow."""
        client, limit, submit, timeout = self.client, self.client.limit, self.executor.submit, self.spec.step_timeout

        if timeout is None:  # no scope to enter: the retrier turns whatever an attempt raises into a fault

            async def one(_number: int) -> Any:
                return await submit(lambda: client.attempt(request), endpoint=limit)

            outcome = await self.retrier.run(one)
        else:
            loop, seconds = asyncio.get_running_loop(), timeout
            try:
                async with asyncio.timeout(None) as scope:

                    def sent() -> Any:  # called by the executor once the attempt holds its slots
                        if scope.when() is None:
                            scope.reschedule(loop.time() + seconds)
                        return client.attempt(request)

                    async def clocked(_number: int) -> Any:
                        return await submit(sent, endpoint=limit)

                    outcome = await self.retrier.run(clocked)
            except TimeoutError:
                from evalglass.lanes.retry import Fault, FaultKind

                fault = Fault(FaultKind.TIMEOUT, f"the model step did not end within {timeout:g}s (step_timeout)")
                return _Step(None, fault, False, False, (), 1, timed_out=True)
        turn = outcome.value if outcome.fault is None else None
        return _Step(turn, outcome.fault, False, False, outcome.attempts, len(outcome.attempts))

    def _failure(
        self, run: _Trajectory, code: str, message: str, sample: int, detail: str | None = None
    ) -> LaneFailure:
        from evalglass.lanes.ports import LaneFailure

        return LaneFailure(
            code,
            f"{message} (after {len(run.turns)} steps)",
            sample,
            detail,
            tuple(run.attempts),
            run.first_key,
            run.tries,
            run.steps_tried,
        )

    def _state_not_json(self, run: _Trajectory, why: str, sample: int) -> LaneFailure:
        return self._failure(
            run,
            "state_not_json",
            f"{why}; keep the state JSON (mappings with text keys, lists, text, numbers, booleans, null)",
            sample,
        )

    # ------------------------------------------------------------------ tools
    async def _tool(self, call: StepCall, run: _Trajectory, sample: int) -> dict[str, Any] | LaneFailure:
        """Run one call; its ``tool_call_response`` part (an error is one too); the call recorded in ``run``."""
        record: dict[str, Any] = {"id": call.id, "name": call.name} if call.id is not None else {"name": call.name}
        if call.invalid is not None:
            record["invalid_arguments"] = call.invalid
        else:
            record["arguments"] = call.arguments
        run.calls.append(record)
        tool = self.tools.get(call.name)
        if tool is None:
            offered = ", ".join(self.tools)
            return _error(record, "unknown_tool", f"there is no tool {call.name!r}; the tools are: {offered}")
        if call.invalid is not None:
            return _error(record, "arguments_not_json", f"the arguments are not JSON: {call.invalid}")
        if tool.recorded:
            return self._recorded(tool, call, record, run, sample)
        return await self._host(tool, call, record, run, sample)

    def _recorded(
        self, tool: Tool, call: StepCall, record: dict[str, Any], run: _Trajectory, sample: int
    ) -> dict[str, Any] | LaneFailure:
        """The first unused recorded result for this tool whose recorded arguments (if any) equal the call's."""
        from evalglass.core.jsonvalue import NotJsonError, json_key

        for index, entry in enumerate(run.recorded):
            if index in run.used or entry.get("name") != tool.name:
                continue
            try:
                if "arguments" in entry and json_key(entry["arguments"]) != json_key(call.arguments):
                    continue
            except NotJsonError:
                continue
            run.used.add(index)
            if "error" in entry:
                return _error(record, "recorded_error", str(entry["error"]))
            record["result"] = entry.get("result")
            return _response(record, entry.get("result"))
        return self._failure(
            run,
            "no_recorded_result",
            f"the recorded results have no (unused) result for {tool.name}({_shown(call.arguments)}): the replay "
            "cannot say what the tool answered",
            sample,
        )

    async def _host(
        self, tool: Tool, call: StepCall, record: dict[str, Any], run: _Trajectory, sample: int
    ) -> dict[str, Any] | LaneFailure:
        """The call made by a tool worker (``lanes/hosttools.py``): the arguments go out as JSON (so the call the
        trajectory recorded is never the tool's to change), with the state when the tool takes it; the result,
        the error, and the state as the tool left it come back as data."""
        from evalglass.lanes.hosttools import RETURNED, STATE_NOT_JSON, decode_reply, tool_request
        from evalglass.lanes.hostworker import WorkerDied, WorkerStartError

        workers = self._workers
        assert workers is not None and tool.reference is not None
        if not isinstance(call.arguments, dict):
            return _error(record, "arguments_rejected", "the arguments must be a JSON object")
        timeout = self.spec.step_timeout
        request = tool_request(tool.name, call.arguments, run.state if tool.takes_state else None)
        if self._tool_gate is None:
            self._tool_gate = asyncio.Semaphore(self._tool_threads)
        # The wait for a free worker is not the call's: its clock starts when the request is sent.
        async with self._tool_gate:
            try:
                reply = await workers.call_here(request, timeout)
            except TimeoutError:
                # Its worker was killed mid-call: whatever it did to the state is gone with it (the trajectory
                # goes on with the state as it was before the call).
                return _error(record, "tool_timeout", f"{tool.name} did not return within {timeout:g}s")
            except (WorkerDied, WorkerStartError) as exc:
                return _error(record, "tool_worker_lost", f"{tool.name} did not answer: {exc}")
        answer = decode_reply(reply)
        if answer is None:
            why = f"{tool.name} did not answer: its worker process sent what is not an answer"
            return _error(record, "tool_worker_lost", why)
        if answer[0] == STATE_NOT_JSON:
            return self._state_not_json(run, answer[1], sample)
        if tool.takes_state and len(answer) == (3 if answer[0] == RETURNED else 4):
            run.state = answer[-1]
        if answer[0] != RETURNED:
            return _error(record, answer[1], answer[2])
        value = answer[1]
        record["result"] = value
        return _response(record, value)

    # ------------------------------------------------------------------ the output
    def _trajectory(self, run: _Trajectory, finish: str, usage: Usage | None) -> dict[str, Any]:
        last = run.turns[-1] if run.turns else None
        trajectory: dict[str, Any] = {"messages": run.messages, "tool_calls": run.calls}
        if last is not None and last.text is not None:
            trajectory["text"] = last.text
        trajectory["finish"] = finish
        trajectory["steps"] = len(run.turns)
        if last is not None and last.finish_reason is not None:
            trajectory["finish_reasons"] = [last.finish_reason]
        if last is not None and last.model is not None:
            trajectory["model"] = last.model
        tokens: dict[str, int] = {}
        unrecorded: list[str] = []
        # A total some step did not report is left out and listed (``not_recorded``), never a sum of the others.
        # The prompt cache's counts are listed only when some step reported one: an API that never speaks of a
        # cache (most OpenAI-compatible servers) leaves them out, as it always did.
        steps = [step for step, _ in run.model_calls if step is not None]
        for name, value, spoken in (
            ("input_tokens", None if usage is None else usage.prompt_tokens, True),
            ("output_tokens", None if usage is None else usage.completion_tokens, True),
            (
                "cache_read_input_tokens",
                None if usage is None else usage.cache_read_tokens,
                any(step.cache_read_tokens is not None for step in steps),
            ),
            (
                "cache_creation_input_tokens",
                None if usage is None else usage.cache_write_tokens,
                any(step.cache_write_tokens is not None for step in steps),
            ),
        ):
            if value is not None:
                tokens[name] = value
            elif spoken:
                unrecorded.append(f"usage.{name}")
        trajectory["usage"] = tokens
        if self.price is not None:
            # Priced only from totals every step reported: a cost over part of the steps is an undercount. Cache
            # reads some step did not report are priced as uncached prompt tokens (an upper bound, as without a
            # cache price: docs/providers.md); cache writes cost more than the prompt, so not knowing them is not.
            needed = ("usage.input_tokens", "usage.output_tokens", "usage.cache_creation_input_tokens")
            if usage is None or any(name in unrecorded for name in needed):
                unrecorded.append("cost")
            else:
                assert usage.prompt_tokens is not None and usage.completion_tokens is not None  # both recorded
                trajectory["cost"] = self.price.cost(
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    usage.cache_read_tokens or 0,
                    usage.cache_write_tokens or 0,
                )
        if unrecorded:
            trajectory[NOT_RECORDED] = unrecorded
        if run.state is not None:
            trajectory["final_state"] = run.state
        return trajectory


def _error(record: dict[str, Any], kind: str, message: str) -> dict[str, Any]:
    """The call failed: recorded with its error, and the model told (a ``tool_call_response`` flagged as an error)."""
    text = redaction.current().head(message, _ERROR_CHARS)
    record["error_type"] = kind
    record["error"] = text
    part: dict[str, Any] = {"type": "tool_call_response", "response": f"error: {text}", "error": True}
    if "id" in record:
        part["id"] = record["id"]
    return part


def _response(record: Mapping[str, Any], value: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool_call_response", "response": value}
    if "id" in record:
        part["id"] = record["id"]
    return part


def _summed(usages: list[Usage | None]) -> Usage | None:
    """The trajectory's tokens: each count summed over the model steps, or None when any step did not report it
    (a sum over the steps that did would undercount, and a budget would pass on tokens never measured). None when no
    step reported any usage."""
    from evalglass.lanes.chatcall import Usage

    if not usages or all(usage is None for usage in usages):
        return None

    def total(values: list[int | None]) -> int | None:
        return None if None in values else sum(values)  # type: ignore[arg-type]

    reported = [usage if usage is not None else Usage() for usage in usages]
    return Usage(
        total([usage.prompt_tokens for usage in reported]),
        total([usage.completion_tokens for usage in reported]),
        total([usage.total_tokens for usage in reported]),
        total([usage.cache_read_tokens for usage in reported]),
        total([usage.cache_write_tokens for usage in reported]),
    )


def _shown(arguments: Any) -> str:
    try:
        return orjson.dumps(arguments).decode()[:200]
    except TypeError:
        return "..."


__all__ = ["AgentLane", "Tool", "build_tools"]
