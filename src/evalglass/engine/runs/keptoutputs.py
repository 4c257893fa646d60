"""The outputs a recorded run scored, kept in its run folder: what ``view --examples`` and the HTML report show
beside the scores, whatever happens to the dataset or the outputs file afterwards.

**What is kept.** Each output as the run read it (before ``parse: json``: the recorded value, not what parsing made
of it), one gzip-compressed JSON line per block of ``scores.jsonl``: ``{"ids": [...], "outputs": [...]}``, plus
``"absent": [positions]`` for lines that had no output (a malformed line, an example the outputs file lacks), whose
entry in ``outputs`` is null, and ``"not_json": [[position, why, declared], ...]`` for recorded answers JSON cannot
hold (a Parquet NaN), whose entry is their text. A live lane's outputs are already the run's own
(``outputs.jsonl``), so only a run without a lane keeps this file (with judges too: they are live, the outputs are
recorded).

**Addressed by content.** The file is ``blobs/<hex>.jsonl.gz``, ``<hex>`` the SHA-256 of its bytes, which the run
record names (``kept_outputs``) and ``digests.json`` lists like every file. Every reader checks it as one of
the run's artifacts (``engine.runs.integrity``, through ``engine.decide.consistency.load_checked``) and
:func:`kept_outputs` hashes what it reads: a missing, edited or swapped file is refused in one line, never shown as
what was scored. ``verify`` makes the same check and also reads it
whole and checks it holds one entry per line of ``scores.jsonl``, the same ids in the same order.

**What it is not.** Evidence for a verdict by itself: no gate, score or count reads it in a run or a reader. ``verify``
scores the run's deterministic metrics again from it (``engine.jobs.rescore``), so a score these outputs do not
produce is a finding; that outputs and scores rewritten together are the ones the run saw, only the dataset file
the run read (outputs recorded in it) or the digests' signature can say.

Cost (BENCHMARKS.md): one ``orjson.dumps`` per batch on the run's thread (none for a batch whose outputs the dataset
reader already wrote while checking it, :data:`~evalglass.core.example.OUTPUTS_JSON`), and a level-1 zlib pass on a
thread of its own; about a fifth of the outputs' JSON on disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import threading
import zlib
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from evalglass import redaction
from evalglass.core.example import OUTPUTS_JSON, Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.fingerprint import PREFIX
from evalglass.core.outputparse import UnparsedOutput
from evalglass.core.runrecord import KeptOutputs, RunRecord
from evalglass.engine.datasets.dataset import BadLine
from evalglass.engine.runs.runfolder import PartialFile, make_dirs
from evalglass.errors import SetupError
from evalglass.readers.jsonvalues import non_finite

BLOBS_DIR = "blobs"
#: The name the file is written under until its hash is known (a partial file of it is swept on resume).
PENDING = "kept-outputs.jsonl.gz"
#: zlib level 1, gzip framing (``zcat`` reads it; the header holds no time, so the bytes depend on the content only).
COMPRESSION_LEVEL = 1
_GZIP = 16 + zlib.MAX_WBITS
_READ = 1 << 20
#: Encoded blocks waiting for the writer's thread at most (about 50 KB each for short outputs).
QUEUED = 16


class KeptOutputsWriter:
    """Compresses each batch's recorded outputs into the pending file; :meth:`commit` names it by its hash.

    The run's thread only encodes a block (one ``orjson.dumps``); compressing, hashing and writing happen on a
    thread of the writer's own (zlib and hashlib release the GIL), so on a machine with a spare core keeping the
    outputs costs the run about the encoding. At most :data:`QUEUED` blocks wait for it; an error it meets (a full
    disk) is raised by the next :meth:`add` or by :meth:`commit`."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        blobs = folder / BLOBS_DIR
        make_dirs(blobs)
        self._file = PartialFile(blobs / PENDING, buffering=1 << 20)
        self._zip = zlib.compressobj(COMPRESSION_LEVEL, zlib.DEFLATED, _GZIP)
        self._hash = hashlib.sha256()
        self._examples = 0
        #: The parts of a block not yet ended (``add``'s ``ends_block``): ids, outputs (when not written), written.
        self._parts: list[tuple[list[str], list[Any] | None, bytes | None]] = []
        # Outputs can quote what a secret let an application read: redacted as every artifact is.
        self._redactor = redaction.current()
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=QUEUED)
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name="evalglass-kept-outputs", daemon=True)
        self._thread.start()

    def add(
        self,
        batch: ExampleBatch | Sequence[Example | BadLine],
        *,
        holds_non_finite: bool = False,
        ends_block: bool = True,
    ) -> None:
        """One block: the batch's ids and outputs, as the dataset (or outputs file) recorded them.
        ``holds_non_finite``: the reader can give a NaN or an infinity (``Reader.holds_non_finite``), which orjson
        writes as ``null``: such an output is then kept as the standard library writes it (:func:`_line`).
        ``ends_block`` False: the batch is a part of a block (``DatasetReader.parts``), written with the parts after
        it up to the one that ends the block, as one line, the one the whole block would have given."""
        if isinstance(batch, ExampleBatch):
            ids, outputs = batch.ids, batch.outputs
        else:
            ids = [item.id for item in batch]
            outputs = [ABSENT if isinstance(item, BadLine) else item.output for item in batch]
        if ends_block and not self._parts:
            if ids:
                written = _written(batch, outputs, holds_non_finite)
                self._write(ids, outputs, None if written is None else (written,), holds_non_finite)
            return
        if ids:
            # A part's outputs are kept as the bytes the whole block's line is joined from, not as its objects (which
            # the run frees part by part), unless the block may need them: no bytes (an absent or unwritable output),
            # or bytes holding a null from a reader that can give a NaN or an infinity (orjson writes them as null).
            # From a reader that cannot, the bytes read back as the values written, and are not searched (a pass
            # over every output's bytes, 13 k instructions a recorded trajectory).
            written = _written(batch, outputs, holds_non_finite)
            keep = written is None or (holds_non_finite and b"null" in written)
            self._parts.append((ids, outputs if keep else None, written))
        if not ends_block or not self._parts:
            return
        parts, self._parts = self._parts, []
        ids = [example_id for part in parts for example_id in part[0]]
        if all(written is not None for _, _, written in parts):
            # The parts' arrays as one: "[a,b]" and "[c]" -> "[a,b,c]", joined once with the line (no copy before).
            pieces: list[bytes | memoryview] = [b"["]
            for _, _, written in parts:
                if written is not None and len(written) > 2:
                    pieces += (b",", memoryview(written)[1:-1]) if len(pieces) > 1 else (memoryview(written)[1:-1],)
            pieces.append(b"]")
            self._write(ids, [], pieces, holds_non_finite)
            return
        # What the whole block gives when one of its parts has no bytes: each output as an object again (kept, or
        # read back from its bytes: orjson reads what it wrote as values it writes as the same bytes, and the
        # standard library's text of a value differs from orjson's only for a NaN or an infinity, written null).
        outputs = [
            value
            for _, kept, written in parts
            for value in (kept if kept is not None else orjson.loads(written or b"[]"))
        ]
        self._write(ids, outputs, None, holds_non_finite)

    def _write(
        self, ids: list[str], outputs: list[Any], written: Sequence[bytes | memoryview] | None, holds_non_finite: bool
    ) -> None:
        """Queue the block's line: from ``written`` (its outputs as one array, in pieces) when given, else from
        ``outputs``."""
        block: dict[str, Any] = {"ids": ids, "outputs": outputs}
        if written is None and ABSENT in outputs:  # identity first: a recorded value is never ABSENT by equality
            block["absent"] = [index for index, value in enumerate(outputs) if value is ABSENT]
            block["outputs"] = [None if value is ABSENT else value for value in outputs]
        self._examples += len(ids)
        self._raise_failure()
        # orjson writes {"ids": [...], "outputs": [...]} as those two arrays between its own compact punctuation.
        if written is None:
            line = _line(block, may_hold_non_finite=holds_non_finite)
        else:
            line = b"".join((b'{"ids":', orjson.dumps(ids), b',"outputs":', *written, b"}\n"))
        self._queue.put(self._redactor.json_bytes(line))

    def _drain(self) -> None:
        compress, digest, write = self._zip.compress, self._hash.update, self._file.write
        while (data := self._queue.get()) is not None:
            if self._failure is not None:
                continue  # keep taking blocks so that the run's thread never waits on a dead writer
            try:
                compressed = compress(data)
                if compressed:
                    digest(compressed)
                    write(compressed)
            except BaseException as exc:  # raised on the run's thread, by add or commit
                self._failure = exc

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def commit(self) -> KeptOutputs:
        """The file made final under its content's name; what the run record says of it."""
        self._stop()
        self._raise_failure()
        tail = self._zip.flush()
        self._hash.update(tail)
        self._file.write(tail)
        self._file.commit()
        hex_digest = self._hash.hexdigest()
        name = f"{BLOBS_DIR}/{hex_digest}.jsonl.gz"
        os.replace(self._file.final, self._folder / name)
        return KeptOutputs(file=name, sha256=PREFIX + hex_digest, examples=self._examples)

    def abort(self) -> None:
        self._stop()
        self._file.abort()


