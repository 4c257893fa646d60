"""Every metric type the config accepts, as one discriminated union keyed by ``type``.

The config loader validates a ``metrics:`` entry with :data:`METRIC_SPEC_ADAPTER` (or ``AnyMetricSpec`` inside
its own model); an unknown ``type`` is refused with the list of known ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, get_args

from pydantic import ConfigDict, Field, TypeAdapter

from evalglass.metrics.base import MetricSpec
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

METRIC_SPEC_ADAPTER: TypeAdapter[AnyMetricSpec] = TypeAdapter(
    AnyMetricSpec, config=ConfigDict(title="metric", defer_build=True)
)


def _type_name(spec_class: type[MetricSpec]) -> str:
    (name,) = get_args(spec_class.model_fields["type"].annotation)
    return str(name)


#: Config ``type`` name -> spec class, in the order the docs list them.
METRIC_TYPES: dict[str, type[MetricSpec]] = {
    _type_name(spec_class): spec_class for spec_class in get_args(get_args(AnyMetricSpec)[0])
}


def parse_metric_spec(entry: Mapping[str, Any]) -> MetricSpec:
    """Validate one ``metrics:`` entry; raises pydantic.ValidationError naming the offending key."""
    spec: MetricSpec = METRIC_SPEC_ADAPTER.validate_python(entry)
    return spec
