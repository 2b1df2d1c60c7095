"""A Crush session's name: its title, else the first words of its first typed turn.

Crush keeps a ``title`` on every ``sessions`` row: ``New Session`` when it is
created, replaced by the title its title generator writes (the ``title-<id>``
session) or the one the person gives it. ``New Session`` is no name: the
session is then named by the first words of its first typed turn among its
first :data:`FIRST_MESSAGES` messages, decided as a scan decides them. Read
at display time, never stored. Caller's thread; blocks on SQLite (at most
:data:`BUSY_MS` per statement behind another process's lock); never raises.
"""

from __future__ import annotations

from actors.upstream.crush.classify import (
    classify_crush_rows,
    read_crush_messages,
    read_crush_sessions,
)
from actors.upstream.crush.db import open_store
from actors.upstream.naming import clean_title, first_words

__all__ = ["BUSY_MS", "FIRST_MESSAGES", "PLACEHOLDER", "title"]

BUSY_MS = 200
"""Longest wait behind another process's lock per statement (a name is a courtesy)."""
FIRST_MESSAGES = 50
"""Messages read for the first typed turn of an untitled session."""
PLACEHOLDER = "New Session"
"""Crush's title of a session it has not titled yet."""


def title(path: str, thread_id: str) -> str | None:
    """The session's name (see the module docstring), or ``None``.

    Args:
        path: the ``crush.db`` store.
        thread_id: the session id.
    """
    try:
        conn = open_store(path, BUSY_MS)
        try:
            row = conn.execute("SELECT title FROM sessions WHERE id = ?",
                               (thread_id,)).fetchone()
            stored = row[0] if row else None
            if isinstance(stored, str) and stored.strip() != PLACEHOLDER and clean_title(stored):
                return clean_title(stored)
            sessions = {s.id: s for s in read_crush_sessions(conn) if s.id == thread_id}
            messages = read_crush_messages(conn, session_id=thread_id,
                                           limit=FIRST_MESSAGES).messages
        finally:
            conn.close()
    except Exception:  # an unreadable store has no name to show
        return None
    return next((first_words(unit.text) for _, unit in classify_crush_rows(messages, sessions)
                 if unit.human and unit.text), None)
