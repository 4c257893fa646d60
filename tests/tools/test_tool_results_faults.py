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
