"""Bounded-memory classification of JSONL lines longer than the scan cap.

A person who pastes a large log into Claude Code, or a tool that returns a
large result, writes one JSONL line of many megabytes. Such a line is fed,
chunk by chunk and possibly over several scans, to a :class:`LineReducer`: a
resumable JSON tokenizer that writes a *reduced* copy of the line. The copy
has the same structure and every value the classifiers read (types, roles,
flags, the first and last :data:`KEEP_CHARS` characters of every string),
so the source's ordinary classifier decides it: one rule, not two.

What is reduced:

* a string longer than :data:`SHORT_STRING_BYTES` (as written) keeps its first
  and last :data:`KEEP_CHARS` characters around an elision marker; the
  SHA-256 of its whole normalized text is kept beside it, so a gateway's own
  long text is still recognised (self-echo);
* an array keeps its first :data:`KEEP_ITEMS` elements, an object its first
  :data:`KEEP_MEMBERS` members, a container nested deeper than
  :data:`KEEP_DEPTH` is emptied (``[]``/``{}``), and a number longer than 64
  characters is written as ``0``. Any of these makes the line *pruned*, and
  a pruned line is never counted as typed: something the rule could have
  read was dropped. Dropped runs of small elements are passed by bounded
  regular expressions rather than token by token;
* once the reduced copy holds :data:`REDUCED_MAX_BYTES`, later array elements
  and object members are dropped (the copy stays valid JSON): the line is
  *oversized* and not typed either.

Validity is preserved: a line that is not valid JSON (bad tokens, brackets,
escapes or control characters, nesting deeper than :data:`MAX_DEPTH`) gives a
reduced copy that is not valid JSON either, and invalid UTF-8 anywhere gives a
copy holding invalid UTF-8, so each classifier applies its own rule for
those. Memory is bounded by :data:`REDUCED_MAX_BYTES` plus one fed chunk,
whatever the line's length.

The tokenizer's stateless pieces (patterns, the number automaton, the
escape-safe cuts) are :mod:`actors.upstream.longline_tokens`.

Pure: no I/O, no logging. A reducer is not thread-safe; its owner (one
upstream monitor, or ``ssa classify``) feeds it from one thread at a time.
"""

from __future__ import annotations

import codecs
import json

from actors.upstream.common import normalize_text
from actors.upstream.longline_reduced import MARKER, ReducedLine
from actors.upstream.longline_tokens import (
    AFTER,
    BLANK_TAIL,
    COLON,
    CONTROL,
    DIGITS,
    DROPPED_INTS,
    FIRST,
    KEY,
    N_ACCEPTING,
    N_DIGIT_RUNS,
    NUMBER_KEEP,
    TOKEN,
    VALUE,
    Frame,
    LongString,
    Number,
    closing_quote,
    dropped_patterns,
    number_step,
    safe_cut,
)

__all__ = [
    "KEEP_CHARS",
    "KEEP_DEPTH",
    "KEEP_ITEMS",
    "KEEP_MEMBERS",
    "MAX_DEPTH",
    "REDUCED_MAX_BYTES",
    "SHORT_STRING_BYTES",
    "LineReducer",
]

SHORT_STRING_BYTES = 16_384
"""Strings up to this many bytes (as written, escapes included) are copied verbatim."""
KEEP_CHARS = 8_192
"""Characters kept at each end of a longer string."""
KEEP_ITEMS = 512
"""Elements kept of each array."""
KEEP_MEMBERS = 1_024
"""Members kept of each object (a row has a few dozen; a tool's result may have more)."""
KEEP_DEPTH = 32
"""Containers nested deeper than this are emptied."""
MAX_DEPTH = 1_024
"""Deeper nesting makes the line invalid (the classifiers' decoders refuse it too)."""
REDUCED_MAX_BYTES = 4 << 20
"""Budget of a reduced copy; past it, later elements and members are dropped (oversized)."""
_SCALAR_LOOKAHEAD = 8  # a literal cut by a piece's end waits for the next piece
_PIECE_BYTES = 65_536  # long strings are decoded this many bytes at a time
_JOIN_BYTES = 4_096  # a carried token is finished on this much of the next piece

