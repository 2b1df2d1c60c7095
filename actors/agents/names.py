"""Readable names of coding-agent sessions, for people (``ssa watches``).

A key like ``agent:main:codex:01a24cad-…`` names nothing a person knows; a
name like ``Codex 01a24cad "Uploader retries" in my-repo (manager)`` says
which tool, which session (with its title in the tool, read from the tool's
files when shown and never stored) and which project. The project comes from the session's working
directory as the catalogs list it (:mod:`actors.agents.sessions`); a key
that is not an adopted session's is shown as it is. Pure but for the
catalog listing the caller does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from actors.agents.sessions import Found
from actors.upstream.names import name_of
from actors.upstream.sources import find_source

__all__ = ["session_name", "titles_of"]


def session_name(key: str, found: Mapping[str, Found], managers: Mapping[str, bool],
                 titles: Mapping[str, str] | None = None) -> str:
    """A person's name for ``key``.

    Args:
        key: the session key.
        found: the catalogs' sessions by key (their working directories).
        managers: the managers' keys (whether each is woken).
        titles: the sessions' names in their tools by key (:func:`titles_of`).

    Returns:
        ``"<Tool> <first 8 of its id> "<title>" in <project folder> (manager)"``
        (no title or folder when unknown), or the key itself for a key that is
        not ``agent:<id>:<source>:<session id>``.
    """
    parts = key.split(":", 3)
    source = find_source(parts[2]) if len(parts) == 4 and parts[0] == "agent" else None
    if source is None:
        return key + (" (manager)" if key in managers else "")
    name = f"{source.title} {parts[3][:8]}"
    title = (titles or {}).get(key)
    if title:
        name += f' "{title}"'
    listed = found.get(key)
    if listed is not None and listed.cwd:
        name += f" in {os.path.basename(listed.cwd.rstrip('/')) or listed.cwd}"
    if key in managers:
        name += " (manager)" if managers[key] else " (manager, no wakes)"
    return name


def titles_of(keys: Iterable[str], found: Mapping[str, Found]) -> dict[str, str]:
    """The names in their tools of those ``keys`` the catalogs list (``found``), read from
    the tools' files now and never stored (:func:`actors.upstream.names.name_of`).

    Caller's thread; blocks on bounded file reads per key; never raises.
    """
    titles = {}
    for key in set(keys):
        listed = found.get(key)
        title = name_of(listed.source, listed.path, listed.thread_id) if listed else None
        if title:
            titles[key] = title
    return titles
