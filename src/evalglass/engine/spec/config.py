"""evalglass.yaml: the declared evaluation (dataset, how outputs are obtained, metrics, gates).

Everything is validated with ``extra="forbid"``: an unknown key is refused with a suggestion, never ignored, because
a misspelt ``tolerate`` or ``threshold`` silently dropped would change what a green run means.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.functional_validators import BeforeValidator

from evalglass.core.authority import DEFAULT_LEDGER
from evalglass.core.checks import check_code_key, policy_id_conflicts
from evalglass.core.fieldpath import FieldPathError, parse_path
from evalglass.core.fingerprint import fingerprint_of, fingerprint_of_bytes
from evalglass.core.gatespec import GateRule, GateSpec
from evalglass.core.goldfields import (
    TOOL_FORMATS,
    TOOL_RUN_FIELDS,
    FieldRole,
    FieldUse,
    field_conflicts,
    gold_excluded_fields,
    merged_task,
    others_outputs,
)
from evalglass.core.outputshape import OutputShape
from evalglass.core.stats import Direction, Reducer, Ties
from evalglass.core.usage import Price
from evalglass.engine.spec.executorspec import TASK_KEY, AnyExecutor, LocalExecutorSpec, RayExecutorSpec
from evalglass.engine.spec.outputfields import (
    csv_text_problems,
    output_shape_problems,
    recorded_shape,
    unrecorded_field_problems,
)
from evalglass.engine.spec.samplecount import SAMPLES_KEY, sample_count_problems
from evalglass.engine.spec.tracespec import TraceOptions
from evalglass.engine.spec.validation import validate_document
from evalglass.errors import LocatedValueError, SetupError
from evalglass.lanes.checkspec import CheckSpec, CodeBinding
from evalglass.lanes.hostimports import TooManyHostFiles
from evalglass.lanes.specs import EndpointSpec, LaneSpec, templates_read
from evalglass.metrics.registry import BY_NAME, MetricEntry
from evalglass.metrics.versions import fingerprinted, gate_evaluators
from evalglass.readers.userfiles import FileState, file_state, read_regular
from evalglass.readers.yamlsource import YamlDocument, load_yaml

if TYPE_CHECKING:
    from evalglass.metrics.registry import AnyMetricSpec

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]*$"
_NAME = re.compile(NAME_PATTERN)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Dataset formats read by their own readers (``engine.datasets.datasetfile.open_reader``).
DatasetFormat = Literal["jsonl", "csv", "parquet", "otlp", "inspect", "promptfoo", "lm-eval", "openai-evals"]


def _check_path(path: str) -> str:
    try:
        parse_path(path)
    except FieldPathError as exc:
        raise ValueError(str(exc)) from None
    return path


def _names_a_file(path: str) -> str:
    """A file path in the config must name something: an empty path would resolve to the config's own folder."""
    if not path.strip():
        raise ValueError("is empty; name a file, relative to this config file")
    return path


class DatasetSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str = Field(pattern=NAME_PATTERN, description="The name the ledger uses to validate this dataset.")
    path: str = Field(description="JSONL file, one example per line, relative to this config file.")
    format: DatasetFormat | None = Field(
        default=None,
        description="How the file is read: by default from its extension (.jsonl, .csv, .parquet); `otlp` for "
        "OpenTelemetry traces (OTLP/JSON lines or protobuf, docs/traces.md); `inspect`, `promptfoo`, `lm-eval`, "
        "`openai-evals` for another tool's results (docs/other-tools.md).",
    )
    traces: TraceOptions | None = Field(
        default=None, description="With `format: otlp`: which spans make an example, and the mapping (docs/traces.md)."
    )
    answer_filter: str | None = Field(
        default=None,
        description="With `format: lm-eval`: the filter whose answer (`filtered_resps`) is each example's output. "
        "Required when the task has several filters (one line per filter): which answer the metrics measure is "
        "declared, never taken from the order of the file's lines.",
    )
    id_field: str = Field(default="id", description="Field holding each example's unique id.")
    cluster_field: str | None = Field(
        default=None,
        description="Field naming the group an example belongs to (a document, a conversation); intervals then "
        "account for examples of one group being alike. An example without it forms a group of its own.",
    )

    _paths = field_validator("id_field", "cluster_field")(_check_path)
    _file = field_validator("path")(_names_a_file)

    @model_validator(mode="after")
    def _options_fit_format(self) -> "DatasetSpec":
        if self.traces is not None and self.format != "otlp":
            raise LocatedValueError([(("traces",), "`traces` applies to `format: otlp` only")])
        if self.answer_filter is not None and self.format != "lm-eval":
            raise LocatedValueError([(("answer_filter",), "`answer_filter` applies to `format: lm-eval` only")])
        return self

    @property
    def trace_options(self) -> TraceOptions:
        return self.traces if self.traces is not None else TraceOptions()

    @property
    def tool_results(self) -> bool:
        """Whether the file is another evaluation tool's results (``engine.datasets.toollogs.toolresults``)."""
        return self.format in TOOL_FORMATS

    @property
    def may_lack_content(self) -> bool:
        """Whether records may list content their source did not capture (``not_captured``): traces, and other
        tools' results (which do not all record every sample's answer or prompt)."""
        return self.format == "otlp" or self.tool_results


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
        description="`json`: parse a JSON-text output before metrics see it; text that does not parse is a wrong "
        "answer (`output_not_json`): every metric scores it its worst value (0.0 on a unit scale), json_valid "
        "measures the text (0.0), and a metric with `on_invalid_output: exclude` leaves it out.",
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
    epochs: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="With samples: how many samples each example's list holds; an example with another number is "
        "an error (`sample_count`). Required by a gate on a metric whose reducer depends on the count (max, min, "
        "majority, at_least_k), and bound in its approval.",
    )

    _paths = field_validator("field")(_check_path)


def _recorded_by_default(value: Any) -> Any:
    """``task: {field: answer}`` predates live lanes: a mapping without ``type`` is a recorded task."""
    if isinstance(value, dict) and "type" not in value:
        return {**value, "type": "recorded"}
    return value


AnyTask = Annotated[
    RecordedTask | LaneSpec,
    Field(discriminator="type"),
    BeforeValidator(_recorded_by_default),
]


_task_adapter: TypeAdapter[Any] | None = None


