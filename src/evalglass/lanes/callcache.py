"""The call cache as lanes and judges use it: the port they need (any store with ``get`` and ``put``), the key of
one call, and the one get → call → put sequence every cached call goes through.

The store itself (SQLite, WAL, modes) is :class:`evalglass.engine.produce.cache.CallCache`; lanes depend only on
:class:`CallStore`, so another store plugs in without touching them.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from evalglass.core.fingerprint import address_json, content_address

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Hit:
    """A stored result and whether it replays a call this same run made before it was interrupted (see
    :mod:`evalglass.engine.produce.cache`, "Provenance")."""

    value: Any
    replayed: bool


class CallStore(Protocol):
    """Completed calls by content address. ``fetch``: the stored JSON with its provenance, or None; ``put``: store a
    JSON value (``request``: the request as keyed, a JSON value or a :class:`GrownRequest`, stored as
    :func:`stored_request_bytes` writes it)."""

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


#: The one list a :class:`KeyFrame` grows: an agent's conversation (``StepRequest.key_body``'s ``messages``).
_GROWN = "messages"


class KeyFrame:
    """What :func:`cache_key` hashes around a request's ``messages``, serialised once, so that the keys of a
    conversation's steps are made a new message at a time (:class:`GrowingKey`) instead of sorting, writing and
    hashing the whole conversation again at every step (quadratic in a trajectory's length).

    The keys are :func:`cache_key`'s, byte for byte, so entries stored before stay valid and nothing is versioned:
    ``address_json({"f": fingerprint, "r": {**rest, "messages": [m1, ..., mn]}, "s": sample})`` is the frame's head,
    each message's own ``address_json`` joined by commas, and its tail, because orjson writes a list as its items'
    bytes joined by commas and an item's bytes do not depend on where it sits (with sorted keys each object's keys
    are sorted among themselves). The one thing that does depend on it, orjson's nesting limit, is kept: each message
    is written at the depth it has in the whole (:func:`_item_json`). The frame checks its own split against orjson
    once (:class:`ValueError` if it ever disagreed); the property tests hold the keys to :func:`cache_key`."""

    __slots__ = ("_head", "rest_head", "rest_tail")

    def __init__(self, fingerprint: str, rest: Mapping[str, Any]) -> None:
        """``rest``: the request as keyed without its ``messages`` (model, tools, sampling parameters)."""
        if _GROWN in rest:
            raise ValueError(f"the request already holds {_GROWN!r}")
        before = address_json({key: value for key, value in rest.items() if key < _GROWN})[1:-1]
        after = address_json({key: value for key, value in rest.items() if key > _GROWN})[1:-1]
        self.rest_head = b"{" + before + (b"," if before else b"") + b'"' + _GROWN.encode() + b'":['
        self.rest_tail = b"]" + (b"," + after if after else b"") + b"}"
        head = b'{"f":' + address_json(fingerprint) + b',"r":' + self.rest_head
        self._head = hashlib.sha256(head)
        empty = {**rest, _GROWN: []}
        if self.rest_head + self.rest_tail != address_json(empty) or head + self._tail(0) != address_json(
            {"f": fingerprint, "r": empty, "s": 0}
        ):
            raise ValueError("the key frame does not split orjson's bytes where it expects")  # never seen; a guard

    def _tail(self, sample: int) -> bytes:
        return self.rest_tail + b',"s":' + address_json(sample) + b"}"

    def start(self, sample: int) -> GrowingKey:
        """The keys of one conversation of ``sample``, empty so far."""
        return GrowingKey(self, self._head.copy(), self._tail(sample))


def _item_json(item: Any) -> bytes:
    """``address_json(item)`` written three levels deep, where a message sits in a key's payload (an object, the
    request, the list): orjson refuses nesting beyond its limit, counted from the top, so a message nested close to
    it is refused here exactly when the whole payload would be."""
    return address_json([[[item]]])[3:-3]


class GrowingKey:
    """The cache keys of one growing conversation (:class:`KeyFrame`): :meth:`add` each message once, in order;
    :meth:`current` is the key of the conversation so far (with the request it stands for)."""

    __slots__ = ("_frame", "_hash", "_items", "_last", "_tail")

    def __init__(self, frame: KeyFrame, hashed: Any, tail: bytes) -> None:
        self._frame = frame
        self._hash = hashed
        self._tail = tail
        self._items: list[bytes] = []
        #: The key :meth:`current` made last and how many messages it covered: the step the next one extends.
        self._last: tuple[str, int] | None = None

    def add(self, message: Any) -> None:
        """Append one message (raises TypeError, as :func:`cache_key` would, for what is not JSON)."""
        data = _item_json(message)
        self._hash.update(b"," + data if self._items else data)
        self._items.append(data)

    def current(self) -> GrownRequest:
        hashed = self._hash.copy()
        hashed.update(self._tail)
        frame, count, last = self._frame, len(self._items), self._last
        key = hashed.hexdigest()
        # The conversation this key stands for extends the last one's (messages are only ever added to it), so its
        # stored request may name that one and hold only what was added (:meth:`GrownRequest.stored`).
        previous, since = (last[0], last[1]) if last is not None and last[1] < count else (None, 0)
        self._last = (key, count)
        return GrownRequest(key, frame.rest_head, self._items, count, frame.rest_tail, previous, since)


@dataclass(frozen=True, slots=True, eq=False)
class GrownRequest:
    """One step's key and the request it keys, written on demand from the messages' bytes the key was made of: the
    call cache may store the request beside the entry (for inspection), and writing the whole conversation again
    for that would be quadratic too (:meth:`stored`)."""

    key: str
    head: bytes
    #: The conversation's messages as written (a list that may grow after this step: ``count`` are this step's).
    items: list[bytes]
    count: int
    tail: bytes
    #: The key of the step before in the same conversation (its first ``since`` messages), None for the first.
    previous: str | None = None
    since: int = 0

    def json(self) -> bytes:
        """``address_json`` of the request (``StepRequest.key_body``), byte for byte."""
        return self.head + b",".join(self.items[: self.count]) + self.tail

    def stored(self) -> bytes:
        """What the call cache stores of this request: the whole request (:meth:`json`) for a conversation's first
        step; for a later one, the step before's key and the messages added since (:data:`EXTENDS`), so a
        trajectory of n steps stores its conversation once, not n growing copies.
        ``engine.produce.cache.stored_request`` rebuilds the whole request from such a chain."""
        if self.previous is None:
            return self.json()
        added = b",".join(self.items[self.since : self.count])
        return b'{"added":[%b],"%b":"%b","from":%d}' % (added, EXTENDS.encode(), self.previous.encode(), self.since)


#: The name a stored request's link to the step before holds (:meth:`GrownRequest.stored`); no request as keyed
#: has a top-level key of that name with a 64-hex value beside ``added`` and ``from`` alone.
EXTENDS = "extends"


def request_json(request: Any) -> bytes:
    """``address_json`` of a request as keyed: a JSON value's, or a :class:`GrownRequest`'s own (the whole)."""
    return request.json() if isinstance(request, GrownRequest) else address_json(request)


def stored_request_bytes(request: Any) -> bytes:
    """The bytes the call cache stores of a request: :meth:`GrownRequest.stored`, else :func:`request_json`."""
    return request.stored() if isinstance(request, GrownRequest) else address_json(request)


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


__all__ = [
    "EXTENDS",
    "CallStore",
    "GrowingKey",
    "GrownRequest",
    "Hit",
    "KeyFrame",
    "cache_key",
    "request_json",
    "stored_request_bytes",
    "through_cache",
]
