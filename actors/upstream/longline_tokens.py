"""The stateless pieces of the long-line reducer's JSON tokenizer.

What lives here, for :class:`actors.upstream.longline.LineReducer`: the
token patterns and the bounded patterns that pass runs of dropped array
elements and object members without tokenizer steps; the JSON number
grammar as a small automaton (:class:`Number`, :func:`number_step`); the
parser states of a container :class:`Frame`; a long string's ends and its
streamed normalized hash (:class:`LongString`, :class:`NormalizedHash`);
and the escape-safe cuts of string bytes (:func:`closing_quote`,
:func:`safe_cut`). Pure; each object belongs to one reducer (one thread).
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import re
from dataclasses import dataclass, field

__all__ = [
    "AFTER",
    "BLANK_TAIL",
    "COLON",
    "CONTROL",
    "DIGITS",
    "DROPPED_INTS",
    "FIRST",
    "KEY",
    "NUMBER_KEEP",
    "N_ACCEPTING",
    "N_DIGIT_RUNS",
    "N_DOT",
    "N_E",
    "N_ESIGN",
    "N_EXP",
    "N_FRAC",
    "N_INT",
    "N_MINUS",
    "N_START",
    "N_ZERO",
    "TOKEN",
    "VALUE",
    "Frame",
    "LongString",
    "NormalizedHash",
    "Number",
    "closing_quote",
    "dropped_patterns",
    "escape_starts",
    "number_step",
    "safe_cut",
]

TOKEN = re.compile(rb"[ \t\r\n]*(?:([\[\]{},:])|(\")|(true|false|null)|([-0-9]))")
DIGITS = re.compile(rb"[0-9]*")
# Runs of dropped array elements (and object members) that need no tokenizer steps:
# `, element` units, each followed by its delimiter in the same piece, so no element is
# cut by the piece's end. Strings: printable ASCII, JSON escapes, or well-formed UTF-8
# (the exact RFC 3629 byte ranges), so a skipped string is a valid one.
_WS = rb"[ \t\r\n]*"
_UTF8_CHAR = (rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]"
              rb"|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]"
              rb"|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
              rb"|\xf4[\x80-\x8f][\x80-\xbf]{2}")
_SIMPLE_STRING = (rb'"(?:[\x20\x21\x23-\x5b\x5d-\x7e]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}|'
                  + _UTF8_CHAR + rb')*+"')
_SCALAR = (rb"(?:-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][+-]?[0-9]++)?|true|false|null|"
           + _SIMPLE_STRING + rb")")


def _nested(inner: bytes) -> bytes:
    """A value that is ``inner`` or an array or object of ``inner`` values."""
    member = _SIMPLE_STRING + _WS + rb":" + _WS + inner
    return (rb"(?:" + inner
            + rb"|\[" + _WS + rb"(?:" + inner + rb"(?:" + _WS + rb"," + _WS + inner + rb")*+)?"
            + _WS + rb"\]"
            + rb"|\{" + _WS + rb"(?:" + member + rb"(?:" + _WS + rb"," + _WS + member
            + rb")*+)?" + _WS + rb"\})")


@functools.cache
def dropped_patterns() -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """``(elements, members)``: bounded runs (re keeps state per unit) of values nested up
    to three containers deep; the delimiter after a run's last unit proves that unit was
    not cut by the piece's end. Compiled on first use (about 0.2 s, once per process)."""
    value = _nested(_nested(_nested(_SCALAR)))
    elements = re.compile(rb"(?:" + _WS + rb"," + _WS + value + rb"){1,4096}(?=" + _WS
                          + rb"[,\]])")
    members = re.compile(rb"(?:" + _WS + rb"," + _WS + _SIMPLE_STRING + _WS + rb":" + _WS
                         + value + rb"){1,4096}(?=" + _WS + rb"[,}])")
    return elements, members
DROPPED_INTS = re.compile(  # the common case, about twice as fast
    rb"(?:,(?:-?(?:0|[1-9][0-9]*+)|true|false|null)){1,4096}(?=[,\]])")
BLANK_TAIL = re.compile(rb"[ \t\r\n]*")
CONTROL = re.compile("[\x00-\x1f]")
_WHITESPACE = re.compile(r"\s+")
_HIGH_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_BACKSLASH = 0x5C
NUMBER_KEEP = 64  # a longer number is copied as 0 and prunes the line
# JSON number grammar (RFC 8259 §6) as states of a small automaton.
N_START, N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP = range(9)
N_ACCEPTING = frozenset({N_ZERO, N_INT, N_FRAC, N_EXP})
N_DIGIT_RUNS = frozenset({N_INT, N_FRAC, N_EXP})

