"""Write transactions of the signal log, as plain functions over a connection.

Each function runs inside a transaction (or savepoint) its caller opened and
returns a result struct; none of them commits. They are called only from the
persistence actor's thread, or directly by tests and benchmark baselines.
"""

from __future__ import annotations

from typing import Any

from persistence import cursors
from persistence._leases import route_wake
from persistence._messages import (
    Acknowledge,
    AckOutcome,
    DeleteOutcome,
    DeleteSession,
    NoticeDescriptor,
    RecordEvent,
    RecordOutcome,
    RegisterOutcome,
    RegisterWatch,
    ResetWatcher,
    SweepOutcome,
    Unwatch,
    UpsertSession,
)
from persistence._reads import event_by_dedupe_key, event_from_row, read_entry
from persistence.keys import agent_id_of, is_subagent_key
from persistence.kinds import NOTIFY_BY_KIND
from persistence.shaping import shape_record

__all__ = [
    "OCCURRED_AT_MAX_SKEW_MS",
    "acknowledge",
    "clamp_occurred_at",
    "delete_session",
    "record_event",
    "register_watch",
    "reset_watcher",
    "sweep_cursors",
    "unwatch",
    "upsert_session",
    "wake_eligible",
]

OCCURRED_AT_MAX_SKEW_MS = 24 * 60 * 60 * 1000
"""How far in the past ``occurred_at`` may lie, in ms (anchor §2.5)."""

_SELECT_TARGET_CURSORS = (
    "SELECT watcher_session_key, last_seen_sequence, notified_sequence, material_sequence,"
    " provenance FROM session_watch_cursors"
    " WHERE target_session_key = ? AND target_agent_id = ?"
)
_SELECT_CURSOR = (
    "SELECT last_seen_sequence, notified_sequence, material_sequence, provenance"
    " FROM session_watch_cursors"
    " WHERE watcher_session_key = ? AND target_session_key = ? AND target_agent_id = ?"
)
_UPSERT_CURSOR = (
    "INSERT INTO session_watch_cursors (watcher_session_key, target_session_key,"
    " target_agent_id, last_seen_sequence, notified_sequence, material_sequence, provenance,"
    " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (watcher_session_key, target_session_key, target_agent_id) DO UPDATE SET"
    " last_seen_sequence = excluded.last_seen_sequence,"
    " notified_sequence = excluded.notified_sequence,"
    " material_sequence = excluded.material_sequence,"
    " provenance = excluded.provenance, updated_at = excluded.updated_at"
)
_ENSURE_SESSION = (
    "INSERT INTO sessions (session_key, agent_id, created_at, updated_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (session_key, agent_id) DO NOTHING"
)


def clamp_occurred_at(occurred_at: int | None, now: int) -> int:
    """Clamp an event time to ``[now - 24 h, now]`` (anchor §3.2 step 1), in ms."""
    if occurred_at is None:
        return now
    return min(max(occurred_at, now - OCCURRED_AT_MAX_SKEW_MS), now)


_LATEST_TIME = (
    "SELECT occurred_at FROM session_state_events WHERE session_key = ? AND agent_id = ?"
    " ORDER BY sequence DESC LIMIT 1"
)


def _latest_time(conn: Any, target: tuple[str, str]) -> int:
    """The time of the session's newest event, in ms (0: none kept).

    An event's time is when its change happened, and a change cannot happen
    before the state it changes: an upstream turn stamped by its transcript
    (the person pressed Enter, then the prompt hook adopted the session, then
    the tool wrote the row) would otherwise be older than the ``adopted``
    before it, and writers on hosts whose clocks differ (PostgreSQL) or a
    clock stepped back would interleave. So times never go backwards along
    one session's state versions: an earlier one is lifted to its
    predecessor's. One index seek (``session_key, agent_id, sequence``).
    """
    latest = conn.execute(_LATEST_TIME, target).get
    return int(latest) if latest is not None else 0


def _write_cursor(
    conn: Any,
    watcher: str,
    target: tuple[str, str],
    cursor: cursors.Cursor,
    provenance: str,
    now: int,
) -> None:
    conn.execute(
        _UPSERT_CURSOR,
        (watcher, target[0], target[1], cursor.last_seen, cursor.notified, cursor.material,
         provenance, now),
    )


