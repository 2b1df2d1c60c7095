"""Aider's heavy half: its :class:`~actors.upstream.reading.Reading`, around
:func:`actors.upstream.aider.classify.read_aider_history` from a byte offset.

Aider's history is Markdown appended to, but a unit is a *block* of lines and
its decision needs the session it is in (the logged command line) and the
block before it (a chat command's echo): the :class:`~actors.upstream.aider.classify.AiderCursor`.
The scan marker therefore keeps the cursor next to the usual
``{"offset", "inode", "epoch", "check"}``; a file that shrank, changed inode
or no longer holds the bytes before the marker is re-baselined at its end
without counting (``epoch`` moves on).

A new link's cursor is the state at the file's end: its last session is read
from its header (at most :data:`TAIL_BYTES` back; an older header is searched
for backward and its command line read). Runs in the caller's
thread; every read is bounded; ``baseline`` and ``scan`` never raise.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import msgspec

from actors.errors import SessionStateError
from actors.upstream.aider.classify import (
    WRITE_SETTLE_MS,
    AiderCursor,
    AiderRead,
    AiderSession,
    classify_aider_history,
    past_long_line,
    read_aider_history,
)
from actors.upstream.aider.kit import sample, type_turn
from actors.upstream.aider.paths import history_thread_id
from actors.upstream.files import CHECK_BYTES, check_of, file_state, read_range
from actors.upstream.reading import Baseline, Reading, ScanContext, readable
from actors.upstream.scanning import ScanResult, StoreHint, count_turns

__all__ = ["CLASSIFY_LIMIT", "READING", "TAIL_BYTES", "cursor_at_end"]

TAIL_BYTES = 16 << 20
"""How much of a history's end a new link reads to learn the state there."""
SEARCH_PIECE = 4 << 20
"""Bytes read at a time when the last session header is further back than the tail."""
HEAD_BYTES = 256 << 10
"""Bytes read from such a header for the session's command line."""
CLASSIFY_LIMIT = 256 << 20
"""The largest history ``ssa classify`` reads."""
_HEADER = b"\n# aider chat started at "


def _marker(cursor: AiderCursor, inode: int, epoch: int, check: bytes) -> dict[str, Any]:
    return {"offset": cursor.offset, "inode": inode, "epoch": epoch, "check": check_of(check),
            "cursor": msgspec.to_builtins(cursor)}


def cursor_at_end(path: str, size: int) -> tuple[AiderCursor, bytes] | None:
    """The cursor after the file's last complete block, and the check bytes before it.

    Reads the last session from its header (at most :data:`TAIL_BYTES`); a
    session whose header is further back is found by searching backward in
    :data:`SEARCH_PIECE` pieces, its command line read from the header's first
    :data:`HEAD_BYTES`, and the tail read from a line start with that session.
    ``None`` when the file cannot be read. Never raises.
    """
    start = max(0, size - TAIL_BYTES)
    data, _ = read_range(path, start, size - start, None)
    if data is None:
        return None
    found = data.rfind(_HEADER)
    if found >= 0:
        cursor = read_aider_history(data[found + 1:], AiderCursor(offset=start + found + 1)).cursor
    elif start == 0 and data.startswith(_HEADER[1:]):
        cursor = read_aider_history(data, AiderCursor()).cursor
    elif start > 0 and (session := _session_before(path, start)) is not None:
        cursor = _tail_cursor(data, start, session)
    else:  # no session in the file (or in the tail, unreadable before it): no_session after
        cursor = AiderCursor(offset=start + len(data))
    low = max(0, cursor.offset - CHECK_BYTES)
    check, _ = read_range(path, low, cursor.offset - low, None)
    return (cursor, check) if check is not None else None


def _session_before(path: str, end: int) -> AiderSession | None:
    """The session whose header is the last one before ``end``, its command line read."""
    header = _last_header(path, end)
    if header is None:
        return None
    head, _ = read_range(path, header, min(HEAD_BYTES, end - header), None)
    if head is None:
        return None
    return read_aider_history(head, AiderCursor(offset=header)).cursor.session


def _last_header(path: str, end: int) -> int | None:
    """Offset of the last header line starting before ``end`` (``None``: none, unreadable)."""
    hi = end
    while hi > 0:
        lo = max(0, hi - SEARCH_PIECE)
        piece, _ = read_range(path, lo, hi - lo + len(_HEADER) - 1, None)
        if piece is None:
            return None
        found = piece.rfind(_HEADER)
        if found >= 0:
            return lo + found + 1
        if lo == 0 and piece.startswith(_HEADER[1:]):
            return 0
        hi = lo
    return None


def _tail_cursor(data: bytes, start: int, session: AiderSession) -> AiderCursor:
    """The cursor at the end of ``data`` (the file from ``start``, inside ``session``).

    Read from the first line start in ``data`` (the decisions are dropped: only the
    state at the end matters); no newline at all: inside one long line, skipped.
    """
    nl = data.find(b"\n")
    if nl < 0:
        return AiderCursor(offset=start + len(data), session=session, in_line=True)
    return read_aider_history(data[nl + 1:], AiderCursor(offset=start + nl + 1,
                                                         session=session)).cursor


