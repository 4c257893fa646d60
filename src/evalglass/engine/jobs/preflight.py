"""`evalglass preflight` (and `run --dry-run`): what every gate would be, without running a metric or a lane.

It loads the config and the ledger exactly as a run does (the same validation, the same refusals), fingerprints
every gate, the dataset and each judge, and asks the ledger the question a run asks (``declared_gate_authority``)
on the given day. What it can know without measuring is every authority reason: undeclared, forbidden, unbound,
stale (naming an evaluator whose version changed), expired, unvalidated or stale gold, an uncalibrated judge, a
check that would run unbound where the ledger requires a binding, a check (of a check gate, or run per example by
a `check` metric) whose command runs code no input binds where the ledger does not accept it; and for a comparative
gate every reason its baseline gives (missing, stale, unsigned, untrusted, another branch or suite, too old) and
whether it is comparable with this run (the metric's definition, the gold, the example set), asked of the same
function the run asks
(``core.comparative.baseline_standing_reasons``) with this run's side read from the config and the dataset. What
only a run can tell (nothing measured, excluded examples, below ``min_n``, a failing check, a threshold missed,
pairs not measured in both runs) is not predicted: "would decide" means the gate may pass, fail, or still block on
its measurement.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalglass.core.authority import (
    JudgeStanding,
    check_inputs_unbound_reason,
    check_unbound_reason,
    declared_gate_authority,
    gate_judge,
    unbound_inputs_text,
    undeclared_gates,
)
from evalglass.core.evaluators import evaluator_labels
from evalglass.core.preflight import GatePreview, Preflight, Standing
from evalglass.engine.datasets.datasetfile import comparison_identity, gold_fingerprint_of
from evalglass.engine.runs.earlierruns import earlier_definition_files
from evalglass.engine.runs.runlocator import RunLocator
from evalglass.engine.spec.config import LoadedConfig, load_config
from evalglass.engine.spec.ledger import LoadedLedger, check_against_config, load_ledger, refuse_unpinned_ledger
from evalglass.engine.spec.staleness import stale_causes
from evalglass.lanes.checkinputs import unbound_inputs

if TYPE_CHECKING:  # numpy and the comparison statistics load only for a suite with a comparative gate
    from evalglass.core.comparative import ComparativeInputs
    from evalglass.core.compare import UnchangedForecast
    from evalglass.core.gatespec import GateSpec


def preflight(
    config_path: Path, *, today: str, pinned_ledger: Path | None = None, locator: RunLocator | None = None
) -> Preflight:
    """Every gate's standing on ``today`` (YYYY-MM-DD). Bad input raises ``SetupError`` as a run would.
    ``locator``: how a run would find a baseline named by reference (``engine.runs.runlocator``)."""
    loaded = load_config(config_path)
    refuse_unpinned_ledger(loaded, pinned_ledger)
    config = loaded.config
    ledger = load_ledger(loaded.ledger_path)
    check_against_config(ledger, config)
    fingerprints = {name: config.gate_fingerprint(name, loaded.definition_files) for name in config.gates}
    comparative = _comparative(loaded, ledger, locator, today)
    if comparative is not None:
        dataset_fingerprint = comparative.gold_fingerprint
    else:
        dataset_fingerprint = gold_fingerprint_of(loaded) if config.needs_gold else None
    standings: dict[str, JudgeStanding] = {}
    if config.judges:
        from evalglass.engine.jobs.calibrate import judge_standings

        standings = judge_standings(loaded)
    # The runs `evalglass run` makes in this folder by default: one made when an approval was fresh names what changed.
    runs = Path(".evalglass") / "runs"
    causes = stale_causes(
        config, loaded.definition_files, ledger.ledger, fingerprints, earlier=lambda: earlier_definition_files(runs)
    )
    unbound_code = loaded.unbound_check_code()
    previews = [
        _preview(
            loaded,
            ledger,
            name,
            fingerprints[name],
            dataset_fingerprint,
            standings,
            causes.get(name),
            today,
            comparative,
            unbound_code,
        )
        for name in config.gates
    ]
    for gate in undeclared_gates(ledger.ledger, list(config.gates), ledger.gate_where()):
        previews.append(
            GatePreview(
                name=gate.name,
                subject=gate.name,
                kind="undeclared",
                standing=Standing.BLOCKED,
                fingerprint=gate.fingerprint,
                threshold=gate.threshold,
                reasons=(gate.reason,),
            )
        )
    return Preflight(
        config_path=str(config_path),
        ledger_path=str(ledger.path),
        today=today,
        dataset=config.dataset.name,
        dataset_fingerprint=dataset_fingerprint,
        gates=tuple(previews),
    )


def _preview(
    loaded: LoadedConfig,
    ledger: LoadedLedger,
    name: str,
    fingerprint: str,
    dataset_fingerprint: str | None,
    standings: dict[str, JudgeStanding],
    stale_cause: str | None,
    today: str,
    comparative: ComparativeInputs | None,
    unbound_code: dict[str, dict[str, tuple[str, ...]]],
) -> GatePreview:
    config = loaded.config
    gate = config.gates[name]
    spec = config.metrics[gate.metric] if gate.metric is not None else None
    # A gate on a `check` metric binds the check it runs per example as a check gate does, and leaves what that
    # check's command discovers unbound alike: it blocks on it as the run does (`with_unbound_code`).
    per_example = unbound_code.get(gate.metric, {}) if gate.metric is not None else {}
    authority = declared_gate_authority(
        ledger.ledger,
        today=today,
        name=name,
        fingerprint=fingerprint,
        check=gate.check is not None,
        dataset=config.dataset.name,
        dataset_fingerprint=dataset_fingerprint or "",
        uses_reference=spec is not None and spec.uses_reference,
        judge=gate_judge(standings, gate.subject),
        stale_cause=stale_cause,
        comparative=gate.compare_to is not None,
        baseline=gate.compare_to,
        unbound_code=per_example,
    )
    kind = "check" if gate.check is not None else "comparative" if gate.compare_to is not None else "metric"
    evaluators = evaluator_labels(config.gate_evaluators(name))
    # What the check's run records too (lanes.checkinputs), from the same declaration and files.
    unbound = unbound_inputs(config.checks[gate.check], loaded.base_dir) if gate.check is not None else ()
    forecast = _forecast(gate, comparative, authority.margin) if gate.compare_to is not None else None
    if not authority.active:
        # Said before activation too: the host approves a fingerprint that would not cover that code.
        said = ((unbound_inputs_text(gate.subject, unbound),) if unbound else ()) + tuple(
            unbound_inputs_text(check, what) for check, what in per_example.items() if what
        )
        return GatePreview(
            name,
            gate.decided_subject,
            kind,
            Standing.INFORMATIONAL,
            fingerprint,
            notes=said,
            evaluators=evaluators,
            forecast=forecast,
        )
    reasons = list(authority.reasons)
    notes = authority.notes
    if gate.check is not None and authority.require_binding and gate.expect_state is None:
        reasons.append(check_unbound_reason(gate.check))
    if unbound and not authority.accept_unbound_code:
        reasons.append(check_inputs_unbound_reason(gate.subject, unbound))
    elif unbound:
        notes = (*notes, unbound_inputs_text(gate.subject, unbound))
    if gate.compare_to is not None and gate.metric is not None:
        from evalglass.core.comparative import baseline_standing_reasons, skipped_note

        assert comparative is not None
        reasons.extend(baseline_standing_reasons(gate.compare_to, gate.decided_subject, ledger.ledger, comparative))
        notes = (*notes, *skipped_note(gate.compare_to, comparative.baselines.get(gate.compare_to)))
    return GatePreview(
        name=name,
        subject=gate.decided_subject,
        kind=kind,
        standing=Standing.BLOCKED if reasons else Standing.WOULD_DECIDE,
        fingerprint=fingerprint,
        threshold=authority.threshold,
        margin=authority.margin,
        reasons=tuple(reasons),
        notes=notes,
        evaluators=evaluators,
        forecast=forecast,
    )


def _comparative(
    loaded: LoadedConfig, ledger: LoadedLedger, locator: RunLocator | None, today: str
) -> ComparativeInputs | None:
    """This run's side of its comparative gates as a run would have it (ids, gold, definitions: from the config and
    the dataset, in one pass over it), and each baseline the ledger lists, found and read as the run reads it."""
    config = loaded.config
    names = list(dict.fromkeys(gate.compare_to for gate in config.gates.values() if gate.compare_to is not None))
    if not names:
        return None
    import numpy as np

    from evalglass.core.comparative import ComparativeInputs
    from evalglass.engine.decide.baselines import (
        compared_definitions,
        compared_metrics,
        compared_ties,
        read_baseline,
    )

    metrics = compared_ties(config)
    baselines = {
        name: read_baseline(name, ledger, metrics, locator, config.dataset.name)[0]
        for name in names
        if name is not None and name in ledger.ledger.baselines
    }
    ids: list[str] = []
    dataset_fingerprint: str | None = None
    if any(found.problem is None for found in baselines.values()):
        gold, dataset_fingerprint, ids = comparison_identity(loaded)
    else:  # nothing to compare with: only the gold the ledger validates is needed
        gold = gold_fingerprint_of(loaded)
    definitions, payloads = compared_definitions(config, loaded.definition_files)
    # The samples per example this run will reduce from, where the config says (a lane's epochs, a recorded task's
    # declared epochs; one without samples): a baseline of other counts is not comparable under a count reducer.
    declared = config.samples_per_example if config.samples else 1
    return ComparativeInputs(
        samples_per_example={} if declared is None else dict.fromkeys(compared_metrics(config), declared),
        ids=np.array(ids, dtype=np.str_),
        gold_fingerprint=gold,
        definitions=definitions,
        definition_payloads=payloads,
        baselines=baselines,
        dataset_fingerprint=dataset_fingerprint,
        suite=config.dataset.name,
        today=today,
    )


def _forecast(
    gate: GateSpec, comparative: ComparativeInputs | None, approved_margin: float | None
) -> UnchangedForecast | None:
    """How often an unchanged candidate would come out undecided, from the baseline's own spread of the gate's
    metric, at the approved margin (else the proposed one); None when there is no margin yet or no baseline read."""
    from evalglass.core.comparative import unchanged_forecast

    margin = approved_margin if approved_margin is not None else gate.proposed_margin
    found = comparative.baselines.get(str(gate.compare_to)) if comparative is not None else None
    side = found.metrics.get(gate.decided_subject) if found is not None and found.problem is None else None
    if margin is None or side is None:
        return None
    return unchanged_forecast(gate, None, side, margin)
