r"""OpenCode messages copied into a forked session (issue 22, class 2).

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

Both are required: the session's title is a fork's (``<title> (fork #N)``,
the shape ``Session.fork``'s title function matches, ``/^(.+) \(fork
#(\d+)\)$/``; OpenCode's automatic titles replace only the default
``New session - …`` / ``Child session - …`` titles, so a fork keeps it), and
the message predates the session row. A clock stepped back after a session was
created therefore never turns a typed prompt into a copy, unless the session
is a fork. Conservative: a fork the person renamed, or a session time that is
missing or not an integer, proves no copy (its copies count, as before).
"""

from __future__ import annotations

import re

import apsw

__all__ = ["FORK_TITLE", "fork_time", "is_copy", "session_fork_time"]

FORK_TITLE = re.compile(r".+ \(fork #\d+\)", re.DOTALL)
"""A title ``Session.fork`` gave (matched whole)."""


def fork_time(title: object, time_created: object) -> int | None:
    """When a forked session was created (epoch ms), or ``None`` when the session
    is not a fork by its title or its time is not an integer.

    Pure, thread-safe; never raises.
    """
    if not isinstance(title, str) or FORK_TITLE.fullmatch(title) is None:
        return None
    if isinstance(time_created, bool) or not isinstance(time_created, int):
        return None
    return time_created


def is_copy(message_created: int, forked_at: int | None) -> bool:
    """Whether a message created at ``message_created`` (epoch ms) predates its forked
    session, created at ``forked_at`` (``None``: not a fork, no copy).

    Pure, thread-safe; never raises.
    """
    return forked_at is not None and message_created < forked_at


def session_fork_time(conn: apsw.Connection, session_id: str) -> int | None:
    """:func:`fork_time` of the ``session`` row ``session_id`` (``None``: no such row).

    Runs one query on ``conn`` in the caller's thread (blocks at most its
    busy timeout).

    Raises:
        apsw.Error: the query failed.
    """
    row = conn.execute("SELECT title, time_created FROM session WHERE id = ?",
                       (session_id,)).fetchone()
    return None if row is None else fork_time(row[0], row[1])
