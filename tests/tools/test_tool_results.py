"""Other tools' results as recorded runs, read from files the real tools wrote (tests/fixtures/<tool>/README.md)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalglass.core.example import Example
from evalglass.engine.datasets.dataset import BadLine
from evalglass.engine.datasets.toollogs.toolreaders import open_tool_reader
from evalglass.errors import SetupError
from tests.e2e.project import run_cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
INSPECT = FIXTURES / "inspect" / "capitals.eval"
PROMPTFOO = FIXTURES / "promptfoo" / "capitals.json"
LM_EVAL = next((FIXTURES / "lm-eval").glob("samples_capitals_gen_*.jsonl"))
LM_EVAL_MC = next((FIXTURES / "lm-eval").glob("samples_capitals_mc_*.jsonl"))
OPENAI_EVALS = FIXTURES / "openai-evals" / "capitals.jsonl"


def read(tool: str, path: Path) -> list[Example | BadLine]:
    return list(open_tool_reader(tool, path, id_field="id", output_field="output", hash_bytes=True))


def examples(tool: str, path: Path) -> list[Example]:
    items = read(tool, path)
    assert all(isinstance(item, Example) for item in items), items
    return [item for item in items if isinstance(item, Example)]


def run(tmp_path: Path, fixture: Path | list[Path], fmt: str, metrics: dict[str, Any], **config: Any) -> Any:
    evals = tmp_path / "evals"
    evals.mkdir(parents=True, exist_ok=True)
    files = fixture if isinstance(fixture, list) else [fixture]
    for file in files:
        shutil.copyfile(file, evals / file.name)
    document = {
        "version": 1,
        "dataset": {"name": "imported", "path": files[0].name, "format": fmt},
        "metrics": metrics,
        **config,
    }
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    if not (evals / "authority.yaml").exists():
        (evals / "authority.yaml").write_text("version: 1\n")
    return run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)


def metric(card: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in card["metrics"] if m["name"] == name)


def inspect_member(name: str) -> Any:
    import zstandard

    with zipfile.ZipFile(INSPECT) as archive, INSPECT.open("rb") as handle:
        info = archive.getinfo(name)
        handle.seek(info.header_offset + 26)
        skip = int.from_bytes(handle.read(2), "little") + int.from_bytes(handle.read(2), "little")
        handle.seek(info.header_offset + 30 + skip)
        return json.loads(zstandard.ZstdDecompressor().decompressobj().decompress(handle.read(info.compress_size)))


# -- inspect_ai -----------------------------------------------------------------------------------------------------


def test_an_inspect_log_gives_each_sample_with_its_epochs() -> None:
    found = examples("inspect", INSPECT)
    assert [e.id for e in found] == [f"cap-{i:02d}" for i in range(1, 13)]
    first = found[0].fields
    assert first["input"] == "What is the capital of France?" and first["target"] == "Paris"
    assert first["source"]["tool"] == "inspect" and first["source"]["version"] == "0.3.285"
    assert [o["epoch"] for o in first["output"]] == [1, 2]
    assert first["output"][0]["text"] == "The capital is Paris."
    assert first["output"][0]["scores"]["match"]["value"] == "C"
    failed = found[6].fields["output"][0]
    assert "text" not in failed and "retrieval service was unreachable" in failed["error"]


def test_inspect_scores_become_the_tools_own_accuracy_and_its_failures_are_never_zero(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        INSPECT,
        "inspect",
        {
            "match": {"type": "recorded_score", "scorer": "match"},
            "includes": {"type": "recorded_score", "scorer": "includes"},
            "mine": {"type": "contains", "field": "text", "reference": "target"},
        },
    )
    assert result.code == 0, result.err
    card = result.json()
    header = inspect_member("header.json")
    reported = {s["name"]: s["metrics"]["accuracy"]["value"] for s in header["results"]["scores"]}
    for name in ("match", "includes"):
        found = metric(card, name)
        assert found["estimate"]["point"] == pytest.approx(reported[name])
        assert found["population"]["excluded_by_status"] == {"error": 1}
        assert found["population"]["top_diagnostics"][0]["code"] == "tool_sample_failed"
    assert metric(card, "mine")["estimate"]["point"] == pytest.approx(reported["includes"])


def test_an_inspect_log_of_a_newer_schema_is_refused_in_one_line(tmp_path: Path) -> None:
    header = inspect_member("header.json")
    header["version"] = 3
    newer = tmp_path / "newer.eval"
    with zipfile.ZipFile(newer, "w") as archive:
        archive.writestr("header.json", json.dumps(header))
    result = run(tmp_path, newer, "inspect", {"match": {"type": "recorded_score", "scorer": "match"}})
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert "inspect_ai log format version 3 is not one EvalGlass was tested with (2)" in line
    assert "newer.eval" in line


def test_a_damaged_inspect_sample_is_a_malformed_example_at_its_member(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.eval"
    header = inspect_member("header.json")
    header["eval"]["dataset"]["sample_ids"] = ["cap-01", "cap-02"]  # the log declares the two samples it holds
    header["eval"]["config"]["epochs"] = 1
    with zipfile.ZipFile(damaged, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps(header))
        archive.writestr("samples/cap-01_epoch_1.json", json.dumps(inspect_member("samples/cap-01_epoch_1.json")))
        archive.writestr("samples/cap-02_epoch_1.json", "{not json")
    items = read("inspect", damaged)
    assert isinstance(items[0], Example) and items[0].id == "cap-01"
    assert isinstance(items[1], BadLine) and "samples/cap-02_epoch_1.json: not valid JSON" in items[1].message


# -- promptfoo --------------------------------------------------------------------------------------------------------


def test_promptfoo_repeats_are_epochs_and_each_assertion_is_a_score() -> None:
    found = examples("promptfoo", PROMPTFOO)
    assert [e.id for e in found] == ["0", "1", "2", "3", "4", "5"]
    kenya = found[2].fields
    assert kenya["input"] == {"country": "Kenya", "city": "Nairobi"}
    assert [o["epoch"] for o in kenya["output"]] == [1, 2]
    scores = kenya["output"][0]["scores"]
    assert scores["promptfoo"] == {"value": 0.5, "passed": False}
    assert scores["names_city"]["value"] == 1 and scores["short"]["value"] == 0 and scores["short"]["passed"] is False
    peru = found[3].fields["output"][0]["scores"]["short"]
    assert peru["value"] is None and peru["error"].startswith("Custom function threw error")


def test_promptfoo_scores_through_a_run(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        PROMPTFOO,
        "promptfoo",
        {
            "test": {"type": "recorded_score", "scorer": "promptfoo"},
            "short": {"type": "recorded_score", "scorer": "short"},
        },
    )
    assert result.code == 0, result.err
    card = result.json()
    document = json.loads(PROMPTFOO.read_text())
    # Test 3's result counts its `short` assertion, whose own code threw: not a measurement (an error), never 0.5.
    scores = [row["score"] for row in document["results"]["results"] if row["testIdx"] not in (6, 7)]
    assert metric(card, "test")["estimate"]["point"] == pytest.approx(sum(scores) / len(scores))
    assert metric(card, "test")["population"]["excluded_by_status"] == {"error": 1}
    short = metric(card, "short")
    assert short["estimate"]["point"] == 0.0 and short["population"]["included"] == 1  # the grader crash is not 0.0
    # Tests that never declared `short` are not applicable to it (recorded_score@3), not the tool's failure.
    assert {d["code"] for d in short["population"]["top_diagnostics"]} == {
        "recorded_score_error",
        "recorded_score_not_declared",
    }


def test_promptfoo_grader_failures_are_errors_not_failed_answers(tmp_path: Path) -> None:
    """promptfoo reports a grader that could not grade as a failed assertion (`pass: false`, score 0): a model-graded
    assertion whose grader failed (`metadata.graderError`), a regex that does not compile, a test whose grading is
    marked failed as a whole. Each is the tool's error, never a measured 0, and so is the test's result it lowered."""
    document = json.loads(PROMPTFOO.read_text())
    rows = {row["testIdx"]: row for row in document["results"]["results"]}
    graded = rows[0]["gradingResult"]["componentResults"][1]  # on_topic: an llm-rubric whose grader failed
    graded.update(
        {"pass": False, "score": 0, "reason": "Could not extract JSON from llm-rubric response", "metadata": {}}
    )
    graded["metadata"]["graderError"] = True
    regex = rows[2]["gradingResult"]["componentResults"][0]  # names_city
    regex.update({"pass": False, "score": 0, "reason": "Invalid regex pattern: unterminated character set"})
    for index in (0, 2):
        rows[index].update({"success": False, "score": 0.5})
    rows[4]["gradingResult"]["metadata"] = {"graderError": True}  # the test's grading failed as a whole
    rows[4]["gradingResult"]["reason"] = "grader unavailable: HTTP 503"
    path = tmp_path / "graded.json"
    path.write_text(json.dumps(document))
    metrics = {
        "test": {"type": "recorded_score", "scorer": "promptfoo"},
        "names_city": {"type": "recorded_score", "scorer": "names_city"},
        "on_topic": {"type": "recorded_score", "scorer": "on_topic"},
    }
    cards = []
    for name, fixture in (("original", PROMPTFOO), ("graded", path)):
        result = run(tmp_path / name, fixture, "promptfoo", metrics)
        assert result.code == 0, result.err
        cards.append(result.json())
    # One more example left out as the tool's error per failed grader (examples 0, 1, 2), none scored as 0.
    for name, more in (("on_topic", 1), ("names_city", 1), ("test", 3)):
        before, after = (metric(card, name)["population"]["excluded_by_status"].get("error", 0) for card in cards)
        assert after == before + more, (name, before, after)
    found = {e.id: e for e in examples("promptfoo", path)}
    scores = found["0"].fields["output"][0]["scores"]
    assert scores["on_topic"]["value"] is None
    assert scores["on_topic"]["error"].startswith("the grader failed (metadata.graderError): Could not extract JSON")
    assert scores["promptfoo"]["value"] is None and "'on_topic'" in scores["promptfoo"]["error"]
    assert found["1"].fields["output"][0]["scores"]["names_city"]["error"].startswith("Invalid regex pattern:")
    overall = found["2"].fields["output"][0]["scores"]["promptfoo"]
    assert (
        overall["value"] is None
        and overall["error"] == "the grader failed (metadata.graderError): grader unavailable: HTTP 503"
    )


def test_a_promptfoo_file_with_no_results_is_one_error(tmp_path: Path) -> None:
    document = json.loads(PROMPTFOO.read_text())
    document["results"]["results"] = []
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(document))
    result = run(tmp_path, empty, "promptfoo", {"test": {"type": "recorded_score", "scorer": "promptfoo"}})
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert "empty.json: the promptfoo output file holds no results" in line


def test_a_promptfoo_file_of_an_unknown_version_is_refused(tmp_path: Path) -> None:
    document = json.loads(PROMPTFOO.read_text())
    document["results"]["version"] = 4
    path = tmp_path / "v4.json"
    path.write_text(json.dumps(document))
    with pytest.raises(SetupError, match=r"promptfoo results version 4 is not one EvalGlass was tested with \(3\)"):
        read("promptfoo", path)


def test_duplicate_sample_ids_are_refused_naming_both_places(tmp_path: Path) -> None:
    document = json.loads(PROMPTFOO.read_text())
    document["results"]["results"][1]["testIdx"] = 0  # two results claim test 0, repetition 1
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(document))
    result = run(tmp_path, path, "promptfoo", {"test": {"type": "recorded_score", "scorer": "promptfoo"}})
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert "sample id '0' epoch 1 appears twice (results[0] (testIdx 0) and results[1] (testIdx 0))" in line


def test_several_providers_in_one_promptfoo_file_are_refused(tmp_path: Path) -> None:
    document = json.loads(PROMPTFOO.read_text())
    document["results"]["results"][3]["provider"] = {"id": "openai:gpt-4o", "label": ""}
    path = tmp_path / "two.json"
    path.write_text(json.dumps(document))
    with pytest.raises(SetupError, match="holds 2 prompt/provider combinations"):
        read("promptfoo", path)


# -- lm-evaluation-harness --------------------------------------------------------------------------------------------


def test_lm_eval_samples_and_their_version(tmp_path: Path) -> None:
    found = examples("lm-eval", LM_EVAL)
    assert len(found) == 10 and found[0].id == "0"
    record = found[0].fields
    assert record["source"]["version"] == "0.4.13" and record["source"]["task"] == "capitals_gen"
    assert record["input"]["prompt"] == "What is the capital of France?" and record["target"] == "Paris"
    assert record["output"] == [{"epoch": 1, "scores": {"exact_match": {"value": 0.0}}, "text": "lol"}]
    mc = examples("lm-eval", LM_EVAL_MC)[0].fields
    assert "text" not in mc["output"][0] and set(mc["output"][0]["scores"]) == {"acc"}

    results = json.loads(next((FIXTURES / "lm-eval").glob("results_*.json")).read_text())
    result = run(
        tmp_path,
        [LM_EVAL, *(FIXTURES / "lm-eval").glob("results_*.json")],
        "lm-eval",
        {"em": {"type": "recorded_score", "scorer": "exact_match"}},
    )
    assert result.code == 0, result.err
    assert metric(result.json(), "em")["estimate"]["point"] == pytest.approx(
        results["results"]["capitals_gen"]["exact_match,none"]
    )


def _two_filters(folder: Path) -> Path:
    """The generation task's samples as lm-eval writes a task with two filters: one line per filter and document,
    each with that filter's answer and scores (`strict-match` keeps the model's text, `flexible-extract` finds the
    answer in it)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for raw in LM_EVAL.read_text().splitlines():
        if not raw.strip():
            continue
        line = json.loads(raw)
        lines.append({**line, "filter": "strict-match"})
        lines.append({**line, "filter": "flexible-extract", "filtered_resps": [line["target"]], "exact_match": 1.0})
    path = folder / LM_EVAL.name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for results in (FIXTURES / "lm-eval").glob("results_*.json"):
        shutil.copyfile(results, folder / results.name)
    return path


