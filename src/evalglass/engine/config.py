"""evalglass.yaml: the declared evaluation (dataset, how outputs are obtained, metrics, gates).

Everything is validated with ``extra="forbid"``: an unknown key is refused with a suggestion, never ignored, because
a misspelt ``tolerate`` or ``threshold`` silently dropped would change what a green run means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.functional_validators import BeforeValidator

from evalglass.core.checks import policy_id_conflicts
from evalglass.core.fieldpath import FieldPathError, parse_path
from evalglass.core.fingerprint import fingerprint_of, fingerprint_of_bytes
from evalglass.core.gates import GateRule, GateSpec
from evalglass.core.usage import Price
from evalglass.engine.validation import validate_document
from evalglass.engine.yamlsource import YamlDocument, load_yaml
from evalglass.lanes.checkspec import CheckSpec
from evalglass.lanes.specs import ChatLaneSpec, CommandLaneSpec, LaneSpec, PythonLaneSpec
from evalglass.metrics.check import CheckMetricSpec
from evalglass.metrics.llm_judge import LlmJudgeSpec
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
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str = Field(pattern=NAME_PATTERN, description="The name the ledger uses to validate this dataset.")
    path: str = Field(description="JSONL file, one example per line, relative to this config file.")
    id_field: str = Field(default="id", description="Field holding each example's unique id.")
    cluster_field: str | None = Field(
        default=None,
        description="Field naming the group an example belongs to (a document, a conversation); intervals then "
        "account for examples of one group being alike. An example without it forms a group of its own.",
    )

    _paths = field_validator("id_field", "cluster_field")(_check_path)


class RecordedTask(BaseModel):
    """Outputs were produced earlier and stored in the dataset, or in a file of their own: no model is called."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    type: Literal["recorded"] = "recorded"
    path: str | None = Field(
        default=None,
        description="JSONL file of recorded outputs, relative to this config file, one `{id, <field>}` object per "
        "line, joined to the dataset by id. Without it, outputs are read from the dataset file itself.",
    )
    field: str = Field(default="output", description="Field of each record holding the recorded output.")
    parse: Literal["json"] | None = Field(
        default=None,
        description="`json`: parse a JSON-text output before metrics see it; text that does not parse is an "
        "`output_not_json` error for every metric but json_valid, which measures it (0.0).",
    )
    strict: bool = Field(
        default=False,
        description="Refuse the run (exit 2) when the outputs file holds an output whose id is not in the dataset; "
        "otherwise such outputs are counted and reported.",
    )
    samples: bool = Field(
        default=False,
        description="The field holds a list of recorded samples (epochs) of the output; each is scored, then the "
        "metric's reducer turns them into one score per example.",
    )

    _paths = field_validator("field")(_check_path)


def _recorded_by_default(value: Any) -> Any:
    """``task: {field: answer}`` predates live lanes: a mapping without ``type`` is a recorded task."""
    if isinstance(value, dict) and "type" not in value:
        return {**value, "type": "recorded"}
    return value


AnyTask = Annotated[
    RecordedTask | PythonLaneSpec | CommandLaneSpec | ChatLaneSpec,
    Field(discriminator="type"),
    BeforeValidator(_recorded_by_default),
]


class EndpointOverride(BaseModel):
    """Limits for one endpoint, overriding what its lanes and judges declare."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    max_in_flight: int | None = Field(default=None, ge=1, le=100_000, description="Calls in flight at most.")
    rpm: float | None = Field(default=None, gt=0, description="Requests per minute at most.")


class ConcurrencySpec(BaseModel):
    """How many lane and judge calls run at once, across the whole run and per endpoint."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    max_in_flight: int = Field(
        default=32, ge=1, le=100_000, description="Calls (lane and judge attempts) in flight across the run."
    )
    rpm: float | None = Field(default=None, gt=0, description="Requests per minute across the run (optional).")
    endpoints: dict[str, EndpointOverride] = Field(
        default_factory=dict,
        description="Per endpoint, by key: a chat lane's or judge's base_url, `python:<function>` or "
        "`command:<argv[0]>`. Overrides the lane's or judge's own `concurrency`/`rpm`.",
    )

    @field_validator("endpoints")
    @classmethod
    def _urls_normalised(cls, entries: dict[str, EndpointOverride]) -> dict[str, EndpointOverride]:
        return {
            key.rstrip("/") if key.startswith(("http://", "https://")) else key: value for key, value in entries.items()
        }


class Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    version: Literal[1] = 1
    dataset: DatasetSpec
    task: AnyTask = Field(
        default_factory=RecordedTask,
        description="Where outputs come from: `recorded` (a dataset field), or a live lane: `python`, `command`, "
        "`chat`.",
    )
    concurrency: ConcurrencySpec = Field(
        default_factory=ConcurrencySpec, description="Limits for live lane and judge calls."
    )
    ledger: str = Field(
        default="authority.yaml", description="The host-owned authority ledger, relative to this config file."
    )
    metrics: dict[str, AnyMetricSpec] = Field(min_length=1)
    gates: dict[str, GateSpec] = Field(default_factory=dict)
    checks: dict[str, CheckSpec] = Field(
        default_factory=dict, description="Bound command checks, used by `check` metrics, gates and `evalglass check`."
    )
    prices: dict[str, Price] = Field(
        default_factory=dict,
        description="Per model name, what its tokens cost per million (`prompt_per_million`, "
        "`completion_per_million`); turns live runs' token counts into cost.",
    )
    check_workers: int | None = Field(
        default=None, ge=1, le=1024, description="Per-example checks run at once (default: the number of CPUs)."
    )

    @field_validator("metrics", "gates", "checks")
    @classmethod
    def _names(cls, entries: dict[str, Any]) -> dict[str, Any]:
        for name in entries:
            if not _NAME.match(name):
                raise ValueError(f"name {name!r} must start with a letter and use letters, digits, _ . -")
        return entries

    @model_validator(mode="after")
    def _references_resolve(self) -> Config:
        per_example = {spec.check for spec in self.metrics.values() if isinstance(spec, CheckMetricSpec)}
        for name, spec in self.metrics.items():
            if isinstance(spec, CheckMetricSpec):
                check = self.checks.get(spec.check)
                if check is None:
                    raise ValueError(
                        f"metric '{name}' names check '{spec.check}', which is not declared{_known(self.checks)}"
                    )
                if check.target is not None and check.target.path is not None:
                    raise ValueError(
                        f"metric '{name}' runs check '{spec.check}' per example, but that check is bound to "
                        f"'{check.target.path}'; a per-example check's target declares only include/exclude"
                    )
        for name, gate in self.gates.items():
            if gate.metric is not None and gate.metric not in self.metrics:
                raise ValueError(
                    f"gate '{name}' names metric '{gate.metric}', which is not declared{_known(self.metrics)}"
                )
            if gate.check is not None:
                check = self.checks.get(gate.check)
                if check is None:
                    raise ValueError(
                        f"gate '{name}' names check '{gate.check}', which is not declared{_known(self.checks)}"
                    )
                if gate.check in per_example or (check.target is not None and check.target.path is None):
                    raise ValueError(
                        f"gate '{name}' decides on check '{gate.check}', which runs per example; gate a metric "
                        "of type check instead, or give the check a target path"
                    )
                if gate.expect_state is not None and check.target is None:
                    raise ValueError(f"gate '{name}' expects a target state, but check '{gate.check}' has no target")
        states: dict[str, str | None] = {}
        for gate in self.gates.values():
            if gate.check is not None and states.setdefault(gate.check, gate.expect_state) != gate.expect_state:
                raise ValueError(
                    f"gates on check '{gate.check}' expect different target states; a check runs once per run, "
                    "so its gates must agree on expect_state"
                )
        problems = policy_id_conflicts(check.policy for check in self.checks.values())
        if problems:
            raise ValueError(problems[0])
        return self

    @property
    def lane(self) -> LaneSpec | None:
        """The live lane producing outputs, or None when outputs are recorded in the dataset."""
        return None if isinstance(self.task, RecordedTask) else self.task

    @property
    def samples(self) -> bool:
        """True when each example has a list of sample rows: recorded ``samples: true`` or a lane's ``epochs > 1``."""
        return self.task.samples if isinstance(self.task, RecordedTask) else self.task.epochs > 1

    @property
    def output_field(self) -> str:
        return self.task.field if isinstance(self.task, RecordedTask) else "output"

    @property
    def parse_json(self) -> bool:
        """``task.parse: json``: JSON-text outputs are parsed before metrics see them."""
        return self.task.parse == "json"

    @property
    def outputs_path(self) -> str | None:
        """The file recorded outputs are read from, when it is not the dataset file."""
        return self.task.path if isinstance(self.task, RecordedTask) else None

    @property
    def gold_excluded_field(self) -> str | None:
        """The dataset field the gold fingerprint leaves out: the recorded output field when the outputs are
        recorded in the dataset file; nothing when they come from their own file or from a live lane."""
        if isinstance(self.task, RecordedTask) and self.task.path is None:
            return self.task.field
        return None

    @property
    def needs_gold(self) -> bool:
        """Whether a declared gate's metric compares with a reference (only then is the gold fingerprint taken)."""
        return any(gate.metric is not None and self.metrics[gate.metric].uses_reference for gate in self.gates.values())

    @property
    def judges(self) -> dict[str, LlmJudgeSpec]:
        return {name: spec for name, spec in self.metrics.items() if isinstance(spec, LlmJudgeSpec)}

    @property
    def live(self) -> bool:
        """A run that calls something during scoring (a lane or a judge) takes the asynchronous path."""
        return self.lane is not None or bool(self.judges)

    @property
    def uses_call_cache(self) -> bool:
        """Whether anything in the run reads or writes the call cache: judges always do, a lane when its ``cache``
        is on. A run where nothing does opens no cache file."""
        return bool(self.judges) or (self.lane is not None and self.lane.cache)

    @property
    def per_example_checks(self) -> set[str]:
        return {spec.check for spec in self.metrics.values() if isinstance(spec, CheckMetricSpec)}

    @property
    def standalone_checks(self) -> list[str]:
        """Checks run once per `evalglass run` (and by `evalglass check`): every check not run per example."""
        return [name for name in self.checks if name not in self.per_example_checks]

    def expected_state(self, check: str) -> str | None:
        """The target state the gates on ``check`` require, if any (they must agree; see validation)."""
        return next((gate.expect_state for gate in self.gates.values() if gate.check == check), None)

    def gate_fingerprint(self, name: str, definition_files: dict[str, dict[str, str]] | None = None) -> str:
        """What an approval of this gate is bound to: the fingerprint of its :meth:`gate_definition`."""
        return fingerprint_of(self.gate_definition(name, definition_files))

    def gate_definition(self, name: str, definition_files: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
        """The canonical definition an approval covers: the gate's semantics and its subject's definition.

        ``definition_files`` holds, per metric, the SHA-256 of files that define it (a JSON Schema, a host module),
        so editing such a file makes the approval stale just like editing the YAML would.
        """
        gate = self.gates[name]
        if gate.check is not None:
            check = self.checks[gate.check].model_dump(mode="json", exclude={"description"})
            return {"gate": gate.fingerprint_payload(), "check": check}
        metric = str(gate.metric)
        spec = self.metrics[metric]
        payload: dict[str, Any] = {"gate": gate.fingerprint_payload(), "metric": spec.fingerprint_payload()}
        if gate.rule is GateRule.LOWER_BOUND:
            payload["interval"] = spec.interval.model_dump(mode="json")
        files = (definition_files or {}).get(metric)
        if files:
            payload["files"] = files
        if self.parse_json:  # what the metric sees changes with it (only when set: older approvals stay valid)
            payload["task_parse"] = "json"
        return payload


def _known(names: dict[str, Any]) -> str:
    return f" (known: {', '.join(sorted(names))})" if names else " (none are declared)"


@dataclass(frozen=True)
class LoadedConfig:
    config: Config
    path: Path
    fingerprint: str
    definition_files: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def dataset_path(self) -> Path:
        return self.base_dir / self.config.dataset.path

    @property
    def outputs_file(self) -> Path | None:
        path = self.config.outputs_path
        return self.base_dir / path if path is not None else None

    @property
    def ledger_path(self) -> Path:
        return self.base_dir / self.config.ledger


def load_config(path: Path) -> LoadedConfig:
    doc: YamlDocument = load_yaml(path, what="config")
    config = validate_document(Config, doc, what="the config", context={"base_dir": path.parent})
    return LoadedConfig(
        config=config,
        path=path,
        fingerprint=fingerprint_of_bytes(doc.raw),
        definition_files=definition_file_hashes(config, path.parent),
    )


def definition_file_hashes(config: Config, base_dir: Path) -> dict[str, dict[str, str]]:
    """SHA-256 of every file a metric's definition lives in, keyed by metric and path relative to the config.

    A file that cannot be read is left out here; building the metric then fails with its own clear error.
    """
    hashes: dict[str, dict[str, str]] = {}
    root = base_dir.resolve()
    for name, spec in config.metrics.items():
        files: dict[str, str] = {}
        for path in spec.referenced_files(base_dir):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            label = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
            files[label] = fingerprint_of_bytes(data)
        if files:
            hashes[name] = files
    return hashes
