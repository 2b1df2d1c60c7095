"""Readable names of coding-agent sessions, for people (``ssa watches``).

A key like ``agent:main:codex:01a24cad-…`` names nothing a person knows; a
name like ``Codex 01a24cad in my-repo (manager)`` says which tool, which
session and which project. The project comes from the session's working
directory as the catalogs list it (:mod:`actors.agents.sessions`); a key
that is not an adopted session's is shown as it is. Pure but for the
catalog listing the caller does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from actors.agents.sessions import Found
from actors.upstream.sources import find_source

__all__ = ["session_name"]


def session_name(key: str, found: Mapping[str, Found], managers: Mapping[str, bool]) -> str:
    """A person's name for ``key``.

    Args:
        key: the session key.
        found: the catalogs' sessions by key (their working directories).
        managers: the managers' keys (whether each is woken).

    Returns:
        ``"<Tool> <first 8 of its id> in <project folder> (manager)"``, or the
        key itself for a key that is not ``agent:<id>:<source>:<session id>``.
    """
    parts = key.split(":", 3)
    source = find_source(parts[2]) if len(parts) == 4 and parts[0] == "agent" else None
    if source is None:
        return key + (" (manager)" if key in managers else "")
    name = f"{source.title} {parts[3][:8]}"
    listed = found.get(key)
    if listed is not None and listed.cwd:
        name += f" in {os.path.basename(listed.cwd.rstrip('/')) or listed.cwd}"
    if key in managers:
        name += " (manager)" if managers[key] else " (manager, no wakes)"
    return name
