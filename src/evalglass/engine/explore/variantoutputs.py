"""The seam for metrics that compare variants (a pairwise judge): per example, what every variant produced.

A run with variants scores each variant in turn (``pipeline._score_variants``), each writing its lane's outputs to
``variants/NAME/outputs.jsonl`` in dataset order. Once every variant is scored, :func:`variant_outputs` reads those
files in step and gives, per example, its id and a mapping variant name → that variant's sample outputs: what a
metric judging two variants' outputs for the same example takes (docs/architecture.md, "Variants").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from evalglass.core.runrecord import VARIANTS_DIR
from evalglass.engine.runs.artifacts import open_artifact
from evalglass.engine.runs.runfolder import OUTPUTS_FILE
from evalglass.errors import SetupError


@dataclass(frozen=True)
class VariantOutputs:
    """One example: its id, its dataset line, and per variant the outputs of its samples (sample order; None for a
    sample whose lane call failed)."""

    id: str
    line: int
    outputs: dict[str, tuple[Any, ...]]

    def compared(self, sample: int) -> dict[str, Any]:
        """What a pairwise judge of variants (``compare_variants``) grades for sample ``sample``: variant name ->
        that variant's output, read by the judge's ``PairwiseSetup`` getters as it reads any graded output."""
        return {name: samples[sample] if sample < len(samples) else None for name, samples in self.outputs.items()}


def variant_outputs(folder: Path, names: Sequence[str]) -> Iterator[VariantOutputs]:
    """Every example of the run in ``folder`` with every variant's outputs, in dataset order. A variant whose file
    does not hold the same examples in the same order is refused (the files were edited)."""
    paths = [folder / VARIANTS_DIR / name / OUTPUTS_FILE for name in names]
    with ExitStack() as stack:
        streams = [enumerate(stack.enter_context(open_artifact(path, "outputs file")), start=1) for path in paths]
        while True:
            step = [next(stream, None) for stream in streams]
            if all(item is None for item in step):
                return
            rows: list[dict[str, Any]] = []
            for path, item in zip(paths, step, strict=True):
                if item is None:
                    raise SetupError("the variants' outputs files end at different examples", where=str(path))
                number, raw = item
                row = orjson.loads(raw)
                if not isinstance(row, dict) or "id" not in row:
                    raise SetupError("not an outputs row", where=f"{path}:{number}")
                rows.append(row)
            first = rows[0]
            if any(row["id"] != first["id"] for row in rows):
                raise SetupError(
                    f"the variants' outputs files disagree on the example after {first['id']!r}",
                    where=str(paths[0].parent.parent),
                )
            yield VariantOutputs(
                id=str(first["id"]),
                line=int(first.get("line", 0)),
                outputs={
                    name: tuple(sample.get("output") for sample in row.get("samples") or ())
                    for name, row in zip(names, rows, strict=True)
                },
            )
