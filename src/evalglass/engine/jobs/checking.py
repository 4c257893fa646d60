"""`evalglass check`: run declared standalone checks outside a dataset run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalglass import hostwatch
from evalglass.core.checks import CheckResult
from evalglass.core.fingerprint import fingerprint_problem
from evalglass.engine.spec.config import load_config
from evalglass.errors import SetupError
from evalglass.hostwatch import Watch
from evalglass.lanes.checkrun import CheckConfigError, run_checks


def run_named_checks(config_path: Path, names: list[str], expect_state: str | None) -> dict[str, CheckResult]:
    """Run the named standalone checks (all of them when none are named) and return their results in order."""
    problem = None if expect_state is None else fingerprint_problem(expect_state)
    if problem is not None:
        raise SetupError(problem, where="--expect-state", fix="pass the target state a previous check recorded")
    loaded = load_config(config_path)
    config = loaded.config
    standalone = config.standalone_checks
    chosen = names or standalone
    for name in chosen:
        if name not in config.checks:
            known = ", ".join(standalone) or "none"
            raise SetupError(f"no check named '{name}' (standalone checks: {known})", where=str(config_path))
        if name not in standalone:
            raise SetupError(
                f"check '{name}' runs per example (a metric uses it); it has no target of its own to check",
                where=str(config_path),
                fix="run it through `evalglass run`",
            )
    if not chosen:
        raise SetupError("the config declares no standalone checks", where=str(config_path))
    if expect_state is not None and len(chosen) != 1:
        raise SetupError("--expect-state binds one check", fix="name exactly one check")
    expected = {name: state for name in chosen if (state := config.expected_state(name)) is not None}
    if expect_state is not None:
        expected = {chosen[0]: expect_state}
    try:
        with checks_watch(chosen):
            bound = loaded.bound_checks()
            return run_checks({name: bound[name] for name in chosen}, loaded.base_dir, expected=expected)
    except CheckConfigError as exc:
        raise SetupError(str(exc), where=str(config_path)) from None


def checks_watch(names: Sequence[str]) -> Watch:
    """What the supervisor names when the process dies while these standalone checks run (a check's command can
    signal its parent)."""
    return hostwatch.watch("check " + ", ".join(f"'{name}'" for name in names))
