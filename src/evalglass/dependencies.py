"""What to install when an import fails: read from EvalGlass's own package metadata, so the hint cannot drift.

A hint written by hand goes stale when a package moves between the core dependencies and an extra (Jinja2 did: the
HTML report made it core, and the old "install the live extra" hint was no longer true). Here the requirement that
names the missing package decides: a core dependency means the installation is broken (reinstall), a dependency of
an extra means that extra is not installed.
"""

from __future__ import annotations

import re

#: Said when the package metadata cannot be read (a source tree that was never installed).
_UNKNOWN = "install EvalGlass with its dependencies: pip install 'evalglass[live]'"
#: Extras that only development needs: never the one to recommend when a package is also in a user-facing extra.
_DEV_EXTRAS = frozenset({"test"})


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _distribution_of(module: str) -> str:
    """The distribution that provides top-level ``module`` when it is installed (``yaml`` -> PyYAML); else the
    module's own name, which is the distribution's for every package EvalGlass imports lazily."""
    from importlib.metadata import packages_distributions

    found = packages_distributions().get(module)
    return found[0] if found else module


def install_hint(module: str | None) -> str:
    """How to get the missing top-level ``module``: "reinstall" for a core dependency, "install the X extra" for
    an extra's, a generic line when the metadata does not say."""
    from importlib.metadata import PackageNotFoundError, requires

    if not module:
        return _UNKNOWN
    try:
        requirements = requires("evalglass") or []
    except PackageNotFoundError:
        return _UNKNOWN
    wanted = _normalised(_distribution_of(module.partition(".")[0]))
    extras: list[str] = []
    for requirement in requirements:
        spec, _, marker = requirement.partition(";")
        name = re.split(r"[\s<>=!~\[(]", spec.strip(), maxsplit=1)[0]
        if _normalised(name) != wanted:
            continue
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        if extra is None:
            return (
                f"{name} is a core dependency of EvalGlass, so this installation is incomplete: "
                f"pip install '{spec.strip()}' (or reinstall evalglass)"
            )
        extras.append(extra.group(1))
    if not extras:
        return _UNKNOWN
    best = min(extras, key=lambda name: name in _DEV_EXTRAS)  # a user-facing extra first, in declared order
    return f"install the {best} extra: pip install 'evalglass[{best}]'"


__all__ = ["install_hint"]
