"""A Gemini CLI session's name: its summary, else the first words of its first typed turn.

Gemini CLI keeps a one-line ``summary`` of a session for its ``/resume``
list: in a JSONL session as a metadata update row ``{"$set": {"summary":
...}}`` (the latest wins), in an older session document (``*.json``) as its
top-level ``summary`` (docs/upstream-gemini.md). Without one, the first words
of the first typed turn (:mod:`actors.upstream.naming`). Read at display
time, never stored. Caller's thread; bounded reads; never raises.
"""

from __future__ import annotations

import msgspec

from actors.upstream.files import open_regular_file
from actors.upstream.gemini.docreading import is_document
from actors.upstream.gemini.document import SessionDocument, decode_document
from actors.upstream.gemini.reading import READING
from actors.upstream.naming import clean_title, first_typed, first_words, rows_with

__all__ = ["DOC_BYTES", "title"]


DOC_BYTES = 4 << 20
"""Largest session document read for a name (a larger one has none shown)."""


class _Summary(msgspec.Struct):
    summary: object = None


def _document(path: str) -> str | None:
    try:
        with open_regular_file(path) as file:
            data = file.read(DOC_BYTES + 1)
    except (OSError, ValueError):
        return None
    if len(data) > DOC_BYTES:
        return None
    try:
        summary = clean_title(msgspec.json.decode(data, type=_Summary).summary)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
        return None
    if summary:
        return summary
    doc = decode_document(data)
    if not isinstance(doc, SessionDocument):
        return None
    return next((first_words(m.text) for m in doc.messages if m.typed and m.text), None)


def title(path: str, thread_id: str) -> str | None:
    """The session's name (see the module docstring), or ``None``.

    Args:
        path: the session file (JSONL, or an older ``*.json`` document).
        thread_id: the session id (unused: a file is one session).
    """
    if is_document(path):
        return _document(path)
    summary: str | None = None
    for row in rows_with(path, (b'"summary"',)):
        update = row.get("$set")
        if isinstance(update, dict):
            summary = clean_title(update.get("summary")) or summary
    if summary:
        return summary
    lines = READING.lines
    return first_typed(path, lines(None)) if lines is not None else None