def validated_task(
    raw: dict[str, Any], at: tuple[str | int, ...]
) -> tuple[RecordedTask | LaneSpec | None, list[tuple[tuple[str | int, ...], str]]]:
    """A variant's merged task validated as ``task:`` is, or its problems, each at its key under ``at``."""
    global _task_adapter
    if _task_adapter is None:
        from pydantic import TypeAdapter

        _task_adapter = TypeAdapter(AnyTask)
    try:
        return _task_adapter.validate_python(raw), []
    except ValidationError as error:
        problems: list[tuple[tuple[str | int, ...], str]] = []
        for item in error.errors():
            # The discriminator's tag (`chat`, `python`) is part of pydantic's location, not of the document.
            where = tuple(part for part in item["loc"] if part != raw.get("type"))
            problems.append(((*at, *where), f"variant task: {item['msg']}"))
        return None, problems


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
    variants: dict[str, dict[str, Any]] | None = Field(
        default=None,
        description="Named overrides of `task` (model, endpoint, prompt, sampling parameters, provider, python "
        "function, recorded field; or a whole task with another `type`): one run scores every variant on the same "
        "examples and compares every pair (docs/choosing-models.md). One variant is the task itself.",
    )
    concurrency: ConcurrencySpec = Field(
        default_factory=ConcurrencySpec, description="Limits for live lane and judge calls."
    )
    executor: AnyExecutor = Field(
        default_factory=LocalExecutorSpec,
        description="Where per-example work runs: `local` (this process) or `ray` (a Ray cluster).",
    )
    ledger: str = Field(
        default=DEFAULT_LEDGER,
        description="The host-owned authority ledger, relative to this config file. Any other file than the "
        "default must be confirmed with `--ledger` (a config, which a pull request edits, cannot choose its ledger).",
    )
    # Each entry validated by the type it declares (``MetricEntry``), not by the validator of every type at once.
    metrics: dict[str, MetricEntry] = Field(min_length=1)
    gates: dict[str, GateSpec] = Field(default_factory=dict)
    checks: dict[str, CheckSpec] = Field(
        default_factory=dict, description="Bound command checks, used by `check` metrics, gates and `evalglass check`."
    )
    prices: dict[str, Price] = Field(
        default_factory=dict,
        description="Per model name, what its tokens cost per million (`prompt_per_million`, "
        "`completion_per_million`, optionally `cache_read_per_million`, `cache_write_per_million`); turns live runs' "
        "token counts into cost.",
    )
    check_workers: int | None = Field(
        default=None, ge=1, le=1024, description="Per-example checks run at once (default: the number of CPUs)."
    )
    secrets: tuple[str, ...] = Field(
        default=(),
        description="Names of environment variables whose values are secrets although their names do not say so "
        "(names with KEY, TOKEN, SECRET, PASSWORD, AUTH, ... and every api_key_env already are): their values are "
        "redacted from every artifact, message and output.",
    )

    @field_validator("secrets")
    @classmethod
    def _env_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        problems: list[tuple[tuple[str | int, ...], str]] = [
            ((index,), f"secrets lists environment variable NAMES; {name[:4]!r}… is not one")
            for index, name in enumerate(names)
            if not _ENV_NAME.match(name)
        ]
        if problems:
            raise LocatedValueError(problems)
        return names

    # Set by :meth:`for_variant` only: the run's gold fields, which a variant's own task does not know.
    _gold_fields: tuple[str, ...] | None = PrivateAttr(default=None)
    #: A variant's scoring config takes the gold exactly when the run does (its gates are a subset: a gate on the
    #: judge of variants side by side is in none of them).
    _needs_gold: bool | None = PrivateAttr(default=None)

    _ledger_file = field_validator("ledger")(_names_a_file)

    @model_validator(mode="before")
    @classmethod
    def _one_variant_is_the_task(cls, data: Any) -> Any:
        from evalglass.engine.spec.variantspec import fold_single_variant

        return fold_single_variant(data)

    @field_validator("metrics", "gates", "checks")
    @classmethod
    def _names(cls, entries: dict[str, Any]) -> dict[str, Any]:
        # Located: each bad name is reported at its own line, not at the line of the block that holds it.
        problems: list[tuple[tuple[str | int, ...], str]] = [
            ((name,), f"name {name!r} must start with a letter and use letters, digits, _ . -")
            for name in entries
            if not _NAME.match(name)
        ]
        if problems:
            raise LocatedValueError(problems)
        return entries

    @model_validator(mode="after")
    def _metrics_of_the_format(self) -> "Config":
        """Each metric as it reads this dataset's format (``MetricSpec.for_format``: a ``recorded_score``'s default
        labels), filled in here so what it reads is in the metric's fingerprint."""
        for name, spec in self.metrics.items():
            self.metrics[name] = spec.for_format(self.dataset.format)
        return self

    @model_validator(mode="after")
    def _references_resolve(self, info: ValidationInfo) -> "Config":
        """Names that must refer to something declared elsewhere. Every broken reference is reported, each at the
        key that makes it (a gate's ``metric``, a metric's ``check``), not at the top of the file."""
        problems: list[tuple[tuple[str | int, ...], str]] = []
        per_example = self.per_example_checks
        for name, spec in self.metrics.items():
            for key, named in spec.check_references().items():
                check = self.checks.get(named)
                if check is None:
                    problems.append(
                        (
                            ("metrics", name, key),
                            f"metric '{name}' names check '{named}', which is not declared{_known(self.checks)}",
                        )
                    )
                elif check.target is not None and check.target.path is not None:
                    problems.append(
                        (
                            ("metrics", name, key),
                            f"metric '{name}' runs check '{named}' per example, but that check is bound to "
                            f"'{check.target.path}'; a per-example check's target declares only include/exclude",
                        )
                    )
        for name, gate in self.gates.items():
            if gate.metric is not None and gate.metric not in self.metrics:
                problems.append(
                    (
                        ("gates", name, "metric"),
                        f"gate '{name}' names metric '{gate.metric}', which is not declared{_known(self.metrics)}",
                    )
                )
            if gate.check is not None:
                check = self.checks.get(gate.check)
                at: tuple[str | int, ...] = ("gates", name, "check")
                if check is None:
                    problems.append(
                        (at, f"gate '{name}' names check '{gate.check}', which is not declared{_known(self.checks)}")
                    )
                elif gate.check in per_example or (check.target is not None and check.target.path is None):
                    problems.append(
                        (
                            at,
                            f"gate '{name}' decides on check '{gate.check}', which runs per example; gate a metric "
                            "of type check instead, or give the check a target path",
                        )
                    )
                elif gate.expect_state is not None and check.target is None:
                    problems.append(
                        (
                            ("gates", name, "expect_state"),
                            f"gate '{name}' expects a target state, but check '{gate.check}' has no target",
                        )
                    )
        states: dict[str, str | None] = {}
        for name, gate in self.gates.items():
            if gate.check is not None and states.setdefault(gate.check, gate.expect_state) != gate.expect_state:
                problems.append(
                    (
                        ("gates", name, "expect_state"),
                        f"gates on check '{gate.check}' expect different target states; a check runs once per "
                        "run, so its gates must agree on expect_state",
                    )
                )
        problems += [(("checks",), problem) for problem in policy_id_conflicts(c.policy for c in self.checks.values())]
        problems += self._executor_problems()
        problems += self._variant_problems()
        # Only on variants that are valid tasks; and not on a run record's config (RECORDED_CONTEXT), which was
        # decided under the rules of its day and must stay readable (view, verify) after a rule is added.
        if not problems and not (info.context or {}).get(RECORDED):
            problems += self._fields_apart()
            problems += sample_count_problems(
                epochs_without_samples=isinstance(self.task, RecordedTask)
                and self.task.epochs is not None
                and not self.samples,
                samples=self.samples,
                samples_per_example=self.samples_per_example,
                gate_reducers=[
                    (name, gate.metric, self.metrics[gate.metric].reducer)
                    for name, gate in self.gates.items()
                    if gate.metric is not None and gate.metric in self.metrics
                ],
            )
            problems += self._tie_problems()
            problems += unrecorded_field_problems(self._live_tasks(), self.metrics, self.prices)
            problems += output_shape_problems(self._output_shapes(), self.metrics)
            if self._outputs_are_csv_cells():
                problems += csv_text_problems(self.metrics)
        if problems:
            raise LocatedValueError(problems)
        return self

    def _compared_variant_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """A pairwise judge of variants (``compare_variants``) names declared variants whose lanes write outputs,
        and a gate on it names no variant (its column is the metric's own, over every compared variant)."""
        names = self.variant_names
        problems: list[tuple[tuple[str | int, ...], str]] = []
        for metric, spec in self.metrics.items():
            compared = getattr(spec, "compare_variants", None)
            if compared is None:
                continue
            at = ("metrics", metric, "compare_variants")
            unknown = [name for name in compared if name not in names]
            if not names:
                problems.append((at, f"metric '{metric}' compares variants, but the run declares no `variants:`"))
            elif unknown:
                problems.append(
                    (
                        at,
                        f"metric '{metric}' compares variant '{unknown[0]}', which is not declared"
                        f"{_known(dict.fromkeys(names))}",
                    )
                )
            elif recorded := [name for name in compared if isinstance(self._variant_task_or_none(name), RecordedTask)]:
                # A recorded variant's outputs are in the user's files, not the run's: compare them in one record.
                problems.append(
                    (
                        at,
                        f"metric '{metric}' compares variant '{recorded[0]}', whose outputs are recorded: compare "
                        "recorded outputs as named outputs of one record with `compare` instead",
                    )
                )
        compared_metrics = set(self.compared_metrics)  # once: a property over every metric, asked per gate
        for name, gate in self.gates.items():
            if gate.metric not in compared_metrics:
                continue
            if gate.variant is not None:
                problems.append(
                    (
                        ("gates", name, "variant"),
                        f"gate '{name}' decides on '{gate.metric}', which compares variants: its value is measured "
                        "once over the compared variants, so remove `variant:`",
                    )
                )
        return problems

    @property
    def compared_variants(self) -> list[str]:
        """The variants some judge of variants side by side compares, in declared order: the outputs
        ``compared/graded.jsonl`` holds."""
        compared = {
            name for metric in self.compared_metrics for name in getattr(self.metrics[metric], "compare_variants", ())
        }
        return [name for name in self.variant_names if name in compared]

    def _variant_task_or_none(self, name: str) -> RecordedTask | LaneSpec | None:
        return validated_task(self._variant_raw_task(name), ("variants", name))[0]

    @property
    def compared_metrics(self) -> tuple[str, ...]:
        """The metrics that judge the variants' outputs side by side (``compare_variants``): scored once per run,
        after every variant, never per variant."""
        return tuple(name for name, spec in self.metrics.items() if getattr(spec, "compare_variants", None))

    def _variant_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Every variant's task must be a valid task, the variants must differ and share the samples per example,
        and in a run with variants every metric gate names the variant it decides on."""
        from evalglass.core.stats.multiplemodel import MAX_VARIANTS

        problems: list[tuple[tuple[str | int, ...], str]] = []
        names = self.variant_names
        compared = self.compared_metrics
        for name, gate in self.gates.items():
            if gate.variant is not None and gate.variant not in names:
                problems.append(
                    (
                        ("gates", name, "variant"),
                        f"gate '{name}' names variant '{gate.variant}', which is not declared"
                        f"{_known(dict.fromkeys(names))}",
                    )
                )
            elif gate.compare_to_variant is not None and gate.compare_to_variant not in names:
                problems.append(
                    (
                        ("gates", name, "compare_to_variant"),
                        f"gate '{name}' compares with variant '{gate.compare_to_variant}', which is not declared"
                        f"{_known(dict.fromkeys(names))}",
                    )
                )
            elif gate.compare_to_variant is not None and self.samples:
                problems.append(
                    (
                        ("gates", name, "compare_to_variant"),
                        f"gate '{name}' compares two variants per example, which takes one sample per example: "
                        "a gate between variants with epochs is not decided yet",
                    )
                )
            elif names and gate.metric is not None and gate.variant is None and gate.metric not in compared:
                problems.append(
                    (
                        ("gates", name),
                        f"gate '{name}' must name the variant it decides on (`variant: NAME`, one of "
                        f"{', '.join(names)}): in a run with variants a metric is measured once per variant",
                    )
                )
        problems += self._compared_variant_problems()
        if not names:
            return problems
        if len(names) > MAX_VARIANTS:
            problems.append((("variants",), f"at most {MAX_VARIANTS} variants are compared in one run"))
        seen: dict[str, str] = {}
        # Samples per example: a lane's epochs; 1 for a recorded output; a recorded list of samples counts as its
        # own kind (its length is the file's, not the config's), so it pairs only with another such list.
        samples: set[int | str] = set()
        for name in names:
            if not _NAME.match(name):
                problems.append(
                    (("variants", name), f"name {name!r} must start with a letter and use letters, digits, _ . -")
                )
                continue
            task, found = validated_task(self._variant_raw_task(name), ("variants", name))
            problems += found
            if task is None:
                continue
            definition = fingerprint_of(task.model_dump(mode="json", exclude={"description"}))
            if definition in seen:
                problems.append(
                    (
                        ("variants", name),
                        f"variants '{seen[definition]}' and '{name}' run the same task; give each variant a "
                        "different model, endpoint, prompt, parameter or function",
                    )
                )
            seen.setdefault(definition, name)
            if isinstance(task, RecordedTask):
                samples.add("recorded samples" if task.samples else 1)
            else:
                samples.add(task.epochs)
        if len(samples) > 1:
            problems.append((("variants",), "every variant takes the same samples per example: set epochs on the task"))
        return problems

    def _raw_task(self) -> dict[str, Any]:
        """``task:`` as declared (its ``type`` always named), what a variant's override is merged over."""
        base = self.task.model_dump(mode="json", exclude_unset=True, by_alias=True)
        base["type"] = self.task.type
        return base

    def _variant_raw_task(self, name: str) -> dict[str, Any]:
        assert self.variants is not None
        return merged_task(self._raw_task(), self.variants[name])

    @property
    def variant_names(self) -> tuple[str, ...]:
        """The variants a run compares, in declared order; empty without ``variants:`` (one variant is the task)."""
        return tuple(self.variants or ())

    def variant_task(self, name: str) -> RecordedTask | LaneSpec:
        """The task variant ``name`` runs (validated when the config was)."""
        task, problems = validated_task(self._variant_raw_task(name), ("variants", name))
        if task is None:
            raise LocatedValueError(problems)
        return task

    def for_variant(self, name: str) -> "Config":
        """The config one variant's scoring runs: the task is the variant's, the gates stay (a metric's direction
        comes from them) without their variant, and the gold fingerprint leaves out every variant's output field
        as the run's does. Never validated again, never decided on, never recorded."""
        compared = self.compared_metrics
        gates = {
            gate: spec.model_copy(update={"variant": None})
            for gate, spec in self.gates.items()
            if spec.metric not in compared
        }
        metrics = {metric: spec for metric, spec in self.metrics.items() if metric not in compared}
        variant = self.model_copy(
            update={"task": self.variant_task(name), "variants": None, "gates": gates, "metrics": metrics}
        )
        variant._gold_fields = self.gold_excluded_fields
        variant._needs_gold = self.needs_gold
        return variant

    def for_compared(self, graded: Path) -> "Config":
        """The config the judges of variants (``compare_variants``) are scored with once every variant is: a
        recorded task reading ``graded`` (per example, every variant's output by name: ``variantoutputs.graded_lines``),
        those metrics only, and their gates. Never validated again, never decided on, never recorded."""
        compared = self.compared_metrics
        # parse: json reads a variant's answer that was not JSON (variantoutputs._graded) as the wrong answer it is;
        # every other graded output is a mapping, which parsing leaves as it is.
        task = RecordedTask(path=str(graded), field="output", samples=self.samples, parse="json")
        stage = self.model_copy(
            update={
                "task": task,
                "variants": None,
                "metrics": {name: spec for name, spec in self.metrics.items() if name in compared},
                "gates": {gate: spec for gate, spec in self.gates.items() if spec.metric in compared},
            }
        )
        # The run's gold fields, as every variant's pass keeps them: its judges are shown the record as gold sees
        # it (no variant's recorded output under its field's name, which would tell the judge whose answer is which).
        stage._gold_fields = self.gold_excluded_fields
        return stage

    def variant_definitions(self) -> dict[str, Any]:
        """What every gate of a run with variants is bound to besides its own definition: each variant's name and
        task (prose aside). Renaming, redefining, adding or removing a variant makes every approval stale."""
        return {
            name: self.variant_task(name).model_dump(mode="json", exclude={"description"})
            for name in self.variant_names
        }

    def _gate_directions(self, metric: str) -> dict[str, Direction]:
        return {name: gate.direction for name, gate in self.gates.items() if gate.metric == metric}

    def metric_direction(self, metric: str) -> Direction | None:
        """Which way ``metric`` improves: its gates' direction, higher is better (a gate's default) when no gate
        decides on it, None when its gates disagree. It decides which end of its scale an answer the metric cannot
        read scores; with None there is no single worst end (``metrics.invalid``)."""
        directions = set(self._gate_directions(metric).values())
        if len(directions) > 1:
            return None
        return directions.pop() if directions else Direction.HIGHER_IS_BETTER

    def _tie_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """A ``majority`` metric with samples whose gates disagree on which way it improves: a tie between its
        samples would have no unfavourable side (:meth:`tie_side`), so one of the gates would read a split vote
        as a win. Not on a run record's config snapshot (RECORDED_CONTEXT), decided under the rules of its day;
        ``verify`` validates the recorded source as a config file, so such a run does not verify."""
        if not self.samples:
            return []
        problems: list[tuple[tuple[str | int, ...], str]] = []
        for metric, spec in self.metrics.items():
            if spec.reducer is not Reducer.MAJORITY or self.metric_direction(metric) is not None:
                continue
            said = ", ".join(f"gate '{gate}': {way.value}" for gate, way in self._gate_directions(metric).items())
            problems.append(
                (
                    ("metrics", metric, "reducer"),
                    f"metric '{metric}' reduces its samples by majority and its gates disagree on which way it "
                    f"improves ({said}), so a tie between samples has no unfavourable side: declare the metric once "
                    "per direction (the same definition under two names), each gated one way",
                )
            )
        return problems

    def tie_side(self, metric: str, *, unfavourable: bool = True) -> Ties:
        """Where a ``majority`` tie between ``metric``'s samples goes: the unfavourable side of its direction
        (``Ties.against``: the lowest tied value when higher is better, the highest when lower is better), so a
        split vote is never read as a win; ``unfavourable`` off, the lowest whatever the direction, as runs recorded
        before that rule were decided (``core.recordrules``). One rule for every reduction of the metric: the
        decision, a baseline's column, ``compare``, the variants' summary."""
        return Ties.against(self.metric_direction(metric)) if unfavourable else Ties.LOW

    def _executor_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Overrides must name something that is shipped; a declared secret may not be put in ``env_vars``."""
        executor = self.executor
        if not isinstance(executor, RayExecutorSpec):
            return []
        problems: list[tuple[tuple[str | int, ...], str]] = []
        shipped = self.shipped_metrics
        for name in executor.overrides:
            if name == TASK_KEY:
                if self.lane is None or not self.lane.shippable:
                    problems.append(
                        (
                            ("executor", "overrides", name),
                            "override 'task' applies to a python or command lane, and this config has none",
                        )
                    )
            elif name in self.guarded_metrics:
                problems.append(
                    (
                        ("executor", "overrides", name),
                        f"override '{name}' names a gated python metric, which is scored here in its guarded worker, "
                        "never shipped (docs/cluster.md): drop the override",
                    )
                )
            elif name not in shipped:
                problems.append(
                    (
                        ("executor", "overrides", name),
                        f"override '{name}' names no shipped work: use 'task' or a metric of type python or check"
                        + (f" ({', '.join(sorted(shipped))})" if shipped else ""),
                    )
                )
        variables = executor.runtime_env.get("env_vars", {})
        for name in self.secrets:
            if name in variables:
                problems.append(
                    (
                        ("executor", "runtime_env", "env_vars", name),
                        f"{name} is declared a secret; a secret never goes in the config: set it in the workers' "
                        "own environment",
                    )
                )
        return problems

    @property
    def shipped_metrics(self) -> set[str]:
        """Metrics whose per-example calls a cluster executor ships: those that say they are ``shippable`` (host
        ``python`` metrics and ``check`` metrics; the builtins cost less to compute than to ship; LLM judges are I/O
        and stay on the driver)."""
        if not isinstance(self.executor, RayExecutorSpec):
            return set()
        guarded = self.guarded_metrics
        return {name for name, spec in self.metrics.items() if spec.shippable and name not in guarded}

    @property
    def guarded_metrics(self) -> set[str]:
        """Metrics running host functions that a gate decides on: their worker loads no project file the gate does
        not bind (``lanes.hostguard``). Never shipped: a cluster worker process runs many tasks, and the guard's audit
        hook cannot be taken off it again, so it could hold no one metric's guard (ungated python metrics ship)."""
        gated = {gate.metric for gate in self.gates.values()}
        return {name for name, spec in self.metrics.items() if name in gated and spec.host_functions()}

    def _outputs_are_csv_cells(self) -> bool:
        """Every output the run scores is a cell of a CSV dataset, as written (no live lane, no outputs file, no
        ``parse``): text, whatever it spells."""
        csv = self.dataset.format == "csv" or (
            self.dataset.format is None and self.dataset.path.lower().endswith(".csv")
        )
        recorded = self._recorded_tasks()
        return (
            csv
            and not self._live_tasks()
            and bool(recorded)
            and all(task.path is None and task.parse is None for _, task in recorded)
        )

    def _recorded_tasks(self) -> list[tuple[str | None, RecordedTask]]:
        """Every recorded task the run scores, with the variant that declares it (None: the task itself)."""
        if not self.variants:
            return [(None, self.task)] if isinstance(self.task, RecordedTask) else []
        found = ((name, self._variant_task_or_none(name)) for name in self.variant_names)
        return [(name, task) for name, task in found if isinstance(task, RecordedTask)]

    def _live_tasks(self) -> list[tuple[str | None, LaneSpec]]:
        """Every live lane the run scores, with the variant that declares it (None: the task itself)."""
        found = (
            [(None, self.task)] if not self.variants else [(n, self._variant_task_or_none(n)) for n in self.variants]
        )
        return [(name, task) for name, task in found if task is not None and not isinstance(task, RecordedTask)]

    def _output_shapes(self) -> list[tuple[str | None, OutputShape]]:
        """What each task's whole output is (``engine.spec.outputfields``), with the variant that declares it."""
        shapes = [(name, task.output_shape()) for name, task in self._live_tasks()]
        shapes += [(name, recorded_shape(self.dataset.format, task.field)) for name, task in self._recorded_tasks()]
        return shapes

    def _field_uses(self) -> list[FieldUse]:
        """Every use of a dataset field the config declares: each recorded output (the task's, or each recorded
        variant's), the id and cluster fields, every metric's reference, and the fields a template reads by name (a
        live variant's prompt, an agent's recorded results and state, a judge's prompt and transcript input)."""
        uses: list[FieldUse] = []
        for name, task in self._recorded_tasks():
            owner = f"variant '{name}'" if name is not None else "the task"
            at: tuple[str | int, ...] = ("variants", name, "field") if name is not None else ("task", "field")
            label = ".".join(str(part) for part in at)
            uses.append(FieldUse(task.field, FieldRole.OUTPUT, owner, at, label, in_file=task.path is None))
        if self.dataset.tool_results:  # what the reader records of the tool's run: left out of gold like an output
            fix = "read the sample's own fields (input, target, scores) instead"
            for name in TOOL_RUN_FIELDS:
                at = ("dataset", "format")
                label = f"the {self.dataset.format} reader's run field"
                uses.append(FieldUse(name, FieldRole.OUTPUT, "the tool's run", at, label, fix=fix))
        uses.append(FieldUse(self.dataset.id_field, FieldRole.ID, "the dataset", ("dataset", "id_field")))
        if self.dataset.cluster_field is not None:
            cluster = self.dataset.cluster_field
            uses.append(FieldUse(cluster, FieldRole.CLUSTER, "the dataset", ("dataset", "cluster_field")))
        # Inputs matter only beside an output the dataset file holds (the fields gold leaves out): templates are
        # not parsed for a config without one (a live run, outputs in a file of their own).
        in_file = any(use.in_file for use in uses if use.role is FieldRole.OUTPUT)
        gated = {str(gate.metric): name for name, gate in self.gates.items() if gate.metric is not None}
        for metric, spec in self.metrics.items():
            owner = f"metric '{metric}'" + (f" (gated by '{gated[metric]}')" if metric in gated else "")
            if isinstance(spec.reference, str):
                uses.append(FieldUse(spec.reference, FieldRole.REFERENCE, owner, ("metrics", metric, "reference")))
            templates = [(f"its {what}", template) for what, template in spec.record_templates().items()]
            for read, how in templates_read(templates, top_level=False) if in_file else ():
                uses.append(FieldUse(read, FieldRole.INPUT, owner, ("metrics", metric), how=how))
            for what, path in spec.record_paths().items() if in_file else ():
                uses.append(FieldUse(path, FieldRole.INPUT, owner, ("metrics", metric), how=f"its {what}"))
        lanes = [(f"variant '{name}'", self._variant_task_or_none(name)) for name in self.variant_names]
        for owner, lane in (lanes or [("the task", self.task)]) if in_file else ():
            if lane is None or isinstance(lane, RecordedTask):
                continue
            for read, how in lane.record_inputs():
                uses.append(FieldUse(read, FieldRole.INPUT, owner, (), how=how))
        return uses

    def _fields_apart(self) -> list[tuple[tuple[str | int, ...], str]]:
        """A field holding a recorded output may be nothing else (``core.goldfields.field_conflicts``): gold leaves
        it out, so an id, a cluster, a reference or an input there would leave gold (or what the run feeds a
        system) unbound, and a reference there would compare an output with itself; two variants in one field
        would be one answer measured as two systems. Each problem is reported at the output's key."""
        return field_conflicts(self._field_uses())

    @property
    def secret_names(self) -> tuple[str, ...]:
        """Every variable whose value is a secret by declaration: ``secrets:`` and each lane's or judge's
        ``api_key_env``."""
        keys = [self.task.api_key_env] if isinstance(self.task, EndpointSpec) else []
        keys.extend(name for spec in self.metrics.values() for name in spec.key_variables())
        return tuple(dict.fromkeys((*self.secrets, *(name for name in keys if name))))

    @property
    def lane(self) -> LaneSpec | None:
        """The live lane producing outputs, or None when outputs are recorded in the dataset."""
        return None if isinstance(self.task, RecordedTask) else self.task

    @property
    def samples(self) -> bool:
        """True when each example has a list of sample rows: recorded ``samples: true``, a lane's ``epochs > 1``, or
        another tool's results (whose epochs and repeats are always kept as samples)."""
        if self.dataset.tool_results:
            return True
        task = self.variant_task(self.variant_names[0]) if self.variant_names else self.task
        return task.samples if isinstance(task, RecordedTask) else task.epochs > 1

    @property
    def samples_per_example(self) -> int | None:
        """How many samples each example has, when the config says: a lane's ``epochs``, a recorded task's declared
        ``epochs`` (None when undeclared: the file decides, example by example)."""
        task = self.variant_task(self.variant_names[0]) if self.variant_names else self.task
        return task.epochs

    @property
    def recorded_sample_count(self) -> int | None:
        """The samples each recorded example's list must hold (the declared ``task.epochs``); None for a lane (which
        produces exactly its epochs) and for recorded samples of undeclared count (``engine.spec.samplecount``)."""
        return self.samples_per_example if self.samples and self.lane is None else None

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
    def gold_excluded_fields(self) -> tuple[str, ...]:
        """The dataset fields the gold fingerprint leaves out: every field holding a recorded output of a task the
        run scores (the task, or each variant's) when read from the dataset file itself; none for outputs from
        their own file or a live lane (``core.goldfields``). A variant's scoring config (:meth:`for_variant`) keeps
        the run's fields, so every variant's pass takes the run's one gold fingerprint."""
        if self._gold_fields is not None:
            return self._gold_fields
        return gold_excluded_fields(self._raw_task(), self.variants, self.dataset.format)

    @property
    def others_output_fields(self) -> tuple[str, ...]:
        """The record's fields a ``python`` metric scoring this config's task is not shown: every other variant's
        recorded output in the dataset file (``core.goldfields.others_outputs``); none in a run without variants.
        Gold leaves them out, so a metric reading one would decide on a value no approval binds."""
        task = self.task
        own = task.field if isinstance(task, RecordedTask) and task.path is None else None
        return others_outputs(self.gold_excluded_fields, own)

    @property
    def needs_gold(self) -> bool:
        """Whether a gate is declared on a metric: it stands on the dataset's gold (``core.authority.
        stands_on_gold``: a reference, or the examples it measures), or compares with a baseline (which needs the
        same gold). Only then is the gold fingerprint taken (it costs a serialisation of every record); a run whose
        gates are all check gates measures no examples. A variant's scoring config answers as its run does."""
        if self._needs_gold is not None:
            return self._needs_gold
        return any(gate.metric is not None for gate in self.gates.values())

    @property
    def judges(self) -> "dict[str, AnyMetricSpec]":
        """The metrics whose gates stand on a calibration against human labels (``calibrated``; the ledger's
        ``judges:``), by name: what ``evalglass calibrate`` calibrates and a gate's judge standing is read for."""
        return {name: spec for name, spec in self.metrics.items() if spec.calibrated}

    @property
    def live(self) -> bool:
        """A run that calls something during scoring (a lane, or a ``live`` metric: a judge) takes the asynchronous
        path."""
        lanes = [not isinstance(self.variant_task(name), RecordedTask) for name in self.variant_names]
        return self.lane is not None or any(lanes) or any(spec.live for spec in self.metrics.values())

    @property
    def uses_call_cache(self) -> bool:
        """Whether anything in the run reads or writes the call cache: live metrics (judges) always do, a lane when
        its ``cache`` is on. A run where nothing does opens no cache file."""
        return any(spec.live for spec in self.metrics.values()) or (self.lane is not None and self.lane.cache)

    @property
    def per_example_checks(self) -> set[str]:
        return {check for spec in self.metrics.values() for check in spec.check_references().values()}

    @property
    def standalone_checks(self) -> list[str]:
        """Checks run once per `evalglass run` (and by `evalglass check`): every check not run per example."""
        return [name for name in self.checks if name not in self.per_example_checks]

    def expected_state(self, check: str) -> str | None:
        """The target state the gates on ``check`` require, if any (they must agree; see validation)."""
        return next((gate.expect_state for gate in self.gates.values() if gate.check == check), None)

    def gate_evaluators(self, name: str) -> dict[str, int]:
        """The builtin evaluators (and their versions) the gate's outcome depends on; see ``metrics.versions``."""
        gate = self.gates[name]
        if gate.metric is None:
            return {}
        spec = self.metrics[gate.metric]
        return gate_evaluators(
            spec.type,
            reducer=spec.reducer if self.samples else None,
            interval=spec.interval.override,
            lower_bound=gate.rule is GateRule.LOWER_BOUND,
            clustered=self.dataset.cluster_field is not None,
            comparative=gate.compare_to is not None,
            between_variants=gate.compare_to_variant is not None,
            lower_is_better=gate.direction is Direction.LOWER_IS_BETTER,
        )

    def evaluators_by_gate(self) -> dict[str, dict[str, int]]:
        """:meth:`gate_evaluators` of every gate that depends on any, as the run record keeps them."""
        return {name: found for name in self.gates if (found := self.gate_evaluators(name))}

    def gate_fingerprint(
        self,
        name: str,
        definition_files: dict[str, dict[str, str]] | None = None,
        versions: Mapping[str, int] | None = None,
    ) -> str:
        """What an approval of this gate is bound to: the fingerprint of its :meth:`gate_definition`."""
        return fingerprint_of(self.gate_definition(name, definition_files, versions))

    def gate_definition(
        self,
        name: str,
        definition_files: dict[str, dict[str, str]] | None = None,
        versions: Mapping[str, int] | None = None,
    ) -> dict[str, Any]:
        """The canonical definition an approval covers: the gate's semantics, its subject's definition, and the
        versions of the builtin evaluators it depends on.

        ``definition_files`` holds, per metric, the SHA-256 of files that define it (a JSON Schema, a host module),
        so editing such a file makes the approval stale just like editing the YAML would. ``versions`` replaces the
        current evaluator versions (``explain``'s search for which evaluator changed since an approval; ``{}`` is
        the fingerprint from before evaluators were versioned).
        """
        gate = self.gates[name]
        files_of = definition_files or {}
        if gate.check is not None:
            check_payload: dict[str, Any] = {
                "gate": gate.fingerprint_payload(),
                "check": self._check_payload(gate.check),
            }
            check_files = files_of.get(check_files_key(gate.check))
            if check_files:
                check_payload["files"] = check_files
            code = files_of.get(check_code_key(gate.check))
            if code:  # only when there is any: a check that runs no host code by name keeps its fingerprint
                check_payload["code"] = code
            if self.checks[gate.check].inputs:
                check_payload["inputs"] = files_of.get(check_inputs_key(gate.check), {})
            return check_payload
        metric = str(gate.metric)
        spec = self.metrics[metric]
        payload: dict[str, Any] = {"gate": gate.fingerprint_payload(), "metric": spec.fingerprint_payload()}
        if gate.rule is GateRule.LOWER_BOUND:
            payload["interval"] = spec.interval.model_dump(mode="json")
            if self.dataset.cluster_field is not None:
                # Which field groups the examples decides the interval's width as much as its method does: pointing
                # it at a field that makes each example its own group narrows a cluster-robust interval and can turn
                # an undecided gate green. Only when set: unclustered approvals keep their fingerprints.
                payload["clusters"] = self.dataset.cluster_field
        imported = files_of.get(imports_key(metric))
        if imported:  # only when there are any: a metric that imports no host code keeps its fingerprint
            payload["imports"] = imported
        payload.update(self.metric_checks_payload(metric, files_of))
        if spec.shippable and isinstance(self.executor, RayExecutorSpec):
            # The metric's work runs on a cluster: which one, and in which environment, decides what it answers. A
            # gated python metric is scored here instead (``guarded_metrics``), but its payload keeps the executor:
            # approvals made when it was shipped stay fresh, and a changed executor still asks for a new one.
            payload["executor"] = self.executor.binding_payload()
        if self.samples and spec.reducer.depends_on_count and self.samples_per_example is not None:
            # Under max, min, majority or at_least_k the expected value moves with the number of samples: raising a
            # lane's epochs would raise the number and turn a failing gate green (core.stats.Reducer). Only then:
            # other approvals keep their fingerprints.
            payload[SAMPLES_KEY] = self.samples_per_example
        if self.parse_json:  # what the metric sees changes with it (only when set: older approvals stay valid)
            payload["task_parse"] = "json"
        if isinstance(self.task, RecordedTask):
            # Which field holds the outputs decides what is measured: pointing it elsewhere needs a new approval.
            payload["recorded_output"] = {"field": self.task.field, "samples": self.samples}
        if self.dataset.format == "otlp" or self.dataset.tool_results:
            # Which spans make an example, and how they map, decide what is measured too (a `where` that keeps only
            # the good traces is a new approval). Only for these formats: other approvals keep their fingerprints.
            read: dict[str, Any] = {"format": self.dataset.format}
            if self.dataset.format == "otlp":
                read["traces"] = self.dataset.trace_options.model_dump(mode="json")
            if self.dataset.answer_filter is not None:  # which filter's answer is measured (only when declared)
                read["answer_filter"] = self.dataset.answer_filter
            payload["dataset_read"] = read
        prices = self.output_prices()
        if prices and reads_cost(spec):
            # A trajectory's cost is its tokens priced by `prices:`, a table a pull request edits: a cheaper price
            # would turn a failing budget gate green. Only then: other approvals keep their fingerprints.
            payload["prices"] = prices
        evaluators = fingerprinted(self.gate_evaluators(name) if versions is None else versions)
        if evaluators:
            payload["evaluators"] = evaluators
        if self.variant_names:
            payload["variants"] = self.variant_definitions()
        return payload

    def output_prices(self) -> dict[str, Any]:
        """The ``prices:`` entries the run's outputs are priced with (a live agent lane's trajectory holds a
        ``cost``), by model, as a gate on a metric that may read the cost binds them (:func:`reads_cost`)."""
        found: dict[str, Any] = {}
        for _, lane in self._live_tasks():
            model = lane.priced_model()
            if model is not None and model in self.prices:
                found[model] = self.prices[model].model_dump(mode="json", exclude_none=True)
        return dict(sorted(found.items()))

    def metric_checks_payload(self, metric: str, files_of: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
        """What a metric's definition binds of its files and of the checks it runs per example (a ``check``
        metric): the files that define it with those its checks' commands name (``files``), each check's declaration
        (``checks``), its declared inputs (``check_inputs``) and the host code it runs by name (``check_code``);
        each key only when there is any, so a metric that runs no check keeps its fingerprint. A gate's approval
        (:meth:`gate_definition`) and a comparison's "same metric" (``engine.runs.compare``) both bind this."""
        payload: dict[str, Any] = {}
        files = dict(files_of.get(metric, {}))
        checks: dict[str, Any] = {}
        check_inputs: dict[str, Any] = {}
        check_code: dict[str, Any] = {}
        for check_name in self.metrics[metric].check_references().values():
            files.update(files_of.get(check_files_key(check_name), {}))
            if files_of.get(check_code_key(check_name)):
                check_code[check_name] = dict(files_of[check_code_key(check_name)])
            # What the metric runs per example is what it measures: its command, policy and inputs, as a check
            # gate binds them.
            checks[check_name] = self._check_payload(check_name)
            if self.checks[check_name].inputs:
                check_inputs[check_name] = dict(files_of.get(check_inputs_key(check_name), {}))
        if files:
            payload["files"] = files
        if checks:
            payload["checks"] = checks
        if check_inputs:
            payload["check_inputs"] = check_inputs
        if check_code:
            payload["check_code"] = check_code
        return payload

    def _check_payload(self, name: str) -> dict[str, Any]:
        """A check's declaration as its gates bind it: all of it but its prose, and ``inputs`` only when declared
        (gates approved before checks had inputs keep their fingerprint)."""
        declared = self.checks[name]
        left_out = {"description"} if declared.inputs else {"description", "inputs"}
        return declared.model_dump(mode="json", exclude=left_out)


#: Metric types given an example's whole output whatever their ``field``: host code (``example.output``).
_WHOLE_OUTPUT_ALWAYS = frozenset({"python"})
#: Metric types given the whole output when they name no ``field``: a check's command, a judge's prompt.
_WHOLE_OUTPUT_UNLESS_FIELD = frozenset({"check", "llm_judge", "jury"})


def reads_cost(spec: "AnyMetricSpec") -> bool:
    """Whether ``spec`` may read a trajectory's ``cost`` (which ``prices:`` makes): a ``field`` under it, or a metric
    given the whole output (:data:`_WHOLE_OUTPUT_ALWAYS`, :data:`_WHOLE_OUTPUT_UNLESS_FIELD`). A builtin reading
    another field, or the output's structure (``steps``, ``tool_calls``), never does."""
    if spec.type in _WHOLE_OUTPUT_ALWAYS:
        return True
    if spec.field is None:
        return spec.type in _WHOLE_OUTPUT_UNLESS_FIELD
    return parse_path(spec.field)[:1] == ("cost",)


def check_files_key(check: str) -> str:
    """The ``definition_files`` key of a check's files (metric names cannot contain ':', so keys never clash)."""
    return f"check:{check}"


def imports_key(metric: str) -> str:
    """The ``definition_files`` key of the host code a metric runs beyond its own files: the module a
    ``package.module`` reference resolves to, and the host modules its code imports (label → fingerprint)."""
    return f"imports:{metric}"


def check_inputs_key(check: str) -> str:
    """The ``definition_files`` key of a check's declared ``inputs:`` (label → fingerprint)."""
    return f"inputs:{check}"


def _known(names: dict[str, Any]) -> str:
    return f" (known: {', '.join(sorted(names))})" if names else " (none are declared)"


@dataclass(frozen=True)
class LoadedConfig:
    config: Config
    path: Path
    fingerprint: str
    definition_files: dict[str, dict[str, str]] = field(default_factory=dict)
    raw: bytes = b""
    #: Each metric's bound file (:func:`metric_definition_hashes`) as it was when its bytes were hashed
    #: (``readers.userfiles.file_state``): a rewrite since moves its ctime even when the bytes were put back
    #: (``engine.jobs.pipeline.refuse_rewritten_definitions``). Empty for a config read back from a record.
    definition_states: dict[Path, FileState] = field(default_factory=dict)
    #: The YAML document the config was read from, for ``file:line`` (None: a config rebuilt from a run record).
    doc: YamlDocument | None = field(default=None, compare=False, repr=False)

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def where(self, loc: tuple[str | int, ...]) -> str:
        """``file:line`` of the config entry at ``loc`` (its deepest known prefix), else the config file."""
        return str(self.path) if self.doc is None else self.doc.where(loc)

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

    def bound_checks(self) -> dict[str, CheckSpec]:
        """The declared checks as a run runs them: each bound to the code state hashed when the config loaded
        (:attr:`definition_files`, what its gates' fingerprints cover), so the runner refuses to let code rewritten
        since then decide (``lanes.checkinputs.code_change``)."""
        defs = self.definition_files
        return {
            name: check.bound_to(
                CodeBinding(
                    files=dict(defs.get(check_files_key(name), {})),
                    code=dict(defs.get(check_code_key(name), {})),
                    inputs=dict(defs.get(check_inputs_key(name), {})),
                    leave_out=(self.config.ledger,),
                )
            )
            for name, check in self.config.checks.items()
        }

    def unbound_check_code(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """Per metric that runs checks per example, per check, what its command runs that no input binds
        (``lanes.checkinputs.unbound_inputs``; empty: all bound): what its gates decide on and a run records."""
        found: dict[str, dict[str, tuple[str, ...]]] = {}
        for name, spec in self.config.metrics.items():
            checks = spec.check_references().values()
            if checks:
                from evalglass.lanes.checkinputs import unbound_inputs

                found[name] = {check: unbound_inputs(self.config.checks[check], self.base_dir) for check in checks}
        return found


def config_as_recorded(config: Config) -> dict[str, Any]:
    """The config as a run record stores it: what was declared (unset defaults left out), under the names the
    config file uses. A field with an alias (``schema`` is ``schema_`` in Python) is written under its alias, so
    :func:`config_from_record` reads it back exactly as the YAML loader does."""
    return config.model_dump(mode="json", exclude_unset=True, by_alias=True)


#: The validation context of a config read back from a run record (:func:`config_from_record`).
RECORDED = "recorded"
RECORDED_CONTEXT = {RECORDED: True}


def config_from_record(data: Any) -> Config:
    """The config a run record stores (see :func:`config_as_recorded`). Field names are accepted beside aliases
    because records written before the aliases were recorded stored ``schema_``; a config *file* accepts aliases
    only."""
    return Config.model_validate(data, by_alias=True, by_name=True, context={**RECORDED_CONTEXT, BY_NAME: True})


def load_config(path: Path) -> LoadedConfig:
    doc: YamlDocument = load_yaml(path, what="config")
    config = validate_document(
        Config, doc, what="the config", context={"base_dir": path.parent}, numbers_as_written=True
    )
    from evalglass import redaction

    redaction.declare(config.secret_names)
    states: dict[Path, FileState] = {}
    return LoadedConfig(
        config=config,
        path=path,
        fingerprint=fingerprint_of_bytes(doc.raw),
        definition_files=definition_file_hashes(config, path.parent, doc.where, states),
        raw=doc.raw,
        definition_states=states,
        doc=doc,
    )


def definition_file_hashes(
    config: Config,
    base_dir: Path,
    where: Callable[[tuple[str | int, ...]], str] | None = None,
    states: dict[Path, FileState] | None = None,
) -> dict[str, dict[str, str]]:
    """SHA-256 of every file a metric's definition lives in, keyed by metric and path relative to the config; and
    per check, the files its command names and the fingerprints of its declared ``inputs:``.

    A file that cannot be read is left out here; building the metric then fails with its own clear error. A
    declared input that cannot be hashed is a ``SetupError`` at its entry (``where`` gives ``file:line``): an input
    is declared to be bound, and silently binding less than declared would be a gap no one sees. ``states``, when
    given, receives the state of each metric's file (see :func:`metric_definition_hashes`).
    """
    hashes = metric_definition_hashes(config, base_dir, where, states)
    if config.checks:
        # Only a config with checks reads their commands' files: a run without any does not load the reader.
        from evalglass.lanes.checkinputs import InputProblem, code_state
    for name, check in config.checks.items():
        try:
            state = code_state(check, base_dir, leave_out=(config.ledger,))
        except TooManyHostFiles as exc:
            raise SetupError(f"check '{name}': {exc}", where=where(("checks", name)) if where else None) from None
        except InputProblem as exc:
            at = ("checks", name, "inputs", exc.index)
            raise SetupError(f"check '{name}': {exc}", where=where(at) if where else None, fix=exc.fix) from None
        for key, part in ((check_files_key(name), state.files), (check_code_key(name), state.code)):
            if part:
                hashes[key] = part
        if check.inputs:
            hashes[check_inputs_key(name)] = state.inputs
    return hashes


def definition_label(path: Path, root: Path) -> str:
    """The label a metric's definition file is hashed under: its path from the config folder ``root`` (resolved),
    or whole when outside it."""
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()


def metric_definition_hashes(
    config: Config,
    base_dir: Path,
    where: Callable[[tuple[str | int, ...]], str] | None = None,
    states: dict[Path, FileState] | None = None,
) -> dict[str, dict[str, str]]:
    """The metrics' part of :func:`definition_file_hashes`: the files each metric's definition lives in, and the
    host modules a python metric imports (a check's code is hashed around each of its commands instead).

    ``states``, when given, receives each file's state (``file_state``) taken before its bytes are read: a write
    after that, even one put back before the run ends, moves its ctime, so a file read as data while the run goes
    on (a ``data_files:`` entry, an extension, a text ``exec``'d) is held to the bytes hashed here too."""
    hashes: dict[str, dict[str, str]] = {}
    root = base_dir.resolve()
    for name, spec in config.metrics.items():
        files: dict[str, str] = {}
        for path in spec.referenced_files(base_dir):
            if states is not None:
                states[path] = file_state(path)
            try:
                data = read_regular(path, what="metric definition file")
            except SetupError:
                continue
            files[definition_label(path, root)] = fingerprint_of_bytes(data)
        if files:
            hashes[name] = files
        try:
            host_files = spec.imported_files(base_dir)
            if not host_files:  # a builtin imports none: its run does not load the host files' reader
                continue
            from evalglass.lanes.checkinputs import host_file_hashes

            if states is not None:
                states.update((path, file_state(path)) for path in host_files)
            imported = host_file_hashes(host_files, root)
        except TooManyHostFiles as exc:
            located = where(("metrics", name)) if where else None
            raise SetupError(f"metric '{name}': {exc}", where=located) from None
        if imported:
            hashes[imports_key(name)] = imported
    return hashes
