"""A session's name for people, by source: the one entry point the displays call.

``name_of(source, path, thread_id)`` asks the registered source
(:attr:`~actors.upstream.source.Source.session_name`, each source's
``title`` module) for the tool's own title of the session, or else the first
words the person typed in it. The name is read from the tool's files at
call time and never stored or logged: it is what a person typed.
"""

from __future__ import annotations

import logging

from actors.upstream.sources import find_source

__all__ = ["name_of"]

logger = logging.getLogger(__name__)


def name_of(source: str, path: str | None, thread_id: str | None) -> str | None:
    """The session's name in its tool, or ``None`` (unknown source, no path, no title).

    Args:
        source: the source's name (``"claude"``, ``"codex"``, ...).
        path: its transcript (a store source: the store).
        thread_id: the tool's session id.

    Caller's thread; blocks on the source's bounded reads; never raises (a
    failure is logged at debug level, without the path's contents, and gives
    ``None``).
    """
    found = find_source(source)
    if found is None or not path:
        return None
    try:
        return found.session_name(path, thread_id or "")
    except Exception as exc:  # a name is a courtesy: never break a listing or a notice
        logger.debug("no name for a %s session: %s", source, type(exc).__name__)
        return None
