"""Errors a user can cause. Each renders as one line: what went wrong, where, and how to fix it."""

from __future__ import annotations


class SetupError(Exception):
    """The run cannot complete (exit 2) and produces no quality verdict."""

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.what = what
        self.where = where
        self.fix = fix
        super().__init__(self.line())

    def line(self) -> str:
        parts = [f"{self.where}: {self.what}" if self.where else self.what]
        if self.fix:
            parts.append(self.fix)
        return " — ".join(parts)
