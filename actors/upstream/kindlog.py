"""A row kind no real tool was seen writing: decided not typed, and logged once per process.

Every classifier decides a row kind it does not know ``unknown_kind`` (or its
tool's equivalent: Crush's ``unknown_role``/``unknown_part``), never typed:
precision before recall. :func:`log_unknown_kind` tells the operator, once per
process for each tool and kind, that a tool wrote something this release does
not know (a new client version, usually), so the rule can be added. Only the
kind's name is logged, when it looks like a name; never a row's text.
Thread-safe; any thread.
"""

from __future__ import annotations

import logging
import re
import threading

__all__ = ["MAX_LOGGED_KINDS", "log_unknown_kind"]

MAX_LOGGED_KINDS = 64
"""Most distinct kinds logged per tool (later ones are decided the same, silently)."""

_KIND_NAME = re.compile(r"[A-Za-z0-9_.:$-]{1,64}")
_logged: dict[str, set[str]] = {}
_lock = threading.Lock()


def log_unknown_kind(logger: logging.Logger, tool: str, kind: object) -> bool:
    """Log ``kind`` of ``tool`` at WARNING on ``logger`` the first time this process sees it.

    Args:
        logger: the classifier's own logger (``actors.upstream.<tool>``).
        tool: the tool's title (``"Gemini CLI"``), the once-per-process key with ``kind``.
        kind: the row's kind as read (any value; anything that does not look
            like a name is logged as ``<unprintable>``).

    Returns:
        ``True`` when this call logged it, ``False`` when it was logged before
        (or :data:`MAX_LOGGED_KINDS` kinds of ``tool`` were). Never raises; does
        not block beyond a short lock; any thread.
    """
    name = kind if isinstance(kind, str) and _KIND_NAME.fullmatch(kind) else "<unprintable>"
    with _lock:
        seen = _logged.setdefault(tool, set())
        first = name not in seen and len(seen) < MAX_LOGGED_KINDS
        if first:
            seen.add(name)
    if first:
        logger.warning("%s row kind %r is unknown: decided not typed", tool, name)
    return first
