"""No piece of a secret reaches any byte of a run folder, stdout or stderr, whatever path it takes.

Two secrets live in the environment of the real CLI: one under a name that says so (``MY_SERVICE_TOKEN``), one under
a name that does not (``ACME_UPLINK``, declared in the config's ``secrets:``). Each path that can carry text into an
artifact or a message is made to carry one of them, placed so that a truncation cuts through it: a check's output
tail, a per-example check's record, a command lane's stderr, a python lane's exception (one-line message and
traceback tail), a host metric's exception, a chat endpoint's non-JSON error body and non-JSON answer, a judge's
unreadable answer, host code writing to stderr, and a setup error naming a path. Then every 8-character substring of
either secret is searched for in every file of the run folder and in everything printed.
"""

from __future__ import annotations

import gzip
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import CliResult, evalglass

TOKEN = "Qm7Vr2XkLpTz4Nw8YbHc3Jd6Fs1Gu5AeRoWq9Zt0Ei3Kv"  # 46 characters, no well-known token shape
DECLARED = "uplink-Hy6Pq0Lw3Ns8Dm1Rf5Tb7Vc2Xg4Zj9Ka8Me6Qo"
ENV = {"MY_SERVICE_TOKEN": TOKEN, "ACME_UPLINK": DECLARED}
PIECES = sorted({secret[i : i + 8] for secret in (TOKEN, DECLARED) for i in range(len(secret) - 7)})


