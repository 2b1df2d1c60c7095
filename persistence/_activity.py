"""Where each session's tool stands: the write of :class:`~persistence._messages.NoteActivity`
and its reads (issue 33 item 2).

One row per session in ``session_activity`` (schema version 7): the state the
tool's own hooks last reported (``busy``, ``idle``, ``waiting``, ``finished``,
``failed``), its detail (``permission`` / ``input`` for a wait, the outcome
of a failure) and since when. Plain functions over a connection: the write
runs inside the writer's transaction, the reads in the caller's thread.
"""

from __future__ import annotations

from typing import Any

from persistence._messages import NoteActivity
from persistence.records import WorkerActivity

__all__ = ["note_activity", "read_activities", "read_activity"]

_COLUMNS = "session_key, agent_id, state, detail, since, updated_at"


def note_activity(conn: Any, cmd: NoteActivity) -> bool:
    """Apply ``cmd``; returns whether the stored state or detail changed.

    A note older than the stored one changes nothing; the same state and
    detail again keep the stored ``since`` (the wait began then). The
    writer's thread; blocks on the database.
    """
    key = (cmd.session_key, cmd.agent_id)
    row = conn.execute("SELECT state, detail, since, updated_at FROM session_activity"
                       " WHERE session_key = ? AND agent_id = ?", key).fetchone()
    if row is not None and cmd.at < int(row[3]):
        return False
    same = row is not None and (row[0], row[1]) == (cmd.state, cmd.detail)
    since = int(row[2]) if same and row is not None and not cmd.restart else cmd.at
    conn.execute(
        f"INSERT INTO session_activity ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"  # noqa: S608
        " ON CONFLICT (session_key, agent_id) DO UPDATE SET state = excluded.state,"
        " detail = excluded.detail, since = excluded.since, updated_at = excluded.updated_at",
        (*key, cmd.state, cmd.detail, since, cmd.at))
    return not same or cmd.restart


def _row(row: Any) -> WorkerActivity:
    return WorkerActivity(state=str(row[2]), detail=None if row[3] is None else str(row[3]),
                          since=int(row[4]), updated_at=int(row[5]))


def read_activity(conn: Any, key: str, agent_id: str) -> WorkerActivity | None:
    """The stored activity of one session, or ``None`` (caller's thread; one read)."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM session_activity"  # noqa: S608
                       " WHERE session_key = ? AND agent_id = ?", (key, agent_id)).fetchone()
    return None if row is None else _row(row)


def read_activities(conn: Any, agent_id: str | None = None
                    ) -> dict[tuple[str, str], WorkerActivity]:
    """Every stored activity (of one agent, when given), by ``(key, agent id)``
    (caller's thread; one read)."""
    if agent_id is None:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM session_activity")  # noqa: S608
    else:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM session_activity"  # noqa: S608
                            " WHERE agent_id = ?", (agent_id,))
    return {(str(r[0]), str(r[1])): _row(r) for r in rows}
