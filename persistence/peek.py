"""Cheap reads of a SQLite signal log for cold-start commands (``ssa hook``).

A prompt hook runs at every prompt a person submits, so when nothing is
pending it must cost little more than starting Python and importing APSW.
These reads use APSW and the standard library only (no msgspec, no actor
runtime), open the file without creating it, and never write. When they
show that there is work (a notice to deliver, a session to adopt or to
scan), the caller opens a :class:`~actors.Gateway`, which does the writes
through the persistence actor.

Every function runs in the caller's thread and blocks on SQLite for at
most the connection's busy timeout. The query functions take any connection
of the signal log's shape (APSW's, or a gateway's read connection on
PostgreSQL through :attr:`actors.Gateway.read_pool`).
"""

from __future__ import annotations

import json

import apsw

from persistence.record import Record

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "EventPeek",
    "LinkPeek",
    "PeekUnavailable",
    "cursor_marks",
    "events_after",
    "links",
    "manager_since",
    "open_peek",
    "pending",
    "role",
    "roles",
    "session_created_at",
    "session_keys",
    "watched_targets",
    "watches",
    "watermark",
]

APPLICATION_ID = 0x53534131
"""``PRAGMA application_id`` of a signal log (as :mod:`persistence._schema` writes it)."""
SCHEMA_VERSION = 7
"""The schema these reads understand (:data:`persistence._schema.SCHEMA_VERSION`)."""


class PeekUnavailable(Exception):
    """The file cannot be peeked at: missing, not a signal log, or another schema version.

    The caller falls back to opening a gateway, which creates or migrates it.
    """


class LinkPeek(Record):
    """One upstream link as the cold path needs it (its JSON decoded only on access).

    Attributes:
        session_key: the adopted session's key.
        agent_id: its agent.
        source: ``"claude"``, ``"codex"``, ``"opencode"`` or ``"pi"``.
        host_id: ``"gateway:local"`` for files on this machine.
        thread_id: the tool's session id.
        ref_json: where to read it, as stored (``{"path": ...}``).
        marker_json: the stored scan position, as stored.
        lease_owner: who holds the scan lease, or ``None``.
        lease_expires_at: when that lease lapses (epoch ms).
    """

    __slots__ = ("agent_id", "host_id", "lease_expires_at", "lease_owner", "marker_json",
                 "ref_json", "session_key", "source", "thread_id")

    def __init__(self, session_key: str, agent_id: str, source: str, host_id: str,
                 thread_id: str, ref_json: str, marker_json: str, lease_owner: str | None,
                 lease_expires_at: int) -> None:
        self.session_key = session_key
        self.agent_id = agent_id
        self.source = source
        self.host_id = host_id
        self.thread_id = thread_id
        self.ref_json = ref_json
        self.marker_json = marker_json
        self.lease_owner = lease_owner
        self.lease_expires_at = lease_expires_at

    @property
    def path(self) -> str | None:
        """The transcript (OpenCode: the database), or ``None`` (decodes ``ref_json``)."""
        path = _object(self.ref_json).get("path")
        return path if isinstance(path, str) else None

    @property
    def marker(self) -> dict[str, Any]:
        """The scan position (decodes ``marker_json``; ``{}`` when unreadable)."""
        return _object(self.marker_json)


class EventPeek(Record):
    """One signal-log event's metadata (never any message text: the log holds none).

    Attributes:
        sequence, kind, actor_type, occurred_at, summary: the event's columns.
        payload_json: the event's payload as stored (JSON; an upstream turn's
            source pointer, no text), or ``None``.
    """

    __slots__ = ("actor_type", "kind", "occurred_at", "payload_json", "sequence", "summary")

    def __init__(self, sequence: int, kind: str, actor_type: str, occurred_at: int,
                 summary: str, payload_json: str | None = None) -> None:
        self.sequence = sequence
        self.kind = kind
        self.actor_type = actor_type
        self.occurred_at = occurred_at
        self.summary = summary
        self.payload_json = payload_json


def open_peek(path: str, *, busy_timeout_ms: int = 1000) -> apsw.Connection:
    """Open the signal log at ``path`` for reading, without creating anything.

    Args:
        path: the SQLite file.
        busy_timeout_ms: how long a statement waits behind a writer's lock.

    Returns:
        An APSW connection (the caller closes it).

    Raises:
        PeekUnavailable: the file does not exist, is not a signal log, or
            has another schema version.
        apsw.Error: SQLite failed otherwise (locked, corrupt, unreadable).
    """
    try:
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READWRITE)
    except apsw.CantOpenError as exc:
        raise PeekUnavailable(f"{path} does not exist") from exc
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        app = conn.execute("PRAGMA application_id").get
        version = conn.execute("PRAGMA user_version").get
        if app != APPLICATION_ID or version != SCHEMA_VERSION:
            raise PeekUnavailable(f"{path} is not a signal log of schema {SCHEMA_VERSION}")
    except BaseException:
        conn.close()
        raise
    return conn


def pending(conn: Any, watcher: str) -> list[tuple[str, str, int, int]]:
    """The watcher's open notices as ``(target_key, target_agent_id, last_seen, material)``.

    The same query as :func:`persistence.pending_cursors` (oldest first).
    """
    return [(str(k), str(a), int(ls), int(mt)) for k, a, ls, mt in conn.execute(
        "SELECT target_session_key, target_agent_id, last_seen_sequence, material_sequence"
        " FROM session_watch_cursors WHERE watcher_session_key = ?"
        " AND material_sequence > last_seen_sequence"
        " AND EXISTS (SELECT 1 FROM sessions WHERE session_key = ?)"
        " ORDER BY notified_sequence, target_session_key, target_agent_id",
        (watcher, watcher))]


