"""The one JSON reader for data a user or another tool wrote (dataset lines, run artifacts being loaded).

orjson is fast, but silently gets three things wrong for this project's purposes:

- a key repeated in one object keeps the last value (``{"verdict": "fail", "verdict": "pass"}``);
- an integer beyond 64 bits becomes a float, so ``100000000000000000001`` equals ``100000000000000000000``;
- it accepts nesting up to 1,024 levels, while orjson writes at most 255 and Python code that walks a value
  recursively gives up far earlier, so a deep value parsed here fails (or is mismeasured) somewhere later.

A document with any of these is refused (:class:`JsonRefused`, whose message says which and where in the document)
instead of being read differently from what it says. Finding them costs little: orjson parses as before, and only
when a cheap scan of the raw bytes says a line *could* hold one of them is it parsed again by the standard library,
which sees every key and every digit. The scan is one ``translate`` of the batch keeping a few bytes a line
(:data:`_STRUCTURE`: brackets, quotes, colons, newlines, digits), and the tests read those:

- duplicates: every key in the text is followed by a ``:``, and so is every key in the parsed value written back by
  orjson, while colons inside strings are the same on both sides (orjson never escapes a colon); so orjson writes
  at most as many colons as the text holds, fewer when a key was dropped, and when the raw text has exactly as many
  ``:`` as the re-serialised value (and spells no colon as ``\\u003a``), no key was dropped. Any lower bound of
  what orjson writes proves it as well when the text holds no more: one colon per key of a flat batch, or one per
  top-level key plus those of the column of one key's values (written anyway for the run's kept outputs), so most
  batches are never written whole.
- integers beyond 64 bits: a run of 19 or more digits (inside a string or not) sends the line to the checking parse.
- depth: a line opening at most :data:`MAX_DEPTH` objects and arrays cannot nest deeper; a batch with a line that
  opens more has its depth measured exactly (:func:`_shallow_enough`), so only a batch holding a line nested
  deeper than :data:`MAX_DEPTH` is looked at line by line. When the duplicates test writes the batch back anyway
  (a nested batch: a conversation, a trace), the writing measures the depth instead: orjson refuses to write a
  value nested deeper than :data:`_ORJSON_LEVELS`, so the batch is written inside as many more arrays as leave
  room for :data:`MAX_DEPTH` levels a line and no more (:func:`_dumps_within`, the arrays cut off again). A value
  written so is no deeper than :data:`MAX_DEPTH`, and once the colons show that no key was dropped it is the
  line's whole tree, so the line is no deeper either; the text is then not scanned for depth at all.

The scans run over a whole batch of lines at once (:func:`batch_is_exact`); only a batch that fails them is looked
at line by line. The colons of a long batch written back are counted in numpy (:data:`_LARGE`).

Where the optional C extension is built (``_native/_scan.c``), :func:`proven_exact` asks it first: one tokenizing
pass over each line (strings and their escapes skipped) compares each key with the others of its object, counts the
open brackets and each integer's digits; no key repeated (none spelled with an escape), no line deeper than
:data:`MAX_DEPTH` and no integer of 19 digits prove the batch exact without the scans above or writing anything
back. It answers only "proven": anything else goes to them, which stay the reference (``EVALGLASS_PURE=1`` turns the
C path off) and decide and word every refusal. For a batch of long lines (recorded trajectories) the same pass also
finds each line's output value, and :func:`proven_exact_written` gives the bytes orjson would write for that column
copied from the text, where the copy is provably orjson's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from itertools import repeat
from operator import itemgetter
from typing import Any

import orjson

from evalglass._native import scan as _native_scan
from evalglass.core.fieldpath import ABSENT
from evalglass.core.outputparse import nesting_depth
from evalglass.core.uniform import all_of_type
from evalglass.errors import SetupError

#: Deepest nesting of objects and arrays a document may have (orjson itself writes at most 255).
MAX_DEPTH = 128
_INT64 = (-(1 << 63), (1 << 63) - 1)
#: Every ASCII digit becomes "0" and every other byte a space, so a run of 19 digits is one fast substring search
#: (a regular expression scanning for ``\d{19}`` costs ten times as much).
_DIGITS_ONLY = bytes(ord("0") if chr(byte) in "0123456789" else ord(" ") for byte in range(256))
_LONG_DIGITS = b"0" * 19


class JsonRefused(ValueError):
    """A JSON document that parses, but whose meaning a fast parser would change. ``code`` names the class."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


