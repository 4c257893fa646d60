"""EvalGlass benchmark suite: wall time and peak memory of real CLI runs against the floor program.

    python benchmarks/run.py                 # the full suite (100k and 1M examples), prints a Markdown table
    python benchmarks/run.py --smoke         # a small N, to keep the harness from rotting (CI runs this)
    python benchmarks/run.py --sizes 200000  # chosen sizes

Cases 1-3 at each size, then cases 5-7 (bad input that once made runs slow: malformed lines, a huge metric
description, thousands of metrics; each a ratio to its clean case in the same rotation), then case 4 (lane
throughput) through bench_lanes.py, then the compare case (`evalglass compare` of two runs of the largest size)
through bench_compare.py.

Data is synthetic and deterministic (a fixed seed), generated under benchmarks/.data/ and reused across runs.
Every measured command is a fresh process; peak RSS comes from the kernel's accounting of that child (wait4).
Targets are ratios to the floor measured in the same run, so they hold on noisy machines: the floor and both run
cases are measured in rotation (floor, case 1, case 2, floor, ...) so that drift in the machine's speed hits all of
them alike, and each reports its best of --repeats. Every run is checked with `evalglass verify` (not timed), so a
fast path that changed a score cannot produce a figure. EvalGlass is compiled to bytecode first, as an installed
copy is.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"

CONFIG = """\
version: 1
dataset: {{name: bench, path: {dataset}}}
task: {{type: recorded, field: output}}
metrics:
  exact: {{type: exact_match, field: answer, reference: expected}}
  has_digits: {{type: regex, field: answer, pattern: "\\\\d+"}}
  latency_ok: {{type: numeric_bounds, field: latency_ms, min: 0, max: 800}}
{gates}
"""


@dataclass(frozen=True)
class Measurement:
    label: str
    seconds: float
    peak_rss_mb: float
    cpu_seconds: float = 0.0


def generate(n: int) -> Path:
    """A deterministic dataset of n examples; regenerated only when missing."""
    path = DATA / f"bench-{n}.jsonl"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20261130)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    tmp = path.with_suffix(".partial")
    with tmp.open("w") as handle:
        for i in range(n):
            expected = f"{rng.choice(words)} {rng.randrange(100)}"
            output = expected if rng.random() < 0.8 else f"{rng.choice(words)} {rng.choice(words)}"
            latency = round(rng.uniform(50, 1000), 1)
            handle.write(
                json.dumps({"id": f"ex-{i}", "expected": expected, "output": {"answer": output, "latency_ms": latency}})
                + "\n"
            )
    tmp.replace(path)
    return path


def measure(label: str, argv: list[str], cwd: Path, expect: set[int] = frozenset({0})) -> Measurement:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in expect:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"{label}: exit {code}\n{err}")
    return Measurement(label, seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime)


def best_of(repeats: int, label: str, argv: list[str], cwd: Path, expect: set[int] = frozenset({0})) -> Measurement:
    runs = [measure(label, argv, cwd, expect) for _ in range(repeats)]
    return min(runs, key=lambda m: m.seconds)


def rotated(repeats: int, commands: list[tuple[str, list[str], Path, set[int]]]) -> dict[str, Measurement]:
    """Each command's best of ``repeats``, measured in rotation so slow phases of the machine hit all of them."""
    runs: dict[str, list[Measurement]] = {label: [] for label, *_ in commands}
    for _ in range(repeats):
        for label, argv, cwd, expect in commands:
            runs[label].append(measure(label, argv, cwd, expect))
    return {label: min(found, key=lambda m: m.seconds) for label, found in runs.items()}


def lane_throughput(python: str, calls: int, repeats: int) -> tuple[str, Measurement]:
    """Case 4 through `bench_lanes.py` (its own process, with the fake server in another): its verdict line and the
    process's wall time and peak RSS."""
    argv = [python, str(HERE / "bench_lanes.py"), "--calls", str(calls), "--repeat", str(repeats)]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"lane benchmark failed:\n{output}")
    verdict = output.strip().splitlines()[-1]
    return verdict, Measurement("lanes", time.perf_counter() - start, usage.ru_maxrss / 1024)


def compare_case(python: str, n: int, repeats: int) -> list[str]:
    """Case 8 through `bench_compare.py` (two runs of n examples, `evalglass compare` against plain Python): its
    table rows and its CPU line."""
    argv = [python, str(HERE / "bench_compare.py"), "--n", str(n), "--repeats", str(repeats)]
    output = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.splitlines()
    cpu = next(line for line in output if line.startswith("CPU"))
    rows = [line for line in output if line.startswith("| ") and not line.startswith("| examples")]
    return [*rows, f"| {n:,} | case 8 {cpu} | | | |"]


