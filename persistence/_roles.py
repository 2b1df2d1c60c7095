"""Which sessions are managers: the write of :class:`~persistence._messages.SetRole`.

A session with a row in ``session_roles`` is a manager (``wake``: whether it
is woken when a notice opens for it); one without is a worker, which is
never notified and never woken. Plain functions over a connection inside
the writer's transaction, like :mod:`persistence._writes`.
"""

from __future__ import annotations

from typing import Any

from persistence._messages import SetRole

__all__ = ["set_role"]


def set_role(conn: Any, cmd: SetRole, now: int) -> bool:
    """Apply ``cmd``; returns whether the session's role or wake setting changed.

    ``updated_at`` stays when a manager only turns its wakes on or off: it is
    when the session became a manager. Becoming a worker deletes the role row
    and every cursor the session holds as a watcher (their open notices go
    with them: a worker is told nothing).
    The writer's thread; blocks on the database.
    """
    key = (cmd.session_key, cmd.agent_id)
    row = conn.execute("SELECT wake FROM session_roles WHERE session_key = ? AND agent_id = ?",
                       key).fetchone()
    if cmd.role == "worker":
        conn.execute("DELETE FROM session_roles WHERE session_key = ? AND agent_id = ?", key)
        conn.execute("DELETE FROM session_watch_cursors WHERE watcher_session_key = ?",
                     (cmd.session_key,))
        return row is not None
    wake = 1 if cmd.wake else 0
    if row is not None and int(row[0]) == wake:
        return False
    conn.execute("INSERT INTO session_roles (session_key, agent_id, role, wake, updated_at)"
                 " VALUES (?, ?, 'manager', ?, ?) ON CONFLICT (session_key, agent_id)"
                 " DO UPDATE SET wake = excluded.wake",
                 (*key, wake, now))
    return True
