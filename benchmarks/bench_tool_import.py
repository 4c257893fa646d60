"""Importing an inspect_ai log: EvalGlass's reader beside a floor that reads the same zip with the standard library.

Issue 31 asks that reading a 100,000-sample inspect log take at most 2× a floor that reads the same zip with the
standard library. inspect_ai writes its members zstd-compressed, which the standard library decompresses only from
Python 3.14; so the floor is the standard library's ``zipfile`` (the directory), the member's bytes read at its
offset, ``zstandard`` to decompress them (what 3.14's ``zipfile`` would do), and ``json.loads``; it picks the
sample's id, epoch, input, target, answer and scores.

* ``reader``: ``InspectReader.batches()`` (the file hashed, header and version checked, samples grouped by id in
  the dataset's order, records built, batches of 256), as a run reads the dataset.

Each measurement is a fresh child process (wall, CPU, peak RSS), in rotation. The log comes from
``benchmarks/make_inspect_log.py`` (run it with inspect_ai's environment first):

    /tmp/inspect-venv/bin/python benchmarks/make_inspect_log.py 100000 /tmp/inspect-100000.eval
    .venv/bin/python benchmarks/bench_tool_import.py /tmp/inspect-100000.eval --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path


def floor(path: Path) -> int:
    import zstandard

    picked = 0
    decompressor = zstandard.ZstdDecompressor()
    with zipfile.ZipFile(path) as archive, path.open("rb") as handle:
        for info in archive.infolist():
            if not info.filename.startswith("samples/"):
                continue
            handle.seek(info.header_offset)
            name_length, extra_length = struct.unpack("<HH", handle.read(30)[26:30])
            handle.seek(info.header_offset + 30 + name_length + extra_length)
            sample = json.loads(decompressor.decompressobj().decompress(handle.read(info.compress_size)))
            record = {
                "id": sample["id"],
                "epoch": sample["epoch"],
                "input": sample["input"],
                "target": sample["target"],
                "text": sample["output"].get("completion"),
                "scores": {name: score.get("value") for name, score in (sample.get("scores") or {}).items()},
            }
            picked += len(record) > 0
    return picked


def reader(path: Path) -> int:
    from evalglass.engine.datasets.toollogs.toolinspect import InspectReader

    examples = 0
    for batch in InspectReader(path).batches():
        examples += len(batch)
    return examples


def measure(kind: str, path: Path) -> dict[str, float]:
    if kind == "reader":  # imports are outside the clock, for both
        from evalglass.engine.datasets.toollogs.toolinspect import InspectReader  # noqa: F401
    else:
        import zstandard  # noqa: F401
    start, cpu = time.perf_counter(), time.process_time()
    count = (floor if kind == "floor" else reader)(path)
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    return {
        "count": count,
        "wall": wall,
        "cpu": used,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("log", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.log)))
        return 0
    print(f"load before: {os.getloadavg()}")
    results: dict[str, list[dict[str, float]]] = {"floor": [], "reader": []}
    for _ in range(args.rounds):
        for kind in ("floor", "reader"):
            done = subprocess.run(
                [sys.executable, __file__, str(args.log), "--measure", kind], capture_output=True, text=True, check=True
            )
            results[kind].append(json.loads(done.stdout))
    walls = [o["wall"] / f["wall"] for f, o in zip(results["floor"], results["reader"], strict=True)]
    cpus = [o["cpu"] / f["cpu"] for f, o in zip(results["floor"], results["reader"], strict=True)]
    for kind, rows in results.items():
        print(
            f"{kind:>6}: wall {statistics.median(r['wall'] for r in rows):.2f}s cpu "
            f"{statistics.median(r['cpu'] for r in rows):.2f}s peak {max(r['peak_mb'] for r in rows):.0f} MB "
            f"({rows[0]['count']:,} read)"
        )
    print(
        f"ratio wall {statistics.median(walls):.2f} ({', '.join(f'{r:.2f}' for r in walls)}) cpu "
        f"{statistics.median(cpus):.2f} ({', '.join(f'{r:.2f}' for r in cpus)})"
    )
    print(f"load after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