#: The UTF-8 byte order mark that some editors and shells write at the start of a text file (Notepad, Excel's "CSV
#: UTF-8", PowerShell's ``Out-File``). It is an encoding detail, not data: RFC 8259 (section 8.1) lets a JSON reader
#: ignore it, and every reader of a file a user or another tool wrote does (:func:`without_bom`), so a saved-again
#: dataset never turns its first example into a malformed line.
UTF8_BOM = b"\xef\xbb\xbf"


def without_bom(start: bytes) -> bytes:
    """``start`` (the first bytes of a file) without a leading UTF-8 byte order mark. A file is hashed as it is, mark
    and all; only what is parsed leaves the mark out."""
    return start[len(UTF8_BOM) :] if start.startswith(UTF8_BOM) else start


#: The byte order marks of the "Unicode" encodings editors offer beside UTF-8 (Notepad's "Unicode", PowerShell 5's
#: ``>`` and ``Out-File``), the UTF-32 ones first since UTF-32LE's mark begins with UTF-16LE's.
_WIDE_MARKS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)
#: A byte that opens JSON or CSV text: printable ASCII or white space.
_TEXT_OPENER = re.compile(rb"[\t\n\r\x20-\x7e]")
#: How many bytes of a file :func:`text_start` needs to tell a wide encoding (the longest mark).
TEXT_START = 4


def wide_encoding(start: bytes) -> str | None:
    """``"UTF-16"`` or ``"UTF-32"`` when ``start`` (a file's first :data:`TEXT_START` bytes, or all of a shorter
    file) opens text in one of them: by its byte order mark, or, without one, by the NUL bytes around its first
    character, which in JSON and CSV text is ASCII (RFC 4627, section 3): ``00 00 00 xx`` UTF-32BE, ``xx 00 00 00``
    UTF-32LE, ``00 xx`` UTF-16BE, ``xx 00`` UTF-16LE. JSON and CSV text never hold a raw NUL, so such a file is never
    UTF-8 data. None otherwise."""
    for mark, name in _WIDE_MARKS:
        if start.startswith(mark):
            return name
    if len(start) >= 4 and start[:3] == b"\x00\x00\x00" and _TEXT_OPENER.fullmatch(start[3:4]):
        # UTF-32BE: its first two bytes are both NUL, so the pair below cannot tell it. Its first character is
        # printable or white space: a protobuf length prefix (00 00 00 05) is a control byte.
        return "UTF-32"
    pair = start[:2]
    if len(pair) == 2 and max(pair) < 0x80 and (pair[0] == 0) != (pair[1] == 0):
        return "UTF-32" if start[2:4] == b"\x00\x00" else "UTF-16"
    return None


def text_start(start: bytes, *, what: str, where: str) -> bytes:
    """:func:`without_bom` for a text file a user or another tool wrote (``what`` names it, ``where`` is its path),
    refusing one in UTF-16 or UTF-32 (:func:`wide_encoding`) with a :class:`~evalglass.errors.SetupError`.

    Read as UTF-8, such a file is not one bad line but all of them: each would be a malformed example, and every
    active gate blocked on an encoding. The run cannot read it, so it stops (exit 2) saying which file and what to
    do."""
    encoding = wide_encoding(start)
    if encoding is not None:
        raise SetupError(
            f"{what} is {encoding} text, not UTF-8",
            where=where,
            fix="save it as UTF-8 (in an editor: Save As, encoding UTF-8; in PowerShell: Out-File -Encoding utf8)",
        )
    return without_bom(start)


