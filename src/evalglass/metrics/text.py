"""Metrics over a text output: substring containment, regular expressions and word counts.

Each of them measures a string. A target of any other type is not stringified, because a metric that silently
stringified a number or an object would be measuring something the config did not ask for: it is the system's
wrong answer (``wrong_type``), scored the worst value with that diagnostic as ``on_invalid_output`` says
(``metrics.invalid.wrong_answer``), not an ``error`` that would block a gate on what only the system can mend. A
``null`` is such an answer; a field absent from the output is ``output_field_missing``.
"""

from __future__ import annotations

import re
import re._constants as _constants
import re._parser as _parser
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.outputshape import OutputShape
from evalglass.core.score import Score
from evalglass.core.textcase import caseless
from evalglass.core.uniform import all_of_type
from evalglass.metrics.base import (
    ABSENT,
    BatchMetricFn,
    BuildContext,
    MetricFn,
    MetricResult,
    MetricSpec,
    measured_target,
    missing_reference,
    reference_getter,
)
from evalglass.metrics.invalid import InvalidAnswer, WrongAnswer, invalid_answer, wrong_answer
from evalglass.metrics.support import CountBound, NoReferenceSpec, wrong_reference, wrong_type

_NEEDS_STRING = "a string output"


class ContainsSpec(MetricSpec):
    """Substring presence. Either literal ``value`` strings or the record's ``reference``, never both."""

    deterministic: ClassVar[bool] = True

    reads: ClassVar[OutputShape] = OutputShape.TEXT

    summary: ClassVar[str] = "1.0 when the output string contains the given text(s) or the reference, else 0.0."
    binary: ClassVar[bool] = True

    type: Literal["contains"] = "contains"
    value: str | list[str] | None = Field(
        default=None, description="Text (or list of texts) to look for; omit when using 'reference'."
    )
    mode: Literal["any", "all"] = Field(default="any", description="With several texts: need any one, or all.")
    case_sensitive: bool = True

    @model_validator(mode="after")
    def _one_source(self) -> ContainsSpec:
        if (self.value is None) == (self.reference is None):
            raise ValueError(
                "contains needs exactly one of 'value' (literal text) or 'reference' (a path in the record)"
            )
        needles = [self.value] if isinstance(self.value, str) else self.value
        if needles is not None and (not needles or any(not needle for needle in needles)):
            raise ValueError("contains 'value' must be a non-empty string or a non-empty list of non-empty strings")
        return self

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        wrong = wrong_answer(self, context)
        fold = not self.case_sensitive
        wants_all = self.mode == "all"
        if self.value is None:
            return self._build_reference(target, invalid, wrong, fold, wants_all)
        raw = [self.value] if isinstance(self.value, str) else self.value
        needles = tuple(caseless(needle) if fold else needle for needle in raw)

        def contains(example: Example) -> MetricResult:
            text = target(example)
            if text is ABSENT:
                return invalid(example)
            if not isinstance(text, str):
                return wrong(wrong_type("contains", _NEEDS_STRING, text))
            return _found(caseless(text) if fold else text, needles, wants_all)

        return contains

    def build_batch(self, one: MetricFn) -> BatchMetricFn | None:
        """Literal texts: a string output is searched in the loop; every other case is ``one``'s."""
        if self.value is None:
            return None
        fold = not self.case_sensitive
        wants_all = self.mode == "all"
        raw = [self.value] if isinstance(self.value, str) else self.value
        needles = tuple(caseless(needle) if fold else needle for needle in raw)

        def contains_batch(batch: ExampleBatch) -> list[MetricResult]:
            texts = batch.output_values(self.field)
            return [
                _found(caseless(text) if fold else text, needles, wants_all)
                if type(text) is str
                else one(batch.example(index))
                for index, text in enumerate(texts)
            ]

        return contains_batch

    def _build_reference(
        self,
        target: Callable[[Example], Any],
        invalid: InvalidAnswer,
        wrong: WrongAnswer,
        fold: bool,
        wants_all: bool,
    ) -> MetricFn:
        gold = reference_getter(self)

        def contains_reference(example: Example) -> MetricResult:
            reference = gold(example)
            if reference is ABSENT:
                return missing_reference(self, example)
            needles = _reference_needles(reference, fold)
            if isinstance(needles, Score):
                return needles
            text = target(example)
            if text is ABSENT:
                return invalid(example)
            if not isinstance(text, str):
                return wrong(wrong_type("contains", _NEEDS_STRING, text))
            return _found(caseless(text) if fold else text, needles, wants_all)

        return contains_reference


