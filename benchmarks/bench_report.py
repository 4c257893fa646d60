"""How large and how slow `evalglass report` is at 1,000 and 100,000 examples (figures in BENCHMARKS.md).

    python benchmarks/bench_report.py                  # 1,000 and 100,000 examples
    python benchmarks/bench_report.py --sizes 2000     # chosen sizes

Each size gets a deterministic project (fixed seed): a recorded task with outputs of about 200 characters,
an exact-match metric that misses about a quarter of the examples, a regex metric and 1 % of examples without a
reference (non-evaluable). `evalglass run` writes the run folder (not timed); `evalglass report` is then timed as
a fresh process, with its CPU time and peak RSS from the kernel (wait4), and the page's size is read. The report
is compared with `evalglass view` of the same run, measured in the same minute, as a reference.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = """\
version: 1
dataset: {name: bench, path: data.jsonl}
task: {type: recorded, field: output}
metrics:
  exact: {type: exact_match, reference: expected}
  cites: {type: regex, pattern: "docs\\\\.example\\\\.com/[a-z-]+"}
"""
WORDS = [
    "the",
    "a",
    "answer",
    "account",
    "billing",
    "plan",
    "reset",
    "password",
    "export",
    "invoice",
    "team",
    "seat",
    "limit",
    "per",
    "minute",
    "request",
]


def write_project(root: Path, n: int) -> None:
    rng = random.Random(n)
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "evalglass.yaml").write_text(CONFIG)
    (root / "evals" / "authority.yaml").write_text("version: 1\n")
    with (root / "evals" / "data.jsonl").open("w") as handle:
        for i in range(n):
            expected = " ".join(rng.choices(WORDS, k=4))
            answer = expected if rng.random() < 0.75 else " ".join(rng.choices(WORDS, k=30))
            if rng.random() < 0.5:
                answer += " See docs.example.com/" + rng.choice(WORDS)
            row = {"id": f"q{i:07d}", "question": " ".join(rng.choices(WORDS, k=12)) + "?", "output": answer}
            if rng.random() >= 0.01:
                row["expected"] = expected
            handle.write(json.dumps(row) + "\n")


def timed(argv: list[str], cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS in MB of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000])
    args = parser.parse_args()
    evalglass = [sys.executable, "-m", "evalglass"]
    print("| examples | embedded | report.html | report wall | report CPU | peak RSS | view wall (reference) |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            write_project(root, n)
            subprocess.run(
                [*evalglass, "run", "--out", "out", "--no-history"], cwd=root, check=True, capture_output=True
            )
            view_wall, _, _ = timed([*evalglass, "view", "out"], root)
            wall, cpu, rss = timed([*evalglass, "report", "out", "--out", "report.html"], root)
            page = (root / "report.html").read_text()
            embedded = page.count('<li class="ex"')
            size = len(page.encode())
            print(
                f"| {n:,} | {embedded:,} | {size / 1e6:.2f} MB | {wall:.2f} s | {cpu:.2f} s | {rss:.0f} MB "
                f"| {view_wall:.2f} s |"
            )


if __name__ == "__main__":
    main()