def not_json(raw: bytes, exc: ValueError) -> str:
    """Why ``raw`` (one document, as read) is not JSON, for a one-line message: orjson's reason, except for text that
    is not UTF-8, where orjson names "surrogates" at column 1 whatever the byte: then the first bad byte and where
    it is in the line (in bytes), which is where the line needs mending."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        byte = f"0x{raw[bad.start]:02x} (byte {bad.start + 1} of the line)"
        return f"not valid JSON: not UTF-8 text at {byte}; save the file as UTF-8"
    if _cr_only_lines(raw):
        return "not valid JSON: lines end with CR only; save with LF or CRLF line ends"
    return f"not valid JSON ({exc})"


def _cr_only_lines(raw: bytes) -> bool:
    """Whether ``raw`` (a line that is not JSON) is several lines ended by CR alone (classic Mac OS): a file saved
    so is read as one line holding them all, whose first piece is a JSON document of its own. (JSON allows a CR only
    as whitespace between tokens, so a line that fails for another reason may hold one too: it is not said then.)"""
    pieces = [piece for piece in raw.rstrip(b"\r\n").split(b"\r") if piece.strip()]
    if len(pieces) < 2:
        return False
    try:
        orjson.loads(pieces[0])
    except orjson.JSONDecodeError:
        return False
    return True


#: An escape of a UTF-16 surrogate (``\ud800`` to ``\udfff``), which a line orjson refused may hold alone.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
#: A surrogate left in a string parsed by the standard library: json pairs a high and a low escape into one
#: character, so any left is one alone.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: What a lone surrogate is read as: U+FFFD REPLACEMENT CHARACTER, as a UTF-8 decoder reads a broken sequence.
REPLACEMENT = "\ufffd"


def loads_lone_surrogates(raw: bytes, *, constant: Callable[[str], Any] | None = None) -> tuple[Any, int] | None:
    """``raw`` (one document orjson refused) read with each lone surrogate escape as :data:`REPLACEMENT`, and how
    many were replaced; None when it holds none or is not JSON for another reason (orjson's error stands then).
    :class:`JsonRefused` as :func:`check_exact` refuses.

    RFC 8259's grammar allows ``"\ud83d"`` (section 8.2: such a string is valid JSON that no Unicode text spells),
    and JavaScript writes one when it cuts a string in the middle of an emoji, but orjson refuses the whole line.
    The standard library reads it (slower, which costs only lines orjson refused: the fast path is unchanged), and
    every surrogate it leaves, in values and keys alike, is replaced; the caller says where (nothing is changed
    silently). A paired escape (``"\ud83d\ude00"``) is read by orjson as ever and never comes here. ``constant``:
    what ``NaN``/``Infinity`` are read as (another tool's file written by Python's ``json``), else refused."""
    if _SURROGATE_ESCAPE.search(raw) is None:
        return None
    try:
        value = json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_unique_keys,
            parse_int=_int64,
            parse_constant=constant or _no_constant,
        )
    except JsonRefused:
        raise
    except RecursionError:
        raise _too_deep() from None
    except ValueError:  # not JSON (nor UTF-8) whatever the surrogates: orjson's message says why
        return None
    if nesting_depth(value, MAX_DEPTH) > MAX_DEPTH:
        raise _too_deep()
    replaced = [0]
    mended = _mended(value, replaced)
    return (mended, replaced[0]) if replaced[0] else None


def _no_constant(name: str) -> Any:
    """``NaN``, ``Infinity``: the standard library reads them, JSON (and orjson) do not."""
    raise ValueError(f"{name} is not JSON")


def _mended(value: Any, replaced: list[int]) -> Any:
    """``value`` with each lone surrogate in its strings and keys replaced (counted in ``replaced[0]``); at most
    :data:`MAX_DEPTH` deep, so recursion is safe."""
    if type(value) is str:
        mended, count = _LONE_SURROGATE.subn(REPLACEMENT, value)
        replaced[0] += count
        return mended
    if type(value) is list:
        return [_mended(item, replaced) for item in value]
    if type(value) is dict:
        fixed = {_mended(key, replaced): _mended(item, replaced) for key, item in value.items()}
        if len(fixed) != len(value):
            raise JsonRefused(
                "duplicate_key", "two keys of one object differ only in lone surrogates, so they read as one key"
            )
        return fixed
    return value


class MendedLines:
    """The lines of one file read with lone surrogates replaced (:func:`loads_lone_surrogates`): the first
    :data:`NOTES_SHOWN` said in full at their file:line, the rest counted, so a file of many costs a few lines of
    warnings."""

    def __init__(self, path: str) -> None:
        #: The file, as the notes name it.
        self.path = path
        self._notes: list[str] = []
        self._lines = 0

    def add(self, where: str, count: int) -> None:
        """``count`` lone surrogate escapes were read as U+FFFD at ``where`` (file:line)."""
        self._lines += 1
        if len(self._notes) < NOTES_SHOWN:
            escapes = "escape" if count == 1 else "escapes"
            self._notes.append(
                f"{where}: {count} lone surrogate {escapes} (half of an emoji or other character, as JavaScript "
                "writes a string cut in the middle of one) read as U+FFFD; write the whole character to keep it"
            )

    def add_at(self, at: int | str | None, count: int) -> None:
        """:meth:`add` at line (or member) ``at`` of the file, or the whole file when None."""
        self.add(self.path if at is None else f"{self.path}:{at}", count)

    @property
    def notes(self) -> tuple[str, ...]:
        more = self._lines - len(self._notes)
        rest = (f"{self.path}: {more} more lines with lone surrogate escapes read as U+FFFD",) if more else ()
        return (*self._notes, *rest)


def loads_mending(raw: bytes, mended: MendedLines, line: int | None = None, *, exact: bool = False) -> Any:
    """One JSON document a user or another tool wrote (line ``line`` of ``mended``'s file, or the whole file), as
    orjson reads it (``exact``: as :func:`loads` does), or with its lone surrogate escapes read as U+FFFD
    (:func:`loads_lone_surrogates`, noted in ``mended`` at file:line) when that is all orjson refused;
    ``orjson.JSONDecodeError`` otherwise, or :class:`JsonRefused`. The fast path is orjson's alone: only a document
    it refused is looked at again (and its place written)."""
    try:
        return loads(raw) if exact else orjson.loads(raw)
    except orjson.JSONDecodeError:
        read = loads_lone_surrogates(raw)
        if read is None:
            raise
        mended.add_at(line, read[1])
        return read[0]


#: Lines of one file :class:`MendedLines` says in full.
NOTES_SHOWN = 5


def loads(raw: bytes) -> Any:
    """Parse one JSON document exactly: orjson's value, or :class:`JsonRefused`; ``orjson.JSONDecodeError`` (a
    ``ValueError`` too) for text that is not JSON."""
    value = orjson.loads(raw)
    if not proven_exact([raw]) and not batch_is_exact([raw], [value]):
        check_exact(raw)
    return value


def proven_exact(lines: list[bytes]) -> bool:
    """True when the C scan (``_native/_scan.c``, when built and not turned off) proves that none of ``lines`` (each
    a document orjson parsed) holds a duplicate key, an integer beyond 64 bits or nesting deeper than
    :data:`MAX_DEPTH`; False when it does not (or is not there): then :func:`batch_is_exact` and :func:`check_exact`
    decide, as without it. It writes nothing back: a caller wanting the column :func:`batch_is_exact_keeping` keeps
    writes it itself."""
    return _native_scan is not None and _native_scan.exact(lines)


def proven_exact_written(lines: list[bytes], key: str | None) -> tuple[bool, bytes | None]:
    """:func:`proven_exact`, and when it is True, what orjson writes for the JSON array of the lines' values at
    ``key``, taken from the lines' own bytes by the same C pass, instead of writing the parsed values again (for a
    batch of long lines: :data:`_COPY_FROM`); None for it when it cannot tell: no ``key``, a line without it, a
    backslash, a float or ``-0`` in what is copied (orjson may spell them otherwise), or an orjson that writes text
    otherwise than :func:`_writes_text_as_read` checks once. The caller writes the values then, as without it.

    Why the bytes are orjson's (``_native/_scan.c`` says it in full): a value in a line proven exact, without a
    backslash, a float or ``-0``, is what orjson writes for it, less the white space outside strings."""
    if _native_scan is None:
        return False, None
    if key is None or not lines or len(lines[0]) < _COPY_FROM or not _writes_text_as_read():
        return _native_scan.exact(lines), None
    found = _native_scan.exact_kept(lines, key)
    if found is True or found is False:
        return found, None
    return True, found


#: Bytes of a batch's first line from which :func:`proven_exact_written` copies the column from the text: below it
#: (a question and its answer, ≈ 100 bytes) orjson writes a short column for less than the copy's fixed cost a line
#: (cases 1 and 2 took 0.5 to 0.8 % more instructions an example); a recorded trajectory (≈ 6 KB) saves ≈ 30 k.
_COPY_FROM = 512


#: A record holding every kind of token :func:`proven_exact_written` copies: strings of ASCII, DEL, U+2028, Latin,
#: CJK and emoji characters (in keys too), 18-digit integers of either sign, 0, booleans, null, empty containers.
_TEXT_SAMPLE = (
    '{"k": "plain \x7f \u2028 \u00e9\u65e5\U0001f600", "\u00e9\U0001f600": [0, -1, 123456789012345678, '
    '-123456789012345678, true, false, null, {}, []], "e": {"x": [""]}}'
)


@cache
def _writes_text_as_read() -> bool:
    """Whether this orjson writes :data:`_TEXT_SAMPLE`'s value back as its text without white space (the bytes
    :func:`proven_exact_written` copies): checked once, so another orjson only turns that path off."""
    text = _TEXT_SAMPLE.encode("utf-8")
    try:
        return orjson.dumps(orjson.loads(text)) == text.replace(b": ", b":").replace(b", ", b",")
    except orjson.JSONDecodeError:  # pragma: no cover - the sample is JSON
        return False


def batch_is_exact(lines: list[bytes], values: list[Any]) -> bool:
    """True when none of ``lines`` (parsed by orjson into ``values``) can hold a duplicate key, an integer beyond
    64 bits or nesting deeper than :data:`MAX_DEPTH`. False means only "look closer", line by line."""
    return _exact(lines, values, None)[0]


def batch_is_exact_keeping(
    lines: list[bytes], records: list[dict[str, Any]], key: str, at_key: list[Any] | None = None
) -> tuple[bool, bytes | None]:
    """:func:`batch_is_exact` for a batch of objects, and the column of their ``key`` as orjson writes it (the JSON
    array of each record's value at ``key``, compact), or None when the check wrote none.

    The check counts the colons orjson writes for the batch: those of the column of ``key`` and of the rest of each
    record (only the column's when the text holds no more than it and the keys: see the module docstring), and the
    column's bytes are what a caller writing those values again (the run's kept outputs: a recorded run's outputs
    are such a column) can use instead of a second dump. ``at_key``: each
    record's value at ``key``, ABSENT where it has none, when the caller has them (the reader's outputs column):
    then neither the key's presence nor the values are looked up again."""
    return _exact(lines, records, key, at_key=at_key)


