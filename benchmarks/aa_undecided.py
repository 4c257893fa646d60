"""How often an unchanged candidate comes out `undecided` at a comparative gate (`rule: lower_bound`), by suite size,
margin and how much the system's answers vary between runs: the table in docs/comparing-runs.md.

    python benchmarks/aa_undecided.py            # prints the Markdown table (a few seconds)

An A/A comparison of a binary metric: every example is scored by two runs of the same system. With discordance q
(the share of examples whose outcome differs between the two runs; temperature noise makes it large) and accuracy
0.85, the paired 2x2 table of each simulated suite is drawn from the multinomial with cells both = 0.85 - q/2,
baseline only = candidate only = q/2, neither = 0.15 - q/2, and decided exactly as a gate decides: Newcombe's
paired interval at 2 * 0.95 - 1 (its ends are the one-sided 95% bounds) and ``core.gatespec.rule_decision``.
Each cell gives the simulated undecided rate (1,000 suites, seeded) and, in brackets, the forecast `explain` and
`preflight` make from the observed spread (``core.stats.unchanged_odds``). The largest false-`fail` rate seen is
printed under the table (it must stay under the nominal 5%).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from evalglass.core.gatespec import GateRule, rule_decision
from evalglass.core.stats import Direction, PairedTable, newcombe_paired, unchanged_odds

ACCURACY = 0.85
LEVEL = 0.95
REPS = 1000
DISCORDANCE = (0.05, 0.10, 0.20, 0.30)
SIZES = (300, 1000, 2000, 5000)
MARGINS = (0.01, 0.02, 0.05)


@dataclass(frozen=True)
class Cell:
    undecided: float
    fail: float
    forecast: float


def simulate(n: int, discordance: float, margin: float, seed: int, reps: int = REPS) -> Cell:
    """Simulated undecided and fail rates of A/A comparisons, and the forecast from the true spread."""
    rng = np.random.default_rng(seed)
    half = discordance / 2.0
    cells = rng.multinomial(n, [ACCURACY - half, half, half, 1.0 - ACCURACY - half], size=reps)
    undecided = fail = 0
    for both, base_only, candidate_only, neither in cells.tolist():
        table = PairedTable(both=both, base_only=base_only, candidate_only=candidate_only, neither=neither)
        interval = newcombe_paired(table, level=2.0 * LEVEL - 1.0)
        assert interval is not None and interval.low is not None and interval.high is not None
        decision = rule_decision(GateRule.LOWER_BOUND, Direction.HIGHER_IS_BETTER, -margin, interval.low, interval.high)
        undecided += decision.value == "undecided"
        fail += decision.value == "fail"
    odds = unchanged_odds(std_dev=math.sqrt(discordance), pairs=n, margin=margin, level=LEVEL)
    assert odds is not None
    return Cell(undecided=undecided / reps, fail=fail / reps, forecast=odds.undecided)


def table(reps: int = REPS) -> tuple[str, float]:
    """The Markdown table, and the largest false-fail rate seen."""
    lines = [
        "| discordance | pairs | " + " | ".join(f"margin {margin:g}" for margin in MARGINS) + " |",
        "|---|---|" + "---|" * len(MARGINS),
    ]
    worst = 0.0
    for d_index, discordance in enumerate(DISCORDANCE):
        for n_index, n in enumerate(SIZES):
            row = []
            for m_index, margin in enumerate(MARGINS):
                cell = simulate(n, discordance, margin, seed=1000 * d_index + 10 * n_index + m_index, reps=reps)
                worst = max(worst, cell.fail)
                row.append(f"{cell.undecided:.1%} ({cell.forecast:.1%})")
            lines.append(f"| {discordance:.0%} | {n:,} | " + " | ".join(row) + " |")
    return "\n".join(lines), worst


def main() -> None:
    text, worst = table()
    print(text)
    print(f"\nlargest false-fail rate: {worst:.2%}")


if __name__ == "__main__":
    main()
