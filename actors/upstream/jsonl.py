"""The reading of a line-based source: one JSONL transcript per session, appended to.

:func:`line_reading` builds a source's :class:`~actors.upstream.reading.Reading`
from what differs between such tools: the line classifier, whether (and
how) a header line decides the session id and whether it may be linked,
where the transcript's head says the tool ran, and the sample writer.
Baselines, scans (:func:`~actors.upstream.scan.scan_jsonl`) and ``ssa
classify``'s walk are the same for all of them. Runs in the caller's
thread; bounded reads; see each function.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from actors.errors import SessionStateError
from actors.upstream.common import Unit
from actors.upstream.files import (
    check_of,
    end_of_complete_lines,
    file_state,
    open_regular,
    open_regular_file,
    read_range,
)
from actors.upstream.longline import LineReducer
from actors.upstream.reading import Baseline, Reading, ScanContext, never_waiting, readable
from actors.upstream.scanning import (
    LONG_LINE_MAX_BYTES,
    LineClassifier,
    ScanResult,
    StoreHint,
    classify_long_line,
    scan_jsonl,
)
from actors.upstream.typedtext import SpanChanged

__all__ = ["HEAD_LIMIT", "PROJECT_HEAD_BYTES", "Header", "classify_lines", "head_lines",
           "header_pending", "line_reading", "read_baseline", "reduced_first_line", "units_in_span"]

HEAD_LIMIT = 1 << 20
"""Most bytes read to find a transcript's first line or last newline."""

Header = Callable[[bytes], tuple[str | None, str | None]]
"""``first line -> (session id or None, refusal or None)``: a header line's verdict."""

PROJECT_HEAD_BYTES = 65_536
"""Most bytes of a transcript read to find its project directory."""


def reduced_first_line(path: str, head_bytes: bytes) -> bytes:
    """The reduced copy of a first line longer than :data:`HEAD_LIMIT` (b"" if unfinished).

    Reads on ``HEAD_LIMIT`` bytes at a time, so memory stays bounded.
    """
    reducer = LineReducer()
    data: bytes | None = head_bytes
    offset = 0
    while data is not None and data:
        newline = data.find(b"\n")
        if newline >= 0:
            reducer.feed(data[:newline])
            return reducer.finish().line
        reducer.feed(data)
        offset += len(data)
        data, _ = read_range(path, offset, HEAD_LIMIT, None)
    return b""


def classify_lines(path: str, classify: LineClassifier, *, refusal: str | None,
                   cap: int, max_line: int = LONG_LINE_MAX_BYTES) -> Iterator[dict[str, Any]]:
    """Yield the monitor's decision for each non-blank line of a JSONL transcript.

    ``{"line": n, "human": ..., "reason": ...}`` (0-based index), exactly as
    a monitor scanning the file from its start would decide: a final line
    without a newline is ``partial_line`` (it waits), a line longer than
    ``cap`` is read in pieces and classified on its reduced copy (see
    :mod:`actors.upstream.longline`; memory stays bounded whatever its
    length), a line longer than ``max_line`` (at least ``cap``) is
    ``line_too_long`` (never typed; not parsed), every line behind a line
    that stops a scan (``"stop": true``) is ``not_reached``; with
    ``refusal`` (the session gets no upstream link: legacy Pi, a Codex
    thread not started by a user) every line is ``not_monitored: <why>``.
    Reads lazily in the caller's thread.

    Raises:
        SessionStateError: the file cannot be read.
    """
    readable(path)
    scan_cap_bytes = cap
    blocked_by: str | None = None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise SessionStateError(f"cannot read {path}: not a regular file")
        with os.fdopen(fd, "rb") as handle:
            for index, line in enumerate(iter(lambda: handle.readline(scan_cap_bytes + 1), b"")):
                reducer: LineReducer | None = None
                complete = line.endswith(b"\n")
                too_long = False
                if len(line) > scan_cap_bytes:
                    reducer, complete = _read_long_line(handle, line, scan_cap_bytes,
                                                        max(max_line, scan_cap_bytes))
                    too_long = reducer is None
                elif not line.strip():
                    continue
                entry: dict[str, Any] = {"line": index, "human": False}
                if blocked_by is not None:
                    entry["reason"] = "not_reached"
                elif not complete:
                    entry["reason"] = "partial_line"
                else:
                    unit = (Unit(human=False, reason="line_too_long") if too_long
                            else classify_long_line(classify, reducer) if reducer is not None
                            else classify(line.rstrip(b"\n")))
                    entry["human"] = unit.human and refusal is None
                    entry["reason"] = (unit.reason if refusal is None
                                       else f"not_monitored: {refusal} ({unit.reason})")
                    if unit.stop:
                        entry["stop"] = True
                        blocked_by = unit.reason
                yield entry
    except OSError as exc:
        raise SessionStateError(f"cannot read {path}: {exc}") from exc


