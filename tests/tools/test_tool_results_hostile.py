"""Other tools' files as a sloppy producer or someone after an unearned green writes them: every case is measured,
an error with a reason, a malformed sample counted, or one line naming the file (exit 2) — never a sample silently
left out, a silent 0.0, a traceback or a gold made stale by a new run of the same samples."""

from __future__ import annotations

import copy
import functools
import json
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.example import Example
from evalglass.core.score import Score, Status
from evalglass.engine.datasets.dataset import BadLine
from evalglass.errors import SetupError
from evalglass.metrics.base import BuildContext
from evalglass.metrics.recorded import format_labels
from evalglass.metrics.registry import parse_metric_spec
from tests.e2e.project import run_cli
from tests.tools.test_tool_results import (
    FIXTURES,
    INSPECT,
    LM_EVAL,
    OPENAI_EVALS,
    PROMPTFOO,
    examples,
    inspect_member,
    metric,
    read,
    run,
)
from tests.traces.test_traces_cli import approve

RESULTS = next((FIXTURES / "lm-eval").glob("results_*.json"))
RECORDED = {"m": {"type": "recorded_score", "scorer": "match"}}


def inspect_members() -> dict[str, Any]:
    with zipfile.ZipFile(INSPECT) as archive:
        names = archive.namelist()
    return {name: inspect_member(name) for name in names if name.endswith(".json")}


def write_inspect(path: Path, members: dict[str, Any]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in members.items():
            archive.writestr(name, json.dumps(value))
    return path


def inspect_log(tmp_path: Path, change: Callable[[dict[str, Any]], object]) -> Path:
    members = inspect_members()
    change(members)
    return write_inspect(tmp_path / "log.eval", members)


def diagnostics(found: dict[str, Any]) -> dict[str, int]:
    return {d["code"]: d["count"] for d in found["population"]["top_diagnostics"]}


# -- a sample the tool declared but the file does not hold is not silently left out ----------------------------------


def test_inspect_samples_missing_from_the_log_are_errors_not_left_out(tmp_path: Path) -> None:
    """A log cut short (a cancelled run, members deleted) must not raise the rate by leaving its samples out."""

    def drop(members: dict[str, Any]) -> None:
        for name in ("samples/cap-03_epoch_1.json", "samples/cap-03_epoch_2.json", "samples/cap-09_epoch_2.json"):
            del members[name]
        members["header.json"]["status"] = "cancelled"

    result = run(tmp_path, inspect_log(tmp_path, drop), "inspect", RECORDED)
    assert result.code == 0, result.err
    found = metric(result.json(), "m")
    assert found["population"]["expected"] == 12  # every declared sample is an example
    # cap-07 (failed in inspect), cap-03 (absent) and cap-09 (an epoch absent: its mean is not known)
    assert found["population"]["excluded_by_status"] == {"error": 3}
    assert diagnostics(found) == {"tool_sample_failed": 3}
    examples_ = {e.id: e for e in examples("inspect", tmp_path / "evals" / "log.eval")}
    absent = examples_["cap-03"].fields["output"]
    assert [o["epoch"] for o in absent] == [1, 2]
    assert "holds no result for this sample" in absent[0]["error"] and "cancelled" in absent[0]["error"]
    assert [o.get("error") is not None for o in examples_["cap-09"].fields["output"]] == [False, True]


def test_promptfoo_results_missing_from_the_file_are_errors_not_left_out(tmp_path: Path) -> None:
    document = json.loads(PROMPTFOO.read_text())
    rows = document["results"]["results"]
    document["results"]["results"] = [row for row in rows if row["testIdx"] not in (4, 11)]  # test 2 ep 1, 5 ep 2
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(document))
    result = run(tmp_path, path, "promptfoo", {"t": {"type": "recorded_score", "scorer": "names_city"}})
    assert result.code == 0, result.err
    found = metric(result.json(), "t")
    assert found["population"]["expected"] == 6
    assert diagnostics(found) == {"tool_sample_failed": 2}


def test_promptfoo_results_cut_at_the_end_are_errors_not_left_out(tmp_path: Path) -> None:
    """Only promptfoo's own counts (``results.stats``) tell that the last tests are gone."""
    document = json.loads(PROMPTFOO.read_text())
    document["results"]["results"] = [row for row in document["results"]["results"] if row["testIdx"] < 8]
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(document))
    result = run(tmp_path, path, "promptfoo", {"t": {"type": "recorded_score", "scorer": "names_city"}})
    assert result.code == 0, result.err
    found = metric(result.json(), "t")
    assert found["population"]["expected"] == 6 and found["population"]["excluded_by_status"] == {"error": 2}
    assert "promptfoo counted 12 test results (results.stats) and the file holds 8" in json.dumps(found)


