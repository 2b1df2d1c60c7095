"""A Claude Code session's name: its ``/rename`` title, else its summary, else its first words.

Claude Code appends ``{"type": "custom-title", "customTitle": ..., "sessionId":
...}`` when the person renames a session (the latest wins, and Claude Code
writes it again near the file's end so its own listing finds it in the tail),
and older builds write ``{"type": "summary", "summary": ..., "leafUuid": ...}``
rows, the one-line description ``claude --resume`` lists. A session with
neither is named by the first words of its first typed turn
(:mod:`actors.upstream.naming`): a row of this session's own (its ``sessionId``),
never one another session wrote into the file. Read at display time, never stored.

Caller's thread; bounded reads (:data:`~actors.upstream.naming.HEAD` and
:data:`~actors.upstream.naming.TAIL` bytes); never raises.
"""

from __future__ import annotations

import msgspec

from actors.upstream.claude.copyblock import is_session_id
from actors.upstream.claude.reading import READING
from actors.upstream.common import Unit
from actors.upstream.naming import clean_title, first_typed, rows_with

__all__ = ["title"]

_NEEDLES = (b'"custom-title"', b'"summary"')


def title(path: str, thread_id: str) -> str | None:
    """The session's name (see the module docstring), or ``None``.

    Args:
        path: the transcript (``<projects>/<slug>/<session id>.jsonl``).
        thread_id: the session id; a title row another session wrote (a
            conversation continued from it copies its rows) is skipped.
    """
    custom: str | None = None
    summary: str | None = None
    for row in rows_with(path, _NEEDLES):
        owner = row.get("sessionId")
        if owner is not None and owner != thread_id:
            continue
        kind = row.get("type")
        if kind == "custom-title":
            custom = clean_title(row.get("customTitle")) or custom
        elif kind == "summary":
            summary = clean_title(row.get("summary")) or summary
    if custom or summary:
        return custom or summary
    lines = READING.lines
    if lines is None:
        return None
    plain = lines(None)
    if not is_session_id(thread_id):
        # A file not named by a session id (an export, a copy kept under another name)
        # has no known own id (as the copied block's rule says): every row may name it.
        return first_typed(path, plain)

    def own(line: bytes) -> Unit:
        # Only this session's rows: a file holding another session's (a copy, or
        # another session's file put in its place) never names this one.
        try:
            owner = _OWNER.decode(line).sessionId
        except (msgspec.MsgspecError, RecursionError):
            owner = None
        if owner != thread_id:
            return Unit(human=False, reason="other_session")
        return plain(line)

    return first_typed(path, own)


class _Owner(msgspec.Struct):
    sessionId: object = None  # noqa: N815 - Claude Code's key


_OWNER = msgspec.json.Decoder(_Owner)
