"""An Aider chat history's name: the first words of its first typed turn.

Aider keeps no session title: its ``.aider.chat.history.md`` is named by what
the person first typed there (``#### `` lines, decided as a scan decides
them, :func:`~actors.upstream.aider.classify.classify_aider_history`), read
from the file's first :data:`~actors.upstream.naming.HEAD` bytes at display
time and never stored. Caller's thread; bounded read; never raises.
"""

from __future__ import annotations

from actors.upstream.aider.classify import classify_aider_history
from actors.upstream.files import open_regular_file
from actors.upstream.naming import HEAD, first_words

__all__ = ["title"]


def title(path: str, thread_id: str) -> str | None:
    """The first words of the history's first typed turn, or ``None``.

    Args:
        path: the chat history file.
        thread_id: its id (unused: the file is the session).
    """
    try:
        with open_regular_file(path) as file:
            data = file.read(HEAD)
        cut = data.rfind(b"\n")
        decisions = classify_aider_history(data[:cut + 1] if cut >= 0 else b"")
    except Exception:  # an unreadable history has no name to show
        return None
    return next((first_words(unit.text) for _, unit in decisions if unit.human and unit.text),
                None)
