"""`verify` scores a recorded run's deterministic metrics again from the outputs it kept (engine/jobs/rescore.py):
through the CLI, on real run folders, against forgeries made by the tool itself (a real run on forged inputs, its
fingerprints swapped for the honest run's and every hash recomputed), so each forged folder is consistent in every
check that does not re-derive the scores."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import cli_server
from tests.e2e.project import DEFAULT_ROWS, CliResult, Project, make_project
from tests.e2e.test_forgery import reseal_scores
from tests.e2e.test_gold_fields_cli import JUDGE

TWO_METRICS = {
    "exact": {"type": "exact_match", "reference": "expected"},
    "short": {"type": "word_count", "max": 3},
}


def project_with(tmp_path: Path, **config: Any) -> Project:
    project = make_project(tmp_path, metrics=config.pop("metrics", TWO_METRICS), **config)
    return project


def verify(project: Project, *args: str) -> dict[str, Any]:
    result = project.cli("verify", *args, "--format", "json")
    assert result.code in (0, 1), result.err
    report: dict[str, Any] = result.json()
    report["code"] = result.code
    return report


def verify_without_dataset(project: Project, *args: str) -> dict[str, Any]:
    """``verify`` where the dataset the run read is not at hand (moved away meanwhile). An explicit ``--dataset``
    that is not there is refused (exit 2), not taken as "not at hand"."""
    dataset = project.evals / "data.jsonl"
    dataset.rename(project.root / "moved-away.jsonl")
    try:
        return verify(project, *args)
    finally:
        (project.root / "moved-away.jsonl").rename(dataset)


def rescored_line(report: dict[str, Any]) -> str:
    return next(line for line in report["anchors"] if line.startswith("re-scored"))


def forged_from(project: Project, honest: Path, rows: list[dict[str, Any]], name: str) -> Path:
    """What a forger does: run the tool on forged rows, then make the folder claim the honest run's dataset (its file
    and gold fingerprints in every artifact that names them, then every hash the record and digests keep
    recomputed). The dataset file at hand is left honest."""
    honest_rows = (project.evals / "data.jsonl").read_text()
    project.write_rows(rows)
    assert project.run("--out", name).code in (0, 1)
    project.evals.joinpath("data.jsonl").write_text(honest_rows)
    folder = project.root / name
    swaps = {}
    forged_dataset = json.loads((folder / "runrecord.json").read_text())["dataset"]
    honest_dataset = json.loads((honest / "runrecord.json").read_text())["dataset"]
    for key in ("fingerprint", "gold_fingerprint"):
        if forged_dataset.get(key) and forged_dataset[key] != honest_dataset.get(key):
            swaps[forged_dataset[key]] = honest_dataset[key]
    for path in folder.iterdir():
        if path.is_file() and path.name != "digests.json":
            text = path.read_text()
            for old, new in swaps.items():
                text = text.replace(old, new).replace(
                    old.removeprefix("sha256:")[:12], new.removeprefix("sha256:")[:12]
                )
            path.write_text(text)
    reseal_scores(folder)
    return folder


def test_an_honest_recorded_run_verifies_and_says_what_it_re_scored(tmp_path: Path) -> None:
    project = project_with(tmp_path)
    assert project.run("--out", "out").code == 0
    report = verify(project, "out")
    assert report["code"] == 0 and report["ok"], report["findings"]
    line = rescored_line(report)
    assert line.startswith("re-scored 2 of 2 metrics (exact, short) from the kept outputs")
    assert "every score as recorded" in line


def test_a_raised_score_recomputed_consistently_fails_verify_naming_the_example(tmp_path: Path) -> None:
    project = project_with(tmp_path)
    assert project.run("--out", "out").code == 0
    # The forger's run: ex-4's reference made its (unchanged) output, so the tool itself scores it 1.0 and derives
    # every aggregate, the report and the record from that; then the folder claims the honest dataset.
    rows = [{**row, "expected": "yes"} if row["id"] == "ex-4" else row for row in DEFAULT_ROWS]
    forged = forged_from(project, tmp_path / "out", rows, "forged")
    recorded = [json.loads(line) for line in (forged / "scores.jsonl").read_text().splitlines()]
    assert recorded[0]["scores"]["exact"][3] == 1.0  # a real raised score
    # Consistent: verify passes it wherever it cannot re-score (the dataset not at hand).
    elsewhere = verify_without_dataset(project, "forged")
    assert elsewhere["code"] == 0, elsewhere["findings"]
    assert "re-scored: none (the dataset" in rescored_line(elsewhere)
    report = verify(project, "forged")
    assert report["code"] == 1
    first = report["findings"][0]
    assert first["field"].startswith("scores.jsonl: example 'ex-4', metric 'exact' (re-scored from the kept outputs")
    assert (first["recorded"], first["derived"]) == (1.0, 0.0)
    # And the scorecard, decided from the re-derived scores, is not the recorded one.
    assert any(item["field"].startswith("scorecard.metrics") for item in report["findings"])
    text = project.cli("verify", "forged")
    assert text.code == 1
    found = "scores.jsonl: example 'ex-4', metric 'exact' (re-scored from the kept outputs blobs/"
    assert found in text.out and "): recorded 1.0, derived 0.0" in text.out, text.out


def test_a_forged_output_is_caught_by_the_dataset_the_run_claims_not_by_re_scoring(tmp_path: Path) -> None:
    """Outputs and scores rewritten together agree with each other: re-scoring alone cannot see it. What catches it is
    the kept output held to the dataset file the record says was read (outputs recorded in the dataset)."""
    project = project_with(tmp_path)
    assert project.run("--out", "out").code == 0
    rows = [{**row, "output": "no"} if row["id"] == "ex-4" else row for row in DEFAULT_ROWS]
    forged = forged_from(project, tmp_path / "out", rows, "forged")
    report = verify(project, "forged")
    assert report["code"] == 1
    fields = [item["field"] for item in report["findings"]]
    assert len(fields) == 1 and fields[0].startswith("blobs/") and fields[0].endswith("example 'ex-4'"), fields
    assert report["findings"][0]["recorded"] == '"no"'
    assert "every score as recorded" in rescored_line(report)  # re-scoring the forged outputs agrees with them
    assert forged.is_dir()


def test_a_forged_output_claiming_a_later_dataset_is_said_and_strict_fails_it(tmp_path: Path) -> None:
    """A forger who leaves the record naming the forged file: the records (gold) are the run's, so the scores are
    re-scored from the kept outputs and agree; the outputs are not bound by anything at hand (a signature binds
    them), which verify says, and --strict refuses."""
    project = project_with(tmp_path)
    assert project.run("--out", "out").code == 0
    honest = (project.evals / "data.jsonl").read_text()
    project.write_rows([{**row, "output": "no"} if row["id"] == "ex-4" else row for row in DEFAULT_ROWS])
    assert project.run("--out", "forged").code == 0
    (project.evals / "data.jsonl").write_text(honest)
    report = verify(project, "forged")
    assert report["code"] == 0
    assert "its gold fingerprint is the run's; its outputs are not the ones the run read" in rescored_line(report)
    assert any(line.startswith("dataset: NOT the one the run read") for line in report["anchors"])
    assert verify(project, "forged", "--strict")["code"] == 1


def test_the_task_path_layout_re_scores_from_the_kept_outputs(tmp_path: Path) -> None:
    project = project_with(tmp_path, task={"type": "recorded", "path": "outputs.jsonl", "field": "answer"})
    project.write_rows([{key: value for key, value in row.items() if key != "output"} for row in DEFAULT_ROWS])
    outputs = "".join(json.dumps({"id": row["id"], "answer": row["output"]}) + "\n" for row in DEFAULT_ROWS)
    (project.evals / "outputs.jsonl").write_text(outputs)
    assert project.run("--out", "out").code == 0
    (project.evals / "outputs.jsonl").unlink()  # not needed: the kept outputs are scored
    report = verify(project, "out")
    assert report["code"] == 0, report["findings"]
    assert "re-scored 2 of 2 metrics" in rescored_line(report)


def test_a_judge_is_checked_for_consistency_only_and_said_so(tmp_path: Path) -> None:
    """A recorded run with a judge: its scores cannot be re-derived without asking the model again. The judge's
    endpoint is never reached: verify asks no model (nothing listens on the port)."""
    (tmp_path / "evals").mkdir()
    project = Project(tmp_path)
    project.write_rows()
    project.write_ledger({"version": 1})
    (project.evals / "rubric.md").write_text("Is the answer right? Answer 1 to 5.\n")
    config = {
        "version": 1,
        "dataset": {"name": "suite", "path": "data.jsonl"},
        "task": {"type": "recorded", "field": "output"},
        "metrics": {**TWO_METRICS, "helpful": JUDGE},
        "gates": {"accuracy": {"metric": "exact", "proposed_threshold": 0.7}},
    }
    project.write_config(config)
    result = project.run("--out", "out")
    assert result.code in (0, 1), result.err
    report = verify(project, "out")
    assert report["code"] == 0, report["findings"]
    line = rescored_line(report)
    assert line.startswith("re-scored 2 of 3 metrics (exact, short)")
    assert "checked for consistency only: llm_judge 'helpful' (a model's judgement, not asked again)" in line


def test_a_python_metric_is_re_scored_only_when_asked_in_its_worker(tmp_path: Path) -> None:
    """Host code runs only under --rescore-host, and then in a worker process of its own, as in `run`."""
    project = project_with(
        tmp_path,
        metrics={**TWO_METRICS, "echo": {"type": "python", "function": "host.py:score"}},
    )
    # 1.0 only where the deciding process's engine is not loaded: in a worker process, as `run` scores it. Scored in
    # verify's own process it would be 0.0 and differ from the recorded score.
    (project.evals / "host.py").write_text(
        "import sys\n\ndef score(example):\n"
        "    return 0.0 if any(name.startswith('evalglass.engine') for name in sys.modules) else 1.0\n"
    )
    assert project.run("--out", "out").code == 0
    plain = verify(project, "out")
    assert plain["code"] == 0 and "python 'echo' (host code, run again only with --rescore-host)" in rescored_line(
        plain
    )
    asked = verify(project, "out", "--rescore-host")
    assert asked["code"] == 0, asked["findings"]
    assert rescored_line(asked).startswith("re-scored 3 of 3 metrics (exact, short, echo)")
    assert "every score as recorded" in rescored_line(asked)
    recorded = json.loads((tmp_path / "out" / "scores.jsonl").read_text().splitlines()[0])["scores"]["echo"]
    assert recorded == [1.0] * len(DEFAULT_ROWS)  # the run scored it in a worker too


def _sha(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


ROW = st.fixed_dictionaries(
    {
        "expected": st.sampled_from(["yes", "no", "Yes", "maybe so"]),
        "output": st.one_of(st.sampled_from(["yes", "no", "a b c d", ""]), st.none(), st.integers(0, 3)),
    }
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(ROW, min_size=1, max_size=30))
def test_re_scoring_an_untouched_folder_always_agrees(tmp_path_factory: Any, rows: list[dict[str, Any]]) -> None:
    root = tmp_path_factory.mktemp("untouched")
    project = project_with(root)
    project.write_rows([{"id": f"ex-{index}", **row} for index, row in enumerate(rows)])
    assert project.run("--out", "out").code in (0, 1)
    before = _sha(root / "out" / "scores.jsonl")
    report = verify(project, "out")
    assert report["code"] == 0, report["findings"]
    assert "every score as recorded" in rescored_line(report)
    assert _sha(root / "out" / "scores.jsonl") == before


MANY_METRICS = {
    "exact": {"type": "exact_match", "reference": "expected"},
    "has": {"type": "contains", "reference": "expected", "case_sensitive": False},
    "iso": {"type": "regex", "pattern": "\\d{4}", "flags": ["ignorecase"]},
    "valid": {"type": "json_valid"},
    "shape": {"type": "json_schema", "schema_file": "shape.json"},
    "bounded": {"type": "numeric_bounds", "field": "score", "min": 0, "max": 1},
    "label": {"type": "enum", "field": "label", "values": ["a", "b"]},
    "overlap": {"type": "set_overlap", "field": "tags", "reference": "tags"},
    "present": {"type": "field_present", "fields": ["label"]},
    "brief": {"type": "word_count", "max": 4},
}
ANSWER = st.one_of(
    st.sampled_from(["yes", "no", "in 2024", '{"score": 0.5, "label": "a", "tags": ["x"]}', "{not json", "a b c d e"]),
    st.fixed_dictionaries(
        {
            "score": st.one_of(st.floats(-1, 2, allow_nan=False), st.none(), st.text(max_size=3)),
            "label": st.sampled_from(["a", "b", "c", 1]),
            "tags": st.lists(st.sampled_from(["x", "y", "X"]), max_size=3),
        }
    ),
    st.none(),
    st.integers(-2, 2),
)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    answers=st.lists(st.lists(ANSWER, min_size=1, max_size=3), min_size=1, max_size=25),
    parse=st.booleans(),
    samples=st.booleans(),
    broken=st.lists(st.integers(0, 30), max_size=3),
    clustered=st.booleans(),
)
def test_re_scoring_any_untouched_folder_agrees_whatever_the_metrics_and_answers(
    tmp_path_factory: Any,
    answers: list[list[Any]],
    parse: bool,
    samples: bool,
    broken: list[int],
    clustered: bool,
) -> None:
    """No honest run is refused: every deterministic builtin, answers of every shape (text, JSON text, objects, null,
    numbers), `parse: json`, samples, malformed lines, missing outputs and clusters; the folder is re-scored and every
    score agrees."""
    root = tmp_path_factory.mktemp("any")
    task: dict[str, Any] = {"type": "recorded", "field": "output", **({"parse": "json"} if parse else {})}
    if samples:
        task["samples"] = True
    dataset: dict[str, Any] = {
        "name": "suite",
        "path": "data.jsonl",
        **({"cluster_field": "group"} if clustered else {}),
    }
    project = make_project(root, metrics=MANY_METRICS, task=task, dataset=dataset)
    (project.evals / "shape.json").write_text(json.dumps({"type": "object", "required": ["label"]}))
    rows: list[dict[str, Any]] = []
    for index, sampled in enumerate(answers):
        row: dict[str, Any] = {"id": f"ex-{index}", "expected": "yes", "tags": ["x"], "group": f"g{index % 3}"}
        if index % 7 != 6:  # every seventh example has no recorded output
            row["output"] = sampled if samples else sampled[0]
        rows.append(row)
    lines = [json.dumps(row) for row in rows]
    for position in broken:
        lines.insert(min(position, len(lines)), "{broken")
    (project.evals / "data.jsonl").write_text("\n".join(lines) + "\n")
    result = project.run("--out", "out")
    assert result.code in (0, 1), result.err
    report = verify(project, "out")
    assert report["code"] == 0, report["findings"]
    assert rescored_line(report).startswith(f"re-scored {len(MANY_METRICS)} of {len(MANY_METRICS)} metrics")
    assert "every score as recorded" in rescored_line(report)


def lane_project(tmp_path: Path) -> Project:
    """A live run: a python lane answering "yes" to everything (so ex-4, expecting "no", fails), two samples each,
    one example whose lane call fails."""
    project = project_with(tmp_path, task={"type": "python", "function": "lane.py:answer", "epochs": 2})
    (project.evals / "lane.py").write_text(
        "def answer(example):\n    if example['id'] == 'ex-8':\n        raise ValueError('boom')\n    return 'yes'\n"
    )
    project.write_rows([{key: value for key, value in row.items() if key != "output"} for row in DEFAULT_ROWS])
    return project


def test_a_live_lane_run_is_re_scored_from_its_answers_and_a_raised_score_fails(tmp_path: Path) -> None:
    project = lane_project(tmp_path)
    assert project.run("--out", "out").code == 0
    honest = verify(project, "out")
    assert honest["code"] == 0, honest["findings"]
    assert rescored_line(honest).startswith(
        "re-scored 2 of 2 metrics (exact, short) from the lane answers in outputs.jsonl"
    )
    rows = [{key: value for key, value in row.items() if key != "output"} for row in DEFAULT_ROWS]
    rows[3]["expected"] = "yes"  # the forger's run scores ex-4 1.0 with the same answers
    forged = forged_from(project, tmp_path / "out", rows, "forged")
    assert (forged / "outputs.jsonl").read_bytes() == (tmp_path / "out" / "outputs.jsonl").read_bytes()
    report = verify(project, "forged")
    assert report["code"] == 1
    first = report["findings"][0]
    assert first["field"].startswith("scores.jsonl: example 'ex-4', metric 'exact'"), report["findings"]
    assert (first["recorded"], first["derived"]) == ([1.0, 1.0], [0.0, 0.0])


def test_a_live_lane_answer_rewritten_with_its_scores_is_not_seen_by_re_scoring(tmp_path: Path) -> None:
    """The limit, stated in docs/config.md: outputs.jsonl rewritten together with the scores agree with each other;
    re-scoring says every score is as recorded; only the signature binds the answers to the lane that gave them."""
    project = lane_project(tmp_path)
    assert project.run("--out", "out").code == 0
    (project.evals / "lane.py").write_text("def answer(example):\n    return example['expected']\n")
    assert project.run("--out", "forged").code == 0  # every answer the gold one, scored so
    report = verify(project, "forged")
    assert report["code"] == 0
    assert "every score as recorded" in rescored_line(report)


def on_a_slower_machine(project: Project, *args: str) -> CliResult:
    """The CLI on a machine where matching takes a thousand times longer: the regex metric's CPU bound, which a
    match on a slow machine reaches and on a fast one does not, made a thousandth (what the machine changes)."""
    code = (
        "import sys; import evalglass.metrics.text as t; t.REGEX_TIMEOUT = 0.001; from evalglass.cli import main; "
        "sys.argv = ['evalglass', *sys.argv[1:]]; main()"
    )
    done = cli_server.run(list(args), cwd=project.root, env={**os.environ, "COLUMNS": "200"}, timeout=120, code=code)
    return CliResult(done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize("slow", ["run", "verify"])
def test_a_regex_bound_reached_on_one_machine_only_is_said_not_a_difference(tmp_path: Path, slow: str) -> None:
    """An honest run whose regex match reached its CPU bound (regex_timeout) where verify's did not, or the reverse:
    the outcome is the machine's, not the output's, so that score is not re-derived (said), not a finding; the
    metric is decided from its recorded scores, every other score of it compared."""
    metrics = {**TWO_METRICS, "rx": {"type": "regex", "pattern": "^(a|aa)+$"}}
    project = project_with(tmp_path, metrics=metrics)
    rows = [dict(row) for row in DEFAULT_ROWS]
    rows[0]["output"] = "a" * 30 + "!"  # about a million backtracking steps: far within 1 s, far beyond 1 ms
    project.write_rows(rows)
    run = on_a_slower_machine(project, "run", "--out", "out") if slow == "run" else project.run("--out", "out")
    assert run.code in (0, 1), run.err
    first = json.loads((tmp_path / "out" / "scores.jsonl").read_text().splitlines()[0])
    assert first["ids"][0] == "ex-1"
    recorded = first["scores"]["rx"][0]
    assert (isinstance(recorded, dict) and recorded["status"] == "error") is (slow == "run"), recorded
    done = on_a_slower_machine(project, "verify", "out", "--format", "json") if slow == "verify" else None
    report = done.json() if done is not None else verify(project, "out")
    assert report["findings"] == [] and report["ok"], report["findings"]
    line = rescored_line(report)
    assert "every score as recorded (1 of 'rx' not re-derived: a bound of time or depth" in line, line


def test_a_parsed_answer_nested_near_the_recursion_limit_re_scores_as_it_scored(tmp_path: Path) -> None:
    """``parse: json`` on answers nested hundreds deep: where Python's recursion limit stopped the parser depended on
    the stack it was called on (``run``'s and ``verify``'s differ), so the same answer was JSON in one and not in
    the other; a fixed bound (core/outputparse.MAX_PARSE_DEPTH) decides it the same in both."""
    depths = [1, 128, 129, 500, *range(900, 1030, 5)]
    project = project_with(
        tmp_path,
        metrics={"valid": {"type": "json_valid"}, "exact": {"type": "exact_match", "reference": "expected"}},
        task={"type": "python", "function": "lane.py:answer", "parse": "json"},
    )
    (project.evals / "lane.py").write_text(
        "def answer(example):\n    return '[' * example['depth'] + ']' * example['depth']\n"
    )
    project.write_rows([{"id": f"d{depth}", "depth": depth, "expected": "x"} for depth in depths])
    assert project.run("--out", "out").code in (0, 1)
    valid = {}
    for raw in (tmp_path / "out" / "scores.jsonl").read_text().splitlines():
        block = json.loads(raw)
        valid.update(zip(block["ids"], block["scores"]["valid"], strict=True))
    assert (valid["d1"], valid["d128"]) == (1.0, 1.0)
    assert valid["d129"]["value"] == 0.0 and "nested deeper than 128" in valid["d129"]["diagnostics"][0]["message"]
    report = verify(project, "out")
    assert report["code"] == 0 and report["findings"] == [], report["findings"]


VARIANT_ROWS = [{**row, "out_b": "no" if row["id"] in ("ex-4", "ex-5") else "yes"} for row in DEFAULT_ROWS]


def variants_project(tmp_path: Path, live: bool) -> Project:
    """A run with two variants: recorded (each variant's output a field of the dataset, nothing kept) or a live
    python lane (each variant's answers in its ``outputs.jsonl``)."""
    if live:
        project = project_with(
            tmp_path,
            task={"type": "python", "function": "lane.py:yes"},
            variants={"a": {}, "b": {"function": "lane.py:copy_b"}},
            gates={"accuracy": {"metric": "exact", "variant": "b", "proposed_threshold": 0.7}},
        )
        (project.evals / "lane.py").write_text(
            "def yes(example):\n    return 'yes'\n\ndef copy_b(example):\n    return example['out_b']\n"
        )
    else:
        project = project_with(
            tmp_path,
            variants={"a": {}, "b": {"field": "out_b"}},
            gates={"accuracy": {"metric": "exact", "variant": "b", "proposed_threshold": 0.7}},
        )
    project.write_rows(VARIANT_ROWS)
    return project


@pytest.mark.parametrize("live", [False, True], ids=["recorded", "lane"])
def test_a_variant_run_is_re_scored_per_variant_and_a_raised_score_fails(tmp_path: Path, live: bool) -> None:
    """Each variant is scored again (a recorded one from the dataset file the run read, a lane's from its answers),
    score by score against its own scores file: a raised score in variant b's scores, every aggregate, the report and
    the record derived from it consistently, fails verify naming the variant's file and the example. (Variant runs
    used to be checked for consistency only, so this forgery verified.)"""
    project = variants_project(tmp_path, live)
    assert project.run("--out", "out").code in (0, 1)
    honest = verify(project, "out")
    assert honest["code"] == 0, honest["findings"]
    line = rescored_line(honest)
    source = "the lane answers in variants/b/outputs.jsonl" if live else "the outputs in"
    assert line.startswith("re-scored per variant: variant 'a': 2 of 2 metrics (exact, short) from"), line
    assert f"variant 'b': 2 of 2 metrics (exact, short) from {source}" in line, line
    assert line.count("every score as recorded") == 2, line
    # The forger's run: ex-5's reference made variant b's answer ("no"), so the tool scores b's ex-5 1.0 (and a's
    # 0.0) and every artifact adds up; then the folder claims the honest dataset (the file at hand stays honest).
    rows = [{**row, "expected": "no"} if row["id"] == "ex-5" else row for row in VARIANT_ROWS]
    forged = forged_from(project, tmp_path / "out", rows, "forged")
    assert (forged / "variants" / "b" / "scores.jsonl").read_bytes() != (
        tmp_path / "out" / "variants" / "b" / "scores.jsonl"
    ).read_bytes()
    elsewhere = verify_without_dataset(project, "forged")
    assert elsewhere["code"] == 0, elsewhere["findings"]  # consistent: only re-scoring sees it
    report = verify(project, "forged")
    assert report["code"] == 1, rescored_line(report)
    fields = [item["field"] for item in report["findings"]]
    assert fields[0].startswith("variants/a/scores.jsonl: example 'ex-5', metric 'exact'"), fields
    assert any(field.startswith("variants/b/scores.jsonl: example 'ex-5', metric 'exact'") for field in fields)
    assert any(field.startswith("scorecard.") for field in fields), fields


def own_outputs_project(tmp_path: Path) -> Project:
    """A run with two recorded variants: a's outputs in the dataset, b's in their own file (``task.path``)."""
    project = project_with(
        tmp_path,
        variants={"a": {}, "b": {"path": "outputs_b.jsonl"}},
        gates={"accuracy": {"metric": "exact", "variant": "b", "proposed_threshold": 0.7}},
    )
    rows = [{"id": row["id"], "output": row["out_b"]} for row in VARIANT_ROWS]
    (project.evals / "outputs_b.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return project


def test_a_variant_with_its_own_outputs_file_is_re_scored_only_from_the_file_the_run_read(tmp_path: Path) -> None:
    """A recorded variant reading its own outputs file: the run record binds that file's hash (a run with variants
    keeps no copy), so verify re-scores it from that file when it is the one the run read, naming it; an edited file
    is said (consistency only for that variant), never a false "scores differ"; a forged scores file of the variant,
    the file untouched, is found."""
    project = own_outputs_project(tmp_path)
    assert project.run("--out", "out").code == 0
    own = project.evals / "outputs_b.jsonl"
    named = "evals/outputs_b.jsonl"  # as verify names it, relative to where it runs
    record = json.loads((tmp_path / "out" / "runrecord.json").read_text())
    assert record["variant_outputs"] == {"b": "sha256:" + hashlib.sha256(own.read_bytes()).hexdigest()}
    # (a) Untouched: re-scored from that file, named.
    honest = verify(project, "out")
    assert honest["code"] == 0, honest["findings"]
    line = rescored_line(honest)
    said = f"variant 'b': 2 of 2 metrics (exact, short) from the outputs in {named}, the file the run read"
    assert said in line, line
    assert line.count("every score as recorded") == 2, line
    # (b) Edited after the run (ex-4's answer made the reference): said, variant b not re-scored, nothing differs.
    original = own.read_text()
    own.write_text(original.replace('"id": "ex-4", "output": "no"', '"id": "ex-4", "output": "yes"'))
    assert own.read_text() != original
    edited = verify(project, "out")
    assert edited["code"] == 0, edited["findings"]
    line = rescored_line(edited)
    assert f"variant 'b': none (its outputs file {named} changed since the run: its sha256 is" in line, line
    assert line.count("every score as recorded") == 1, line  # variant a's
    # A record from before runs bound the file (its field removed, resealed): said so, not re-scored.
    older = project.root / "older"
    shutil.copytree(tmp_path / "out", older)
    data = json.loads((older / "runrecord.json").read_text())
    del data["variant_outputs"]
    (older / "runrecord.json").write_text(json.dumps(data, indent=2) + "\n")
    reseal_scores(older)
    own.write_text(original)
    old = verify(project, "older")
    assert "variant 'b': none (the run record binds no hash of its outputs file" in rescored_line(old), old
    assert not any("differ" in item["field"] for item in old["findings"]), old["findings"]
    # (c) A forged variant b scores file (ex-5 scored 1.0 by a run on a reference made b's answer), the file untouched.
    rows = [{**row, "expected": "no"} if row["id"] == "ex-5" else row for row in VARIANT_ROWS]
    forged = forged_from(project, tmp_path / "out", rows, "forged")
    assert (forged / "variants" / "b" / "scores.jsonl").read_bytes() != (
        tmp_path / "out" / "variants" / "b" / "scores.jsonl"
    ).read_bytes()
    assert own.read_text() == original
    report = verify(project, "forged")
    assert report["code"] == 1, rescored_line(report)
    fields = [item["field"] for item in report["findings"]]
    found = f"variants/b/scores.jsonl: example 'ex-5', metric 'exact' (re-scored from the outputs in {named}"
    assert any(field.startswith(found) for field in fields), fields


def test_a_variant_outputs_file_written_just_after_verify_hashed_it_is_said_not_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's state is taken before it is hashed: a write between the hash (of the bytes the run read) and the
    read that re-scores it moves its ctime and is said, never scored as if it were the file the run read (a state
    taken after the hash missed such a write, and the rewritten answer was reported as a differing score)."""
    from evalglass.engine.jobs.verify import verify_run
    from evalglass.engine.runs import digests

    project = own_outputs_project(tmp_path)
    assert project.run("--out", "out").code == 0
    own = project.evals / "outputs_b.jsonl"
    original = own.read_text()
    hashed = digests.file_sha256

    def hash_then_rewrite(path: Path) -> str:
        found = hashed(path)
        if Path(path).name == own.name:
            own.write_text(original.replace('"id": "ex-4", "output": "no"', '"id": "ex-4", "output": "yes"'))
        return found

    monkeypatch.setattr(digests, "file_sha256", hash_then_rewrite)
    monkeypatch.chdir(project.root)
    report = verify_run(project.root / "out")
    line = next(line for line in report.anchors if line.startswith("re-scored"))
    assert "variant 'b': none (its outputs file" in line and "changed while verify read it" in line, line
    assert not any("differ" in str(item) for item in report.findings), report.findings
