"""Public value types of the embedding API (``api-contract.md``)."""

from __future__ import annotations

from typing import Any

import msgspec

from persistence.records import (
    SessionRow,
    SessionStateEvent,
    SessionStatus,
    StateChanges,
    UpstreamLink,
)

__all__ = [
    "SendResult",
    "SessionRow",
    "SessionStateEvent",
    "SessionStateEventInput",
    "SessionStatus",
    "StateChanges",
    "UpstreamLink",
]


class SessionStateEventInput(msgspec.Struct, frozen=True, kw_only=True):
    """An event to record with :meth:`actors.Gateway.record`.

    Attributes:
        session_key: the session the event is about (required).
        kind: one of the eight kinds of the seed (required).
        actor_type: ``"human"``, ``"agent"`` or ``"system"`` (required).
        summary: one line of metadata, never message text (required, at most
            1,000 characters).
        agent_id: the owning agent; defaults to the key's agent (``main`` for
            bare keys).
        session_id: the session incarnation; defaults to the stored entry's.
        actor_id: who acted; an agent actor's session key makes the event
            self-suppressed for that watcher.
        run_id: the run the event belongs to.
        occurred_at: epoch ms; defaults to now, clamped to [now - 24 h, now] and
            lifted to the session's previous event time when earlier (times never
            go backwards along a session's versions).
        payload: a JSON-serializable ``dict`` of at most 16 KiB encoded.
        dedupe_key: makes the record idempotent: a repeat returns the stored
            event, changes nothing and notifies nobody.
    """

    session_key: str
    kind: str
    actor_type: str
    summary: str
    agent_id: str | None = None
    session_id: str | None = None
    actor_id: str | None = None
    run_id: str | None = None
    occurred_at: int | None = None
    payload: dict[str, Any] | None = None
    dedupe_key: str | None = None


class SendResult(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """What :meth:`actors.Gateway.sessions_send` returns.

    Attributes:
        accepted: the host's dispatcher accepted the text.
        watched: present only when ``watch=True`` was passed: whether the
            sender now watches the target.
    """

    accepted: bool
    watched: bool | None = None
