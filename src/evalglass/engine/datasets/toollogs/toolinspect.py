"""inspect_ai ``.eval`` logs (``dataset.format: inspect``): one example per sample id, its epochs as samples.

A ``.eval`` log is a zip: ``header.json`` (the eval: task, model, packages, the dataset's sample ids in order) and
one ``samples/<id>_epoch_<n>.json`` per sample and epoch. inspect_ai writes its members zstd-compressed, which the
standard library reads only from Python 3.14: members are decompressed here with ``zstandard`` (the ``tools``
extra), deflated and stored members with ``zlib``; the zip's directory is read by the standard library.

Per sample: ``input`` (text, or chat messages in the internal message shape), ``target``, ``metadata``; per epoch
the answer (``output.completion``), every scorer's score (``value``, ``explanation``) and the sample's own error
(a sample inspect could not complete: its scores are missing, and ``recorded_score`` says so, never 0.0). A sample
invalidated in inspect (``invalidation``, set by ``invalidate_samples``) is such a failed sample too.

The header declares the samples the eval ran (``eval.dataset.sample_ids``) and its epochs (``eval.config.epochs``):
a declared sample or epoch without its member (a log cut short by a cancelled run, or pruned) is a failed sample
naming the log's status, never left out.

Pinned to log format version 2 (written by inspect_ai 0.3.285, the version the committed fixture was made with);
another version is refused, naming it.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from evalglass.engine.datasets.toollogs.toolresults import (
    ToolProblem,
    ToolReader,
    ToolSample,
    UnknownVersion,
    absent_sample,
    check_absent,
    load_json,
    score_entry,
)
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import MendedLines
from evalglass.readers.userfiles import open_regular

#: Log format versions read (the ``version`` of ``header.json``), and the inspect_ai versions tested with them.
VERSIONS = (2,)
TESTED_WITH = ("inspect_ai 0.3.285",)
_ZIP_ZSTANDARD = 93
_LOCAL_HEADER = struct.Struct("<4s22xHH")


class InspectReader(ToolReader):
    tool = "inspect"

    def _samples(self) -> Iterator[ToolSample | ToolProblem]:
        self._hash_file()
        try:
            archive = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise SetupError(
                f"not an inspect_ai .eval log ({exc})", where=str(self.path), fix="point dataset.path at a .eval file"
            ) from None
        with archive, open_regular(self.path, what="inspect log", missing_fix="fix `dataset.path`") as handle:
            members = _Members(archive, handle, self.path, self.mended)
            try:
                header = members.json("header.json")
            except ValueError as exc:  # not JSON, or a member that does not decompress
                raise SetupError(
                    f"the inspect_ai log's header.json cannot be read ({exc})", where=str(self.path)
                ) from None
            if not isinstance(header, dict):
                raise SetupError("an inspect_ai log without header.json", where=str(self.path))
            version = header.get("version")
            if version not in VERSIONS:
                raise UnknownVersion(self.path, "inspect_ai", "log format version", version, VERSIONS)
            evaluation = self._object(header, "eval")
            self.source = {
                "tool": "inspect",
                "version": str(self._object(evaluation, "packages").get("inspect_ai", "")),
                "log_version": version,
                "task": evaluation.get("task"),
                "model": evaluation.get("model"),
                "status": header.get("status"),
            }
            yield from self._read(members, archive, evaluation, str(header.get("status")))

    def _object(self, parent: dict[str, Any], key: str) -> dict[str, Any]:
        """``parent[key]`` of the header (an empty object when absent); another type stops the run in one line."""
        value = parent.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise SetupError(
                f"header.json's {key!r} is {type(value).__name__}, not an object: not a log inspect_ai wrote",
                where=str(self.path),
                fix="point dataset.path at the .eval file inspect_ai wrote, unedited",
            )
        return value

    def _read(
        self, members: _Members, archive: zipfile.ZipFile, evaluation: dict[str, Any], status: str
    ) -> Iterator[ToolSample | ToolProblem]:
        names = archive.namelist()
        by_id: dict[str, list[tuple[int, str, int]]] = {}
        for position, name in enumerate(names, start=1):
            if not name.startswith("samples/") or not name.endswith(".json"):
                continue
            stem, _, number = name[8:-5].rpartition("_epoch_")
            if not stem or not number.isdigit():
                continue
            by_id.setdefault(stem, []).append((int(number), name, position))
        ids = self._object(evaluation, "dataset").get("sample_ids") or ()
        if not isinstance(ids, list):
            raise SetupError(
                "header.json's eval.dataset.sample_ids is not a list: not a log inspect_ai wrote", where=str(self.path)
            )
        declared = list(dict.fromkeys(str(item) for item in ids))
        config = self._object(evaluation, "config")
        if config.get("log_samples") is False:
            raise SetupError(
                "the inspect_ai log was written without its samples (log_samples=False): it holds no sample to measure",
                where=str(self.path),
                fix="run the eval again with log_samples=True (inspect's default)",
            )
        epochs = config.get("epochs") or 1
        if type(epochs) is not int or epochs < 1:
            raise SetupError(
                f"header.json's eval.config.epochs is {epochs!r}, not a positive integer", where=str(self.path)
            )
        known = set(declared)
        absent = sum(epochs - len({e for e, _, _ in by_id.get(key, ()) if 1 <= e <= epochs}) for key in declared)
        check_absent(absent, sum(map(len, by_id.values())), self.path, self.tool)
        why = f"inspect_ai's header declares it, and the log (status {status!r}) has no samples/ member for it"
        order = declared + [key for key in by_id if key not in known]
        for ordinal, key in enumerate(order, start=1):
            present = sorted(by_id.get(key, ()))
            # A declared sample's epochs the log does not hold are the tool's failures, at the place of the sample
            # (its first member's position, or after every member for a sample with none).
            line = present[0][2] if present else len(names) + ordinal
            for epoch, name, position in present:
                try:
                    sample = members.json(name)
                except _Damaged as exc:
                    yield ToolProblem(name, position, str(exc))
                    continue
                except orjson.JSONDecodeError as exc:
                    yield ToolProblem(name, position, f"not valid JSON ({exc})")
                    continue
                yield self._parse(name, position, _sample, sample, name, position, epoch)
            wanted = set(range(1, epochs + 1)) if key in known else set()
            for epoch in sorted(wanted - {epoch for epoch, _, _ in present}):
                yield absent_sample(key, epoch, line, why)


def _sample(sample: Any, name: str, position: int, epoch: int) -> ToolSample | ToolProblem:
    if not isinstance(sample, dict) or "id" not in sample:
        return ToolProblem(name, position, "is not an inspect sample (no id)")
    sample_id = sample["id"]
    if type(sample_id) not in (str, int):
        return ToolProblem(name, position, f"sample id must be text or an integer, got {sample_id!r}")
    recorded_epoch = sample.get("epoch")
    if recorded_epoch is not None and type(recorded_epoch) is not int:
        return ToolProblem(name, position, f"epoch must be an integer, got {recorded_epoch!r}")
    scores: dict[str, dict[str, Any]] = {}
    for scorer, score in (sample.get("scores") or {}).items():
        if isinstance(score, dict):
            explanation = score.get("explanation")
            scores[scorer] = score_entry(
                score.get("value"), explanation=explanation if isinstance(explanation, str) else None
            )
        else:
            return ToolProblem(name, position, f"score {scorer!r} is not an object")
    error = sample.get("error")
    message = (error.get("message") if isinstance(error, dict) else str(error)) if error else None
    invalidation = sample.get("invalidation")
    if invalidation and message is None:
        # inspect_ai's invalidate_samples: the result must not count (eval sets run the sample again); its scores
        # stay in the log, so it is a sample the tool did not complete, never a measurement.
        reason = invalidation.get("reason") if isinstance(invalidation, dict) else None
        message = f"invalidated in inspect_ai ({reason or 'no reason given'})"
    output = sample.get("output") or {}
    completion = output.get("completion") if isinstance(output, dict) else None
    if message is None and not isinstance(completion, str):
        # inspect_ai always writes the completion (empty when the model gave none): a sample without it was edited
        # or damaged. Read as content the log did not capture, it would be non_evaluable, which a gate may tolerate.
        return ToolProblem(name, position, "has no output.completion text: not a sample as inspect_ai writes it")
    return ToolSample(
        id=str(sample_id),
        epoch=recorded_epoch or epoch,
        place=name,
        line=position,
        input=_input(sample.get("input")),
        target=sample.get("target"),
        text=None if message is not None else completion,
        scores=scores,
        error=message,
        metadata=dict(sample["metadata"]) if isinstance(sample.get("metadata"), dict) else {},
    )


def _input(value: Any) -> Any:
    """Text stays text; chat messages take the internal message shape (role, parts)."""
    if not isinstance(value, list):
        return value
    messages = []
    for message in value:
        if not isinstance(message, dict):
            return value
        content = message.get("content")
        if isinstance(content, str):
            parts = [{"type": "text", "content": content}]
        elif isinstance(content, list):
            parts = [
                {"type": "text", "content": str(item.get("text", ""))}
                if isinstance(item, dict) and item.get("type") == "text"
                else {"type": str(item.get("type", "other")) if isinstance(item, dict) else "other"}
                for item in content
            ]
        else:
            parts = []
        messages.append({"role": str(message.get("role", "user")), "parts": parts})
    return messages


class _Damaged(ValueError):
    """A member that does not decompress: a malformed sample at its place, as one that is not JSON."""


def _zstd_error() -> type[Exception]:
    """zstandard's error when it is installed (a member can only be zstd-decompressed then), else a stand-in."""
    try:
        from zstandard import ZstdError
    except ImportError:
        return zlib.error
    return ZstdError


