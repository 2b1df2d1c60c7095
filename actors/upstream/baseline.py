"""Baselines for new upstream links: where a source ends now, and whether to trust it.

``adopt`` calls these in the caller's thread; they block only on bounded
reads of the source and never raise for a bad source (they return ``None``).
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any

import msgspec

from actors.upstream.files import check_of, end_of_complete_lines, file_state, read_range
from actors.upstream.longline import LineReducer
from actors.upstream.opencode_problems import store_problem

__all__ = ["HEAD_LIMIT", "Baseline", "first_line_pending", "jsonl_baseline",
           "opencode_baseline", "source_key_of"]

logger = logging.getLogger(__name__)

HEAD_LIMIT = 1 << 20
"""Most bytes read to find a transcript's first line or last newline."""


class Baseline(msgspec.Struct, frozen=True, kw_only=True):
    """A new link's identity and starting marker, or why it gets no link.

    Attributes:
        host_id: ``"gateway:local"`` for files on this machine.
        thread_id: the upstream session or thread id.
        upstream_ref: where to read (``{"path": ...}`` plus ``sessionId`` for OpenCode).
        marker: the starting scan position.
        refusal: set when the source is adopted without a link (legacy Pi
            format, a Codex thread not started by a user, an OpenCode child
            session); ``None`` when it may be monitored.
    """

    host_id: str
    thread_id: str
    upstream_ref: dict[str, Any]
    marker: dict[str, Any]
    refusal: str | None = None


def source_key_of(host_id: str, thread_id: str, upstream_ref: dict[str, Any]) -> str:
    """16 hex digits of sha256(host \\0 thread \\0 ref JSON) (anchor §3.16)."""
    ref = msgspec.json.encode(upstream_ref, order="sorted")
    digest = hashlib.sha256(host_id.encode() + b"\0" + thread_id.encode() + b"\0" + ref)
    return digest.hexdigest()[:16]


class _Header(msgspec.Struct):
    id: object = None


_header_decoder = msgspec.json.Decoder(_Header)


def _header_id(head: bytes) -> str | None:
    try:
        value = _header_decoder.decode(head).id
    except (msgspec.DecodeError, RecursionError):
        return None
    return value if isinstance(value, str) and value else None


def first_line_pending(source: str, path: str) -> bool:
    """Whether ``path`` is a Codex or Pi file whose first line is not complete yet.

    Such a file is not adopted yet (its header decides whether it may be
    monitored); adopt it again once it is written. Caller's thread; reads
    up to the first newline, :data:`HEAD_LIMIT` bytes at a time; never raises.
    """
    if source not in ("codex", "pi"):
        return False
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


def _reduced_first_line(path: str, head_bytes: bytes) -> bytes:
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


def jsonl_baseline(
    source: str, path: str, *, thread_id: str | None, from_start: bool
) -> Baseline | None:
    """Baseline a Claude, Codex or Pi transcript; ``None`` when it cannot be read.

    The marker is the end of the last complete line (a partial last line is
    left for the first scan), or ``0`` with ``from_start``. A Codex or Pi
    file whose first line (``session_meta``, the session header) is not
    complete yet (empty, or being written) is ``None`` too: whether it may be
    monitored cannot be told yet (see :func:`first_line_pending`).
    """
    state = file_state(path)
    if state.kind != "ok":
        return None
    head_bytes, _ = read_range(path, 0, min(state.size, HEAD_LIMIT), None)
    if head_bytes is None:
        return None
    head = head_bytes.split(b"\n", 1)[0] if b"\n" in head_bytes else b""
    if not head and len(head_bytes) == HEAD_LIMIT:
        head = _reduced_first_line(path, head_bytes)
    if source in ("codex", "pi") and not head and b"\n" not in head_bytes:
        return None  # its header is not written yet: decide when it is
    offset, check = 0, b""
    if not from_start and state.size:
        end = end_of_complete_lines(path, state.size, limit=HEAD_LIMIT)
        if end is None:
            return None
        offset, check = end
    refusal: str | None = None
    default_thread = Path(os.path.realpath(path)).stem
    if source == "codex":
        from actors.upstream.codex import codex_link_refusal, read_codex_thread  # noqa: PLC0415

        thread = read_codex_thread(head)
        refusal = codex_link_refusal(thread)
        if thread is not None and thread.thread_id:
            default_thread = thread.thread_id
    elif source == "pi":
        from actors.upstream.pi import pi_header_version  # noqa: PLC0415

        version = pi_header_version(head)
        if version is None or version < 3:
            refusal = "legacy_pi_format"
        header_id = _header_id(head)
        if header_id:
            default_thread = header_id
    return Baseline(
        host_id="gateway:local", thread_id=thread_id or default_thread,
        upstream_ref={"path": os.path.realpath(path)},
        marker={"offset": offset, "inode": state.inode, "epoch": 0,
                "check": check_of(check)},
        refusal=refusal,
    )


def opencode_baseline(
    path: str, *, session_id: str, from_start: bool, busy_timeout_ms: int = 1000
) -> Baseline | str:
    """Baseline an OpenCode session in ``opencode.db``, or say why it cannot be adopted.

    Returns:
        The baseline, or a phrase for the caller's one log line when the
        store is unreadable or the session is gone, in a user's terms
        (``"cannot read PATH: not an OpenCode database ..."``). Nothing is
        logged here. Caller's thread; blocks on SQLite.
    """
    from actors.upstream import opencode  # noqa: PLC0415

    state = file_state(path)
    if state.kind != "ok":
        return f"cannot read {path}: {(state.reason or 'unreadable').replace('_', ' ')}"
    try:
        conn = opencode.open_opencode_db(path, busy_timeout_ms=busy_timeout_ms)
    except Exception as exc:  # apsw errors; any failure means "unreadable"
        return f"cannot read {path}: {store_problem(exc)}"
    try:
        info = opencode.read_session_info(conn, session_id)
        marker = None if info is None else opencode.baseline_marker(conn, session_id)
    except Exception as exc:  # apsw errors, undecodable rows
        return f"cannot read {path}: {store_problem(exc)}"
    finally:
        conn.close()
    if info is None or marker is None:
        return f"{path} holds no OpenCode session {session_id}"
    start = {"seq": 0, "lastHumanMessageId": None} if from_start else {
        "seq": marker.seq, "lastHumanMessageId": marker.last_human_message_id}
    return Baseline(
        host_id="gateway:local", thread_id=session_id,
        upstream_ref={"path": os.path.realpath(path), "sessionId": session_id},
        marker=start, refusal=info.refusal,
    )
