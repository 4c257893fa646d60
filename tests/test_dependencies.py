"""Install hints come from the package's own metadata, so they say what pyproject.toml says."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from evalglass.dependencies import install_hint

PYPROJECT = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]


@pytest.mark.parametrize("requirement", PYPROJECT["dependencies"])
def test_every_core_dependency_is_named_as_core(requirement: str) -> None:
    name = requirement.split(">=")[0].split("<")[0].strip()
    module = {"PyYAML": "yaml"}.get(name, name.lower())
    hint = install_hint(module)
    assert "core dependency" in hint and f"'{requirement}'" in hint, hint
    assert "extra" not in hint


@pytest.mark.parametrize(
    ("module", "extra"),
    [("openai", "live"), ("aiohttp", "live"), ("httpx2", "live"), ("cryptography", "signing"), ("hypothesis", "test")],
)
def test_an_extras_package_names_its_user_facing_extra(module: str, extra: str) -> None:
    assert install_hint(module) == f"install the {extra} extra: pip install 'evalglass[{extra}]'"


def test_a_submodule_and_an_unknown_package() -> None:
    assert "core dependency" in install_hint("jinja2.sandbox")
    assert "evalglass" in install_hint("no_such_package_anywhere") and "core" not in install_hint(None)
