"""What a run with variants shows per example: each variant's outputs, read from ``variants/NAME/outputs.jsonl`` in
the run folder (never from a file outside it) and checked like every other artifact a reader shows.

Each variant's file is read whole and hashed as read; with ``digests.json`` present, a file it does not list, or
whose bytes hash to something else, is refused (one line naming it), so an edited file is never shown as what the
run scored. A run without ``digests.json`` has nothing to check the files against (``load_checked`` says so).
Reading whole is what the check costs: one pass per variant, parsing only the lines of the wanted examples.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from evalglass.core.fingerprint import PREFIX
from evalglass.core.runrecord import VARIANTS_DIR
from evalglass.engine.runs.artifacts import open_artifact
from evalglass.engine.runs.runfolder import OUTPUTS_FILE
from evalglass.errors import SetupError

#: A sample whose lane call failed: what it has instead of an output.
NO_OUTPUT = "(no output)"


def variant_outputs_file(name: str) -> str:
    """A variant's outputs file, as ``digests.json`` names it."""
    return f"{VARIANTS_DIR}/{name}/{OUTPUTS_FILE}"


def variants_with_outputs(folder: Path, names: Sequence[str]) -> tuple[str, ...]:
    """The variants whose lane wrote an outputs file: each one ``digests.json`` lists (a listed file that is gone is
    refused when read), or, without ``digests.json``, each one present. A variant of recorded outputs writes none."""
    from evalglass.engine.runs.digests import load_digests

    digests = load_digests(folder)
    return tuple(
        name
        for name in names
        if (folder / variant_outputs_file(name)).exists()
        or (digests is not None and variant_outputs_file(name) in digests.files)
    )


def variant_samples(
    folder: Path, names: Sequence[str], wanted: Collection[str]
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per wanted example id, per variant of ``names``, its samples as recorded (``{"output": …}`` or
    ``{"error": …}``), every file checked against ``digests.json`` (see the module docstring)."""
    from evalglass.engine.runs.digests import load_digests

    digests = load_digests(folder)
    listed: Mapping[str, str] | None = None if digests is None else digests.files
    found: dict[str, dict[str, list[dict[str, Any]]]] = {}
    # The lane writes each line with orjson, its id first: a line that starts with a string id not wanted is hashed
    # and not parsed (a third of the time of reading 1,000,000 lines). Any other line is parsed.
    heads = {b'{"id":' + orjson.dumps(example_id) for example_id in wanted}
    for name in names:
        file = variant_outputs_file(name)
        path = folder / file
        if listed is not None and file not in listed:
            raise SetupError(f"digests.json does not list {file}, the outputs variant '{name}' scored", where=str(path))
        digest = hashlib.sha256()
        with open_artifact(path, "outputs file") as handle:
            for number, raw in enumerate(handle, start=1):
                digest.update(raw)
                if not raw.strip() or (raw.startswith(b'{"id":"') and raw[: raw.find(b',"')] not in heads):
                    continue
                try:
                    row = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    raise SetupError("line is not JSON", where=f"{path}:{number}") from None
                if isinstance(row, dict) and row.get("id") in wanted:
                    samples = row.get("samples")
                    found.setdefault(str(row["id"]), {})[name] = [
                        sample for sample in (samples if isinstance(samples, list) else []) if isinstance(sample, dict)
                    ]
        if listed is not None and PREFIX + digest.hexdigest() != listed[file]:
            raise SetupError(
                f"{file} is not the file digests.json lists: it changed since the run",
                where=str(path),
                fix="the outputs were edited; rerun `evalglass run` to see what a run scores",
            )
    return found