def test_lm_eval_with_several_filters_measures_the_declared_filter_s_answer(tmp_path: Path) -> None:
    """Which filter's answer a metric on the output measures is declared; read without it, the file is refused in
    one line (the order of its lines would decide it), and a name it does not hold is refused too."""
    evals = tmp_path / "evals"
    path = _two_filters(evals)
    (evals / "authority.yaml").write_text("version: 1\n")

    def run_with(answer_filter: str | None) -> Any:
        dataset: dict[str, Any] = {"name": "imported", "path": path.name, "format": "lm-eval"}
        if answer_filter is not None:
            dataset["answer_filter"] = answer_filter
        document = {
            "version": 1,
            "dataset": dataset,
            "metrics": {
                "said": {"type": "exact_match", "field": "text", "reference": "target"},
                "em": {"type": "recorded_score", "scorer": "exact_match,strict-match"},
            },
            "gates": {"said-ok": {"metric": "said", "proposed_threshold": 0.5}},
        }
        (evals / "evalglass.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
        return run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)

    refused = run_with(None)
    assert refused.code == 2 and "Traceback" not in refused.err
    (line,) = refused.err.strip().splitlines()
    assert "2 filters ('strict-match', 'flexible-extract')" in line and "dataset.answer_filter" in line
    strict, flexible = run_with("strict-match"), run_with("flexible-extract")
    assert strict.code == 0 and flexible.code == 0, strict.err + flexible.err
    # Measured on the strict answers (the model's text), the output agrees with lm-eval's own strict scores.
    said_strict = metric(strict.json(), "said")["estimate"]["point"]
    assert said_strict == metric(strict.json(), "em")["estimate"]["point"] < 1.0
    assert metric(flexible.json(), "said")["estimate"]["point"] == 1.0  # the extracted answers
    assert metric(strict.json(), "em")["estimate"]["point"] == metric(flexible.json(), "em")["estimate"]["point"]
    # The declared filter is part of what an approval binds: pointing it elsewhere is a new gate.
    fingerprints = {gate["fingerprint"] for card in (strict, flexible) for gate in card.json()["decision"]["gates"]}
    assert len(fingerprints) == 2
    unknown = run_with("majority")
    assert unknown.code == 2 and "dataset.answer_filter 'majority' is not a filter of this samples file" in unknown.err


