"""Host code cannot rewrite the dataset under the run that reads it: the recorded producer reads the dataset a batch
at a time while host code runs (an ungated python metric here, which a pull request adds freely), and a metric that
rewrote, in place, the lines not read yet (its failing recorded outputs made the gold ones) turned an approved failing
gate into a pass on answers the committed file does not hold (0.0 measured as 0.67, exit 0). The run now refuses a file that
changed while it read it (exit 2, naming it): pipeline.refuse_changed_inputs."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.e2e.project import approve_as_is, make_project

ROWS = [{"id": f"e{i}", "expected": "bbb", "output": "aaa"} for i in range(60_000)]  # several batches and read chunks
SABOTAGE = """import pathlib
def score(example, output):
    data = pathlib.Path(__file__).parent / "data.jsonl"
    flag = pathlib.Path(__file__).parent.parent / "rewritten"
    if not flag.exists():
        flag.write_text("")
        text = data.read_bytes()
        cut = len(text) // 10
        with data.open("r+b") as handle:  # in place: the run's open file sees the new bytes it has not read yet
            handle.seek(cut)
            handle.write(text[cut:].replace(b'"output": "aaa"', b'"output": "bbb"'))
    return 1.0
"""


def test_a_metric_rewriting_the_lines_not_read_yet_stops_the_run(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.write_rows(ROWS)
    approve_as_is(project, 0.5, ["accuracy"])  # every recorded answer wrong: the gate fails as committed
    assert project.run().code == 1
    (project.evals / "sabotage.py").write_text(SABOTAGE)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["metrics"]["sabotage"] = {"type": "python", "function": "sabotage.py:score"}
    (project.evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = project.run("--no-progress")
    assert (tmp_path / "rewritten").exists()  # the metric did rewrite the file
    assert result.code == 2, result.out + result.err
    assert "data.jsonl: the file changed while the run read it" in result.err, result.err


FIXTURES = Path(__file__).parent.parent / "fixtures" / "lm-eval"
#: Imported when the run builds its metrics, before the samples are read: lm-eval's results file (beside the
#: samples file, which decides how many documents ran) made to say 12 documents of a 10-document task ran.
RESULTS_REWRITE = """import json, pathlib
folder = pathlib.Path(__file__).parent
results = next(folder.glob("results_*.json"))
document = json.loads(results.read_text())
if document["n-samples"]["capitals_gen"]["effective"] == 10:
    document["n-samples"]["capitals_gen"]["effective"] = 12
    results.write_text(json.dumps(document))
def score(example, output):
    return 1.0
"""


def test_a_metric_rewriting_lm_eval_s_results_file_stops_the_run(tmp_path: Path) -> None:
    """The second file of a format (lm-eval's results file, read beside the samples file) is held to its state as
    the dataset is (``Reader.files``): rewritten after the run took its state, the documents it says ran changed
    the verdict (two documents counted absent: exit 1 where the committed files pass)."""
    project = make_project(tmp_path)
    for fixture in (*FIXTURES.glob("samples_capitals_gen_*.jsonl"), *FIXTURES.glob("results_*.json")):
        (project.evals / fixture.name).write_bytes(fixture.read_bytes())
    samples = next(FIXTURES.glob("samples_capitals_gen_*.jsonl")).name
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["dataset"] = {"name": "imported", "path": samples, "format": "lm-eval"}
    config.pop("task")
    config["metrics"] = {"em": {"type": "recorded_score", "scorer": "exact_match"}}
    config["gates"] = {"accuracy": {"metric": "em", "proposed_threshold": 0.1}}
    (project.evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    approve_as_is(project, 0.1, ["accuracy"])
    assert project.run("--no-progress", "--no-history").code == 0  # the committed files pass
    config["metrics"]["sabotage"] = {"type": "python", "function": "sabotage.py:score"}
    (project.evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (project.evals / "sabotage.py").write_text(RESULTS_REWRITE)
    result = project.run("--no-progress", "--no-history")
    assert '"effective": 12' in next(project.evals.glob("results_*.json")).read_text()  # the metric rewrote it
    assert result.code == 2, result.out + result.err
    assert ".json: the file changed while the run read it" in result.err, result.err
    assert "Traceback" not in result.err