#: orjson writes a dataclass as an object: refused instead, so that an :class:`UnparsedOutput` (a recorded answer JSON
#: cannot hold, a Parquet NaN: tabular.py) is kept by :func:`_line` as its text with why beside it, read back as the
#: same value (:func:`decoded_block`) and so re-scored by verify as the run scored it. Outputs hold no other dataclass,
#: so the bytes of every other block are unchanged, and finding one costs nothing on the way that holds none.
_NO_DATACLASS = orjson.OPT_PASSTHROUGH_DATACLASS


def _written(
    batch: ExampleBatch | Sequence[Example | BadLine], outputs: list[Any], holds_non_finite: bool
) -> bytes | None:
    """A batch's outputs as one JSON array, the bytes the dataset reader wrote while checking the batch when it did;
    None when they are not to be kept so (an absent output, a value orjson cannot write or writes as another: a
    NaN or an infinity as ``null``), or the batch is not an :class:`ExampleBatch`: :func:`_line` writes them."""
    if not isinstance(batch, ExampleBatch) or ABSENT in outputs:  # identity first: never ABSENT by equality
        return None
    try:
        written = batch.derived(OUTPUTS_JSON, partial(orjson.dumps, outputs, option=_NO_DATACLASS))
    except TypeError:  # a value orjson cannot write: _line says so
        return None
    if holds_non_finite and b"null" in written and non_finite(outputs) is not None:
        return None
    return written


