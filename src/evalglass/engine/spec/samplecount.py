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

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalglass.engine.spec.config import Config

Problem = tuple[tuple[str | int, ...], str]

#: The key of a gate's definition (``Config.gate_definition``) that binds the samples per example.
SAMPLES_KEY = "samples_per_example"


def sample_count_problems(config: Config) -> list[Problem]:
    """A recorded task's ``epochs`` without samples to count, and every metric gate whose reducer depends on the
    count of recorded samples that the config does not declare, each at its key."""
    from evalglass.engine.spec.config import RecordedTask

    problems: list[Problem] = []
    task = config.task
    if isinstance(task, RecordedTask) and task.epochs is not None and not config.samples:
        problems.append(
            (
                ("task", "epochs"),
                "task.epochs counts the recorded samples of each example; set `samples: true` (the output field "
                "holds a list of samples) or remove epochs",
            )
        )
    if not config.samples or config.samples_per_example is not None:
        return problems
    for name, gate in config.gates.items():
        if gate.metric is None or gate.metric not in config.metrics:
            continue
        reducer = config.metrics[gate.metric].reducer
        if reducer.depends_on_count:
            problems.append(
                (
                    ("gates", name, "metric"),
                    f"gate '{name}' decides on metric '{gate.metric}', whose reducer {reducer.value} depends on how "
                    "many samples each example has; declare the count on the task (`epochs: N`: each example's "
                    "recorded list must hold N samples), which the gate's approval then binds",
                )
            )
    return problems


def recorded_sample_count(config: Config) -> int | None:
    """The samples each recorded example's list must hold (the declared ``task.epochs``); None for a lane (which
    produces exactly its epochs) and for recorded samples of undeclared count."""
    return config.samples_per_example if config.samples and config.lane is None else None


__all__ = ["SAMPLES_KEY", "recorded_sample_count", "sample_count_problems"]