def history_case(python: str, n: int, runs: int, repeats: int) -> list[str]:
    """Case 10 through `bench_history.py` (recording a run of n examples; listing a history of `runs` runs): its
    table rows."""
    argv = [python, str(HERE / "bench_history.py"), "--n", str(n), "--runs", str(runs), "--repeats", str(repeats)]
    output = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.splitlines()
    return [line for line in output if line.startswith("| ") and not line.startswith("| examples")]


def verified(evalglass: list[str], folder: Path, verdict: str) -> None:
    """The measured run must re-derive exactly from its own scores and reach the verdict the case is about."""
    done = subprocess.run([*evalglass, "verify", "out"], cwd=folder, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"verify failed in {folder}:\n{done.stdout}{done.stderr}")
    found = json.loads((folder / "out" / "scorecard.json").read_text())["decision"]["verdict"]
    if found != verdict:
        raise SystemExit(f"{folder}: verdict {found}, expected {verdict} (is the gate really active?)")


def compile_bytecode(python: str) -> None:
    """Compile EvalGlass to bytecode first, as ``pip install`` does: an editable install under
    PYTHONDONTWRITEBYTECODE would otherwise compile every module from source in every measured process, which no
    installed copy does."""
    script = "import compileall, os, evalglass; compileall.compile_dir(os.path.dirname(evalglass.__file__), quiet=1)"
    subprocess.run([python, "-c", script], check=True)


def machine() -> str:
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f", {int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
    return (
        f"{platform.machine()}, {os.cpu_count()} CPUs{memory}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}, {time.strftime('%Y-%m-%d')}"
    )


def project(workdir: Path, dataset: Path, *, gated: bool) -> Path:
    folder = workdir / ("gated" if gated else "plain")
    folder.mkdir(parents=True, exist_ok=True)
    gates = ""
    if gated:
        gates = "gates:\n  accuracy: {metric: exact, proposed_threshold: 0.5}\n"
    (folder / "evalglass.yaml").write_text(CONFIG.format(dataset=dataset, gates=gates))
    ledger = "version: 1\n"
    (folder / "authority.yaml").write_text(ledger)
    return folder


def activate(folder: Path, evalglass: list[str]) -> None:
    """Write the ledger a host would write, from explain's fingerprints, so the gated case really gates."""
    subprocess.run([*evalglass, "run", "--out", "probe", "--no-history"], cwd=folder, check=False, capture_output=True)
    entries = json.loads(
        subprocess.run(
            [*evalglass, "explain", "accuracy", "--run", "probe", "--format", "json"],
            cwd=folder,
            check=True,
            capture_output=True,
        ).stdout
    )
    (folder / "authority.yaml").write_text("version: 1\n" + entries[0]["ledger_entry"] + "\n")
    shutil.rmtree(folder / "probe")


def bad_input_project(folder: Path, dataset: Path, metrics: str) -> Path:
    """A project of its own for one bad-input case: the dataset and the ``metrics:`` block given."""
    folder.mkdir(parents=True, exist_ok=True)
    config = f"version: 1\ndataset: {{name: bench, path: {dataset}}}\ntask: {{type: recorded, field: output}}\n"
    (folder / "evalglass.yaml").write_text(config + "metrics:\n" + metrics)
    (folder / "authority.yaml").write_text("version: 1\n")
    return folder


def with_malformed(dataset: Path, every: int) -> Path:
    """The dataset with every ``every``-th line cut short (not valid JSON): 10 % malformed for every=10."""
    path = dataset.with_name(f"{dataset.stem}-malformed-{every}.jsonl")
    if not path.exists():
        with dataset.open() as source, path.open("w") as target:
            for number, line in enumerate(source):
                target.write(line[:-4] + "\n" if number % every == every - 1 else line)
    return path


def bad_input_cases(python: str, work: Path, n: int, repeats: int, smoke: bool) -> list[str]:
    """Issue 11's slow paths, each as a ratio to its clean case measured in the same rotation: a dataset with 10 %
    malformed lines (vs the same dataset clean), a 20 MB metric description (vs none) and 2,000 metrics (vs one)."""
    evalglass = [python, "-m", "evalglass"]
    dataset = generate(n)
    small = generate(100)
    metric = "  exact{i}: {{type: exact_match, field: answer, reference: expected{extra}}}\n"
    description = 1_000_000 if smoke else 20_000_000
    count = 200 if smoke else 2_000
    root = work / "bad-input"
    projects = {
        "clean": bad_input_project(root / "clean", dataset, metric.format(i="", extra="")),
        "malformed": bad_input_project(root / "malformed", with_malformed(dataset, 10), metric.format(i="", extra="")),
        "one metric": bad_input_project(root / "one", small, metric.format(i="", extra="")),
        "long description": bad_input_project(
            root / "description", small, metric.format(i="", extra=f', description: "{"x" * description}"')
        ),
        "many metrics": bad_input_project(
            root / "many", small, "".join(metric.format(i=i, extra="") for i in range(count))
        ),
    }
    best = rotated(
        repeats,
        [
            (label, [*evalglass, "run", "--out", "out", "--no-history"], folder, {0})
            for label, folder in projects.items()
        ],
    )
    for folder in projects.values():
        verified(evalglass, folder, "informational")
    cases = [
        ("malformed", "clean", f"case 5: {n:,} lines, 10 % malformed"),
        ("long description", "one metric", f"case 6: a {description / 1e6:.0f} MB metric description"),
        ("many metrics", "one metric", f"case 7: {count:,} metrics (100 examples)"),
    ]
    rows = []
    for label, reference, title in cases:
        found, clean = best[label], best[reference]
        rows.append(
            f"| — | {title} | {found.seconds:.2f} s (CPU {found.cpu_seconds:.2f} s) | {found.peak_rss_mb:.0f} MB | "
            f"{found.seconds / clean.seconds:.2f}× its clean case ({reference}: {clean.seconds:.2f} s, "
            f"CPU {clean.cpu_seconds:.2f} s; CPU ratio {found.cpu_seconds / clean.cpu_seconds:.2f}×) |"
        )
    return rows