def _reference_needles(reference: Any, fold: bool) -> Sequence[str] | Score:
    """The texts a reference asks for, or the score explaining why the reference cannot be used."""
    raw = [reference] if isinstance(reference, str) else reference
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        return wrong_reference("contains", "a string or a list of strings", reference)
    if not raw or not all(raw):
        return Score.non_evaluable("reference_empty", "the reference text is empty, so there is nothing to find")
    return [caseless(item) for item in raw] if fold else raw


def _found(text: str, needles: Sequence[str], wants_all: bool) -> float:
    if wants_all:
        return 1.0 if all(needle in text for needle in needles) else 0.0
    return 1.0 if any(needle in text for needle in needles) else 0.0


RegexFlag = Literal["ignorecase", "multiline", "dotall"]
_FLAG_BITS: dict[str, int] = {
    "ignorecase": re.IGNORECASE,
    "multiline": re.MULTILINE,
    "dotall": re.DOTALL,
}
#: CPU seconds one match may take on one output before it is that example's ``error`` (``regex_timeout``).
REGEX_TIMEOUT = 1.0
#: Longest output a pattern without nested or repeated variable repetition is matched without a time bound: such a
#: pattern takes at most about n² steps (a few milliseconds here), and reading the CPU clock that a bound needs
#: costs more than the match itself on short outputs.
UNTIMED_TEXT = 4096
Matcher = Callable[[str], MetricResult]


