"""evalglass.yaml: the declared evaluation (dataset, how outputs are obtained, metrics, gates).

Everything is validated with ``extra="forbid"``: an unknown key is refused with a suggestion, never ignored, because
a misspelt ``tolerate`` or ``threshold`` silently dropped would change what a green run means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalglass.core.fieldpath import FieldPathError, parse_path
from evalglass.core.fingerprint import fingerprint_of, fingerprint_of_bytes
from evalglass.core.gates import GateSpec
from evalglass.engine.validation import validate_document
from evalglass.engine.yamlsource import YamlDocument, load_yaml
from evalglass.metrics.registry import AnyMetricSpec

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]*$"
_NAME = re.compile(NAME_PATTERN)


def _check_path(path: str) -> str:
    try:
        parse_path(path)
    except FieldPathError as exc:
        raise ValueError(str(exc)) from None
    return path


class DatasetSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, description="The name the ledger uses to validate this dataset.")
    path: str = Field(description="JSONL file, one example per line, relative to this config file.")
    id_field: str = Field(default="id", description="Field holding each example's unique id.")

    _paths = field_validator("id_field")(_check_path)


class RecordedTask(BaseModel):
    """Outputs were produced earlier and stored in the dataset: no model is called."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["recorded"] = "recorded"
    field: str = Field(default="output", description="Field of each record holding the recorded output.")

    _paths = field_validator("field")(_check_path)


class Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    dataset: DatasetSpec
    task: RecordedTask = Field(default_factory=RecordedTask)
    ledger: str = Field(
        default="authority.yaml", description="The host-owned authority ledger, relative to this config file."
    )
    metrics: dict[str, AnyMetricSpec] = Field(min_length=1)
    gates: dict[str, GateSpec] = Field(default_factory=dict)

    @field_validator("metrics", "gates")
    @classmethod
    def _names(cls, entries: dict[str, Any]) -> dict[str, Any]:
        for name in entries:
            if not _NAME.match(name):
                raise ValueError(f"name {name!r} must start with a letter and use letters, digits, _ . -")
        return entries

    @model_validator(mode="after")
    def _gates_name_metrics(self) -> Config:
        for name, gate in self.gates.items():
            if gate.metric not in self.metrics:
                known = ", ".join(sorted(self.metrics))
                raise ValueError(f"gate '{name}' names metric '{gate.metric}', which is not declared (known: {known})")
        return self

    def gate_fingerprint(self, name: str) -> str:
        """What an approval of this gate is bound to: the gate's semantics and its metric's definition."""
        gate = self.gates[name]
        return fingerprint_of(
            {"gate": gate.fingerprint_payload(), "metric": self.metrics[gate.metric].fingerprint_payload()}
        )


@dataclass(frozen=True)
class LoadedConfig:
    config: Config
    path: Path
    fingerprint: str

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def dataset_path(self) -> Path:
        return self.base_dir / self.config.dataset.path

    @property
    def ledger_path(self) -> Path:
        return self.base_dir / self.config.ledger


def load_config(path: Path) -> LoadedConfig:
    doc: YamlDocument = load_yaml(path, what="config")
    config = validate_document(Config, doc, what="the config")
    return LoadedConfig(config=config, path=path, fingerprint=fingerprint_of_bytes(doc.raw))
