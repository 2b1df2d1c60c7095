"""Errors raised by the public API (``api-contract.md``, "Errors").

Bad arguments raise :class:`InvalidArgument` (a ``ValueError``) or
:class:`ArgumentTypeError` (a ``TypeError``) with a message naming the
argument. Storage faults never raise out of producers; they surface as
``None`` results and log lines.
"""

from __future__ import annotations

from persistence.errors import (
    BackendNotInstalled,
    DatabaseBusy,
    DatabaseCorrupt,
    SchemaError,
    StorageError,
    StorageUnavailable,
)

__all__ = [
    "ArgumentTypeError",
    "BackendNotInstalled",
    "DatabaseBusy",
    "DatabaseCorrupt",
    "GatewayClosed",
    "GatewayUnavailable",
    "InvalidArgument",
    "InvalidChangesSince",
    "InvalidKind",
    "InvalidOutcome",
    "InvalidSessionKey",
    "ReentrantCall",
    "SchemaError",
    "SessionStateError",
    "StorageError",
    "StorageUnavailable",
]


class SessionStateError(Exception):
    """Base of the errors this library raises on purpose."""


class InvalidArgument(SessionStateError, ValueError):
    """An argument has the right type but an unacceptable value."""


class InvalidSessionKey(InvalidArgument):
    """A session key is empty, longer than 512 characters, or holds control characters."""


class InvalidKind(InvalidArgument):
    """An event kind or actor type is not one of the seed's."""


class InvalidOutcome(InvalidArgument):
    """A run outcome is not ``ok``, ``error``, ``timeout`` or ``cancelled``."""


class InvalidChangesSince(InvalidArgument):
    """``changes_since`` is negative."""


class ArgumentTypeError(SessionStateError, TypeError):
    """An argument has the wrong type (e.g. non-string text, non-integer version)."""


class GatewayClosed(SessionStateError, RuntimeError):
    """The gateway was closed; open a new one."""


class GatewayUnavailable(SessionStateError, RuntimeError):
    """An internal actor did not answer within the configured timeout.

    Raised by non-producer calls (``drain``, ``pending_notices``, ...) when the
    gateway is overloaded or stuck; producers log it and return ``None``.
    """


class ReentrantCall(SessionStateError, RuntimeError):
    """A blocking gateway call was made from one of the gateway's own threads.

    This happens when ``on_wake`` calls back into the gateway; it would
    deadlock, so it is refused. Hand the work to another thread instead.
    """