def test_lm_eval_samples_without_their_results_file_are_refused(tmp_path: Path) -> None:
    alone = tmp_path / LM_EVAL.name
    shutil.copyfile(LM_EVAL, alone)
    with pytest.raises(SetupError, match="cannot tell which lm-eval wrote this file"):
        read("lm-eval", alone)
    results = tmp_path / next((FIXTURES / "lm-eval").glob("results_*.json")).name
    document = json.loads(next((FIXTURES / "lm-eval").glob("results_*.json")).read_text())
    document["lm_eval_version"] = "0.5.0"
    results.write_text(json.dumps(document))
    with pytest.raises(SetupError, match=r"lm-eval version 0.5.0 is not one EvalGlass was tested with \(0.4\)"):
        read("lm-eval", alone)


# -- OpenAI Evals -----------------------------------------------------------------------------------------------------


def test_an_openai_evals_log_gives_the_matches_and_the_reported_accuracy(tmp_path: Path) -> None:
    found = examples("openai-evals", OPENAI_EVALS)
    assert sorted(e.id for e in found) == [f"capitals.dev.{i}" for i in range(8)]
    one = next(e for e in found if e.id == "capitals.dev.5").fields
    assert one["target"] == "Cairo" and one["output"][0]["text"] == "This is a dummy response."
    assert one["output"][0]["scores"]["match"] == {"value": False}
    result = run(tmp_path, OPENAI_EVALS, "openai-evals", {"accuracy": {"type": "recorded_score", "scorer": "match"}})
    assert result.code == 0, result.err
    report = json.loads(OPENAI_EVALS.read_text().splitlines()[1])["final_report"]
    assert metric(result.json(), "accuracy")["estimate"]["point"] == pytest.approx(report["accuracy"])


