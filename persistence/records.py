"""Typed records of the signal log as users see them (msgspec Structs).

Their JSON form (``msgspec.json.encode``) uses the seed's camelCase names
(``api-contract.md``, "Embedding API"); optional fields that are ``None`` are
omitted. All structs are frozen and safe to share between threads.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["SessionRow", "SessionStateEvent", "SessionStatus", "StateChanges", "TypedRead",
           "TypedStatus", "UpstreamLink", "WorkerActivity"]


class SessionStateEvent(msgspec.Struct, frozen=True, kw_only=True, rename="camel",
                        omit_defaults=True):
    """One typed event of the signal log.

    Attributes:
        sequence: global, monotonic, never reused sequence number.
        session_key: the session the event is about.
        agent_id: the owning agent; ``(session_key, agent_id)`` is the session.
        kind: one of :data:`persistence.kinds.KINDS`.
        actor_type: ``"human"``, ``"agent"`` or ``"system"``.
        summary: one line of metadata, never message text.
        occurred_at: epoch milliseconds, clamped to [now - 24 h, now], and never
            before the previous event of the session (times follow the versions).
        session_id: the session incarnation at record time, if known.
        actor_id: who acted (an agent's session key for agent actors).
        run_id: the run the event belongs to, if any.
        payload: a small JSON object (``{"outcome": ...}`` for failed runs).
    """

    sequence: int
    session_key: str
    agent_id: str
    kind: str
    actor_type: str
    summary: str
    occurred_at: int
    session_id: str | None = None
    actor_id: str | None = None
    run_id: str | None = None
    payload: dict[str, Any] | None = None


class StateChanges(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The answer to ``changesSince`` (seed, "Reconciling").

    Attributes:
        events: events after the requested version, oldest first, at most
            ``changes_limit`` of them.
        history_gap: the requested version predates retained history (decided
            only by the session's pruned watermark).
        truncated: more events exist after the last one returned.
        earliest_available_sequence: the smallest retained sequence of the
            session; ``head + 1`` when none is retained; ``0`` with no head.
    """

    events: tuple[SessionStateEvent, ...]
    history_gap: bool
    truncated: bool
    earliest_available_sequence: int


TypedStatus = Literal["ok", "changed", "gone", "too_large", "unsupported", "no_pointer"]
"""Why a read of typed text gave what it gave:

* ``ok``: every counted turn was found (``texts`` holds them);
* ``changed``: the transcript no longer holds (all of) them where they were;
* ``gone``: the transcript cannot be read (deleted, moved, another host);
* ``too_large``: the event's range of the transcript is too long to read back;
* ``unsupported``: the source has no way to read its turns back yet;
* ``no_pointer``: the event carries no source pointer (recorded by a release
  before this one, or through a paired node).
"""


class TypedRead(msgspec.Struct, frozen=True, kw_only=True, rename="camel",
                omit_defaults=True):
    """The typed text of one ``human_direct_message`` event, read from the tool's transcript.

    Read at call time (``session_status(..., typed_text=N)``), never stored.

    Attributes:
        sequence: the event's sequence (state version).
        status: see :data:`TypedStatus`.
        texts: the typed turns' texts in order (whitespace runs collapsed to
            one space), each at most the asked number of characters.
        cut: some text was longer than the bound and was cut (it ends with ``…``).
        path: the transcript or store read, when the event names one.
    """

    sequence: int
    status: TypedStatus
    texts: tuple[str, ...] = ()
    cut: bool = False
    path: str | None = None


class WorkerActivity(msgspec.Struct, frozen=True, kw_only=True, rename="camel",
                     omit_defaults=True):
    """Where an adopted session's tool stands, as its own hooks last told (issue 33 item 2).

    Attributes:
        state: ``"busy"`` (a turn runs), ``"finished"`` (its turn completed;
            ``detail`` ``"ended"``: the session itself ended), ``"waiting"`` (for a
            permission answer or for input: see ``detail``), ``"failed"`` (its turn
            ended on an error), ``"idle"`` (nothing runs; for a gateway's own use).
        since: when it entered this state, epoch ms.
        updated_at: the last time its hooks said so, epoch ms (last activity).
        detail: ``"permission"`` or ``"input"`` for ``waiting``, ``"ended"`` for a
            session that ended, the outcome for ``failed`` (``"error"``), else ``None``.
    """

    state: str
    since: int
    updated_at: int
    detail: str | None = None


class SessionStatus(msgspec.Struct, frozen=True, kw_only=True, rename="camel",
                    omit_defaults=True):
    """What ``session_status`` returns.

    Attributes:
        state_version: the session's head, ``0`` when it has no events.
        state_changes: present only when ``changes_since`` was given.
        typed_text: with ``typed_text=N``, one entry per listed
            ``human_direct_message`` event, in order (empty when none is listed).
        worker_state: where the session's tool stands (an adopted session whose
            tool's hooks report it), else absent.
    """

    state_version: int
    state_changes: StateChanges | None = None
    typed_text: tuple[TypedRead, ...] | None = None
    worker_state: WorkerActivity | None = None


class SessionRow(msgspec.Struct, frozen=True, kw_only=True, rename="camel",
                 omit_defaults=True):
    """One row of ``sessions_list``.

    Attributes:
        session_key: the session key.
        agent_id: the owning agent.
        session_id: current incarnation id, if known.
        spawned_by: the spawning parent's key, if any.
        chat_type: ``"direct"``, ``"group"`` or ``"channel"``, if known.
        state_version: the head, present only when non-zero.
    """

    session_key: str
    agent_id: str
    session_id: str | None = None
    spawned_by: str | None = None
    chat_type: str | None = None
    state_version: int | None = None


class UpstreamLink(msgspec.Struct, frozen=True, kw_only=True, rename="camel",
                   omit_defaults=True):
    """An adopted session's link to its upstream source (anchor §2.4, §3.15).

    Attributes:
        session_key: the adopted session.
        agent_id: its owning agent.
        source: ``"claude"``, ``"codex"``, ``"opencode"`` or ``"pi"``.
        host_id: where the source lives (``"gateway:local"`` or ``"node:<id>"``).
        thread_id: the upstream tool's own session or thread id.
        upstream_ref: where to read it (``{"path": ...}``, and the session id
            for OpenCode, or the node id for paired-node Claude).
        source_key: 16 hex digits identifying the source; part of every
            upstream dedupe key, so a rebased source never collides.
        marker: the scan position (``{"offset": n}`` for JSONL sources,
            ``{"seq": n, "lastHumanMessageId": ...}`` for OpenCode,
            ``{"uuid": ...}`` for paired-node Claude).
        created_at: epoch ms.
        updated_at: epoch ms; the compare-and-set token of marker advances.
        last_scanned_at: epoch ms of the last marker advance, if any.
    """

    session_key: str
    agent_id: str
    source: str
    host_id: str
    thread_id: str
    upstream_ref: dict[str, Any]
    source_key: str
    marker: dict[str, Any]
    created_at: int
    updated_at: int
    last_scanned_at: int | None = None
