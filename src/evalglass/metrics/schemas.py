"""``json_schema``: does the output conform to a JSON Schema.

The validator class follows the schema's ``$schema`` (draft 4 to 2020-12; 2020-12 when absent), and the schema
is checked against its metaschema before any example is scored: inline schemas when the config is loaded,
schema files when the metric is built.

``$ref`` resolves only inside the schema document and inside the files the config maps explicitly under
``schema_refs`` (whose hashes are part of the gate's fingerprint, like the schema file's). Nothing is fetched over
the network or read through ``file://``: the validator's registry refuses every other retrieval, and every
reference is resolved once when the metric is built, so an unresolvable one is a setup error, not a per-example
error.

``jsonschema`` is imported only when a json_schema metric is used: it is the slowest import among the builtins.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, JsonValue, model_validator

from evalglass.core.example import Example
from evalglass.core.jsonvalue import is_json_value
from evalglass.core.score import Score
from evalglass.metrics.base import ABSENT, BuildContext, MetricFn, MetricResult, measured_target
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.invalid import invalid_answer, wrong_answer
from evalglass.metrics.structured import parse_or_fail
from evalglass.metrics.support import NoReferenceSpec, one_line, scored_with_note, wrong_type

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

SchemaDocument = Mapping[str, Any] | bool


class SchemaProblemError(ValueError):
    """The schema cannot be used: unknown ``$schema`` dialect or a schema its metaschema rejects."""


def validator_class(schema: SchemaDocument) -> type[Validator]:
    """The jsonschema validator class for the schema's dialect, after checking the schema itself is valid."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    if not isinstance(schema, Mapping | bool):
        raise SchemaProblemError(f"a JSON Schema is an object or a boolean, not {type(schema).__name__}")
    found: type[Validator] | None = validator_for(schema, default=None)
    if found is None:
        if isinstance(schema, Mapping) and "$schema" in schema:
            raise SchemaProblemError(
                f"unknown $schema {schema['$schema']!r}; use a JSON Schema draft URI such as "
                "'https://json-schema.org/draft/2020-12/schema'"
            )
        found = Draft202012Validator
    try:
        found.check_schema(schema)
    except SchemaError as exc:
        raise SchemaProblemError(
            f"the schema is not valid {found.__name__.removesuffix('Validator')}: "
            f"{one_line(exc.message)} (at {exc.json_path})"
        ) from None
    return found


class JsonSchemaSpec(NoReferenceSpec):
    """Conformance to a JSON Schema given inline (``schema``) or as a JSON/YAML file (``schema_file``).

    A string output is parsed as JSON first unless ``parse_strings: false`` (then the string itself is the
    instance). Formats (``format: email``...) are asserted only with ``check_formats: true``, as the JSON
    Schema specification treats them as annotations by default.
    """

    deterministic: ClassVar[bool] = True

    summary: ClassVar[str] = "1.0 when the (parsed) output conforms to the JSON Schema, else 0.0 with the reason."
    binary: ClassVar[bool] = True

    type: Literal["json_schema"] = "json_schema"
    schema_: dict[str, JsonValue] | bool | None = Field(
        default=None, alias="schema", description="The JSON Schema, inline."
    )
    schema_file: str | None = Field(
        default=None, description="Path to a .json/.yaml schema file, relative to the config directory."
    )
    schema_refs: dict[str, str] = Field(
        default_factory=dict,
        description="URI → file (relative to the config directory) for each external `$ref` target; nothing else "
        "outside the schema document is ever resolved.",
    )
    parse_strings: bool = Field(default=True, description="Parse a string output as JSON text first.")
    check_formats: bool = Field(default=False, description="Assert 'format' keywords (email, date-time...).")

    @model_validator(mode="after")
    def _one_schema(self) -> JsonSchemaSpec:
        if (self.schema_ is None) == (self.schema_file is None):
            raise ValueError("json_schema needs exactly one of 'schema' (inline) or 'schema_file' (a path)")
        if self.schema_ is not None:
            try:
                validator_class(self.schema_)
            except SchemaProblemError as exc:
                raise ValueError(str(exc)) from None
        return self

    def referenced_files(self, base_dir: Path) -> tuple[Path, ...]:
        """Files whose contents define this metric; an approval should also bind their hashes."""
        named = [] if self.schema_file is None else [self.schema_file]
        return tuple((base_dir / path).resolve() for path in [*named, *self.schema_refs.values()])

    def build_one(self, context: BuildContext) -> MetricFn:
        base_dir = context.base_dir
        schema: SchemaDocument = (
            self._read_schema_file(base_dir, str(self.schema_file)) if self.schema_ is None else self.schema_
        )
        try:
            cls = validator_class(schema)
            referenced = {uri: self._read_schema_file(base_dir, path) for uri, path in self.schema_refs.items()}
            registry = closed_registry(schema, cls, referenced)
        except SchemaProblemError as exc:
            raise MetricLoadError(f"json_schema: {self.schema_file or 'inline schema'}: {exc}") from None
        validator = cls(schema, registry=registry, format_checker=cls.FORMAT_CHECKER if self.check_formats else None)
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        wrong = wrong_answer(self, context)
        parse_strings = self.parse_strings

        def json_schema(example: Example) -> MetricResult:
            instance = target(example)
            if instance is ABSENT:
                return invalid(example)
            if parse_strings and isinstance(instance, str):
                instance = parse_or_fail(instance)
                if isinstance(instance, Score):
                    return instance
            elif not is_json_value(instance):
                return wrong(wrong_type("json_schema", "a JSON value", instance))
            return _conformance(validator, instance)

        return json_schema

    def _read_schema_file(self, base_dir: Path, relative: str) -> SchemaDocument:
        """The schema file through the project's one YAML or JSON reader: a repeated key, an alias bomb, a FIFO
        in its place are refused as they are in the config."""
        from evalglass.errors import SetupError
        from evalglass.readers import jsonsource
        from evalglass.readers.userfiles import read_regular
        from evalglass.readers.yamlsource import load_yaml

        path = (base_dir / relative).resolve()
        if not path.exists():
            raise MetricLoadError(
                f"json_schema: schema file {path} does not exist; 'schema_file' is relative to {base_dir}"
            )
        try:
            if path.suffix in {".yaml", ".yml"}:
                loaded: Any = load_yaml(path, what="schema file").data
            else:
                loaded = jsonsource.loads(read_regular(path, what="schema file"))
        except SetupError as exc:
            raise MetricLoadError(f"json_schema: {exc.line()}") from None
        except ValueError as exc:
            raise MetricLoadError(f"json_schema: schema file {path} is not valid JSON: {one_line(str(exc))}") from None
        if not isinstance(loaded, Mapping | bool):
            raise MetricLoadError(
                f"json_schema: schema file {path} holds a {type(loaded).__name__}; "
                "a JSON Schema is an object or a boolean"
            )
        return loaded


