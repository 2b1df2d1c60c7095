"""Which adopted session is which: its source, transcript and project directory.

Session keys carry the tool's session id, which tells a person nothing. This
module describes an upstream link in their terms: the tool, the transcript
file (OpenCode: the store and the session id) and, when the transcript says,
the project directory the tool ran in (Claude Code's ``cwd`` field, Codex's
``session_meta.payload.cwd``, Pi's header ``cwd``, OpenCode's
``session.directory``). Paths only: never message text (OpenCode's session
title is written from the first prompt, so it is not shown).

Pure apart from :func:`project_of`, which reads at most :data:`HEAD_BYTES`
of a transcript (or one OpenCode row) in the caller's thread and never
raises.
"""

from __future__ import annotations

import logging

import msgspec

from persistence import UpstreamLink

__all__ = ["HEAD_BYTES", "UpstreamWhere", "describe", "project_of", "where_of"]

logger = logging.getLogger(__name__)

HEAD_BYTES = 65_536
"""Most bytes of a JSONL transcript read to find its project directory."""


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


class _Cwd(msgspec.Struct):
    cwd: str | None = None


class _CodexMeta(msgspec.Struct):
    type: str | None = None
    payload: _Cwd | None = None


_cwd = msgspec.json.Decoder(_Cwd)
_codex = msgspec.json.Decoder(_CodexMeta)


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

    Reads the first :data:`HEAD_BYTES` of a JSONL transcript, or the
    session's row of an OpenCode store. Caller's thread; never raises.
    """
    try:
        if source == "opencode":
            return _opencode_directory(path, thread_id)
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    except Exception as exc:  # an unreadable source just has no project to show
        logger.debug("no project directory for %s %s: %s: %s", source, path,
                     type(exc).__name__, exc)
        return None
    lines = head.split(b"\n")
    if len(head) == HEAD_BYTES:
        lines = lines[:-1]  # the last one may be cut
    for line in lines if source == "claude" else lines[:1]:
        try:
            if source == "codex":
                meta = _codex.decode(line)
                found = meta.payload.cwd if meta.payload is not None else None
            else:
                found = _cwd.decode(line).cwd
        except (msgspec.MsgspecError, RecursionError):
            continue
        if found:
            return found
    return None


def _opencode_directory(path: str, session_id: str) -> str | None:
    from actors.upstream.opencode import open_opencode_db  # noqa: PLC0415

    conn = open_opencode_db(path)
    try:
        row = conn.execute("SELECT directory FROM session WHERE id = ?", (session_id,)).get
    finally:
        conn.close()
    return row if isinstance(row, str) and row else None


def describe(where: UpstreamWhere) -> str:
    """One line for people: ``claude transcript PATH, project DIR`` (pure)."""
    if where.node is not None:
        text = f"{where.source} session {where.thread_id} on node {where.node}"
    elif where.source == "opencode":
        text = f"opencode session {where.thread_id} in {where.path}"
    else:
        text = f"{where.source} transcript {where.path}"
    return text + (f", project {where.project}" if where.project else "")
