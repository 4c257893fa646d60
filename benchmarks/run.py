"""EvalGlass's benchmarks in one command: every case that has a target, beside its floor, into BENCHMARKS.md.

    python benchmarks/run.py --all      # every case at the size its target names; writes BENCHMARKS.md
    python benchmarks/run.py --quick    # smaller sizes, fewer repeats: checks that every case works; prints the table
    python benchmarks/run.py --smoke    # the smallest sizes, one repeat (CI runs this); prints the table
    python benchmarks/run.py --quick --only recorded "python lane"   # some cases (names: --list)

The cases, their sizes at each scale and their targets are one list, ``CASES`` in ``benchmarks/suite.py``; each
measures its case and its floor in rotation (floor, case, floor, case, ...) in the same minutes, so a slow phase of
a shared machine hits both alike, and reports wall time and CPU time (user + system, from the kernel's accounting
of the reaped child, ``wait4``). ``benchmarks/figures.py`` writes the table between its markers at the top of
BENCHMARKS.md, with the commit, the machine, the date and the load average at the start and the end.

This module also holds what the cases share: the recorded path's data (synthetic, deterministic, generated under
benchmarks/.data/ and reused), the rotation, ``verify`` of every measured run (a fast path that changed a score
cannot produce a figure) and the bytecode compilation an installed copy would have.
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
import time
from dataclasses import dataclass
from pathlib import Path

from outfolder import clear_run_folder

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
    clear_run_folder(argv, cwd)
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


def machine(*, with_date: bool = True) -> str:
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f", {int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
    return (
        f"{platform.machine()}, {os.cpu_count()} CPUs{memory}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}" + (f", {time.strftime('%Y-%m-%d')}" if with_date else "")
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


def recorded_cases(python: str, work: Path, n: int, repeats: int) -> tuple[dict[str, Measurement], Path]:
    """Cases 1 and 2 at ``n`` examples beside the floor, in rotation: ``floor``, ``run`` (3 metrics, no gate) and
    ``run gated`` (an active gate on a reference metric: the gold fingerprint and a Wilson bound); each run checked
    with ``verify`` and its verdict. Returns the best of each and the plain run's folder (for ``view``)."""
    evalglass = [python, "-m", "evalglass"]
    dataset = generate(n)
    plain = project(work, dataset, gated=False)
    gated = project(work, dataset, gated=True)
    activate(gated, evalglass)
    best = rotated(
        repeats,
        [
            ("floor", [python, str(HERE / "floor.py"), str(dataset)], work, {0}),
            ("run", [*evalglass, "run", "--out", "out", "--no-history"], plain, {0}),
            ("run gated", [*evalglass, "run", "--out", "out", "--no-history"], gated, {0}),
        ],
    )
    verified(evalglass, plain, "informational")
    verified(evalglass, gated, "pass")
    return best, plain


def view_and_help(python: str, folder: Path, repeats: int) -> dict[str, Measurement]:
    """Case 3 in rotation with the interpreter's own start (``start``): ``view`` of the run in ``folder``/out and
    ``--help``."""
    evalglass = [python, "-m", "evalglass"]
    return rotated(
        repeats,
        [
            ("start", [python, "-c", "pass"], folder, {0}),
            ("view", [*evalglass, "view", "out"], folder, {0}),
            ("help", [*evalglass, "--help"], folder, {0}),
        ],
    )


def bad_input(
    python: str, work: Path, n: int, description_mb: int, metrics: int, repeats: int
) -> dict[str, Measurement]:
    """Issue 11's slow paths, each beside its clean case in one rotation: ``malformed`` (``n`` lines, every tenth cut
    short) beside ``clean``; ``long description`` (a metric with a ``description_mb`` MB description) and ``many
    metrics`` (``metrics`` exact_match metrics, 100 examples) beside ``one metric``."""
    evalglass = [python, "-m", "evalglass"]
    dataset = generate(n)
    small = generate(100)
    metric = "  exact{i}: {{type: exact_match, field: answer, reference: expected{extra}}}\n"
    projects = {
        "clean": bad_input_project(work / "clean", dataset, metric.format(i="", extra="")),
        "malformed": bad_input_project(work / "malformed", with_malformed(dataset, 10), metric.format(i="", extra="")),
        "one metric": bad_input_project(work / "one", small, metric.format(i="", extra="")),
        "long description": bad_input_project(
            work / "description", small, metric.format(i="", extra=f', description: "{"x" * description_mb * 10**6}"')
        ),
        "many metrics": bad_input_project(
            work / "many", small, "".join(metric.format(i=i, extra="") for i in range(metrics))
        ),
    }
    argv = [*evalglass, "run", "--out", "out", "--no-history"]
    best = rotated(repeats, [(label, argv, folder, {0}) for label, folder in projects.items()])
    for folder in projects.values():
        verified(evalglass, folder, "informational")
    return best


def git_commit() -> str:
    """The commit measured, marked when the work tree differs from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + (" + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def main(argv: list[str] | None = None) -> int:
    import suite
    from figures import Context, render, replace_section

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    scale = parser.add_mutually_exclusive_group(required=True)
    for name, scale_of in suite.SCALES.items():
        scale.add_argument(f"--{name}", action="store_const", dest="scale", const=scale_of, help=scale_of.help)
    scale.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--only", nargs="+", metavar="CASE", help="measure these cases only (and write nothing)")
    parser.add_argument("--doc", type=Path, default=HERE.parent / "BENCHMARKS.md", help="the document --all writes")
    parser.add_argument("--write", action="store_true", help="write the table into --doc at --quick's sizes too")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(f"{case.name}: {case.what}" for case in suite.CASES))
        return 0
    chosen = suite.select(args.only)
    started, load_start = time.monotonic(), os.getloadavg()[0]
    compile_bytecode(sys.executable)
    rows, failed = suite.measure_all(chosen, args.scale)
    context = Context(
        command=f"python benchmarks/run.py --{args.scale.name}"
        + (f" --only {' '.join(args.only)}" if args.only else ""),
        commit=git_commit(),
        machine=machine(with_date=False),
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        load_start=load_start,
        load_end=os.getloadavg()[0],
        minutes=(time.monotonic() - started) / 60,
        notes=args.scale.notes,
    )
    section = render(rows, context)
    print(section)
    if (args.scale.writes or (args.write and args.scale.name == "quick")) and not args.only:
        args.doc.write_text(replace_section(args.doc.read_text(), section))
        print(f"\nwritten to {args.doc}")
    for name, error in failed:
        print(f"case {name!r} failed: {error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
