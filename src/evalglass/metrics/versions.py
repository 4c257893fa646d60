"""The version of every builtin evaluator: metric types, reducers, interval methods, gate rules and the judge-answer
parser.

An approval is bound to what the host reviewed, and for a builtin that includes what the builtin computes. Each
evaluator a gate depends on enters the gate's fingerprint as ``kind:name`` → version (written ``exact_match@1``),
so when a later EvalGlass changes what one computes (how ``exact_match`` normalises text, how ``json_schema``
resolves a keyword, how an interval is computed), its version is bumped here and every approval made under the old
version is ``approval_stale`` instead of silently deciding under the new behaviour.

**Bump a version whenever the evaluator's results can change.** ``tests/golden/`` holds, per evaluator, recorded
inputs and outputs with the version they were recorded under; a test fails when the outputs change while the
version stays the same (``python -m tests.golden.record`` re-records them after a bump).

Host code (``type: python`` metrics, checkers, rubrics) has no version here: the files it lives in are hashed into
the fingerprint instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from evalglass.core.stats import Method, Reducer
from evalglass.core.tables import total


class EvaluatorKind(StrEnum):
    METRIC = "metric"
    REDUCER = "reducer"
    INTERVAL = "interval"
    PAIRED = "paired"
    PARSER = "parser"
    RULE = "rule"


#: Builtin metric types (the config's ``type``). ``python`` is host code, hashed instead. ``llm_judge@3`` and
#: ``jury@2``: a judge's ``example`` is the record as gold sees it, without any variant's recorded output field
#: (``core.goldfields.record_without``); before, the default ``{{ example | json }}`` showed the graded output a
#: second time and, in a run with variants, the other variants' answers. ``tool_calls@3`` and ``loop@3``: a call's
#: arguments recorded as text holding a JSON object, outside the OpenAI chat shape (OpenAI's function object alone,
#: the Responses API's ``function_call`` items, OpenTelemetry GenAI ``tool_call`` parts), are that object
#: (``core.trajectory._with_object_text``); before, they compared as a string, so a right call matched nothing.
#: ``exact_match@3`` (``normalize: {case: true}``), ``contains@3``, ``enum@3`` and ``set_overlap@3``
#: (``case_sensitive: false``): case-insensitive matching is Unicode's canonical caseless match
#: (``core.textcase.caseless``), so a text precomposed (NFC) and decomposed (NFD) compares equal; before, plain
#: ``str.casefold`` kept them apart. ``regex@3`` (``flags: [ignorecase]``): the same canonical caseless rule, as
#: a regular expression can have it: the output is matched in its composed form (NFC) with full case folding
#: (``ß`` matches ``SS``), and a pattern whose own text is not composed is refused when the config loads; before,
#: ``re``'s simple case folding on the output as written kept an NFD answer (and ``STRASSE``) from matching.
#: ``recorded_score@3``: a score the sample never declared (a promptfoo assertion on other tests only) is not
#: applicable to it (``recorded_score_not_declared``, tolerable); before, it was an error (``recorded_score_missing``).
#: ``numeric_bounds@3``, ``word_count@3``, ``contains@4``, ``regex@4``, ``set_overlap@4``: an answer present but of a
#: type the metric cannot measure (``null``, a list, ``"0.9"`` where a number is read; anything but text where
#: text is read; no list for ``set_overlap``; NaN or, under ``coerce``, text that is no number) is a wrong answer,
#: scored the worst value with its diagnostic (``wrong_type``, ``not_a_number``) as ``on_invalid_output`` says
#: (``metrics.invalid.wrong_answer``); before, it was an ``error`` that blocked every gate on the metric.
#: ``json_valid@3``: a bare number, boolean or null (parsed by ``task.parse: json`` or stored so) is valid JSON, 1.0,
#: and any value JSON cannot hold (NaN, a set, bytes) 0.0 ``not_json`` naming its type; before, a bare scalar was an
#: ``error`` ``wrong_type``. ``exact_match@4``, ``enum@4``, ``json_schema@3``, ``tool_calls@4``, ``loop@4``,
#: ``final_state@2``: an answer holding a value JSON cannot hold (a set, NaN, bytes; a call's arguments; the final
#: state, which orjson alone wrote with NaN as ``null``) is the system's wrong answer, scored as ``on_invalid_output``
#: says with ``wrong_type`` naming the type; such a value in the reference is ``non_evaluable``
#: ``reference_wrong_type`` (the gold's problem); before, both were ``error``s.
#: ``exact_match@5``: text compared with a number or a boolean is read as the value it spells (``"42"`` equals ``42``
#: and ``42.0``, surrounding whitespace aside; ``"true"`` equals ``true``, ``"True"`` too under ``normalize: {case:
#: true}``), either side; before, it was 0.0 ``type_mismatch`` whatever the text said, so a right answer from a
#: system that answers in text failed a gate on gold written as JSON numbers.
#: ``contains@5``, ``set_overlap@5``, ``tool_calls@5``: a reference the metric cannot compare with (``contains``: no
#: text or list of texts; ``set_overlap``: no list, or items JSON cannot hold; ``tool_calls``: no list of calls, or
#: calls whose redundant fields disagree) is the gold's problem, ``non_evaluable`` ``reference_wrong_type``
#: (``metrics.support.wrong_reference``, the one decision every builtin's reference problem goes through), which
#: ``tolerate: [non_evaluable]`` can set aside; before, it was an ``error`` that blocked every gate on the metric.
#: ``enum@5``: text read against a number or a boolean among the values as the value it spells, either side, by
#: ``exact_match@5``'s rule (values ``[4]`` take the answer ``"4"``; values ``["4"]`` the answer ``4``); before, 0.0.
#: ``llm_judge@4``, ``jury@3``: a reference JSON cannot write (a NaN from a Parquet cell, a set) is ``non_evaluable``
#: ``reference_wrong_type`` and the judge is not called; before, a NaN was shown to the judge as ``null`` (orjson's
#: writing of it) and a set failed the call.
METRIC_VERSIONS: Mapping[str, int] = {
    "exact_match": 5,
    "contains": 5,
    "regex": 4,
    "json_valid": 3,
    "json_schema": 3,
    "field_present": 2,
    "numeric_bounds": 3,
    "word_count": 3,
    "set_overlap": 5,
    "enum": 5,
    "check": 2,
    "llm_judge": 4,
    "jury": 3,
    "recorded_score": 3,
    "tool_calls": 5,
    "steps": 2,
    "loop": 4,
    "final_state": 2,
}

#: How several samples of one example become one score.
REDUCER_VERSIONS: Mapping[Reducer, int] = total(
    Reducer,
    {
        Reducer.MEAN: 1,
        Reducer.MAJORITY: 1,
        Reducer.MAX: 1,
        Reducer.MIN: 1,
        Reducer.PASS_AT_K: 1,
        Reducer.AT_LEAST_K: 1,
    },
)

#: Interval methods (what a ``lower_bound`` gate compares). ``student_t@2`` and ``cluster_t@2``: an end past the
#: metric's declared scale is clipped to it (version 1 clipped only binary values to [0, 1]). ``student_t@3``,
#: ``cluster_t@3`` and the bootstraps' version 2: on a bounded metric the interval keeps the range floor
#: (``core.stats._common.range_floor``), so values with no spread (all equal) are no longer a zero-width interval.
#: The bootstraps' version 3: the values (a cluster bootstrap's clusters) are sorted before they are resampled, so
#: their order does not move the interval (the gold fingerprint does not count the examples' order).
INTERVAL_VERSIONS: Mapping[Method, int] = total(
    Method,
    {
        Method.WILSON: 1,
        Method.CLOPPER_PEARSON: 1,
        Method.STUDENT_T: 3,
        Method.BOOTSTRAP_BCA: 3,
        Method.BOOTSTRAP_PERCENTILE: 3,
        Method.CLUSTER_T: 3,
        Method.CLUSTER_BOOTSTRAP_BCA: 3,
        Method.CLUSTER_BOOTSTRAP_PERCENTILE: 3,
        Method.NEWCOMBE_PAIRED: 1,
    },
)

#: How a comparative gate pairs this run's examples with the baseline's and computes the difference and its test
#: (``core.stats.paired.paired_difference``); the interval of the difference is one of the methods above. Version 2
#: clips the interval to ``±(max - min)`` of the metric's declared scale. ``paired_difference@4``: a bootstrap of the
#: differences resamples them sorted (the bootstraps' version 3), so the pairs' order does not move it (a variant's
#: difference is never bootstrapped: ``variant_difference`` stays).
PAIRED_VERSIONS: Mapping[str, int] = {"paired_difference": 4, "variant_difference": 3}
#: ``variant_difference``: a gate between two variants of one run (``compare_to_variant``) decides on their
#: per-example difference (``core.variants.difference_column``), whose interval version 2 clips to ``±(max - min)``
#: of the metric's range (``core.variants.difference_scale``) and never computes as a proportion's
#: (``core.variants.difference_interval``: student_t where Wilson was chosen for differences that were all 0 or 1);
#: version 1 did both. Listed for a
#: ``lower_bound`` gate only (the point is unchanged), and left out of fingerprints at version 1 (see
#: :func:`fingerprinted`), so an approval made before it was named reads as "variant_difference@1 → @2". Version 3
#: of both: the difference's interval keeps the range floor (``core.stats._common.range_floor``), so n pairs that
#: all differ by the same amount are never a certain difference (a point interval decided a gate on 3 examples).

#: Gate rules whose decision has changed since the rule was introduced. ``lower_bound@2`` is the three-way interval
#: rule (pass, fail only when the whole interval misses, otherwise blocked ``undecided``); version 1 (fail whenever
#: the bound missed) was never named in fingerprints, so :func:`fingerprinted` leaves a rule at version 1 out: an
#: approval made under it then reads as "lower_bound@1 → lower_bound@2" in approval_stale. The point rule has
#: never changed and is not listed.
#: ``majority_ties@2``: where a tie between a ``majority`` metric's samples goes, named for a lower-is-better gate on
#: one (with samples), the one gate it changed for: the side unfavourable to the gate, the highest tied value
#: (``core.stats.Ties.against``); version 1 took the lowest, the favourable side, whatever the direction. Under a
#: higher-is-better gate both versions take the lowest, so it is not named there and those approvals stand.
RULE_VERSIONS: Mapping[str, int] = {"lower_bound": 2, "majority_ties": 2}

#: The rules that turn an LLM judge's answer into a score (``lanes.judge.parse_judge_answer``). ``json-score@2``:
#: the answer is the object holding ``score`` (``winner`` for a pairwise judge), wherever it is in the text; several
#: objects giving different values, or one giving the key twice, are ``judge_unparseable``. Version 1 read the first
#: object found: a judge that quoted the graded JSON before its verdict was unparseable, and one that quoted a
#: ``{"score": 5}`` from the output before its own ``{"score": 1}`` scored 5; a repeated key kept its last value.
#: Labels (a categorical scale's answer, and a labels file's) match the scale by canonical caseless matching
#: (``core.textcase.caseless``); version 1 compared ``casefold`` alone, so a label whose accent was decomposed (NFD)
#: was off the scale. ``json-score@3``: a numeric scale's score written as text that is a plain decimal number
#: (``{"score": "4"}``) is that number, then on or off the scale as a bare one; a label scale's score written as an
#: integer (``{"score": 2}`` on labels ``"1"``, ``"2"``, ``"3"``) is the label its digits spell; a labels file's
#: label likewise (``lanes.judge.numeral``, ``label_text``). Version 2 made both ``judge_unparseable`` (a labels
#: file's, refused): an error that blocked every gate on the judge for a judge that had answered.
PARSER_VERSIONS: Mapping[str, int] = {"json-score": 3}

#: The judge-answer parser every ``llm_judge`` uses.
JUDGE_PARSER_NAME = "json-score"


@dataclass(frozen=True, slots=True)
class Evaluator:
    kind: EvaluatorKind
    name: str
    version: int

    @property
    def key(self) -> str:
        """How it is keyed in a fingerprint: kinds have separate name spaces (``interval:wilson``)."""
        return f"{self.kind.value}:{self.name}"

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"


def registry() -> dict[str, Evaluator]:
    """Every builtin evaluator, by key."""
    items = [Evaluator(EvaluatorKind.METRIC, name, version) for name, version in METRIC_VERSIONS.items()]
    items += [Evaluator(EvaluatorKind.REDUCER, item.value, version) for item, version in REDUCER_VERSIONS.items()]
    items += [Evaluator(EvaluatorKind.INTERVAL, item.value, version) for item, version in INTERVAL_VERSIONS.items()]
    items += [Evaluator(EvaluatorKind.PAIRED, name, version) for name, version in PAIRED_VERSIONS.items()]
    items += [Evaluator(EvaluatorKind.PARSER, name, version) for name, version in PARSER_VERSIONS.items()]
    items += [Evaluator(EvaluatorKind.RULE, name, version) for name, version in RULE_VERSIONS.items()]
    return {item.key: item for item in items}


#: Evaluators fingerprints named only from their first change on: at version 1 each is left out.
NAMED_FROM_VERSION_2 = frozenset({f"{EvaluatorKind.PAIRED.value}:variant_difference"})


def fingerprinted(evaluators: Mapping[str, int]) -> dict[str, int]:
    """The evaluator versions as a gate fingerprint holds them: a gate rule, or an evaluator of
    :data:`NAMED_FROM_VERSION_2`, at version 1 is left out (fingerprints named none of them before its first
    change, so this is what an approval made then was bound to)."""
    return {
        key: version
        for key, version in evaluators.items()
        if not (version == 1 and (key.startswith(f"{EvaluatorKind.RULE.value}:") or key in NAMED_FROM_VERSION_2))
    }


def evaluator(key: str) -> Evaluator:
    kind, _, name = key.partition(":")
    return Evaluator(EvaluatorKind(kind), name, registry()[key].version)


def key_of(kind: EvaluatorKind, name: str) -> str:
    return f"{kind.value}:{name}"


def judge_parser_id() -> str:
    """The parser as the judge fingerprint has always named it (``json-score-v1``): a calibration made under
    another parser version describes another judge."""
    return f"{JUDGE_PARSER_NAME}-v{PARSER_VERSIONS[JUDGE_PARSER_NAME]}"


def interval_methods(method: Method | None, clustered: bool) -> tuple[Method, ...]:
    """The interval methods a ``lower_bound`` bound can come from: an explicit method (a BCa bootstrap falls back
    to the percentile bootstrap on data where BCa is undefined), or every method ``auto`` may choose."""
    if method is None:
        return (Method.CLUSTER_T,) if clustered else (Method.WILSON, Method.STUDENT_T)
    if method is Method.BOOTSTRAP_BCA:
        return (Method.BOOTSTRAP_BCA, Method.BOOTSTRAP_PERCENTILE)
    if method is Method.CLUSTER_BOOTSTRAP_BCA:
        return (Method.CLUSTER_BOOTSTRAP_BCA, Method.CLUSTER_BOOTSTRAP_PERCENTILE)
    return (method,)


def paired_methods(method: Method | None, clustered: bool) -> tuple[Method, ...]:
    """The interval methods the bound of a paired difference can come from (see ``paired_difference``): binary
    values use Newcombe's paired interval (also for a proportion override), others the method on the differences."""
    if method is None:
        return (Method.CLUSTER_T,) if clustered else (Method.NEWCOMBE_PAIRED, Method.STUDENT_T)
    if method in (Method.WILSON, Method.CLOPPER_PEARSON, Method.NEWCOMBE_PAIRED):
        return (Method.NEWCOMBE_PAIRED,)
    return interval_methods(method, clustered)