class LineReducer:
    """Turns one JSONL line, fed in pieces, into a bounded :class:`ReducedLine`.

    ``feed`` the line's bytes in order (without its newline), then call
    ``finish`` once. The owner's thread runs both; neither blocks nor raises.
    """

    def __init__(self) -> None:
        self._out = bytearray()
        self._carry = b""
        self._stack: list[Frame] = []
        self._top_done = False
        self._invalid = False
        self._bad_utf8 = False
        self._pruned = False
        self._oversized = False
        self._size = 0
        # The string being read: None outside strings.
        self._string: bytearray | None = None
        self._string_kept = False
        self._string_is_key = False
        self._long: LongString | None = None
        self._number: Number | None = None
        self._elided: list[tuple[str, str]] = []

    @property
    def fed(self) -> int:
        """Bytes fed so far."""
        return self._size

    def feed(self, data: bytes) -> None:
        """Reduce the next ``data`` bytes of the line (owner's thread; never raises)."""
        self._size += len(data)
        if self._invalid:
            return
        carry, self._carry = self._carry, b""
        start = 0
        if carry:
            # Finish the carried token on a short head instead of copying all of data.
            head = carry + data[:_JOIN_BYTES]
            stop = self._run(head, 0, final=False)
            if stop < len(carry):  # not resolved yet (a piece shorter than the token): join
                data = head[stop:] + data[_JOIN_BYTES:]
                stop = len(carry)
            start = stop - len(carry)
        if not self._invalid:
            self._carry = data[self._run(data, start, final=False):]

    def finish(self) -> ReducedLine:
        """The reduced copy of everything fed (owner's thread; call once; never raises)."""
        if not self._invalid:
            rest = self._carry
            self._carry = b""
            used = self._run(rest, 0, final=True)
            if (self._string is not None or self._number is not None or self._stack
                    or not self._top_done or BLANK_TAIL.fullmatch(rest, used) is None):
                self._invalid = True
        line = bytes(self._out)
        if self._invalid:
            line = b"!"  # never valid JSON, in any encoding
        elif self._bad_utf8 and line.startswith(b"{"):
            line = b'{"\xff":0' + (b"," if line != b"{}" else b"") + line[1:]
        elif self._bad_utf8:
            line += b" \xff"
        return ReducedLine(line=line, size=self._size, pruned=self._pruned,
                           oversized=self._oversized, elided=tuple(self._elided))

    # --- the tokenizer ------------------------------------------------------------

    def _emit(self, data: bytes) -> None:
        self._out += data

    def _room(self) -> bool:
        """Whether another element or member may be kept (the copy's budget)."""
        if len(self._out) > REDUCED_MAX_BYTES:
            self._oversized = True
        return not self._oversized

    def _run(self, buf: bytes, pos: int, *, final: bool) -> int:
        """Consume ``buf`` from ``pos``; return where the unconsumed carry starts.

        Bytes before ``pos`` may be read as context (the backslashes before a
        quote), never consumed again.
        """
        end = len(buf)
        while pos < end and not self._invalid:
            if self._string is not None:
                pos, closed = self._string_part(buf, pos, final=final)
                if not closed:
                    return pos  # the string continues in the next piece
                continue
            if self._number is not None:
                pos, closed = self._number_part(self._number, buf, pos)
                if not closed:
                    break  # the number may go on in the next piece
                continue
            top = self._stack[-1] if self._stack else None
            if top is not None and top.state == AFTER:
                run = self._dropped_run(top, buf, pos)
                if run > pos:  # dropped elements or members: no tokenizer steps for them
                    pos = run
                    continue
            match = TOKEN.match(buf, pos)
            if match is None:
                blank = BLANK_TAIL.match(buf, pos)
                start = blank.end() if blank is not None else pos
                if start == end:
                    return end
                if not final and end - start < _SCALAR_LOOKAHEAD:
                    return start  # maybe a literal or number cut by the piece's end
                self._invalid = True
                return pos
            punct, quote, literal, number = match.groups()
            if number is not None:
                pos = match.start(4)
                self._open_number()
                continue
            pos = match.end()
            if quote is not None:
                self._open_string()
            elif literal is not None:
                self._scalar(literal)
            else:
                self._punct(punct)
        if final and self._number is not None and not self._invalid:
            self._close_number(self._number)
        return pos

    def _dropped_run(self, top: Frame, buf: bytes, pos: int) -> int:
        """Where a run of elements (or members) of ``top`` that will not be kept ends."""
        if top.is_array:
            if top.kept and top.count < KEEP_ITEMS:
                return pos
            run = DROPPED_INTS.match(buf, pos) or dropped_patterns()[0].match(buf, pos)
            if run is not None:
                self._pruned = self._pruned or top.kept
        else:
            if top.kept and top.count < KEEP_MEMBERS and not self._oversized:
                return pos
            run = dropped_patterns()[1].match(buf, pos)
            if run is not None:
                self._pruned = self._pruned or top.kept
        return pos if run is None else run.end()

    def _value_start(self) -> bool | None:
        """Check a value may start here; say whether it is kept (None: invalid)."""
        if not self._stack:
            if self._top_done:
                return None
            return True
        top = self._stack[-1]
        if top.is_array:
            if top.state not in (FIRST, VALUE):
                return None
            top.state = AFTER
            if top.kept and top.count >= KEEP_ITEMS:
                self._pruned = True
            kept = top.kept and top.count < KEEP_ITEMS and self._room()
            if kept and top.count:
                self._emit(b",")
            top.count += 1
            return kept
        if top.state != VALUE:
            return None
        top.state = AFTER
        return top.member_kept

    def _value_done(self) -> None:
        if not self._stack:
            self._top_done = True

    def _open_number(self) -> None:
        kept = self._value_start()
        if kept is None:
            self._invalid = True
            return
        self._number = Number(kept=kept)

    def _number_part(self, number: Number, buf: bytes, pos: int) -> tuple[int, bool]:
        """Read number bytes from ``pos``: ``(where to go on, whether the number ended)``."""
        end = len(buf)
        while pos < end:
            if number.state in N_DIGIT_RUNS:
                run = DIGITS.match(buf, pos)
                if run is not None and run.end() > pos:
                    number.take(buf, pos, run.end())
                    pos = run.end()
                    continue
            state = number_step(number.state, buf[pos])
            if state is None:
                self._close_number(number)
                return pos, True
            number.state = state
            number.take(buf, pos, pos + 1)
            pos += 1
        return pos, False

    def _close_number(self, number: Number) -> None:
        self._number = None
        if number.state not in N_ACCEPTING:
            self._invalid = True
            return
        if number.kept:
            if number.length <= NUMBER_KEEP:
                self._emit(bytes(number.head))
            else:
                self._emit(b"0")  # a number no rule reads; its digits would be unbounded
                self._pruned = True
        self._value_done()

    def _scalar(self, token: bytes) -> None:
        kept = self._value_start()
        if kept is None:
            self._invalid = True
            return
        if kept:
            self._emit(token)
        self._value_done()

    def _punct(self, char: bytes) -> None:
        top = self._stack[-1] if self._stack else None
        if char in (b"[", b"{"):
            kept = self._value_start()
            if kept is None or len(self._stack) >= MAX_DEPTH:
                self._invalid = True
                return
            is_array = char == b"["
            if kept and len(self._stack) >= KEEP_DEPTH:
                self._emit(b"[]" if is_array else b"{}")
                self._pruned = True
                kept = False
            elif kept:
                self._emit(char)
            self._stack.append(Frame(is_array=is_array, kept=kept))
        elif char in (b"]", b"}"):
            if top is None or top.is_array != (char == b"]") or top.state not in (
                    (FIRST, AFTER)):
                self._invalid = True
                return
            self._stack.pop()
            if top.kept:
                self._emit(char)
            self._value_done()
        elif char == b",":
            if top is None or top.state != AFTER:
                self._invalid = True
                return
            top.state = VALUE if top.is_array else KEY
        else:  # ":"
            if top is None or top.is_array or top.state != COLON:
                self._invalid = True
                return
            top.state = VALUE
            if top.member_kept:
                self._emit(b":")

    def _open_string(self) -> None:
        top = self._stack[-1] if self._stack else None
        if top is not None and not top.is_array and top.state in (FIRST, KEY):
            top.state = COLON
            self._string_is_key = True
            if top.kept and top.count >= KEEP_MEMBERS:
                self._pruned = True
            top.member_kept = top.kept and top.count < KEEP_MEMBERS and self._room()
            self._string_kept = top.member_kept
            if top.member_kept and top.count:
                self._emit(b",")
            top.count += 1
        else:
            kept = self._value_start()
            if kept is None:
                self._invalid = True
                return
            self._string_is_key = False
            self._string_kept = kept
        self._string = bytearray()
        self._long = None

    # --- strings --------------------------------------------------------------------

    def _string_part(self, buf: bytes, pos: int, *, final: bool) -> tuple[int, bool]:
        """Read string bytes from ``pos``: ``(where to go on, whether the string closed)``.

        An unclosed string's carry starts where this returns.
        """
        close = closing_quote(buf, pos)
        view = memoryview(buf)
        if close < 0:
            cut = len(buf) if final else safe_cut(buf, pos)
            self._string_bytes(view[pos:cut])
            if final:
                self._invalid = True  # the line ended inside a string
            return cut, False
        self._string_bytes(view[pos:close])
        self._close_string()
        return close + 1, True

    def _string_bytes(self, raw: memoryview) -> None:
        """Take string bytes that end at an escape-safe point (see :func:`safe_cut`)."""
        if not raw:
            return
        if self._long is None:
            assert self._string is not None
            if len(self._string) + len(raw) <= SHORT_STRING_BYTES:
                self._string += raw
                return
            self._long = LongString(kept=self._string_kept)
            self._long_pieces(self._long, memoryview(bytes(self._string)))
            self._string = bytearray()
        self._long_pieces(self._long, raw)

    def _long_pieces(self, long: LongString, raw: memoryview) -> None:
        """Decode ``raw`` :data:`_PIECE_BYTES` at a time (memory near a piece, not a chunk)."""
        carry = b""
        for start in range(0, len(raw), _PIECE_BYTES):
            piece = carry + bytes(raw[start:start + _PIECE_BYTES])
            cut = len(piece) if start + _PIECE_BYTES >= len(raw) else safe_cut(piece, 0)
            self._long_bytes(long, piece[:cut], final=False)
            carry = piece[cut:]
            if self._invalid:
                return

    def _long_bytes(self, long: LongString, raw: bytes, *, final: bool) -> None:
        try:
            text = long.decoder.decode(raw, final)
        except UnicodeDecodeError:
            self._bad_utf8 = True
            long.decoder = codecs.getincrementaldecoder("utf-8")("replace")
            text = long.decoder.decode(raw, final)
        if "\\" in text:
            try:  # the piece never splits an escape: C's JSON string scanner decodes it
                text = json.loads('"' + text + '"')
            except ValueError:
                self._invalid = True  # a bad escape or a raw control character
                return
        elif CONTROL.search(text):
            self._invalid = True  # a raw control character: not JSON
            return
        if not text:
            return
        long.chars += len(text)
        if len(long.head) < KEEP_CHARS:
            long.head += text[:KEEP_CHARS - len(long.head)]
        long.tail = (long.tail + text[-KEEP_CHARS:])[-KEEP_CHARS:]
        if long.kept:
            long.digest.update(text)

    def _close_string(self) -> None:
        raw, long = self._string, self._long
        self._string = None
        self._long = None
        kept = self._string_kept
        if long is None:
            assert raw is not None
            if kept:
                self._emit(b'"' + bytes(raw) + b'"')  # the classifier's decoder checks it
            else:
                self._check_dropped_string(raw)
        else:
            self._long_bytes(long, b"", final=True)
            if kept and not self._invalid:
                self._emit(self._long_copy(long))
        if self._string_is_key:
            return
        self._value_done()

    def _check_dropped_string(self, raw: bytearray) -> None:
        """Validate a short string that is not copied: UTF-8, escapes, control characters."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._bad_utf8 = True
            text = raw.decode("utf-8", "replace")
        if "\\" in text:
            try:
                json.loads('"' + text + '"')
            except ValueError:
                self._invalid = True
        elif CONTROL.search(text):
            self._invalid = True

    def _long_copy(self, long: LongString) -> bytes:
        if long.chars <= 2 * KEEP_CHARS:
            rest = long.chars - len(long.head)
            text = long.head + (long.tail[-rest:] if rest > 0 else "")
        else:
            marker = MARKER.format(len(self._elided))
            text = long.head + marker + long.tail
            self._elided.append((normalize_text(text), long.digest.hexdigest()))
        return json.dumps(text).encode("ascii")
