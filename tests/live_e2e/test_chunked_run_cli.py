"""A python lane's live run takes the chunked path (examples handed to the lane a chunk at a time, metrics run over
each chunk's rows at once) unless its calls are cached. Both paths must write the same bytes: the same scores in
the same order, the same outputs and failures, whatever the function does with each example."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from .conftest import evalglass

APP = textwrap.dedent(
    """
    def answer(example, sample):
        n = example["n"]
        kind = n % 7
        if kind == 1:
            raise ValueError(f"no answer for {n}")
        if kind == 2:
            return {n}  # not JSON: the system's wrong answer, measured
        if kind == 3:
            raise SystemExit(3)
        if kind == 4:
            return None
        return f"answer {n} {sample}"
    """
)


def _project(root: Path, *, cache: bool, epochs: int) -> Path:
    root.mkdir(exist_ok=True)
    (root / "app.py").write_text(APP)
    config = {
        "dataset": {"name": "chunks", "path": "data.jsonl", "cluster_field": "group"},
        "task": {"type": "python", "function": "app.py:answer", "epochs": epochs, "cache": cache},
        "metrics": {
            "exact": {"type": "exact_match", "reference": "expected"},
            "digits": {"type": "regex", "pattern": "\\\\d"},
        },
    }
    (root / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "authority.yaml").write_text("{}\n")
    lines = []
    for n in range(700):
        if n == 300:
            lines.append("{not json")
        lines.append(json.dumps({"id": f"ex{n}", "n": n, "group": f"g{n % 40}", "expected": f"answer {n} 0"}))
    (root / "data.jsonl").write_text("\n".join(lines) + "\n")
    return root


@pytest.mark.parametrize("epochs", [1, 2])
def test_chunked_and_one_by_one_runs_write_the_same_bytes(tmp_path: Path, epochs: int) -> None:
    results = {}
    for out, cache in (("chunked", False), ("general", True)):  # a cached lane goes call by call
        root = _project(tmp_path / "evals", cache=cache, epochs=epochs)
        done = evalglass("run", "--format", "json", "--no-progress", "--no-history", "--out", out, cwd=root)
        assert done.code in (0, 1), done.err
        results[out] = json.loads(done.out)
        verified = evalglass("verify", out, cwd=root)  # each re-derives from its own scores
        assert verified.code == 0, verified.out + verified.err
    chunked, general = root / "chunked", root / "general"
    for name in ("scores.jsonl", "outputs.jsonl"):
        assert (chunked / name).read_bytes() == (general / name).read_bytes(), name
    assert [m["estimate"] for m in results["chunked"]["metrics"]] == [
        m["estimate"] for m in results["general"]["metrics"]
    ]
    population = results["chunked"]["metrics"][0]["population"]
    # the malformed line; raise and SystemExit for 100 examples each (None and a set are answers: measured)
    assert population["excluded_total"] == 1 + 2 * 100
    assert population["included"] == 500