def test_lm_eval_documents_missing_from_the_samples_file_are_errors_not_left_out(tmp_path: Path) -> None:
    lines = [line for line in LM_EVAL.read_text().splitlines() if line.strip()]
    kept = [line for line in lines if json.loads(line)["doc_id"] not in (0, 9)]
    cut = tmp_path / LM_EVAL.name
    cut.write_text("\n".join(kept) + "\n")
    result = run(tmp_path, [cut, RESULTS], "lm-eval", {"em": {"type": "recorded_score", "scorer": "exact_match"}})
    assert result.code == 0, result.err
    found = metric(result.json(), "em")
    assert found["population"]["expected"] == 10  # lm-eval's n-samples: 10 documents
    assert found["population"]["excluded_by_status"] == {"error": 2}
    assert diagnostics(found) == {"tool_sample_failed": 2}


# -- one id, one example -----------------------------------------------------------------------------------------


def test_a_sample_id_in_two_places_of_an_inspect_log_is_refused(tmp_path: Path) -> None:
    """cap-02's second epoch claims to be cap-05: two examples named cap-05 would count cap-05 twice."""

    def rename(members: dict[str, Any]) -> None:
        members["samples/cap-02_epoch_2.json"]["id"] = "cap-05"

    result = run(tmp_path, inspect_log(tmp_path, rename), "inspect", RECORDED)
    assert result.code == 2, result.out
    (line,) = result.err.strip().splitlines()
    assert "sample id 'cap-05' is in two places (samples/cap-02_epoch_2.json and samples/cap-05_epoch_1.json)" in line
    assert "log.eval" in line


# -- a new run of the tool on the same samples keeps the gold ------------------------------------------------------


def test_a_new_run_of_the_tool_keeps_the_gold(tmp_path: Path) -> None:
    """What the tool's run was (its eval id, version, model, status) is not gold: the ids, inputs and targets are."""
    gates = {"gates": {"right": {"metric": "mine"}}}
    metrics = {"mine": {"type": "contains", "field": "text", "reference": "target"}}
    assert run(tmp_path, PROMPTFOO, "promptfoo", metrics, **gates).code == 0

    def gold() -> str:
        return str(run_cli("view", "--format", "json", cwd=tmp_path).json()["dataset"]["gold_fingerprint"])

    first = gold()
    document = json.loads(PROMPTFOO.read_text())
    document["evalId"] = "eval-of-the-next-run"
    document["metadata"]["promptfooVersion"] = "0.121.21"
    for row in document["results"]["results"]:
        row["response"]["output"] = ""  # no answer: text is still captured (empty), the gold stands
    (tmp_path / "evals" / PROMPTFOO.name).write_text(json.dumps(document))
    assert run_cli("run", "--no-history", cwd=tmp_path).code == 0
    assert gold() == first
    document["results"]["results"][0]["vars"]["city"] = "Lyon"  # an edited input is a new gold
    (tmp_path / "evals" / PROMPTFOO.name).write_text(json.dumps(document))
    assert run_cli("run", "--no-history", cwd=tmp_path).code == 0
    assert gold() != first


# -- a file of the wrong shape is one line, never a traceback --------------------------------------------------------


def _inspect_header(change: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], object]:
    return lambda members: change(members["header.json"])


def _inspect_sample(change: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], object]:
    return lambda members: change(members["samples/cap-02_epoch_1.json"])


@pytest.mark.parametrize(
    "change",
    [
        _inspect_header(lambda header: header.__setitem__("eval", ["not", "an", "object"])),
        _inspect_header(lambda header: header["eval"].__setitem__("dataset", [1])),
        _inspect_header(lambda header: header["eval"].__setitem__("config", "epochs")),
    ],
    ids=["eval-list", "dataset-list", "config-text"],
)
def test_an_inspect_header_of_the_wrong_shape_is_one_line(tmp_path: Path, change: Any) -> None:
    result = run(tmp_path, inspect_log(tmp_path, change), "inspect", RECORDED)
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert "internal error" not in line and "log.eval" in line and "header.json" in line


@pytest.mark.parametrize(
    "change",
    [
        _inspect_sample(lambda sample: sample.__setitem__("epoch", "x")),
        _inspect_sample(lambda sample: sample.__setitem__("epoch", {"n": 1})),
        _inspect_sample(lambda sample: sample.__setitem__("scores", [1])),
        _inspect_sample(lambda sample: sample.__setitem__("output", {"completion": "x", "choices": 3})),
    ],
    ids=["epoch-text", "epoch-object", "scores-list", "output-odd"],
)
def test_an_inspect_sample_of_the_wrong_shape_is_a_malformed_sample(tmp_path: Path, change: Any) -> None:
    result = run(tmp_path, inspect_log(tmp_path, change), "inspect", RECORDED)
    assert result.code == 0, result.err
    found = metric(result.json(), "m")
    assert found["population"]["expected"] == 12 or diagnostics(found).get("malformed_sample") == 1
    assert "internal error" not in result.err


