"""A Pi session's name: its ``session_info`` name, else the first words of its first typed turn.

Pi (badlogic/pi-mono, ``packages/coding-agent/src/core/session-manager.ts``)
names a session with a ``{"type": "session_info", "id", "parentId",
"timestamp", "name"}`` entry (``/name``, ``appendSessionInfo``); its
``getSessionName`` takes the latest entry with a non-empty name. Without one,
the first words of the first typed turn (:mod:`actors.upstream.naming`).
Read at display time, never stored. Caller's thread; bounded reads; never raises.
"""

from __future__ import annotations

from actors.upstream.naming import clean_title, first_typed, rows_with
from actors.upstream.pi.reading import READING

__all__ = ["title"]


def title(path: str, thread_id: str) -> str | None:
    """The session's name (see the module docstring), or ``None``.

    Args:
        path: the session file.
        thread_id: the session id (unused: a file is one session).
    """
    name: str | None = None
    for row in rows_with(path, (b'"session_info"',)):
        if row.get("type") == "session_info":
            name = clean_title(row.get("name")) or name
    if name:
        return name
    lines = READING.lines
    return first_typed(path, lines(None)) if lines is not None else None
