"""A Qwen Code session's name: the first words of its first typed turn.

Qwen Code's session files hold no title row of their own, so a session is
named by what the person first typed (:mod:`actors.upstream.naming`). Read at
display time, never stored. Caller's thread; bounded reads; never raises.
"""

from __future__ import annotations

from actors.upstream.naming import first_typed
from actors.upstream.qwen.reading import READING

__all__ = ["title"]


def title(path: str, thread_id: str) -> str | None:
    """The first words of the session's first typed turn, or ``None``.

    Args:
        path: the session file.
        thread_id: the session id (unused: a file is one session).
    """
    lines = READING.lines
    return first_typed(path, lines(None)) if lines is not None else None
