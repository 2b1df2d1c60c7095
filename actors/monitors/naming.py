"""An adopted session's name in its tool, from its upstream link (read now, never stored).

Joins a link (:mod:`actors.monitors.where`) to the source's title reader
(:func:`actors.upstream.names.name_of`). A paired node's files are not on
this machine: such a session has no name here.

Caller's thread; blocks on the source's bounded reads; never raises.
"""

from __future__ import annotations

from actors.monitors.where import UpstreamWhere, where_of
from actors.upstream.names import name_of
from persistence import UpstreamLink

__all__ = ["link_name", "where_name"]


def where_name(where: UpstreamWhere | None) -> str | None:
    """The name of the session ``where`` describes, or ``None`` (no link, a node's, none)."""
    if where is None or where.node is not None or not where.path:
        return None
    return name_of(where.source, where.path, where.thread_id)


def link_name(link: UpstreamLink | None) -> str | None:
    """The name of ``link``'s session, or ``None`` (no link, a paired node's, none)."""
    if link is None or link.host_id.startswith("node:"):
        return None
    return where_name(where_of(link, project=False))
