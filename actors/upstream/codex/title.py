"""A Codex thread's name: its thread name, else the first words of its first typed turn.

A thread named with ``/rename`` (or named automatically) gets the name in two
places (openai/codex ``codex-rs/core/src/rollout/session_index.rs`` and the
app server's ``thread/name/set``):

* the rollout: ``{"type": "event_msg", "payload": {"type":
  "thread_name_updated", "thread_id": ..., "thread_name": ...}}`` (newer
  builds; a missing ``thread_name`` clears it);
* ``$CODEX_HOME/session_index.jsonl``: append-only ``{"id", "thread_name",
  "updated_at"}`` rows, the newest row of an id wins (older builds write only
  this). ``$CODEX_HOME`` is the folder holding the rollout's ``sessions`` (or
  ``archived_sessions``) folder.

The rollout's latest row decides; else the index's; else the first words of
the first typed turn (:mod:`actors.upstream.naming`). Read at display time,
never stored. Caller's thread; bounded reads; never raises.
"""

from __future__ import annotations

from pathlib import Path

from actors.upstream.codex.reading import READING
from actors.upstream.naming import clean_title, first_typed, rows_with

__all__ = ["INDEX_FILE", "codex_home_of", "title"]

INDEX_FILE = "session_index.jsonl"
"""Codex's thread-name index, in ``$CODEX_HOME``."""
_MISSING = object()


def codex_home_of(path: str) -> Path | None:
    """The ``$CODEX_HOME`` of a rollout at ``path``: the parent of its nearest
    ``sessions`` or ``archived_sessions`` ancestor, or ``None`` (pure)."""
    for parent in Path(path).parents:
        if parent.name in ("sessions", "archived_sessions"):
            return parent.parent
    return None


def _from_rollout(path: str) -> object:
    """The rollout's latest name (``None``: cleared), or ``_MISSING`` when it names none."""
    found: object = _MISSING
    for row in rows_with(path, (b'"thread_name_updated"',)):
        payload = row.get("payload")
        if row.get("type") == "event_msg" and isinstance(payload, dict) \
                and payload.get("type") == "thread_name_updated":
            found = clean_title(payload.get("thread_name"))
    return found


def _from_index(path: str, thread_id: str) -> str | None:
    home = codex_home_of(path)
    if home is None or not thread_id:
        return None
    name: str | None = None
    for row in rows_with(str(home / INDEX_FILE), (thread_id.encode(),)):
        if row.get("id") == thread_id:
            name = clean_title(row.get("thread_name"))
    return name


def title(path: str, thread_id: str) -> str | None:
    """The thread's name (see the module docstring), or ``None``.

    Args:
        path: the rollout file.
        thread_id: the thread id (its ``session_meta`` id).
    """
    found = _from_rollout(path)
    name = found if isinstance(found, str) else None
    if found is _MISSING:
        name = _from_index(path, thread_id)
    if name:
        return name
    lines = READING.lines
    return first_typed(path, lines(None)) if lines is not None else None
