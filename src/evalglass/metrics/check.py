"""A per-example bound check as a metric: each example's output becomes the check's private target.

PASS → scored 1.0, FAIL → scored 0.0, INCONCLUSIVE → non_evaluable, ERROR → error (see ``core.checks.to_score``).
The spec names a declared check; the engine supplies that check when it builds the metric, because a metric's
own ``build(base_dir)`` cannot see the rest of the config.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from evalglass.core.checks import CheckResult, to_score
from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.score import Score
from evalglass.lanes.checkspec import CheckSpec
from evalglass.lanes.shipping import WorkLost
from evalglass.metrics.base import MetricFn, MetricSpec, measured_target
from evalglass.metrics.errors import MetricLoadError

CheckSink = Callable[[CheckResult], None]
#: Runs a per-example check: ``(spec, base_dir, output, check_id=, example_id=) -> CheckResult``. By default
#: ``lanes.checkrun.run_example_check`` in this process; a cluster executor passes one that ships the call.
CheckRunner = Callable[..., CheckResult]


class CheckMetricSpec(MetricSpec):
    summary: ClassVar[str] = "Runs a declared check against each example's output: 1.0 on PASS, 0.0 on FAIL."
    #: Each call starts a process; the engine runs these concurrently across examples.
    parallel: ClassVar[bool] = True

    type: Literal["check"] = "check"
    check: str = Field(description="Name of a check under `checks:` to run against each example's output.")

    def build(self, base_dir: Path) -> MetricFn:
        raise MetricLoadError(f"metric type 'check' needs the declared check '{self.check}'; the engine binds it")

    def build_check(
        self, check: CheckSpec, base_dir: Path, sink: CheckSink | None = None, runner: CheckRunner | None = None
    ) -> MetricFn:
        if runner is None:
            from evalglass.lanes.checkrun import run_example_check  # the runner, only for a config that uses one

            runner = run_example_check
        run = runner
        target = measured_target(self)
        check_id = self.check

        def score(example: Example) -> Score:
            output = target(example)
            if output is ABSENT:
                return Score.non_evaluable("field_missing", f"the output of example {example.id} has no '{self.field}'")
            try:
                result = run(check, base_dir, output, check_id=check_id, example_id=example.id)
            except WorkLost as exc:  # shipped and never done: no record exists, and the example is an error
                return Score.error("worker_lost", f"check '{check_id}' could not run on the cluster: {exc}")
            if sink is not None:
                sink(result)
            return to_score(result)

        return score
