"""Writes an inspect_ai log of N samples for benchmarks/bench_tool_import.py, from the committed real log.

Run with a Python that has inspect_ai's zip support (inspect_ai's own environment: it installs ``zipfile_zstd``,
which lets the standard library write zstd members as inspect_ai does):

    /tmp/inspect-venv/bin/python benchmarks/make_inspect_log.py 100000 /tmp/bench-100000.eval

Each sample is the real log's first sample with a new id (and its epoch-1 member name), compressed as inspect_ai
compresses: the file has the shape and the per-sample size of a real log of N samples. Making the log with the mock
model instead takes about 8 ms a sample (13 minutes for 100,000) on an idle machine.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import zipfile_zstd  # noqa: F401  (adds zstd to zipfile, as inspect_ai does)

SOURCE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "inspect" / "capitals.eval"


def main() -> int:
    count, target = int(sys.argv[1]), Path(sys.argv[2])
    with zipfile.ZipFile(SOURCE) as source:
        header = json.loads(source.read("header.json"))
        start = source.read("_journal/start.json")
        template = json.loads(source.read("samples/cap-01_epoch_1.json"))
    ids = [f"s{index:07d}" for index in range(count)]
    header["eval"]["dataset"]["samples"] = count
    header["eval"]["dataset"]["sample_ids"] = ids
    header["results"] = None
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_ZSTANDARD) as archive:  # type: ignore[attr-defined]
        archive.writestr("_journal/start.json", start)
        for index, sample_id in enumerate(ids):
            sample = dict(template, id=sample_id, input=f"What is {index} plus one?", target=str(index + 1))
            archive.writestr(f"samples/{sample_id}_epoch_1.json", json.dumps(sample))
        archive.writestr("header.json", json.dumps(header))
    print(f"wrote {target}: {count:,} samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
