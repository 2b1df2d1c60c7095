"""An OpenCode session's name: its title, else the first words of its first typed turn.

OpenCode keeps a ``title`` on every ``session`` row (``session.sql.ts``): a
placeholder when the session is created (``New session - <ISO time>``,
``Child session - …``), replaced by a generated title after the first
reply, or the one the person gave it. A placeholder is no name: the session
is then named by the first words of its first typed turn, decided as a scan
decides it (:func:`~actors.upstream.opencode.store.classify_db_session`).
JSON-era stores (before 1.2) are named by their first typed turn only. Read
at display time, never stored. Caller's thread; blocks on SQLite (at most
:data:`BUSY_MS` per statement behind another process's lock); never raises.
"""

from __future__ import annotations

import re
from pathlib import Path

from actors.upstream.naming import clean_title, first_words
from actors.upstream.opencode.db import open_opencode_db
from actors.upstream.opencode.legacy_json import classify_json_session, is_json_storage
from actors.upstream.opencode.store import classify_db_session

__all__ = ["BUSY_MS", "PLACEHOLDER", "title"]

BUSY_MS = 200
"""Longest wait behind another process's lock per statement (a name is a courtesy)."""
PLACEHOLDER = re.compile(r"^(New session|Child session) - \d{4}-\d\d-\d\dT")
"""OpenCode's title of a session it has not titled yet."""


def _stored_title(path: str, session_id: str) -> str | None:
    conn = open_opencode_db(path, busy_timeout_ms=BUSY_MS)
    try:
        row = conn.execute("SELECT title FROM session WHERE id = ?", (session_id,)).fetchone()
    finally:
        conn.close()
    found = row[0] if row else None
    return None if not isinstance(found, str) or PLACEHOLDER.match(found) else clean_title(found)


def title(path: str, thread_id: str) -> str | None:
    """The session's name (see the module docstring), or ``None``.

    Args:
        path: the ``opencode.db`` store (or a JSON-era ``storage`` directory).
        thread_id: the session id (``ses_…``).
    """
    try:
        if is_json_storage(Path(path)):
            decisions = classify_json_session(Path(path), thread_id)
        else:
            stored = _stored_title(path, thread_id)
            if stored:
                return stored
            decisions = classify_db_session(path, thread_id)
    except Exception:  # an unreadable store has no name to show
        return None
    return next((first_words(unit.text) for _, unit in decisions if unit.human and unit.text),
                None)
