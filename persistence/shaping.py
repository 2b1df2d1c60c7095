"""How a session's entry shapes a record command (pure; anchor §3.6, §3.12)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from persistence._messages import RecordEvent
from persistence._reads import EntryRow
from persistence.keys import is_agent_qualified, is_group_key, main_session_key

__all__ = ["Shape", "shape_record"]

Shape = Literal["none", "entry-watchers", "human", "human-per-group"]
"""How the entry shapes a record: see :func:`shape_record`."""


def shape_record(command: RecordEvent, entry: EntryRow | None) -> RecordEvent:
    """Fill the entry-dependent parts of ``command`` according to ``command.shape``.

    * ``"entry-watchers"``: the spawn parent (if agent-qualified) is a
      producer watcher.
    * ``"human"`` and ``"human-per-group"`` (a human turn): a session with a
      spawn parent always records and tells the parent; one without records
      only when watched. Under ``"human-per-group"`` a group or channel
      session without a parent first gets the agent's main session as an
      ambient watcher, so the first human turn already reaches it.
    * ``"none"``: unchanged.

    In every shape a missing ``session_id`` is taken from the entry. Pure,
    thread-safe, non-blocking.
    """
    changes: dict[str, Any] = {}
    parent = entry.spawned_by if entry else None
    if parent == command.session_key:
        parent = None  # a session is never its own watcher
    if command.session_id is None and entry is not None and entry.session_id is not None:
        changes["session_id"] = entry.session_id
    if command.shape != "none" and parent and is_agent_qualified(parent):
        changes["watcher_keys"] = (*command.watcher_keys, parent)
    if command.shape in ("human", "human-per-group"):
        changes["only_if_watched"] = not parent
        chat_type = entry.chat_type if entry else None
        if (command.shape == "human-per-group" and not parent
                and is_group_key(command.session_key, chat_type)):
            watcher = main_session_key(command.agent_id)
            if watcher != command.session_key:
                changes["ambient_watcher"] = watcher
    return msgspec.structs.replace(command, **changes) if changes else command
