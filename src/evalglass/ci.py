"""CI outputs of a finished run: a JUnit XML file, and GitHub Actions' step summary and annotations.

Each renders the run's artifacts (the scorecard; the run record only to find where gates are declared) and decides
nothing; for a run loaded from its folder, each also says in one line what loading it did not check. An output
that was asked for and cannot be written is a :class:`SetupError` (exit 2): a CI job that expects a report must
not go on without one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from evalglass import redaction
from evalglass.api import RunResult
from evalglass.errors import SetupError


def github_wanted(flag: bool | None, env: Mapping[str, str]) -> bool:
    """``--github`` / ``--no-github`` when given; otherwise on exactly when running in GitHub Actions."""
    return flag if flag is not None else env.get("GITHUB_ACTIONS") == "true"


def write_junit(result: RunResult, path: Path) -> None:
    from evalglass.engine.runs.runfolder import write_atomic
    from evalglass.report.junit import render_junit

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        document = render_junit(result.scorecard, not_checked=result.not_checked)
        write_atomic(path, redaction.current().text_bytes(document))
    except OSError as exc:
        raise SetupError(
            f"cannot write the JUnit report: {exc.strerror or exc}", where=str(path), fix="choose a writable path"
        ) from None


def publish_github(result: RunResult, *, stream: TextIO, env: Mapping[str, str]) -> str | None:
    """Print the annotations on ``stream`` and append the Markdown report to ``$GITHUB_STEP_SUMMARY``.

    Returns a note for stderr when there is no step summary file to append to (outside GitHub Actions).
    """
    from evalglass.engine.explore.reportfile import report_markdown
    from evalglass.report.github import gate_annotations
    from evalglass.report.safetext import markdown_text

    sites = {name: (_as_annotated(path, env), line) for name, (path, line) in _gate_sites(result.folder).items()}
    for line in gate_annotations(result.scorecard, sites, not_checked=result.not_checked):
        stream.write(line + "\n")
    stream.flush()
    summary = env.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return "note: GITHUB_STEP_SUMMARY is not set, so no step summary was written"
    try:
        with open(summary, "a", encoding="utf-8") as handle:
            # report.md's content: the gates and the examples that pulled them down, where the PR author looks first
            summary_text = report_markdown(result.folder, result.scorecard)
            if result.not_checked is not None:
                summary_text += f"\n<sub>{markdown_text(result.not_checked)}</sub>\n"
            handle.write(redaction.current().text(summary_text) + "\n")
    except OSError as exc:
        raise SetupError(
            f"cannot append to the step summary: {exc.strerror or exc}",
            where=summary,
            fix="check GITHUB_STEP_SUMMARY, or pass --no-github",
        ) from None
    return None


def _gate_sites(folder: Path) -> dict[str, tuple[Path, int]]:
    """Where each gate is declared; none when the run record cannot be read (annotations then name no file)."""
    from evalglass.engine.runs.artifacts import load_runrecord
    from evalglass.engine.spec.declared import gate_sites

    try:
        record = load_runrecord(folder)
    except SetupError:
        return {}
    return gate_sites(record)


def _as_annotated(path: Path, env: Mapping[str, str]) -> str:
    """GitHub places an annotation by its path relative to the repository (the workspace)."""
    absolute = path.resolve()
    root = Path(env.get("GITHUB_WORKSPACE") or Path.cwd()).resolve()
    return absolute.relative_to(root).as_posix() if absolute.is_relative_to(root) else absolute.as_posix()
