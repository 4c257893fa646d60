"""Mutation testing of the decision core: does any test notice when a decision is changed?

``python tools/mutation.py`` runs mutmut (the ``test`` extra) over the modules ``[tool.mutmut]`` in pyproject.toml
names, one worker at ``nice 10`` (the machine is shared), against the test selection named there, then prints the
score per module. ``--report`` prints the table of the last run without running anything; ``--workers N`` runs N
mutants at a time. Mutants the table counts as equivalent (no behaviour can tell them from the original) are listed
in ``EQUIVALENT`` below, each with the reason; docs/testing.md ("Mutation testing") has the table and the command.

The score of a module is killed / (mutants - equivalent); a timeout counts as killed (the mutant hung a test that
ends on the original), "no tests" and "suspicious" as survived. The exit status is 1 when any module scores below
``TARGET``, 0 otherwise.

Limits (mutmut 3's, stated so the score is read right): it mutates function and method bodies only; module-level
tables (``verdict.PRECEDENCE``, ``EXIT_CODES``) and functions with decorators other than ``@classmethod`` and
``@staticmethod`` (pydantic validators such as ``GateResult._outcome_follows``, properties) are not mutated.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants" / "src" / "evalglass" / "core"
TARGET = 0.90

#: Mutants no test can kill because the mutated program behaves exactly as the original (the reason says why).
#: Keys are mutmut's mutant names (``mutmut show NAME`` prints the diff).
EQUIVALENT: dict[str, str] = {
    "evalglass.core.gates.x_evaluate_check_gate__mutmut_28": "the text for a check that ended INCONCLUSIVE or ERROR "
    "without a reason: CheckResult refuses such a result, so the branch never runs",
    "evalglass.core.gates.x_evaluate_check_gate__mutmut_30": "as _28: the no-reason text of an INCONCLUSIVE or ERROR "
    "check is unreachable",
    "evalglass.core.gates.x_evaluate_gate__mutmut_105": "weakens an assert that holds either way: no reason means "
    "both the compared number and the threshold exist",
    "evalglass.core.gates.x_evaluate_gate__mutmut_135": "`n or 1` for `n or 0`: a decided gate has an estimate, so n "
    "is at least 1 and the fallback is never used",
    "evalglass.core.decide.x__decide_check_gate__mutmut_23": "uses_reference=True for a check gate: "
    "declared_gate_authority asks for gold only when `uses_reference and not check`",
    "evalglass.core.decide.x__decide_metric_gate__mutmut_8": "check=None for check=False: both are falsy where "
    "declared_gate_authority reads them",
    "evalglass.core.decide.x_decide_run__mutmut_52": "check=None for check=False, as _decide_metric_gate__mutmut_8",
    "evalglass.core.decide.x__decide_metric_gate__mutmut_27": "`or` computes a bound and advice nobody reads: a point "
    "gate ignores both, and with nothing measured the gate blocks (no_measured_value) before either is used",
    "evalglass.core.gates.x_decided__mutmut_2": "rule_decision(None, ...): None is not POINT, so it decides as the "
    "interval rule, and a point gate has no favourable bound, which makes the interval rule's answer the point rule's",
    "evalglass.core.score.xǁScoreǁunmeasured__mutmut_7": "drops value=None, the field's default",
    "evalglass.core.checks.xǁCheckResultǁsummary__mutmut_3": "the 'no exit code' text: a result without an exit code "
    "always has a reason (CheckResult's rules), and the reason replaces the text",
    "evalglass.core.checks.xǁCheckResultǁsummary__mutmut_5": "as _3: the 'no exit code' text is always replaced",
    "evalglass.core.checks.xǁCheckResultǁsummary__mutmut_6": "as _3: the 'no exit code' text is always replaced",
    "evalglass.core.checks.x_to_score__mutmut_43": "drops validity=NOT_MEASURED, which is Score.unmeasured's default",
    "evalglass.core.comparative.x_decide_comparative_gate__mutmut_1": "weakens an assert that holds either way: a "
    "GateSpec with compare_to always names a metric",
    "evalglass.core.comparative.x_decide_comparative_gate__mutmut_83": "drops sides=TWO_SIDED, compare_metric's "
    "default",
    "evalglass.core.comparative.x_unchanged_forecast__mutmut_19": "`pairs >= 1`: one value has no variance (NaN), "
    "and unchanged_odds of a NaN spread is None, as the original's early None",
    "evalglass.core.comparative.x_unchanged_forecast__mutmut_71": "`if margin or True`: a zero margin reaches "
    "pairs_to_detect(drop=0), which is None, as the original's None",
    "evalglass.core.comparative.x_decide_comparative_gate__mutmut_224": "`if lower or True`: unchanged_forecast "
    "itself returns None under the point rule",
    "evalglass.core.comparative.x_decide_comparative_gate__mutmut_295": "weakens an assert that holds either way: "
    "no reason means the difference, its compared end and the threshold all exist",
    "evalglass.core.comparative.x_decide_comparative_gate__mutmut_296": "as _295",
    "evalglass.core.gates.x_undecided_reason__mutmut_4": "an undecided gate always has its favourable bound "
    "(rule_decision says undecided only with one), so the fallback to `compared` never runs",
}

#: mutmut's exit codes (mutmut.stats.status_by_exit_code), folded into what the score counts.
KILLED_CODES = frozenset({1, 3, 24, -24, 152, 255, 36})
SURVIVED_CODES = frozenset({0})
NO_TESTS_CODES = frozenset({5, 33})


@dataclass
class ModuleScore:
    module: str
    total: int = 0
    killed: int = 0
    equivalent: int = 0
    survived: int = 0
    no_tests: int = 0
    other: int = 0

    @property
    def decidable(self) -> int:
        return self.total - self.equivalent

    @property
    def score(self) -> float:
        return self.killed / self.decidable if self.decidable else 1.0


def scores(folder: Path = MUTANTS) -> tuple[list[ModuleScore], list[str]]:
    """Per-module counts from mutmut's result files, and the names of the mutants that survived (or no test
    reached)."""
    table: list[ModuleScore] = []
    alive: list[str] = []
    for meta in sorted(folder.glob("*.py.meta")):
        module = ModuleScore(meta.name.removesuffix(".py.meta"))
        codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
        for name, code in codes.items():
            module.total += 1
            if name in EQUIVALENT:
                module.equivalent += 1
            elif code in KILLED_CODES:
                module.killed += 1
            elif code in SURVIVED_CODES or code in NO_TESTS_CODES:
                module.survived += code in SURVIVED_CODES
                module.no_tests += code in NO_TESTS_CODES
                alive.append(name)
            else:  # not run yet, interrupted, suspicious
                module.other += 1
        table.append(module)
    return table, alive


def render(table: list[ModuleScore]) -> str:
    lines = [
        "| module | mutants | equivalent | killed | survived | no tests | other | score |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m in table:
        lines.append(
            f"| core/{m.module}.py | {m.total} | {m.equivalent} | {m.killed} | {m.survived} | {m.no_tests} | "
            f"{m.other} | {m.score:.1%} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="print the last run's table; run nothing")
    parser.add_argument("--workers", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument(
        "--survivors", action="store_true", help="also list every mutant that survived or no test reached"
    )
    parser.add_argument(
        "mutants", nargs="*", help="run only these mutant names (globs allowed), e.g. 'evalglass.core.verdict.*'"
    )
    args = parser.parse_args(argv)
    if not args.report:
        # The `mutmut` script, not `python -m mutmut`: run as __main__ it sets its multiprocessing start method twice.
        mutmut = str(Path(sys.executable).with_name("mutmut"))
        command = ["nice", "-n", "10", mutmut, "run", "--max-children", str(args.workers)]
        # tests/core/conftest.py: property tests draw a fixed, smaller set of examples under mutation.
        env = {**os.environ, "EVALGLASS_MUTATION": "1"}
        done = subprocess.run([*command, *args.mutants], cwd=ROOT, env=env, check=False)
        if done.returncode != 0:
            print(f"mutmut run exited {done.returncode}", file=sys.stderr)
            return 2
    if not MUTANTS.is_dir():
        print(f"no mutation results under {MUTANTS}: run `python tools/mutation.py` first", file=sys.stderr)
        return 2
    table, alive = scores()
    print(render(table))
    if args.survivors:
        for name in alive:
            print(name)
    return 0 if all(m.score >= TARGET for m in table) else 1


if __name__ == "__main__":
    sys.exit(main())
