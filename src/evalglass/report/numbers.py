"""How every renderer writes a number. Its own module, free of heavy imports, so ``evalglass history`` can use
it without loading the statistics stack."""

from __future__ import annotations

import math


def number(value: float | None) -> str:
    if value is None:
        return "—"
    if not math.isfinite(value):  # never produced by a run, but a hand-edited artifact must still render
        return str(value)
    if value == int(value) and abs(value) < 1e9:
        return f"{value:.1f}" if abs(value) < 10 else f"{int(value)}"
    return f"{value:.4g}" if abs(value) >= 1e-3 else f"{value:.3e}"