def role(conn: Any, key: str) -> tuple[str, bool]:
    """``key``'s role as ``("manager", wake)`` or ``("worker", False)`` (no row: a worker)."""
    row = conn.execute("SELECT wake FROM session_roles WHERE session_key = ?", (key,)).fetchone()
    return ("worker", False) if row is None else ("manager", bool(row[0]))


def manager_since(conn: Any, key: str) -> int | None:
    """When ``key`` became a manager (epoch ms), or ``None`` for a worker."""
    row = conn.execute("SELECT updated_at FROM session_roles WHERE session_key = ?",
                       (key,)).fetchone()
    return None if row is None else int(row[0])


def roles(conn: Any) -> dict[str, bool]:
    """Every manager's key and whether it is woken (workers have no entry)."""
    return {str(k): bool(w) for k, w in conn.execute(
        "SELECT session_key, wake FROM session_roles ORDER BY session_key")}


def watched_targets(conn: Any, watcher: str) -> set[str]:
    """The session keys ``watcher`` has a cursor on."""
    return {str(k) for (k,) in conn.execute(
        "SELECT target_session_key FROM session_watch_cursors WHERE watcher_session_key = ?",
        (watcher,))}


def session_keys(conn: Any) -> set[str]:
    """The keys of every session entry (adopted with or without a link, or registered)."""
    return {str(k) for (k,) in conn.execute("SELECT session_key FROM sessions")}


def session_created_at(conn: Any, key: str) -> int | None:
    """When the session entry ``key`` was first created (epoch ms), or ``None``."""
    row = conn.execute("SELECT min(created_at) FROM sessions WHERE session_key = ?",
                       (key,)).get
    return None if row is None else int(row)


def links(conn: Any) -> list[LinkPeek]:
    """Every upstream link (all agents); the JSON columns are decoded only when used."""
    return [LinkPeek(str(key), str(agent), str(source), str(host), str(thread),
                     str(ref), str(marker), None if owner is None else str(owner),
                     int(expires or 0))
            for key, agent, source, host, thread, ref, marker, owner, expires in conn.execute(
                "SELECT session_key, agent_id, source, host_id, thread_id, upstream_ref_json,"
                " marker_json, lease_owner, lease_expires_at FROM session_upstream_links")]


def events_after(conn: Any, key: str, agent_id: str, since: int,
                 limit: int, until: int | None = None) -> tuple[list[EventPeek], int]:
    """Up to ``limit`` events of a session after ``since`` (and at most ``until``, a
    notice's frozen watermark: what it covers), and how many there are in all.

    Returns:
        ``(events oldest first, total count in that range)``.
    """
    top = until if until is not None else (1 << 62)
    events = [EventPeek(int(s), str(k), str(a), int(t), str(m), None if p is None else str(p))
              for s, k, a, t, m, p in conn.execute(
        "SELECT sequence, kind, actor_type, occurred_at, summary, payload_json"
        " FROM session_state_events"
        " WHERE session_key = ? AND agent_id = ? AND sequence > ? AND sequence <= ?"
        " ORDER BY sequence LIMIT ?",
        (key, agent_id, since, top, limit))]
    total = conn.execute(
        "SELECT count(*) FROM session_state_events WHERE session_key = ? AND agent_id = ?"
        " AND sequence > ? AND sequence <= ?", (key, agent_id, since, top)).get
    return events, int(total or 0)


def cursor_marks(conn: Any, watcher: str) -> dict[str, tuple[int, int]]:
    """``{target key: (last_seen, notified)}`` of ``watcher``'s cursors (the frozen
    watermark of an open notice is ``notified``; once acknowledged, ``last_seen``)."""
    return {str(k): (int(ls), int(nt)) for k, ls, nt in conn.execute(
        "SELECT target_session_key, last_seen_sequence, notified_sequence"
        " FROM session_watch_cursors WHERE watcher_session_key = ?", (watcher,))}


def watermark(conn: Any, watcher: str, key: str, agent_id: str) -> int | None:
    """The frozen watermark (``notified_sequence``) of ``watcher``'s cursor on a target:
    the last state version its open notice covers; ``None`` without a cursor."""
    value = conn.execute(
        "SELECT notified_sequence FROM session_watch_cursors WHERE watcher_session_key = ?"
        " AND target_session_key = ? AND target_agent_id = ?", (watcher, key, agent_id)).get
    return None if value is None else int(value)


def _object(text: object) -> dict[str, Any]:
    if not isinstance(text, str):
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def watches(conn: Any, watcher: str | None = None) -> list[tuple[str, str, int, int]]:
    """Every explicit watch (of ``watcher``, or all) as ``(watcher, target, last_seen, material)``.

    Ordered by watcher, then target; a pair with ``material > last_seen``
    has an open notice. Ambient group watches are left out.
    """
    sql = ("SELECT watcher_session_key, target_session_key, last_seen_sequence,"
           " material_sequence FROM session_watch_cursors WHERE provenance = 'explicit'")
    params: tuple[str, ...] = ()
    if watcher is not None:
        sql += " AND watcher_session_key = ?"
        params = (watcher,)
    return [(str(w), str(t), int(ls), int(mt))
            for w, t, ls, mt in conn.execute(sql + " ORDER BY 1, 2", params)]
