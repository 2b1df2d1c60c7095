"""Argument validation at the API boundary (``api-contract.md``, "Errors").

Every function is pure and raises an :mod:`actors.errors` exception whose
message names the offending argument.
"""

from __future__ import annotations

import errno
import math
import os
import time
from typing import TYPE_CHECKING, cast

import msgspec

from actors.config import GatewayConfig
from actors.errors import (
    ArgumentTypeError,
    InvalidArgument,
    InvalidChangesSince,
    InvalidKind,
    InvalidOutcome,
    InvalidSessionKey,
)
from persistence.keys import is_agent_qualified, key_problem
from persistence.kinds import ACTOR_TYPES, KINDS, RUN_OUTCOMES

if TYPE_CHECKING:
    from persistence._messages import ActivityState

__all__ = [
    "ACTIVITY_DETAILS",
    "MAX_DEDUPE_KEY_BYTES",
    "MAX_PAYLOAD_BYTES",
    "MAX_SUMMARY_LENGTH",
    "MAX_TYPED_TEXT",
    "check_activity",
    "check_actor_type",
    "check_agent_id",
    "check_changes_since",
    "check_hosts",
    "check_int",
    "check_key",
    "check_kind",
    "check_optional_key",
    "check_outcome",
    "check_payload",
    "check_run_failed_payload",
    "check_since",
    "check_text",
    "check_texts",
    "check_typed_text",
]

MAX_SUMMARY_LENGTH = 1000
"""Longest summary or identifier text, in characters."""

MAX_PAYLOAD_BYTES = 16 * 1024
"""Largest encoded payload, in bytes."""

MAX_DEDUPE_KEY_BYTES = 1000
"""Longest ``dedupe_key`` in bytes of UTF-8: with the session key and agent
id it is one PostgreSQL index entry (at most 2,704 bytes)."""

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


def check_hosts(value: object, on_wake: object) -> tuple[str, ...]:
    """Return the hosted watcher keys of ``hosts=`` / :meth:`Gateway.host`, deduplicated.

    Raises:
        ArgumentTypeError: ``value`` is a ``str`` (one key: pass a tuple) or
            not iterable, or a key is not a ``str``.
        InvalidSessionKey: a key is invalid or not agent-qualified.
        InvalidArgument: keys were given but there is no ``on_wake`` to call.
    """
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise ArgumentTypeError("hosts must be an iterable of watcher keys, not a "
                                f"{type(value).__name__}")
    keys = tuple(dict.fromkeys(check_key(k, "watcher_key") for k in value))
    for key in keys:
        if not is_agent_qualified(key):
            raise InvalidSessionKey(f"watcher_key {key!r} must be agent-qualified "
                                    "(agent:<agent>:<rest>)")
    if keys and on_wake is None:
        raise InvalidArgument("hosting a watcher needs on_wake: open the gateway with one")
    return keys


def check_agent_id(value: object, what: str = "agent_id") -> str | None:
    """Return a valid agent id (a key without ``:``), or ``None``."""
    if value is None:
        return None
    agent_id = check_key(value, what)
    if ":" in agent_id:
        raise InvalidSessionKey(f"{what} must not contain ':'")
    return agent_id