def _ensure_session(conn: Any, key: str, agent_id: str, now: int) -> None:
    conn.execute(_ENSURE_SESSION, (key, agent_id, now, now))


def _head(conn: Any, key: str, agent_id: str) -> int:
    value = conn.execute(
        "SELECT last_sequence FROM session_state_heads WHERE session_key = ? AND agent_id = ?",
        (key, agent_id),
    ).get
    return int(value) if value is not None else 0


def wake_eligible(watcher: str, provenance: str) -> bool:
    """Whether a newly opened notice wakes its watcher (seed; anchor §3.5).

    Ambient (queue-only) notices and nested ``subagent:`` watchers never wake.
    """
    return provenance != "ambient-group" and not is_subagent_key(watcher)


def _descriptor(
    watcher: str, target: tuple[str, str], last_seen: int, provenance: str, version: int,
    *, pending: bool = True, wake: bool = False,
) -> NoticeDescriptor:
    return NoticeDescriptor(
        watcher_key=watcher,
        target_key=target[0],
        target_agent_id=target[1],
        last_seen=last_seen,
        queue_only=provenance == "ambient-group",
        pending=pending,
        version=version,
        wake=wake,
    )


def _opened(conn: Any, watcher: str, target: tuple[str, str], last_seen: int,
            provenance: str, version: int, host: str | None, now: int) -> NoticeDescriptor:
    """The descriptor of a notice this transaction opened, with its wake routed."""
    wake = wake_eligible(watcher, provenance) and route_wake(
        conn, watcher, host, now, (target[0], target[1], last_seen))
    return _descriptor(watcher, target, last_seen, provenance, version, wake=wake)


def upsert_session(conn: Any, cmd: UpsertSession, now: int) -> None:
    """Create the session entry or update its non-``None`` fields."""
    conn.execute(
        "INSERT INTO sessions (session_key, agent_id, session_id, spawned_by, chat_type,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (session_key, agent_id) DO UPDATE SET"
        " session_id = coalesce(excluded.session_id, sessions.session_id),"
        " spawned_by = coalesce(excluded.spawned_by, sessions.spawned_by),"
        " chat_type = coalesce(excluded.chat_type, sessions.chat_type),"
        " updated_at = excluded.updated_at",
        (cmd.session_key, cmd.agent_id, cmd.session_id, cmd.spawned_by, cmd.chat_type, now, now),
    )


