"""A Ctrl-C or SIGTERM that a library reports as its own error is still an interrupt (exit 130, resumable), not an
internal error that removes the run's folder: pydantic-core builds validators lazily and reports a
``KeyboardInterrupt`` raised in a Python callback as a ``SchemaError`` holding only its text (seen in CI: SIGTERM
while a model was built ended a run with ``internal error: SchemaError``, exit 2, its folder gone)."""

from __future__ import annotations

from pydantic_core import SchemaError

from evalglass.engine.produce.interrupts import interrupt_inside


def _raised_from(cause: BaseException, error: Exception) -> Exception:
    try:
        raise error from cause
    except Exception as exc:
        return exc


def test_a_schema_error_naming_a_keyboard_interrupt_is_an_interrupt() -> None:
    assert interrupt_inside(SchemaError('Error building "model" validator:\n  KeyboardInterrupt: '))


def test_an_error_caused_by_a_keyboard_interrupt_is_an_interrupt() -> None:
    assert interrupt_inside(_raised_from(KeyboardInterrupt(), RuntimeError("worker pool broke")))
    assert interrupt_inside(KeyboardInterrupt())


def test_other_errors_are_not() -> None:
    assert not interrupt_inside(SchemaError('Error building "literal" validator: expected a list'))
    assert not interrupt_inside(_raised_from(ValueError("bad"), RuntimeError("worse")))
    assert not interrupt_inside(RuntimeError("KeyboardInterrupt in a message of another kind of error"))
