"""Pure statistics for EvalGlass: intervals, epoch reducers, sensitivity bounds, decidability advice.

Nothing here does I/O or reads a clock; the only randomness is a numpy Generator built from an explicit seed.
scipy is imported lazily by the few functions that need a t or beta quantile, never by importing this package.
The mathematics is written up in docs/reading-the-numbers.md.
"""

from evalglass.core.stats._common import StatsDependencyError
from evalglass.core.stats.bootstrap import Statistic, VectorStatistic, bootstrap
from evalglass.core.stats.choose import choose_method, confidence_interval, one_sided_bound
from evalglass.core.stats.cluster import cluster_bootstrap, cluster_t
from evalglass.core.stats.decidability import POWER, detectable_drop, pairs_to_detect, required_n
from evalglass.core.stats.epochs import PerExample, Reducer, Ties, pass_at_k, reduce_samples
from evalglass.core.stats.mean import student_t
from evalglass.core.stats.model import FEW_CLUSTERS_BELOW, Direction, Interval, Method, Note, Param, Sides
from evalglass.core.stats.paired import (
    PairedDifference,
    PairedTable,
    PairedTest,
    mcnemar_exact,
    newcombe_paired,
    paired_difference,
    paired_table,
)
from evalglass.core.stats.proportion import clopper_pearson, count_successes, is_binary, wilson
from evalglass.core.stats.sensitivity import UNIT_SCALE, ExtremeMeans, ScaleSpec, sensitivity_bounds

__all__ = [
    "FEW_CLUSTERS_BELOW",
    "POWER",
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
    "VectorStatistic",
    "bootstrap",
    "choose_method",
    "clopper_pearson",
    "cluster_bootstrap",
    "cluster_t",
    "confidence_interval",
    "count_successes",
    "detectable_drop",
    "is_binary",
    "mcnemar_exact",
    "newcombe_paired",
    "one_sided_bound",
    "paired_difference",
    "paired_table",
    "pairs_to_detect",
    "pass_at_k",
    "reduce_samples",
    "required_n",
    "sensitivity_bounds",
    "student_t",
    "wilson",
]