def _exact(
    lines: list[bytes], values: list[Any], key: str | None, *, at_key: list[Any] | None = None
) -> tuple[bool, bytes | None]:
    joined = b"\n".join(lines)
    # One pass over the text keeps what every test below reads, a few bytes a line (see _STRUCTURE). (Counted in
    # numpy instead, the text took a sixth of the instructions but more CPU: three temporary arrays of its length.)
    structure = joined.translate(_STRUCTURE, _NOT_STRUCTURE)
    if _LONG_DIGITS in structure and _LONG_DIGITS in joined.translate(_DIGITS_ONLY):
        return False, None
    colons = structure.count(b":")
    # The depth is proven by the writing below when the batch is written whole (each value inside one of the two
    # halves, or the whole batch), else by the text (see the module docstring). A batch opening at most MAX_DEPTH
    # brackets in all is proven by that count alone: its writing is the plain one (wrapping each write in ~125
    # arrays costs more than the write of a short line: a batch of malformed lines, checked line by line, took
    # 1.5x the CPU).
    within = _opens_more_than_max(structure) and _writing_measures_depth()
    if not within and not _shallow_enough(joined, structure, len(lines)):
        return False, None
    if colons == 0:
        return not within or _shallow_enough(joined, structure, len(lines)), None
    # Each nested key would add a colon, so equal counts prove a batch of objects flat and free of repeats.
    objects = all_of_type(values, dict)
    keys = sum(map(len, values)) if objects else -1
    if colons == keys:
        return not within or _shallow_enough(joined, structure, len(lines)), None
    # A colon spelled as an escape is not counted in the text but is in what orjson writes: no proof then.
    unescaped = b"\\" not in joined or (b"\\u003a" not in joined and b"\\u003A" not in joined)
    column = None
    dump = _dumps_within if within else _dumps
    try:
        if key is not None and (ABSENT not in at_key if at_key is not None else _every_has(values, key)):
            # A record {"k": v, ...} writes one colon after each key, those in the keys' own text, and those in
            # its values: the column holds the values at ``key``, the rest the other keys and values.
            column = dump(at_key if at_key is not None else list(map(itemgetter(key), values)), MAX_DEPTH - 1)
            in_column = _colons(column)
            if objects and unescaped and colons == in_column + keys:
                # At least that many colons are written (one per key, and the column's), and never more than the
                # text holds (see the module docstring): equal, so the rest holds none and no key was dropped.
                # The rest is not written: the text says its depth.
                if within and not _shallow_enough(joined, structure, len(lines)):
                    return False, None
                return True, column
            if 2 * len(column) > len(joined):
                # The column is most of the batch (trajectories): the rest without it, made in Python per record,
                # costs less than writing the column's values a second time.
                rest = dump(
                    [{name: item for name, item in record.items() if name != key} for record in values], MAX_DEPTH
                )
                written = in_column + _colons(rest) + len(values) * (1 + key.count(":"))
            else:  # small values beside many fields: one dump of the whole batch in C is cheaper than the split
                written = _colons(dump(values, MAX_DEPTH))
        else:
            written = _colons(dump(values, MAX_DEPTH))
    except orjson.JSONEncodeError:
        return False, None
    # The list's own brackets and commas hold no colon.
    exact = written == colons and unescaped
    return (True, column) if exact else (False, None)


