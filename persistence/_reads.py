"""Read queries of the signal log, as plain functions over a connection.

They run in whichever thread holds the connection (a gateway thread with a
connection checked out of :class:`persistence.ReadPool`, or the writer) and
block on the database only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import msgspec

from persistence.errors import StorageError
from persistence.records import SessionRow, SessionStateEvent, StateChanges

__all__ = [
    "EntryRow",
    "event_by_dedupe_key",
    "event_from_row",
    "has_waking_notice",
    "list_sessions",
    "pending_cursors",
    "read_changes",
    "read_entry",
    "read_version",
    "read_versions",
    "snapshot",
    "text_faults",
]

logger = logging.getLogger(__name__)

_EVENT_COLUMNS = (
    "sequence, session_key, agent_id, session_id, kind, actor_type, actor_id, run_id,"
    " occurred_at, summary, payload_json"
)
_payload_decoder = msgspec.json.Decoder(dict[str, Any])


@contextmanager
def text_faults(location: str) -> Iterator[None]:
    """Turn a stored text that is not UTF-8 into a read fault (:class:`StorageError`).

    SQLite keeps whatever bytes a TEXT value was given (an edit with another
    tool, a damaged page that still passes the integrity check); APSW raises
    ``UnicodeDecodeError`` when a read meets one, which no caller takes for a
    storage fault. Inside this block it becomes one, so the read degrades as
    every other read fault does (logged; ``session_status`` answers empty,
    the command line prints one line). PostgreSQL never stores such text.
    Any thread.

    Raises:
        StorageError: a value read in the block is not UTF-8 (``__cause__``:
            the ``UnicodeDecodeError``).
    """
    try:
        yield
    except UnicodeDecodeError as exc:
        raise StorageError(
            f"{location} holds a text value that is not UTF-8 ({exc.reason} at byte "
            f"{exc.start}): the file was changed outside ssa or is damaged; "
            f"sqlite3 {location} .recover can salvage it") from exc


class EntryRow(msgspec.Struct, frozen=True, kw_only=True):
    """A session entry as stored (``sessions`` table)."""

    session_key: str
    agent_id: str
    session_id: str | None = None
    spawned_by: str | None = None
    chat_type: str | None = None


def _payload(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        return _payload_decoder.decode(raw)
    except msgspec.DecodeError:
        logger.warning("ignoring an event payload that is not a JSON object")
        return None


@contextmanager
def snapshot(conn: Any) -> Iterator[None]:
    """Run the block's reads in one read transaction (one consistent snapshot).

    Unlike ``with conn:``, a failing read is re-raised as itself: the end of
    the transaction is a plain ``ROLLBACK`` whose own failure is ignored, so
    an I/O error is never masked by "cannot rollback".
    """
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            with suppress(Exception):
                conn.execute("ROLLBACK")


def event_from_row(row: Any) -> SessionStateEvent:
    """Build a :class:`SessionStateEvent` from a row of ``_EVENT_COLUMNS``."""
    (seq, key, agent, session_id, kind, actor_type, actor_id, run_id, occurred, summary,
     payload) = row
    return SessionStateEvent(
        sequence=seq, session_key=key, agent_id=agent, session_id=session_id, kind=kind,
        actor_type=actor_type, actor_id=actor_id, run_id=run_id, occurred_at=occurred,
        summary=summary, payload=_payload(payload),
    )


def event_by_dedupe_key(
    conn: Any, key: str, agent_id: str, dedupe_key: str
) -> SessionStateEvent | None:
    """Return the session's event stored under ``dedupe_key``, or ``None``."""
    row = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM session_state_events"  # noqa: S608
        " WHERE session_key = ? AND agent_id = ? AND dedupe_key = ?",
        (key, agent_id, dedupe_key),
    ).fetchone()
    return event_from_row(row) if row is not None else None


def pending_cursors(conn: Any, watcher: str) -> list[tuple[str, str, int, int]]:
    """The watcher's open notices as ``(target_key, target_agent_id, last_seen, material)``.

    Durable truth shared by every process: a pair has an open notice while
    ``material_sequence > last_seen_sequence``, and its text is fixed by
    ``last_seen`` (the frozen watermark). Ordered by the frozen watermark
    (the change the notice first covered), then by target. A watcher whose
    session entry does not exist has none (anchor §3.8 step 2).
    """
    return [(str(k), str(a), int(ls), int(mt)) for k, a, ls, mt in conn.execute(
        "SELECT target_session_key, target_agent_id, last_seen_sequence, material_sequence"
        " FROM session_watch_cursors WHERE watcher_session_key = ?"
        " AND material_sequence > last_seen_sequence"
        " AND EXISTS (SELECT 1 FROM sessions WHERE session_key = ?)"
        " ORDER BY notified_sequence, target_session_key, target_agent_id",
        (watcher, watcher))]


def has_waking_notice(conn: Any, watcher: str) -> bool:
    """Whether ``watcher`` has an open notice that wakes (not an ambient one)."""
    return conn.execute(
        "SELECT 1 FROM session_watch_cursors WHERE watcher_session_key = ?"
        " AND material_sequence > last_seen_sequence AND provenance != 'ambient-group'"
        " LIMIT 1", (watcher,)).get is not None