def _read_long_line(handle: BinaryIO, first: bytes, cap: int, max_line: int
                    ) -> tuple[LineReducer | None, bool]:
    """Feed a line longer than ``cap`` to a reducer, ``cap`` bytes at a time.

    Returns the reducer (``None`` once the line is longer than ``max_line``:
    it is only read to its end) and whether the line ended with a newline (a
    final line without one is partial: the monitor waits for it).
    """
    reducer: LineReducer | None = LineReducer()
    length = 0
    piece = first
    while True:
        data = piece.rstrip(b"\n")
        length += len(data)
        if length > max_line:
            reducer = None
        if reducer is not None:
            reducer.feed(data)
        if piece.endswith(b"\n"):
            return reducer, True
        piece = handle.readline(max(cap, 1 << 20) if reducer is None else cap)
        if not piece:
            return reducer, False


def header_pending(path: str) -> bool:
    """Whether ``path``'s first line is not complete yet (its header cannot be read).

    Reads up to the first newline, :data:`HEAD_LIMIT` bytes at a time; never raises.
    """
    state = file_state(path)
    if state.kind != "ok":
        return False
    offset = 0
    while offset < state.size:  # a first line of any length: HEAD_LIMIT at a time
        piece, _ = read_range(path, offset, min(state.size - offset, HEAD_LIMIT), None)
        if not piece:
            return False
        if b"\n" in piece:
            return False
        offset += len(piece)
    return True


def read_baseline(path: str, *, header: Header | None, thread_id: str | None,
                  from_start: bool) -> Baseline | None:
    """Baseline a JSONL transcript; ``None`` when it cannot be read (or decided yet).

    The marker is the end of the last complete line (a partial last line is
    left for the first scan), or ``0`` with ``from_start``. With ``header``,
    a file whose first line is not complete yet (empty, or being written) is
    ``None`` too: whether it may be monitored cannot be told yet (see
    :func:`header_pending`); the header's verdict gives the session id
    (default: the file's name) and the refusal.
    """
    state = file_state(path)
    if state.kind != "ok":
        return None
    head_bytes, _ = read_range(path, 0, min(state.size, HEAD_LIMIT), None)
    if head_bytes is None:
        return None
    head = head_bytes.split(b"\n", 1)[0] if b"\n" in head_bytes else b""
    if not head and len(head_bytes) == HEAD_LIMIT:
        head = reduced_first_line(path, head_bytes)
    if header is not None and not head and b"\n" not in head_bytes:
        return None  # its header is not written yet: decide when it is
    offset, check = 0, b""
    if not from_start and state.size:
        end = end_of_complete_lines(path, state.size, limit=HEAD_LIMIT)
        if end is None:
            return None
        offset, check = end
    refusal: str | None = None
    default_thread = Path(os.path.realpath(path)).stem
    if header is not None:
        found, refusal = header(head)
        default_thread = found or default_thread
    return Baseline(
        host_id="gateway:local", thread_id=thread_id or default_thread,
        upstream_ref={"path": os.path.realpath(path)},
        marker={"offset": offset, "inode": state.inode, "epoch": 0,
                "check": check_of(check)},
        refusal=refusal,
    )


def head_lines(path: str) -> list[bytes]:
    """The complete lines of the first :data:`PROJECT_HEAD_BYTES` of ``path``.

    Raises:
        OSError: the file cannot be read.
    """
    with open_regular_file(path) as handle:
        head = handle.read(PROJECT_HEAD_BYTES)
    lines = head.split(b"\n")
    return lines[:-1] if len(head) == PROJECT_HEAD_BYTES else lines  # the last may be cut