def check_text(value: object, what: str, *, optional: bool = False,
               max_length: int = MAX_SUMMARY_LENGTH, max_bytes: int | None = None) -> str | None:
    """Return ``value`` if it is a storable string (no NUL, no lone surrogates, bounded length).

    The same text must be storable on every backend: PostgreSQL's ``text``
    cannot hold U+0000, so neither backend accepts it.

    Args:
        value: the candidate.
        what: the argument name used in the message.
        optional: ``None`` passes (and is returned).
        max_length: the longest accepted text, in characters.
        max_bytes: the longest accepted UTF-8 encoding, in bytes (``None``:
            no limit beyond ``max_length``).

    Returns:
        ``value`` unchanged.

    Raises:
        ArgumentTypeError: not a ``str`` (or ``None`` when not ``optional``).
        InvalidArgument: empty, too long, holding a NUL character, or not
            encodable as UTF-8.
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{what} must be a str, not {type(value).__name__}")
    if not value:
        raise InvalidArgument(f"{what} must not be empty")
    if len(value) > max_length:
        raise InvalidArgument(f"{what} is longer than {max_length} characters")
    if "\x00" in value:
        raise InvalidArgument(f"{what} contains a NUL character")
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{what} contains a lone surrogate") from None
    if max_bytes is not None and len(encoded) > max_bytes:
        raise InvalidArgument(f"{what} is longer than {max_bytes} bytes in UTF-8")
    return value


def check_texts(value: object, what: str) -> tuple[str, ...]:
    """Return the strings of the iterable ``value`` as a tuple (``drain(only=...)``).

    Raises:
        ArgumentTypeError: ``value`` is a ``str`` or ``bytes`` (one text:
            pass a list) or not iterable, or an item is not a ``str``.
    """
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ArgumentTypeError(f"{what} must be an iterable of str, not a "
                                f"{type(value).__name__}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise ArgumentTypeError(f"{what} must hold str, not {type(item).__name__}")
    return items


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


ACTIVITY_DETAILS: dict[str, frozenset[str | None]] = {
    "busy": frozenset({None}),
    "idle": frozenset({None, "input"}),
    "waiting": frozenset({"permission", "input"}),
    "finished": frozenset({None, "ended"}),
    "failed": frozenset({"error", "timeout", "cancelled"}),
}
"""Each worker state and the details it takes (``note_activity``)."""


def check_activity(state: object, detail: object) -> ActivityState:
    """Return a valid worker ``state`` given its ``detail`` (see :data:`ACTIVITY_DETAILS`).

    Raises:
        ArgumentTypeError: ``state`` or ``detail`` is not a ``str`` (``detail``: or ``None``).
        InvalidArgument: an unknown state, or a detail that state does not take.
    """
    if not isinstance(state, str):
        raise ArgumentTypeError(f"state must be a str, not {type(state).__name__}")
    if detail is not None and not isinstance(detail, str):
        raise ArgumentTypeError(f"detail must be a str or None, not {type(detail).__name__}")
    allowed = ACTIVITY_DETAILS.get(state)
    if allowed is None:
        raise InvalidArgument(f"state must be one of {sorted(ACTIVITY_DETAILS)}, not {state!r}")
    if detail not in allowed:
        raise InvalidArgument(f"a {state} state takes detail "
                              f"{sorted(str(d) for d in allowed)}, not {detail!r}")
    return cast("ActivityState", state)


MAX_TYPED_TEXT = 100_000
"""The largest ``typed_text`` bound (characters per text)."""


def check_typed_text(value: object, changes_since: int | None) -> int:
    """Return a valid ``typed_text`` bound: an ``int`` from 1 to :data:`MAX_TYPED_TEXT`.

    Raises:
        ArgumentTypeError: not an ``int`` (``bool`` and ``float`` included).
        InvalidArgument: out of range, or ``changes_since`` is ``None`` (only
            listed events have text to show).
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise ArgumentTypeError(f"typed_text must be an int, not {type(value).__name__}")
    if not 1 <= value <= MAX_TYPED_TEXT:
        raise InvalidArgument(f"typed_text must be from 1 to {MAX_TYPED_TEXT} characters")
    if changes_since is None:
        raise InvalidArgument("typed_text needs changes_since: only listed events have text")
    return value


def check_since(value: object) -> int | None:
    """Return ``watch(since=...)``'s version: ``None``, or an ``int`` >= 0 (clamped to 64 bits).

    Raises:
        ArgumentTypeError: not an ``int`` (``bool`` and ``float`` included).
        InvalidChangesSince: negative.
    """
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ArgumentTypeError(f"since must be an int, not {type(value).__name__}")
    if value < 0:
        raise InvalidChangesSince("since must not be negative")
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


_MAX_PAYLOAD_DEPTH = 32