def ray_case(python: str, smoke: bool) -> list[str]:
    """Case 9 through `bench_ray.py` (a local Ray cluster of its own), when Ray is installed (the `ray` extra)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        return ["| — | case 9: Ray executor | skipped: ray is not installed (pip install 'evalglass[ray]') | | |"]
    argv = [python, str(HERE / "bench_ray.py"), *(["--smoke"] if smoke else [])]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"ray benchmark failed:\n{done.stdout}{done.stderr}")
    table = [line for line in done.stdout.splitlines() if line.startswith("| ") and not line.startswith("| examples")]
    return [line.replace(" | ", " | case 9: ", 1) + " |" for line in table]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="one small size, one repeat")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = [2_000] if args.smoke else args.sizes
    repeats = 1 if args.smoke else args.repeats
    python = sys.executable
    evalglass = [python, "-m", "evalglass"]
    compile_bytecode(python)
    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix="evalglass-bench-") as tmp:
        work = Path(tmp)
        for n in sizes:
            dataset = generate(n)
            plain = project(work / str(n), dataset, gated=False)
            gated = project(work / str(n), dataset, gated=True)
            activate(gated, evalglass)
            best = rotated(
                repeats,
                [
                    ("floor", [python, str(HERE / "floor.py"), str(dataset)], work, {0}),
                    ("floor+imports", [python, str(HERE / "floor.py"), str(dataset), "--with-imports"], work, {0}),
                    ("run", [*evalglass, "run", "--out", "out", "--no-history"], plain, {0}),
                    ("run gated", [*evalglass, "run", "--out", "out", "--no-history"], gated, {0}),
                ],
            )
            floor, stack, case1, case2 = best["floor"], best["floor+imports"], best["run"], best["run gated"]
            verified(evalglass, plain, "informational")
            verified(evalglass, gated, "pass")
            view = best_of(repeats, "view", [*evalglass, "view", "out"], plain)
            rows += [
                f"| {n:,} | reference: the floor after importing the prescribed libraries | {stack.seconds:.2f} s | "
                f"{stack.peak_rss_mb:.0f} MB | {stack.seconds / floor.seconds:.2f}× floor |",
                f"| {n:,} | case 1: run, 3 metrics, no gate | {case1.seconds:.2f} s | {case1.peak_rss_mb:.0f} MB | "
                f"{case1.seconds / floor.seconds:.2f}× floor ({floor.seconds:.2f} s, {floor.peak_rss_mb:.0f} MB) |",
                f"| {n:,} | case 2: + active gate | {case2.seconds:.2f} s | {case2.peak_rss_mb:.0f} MB | "
                f"{case2.seconds / case1.seconds:.2f}× case 1 |",
                f"| {n:,} | case 3: view of that run | {view.seconds:.2f} s | {view.peak_rss_mb:.0f} MB | |",
            ]
        rows += bad_input_cases(python, work, sizes[0], repeats, args.smoke)
        helptime = best_of(repeats, "help", [*evalglass, "--help"], work)
        rows.append(f"| — | case 3: --help | {helptime.seconds:.2f} s | {helptime.peak_rss_mb:.0f} MB | |")
        calls = 640 if args.smoke else 5_000
        verdict, lanes = lane_throughput(python, calls, repeats)
        runs = f"{repeats} run{'s' if repeats != 1 else ''}"
        rows.append(
            f"| {calls:,} calls | case 4: chat lane, concurrency 64, 50 ms server (`bench_lanes.py`) | "
            f"{lanes.seconds:.2f} s ({runs}) | {lanes.peak_rss_mb:.0f} MB | {verdict} |"
        )
        rows += compare_case(python, sizes[-1], repeats)
        rows += ray_case(python, args.smoke)
        rows += history_case(python, sizes[-1], 200 if args.smoke else 10_000, repeats)
    print(f"machine: {machine()}; best of {repeats}")
    print("| examples | case | wall | peak RSS | ratio |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
