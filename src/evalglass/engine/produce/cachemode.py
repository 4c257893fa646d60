"""How a run uses the call cache (``--no-cache`` / ``--refresh``): kept apart from ``engine.produce.cache`` (which
re-exports it) so that a recorded run, which checks the mode it was given but opens no cache, does not import the
cache, its writer and the call keys."""

from __future__ import annotations

from enum import StrEnum


class CacheMode(StrEnum):
    USE = "use"
    OFF = "off"
    REFRESH = "refresh"
