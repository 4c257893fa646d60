"""A per-example bound check as a metric: each example's output becomes the check's private target.

PASS → scored 1.0, FAIL → scored 0.0, INCONCLUSIVE → non_evaluable, ERROR → error (see ``core.checks.to_score``).
An output the check cannot be given (not JSON under ``task.parse: json``, or without ``field``) is scored as every
metric scores an answer it cannot read (``metrics.invalid``): the check is not run.
The spec names a declared check, which it finds in the build context's ``checks`` (the config's ``checks:``); its
records go to the context's check sink, and with a cluster executor each check runs on a worker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from evalglass.core.checks import to_score
from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.score import Score
from evalglass.lanes.shipping import WorkLost
from evalglass.metrics.base import BuildContext, CheckRunner, MetricFn, MetricSpec, measured_target
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.invalid import invalid_answer
from evalglass.metrics.support import refuse_reference


class CheckMetricSpec(MetricSpec):
    summary: ClassVar[str] = "Runs a declared check against each example's output: 1.0 on PASS, 0.0 on FAIL."
    binary: ClassVar[bool] = True
    #: Each call starts a process; the engine runs these concurrently across examples.
    parallel: ClassVar[bool] = True
    #: A command may need the cluster's resources: a cluster executor runs each check as a task.
    shippable: ClassVar[bool] = True

    type: Literal["check"] = "check"
    check: str = Field(description="Name of a check under `checks:` to run against each example's output.")

    #: Whether the check is given the record's reference (``final_state``'s expected state). A plain ``check`` is
    #: given the output alone, so it refuses a ``reference`` it would silently ignore.
    given_reference: ClassVar[bool] = False

    @model_validator(mode="after")
    def _reference_given(self) -> CheckMetricSpec:
        if not self.given_reference:
            refuse_reference(self)
        return self

    def check_references(self) -> Mapping[str, str]:
        return {"check": self.check}

    def host_reference(self) -> str | None:
        return f"check '{self.check}'"

    def build_one(self, context: BuildContext) -> MetricFn:
        return self.check_scorer(context, self.check_input(context))

    def check_input(self, context: BuildContext) -> Callable[[Example], Any]:
        """What the check is given for an example: the output (or its ``field``), or the Score of an example that
        has nothing to give it (the check is then not run)."""
        target = measured_target(self)
        invalid = invalid_answer(self, context)

        def given(example: Example) -> Any:
            output = target(example)
            return invalid(example) if output is ABSENT else output

        return given

    def check_scorer(self, context: BuildContext, given: Callable[[Example], Any]) -> MetricFn:
        """The scorer that runs the declared check against what ``given`` makes of each example."""
        check = context.checks.get(self.check)
        if check is None:  # the config refuses this before any metric is built
            raise MetricLoadError(f"metric type '{self.type}' names the check '{self.check}', which is not declared")
        run: CheckRunner
        if context.shipper is not None:
            run = context.shipper.check_runner(context.name)
        else:
            from evalglass.lanes.checkrun import run_example_check  # the runner, only for a config that uses one

            run = run_example_check
        base_dir, sink = context.base_dir, context.check_sink
        check_id = self.check

        def score(example: Example) -> Score:
            output = given(example)
            if isinstance(output, Score):
                return output
            try:
                result = run(check, base_dir, output, check_id=check_id, example_id=example.id)
            except WorkLost as exc:  # shipped and never done: no record exists, and the example is an error
                return Score.error("worker_lost", f"check '{check_id}' could not run on the cluster: {exc}")
            if sink is not None:
                sink(result)
            return to_score(result)

        return score