def read_version(conn: Any, key: str, agent_id: str) -> int:
    """Return the session's state version (its head), ``0`` without one."""
    value = conn.execute(
        "SELECT last_sequence FROM session_state_heads WHERE session_key = ? AND agent_id = ?",
        (key, agent_id),
    ).get
    return int(value) if value is not None else 0


def read_versions(conn: Any, agent_id: str | None = None) -> dict[tuple[str, str], int]:
    """Return every head (optionally of one agent) as ``{(key, agent): version}``."""
    sql = "SELECT session_key, agent_id, last_sequence FROM session_state_heads"
    params: tuple[str, ...] = ()
    if agent_id is not None:
        sql += " WHERE agent_id = ?"
        params = (agent_id,)
    return {(str(k), str(a)): int(v) for k, a, v in conn.execute(sql, params)}


def read_changes(
    conn: Any, key: str, agent_id: str, after: int, limit: int
) -> tuple[int, StateChanges]:
    """Return ``(state_version, changes after `after`)`` from one snapshot (anchor §3.10).

    Args:
        conn: a connection not inside a transaction.
        key: session key.
        agent_id: its agent.
        after: the watcher's ``changesSince`` base (>= 0).
        limit: page size, 1 to 200.

    ``history_gap`` is ``after < pruned_max_sequence`` of the session's head:
    never inferred from sequence arithmetic.
    """
    with snapshot(conn):
        head = conn.execute(
            "SELECT last_sequence, pruned_max_sequence FROM session_state_heads"
            " WHERE session_key = ? AND agent_id = ?",
            (key, agent_id),
        ).fetchone()
        rows = conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM session_state_events"  # noqa: S608
            " WHERE session_key = ? AND agent_id = ? AND sequence > ?"
            " ORDER BY sequence LIMIT ?",
            (key, agent_id, after, limit + 1),
        ).fetchall()
        earliest = conn.execute(
            "SELECT min(sequence) FROM session_state_events WHERE session_key = ? AND agent_id = ?",
            (key, agent_id),
        ).get
    last, pruned = (int(head[0]), int(head[1])) if head is not None else (0, 0)
    if earliest is None:
        earliest = last + 1 if last > 0 else 0
    changes = StateChanges(
        events=tuple(event_from_row(r) for r in rows[:limit]),
        history_gap=after < pruned,
        truncated=len(rows) > limit,
        earliest_available_sequence=int(earliest),
    )
    return last, changes


def read_entry(conn: Any, key: str, agent_id: str) -> EntryRow | None:
    """Return the stored session entry, or ``None``."""
    row = conn.execute(
        "SELECT session_id, spawned_by, chat_type FROM sessions"
        " WHERE session_key = ? AND agent_id = ?",
        (key, agent_id),
    ).fetchone()
    if row is None:
        return None
    return EntryRow(session_key=key, agent_id=agent_id, session_id=_opt_str(row[0]),
                    spawned_by=_opt_str(row[1]), chat_type=_opt_str(row[2]))


def list_sessions(conn: Any, agent_id: str | None = None) -> list[SessionRow]:
    """Return every session entry, ordered by key, with non-zero state versions."""
    sql = (
        "SELECT s.session_key, s.agent_id, s.session_id, s.spawned_by, s.chat_type,"
        " h.last_sequence FROM sessions AS s LEFT JOIN session_state_heads AS h"
        " ON h.session_key = s.session_key AND h.agent_id = s.agent_id"
    )
    params: tuple[str, ...] = ()
    if agent_id is not None:
        sql += " WHERE s.agent_id = ?"
        params = (agent_id,)
    sql += " ORDER BY s.session_key, s.agent_id"
    with snapshot(conn):
        rows = conn.execute(sql, params).fetchall()
    return [
        SessionRow(session_key=str(k), agent_id=str(a), session_id=_opt_str(sid),
                   spawned_by=_opt_str(sp), chat_type=_opt_str(ct),
                   state_version=int(v) if v else None)
        for k, a, sid, sp, ct, v in rows
    ]


def list_session_times(conn: Any, agent_id: str | None = None) -> dict[tuple[str, str], int]:
    """Each session's last change, epoch ms, by ``(session key, agent id)``.

    The later of the session row's ``updated_at`` and its state head's (the
    last signal appended). One query (of ``agent_id``'s sessions when given);
    caller's thread; raises what the connection raises.
    """
    sql = (
        "SELECT s.session_key, s.agent_id, s.updated_at, h.updated_at"
        " FROM sessions AS s LEFT JOIN session_state_heads AS h"
        " ON h.session_key = s.session_key AND h.agent_id = s.agent_id"
    )
    params: tuple[str, ...] = ()
    if agent_id is not None:
        sql += " WHERE s.agent_id = ?"
        params = (agent_id,)
    with snapshot(conn):
        rows = conn.execute(sql, params).fetchall()
    return {(str(k), str(a)): max(int(s or 0), int(h or 0)) for k, a, s, h in rows}


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)
