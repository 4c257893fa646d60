"""`executor:` in the config, through the real CLI (no cluster needed): strict validation in one line, the local
default unchanged, and approvals of gates on shipped metrics bound to where their work runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalglass.engine.spec.config import load_config
from tests.e2e.project import make_project, run_cli
from tests.e2e.test_bad_input import assert_one_line_error, config_text, line_of

HOST_METRIC = "def score(output):\n    return 1.0 if output == 'yes' else 0.0\n"


def host_project(tmp_path: Path, executor: dict[str, Any] | None = None, **extra: Any):
    overrides: dict[str, Any] = {
        "metrics": {"host": {"type": "python", "function": "m.py:score"}},
        "gates": {"accuracy": {"metric": "host", "proposed_threshold": 0.7}},
        **extra,
    }
    if executor is not None:
        overrides["executor"] = executor
    tmp_path.mkdir(parents=True, exist_ok=True)
    project = make_project(tmp_path, **overrides)
    (project.evals / "m.py").write_text(HOST_METRIC)
    return project


@pytest.mark.parametrize(
    ("executor", "key", "needles"),
    [
        ({"type": "dask"}, "executor:", ["unknown type 'dask' at executor", "allowed: local, ray"]),
        ({"type": "ray", "adress": "auto"}, "adress", ["unknown key 'adress' in executor", "did you mean 'address'"]),
        ({"type": "ray", "resources": {"num_cpus": -1}}, "num_cpus", ["executor.resources.num_cpus", "greater than"]),
        ({"type": "ray", "resources": {"cpus": 1}}, "cpus", ["unknown key 'cpus' in executor.resources"]),
        ({"type": "ray", "max_retries": "many"}, "max_retries", ["executor.max_retries", "valid integer"]),
        (
            {"type": "ray", "runtime_env": {"workdir": "."}},
            "runtime_env",
            ["runtime_env key 'workdir' is not supported"],
        ),
        (
            {"type": "ray", "runtime_env": {"env_vars": {"OPENAI_API_KEY": "sk-123"}}},
            "runtime_env",
            ["env_vars.OPENAI_API_KEY names a secret", "workers' own environment"],
        ),
        (
            {"type": "ray", "overrides": {"exact": {"num_cpus": 2}}},
            "exact:",
            ["executor.overrides.exact", "names no shipped work", "(free)"],  # the gated 'host' is not shipped
        ),
        (
            {"type": "ray", "overrides": {"host": {"num_cpus": 2}}},
            "host:",
            ["executor.overrides.host", "names a gated python metric", "guarded worker", "drop the override"],
        ),
        ({"type": "ray", "overrides": {"task": {"num_cpus": 2}}}, "task:", ["override 'task' applies to a python"]),
        ({"type": "ray", "address": "  "}, "address", ["executor.address", "address must be"]),
    ],
)
def test_a_bad_executor_is_refused_in_one_line_naming_where(tmp_path, executor, key, needles) -> None:
    project = host_project(
        tmp_path,
        executor,
        metrics={
            "host": {"type": "python", "function": "m.py:score"},
            "free": {"type": "python", "function": "m.py:score"},
            "exact": {"type": "exact_match", "reference": "expected"},
        },
    )
    text = config_text(project)
    line = line_of(text, key, text.count(key))  # the last one: `executor:` comes after the metrics it may name
    assert_one_line_error(project.run(), f"evalglass.yaml:{line}:", *needles)


def test_a_declared_secret_may_not_be_handed_to_workers_through_the_config(tmp_path) -> None:
    executor = {"type": "ray", "runtime_env": {"env_vars": {"ACCESS_PHRASE": "open sesame"}}}
    project = host_project(tmp_path, executor, secrets=["ACCESS_PHRASE"])
    assert_one_line_error(project.run(), "ACCESS_PHRASE is declared a secret", "workers' own environment")


def test_a_ray_executor_without_an_address_says_how_to_give_one(tmp_path) -> None:
    project = host_project(tmp_path, {"type": "ray"})
    result = run_cli("run", cwd=project.root, env={"RAY_ADDRESS": ""})
    assert_one_line_error(result, "no cluster address", "RAY_ADDRESS", "executor.address")
    assert not any((project.root / ".evalglass" / "runs").glob("*/scores.jsonl"))


def fingerprint(project) -> str:
    """The gate's fingerprint as the host approves it (what `explain` prints after a run; a ray config cannot run
    here, so it is read from the loaded config, the function `explain` and `run` both use)."""
    loaded = load_config(project.evals / "evalglass.yaml")
    return loaded.config.gate_fingerprint("accuracy", loaded.definition_files)


def test_the_local_executor_is_the_default_and_binds_nothing_new(tmp_path) -> None:
    implicit = host_project(tmp_path / "implicit")
    explicit = host_project(tmp_path / "explicit", {"type": "local"})
    assert implicit.run().code == explicit.run().code == 0
    assert implicit.gate_fingerprint("accuracy") == explicit.gate_fingerprint("accuracy") == fingerprint(explicit)


def test_an_approval_binds_where_a_shipped_metric_runs(tmp_path) -> None:
    """A pull request that points a gated host metric at another cluster (or another runtime environment) could
    have that cluster answer anything: the approval no longer matches, so the gate cannot go green on it."""
    local = fingerprint(host_project(tmp_path / "local"))
    here = fingerprint(host_project(tmp_path / "here", {"type": "ray", "address": "auto"}))
    there = fingerprint(host_project(tmp_path / "there", {"type": "ray", "address": "ray://evil:10001"}))
    env = {"type": "ray", "address": "auto", "runtime_env": {"pip": ["numpy"]}}
    other_env = fingerprint(host_project(tmp_path / "env", env))
    retried = {"type": "ray", "address": "auto", "max_retries": 9, "resources": {"num_cpus": 2}}
    assert len({local, here, there, other_env}) == 4
    assert fingerprint(host_project(tmp_path / "retried", retried)) == here  # neither changes a value