def _line(block: dict[str, Any], *, may_hold_non_finite: bool) -> bytes:
    """The block's line. An output orjson cannot write (nested too deep, a reader's odd type, an integer beyond 64
    bits) or writes as another value (a NaN or an infinity, as ``null``: looked for only when ``may_hold_non_finite``
    and the line holds a ``null``) is kept as the standard library writes it (``exact_json``: ``NaN``, the digits),
    so verify re-scores the value the run scored; an unparsed answer as its text with why (``not_json``); anything
    else orjson cannot write is said, never a repr."""
    try:
        line = orjson.dumps(block, option=orjson.OPT_APPEND_NEWLINE | _NO_DATACLASS)
    except TypeError:
        line = None
    outputs = block["outputs"]
    if line is not None and not (may_hold_non_finite and b"null" in line and non_finite(outputs) is not None):
        return line
    unparsed = [[index, value.message, value.declared] for index, value in enumerate(outputs) if _unparsed(value)]
    if unparsed:
        block["not_json"] = unparsed
    exact: list[list[Any]] = []
    stored: list[Any] = []
    for index, value in enumerate(outputs):
        text = None if _unparsed(value) else _exact_text(value)
        if text is not None:
            exact.append([index, text])
        stored.append(value.text if _unparsed(value) else None if text is not None else _storable(value))
    if exact:
        block["exact_json"] = exact
    block["outputs"] = stored
    return orjson.dumps(block, option=orjson.OPT_APPEND_NEWLINE)


def _exact_text(value: Any) -> str | None:
    """``value`` as the standard library writes it, when orjson cannot write it or writes another value; else None."""
    try:
        data = orjson.dumps(value, option=_NO_DATACLASS)
    except TypeError:
        pass
    else:
        if b"null" not in data or non_finite(value) is None:
            return None
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None


def _unparsed(value: Any) -> bool:
    return type(value) is UnparsedOutput


def _storable(value: Any) -> Any:
    try:
        orjson.dumps([[value]])
    except TypeError as exc:
        return {"evalglass_unserialisable_output": str(exc)}
    return value


