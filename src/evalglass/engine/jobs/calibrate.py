"""Judge calibration records: ``evalglass calibrate`` writes them, runs read them, the ledger judges them.

A record is evidence the tool writes (``<config folder>/calibrations/<judge>.json``, atomic, 0600), like a run's
artifacts; it approves nothing. A judge is any metric that declares itself ``calibrated`` (metrics/base.py): it
names what it is calibrated on (``calibration_subject``) and what a calibration binds (``calibration_fingerprint``),
and the scorer it builds for a live run is what calibration runs over the labelled examples; no metric type is named
here. The ledger's ``judges:`` entry says what agreement the host requires, and
``core.authority`` compares the two. A run snapshots the records it read into ``runrecord.json`` so that
``evalglass verify`` re-derives the gates from the same evidence even after a later recalibration.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from evalglass.core.authority import (
    CALIBRATIONS_DIR,
    AgreementInterval,
    CalibrationRecord,
    JudgeStanding,
    calibration_line,
)
from evalglass.core.calibration import Calibration, CalibrationError
from evalglass.core.endpoint import shown_endpoint
from evalglass.engine.produce.cache import CacheMode
from evalglass.engine.runs.artifacts import write_model
from evalglass.engine.runs.runfolder import make_dirs, writing
from evalglass.engine.spec.config import LoadedConfig, load_config
from evalglass.errors import SetupError, first_problem
from evalglass.metrics.base import MetricSpec
from evalglass.readers import jsonsource
from evalglass.readers.userfiles import read_regular
from evalglass.version import __version__

if TYPE_CHECKING:
    from evalglass.lanes.judge import LabelledExample


def calibration_path(base_dir: Path, name: str) -> Path:
    return base_dir / CALIBRATIONS_DIR / f"{name}.json"


def load_calibration(base_dir: Path, name: str) -> CalibrationRecord | None:
    """The record for judge ``name``, or None when there is none. A record that breaks its rules is refused."""
    path = calibration_path(base_dir, name)
    if not path.exists():
        return None
    try:
        data = jsonsource.loads(read_regular(path, what="calibration record"))
    except ValueError as exc:  # not JSON, or JSON a fast reader would read differently (jsonsource)
        raise SetupError(
            f"calibration record is not valid JSON ({exc})",
            where=str(path),
            fix=f"delete it and run `evalglass calibrate {name} --labels FILE.jsonl` again",
        ) from None
    try:
        record = CalibrationRecord.model_validate(data)
    except ValidationError as exc:
        raise SetupError(
            f"calibration record fails its own rules: {first_problem(exc)}",
            where=str(path),
            fix=f"the file was edited or corrupted; run `evalglass calibrate {name} --labels FILE.jsonl` again",
        ) from None
    if record.judge != name:
        raise SetupError(f"calibration record is for judge '{record.judge}', not '{name}'", where=str(path))
    return record


def current_fingerprint(spec: MetricSpec, base_dir: Path, name: str, where: str | None = None) -> str:
    """What a calibration of judge ``name`` is bound to as it is defined now (its rubric read now). A rubric that
    cannot be read, or is not UTF-8 text, is one line at ``where`` (the config's ``file:line`` of the entry naming
    it, as any other config error is), naming the file it looked for."""
    rubric_name = spec.calibration_subject().rubric
    path = (base_dir / rubric_name).resolve()
    fix = "fix `rubric:` (a file relative to the config's folder)"
    try:
        rubric = read_regular(path, what="rubric", missing_fix=fix, other_fix=fix)
    except SetupError as exc:
        raise SetupError(f"metric '{name}': {exc.what}: {path}", where=where or exc.where, fix=exc.fix) from None
    try:
        rubric.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SetupError(
            f"metric '{name}': rubric {path} is not UTF-8 text (byte {exc.start + 1} is 0x{rubric[exc.start]:02x})",
            where=where or str(path),
            fix="save the rubric as UTF-8",
        ) from None
    return spec.calibration_fingerprint(hashlib.sha256(rubric).hexdigest())


def judge_standings(loaded: LoadedConfig) -> dict[str, JudgeStanding]:
    """Every judge's (``calibrated`` metric's) current fingerprint, where it is served, and the calibration record
    found for it."""
    return {
        name: JudgeStanding(
            metric=name,
            fingerprint=current_fingerprint(spec, loaded.base_dir, name, loaded.where(("metrics", name, "rubric"))),
            calibration=load_calibration(loaded.base_dir, name),
            endpoint=spec.judge_endpoint(),
        )
        for name, spec in loaded.config.judges.items()
    }


@dataclass(frozen=True)
class CalibrationOutcome:
    record: CalibrationRecord
    path: Path
    results: int
    #: Problems that left the record intact (the call cache could not be written, a labels line read with U+FFFD
    #: for a lone surrogate escape): printed on stderr.
    warnings: tuple[str, ...] = ()


def calibrate_command(
    config_path: Path,
    name: str,
    labels: Path,
    *,
    cache_mode: CacheMode | str = CacheMode.USE,
    now: datetime | None = None,
) -> CalibrationOutcome:
    """Run judge ``name`` over a human-labelled file and write its calibration record."""
    cache_mode = CacheMode(cache_mode)
    loaded = load_config(config_path)
    spec = loaded.config.judges.get(name)
    if spec is None:
        judges = sorted(loaded.config.judges)
        known = f" (llm_judge metrics: {', '.join(judges)})" if judges else " (it declares no llm_judge metric)"
        raise SetupError(f"no llm_judge metric named '{name}' in the config{known}", where=str(loaded.path))
    subject = spec.calibration_subject()
    from evalglass.lanes.judge import LabelsFileError, read_labels

    mended = jsonsource.MendedLines(str(labels))
    try:
        labelled = read_labels(labels, subject.scale, mended)
    except LabelsFileError as exc:
        raise SetupError(str(exc), fix="see docs/calibrating-a-judge.md for the labels file format") from None
    if not labelled:
        raise SetupError("the labels file has no labelled example", where=str(labels))
    labels_sha = "sha256:" + hashlib.sha256(read_regular(labels, what="labels file")).hexdigest()
    try:
        calibration, results, warnings = asyncio.run(_calibrate(loaded, name, labelled, cache_mode))
    except CalibrationError as exc:
        raise SetupError(
            f"judge '{name}' cannot be calibrated: {exc}",
            fix="look at the judge's answers (is the endpoint up, does the prompt ask for the scale?)",
        ) from None
    interval = calibration.agreement_interval
    assert calibration.judge_fingerprint is not None
    moment = now or datetime.now(UTC)
    record = CalibrationRecord(
        judge=name,
        judge_fingerprint=calibration.judge_fingerprint,
        judge_endpoint=spec.judge_endpoint(),
        created_at=moment.isoformat().replace("+00:00", "Z"),
        tool_version=__version__,
        model=subject.model,
        rubric=subject.rubric,
        labels_file=str(labels),
        labels_sha256=labels_sha,
        n=calibration.n,
        excluded=calibration.excluded,
        categories=tuple(calibration.categories),
        confusion=calibration.confusion,
        agreed=calibration.agreed,
        agreement=calibration.agreement,
        agreement_interval=AgreementInterval(
            low=interval.low, high=interval.high, confidence=interval.confidence, method=interval.method
        ),
        kappa=calibration.kappa,
        weighted_kappa_linear=calibration.weighted_kappa_linear,
        weighted_kappa_quadratic=calibration.weighted_kappa_quadratic,
        ordinal=calibration.ordinal,
    )
    path = calibration_path(loaded.base_dir, name)
    with writing(path.parent):
        make_dirs(path.parent)
        write_model(path, record)
    return CalibrationOutcome(record=record, path=path, results=results, warnings=(*mended.notes, *warnings))


async def _calibrate(
    loaded: LoadedConfig, name: str, labelled: Sequence[LabelledExample], cache_mode: CacheMode
) -> tuple[Calibration, int, tuple[str, ...]]:
    """Run judge ``name``, built as a live run builds it (with the run's executor limits and call cache), over the
    labelled examples; the calibration is bound to the judge's fingerprint as it is defined now."""
    from evalglass.engine.produce.liverun import build_executor, live_extra_missing, open_cache
    from evalglass.engine.produce.metricbuild import build_live_metric

    try:
        from evalglass.lanes.judge import calibrate_judge
    except ImportError as exc:
        raise live_extra_missing(exc) from None
    spec = loaded.config.metrics[name]
    cache = open_cache(loaded, cache_mode)
    executor = build_executor(loaded)
    try:
        judge = build_live_metric(loaded, name, executor, cache)
        try:
            result = await calibrate_judge(
                judge.judge,
                labelled,
                scale=spec.calibration_subject().scale,
                fingerprint=current_fingerprint(spec, loaded.base_dir, name, loaded.where(("metrics", name, "rubric"))),
                executor=executor,
            )
        finally:
            await judge.aclose()
        return result.calibration, len(result.results), tuple(cache.problems() if cache is not None else ())
    finally:
        await executor.aclose()
        if cache is not None:
            cache.close()


def describe(record: CalibrationRecord, path: Path) -> str:
    """The record for a terminal: the numbers, how to read them, and what the ledger needs."""
    interval = record.agreement_interval
    corner = "human \\ judge"
    # One width for the label column (the corner or the longest category) and one for the count columns (the
    # longest category or count), so every row lines up under the header.
    label_width = max(len(corner), *(len(str(category)) for category in record.categories))
    width = max(5, *(len(str(item)) for item in (*record.categories, *(n for row in record.confusion for n in row))))
    header = corner.ljust(label_width) + "  " + " ".join(str(c).rjust(width) for c in record.categories)
    rows = [
        str(category).ljust(label_width) + "  " + " ".join(str(count).rjust(width) for count in row)
        for category, row in zip(record.categories, record.confusion, strict=True)
    ]

    def kappa(value: float | None) -> str:
        return "undefined (one category only)" if value is None else f"{value:.3f}"

    lines = [
        f"judge '{record.judge}' ({record.model}, rubric {record.rubric}), "
        f"fingerprint {record.judge_fingerprint[:12]}…",
        f"  served from: {shown_endpoint(record.judge_endpoint) if record.judge_endpoint else 'not recorded'}",
        f"  pairs compared: {record.n}"
        + (f" ({record.excluded} excluded: unusable judge answers)" if record.excluded else ""),
        f"  agreement: {record.agreement:.3f} ({record.agreed}/{record.n}), {interval.confidence:.0%} Wilson interval "
        f"{interval.low:.3f}–{interval.high:.3f}",
        f"  Cohen's kappa: {kappa(record.kappa)}",
    ]
    if record.ordinal:
        lines.append(
            f"  weighted kappa: linear {kappa(record.weighted_kappa_linear)}, "
            f"quadratic {kappa(record.weighted_kappa_quadratic)}"
        )
    lines.append("  confusion (rows: human, columns: judge):")
    lines.extend("    " + line for line in (header, *rows))
    lines.append(f"wrote {path}")
    lines.append(
        f"A gate on '{record.judge}' decides only while the ledger requires it, e.g. "
        f"`judges: {{{record.judge}: {{min_agreement: 0.8}}}}`, the interval's lower bound "
        f"({interval.low:.3f}) meets that minimum, and the ledger approves this very record. After reviewing it, "
        f"the host adds this line under the `judges: {record.judge}:` entry:"
    )
    lines.append(f"  {calibration_line(record)}")
    return "\n".join(lines)


__all__ = [
    "CALIBRATIONS_DIR",
    "CalibrationOutcome",
    "calibrate_command",
    "calibration_path",
    "current_fingerprint",
    "describe",
    "judge_standings",
    "load_calibration",
]
