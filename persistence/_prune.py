"""Retention: age and row-cap pruning with per-session pruned watermarks (anchor §3.9)."""

from __future__ import annotations

import apsw

__all__ = ["prune"]

DAY_MS = 24 * 60 * 60 * 1000


# Stamp each session's pruned watermark before its rows go, so historyGap
# stays exact. Heads are never created here and only ever increase.
_STAMP_OLDER_THAN = (
    "UPDATE session_state_heads SET pruned_max_sequence = g.max_seq, updated_at = ?"
    " FROM (SELECT session_key, agent_id, max(sequence) AS max_seq FROM session_state_events"
    " WHERE occurred_at < ? GROUP BY session_key, agent_id) AS g"
    " WHERE session_state_heads.session_key = g.session_key"
    " AND session_state_heads.agent_id = g.agent_id"
    " AND session_state_heads.pruned_max_sequence < g.max_seq"
)
_STAMP_UP_TO = _STAMP_OLDER_THAN.replace("WHERE occurred_at < ?", "WHERE sequence <= ?")


def prune(
    conn: apsw.Connection, now: int, *, retention_days: int, max_rows: int
) -> tuple[int, int]:
    """Prune the signal log inside the caller's transaction.

    Args:
        conn: the write connection, inside a transaction.
        now: the clock, epoch ms.
        retention_days: events older than this many days go, as do cursors
            untouched for that long with nothing pending (dormant watches
            expire; a watch with an undrained notice stays).
        max_rows: at most this many events remain, the newest.

    Returns:
        ``(events_deleted, cursors_deleted)``.
    """
    cutoff = now - retention_days * DAY_MS
    conn.execute(_STAMP_OLDER_THAN, (now, cutoff))
    conn.execute("DELETE FROM session_state_events WHERE occurred_at < ?", (cutoff,))
    deleted = conn.changes()
    boundary = conn.execute(
        "SELECT sequence FROM session_state_events ORDER BY sequence DESC LIMIT 1 OFFSET ?",
        (max_rows,),
    ).get
    if boundary is not None:
        conn.execute(_STAMP_UP_TO, (now, boundary))
        conn.execute("DELETE FROM session_state_events WHERE sequence <= ?", (boundary,))
        deleted += conn.changes()
    # A dormant watch expires; one whose watcher has not yet drained a pending
    # notice stays, so the notice survives restarts however long it waits.
    conn.execute(
        "DELETE FROM session_watch_cursors WHERE updated_at < ?"
        " AND material_sequence <= last_seen_sequence",
        (cutoff,),
    )
    cursors_deleted = conn.changes()
    # Wakes nobody claimed (their hosts died and none took over) and long
    # lapsed hosting leases: bounded by retention like everything else.
    conn.execute("DELETE FROM session_wakes WHERE created_at < ?", (cutoff,))
    conn.execute("DELETE FROM session_hosts WHERE expires_at < ?", (cutoff,))
    return deleted, cursors_deleted
