"""One example as the metrics see it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


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

    def __len__(self) -> int:
        return len(self.ids)

    def example(self, index: int) -> Example:
        sample = 0 if self.samples is None else self.samples[index]
        return Example(self.ids[index], self.lines[index], self.records[index], self.outputs[index], sample)

    def examples(self) -> list[Example]:
        return [self.example(index) for index in range(len(self.ids))]

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
