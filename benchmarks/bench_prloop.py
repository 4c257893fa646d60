"""Issue 13 figures at 1,000,000 examples: outputs in their own file (in step vs by index, against outputs in the
dataset file), the gold fingerprint's cost, and `view --examples`. Wall time (best of N, rotated) and child CPU.

    python benchmarks/bench_prloop.py [--n 1000000] [--repeat 3] [--gold-only]
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from outfolder import clear_run_folder  # noqa: E402
from run import compile_bytecode, generate  # noqa: E402

CONFIG = """version: 1
dataset: {{name: bench, path: {dataset}}}
task: {task}
metrics:
  exact: {{type: exact_match, field: answer, reference: expected}}
  has_digits: {{type: regex, field: answer, pattern: "\\\\d+"}}
  latency_ok: {{type: numeric_bounds, field: latency_ms, min: 0, max: 800}}
{gates}"""


def split(dataset: Path, folder: Path, n: int) -> None:
    """gold.jsonl without outputs, outputs.jsonl in the same order, shuffled.jsonl in a random order."""
    if (folder / "shuffled.jsonl").exists():
        return
    outputs = []
    with dataset.open() as src, (folder / "gold.jsonl").open("w") as gold, (folder / "outputs.jsonl").open("w") as out:
        for line in src:
            row = json.loads(line)
            output = row.pop("output")
            gold.write(json.dumps(row) + "\n")
            text = json.dumps({"id": row["id"], "output": output}) + "\n"
            out.write(text)
            outputs.append(text)
    random.Random(13).shuffle(outputs)
    (folder / "shuffled.jsonl").write_text("".join(outputs))


def setup(folder: Path, name: str, dataset: str, task: str, gated: bool) -> Path:
    project = folder / name
    project.mkdir(exist_ok=True)
    gates = "gates:\n  accuracy: {metric: exact, proposed_threshold: 0.5}\n" if gated else ""
    (project / "evalglass.yaml").write_text(CONFIG.format(dataset=dataset, task=task, gates=gates))
    (project / "authority.yaml").write_text("version: 1\n")
    return project


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    clear_run_folder(argv, cwd)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{argv} in {cwd}: {proc.stderr.read().decode() if proc.stderr else ''}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gold-only", action="store_true", help="only the two cases that isolate the gold fingerprint")
    args = parser.parse_args()
    python = sys.executable
    compile_bytecode(python)
    dataset = generate(args.n)
    work = Path(tempfile.gettempdir()) / f"evalglass-bench-prloop-{args.n}"
    work.mkdir(exist_ok=True)
    split(dataset, work, args.n)
    run = [python, "-m", "evalglass", "run", "--out", "out"]
    cases = {
        "outputs in the dataset file, no gate": (setup(work, "infile", str(dataset), "{type: recorded}", False), run),
        "outputs in the dataset file, gate on a reference (gold fingerprint)": (
            setup(work, "infile_gold", str(dataset), "{type: recorded}", True),
            run,
        ),
        "outputs in their own file, same order (in step)": (
            setup(work, "instep", "../gold.jsonl", "{type: recorded, path: ../outputs.jsonl}", False),
            run,
        ),
        "outputs in their own file, shuffled (index)": (
            setup(work, "index", "../gold.jsonl", "{type: recorded, path: ../shuffled.jsonl}", False),
            run,
        ),
    }
    if args.gold_only:
        cases = {label: case for label, case in cases.items() if "dataset file" in label}
    best: dict[str, tuple[float, float]] = {}
    least_cpu: dict[str, float] = {}
    for _ in range(args.repeat):
        for label, (cwd, argv) in cases.items():
            found = timed(argv, cwd)
            if label not in best or found[0] < best[label][0]:
                best[label] = found
            least_cpu[label] = min(least_cpu.get(label, found[1]), found[1])
    if args.gold_only:
        reference_cpu = least_cpu["outputs in the dataset file, no gate"]
        print("| case | best wall | least CPU | CPU ratio |")
        print("|---|---|---|---|")
        for label, cpu in least_cpu.items():
            print(f"| {label} | {best[label][0]:.2f} s | {cpu:.2f} s | {cpu / reference_cpu:.2f}× |")
        return
    view_cwd = cases["outputs in the dataset file, gate on a reference (gold fingerprint)"][0]
    for label, argv in {
        "view --examples (first 20 not passing)": [python, "-m", "evalglass", "view", "out", "--examples"],
        "view --examples --state error (none: whole file scanned)": [
            python,
            "-m",
            "evalglass",
            "view",
            "out",
            "--examples",
            "--state",
            "error",
        ],
    }.items():
        best[label] = min((timed(argv, view_cwd) for _ in range(args.repeat)), key=lambda m: m[0])
    reference = best["outputs in the dataset file, no gate"][0]
    print(f"| {args.n:,} examples | wall | CPU | ratio to outputs in the dataset file |")
    print("|---|---|---|---|")
    for label, (wall, cpu) in best.items():
        print(f"| {label} | {wall:.2f} s | {cpu:.2f} s | {wall / reference:.2f}× |")


if __name__ == "__main__":
    main()
