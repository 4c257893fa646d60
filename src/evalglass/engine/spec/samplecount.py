"""How many samples each example has is part of what a gate's number means under a reducer that depends on it.

Under ``max``, ``min``, ``majority`` or ``at_least_k`` (``core.stats.Reducer.depends_on_count``) the expected value
of a metric moves with the number of samples each example is reduced from: ``max`` over 8 samples of a system that
answers right half the time is about 1.0, over 1 sample about 0.5. So the count is a parameter of the measurement,
not of the system under test, and a gate's approval binds it (``Config.gate_definition``: ``samples_per_example``):
a pull request that raises a lane's ``epochs`` makes the approval stale instead of turning a failing gate green.

A live lane declares its count (``epochs``). Recorded samples (``task.samples: true``, or another tool's results)
have only the count the file holds, example by example, which a pull request may change with the outputs (which gold
leaves out). A gate on such a reducer therefore needs the count declared (``task.epochs: N``, refused at load
without it), and an example whose recorded list holds another number of samples is an error (``sample_count``,
``engine.produce.scoring.expand``), so the gate blocks rather than decide on a count nobody approved.
"""

from __future__ import annotations

from collections.abc import Iterable

from evalglass.core.stats.model import Reducer

Problem = tuple[tuple[str | int, ...], str]

#: The key of a gate's definition (``Config.gate_definition``) that binds the samples per example.
SAMPLES_KEY = "samples_per_example"


def sample_count_problems(
    *,
    epochs_without_samples: bool,
    samples: bool,
    samples_per_example: int | None,
    gate_reducers: Iterable[tuple[str, str, Reducer]],
) -> list[Problem]:
    """A recorded task's ``epochs`` without samples to count (``epochs_without_samples``), and every metric gate
    (``gate_reducers``: the gate, its metric and the metric's reducer) whose reducer depends on the count of recorded
    samples that the config does not declare, each at its key. Told the config's facts rather than handed the config,
    so that the config module imports this one and not the other way round."""
    problems: list[Problem] = []
    if epochs_without_samples:
        problems.append(
            (
                ("task", "epochs"),
                "task.epochs counts the recorded samples of each example; set `samples: true` (the output field "
                "holds a list of samples) or remove epochs",
            )
        )
    if not samples or samples_per_example is not None:
        return problems
    for name, metric, reducer in gate_reducers:
        if reducer.depends_on_count:
            problems.append(
                (
                    ("gates", name, "metric"),
                    f"gate '{name}' decides on metric '{metric}', whose reducer {reducer.value} depends on how "
                    "many samples each example has; declare the count on the task (`epochs: N`: each example's "
                    "recorded list must hold N samples), which the gate's approval then binds",
                )
            )
    return problems


__all__ = ["SAMPLES_KEY", "sample_count_problems"]
