"""`evalglass report` and `run --html` as a user meets them: one self-contained file that shows what the artifacts
say, and only that. The browser tests (tests/browser) open the same pages in Chromium."""

from __future__ import annotations

import html
import re

from tests.e2e.project import make_project, run_cli
from tests.e2e.reports import HOSTILE, report_project
from tests.e2e.test_forgery import _reseal as reseal
from tests.e2e.test_renderers_never_decide import forge
from tests.e2e.test_verdicts import approve


def test_report_writes_one_self_contained_page_into_the_run_folder(tmp_path):
    project = report_project(tmp_path)
    result = project.cli("report", "out")
    assert result.code == 0, result.err
    page = (tmp_path / "out" / "report.html").read_text()
    wrote, not_checked = result.out.strip().splitlines()
    assert wrote == f"wrote {tmp_path.joinpath('out', 'report.html').relative_to(tmp_path)}"
    # What loading the run did not check is said once, on the command line and on the page.
    assert not_checked.startswith("not re-derived:") and "`evalglass verify out`" in not_checked
    assert not_checked in page
    # Nothing is loaded from anywhere: no external src/href, no stylesheet link, and a policy that forbids it.
    assert not re.findall(r"""(?:src|href)\s*=\s*["']?(?!#|data:)[a-z]+:""", page, re.I)
    assert '<link rel="stylesheet"' not in page
    assert "default-src 'none'" in page
    assert "Verdict: blocked" in page
    assert "incomplete_measurement" in page
    assert project.cli("verify", "out").code == 0  # the page beside the artifacts changes none of them


def test_report_of_the_last_run_to_a_chosen_file(tmp_path):
    project = make_project(tmp_path)
    project.run()
    result = project.cli("report", "--out", "r.html")
    assert result.code == 0, result.err
    page = (tmp_path / "r.html").read_text()
    assert "Verdict: informational" in page
    assert "Not a pass" in page


def test_run_html_writes_the_page_and_keeps_the_verdicts_exit_code(tmp_path):
    project = report_project(tmp_path)  # gate approved, measurement incomplete: blocked, exit 1
    result = project.run("--html", "page.html")
    assert result.code == 1
    assert "html report: page.html" in result.out
    page = (tmp_path / "page.html").read_text()
    assert "Verdict: blocked" in page
    as_json = project.run("--html", "page2.html", "--format", "json")
    assert as_json.code == 1 and as_json.json()["decision"]["verdict"] == "blocked"
    assert (tmp_path / "page2.html").exists()


def test_attacker_controlled_output_is_escaped_text(tmp_path):
    project = report_project(tmp_path, approved=False)
    assert project.cli("report", "out", "--out", "r.html").code == 0
    page = (tmp_path / "r.html").read_text()
    assert html.escape(HOSTILE, quote=False) in page.replace("&#34;", '"').replace("&#39;", "'")
    assert "<script>window.__pwned" not in page
    assert "<img" not in page and "</details></li>" not in page.split("ex-0002")[1].split("Reference")[0]
    # The page's own script is the only one, and the policy allows exactly it (by hash).
    assert page.count("<script>") == 1 and "script-src 'sha256-" in page


def test_a_run_missing_an_artifact_is_refused_not_rendered_in_part(tmp_path):
    project = report_project(tmp_path, approved=False)
    folder = tmp_path / "out"
    # Without its run record a scorecard cannot be checked (issue 26): refused, not rendered unchecked.
    record = (folder / "runrecord.json").read_bytes()
    (folder / "runrecord.json").unlink()
    refused = project.cli("report", "out", "--out", "a.html")
    assert refused.code == 2 and "runrecord.json" in refused.err and refused.err.count("\n") == 1
    assert not (tmp_path / "a.html").exists()
    (folder / "runrecord.json").write_bytes(record)
    # Nor without the scores (every artifact and kind of damage: test_damaged_artifacts.py).
    (folder / "scores.jsonl").unlink()
    missing = project.cli("report", "out", "--out", "b.html")
    assert missing.code == 2 and "scores.jsonl is missing" in missing.err and missing.err.count("\n") == 1
    assert not (tmp_path / "b.html").exists()


def test_a_dataset_changed_after_the_run_is_not_shown_as_its_inputs(tmp_path):
    project = report_project(tmp_path, approved=False)
    first = project.cli("report", "out", "--out", "before.html")
    assert first.code == 0 and "question number 3" in (tmp_path / "before.html").read_text()
    data = project.evals / "data.jsonl"
    data.write_text(data.read_text().replace("question number 3", "question number three"))
    assert project.cli("report", "out", "--out", "after.html").code == 0
    page = (tmp_path / "after.html").read_text()
    assert "changed since the run" in page
    assert "question number three" not in page and "question number 3" not in page


def test_a_folder_without_a_scorecard_or_with_broken_scores_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_cli("report", "empty", cwd=tmp_path)
    assert result.code == 2 and "no scorecard.json in this folder" in result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    (tmp_path / "p").mkdir()
    project = report_project(tmp_path / "p", approved=False)
    scores = project.root / "out" / "scores.jsonl"
    scores.write_text(scores.read_text() + "{not json\n")
    broken = project.cli("report", "out")
    assert broken.code == 2 and "scores.jsonl" in broken.err and "Traceback" not in broken.err
    assert broken.err.count("\n") == 1