# Parser states of a container frame.
FIRST, KEY, COLON, VALUE, AFTER = range(5)


@dataclass(slots=True)
class Number:
    """A number being read: its automaton state, its first bytes and its length."""

    kept: bool
    state: int = N_START
    head: bytearray = field(default_factory=bytearray)
    length: int = 0

    def take(self, buf: bytes, start: int, stop: int) -> None:
        self.length += stop - start
        room = NUMBER_KEEP + 1 - len(self.head)
        if room > 0:
            self.head += buf[start:min(stop, start + room)]


def number_step(state: int, byte: int) -> int | None:
    """The number automaton's next state on ``byte``, or ``None`` where the number ends."""
    digit = 0x30 <= byte <= 0x39
    if state in (N_START, N_MINUS):
        if byte == 0x30:
            return N_ZERO
        if digit:
            return N_INT
        return N_MINUS if state == N_START and byte == 0x2D else None
    if state in (N_ZERO, N_INT, N_FRAC):
        if digit and state != N_ZERO:
            return state
        if byte == 0x2E and state != N_FRAC:
            return N_DOT
        return N_E if byte in (0x45, 0x65) else None
    if state == N_DOT:
        return N_FRAC if digit else None
    if state == N_E and byte in (0x2B, 0x2D):
        return N_ESIGN
    return N_EXP if digit else None  # N_E, N_ESIGN, N_EXP


@dataclass(slots=True)
class Frame:
    """An open array or object: whether it is kept, its parser state, its count so far."""

    is_array: bool
    kept: bool
    state: int = FIRST
    count: int = 0
    member_kept: bool = True  # objects: whether the current member (key and value) is kept


class NormalizedHash:
    """SHA-256 of ``normalize_text`` of a text fed in pieces (whitespace runs → one space).

    ``re``'s ``\\s`` and ``str.split`` both use Python's Unicode whitespace
    test, so the hash is exactly ``text_hash`` of the whole text; each piece
    is collapsed with one substitution (no list of words: memory stays near
    the piece's size).
    """

    __slots__ = ("_digest", "_space", "_started")

    def __init__(self) -> None:
        self._digest = hashlib.sha256()
        self._started = False
        self._space = False

    def update(self, piece: str) -> None:
        collapsed = _WHITESPACE.sub(" ", piece)
        core = collapsed.strip(" ")
        if not core:
            self._space = self._space or bool(collapsed)
            return
        if self._started and (self._space or collapsed[0] == " "):
            self._digest.update(b" ")
        self._digest.update(core.encode("utf-8", "surrogatepass"))
        self._started = True
        self._space = collapsed[-1] == " "

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


@dataclass(slots=True)
class LongString:
    """A string past ``SHORT_STRING_BYTES``: its ends, its length and its normalized hash."""

    kept: bool
    decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")("strict"))
    head: str = ""
    tail: str = ""
    chars: int = 0
    digest: NormalizedHash = field(default_factory=NormalizedHash)


def closing_quote(buf: bytes, pos: int) -> int:
    """Index of the first unescaped ``"`` at or after ``pos``, or -1.

    String bytes before ``pos`` were taken up to an escape-safe point, so a
    backslash run that matters starts at ``pos`` at the earliest.
    """
    search = pos
    while (quote := buf.find(b'"', search)) >= 0:
        if escape_starts(buf, quote, pos):
            return quote
        search = quote + 1
    return -1


def escape_starts(buf: bytes, index: int, floor: int) -> bool:
    """Whether ``buf[index]`` is not escaped: an even backslash run (counted down to
    ``floor``) stands before it."""
    run = 0
    back = index - 1
    while back >= floor and buf[back] == _BACKSLASH:
        run += 1
        back -= 1
    return run % 2 == 0


def safe_cut(buf: bytes, pos: int) -> int:
    """Where to cut string bytes so no escape, or surrogate pair of escapes, is split.

    The bytes from the cut on are carried into the next piece, so the escape
    state of a ``"`` found there is decided with its backslashes in view.
    """
    end = len(buf)
    last = buf.rfind(b"\\", max(pos, end - 12), end)
    if last < 0 or not escape_starts(buf, last, pos):
        return end
    cut = last
    if (cut - 6 >= pos and _HIGH_SURROGATE_ESCAPE.fullmatch(buf, cut - 6, cut)
            and escape_starts(buf, cut - 6, pos)):
        cut -= 6
    return cut
