"""OpenCode messages copied into a forked session (issue 22, class 2).

``opencode --session ID --fork`` (and ``opencode run --fork``, the
``session.fork`` API, the TUI's fork from a message) runs ``Session.fork``
(OpenCode 1.18.33, the ``Session.fork`` function of the shipped
``opencode-linux-x64/bin/opencode`` bundle): it creates a new session
(``Session.createNext``: ``time.created`` now, title ``<title> (fork #N)``,
no ``parentID``) and then writes every message of the source up to the
chosen one into it as ``{...info, sessionID: <new>, id: <new ascending
id>}``: the copy keeps the original ``time.created``. Every message OpenCode
creates in a session itself is stamped after the session row (the same
clock). So a message created before its session was typed in the session it
was copied from, where it counts: ``copied_row``.

The title is not used (a person may rename the fork); only the two times.
Conservative: a session time that is missing or not an integer proves no copy.
"""

from __future__ import annotations

import apsw

__all__ = ["is_copy", "session_created"]


def is_copy(message_created: int, session_created: int | None) -> bool:
    """Whether a message created at ``message_created`` (epoch ms) predates its
    session, created at ``session_created`` (``None``: unknown, no copy).

    Pure, thread-safe; never raises.
    """
    return session_created is not None and message_created < session_created


def session_created(conn: apsw.Connection, session_id: str) -> int | None:
    """The ``session.time_created`` (epoch ms) of ``session_id``, or ``None`` (no such
    row, or not an integer).

    Runs one query on ``conn`` in the caller's thread (blocks at most its
    busy timeout).

    Raises:
        apsw.Error: the query failed.
    """
    row = conn.execute("SELECT time_created FROM session WHERE id = ?", (session_id,)).fetchone()
    if row is None or isinstance(row[0], bool) or not isinstance(row[0], int):
        return None
    return row[0]
