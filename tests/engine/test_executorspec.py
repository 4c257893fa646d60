"""The `executor:` declarations and what shipping work relies on, without a cluster."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.redact import is_secret_name
from evalglass.engine.spec.executorspec import RUNTIME_ENV_KEYS, RayExecutorSpec
from evalglass.lanes.shipping import SHIPPED_BASE_ENV, base_dir_here

NAMES = st.from_regex(r"[A-Z][A-Z0-9_]{0,20}", fullmatch=True)


@given(NAMES)
def test_env_vars_refuse_exactly_the_names_that_say_they_hold_a_secret(name: str) -> None:
    def build() -> RayExecutorSpec:
        return RayExecutorSpec(type="ray", runtime_env={"env_vars": {name: "value"}})

    if is_secret_name(name):
        with pytest.raises(ValidationError, match="names a secret"):
            build()
    else:
        assert build().runtime_env["env_vars"] == {name: "value"}


@given(st.text(min_size=1, max_size=12).filter(lambda key: key not in RUNTIME_ENV_KEYS))
def test_an_unknown_runtime_env_key_is_refused(key: str) -> None:
    with pytest.raises(ValidationError, match="is not supported"):
        RayExecutorSpec(type="ray", runtime_env={key: "x"})


def test_absent_survives_pickling_as_itself() -> None:
    """Examples travel to workers pickled; a missing output must still be `is ABSENT` there (a copy would not be,
    and a metric would measure the copy as if it were an output)."""
    example = Example(id="a", line=1, fields={"q": 1}, output=ABSENT)
    assert pickle.loads(pickle.dumps(ABSENT)) is ABSENT
    assert pickle.loads(pickle.dumps(example)).output is ABSENT


def test_a_worker_finds_the_evals_folder_in_its_copy_only_when_it_was_given_one(tmp_path, monkeypatch) -> None:
    driver = tmp_path / "evals"
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(SHIPPED_BASE_ENV, raising=False)
    assert base_dir_here(str(driver)) == driver
    monkeypatch.setenv(SHIPPED_BASE_ENV, str(driver))
    assert base_dir_here(str(driver)) == tmp_path  # the worker's current folder: its copy of the evals folder
    monkeypatch.setenv(SHIPPED_BASE_ENV, str(tmp_path / "other"))
    assert base_dir_here(str(driver)) == driver


def test_the_binding_leaves_out_what_changes_no_value() -> None:
    one = RayExecutorSpec(type="ray", address="auto", max_retries=1, resources={"num_cpus": 2})
    two = RayExecutorSpec(type="ray", address="auto", max_retries=5, overrides={"m": {"num_gpus": 1}})
    assert one.binding_payload() == two.binding_payload()
    assert RayExecutorSpec(type="ray", address="ray://x:1").binding_payload() != one.binding_payload()
