"""Other tools' files with what Python's json and editors leave in them: a NaN in lm-eval's results file, a results
file saved as UTF-16, a number no float holds, a line nested deeper than a parser goes. Each is read as what it is,
or is one malformed sample or one line naming the file; never a misleading stop or a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tools.test_tool_results import LM_EVAL, metric, run, run_cli
from tests.tools.test_tool_results_hostile import RESULTS

EM = {"em": {"type": "recorded_score", "scorer": "exact_match"}}


def lines() -> list[dict]:
    return [json.loads(line) for line in LM_EVAL.read_text().splitlines() if line.strip()]


def test_a_nan_in_lm_evals_results_file_is_read_not_called_missing(tmp_path: Path) -> None:
    """lm-eval writes its results with Python's json (a metric's stderr is NaN over too few documents): the run
    stopped saying the results file was "missing or unreadable"."""
    document = json.loads(RESULTS.read_text())
    for values in document["results"].values():
        for key in list(values):
            if "stderr" in key:
                values[key] = float("nan")
    results = tmp_path / RESULTS.name
    results.write_text(json.dumps(document))
    assert "NaN" in results.read_text()

    result = run(tmp_path, [LM_EVAL, results], "lm-eval", EM)

    assert result.code == 0, result.err
    assert metric(result.json(), "em")["population"]["included"] == 10


def refused_in_utf16(tmp_path: Path, recoded: Path, encoding: str = "utf-16") -> str:
    """The one line a run of lm-eval's two files, ``recoded`` saved in ``encoding``, stops with."""
    files = {LM_EVAL.name: LM_EVAL, RESULTS.name: RESULTS}
    files[recoded.name] = tmp_path / recoded.name
    files[recoded.name].write_bytes(recoded.read_text(encoding="utf-8").encode(encoding))
    result = run(tmp_path, [files[LM_EVAL.name], files[RESULTS.name]], "lm-eval", EM)
    assert result.code == 2, result.out
    (line,) = result.err.strip().splitlines()
    assert "save it as UTF-8" in line, line
    return line


def test_lm_evals_results_file_saved_as_utf16_is_one_line_naming_its_encoding(tmp_path: Path) -> None:
    line = refused_in_utf16(tmp_path, RESULTS)
    assert f"{RESULTS.name}: lm-eval results file is UTF-16 text, not UTF-8" in line, line


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_lm_evals_samples_saved_without_a_byte_order_mark_are_one_line_naming_their_encoding(
    tmp_path: Path, encoding: str
) -> None:
    """UTF-32BE without a mark opens with three NUL bytes: it was not named, and every line was malformed."""
    line = refused_in_utf16(tmp_path, LM_EVAL, encoding)
    assert f"is UTF-{encoding[4:6]} text, not UTF-8" in line, line


def test_a_line_nested_deeper_than_any_parser_goes_is_a_malformed_sample_not_a_crash(tmp_path: Path) -> None:
    read = lines()
    deep = tmp_path / LM_EVAL.name
    deep.write_text("\n".join([json.dumps(read[0]), "[" * 100_000, *map(json.dumps, read[1:])]) + "\n")

    result = run(tmp_path, [deep, RESULTS], "lm-eval", EM)

    assert result.code == 0, result.err
    card = result.json()
    assert card["dataset"]["malformed_lines"] == 1, card["dataset"]
    assert metric(card, "em")["population"]["included"] == 10


def test_a_score_beyond_a_float_is_an_error_of_that_score_never_an_infinity(tmp_path: Path) -> None:
    """``1e400`` is read by Python's json as an infinity, a value JSON cannot hold: read as the infinity it is, as
    Python's json writes one, so the score is an error of that score, as a NaN is."""
    read = lines()
    odd = tmp_path / LM_EVAL.name
    text = [json.dumps(line) for line in read]
    text[0] = text[0].replace(f'"exact_match": {json.dumps(read[0]["exact_match"])}', '"exact_match": 1e400')
    assert "1e400" in text[0]
    odd.write_text("\n".join(text) + "\n")

    result = run(tmp_path, [odd, RESULTS], "lm-eval", EM)

    assert result.code == 0, result.err
    em = metric(result.json(), "em")
    (diagnostic,) = em["population"]["top_diagnostics"]
    assert diagnostic["code"] == "recorded_score_malformed" and "is number inf," in diagnostic["example"], diagnostic


