"""Bounded, non-blocking reads of append-only JSONL transcripts.

Every read starts at a byte marker, takes at most ``cap`` bytes, and hands
back only complete lines. Nothing here can block on a FIFO or a device: the
path is ``stat``-ed first and opened ``O_NONBLOCK``, and only regular files
are read. Runs in the calling thread (an upstream monitor actor) and blocks
only on regular-file I/O.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field
from typing import Literal

from actors.upstream.regular import open_regular, open_regular_file

__all__ = ["CHECK_BYTES", "SEARCH_CHUNK_BYTES", "Chunk", "FileState", "Newline", "check_of",
           "end_of_complete_lines", "file_state", "find_newline", "open_regular",
           "open_regular_file", "read_lines", "read_range", "read_ranges"]

ReadKind = Literal["lines", "missing", "transient", "no_news", "rewritten", "partial"]

_MISSING_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR})

CHECK_BYTES = 32
"""Bytes just before a marker that are kept to recognise a file rewritten in place."""
SEARCH_CHUNK_BYTES = 8 << 20
"""Bytes :func:`find_newline` reads at a time (its memory, whatever the line's length)."""


@dataclass(frozen=True, slots=True)
class FileState:
    """What ``stat`` says about a transcript path.

    Attributes:
        kind: ``"ok"`` for a readable regular file, ``"missing"`` when the scan
            proves it is gone (no such file, or no longer a regular file),
            ``"transient"`` for errors that prove nothing (permission denied,
            name too long, a symlink loop).
        reason: a short code for logs and ``ssa classify``.
        size: bytes, for ``"ok"``.
        inode: ``st_ino``, for ``"ok"``.
        mtime_ms: modification time in epoch ms, for ``"ok"``.
    """

    kind: Literal["ok", "missing", "transient"]
    reason: str
    size: int = 0
    inode: int = 0
    mtime_ms: int = 0


@dataclass(frozen=True, slots=True)
class Chunk:
    """The result of :func:`read_lines`.

    Attributes:
        kind: ``"lines"`` with complete lines; otherwise why there are none:
            ``"missing"``/``"transient"`` (see :class:`FileState`),
            ``"no_news"`` (nothing new), ``"rewritten"`` (the file shrank
            below the marker or is another inode: re-baseline),
            ``"partial"`` (bytes, but no newline among them: a line still
            being written (``partial_line``), or one longer than the cap
            (``line_exceeds_cap``); ``rest`` holds them).
        reason: a short code.
        lines: ``(start_offset, line_bytes)`` of each complete line, without
            its ``\\n`` (a trailing ``\\r`` is kept; JSON ignores it).
        end: the offset just past the last complete line (== the marker when
            there are none).
        state: the file's state at the time of the read.
        raw: the bytes checked before the marker, then the complete lines up
            to ``end`` (so the next marker's check can be computed).
        rest: the bytes read after ``end`` (the start of a line without its
            newline yet).
    """

    kind: ReadKind
    reason: str
    end: int
    state: FileState
    lines: list[tuple[int, bytes]] = field(default_factory=list)
    raw: bytes = b""
    rest: bytes = b""


def file_state(path: str) -> FileState:
    """``stat`` ``path`` (following symlinks) and classify the result. Never raises."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno in _MISSING_ERRNOS:
            return FileState("missing", "not_found")
        return FileState("transient", os.strerror(exc.errno) if exc.errno else "os_error")
    except ValueError:  # embedded NUL in the path
        return FileState("transient", "bad_path")
    if not stat.S_ISREG(st.st_mode):
        return FileState("missing", "not_a_regular_file")
    return FileState("ok", "ok", st.st_size, st.st_ino, st.st_mtime_ns // 1_000_000)


def read_range(path: str, offset: int, length: int, inode: int | None
               ) -> tuple[bytes | None, str]:
    """Read ``length`` bytes at ``offset`` of a regular file without ever blocking on
    a FIFO or device; ``(None, reason)`` when it cannot (never raises)."""
    parts, reason = read_ranges(path, ((offset, length),), inode)
    return (None, reason) if parts is None else (parts[0], reason)


def read_ranges(path: str, ranges: tuple[tuple[int, int], ...], inode: int | None
                ) -> tuple[list[bytes] | None, str]:
    """Read several ``(offset, length)`` ranges of one regular file, through one open.

    Each range comes back as its own bytes object (none is a slice of a larger
    read, so none is copied); a range past the end is short. Never blocks on a
    FIFO or device; ``(None, reason)`` when the file cannot be read (never raises).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return None, "missing" if exc.errno in _MISSING_ERRNOS else "open_failed"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (inode is not None and st.st_ino != inode):
            return None, "replaced_while_opening"
        return [_pread_all(fd, offset, length) for offset, length in ranges], "ok"
    except OSError:
        return None, "read_failed"
    finally:
        os.close(fd)


def _pread_all(fd: int, offset: int, length: int) -> bytes:
    first = os.pread(fd, length, offset) if length > 0 else b""
    if len(first) == length or not first:
        return first
    parts = [first]
    got = len(first)
    while got < length:
        part = os.pread(fd, length - got, offset + got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def end_of_complete_lines(path: str, size: int, *, limit: int = 1 << 20
                          ) -> tuple[int, bytes] | None:
    """Offset just past the last complete line of ``path`` (0 if it has none), and
    the :data:`CHECK_BYTES` before it; ``None`` if unreadable.

    Reads backwards ``limit`` bytes at a time until a newline is found, so a
    last line of any length is found with memory bounded by ``limit``.
    """
    stop = size
    while stop > 0:
        start = max(0, stop - limit)
        data, _ = read_range(path, start, stop - start, None)
        if data is None:
            return None
        newline = data.rfind(b"\n")
        if newline >= 0:
            end = start + newline + 1
            if newline + 1 >= CHECK_BYTES or start == 0:
                return end, data[max(0, newline + 1 - CHECK_BYTES):newline + 1]
            low = max(0, end - CHECK_BYTES)
            check, _ = read_range(path, low, end - low, None)
            return (None if check is None else (end, check))
        stop = start
    return 0, b""


def check_of(data: bytes) -> str:
    """The stored form of the bytes before a marker: ``"<length>:<sha256 prefix>"``.

    Only a digest is stored: those bytes are transcript text, which never
    enters the signal log (issue 5, privacy).
    """
    return f"{len(data)}:{hashlib.sha256(data).hexdigest()[:32]}"


def read_lines(path: str, offset: int, *, cap: int, inode: int | None,
               check: str | None = None) -> Chunk:
    """Read the complete lines after ``offset``, at most ``cap`` bytes.

    Args:
        path: the transcript file.
        offset: the byte marker: where the unread part starts.
        cap: most bytes read (``scan_cap_bytes``).
        inode: the inode the marker belongs to, or ``None`` to skip that check.
        check: :func:`check_of` the bytes that stood just before ``offset``
            when the marker was set; if they differ now, the file was
            rewritten in place.

    Returns:
        A :class:`Chunk`. Never raises.
    """
    state = file_state(path)
    if state.kind != "ok":
        return Chunk(state.kind, state.reason, offset, state)
    if inode is not None and state.inode != inode:
        return Chunk("rewritten", "rewritten", offset, state)
    if state.size < offset:
        return Chunk("rewritten", "shrunk", offset, state)
    before = 0
    if check:
        length, _, _ = check.partition(":")
        before = int(length) if length.isdigit() and int(length) <= offset else 0
    if state.size == offset and not before:
        return Chunk("no_news", "no_growth", offset, state)
    want = min(state.size - offset, cap)
    parts, reason = read_ranges(path, ((offset - before, before), (offset, want)), inode)
    if parts is None:
        kind: ReadKind = "missing" if reason == "missing" else "transient"
        return Chunk(kind, reason, offset, state)
    prefix, data = parts
    if before and check_of(prefix) != check:
        return Chunk("rewritten", "rewritten_in_place", offset, state)
    got = len(data)
    if not got:
        return Chunk("no_news", "no_growth", offset, state)
    last_newline = data.rfind(b"\n")
    if last_newline < 0:
        return Chunk("partial", "line_exceeds_cap" if got >= cap else "partial_line", offset,
                     state, raw=prefix, rest=data)
    lines: list[tuple[int, bytes]] = []
    start = 0
    while start <= last_newline:
        stop = data.index(b"\n", start)
        lines.append((offset + start, data[start:stop]))
        start = stop + 1
    return Chunk("lines", "ok", offset + last_newline + 1, state, lines,
                 prefix + data[:last_newline + 1], data[last_newline + 1:])


@dataclass(frozen=True, slots=True)
class Newline:
    """The result of :func:`find_newline`.

    Attributes:
        kind: ``"found"`` (``at`` is the newline's offset), ``"none"`` (no
            newline before ``at``, where the search stopped: its ``stop`` or
            the file's end), ``"rewritten"`` (another inode, or the bytes
            before ``start`` are not those ``check`` digests), or
            ``"missing"``/``"transient"`` (see :class:`FileState`).
        reason: a short code for logs.
        at: an offset (see ``kind``); ``start`` unless ``"found"``/``"none"``.
        tail: the :data:`CHECK_BYTES` (or fewer, at the file's start) just
            before ``at + 1`` (``"found"``: the newline included) or ``at``
            (``"none"``), for the next marker's or search's ``check``.
        size: the file's size when it was opened (bytes).
    """

    kind: Literal["found", "none", "rewritten", "missing", "transient"]
    reason: str
    at: int
    tail: bytes = b""
    size: int = 0


def find_newline(path: str, start: int, stop: int, *, inode: int, check: str | None
                 ) -> Newline:
    """Find the first ``\\n`` in ``[start, stop)`` of ``path`` by a plain byte search.

    No parsing: :data:`SEARCH_CHUNK_BYTES` are read at a time into one
    buffer and searched with ``bytearray.find`` (``memchr``), so a line of
    any length is passed at the speed of reading it, in bounded memory.

    Args:
        path: the transcript.
        start: the first offset searched.
        stop: the search reads no byte at or past this offset.
        inode: the inode the search belongs to (another one is ``"rewritten"``).
        check: :func:`check_of` the bytes just before ``start`` (``None``: not checked).

    Returns:
        A :class:`Newline`. Caller's thread; blocks on at most ``stop - start``
        bytes of regular-file reads (never on a FIFO or device); never raises.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError) as exc:
        missing = isinstance(exc, OSError) and exc.errno in _MISSING_ERRNOS
        return Newline("missing" if missing else "transient",
                       "not_found" if missing else "open_failed", start)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return Newline("missing", "not_a_regular_file", start)
        if st.st_ino != inode or st.st_size < start:
            return Newline("rewritten", "rewritten", start, size=st.st_size)
        before = 0
        if check:
            length, _, _ = check.partition(":")
            before = int(length) if length.isdigit() and int(length) <= start else 0
        prefix = _pread_all(fd, start - before, before) if before else b""
        if before and check_of(prefix) != check:
            return Newline("rewritten", "rewritten_in_place", start, size=st.st_size)
        return _search(fd, start, min(stop, st.st_size), prefix, st.st_size)
    except OSError:
        return Newline("transient", "read_failed", start)
    finally:
        os.close(fd)


def _search(fd: int, start: int, stop: int, prefix: bytes, size: int) -> Newline:
    """The newline search of :func:`find_newline` on an open, checked file."""
    buffer = bytearray(min(SEARCH_CHUNK_BYTES, max(stop - start, 0)))
    tail = prefix[-CHECK_BYTES:]
    at = start
    while at < stop:
        want = min(len(buffer), stop - at)
        got = os.preadv(fd, [memoryview(buffer)[:want]], at)
        if got <= 0:
            break  # the file shrank meanwhile: the next scan sees it
        newline = buffer.find(b"\n", 0, got)
        if newline >= 0:
            low = max(0, newline + 1 - CHECK_BYTES)
            tail = (tail + bytes(buffer[low:newline + 1]))[-CHECK_BYTES:]
            return Newline("found", "ok", at + newline, tail, size)
        tail = (tail + bytes(buffer[max(0, got - CHECK_BYTES):got]))[-CHECK_BYTES:]
        at += got
    return Newline("none", "ok", at, tail, size)
