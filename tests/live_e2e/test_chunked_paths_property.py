"""The python lane's columnar path (a batch of plain lines from lane to writer with no object per example) must write
exactly what the per-example path writes: for any mix of what the function does per example (returns, returns
None, returns what is not JSON, raises, exits, answers JSON text or text cut off under ``parse: json``), malformed
lines, samples and clusters, ``scores.jsonl`` and
``outputs.jsonl`` are byte-identical and the scorecards measure the same, whether the columnar path takes each
batch of 256 lines alone or gathers consecutive batches into one hand-off (what it does once calls prove cheap).
The per-example path is the one a cached lane takes (every call looked up and stored on its own); both runs go
through ``evalglass.api.run``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.api import run
from evalglass.lanes.python_lane import PythonLane

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
        if kind == "json_text":  # a wrong answer under parse: json when cut off, or without the field read
            text = '{"text": "answer %d %d", "n": %d}' % (example["n"], sample, example["n"])
            return text[: example["n"] % len(text)] if example["n"] % 3 else text
        return f"answer {example['n']} {sample}"
    """
)
# Each run forks this process (evalglass.run's isolation): one that has imported the pipeline forks it ready to run.
pytestmark = pytest.mark.usefixtures("preloaded")

KINDS = ["value", "value", "value", "raise", "exit", "not_json", "none", "nested", "deep", "malformed", "json_text"]


def _write(root: Path, kinds: list[str], epochs: int, clustered: bool, cache: bool, parse: bool = False) -> Path:
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
            "text": {"type": "exact_match", "field": "text", "reference": "expected"},
        },
    }
    if parse:
        config["task"]["parse"] = "json"  # type: ignore[index]
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


def _same_runs(
    root: Path, kinds: list[str], epochs: int, clustered: bool, span: int | None, parse: bool = False
) -> None:
    # One folder for both (tracebacks name the function's file), the cached run second (its cache starts empty)
    with pytest.MonkeyPatch.context() as patch:
        if span is not None:  # calls as cheap as to go this many to a hand-off: batches are gathered from the start
            patch.setattr(PythonLane, "column_size", lambda self: span)
        columnar = run(_write(root, kinds, epochs, clustered, cache=False, parse=parse), out=root / "columnar")
    general = run(_write(root, kinds, epochs, clustered, cache=True, parse=parse), out=root / "general")
    if "deep" in kinds:
        assert b'"code":"output_unserialisable"' in (columnar.folder / "outputs.jsonl").read_bytes()
    for name in ("scores.jsonl", "outputs.jsonl"):
        assert (columnar.folder / name).read_bytes() == (general.folder / name).read_bytes(), name
    assert columnar.metrics.keys() == general.metrics.keys() == {"exact", "digits", "text"}
    for name, summary in columnar.metrics.items():
        assert summary.estimate == general.metrics[name].estimate, name
        assert summary.population == general.metrics[name].population, name


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(KINDS), min_size=1, max_size=600), st.integers(1, 2), st.booleans(), st.booleans())
def test_columnar_and_per_example_paths_write_the_same_bytes(
    tmp_path_factory: object, kinds: list[str], epochs: int, clustered: bool, parse: bool
) -> None:
    folder = tmp_path_factory.mktemp("paths")  # type: ignore[attr-defined]
    _same_runs(folder, kinds, epochs, clustered, None, parse)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.sampled_from([kind for kind in KINDS if kind != "malformed"]), min_size=257, max_size=1300),
    st.lists(st.integers(0, 1300), max_size=2),
    st.integers(1, 2),
    st.booleans(),
    st.sampled_from([300, 600, 1000, 100_000]),
)
def test_batches_gathered_into_one_hand_off_write_what_each_alone_writes(
    tmp_path_factory: object, kinds: list[str], malformed: list[int], epochs: int, clustered: bool, span: int
) -> None:
    """Cheap calls go to the lane thread in runs of several batches of 256 lines; a malformed line makes its batch
    go alone (between runs). Still one ``scores.jsonl`` block per batch, the same bytes as example by example."""
    for position in malformed:
        if position < len(kinds):
            kinds[position] = "malformed"
    _same_runs(tmp_path_factory.mktemp("spans"), kinds, epochs, clustered, span)  # type: ignore[attr-defined]
