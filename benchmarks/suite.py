"""Every benchmark case that has a target, as one list: ``CASES``. ``python benchmarks/run.py`` measures them.

A case is a function from a :class:`Scale` (which sizes and how many repeats) and a scratch folder to table rows
(``figures.Row``): each figure beside the floor it was measured with, in the same rotation, and its target. Adding
a case is one entry in ``CASES`` (its name, one line on what it measures, its function); the function picks its
sizes with ``scale.pick(smoke, quick, full)`` and calls the benchmark script that does the work, so each script
still runs alone with its fuller report (``python benchmarks/bench_<name>.py``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import run as common
from figures import On, Row, Target, Timing

HERE = Path(__file__).resolve().parent
T = TypeVar("T")


@dataclass(frozen=True)
class Scale:
    name: str
    repeats: int
    help: str
    #: Whether `run.py` writes this scale's table into BENCHMARKS.md.
    writes: bool = False
    notes: tuple[str, ...] = ()

    def pick(self, smoke: T, quick: T, full: T) -> T:
        return {"smoke": smoke, "quick": quick, "all": full}[self.name]


SCALES = {
    "all": Scale(
        "all",
        3,
        "every case at the size its target names, best of 3; writes the table into BENCHMARKS.md",
        writes=True,
        notes=(
            "Best of 3 in rotation unless a case says median; wall is the process from start to exit unless the case "
            "names a phase. On a loaded machine wall times stretch and CPU times much less: read the CPU column then.",
        ),
    ),
    "quick": Scale(
        "quick",
        2,
        "smaller sizes, 2 repeats: checks that every case runs; prints the table",
        notes=(
            "Quick sizes: the command works, but these are not the figures the targets are about (`--all` on a quiet "
            "machine measures those).",
        ),
    ),
    "smoke": Scale(
        "smoke",
        1,
        "the smallest sizes, one repeat (CI); prints the table",
        notes=("Smoke sizes: the harness runs, nothing here is a measurement.",),
    ),
}


def timing(found: common.Measurement) -> Timing:
    return Timing(found.seconds, found.cpu_seconds, found.peak_rss_mb)


def median_timing(rounds: Sequence[tuple[float, float]], *, cpu_first: bool = False) -> Timing:
    """The median of each of two series of (wall, CPU), or (CPU, wall) with ``cpu_first``."""
    first = statistics.median(pair[0] for pair in rounds)
    second = statistics.median(pair[1] for pair in rounds)
    return Timing(second, first) if cpu_first else Timing(first, second)


# --------------------------------------------------------------------------------------------- the cases
def recorded(scale: Scale, work: Path) -> list[Row]:
    python = sys.executable
    sizes = scale.pick((2_000,), (20_000,), (100_000, 1_000_000))
    rows: list[Row] = []
    for n in sizes:
        best, folder = common.recorded_cases(python, work / str(n), n, scale.repeats)
        run, gated = timing(best["run"]), timing(best["run gated"])
        rows += [
            Row(f"recorded run, 3 metrics, no gate: {n:,} examples (case 1)", Target(On.WALL_RATIO, 2.0), run,
                "`floor.py`: same fields, same comparisons", timing(best["floor"])),
            Row(f"+ an active gate on a reference metric (gold fingerprint, Wilson): {n:,} (case 2)",
                Target(On.WALL_RATIO, 1.10, "≤ 1.10× case 1"), gated, "case 1", run),
        ]  # fmt: skip
    rows.append(Row(f"case 1's peak memory at {sizes[-1]:,} examples", Target(On.PEAK_RSS_MB, 400), run))
    start = common.view_and_help(python, folder, scale.repeats)
    rows += [
        Row(f"`view` of the {sizes[-1]:,}-example run (case 3)", Target(On.WALL_SECONDS, 1.5),
            timing(start["view"]), "the interpreter's start", timing(start["start"])),
        Row("`evalglass --help` (case 3)", Target(On.WALL_SECONDS, 0.5), timing(start["help"]),
            "the interpreter's start", timing(start["start"])),
    ]  # fmt: skip
    return rows


def bad_input(scale: Scale, work: Path) -> list[Row]:
    n = scale.pick(2_000, 20_000, 100_000)
    megabytes, metrics = scale.pick((1, 200), (5, 500), (20, 2_000))
    best = common.bad_input(sys.executable, work, n, megabytes, metrics, scale.repeats)
    few = Target(On.WALL_RATIO, 3.0, "≤ 3× its clean case (a few times)")
    return [
        Row(f"{n:,} lines, every tenth malformed (case 5)", few, timing(best["malformed"]), "the lines intact",
            timing(best["clean"])),
        Row(f"a metric with a {megabytes} MB description, 100 examples (case 6)", few,
            timing(best["long description"]), "the metric without it", timing(best["one metric"])),
        Row(f"{metrics:,} metrics, 100 examples (case 7)", few, timing(best["many metrics"]), "one metric",
            timing(best["one metric"])),
    ]  # fmt: skip


def lane_throughput(scale: Scale, work: Path) -> list[Row]:
    calls = scale.pick(640, 1_000, 5_000)
    argv = [sys.executable, str(HERE / "bench_lanes.py"), "--calls", str(calls), "--repeat", str(scale.repeats)]
    done = subprocess.run([*argv, "--json"], capture_output=True, text=True, check=False, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"bench_lanes.py exited {done.returncode}: {done.stderr[-1500:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    figure = Timing(statistics.median(found["walls"]), statistics.median(found["cpus"]))
    return [
        Row(f"chat lane, {calls:,} calls at concurrency 64, 50 ms server, median (case 4)",
            Target(On.WALL_RATIO, 1.15, "≤ 1.15× ideal"), figure, "ideal: calls × 50 ms ÷ 64", Timing(found["ideal"]))
    ]  # fmt: skip


def python_lane(scale: Scale, work: Path) -> list[Row]:
    import bench_python_lane

    rows = []
    for n in scale.pick((2_000,), (20_000,), (100_000, 1_000_000)):
        for kind, case in (("sync", "11a"), ("async", "11b")):
            folder = work / f"{kind}-{n}"
            bench_python_lane.write_project(folder, kind, n)
            floor, run = bench_python_lane.one_case(folder, n, scale.repeats)
            rows.append(
                Row(f"python lane, {kind} function, exact match: {n:,} examples (case {case})",
                    Target(On.WALL_RATIO, 10.0), Timing(run.wall, run.cpu, run.peak_rss_mb),
                    "the same function called in a loop", Timing(floor.wall, floor.cpu))
            )  # fmt: skip
    return rows


def chat_cpu(scale: Scale, work: Path) -> list[Row]:
    import bench_chat_cpu

    calls, rounds = scale.pick(200, 1_000, 2_000), scale.pick(1, 3, 5)
    found = bench_chat_cpu.measure(calls, 64, 0.01, rounds)
    return [
        Row(f"chat lane CPU: `run`'s scoring phase, {calls:,} calls, c=64, 10 ms server, cache on, median of "
            f"{rounds} (case 11c)", Target(On.CPU_RATIO, 2.0, "≤ 2× bare (CPU)"),
            median_timing(found["run"], cpu_first=True), "bare aiohttp client",
            median_timing(found["bare"], cpu_first=True))
    ]  # fmt: skip


def chat_wall(scale: Scale, work: Path) -> list[Row]:
    import bench_chat_wall

    calls, rounds = scale.pick(200, 1_000, 3_000), scale.pick(1, 2, 3)
    found = bench_chat_wall.measure(calls, 64, 0.05, rounds, ["quiet", "busy"])
    rows = []
    for condition, (bare, phase, _) in found.items():
        beside = "" if condition == "quiet" else ", beside a busy process"
        rows.append(
            Row(f"chat lane wall: `run`'s scoring phase, {calls:,} calls, c=64, 50 ms server{beside}, median of "
                f"{rounds} (case 11c)", Target(On.WALL_RATIO, 1.15, "≤ 1.15× bare"),
                Timing(statistics.median(phase)), "bare aiohttp client", Timing(statistics.median(bare)))
        )  # fmt: skip
    return rows


def command_lane(scale: Scale, work: Path) -> list[Row]:
    import bench_command_lane

    calls, rounds = scale.pick(20, 200, 1_000), scale.pick(1, 2, 3)
    found = bench_command_lane.measure(calls, rounds)
    return [
        Row(f"command lane (`cat`), per call, marginal over {calls:,} calls, median of {rounds} (case 11d)",
            Target(On.REPORTED), median_timing(found["lane"]), "`subprocess.run` in a loop",
            median_timing(found["bare"]))
    ]  # fmt: skip


def preflight(scale: Scale, work: Path) -> list[Row]:
    import bench_preflight

    gates, examples = scale.pick((20, 2_000), (200, 20_000), (2_000, 100_000))
    one, many = bench_preflight.measure(gates, examples, scale.repeats)
    return [
        Row(f"`preflight` of {gates:,} gates, {examples:,} examples hashed for gold (issue 19)",
            Target(On.WALL_SECONDS, 1.0, "< 1 s (well under)"), timing(many), "a one-gate preflight", timing(one))
    ]  # fmt: skip


def compare(scale: Scale, work: Path) -> list[Row]:
    import bench_compare

    n = scale.pick(2_000, 100_000, 1_000_000)
    best = bench_compare.measure(n, scale.repeats)
    return [
        Row(f"`compare` of two {n:,}-example runs, one metric (case 8)", Target(On.WALL_RATIO, 2.0, "≤ 2× reference"),
            timing(best["compare"]), "plain Python pairs the two scores files", timing(best["reference"])),
        Row("the same runs decided as a `lower_bound` comparative gate: three-way rule, power statements (issue 27)",
            Target(On.WALL_RATIO, 1.10, "≤ 1.10× compare"), timing(best["gate"]), "case 8's `compare`",
            timing(best["compare"])),
    ]  # fmt: skip


def history(scale: Scale, work: Path) -> list[Row]:
    import bench_history

    n, runs = scale.pick(2_000, 100_000, 1_000_000), scale.pick(200, 1_000, 10_000)
    recorded_best, _, _ = bench_history.recording(sys.executable, work, n, scale.repeats)
    listed = bench_history.listing(sys.executable, work, runs, scale.repeats)
    rows = [
        Row(f"record a {n:,}-example run in the history, `history import` (case 10a)",
            Target(On.WALL_RATIO, 1.0, "≤ 1× writing its folder"), timing(recorded_best["record"]),
            "the run writing its folder again", timing(recorded_best["run"]))
    ]  # fmt: skip
    for label, (what, _) in bench_history.LISTINGS.items():
        rows.append(
            Row(f"{what} over {runs:,} runs (case 10b)", Target(On.WALL_SECONDS, 1.0), timing(listed[label]),
                "`evalglass --help`", timing(listed["help"]))
        )  # fmt: skip
    return rows


def ray_executor(scale: Scale, work: Path) -> list[Row]:
    cores = os.cpu_count() or 1
    share = 0.8
    bound = 1 / (share * cores)
    targets = {
        "cpu": Target(
            On.WALL_RATIO, bound, f"≤ {bound:.2f}× local (a speed-up ≥ {share * cores:.1f}× on {cores} cores)"
        ),
        "io": Target(On.WALL_RATIO, 1.10, "≤ 1.10× local"),
        "noop": Target(On.REPORTED),
    }
    titles = {
        "cpu": "Ray executor: CPU-bound python lane (~20 ms), per example, marginal (case 9)",
        "io": "Ray executor: I/O-bound async lane (20 ms await), per example, marginal (case 9)",
        "noop": "Ray executor: per-task overhead (no-op lane), per example, marginal (case 9)",
    }
    if importlib.util.find_spec("ray") is None:
        return [Row(titles[lane], targets[lane], missing="ray is not installed (the `ray` extra)") for lane in titles]
    import bench_ray

    sizes = scale.pick(bench_ray.SMOKE, {"cpu": 200, "io": 600, "noop": 600}, {"cpu": 2000, "io": 2000, "noop": 2000})
    _, found = bench_ray.measure(sizes)
    return [
        Row(f"{titles[lane]}, {sizes[lane]:,} examples", targets[lane], Timing(*found[f"{lane}-ray"]),
            "the same lane run locally", Timing(*found[f"{lane}-local"]))
        for lane in titles
    ]  # fmt: skip


def trace_import(scale: Scale, work: Path) -> list[Row]:
    import bench_trace_import

    rows: list[Row] = []
    for spans in scale.pick((2_000,), (20_000,), (100_000, 1_000_000)):
        path = work / f"spans-{spans}.jsonl"
        bench_trace_import.generate(path, spans)
        found: dict[str, list[dict[str, float]]] = {"floor": [], "reader": []}
        for _ in range(scale.repeats):
            for kind in found:
                found[kind].append(bench_trace_import.child(kind, path))
        best = {kind: min(rounds, key=lambda r: r["wall"]) for kind, rounds in found.items()}
        figure = Timing(best["reader"]["wall"], best["reader"]["cpu"], best["reader"]["peak_mb"])
        rows.append(
            Row(f"import {spans:,} spans from OTLP/JSON (issue 31)", Target(On.WALL_RATIO, 2.0), figure,
                "orjson parses the file and picks the same attributes",
                Timing(best["floor"]["wall"], best["floor"]["cpu"], best["floor"]["peak_mb"]))
        )  # fmt: skip
        path.unlink()
    return rows


def inspect_import(scale: Scale, work: Path) -> list[Row]:
    title = "read a 100,000-sample inspect_ai log (issue 31)"
    target = Target(On.WALL_RATIO, 2.0)
    log = os.environ.get("EVALGLASS_BENCH_INSPECT_LOG")
    if not log or not Path(log).is_file():
        return [Row(title, target, missing="no log: make one with benchmarks/make_inspect_log.py (inspect_ai's "
                    "environment) and set EVALGLASS_BENCH_INSPECT_LOG")]  # fmt: skip
    import bench_tool_import

    found: dict[str, list[dict[str, float]]] = {"floor": [], "reader": []}
    for _ in range(scale.repeats):
        for kind in found:
            done = subprocess.run(
                [sys.executable, str(HERE / "bench_tool_import.py"), log, "--measure", kind],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            found[kind].append(json.loads(done.stdout))
    best = {kind: min(rounds, key=lambda r: r["wall"]) for kind, rounds in found.items()}
    del bench_tool_import
    return [
        Row(title, target, Timing(best["reader"]["wall"], best["reader"]["cpu"], best["reader"]["peak_mb"]),
            "the standard library's zipfile (zstandard for the members) and json",
            Timing(best["floor"]["wall"], best["floor"]["cpu"], best["floor"]["peak_mb"]))
    ]  # fmt: skip


def agent_metrics(scale: Scale, work: Path) -> list[Row]:
    import bench_agent_metrics

    n = scale.pick(1_000, 10_000, 10_000)
    found = bench_agent_metrics.measure(n, scale.repeats)
    best = {label: min(rounds, key=lambda m: m.seconds) for label, rounds in found.items()}
    return [
        Row(f"recorded trajectories (10 calls each) through 2 `tool_calls` metrics: {n:,} (issue 32)",
            Target(On.WALL_RATIO, 3.0), timing(best["run"]), "orjson parses the file and counts matching calls",
            timing(best["floor"]))
    ]  # fmt: skip


def agent_lane(scale: Scale, work: Path) -> list[Row]:
    import bench_agent_lane

    trajectories, rounds = scale.pick(10, 100, 200), scale.pick(1, 3, 5)
    found = bench_agent_lane.measure(trajectories, 32, 0.01, rounds, run=True)
    bare = median_timing(found["bare"], cpu_first=True)
    what = f"{trajectories:,} trajectories × 10 steps, c=32, 10 ms server, median of {rounds} (issue 32)"
    return [
        Row(f"agent lane CPU per step, no cache: {what}", Target(On.CPU_RATIO, 2.0, "≤ 2× bare (CPU)"),
            median_timing(found["lane"], cpu_first=True), "a bare aiohttp client loop, same steps", bare),
        Row(f"agent lane CPU: `run`'s scoring phase, call cache on, two metrics: {what}", Target(On.REPORTED),
            median_timing(found["run"], cpu_first=True), "a bare aiohttp client loop, same steps", bare),
    ]  # fmt: skip


@dataclass(frozen=True)
class Case:
    name: str
    what: str
    measure: Callable[[Scale, Path], list[Row]]


#: Every case with a target, in the order of the table. Adding a case is one entry here.
CASES: tuple[Case, ...] = (
    Case("recorded", "recorded runs at 100k and 1M beside the floor, a gate, memory, view, --help (cases 1-3)",
         recorded),
    Case("bad input", "malformed lines, a huge description, 2,000 metrics beside their clean cases (5-7)", bad_input),
    Case("lanes", "5,000 chat calls at concurrency 64 beside the ideal time (case 4)", lane_throughput),
    Case("python lane", "sync and async python lanes at 100k and 1M beside a loop calling the same function (11a/b)",
         python_lane),
    Case("chat cpu", "a chat run's scoring-phase CPU beside a bare aiohttp client (11c)", chat_cpu),
    Case("chat wall", "a chat run's scoring-phase wall time beside a bare client, quiet and busy (11c)", chat_wall),
    Case("command lane", "a command lane's cost per call beside a subprocess loop (11d)", command_lane),
    Case("preflight", "preflight of 2,000 gates beside a one-gate preflight (issue 19)", preflight),
    Case("compare", "compare of two 1M-example runs beside plain-Python pairing (case 8), and decided as a gate (27)",
         compare),
    Case("history", "recording a 1M run and listing 10,000 runs (case 10)", history),
    Case("ray", "the Ray executor beside the local one (case 9)", ray_executor),
    Case("trace import", "OTLP/JSON spans read as a dataset at 100k and 1M beside an orjson floor (issue 31)",
         trace_import),
    Case("agent metrics", "10,000 recorded trajectories through the tool-call metrics beside an orjson floor "
         "(issue 32)", agent_metrics),
    Case("agent lane", "the agent lane's CPU per model step beside a bare client loop (issue 32)", agent_lane),
    Case("inspect import", "a 100k-sample inspect_ai log read as a dataset beside a standard-library floor (issue 31)",
         inspect_import),
)  # fmt: skip


def select(names: Sequence[str] | None) -> tuple[Case, ...]:
    if not names:
        return CASES
    known = {case.name: case for case in CASES}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"unknown case {', '.join(map(repr, unknown))}: the cases are {', '.join(known)}")
    return tuple(known[name] for name in names)


def measure_all(cases: Sequence[Case], scale: Scale) -> tuple[list[Row], list[tuple[str, str]]]:
    """Every case's rows, in order. A case that fails is one row saying so (its target not met) and a (name,
    error) pair, and the others still run."""
    rows: list[Row] = []
    failed: list[tuple[str, str]] = []
    for case in cases:
        print(f"measuring {case.name} ({scale.name}) ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix=f"evalglass-bench-{case.name.replace(' ', '-')}-") as scratch:
            try:
                rows += case.measure(scale, Path(scratch))
            except (Exception, SystemExit) as exc:
                error = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                traceback.print_exc()
                failed.append((case.name, error))
                rows.append(Row(case.what, Target(On.REPORTED), missing=f"failed: {error}"))
    return rows, failed
