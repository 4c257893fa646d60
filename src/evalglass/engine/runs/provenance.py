"""Where a run was made: the git commit, branch and dirty flag of the work tree, and the CI provider and job URL.

Read from ``git`` (a subprocess, bounded in time) and from the environment variables CI providers set. Anything
that cannot be read is None: a run outside a git work tree, or with no ``git`` installed, is recorded without it.
In CI the branch comes from the provider's variables first, because CI checks out a detached HEAD.

Two readers: the run history records it beside every run, and a signed run signs its branch and commit with its
digests (``engine.runs.digests``), so a baseline that follows a branch is judged by the branch its signer saw.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from evalglass import redaction

GIT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Provenance:
    git_commit: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None
    ci_provider: str | None = None
    ci_job_url: str | None = None


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_tracks(path: Path) -> bool:
    """Whether ``path`` (a file, or a folder with any file in it) is tracked by the git work tree holding it: a file a
    pull request commits, whatever it holds. False outside a work tree, and when ``git`` cannot be run (a limit:
    a checkout read without ``git`` installed is not told apart). One ``git`` call: outside a work tree
    ``ls-files`` fails, and a failure says False."""
    folder = path if path.is_dir() else path.parent
    return folder.is_dir() and bool(_git(["ls-files", "-z", "--", str(path.resolve())], folder))


def _ci(env: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """(provider, job URL, branch) from the environment."""
    if env.get("GITHUB_ACTIONS") == "true":
        url = None
        if env.get("GITHUB_REPOSITORY") and env.get("GITHUB_RUN_ID"):
            server = env.get("GITHUB_SERVER_URL", "https://github.com")
            url = f"{server}/{env['GITHUB_REPOSITORY']}/actions/runs/{env['GITHUB_RUN_ID']}"
        # A pull request's run: the head branch (GITHUB_REF_NAME is "123/merge" there).
        return "github", url, env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME") or None
    if env.get("GITLAB_CI") == "true":
        return "gitlab", env.get("CI_JOB_URL"), env.get("CI_COMMIT_REF_NAME")
    if env.get("BUILDKITE") == "true":
        return "buildkite", env.get("BUILDKITE_BUILD_URL"), env.get("BUILDKITE_BRANCH")
    if env.get("CIRCLECI") == "true":
        return "circleci", env.get("CIRCLE_BUILD_URL"), env.get("CIRCLE_BRANCH")
    if env.get("JENKINS_URL"):
        return "jenkins", env.get("BUILD_URL"), env.get("BRANCH_NAME")
    if env.get("CI") == "true":
        return "ci", None, None
    return None, None, None


def provenance(work_tree: Path, env: Mapping[str, str]) -> Provenance:
    """The git state of the work tree holding ``work_tree`` and the CI the environment names."""
    provider, url, ci_branch = _ci(env)
    commit = branch = dirty = None
    if _git(["rev-parse", "--is-inside-work-tree"], work_tree) == "true":
        commit = _git(["rev-parse", "--verify", "-q", "HEAD"], work_tree)  # None before the first commit
        branch = _git(["symbolic-ref", "--short", "-q", "HEAD"], work_tree) or None  # None on a detached HEAD
        status = _git(["status", "--porcelain", "--untracked-files=no"], work_tree)
        dirty = None if status is None else bool(status)
    redactor = redaction.current()
    return Provenance(
        git_commit=commit,
        git_branch=ci_branch or branch,
        git_dirty=dirty,
        ci_provider=provider,
        ci_job_url=None if url is None else redactor.text(url),
    )