def line_reading(
    classify: LineClassifier, *, project: Callable[[list[bytes]], str | None],
    sample: Callable[[Path], tuple[str, str]], type_turn: Callable[[str, str, str], None],
    header: Header | None = None,
    classify_at: Callable[[str], LineClassifier] | None = None,
    note: Callable[[list[bytes]], str | None] | None = None,
) -> Reading:
    """The :class:`Reading` of a line-based source.

    Args:
        classify: the line classifier (bytes of one line, no newline -> Unit).
        project: the project directory from a transcript's first lines
            (:func:`head_lines`), or ``None``.
        sample: the sample writer (see :attr:`Reading.sample`).
        type_turn: appends a typed turn to a sample (see :attr:`Reading.type_turn`).
        header: the first line's verdict, for a format whose header line
            decides the session; without one the file's name is the id and
            every transcript may be linked.
        classify_at: a classifier for the lines of one transcript, given its
            path (default: ``classify`` for every file).
        note: a linked transcript's :attr:`Baseline.note` from its first lines
            (:func:`head_lines`), e.g. a session a program prompts.

    Pure: builds functions; they run in their callers' threads.
    """

    def lines(path: str | None) -> LineClassifier:
        return classify_at(path) if classify_at is not None and path is not None else classify

    def baseline(path: str, thread_id: str | None, from_start: bool,
                 busy_timeout_ms: int) -> Baseline | None:
        found = read_baseline(path, header=header, thread_id=thread_id, from_start=from_start)
        if found is None or note is None or found.refusal is not None:
            return found
        why = note(head_lines(path))
        return msgspec.structs.replace(found, note=why) if why else found

    def scan(path: str, thread_id: str, marker: dict[str, Any], hint: StoreHint | None,
             context: ScanContext) -> ScanResult:
        return scan_jsonl(path, marker, classify=lines(path), cap=context.cap,
                          own_texts=context.own_texts, pending=context.pending,
                          max_line=context.max_line)

    def classify_file(path: str, session: str | None, cap: int) -> Iterator[dict[str, Any]]:
        found = read_baseline(path, header=header, thread_id=None, from_start=True)
        return classify_lines(path, lines(path), refusal=found.refusal if found else None,
                              cap=cap)

    def project_of(path: str, thread_id: str) -> str | None:
        return project(head_lines(path))

    def units_in(path: str, thread: str, pointer: dict[str, Any],
                 cap: int) -> Iterator[Unit]:
        return units_in_span(path, pointer, lines(path), cap)

    return Reading(baseline=baseline, scan=scan, classify=classify_file, project=project_of,
                   sample=sample, type_turn=type_turn, lines=lines, units_in=units_in,
                   waiting=header_pending if header is not None else never_waiting)


def units_in_span(path: str, pointer: dict[str, Any], classify: LineClassifier,
                  cap: int) -> Iterator[Unit]:
    """The units of the lines in ``pointer``'s byte range ``[from, to)`` of ``path``.

    The range must still start at a line's start and end with a newline;
    otherwise :class:`~actors.upstream.typedtext.SpanChanged`. Reads at most
    ``cap`` bytes (a longer range is ``SpanChanged`` too: it cannot be the
    range a scan decided). Caller's thread; blocks on one bounded read.

    Raises:
        OSError: the file cannot be read (gone, moved, not permitted).
        SpanChanged: the range no longer falls on whole lines.
    """
    start, end = pointer.get("from"), pointer.get("to")
    if not isinstance(start, int) or not isinstance(end, int) or not 0 <= start < end \
            or end - start > cap:
        raise SpanChanged(f"no byte range in the pointer: {start!r}..{end!r}")
    handle = open_regular(path)  # a FIFO or device put there never blocks the read
    if handle is None:
        raise FileNotFoundError(f"{path} is no readable regular file")
    with handle:
        handle.seek(max(start - 1, 0))
        data = handle.read(end - start + (1 if start else 0))
    if start:
        if not data.startswith(b"\n"):
            raise SpanChanged("the range no longer starts a line")
        data = data[1:]
    if len(data) != end - start or not data.endswith(b"\n"):
        raise SpanChanged("the range no longer ends a line")
    for line in data.split(b"\n")[:-1]:
        if line.strip():
            yield classify(line)