class _Members:
    """The zip's members, decompressed by their own method (zstd, deflate or stored)."""

    def __init__(self, archive: zipfile.ZipFile, handle: BinaryIO, path: Any, mended: MendedLines) -> None:
        self._mended = mended
        self._archive = archive
        self._handle = handle
        self._path = path
        self._zstd: Any = None

    def json(self, name: str) -> Any:
        try:
            info = self._archive.getinfo(name)
        except KeyError:
            return None
        return load_json(self.read(info), self._mended, name)

    def read(self, info: zipfile.ZipInfo) -> bytes:
        handle = self._handle
        handle.seek(info.header_offset)
        header = handle.read(_LOCAL_HEADER.size)
        magic, name_length, extra_length = _LOCAL_HEADER.unpack(header)
        if magic != b"PK\x03\x04":
            raise _Damaged("is damaged: its zip entry has no local header")
        handle.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
        raw = handle.read(info.compress_size)
        try:
            return self._decompress(info, raw)
        except (zlib.error, _zstd_error()) as exc:
            raise _Damaged(f"is damaged: it does not decompress ({exc})") from None

    def _decompress(self, info: zipfile.ZipInfo, raw: bytes) -> bytes:
        if info.compress_type == zipfile.ZIP_STORED:
            return raw
        if info.compress_type == zipfile.ZIP_DEFLATED:
            return zlib.decompress(raw, -15)
        if info.compress_type == _ZIP_ZSTANDARD:
            if self._zstd is None:
                try:
                    import zstandard
                except ImportError:
                    from evalglass.dependencies import install_hint

                    raise SetupError(
                        "reading an inspect_ai log (zstd-compressed) needs the zstandard package",
                        where=str(self._path),
                        fix=install_hint("zstandard"),
                    ) from None
                self._zstd = zstandard.ZstdDecompressor()
            return bytes(self._zstd.decompressobj().decompress(raw))
        raise SetupError(
            f"the inspect log's member {info.filename} uses zip compression method {info.compress_type}, which "
            "EvalGlass does not read",
            where=str(self._path),
        )