@pytest.mark.parametrize(
    "change",
    [
        lambda rows: rows[0].__setitem__("promptIdx", [0]),
        lambda rows: rows[0]["provider"].__setitem__("id", {"name": "echo"}),
    ],
    ids=["prompt-index-list", "provider-id-object"],
)
def test_a_promptfoo_file_of_the_wrong_shape_is_one_line(tmp_path: Path, change: Any) -> None:
    document = json.loads(PROMPTFOO.read_text())
    change(document["results"]["results"])
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(document))
    result = run(tmp_path, path, "promptfoo", {"t": {"type": "recorded_score", "scorer": "promptfoo"}})
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert "internal error" not in line and "odd.json" in line


def test_an_openai_evals_event_type_of_the_wrong_shape_is_one_line(tmp_path: Path) -> None:
    lines = OPENAI_EVALS.read_text().splitlines()
    event = json.loads(lines[2])
    event["type"] = ["match"]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join([*lines[:2], json.dumps(event), *lines[3:]]) + "\n")
    result = run(tmp_path, path, "openai-evals", RECORDED)
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert "internal error" not in line and "odd.jsonl" in line and "line 3" in line


# -- the answer is the model's, not a grader's -------------------------------------------------------------------


def test_an_openai_evals_grader_sampling_does_not_replace_the_answer(tmp_path: Path) -> None:
    """Model-graded evals record the grader's call as a second ``sampling`` event of the same sample."""
    lines = [json.loads(line) for line in OPENAI_EVALS.read_text().splitlines()]
    sample = lines[2]["sample_id"]
    answer = {"prompt": "What is the capital of France?", "sampled": ["Paris"]}
    grader = {"prompt": "Is the answer right? Answer Y or N.", "sampled": ["Y"]}
    events = [
        {**copy.deepcopy(lines[2]), "event_id": 90 + n, "type": "sampling", "data": data}
        for n, data in enumerate((answer, grader))
    ]
    path = tmp_path / "graded.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [*lines, *events]) + "\n")
    found = next(e for e in read("openai-evals", path) if isinstance(e, Example) and e.id == sample).fields
    assert found["input"] == answer["prompt"] and found["output"][0]["text"] == "Paris"


# -- a tool's failure to score is never a wrong answer, also inside its overall result -------------------------------


def test_promptfoos_overall_result_is_not_known_when_an_assertion_could_not_score(tmp_path: Path) -> None:
    """promptfoo counts an assertion whose own code threw as failed, and so lowers the test's overall score: that
    overall score is not a measurement of the answer (test 3, Peru: its `short` assertion threw)."""
    result = run(tmp_path, PROMPTFOO, "promptfoo", {"t": {"type": "recorded_score", "scorer": "promptfoo"}})
    assert result.code == 0, result.err
    found = metric(result.json(), "t")
    assert found["population"]["excluded_by_status"] == {"error": 1}
    (diagnostic,) = found["population"]["top_diagnostics"]
    assert diagnostic["code"] == "recorded_score_error" and "'short'" in diagnostic["example"]
    rows = [row for row in json.loads(PROMPTFOO.read_text())["results"]["results"] if row["testIdx"] not in (6, 7)]
    assert found["estimate"]["point"] == pytest.approx(sum(row["score"] for row in rows) / len(rows))


def test_a_score_python_wrote_as_nan_is_an_error_of_that_score_not_of_the_sample(tmp_path: Path) -> None:
    """lm-eval writes its samples with Python's json, which writes NaN: the sample is read, its score is an error."""
    lines = [json.loads(line) for line in LM_EVAL.read_text().splitlines() if line.strip()]
    lines[0]["exact_match"] = float("nan")
    odd = tmp_path / LM_EVAL.name
    odd.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    metrics = {
        "em": {"type": "recorded_score", "scorer": "exact_match"},
        "said": {"type": "contains", "field": "text", "reference": "target"},
    }
    result = run(tmp_path, [odd, RESULTS], "lm-eval", metrics)
    assert result.code == 0, result.err
    card = result.json()
    assert card["dataset"]["malformed_lines"] == 0
    em = metric(card, "em")
    assert (
        diagnostics(em) == {"recorded_score_malformed": 1}
        and "is number nan," in em["population"]["top_diagnostics"][0]["example"]
    )
    assert metric(card, "said")["population"]["included"] == 10


@settings(max_examples=40, deadline=None)
@given(
    removed=st.sets(st.integers(0, 11), max_size=11),
    crashed=st.sets(st.integers(0, 11)),
)
def test_a_sample_the_tool_did_not_score_never_becomes_a_number(removed: set[int], crashed: set[int]) -> None:
    """Whatever results a promptfoo file lost and whichever assertions' own code threw: every test and repetition
    promptfoo ran is read, and the test's result is its number exactly when promptfoo scored it."""
    document = json.loads(PROMPTFOO.read_text())
    rows = {row["testIdx"]: row for row in document["results"]["results"]}
    crashed = crashed | {6, 7}  # test 3's `short` assertion threw in the real run
    for index in crashed:
        component = rows[index]["gradingResult"]["componentResults"][0]
        component.update({"pass": False, "score": 0, "reason": "Custom function threw error: boom"})
    document["results"]["results"] = [row for index, row in rows.items() if index not in removed]
    recorded = parse_metric_spec({"type": "recorded_score", "scorer": "promptfoo"}).build(BuildContext(Path(".")))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "out.json"
        path.write_text(json.dumps(document))
        found = examples("promptfoo", path)
    seen = set()
    for example in found:
        for output in example.fields["output"]:
            index = int(example.id) * 2 + output["epoch"] - 1
            seen.add(index)
            score = recorded(Example(id=example.id, line=1, fields=example.fields, output=output, sample=0))
            if index in removed or index in crashed:
                assert isinstance(score, Score) and score.status is Status.ERROR and score.value is None
            else:
                assert score == rows[index]["score"]
    assert seen == set(range(12))


