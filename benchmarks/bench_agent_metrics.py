"""Recorded trajectories through the tool-call metrics: `evalglass run` beside a floor program, same file, same minute.

Issue 32 asks that replaying 10,000 recorded trajectories of 10 steps through the tool-call metrics take at most 3×
a floor program that parses the same JSONL and counts matching calls.

The file: ``--examples`` lines, each an agent lane's trajectory as it records one (``messages``: the prompt, ten
assistant turns each with one tool call, ten tool results, the answer; ``tool_calls``: the ten calls with their
results; ``finish``, ``steps``, ``usage``) beside ten expected calls. One line in four differs from its gold (a
wrong argument, a missing call, a duplicate), so the metrics have mismatches to count and explain.

* ``floor``: for each line ``orjson.loads``; the calls made (the trajectory's ``tool_calls``) and expected as a
  multiset of (name, canonical JSON of the arguments); the size of their intersection; whether the multisets are
  equal and the F1 of the pairing, summed. The least work that answers what the two metrics answer.
* ``run``: ``evalglass run --no-history`` on a recorded dataset (``task: {type: recorded, field: trajectory}``)
  with two metrics, ``tool_calls`` ``mode: any_order`` and ``measure: f1``: the config, the dataset's hash, the
  metrics, the scorecard and every artifact. Its two means must equal the floor's, or there is no figure.

Each measurement is a fresh child process (wall time, CPU time of the process from ``wait4``, peak RSS), in
rotation (floor, run, floor, run, …) so a busy phase of the shared machine hits both.

    .venv/bin/python benchmarks/bench_agent_metrics.py --examples 10000 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import run as common

STEPS = 10
TOOLS = ("search", "open_page", "weather", "book", "convert")

CONFIG = """\
version: 1
dataset: {name: trajectories, path: trajectories.jsonl}
task: {type: recorded, field: trajectory}
metrics:
  right_calls: {type: tool_calls, reference: expected_calls, mode: any_order}
  call_f1: {type: tool_calls, reference: expected_calls, measure: f1}
"""


def _call(rng: random.Random, step: int) -> dict[str, Any]:
    name = TOOLS[step % len(TOOLS)]
    return {"name": name, "arguments": {"query": f"q{rng.randrange(1000)}", "page": rng.randrange(5), "step": step}}


def generate(path: Path, examples: int) -> None:
    """``examples`` lines: an agent lane's trajectory of STEPS tool calls beside its expected calls."""
    rng = random.Random(32)
    with path.open("w") as handle:
        for index in range(examples):
            expected = [_call(rng, step) for step in range(STEPS)]
            made = [dict(call, arguments=dict(call["arguments"])) for call in expected]
            kind = index % 4
            if kind == 1:
                made[3]["arguments"]["page"] += 1  # a wrong argument
            elif kind == 2:
                made.pop()  # a call not made
            elif kind == 3:
                made.insert(5, made[4])  # a duplicate
            messages: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": f"task {index}"}]}]
            calls = []
            for step, call in enumerate(made):
                call_id = f"call_{step}_0"
                result = {"ok": True, "items": [f"result {step}.{k}" for k in range(3)]}
                messages.append(
                    {"role": "assistant", "parts": [{"type": "tool_call", "id": call_id, **call}],
                     "finish_reason": "tool_calls"}
                )  # fmt: skip
                messages.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id,
                                                             "response": result}]})  # fmt: skip
                calls.append({"id": call_id, **call, "result": result})
            messages.append({"role": "assistant", "parts": [{"type": "text", "content": f"Done with task {index}."}]})
            trajectory = {
                "messages": messages,
                "tool_calls": calls,
                "text": f"Done with task {index}.",
                "finish": "stop",
                "steps": len(made) + 1,
                "usage": {"input_tokens": 900, "output_tokens": 120},
            }
            handle.write(json.dumps({"id": f"t{index}", "expected_calls": expected, "trajectory": trajectory}) + "\n")


def floor(path: Path) -> None:
    """The floor: parse each line, count matching calls as a multiset, print the two means."""
    from collections import Counter

    import orjson

    def multiset(calls: list[dict[str, Any]]) -> Counter[tuple[str, bytes]]:
        return Counter((call["name"], orjson.dumps(call["arguments"], option=orjson.OPT_SORT_KEYS)) for call in calls)

    n = 0
    same = 0
    f1 = 0.0
    with path.open("rb") as handle:
        for line in handle:
            record = orjson.loads(line)
            made = record["trajectory"]["tool_calls"]
            expected = record["expected_calls"]
            matched = sum((multiset(made) & multiset(expected)).values())
            same += matched == len(made) == len(expected)
            f1 += 2 * matched / (len(made) + len(expected))
            n += 1
    print(json.dumps({"right_calls": same / n, "call_f1": f1 / n}))


def project(folder: Path, examples: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    generate(folder / "trajectories.jsonl", examples)
    (folder / "evalglass.yaml").write_text(CONFIG)
    (folder / "authority.yaml").write_text("")
    return folder


def check(folder: Path) -> None:
    """The run's means are the floor's, and the run verifies."""
    done = subprocess.run(
        [sys.executable, __file__, "--floor", str(folder / "trajectories.jsonl")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    expected = json.loads(done.stdout)
    card = json.loads((folder / "out" / "scorecard.json").read_text())
    found = {metric["name"]: metric["estimate"]["point"] for metric in card["metrics"]}
    for name, value in expected.items():
        if abs(found[name] - value) > 1e-9:
            raise SystemExit(f"{name}: the run says {found[name]}, the floor {value}")
    common.verified([sys.executable, "-m", "evalglass"], folder, "informational")


def measure(examples: int, rounds: int) -> dict[str, list[common.Measurement]]:
    """Each round's floor and run (fresh processes, in rotation); the run checked once."""
    with tempfile.TemporaryDirectory(prefix="evalglass-bench-agents-") as scratch:
        folder = project(Path(scratch), examples)
        data = str(folder / "trajectories.jsonl")
        commands = {
            "floor": [sys.executable, __file__, "--floor", data],
            "run": [sys.executable, "-m", "evalglass", "run", "--no-history", "--no-progress", "--out", "out"],
        }
        found: dict[str, list[common.Measurement]] = {label: [] for label in commands}
        for _ in range(rounds):
            for label, argv in commands.items():
                found[label].append(common.measure(label, argv, folder))
        check(folder)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--floor", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        floor(Path(args.floor))
        return 0
    common.compile_bytecode(sys.executable)
    print(f"{common.machine()}; load {os.getloadavg()[0]:.2f}; {args.examples:,} trajectories of {STEPS} calls")
    started = time.monotonic()
    found = measure(args.examples, args.rounds)
    print(f"measured in rotation within {time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.2f} at the end")
    print("| process | wall s (best, median) | CPU s (best, median) | peak RSS MB |")
    print("|---|---|---|---|")
    for label, rounds in found.items():
        walls, cpus = [m.seconds for m in rounds], [m.cpu_seconds for m in rounds]
        print(
            f"| {label} | {min(walls):.3f}, {statistics.median(walls):.3f} | {min(cpus):.3f}, "
            f"{statistics.median(cpus):.3f} | {max(m.peak_rss_mb for m in rounds):.0f} |"
        )
    best = {label: min(rounds, key=lambda m: m.seconds) for label, rounds in found.items()}
    print(
        f"ratio run/floor (best): wall {best['run'].seconds / best['floor'].seconds:.2f}x, "
        f"CPU {best['run'].cpu_seconds / best['floor'].cpu_seconds:.2f}x (target: at most 3x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