def test_an_openai_evals_event_type_it_does_not_know_is_refused(tmp_path: Path) -> None:
    lines = OPENAI_EVALS.read_text().splitlines()
    event = json.loads(lines[2])
    event["type"] = "telemetry"
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join([*lines[:2], json.dumps(event)]) + "\n")
    with pytest.raises(SetupError, match="event type 'telemetry' \\(line 3\\) is not one EvalGlass reads"):
        read("openai-evals", path)


def test_an_openai_evals_log_cut_short_is_refused_and_a_lost_sample_is_a_failed_one(tmp_path: Path) -> None:
    """The log holds no count, but says whether the run finished (`final_report`), and a run over every sample
    (no `max_samples`) numbers them 0 to N-1: a log without its final report is refused in one line; a finished
    log that lost a sample in the middle makes it a failed sample (an error), never one left out."""
    lines = OPENAI_EVALS.read_text().splitlines()
    unfinished = tmp_path / "unfinished" / "cut.jsonl"
    unfinished.parent.mkdir()
    unfinished.write_text("\n".join(line for line in lines if '"final_report"' not in line) + "\n")
    result = run(
        tmp_path / "unfinished", unfinished, "openai-evals", {"m": {"type": "recorded_score", "scorer": "match"}}
    )
    assert result.code == 2 and "Traceback" not in result.err
    (line,) = result.err.strip().splitlines()
    assert "cut.jsonl" in line and "no final_report line: oaieval did not finish this run" in line

    lost = tmp_path / "lost" / "lost.jsonl"
    lost.parent.mkdir()
    lost.write_text("\n".join(line for line in lines if '"sample_id": "capitals.dev.5"' not in line) + "\n")
    found = {e.id: e for e in examples("openai-evals", lost)}
    assert sorted(found) == [f"capitals.dev.{i}" for i in range(8)]
    result = run(tmp_path / "lost", lost, "openai-evals", {"m": {"type": "recorded_score", "scorer": "match"}})
    assert result.code == 0, result.err
    population = metric(result.json(), "m")["population"]
    assert population["excluded_by_status"] == {"error": 1} and population["included"] == 7
    assert {d["code"] for d in population["top_diagnostics"]} == {"tool_sample_failed"}

    # Under max_samples evals runs a shuffled subset: a missing index says nothing, and none is made up (the final
    # report is that of a run of those 7 samples: 3 correct).
    spec = json.loads(lines[0])
    spec["spec"]["run_config"]["max_samples"] = 7
    report = json.loads(lines[1])
    report["final_report"]["accuracy"] = 3 / 7
    subset = tmp_path / "subset.jsonl"
    subset.write_text("\n".join([json.dumps(spec), json.dumps(report), *lost.read_text().splitlines()[2:]]) + "\n")
    assert sorted(e.id for e in examples("openai-evals", subset)) == [
        f"capitals.dev.{i}" for i in (0, 1, 2, 3, 4, 6, 7)
    ]