def _payload_problem(value: object, depth: int) -> tuple[type[Exception], str] | None:
    if depth > _MAX_PAYLOAD_DEPTH:
        return InvalidArgument, f"payload is nested deeper than {_MAX_PAYLOAD_DEPTH} levels"
    if value is None or isinstance(value, bool | str):
        return None
    if isinstance(value, int):
        return None if -_INT64_MAX <= value <= _INT64_MAX else (
            InvalidArgument, "payload holds an integer outside the 64-bit range")
    if isinstance(value, float):
        return None if math.isfinite(value) else (
            InvalidArgument, "payload holds a non-finite float")
    if isinstance(value, list):
        for item in value:
            problem = _payload_problem(item, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return ArgumentTypeError, "payload keys must be str"
            problem = _payload_problem(item, depth + 1)
            if problem:
                return problem
        return None
    return ArgumentTypeError, (f"payload holds a {type(value).__name__}; only dict, list, str, "
                               "int, float, bool and None are stored")


def check_payload(value: object) -> str | None:
    """Encode a payload ``dict`` as JSON, or return ``None`` for no payload.

    Only JSON types are accepted, so the payload round-trips exactly through
    ``session_status``.

    Raises:
        ArgumentTypeError: not a ``dict``, a non-``str`` key, or a value that
            is not a JSON type (tuple, set, bytes, objects).
        InvalidArgument: nested deeper than 32 levels, larger than
            :data:`MAX_PAYLOAD_BYTES` encoded, holding a lone surrogate, a
            non-finite float or an integer outside 64 bits.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ArgumentTypeError(f"payload must be a dict, not {type(value).__name__}")
    problem = _payload_problem(value, 1)
    if problem is not None:
        raise problem[0](problem[1])
    try:
        encoded = _encoder.encode(value)
    except UnicodeEncodeError:
        raise InvalidArgument("payload contains a lone surrogate") from None
    if len(encoded) > MAX_PAYLOAD_BYTES:
        raise InvalidArgument(f"payload is larger than {MAX_PAYLOAD_BYTES} bytes encoded")
    return encoded.decode("utf-8")


def check_run_failed_payload(kind: str, payload: object) -> None:
    """A ``run_failed`` event carries ``{"outcome": "error"|"timeout"|"cancelled"}`` (seed).

    Raises:
        InvalidOutcome: the payload has no such outcome.
    """
    if kind != "run_failed":
        return
    outcome = payload.get("outcome") if isinstance(payload, dict) else None
    if outcome not in ("error", "timeout", "cancelled"):
        raise InvalidOutcome(
            'a run_failed payload needs "outcome": "error", "timeout" or "cancelled"')


_EARLIEST_MS = 100_000_000_000
"""Epoch ms before 1973-03-03: an injected clock answering less counts seconds, not ms."""
_LATEST_MS = 32_503_680_000_000
"""Epoch ms of the year 3000: an injected clock answering more counts micro- or
nanoseconds, not ms."""


def check_location(path: object) -> str | None:
    """Check ``Gateway.open``'s ``path``; returns it as a ``str`` (``None``: the default).

    Caller's thread; one ``stat`` (to name a symlink loop).

    Raises:
        ArgumentTypeError: not a ``str`` or ``os.PathLike`` of ``str`` (bytes, int).
        InvalidArgument: empty, ``":memory:"`` (readers and other processes need a
            shared file), holds a NUL, or is a symlink loop.
    """
    if path is None:
        return None
    if not isinstance(path, str | os.PathLike):
        raise ArgumentTypeError(f"path must be a file path or a postgresql:// URL (str or "
                                f"os.PathLike), not {type(path).__name__}")
    location = os.fspath(path)
    if not isinstance(location, str):
        raise ArgumentTypeError(f"path must be a str path, not {type(location).__name__}")
    if "\0" in location:
        raise InvalidArgument("path contains a NUL character")
    if location in ("", ":memory:") or (location.startswith("file:")
                                         and "://" not in location):  # (URLs: open_backend)
        raise InvalidArgument(f"path {location!r} is not supported: the signal log is a file "
                              "that its readers and other processes share; give a file path "
                              "(or None for the default file)")
    try:
        os.stat(location)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidArgument(f"path {location} is a symlink loop") from None
    return location


def check_clock(clock: object) -> None:
    """Ask an injected clock once: it must answer epoch milliseconds (caller's thread).

    A clock that goes wrong later falls back to the system clock (logged);
    one that is wrong from the start is a mistake to report at once.

    Raises:
        ArgumentTypeError: it answered something that is not an ``int``.
        InvalidArgument: it raised, or answered a time before 1973 in ms (a
            clock of seconds) or after the year 3000 (a clock of microseconds
            or nanoseconds).
    """
    if clock is None or not callable(clock):
        return
    try:
        now = clock()
    except Exception as exc:
        raise InvalidArgument(f"clock raised {type(exc).__name__}: {exc}") from exc
    if type(now) is not int:
        raise ArgumentTypeError(f"clock must return epoch milliseconds as an int, not "
                                f"{type(now).__name__}")
    if not _EARLIEST_MS <= now < _LATEST_MS:
        unit = "seconds" if now < _EARLIEST_MS else "microseconds or nanoseconds"
        raise InvalidArgument(f"clock returned {now}, which is not epoch milliseconds (a "
                              f"clock of {unit}? epoch ms now are about "
                              f"{time.time_ns() // 1_000_000})")


def check_open(config: object, clock: object, on_wake: object, monitor: object) -> GatewayConfig:
    """Check ``Gateway.open``'s (and ``AsyncGateway.open``'s) arguments; return the config.

    ``config`` ``None`` means ``GatewayConfig()``. Pure; any thread.

    Raises:
        ArgumentTypeError: ``config`` is not a ``GatewayConfig``, ``clock`` or
            ``on_wake`` not callable, ``monitor`` not a bool.
    """
    config = config if config is not None else GatewayConfig()
    if not isinstance(config, GatewayConfig):
        raise ArgumentTypeError(f"config must be a GatewayConfig, not {type(config).__name__}")
    if clock is not None and not callable(clock):
        raise ArgumentTypeError("clock must be a callable returning epoch milliseconds")
    if on_wake is not None and not callable(on_wake):
        raise ArgumentTypeError("on_wake must be callable")
    if not isinstance(monitor, bool):
        raise ArgumentTypeError(f"monitor must be a bool, not {type(monitor).__name__}")
    check_clock(clock)
    return config
