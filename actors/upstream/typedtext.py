"""What a person typed, read back from the tool's own transcript on request (issue 33 item 1).

The signal log never holds message text. An upstream ``human_direct_message``
event instead carries a *source pointer* in its payload (``payload["source"]``):

* ``tool``: the source's name (``claude``, ``codex``, ...);
* ``path``: the transcript (line sources) or store the turns were read from;
* ``from`` / ``to``: the byte range of the transcript the scan decided (line
  sources only);
* ``ids``: the store's message ids of the counted turns (OpenCode);
* ``thread``: the upstream session id;
* ``mac``: a keyed check of the other fields, so only a scan of this database
  (which holds the key) makes a pointer that is read;
* ``rows``: one short keyed digest per counted turn, in order:
  the first :data:`ROW_DIGEST_CHARS` hex digits of ``HMAC-SHA256(secret,
  sha256(normalized text))`` with the database's own-text secret
  (:mod:`persistence._secret`). It proves a row read later is the row counted
  then, and, keyed, it tells nothing about the text without the database.

:func:`read_typed` reads the range again at call time with the source's own
classifier and returns the texts of the human rows whose digests match, each
cut to a bound. A transcript that is gone, or no longer holds the counted
rows there, is said so (``status``); a wrong row is never shown. Nothing read
here is stored or logged.

Pure functions apart from :func:`read_typed`, which reads the transcript
(bounded) in the caller's thread.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from actors.upstream.common import Unit, text_hash
from actors.upstream.scanning import ScanResult
from persistence.records import TypedRead, UpstreamLink

__all__ = ["MAX_SPAN_BYTES", "ROW_DIGEST_CHARS", "SpanChanged", "UnitsIn", "payload_of",
           "pointer_of", "read_typed", "row_digest"]

ROW_DIGEST_CHARS = 16
"""Hex digits of each row digest kept in a pointer (64 bits: enough to tell rows apart)."""

MAX_SPAN_BYTES = 16 * 1024 * 1024
"""The largest byte range read back for one event; a longer one is ``too_large``."""

def row_digest(key: Callable[[str], str], digest: str) -> str:
    """A pointer's digest of one turn: ``key(digest)`` cut to :data:`ROW_DIGEST_CHARS` (pure)."""
    return key(digest)[:ROW_DIGEST_CHARS]


def pointer_of(*, tool: str, path: str, thread: str, span: tuple[int, int] | None,
               digests: tuple[str, ...], key: Callable[[str], str],
               ids: tuple[str, ...] = ()) -> dict[str, Any]:
    """The ``payload["source"]`` of an event counting ``digests`` (plain text hashes).

    ``key`` maps a plain :func:`~actors.upstream.common.text_hash` to its keyed
    form. Pure; the result holds no text.
    """
    pointer: dict[str, Any] = {"tool": tool, "path": path, "thread": thread}
    if span is not None:
        pointer["from"], pointer["to"] = span
    if ids:
        pointer["ids"] = list(ids)
    pointer["rows"] = [row_digest(key, d) for d in digests]
    pointer["mac"] = _mac(key, pointer)
    return pointer


def _mac(key: Callable[[str], str], pointer: dict[str, Any]) -> str:
    """The pointer's keyed check: only a scan of this database wrote it (pure).

    Any producer may record a ``human_direct_message`` with any payload; without
    this, one naming a ``source`` could make ``session_status`` read a file of
    its choosing."""
    fields = {k: v for k, v in pointer.items() if k != "mac"}
    plain = hashlib.sha256(msgspec.json.encode(fields, order="sorted")).hexdigest()
    return key(plain)[:ROW_DIGEST_CHARS]


UnitsIn = Callable[[str, str, dict[str, Any], int], Iterator[Unit]]
"""``(path, thread, pointer, cap) -> units``: a source's units over a pointer's range.

Raises ``FileNotFoundError`` / ``OSError`` when the transcript cannot be
read, :class:`SpanChanged` when the range no longer falls on its rows."""


class SpanChanged(Exception):
    """The pointer's range no longer starts and ends on whole rows."""


def _cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:max(limit - 1, 0)] + "…", True


def read_typed(sequence: int, payload: Any, *, key: Callable[[str], str],
               units_in: Callable[[str, str], UnitsIn | None], limit: int) -> TypedRead:
    """Read the typed turns an event counted back from the transcript its pointer names.

    Args:
        sequence: the event's sequence (copied into the answer).
        payload: the event's payload (a dict, or anything else: no pointer).
        key: the database's keying of a plain text hash (see :func:`pointer_of`).
        units_in: ``(tool, path) -> UnitsIn`` of the event's source, or ``None``
            when the source cannot read its turns back.
        limit: most characters per text (at least 1).

    Returns:
        A :class:`TypedRead`; never raises (a failed read is a status). Blocks
        on reading at most :data:`MAX_SPAN_BYTES` (caller's thread).
    """
    pointer = payload.get("source") if isinstance(payload, dict) else None
    if not isinstance(pointer, dict) or not isinstance(pointer.get("path"), str) \
            or not isinstance(pointer.get("rows"), list):
        return TypedRead(sequence=sequence, status="no_pointer")
    if pointer.get("mac") != _mac(key, pointer):
        return TypedRead(sequence=sequence, status="no_pointer")
    path: str = pointer["path"]
    rows = [r for r in pointer["rows"] if isinstance(r, str)]
    start, end = pointer.get("from"), pointer.get("to")
    if isinstance(start, int) and isinstance(end, int) and end - start > MAX_SPAN_BYTES:
        return TypedRead(sequence=sequence, status="too_large", path=path)
    tool = pointer.get("tool")
    reader = units_in(tool, path) if isinstance(tool, str) else None
    if reader is None:
        return TypedRead(sequence=sequence, status="unsupported", path=path)
    thread = pointer.get("thread")
    texts: list[str] = []
    cut = False
    wanted = iter(rows)
    looking = next(wanted, None)
    try:
        for unit in reader(path, thread if isinstance(thread, str) else "", pointer,
                           MAX_SPAN_BYTES):
            if looking is None:
                break
            if not unit.human or unit.text is None:
                continue
            if row_digest(key, unit.echo_hash or text_hash(unit.text)) != looking:
                continue
            text, was_cut = _cut(unit.text, limit)
            texts.append(text + ("…" if unit.echo_hash and not was_cut else ""))
            cut = cut or was_cut or unit.echo_hash is not None
            looking = next(wanted, None)
    except SpanChanged:
        return TypedRead(sequence=sequence, status="changed", path=path)
    except OSError:
        return TypedRead(sequence=sequence, status="gone", path=path)
    if looking is not None:
        return TypedRead(sequence=sequence, status="changed", path=path)
    return TypedRead(sequence=sequence, status="ok", texts=tuple(texts), cut=cut, path=path)


def payload_of(link: UpstreamLink, result: ScanResult,
               key: Callable[[str], str]) -> str | None:
    """A ``human_direct_message``'s payload: ``turns`` (when more than one) and the
    source pointer that reads the typed text back on request (local transcripts).
    Holds no text. Pure."""
    payload: dict[str, Any] = {}
    if result.human_turns > 1:
        payload["turns"] = result.human_turns
    path = link.upstream_ref.get("path")
    if result.typed and isinstance(path, str) and not link.host_id.startswith("node:"):
        payload["source"] = pointer_of(tool=link.source, path=path, thread=link.thread_id,
                                       span=result.span, digests=result.typed, key=key,
                                       ids=result.typed_ids)
    return msgspec.json.encode(payload).decode() if payload else None
