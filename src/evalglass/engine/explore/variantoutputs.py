"""The seam for metrics that compare variants (a pairwise judge): per example, what every variant produced.

A run with variants scores each variant in turn (``pipeline._score_variants``), each writing its lane's outputs to
``variants/NAME/outputs.jsonl`` in dataset order. Once every variant is scored, :func:`variant_outputs` reads those
files in step and gives, per example, its id and a mapping variant name → that variant's sample outputs: what a
metric judging two variants' outputs for the same example takes (docs/architecture.md, "Variants").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from evalglass.core.outputparse import DECLARED_JSON, UnparsedOutput, read_stored_output
from evalglass.core.runrecord import VARIANTS_DIR
from evalglass.engine.runs.artifacts import open_artifact, written_lines
from evalglass.engine.runs.runfolder import OUTPUTS_FILE
from evalglass.errors import SetupError

#: A sample whose lane call failed (no output): distinct from an output that is JSON null.
_FAILED: Any = object()


@dataclass(frozen=True)
class VariantOutputs:
    """One example: its id, its dataset line, and per variant the outputs of its samples (sample order; a sample
    whose lane call failed holds a marker that :meth:`compared` leaves out)."""

    id: str
    line: int
    outputs: dict[str, tuple[Any, ...]]

    def compared(self, sample: int) -> dict[str, Any]:
        """What a pairwise judge of variants (``compare_variants``) grades for sample ``sample``: variant name ->
        that variant's output, read by the judge's ``PairwiseSetup`` getters as it reads any graded output. A
        variant without an output for the sample (its lane call failed) is left out, so the judge finds no output
        to compare (``pairwise_output_missing``) rather than grading a null."""
        return {
            name: samples[sample]
            for name, samples in self.outputs.items()
            if sample < len(samples) and samples[sample] is not _FAILED
        }


def variant_outputs(
    folder: Path, names: Sequence[str], written: Mapping[str, str | None] | None = None
) -> Iterator[VariantOutputs]:
    """Every example of the run in ``folder`` with every variant's outputs, in dataset order. A variant whose file
    does not hold the same examples in the same order is refused (the files were edited). ``written``: per variant,
    the hash its outputs file was written with (the run, which reads the files back after host code ran): a file
    whose bytes differ raises once its last line is read (``artifacts.written_lines``)."""
    paths = [folder / VARIANTS_DIR / name / OUTPUTS_FILE for name in names]
    hashes = [None if written is None else written.get(name) for name in names]
    with ExitStack() as stack:
        streams = [
            enumerate(
                written_lines(stack.enter_context(open_artifact(path, "outputs file")), path, "outputs file", sha256),
                start=1,
            )
            for path, sha256 in zip(paths, hashes, strict=True)
        ]
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
                    name: tuple(
                        read_stored_output(sample, "output", DECLARED_JSON)
                        if isinstance(sample, dict) and "output" in sample
                        else _FAILED
                        for sample in row.get("samples") or ()
                    )
                    for name, row in zip(names, rows, strict=True)
                },
            )


def graded_lines(
    folder: Path, names: Sequence[str], *, samples: bool, written: Mapping[str, str | None] | None = None
) -> Iterator[bytes]:
    """The lines of ``compared/graded.jsonl``: per example, its id and every compared variant's output by name
    (``{"id": .., "output": {variant: output}}``; with samples, ``output`` is the list of each sample's mapping),
    what a pairwise judge of variants reads as a recorded output. Derived from the variants' outputs files alone,
    so ``verify`` derives the same bytes again; ``written`` as :func:`variant_outputs` takes it (the run)."""
    for example in variant_outputs(folder, names, written):
        count = max((len(found) for found in example.outputs.values()), default=0)
        graded: Any = (
            [_graded(example.compared(sample)) for sample in range(count)] if samples else _graded(example.compared(0))
        )
        yield orjson.dumps({"id": example.id, "output": graded}, option=orjson.OPT_APPEND_NEWLINE)


def _graded(compared: dict[str, Any]) -> Any:
    """What the judge of variants grades for one sample: the variants' outputs by name, or, where a variant's answer
    is not JSON (a live lane's, stored marked ``not_json``), text naming that variant and holding its answer, which
    is never JSON (``Config.for_compared`` reads ``graded.jsonl`` under ``parse: json``): the comparison is then the
    wrong answer the lane recorded (the judge's worst value with ``output_not_json``, no call), as the same judge
    scores an unparsed output of one run. Before, the answer's text was graded as if it were the variant's output."""
    for name, output in compared.items():
        if type(output) is UnparsedOutput:
            return f"variant {name}: {output.text}"
    return compared
