"""The measurement state of one metric on one example.

A Score either carries a number that was really measured (``scored``) or carries no number at all and says why.
The rules live in :func:`score_violation` so that the compact column store (``core.columns``) enforces exactly
the same contract as the model without building one object per score.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import math
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Status(StrEnum):
    """Does a number exist?"""

    SCORED = "scored"
    BLOCKED = "blocked"
    NON_EVALUABLE = "non_evaluable"
    SKIPPED = "skipped"
    ERROR = "error"


class Validity(StrEnum):
    """Can the number be trusted? Independent of status, but constrained by it."""

    VALID = "valid"
    INVALID = "invalid"
    NOT_MEASURED = "not_measured"
    NOT_APPLICABLE = "not_applicable"


#: The states of a scored+valid score, read once: a member read from its enum class is a Python-level lookup (about
#: 0.14 µs here), which the per-score paths below (every note of a replay) would otherwise pay twice a score.
_SCORED, _VALID = Status.SCORED, Validity.VALID
SCORED_VALIDITIES = frozenset({Validity.VALID, Validity.INVALID})
UNSCORED_VALIDITIES = frozenset({Validity.NOT_MEASURED, Validity.NOT_APPLICABLE})


class ScoreContractError(ValueError):
    """A score was about to exist in a state the contract forbids."""


class Diagnostic(BaseModel):
    """Why a score is short of scored+valid. ``code`` is a stable snake_case identifier reports group by."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    code: str = Field(min_length=1, max_length=80, pattern=r"^[a-z][a-z0-9_]*$")
    message: str = Field(min_length=1)
    detail: str | None = None


def value_violation(value: object) -> str | None:
    """Why ``value`` cannot be a measured number, or None when it can.

    ``bool`` is refused although it subclasses ``int``: True is an answer to a question, not a measurement, and
    letting it through would make ``True`` silently average as 1.0.
    """
    if isinstance(value, bool):
        return "a bool is not a measured number; return 1.0/0.0 explicitly"
    if not isinstance(value, int | float):
        return f"value must be a real number, got {type(value).__name__}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"value must be finite, got {value!r}"
    return None


def score_violation(status: Status, validity: Validity, value: object, has_diagnostics: bool) -> str | None:
    """The first rule the combination breaks, or None when it is a legal score."""
    if status is _SCORED:
        if value is None:
            return "a scored score needs a value"
        why = value_violation(value)
        if why is not None:
            return why
        if validity not in SCORED_VALIDITIES:
            return f"a scored score must be valid or invalid, not {validity.value}"
    else:
        if value is not None:
            return f"a {status.value} score carries no value (missing is never 0.0), got {value!r}"
        if validity not in UNSCORED_VALIDITIES:
            return f"a {status.value} score must be not_measured or not_applicable, not {validity.value}"
    if not has_diagnostics and not (status is _SCORED and validity is _VALID):
        return f"a {status.value}/{validity.value} score must say why: at least one diagnostic is required"
    return None


class Score(BaseModel):
    """One metric's measurement of one example (or one sample of it)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    status: Status
    validity: Validity
    value: float | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    evidence: tuple[str, ...] = ()

    @field_validator("value", mode="before")
    @classmethod
    def _refuse_non_numbers(cls, value: Any) -> Any:
        if value is None:
            return None
        why = value_violation(value)
        if why is not None:
            raise ValueError(why)
        return float(value)

    @model_validator(mode="after")
    def _enforce_contract(self) -> "Score":
        why = score_violation(self.status, self.validity, self.value, bool(self.diagnostics))
        if why is not None:
            raise ValueError(why)
        return self

    # Constructors for the common states; each still passes through the validators above.
    @classmethod
    def measured(cls, value: float, *, evidence: tuple[str, ...] = ()) -> "Score":
        return cls(status=Status.SCORED, validity=Validity.VALID, value=value, evidence=evidence)

    @classmethod
    def noted(cls, value: float, code: str, message: str, detail: str | None = None) -> "Score":
        """A valid measurement with one diagnostic saying why it came out as it did: the Score of
        ``Score(status=SCORED, validity=VALID, value=value, diagnostics=(Diagnostic(...),))``, built without
        pydantic's validation when the arguments are already what it would accept unchanged (a finite float, text
        for the message and detail, a code that passed validation once in this process), as ``model_construct``
        builds a model (the same four attributes, without its loop over the fields): 18 k instructions against 39 k,
        for the thousands of notes a replay writes. Anything else is validated, and refused as it would be. The run's
        score columns check every score's contract again when they take it (``core.columns``)."""
        if (
            type(value) is float
            and math.isfinite(value)
            and code in _VALIDATED_CODES
            and type(message) is str
            and message
            and (detail is None or type(detail) is str)
        ):
            diagnostic = _new(Diagnostic)
            _set(diagnostic, "__dict__", {"code": code, "message": message, "detail": detail})
            _set(diagnostic, "__pydantic_fields_set__", {"code", "message", "detail"})
            _set(diagnostic, "__pydantic_extra__", None)
            _set(diagnostic, "__pydantic_private__", None)
            score = _new(cls)
            _set(
                score,
                "__dict__",
                {
                    "status": _SCORED,
                    "validity": _VALID,
                    "value": value,
                    "diagnostics": (diagnostic,),
                    "evidence": (),
                },
            )
            _set(score, "__pydantic_fields_set__", {"status", "validity", "value", "diagnostics"})
            _set(score, "__pydantic_extra__", None)
            _set(score, "__pydantic_private__", None)
            return score
        validated = cls(
            status=Status.SCORED,
            validity=Validity.VALID,
            value=value,
            diagnostics=(Diagnostic(code=code, message=message, detail=detail),),
        )
        _VALIDATED_CODES.add(code)
        return validated

    @classmethod
    def untrusted(cls, value: float, code: str, message: str, detail: str | None = None) -> "Score":
        """A value was produced but cannot be trusted (e.g. a judge answered off its scale)."""
        return cls(
            status=Status.SCORED,
            validity=Validity.INVALID,
            value=value,
            diagnostics=(Diagnostic(code=code, message=message, detail=detail),),
        )

    @classmethod
    def unmeasured(
        cls,
        status: Status,
        code: str,
        message: str,
        detail: str | None = None,
        *,
        validity: Validity = Validity.NOT_MEASURED,
        evidence: tuple[str, ...] = (),
    ) -> "Score":
        return cls(
            status=status,
            validity=validity,
            value=None,
            diagnostics=(Diagnostic(code=code, message=message, detail=detail),),
            evidence=evidence,
        )

    @classmethod
    def error(cls, code: str, message: str, detail: str | None = None) -> "Score":
        return cls.unmeasured(Status.ERROR, code, message, detail)

    @classmethod
    def non_evaluable(cls, code: str, message: str, detail: str | None = None) -> "Score":
        return cls.unmeasured(Status.NON_EVALUABLE, code, message, detail, validity=Validity.NOT_APPLICABLE)

    @property
    def included(self) -> bool:
        """Whether this score enters aggregation: only scored+valid does."""
        return self.status is _SCORED and self.validity is _VALID


#: The diagnostic codes that passed :class:`Diagnostic`'s validation in this process (:meth:`Score.noted` validates
#: a code the first time it meets it; codes are few, and only ever added).
_VALIDATED_CODES: set[str] = set()
_new = object.__new__
_set = object.__setattr__
