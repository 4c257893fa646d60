"""The artifacts' check (engine/runs/integrity.py) that verify and every reader make: any change to any listed file's
bytes names that file; a name a forged list gives is never read outside the run folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.engine.runs.digests import Digests, file_sha256
from evalglass.engine.runs.integrity import ArtifactCheck

FILES = {
    "scorecard.json": b'{"a": 1}\n',
    "runrecord.json": b"{}\n",
    "report.md": b"# r\n",
    "sub/scores.jsonl": b"x" * 3,
}


def written(folder: Path) -> Digests:
    for name, data in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return Digests(run_id="r", files={name: file_sha256(folder / name) for name in FILES})


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(FILES)), at=st.integers(min_value=0), bit=st.integers(0, 7), cut=st.booleans())
def test_any_flipped_bit_or_truncation_of_any_listed_file_names_that_file(
    name: str, at: int, bit: int, cut: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        digests = written(folder)
        assert ArtifactCheck(folder, digests).listed_problems() == []
        data = bytearray(FILES[name])
        position = at % len(data)
        if cut:
            del data[position:]
        else:
            data[position] ^= 1 << bit
        (folder / name).write_bytes(bytes(data))
        problems = ArtifactCheck(folder, digests).listed_problems()
        assert [problem.file for problem in problems] == [name]
        assert name in problems[0].line and problems[0].field == f"file {name}"


def test_a_forged_list_cannot_make_a_reader_open_a_path_outside_the_folder_or_a_fifo(tmp_path: Path) -> None:
    digests = written(tmp_path)
    os.mkfifo(tmp_path / "pipe")  # opening it for reading would block the reader for ever
    forged = Digests(
        run_id="r", files={**digests.files, "../outside": "sha256:0", "/dev/zero": "sha256:0", "pipe": "sha256:0"}
    )
    (tmp_path.parent / "outside").write_bytes(b"not the run's")
    lines = {problem.file: problem.line for problem in ArtifactCheck(tmp_path, forged).listed_problems()}
    assert set(lines) == {"../outside", "/dev/zero", "pipe"}
    assert "outside the run folder" in lines["../outside"] and "outside the run folder" in lines["/dev/zero"]
    assert "a FIFO" in lines["pipe"]
