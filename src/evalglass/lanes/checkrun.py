"""Bound command checks, the effectful half: bind a declared check, run it, record everything.

The declarations (:class:`CheckSpec`, :class:`TargetSpec`) are in ``lanes.checkspec`` and re-exported here.

One run of a check, in order:

1. observe the target's fingerprint once (``lanes.targetstate``) and compare it with the requested one,
   if any. Only a ``bound`` or ``unbound`` target lets the command start; ``mismatch`` and
   ``unavailable`` are ERROR with ``command_started=False``;
2. start the declared command (an argv list; a shell only with ``shell: true``) in its own session, with
   stdin closed and stdout/stderr drained continuously so a flood never blocks it (only the last
   ``output_cap_bytes`` of each are kept);
3. wait up to ``timeout`` seconds; on expiry kill the whole process group (grandchildren included).
   Whatever the command left running in its group when it exited is killed as well;
4. observe the target again: a check that changed its own target is ERROR (``target_modified``) unless
   it declares ``writes_target: true``;
5. map the exit code through the declared :class:`~evalglass.core.checks.ExitCodePolicy`, the one reader of an
   exit code (a shell's 127 included: only a command that could not be started has none).

A standalone check's record also says what its command runs that neither its ``inputs:`` nor its target binds
(``unbound_inputs``, found before it starts by ``lanes.checkinputs``).

Every fault of the measurement is ERROR, never FAIL. The functions here do not raise for anything a
command or a target can do; they raise :class:`CheckConfigError` only for a misuse that configuration
loading should have caught.

Per-example checks materialise the example's output as files in a private temporary folder (mode 0700,
removed afterwards) that becomes the bound target. Example content is only ever written to files, never
put on a command line or into a shell string. The command finds the folder through the ``{target}``
placeholder in its argv and the ``EVALGLASS_TARGET`` environment variable.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, TypeAlias

from evalglass import redaction
from evalglass.core.checks import (
    CHECK_REPAIRS,
    BindingStatus,
    CheckOutcome,
    CheckReason,
    CheckResult,
)
from evalglass.core.redact import REDACTED, Redactor, is_secret_name, redact_env, secret_values
from evalglass.lanes.checkinputs import code_change, unbound_inputs
from evalglass.lanes.checkspec import (
    DEFAULT_OUTPUT_CAP,
    DEFAULT_TIMEOUT,
    TARGET_ENV,
    TARGET_PLACEHOLDER,
    CheckConfigError,
    CheckSpec,
    OutputRefused,
    TargetSpec,
    output_name,
    path_problems,
    resolve_within,
)
from evalglass.lanes.procgroup import kill_group
from evalglass.lanes.targetstate import (
    TargetUnavailable,
    fingerprint_files,
    fingerprint_target,
)

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "DEFAULT_TIMEOUT",
    "EXAMPLE_TARGET",
    "REDACTED",
    "TARGET_ENV",
    "TARGET_PLACEHOLDER",
    "CheckConfigError",
    "CheckSpec",
    "ExampleOutput",
    "OutputRefused",
    "TargetSpec",
    "is_secret_name",
    "materialise_output",
    "path_problems",
    "redact_env",
    "run_check",
    "run_checks",
    "run_example_check",
    "secret_values",
]

#: An argv element that is exactly ``{python}`` runs the interpreter EvalGlass runs under, so a checker script
#: works the same in a virtual environment, in CI and on a machine whose PATH has no ``python``.
PYTHON_PLACEHOLDER = "{python}"
#: How a per-example target (a temporary folder that no longer exists) is named in records.
EXAMPLE_TARGET = "{target}"

_FINGERPRINT = re.compile(r"^sha256:[0-9a-f]{64}$")
_READ_CHUNK = 64 * 1024
_READER_JOIN_S = 5.0


# ------------------------------------------------------------------------------------------------------------
# Running
# ------------------------------------------------------------------------------------------------------------


class _Tail(threading.Thread):
    """Drains one pipe to EOF, counting every byte and keeping the last ``cap`` of them plus ``margin`` more, so that
    a secret straddling the cut is still whole when the text is redacted (and only then cut to ``cap``)."""

    def __init__(self, stream: IO[bytes], cap: int, margin: int = 0) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._cap = cap
        self._keep = cap + margin if cap else 0
        self._buffer = bytearray()
        self.total = 0

    def run(self) -> None:
        fd = self._stream.fileno()
        cap = self._keep
        while True:
            try:
                chunk = os.read(fd, _READ_CHUNK)
            except OSError:
                break
            if not chunk:
                break
            self.total += len(chunk)
            if cap:
                self._buffer += chunk
                if len(self._buffer) > 2 * cap:
                    del self._buffer[:-cap]

    def text(self, redactor: Redactor) -> str:
        """The redacted tail: at most ``cap`` bytes of what the command wrote last."""
        kept = bytes(self._buffer[-self._keep :]) if self._keep else b""
        return redactor.tail_bytes(kept.decode("utf-8", errors="replace"), self._cap)


def _last_line(redactor: Redactor, *texts: str) -> str | None:
    for text in texts:
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line:
                return redactor.head(line, 300, "...")
    return None


def _now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class _Run:
    """The facts of one check run, gathered step by step and frozen into a CheckResult."""

    def __init__(
        self,
        spec: CheckSpec,
        check_id: str,
        example_id: str | None,
        target_label: str | None,
        env_record: dict[str, str],
    ) -> None:
        self.started_monotonic = time.monotonic()
        self.facts: dict[str, Any] = {
            "check_id": check_id,
            "example_id": example_id,
            "target": target_label,
            "writes_target": spec.writes_target,
            "command": spec.argv,
            "shell": spec.shell,
            "cwd": spec.cwd or ".",
            "env": env_record,
            "timeout_s": spec.timeout,
            "policy": spec.policy,
            "policy_fingerprint": spec.policy.fingerprint,
            "started_at": _now_utc(),
            "output_cap_bytes": spec.output_cap_bytes,
            "binding": BindingStatus.UNBOUND,
            "command_started": False,
        }

    def finish(
        self, outcome: CheckOutcome, reason: CheckReason | None = None, detail: str | None = None
    ) -> CheckResult:
        return CheckResult(
            **self.facts,
            outcome=outcome,
            repair=CHECK_REPAIRS[outcome],
            reason=reason,
            detail=detail,
            duration_s=max(0.0, time.monotonic() - self.started_monotonic),
        )

    def error(self, reason: CheckReason, detail: str) -> CheckResult:
        return self.finish(CheckOutcome.ERROR, reason, detail)


def _short(fingerprint: str) -> str:
    return fingerprint[: len("sha256:") + 12]


def _execute(
    spec: CheckSpec,
    base_dir: Path,
    *,
    check_id: str,
    example_id: str | None,
    target_dir: Path | None,
    target_label: str | None,
    requested: str | None,
    run: _Run | None = None,
    env: dict[str, str] | None = None,
) -> CheckResult:
    if env is None:
        env = _child_env(spec, target_dir)
    if run is None:
        run = _Run(spec, check_id, example_id, target_label, _env_record(spec, target_dir))
    facts = run.facts
    include = spec.target.include if spec.target else ()
    exclude = spec.target.exclude if spec.target else ()

    # 1. Binding: observe the target once, before anything runs.
    before: str | None = None
    if target_dir is not None:
        facts["requested_fingerprint"] = requested
        try:
            before = fingerprint_target(target_dir, include, exclude).fingerprint
        except TargetUnavailable as exc:
            facts["binding"] = BindingStatus.UNAVAILABLE
            return run.error(CheckReason.TARGET_UNAVAILABLE, str(exc))
        facts["observed_fingerprint"] = before
        if requested is None:
            facts["binding"] = BindingStatus.UNBOUND
        elif requested == before:
            facts["binding"] = BindingStatus.BOUND
        else:
            facts["binding"] = BindingStatus.MISMATCH
            return run.error(
                CheckReason.BINDING_MISMATCH,
                f"the target's state is {_short(before)}…, not the requested {_short(requested)}…: "
                "nothing was measured against the requested state",
            )

    # The code: still the bytes the run hashed at load (what the gate's approval binds)? Host code (a lane, a
    # metric) ran since, and may have rewritten the checker; the command must not run what no approval covers.
    rewritten = code_change(spec, base_dir)
    if rewritten is not None:
        return run.error(CheckReason.CODE_MODIFIED, f"{rewritten}; the command was not started")

    # 2. Where to run.
    try:
        cwd = resolve_within(base_dir, spec.cwd or ".", "cwd")
    except CheckConfigError as exc:
        return run.error(CheckReason.PATH_ESCAPES_BASE, str(exc))
    if not cwd.is_dir():
        return run.error(CheckReason.CWD_UNAVAILABLE, f"working folder {spec.cwd or '.'!r} is not a folder")

    command: str | list[str]
    if isinstance(spec.command, str):
        command = spec.command
    else:
        where = str(target_dir) if target_dir is not None else TARGET_PLACEHOLDER
        command = [
            sys.executable if part == PYTHON_PLACEHOLDER else part.replace(TARGET_PLACEHOLDER, where)
            for part in spec.command
        ]

    # 3. Start, drain, wait.
    try:
        process = subprocess.Popen(
            command,
            shell=spec.shell,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,
            close_fds=True,
        )
    except FileNotFoundError as exc:
        return run.error(CheckReason.COMMAND_NOT_FOUND, f"cannot start {spec.argv[0]!r}: {exc.strerror or exc}")
    except PermissionError as exc:
        return run.error(CheckReason.PERMISSION_DENIED, f"cannot start {spec.argv[0]!r}: {exc.strerror or exc}")
    except OSError as exc:
        return run.error(CheckReason.SPAWN_FAILED, f"cannot start {spec.argv[0]!r}: {exc.strerror or exc}")
    facts["command_started"] = True
    assert process.stdout is not None and process.stderr is not None
    # A command may echo a credential it was given; the record must not carry it, whole or cut in two.
    redactor = redaction.current(env)
    margin = 4 * max((len(value) for value in redactor.secrets), default=0)
    readers = (
        _Tail(process.stdout, spec.output_cap_bytes, margin),
        _Tail(process.stderr, spec.output_cap_bytes, margin),
    )
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        returncode = process.wait(timeout=spec.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(process.pid)
        returncode = process.wait()
    finally:
        # Anything the command left running in its session goes with it (and stops holding our pipes open).
        kill_group(process.pid)
        for reader in readers:
            reader.join(_READER_JOIN_S)
        process.stdout.close()
        process.stderr.close()
    stdout, stderr = readers[0].text(redactor), readers[1].text(redactor)
    facts.update(
        stdout_tail=stdout,
        stderr_tail=stderr,
        stdout_total_bytes=readers[0].total,
        stderr_total_bytes=readers[1].total,
    )

    # 4. Did the command change what it measured?
    after: str | None = None
    if target_dir is not None:
        try:
            after = fingerprint_target(target_dir, include, exclude).fingerprint
        except TargetUnavailable:
            after = None
        facts["observed_after_fingerprint"] = after
    changed = target_dir is not None and after != before

    # 5. Judge. Code rewritten while the command ran (by it, or by host code running beside it) voids any result.
    rewritten = code_change(spec, base_dir)
    if rewritten is not None:
        return run.error(CheckReason.CODE_MODIFIED, f"{rewritten}, while the command ran")
    if timed_out:
        return run.error(
            CheckReason.TIMEOUT, f"no exit within {spec.timeout:g}s; the command's process group was killed"
        )
    if returncode < 0:
        facts["signal"] = -returncode
        name = _signal_name(-returncode)
        return run.error(CheckReason.KILLED_BY_SIGNAL, f"the command was killed by {name}")
    facts["exit_code"] = returncode
    last = _last_line(redactor, stderr, stdout)
    if changed and not spec.writes_target:
        state = "became unreadable" if after is None else f"moved from {_short(before or '')}… to {_short(after)}…"
        return run.error(
            CheckReason.TARGET_MODIFIED,
            f"the command changed its own target (state {state}); declare writes_target: true if it must",
        )
    outcome = spec.policy.outcome_for(returncode)
    if outcome is None:
        return run.error(
            CheckReason.UNMAPPED_EXIT_CODE,
            f"exit code {returncode} is not mapped by the total policy {spec.policy.describe()}",
        )
    if outcome is CheckOutcome.INCONCLUSIVE:
        detail = f"exit code {returncode} is declared inconclusive by {spec.policy.id}"
        return run.finish(outcome, CheckReason.DECLARED_INCONCLUSIVE, detail + (f": {last}" if last else ""))
    if outcome is CheckOutcome.FAIL:
        return run.finish(outcome, None, f"exit code {returncode}" + (f": {last}" if last else ""))
    return run.finish(outcome)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _child_env(spec: CheckSpec, target_dir: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(spec.env)
    if target_dir is not None:
        env[TARGET_ENV] = str(target_dir)
    else:
        env.pop(TARGET_ENV, None)
    return env


def _env_record(spec: CheckSpec, target_dir: Path | None) -> dict[str, str]:
    """What the record says about the command's environment: only the variables the check declares (the inherited
    environment is the machine's, not the check's, and may hold secrets under any name), values redacted by rule."""
    recorded = dict(spec.env)
    if target_dir is not None:
        recorded[TARGET_ENV] = TARGET_PLACEHOLDER
    return redact_env(recorded, redaction.declared())


def _check_requested(expected_fingerprint: str | None) -> None:
    if expected_fingerprint is not None and not _FINGERPRINT.match(expected_fingerprint):
        raise CheckConfigError(
            f"expected fingerprint {expected_fingerprint!r} is not of the form sha256:<64 lowercase hex>"
        )


def run_check(
    spec: CheckSpec,
    base_dir: str | os.PathLike[str],
    *,
    check_id: str,
    expected_fingerprint: str | None = None,
) -> CheckResult:
    """Run one standalone check against its declared target (if any) and return what it established.

    ``expected_fingerprint`` is the state the request names: the target must be exactly in that state
    (``bound``) or the command never starts (``mismatch`` → ERROR). Without it the run is ``unbound`` and the
    observed state is still recorded. Raises :class:`CheckConfigError` only for a misuse (a per-example spec,
    or a fingerprint requested for a check with no target).
    """
    base = Path(base_dir)
    _check_requested(expected_fingerprint)
    if spec.target is not None and spec.target.path is None:
        raise CheckConfigError(
            f"check {check_id!r} declares a target without a path: that form is for per-example checks"
        )
    if spec.target is None and expected_fingerprint is not None:
        raise CheckConfigError(f"check {check_id!r} has no target, so no fingerprint can be requested")
    # Found before anything runs, so the record says what the command ran that no input binds, whatever its end.
    unbound = unbound_inputs(spec, base)
    if spec.target is None:
        run = _Run(spec, check_id, None, None, _env_record(spec, None))
        run.facts["unbound_inputs"] = unbound
        return _execute(
            spec, base, check_id=check_id, example_id=None, target_dir=None, target_label=None, requested=None, run=run
        )
    label = spec.target.path
    try:
        target_dir = resolve_within(base, label or ".", "target")
    except CheckConfigError as exc:
        run = _Run(spec, check_id, None, label, _env_record(spec, None))
        run.facts.update(
            binding=BindingStatus.UNAVAILABLE, requested_fingerprint=expected_fingerprint, unbound_inputs=unbound
        )
        return run.error(CheckReason.PATH_ESCAPES_BASE, str(exc))
    run = _Run(spec, check_id, None, label, _env_record(spec, target_dir))
    run.facts["unbound_inputs"] = unbound
    return _execute(
        spec,
        base,
        check_id=check_id,
        example_id=None,
        target_dir=target_dir,
        target_label=label,
        requested=expected_fingerprint,
        run=run,
    )


def run_checks(
    specs: Mapping[str, CheckSpec],
    base_dir: str | os.PathLike[str],
    *,
    expected: Mapping[str, str] | None = None,
    max_workers: int | None = None,
) -> dict[str, CheckResult]:
    """Run several standalone checks concurrently; results keyed and ordered like ``specs``."""
    expected = expected or {}
    unknown = sorted(set(expected) - set(specs))
    if unknown:
        raise CheckConfigError(f"fingerprints requested for undeclared checks: {', '.join(unknown)}")
    names = list(specs)
    jobs = [
        functools.partial(run_check, specs[name], base_dir, check_id=name, expected_fingerprint=expected.get(name))
        for name in names
    ]
    return dict(zip(names, _run_all(jobs, max_workers), strict=True))


# ------------------------------------------------------------------------------------------------------------
# Per-example checks
# ------------------------------------------------------------------------------------------------------------

#: What an example's output may be for a check: one text (or bytes) → one file named ``output_file``;
#: a mapping of relative file names to text (or bytes) → several files.
ExampleOutput: TypeAlias = str | bytes | Mapping[str, str | bytes]


def materialise_output(output: object, output_file: str) -> dict[str, bytes]:
    """The files (relative POSIX name → bytes) an output becomes. Raises :class:`OutputRefused` for anything
    that is not text, bytes, or a mapping of safe names to text/bytes (so no name may leave the folder)."""
    if isinstance(output, str | bytes):
        items: list[tuple[object, object]] = [(output_file, output)]
    elif isinstance(output, Mapping):
        items = list(output.items())
        if not items:
            raise OutputRefused("the output is an empty mapping: there are no files to check")
    else:
        raise OutputRefused(
            f"a check needs the output as text or as a mapping of file names to text, got {type(output).__name__}"
        )
    files: dict[str, bytes] = {}
    for name, content in items:
        safe = output_name(name)
        if isinstance(content, str):
            data = content.encode("utf-8", errors="surrogateescape")
        elif isinstance(content, bytes):
            data = content
        else:
            raise OutputRefused(f"content of {safe!r} must be text, got {type(content).__name__}")
        files[safe] = data
    names = set(files)
    for name in names:
        parts = name.split("/")
        for k in range(1, len(parts)):
            if "/".join(parts[:k]) in names:
                raise OutputRefused(f"{name!r} needs {'/'.join(parts[:k])!r} to be a folder, but it is a file")
    return files


def _write_files(root: Path, files: Mapping[str, bytes]) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    resolved_root = root.resolve()
    for name, data in files.items():
        path = root.joinpath(*name.split("/"))
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if resolved_root not in path.parent.resolve().parents and path.parent.resolve() != resolved_root:
            raise OutputRefused(f"output file name {name!r} leaves the check folder")
        fd = os.open(path, flags, 0o600)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)


def _remove_tree(root: Path) -> None:
    """Remove a temp folder even if the command made parts of it read-only."""

    def _retry(function: Callable[..., Any], path: str, _exc: Any) -> None:
        try:
            parent = os.path.dirname(path)
            os.chmod(parent, stat.S_IRWXU)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, stat.S_IRWXU)
            function(path)
        except OSError:
            pass

    handler: dict[str, Any] = {"onexc" if sys.version_info >= (3, 12) else "onerror": _retry}
    shutil.rmtree(root, **handler)


def run_example_check(
    spec: CheckSpec,
    base_dir: str | os.PathLike[str],
    output: object,
    *,
    check_id: str,
    example_id: str,
    tmp_root: str | os.PathLike[str] | None = None,
) -> CheckResult:
    """Run a check against one example's output, materialised as files in a fresh private folder.

    The folder (mode 0700, under ``tmp_root`` or the system temp folder) is the bound target: the fingerprint
    of the files as they should be is computed in memory first and requested, so the run is ``bound`` only
    when the folder holds exactly the example's output. The folder is removed afterwards, whatever happened.
    An output that cannot be materialised safely (wrong type, a file name with ``..``) is ERROR
    ``output_unusable``.
    """
    if spec.target is not None and spec.target.path is not None:
        raise CheckConfigError(
            f"check {check_id!r} is bound to {spec.target.path!r}; a per-example check is bound to the "
            "example's output, so its target may only declare include/exclude"
        )
    base = Path(base_dir)
    include = spec.target.include if spec.target else ()
    exclude = spec.target.exclude if spec.target else ()
    try:
        files = materialise_output(output, spec.output_file)
    except OutputRefused as exc:
        run = _Run(spec, check_id, example_id, EXAMPLE_TARGET, _env_record(spec, Path(".")))
        run.facts["binding"] = BindingStatus.UNAVAILABLE
        return run.error(CheckReason.OUTPUT_UNUSABLE, str(exc))
    expected = fingerprint_files(files, include, exclude).fingerprint
    folder = Path(tempfile.mkdtemp(prefix="evalglass-check-", dir=tmp_root))
    try:
        os.chmod(folder, stat.S_IRWXU)
        env = _child_env(spec, folder)
        run = _Run(spec, check_id, example_id, EXAMPLE_TARGET, _env_record(spec, folder))
        try:
            _write_files(folder, files)
        except (OSError, OutputRefused) as exc:
            run.facts.update(binding=BindingStatus.UNAVAILABLE, requested_fingerprint=expected)
            return run.error(CheckReason.TARGET_UNAVAILABLE, f"cannot write the example's output: {exc}")
        return _execute(
            spec,
            base,
            check_id=check_id,
            example_id=example_id,
            target_dir=folder,
            target_label=EXAMPLE_TARGET,
            requested=expected,
            run=run,
            env=env,
        )
    finally:
        _remove_tree(folder)


def _run_all(jobs: Sequence[Callable[[], CheckResult]], max_workers: int | None) -> list[CheckResult]:
    workers = max_workers if max_workers is not None else (os.cpu_count() or 1)
    if workers < 1:
        raise CheckConfigError(f"max_workers must be at least 1, got {workers}")
    if workers == 1 or len(jobs) <= 1:
        return [job() for job in jobs]
    # Here rather than at the top: only several standalone checks at once need a pool (~3 ms to import, with logging).
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(workers, len(jobs)), thread_name_prefix="evalglass-check") as pool:
        return list(pool.map(lambda job: job(), jobs))
