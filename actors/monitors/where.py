"""Which adopted session is which: its source, transcript and project directory.

Session keys carry the tool's session id, which tells a person nothing. This
module describes an upstream link in their terms: the tool, the transcript
file (a store source: the store and the session id) and, when the source
says, the project directory the tool ran in (each source's reading knows
where: a ``cwd`` field of the transcript's head, a store's session row).
Paths only: never message text.

Pure apart from :func:`project_of`, which asks the source's reading (a
bounded read) in the caller's thread and never raises.
"""

from __future__ import annotations

import logging

import msgspec

from actors.upstream.sources import find_source
from persistence import UpstreamLink

__all__ = ["UpstreamWhere", "describe", "in_store", "project_of", "where_of"]

logger = logging.getLogger(__name__)

class UpstreamWhere(msgspec.Struct, frozen=True, kw_only=True, rename="camel",
                    omit_defaults=True):
    """Where an adopted session lives, in a person's terms (JSON: camelCase, no nulls).

    Attributes:
        source: ``"claude"``, ``"codex"``, ``"opencode"`` or ``"pi"``.
        path: the transcript file (OpenCode: the ``opencode.db`` store).
        thread_id: the tool's own session or thread id.
        project: the directory the tool ran in, when known.
        node: the paired node, for a Claude Code session read through one.
    """

    source: str
    path: str | None = None
    thread_id: str | None = None
    project: str | None = None
    node: str | None = None


def where_of(link: UpstreamLink, *, project: bool = True) -> UpstreamWhere:
    """Describe ``link``; with ``project``, look its project directory up (bounded read).

    Any thread; blocks on :func:`project_of` only when ``project``; never raises.
    """
    ref = link.upstream_ref
    path = ref.get("path")
    node = ref.get("nodeId") if link.host_id.startswith("node:") else None
    found = (project_of(link.source, path, link.thread_id)
             if project and isinstance(path, str) else None)
    return UpstreamWhere(source=link.source, path=path if isinstance(path, str) else None,
                         thread_id=link.thread_id or None, project=found,
                         node=node if isinstance(node, str) else None)


def project_of(source: str, path: str, thread_id: str) -> str | None:
    """The directory the session's tool ran in, or ``None`` when the transcript does not say.

    Asks the source's reading (a JSONL transcript's head, a store's session
    row). Caller's thread; never raises.
    """
    found = find_source(source)
    if found is None:
        return None
    try:
        return found.reading().project(path, thread_id)
    except Exception as exc:  # an unreadable source just has no project to show
        logger.debug("no project directory for %s %s: %s: %s", source, path,
                     type(exc).__name__, exc)
        return None


def describe(where: UpstreamWhere) -> str:
    """One line for people: ``claude transcript PATH, project DIR`` (pure)."""
    if where.node is not None:
        text = f"{where.source} session {where.thread_id} on node {where.node}"
    elif in_store(where.source):
        text = f"{where.source} session {where.thread_id} in {where.path}"
    else:
        text = f"{where.source} transcript {where.path}"
    return text + (f", project {where.project}" if where.project else "")


def in_store(source: str) -> bool:
    """Whether ``source``'s sessions are rows of a store (pure)."""
    found = find_source(source)
    return found is not None and found.holds == "store"