def closed_registry(schema: SchemaDocument, cls: type[Validator], referenced: Mapping[str, SchemaDocument]) -> Any:
    """A ``referencing`` registry holding the schema and the config's named files, which retrieves nothing else.

    Every ``$ref`` (and ``$dynamicRef``/``$recursiveRef``) in the schema and the named files is resolved here once,
    so a reference to anything else is refused before any example is scored.
    """
    from referencing import Registry, Resource
    from referencing.exceptions import NoSuchResource
    from referencing.jsonschema import specification_with

    dialect = specification_with(cls.META_SCHEMA.get("$id") or cls.META_SCHEMA.get("id", ""))

    def refuse(uri: str) -> Resource[Any]:
        raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # attrs class: mypy sees no __init__

    root = Resource.from_contents(schema, default_specification=dialect)
    resources = [
        (uri, Resource.from_contents(contents, default_specification=dialect)) for uri, contents in referenced.items()
    ]
    registry: Registry[Any] = Registry(retrieve=refuse)  # type: ignore[call-arg]
    registry = registry.with_resources(resources).with_resource("", root).crawl()
    for resource in [root, *(resource for _, resource in resources)]:
        _resolve_every_ref(registry.resolver_with_root(resource), resource)
    return registry


def _resolve_every_ref(resolver: Any, resource: Any) -> None:
    from referencing.exceptions import Unresolvable

    contents = resource.contents
    if isinstance(contents, Mapping):
        for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
            ref = contents.get(keyword)
            if not isinstance(ref, str):
                continue
            try:
                resolver.lookup(ref)
            except Unresolvable:
                raise SchemaProblemError(
                    f"{keyword} {ref!r} does not resolve inside the schema: references are resolved only inside "
                    "the schema document and the files named under schema_refs; nothing is fetched or read from "
                    "elsewhere (map the URI to a file under schema_refs, or inline the definition)"
                ) from None
    for sub in resource.subresources():
        _resolve_every_ref(resolver.in_subresource(sub), sub)


def _conformance(validator: Validator, instance: Any) -> MetricResult:
    """1.0, or 0.0 naming the most relevant violation; an unusable schema (bad $ref...) is an error."""
    try:
        if validator.is_valid(instance):
            return 1.0
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(instance))
    except Exception as exc:
        return Score.error(
            "schema_unusable",
            f"validating against the schema failed: {type(exc).__name__}: {one_line(str(exc))}",
        )
    if error is None:
        return scored_with_note(0.0, "schema_mismatch", "the output does not conform to the schema")
    return scored_with_note(0.0, "schema_mismatch", f"{error.json_path}: {one_line(error.message)}")
