"""Case 8: `evalglass compare` of two runs against a plain-Python program that pairs their score files.

    python benchmarks/bench_compare.py                  # 1,000,000 examples, best of 3
    python benchmarks/bench_compare.py --n 2000 --repeats 1   # the smoke size

Two runs of one deterministic dataset (the baseline scores field `old`, the candidate `new`; about 5 % of examples
flip either way) are made once, untimed. Then, in rotation (reference, compare, reference, ...), best of --repeats:

- reference: `compare_reference.py`, the least a plain-Python program does to answer the question: read both
  scores files (stdlib json), keep the baseline's values by id in a dict, walk the candidate's and average the
  paired differences of one metric;
- `evalglass compare BASE CAND --metric exact --format json`: the same pairing by id, plus the paired interval,
  McNemar's test, the flips with their ids, the one-sided examples, and the fingerprints of both runs.

Target (issue 14): compare at most 2x the reference; peak RSS is reported beside it (the columns are numpy arrays:
no object per example at rest).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import DATA, Measurement, compile_bytecode, machine, rotated  # noqa: E402

CONFIG = """\
version: 1
dataset: {{name: bench, path: {dataset}}}
task: {{type: recorded, field: {field}}}
metrics:
  exact: {{type: exact_match, field: answer, reference: expected}}
  has_digits: {{type: regex, field: answer, pattern: "\\\\d+"}}
"""


def generate(n: int) -> Path:
    path = DATA / f"compare-{n}.jsonl"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20261201)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    tmp = path.with_suffix(".partial")
    with tmp.open("w") as handle:
        for i in range(n):
            expected = f"{rng.choice(words)} {rng.randrange(100)}"
            old = expected if rng.random() < 0.8 else f"{rng.choice(words)} {rng.choice(words)}"
            new = old if rng.random() < 0.9 else (expected if rng.random() < 0.5 else "nothing")
            row = {"id": f"ex-{i}", "expected": expected, "old": {"answer": old}, "new": {"answer": new}}
            handle.write(json.dumps(row) + "\n")
    tmp.replace(path)
    return path


def make_run(evalglass: list[str], work: Path, dataset: Path, field: str) -> Path:
    folder = work / field
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evalglass.yaml").write_text(CONFIG.format(dataset=dataset, field=field))
    (folder / "authority.yaml").write_text("version: 1\n")
    subprocess.run(
        [*evalglass, "run", "--out", "out", "--no-history", "--format", "json"],
        cwd=folder,
        check=True,
        capture_output=True,
    )
    return folder / "out"


def measure(n: int, repeats: int) -> dict[str, Measurement]:
    """``reference``, ``compare`` (one metric), ``compare all`` and ``gate`` (the same comparison decided as a
    ``lower_bound`` comparative gate: ``bench_comparative_gate.py``) on two runs of ``n`` examples, each its best of
    ``repeats`` in rotation; refuses to report when compare's mean difference is not the reference's."""
    python = sys.executable
    evalglass = [python, "-m", "evalglass"]
    dataset = generate(n)
    with tempfile.TemporaryDirectory(prefix="evalglass-bench-compare-") as tmp:
        work = Path(tmp)
        base = make_run(evalglass, work, dataset, "old")
        candidate = make_run(evalglass, work, dataset, "new")
        reference = [
            python,
            str(HERE / "compare_reference.py"),
            str(base / "scores.jsonl"),
            str(candidate / "scores.jsonl"),
        ]
        one = [*evalglass, "compare", str(base), str(candidate), "--metric", "exact", "--format", "json"]
        gate = [python, str(HERE / "bench_comparative_gate.py"), "--case", str(base), str(candidate)]
        best = rotated(
            repeats,
            [
                ("reference", reference, work, {0}),
                ("compare", one, work, {0}),
                ("compare all", [*evalglass, "compare", str(base), str(candidate), "--format", "json"], work, {0}),
                ("gate", gate, work, {0}),
            ],
        )
        expected = float(subprocess.run(reference, check=True, capture_output=True, text=True).stdout)
        payload = json.loads(subprocess.run(one, check=True, capture_output=True, text=True).stdout)
        found = payload["metrics"][0]["difference"]["interval"]["point"]
        if abs(found - expected) > 1e-12:
            raise SystemExit(f"compare says {found}, the reference {expected}: the figures would be meaningless")
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    compile_bytecode(sys.executable)
    best = measure(args.n, args.repeats)
    ref, case, every = best["reference"], best["compare"], best["compare all"]
    print(f"machine: {machine()}; best of {args.repeats}")
    print(
        f"CPU (user + system, of the best wall run): reference {ref.cpu_seconds:.2f} s, compare --metric exact "
        f"{case.cpu_seconds:.2f} s ({case.cpu_seconds / ref.cpu_seconds:.2f}x)"
    )
    print("| examples | case | wall | peak RSS | ratio |")
    print("|---|---|---|---|---|")
    print(
        f"| {args.n:,} | reference: plain Python pairs two score files | {ref.seconds:.2f} s | "
        f"{ref.peak_rss_mb:.0f} MB | |"
    )
    print(
        f"| {args.n:,} | case 8: compare --metric exact | {case.seconds:.2f} s | {case.peak_rss_mb:.0f} MB | "
        f"{case.seconds / ref.seconds:.2f}× reference |"
    )
    print(
        f"| {args.n:,} | case 8: compare, both metrics | {every.seconds:.2f} s | {every.peak_rss_mb:.0f} MB | "
        f"{every.seconds / ref.seconds:.2f}× reference |"
    )


if __name__ == "__main__":
    main()
