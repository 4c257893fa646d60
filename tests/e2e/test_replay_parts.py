"""A replay of long recorded trajectories is read, scored and freed in parts of each 256-line batch
(``DatasetReader.parts``), and written as ever: one block of ``scores.jsonl`` and of the kept outputs per batch,
byte for byte what the pure path (``EVALGLASS_PURE=1``) writes, and ``verify`` re-derives it from the batches."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from evalglass.engine.datasets.dataset import BATCH, PART_BYTES

CONFIG = """\
version: 1
dataset: {name: trajectories, path: trajectories.jsonl, cluster_field: group}
task: {type: recorded, field: trajectory}
metrics:
  right_calls: {type: tool_calls, reference: expected_calls, mode: any_order}
  call_f1: {type: tool_calls, reference: expected_calls, measure: f1}
  turns: {type: steps, count: model_turns}
"""


def _trajectory(index: int) -> dict[str, Any]:
    calls = [{"name": f"tool{step % 3}", "arguments": {"q": f"q{index}-{step}", "page": step}} for step in range(10)]
    made = [dict(call) for call in calls]
    if index % 4 == 1:
        made[3] = {"name": "tool0", "arguments": {"q": "wrong", "page": None}}  # a null among the arguments
    elif index % 4 == 2:
        made.pop()
    messages: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": f"task {index}"}]}]
    recorded = []
    for step, call in enumerate(made):
        result = {"ok": True, "items": [f"result {step}.{k} " + "x" * 200 for k in range(3)]}
        messages.append({"role": "assistant", "parts": [{"type": "tool_call", "id": f"c{step}", **call}]})
        messages.append(
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{step}", "response": result}]}
        )
        recorded.append({"id": f"c{step}", **call, "result": result})
    messages.append({"role": "assistant", "parts": [{"type": "text", "content": "done"}]})
    trajectory = {"messages": messages, "tool_calls": recorded, "finish": "stop", "steps": len(made) + 1}
    return {"id": f"t{index}", "group": f"g{index % 5}", "expected_calls": calls, "trajectory": trajectory}


def _lines(count: int) -> bytes:
    lines = []
    for index in range(count):
        if index == 300:
            lines.append(b'{"id": "broken", "trajectory": ')  # a malformed line inside a part
        elif index == 301:
            lines.append(json.dumps({"id": "no-output", "expected_calls": []}).encode())  # no recorded output
        else:
            lines.append(json.dumps(_trajectory(index)).encode())
    return b"\n".join(lines)  # the last line without its newline


def _run(folder: Path, pure: bool) -> dict[str, Any]:
    env = {**os.environ, "EVALGLASS_PURE": "1" if pure else ""}
    out = "pure" if pure else "native"
    done = subprocess.run(
        [sys.executable, "-m", "evalglass", "run", "--no-history", "--no-progress", "--out", out],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    verified = subprocess.run(
        [sys.executable, "-m", "evalglass", "verify", out],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    run = folder / out
    card = json.loads((run / "scorecard.json").read_text())
    (kept,) = sorted((run / "blobs").glob("*.jsonl.gz"))
    return {
        "scores": (run / "scores.jsonl").read_bytes(),
        "kept": kept.name,
        "kept_lines": gzip.decompress(kept.read_bytes()).splitlines(),
        "metrics": card["metrics"],
        "dataset": card["dataset"],
    }


def test_a_replay_read_in_parts_writes_one_block_per_batch_as_the_pure_path_does(tmp_path: Path) -> None:
    data = _lines(600)
    assert len(data) // 600 * BATCH > PART_BYTES, "each batch comes in parts"
    (tmp_path / "trajectories.jsonl").write_bytes(data)
    (tmp_path / "evalglass.yaml").write_text(CONFIG)
    (tmp_path / "authority.yaml").write_text("")
    native, pure = _run(tmp_path, pure=False), _run(tmp_path, pure=True)
    assert native == pure
    blocks = [json.loads(line) for line in native["scores"].splitlines()]
    assert [len(block["ids"]) for block in blocks] == [256, 256, 88]
    assert [len(json.loads(line)["ids"]) for line in native["kept_lines"]] == [256, 256, 88]
    assert blocks[1]["ids"][44:46] == ["line:301", "no-output"]