class RegexSpec(NoReferenceSpec):
    """A regular expression over the output string (Python ``re`` syntax).

    With ``ignorecase`` the match is a canonical caseless one (``regex@3``, the rule of ``core.textcase``): the
    output is matched in its composed form (NFC), with full Unicode case folding (the ``regex`` package's
    ``FULLCASE``: ``ß`` matches ``SS``, ``ﬁ`` matches ``FI``), and the pattern's own text must be composed (a pattern
    holding a decomposed letter is refused when the config loads, see :func:`first_decomposed`). The pattern is never
    normalised for the user: NFC or NFD of a pattern can change what it means (a class holding ``é`` precomposed is
    one letter, holding ``e`` and U+0301 either of two; ``e`` U+0301 ``?`` makes the accent optional, ``é?`` the
    letter). Limit: a combining mark the pattern names alone (the escape for U+0301) matches only a mark that does
    not compose with the letter before it in the output.

    A backtracking engine can take exponential time on some patterns (``^(a|aa)+$`` on forty ``a``s and a ``!``).
    A pattern that is at most quadratic (see :func:`at_most_quadratic`) is matched by ``re`` on outputs up to
    :data:`UNTIMED_TEXT` characters; every other match is made by the ``regex`` package (which reads ``re``
    syntax the same way) with a bound of :data:`REGEX_TIMEOUT` seconds of CPU, and one that runs out is that
    example's ``error`` (``regex_timeout``), never a 0.0.
    """

    unordered: ClassVar[tuple[str, ...]] = ("flags",)
    deterministic: ClassVar[bool] = True

    reads: ClassVar[OutputShape] = OutputShape.TEXT

    summary: ClassVar[str] = "1.0 when the regular expression matches the output string, else 0.0."
    binary: ClassVar[bool] = True

    type: Literal["regex"] = "regex"
    pattern: str = Field(description="A Python regular expression.")
    match: Literal["search", "fullmatch"] = Field(
        default="search", description="'search': anywhere in the text; 'fullmatch': the whole text."
    )
    flags: tuple[RegexFlag, ...] = ()

    @model_validator(mode="after")
    def _compiles(self) -> RegexSpec:
        try:
            self.compiled()
        except re.error as exc:
            where = f" at position {exc.pos}" if exc.pos is not None else ""
            raise ValueError(f"invalid regular expression {self.pattern!r}: {exc.msg}{where}") from None
        if self.caseless():
            position = first_decomposed(self.pattern)
            if position is not None:
                raise ValueError(
                    f"the ignorecase pattern {self.pattern!r} is not in composed form (NFC) at position {position} "
                    "(a combining mark its letter composes with, or a character NFC replaces); write the letter "
                    "precomposed ('é'), or the mark as an escape ('\\u0301') if you mean the mark on its own"
                )
            import regex  # a caseless match is the regex package's (full case folding): it must compile there too

            try:
                regex.compile(self.pattern, self._bits() | regex.FULLCASE)
            except regex.error as exc:
                raise ValueError(f"invalid regular expression {self.pattern!r}: {exc}") from None
        return self

    def _bits(self) -> int:
        bits = 0
        for flag in self.flags:
            bits |= _FLAG_BITS[flag]
        return bits

    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.pattern, self._bits())

    def caseless(self) -> bool:
        """Whether the whole pattern ignores case: ``flags: [ignorecase]``, or ``(?i)`` at its start, which ``re``
        reads as the same flag. Limit: a scoped group (``(?i:...)``) is matched by ``re``'s simple folding on the
        text as written."""
        return "ignorecase" in self.flags or bool(self.compiled().flags & re.IGNORECASE)

    def matcher(self) -> Matcher:
        """1.0 or 0.0 for a string, or the ``regex_timeout`` error when matching it ran out of time."""
        return self.matchers()[0]

    def matchers(self) -> tuple[Matcher, Callable[[list[str]], list[MetricResult]]]:
        """:meth:`matcher`, and the same for a list of strings: where every one is short enough to be matched
        without a bound, matched in one ``map`` with no Python call per string (≈ 0.02 s a million short texts;
        the search itself is most of the cost); else string by string."""
        fast = self.compiled()
        fast_match = fast.search if self.match == "search" else fast.fullmatch
        untimed = UNTIMED_TEXT if at_most_quadratic(self.pattern) else -1
        caseless = self.caseless()
        # ``re``'s simple case folding gives what full folding does only on ASCII text against a pattern that
        # names no character past ASCII; every other caseless match is the ``regex`` package's.
        ascii_untimed = untimed if not caseless or ascii_closed(self.pattern) else -1
        bounded: list[Callable[..., Any]] = []

        def bounded_match(text: str) -> Any:
            if not bounded:  # compiled on first need: most runs never load the regex package
                import regex

                pattern = regex.compile(self.pattern, self._bits() | (regex.FULLCASE if caseless else 0))
                bounded.append(pattern.search if self.match == "search" else pattern.fullmatch)
            return bounded[0](text, timeout=REGEX_TIMEOUT)

        def matched(text: str) -> MetricResult:
            if caseless and not text.isascii():
                text = unicodedata.normalize("NFC", text)
            elif len(text) <= (ascii_untimed if caseless else untimed):
                return 1.0 if fast_match(text) is not None else 0.0
            try:
                return 1.0 if bounded_match(text) is not None else 0.0
            except TimeoutError:
                return Score.error(
                    "regex_timeout",
                    f"matching the pattern took more than {REGEX_TIMEOUT:g} s of CPU on this output "
                    f"({len(text)} characters); the pattern backtracks catastrophically on it",
                    "simplify the pattern (nested repetition like (a+)+ or alternatives that overlap)",
                )

        def matched_all(texts: list[str]) -> list[MetricResult]:
            if texts and max(map(len, texts)) <= untimed and (not caseless or _ascii_batch(texts, ascii_untimed)):
                return [0.0 if found is None else 1.0 for found in map(fast_match, texts)]
            return list(map(matched, texts))

        return matched, matched_all

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        wrong = wrong_answer(self, context)
        matched = self.matcher()

        def regex_metric(example: Example) -> MetricResult:
            text = target(example)
            if text is ABSENT:
                return invalid(example)
            if not isinstance(text, str):
                return wrong(wrong_type("regex", _NEEDS_STRING, text))
            return matched(text)

        return regex_metric

    def build_batch(self, one: MetricFn) -> BatchMetricFn | None:
        """A string output is matched in the loop; every other case is ``one``'s."""
        matched, matched_all = self.matchers()

        def regex_batch(batch: ExampleBatch) -> list[MetricResult]:
            texts = batch.output_values(self.field)
            if all_of_type(texts, str):
                return matched_all(texts)
            return [
                matched(text) if type(text) is str else one(batch.example(index)) for index, text in enumerate(texts)
            ]

        return regex_batch


def _ascii_batch(texts: list[str], ascii_untimed: int) -> bool:
    return ascii_untimed >= 0 and all(text.isascii() for text in texts)


def first_decomposed(pattern: str) -> int | None:
    """The position of the first character of ``pattern`` that composition (NFC) would change, or None when the
    pattern's text is composed. Escapes (``\\u0301``) are text the pattern spells, not characters it holds."""
    if pattern.isascii() or unicodedata.is_normalized("NFC", pattern):
        return None
    for end in range(1, len(pattern) + 1):
        if not unicodedata.is_normalized("NFC", pattern[:end]):
            return end - 1
    return len(pattern) - 1  # not reached: a text whose every prefix is composed and that is not has none


