"""One example as the metrics see it."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, TypeVar, cast

from evalglass.core.fieldpath import values_getter

#: How many malformed dataset lines a summary names by line (the rest are counted, and each is in scores.jsonl).
MALFORMED_SHOWN = 5

T = TypeVar("T")

#: The :meth:`ExampleBatch.derived` key of the batch's outputs as orjson writes them (compact, one JSON array, in the
#: order of the rows): known when the dataset reader wrote them while checking the batch, which the run's kept
#: outputs then write again without a second dump.
OUTPUTS_JSON = "outputs as one orjson array"


@dataclass(frozen=True, slots=True)
class Example:
    """A dataset record and the output a lane produced for it.

    ``fields`` is the parsed JSON object from the dataset line; ``output`` is what the system under test produced
    (for recorded datasets, the value of the configured output field). ``line`` is 1-based, for diagnostics.
    """

    id: str
    line: int
    fields: Mapping[str, Any]
    output: Any
    sample: int = 0

    @property
    def record(self) -> Mapping[str, Any]:
        """The dataset record (``fields``), under the name host functions receive it by (``record``)."""
        return self.fields


@dataclass(frozen=True, slots=True)
class ExampleBatch:
    """Consecutive examples as parallel lists, so a large run creates no :class:`Example` per row.

    Row ``i`` is ``Example(ids[i], lines[i], records[i], outputs[i], samples[i] or 0)``; :meth:`example` builds it
    for the rare row a batch path hands to a per-example function. The lists are shared, not copied: nothing may
    change them after the batch is made.
    """

    ids: list[str]
    lines: list[int]
    records: list[Mapping[str, Any]]
    outputs: list[Any]
    #: Each row's sample index; None when every row is sample 0.
    samples: list[int] | None = None
    _values: dict[tuple[bool, str | None], list[Any]] = field(default_factory=dict, repr=False, compare=False)
    _derived: dict[Hashable, Any] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.ids)

    def output_values(self, path: str | None) -> list[Any]:
        """Each row's output at ``path`` (ABSENT where missing; the output itself for None). Computed once per
        path and shared by every metric that asks: read it, never change it."""
        return self._values_at(True, path)

    def record_values(self, path: str | None) -> list[Any]:
        """Each row's record at ``path``, like :meth:`output_values`."""
        return self._values_at(False, path)

    def _values_at(self, outputs: bool, path: str | None) -> list[Any]:
        found = self._values.get((outputs, path))
        if found is None:
            found = values_getter(path)(self.outputs if outputs else self.records)
            self._values[(outputs, path)] = found
        return found

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """What ``compute`` makes of the batch, made once per ``key`` and shared by every metric that asks (the
        tool calls read from a column, which several metrics compare): read it, never change it. The key names
        what is computed and from which column, so two metrics asking by the same key want the same thing."""
        try:
            return cast(T, self._derived[key])
        except KeyError:
            found = self._derived[key] = compute()
            return found

    def remember(self, key: Hashable, value: object) -> None:
        """Make ``value`` what :meth:`derived` gives for ``key``: for a value made while the batch was made (the
        reader's dump of the outputs, :data:`OUTPUTS_JSON`), which must be what the key's computation would give."""
        self._derived[key] = value

    def example(self, index: int) -> Example:
        sample = 0 if self.samples is None else self.samples[index]
        return Example(self.ids[index], self.lines[index], self.records[index], self.outputs[index], sample)

    def examples(self) -> list[Example]:
        return [self.example(index) for index in range(len(self.ids))]

    @classmethod
    def joined(cls, batches: Sequence[ExampleBatch]) -> ExampleBatch:
        """The rows of ``batches``, in order, as one batch."""
        samples = None
        if any(batch.samples is not None for batch in batches):
            samples = [sample for batch in batches for sample in (batch.samples or [0] * len(batch))]
        return cls(
            ids=list(chain.from_iterable(batch.ids for batch in batches)),
            lines=list(chain.from_iterable(batch.lines for batch in batches)),
            records=list(chain.from_iterable(batch.records for batch in batches)),
            outputs=list(chain.from_iterable(batch.outputs for batch in batches)),
            samples=samples,
        )

    @classmethod
    def of(cls, examples: Sequence[Example]) -> ExampleBatch:
        samples = [example.sample for example in examples]
        return cls(
            ids=[example.id for example in examples],
            lines=[example.line for example in examples],
            records=[example.fields for example in examples],
            outputs=[example.output for example in examples],
            samples=samples if any(samples) else None,
        )
