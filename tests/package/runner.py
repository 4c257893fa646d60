"""A composite action's steps, run the way the GitHub Actions runner runs them (for tests/package/test_action.py).

What the runner does and this reproduces: each ``run:`` step is a script file run by ``bash --noprofile --norc -eo
pipefail`` in the workspace, with ``GITHUB_ACTIONS=true``, ``GITHUB_WORKSPACE``, ``GITHUB_ACTION_PATH`` (the
action's folder), a ``GITHUB_STEP_SUMMARY`` file shared by the job's steps and a fresh ``GITHUB_OUTPUT`` file per
step, which is read back as the step's outputs (``name=value`` lines or ``name<<DELIMITER`` blocks); the step's
``env:`` values are expanded first. A step runs when its ``if:`` holds, which without ``always()`` or ``failure()``
also needs every earlier step to have succeeded. A ``uses:`` step (another action) is not run: its expanded
``with:`` inputs are recorded, so a test can check what it would have been given.

Only the expressions action.yml uses are understood (``inputs.NAME``, ``steps.ID.outputs.NAME``,
``github.action_path``, ``always()``, ``success()``, ``failure()``, ``==`` and ``!=`` against a quoted string, joined
by ``&&``); anything else raises, so an edit of action.yml beyond them makes the tests say so instead of passing.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@dataclass
class Step:
    name: str
    ran: bool
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    uses: str | None = None
    given: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    steps: dict[str, Step]
    outputs: dict[str, str]
    failed: bool
    summary: str


class Context:
    def __init__(self, inputs: Mapping[str, str], action_path: Path) -> None:
        self.inputs = dict(inputs)
        self.action_path = action_path
        self.steps: dict[str, Step] = {}
        self.failed = False

    def value(self, expression: str) -> str:
        parts = expression.split(".")
        if parts[0] == "inputs" and len(parts) == 2:
            return self.inputs[parts[1]]
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            step = self.steps.get(parts[1])
            return step.outputs.get(parts[3], "") if step is not None else ""
        if expression == "github.action_path":
            return str(self.action_path)
        raise ValueError(f"expression not understood by this runner: {expression!r}")

    def expand(self, text: str) -> str:
        return EXPRESSION.sub(lambda match: self.value(match.group(1)), text)

    def holds(self, condition: str | None) -> bool:
        condition = (condition or "").strip()
        whole = EXPRESSION.fullmatch(condition)
        terms = [term.strip() for term in (whole.group(1) if whole else condition).split("&&") if term.strip()]
        status = [term for term in terms if term in ("always()", "success()", "failure()")]
        if not status:
            terms.append("success()")
        results = []
        for term in terms:
            if term in ("always()", "success()", "failure()"):
                results.append({"always()": True, "success()": not self.failed, "failure()": self.failed}[term])
                continue
            compared = re.fullmatch(r"([\w.-]+)\s*(==|!=)\s*'([^']*)'", term)
            if compared is None:
                raise ValueError(f"condition not understood by this runner: {term!r}")
            left, operator, right = compared.groups()
            results.append((self.value(left) == right) == (operator == "=="))
        return all(results)


def read_outputs(path: Path) -> dict[str, str]:
    outputs: dict[str, str] = {}
    lines = iter(path.read_text().splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            for body in lines:
                if body == delimiter:
                    break
                value.append(body)
            else:
                raise ValueError(f"GITHUB_OUTPUT: {name}'s delimiter {delimiter!r} never closes")
            outputs[name] = "\n".join(value)
        elif line:
            name, value_text = line.split("=", 1)
            outputs[name] = value_text
    return outputs


def run_action(
    action_path: Path, workspace: Path, inputs: Mapping[str, str], env: Mapping[str, str], summary: Path
) -> ActionRun:
    """Run the composite action in ``action_path``/action.yml with ``inputs`` (the rest take their defaults)."""
    action: dict[str, Any] = yaml.safe_load((action_path / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    declared = action.get("inputs", {})
    unknown = set(inputs) - set(declared)
    if unknown:
        raise ValueError(f"inputs the action does not declare: {sorted(unknown)}")
    context = Context(
        {name: str(spec.get("default", "")) for name, spec in declared.items()} | dict(inputs), action_path
    )
    summary.touch()
    runner_env = {
        **env,
        "GITHUB_ACTIONS": "true",
        "CI": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(action_path),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    for index, spec in enumerate(action["runs"]["steps"]):
        key = spec.get("id", f"__{index}")
        if not context.holds(spec.get("if")):
            context.steps[key] = Step(spec.get("name", key), ran=False, uses=spec.get("uses"))
            continue
        if "uses" in spec:
            given = {name: context.expand(str(value)) for name, value in spec.get("with", {}).items()}
            context.steps[key] = Step(spec.get("name", key), ran=True, uses=spec["uses"], given=given)
            continue
        assert spec["shell"] == "bash", spec
        with tempfile.TemporaryDirectory() as scratch:
            script, outputs = Path(scratch) / "step.sh", Path(scratch) / "output"
            script.write_text(spec["run"])
            outputs.touch()
            step_env = {name: context.expand(str(value)) for name, value in spec.get("env", {}).items()}
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=workspace,
                env={**runner_env, **step_env, "GITHUB_OUTPUT": str(outputs)},
                capture_output=True,
                text=True,
                timeout=600,
            )
            step = Step(spec.get("name", key), True, done.returncode, done.stdout, done.stderr, read_outputs(outputs))
        context.steps[key] = step
        context.failed = context.failed or done.returncode != 0
    outputs = {name: context.expand(str(spec["value"])) for name, spec in action.get("outputs", {}).items()}
    return ActionRun(context.steps, outputs, context.failed, summary.read_text())


def base_env() -> dict[str, str]:
    """The job's environment as a runner gives it: this one without what points Python at this checkout."""
    return {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("GITHUB_")
    }