#: Bytes of a long batch's structure in which its brackets are counted first (see :func:`_opens_more_than_max`).
_PREFIX = 1 << 12


def _opens_more_than_max(structure: bytes) -> bool:
    """``structure.count(b"[") > MAX_DEPTH``. A long batch (a conversation, a trace: a hundred or more brackets a
    line) says so in its first few kilobytes, and ``bytes.count`` takes 8 instructions a byte (13 k a replayed
    trajectory for the rest); a prefix holding more proves it, else the whole is counted."""
    if len(structure) > _LARGE and structure.count(b"[", 0, _PREFIX) > MAX_DEPTH:
        return True
    return structure.count(b"[") > MAX_DEPTH


#: The deepest value orjson writes: one nested deeper is refused ("Recursion limit reached"), arrays and objects
#: alike (a tuple's level is not counted). :func:`_writing_measures_depth` checks it once.
_ORJSON_LEVELS = 254


def _dumps_within(items: list[Any], depth: int) -> bytes:
    """``orjson.dumps(items)``, or ``JSONEncodeError`` when an item nests deeper than ``depth`` levels: ``items`` is
    written inside as many arrays as leave room for exactly ``depth`` levels below its own, and those are cut off
    (orjson writes no space: ``[[`` … ``]]``)."""
    wraps = _ORJSON_LEVELS - 1 - depth
    for _ in range(wraps):
        items = [items]
    return orjson.dumps(items)[wraps:-wraps]