def test_the_page_refuses_a_consistently_forged_scorecard_and_verify_catches_it(tmp_path):
    """The report renders, never decides; and it shows nothing that does not add up (issue 26). A forged pass whose
    scorecard and ledger snapshot agree with each other, but not with the run's digests, is refused in one line
    naming the file, and `verify`, which re-derives from the recorded scores, names the forgery too."""
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.9))
    assert project.run("--out", "out").code == 1
    honest = project.cli("report", "out", "--out", "honest.html")
    assert honest.code == 0
    assert "Verdict: fail" in (tmp_path / "honest.html").read_text()
    forge(tmp_path / "out" / "scorecard.json", threshold=0.5, outcome="pass")
    forged = project.cli("report", "out", "--out", "forged.html")
    assert forged.code == 2 and forged.err.count("\n") == 1, forged.err
    assert "is not the file digests.json lists" in forged.err and "evalglass verify out" in forged.err
    assert not (tmp_path / "forged.html").exists()
    verified = project.cli("verify", "out")
    assert verified.code == 1 and "scorecard.json" in verified.out and "anchor.ledger" in verified.out


def test_a_page_that_cannot_be_written_is_one_line_naming_the_file(tmp_path):
    project = make_project(tmp_path)
    project.run("--out", "out")
    result = project.cli("report", "out", "--out", "missing/dir/r.html")
    assert result.code == 2 and "cannot write the HTML report" in result.err and "missing/dir/r.html" in result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


def test_bound_checks_show_outcome_binding_and_each_examples_check_output(tmp_path):
    result = run_cli("run", "--example", "bound-checks", "--html", "page.html", cwd=tmp_path)
    assert result.code == 1, result.err  # a failing and two undecidable check gates
    page = (tmp_path / "page.html").read_text()
    cards = dict(re.findall(r'<h3>(notes-[a-z]+)</h3><span class="badge[^"]*">([A-Z]+)</span>', page))
    assert cards == {
        "notes-ready": "PASS",
        "notes-draft": "FAIL",
        "notes-binary": "INCONCLUSIVE",
        "notes-moved": "ERROR",
    }
    assert re.findall(r"<dt>Binding</dt><dd>([a-z_]+)</dd>", page) == ["bound", "bound", "bound", "mismatch"]
    assert "never started" in page  # the moved target's command never ran
    # per example: the check metric's record, with the tail of what the command printed
    assert "Check draft-marker: FAIL (exit 1)" in page and "marker still present" in page
    assert "check_not_passed" in page and "repair what its outcome names" in page


def test_control_characters_and_bidi_overrides_are_shown_as_escapes(tmp_path):
    project = make_project(tmp_path)
    project.write_rows([{"id": "a", "expected": "x", "output": "nul\x00 bell\x07 \u202eevil"}])
    assert project.run("--out", "out", "--html", "r.html").code == 0
    data = (tmp_path / "r.html").read_bytes()
    assert not re.search(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", data)
    page = data.decode()
    assert "\u202e" not in page
    assert "nul\\u0000 bell\\u0007 \\u202eevil" in page


def test_a_comparative_gates_comparison_is_shown_as_recorded_and_verify_catches_an_edit(tmp_path):
    """The report renders the scorecard's comparison (here edited: other flipped ids, a better difference) without
    re-reading the baseline; only `verify`, which re-derives it, refuses the edit."""
    import json

    from tests.e2e.test_comparative_gates import BIG_DROP, setup

    project, _ = setup(tmp_path, BIG_DROP)
    assert project.run("--out", "runs/cand").code == 1
    honest = project.cli("report", "runs/cand", "--out", "honest.html")
    assert honest.code == 0, honest.err
    page = (tmp_path / "honest.html").read_text()
    assert 'id="comparisons"' in page and "q030" in page and "Regressed: passed in the baseline, fail now (10)" in page
    scorecard = tmp_path / "runs/cand/scorecard.json"
    card = json.loads(scorecard.read_text())
    flips = card["decision"]["gates"][0]["comparison"]["metric"]["flips"]
    flips["regressed"] = ["forged-regression"]
    scorecard.write_text(json.dumps(card, indent=2))
    # The flips decide nothing, so only the digests tell the edit: the report refuses the folder while they do...
    refused = project.cli("report", "runs/cand", "--out", "forged.html")
    assert refused.code == 2 and "scorecard.json is not the file digests.json lists" in refused.err
    # ...and so it does without them: a run whose digest list is gone is refused, naming it...
    digests = (tmp_path / "runs/cand/digests.json").read_bytes()
    (tmp_path / "runs/cand/digests.json").unlink()
    gone = project.cli("report", "runs/cand", "--out", "forged.html")
    assert gone.code == 2 and "digests.json is missing" in gone.err and not (tmp_path / "forged.html").exists()
    # ...while with the digests rewritten to match it renders what the scorecard says (verify re-derives it).
    (tmp_path / "runs/cand/digests.json").write_bytes(digests)
    reseal(tmp_path / "runs/cand")
    forged = project.cli("report", "runs/cand", "--out", "forged.html")
    assert forged.code == 0, forged.err
    page = (tmp_path / "forged.html").read_text()
    assert "forged-regression" in page and "q030" not in page.split('id="comparisons"')[1].split("</section>")[0]
    assert project.cli("verify", "runs/cand").code != 0