def test_two_openai_evals_runs_appended_to_one_log_are_refused(tmp_path: Path) -> None:
    """oaieval appends to its --record_path: a second run's events would mix into the first run's samples."""
    text = OPENAI_EVALS.read_text()
    path = tmp_path / "twice.jsonl"
    path.write_text(text + text)
    result = run(tmp_path, path, "openai-evals", RECORDED)
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    first = len([line for line in text.splitlines()]) + 1
    assert f"a second run (its spec line at line {first})" in line and "twice.jsonl" in line


def test_an_inspect_log_written_without_its_samples_is_refused_in_one_line(tmp_path: Path) -> None:
    def without_samples(members: dict[str, Any]) -> None:
        for name in [name for name in members if name.startswith("samples/")]:
            del members[name]
        members["header.json"]["eval"]["config"]["log_samples"] = False

    result = run(tmp_path, inspect_log(tmp_path, without_samples), "inspect", RECORDED)
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert "written without its samples (log_samples" in line and "log.eval" in line


with zipfile.ZipFile(INSPECT) as _archive:
    MEMBERS = sorted(name for name in _archive.namelist() if name.startswith("samples/"))


@functools.cache
def cached_members() -> dict[str, Any]:
    """The fixture's members, decoded once (the tests that change them take copies)."""
    return inspect_members()


@settings(max_examples=25, deadline=None)
@given(removed=st.sets(st.sampled_from(MEMBERS), max_size=len(MEMBERS) - 1))
def test_every_sample_an_inspect_log_declares_is_read_and_only_its_own_are_measured(removed: set[str]) -> None:
    """Whichever members a log lost: every declared sample and epoch is read, and the ones lost are failures."""
    members = {name: value for name, value in cached_members().items() if name not in removed}
    recorded = parse_metric_spec(
        {"type": "recorded_score", "scorer": "match", "values": format_labels("inspect")}
    ).build(BuildContext(Path(".")))
    with tempfile.TemporaryDirectory() as folder:
        found = examples("inspect", write_inspect(Path(folder) / "log.eval", members))
    assert [example.id for example in found] == [f"cap-{n:02d}" for n in range(1, 13)]
    for example in found:
        assert [output["epoch"] for output in example.fields["output"]] == [1, 2]
        for output in example.fields["output"]:
            lost = f"samples/{example.id}_epoch_{output['epoch']}.json" in removed
            score = recorded(Example(id=example.id, line=1, fields=example.fields, output=output, sample=0))
            if lost or example.id == "cap-07":  # cap-07 failed in inspect
                assert isinstance(score, Score) and score.status is Status.ERROR
            else:
                assert type(score) is float


def test_pruning_the_wrong_answers_from_an_inspect_log_does_not_turn_an_approved_gate_green(tmp_path: Path) -> None:
    """The headline case: a complete run passes an approved gate; the same log with the samples inspect scored
    wrong deleted (a pull request can commit it) must not pass it at a higher rate."""

    def complete(members: dict[str, Any]) -> None:
        for epoch in (1, 2):  # cap-07 did not fail this time: every sample is scored
            sample = members[f"samples/cap-07_epoch_{epoch}.json"]
            sample["error"] = None
            sample["scores"] = {"match": {"value": "C"}}
            sample["output"]["completion"] = "Santiago"

    config = {"gates": {"accuracy": {"metric": "m", "proposed_threshold": 0.6}}}
    assert run(tmp_path, inspect_log(tmp_path, complete), "inspect", RECORDED, **config).code == 0
    approve(tmp_path, "accuracy", threshold=0.6)
    honest = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert honest.code == 0, honest.out
    (gate,) = honest.json()["decision"]["gates"]
    assert gate["outcome"] == "pass" and gate["value"] < 0.7

    def pruned(members: dict[str, Any]) -> None:
        complete(members)
        for name in [
            n for n, v in members.items() if n.startswith("samples/") and v["scores"]["match"]["value"] != "C"
        ]:
            del members[name]

    inspect_log(tmp_path / "evals", pruned)
    result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert result.code == 1, result.out
    (gate,) = result.json()["decision"]["gates"]
    # The samples are the gold the gate stands on (gold_stale), and the ones the log says ran and does not hold are
    # errors (incomplete_measurement): either alone keeps it from passing.
    assert gate["outcome"] == "blocked"
    assert [r["code"] for r in gate["reasons"]] == ["gold_stale", "incomplete_measurement"]