def ascii_closed(pattern: str) -> bool:
    """Whether the pattern names no character past ASCII (literally, by escape or in a class range): on ASCII text
    such a pattern matches under ``re``'s simple case folding exactly where it does under full folding."""
    try:
        parsed = _parser.parse(pattern)
    except Exception:
        return False
    stack: list[Any] = [parsed]
    while stack:
        items = stack.pop()
        for op, argument in items:
            if op in (_constants.LITERAL, _constants.NOT_LITERAL):
                if argument >= 128:
                    return False
            elif op is _constants.RANGE:
                if argument[1] >= 128:
                    return False
            elif op is _constants.IN:
                stack.append(argument)
            elif op in _VARIABLE_REPEATS:
                stack.append(argument[2])
            elif op is _constants.SUBPATTERN:
                stack.append(argument[-1])
            elif op is _constants.BRANCH:
                stack.extend(argument[1])
            elif op in (_constants.ASSERT, _constants.ASSERT_NOT):
                stack.append(argument[1])
            elif op is _constants.ATOMIC_GROUP:
                stack.append(argument)
            elif op is _constants.GROUPREF_EXISTS:
                stack.extend(branch for branch in argument[1:] if branch is not None)
    return True


_VARIABLE_REPEATS = {_constants.MAX_REPEAT, _constants.MIN_REPEAT, _constants.POSSESSIVE_REPEAT}


def at_most_quadratic(pattern: str) -> bool:
    """Whether backtracking over ``pattern`` takes at most about n² steps on a text of n characters: it has at most
    one repetition of variable length, no repetition or alternation inside it, and no backreference. Anything else
    (or a pattern only the ``regex`` package parses) can take exponential or high-polynomial time: it is matched
    with a bound."""
    try:
        parsed = _parser.parse(pattern)
    except Exception:
        return False
    variable = 0
    stack: list[tuple[Any, bool]] = [(parsed, False)]
    while stack:
        items, inside_repeat = stack.pop()
        for op, argument in items:
            if op in (_constants.GROUPREF, _constants.GROUPREF_EXISTS):
                return False
            if op in _VARIABLE_REPEATS:
                low, high, body = argument
                if low != high:
                    if inside_repeat:
                        return False
                    variable += 1
                    if variable > 1:
                        return False
                stack.append((body, inside_repeat or low != high))
            elif op is _constants.SUBPATTERN:
                stack.append((argument[-1], inside_repeat))
            elif op is _constants.BRANCH:
                if inside_repeat:  # (a|aa)+: overlapping alternatives under repetition are exponential
                    return False
                stack.extend((branch, inside_repeat) for branch in argument[1])
            elif op in (_constants.ASSERT, _constants.ASSERT_NOT):
                stack.append((argument[1], inside_repeat))
            elif op is _constants.ATOMIC_GROUP:
                stack.append((argument, inside_repeat))
    return True


class WordCountSpec(NoReferenceSpec):
    """Length control in words, where a word is a maximal run of non-whitespace characters.

    Limit: scripts written without spaces (Chinese, Japanese, Thai) count a whole sentence as one word.
    """

    deterministic: ClassVar[bool] = True

    reads: ClassVar[OutputShape] = OutputShape.TEXT

    summary: ClassVar[str] = "1.0 when the output's word count lies within [min, max] (inclusive), else 0.0."
    binary: ClassVar[bool] = True

    type: Literal["word_count"] = "word_count"
    min: CountBound | None = None
    max: CountBound | None = None

    @model_validator(mode="after")
    def _bounds(self) -> WordCountSpec:
        if self.min is None and self.max is None:
            raise ValueError("word_count needs 'min', 'max' or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"word_count 'min' ({self.min}) is greater than 'max' ({self.max})")
        return self

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        wrong = wrong_answer(self, context)
        low = 0 if self.min is None else self.min
        high = self.max

        def word_count(example: Example) -> MetricResult:
            text = target(example)
            if text is ABSENT:
                return invalid(example)
            if not isinstance(text, str):
                return wrong(wrong_type("word_count", _NEEDS_STRING, text))
            count = len(text.split())
            return 1.0 if count >= low and (high is None or count <= high) else 0.0

        return word_count

    def build_batch(self, one: MetricFn) -> BatchMetricFn | None:
        """A string output is counted in the loop; every other case is ``one``'s."""
        low = 0 if self.min is None else self.min
        high = self.max

        def word_count_batch(batch: ExampleBatch) -> list[MetricResult]:
            texts = batch.output_values(self.field)
            return [
                (1.0 if (count := len(text.split())) >= low and (high is None or count <= high) else 0.0)
                if type(text) is str
                else one(batch.example(index))
                for index, text in enumerate(texts)
            ]

        return word_count_batch
