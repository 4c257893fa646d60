"""Every metric type the config accepts, as one discriminated union keyed by ``type``.

The config loader validates a ``metrics:`` entry by the type it declares (:data:`MetricEntry`, inside its own
model); an unknown ``type`` is refused with the list of known ones. Each type's module is imported the first time
that type is asked for (:func:`spec_class`): a run whose config declares three builtins does not load the judges',
checks' and host metrics' modules. :data:`AnyMetricSpec`, :data:`METRIC_TYPES` and :data:`METRIC_SPEC_ADAPTER`
name every type, so asking for them imports every type's module (PEP 562, below).
"""

from __future__ import annotations

import functools
import importlib
import operator
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from evalglass.metrics.base import MetricSpec

if TYPE_CHECKING:
    from evalglass.metrics.check import CheckMetricSpec
    from evalglass.metrics.equality import EnumSpec, ExactMatchSpec
    from evalglass.metrics.host import PythonMetricSpec
    from evalglass.metrics.jury import JurySpec
    from evalglass.metrics.llm_judge import LlmJudgeSpec
    from evalglass.metrics.numeric import NumericBoundsSpec
    from evalglass.metrics.recorded import RecordedScoreSpec
    from evalglass.metrics.schemas import JsonSchemaSpec
    from evalglass.metrics.sets import SetOverlapSpec
    from evalglass.metrics.structured import FieldPresentSpec, JsonValidSpec
    from evalglass.metrics.text import ContainsSpec, RegexSpec, WordCountSpec
    from evalglass.metrics.toolcalls import ToolCallsSpec
    from evalglass.metrics.trajectories import FinalStateSpec, LoopSpec, StepsSpec

    AnyMetricSpec = Annotated[
        ExactMatchSpec
        | ContainsSpec
        | RegexSpec
        | JsonValidSpec
        | JsonSchemaSpec
        | FieldPresentSpec
        | NumericBoundsSpec
        | WordCountSpec
        | SetOverlapSpec
        | EnumSpec
        | PythonMetricSpec
        | CheckMetricSpec
        | LlmJudgeSpec
        | JurySpec
        | RecordedScoreSpec
        | ToolCallsSpec
        | StepsSpec
        | LoopSpec
        | FinalStateSpec,
        Field(discriminator="type"),
    ]
    METRIC_SPEC_ADAPTER: TypeAdapter[AnyMetricSpec]
    #: Config ``type`` name -> spec class, in the order the docs list them.
    METRIC_TYPES: dict[str, type[MetricSpec]]

#: Config ``type`` name -> (module under ``evalglass.metrics``, spec class), in the order the docs list them: the
#: order of :data:`AnyMetricSpec`, which is the order an "unknown type" error lists the known ones in.
TYPE_HOMES: dict[str, tuple[str, str]] = {
    "exact_match": ("equality", "ExactMatchSpec"),
    "contains": ("text", "ContainsSpec"),
    "regex": ("text", "RegexSpec"),
    "json_valid": ("structured", "JsonValidSpec"),
    "json_schema": ("schemas", "JsonSchemaSpec"),
    "field_present": ("structured", "FieldPresentSpec"),
    "numeric_bounds": ("numeric", "NumericBoundsSpec"),
    "word_count": ("text", "WordCountSpec"),
    "set_overlap": ("sets", "SetOverlapSpec"),
    "enum": ("equality", "EnumSpec"),
    "python": ("host", "PythonMetricSpec"),
    "check": ("check", "CheckMetricSpec"),
    "llm_judge": ("llm_judge", "LlmJudgeSpec"),
    "jury": ("jury", "JurySpec"),
    "recorded_score": ("recorded", "RecordedScoreSpec"),
    "tool_calls": ("toolcalls", "ToolCallsSpec"),
    "steps": ("trajectories", "StepsSpec"),
    "loop": ("trajectories", "LoopSpec"),
    "final_state": ("trajectories", "FinalStateSpec"),
}


def spec_class(name: str) -> type[MetricSpec]:
    """The spec class of metric type ``name`` (a key of :data:`TYPE_HOMES`), its module imported on first use."""
    module, attribute = TYPE_HOMES[name]
    found: type[MetricSpec] = getattr(importlib.import_module(f"evalglass.metrics.{module}"), attribute)
    return found


