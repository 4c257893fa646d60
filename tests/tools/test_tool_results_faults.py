"""Other tools' results, tampered: a sample index that implies a huge run, an assertion list that is not a list.
Each is a one-line refusal or a counted malformed example, never a traceback, a hang or a silent score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalglass.engine.datasets.dataset import BadLine
from evalglass.errors import SetupError

from .test_tool_results import OPENAI_EVALS, PROMPTFOO, read, run


def test_an_openai_evals_index_implying_a_huge_run_is_refused_before_any_is_made(tmp_path: Path) -> None:
    """Without max_samples every index below the highest held is a lost sample: an index of 10**15 is refused by
    the count, in one line (it used to build the list of every missing index first)."""
    huge = tmp_path / "huge" / "huge.jsonl"
    huge.parent.mkdir()
    huge.write_text(OPENAI_EVALS.read_text().replace("capitals.dev.7", "capitals.dev.999999999999999"))
    with pytest.raises(SetupError, match="sample results and says"):
        read("openai-evals", huge)
    result = run(tmp_path / "huge", huge, "openai-evals", {"m": {"type": "recorded_score", "scorer": "match"}})
    assert result.code == 2 and "Traceback" not in result.err
    (line,) = result.err.strip().splitlines()
    assert "huge.jsonl" in line


@pytest.mark.parametrize("components", [7, True, "abc", {"a": 1}])
def test_a_promptfoo_assertion_list_that_is_not_a_list_is_a_malformed_example(
    tmp_path: Path, components: object
) -> None:
    document = json.loads(PROMPTFOO.read_text())
    document["results"]["results"][0]["gradingResult"]["componentResults"] = components
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(document))
    bad = [item for item in read("promptfoo", path) if isinstance(item, BadLine)]
    assert len(bad) == 1 and "componentResults is not a list" in bad[0].message


def test_the_first_malformed_promptfoo_results_are_listed_in_file_order(tmp_path: Path) -> None:
    """toolresults.ToolReader._bad: the promptfoo reader reads results in test order (promptfoo writes them as they
    finish), so the summary's "first malformed lines" were those met first in test order, and in that order: a
    file written in reverse test order listed them backwards. Now the first by position in the file, ascending."""
    document = json.loads(PROMPTFOO.read_text())
    rows = document["results"]["results"]
    rows.reverse()
    for position in (2, 5, 9):
        rows[position - 1]["gradingResult"]["componentResults"] = 7
    rows.append("not an object")
    path = tmp_path / "results" / "reversed.json"
    path.parent.mkdir()
    path.write_text(json.dumps(document))
    result = run(tmp_path / "results", path, "promptfoo", {"m": {"type": "recorded_score", "scorer": "promptfoo"}})
    assert result.code in (0, 1), result
    summary = result.json()["dataset"]
    assert summary["malformed_lines"] == 4
    assert summary["first_malformed"] == [2, 5, 9, 13], summary
