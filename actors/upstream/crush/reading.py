"""Crush's heavy half: baselines, scans, the change query and ``ssa classify`` of
``crush.db`` sessions.

Built into :data:`READING`, which :func:`actors.upstream.crush.source.reading`
loads on first use. A session's marker is ``{"seq": <largest message rowid
read>}``; the upstream service's batched change query (:func:`sequences`,
once per store per cadence) gives each scan the session's current largest
rowid, and a scan reads only the messages after its marker
(:func:`~actors.upstream.crush.classify.read_crush_messages`), decided by
:func:`~actors.upstream.crush.classify.classify_crush_rows`. Every function runs in
the caller's thread and blocks on SQLite; none raises for a bad store unless
its docstring says so.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw

from actors.errors import InvalidArgument, SessionStateError
from actors.upstream.crush.classify import (
    CrushSession,
    classify_crush_rows,
    read_crush_messages,
    read_crush_sessions,
)
from actors.upstream.crush.db import TOP_LEVEL, open_store, store_problem
from actors.upstream.crush.kit import sample, type_turn
from actors.upstream.files import file_state
from actors.upstream.reading import Baseline, Reading, ScanContext, pick_one, readable
from actors.upstream.scanning import ScanResult, StoreHint, count_turns

__all__ = ["PAGE", "READING", "sequences"]

logger = logging.getLogger(__name__)

PAGE = 10_000
"""Most messages one scan reads (a longer backlog is read on at the next scan)."""


def _session(conn: apsw.Connection, session_id: str) -> CrushSession | None:
    return next((s for s in read_crush_sessions(conn) if s.id == session_id), None)


def _max_rowid(conn: apsw.Connection, session_id: str) -> int:
    row = conn.execute("SELECT coalesce(max(rowid), 0) FROM messages WHERE session_id = ?",
                       (session_id,)).get
    return row if isinstance(row, int) else 0


def baseline(path: str, thread_id: str | None, from_start: bool,
             busy_timeout_ms: int) -> Baseline | str:
    """A Crush session's link (refused ``child_session`` for a sub-agent's or title
    session), or a phrase saying why it cannot be adopted. Never raises."""
    if thread_id is None:
        return f"{path}: a Crush session id is required"
    state = file_state(path)
    if state.kind != "ok":
        return f"cannot read {path}: {state.reason.replace('_', ' ')}"
    try:
        conn = open_store(path, busy_timeout_ms)
        try:
            session = _session(conn, thread_id)
            seq = 0 if session is None or from_start else _max_rowid(conn, thread_id)
        finally:
            conn.close()
    except apsw.Error as exc:
        return f"cannot read {path}: {store_problem(exc)}"
    if session is None:
        return f"{path} holds no Crush session {thread_id}"
    return Baseline(host_id="gateway:local", thread_id=thread_id,
                    upstream_ref={"path": os.path.realpath(path), "sessionId": thread_id},
                    marker={"seq": seq}, refusal=session.refusal)


def scan(path: str, thread_id: str, marker: dict[str, Any], hint: StoreHint | None,
         context: ScanContext) -> ScanResult:
    """One scan of a session given this cadence's change hint; never raises.

    A largest rowid below the marker (messages deleted) re-baselines without
    counting; a failed query is no news.
    """
    seq = marker.get("seq")
    if hint is None or hint.state == "failed":
        return ScanResult(kind="no_news", reason="sequence_query_failed")
    if hint.state == "gone":
        return ScanResult(kind="missing", reason="session_gone")
    if not isinstance(seq, int):
        return ScanResult(kind="no_news", reason="invalid_marker")
    if hint.seq == seq:
        return ScanResult(kind="no_news", reason="no_advance")
    if hint.seq < seq:
        return ScanResult(kind="activity", reason="sequence_regressed",
                          next_marker={"seq": hint.seq})
    try:
        conn = open_store(path, context.busy_timeout_ms)
        try:
            with conn:
                session = _session(conn, thread_id)
                read = read_crush_messages(conn, after_rowid=seq, session_id=thread_id,
                                           limit=PAGE)
        finally:
            conn.close()
    except apsw.Error as exc:
        logger.debug("reading a Crush session failed: %s", type(exc).__name__)
        return ScanResult(kind="transient", reason=f"read_failed: {type(exc).__name__}")
    if session is None:
        return ScanResult(kind="missing", reason="session_gone")
    decisions = classify_crush_rows(read.messages, {session.id: session})
    turns, newest = count_turns((unit for _, unit in decisions), context.own_texts)
    counted = [m.id for m, unit in decisions if unit.human]
    return ScanResult(
        kind="activity", reason="scanned", human_turns=turns,
        next_marker={"seq": read.last_rowid}, occurred_at=newest if turns else None,
        dedupe_id=counted[-1] if turns and counted else None,
        more=len(read.messages) == PAGE)


def sequences(path: str, thread_ids: list[str], busy_timeout_ms: int) -> dict[str, int]:
    """The largest message rowid of each of these sessions in the store at ``path``
    (a session not in the store is left out: gone).

    Raises:
        apsw.Error: the store cannot be opened or queried (that proves nothing).
    """
    if file_state(path).kind == "missing" or not thread_ids:
        return {}
    conn = open_store(path, busy_timeout_ms)
    try:
        marks = ",".join("?" * len(thread_ids))
        rows = conn.execute(
            "SELECT s.id, coalesce(max(m.rowid), 0) FROM sessions AS s"  # noqa: S608 - placeholders
            f" LEFT JOIN messages AS m ON m.session_id = s.id WHERE s.id IN ({marks})"
            " GROUP BY s.id", tuple(thread_ids)).fetchall()
    finally:
        conn.close()
    return {str(sid): seq for sid, seq in rows if isinstance(seq, int)}


def _ids(path: str) -> list[str]:
    try:
        conn = open_store(path)
        try:
            return [str(i) for (i,) in conn.execute(
                f"SELECT id FROM sessions ORDER BY NOT ({TOP_LEVEL}), created_at, rowid")]  # noqa: S608
        finally:
            conn.close()
    except apsw.Error as exc:
        raise SessionStateError(f"cannot read {path}: {store_problem(exc)}") from None


def classify(path: str, session: str | None, cap: int) -> Iterator[dict[str, Any]]:
    """``ssa classify`` of one session: ``{"message", "session", "human", "reason"}``.

    Raises:
        InvalidArgument: no ``--session`` (the message lists the store's sessions).
        SessionStateError: the store cannot be read, or holds no such session.
    """
    readable(path)
    if not session:
        raise InvalidArgument(pick_one(path, _ids(path), "--session ID is required for crush"))
    try:
        conn = open_store(path)
        try:
            found = _session(conn, session)
            messages = read_crush_messages(conn, session_id=session, limit=1 << 30).messages
        finally:
            conn.close()
    except apsw.Error as exc:
        raise SessionStateError(f"cannot read {path}: {store_problem(exc)}") from None
    if found is None:
        raise SessionStateError(pick_one(path, _ids(path), f"no Crush session {session!r}"))
    for message, unit in classify_crush_rows(messages, {found.id: found}):
        yield {"message": message.id, "session": session, "human": unit.human,
               "reason": unit.reason}


def project(path: str, thread_id: str) -> str | None:
    """The project the store is in (the parent of its ``.crush`` directory)."""
    return str(Path(os.path.realpath(path)).parent.parent)


READING = Reading(baseline=baseline, scan=scan, classify=classify, project=project,
                  sample=sample, type_turn=type_turn, poll=sequences, problem=store_problem)
"""Crush's :class:`~actors.upstream.reading.Reading`: a store source, as OpenCode's."""