def test_a_damaged_inspect_header_is_one_line_and_a_damaged_member_a_malformed_sample(tmp_path: Path) -> None:
    members = inspect_members()
    path = write_inspect(tmp_path / "log.eval", members)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        sample, header = archive.getinfo("samples/cap-02_epoch_1.json"), archive.getinfo("header.json")
    start = sample.header_offset + 30 + len(sample.filename)
    data[start : start + sample.compress_size] = bytes(sample.compress_size)  # the deflated bytes zeroed
    damaged = tmp_path / "damaged.eval"
    damaged.write_bytes(bytes(data))
    bad = [item for item in read("inspect", damaged) if isinstance(item, BadLine)]
    assert len(bad) == 1 and "samples/cap-02_epoch_1.json: is damaged" in bad[0].message
    start = header.header_offset + 30 + len(header.filename)
    data[start : start + header.compress_size] = bytes(header.compress_size)
    damaged.write_bytes(bytes(data))
    result = run(tmp_path, damaged, "inspect", RECORDED)
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert "header.json cannot be read" in line and "internal error" not in line


def test_lm_eval_documents_picked_by_number_are_not_taken_for_missing_ones(tmp_path: Path) -> None:
    """``--samples`` runs chosen documents (3 and 7): n-samples counts 2, and documents 0 and 1 are not missing."""
    lines = [json.loads(line) for line in LM_EVAL.read_text().splitlines() if line.strip()]
    results = json.loads(RESULTS.read_text())
    results["n-samples"]["capitals_gen"]["effective"] = 2
    picked = tmp_path / "picked"
    picked.mkdir()
    (picked / RESULTS.name).write_text(json.dumps(results))
    (picked / LM_EVAL.name).write_text("\n".join(json.dumps(line) for line in lines if line["doc_id"] in (3, 7)))
    assert [e.id for e in examples("lm-eval", picked / LM_EVAL.name)] == ["3", "7"]
    (picked / LM_EVAL.name).write_text(json.dumps(lines[3]) + "\n")  # one of the two is gone: which, is not known
    with pytest.raises(SetupError, match="holds 1 documents and lm-eval's results file counts 2 documents"):
        read("lm-eval", picked / LM_EVAL.name)


def test_a_malformed_result_among_a_tests_repetitions_does_not_split_the_test(tmp_path: Path) -> None:
    """A promptfoo result without a test index is a malformed sample; test 0's two repetitions stay one example."""
    document = json.loads(PROMPTFOO.read_text())
    document["results"]["results"][4]["testIdx"] = "six"
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(document))
    result = run(tmp_path, path, "promptfoo", {"t": {"type": "recorded_score", "scorer": "names_city"}})
    assert result.code == 0, result.err
    card = result.json()
    assert card["dataset"]["malformed_lines"] == 1
    found = metric(card, "t")
    assert found["population"]["expected"] == 7  # the six tests and the malformed result
    assert diagnostics(found)["malformed_sample"] == 1


@pytest.mark.parametrize(
    "change",
    [
        _inspect_header(lambda header: header["eval"]["config"].__setitem__("epochs", 10**12)),
        _inspect_header(lambda header: header["eval"]["dataset"].__setitem__("sample_ids", list(range(100_000)))),
    ],
    ids=["epochs", "sample-ids"],
)
def test_an_inspect_header_claiming_far_more_samples_than_the_log_holds_is_one_line(
    tmp_path: Path, change: Any
) -> None:
    """What a forged count would make is refused before anything is made of it (no hang, no memory blow-up)."""
    result = run(tmp_path, inspect_log(tmp_path, change), "inspect", RECORDED)
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert "the inspect file holds 24 sample results and says" in line and "log.eval" in line


def test_an_inspect_sample_without_its_completion_is_malformed_not_content_the_log_did_not_capture(
    tmp_path: Path,
) -> None:
    """inspect_ai always writes a sample's completion (text, empty when the model gave none): one without it was
    edited or damaged, and must not become `non_evaluable`, which a gate may tolerate."""

    def strip(members: dict[str, Any]) -> None:
        for epoch in (1, 2):
            del members[f"samples/cap-02_epoch_{epoch}.json"]["output"]["completion"]

    mine = {"mine": {"type": "contains", "field": "text", "reference": "target"}}
    result = run(tmp_path, inspect_log(tmp_path, strip), "inspect", mine)
    assert result.code == 0, result.err
    found = metric(result.json(), "mine")
    assert "non_evaluable" not in found["population"]["excluded_by_status"]
    assert diagnostics(found)["malformed_sample"] == 2


