"""A moment for people: ``2m ago`` for the last week, else a local date and time.

Pure: no I/O; any thread.
"""

from __future__ import annotations

from datetime import datetime

__all__ = ["ago"]

_UNITS = ((86_400_000, "d"), (3_600_000, "h"), (60_000, "m"), (1000, "s"))
_WEEK_MS = 7 * 86_400_000


def ago(ms: int | None, now_ms: int) -> str:
    """``ms`` (epoch ms) relative to ``now_ms``: ``"just now"``, ``"45s ago"``, ``"2m ago"``,
    ``"3h ago"``, ``"6d ago"``; a week or more ago (or in the future by more than a
    minute), the local time ``"2026-11-30 14:02"``; ``"-"`` for ``None`` or 0 (pure)."""
    if not ms:
        return "-"
    age = now_ms - ms
    if age < -60_000 or age >= _WEEK_MS:
        return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M")
    if age < 1000:
        return "just now"
    for size, unit in _UNITS:
        if age >= size:
            return f"{age // size}{unit} ago"
    return "just now"  # pragma: no cover - age >= 1000 always matches "s"
