"""Live runs through the real CLI against a fake OpenAI server on 127.0.0.1: `evalglass()` runs a command in a
process forked from a server that has imported the command line (tests/cli_server.py), `start()` as a new
`python -m evalglass` (the tests that signal or kill it).

The server runs in the test process (a thread), so a test can script faults, read how many requests arrived and how
many were in flight at once, and time a SIGKILL or SIGINT by the requests it has seen.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalglass.testing.fake_openai import FakeOpenAI, strip_directives
from tests import cli_server

#: The line `evalglass calibrate` tells the host to paste under the judge's `judges:` entry.
_PASTE_LINE = re.compile(r'calibration: "(sha256:[0-9a-f]{64})"')


def calibration_pin(calibrate_out: str) -> str:
    """The fingerprint a host approves a calibration record by, copied from the one line that says it (in
    `evalglass calibrate`'s text output, or a calibration_unapproved message) as the host would copy it: not computed
    here, so a test checks that the printed line is the one that works."""
    (found,) = _PASTE_LINE.findall(calibrate_out)
    return found


#: Looks like a real key; tests assert it never reaches an artifact, the cache, or the output.
SECRET = "sk-live-e2e-7d1f0c9b3a5e4f2a"
JUDGE_MODEL = "judge-model"


def fake_reply(body: dict[str, Any]) -> str:
    """Lane requests are echoed. A judge request is answered from a `grade=N` marker in the graded output
    (default 4), or with `grade=junk` by prose without JSON, so tests control every judge answer."""
    messages = body.get("messages", [])
    last = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    if body.get("model") != JUDGE_MODEL:
        return strip_directives(str(last))
    text = str(last)
    marker = text.rfind("grade=")
    grade = text[marker + 6 :].split()[0].strip("\"',.}") if marker >= 0 else "4"
    if grade == "junk":
        return "I would rather not say."
    return json.dumps({"score": int(grade), "rationale": f"graded {grade}"})


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply=fake_reply) as fake:
        yield fake


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "200", "EVALGLASS_E2E_KEY": SECRET, **(extra or {})}
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(name, None)
    return env


def evalglass(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> CliResult:
    """The CLI in a process of its own, forked from a server that has imported it (tests/cli_server.py)."""
    done = cli_server.run(list(args), cwd=cwd, env=cli_env(env), timeout=timeout)
    return CliResult(done.returncode, done.stdout, done.stderr)


def start(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "evalglass", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )


def wait_until(condition: Callable[[], bool], *, timeout: float = 60, what: str = "condition") -> None:
    """Poll (bounded) until ``condition`` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def kill(proc: subprocess.Popen[str], sig: int = signal.SIGKILL) -> tuple[int, str, str]:
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


@dataclass
class LiveProject:
    """An evals folder: evalglass.yaml, data.jsonl, rubric.md, authority.yaml."""

    root: Path
    base_url: str

    def lane(self, **overrides: Any) -> dict[str, Any]:
        lane: dict[str, Any] = {
            "type": "chat",
            "base_url": self.base_url,
            "model": "app-model",
            "api_key_env": "EVALGLASS_E2E_KEY",
            "prompt": "{{ question }}",
            "timeout": 5,
            "retry": {"max_attempts": 3, "initial_delay": 0.01, "max_delay": 0.02},
        }
        lane.update(overrides)
        return lane

    def agent(self, tools: dict[str, str], **overrides: Any) -> dict[str, Any]:
        """An agent lane against the fake server, running ``tools`` (name: ``module:function``)."""
        agent: dict[str, Any] = {
            "type": "agent",
            "base_url": self.base_url,
            "model": "agent-model",
            "api_key_env": "EVALGLASS_E2E_KEY",
            "prompt": "{{ request }}",
            "tools": tools,
            "max_steps": 4,
        }
        agent.update(overrides)
        return agent

    def judge(self, **overrides: Any) -> dict[str, Any]:
        judge: dict[str, Any] = {
            "type": "llm_judge",
            "rubric": "rubric.md",
            "scale": {"min": 1, "max": 5},
            "base_url": self.base_url,
            "model": JUDGE_MODEL,
            "api_key_env": "EVALGLASS_E2E_KEY",
            "timeout": 5,
            "retry": {"max_attempts": 3, "initial_delay": 0.01, "max_delay": 0.02},
        }
        judge.update(overrides)
        return judge

    def write(
        self,
        rows: list[dict[str, Any]],
        *,
        task: dict[str, Any] | None = None,
        metrics: dict[str, Any] | None = None,
        gates: dict[str, Any] | None = None,
        ledger: dict[str, Any] | None = None,
        **top: Any,
    ) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        config: dict[str, Any] = {"dataset": {"name": "live", "path": "data.jsonl"}}
        config["task"] = task if task is not None else self.lane()
        config["metrics"] = (
            metrics if metrics is not None else {"echoed": {"type": "contains", "reference": "question"}}
        )
        if gates:
            config["gates"] = gates
        config.update(top)
        (self.root / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        (self.root / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        if not (self.root / "rubric.md").exists():
            (self.root / "rubric.md").write_text("Score 5 for a perfect answer, 1 for a useless one.\n")
        if ledger:
            self.write_ledger(ledger)
        else:
            (self.root / "authority.yaml").write_text(yaml.safe_dump({}, sort_keys=False))

    def run(self, *args: str, **kwargs: Any) -> CliResult:
        return evalglass("run", "--format", "json", "--no-progress", *args, cwd=self.root, **kwargs)

    def last_run(self) -> Path:
        return Path((self.root / ".evalglass" / "last-run").read_text().strip())

    def scores(self, folder: Path | None = None) -> list[dict[str, Any]]:
        from evalglass.engine.runs.artifacts import score_rows

        return list(score_rows((folder or self.last_run()) / "scores.jsonl"))

    def gate_fingerprint(self, gate: str) -> str:
        from evalglass.engine.spec.config import load_config

        loaded = load_config(self.root / "evalglass.yaml")
        return loaded.config.gate_fingerprint(gate, loaded.definition_files)

    def write_ledger(self, ledger: dict[str, Any]) -> None:
        """Write the host's ledger. One that activates a metric gate and says nothing of the dataset gets the
        ``datasets:`` entry validating the gold as the files are now (every metric gate stands on it), as the host
        writes it after review; a test of the gold's own reasons writes ``datasets`` itself."""
        gates = ledger.get("gates") or {}
        if "datasets" not in ledger and any("threshold" in entry for entry in gates.values()):
            ledger = {**ledger, "datasets": self.validated_gold()}
        (self.root / "authority.yaml").write_text(yaml.safe_dump(ledger, sort_keys=False))

    def validated_gold(self) -> dict[str, Any]:
        """The ledger's ``datasets:`` section validating the gold as the files are now (every metric gate stands on
        it), as a host writes it after review."""
        from evalglass.engine.datasets.datasetfile import gold_fingerprint_of
        from evalglass.engine.spec.config import load_config

        loaded = load_config(self.root / "evalglass.yaml")
        today = datetime.datetime.now(datetime.UTC).date().isoformat()  # a ledger policy's max_age_days counts it
        entry = {"validated_gold": True, "fingerprint": gold_fingerprint_of(loaded), "validated_on": today}
        return {loaded.config.dataset.name: entry}

    def judge_endpoint(self, metric: str) -> Any:
        """Where judge ``metric`` is served, as a gate approval's ``judge_endpoint`` names it."""
        from evalglass.engine.spec.config import load_config

        return load_config(self.root / "evalglass.yaml").config.metrics[metric].judge_endpoint()


@pytest.fixture
def project(tmp_path: Path, server: FakeOpenAI) -> LiveProject:
    return LiveProject(tmp_path / "evals", server.base_url)


def questions(n: int, prefix: str = "question") -> list[dict[str, Any]]:
    return [{"id": f"q{i:03d}", "question": f"{prefix} {i}"} for i in range(n)]


def numbers_in(value: Any) -> list[float]:
    """Every number stored as a score value (a bare number or a Score's `value`)."""
    found: list[float] = []
    if isinstance(value, bool):
        return found
    if isinstance(value, int | float):
        found.append(float(value))
    elif isinstance(value, list):
        for item in value:
            found.extend(numbers_in(item))
    elif isinstance(value, dict) and "status" in value and value.get("value") is not None:
        found.append(float(value["value"]))
    return found
