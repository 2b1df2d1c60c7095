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
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

import msgspec

__all__ = [
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