def _dumps(items: list[Any], _: int) -> bytes:
    return orjson.dumps(items)


def _nested(levels: int, nest: Callable[[Any], Any]) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = nest(value)
    return value


@cache
def _writing_measures_depth() -> bool:
    """Whether this orjson writes values :data:`_ORJSON_LEVELS` deep and refuses one level more, arrays and objects
    alike: what :func:`_dumps_within` relies on. Any other orjson only turns that proof off (the text is scanned)."""
    for nest in (lambda value: [value], lambda value: {"k": value}):
        try:
            orjson.dumps(_nested(_ORJSON_LEVELS, nest))
        except orjson.JSONEncodeError:
            return False
        try:
            orjson.dumps(_nested(_ORJSON_LEVELS + 1, nest))
        except orjson.JSONEncodeError:
            continue
        return False
    return True


def _every_has(values: list[Any], key: str) -> bool:
    return all_of_type(values, dict) and all(map(dict.__contains__, values, repeat(key)))


#: Bytes from which the colons of what orjson wrote are counted in numpy: ``bytes.count`` takes 8 instructions a
#: byte, numpy's comparison and count about one (and less CPU: measured), for a few microseconds a call (numpy is
#: imported then only).
_LARGE = 1 << 16


def _colons(data: bytes) -> int:
    """``data.count(b":")``."""
    if len(data) < _LARGE:
        return data.count(b":")
    import numpy as np

    return int(np.count_nonzero(np.frombuffer(data, np.uint8) == _COLON))


