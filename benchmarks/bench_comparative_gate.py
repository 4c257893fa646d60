"""Issue 27: a 1,000,000-example comparison decided by the three-way rule, with its power statements, against
today's `compare` case (case 8).

    python benchmarks/bench_comparative_gate.py --before /path/to/main/src   # 1,000,000 examples, best of 3
    python benchmarks/bench_comparative_gate.py --n 2000 --repeats 1 --before /path/to/main/src   # smoke size

The two runs of case 8 (bench_compare.py's dataset: the baseline scores field `old`, the candidate `new`) are made
once, untimed. Then, in rotation (before, after, gate, before, ...), the best of --repeats of each, wall and CPU
(user + system) each taken from the same rotated runs:

- compare (before): `evalglass compare BASE CAND --metric exact --format json` of the EvalGlass in --before (its
  `src` folder, put first on the path: the code before this change);
- compare (after): the same command of this checkout;
- gate (after): the same two runs read as `compare` reads them, then decided as a comparative gate
  (`rule: lower_bound`, margin 0.02) by ``core.comparative.decide_comparative_gate``: the paired interval at
  ``2 * level - 1``, the three-way rule, the pairs that would decide, the power statements and the unchanged-candidate
  forecast; its ``GateResult`` (the comparison and every flipped id in it) printed as JSON, as `compare` prints its
  payload;
- gate (before): the same process on the code in --before (the two-way rule: a one-sided bound, no forecast).

Target: gate (after) within 1.1x of compare (before).
"""

from __future__ import annotations

import argparse
import inspect
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_compare import generate, make_run  # noqa: E402
from run import Measurement, compile_bytecode, machine, measure  # noqa: E402


def decide(base_folder: Path, candidate_folder: Path) -> str:
    """The comparative gate's decision over the two runs, as JSON (what the measured process does)."""
    from evalglass.core.authority import Authority, BaselineApproval, Ledger
    from evalglass.core.comparative import BaselineRun, ComparativeInputs, decide_comparative_gate
    from evalglass.core.decide import per_example
    from evalglass.core.estimate import IntervalSpec
    from evalglass.core.gatespec import GateRule, GateSpec
    from evalglass.engine.runs.compare import load_for_comparison

    base = load_for_comparison(base_folder, what="baseline run", metrics=["exact"])
    candidate = load_for_comparison(candidate_folder, what="candidate run", metrics=["exact"])
    spec = GateSpec(metric="exact", compare_to="main", rule=GateRule.LOWER_BOUND)
    # The code before the tie rule reduces without being told where a majority tie goes (a mean has no ties).
    tied = "ties" in inspect.signature(per_example).parameters
    side = candidate.side("exact", Ties.LOW) if tied else candidate.side("exact")  # type: ignore[call-arg]
    ties: dict[str, Any] = {"ties": Ties.LOW} if tied else {}
    column = per_example(candidate.scores.columns["exact"], candidate.shape, Reducer.MEAN, None, **ties)
    baseline = BaselineRun(
        name="main",
        location=str(base_folder),
        fingerprint=base.fingerprint,
        run_id=base.record.run_id,
        dataset_fingerprint=base.record.dataset.fingerprint,
        gold_fingerprint=base.record.dataset.gold_fingerprint,
        ids=base.ids,
        metrics={"exact": base.side("exact", Ties.LOW) if tied else base.side("exact")},  # type: ignore[call-arg]
    )
    inputs = ComparativeInputs(
        ids=candidate.ids,
        gold_fingerprint=candidate.record.dataset.gold_fingerprint,
        definitions={"exact": side.definition},
        baselines={"main": baseline},
        dataset_fingerprint=candidate.record.dataset.fingerprint,
    )
    ledger = Ledger(baselines={"main": BaselineApproval(run=str(base_folder), fingerprint=base.fingerprint)})
    # The code before this change takes no within-example spread: pass it only where it exists.
    more: dict[str, Any] = (
        {"within": side.within} if "within" in inspect.signature(decide_comparative_gate).parameters else {}
    )
    gate = decide_comparative_gate(
        "no-regression",
        spec,
        "sha256:" + "0" * 64,
        Authority(active=True, margin=0.02),
        ledger,
        column,
        IntervalSpec(),
        side.scale,
        inputs,
        None,
        **more,
    )
    return gate.model_dump_json()


if "--case" in sys.argv:  # the measured process: imports only what deciding needs
    from evalglass.core.stats import Reducer, Ties

    index = sys.argv.index("--case")
    print(decide(Path(sys.argv[index + 1]), Path(sys.argv[index + 2])))
    raise SystemExit(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", type=Path, required=True, help="the `src` folder of the EvalGlass to compare with")
    args = parser.parse_args()
    python = sys.executable
    compile_bytecode(python)
    before_src = args.before.resolve()
    subprocess.run(
        [python, "-c", f"import compileall; compileall.compile_dir({str(before_src)!r}, quiet=1)"], check=True
    )
    probe = [python, "-c", "import evalglass; print(evalglass.__file__)"]
    found = subprocess.run(probe, env={**os.environ, "PYTHONPATH": str(before_src)}, capture_output=True, text=True)
    if not found.stdout.startswith(str(before_src)):
        raise SystemExit(f"--before is not what Python imports: {found.stdout.strip()}")
    before = ["env", f"PYTHONPATH={before_src}", python, "-m", "evalglass"]
    after = [python, "-m", "evalglass"]
    dataset = generate(args.n)
    with tempfile.TemporaryDirectory(prefix="evalglass-bench-gate-") as tmp:
        work = Path(tmp)
        base = make_run(after, work, dataset, "old")
        candidate = make_run(after, work, dataset, "new")
        compare = ["compare", str(base), str(candidate), "--metric", "exact", "--format", "json"]
        gate = [python, str(Path(__file__).resolve()), "--case", str(base), str(candidate)]
        commands = [
            ("compare (before)", [*before, *compare], work, {0}),
            ("compare (after)", [*after, *compare], work, {0}),
            ("gate (before)", ["env", f"PYTHONPATH={before_src}", *gate], work, {0}),
            ("gate (after)", gate, work, {0}),
        ]
        load = os.getloadavg()[0]
        runs: dict[str, list[Measurement]] = {label: [] for label, *_ in commands}
        for _ in range(args.repeats):
            for label, argv, cwd, expect in commands:
                runs[label].append(measure(label, argv, cwd, expect))
        decided = subprocess.run(gate, check=True, capture_output=True, text=True).stdout
    wall = {label: min(m.seconds for m in found) for label, found in runs.items()}
    cpu = {label: min(m.cpu_seconds for m in found) for label, found in runs.items()}
    rss = {label: max(m.peak_rss_mb for m in found) for label, found in runs.items()}
    print(f"machine: {machine()}; load {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print(f"best of {args.repeats} in rotation")
    print("| examples | case | wall | CPU | peak RSS | wall ratio | CPU ratio |")
    print("|---|---|---|---|---|---|---|")
    before = "compare (before)"
    for label, *_ in commands:
        print(
            f"| {args.n:,} | {label} | {wall[label]:.2f} s | {cpu[label]:.2f} s | {rss[label]:.0f} MB"
            f" | {wall[label] / wall[before]:.2f}x | {cpu[label] / cpu[before]:.2f}x |"
        )
    print(f"gate outcome: {decided[:160]}…")


if __name__ == "__main__":
    main()