def assert_no_piece(where: str, data: bytes | str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    found = [piece for piece in PIECES if piece.encode() in raw]
    assert not found, f"{where} holds part of a secret: {found[:3]}"


def assert_clean(folder: Path, *results: CliResult) -> None:
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert files, folder
    for path in files:
        data = path.read_bytes()
        # The outputs a recorded run keeps are compressed: searched as the text a reader sees.
        assert_no_piece(str(path), gzip.decompress(data) if path.suffix == ".gz" else data)
    for result in results:
        assert_no_piece("stdout", result.out)
        assert_no_piece("stderr", result.err)


def write(root: Path, config: dict[str, Any], rows: list[dict[str, Any]], files: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    config = {"dataset": {"name": "secrets", "path": "data.jsonl"}, "secrets": ["ACME_UPLINK"], **config}
    (root / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (root / "authority.yaml").write_text("{}\n")
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))


def run(root: Path, *args: str) -> tuple[CliResult, Path]:
    result = evalglass("run", "--out", "out", *args, cwd=root, env=ENV)
    return result, root / "out"


LANE = """
    import json, os, sys
    example = json.load(sys.stdin)
    token = os.environ["MY_SERVICE_TOKEN"]
    if example["kind"] == "stderr":
        sys.stderr.write(token + "z" * 1990)   # the detail keeps the last 2000 characters: the cut is in the token
        sys.exit(3)
    print("the answer is " + token)           # the output itself: outputs.jsonl
"""

CHECK = """
    import os, sys
    # The record keeps the last 1024 bytes: the cut falls inside the secret.
    sys.stdout.write(os.environ["ACME_UPLINK"] + "x" * 1000 + "\\n")
    sys.stderr.write(os.environ["MY_SERVICE_TOKEN"] + "y" * 1000 + "\\n")
    sys.exit(1)
"""

METRIC = """
    import os

    def leaky(output):
        raise ValueError("p" * 280 + os.environ["ACME_UPLINK"])   # the one-line message is cut at 300
"""


def test_commands_checks_and_host_metrics_leave_no_piece_of_a_secret(tmp_path: Path) -> None:
    root = tmp_path / "evals"
    config = {
        "task": {"type": "command", "argv": [sys.executable, "lane.py"], "timeout": 30},
        "metrics": {
            "has": {"type": "contains", "reference": "kind"},
            "checked": {"type": "check", "check": "echo_example"},
            "leaky": {"type": "python", "function": "metric.py:leaky"},
        },
        "checks": {
            "echo_example": {"command": ["{python}", "check.py"], "output_cap_bytes": 1024},
            "echo_repo": {"command": ["{python}", "check.py"], "output_cap_bytes": 1024, "target": "."},
        },
    }
    rows = [{"id": "out", "kind": "stdout"}, {"id": "err", "kind": "stderr"}]
    write(root, config, rows, {"lane.py": LANE, "check.py": CHECK, "metric.py": METRIC})
    text, folder = run(root)
    assert text.code == 0, text.err
    as_json, _ = run(root, "--format", "json")
    checked = evalglass("check", "echo_repo", cwd=root, env=ENV)
    checked_json = evalglass("check", "echo_repo", "--format", "json", cwd=root, env=ENV)
    assert checked.code == 1 and checked_json.code == 1, checked.err

    # Each path was taken (so a clean folder means redaction, not silence) ...
    outputs = [json.loads(line) for line in (folder / "outputs.jsonl").read_text().splitlines()]
    assert outputs[0]["samples"][0]["output"] == "the answer is <redacted>"
    assert outputs[1]["samples"][0]["error"]["code"] == "task_exit_nonzero"
    err_scores = next(row for row in _scores(folder) if row["id"] == "err")
    # Cut first, the detail would have kept the token's last 10 characters; redacted first, nothing needs cutting.
    assert err_scores["scores"]["has"]["diagnostics"][0]["detail"] == "<redacted>" + "z" * 1990
    records = [json.loads(line) for line in (folder / "checks.jsonl").read_text().splitlines()]
    assert records[0]["stdout_tail"].startswith("<redacted>x")
    out_scores = next(row for row in _scores(folder) if row["id"] == "out")
    assert out_scores["scores"]["leaky"]["diagnostics"][0]["message"].endswith("<redacted>")
    record = json.loads((folder / "runrecord.json").read_text())
    repo_check = record["check_results"]["echo_repo"]
    assert repo_check["stderr_tail"].startswith("<redacted>y") and repo_check["outcome"] == "FAIL"
    # ... the check records name only what the check declares ...
    assert repo_check["env"] == records[0]["env"] == {"EVALGLASS_TARGET": "{target}"}
    assert "the answer is <redacted>" in (folder / "outputs.jsonl").read_text()
    # ... and nothing anywhere holds 8 characters of either secret.
    assert_clean(folder, text, as_json, checked, checked_json)


PYTHON_LANE = """
    import os, sys

    def answer(example):
        token = os.environ["MY_SERVICE_TOKEN"]
        if example["kind"] == "message":
            raise ValueError("w" * 280 + token)          # the one-line message is cut at 300 characters
        if example["kind"] == "traceback":
            raise RuntimeError(token + "y" * 1990)       # the traceback's tail is cut at 2000 characters
        sys.stderr.write("host code says " + os.environ["ACME_UPLINK"] + "\\n")
        return {"said": token}
"""


def test_python_lanes_leave_no_piece_of_a_secret(tmp_path: Path) -> None:
    root = tmp_path / "evals"
    config = {
        "task": {"type": "python", "function": "app.py:answer", "timeout": 30},
        "metrics": {"has": {"type": "contains", "reference": "kind"}},
    }
    rows = [{"id": "m", "kind": "message"}, {"id": "t", "kind": "traceback"}, {"id": "s", "kind": "stderr"}]
    write(root, config, rows, {"app.py": PYTHON_LANE})
    result, folder = run(root, "--format", "json", "--no-progress")
    assert result.code == 0, result.err
    scores = {row["id"]: row["scores"]["has"] for row in _scores(folder)}
    assert scores["m"]["diagnostics"][0]["code"] == "task_raised"
    assert scores["m"]["diagnostics"][0]["message"].endswith("<redacted>")
    assert "<redacted>" in scores["t"]["diagnostics"][0]["detail"]
    assert "host code says <redacted>" in result.err
    assert_clean(folder, result)


@pytest.fixture
def leaky_server() -> Iterator[FakeOpenAI]:
    def reply(body: dict[str, Any]) -> str:
        last = str(body["messages"][-1]["content"])
        if body.get("model") == "judge":
            return "j" * 3990 + DECLARED  # no JSON: the raw answer is kept, cut at 4000 characters
        if "error page" in last:
            return "g" * 190 + TOKEN  # a non-JSON error body, cut at 200 characters
        return "not json " + "n" * 1980 + TOKEN  # a non-JSON answer where JSON was asked: kept whole, redacted

    with FakeOpenAI(reply=reply) as server:
        yield server


def test_chat_lanes_and_judges_leave_no_piece_of_a_secret(tmp_path: Path, leaky_server: FakeOpenAI) -> None:
    root = tmp_path / "evals"
    endpoint = {"base_url": leaky_server.base_url, "api_key_env": None, "timeout": 10}
    retry = {"max_attempts": 2, "initial_delay": 0.01, "max_delay": 0.01}
    config = {
        "task": {
            "type": "chat",
            "model": "app",
            "prompt": "{{ question }}",
            "output": "json",
            "retry": retry,
            **endpoint,
        },
        "metrics": {
            "has": {"type": "contains", "reference": "question"},
            "judged": {
                "type": "llm_judge",
                "rubric": "rubric.md",
                "scale": {"min": 1, "max": 5},
                "model": "judge",
                "retry": retry,
                **endpoint,
            },
        },
    }
    rows = [{"id": "page", "question": "[[behaviour:text:502]] error page"}, {"id": "answer", "question": "q"}]
    write(root, config, rows, {"rubric.md": "Grade it.\n"})
    config_recorded = {**config, "task": {"type": "recorded"}}
    result, folder = run(root, "--no-progress")
    assert result.code == 0, result.err
    scores = {row["id"]: row["scores"]["has"] for row in _scores(folder)}
    assert scores["page"]["diagnostics"][0]["code"] == "call_server_error"
    assert "<redacted>" in scores["page"]["diagnostics"][0]["message"]
    # a non-JSON answer is a wrong answer, scored the worst value with its text (redacted) beside it
    assert scores["answer"]["diagnostics"][0]["code"] == "output_not_json"
    assert scores["answer"]["status"] == "scored" and scores["answer"]["value"] == 0.0
    assert_clean(folder, result)

    # The judge's unreadable answer, on recorded outputs.
    judged_root = tmp_path / "judged"
    write(judged_root, config_recorded, [{"id": "a", "question": "q", "output": "o"}], {"rubric.md": "Grade it.\n"})
    judged, judged_folder = run(judged_root, "--no-progress")
    assert judged.code == 0, judged.err
    judge_score = _scores(judged_folder)[0]["scores"]["judged"]
    assert judge_score["diagnostics"][0]["code"] == "judge_unparseable"
    assert judge_score["diagnostics"][0]["detail"] == "j" * 3990 + "<redacted>"
    assert_clean(judged_folder, judged)


def test_recorded_outputs_kept_by_the_run_leave_no_piece_of_a_secret(tmp_path: Path) -> None:
    """An application that echoed a secret into its recorded answer: the run keeps its outputs (blobs/), redacted."""
    rows = [{"id": "a", "output": f"the key is {TOKEN}"}, {"id": "b", "output": {"nested": [DECLARED]}}]
    config = {"task": {"type": "recorded"}, "metrics": {"words": {"type": "word_count", "max": 100}}}
    write(tmp_path, config, rows, {})
    result, folder = run(tmp_path)
    assert result.code == 0, result.err
    assert list((folder / "blobs").glob("*.jsonl.gz"))
    assert_clean(folder, result)


def test_a_setup_error_never_prints_a_secret(tmp_path: Path) -> None:
    root = tmp_path / "evals"
    write(root, {"metrics": {"has": {"type": "contains", "reference": "q"}}}, [], {})
    config = yaml.safe_load((root / "evalglass.yaml").read_text())
    config["dataset"]["path"] = f"data-{TOKEN}.jsonl"
    (root / "evalglass.yaml").write_text(yaml.safe_dump(config))
    result = evalglass("run", cwd=root, env=ENV)
    assert result.code == 2
    assert "<redacted>" in result.err
    assert_no_piece("stderr", result.err)
    assert_no_piece("stdout", result.out)


def _scores(folder: Path) -> list[dict[str, Any]]:
    from evalglass.engine.runs.artifacts import score_rows

    return list(score_rows(folder / "scores.jsonl"))
