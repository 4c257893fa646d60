"""``report.md``: the scorecard, and each active metric gate's first examples that did not pass.

Apart from ``failing`` (which reads those examples back) so that a run with no active gate, which lists none,
does not load it: its rules and row types are ~11 M instructions of a recorded run's fixed cost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from evalglass.core.scorecard import Scorecard


def report_markdown(folder: Path, card: Scorecard) -> str:
    """``report.md`` of the run in ``folder``: the scorecard, and each active metric gate's first examples that did
    not pass (read from its ``scores.jsonl``). ``run`` writes it and ``verify`` renders it again to compare."""
    from evalglass.report.markdown import REPORT_EXAMPLES, render_markdown

    active = [gate.name for gate in card.decision.gates if gate.active]
    if not active:
        return render_markdown(card, None)
    from evalglass.engine.explore.failing import gate_examples

    return render_markdown(card, gate_examples(folder, card, active, REPORT_EXAMPLES))
