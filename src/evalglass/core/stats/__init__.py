"""Pure statistics for EvalGlass: intervals, epoch reducers, sensitivity bounds, decidability advice.

Nothing here does I/O or reads a clock; the only randomness is a numpy Generator built from an explicit seed.
scipy is imported lazily by the few functions that need a t or beta quantile, never by importing this package.
The mathematics is written up in docs/reading-the-numbers.md.

Names are loaded from their submodule on first use (PEP 562), so a caller that needs only the vocabulary in
``model`` (a gate's ``Direction``, a metric's ``Reducer`` or ``ScaleSpec``) does not import numpy: reading a config
and a ledger (``evalglass preflight``) stays free of it. The ``TYPE_CHECKING`` block gives type checkers the names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalglass.core.stats._common import StatsDependencyError
    from evalglass.core.stats.bootstrapping import Statistic, VectorStatistic, bootstrap
    from evalglass.core.stats.choose import choose_method, confidence_interval, one_sided_bound
    from evalglass.core.stats.cluster import cluster_bootstrap, cluster_t
    from evalglass.core.stats.decidability import (
        POWER,
        UNDECIDED_TARGET,
        UnchangedOdds,
        detectable_drop,
        epochs_to_decide,
        epochs_to_halve,
        examples_to_decide,
        pairs_to_detect,
        required_n,
        unchanged_odds,
    )
    from evalglass.core.stats.epochs import PerExample, WithinSpread, pass_at_k, reduce_samples, within_spread
    from evalglass.core.stats.mean import student_t
    from evalglass.core.stats.model import (
        FEW_CLUSTERS_BELOW,
        UNIT_SCALE,
        Direction,
        Interval,
        Method,
        Note,
        Param,
        Reducer,
        ScaleSpec,
        Sides,
        Ties,
    )
    from evalglass.core.stats.paired import (
        PairedDifference,
        PairedTable,
        PairedTest,
        mcnemar_exact,
        newcombe_paired,
        paired_difference,
        paired_table,
        pairs_to_decide,
    )
    from evalglass.core.stats.proportion import clopper_pearson, count_successes, is_binary, wilson
    from evalglass.core.stats.sensitivity import ExtremeMeans, sensitivity_bounds

#: Each public name and the submodule that defines it.
_HOME: dict[str, str] = {
    **dict.fromkeys(["StatsDependencyError"], "_common"),
    **dict.fromkeys(["Statistic", "VectorStatistic", "bootstrap"], "bootstrapping"),
    **dict.fromkeys(["choose_method", "confidence_interval", "one_sided_bound"], "choose"),
    **dict.fromkeys(["cluster_bootstrap", "cluster_t"], "cluster"),
    **dict.fromkeys(
        [
            "POWER",
            "UNDECIDED_TARGET",
            "UnchangedOdds",
            "detectable_drop",
            "epochs_to_decide",
            "epochs_to_halve",
            "examples_to_decide",
            "pairs_to_detect",
            "required_n",
            "unchanged_odds",
        ],
        "decidability",
    ),
    **dict.fromkeys(["PerExample", "WithinSpread", "pass_at_k", "reduce_samples", "within_spread"], "epochs"),
    **dict.fromkeys(["student_t"], "mean"),
    **dict.fromkeys(
        [
            "FEW_CLUSTERS_BELOW",
            "UNIT_SCALE",
            "Direction",
            "Interval",
            "Method",
            "Note",
            "Param",
            "Reducer",
            "ScaleSpec",
            "Sides",
            "Ties",
        ],
        "model",
    ),
    **dict.fromkeys(
        [
            "PairedDifference",
            "PairedTable",
            "PairedTest",
            "mcnemar_exact",
            "newcombe_paired",
            "paired_difference",
            "paired_table",
            "pairs_to_decide",
        ],
        "paired",
    ),
    **dict.fromkeys(["clopper_pearson", "count_successes", "is_binary", "wilson"], "proportion"),
    **dict.fromkeys(["ExtremeMeans", "sensitivity_bounds"], "sensitivity"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


__all__ = [
    "FEW_CLUSTERS_BELOW",
    "POWER",
    "UNDECIDED_TARGET",
    "UNIT_SCALE",
    "Direction",
    "ExtremeMeans",
    "Interval",
    "Method",
    "Note",
    "PairedDifference",
    "PairedTable",
    "PairedTest",
    "Param",
    "PerExample",
    "Reducer",
    "ScaleSpec",
    "Sides",
    "Statistic",
    "StatsDependencyError",
    "Ties",
    "UnchangedOdds",
    "VectorStatistic",
    "WithinSpread",
    "bootstrap",
    "choose_method",
    "clopper_pearson",
    "cluster_bootstrap",
    "cluster_t",
    "confidence_interval",
    "count_successes",
    "detectable_drop",
    "epochs_to_decide",
    "epochs_to_halve",
    "examples_to_decide",
    "is_binary",
    "mcnemar_exact",
    "newcombe_paired",
    "one_sided_bound",
    "paired_difference",
    "paired_table",
    "pairs_to_decide",
    "pairs_to_detect",
    "pass_at_k",
    "reduce_samples",
    "required_n",
    "sensitivity_bounds",
    "student_t",
    "unchanged_odds",
    "wilson",
    "within_spread",
]