# --------------------------------------------------------------------------------------------------- reading
def kept_lines(folder: Path, record: RunRecord) -> Iterator[bytes]:
    """Each block's line, undecoded (:func:`decoded_block` decodes one), the file read whole; raises ``SetupError``
    once the bytes read do not hash to the run record's (a file changed since it was checked)."""
    kept = record.kept_outputs
    assert kept is not None
    digest = hashlib.sha256()
    unzip = zlib.decompressobj(_GZIP)
    pending = b""
    try:
        with (folder / kept.file).open("rb") as handle:
            while chunk := handle.read(_READ):
                digest.update(chunk)
                lines = (pending + unzip.decompress(chunk)).split(b"\n")
                pending = lines.pop()
                yield from lines
        if pending.strip():
            yield pending
    except (OSError, zlib.error) as exc:
        raise _refused(kept.file, f"unreadable ({exc})", folder) from None
    if PREFIX + digest.hexdigest() != kept.sha256:
        raise _refused(kept.file, "changed while it was read", folder)


def decoded_block(raw: bytes, where: str) -> tuple[list[str], list[Any]]:
    try:
        block = orjson.loads(raw)
        ids, outputs = block["ids"], block["outputs"]
        for index in block.get("absent", ()):
            outputs[index] = ABSENT
        for index, message, declared in block.get("not_json", ()):
            outputs[index] = UnparsedOutput(str(outputs[index]), str(message), str(declared))
        for index, text in block.get("exact_json", ()):
            outputs[index] = json.loads(text)  # written by the standard library: NaN, Infinity, long integers
    except (orjson.JSONDecodeError, KeyError, TypeError, IndexError, ValueError):
        raise SetupError("a block of kept outputs is unreadable", where=where) from None
    if not isinstance(ids, list) or not isinstance(outputs, list) or len(ids) != len(outputs):
        raise SetupError("a block of kept outputs is unreadable", where=where)
    return ids, outputs


def _refused(name: str, why: str, folder: Path) -> SetupError:
    return SetupError(
        f"{name}, the outputs this run scored, is {why}",
        where=str(folder),
        fix=f"`evalglass verify {folder}` names what changed, or rerun `evalglass run`",
    )


def kept_against_scores(
    folder: Path, record: RunRecord, scored_ids: Sequence[str]
) -> tuple[list[tuple[str, Any, Any]], str | None]:
    """``verify``'s look at the kept outputs, once their bytes are found to be the ones the run record names
    (``engine.runs.integrity``): (field, recorded, found) for each way they are not the outputs of the scored lines
    (one entry per line of ``scores.jsonl``, the same ids in the same order), and the line saying what that proves
    (None for a run that kept none)."""
    kept = record.kept_outputs
    if kept is None:
        return [], None
    where = str(folder / kept.file)
    position, first_other = 0, None
    try:
        for raw in kept_lines(folder, record):
            ids, _ = decoded_block(raw, where)
            if first_other is None and list(scored_ids[position : position + len(ids)]) != ids:
                first_other = position
            position += len(ids)
    except SetupError as exc:
        return [(f"runrecord.kept_outputs ({kept.file})", kept.sha256, exc.what)], None
    findings: list[tuple[str, Any, Any]] = []
    if position != kept.examples:
        findings.append(("runrecord.kept_outputs.examples", kept.examples, position))
    if first_other is not None or position != len(scored_ids):
        at = first_other if first_other is not None else min(position, len(scored_ids))
        findings.append((f"{kept.file} ids", f"those of {len(scored_ids)} scored lines", f"others from entry {at}"))
    if findings:
        return findings, None
    return [], (
        f"kept outputs: {kept.file} holds the recorded output of each of the {position} examples scores.jsonl "
        "scores, in its order, as the run wrote them (digests, and the signature when checked, cover the file)"
    )


def kept_outputs(folder: Path, record: RunRecord, wanted: set[str]) -> dict[str, Any]:
    """The kept output of each wanted id (ABSENT where the example had none). The whole file is read and hashed,
    however early the ids are found: what is shown is always from bytes that hash to the run record's."""
    assert record.kept_outputs is not None
    where = str(folder / record.kept_outputs.file)
    found: dict[str, Any] = {}
    for raw in kept_lines(folder, record):
        if len(found) < len(wanted):
            ids, outputs = decoded_block(raw, where)
            for example_id, output in zip(ids, outputs, strict=True):
                if example_id in wanted:
                    found[example_id] = output
    return found


__all__ = [
    "BLOBS_DIR",
    "PENDING",
    "KeptOutputsWriter",
    "decoded_block",
    "kept_against_scores",
    "kept_lines",
    "kept_outputs",
]