def record_event(
    conn: Any, cmd: RecordEvent, now: int, version: int, *, host: str | None = None,
) -> RecordOutcome:
    """Insert an event, bump the head and update cursors as one unit (anchor §3.2).

    Args:
        conn: the write connection, inside an open transaction.
        cmd: the event and its watcher hints; the session's stored entry
            shapes it first (``cmd.shape``).
        now: the clock, epoch ms.
        version: commit-order stamp for the notices this produces.
        host: this process's host id, for routing wakes (``None``: wake here
            unless another process hosts the watcher).

    Returns:
        The stored event (or the session's existing one on a ``dedupe_key``
        repeat, which changes nothing and notifies nobody; dedupe keys are
        scoped to the session, so a reused run id never swallows another
        session's event) with one notice descriptor per
        watcher whose cursor it touched. ``event`` is ``None`` when
        ``only_if_watched`` found no watcher.

    Raises:
        Exception: the driver's error (SQLite or PostgreSQL); the caller rolls the savepoint back.
    """
    target = (cmd.session_key, cmd.agent_id)
    entry_read, entry = False, None
    if cmd.shape != "none" or cmd.session_id is None:
        entry_read, entry = True, read_entry(conn, *target)
        cmd = shape_record(cmd, entry)
    if cmd.ambient_watcher is not None:
        _register(conn, cmd.ambient_watcher, target, "ambient-group", now)
    target_rows = {
        str(w): (cursors.Cursor(int(ls), int(nt), int(mt)), str(prov))
        for w, ls, nt, mt, prov in conn.execute(_SELECT_TARGET_CURSORS, target)
    }
    if cmd.only_if_watched and not cmd.watcher_keys and not target_rows:
        return RecordOutcome(event=None, inserted=False)
    occurred_at = max(clamp_occurred_at(cmd.occurred_at, now),
                      _latest_time(conn, target))  # never before the state it follows
    sequence = conn.execute(
        "INSERT INTO session_state_events (dedupe_key, session_key, agent_id, session_id, kind,"
        " actor_type, actor_id, run_id, occurred_at, summary, payload_json)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (session_key, agent_id, dedupe_key) DO NOTHING RETURNING sequence",
        (cmd.dedupe_key, cmd.session_key, cmd.agent_id, cmd.session_id, cmd.kind,
         cmd.actor_type, cmd.actor_id, cmd.run_id, occurred_at, cmd.summary, cmd.payload_json),
    ).get
    if sequence is None:
        existing = (event_by_dedupe_key(conn, cmd.session_key, cmd.agent_id, cmd.dedupe_key)
                    if cmd.dedupe_key else None)
        return RecordOutcome(event=existing, inserted=False)
    conn.execute(
        "INSERT INTO session_state_heads (session_key, agent_id, last_sequence, updated_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (session_key, agent_id) DO UPDATE SET"
        " last_sequence = excluded.last_sequence, updated_at = excluded.updated_at",
        (cmd.session_key, cmd.agent_id, sequence, now),
    )
    unchanged_entry = entry_read and entry is not None and (
        cmd.session_id in (None, entry.session_id)
        and cmd.spawned_by in (None, entry.spawned_by))
    if not unchanged_entry:  # the upsert below would be a no-op otherwise
        conn.execute(
            "INSERT INTO sessions (session_key, agent_id, session_id, spawned_by, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_key, agent_id) DO"
            " UPDATE SET session_id = coalesce(excluded.session_id, sessions.session_id),"
            " spawned_by = coalesce(excluded.spawned_by, sessions.spawned_by)",
            (cmd.session_key, cmd.agent_id, cmd.session_id, cmd.spawned_by, now, now),
        )
    notices = _touch_cursors(conn, cmd, target, target_rows, int(sequence), now, version, host)
    # The stored row is exactly these values: build the event without reading it back.
    event = event_from_row((int(sequence), cmd.session_key, cmd.agent_id, cmd.session_id,
                            cmd.kind, cmd.actor_type, cmd.actor_id, cmd.run_id, occurred_at,
                            cmd.summary, cmd.payload_json))
    return RecordOutcome(event=event, inserted=True, notices=notices)


def _touch_cursors(
    conn: Any,
    cmd: RecordEvent,
    target: tuple[str, str],
    target_rows: dict[str, tuple[cursors.Cursor, str]],
    sequence: int,
    now: int,
    version: int,
    host: str | None,
) -> tuple[NoticeDescriptor, ...]:
    notices: list[NoticeDescriptor] = []
    if cmd.kind == "child_spawned":
        for watcher in dict.fromkeys(cmd.watcher_keys):
            previous = target_rows.get(watcher)
            _write_cursor(conn, watcher, target, cursors.seed(sequence), "explicit", now)
            _ensure_session(conn, watcher, agent_id_of(watcher), now)
            if previous is not None and cursors.is_pending(previous[0]):
                notices.append(_descriptor(watcher, target, sequence, "explicit", version,
                                           pending=False))
        return tuple(notices)
    if not NOTIFY_BY_KIND[cmd.kind]:
        return ()
    for watcher in dict.fromkeys((*cmd.watcher_keys, *target_rows)):
        if watcher == cmd.actor_id:
            continue  # self-suppression: an actor never hears of its own event
        previous = target_rows.get(watcher)
        current, provenance = previous if previous else (None, "explicit")
        updated = cursors.material_update(current, sequence)
        _write_cursor(conn, watcher, target, updated, provenance, now)
        if previous is None:
            _ensure_session(conn, watcher, agent_id_of(watcher), now)
        if current is not None and cursors.is_pending(current):
            continue  # the open notice covers it: its text (and wake) stay as they are
        notices.append(_opened(conn, watcher, target, updated.last_seen, provenance, version,
                               host, now))
    return tuple(notices)


