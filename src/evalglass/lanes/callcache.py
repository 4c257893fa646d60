"""The call cache as lanes and judges use it: the port they need (any store with ``get`` and ``put``), the key of
one call, and the one get → call → put sequence every cached call goes through.

The store itself (SQLite, WAL, modes) is :class:`evalglass.engine.produce.cache.CallCache`; lanes depend only on
:class:`CallStore`, so another store plugs in without touching them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from evalglass.core.fingerprint import content_address

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Hit:
    """A stored result and whether it replays a call this same run made before it was interrupted (see
    :mod:`evalglass.engine.produce.cache`, "Provenance")."""

    value: Any
    replayed: bool


class CallStore(Protocol):
    """Completed calls by content address. ``fetch``: the stored JSON with its provenance, or None; ``put``: store a
    JSON value."""

    def fetch(self, key: str) -> Hit | None: ...

    def put(self, key: str, value: Any, *, kind: str, request: Any = None) -> bool: ...


class RunCallStore(CallStore, Protocol):
    """The call store as a run owns it: what lanes and judges use, plus what the run says and does at its end.
    ``problems``: warning lines for what could not be stored (the run prints them; its results stand);
    ``close``: release the store. :class:`evalglass.engine.produce.cache.CallCache` is the one shipped today."""

    def problems(self) -> list[str]: ...

    def close(self) -> None: ...


def cache_key(fingerprint: str, request: Any, sample: int) -> str:
    """The content address of one call: sha256 over (definition fingerprint, rendered request, sample index)."""
    return content_address({"f": fingerprint, "r": request, "s": sample})


async def through_cache(
    cache: CallStore | None,
    key: str,
    *,
    kind: str,
    request: Any,
    replay: Callable[[Hit], T | None],
    call: Callable[[], Awaitable[T]],
    stored: Callable[[T], Any | None],
) -> T:
    """The outcome of one call: replayed from ``cache`` when it holds a usable entry, else made and (when it
    succeeded) stored.

    ``replay`` turns a stored entry into an outcome (None: the entry is not one, so the call is made); ``stored``
    says what to keep of a fresh outcome (None for a failure: failed calls are never stored, so the next run tries
    again). A value that is not JSON is simply not stored.
    """
    if cache is not None:
        hit = cache.fetch(key)
        if hit is not None:
            replayed = replay(hit)
            if replayed is not None:
                return replayed
    outcome = await call()
    if cache is not None:
        value = stored(outcome)
        if value is not None:
            with contextlib.suppress(TypeError):  # orjson's refusal of a value that is not JSON
                cache.put(key, value, kind=kind, request=request)
    return outcome


__all__ = ["CallStore", "Hit", "cache_key", "through_cache"]