def test_an_lm_eval_generation_without_its_answer_is_malformed_not_content_the_file_did_not_capture(
    tmp_path: Path,
) -> None:
    """A loglikelihood task records scores and no answer (not captured); a generation task always records its
    answer, so a line without it was edited or damaged: malformed, never `non_evaluable` (which a gate may
    tolerate)."""
    lines = [json.loads(line) for line in LM_EVAL.read_text().splitlines() if line.strip()]
    lines[0]["filtered_resps"] = []
    odd = tmp_path / LM_EVAL.name
    odd.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    said = {"said": {"type": "contains", "field": "text", "reference": "target"}}
    result = run(tmp_path, [odd, RESULTS], "lm-eval", said)
    assert result.code == 0, result.err
    found = metric(result.json(), "said")
    assert "non_evaluable" not in found["population"]["excluded_by_status"]
    assert diagnostics(found) == {"malformed_sample": 1}  # once: the malformed line, not also an absent document
    assert found["population"]["expected"] == 10


@pytest.mark.parametrize("named", [0, False, "", None, 1, ["none"]])
def test_an_lm_eval_filter_that_is_not_a_name_is_malformed_not_the_default_filter(tmp_path: Path, named: Any) -> None:
    """Only a line without the key is lm-eval's default filter (``none``): a falsy ``0``, ``false`` or ``""`` (or any
    value that is not a name) read as the default would put its scores under the default filter's names."""
    lines = [json.loads(line) for line in LM_EVAL.read_text().splitlines() if line.strip()]
    lines[0]["filter"] = named
    del lines[1]["filter"]  # absent: the default, read as such
    odd = tmp_path / LM_EVAL.name
    odd.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    metrics = {
        "said": {"type": "contains", "field": "text", "reference": "target"},
        "em": {"type": "recorded_score", "scorer": "exact_match"},
    }
    result = run(tmp_path, [odd, RESULTS], "lm-eval", metrics)
    assert result.code == 0, result.err
    for name in metrics:
        found = metric(result.json(), name)
        assert diagnostics(found) == {"malformed_sample": 1}, found  # once: not also an absent document
        assert found["population"]["expected"] == 10
        assert found["population"]["included"] == 9


def test_an_openai_evals_sample_without_the_sampling_its_log_records_for_the_others_is_malformed(
    tmp_path: Path,
) -> None:
    """A completion function that records sampling records it for every sample: a log holding it for some samples
    only was edited, and the others must not become `non_evaluable` (which a gate may tolerate)."""
    lines = [json.loads(line) for line in OPENAI_EVALS.read_text().splitlines()]
    events = [line for line in lines if line.get("type") == "match"]
    sampling = [
        {**event, "type": "sampling", "data": {"prompt": f"question {n}", "sampled": [event["data"]["sampled"]]}}
        for n, event in enumerate(events)
    ]
    kept = sampling[1:]  # the first sample's sampling event was removed
    path = tmp_path / "edited.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [*lines[:2], *kept, *lines[2:]]) + "\n")
    items = read("openai-evals", path)
    bad = [item for item in items if isinstance(item, BadLine)]
    assert len(bad) == 1 and events[0]["sample_id"] in bad[0].message and "no sampling event" in bad[0].message
    assert len(items) == len(events)


def test_a_sample_invalidated_in_inspect_is_a_failed_sample_not_a_measurement(tmp_path: Path) -> None:
    """inspect_ai's invalidate_samples marks a result that must not count (eval sets run it again): its scores stay
    in the log, and must not be read as the measurement."""

    def invalidate(members: dict[str, Any]) -> None:
        members["header.json"]["invalidated"] = True
        for epoch in (1, 2):
            members[f"samples/cap-03_epoch_{epoch}.json"]["invalidation"] = {
                "timestamp": "2026-12-03T12:30:00+00:00",
                "author": "reviewer",
                "reason": "the grader saw the answer key",
            }

    result = run(tmp_path, inspect_log(tmp_path, invalidate), "inspect", RECORDED)
    assert result.code == 0, result.err
    found = metric(result.json(), "m")
    assert found["population"]["excluded_by_status"] == {"error": 2}  # cap-07 (failed) and cap-03 (invalidated)
    assert "the grader saw the answer key" in json.dumps(found["population"]["top_diagnostics"])


# -- what a finished OpenAI Evals log lost, as far as its spec and final report can tell -----------------------------


def _evals_log(tmp_path: Path, name: str, keep: Any, spec: Any = None, report: Any = None) -> Path:
    """The real log with the events of the samples ``keep`` refuses removed, its spec and final report changed."""
    lines = [json.loads(line) for line in OPENAI_EVALS.read_text().splitlines()]
    if spec is not None:
        spec(lines[0]["spec"])
    if report is not None:
        lines[1]["final_report"] = report
    events = [line for line in lines[2:] if keep(line["sample_id"])]
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(line) for line in [*lines[:2], *events]) + "\n")
    return path


def refusal(path: Path) -> str:
    with pytest.raises(SetupError) as refused:
        read("openai-evals", path)
    return str(refused.value)