_COLON = ord(":")


def _shallow_enough(joined: bytes, structure: bytes, lines: int) -> bool:
    """Whether every line of ``joined`` (JSON documents joined by newlines, ``lines`` of them) nests at most
    :data:`MAX_DEPTH` levels; ``structure`` is its :data:`_STRUCTURE` bytes.

    Measured in C for the whole batch. First a bound: a line opening at most :data:`MAX_DEPTH` objects and arrays
    (brackets inside its strings counted too, which only loosens the bound) cannot nest deeper, and most batches end
    there. Otherwise (a conversation, a trace: many brackets, little depth) the depth is measured: the escapes are
    taken out (escaped backslashes, then escaped quotes, so every quote left opens or closes a string), then
    everything but brackets, quotes and newlines, then the strings (all at once when none holds a bracket, else by
    splitting at the quotes). What is left is each line's brackets, balanced; each pass takes out the innermost
    ``[]`` pairs, exactly one level, until every line opens no more than the levels still allowed."""
    if structure.count(b"[") <= MAX_DEPTH:  # the whole batch opens too few
        return True
    openers = structure.translate(None, _NOT_OPENERS)
    separate = openers.count(b"\n") == lines - 1  # else a document holds a newline itself: the batch is one sequence
    if separate and _DEEP_RUN not in openers:
        return True
    if b"\\" in joined:
        joined = joined.replace(b"\\\\", b"").replace(b'\\"', b"")
        marks = joined.translate(_STRUCTURE, _NOT_MARKS)
    else:  # no escape: the structure holds those marks already
        marks = structure.translate(None, _NOT_MARKS)
    if not separate:
        marks = marks.translate(None, b"\n")
    quotes = marks.count(b'"')
    if quotes:
        # Quotes are paired off in order, each string's two, and a string without a bracket leaves two side by side:
        # when every quote is in such a pair, no string holds a bracket.
        marks = marks.translate(None, b'"') if 2 * marks.count(b'""') == quotes else b"".join(marks.split(b'"')[::2])
    for spent in range(MAX_DEPTH + 1):
        if b"[" * (MAX_DEPTH + 1 - spent) not in marks.translate(None, b"]"):
            return True
        marks = marks.replace(b"[]", b"")
    return False


#: What the scan of a batch keeps: each bracket (``{}`` written ``[]``, which changes no depth), quote, colon and
#: newline, and each digit written "0" with what stands between the digits of a number (``,.-+``), so a run of 19
#: digits in the text is a run of 19 here (a run here may also join digits the text keeps apart: then the text
#: itself is looked at).
_STRUCTURE = bytes.maketrans(b"{}0123456789", b"[]0000000000")
_NOT_STRUCTURE = bytes(byte for byte in range(256) if byte not in b'[]{}":\n,.-+0123456789')
_NOT_OPENERS = bytes(byte for byte in range(256) if byte not in b"[\n")
_NOT_MARKS = bytes(byte for byte in range(256) if byte not in b'[]{}"\n')  # (translate deletes by the byte read)
_DEEP_RUN = b"[" * (MAX_DEPTH + 1)


def check_exact(raw: bytes) -> None:
    """Parse ``raw`` (already known to be JSON) with every key and digit in view; :class:`JsonRefused` when it
    holds a duplicate key, an integer beyond 64 bits or nesting deeper than :data:`MAX_DEPTH`."""
    try:
        value = json.loads(raw, object_pairs_hook=_unique_keys, parse_int=_int64)
    except RecursionError:
        raise _too_deep() from None
    if nesting_depth(value, MAX_DEPTH) > MAX_DEPTH:
        raise _too_deep()


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonRefused(
                    "duplicate_key", f"the key {key!r} appears twice in one object; a reader keeps only one"
                )
            seen.add(key)
    return value


def _int64(digits: str) -> int:
    value = int(digits)
    if not _INT64[0] <= value <= _INT64[1]:
        raise JsonRefused(
            "integer_too_large",
            f"the integer {digits} does not fit in 64 bits, so JSON readers disagree on its value; "
            "write it as a string",
        )
    return value


def _too_deep() -> JsonRefused:
    return JsonRefused("too_deep", f"nested deeper than {MAX_DEPTH} levels of objects and arrays")
