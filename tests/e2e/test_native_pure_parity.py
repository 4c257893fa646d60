"""Every dataset format, run through the CLI with the C extensions on and with ``EVALGLASS_PURE=1``, writes the same
``scores.jsonl``, kept outputs and scorecard (but for the run's id and times), and ``verify`` passes on both, with
the C extensions on and off.

The C scan (``_native/_scan.c``: ``exact``, ``exact_kept``) only answers "proven" and, for a batch of long lines,
copies the kept outputs from the lines' bytes; the reader cuts a batch of long lines into parts
(``DatasetReader.parts``) on both paths. Each case here is built to cross those paths: long lines (parts, the kept
copy), a malformed line at a part's edge, a byte order mark, CRLF line ends, a last line without its newline,
outputs the copy must leave to orjson (a float, a backslash, ``-0``), a cluster field, a gate (gold taken), outputs
in their own file, variants with their own outputs files, and each other format the repository reads (CSV, Parquet,
OTLP traces, and the other tools' result files in ``tests/fixtures``). The test is skipped where the C extensions
were not built (nothing to compare)."""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalglass.engine.datasets.dataset import BATCH, PART_BYTES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[2] / "src" / "evalglass" / "examples"
GATE = {"metric": "right", "proposed_threshold": 0.5}


def _native_built() -> bool:
    done = subprocess.run(
        [sys.executable, "-c", "from evalglass._native import scan; print(scan is not None)"],
        env={**os.environ, "EVALGLASS_PURE": ""}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return done.stdout.strip() == "True"


def _write(folder: Path, config: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evalglass.yaml").write_text(yaml.safe_dump({"version": 1, **config}, sort_keys=False))
    if not (folder / "authority.yaml").exists():
        (folder / "authority.yaml").write_text("version: 1\n")


def _record(index: int) -> dict[str, Any]:
    """A long line (a recorded trajectory's size): its output holds what the kept copy takes from the text, and
    a few (each in a part of its own) what it must leave to orjson."""
    calls = [{"name": f"tool{step % 3}", "arguments": {"q": f"q{index}-{step}", "page": step}} for step in range(6)]
    output: dict[str, Any] = {
        "text": f"answer {index} " + "é日😀 " * 40,
        "calls": calls if index % 3 else calls[:-1],
        "n": [0, -1, 123456789012345678, True, None, {}, []],
    }
    if index in (130, 131, 132):
        output["score"] = [0.5, 1e-7, 3.0][index % 3]
    if index == 140:
        output["text"] += ' a "quoted" \\ path'
    return {"id": f"t{index}", "group": f"g{index % 5}", "expected": calls, "padding": "x" * 400, "out": output}


def _long_lines(
    count: int, *, newline: bytes = b"\n", bom: bool = False, bad: tuple[int, ...] = (), inexact: bool = False
) -> bytes:
    lines = []
    for index in range(count):
        if inexact and index in (70, 330, 331):  # what only the exact reader refuses: a repeated key, a big integer
            line = json.dumps(_record(index)).encode()
            lines.append(
                line.replace(b'"group"', b'"padding": 1, "group"')
                if index == 70
                else line.replace(b"123456789012345678", b"12345678901234567890123")
            )
        elif inexact and index == 500:
            lines.append(b'{"id": "deep", "out": ' + b"[" * 200 + b"]" * 200 + b"}")
        elif index in bad:  # a line cut short, or (odd ones) a blank line of white space
            lines.append(b" \t " if index % 2 else b'{"id": "broken%d", "out": ' % index)
        elif index == 200:  # white space orjson does not write, outside strings only
            lines.append(json.dumps(_record(index), indent=None, separators=(" , ", " :  ")).encode())
        elif index % 11 == 5:
            lines.append(json.dumps(_record(index), ensure_ascii=False, separators=(",\t ", ":\t")).encode())
        elif index == 420:
            record = _record(index)
            record["out"]["n"][1] = 0
            lines.append(json.dumps(record).encode().replace(b'"n": [0, 0', b'"n": [0, -0'))
        else:
            lines.append(json.dumps(_record(index), ensure_ascii=index == 141).encode())
    data = newline.join(lines)  # the last line without its newline
    return (b"\xef\xbb\xbf" if bom else b"") + data


LONG = {
    "dataset": {"name": "long", "path": "data.jsonl", "cluster_field": "group"},
    "task": {"type": "recorded", "field": "out"},
    "metrics": {
        "right": {"type": "tool_calls", "field": "calls", "reference": "expected", "mode": "any_order"},
        "f1": {"type": "tool_calls", "field": "calls", "reference": "expected", "measure": "f1"},
        "says": {"type": "contains", "field": "text", "value": "answer"},
    },
    "gates": {"right-calls": GATE},
}


def _long(folder: Path, **lines: Any) -> None:
    data = _long_lines(600, **lines)
    assert len(data) // 600 * BATCH > 2 * PART_BYTES, "each batch comes in parts"
    (folder / "data.jsonl").write_bytes(data)
    _write(folder, LONG)


def _part_edges() -> tuple[int, ...]:
    """Lines at (and around) the edges of the parts a batch of these lines is cut into."""
    return (0, 1, 63, 64, 65, 127, 128, 255, 256, 257, 599)


def _outputs_file(folder: Path) -> None:
    records = [json.loads(line) for line in _long_lines(600, bad=()).splitlines()]
    outputs = [{"id": record["id"], "out": record.pop("out")} for record in records]
    outputs[10], outputs[11] = outputs[11], outputs[10]  # out of step: joined by index
    (folder / "data.jsonl").write_bytes(b"\n".join(json.dumps(record).encode() for record in records) + b"\n")
    (folder / "outputs.jsonl").write_bytes(b"\r\n".join(json.dumps(output).encode() for output in outputs))
    config = json.loads(json.dumps(LONG))
    config["task"]["path"] = "outputs.jsonl"
    _write(folder, config)


def _variants(folder: Path) -> None:
    records = [json.loads(line) for line in _long_lines(300).splitlines()]
    for name, shift in (("first", 0), ("second", 1)):
        outputs = [
            {"id": record["id"], "out": records[(at + shift) % len(records)]["out"]}
            for at, record in enumerate(records)
        ]
        (folder / f"{name}.jsonl").write_bytes(b"".join(json.dumps(output).encode() + b"\n" for output in outputs))
    (folder / "data.jsonl").write_bytes(
        b"".join(json.dumps({k: v for k, v in record.items() if k != "out"}).encode() + b"\n" for record in records)
    )
    config = json.loads(json.dumps(LONG))
    config["task"]["path"] = "first.jsonl"
    config["variants"] = {"first": {}, "second": {"path": "second.jsonl"}}
    config["gates"] = {"right-calls": {**GATE, "variant": "first"}}
    _write(folder, config)


def _samples(folder: Path) -> None:
    """Long lines each holding three samples (one as JSON text, parsed by ``parse: json``), one line a sample short."""
    lines = []
    for index, line in enumerate(_long_lines(600).splitlines()):
        record = json.loads(line)
        output = record.pop("out")
        record["out"] = [output, json.dumps(output), output] if index != 77 else [output, output]
        lines.append(json.dumps(record, ensure_ascii=False).encode())
    (folder / "data.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    config = json.loads(json.dumps(LONG))
    config["task"].update(samples=True, epochs=3, parse="json")
    config["metrics"]["right"]["reducer"] = "min"
    _write(folder, config)


def _quickstart(folder: Path) -> None:
    shutil.copytree(EXAMPLES / "quickstart", folder, dirs_exist_ok=True)


SHORT = {
    "dataset": {"name": "short", "path": "data.csv"},
    "task": {"type": "recorded", "field": "output"},
    "metrics": {"right": {"type": "exact_match", "reference": "expected"}},
    "gates": {"right-calls": GATE},
}


def _csv(folder: Path) -> None:
    with (folder / "data.csv").open("w", newline="", encoding="utf-8-sig") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "expected", "output"])
        for index in range(700):
            writer.writerow([f"c{index}", f"answer {index}", f"answer {index}" if index % 3 else "x" * 900])
        writer.writerow(["short", "only two cells"])
    _write(folder, SHORT)


def _parquet(folder: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [
        {
            "id": f"p{i}",
            "expected": f"a{i}",
            "output": f"a{i}" if i % 4 else "y" * 900,
            "x": float("nan") if i == 3 else i / 7,
        }
        for i in range(700)
    ]
    pq.write_table(pa.Table.from_pylist(rows), folder / "data.parquet")
    _write(folder, {**SHORT, "dataset": {"name": "short", "path": "data.parquet"}})


def _otlp(folder: Path) -> None:
    otel = pytest.importorskip("tests.traces.otel")
    with otel.recording() as (tracer, finished):
        for index in range(300):
            otel.chat_span(
                tracer, f"Q{index}: " + "how long is the refund window? " * 20, "30 days" if index % 4 else "No idea."
            )
        otel.chat_span(tracer, None, None)
        spans = finished()
    folder.mkdir(parents=True, exist_ok=True)
    otel.write_json(spans, folder / "traces.jsonl")
    _write(
        folder,
        {
            "dataset": {"name": "prod", "path": "traces.jsonl", "format": "otlp"},
            "metrics": {"right": {"type": "contains", "field": "text", "value": "days"}},
            "gates": {"right-calls": GATE},
        },
    )


def _tool(fmt: str, files: list[Path], metrics: dict[str, Any]) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for file in files:
            shutil.copyfile(file, folder / file.name)
        _write(folder, {"dataset": {"name": "imported", "path": files[0].name, "format": fmt}, "metrics": metrics})

    return make


CASES: dict[str, Callable[[Path], None]] = {
    "quickstart": _quickstart,
    "long-lines": _long,
    "long-lines-bad-at-part-edges": lambda folder: _long(folder, bad=_part_edges()),
    "long-lines-inexact": lambda folder: _long(folder, inexact=True),
    "long-lines-bom-crlf": lambda folder: _long(folder, bom=True, newline=b"\r\n", bad=(64, 300)),
    "outputs-file": _outputs_file,
    "samples-parse-json": _samples,
    "variants": _variants,
    "csv": _csv,
    "parquet": _parquet,
    "otlp": _otlp,
    "inspect": _tool(
        "inspect", [FIXTURES / "inspect" / "capitals.eval"], {"match": {"type": "recorded_score", "scorer": "match"}}
    ),
    "lm-eval": _tool(
        "lm-eval",
        [
            next((FIXTURES / "lm-eval").glob("samples_capitals_gen_*.jsonl")),
            *(FIXTURES / "lm-eval").glob("results_*.json"),
        ],
        {"em": {"type": "recorded_score", "scorer": "exact_match"}},
    ),
    "promptfoo": _tool(
        "promptfoo",
        [FIXTURES / "promptfoo" / "capitals.json"],
        {"mine": {"type": "contains", "field": "text", "reference": "target"}},
    ),
    "openai-evals": _tool(
        "openai-evals",
        [FIXTURES / "openai-evals" / "capitals.jsonl"],
        {"accuracy": {"type": "recorded_score", "scorer": "match"}},
    ),
}

#: Scorecard keys that differ between any two runs of the same inputs.
_PER_RUN = {"run_id", "started_at", "finished_at", "created_at", "duration_seconds", "timings", "environment"}


def _without_run(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_run(item) for key, item in value.items() if key not in _PER_RUN}
    if isinstance(value, list):
        return [_without_run(item) for item in value]
    return value


def _evalglass(folder: Path, pure: bool, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m evalglass ARGS`` in a process of its own: the C extensions load (or not) as a user's would."""
    env = {**os.environ, "EVALGLASS_PURE": "1" if pure else ""}
    command = [sys.executable, "-m", "evalglass", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False)


def _run(folder: Path, pure: bool) -> dict[str, Any]:
    out = "pure" if pure else "native"
    done = _evalglass(folder, pure, "run", "--no-history", "--no-progress", "--out", out)
    assert done.returncode in (0, 1), done.stderr
    for verifying_pure in (pure, not pure):  # artifacts travel: verified where the C extensions are or are not
        verified = _evalglass(folder, verifying_pure, "verify", out)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    run = folder / out
    files = {str(path.relative_to(run)): path for path in sorted(run.rglob("*")) if path.is_file()}
    return {
        "code": done.returncode,
        "stderr": done.stderr.replace(str(run), "RUN"),
        # scores.jsonl (a variant's under variants/NAME/), the variants' outputs, checks, graded records
        "jsonl": {name: path.read_bytes() for name, path in files.items() if name.endswith(".jsonl")},
        "kept": {name: gzip.decompress(path.read_bytes()) for name, path in files.items() if name.endswith(".gz")},
        "cards": {
            name: _without_run(json.loads(path.read_bytes()))
            for name, path in files.items()
            if name.endswith("scorecard.json")
        },
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_c_path_and_the_pure_path_write_the_same_run(tmp_path: Path, case: str) -> None:
    if not _native_built():
        pytest.skip("the C extensions are not built here: nothing to compare")
    CASES[case](tmp_path)
    native, pure = _run(tmp_path, pure=False), _run(tmp_path, pure=True)
    assert any(name.endswith("scores.jsonl") for name in native["jsonl"]), "the run scored examples"
    for key in native:
        assert native[key] == pure[key], key
