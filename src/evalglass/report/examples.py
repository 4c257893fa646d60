"""Example rows (from ``engine.explore.failing``) as text: one block per row, so nothing is cut at 80 columns, and as
the collapsible Markdown section report.md carries per active gate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from evalglass.report.fmt import number
from evalglass.report.safetext import html_text, markdown_code, markdown_text, one_line, visible
from evalglass.report.wrap import fold_text


class Row(Protocol):
    """What a renderer needs of an ``engine.explore.failing.ExampleRow`` (report does not import engine)."""

    @property
    def id(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def metric(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def value(self) -> float | None: ...
    @property
    def diagnostic(self) -> str | None: ...
    @property
    def sample(self) -> int | None: ...
    @property
    def output(self) -> str | None: ...
    @property
    def baseline(self) -> str | None: ...
    @property
    def input(self) -> str | None: ...
    @property
    def reference(self) -> str | None: ...
    @property
    def outputs(self) -> Mapping[str, str | None] | None: ...


#: What a list of a comparative gate's examples is ordered by, for its title.
AGAINST_BASELINE_ORDER = (
    "regressed pairs first (passing in the baseline, failing now), then new failures, then the rest"
)


def _head(row: Row) -> str:
    sample = f" sample {row.sample}" if row.sample is not None else ""
    value = f" {number(row.value)}" if row.value is not None else ""
    against = f" · {row.baseline}" if row.baseline is not None else ""
    return f"{one_line(row.id)} (line {row.line}{sample}) · {one_line(row.metric)} · {row.state}{value}{against}"


def example_line(row: Row) -> str:
    """One row on one line (explain's list)."""
    return _head(row) + (f" — {one_line(row.diagnostic)}" if row.diagnostic else "")


#: Characters of each input, reference and output `view --examples` shows by default (``--width``).
VALUE_CHARS = 200


def excerpt(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with the cut said (0: whole)."""
    flat = " ".join(text.split())
    return flat if width <= 0 or len(flat) <= width else flat[: width - 1] + "…"


def render_examples(
    rows: Sequence[Row],
    rules: Mapping[str, str],
    source: str | None,
    limit: int,
    *,
    chars: int = VALUE_CHARS,
    columns: int = 80,
    missing_inputs: str | None = None,
) -> str:
    """One block per row: its head, why, input, reference and output (each at most ``chars`` characters, 0:
    whole), every line folded to ``columns`` without cutting a word."""
    if not rows:
        return "No example matches."
    lines: list[str] = []
    for row in rows:
        lines.append(_head(row))
        if row.diagnostic:
            lines.append(f"  why: {visible(row.diagnostic)}")
        for label, value in _labelled(row):
            lines.append(f"  {label}: {visible(excerpt(value, chars))}")
    lines.append("")
    shown = f"{len(rows)} example row(s)" + (f" (the first {limit}; --limit N for more)" if len(rows) == limit else "")
    lines.append(shown + ".")
    for metric, rule in rules.items():
        lines.append(f"{metric}: {rule}")
    if source is not None:
        lines.append(f"Outputs from {source}.")
    if missing_inputs is not None:
        lines.append(missing_inputs[0].upper() + missing_inputs[1:] + ".")
    if any(excerpt(value, chars) != " ".join(value.split()) for row in rows for value in _values(row)):
        lines.append(f"Values longer than {chars} characters are cut (…): --width 0 or --format json shows them whole.")
    return fold_text("\n".join(lines), columns)


#: What a variant of recorded outputs shows: its outputs are not in the run folder, and nothing else is shown.
NOT_KEPT = "(not kept in the run folder)"


def _labelled(row: Row) -> list[tuple[str, str]]:
    """The row's input, reference and output; in a run with variants, each variant's output in place of one."""
    outputs = (
        [("output", row.output)]
        if row.outputs is None
        else [(f"output of {one_line(name)}", NOT_KEPT if text is None else text) for name, text in row.outputs.items()]
    )
    return [
        (label, value)
        for label, value in (("input", row.input), ("reference", row.reference), *outputs)
        if value is not None
    ]


def _values(row: Row) -> list[str]:
    return [value for _label, value in _labelled(row)]


def markdown_examples(per_gate: Mapping[str, Sequence[Row]], limit: int) -> list[str]:
    """A collapsible section per gate with the first ``limit`` rows that did not pass."""
    lines: list[str] = []
    for gate, rows in per_gate.items():
        if not rows:
            continue
        more = f"first {limit}" if len(rows) == limit else f"{len(rows)}"
        order = f", {AGAINST_BASELINE_ORDER}" if any(row.baseline is not None for row in rows) else ""
        # Inside an HTML block Markdown is not read: the title needs only to be one line of HTML text.
        title = html_text(one_line(f"Gate {gate}: {more} examples that did not pass{order}"))
        lines += ["", f"<details><summary>{title}</summary>", ""]
        lines += ["| Example | Line | State | Value | Why |", "|---|---|---|---|---|"]
        for row in rows:
            # Ids and diagnostics come from the dataset, which a pull request edits: shown as text, never as markup.
            value = number(row.value) if row.value is not None else "—"
            state = f"{row.state} · {row.baseline}" if row.baseline is not None else str(row.state)
            lines.append(
                f"| `{markdown_code(row.id)}` | {row.line} | {state} | {value} | "
                f"{markdown_text(row.diagnostic or '')} |"
            )
        lines += ["", "</details>"]
    return lines
