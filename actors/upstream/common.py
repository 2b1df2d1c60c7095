"""What every upstream classifier returns, and the shared text normalization.

A classifier looks at one unit of an upstream transcript (a JSONL line, or an
OpenCode message) and decides whether a person typed it. Classifiers are pure
functions: no I/O, thread-safe, non-blocking; the upstream monitor does the
reading. Text is carried only in memory, for self-echo and replay checks; it
never enters the signal log or the logs.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, NoReturn, Protocol

import msgspec

__all__ = [
    "NO_OWN_TEXTS",
    "OwnTextClaims",
    "OwnTextRecord",
    "OwnTexts",
    "Unit",
    "cwd_in",
    "decode_any",
    "decode_object",
    "epoch_ms",
    "gateway_envelope_reason",
    "is_utf8",
    "normalize_text",
    "text_hash",
]


class Unit(msgspec.Struct, frozen=True, kw_only=True):
    """One classified unit of an upstream transcript.

    Attributes:
        human: a person typed this turn directly into the upstream tool.
        reason: a short snake_case code saying why (for ``ssa classify`` and
            tests), e.g. ``"typed"``, ``"tool_result"``, ``"meta"``.
        text: the normalized typed text (``human`` units only), used to
            recognise the gateway's own texts; never stored or logged.
        occurred_at: when the turn happened, epoch ms, if the row says.
        stop: the unit cannot be classified and classification must stop
            before it (Pi: a line that is not a JSON object); the cursor never
            passes it.
        echo_hash: :func:`text_hash` of the whole typed text when ``text``
            is a shortened view of it (a line longer than the scan cap,
            see :mod:`actors.upstream.longline`); ``None`` otherwise.
    """

    human: bool
    reason: str
    text: str | None = None
    occurred_at: int | None = None
    stop: bool = False
    echo_hash: str | None = None


class OwnTexts(Protocol):
    """The gateway's own texts that one scan matches human rows against (self-echo)."""

    def claim(self, digest: str, occurred_at: int | None) -> bool:
        """Whether the row whose text has :func:`text_hash` ``digest`` is one of them.

        A ``True`` answer uses the matching text up: another row with the same
        words is a person's unless the gateway sent them again.
        """
        ...  # pragma: no cover - a protocol


class _NoOwnTexts:
    """No own texts: every human row counts."""

    __slots__ = ()

    def claim(self, digest: str, occurred_at: int | None) -> bool:
        """Never: nothing is the gateway's own (pure)."""
        return False


NO_OWN_TEXTS: OwnTexts = _NoOwnTexts()
"""The :class:`OwnTexts` of a session the gateway never sent to."""


class OwnTextRecord(NamedTuple):
    """One stored own text: its place in the session's list, its stored hash, when noted.

    Attributes:
        position: increasing per session (the order the texts were noted).
        text_hash: the hash as stored (keyed, see :class:`OwnTextClaims`).
        noted_at: when the gateway noted it, epoch ms; 0 when unknown (kept by a
            release before schema 6): such a record has no time check and never
            expires.
    """

    position: int
    text_hash: str
    noted_at: int


class OwnTextClaims:
    """A session's own-text records, used up by the rows of one scan that match them.

    A human row matches a record when ``key(digest)`` equals the stored hash,
    the record has not expired (noted at most ``ttl_ms`` before ``now``; no
    expiry when ``ttl_ms`` is ``None``) and the row was not written before the
    record was noted (its ``occurred_at`` is at least ``noted_at - skew_ms``;
    a row without a time may match). Each record is used by one row at most,
    the oldest record first, so a person typing the gateway's words again, or
    before the gateway sent them, is still reported, and a text the tool never
    wrote stops hiding anything once it expires. :attr:`claimed` lists the
    used records' positions; the scan's commit deletes them with the marker's
    move (issue 34 item 1).

    Not thread-safe: one scan's; pure (no I/O).
    """

    __slots__ = ("_claimed", "_key", "_now", "_records", "_skew_ms", "_ttl_ms")

    def __init__(self, records: Iterable[OwnTextRecord], *,
                 key: Callable[[str], str] | None = None, now: int = 0,
                 ttl_ms: int | None = None, skew_ms: int = 0) -> None:
        """Args: ``records`` in any order; ``key`` maps a plain :func:`text_hash`
        to its stored form (identity when ``None``); ``now`` in epoch ms."""
        self._records = sorted(records)
        self._key = key
        self._now, self._ttl_ms, self._skew_ms = now, ttl_ms, skew_ms
        self._claimed: list[int] = []

    @classmethod
    def of(cls, *digests: str) -> OwnTextClaims:
        """Records of plain :func:`text_hash` digests that never expire (tests, tools)."""
        return cls(OwnTextRecord(n, d, 0) for n, d in enumerate(digests, 1))

    def claim(self, digest: str, occurred_at: int | None) -> bool:
        """Use the oldest live record matching ``digest`` written no later than the row.

        Returns whether one was found (the row is the gateway's own text).
        """
        stored = self._key(digest) if self._key is not None else digest
        for index, record in enumerate(self._records):
            if record.text_hash != stored:
                continue
            if record.noted_at and self._ttl_ms is not None \
                    and self._now - record.noted_at > self._ttl_ms:
                continue
            if record.noted_at and occurred_at is not None \
                    and occurred_at < record.noted_at - self._skew_ms:
                continue
            del self._records[index]
            self._claimed.append(record.position)
            return True
        return False

    @property
    def claimed(self) -> tuple[int, ...]:
        """The positions of the records this scan used, in the order they were used."""
        return tuple(self._claimed)

    def expired_before(self) -> int | None:
        """Records noted before this time (epoch ms) have expired; ``None`` when none of
        this session's has (so the scan's commit deletes nothing more)."""
        if self._ttl_ms is None:
            return None
        cut = self._now - self._ttl_ms
        return cut if any(0 < r.noted_at < cut for r in self._records) else None


