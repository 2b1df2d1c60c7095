"""Bounded, non-blocking reads of append-only JSONL transcripts.

Every read starts at a byte marker, takes at most ``cap`` bytes, and hands
back only complete lines. Nothing here can block on a FIFO or a device: the
path is ``stat``-ed first and opened ``O_NONBLOCK``, and only regular files
are read. Runs in the calling thread (an upstream monitor actor) and blocks
only on regular-file I/O.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Chunk", "FileState", "file_state", "read_lines"]

ReadKind = Literal["lines", "missing", "transient", "no_news", "rewritten", "blocked"]

_MISSING_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR})


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
            ``"no_news"`` (nothing new, or only a partial last line),
            ``"rewritten"`` (the file shrank below the marker or is another
            inode: re-baseline), ``"blocked"`` (one line is longer than the
            cap: the cursor cannot move).
        reason: a short code.
        lines: ``(start_offset, line_bytes)`` of each complete line, without
            its ``\\n`` (a trailing ``\\r`` is kept; JSON ignores it).
        end: the offset just past the last complete line (== the marker when
            there are none).
        state: the file's state at the time of the read.
    """

    kind: ReadKind
    reason: str
    end: int
    state: FileState
    lines: list[tuple[int, bytes]] = field(default_factory=list)


def file_state(path: str) -> FileState:
    """``stat`` ``path`` (following symlinks) and classify the result. Never raises."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno in _MISSING_ERRNOS:
            return FileState("missing", "not_found")
        return FileState("transient", errno.errorcode.get(exc.errno or 0, "os_error").lower())
    except ValueError:  # embedded NUL in the path
        return FileState("transient", "bad_path")
    if not stat.S_ISREG(st.st_mode):
        return FileState("missing", "not_a_regular_file")
    return FileState("ok", "ok", st.st_size, st.st_ino, st.st_mtime_ns // 1_000_000)


def read_lines(path: str, offset: int, *, cap: int, inode: int | None) -> Chunk:
    """Read the complete lines after ``offset``, at most ``cap`` bytes.

    Args:
        path: the transcript file.
        offset: the byte marker: where the unread part starts.
        cap: most bytes read (``scan_cap_bytes``).
        inode: the inode the marker belongs to, or ``None`` to skip that check.

    Returns:
        A :class:`Chunk`. Never raises.
    """
    state = file_state(path)
    if state.kind != "ok":
        return Chunk(state.kind, state.reason, offset, state)
    if (inode is not None and state.inode != inode) or state.size < offset:
        return Chunk("rewritten", "rewritten", offset, state)
    if state.size == offset:
        return Chunk("no_news", "no_growth", offset, state)
    want = min(state.size - offset, cap)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        kind: ReadKind = "missing" if exc.errno in _MISSING_ERRNOS else "transient"
        return Chunk(kind, "open_failed", offset, state)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_ino != state.inode:
            return Chunk("transient", "replaced_while_opening", offset, state)
        parts: list[bytes] = []
        got = 0
        while got < want:
            part = os.pread(fd, want - got, offset + got)
            if not part:
                break
            parts.append(part)
            got += len(part)
    except OSError:
        return Chunk("transient", "read_failed", offset, state)
    finally:
        os.close(fd)
    data = b"".join(parts)
    last_newline = data.rfind(b"\n")
    if last_newline < 0:
        if got >= cap:
            return Chunk("blocked", "line_exceeds_cap", offset, state)
        return Chunk("no_news", "partial_line", offset, state)
    lines: list[tuple[int, bytes]] = []
    start = 0
    while start <= last_newline:
        stop = data.index(b"\n", start)
        lines.append((offset + start, data[start:stop]))
        start = stop + 1
    return Chunk("lines", "ok", offset + last_newline + 1, state, lines)
