"""Retention: age and row-cap pruning with per-session pruned watermarks (anchor §3.9)."""

from __future__ import annotations

from typing import Any

__all__ = ["PRUNE_BATCH", "prune"]

DAY_MS = 24 * 60 * 60 * 1000


PRUNE_BATCH = 2000
"""Most events (and most cursors) one :func:`prune` call deletes: one short write lock."""

# Stamp each session's pruned watermark before its rows go, so historyGap
# stays exact: only the rows this call deletes count. Heads are never
# created here and only ever increase.
_STAMP = (
    "UPDATE session_state_heads SET pruned_max_sequence = g.max_seq, updated_at = ?"
    " FROM (SELECT d.session_key, d.agent_id, max(d.sequence) AS max_seq"
    " FROM (SELECT session_key, agent_id, sequence FROM session_state_events"
    " WHERE {cond} ORDER BY sequence LIMIT ?) AS d GROUP BY d.session_key, d.agent_id) AS g"
    " WHERE session_state_heads.session_key = g.session_key"
    " AND session_state_heads.agent_id = g.agent_id"
    " AND session_state_heads.pruned_max_sequence < g.max_seq"
)
_DELETE = ("DELETE FROM session_state_events WHERE sequence IN"
           " (SELECT sequence FROM session_state_events WHERE {cond} ORDER BY sequence LIMIT ?)")
_OLDER_THAN, _UP_TO = "occurred_at < ?", "sequence <= ?"


def _delete_events(conn: Any, cond: str, bound: int, now: int, limit: int) -> int:
    conn.execute(_STAMP.format(cond=cond), (now, bound, limit))
    conn.execute(_DELETE.format(cond=cond), (bound, limit))
    return int(conn.changes())


def prune(
    conn: Any, now: int, *, retention_days: int, max_rows: int, limit: int = PRUNE_BATCH,
) -> tuple[int, int]:
    """Prune at most ``limit`` events and ``limit`` cursors inside the caller's transaction.

    Args:
        conn: the write connection, inside a write transaction.
        now: the clock, epoch ms.
        retention_days: events older than this many days go, as do cursors
            untouched for that long with nothing pending (dormant watches
            expire; a watch with an undrained notice stays).
        max_rows: at most this many events remain, the newest.
        limit: the most events, and the most cursors, deleted by this call
            (so one call holds the write lock briefly); oldest first.

    Returns:
        ``(events_deleted, cursors_deleted)``; either equal to ``limit``
        means more may be due (call again, in a new transaction).

    Raises:
        Exception: the driver's error; the caller rolls back.
    """
    cutoff = now - retention_days * DAY_MS
    deleted = _delete_events(conn, _OLDER_THAN, cutoff, now, limit)
    if deleted < limit:
        boundary = conn.execute(
            "SELECT sequence FROM session_state_events ORDER BY sequence DESC LIMIT 1 OFFSET ?",
            (max_rows,),
        ).get
        if boundary is not None:
            deleted += _delete_events(conn, _UP_TO, int(boundary), now, limit - deleted)
    # A dormant watch expires; one whose watcher has not yet drained a pending
    # notice stays, so the notice survives restarts however long it waits.
    conn.execute(
        "DELETE FROM session_watch_cursors WHERE (watcher_session_key, target_session_key,"
        " target_agent_id) IN (SELECT watcher_session_key, target_session_key, target_agent_id"
        " FROM session_watch_cursors WHERE updated_at < ?"
        " AND material_sequence <= last_seen_sequence LIMIT ?)",
        (cutoff, limit),
    )
    cursors_deleted = int(conn.changes())
    # Wakes nobody claimed (their hosts died and none took over) and long
    # lapsed hosting leases: bounded by retention like everything else.
    conn.execute("DELETE FROM session_wakes WHERE id IN (SELECT id FROM session_wakes"
                 " WHERE created_at < ? ORDER BY id LIMIT ?)", (cutoff, limit))
    conn.execute("DELETE FROM session_hosts WHERE (watcher_session_key, host_id) IN"
                 " (SELECT watcher_session_key, host_id FROM session_hosts"
                 " WHERE expires_at < ? LIMIT ?)", (cutoff, limit))
    return deleted, cursors_deleted
