"""The names of a gateway's sessions in their tools, for results people read (MCP).

Looks each session's upstream link up (one read of the links) and reads its
title from the tool's files (:mod:`actors.monitors.naming`): never stored.
Caller's thread; blocks on one database read and bounded file reads per
linked session; never raises for a file, raises what the database raises.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actors.monitors.naming import link_name
from persistence import list_links

__all__ = ["session_names"]


def session_names(gw: Any, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """``{(session key, agent id): name}`` for those of ``keys`` that have one.

    Args:
        gw: an open :class:`~actors.Gateway`.
        keys: ``(session key, agent id)`` pairs.

    Raises:
        persistence.StorageError: the links could not be read.
    """
    wanted = set(keys)
    if not wanted:
        return {}
    agents = {agent for _, agent in wanted}
    with gw.read_pool.connection() as conn:
        links = [link for link in list_links(conn, next(iter(agents)) if len(agents) == 1
                                             else None)
                 if (link.session_key, link.agent_id) in wanted]
    names = {(link.session_key, link.agent_id): link_name(link) for link in links}
    return {pair: name for pair, name in names.items() if name}