_every: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    """:data:`AnyMetricSpec`, :data:`METRIC_TYPES` and :data:`METRIC_SPEC_ADAPTER`, made (every type's module
    imported) the first time one is asked for."""
    if name not in ("AnyMetricSpec", "METRIC_TYPES", "METRIC_SPEC_ADAPTER"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not _every:
        classes = tuple(spec_class(tag) for tag in TYPE_HOMES)
        # `ExactMatchSpec | ContainsSpec | ...`, as the union was written when it was one literal expression.
        any_spec: Any = Annotated[functools.reduce(operator.or_, classes), Field(discriminator="type")]
        _every["METRIC_TYPES"] = dict(zip(TYPE_HOMES, classes, strict=True))
        _every["METRIC_SPEC_ADAPTER"] = TypeAdapter(any_spec, config=ConfigDict(title="metric", defer_build=True))
        _every["AnyMetricSpec"] = any_spec
    return _every[name]


#: Validation context key: accept field names beside aliases (``schema_`` beside ``schema``) in a
#: :data:`MetricEntry`, as ``model_validate(by_name=True)`` does for the model itself. A plain validator does not see
#: that flag (pydantic's ``ValidationInfo`` does not carry it), so a caller that sets it says so here too.
BY_NAME = "metrics_by_name"


class _ByDeclaredType:
    """``Annotated[MetricSpec, _ByDeclaredType()]``: one ``metrics:`` entry, validated by the type it declares.

    A model holding :data:`AnyMetricSpec` imports every type's module and builds the validator of all 19 types the
    first time it validates (≈ 70 M instructions for the validator alone); a recorded run with three metrics uses
    three. Here each entry is validated by a one-choice tagged union of its declared type, built the first time
    that type is met: the same pydantic machinery for that tag, so the errors (types, messages, ``ctx``, locations
    with the tag in them) are the full union's. What the one-choice union would judge otherwise (not a mapping or a
    model, no ``type``, a ``type`` that is no known name) goes to the full union, so "unknown type" and "needs a
    type" list every known type as before. The JSON Schema is the full union's (``evalglass schema config`` is
    unchanged), and each spec serialises as its own model, as in the union.

    Limit: the entry is validated in Python mode (``model_validate``, how configs and run records are read); under
    ``model_validate_json`` the parsed entry would be validated in Python mode too.
    """

    @staticmethod
    def validated_as() -> Any:
        """The union this entry stands for, which ``engine.spec.validation`` follows to name a metric's keys."""
        return __getattr__("AnyMetricSpec")

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.with_info_plain_validator_function(_validate_entry)

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return handler(_union_adapter().core_schema)


_adapters: dict[str | None, TypeAdapter[Any]] = {}
_adapters_lock = threading.Lock()


def _union_adapter() -> TypeAdapter[Any]:
    return _adapter_for(None)


def _adapter_for(tag: str | None) -> TypeAdapter[Any]:
    """The one-choice tagged union of type ``tag`` (None: of every type), built once, the first time it is asked."""
    adapter = _adapters.get(tag)
    if adapter is None:
        with _adapters_lock:
            adapter = _adapters.get(tag)
            if adapter is None:
                members: Any = (
                    __getattr__("AnyMetricSpec")
                    if tag is None
                    else Annotated[spec_class(tag), Field(discriminator="type")]
                )
                adapter = _adapters[tag] = TypeAdapter(members)
    return adapter


def _validate_entry(value: Any, info: core_schema.ValidationInfo) -> Any:
    if isinstance(value, dict):
        tag = value.get("type")
    elif isinstance(value, BaseModel):
        tag = getattr(value, "type", None)
    else:
        tag = None
    context = info.context
    adapter = _adapter_for(tag if isinstance(tag, str) and tag in TYPE_HOMES else None)
    return adapter.validate_python(
        value, context=context, by_alias=True, by_name=bool(context and context.get(BY_NAME))
    )


if TYPE_CHECKING:
    MetricEntry = AnyMetricSpec
else:
    #: A ``metrics:`` entry inside a model (``Config.metrics``): :data:`AnyMetricSpec` to the reader and to the JSON
    #: Schema, validated by its declared type. Its runtime annotation names only the base class: building the model
    #: that holds it imports no metric type's module.
    MetricEntry = Annotated[MetricSpec, _ByDeclaredType()]


def parse_metric_spec(entry: Mapping[str, Any]) -> MetricSpec:
    """Validate one ``metrics:`` entry; raises pydantic.ValidationError naming the offending key."""
    spec: MetricSpec = __getattr__("METRIC_SPEC_ADAPTER").validate_python(entry)
    return spec