# -- every capability applies ------------------------------------------------------------------------------------


def test_the_gold_of_an_imported_run_is_its_inputs_and_targets(tmp_path: Path) -> None:
    config = {"gates": {"right": {"metric": "mine"}}}
    metrics = {"mine": {"type": "contains", "field": "text", "reference": "target"}}
    assert run(tmp_path, PROMPTFOO, "promptfoo", metrics, **config).code == 0
    first = run_cli("view", "--format", "json", cwd=tmp_path).json()["dataset"]["gold_fingerprint"]
    document = json.loads(PROMPTFOO.read_text())
    for row in document["results"]["results"]:
        row["response"]["output"] = "changed"  # new answers: the gold stands
    changed = tmp_path / "evals" / PROMPTFOO.name
    changed.write_text(json.dumps(document))
    assert run_cli("run", "--no-history", cwd=tmp_path).code == 0
    assert run_cli("view", "--format", "json", cwd=tmp_path).json()["dataset"]["gold_fingerprint"] == first


def test_two_runs_of_the_tool_compare_example_by_example(tmp_path: Path) -> None:
    """Two real inspect logs of one task (a model and a better one): paired by sample id, the same gold."""
    metrics = {
        "match": {"type": "recorded_score", "scorer": "match"},
        "city": {"type": "contains", "field": "text", "reference": "target"},
    }
    config = {"gates": {"city": {"metric": "city"}}}  # a gate on a reference metric: the run takes its gold
    for name, log in (("base", INSPECT), ("cand", FIXTURES / "inspect" / "capitals-improved.eval")):
        evals = tmp_path / "evals"
        for old in evals.glob("*.eval") if evals.exists() else ():
            old.unlink()
        result = run(tmp_path, log, "inspect", metrics, **config)
        assert result.code == 0, result.err
        shutil.copytree(Path((tmp_path / ".evalglass" / "last-run").read_text().strip()), tmp_path / name)
    compared = run_cli("compare", "base", "cand", "--format", "json", cwd=tmp_path)
    assert compared.code == 0, compared.err
    payload = compared.json()
    assert payload["incomparable"] == [] and payload["paired"] == 12  # the same gold, every sample paired
    match = next(m for m in payload["metrics"] if m["metric"] == "match")
    assert match["pairs"]["included"] == 11  # cap-07 failed in the tool in both runs: never a pair of zeros
    assert match["pairs"]["excluded_by_status"] == {"error": 1}
    assert match["difference"]["test"] == "paired_t" and match["difference"]["interval"]["point"] > 0
    assert match["flips"]["improved"] and match["flips"]["regressed"] == []


def test_an_answer_the_tools_file_does_not_hold_is_not_a_wrong_answer(tmp_path: Path) -> None:
    """lm-eval's multiple-choice samples record log-likelihoods, no text: a text metric has nothing to measure."""
    assert examples("lm-eval", LM_EVAL_MC)[0].fields["not_captured"] == ["output.text"]
    result = run(
        tmp_path,
        [LM_EVAL_MC, *(FIXTURES / "lm-eval").glob("results_*.json")],
        "lm-eval",
        {"names": {"type": "contains", "field": "text", "reference": "target"}},
    )
    assert result.code == 0, result.err
    found = metric(result.json(), "names")
    assert found["population"]["included"] == 0 and found["population"]["excluded_by_status"] == {"non_evaluable": 10}
    assert found["population"]["top_diagnostics"][0]["code"] == "content_not_captured"
