"""Writing and reading a run's folder. Every file is written atomically (a private partial file, then a rename),
mode 0600 (see :mod:`evalglass.engine.runs.runfolder`); every file is read as exact JSON (see
:mod:`evalglass.readers.jsonsource`), so a repeated key or an out-of-range integer in an artifact is refused, not
read one way here and another way elsewhere.

`evalglass view` comes through here, so the modules only some commands need (the run record, the score columns
and numpy behind them) are imported where they are used.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO

import orjson
from pydantic import BaseModel, ValidationError

from evalglass import redaction
from evalglass.core.fingerprint import PREFIX
from evalglass.core.score import ScoreContractError
from evalglass.core.scorecard import Scorecard
from evalglass.engine.runs.runfolder import RUNRECORD_NAME, PartialFile, write_atomic
from evalglass.engine.runs.scoresblock import BadBlock, ScoresBlock, decode_block, decode_score, encode_block
from evalglass.errors import SetupError, first_problem, first_problem_at
from evalglass.readers import jsonsource
from evalglass.readers.userfiles import open_regular, read_regular, unreadable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from evalglass.core.columns import ScoreColumn
    from evalglass.core.runrecord import RunRecord

SCORECARD_FILE = "scorecard.json"
RUNRECORD_FILE = RUNRECORD_NAME
REPORT_FILE = "report.md"
CHECKS_FILE = "checks.jsonl"
#: Where the folder of the last finished run is recorded (relative to the working directory).
LAST_RUN_POINTER = Path(".evalglass") / "last-run"
#: What to do about an artifact that cannot be loaded as written.
REGENERATE = "the file was edited or corrupted; rerun `evalglass run` to regenerate it"
NOT_A_RUN = "point at a run folder written by `evalglass run`"
#: What to do about an artifact that is a folder, a FIFO or a device.
NOT_A_FILE = "the run folder was edited: `evalglass run` writes every artifact as a regular file; rerun it"
#: A link where an artifact should be: also what a cache or store that keeps files as links makes (git-annex, DVC's
#: symlink cache), which is no edit; its bytes restored as regular files are checked as any run's.
LINKED = (
    "the run folder was edited, or a store that keeps files as links restored it (git-annex, DVC): `evalglass run` "
    "writes every artifact as a regular file and links are never followed; `git annex unlock FOLDER` (git-annex), "
    "`dvc config cache.type copy` then `dvc checkout --relink` (DVC), copy it with its links resolved (`cp -rL`), "
    "or rerun it"
)


def write_model(path: Path, model: BaseModel) -> None:
    """A model as indented JSON, with every secret of the environment redacted (see ``evalglass.redaction``)."""
    write_atomic(path, model_file_bytes(model))


def model_file_bytes(model: BaseModel) -> bytes:
    """The bytes :func:`write_model` writes for ``model``."""
    return redaction.current().json_bytes(model_bytes(model.model_dump(mode="json")))


def text_file_bytes(text: str) -> bytes:
    """The bytes :func:`write_text` writes for ``text``."""
    return redaction.current().text_bytes(text.encode())


def model_bytes(document: Any) -> bytes:
    """The exact bytes an artifact holding ``document`` (a model dumped to JSON values) is written as (before
    redaction, which leaves a document without secrets unchanged)."""
    return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"


def write_text(path: Path, text: str) -> None:
    """A text artifact (the Markdown report), with every secret of the environment redacted."""
    write_atomic(path, text_file_bytes(text))


class ScoresWriter:
    """Streams blocks of examples' scores into a hidden file that becomes ``scores.jsonl`` on commit.

    Each line is one block of consecutive examples, stored as columns and encoded by
    :func:`evalglass.engine.runs.scoresblock.encode_block` (the one place that says what a block is).
    """

    def __init__(self, folder: Path) -> None:
        from evalglass.core.runrecord import SCORES_FILE

        self.final = folder / SCORES_FILE
        self._file = PartialFile(self.final, buffering=1 << 20)
        self._hash = hashlib.sha256()
        # Diagnostics quote outputs, exceptions and command output: the last line of defence before the disk.
        self._redactor = redaction.current()

    def write_block(
        self, ids: list[str], lines: list[int], scores: dict[str, list[Any]], clusters: list[str | None] | None
    ) -> None:
        """One block; ``clusters`` (one per example, None for none) only in a clustered run. Empty: nothing."""
        if not ids:
            return
        self._write(encode_block(ids, lines, scores, clusters))

    def _write(self, data: bytes) -> None:
        data = self._redactor.json_bytes(data)
        self._hash.update(data)
        self._file.write(data)

    def commit(self) -> str:
        self._file.commit()
        return PREFIX + self._hash.hexdigest()

    def abort(self) -> None:
        self._file.abort()


def run_folder(path: Path) -> Path:
    """``path`` when it is a folder; one line saying what it is otherwise (a file, nothing)."""
    if not path.is_dir():
        what = "a file" if path.exists() else "not there"
        raise SetupError(f"not a run folder: {what}", where=str(path), fix=NOT_A_RUN)
    return path


def open_artifact(path: Path, what: str) -> BinaryIO:
    """A run artifact opened for buffered binary reading. Every reader of a run folder opens its files here (or
    through :func:`load_json` and :func:`score_rows`, which do the same): a file that is missing, a folder, a FIFO
    or unreadable is one line naming it, for every command alike."""
    return open_regular(path, what=what, missing_fix=NOT_A_RUN, buffering=-1, other_fix=NOT_A_FILE)


def changed_mid_run(path: Path, what: str, found: str, written: str) -> SetupError:
    """The error for a file of the run's own folder that the run reads back (its ids for a comparative gate, a
    variant's answers for a judge of variants, a jury's notes) and that no longer hashes to what the run wrote:
    host code (a lane, a python metric, a check's command) runs as the same user while the run goes on and can
    find the folder. Nothing is decided from such a file."""
    return SetupError(
        f"the run's own {what} changed while the run went on (its SHA-256 is {found[len(PREFIX) :][:12]}, not the "
        f"{written[len(PREFIX) :][:12]} the run wrote): host code wrote into the run folder, so nothing was decided",
        where=str(path),
        fix="find what writes into the run folder (a lane, a python metric, a check's command: they run as the same "
        "user) and run again",
    )


def written_lines(handle: IO[bytes], path: Path, what: str, written: str | None) -> Iterator[bytes]:
    """Each line of an artifact this run wrote, opened with :func:`open_artifact`; with ``written`` (the ``sha256:``
    hash its writer computed as it wrote) the bytes read are checked against it once the last line is read
    (:func:`changed_mid_run`), so a reader that consumes every line before it commits anything decides from the
    bytes the run wrote or from nothing. None: a finished run's reader, which checks the digest list instead."""
    digest = hashlib.sha256()
    for line in _read_lines(handle, path, what):
        digest.update(line)
        yield line
    if written is not None and (found := PREFIX + digest.hexdigest()) != written:
        raise changed_mid_run(path, what, found, written)


def load_json(path: Path, what: str) -> Any:
    """An artifact's JSON, read exactly; every way that fails (missing, a folder, unreadable, not JSON, a repeated
    key, an integer beyond 64 bits) is one line naming the file."""
    return _load_json_and_bytes(path, what)[0]


def _load_json_and_bytes(path: Path, what: str) -> tuple[Any, bytes]:
    raw = read_regular(path, what=what, missing_fix=NOT_A_RUN, other_fix=NOT_A_FILE)
    return _parsed_json(raw, path, what), raw


def _parsed_json(raw: bytes, path: Path, what: str) -> Any:
    try:
        return jsonsource.loads(raw)
    except jsonsource.JsonRefused as exc:
        raise SetupError(f"{what} is refused: {exc}", where=str(path), fix=REGENERATE) from None
    except orjson.JSONDecodeError as exc:
        raise SetupError(f"{what} is not valid JSON ({exc})", where=str(path), fix=REGENERATE) from None


def load_json_model(path: Path, model: type[Any], what: str) -> Any:
    """Load and validate an artifact; a file that fails its own rules is refused, never repaired."""
    return load_json_model_and_bytes(path, model, what)[0]


def load_json_model_and_bytes(path: Path, model: type[Any], what: str) -> tuple[Any, bytes]:
    """:func:`load_json_model`, also returning the bytes read (for a fingerprint of exactly what was loaded).

    A link is refused, never followed: every artifact is a regular file in its run's folder, and the digest list
    (the one artifact no list hashes) behind a link could be any file, kept apart from the run it claims to list."""
    if path.is_symlink():
        fix = LINKED.replace("FOLDER", str(path.parent))
        raise SetupError(f"{what} is a symbolic link, not a regular file", where=str(path), fix=fix)
    raw = read_regular(path, what=what, missing_fix=NOT_A_RUN, other_fix=NOT_A_FILE)
    return parse_json_model(raw, path, model, what), raw


def parse_json_model(raw: bytes, path: Path, model: type[Any], what: str) -> Any:
    """An artifact's bytes, already read from ``path`` (and hashed by the caller), parsed and validated as
    :func:`load_json_model` does."""
    data = _parsed_json(raw, path, what)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        loc, problem = first_problem_at(exc)
        raise SetupError(
            f"{what} fails its own rules at {loc}: {problem}",
            where=str(path),
            fix=REGENERATE,
        ) from None


def refuse_unfinished(folder: Path) -> None:
    """Refuse (exit 2) a folder whose run started (its manifest, ``run.json``, is there) but never wrote its
    scorecard, the file a run renames into place last: a run stopped or killed before it finished (or whose
    scorecard was deleted since: the two cannot be told apart), said so with how to finish it, not as a folder that
    is no run or a damaged one."""
    scorecard = folder / SCORECARD_FILE
    if scorecard.exists() or scorecard.is_symlink() or not (folder / "run.json").is_file():
        return
    raise SetupError(
        f"this run did not finish: it has no {SCORECARD_FILE} (the file a run writes last; it was stopped or killed "
        "before, or the file was deleted since)",
        where=str(folder),
        fix=f"finish it with `evalglass run --resume {folder}`",
    )


def load_scorecard(folder: Path) -> Scorecard:
    result: Scorecard = load_json_model(folder / SCORECARD_FILE, Scorecard, "scorecard")
    return result


def load_runrecord(folder: Path) -> RunRecord:
    from evalglass.core.runrecord import RunRecord

    result: RunRecord = load_json_model(folder / RUNRECORD_FILE, RunRecord, "run record")
    return result


def variant_names_of(folder: Path) -> tuple[str, ...]:
    """The variants of the run in ``folder`` (empty: a run without variants, whose scores are one file)."""
    from evalglass.core.runrecord import SCORES_FILE

    if (folder / SCORES_FILE).exists() or not (folder / RUNRECORD_FILE).exists():
        return ()
    return tuple(file.split("/")[1] for file in load_runrecord(folder).variant_scores)


def run_scores_blocks(folder: Path) -> Iterator[tuple[ScoresBlock, Path, int]]:
    """The scores blocks of the run in ``folder`` with the file and line each came from: its ``scores.jsonl``, or in
    a run with variants every variant's file read in step, each block's metrics named ``metric@variant`` (every
    variant scored the same lines in the same blocks; a file that does not keep step is refused)."""
    from contextlib import ExitStack

    from evalglass.core.runrecord import COMPARED_DIR, SCORES_FILE, VARIANTS_DIR
    from evalglass.core.variants import difference_metric, variant_metric

    names = variant_names_of(folder)
    differences = _difference_gates(folder) if names else []
    paths = [folder / VARIANTS_DIR / name / SCORES_FILE for name in names] or [folder / SCORES_FILE]
    # The judges of variants side by side (``compare_variants``): their metrics under their own names.
    compared = bool(names) and load_runrecord(folder).compared_scores is not None
    if compared:
        paths.append(folder / COMPARED_DIR / SCORES_FILE)
    with ExitStack() as stack:
        streams = [_decoded(stack.enter_context(open_artifact(path, "scores file")), path) for path in paths]
        if not names:
            yield from streams[0]
            return
        while True:
            step = [next(stream, None) for stream in streams]
            if all(item is None for item in step):
                return
            if any(item is None for item in step) or len({tuple(item[0].ids) for item in step if item}) != 1:
                where = next(item for item in step if item is not None)
                raise SetupError(
                    "the variants' scores files do not hold the same examples in the same blocks",
                    where=f"{where[1]}:{where[2]}",
                    fix="the files were edited; rerun `evalglass run`",
                )
            first = step[0]
            assert first is not None
            scores = {
                variant_metric(metric, name): entries
                for name, item in zip(names, step[: len(names)], strict=True)
                if item is not None
                for metric, entries in item[0].scores.items()
            }
            if compared and step[-1] is not None:
                scores.update(step[-1][0].scores)
            for metric, variant, other in differences:
                left, right = scores.get(variant_metric(metric, variant)), scores.get(variant_metric(metric, other))
                if left is not None and right is not None:
                    scores[difference_metric(metric, variant, other)] = [
                        _difference_entry(a, b) for a, b in zip(left, right, strict=True)
                    ]
            yield ScoresBlock(first[0].ids, first[0].lines, scores, first[0].clusters), first[1], first[2]


def _difference_gates(folder: Path) -> list[tuple[str, str, str]]:
    """(metric, variant, other) of every gate between two variants the run's config declares."""
    gates = load_runrecord(folder).config.get("gates") or {}
    return [
        (str(gate["metric"]), str(gate["variant"]), str(gate["compare_to_variant"]))
        for gate in gates.values()
        if isinstance(gate, dict) and gate.get("compare_to_variant") and gate.get("metric") and gate.get("variant")
    ]


def _difference_entry(left: Any, right: Any) -> Any:
    """One example's entry of a difference between variants, as the decision computes it
    (``core.variants.difference_column``): the difference of two measured values, else the unmeasured side's entry."""
    measured = [isinstance(entry, float) and not isinstance(entry, bool) for entry in (left, right)]
    if all(measured):
        return float(left) - float(right)
    return left if not measured[0] else right


def _decoded(handle: Iterator[bytes], path: Path) -> Iterator[tuple[ScoresBlock, Path, int]]:
    for number, raw in enumerate(handle, start=1):
        if not raw.strip():
            continue
        try:
            yield decode_block(raw), path, number
        except ValueError:  # BadBlock, JsonRefused
            raise SetupError("scores file block is unreadable", where=f"{path}:{number}") from None


def run_score_rows(folder: Path) -> Iterator[dict[str, Any]]:
    """:func:`score_rows` of the run in ``folder``, variants included (see :func:`run_scores_blocks`)."""
    for block, _, _ in run_scores_blocks(folder):
        yield from _block_rows(block)


def _block_rows(block: ScoresBlock) -> Iterator[dict[str, Any]]:
    clusters = block.clusters
    for index, (example_id, line) in enumerate(zip(block.ids, block.lines, strict=True)):
        row: dict[str, Any] = {
            "id": example_id,
            "line": line,
            "scores": {name: entries[index] for name, entries in block.scores.items()},
        }
        if clusters is not None:
            row["cluster"] = clusters[index]
        yield row


def score_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Each example of a scores file as its own row: ``{"id", "line", "scores": {metric: entry}}`` (plus
    ``"cluster"`` in a clustered run), for readers that want one example at a time. Each block is decoded and its
    shape checked (:func:`~evalglass.engine.runs.scoresblock.decode_block`: ``BadBlock`` or ``JsonRefused``, both
    ``ValueError``); the scores themselves are not validated: see :func:`load_columns`."""
    with open_artifact(path, "scores file") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            yield from _block_rows(decode_block(raw))


@dataclass
class LoadedScores:
    columns: dict[str, ScoreColumn]
    examples: int
    sha256: str
    example_of_row: array[int] | None
    cluster_ids: array[int] | None
    ids: npt.NDArray[np.str_] | None = None


def load_columns(
    path: Path, metric_names: list[str], *, samples: bool, clustered: bool, ids: bool = False
) -> LoadedScores:
    """Rebuild every metric's column from scores.jsonl, checking each score against the contract again.

    With ``samples`` each metric's entry is a list of sample scores; with ``clustered`` the cluster of each example
    is rebuilt exactly as the run assigned it (an example without one is a cluster of its own). With ``ids`` the
    example ids come back too, as one numpy string array (compact: no object per id at rest).
    """
    import numpy as np

    from evalglass.core.columns import ScoreColumn
    from evalglass.core.uniform import all_of_type

    columns = {name: ScoreColumn() for name in metric_names}
    digest = hashlib.sha256()
    examples = 0
    example_of_row: array[int] | None = array("q") if samples else None
    cluster_ids: array[int] | None = array("q") if clustered else None
    cluster_keys: dict[str, int] = {}
    id_blocks: list[npt.NDArray[np.str_]] = []
    with open_artifact(path, "scores file") as handle:
        for number, raw in enumerate(_read_lines(handle, path), start=1):
            digest.update(raw)
            if not raw.strip():
                continue
            where = f"{path}:{number}"
            block = _block(raw, where)
            block_ids, scores = block.ids, block.scores
            size = len(block_ids)
            if ids:
                if not all_of_type(block_ids, str):
                    raise SetupError("an example id is not a string", where=where, fix="the scores file was edited")
                # numpy's string arrays drop trailing NUL characters, which would make "a\x00" the same id as "a";
                # JSON writes NUL as \u0000, so only a block containing that escape needs the exact check.
                if b"\\u0000" in raw and any(example_id.endswith("\x00") for example_id in block_ids):
                    raise SetupError(
                        "an example id ends with a NUL character, which comparisons cannot tell apart from the id "
                        "without it",
                        where=where,
                        fix="give the example an id without trailing NUL characters",
                    )
                id_blocks.append(np.array(block_ids, dtype=np.str_))
            rows = [1] * size
            for name, column in columns.items():
                entries = scores.get(name)
                if entries is None:
                    continue
                if samples:
                    for index, sampled in enumerate(entries):
                        if not isinstance(sampled, list) or not sampled:
                            raise SetupError(f"metric '{name}' has no list of sample scores", where=where)
                        rows[index] = len(sampled)
                        _extend_loaded(column, name, sampled, where)
                else:
                    _extend_loaded(column, name, entries, where)
            if example_of_row is not None:
                for index, count in enumerate(rows):
                    example_of_row.extend([examples + index] * count)
            if cluster_ids is not None:
                for index, cluster in enumerate(block.clusters or [None] * size):
                    key = cluster if isinstance(cluster, str) else f"\x00unclustered:{examples + index}"
                    cluster_ids.append(cluster_keys.setdefault(key, len(cluster_keys)))
            examples += size
    all_ids: npt.NDArray[np.str_] | None = None
    if ids:
        all_ids = np.concatenate(id_blocks) if id_blocks else np.empty(0, dtype=np.str_)
    return LoadedScores(columns, examples, PREFIX + digest.hexdigest(), example_of_row, cluster_ids, all_ids)


def _read_lines(handle: IO[bytes], path: Path, what: str = "scores file") -> Iterator[bytes]:
    try:
        yield from handle
    except OSError as exc:
        raise unreadable(path, what, exc) from None


def _block(raw: bytes, where: str) -> ScoresBlock:
    """A decoded block, or the error naming the line that is not one."""
    try:
        return decode_block(raw)
    except jsonsource.JsonRefused as exc:
        raise SetupError(f"scores line is refused: {exc}", where=where, fix=REGENERATE) from None
    except BadBlock as exc:
        raise SetupError(str(exc), where=where) from None


def _extend_loaded(column: ScoreColumn, name: str, entries: list[Any], where: str) -> None:
    if not column.extend_measured(entries):
        for entry in entries:
            _append_loaded(column, name, entry, where)


def _append_loaded(column: ScoreColumn, name: str, entry: Any, where: str) -> None:
    try:
        column.append(decode_score(entry))
    except (ValidationError, ScoreContractError) as exc:
        raise SetupError(
            f"score of metric '{name}' breaks the score contract: {_first_error(exc)}",
            where=where,
            fix="the scores file was edited or corrupted",
        ) from None


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return first_problem(exc)
    return str(exc)
