"""The API key never reaches the run folder, the cache, the calibration record or the output."""

from __future__ import annotations

from pathlib import Path

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import SECRET, LiveProject, evalglass


def _every_file(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()]


def test_the_key_is_sent_but_never_stored(project: LiveProject, server: FakeOpenAI) -> None:
    rows = [
        {"id": "ok", "question": "grade=4 fine"},
        {"id": "quoted", "question": "[[behaviour:401]] the server quotes the key back"},
        {"id": "fails", "question": "[[behaviour:500]] q"},
    ]
    project.write(rows, metrics={"echoed": {"type": "contains", "reference": "question"}, "j": project.judge()})
    (project.root / "labels.jsonl").write_text(
        '{"output": "x grade=4", "label": 4}\n{"output": "y grade=2", "label": 3}\n'
    )
    run = project.run()
    assert run.code == 0, run.err
    calibrated = evalglass("calibrate", "j", "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    progress = evalglass("run", cwd=project.root)  # text output with the plain progress lines on stderr
    assert progress.code == 0
    assert "evalglass: scored 3 examples in " in progress.err  # not a terminal: plain lines, no bar

    assert any(request.headers.get("authorization") == f"Bearer {SECRET}" for request in server.requests)
    quoted = next(row for row in project.scores() if row["id"] == "quoted")
    assert quoted["scores"]["echoed"]["diagnostics"][0]["code"] == "call_client_error"
    files = _every_file(project.root)
    assert any(path.name == ".evalglass-cache.sqlite" for path in files)
    assert any(path.name == "scores.jsonl" for path in files)
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
    for output in (run.out, run.err, calibrated.out, calibrated.err, progress.out, progress.err):
        assert SECRET not in output
