"""Argument validation at the API boundary (``api-contract.md``, "Errors").

Every function is pure and raises an :mod:`actors.errors` exception whose
message names the offending argument.
"""

from __future__ import annotations

from typing import Any

import msgspec

from actors.errors import (
    ArgumentTypeError,
    InvalidArgument,
    InvalidChangesSince,
    InvalidKind,
    InvalidOutcome,
    InvalidSessionKey,
)
from persistence.keys import key_problem
from persistence.kinds import ACTOR_TYPES, KINDS, RUN_OUTCOMES

__all__ = [
    "MAX_PAYLOAD_BYTES",
    "MAX_SUMMARY_LENGTH",
    "check_actor_type",
    "check_agent_id",
    "check_changes_since",
    "check_int",
    "check_key",
    "check_kind",
    "check_optional_key",
    "check_outcome",
    "check_payload",
    "check_text",
]

MAX_SUMMARY_LENGTH = 1000
"""Longest summary or identifier text, in characters."""

MAX_PAYLOAD_BYTES = 16 * 1024
"""Largest encoded payload, in bytes."""

_INT64_MAX = 2**63 - 1
_encoder = msgspec.json.Encoder()


def check_key(value: object, what: str = "session_key") -> str:
    """Return ``value`` if it is a valid session key.

    Raises:
        ArgumentTypeError: not a ``str``.
        InvalidSessionKey: empty, over 512 characters, or holding control
            characters, quotes, backslashes or lone surrogates.
    """
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{what} must be a str, not {type(value).__name__}")
    problem = key_problem(value, what=what)
    if problem is not None:
        raise InvalidSessionKey(problem)
    return value


def check_optional_key(value: object, what: str) -> str | None:
    """Like :func:`check_key`, but ``None`` passes."""
    return None if value is None else check_key(value, what)


def check_agent_id(value: object, what: str = "agent_id") -> str | None:
    """Return a valid agent id (a key without ``:``), or ``None``."""
    if value is None:
        return None
    agent_id = check_key(value, what)
    if ":" in agent_id:
        raise InvalidSessionKey(f"{what} must not contain ':'")
    return agent_id


def check_text(value: object, what: str, *, optional: bool = False,
               max_length: int = MAX_SUMMARY_LENGTH) -> str | None:
    """Return ``value`` if it is a storable string (no lone surrogates, bounded length).

    Raises:
        ArgumentTypeError: not a ``str`` (or ``None`` when not ``optional``).
        InvalidArgument: empty, too long, or not encodable as UTF-8.
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{what} must be a str, not {type(value).__name__}")
    if not value:
        raise InvalidArgument(f"{what} must not be empty")
    if len(value) > max_length:
        raise InvalidArgument(f"{what} is longer than {max_length} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{what} contains a lone surrogate") from None
    return value


def check_int(value: object, what: str, *, optional: bool = False) -> int | None:
    """Return ``value`` if it is an ``int`` (not ``bool``) within SQLite's 64-bit range."""
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ArgumentTypeError(f"{what} must be an int, not {type(value).__name__}")
    if not -_INT64_MAX <= value <= _INT64_MAX:
        raise InvalidArgument(f"{what} is outside the 64-bit integer range")
    return value


def check_changes_since(value: object) -> int:
    """Return a valid ``changes_since`` version (an ``int`` >= 0).

    Values beyond the 64-bit range are clamped to it (no event can follow).

    Raises:
        ArgumentTypeError: not an ``int`` (``bool`` and ``float`` included).
        InvalidChangesSince: negative.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise ArgumentTypeError(f"changes_since must be an int, not {type(value).__name__}")
    if value < 0:
        raise InvalidChangesSince("changes_since must not be negative")
    return min(value, _INT64_MAX)


def check_kind(value: object) -> str:
    """Return ``value`` if it is one of the seed's eight kinds."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"kind must be a str, not {type(value).__name__}")
    if value not in KINDS:
        raise InvalidKind(f"kind must be one of {sorted(KINDS)}, not {value!r}")
    return value


def check_actor_type(value: object) -> str:
    """Return ``value`` if it is ``human``, ``agent`` or ``system``."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"actor_type must be a str, not {type(value).__name__}")
    if value not in ACTOR_TYPES:
        raise InvalidKind(f"actor_type must be one of {sorted(ACTOR_TYPES)}, not {value!r}")
    return value


def check_outcome(value: object) -> str:
    """Return ``value`` if it is ``ok``, ``error``, ``timeout`` or ``cancelled``."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"outcome must be a str, not {type(value).__name__}")
    if value not in RUN_OUTCOMES:
        raise InvalidOutcome(f"outcome must be one of {sorted(RUN_OUTCOMES)}, not {value!r}")
    return value


def check_payload(value: object) -> str | None:
    """Encode a payload ``dict`` as JSON, or return ``None`` for no payload.

    Raises:
        ArgumentTypeError: not a ``dict`` with ``str`` keys, or not JSON-serializable.
        InvalidArgument: larger than :data:`MAX_PAYLOAD_BYTES` encoded, or
            holding a lone surrogate or a non-finite float.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ArgumentTypeError(f"payload must be a dict, not {type(value).__name__}")
    try:
        encoded = _encoder.encode(value)
    except (TypeError, msgspec.EncodeError) as exc:
        raise ArgumentTypeError(f"payload is not JSON-serializable: {exc}") from None
    except UnicodeEncodeError:
        raise InvalidArgument("payload contains a lone surrogate") from None
    if len(encoded) > MAX_PAYLOAD_BYTES:
        raise InvalidArgument(f"payload is larger than {MAX_PAYLOAD_BYTES} bytes encoded")
    decoded: Any = msgspec.json.decode(encoded)
    if decoded != value:
        raise InvalidArgument("payload does not round-trip through JSON (non-finite float?)")
    return encoded.decode("utf-8")
