"""The figures table that opens BENCHMARKS.md: each case beside its floor, its target and whether it was met.

Pure: it formats what ``benchmarks/suite.py`` measured and replaces the text between the two markers of a document,
so the table can be written again without touching anything else (``tests/benchmarks/test_figures.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

BEGIN = "<!-- figures:begin (written by `python benchmarks/run.py --all`; edits here are overwritten) -->"
END = "<!-- figures:end -->"

COLUMNS = ("case", "figure: wall / CPU", "peak RSS", "floor", "floor: wall / CPU", "ratio: wall (CPU)", "target",
           "met?")  # fmt: skip


class On(Enum):
    """What a target bounds."""

    WALL_RATIO = "wall ratio"  # the case's wall time over its floor's
    CPU_RATIO = "CPU ratio"  # the case's CPU time over its floor's
    WALL_SECONDS = "wall seconds"  # the case's own wall time
    PEAK_RSS_MB = "peak RSS"  # the case's peak resident memory
    REPORTED = "reported"  # no bound: the figure is reported beside its floor


@dataclass(frozen=True)
class Target:
    on: On
    bound: float = 0.0
    #: How the target is written in the table, e.g. "≤ 2× floor".
    text: str = ""

    def holds(self, value: float) -> bool:
        """Ratios and memory are "at most" bounds; a time is an "under" bound (issue 6: "under 0.5 s")."""
        return value < self.bound if self.on is On.WALL_SECONDS else value <= self.bound

    def describe(self) -> str:
        if self.text:
            return self.text
        return {
            On.WALL_RATIO: f"≤ {self.bound:g}× floor",
            On.CPU_RATIO: f"≤ {self.bound:g}× floor (CPU)",
            On.WALL_SECONDS: f"< {self.bound:g} s",
            On.PEAK_RSS_MB: f"≤ {self.bound:g} MB",
            On.REPORTED: "reported",
        }[self.on]


@dataclass(frozen=True)
class Timing:
    """Seconds of wall clock and of CPU (user + system); peak RSS when it was measured."""

    wall: float
    cpu: float | None = None
    rss_mb: float | None = None


@dataclass(frozen=True)
class Row:
    case: str
    target: Target
    figure: Timing | None = None
    floor_name: str = ""
    floor: Timing | None = None
    #: Why there is no figure (the case failed or could not run here).
    missing: str = ""

    @property
    def wall_ratio(self) -> float | None:
        if self.figure is None or self.floor is None or self.floor.wall <= 0:
            return None
        return self.figure.wall / self.floor.wall

    @property
    def cpu_ratio(self) -> float | None:
        if self.figure is None or self.floor is None or not self.figure.cpu or not self.floor.cpu:
            return None
        return self.figure.cpu / self.floor.cpu

    def met(self) -> bool | None:
        """True or False against the target; None when the target only asks for the figure. A row without its
        figure never meets its target."""
        if self.target.on is On.REPORTED:
            return None if self.figure is not None else False
        if self.figure is None:
            return False
        value = {
            On.WALL_RATIO: self.wall_ratio,
            On.CPU_RATIO: self.cpu_ratio,
            On.WALL_SECONDS: self.figure.wall,
            On.PEAK_RSS_MB: self.figure.rss_mb,
        }[self.target.on]
        return value is not None and self.target.holds(value)


@dataclass(frozen=True)
class Context:
    """Where and when the figures were taken."""

    command: str
    commit: str
    machine: str
    date: str
    load_start: float
    load_end: float
    minutes: float
    notes: tuple[str, ...] = field(default_factory=tuple)


def seconds(value: float) -> str:
    """Seconds in the unit that reads best; a marginal figure can come out negative in noise, and says so."""
    sign, size = ("-" if value < 0 else ""), abs(value)
    if size >= 10:
        return f"{sign}{size:.1f} s"
    if size >= 1:
        return f"{sign}{size:.2f} s"
    if size >= 0.001:
        return f"{sign}{size * 1e3:.3g} ms"
    return f"{sign}{size * 1e6:.3g} µs"


def wall_and_cpu(timing: Timing | None) -> str:
    if timing is None:
        return ""
    return seconds(timing.wall) + ("" if timing.cpu is None else f" / {seconds(timing.cpu)}")


def met_cell(row: Row) -> str:
    met = row.met()
    return "—" if met is None else ("yes" if met else "**no**")


def ratio_cell(row: Row) -> str:
    wall, cpu = row.wall_ratio, row.cpu_ratio
    if wall is None:
        return ""
    return f"{wall:.2f}×" + ("" if cpu is None else f" ({cpu:.2f}×)")


def cells(row: Row) -> list[str]:
    if row.figure is None:
        return [row.case, f"not measured: {row.missing}", "", row.floor_name, "", "", row.target.describe(),
                met_cell(row)]  # fmt: skip
    rss = "" if row.figure.rss_mb is None else f"{row.figure.rss_mb:.0f} MB"
    return [row.case, wall_and_cpu(row.figure), rss, row.floor_name, wall_and_cpu(row.floor), ratio_cell(row),
            row.target.describe(), met_cell(row)]  # fmt: skip


def table_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def render(rows: list[Row], context: Context) -> str:
    """The generated section: the conditions of the measurement, then one table row per case."""
    missed = sum(row.met() is False for row in rows)
    lines = [
        f"`{context.command}` at commit `{context.commit}`, {context.date}, {context.minutes:.0f} min; "
        f"{context.machine}; load average {context.load_start:.2f} at the start, {context.load_end:.2f} at the end. "
        f"{plural(len(rows), 'figure')}, {plural(missed, 'target')} missed.",
        *(f"{note}" for note in context.notes),
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        *("| " + " | ".join(table_cell(cell) for cell in cells(row)) + " |" for row in rows),
    ]
    return "\n".join(lines)


def replace_section(document: str, section: str) -> str:
    """``document`` with the text between :data:`BEGIN` and :data:`END` replaced by ``section``."""
    if document.count(BEGIN) != 1 or document.count(END) != 1:
        raise ValueError(
            f"the document must hold the markers {BEGIN!r} and {END!r} once each (found {document.count(BEGIN)} and "
            f"{document.count(END)}): put them where the table goes"
        )
    head, rest = document.split(BEGIN)
    if END not in rest:
        raise ValueError(f"{END!r} comes before {BEGIN!r}: put the end marker after the begin marker")
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{section}\n{END}{tail}"