def gate_evaluators(
    metric_type: str,
    *,
    reducer: Reducer | None,
    interval: Method | None,
    lower_bound: bool,
    clustered: bool,
    comparative: bool = False,
    between_variants: bool = False,
    lower_is_better: bool = False,
) -> dict[str, int]:
    """The builtin evaluators a metric gate's outcome depends on, key → version.

    The metric type itself (unless host code); its reducer when examples have several samples (with one sample
    every reducer is the identity); the judge-answer parser for an ``llm_judge``; the interval methods when the
    gate compares a ``lower_bound`` (a point gate compares the point, which no interval method touches), and the
    ``lower_bound`` rule itself (how it decides from the interval). A comparative gate adds the paired difference,
    and for ``lower_bound`` the methods of the difference's interval; a ``lower_bound`` gate between two variants
    (``between_variants``) adds how their difference's interval is bounded (``variant_difference``). A
    ``lower_is_better`` gate on a ``majority`` metric with samples adds where a tie goes (``majority_ties``).
    """
    found: dict[str, int] = {}
    if metric_type in METRIC_VERSIONS:
        found[key_of(EvaluatorKind.METRIC, metric_type)] = METRIC_VERSIONS[metric_type]
    if metric_type == "llm_judge":
        found[key_of(EvaluatorKind.PARSER, JUDGE_PARSER_NAME)] = PARSER_VERSIONS[JUDGE_PARSER_NAME]
    if reducer is not None:
        found[key_of(EvaluatorKind.REDUCER, reducer.value)] = REDUCER_VERSIONS[reducer]
        if reducer is Reducer.MAJORITY and lower_is_better:
            found[key_of(EvaluatorKind.RULE, "majority_ties")] = RULE_VERSIONS["majority_ties"]
    if comparative:
        found[key_of(EvaluatorKind.PAIRED, "paired_difference")] = PAIRED_VERSIONS["paired_difference"]
    if lower_bound:
        methods = paired_methods(interval, clustered) if comparative else interval_methods(interval, clustered)
        for method in methods:
            found[key_of(EvaluatorKind.INTERVAL, method.value)] = INTERVAL_VERSIONS[method]
        found[key_of(EvaluatorKind.RULE, "lower_bound")] = RULE_VERSIONS["lower_bound"]
        if between_variants:
            found[key_of(EvaluatorKind.PAIRED, "variant_difference")] = PAIRED_VERSIONS["variant_difference"]
    return found