def test_a_finished_openai_evals_log_that_lost_a_sample_above_its_highest_index_is_refused(tmp_path: Path) -> None:
    """capitals.dev.7 (the highest index, answered wrong) lost: no index below the highest is missing, but the
    final report's accuracy (3 of 8, evals' own correct-over-matches) is not that of the log (3 of 7)."""
    above = _evals_log(tmp_path, "above.jsonl", lambda sample: sample != "capitals.dev.7")
    line = refusal(above)
    assert "the final report's accuracy 0.375 is not that of the log's matches (3 correct of 7)" in line
    assert "which cannot be told" in line and "\n" not in line
    # Lost below the highest index, the same loss is a failed sample the report agrees with: read, not refused.
    below = _evals_log(tmp_path, "below.jsonl", lambda sample: sample != "capitals.dev.5")
    assert len(read("openai-evals", below)) == 8


def test_a_model_graded_log_holding_fewer_graded_samples_than_its_report_counts_is_refused(tmp_path: Path) -> None:
    """ModelBasedClassify's final report counts each choice (``counts/choice/<choice>``): they add up to the samples
    it graded, so a log with fewer metrics events lost samples, wherever their indexes were."""

    def graded(name: str, keep: Any, counts: dict[str, int]) -> Path:
        lines = [json.loads(line) for line in OPENAI_EVALS.read_text().splitlines()]
        lines[0]["spec"]["run_config"]["eval_spec"]["cls"] = "evals.elsuite.modelgraded.classify:ModelBasedClassify"
        lines[1]["final_report"] = {f"counts/choice/{choice}": n for choice, n in counts.items()}
        events = [
            {**line, "type": "metrics", "data": {"choice": "Y" if line["data"]["correct"] else "N", "score": None}}
            for line in lines[2:]
            if keep(line["sample_id"])
        ]
        path = tmp_path / name
        path.write_text("\n".join(json.dumps(line) for line in [*lines[:2], *events]) + "\n")
        return path

    whole = graded("whole.jsonl", lambda sample: True, {"Y": 3, "N": 5})
    assert len(read("openai-evals", whole)) == 8
    lost = graded("lost.jsonl", lambda sample: sample != "capitals.dev.7", {"Y": 3, "N": 5})
    line = refusal(lost)
    assert "the final report counts 8 graded samples (counts/...) and the log holds 7" in line
    more = graded("more.jsonl", lambda sample: True, {"Y": 3, "N": 4})
    assert "the final report counts 7 graded samples (counts/...) and the log holds 8" in refusal(more)


def test_an_openai_evals_log_under_max_samples_is_checked_against_it(tmp_path: Path) -> None:
    """Under max_samples M evals runs M samples, or all of a smaller file (numbered 0 to N-1): more than M is not
    one run's log; fewer, not numbered 0 to N-1, lost samples, which cannot be told. The final report of the run is
    that of the samples it ran."""

    def limited(limit: int) -> Any:
        return lambda spec: spec["run_config"].__setitem__("max_samples", limit)

    every = _evals_log(tmp_path, "small.jsonl", lambda sample: True, limited(10))
    assert len(read("openai-evals", every)) == 8  # a file of 8 samples, fewer than max_samples
    line = refusal(_evals_log(tmp_path, "more.jsonl", lambda sample: True, limited(5)))
    assert "the log holds 8 samples and its run's max_samples is 5: it is not the log of one run" in line
    gap = _evals_log(tmp_path, "gap.jsonl", lambda sample: sample != "capitals.dev.5", limited(10), {"accuracy": 3 / 7})
    line = refusal(gap)
    assert "the log holds 7 samples, fewer than its run's max_samples 10, and not samples 0 to 6" in line


# -- a log cut after its final report line (oaieval writes its last events at exit, after the report) ---------------


def _log_with_usage(
    tmp_path: Path, name: str, cut: int | None = None, report: Any = None, *, detail: bool = False
) -> tuple[Path, int]:
    """The real log as a model that reports usage makes it: per sample a ``sampling`` event (its usage) before its
    ``match``, event ids renumbered, the final report holding oaieval's ``usage_*`` totals over every sampling
    event. ``cut``: only the first ``cut`` events kept (the file cut after them, its report line intact). Returns
    the path and the number of events written. ``detail``: each usage holds a nested ``prompt_tokens_details``
    too (newer SDKs), which the totals leave out."""
    lines = [json.loads(line) for line in OPENAI_EVALS.read_text().splitlines()]
    events = []
    for n, match in enumerate(lines[2:]):
        usage: dict[str, Any] = {"prompt_tokens": 20 + n, "completion_tokens": 5, "total_tokens": 25 + n}
        if detail:
            usage["prompt_tokens_details"] = {"cached_tokens": n}
        sampled = match["data"]["sampled"]
        sampling = {"prompt": f"question {n}", "sampled": [sampled], "usage": usage}
        events += [{**match, "type": "sampling", "data": sampling}, match]
    events = [{**event, "event_id": number} for number, event in enumerate(events)]
    totals: dict[str, int] = {}
    for event in events:
        for key, value in event["data"].get("usage", {}).items():
            if isinstance(value, int):
                totals[f"usage_{key}"] = totals.get(f"usage_{key}", 0) + value
    lines[1]["final_report"] = {**lines[1]["final_report"], **totals} if report is None else report(totals)
    kept = events if cut is None else events[:cut]
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(line) for line in [*lines[:2], *kept]) + "\n")
    return path, len(kept)