def test_lm_evals_samples_file_saved_as_utf16_is_named_as_the_samples_file(tmp_path: Path) -> None:
    """It was called lm-eval's "results file", which is the other file, beside it."""
    line = refused_in_utf16(tmp_path, LM_EVAL)
    assert f"{LM_EVAL.name}: lm-eval samples file is UTF-16 text, not UTF-8" in line, line


def test_a_nan_target_is_the_golds_problem_and_a_nan_answer_a_wrong_one_never_the_text_nan(tmp_path: Path) -> None:
    """Python's json writes a float NaN as ``NaN``: read as the text "NaN", a NaN target matched an answer "NaN"
    (1.0) and a NaN answer matched a target "NaN". As for a Parquet NaN: a target JSON cannot hold is
    ``reference_wrong_type`` (non_evaluable), an answer JSON cannot hold is the system's wrong answer (a number,
    which the metric scores as an answer of the wrong type: the tool's per-sample scores stay beside it)."""
    read = lines()
    read[0]["target"], read[0]["filtered_resps"] = float("nan"), ["NaN"]
    read[1]["target"], read[1]["filtered_resps"] = "NaN", [float("nan")]
    samples = tmp_path / LM_EVAL.name
    samples.write_text("\n".join(map(json.dumps, read)) + "\n")
    assert samples.read_text().count("NaN") == 4

    said = {"said": {"type": "exact_match", "field": "text", "reference": "target"}}
    result = run(tmp_path, [samples, RESULTS], "lm-eval", said)

    assert result.code == 0, result.err
    card = result.json()
    assert card["dataset"]["malformed_lines"] == 0, card["dataset"]
    found = metric(card, "said")
    assert found["population"]["excluded_by_status"] == {"non_evaluable": 1}, found["population"]
    codes = {entry["code"]: entry for entry in found["population"]["top_diagnostics"]}
    assert "nan is not a JSON number" in codes["reference_wrong_type"]["example"], codes
    # The NaN answer is a number, never the text its target spells: scored as a wrong answer, not left out.
    assert (codes["type_mismatch"]["count"], codes["type_mismatch"]["included"]) == (1, 1), codes


def test_a_nan_target_is_shown_as_nan_never_as_null(tmp_path: Path) -> None:
    """``view --examples`` shows a NaN target as the file holds it: orjson's ``null`` was another value."""
    read = lines()
    read[0]["target"] = float("nan")
    samples = tmp_path / LM_EVAL.name
    samples.write_text("\n".join(map(json.dumps, read)) + "\n")
    said = {"said": {"type": "exact_match", "field": "text", "reference": "target"}}
    assert run(tmp_path, [samples, RESULTS], "lm-eval", said).code == 0
    (record,) = (tmp_path / ".evalglass" / "runs").glob("*/run.json")
    shown = run_cli("view", str(record.parent), "--examples", "--state", "all", "--format", "json", cwd=tmp_path)
    assert shown.code == 0, shown.err
    references = {row["id"]: row["reference"] for row in shown.json()["examples"]}
    assert references[str(read[0]["doc_id"])] == "NaN", references


def test_a_nan_answer_is_kept_as_nan_so_verify_re_scores_what_the_run_scored(tmp_path: Path) -> None:
    """The kept outputs are written by orjson, which writes a NaN as ``null``: verify then re-scored another value
    than the run had (``output type null`` against ``number``) and said an honest run's scores differ (exit 1).
    A NaN nested in an answer is kept as the standard library writes it and read back as the float."""
    read = lines()
    read[1]["filtered_resps"] = [float("nan")]
    samples = tmp_path / LM_EVAL.name
    samples.write_text("\n".join(map(json.dumps, read)) + "\n")
    said = {"said": {"type": "exact_match", "field": "text", "reference": "target"}}
    assert run(tmp_path, [samples, RESULTS], "lm-eval", said).code == 0
    (record,) = (tmp_path / ".evalglass" / "runs").glob("*/run.json")
    verified = run_cli("verify", str(record.parent), cwd=tmp_path)
    assert verified.code == 0, verified.out + verified.err
    assert "re-scored 1 of 1 metrics" in verified.out, verified.out
    shown = run_cli("view", str(record.parent), "--examples", "--state", "all", "--format", "json", cwd=tmp_path)
    assert shown.code == 0, shown.err
    outputs = {row["id"]: row["output"] for row in shown.json()["examples"]}
    assert "NaN" in outputs[str(read[1]["doc_id"])] and "null" not in outputs[str(read[1]["doc_id"])], outputs
