"""The python lane's columnar path (a batch of plain lines from lane to writer with no object per example) must write
exactly what the per-example path writes: for any mix of what the function does per example (returns, returns
None, returns what is not JSON, raises, exits), malformed lines, samples and clusters, ``scores.jsonl`` and
``outputs.jsonl`` are byte-identical and the scorecards measure the same. The per-example path is the one a
cached lane takes (every call looked up and stored on its own); both runs go through ``evalglass.api.run``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.api import run

APP = textwrap.dedent(
    """
    def answer(example, sample):
        kind = example["kind"]
        if kind == "raise":
            raise ValueError(f"no answer for {example['n']}")
        if kind == "exit":
            raise SystemExit(3)
        if kind == "not_json":
            return {example["n"]}
        if kind == "none":
            return None
        if kind == "deep":  # JSON alone, too deep for its outputs.jsonl row: the row says so
            value = "deep"
            for _ in range(252):
                value = [value]
            return value
        if kind == "nested":
            return {"text": f"answer {example['n']}", "items": [sample, None, 1.5]}
        return f"answer {example['n']} {sample}"
    """
)
KINDS = ["value", "value", "value", "raise", "exit", "not_json", "none", "nested", "deep", "malformed"]


def _write(root: Path, kinds: list[str], epochs: int, clustered: bool, cache: bool) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.py").write_text(APP)
    dataset: dict[str, object] = {"name": "paths", "path": "data.jsonl"}
    if clustered:
        dataset["cluster_field"] = "group"
    config = {
        "dataset": dataset,
        "task": {"type": "python", "function": "app.py:answer", "epochs": epochs, "cache": cache},
        "metrics": {
            "exact": {"type": "exact_match", "reference": "expected"},
            "digits": {"type": "regex", "pattern": "\\\\d"},
        },
    }
    (root / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "authority.yaml").write_text("{}\n")
    lines = []
    for n, kind in enumerate(kinds):
        if kind == "malformed":
            lines.append("{not json")
            continue
        lines.append(json.dumps({"id": f"ex{n}", "n": n, "kind": kind, "group": n % 3, "expected": f"answer {n} 0"}))
    (root / "data.jsonl").write_text("\n".join(lines) + "\n")
    return root / "evalglass.yaml"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.sampled_from(KINDS), min_size=1, max_size=600),
    st.integers(1, 2),
    st.booleans(),
)
def test_columnar_and_per_example_paths_write_the_same_bytes(
    tmp_path_factory: object, kinds: list[str], epochs: int, clustered: bool
) -> None:
    root = tmp_path_factory.mktemp("paths")  # type: ignore[attr-defined]
    # One folder for both (tracebacks name the function's file), the cached run second (its cache starts empty)
    columnar = run(_write(root, kinds, epochs, clustered, cache=False), out=root / "columnar")
    general = run(_write(root, kinds, epochs, clustered, cache=True), out=root / "general")
    if "deep" in kinds:
        assert b'"code":"output_unserialisable"' in (columnar.folder / "outputs.jsonl").read_bytes()
    for name in ("scores.jsonl", "outputs.jsonl"):
        assert (columnar.folder / name).read_bytes() == (general.folder / name).read_bytes(), name
    assert columnar.metrics.keys() == general.metrics.keys() == {"exact", "digits"}
    for name, summary in columnar.metrics.items():
        assert summary.estimate == general.metrics[name].estimate, name
        assert summary.population == general.metrics[name].population, name