_NOTIFYING = tuple(kind for kind, notifies in NOTIFY_BY_KIND.items() if notifies)
_KIND_PLACEHOLDERS = ", ".join("?" * len(_NOTIFYING))
_MATERIAL_SINCE = (
    "SELECT max(sequence) FROM session_state_events WHERE session_key = ? AND agent_id = ?"  # noqa: S608 - ? placeholders only
    f" AND sequence > ? AND kind IN ({_KIND_PLACEHOLDERS})"
    " AND (actor_id IS NULL OR actor_id != ?)")
"""The newest notify-eligible event after a version not caused by the watcher (``?`` only)."""


def _register(
    conn: Any, watcher: str, target: tuple[str, str], provenance: str, now: int,
    head: int | None = None, since: int | None = None,
) -> bool:
    row = conn.execute(_SELECT_CURSOR, (watcher, *target)).fetchone()
    if row is not None:
        if provenance == "explicit":
            # Promote an ambient watch and refresh its activity time; never
            # touch the watermarks, so a pending notice survives (anchor §3.11).
            conn.execute(
                "UPDATE session_watch_cursors SET provenance = 'explicit', updated_at = ?"
                " WHERE watcher_session_key = ? AND target_session_key = ?"
                " AND target_agent_id = ?",
                (now, watcher, *target),
            )
        return False
    if head is None:
        head = _head(conn, *target)
    cursor = cursors.seed(head)
    if since is not None and since < head:
        # As if registered at ``since``: the notify-eligible events after it that
        # another actor caused open one notice covering them all.
        material = conn.execute(_MATERIAL_SINCE, (*target, since, *_NOTIFYING, watcher)
                                ).fetchone()
        if material is not None and material[0] is not None:
            cursor = cursors.Cursor(since, int(material[0]), int(material[0]))
    _write_cursor(conn, watcher, target, cursor, provenance, now)
    _ensure_session(conn, watcher, agent_id_of(watcher), now)
    return True


def register_watch(
    conn: Any, cmd: RegisterWatch, now: int, version: int, *,
    head: int | None = None,
) -> RegisterOutcome:
    """Register a watch at the target's current head (anchor §3.11, §3.12).

    Re-registration keeps the existing cursor (a pending notice survives); an
    explicit registration promotes an ambient one, an ambient one never
    downgrades an explicit one. Returns ``registered=True`` either way. ``head``:
    the target's head if the caller knows it (it just recorded its newest event).
    """
    _register(conn, cmd.watcher_key, (cmd.target_key, cmd.target_agent_id), cmd.provenance, now,
              head, cmd.since)
    return RegisterOutcome(registered=True, version=version)


def acknowledge(
    conn: Any, cmd: Acknowledge, now: int, version: int, *,
    host: str | None = None,
) -> AckOutcome:
    """Acknowledge drained notices of ``cmd.watcher_key`` (anchor §3.7).

    Each named cursor moves ``last_seen`` to its frozen watermark; a pair that
    received material events in between gets exactly one follow-up
    descriptor. Missing cursors are skipped, and so are cursors whose open
    notice is no longer the one the watcher was shown (``cmd.last_seen``):
    the cursor is read inside this transaction, so two processes draining
    one watcher at once never both consume a notice.
    """
    notices: list[NoticeDescriptor] = []
    acknowledged: list[tuple[str, str]] = []
    expected = dict(zip(cmd.targets, cmd.last_seen, strict=False)) if cmd.last_seen else {}
    for target in dict.fromkeys(cmd.targets):
        row = conn.execute(_SELECT_CURSOR, (cmd.watcher_key, *target)).fetchone()
        if row is None:
            continue
        current = cursors.Cursor(int(row[0]), int(row[1]), int(row[2]))
        if expected and (current.last_seen != expected.get(target)
                         or not cursors.is_pending(current)):
            continue  # consumed (or replaced) elsewhere since it was shown
        updated, follow_up = cursors.acknowledge(current)
        _write_cursor(conn, cmd.watcher_key, target, updated, str(row[3]), now)
        acknowledged.append(target)
        if follow_up is not None:
            notices.append(_opened(conn, cmd.watcher_key, target, follow_up, str(row[3]),
                                   version, host, now))
    return AckOutcome(version=version, notices=tuple(notices),
                      acknowledged=tuple(acknowledged))


