"""Where a worker stands now: its hooks' last word, corrected by its transcript (pure).

The tool's hooks say when a turn ended, a permission prompt opened or the
session ended (:mod:`actors.agents.activityrun`); no hook is needed to see a
session at work again: its transcript grows. So any stored state but
``busy`` whose transcript changed more than
:data:`BUSY_SLACK_MS` after it (a new prompt, a permission answered, a session
resumed) reads as ``busy`` since that change.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from persistence import WorkerActivity, read_activity, read_link

__all__ = ["BUSY_SLACK_MS", "activity_now", "current_activity", "transcript_mtime_ms"]

BUSY_SLACK_MS = 2_000
"""How long after a turn's end its tool may still write the turn's last rows (Claude
Code's stop-hook summary and turn duration, written within about 0.1 s of its Stop
hooks) without the session counting as busy again."""


def current_activity(stored: WorkerActivity | None,
                     transcript_mtime: int | None) -> WorkerActivity | None:
    """``stored``, or ``busy`` since ``transcript_mtime`` (epoch ms) when the transcript
    changed after a stored pause (see the module); ``None`` when nothing was stored."""
    if stored is None or transcript_mtime is None:
        return stored
    if stored.state != "busy" and transcript_mtime > stored.updated_at + BUSY_SLACK_MS:
        return msgspec.structs.replace(stored, state="busy", detail=None,
                                       since=transcript_mtime, updated_at=transcript_mtime)
    return stored


def transcript_mtime_ms(path: object) -> int | None:
    """The transcript's modification time in epoch ms, or ``None`` (no path, unreadable).
    One ``stat``; caller's thread."""
    if not isinstance(path, str):
        return None
    try:
        return os.stat(path).st_mtime_ns // 1_000_000
    except OSError:
        return None


def activity_now(conn: Any, key: str, agent_id: str) -> WorkerActivity | None:
    """Where session ``key`` stands now: its stored activity, read through ``conn`` (a read
    connection of the signal log), corrected by its transcript's growth
    (:func:`current_activity`); ``None`` when its hooks never said.

    Caller's thread; blocks on one read, and when there is an activity on one more read
    (the session's link) and a ``stat``.

    Raises:
        persistence.StorageError, apsw.Error: the read failed.
    """
    stored = read_activity(conn, key, agent_id)
    if stored is None:
        return None
    link = read_link(conn, key, agent_id)
    path = link.upstream_ref.get("path") if link is not None else None
    return current_activity(stored, transcript_mtime_ms(path))