def test_an_openai_evals_log_cut_after_its_final_report_is_refused_when_its_usage_tells(tmp_path: Path) -> None:
    """oaieval sums every sampling event's usage into the final report (``usage_*``) and then writes the events it
    had not flushed yet: a log cut after its report line lost sampling events the report counted. Through the CLI:
    exit 2, one line; the whole log reads as before."""
    whole, count = _log_with_usage(tmp_path, "whole.jsonl")
    assert count == 16 and len(examples("openai-evals", whole)) == 8
    for cut in (12, 6, 0):  # the file cut after event 12, 6, or right after its final report line
        cut_log, _ = _log_with_usage(tmp_path / f"cut{cut}", "capitals.jsonl", cut)
        result = run(tmp_path / f"cut{cut}", cut_log, "openai-evals", RECORDED)
        assert result.code == 2, (cut, result.out)
        (line,) = result.err.strip().splitlines()
        assert "the final report's usage_" in line and "the log's sampling events add up to" in line, line
        assert "which cannot be told" in line and "Traceback" not in result.err
    # A report that counts more than its log holds (another run's report, or events added): refused alike.
    more, _ = _log_with_usage(
        tmp_path, "more.jsonl", report=lambda totals: {"accuracy": 0.375, **totals, "usage_total_tokens": 10**6}
    )
    assert "usage_total_tokens is 1,000,000" in refusal(more)
    # Counts the log cannot sum as evals did (a nested detail) are not compared: the rest still are.
    nested, _ = _log_with_usage(
        tmp_path,
        "nested.jsonl",
        report=lambda totals: {"accuracy": 0.375, **totals, "usage_prompt_tokens_details": 28},
        detail=True,
    )
    assert len(read("openai-evals", nested)) == 8
    cut_nested, _ = _log_with_usage(tmp_path, "cut-nested.jsonl", 10, detail=True)
    assert "usage_prompt_tokens is" in refusal(cut_nested)


def test_an_openai_evals_sample_that_lost_its_match_event_is_malformed(tmp_path: Path) -> None:
    """A Match eval records a match for every sample it runs, after the sample's sampling: a log cut between the
    two (its last event, a match, lost) holds a sample without one. Its accuracy can agree with what is left (here
    the report says 3 of 7): the sample is still a malformed example, never a sample without a score."""
    lines = [json.loads(line) for line in OPENAI_EVALS.read_text().splitlines()]
    wrong = next(line for line in lines[2:] if line["data"]["correct"] is False)
    path, _ = _log_with_usage(tmp_path, "lost-match.jsonl", report=lambda totals: {"accuracy": 3 / 7, **totals})
    kept = [line for line in path.read_text().splitlines() if not (wrong["sample_id"] in line and '"match"' in line)]
    path.write_text("\n".join(kept) + "\n")
    items = read("openai-evals", path)
    bad = [item for item in items if isinstance(item, BadLine)]
    assert len(items) == 8 and len(bad) == 1, bad
    assert f"sample {wrong['sample_id']!r} has no match event" in bad[0].message
    assert "cut short after its final report line?" in bad[0].message


def test_answers_deleted_from_an_lm_eval_file_make_its_gold_stale_not_a_tolerated_pass(tmp_path: Path) -> None:
    """A generation task's failing answers rewritten as log-likelihood pairs (what lm-eval writes for a task that has
    no text answer) read as not captured: ``non_evaluable``, which a gate tolerating it drops, so the rate on the
    answers left rose from 0.2 to 1.0 with the approval fresh. What the file does not capture is gold (as a trace's
    is), so the edit makes the validated gold stale and the gate blocks."""
    samples = next((FIXTURES / "lm-eval").glob("samples_capitals_gen_*.jsonl"))
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    honest = tmp_path / samples.name
    honest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    metrics = {"said": {"type": "exact_match", "field": "text", "reference": "target"}}
    gates = {"g": {"metric": "said", "proposed_threshold": 0.9, "tolerate": ["non_evaluable"]}}
    assert run(tmp_path, [honest, RESULTS], "lm-eval", metrics, gates=gates).code == 0
    approve(tmp_path, "g", threshold=0.9)
    failing = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert failing.code == 1 and failing.json()["decision"]["gates"][0]["outcome"] == "fail", failing.out
    for line in lines:
        if line["filtered_resps"][0] != line["target"]:
            line["filtered_resps"] = [[-1.0, False]]
    (tmp_path / "evals" / samples.name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert result.code == 1, result.out
    (gate,) = result.json()["decision"]["gates"]
    assert gate["outcome"] == "blocked" and "gold_stale" in [r["code"] for r in gate["reasons"]], gate
