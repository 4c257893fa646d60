"""Building the run's metrics: every metric type through the same ``spec.build(context)``.

The engine never asks which type a metric is. It fills one :class:`~evalglass.metrics.base.BuildContext` per
metric (the config's folder and checks, the check records' sink, and on a live run its executor and call cache; the
cluster for a metric that can be shipped) and reads what it needs from the spec's own declarations: ``live`` (built
in the live run's event loop), ``shippable``, ``parallel``. Which way a metric improves (its gates' direction) is in
the context too: it decides which end of its scale an answer the metric cannot read scores (``metrics.invalid``),
and so are the record's fields holding a recorded output, which a judge is never shown (``output_fields``), and
those a python metric is not shown (another variant's answers: ``others_outputs``).
A metric that cannot be built is one line and exit 2, whatever its type.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from evalglass import hostwatch
from evalglass.engine.datasets.sampleguard import GuardedJudge, SampleGuard, guard_scorer
from evalglass.engine.produce.cachekey import project_root
from evalglass.engine.produce.scoring import BuiltMetric
from evalglass.engine.spec.config import imports_key
from evalglass.errors import SetupError
from evalglass.lanes.hostimports import installed_path
from evalglass.metrics.base import AnyScorer, AsyncScorer, BuildContext, CheckSink, MetricShipper, MetricSpec
from evalglass.metrics.errors import MetricLoadError

if TYPE_CHECKING:
    from evalglass.engine.spec.config import LoadedConfig
    from evalglass.lanes.callcache import CallStore
    from evalglass.lanes.executor import Executor
    from evalglass.lanes.hostguard import BoundCode
    from evalglass.metrics.registry import AnyMetricSpec


def build_scorer(loaded: LoadedConfig, name: str, spec: MetricSpec, context: BuildContext) -> AnyScorer:
    """``spec.build(context)``, where a metric that cannot be built is a one-line setup error naming it."""
    try:
        return spec.build(context)
    except MetricLoadError as exc:
        raise SetupError(f"metric '{name}': {exc}", where=str(loaded.path)) from None


def build_metrics(
    loaded: LoadedConfig,
    check_sink: CheckSink | None = None,
    shipper: MetricShipper | None = None,
    only: Collection[str] | None = None,
) -> list[BuiltMetric]:
    """The synchronous metrics, built once, before scoring starts (a ``live`` metric is built by the live run, in
    its event loop). With a cluster (``shipper``), a ``shippable`` metric is built to run its calls there, and runs
    concurrently across examples like any metric that waits on something outside the process. ``only``: just
    these metrics (``verify`` re-scores some of a run's)."""
    config = loaded.config
    checks = loaded.bound_checks() if config.checks else {}
    shipped = config.shipped_metrics if shipper is not None else set()  # never a gated python metric
    guarded = config.guarded_metrics  # once: it walks every metric and gate
    built: list[BuiltMetric] = []
    for name, spec in config.metrics.items():
        if spec.live or (only is not None and name not in only):
            continue
        ships = name in shipped
        context = BuildContext(
            base_dir=loaded.base_dir,
            name=name,
            checks=checks,
            check_sink=check_sink,
            shipper=shipper if ships else None,
            direction=config.metric_direction(name),
            output_fields=config.gold_excluded_fields,
            others_outputs=config.others_output_fields,
            bound_code=bound_code(loaded, name) if name in guarded else None,
        )
        label = metric_label(name, spec)
        with hostwatch.watch(label):  # building a host metric imports its module: host code runs
            scorer = build_scorer(loaded, name, spec, context)
        if isinstance(scorer, AsyncScorer):
            raise TypeError(f"metric '{name}' built an asynchronous scorer but does not declare itself live")
        guard = sample_guard(loaded, name, spec)
        if guard is not None:
            scorer = guard_scorer(guard, scorer)
        built.append(BuiltMetric(name=name, scorer=scorer, parallel=spec.parallel or ships, label=label))
    return built


def bound_code(loaded: LoadedConfig, name: str) -> BoundCode:
    """For host code a gate declared in the config decides on (one of ``Config.guarded_metrics``): the project's
    folder (the repository holding the config folder, else that folder) and the files the gate's fingerprint binds,
    as hashed when the config loaded (the metric's own files, ``data_files:`` and what it imports), with those hashes:
    ``lanes.hostguard`` refuses it any other file of the project, and a bound source whose bytes are not the hashed
    ones."""
    root = loaded.base_dir.resolve()
    project = project_root(root)
    files = loaded.definition_files
    hashes = {**files.get(name, {}), **files.get(imports_key(name), {})}
    # A file of the project installed from the checkout is labelled by its distribution: bound where it is installed.
    bound = {str(installed_path(label) or (root / label).resolve()): digest for label, digest in hashes.items()}
    # And a data file as the config names it (the labels are resolved): a link on its way (``data -> cases``) is
    # then bound with it, so asking about the name the config gives is answered (``Guard.ask`` checks each step of
    # a name, links included). What the link leads to is hashed, as any data file is: the name carries its digest.
    named = getattr(loaded.config.metrics[name], "data_files", None) or ()
    for label in named:
        if ".." not in Path(label).parts and not Path(label).is_absolute():
            # A folder has no digest of its own (its files have): "" compares with nothing (``_held_sources``).
            bound.setdefault(str(root / label), bound.get(str((root / label).resolve()), ""))
    return str(project), tuple(sorted(bound.items()))


def metric_label(name: str, spec: AnyMetricSpec) -> str:
    """How the supervisor names this metric when the process dies while it runs: ``python metric 'm'
    (m.py:score)``."""
    reference = spec.host_reference()
    return f"{spec.type} metric '{name}'" + (f" ({reference})" if reference else "")


def build_live_metric(loaded: LoadedConfig, name: str, executor: Executor, cache: CallStore | None) -> AsyncScorer:
    """The ``live`` metric ``name`` (a judge), built with the run's executor and call cache inside the running
    event loop, which its clients belong to. It is shown each record as gold sees it: without any variant's
    recorded output (``BuildContext.output_fields``)."""
    spec = loaded.config.metrics[name]
    context = BuildContext(
        base_dir=loaded.base_dir,
        name=name,
        checks=loaded.bound_checks(),
        executor=executor,
        cache=cache,
        direction=loaded.config.metric_direction(name),
        output_fields=loaded.config.gold_excluded_fields,
        others_outputs=loaded.config.others_output_fields,
    )
    scorer = build_scorer(loaded, name, spec, context)
    if not isinstance(scorer, AsyncScorer):
        raise TypeError(f"metric '{name}' declares itself live but built a synchronous scorer")
    guard = sample_guard(loaded, name, spec)
    return scorer if guard is None else GuardedJudge(name, guard, scorer)


def sample_guard(loaded: LoadedConfig, name: str, spec: MetricSpec) -> SampleGuard | None:
    """What every metric of this run must not measure (``engine.datasets.sampleguard``), whatever its type; None on a
    dataset whose samples cannot have failed or lack content, for a metric that reads no output telemetry (a
    trajectory's usage or cost, which a model step may not have reported)."""
    dataset = loaded.config.dataset
    guard = SampleGuard(
        name,
        spec,
        loaded.config.output_field,
        failures=dataset.tool_results,
        uncaptured=dataset.may_lack_content,
    )
    return guard if guard.active else None


__all__ = ["build_live_metric", "build_metrics", "build_scorer"]