def sweep_cursors(
    conn: Any, watcher_key: str | None, now: int, version: int, *,
    host: str | None = None,
) -> SweepOutcome:
    """Re-freeze every pending cursor and describe its notice (anchor §3.8).

    Only cursors whose watcher session still exists are swept. With
    ``watcher_key`` only that watcher's cursors are considered. Each
    descriptor counts as newly opened (the restart sweep wakes, §3.8 step
    4), so run it only when no other process has the log open: another
    process may be between showing a notice and acknowledging it.
    """
    sql = (
        "SELECT c.watcher_session_key, c.target_session_key, c.target_agent_id,"
        " c.last_seen_sequence, c.notified_sequence, c.material_sequence, c.provenance"
        " FROM session_watch_cursors AS c"
        " WHERE c.material_sequence > c.last_seen_sequence"
        " AND EXISTS (SELECT 1 FROM sessions AS s WHERE s.session_key = c.watcher_session_key)"
    )
    params: tuple[str, ...] = ()
    if watcher_key is not None:
        sql += " AND c.watcher_session_key = ?"
        params = (watcher_key,)
    rows = list(conn.execute(sql, params))
    notices: list[NoticeDescriptor] = []
    for watcher, tkey, tagent, ls, nt, mt, prov in rows:
        target = (str(tkey), str(tagent))
        updated = cursors.refreeze(cursors.Cursor(int(ls), int(nt), int(mt)))
        _write_cursor(conn, str(watcher), target, updated, str(prov), now)
        notices.append(_opened(conn, str(watcher), target, updated.last_seen, str(prov),
                               version, host, now))
    return SweepOutcome(notices=tuple(notices))


def reset_watcher(conn: Any, cmd: ResetWatcher, now: int) -> None:
    """Drop the cursors ``cmd.session_key`` holds as a watcher (anchor §3.13).

    Its own events, head and the cursors where it is the target stay.
    """
    conn.execute(
        "DELETE FROM session_watch_cursors WHERE watcher_session_key = ?", (cmd.session_key,)
    )
    upsert_session(
        conn, UpsertSession(session_key=cmd.session_key, agent_id=cmd.agent_id,
                            session_id=cmd.session_id), now,
    )


def unwatch(conn: Any, cmd: Unwatch) -> bool:
    """Drop one watcher/target cursor (its open notice goes with it); whether one existed."""
    conn.execute(
        "DELETE FROM session_watch_cursors WHERE watcher_session_key = ?"
        " AND target_session_key = ? AND target_agent_id = ?",
        (cmd.watcher_key, cmd.target_key, cmd.target_agent_id))
    return int(conn.changes()) > 0


def delete_session(conn: Any, cmd: DeleteSession, version: int) -> DeleteOutcome:
    """Drop a session's events, head, entry and every cursor naming it (anchor §3.13).

    Returns the watchers whose cursor on the session was dropped, so their
    queued notices about it can be withdrawn.
    """
    target = (cmd.session_key, cmd.agent_id)
    watchers = tuple(
        str(w) for (w,) in conn.execute(
            "SELECT watcher_session_key FROM session_watch_cursors"
            " WHERE target_session_key = ? AND target_agent_id = ?", target)
    )
    conn.execute(
        "DELETE FROM session_watch_cursors WHERE target_session_key = ? AND target_agent_id = ?",
        target,
    )
    if agent_id_of(cmd.session_key) == cmd.agent_id:
        conn.execute(
            "DELETE FROM session_watch_cursors WHERE watcher_session_key = ?", (cmd.session_key,)
        )
    for table in ("session_state_events", "session_state_heads", "sessions",
                  "session_upstream_links", "session_own_texts", "session_roles",
                  "session_activity"):
        conn.execute(f"DELETE FROM {table} WHERE session_key = ? AND agent_id = ?", target)  # noqa: S608
    return DeleteOutcome(version=version, watchers=watchers)