def normalize_text(text: str | None) -> str:
    """Trim and collapse every whitespace run to one space (anchor §3.16 step 2b)."""
    return " ".join(text.split()) if text else ""


def text_hash(text: str | None) -> str:
    """SHA-256 hex of the normalized text: what is stored for own texts."""
    return hashlib.sha256(normalize_text(text).encode("utf-8", "surrogatepass")).hexdigest()


# Largest |epoch ms| a JavaScript Date accepts (±100 000 000 days).
_MAX_EPOCH_MS = 8_640_000_000_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)
_MAX_ISO_LEN = 64

# Envelopes OpenClaw itself writes around relayed text (anchor §3.17).
_INTER_SESSION_PREFIX = "[Inter-session message]"
_RESEED_PREFIX = "Continue this conversation using the OpenClaw transcript below"
_RESEED_MARKERS = ("<conversation_history>", "<next_user_message>")
# OpenClaw channel metadata envelope, optionally after a "[Sun 2026-03-08 22:03 GMT+9]" stamp.
_CHANNEL_ENVELOPE = re.compile(
    r"(?:\[[^\]\n]{1,80}\]\s*)?(?:Sender|Conversation info) \(untrusted metadata\):\s*```"
)
_ANY_DECODER = msgspec.json.Decoder()


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(name)


def is_utf8(line: bytes) -> bool:
    """Whether ``line`` is valid UTF-8 (fast path for ASCII)."""
    if line.isascii():
        return True
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def decode_any(line: bytes) -> tuple[bool, object]:
    """Decode one JSON document generically; ``(False, None)`` if it is not valid JSON.

    msgspec first; the standard library as a fallback for the valid JSON msgspec
    refuses (lone surrogate escapes, numbers beyond float range). ``NaN`` and
    ``Infinity`` literals are not JSON and stay refused.
    """
    try:
        return True, _ANY_DECODER.decode(line)
    except (msgspec.MsgspecError, RecursionError):
        pass
    try:
        return True, json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return False, None


def epoch_ms(value: object) -> int | None:
    """A row time as epoch ms: an ISO 8601 string (naive means UTC) or a number of ms."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -_MAX_EPOCH_MS <= value <= _MAX_EPOCH_MS else None
    if isinstance(value, float):
        if math.isfinite(value) and -_MAX_EPOCH_MS <= value <= _MAX_EPOCH_MS:
            return int(value)
        return None
    if isinstance(value, str) and 0 < len(value) <= _MAX_ISO_LEN:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        try:
            return (parsed - _EPOCH) // _ONE_MS
        except OverflowError:
            return None
    return None


def gateway_envelope_reason(text: str) -> str | None:
    """Reason code when ``text`` (left-stripped) is an envelope OpenClaw writes itself."""
    if text.startswith(_INTER_SESSION_PREFIX):
        return "inter_session"
    if text.startswith(_RESEED_PREFIX) and any(marker in text for marker in _RESEED_MARKERS):
        return "reseed_envelope"
    if _CHANNEL_ENVELOPE.match(text):
        return "openclaw_envelope"
    return None


def decode_object(line: bytes) -> tuple[str, dict[str, Any] | None]:
    """Decode a line that the fast typed decoders could not: ``(kind, object)``.

    ``kind`` is ``"ok"`` with the decoded JSON object, ``"blank"`` for an
    empty line, or ``"invalid"`` for anything that is not valid UTF-8 JSON
    holding an object. Pure; never raises.
    """
    if not is_utf8(line):
        return "invalid", None
    ok, value = decode_any(line)
    if not ok:
        return ("blank" if not line.strip() else "invalid"), None
    if not isinstance(value, dict):
        return "invalid", None
    return "ok", value


class _Cwd(msgspec.Struct):
    cwd: str | None = None


_cwd = msgspec.json.Decoder(_Cwd)


def cwd_in(lines: list[bytes]) -> str | None:
    """The first non-empty top-level ``cwd`` field among JSON ``lines`` (pure; never raises)."""
    for line in lines:
        try:
            found = _cwd.decode(line).cwd
        except (msgspec.MsgspecError, RecursionError):
            continue
        if found:
            return found
    return None
