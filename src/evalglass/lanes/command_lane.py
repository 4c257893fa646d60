"""``type: command``: an argv list as the task lane, the example's fields as JSON on its stdin, its stdout parsed as
JSON or kept as text.

Each call runs the command in a session of its own (lanes/subprocesses.py), so a timeout or a cancelled run kills
its whole process group; ``EVALGLASS_EXAMPLE_ID`` and ``EVALGLASS_SAMPLE`` are in its environment. With a cluster
executor, each call is shipped and the command runs with the worker's environment (:func:`shipped_command_call`).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from evalglass import redaction
from evalglass.core.fingerprint import content_address
from evalglass.core.outputparse import UnparsedOutput
from evalglass.lanes.base import (
    DECLARED_JSON,
    TASK_RESOURCES,
    LaneConfigError,
    LaneContext,
    TaskLane,
    detail_tail,
    fields_key,
    through_cache_by_fields,
)
from evalglass.lanes.callcache import CallStore
from evalglass.lanes.checkinputs import program_hashes
from evalglass.lanes.childwatch import pidfd_watcher
from evalglass.lanes.executor import EndpointLimit, Executor, Offload, WorkLost, base_dir_here
from evalglass.lanes.ports import LaneFailure, LaneOutcome, LaneOutput
from evalglass.lanes.projectstate import project_state
from evalglass.lanes.specs import CommandLaneSpec
from evalglass.lanes.subprocesses import NotStarted, TimedOut, run_in_session
from evalglass.readers.jsonvalues import non_finite


class CommandLane(TaskLane):
    spec: CommandLaneSpec

    @classmethod
    def build(cls, spec: CommandLaneSpec, context: LaneContext) -> CommandLane:
        return cls(spec, base_dir=context.base_dir, executor=context.executor, cache=context.cache, env=context.env)

    def __init__(
        self,
        spec: CommandLaneSpec,
        *,
        base_dir: Path,
        executor: Executor,
        cache: CallStore | None,
        env: Mapping[str, str] | None,
    ) -> None:
        self.spec = spec
        self.executor = executor
        self.cache = cache if spec.cache else None
        self.base_dir = base_dir
        self.cwd = (base_dir / spec.cwd).resolve() if spec.cwd else base_dir.resolve()
        if not self.cwd.is_dir():
            raise LaneConfigError(f"command lane: cwd {spec.cwd} is not a directory (looked for {self.cwd})")
        self.base_env = dict(os.environ if env is None else env)
        # Built once: what the command is given (EVALGLASS_EXAMPLE_ID and EVALGLASS_SAMPLE are no secrets).
        self.redactor = redaction.current({**self.base_env, **spec.env})
        program = self.cwd / spec.argv[0]
        program_hash = hashlib.sha256(program.read_bytes()).hexdigest() if program.is_file() else None
        keyed: dict[str, Any] = {
            "type": "command",
            "argv": list(spec.argv),
            "output": spec.output,
            "cwd": spec.cwd,
            "env": spec.env,
            "program_sha256": program_hash,
        }
        # What the command runs besides argv[0]: `[python, answer.py]` names an interpreter first, so the program,
        # what it imports and any file its argv names must be in the key too, or a changed program (a pull request's)
        # would be answered from the cache by the old one's outputs. Only when there is any: a command naming no
        # file keeps its key (and its cached answers).
        # And what it opens that no scan names (a data file, a prompt, a compiled program, a module an import hook
        # finds): the whole project's state (lanes/projectstate.py), so a pull request changing any file of it is
        # asked again. Computed only when something caches the lane's answers.
        code = program_hashes(spec.argv, spec.cwd, spec.env, base_dir) if self.cache is not None else {}
        project = project_state(base_dir) if self.cache is not None else ""
        if code is None or project is None:  # cannot be read whole: a key no entry has, so every call is made
            keyed["unkeyable"] = os.urandom(16).hex()
        else:
            if code:
                keyed["code"] = code
            if project:
                keyed["project"] = project
        self.fingerprint = content_address(keyed)
        self.limit = EndpointLimit(key=f"command:{spec.argv[0]}", concurrency=spec.concurrency)
        #: The shipped call with the spec and the (absolute) evals folder bound once (see PythonLane._shipped).
        self._shipped = functools.partial(shipped_command_call, spec, str(base_dir.resolve()))
        #: While the lane is open, a process's exit reaches the loop through a pidfd, not a thread per process
        #: (lanes/childwatch.py: Python 3.11 only; 3.12 does so by default).
        self.release_watcher = pidfd_watcher()

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        key = fields_key(self.cache, self.fingerprint, fields, sample)
        offload = self.executor.offload

        async def call() -> LaneOutcome:
            if offload is None:
                return await self.executor.submit(lambda: self._run(example_id, fields, sample), endpoint=self.limit)
            return await self.executor.submit(
                lambda: self._run_shipped(offload, example_id, fields, sample), endpoint=self.limit
            )

        return await through_cache_by_fields(self.cache, key, sample, "command", call)

    async def aclose(self) -> None:
        self.release_watcher()

    async def _run_shipped(
        self, offload: Offload, example_id: str, fields: Mapping[str, Any], sample: int
    ) -> LaneOutcome:
        """The command on a cluster worker; the worker enforces the timeout and kills the process group."""
        try:
            return await offload.run(TASK_RESOURCES, self._shipped, example_id, dict(fields), sample)
        except WorkLost as exc:
            return LaneFailure("task_worker_lost", f"{self.spec.argv[0]} could not run on the cluster: {exc}", sample)

    async def _run(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        spec = self.spec
        try:
            stdin = orjson.dumps(dict(fields))
        except TypeError as exc:
            return LaneFailure("task_input_unserialisable", f"example {example_id} is not JSON: {exc}", sample)
        # orjson writes a NaN (a Parquet cell's) as null: the command would get another input than the file holds
        problem = non_finite(fields) if b"null" in stdin else None
        if problem is not None:
            return LaneFailure("task_input_unserialisable", f"example {example_id} is not JSON: {problem}", sample)
        env = {**self.base_env, **spec.env, "EVALGLASS_EXAMPLE_ID": example_id, "EVALGLASS_SAMPLE": str(sample)}
        redactor = self.redactor
        try:
            finished = await run_in_session(spec.argv, stdin, cwd=self.cwd, env=env, timeout=spec.timeout)
        except NotStarted as failed:
            return LaneFailure(
                "task_spawn_failed", redactor.text(f"cannot start {spec.argv[0]!r}: {failed.error}"), sample
            )
        if isinstance(finished, TimedOut):
            return LaneFailure(
                "task_timeout", f"{spec.argv[0]} did not finish within {spec.timeout:g}s (killed)", sample
            )
        stdout, stderr = finished.stdout, finished.stderr
        if finished.returncode != 0:
            return LaneFailure(
                "task_exit_nonzero",
                f"{spec.argv[0]} exited with code {finished.returncode}",
                sample,
                detail=detail_tail(stderr.decode("utf-8", "replace"), redactor) or None,
            )
        text = stdout.decode("utf-8", "replace")
        if spec.output == "text":
            return LaneOutput(text.rstrip("\r\n"), sample)
        try:
            return LaneOutput(orjson.loads(text), sample)
        except orjson.JSONDecodeError as exc:
            # A wrong answer, measured (core.outputparse, metrics.invalid): not a failure of the evaluator.
            return LaneOutput(UnparsedOutput(text, str(exc), declared=DECLARED_JSON), sample)


def shipped_command_call(
    spec: CommandLaneSpec, base_dir: str, example_id: str, fields: dict[str, Any], sample: int
) -> LaneOutcome:
    """One command-lane call on a cluster worker: the lane built here (the command runs with the worker's own
    environment, where its secrets are) and run on an event loop of the worker's own."""
    from evalglass.lanes.executor import AsyncioExecutor

    try:
        lane = CommandLane(spec, base_dir=base_dir_here(base_dir), executor=AsyncioExecutor(), cache=None, env=None)
    except LaneConfigError as exc:
        return LaneFailure("task_worker_setup", f"the command lane cannot run on this worker: {exc}", sample)
    try:
        return asyncio.run(lane._run(example_id, fields, sample))
    finally:
        lane.release_watcher()


__all__ = ["CommandLane", "shipped_command_call"]