def baseline(path: str, thread_id: str | None, from_start: bool,
             busy_timeout_ms: int) -> Baseline | None:
    """A history's link: the marker at its end (or its start); ``None`` when unreadable."""
    state = file_state(path)
    if state.kind != "ok":
        return None
    if from_start:
        cursor, check = AiderCursor(), b""
    else:
        end = cursor_at_end(path, state.size)
        if end is None:
            return None
        cursor, check = end
    real = os.path.realpath(path)
    return Baseline(host_id="gateway:local", thread_id=thread_id or history_thread_id(path),
                    upstream_ref={"path": real}, marker=_marker(cursor, state.inode, 0, check))


def _rebaseline(path: str, epoch: int, reason: str) -> ScanResult:
    state = file_state(path)
    if state.kind != "ok":
        return ScanResult(kind=state.kind, reason=state.reason)
    end = cursor_at_end(path, state.size)
    if end is None:
        return ScanResult(kind="transient", reason="unreadable_after_rewrite")
    return ScanResult(kind="activity", reason=reason,
                      next_marker=_marker(end[0], state.inode, epoch + 1, end[1]))


def _holds(path: str, offset: int, check: object, inode: int) -> bool:
    if not isinstance(check, str):
        return True
    length, _, _ = check.partition(":")
    if not length.isdigit() or int(length) > offset:
        return True
    before, _ = read_range(path, offset - int(length), int(length), inode)
    return before is not None and check_of(before) == check


def scan(path: str, thread_id: str, marker: dict[str, Any], hint: StoreHint | None,
         context: ScanContext) -> ScanResult:
    """One scan from the marker: the typed blocks not the gateway's own are counted.

    Reads at most ``context.cap`` bytes; never raises.
    """
    epoch = marker.get("epoch", 0)
    try:
        cursor = msgspec.convert(marker.get("cursor") or {"offset": marker.get("offset", 0)},
                                 AiderCursor)
    except msgspec.ValidationError:
        return ScanResult(kind="no_news", reason="invalid_marker")
    if not isinstance(epoch, int) or cursor.offset < 0:
        return ScanResult(kind="no_news", reason="invalid_marker")
    state = file_state(path)
    if state.kind != "ok":
        return ScanResult(kind=state.kind, reason=state.reason)
    inode = marker.get("inode")
    if isinstance(inode, int) and inode != state.inode:
        return _rebaseline(path, epoch, "replaced")
    if state.size < cursor.offset:
        return _rebaseline(path, epoch, "shrunk")
    if not _holds(path, cursor.offset, marker.get("check"), state.inode):
        return _rebaseline(path, epoch, "rewritten")
    if state.size == cursor.offset:
        return ScanResult(kind="no_news", reason="no_news")
    length = min(state.size - cursor.offset, context.cap)
    data, reason = read_range(path, cursor.offset, length, state.inode)
    if data is None:
        return ScanResult(kind="transient", reason=reason)
    at_end = state.size <= cursor.offset + length
    settled = time.time_ns() // 1_000_000 - state.mtime_ms >= WRITE_SETTLE_MS
    read = read_aider_history(data, cursor, at_end=at_end, settled=settled,
                              max_block=context.cap)
    if read.cursor.offset == cursor.offset:
        full = length == context.cap and not at_end
        onward = past_long_line(data, cursor) if full else None
        if onward is None:
            return ScanResult(kind="no_news", reason="partial_block", more=full,
                              recheck=read.waits_on_write)
        # A block longer than the window: skipped (a reply or tool block is never
        # typed, a user block that long is oversized_block), so the blocks after it
        # are read (they stalled behind it before).
        read = AiderRead(decisions=(), cursor=onward, sessions=())
    consumed = read.cursor.offset - cursor.offset
    check = data[max(0, consumed - CHECK_BYTES):consumed]
    if len(check) < CHECK_BYTES and read.cursor.offset >= CHECK_BYTES:
        before, _ = read_range(path, read.cursor.offset - CHECK_BYTES, CHECK_BYTES, state.inode)
        check = before or b""
    turns, newest = count_turns((unit for _, unit in read.decisions), context.own_texts)
    end = read.cursor.offset
    return ScanResult(
        kind="activity", reason="scanned", human_turns=turns,
        next_marker=_marker(read.cursor, state.inode, epoch, check),
        occurred_at=(newest if newest is not None else state.mtime_ms) if turns else None,
        dedupe_id=f"{epoch}:{end}" if turns else None,
        more=state.size > cursor.offset + length, recheck=read.waits_on_write)


def classify(path: str, session: str | None, cap: int) -> Iterator[dict[str, Any]]:
    """``ssa classify``: every block's decision, ``{"offset", "kind", "human", "reason"}``.

    Raises:
        SessionStateError: the file cannot be read (or is over :data:`CLASSIFY_LIMIT`).
    """
    readable(path)
    state = file_state(path)
    if state.size > CLASSIFY_LIMIT:
        raise SessionStateError(f"cannot read {path}: larger than {CLASSIFY_LIMIT} bytes")
    data, reason = read_range(path, 0, state.size, None)
    if data is None:
        raise SessionStateError(f"cannot read {path}: {reason}")
    for block, unit in classify_aider_history(data, max_block=cap):
        yield {"offset": block.offset, "kind": block.kind, "human": unit.human,
               "reason": unit.reason}


def project(path: str, thread_id: str) -> str | None:
    """The repository the history file is in."""
    return os.path.dirname(os.path.realpath(path))


READING = Reading(baseline=baseline, scan=scan, classify=classify, project=project,
                  sample=sample, type_turn=type_turn)
"""Aider's reading: the blocks of a chat history from a byte offset, with their cursor."""
