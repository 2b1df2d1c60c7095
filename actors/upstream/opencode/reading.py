"""OpenCode's heavy half: baselines, scans and ``ssa classify`` of ``opencode.db`` sessions.

Built into :data:`READING`, which :func:`actors.upstream.opencode.source.reading`
loads on first use. Sessions are read by their durable event sequence (the
change indicator the upstream service polls per store, once per cadence)
and classified by :mod:`actors.upstream.opencode.store` (anchor §3.17, formats
doc §4.5). Every function runs in the caller's thread and blocks on SQLite;
none raises for a bad store unless its docstring says so.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw

from actors.errors import InvalidArgument, SessionStateError
from actors.upstream.common import NO_OWN_TEXTS, OwnTexts, Unit, text_hash
from actors.upstream.files import file_state
from actors.upstream.opencode import store as opencode
from actors.upstream.opencode.copies import session_fork_time
from actors.upstream.opencode.db import open_opencode_db
from actors.upstream.opencode.kit import sample, type_turn
from actors.upstream.opencode.legacy_json import (
    classify_json_session,
    is_json_storage,
    json_session_ids,
)
from actors.upstream.opencode.problems import store_problem
from actors.upstream.reading import Baseline, Reading, ScanContext, pick_one, readable
from actors.upstream.scanning import ScanResult, StoreHint, count_turns

__all__ = ["READING", "opencode_baseline", "scan_opencode", "sequences"]

logger = logging.getLogger(__name__)


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

    state = file_state(path)
    if state.kind != "ok":
        return f"cannot read {path}: {(state.reason or 'unreadable').replace('_', ' ')}"
    try:
        conn = open_opencode_db(path, busy_timeout_ms=busy_timeout_ms)
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


def _baseline(path: str, thread_id: str | None, from_start: bool,
              busy_timeout_ms: int) -> Baseline | str:
    if thread_id is None:
        return f"{path}: an OpenCode session id is required"
    return opencode_baseline(path, session_id=thread_id, from_start=from_start,
                             busy_timeout_ms=busy_timeout_ms)


def scan_opencode(
    path: str, session_id: str, marker: dict[str, Any], hint: StoreHint | None, *,
    own_texts: OwnTexts, replay_window: int, busy_timeout_ms: int = 1000,
) -> ScanResult:
    """Scan one OpenCode session given this cadence's sequence hint (anchor §3.17).

    Messages are read only when the sequence advanced; a regressed sequence
    re-baselines without counting; a failed query is no news.
    """

    seq = marker.get("seq")
    last = marker.get("lastHumanMessageId")
    if hint is None or hint.state == "failed":
        return ScanResult(kind="no_news", reason="sequence_query_failed")
    if hint.state == "gone":
        return ScanResult(kind="missing", reason="session_gone")
    if not isinstance(seq, int) or not (last is None or isinstance(last, str)):
        return ScanResult(kind="no_news", reason="invalid_marker")
    if hint.seq == seq:
        return ScanResult(kind="no_news", reason="no_advance")
    if hint.seq < seq:
        return ScanResult(kind="activity", reason="sequence_regressed",
                          next_marker={"seq": hint.seq, "lastHumanMessageId": last})
    try:
        conn = open_opencode_db(path, busy_timeout_ms=busy_timeout_ms)
        try:
            messages = opencode.load_messages(conn, session_id)
            forked_at = session_fork_time(conn, session_id)
        finally:
            conn.close()
    except Exception as exc:  # apsw errors or undecodable rows: transient, never a miss
        logger.debug("reading an OpenCode session failed: %s: %s", type(exc).__name__, exc)
        return ScanResult(kind="transient", reason=f"read_failed: {type(exc).__name__}")
    result = opencode.classify_messages(messages, last_human_message_id=last,
                                        replay_window=replay_window,
                                        forked_at=forked_at)
    counted = [(mid, unit) for mid, unit in result.decisions
               if unit.human and not own_texts.claim(text_hash(unit.text), unit.occurred_at)]
    turns, newest = count_turns((unit for _, unit in counted), NO_OWN_TEXTS)
    return ScanResult(
        kind="activity", reason="scanned", human_turns=turns,
        next_marker={"seq": hint.seq, "lastHumanMessageId": result.last_human_message_id},
        occurred_at=newest, dedupe_id=counted[-1][0] if counted else None,
        typed=tuple(text_hash(unit.text) for _, unit in counted),
        typed_ids=tuple(mid for mid, _ in counted),
    )


def units_in(path: str, session_id: str, pointer: dict[str, Any], cap: int) -> Iterator[Unit]:
    """The decided units of the messages ``pointer["ids"]`` names, in the session's order
    (to read typed text back, :mod:`actors.upstream.typedtext`). Caller's thread; blocks on
    one read of the session's messages.

    Raises:
        OSError: the store cannot be read (gone, locked past its timeout, damaged).
    """
    wanted = {i for i in pointer.get("ids", ()) if isinstance(i, str)}
    try:
        conn = open_opencode_db(path, busy_timeout_ms=1000)
        try:
            messages = opencode.load_messages(conn, session_id)
            forked_at = session_fork_time(conn, session_id)
        finally:
            conn.close()
    except OSError:
        raise
    except Exception as exc:  # apsw errors or undecodable rows
        raise OSError(f"cannot read the OpenCode store: {type(exc).__name__}") from exc
    result = opencode.classify_messages(messages, last_human_message_id=None,
                                        replay_window=50, forked_at=forked_at)
    return iter([unit for mid, unit in result.decisions if mid in wanted])


def _scan(path: str, thread_id: str, marker: dict[str, Any], hint: StoreHint | None,
          context: ScanContext) -> ScanResult:
    return scan_opencode(path, thread_id, marker, hint, own_texts=context.own_texts,
                         replay_window=context.replay_window,
                         busy_timeout_ms=context.busy_timeout_ms)


def sequences(path: str, thread_ids: list[str], busy_timeout_ms: int) -> dict[str, int]:
    """The current event sequence of each of these sessions in the store at ``path``.

    A missing store holds none of them (empty result). Blocks on one
    read-only query (at most ``busy_timeout_ms`` behind a lock).

    Raises:
        Exception: the store cannot be opened or queried (apsw errors,
            undecodable rows); that proves nothing about the sessions.
    """
    if file_state(path).kind == "missing":
        return {}
    conn = open_opencode_db(path, busy_timeout_ms=busy_timeout_ms)
    try:
        return opencode.read_sequences(conn, thread_ids)
    finally:
        conn.close()


def _project(path: str, session_id: str) -> str | None:
    """The session row's ``directory``, or ``None``.

    Raises:
        apsw.Error: the store cannot be read.
    """
    conn = open_opencode_db(path)
    try:
        row = conn.execute("SELECT directory FROM session WHERE id = ?", (session_id,)).get
    finally:
        conn.close()
    return row if isinstance(row, str) and row else None


def _classify(path: str, session: str | None, cap: int) -> Iterator[dict[str, Any]]:
    """``ssa classify`` of one session of a store (or of a JSON-era ``storage`` directory)."""
    if os.path.isdir(path):
        yield from _opencode_json(path, session)
        return
    readable(path)
    yield from _opencode(path, session)


def _db_session_ids(path: str) -> list[str]:
    """The store's session ids, oldest first (top-level sessions before child sessions).

    Raises:
        SessionStateError: the store cannot be read (said in a user's terms).
    """

    try:
        conn = open_opencode_db(path)
        try:
            return [str(i) for (i,) in conn.execute(
                "SELECT id FROM session ORDER BY parent_id IS NOT NULL, time_created, id")]
        finally:
            conn.close()
    except apsw.Error as exc:
        raise SessionStateError(f"cannot read {path}: {store_problem(exc)}") from None


def _opencode(path: str, session: str | None) -> Iterator[dict[str, Any]]:
    if not session:
        raise InvalidArgument(pick_one(path, _db_session_ids(path),
                                        "--session ID is required for opencode"))

    try:
        decisions = opencode.classify_db_session(path, session)
    except LookupError:
        raise SessionStateError(pick_one(path, _db_session_ids(path),
                                          f"no OpenCode session {session!r}")) from None
    except apsw.Error as exc:
        raise SessionStateError(f"cannot read {path}: {store_problem(exc)}") from None
    for message_id, unit in decisions:
        yield {"message": message_id, "session": session, "human": unit.human,
               "reason": unit.reason}


def _opencode_json(path: str, session: str | None) -> Iterator[dict[str, Any]]:
    if not is_json_storage(Path(path)):
        raise SessionStateError(f"{path} is not an OpenCode database or JSON storage directory")
    if not session:
        raise InvalidArgument(pick_one(path, json_session_ids(Path(path)),
                                        "--session ID is required for opencode"))
    try:
        decisions = classify_json_session(Path(path), session)
    except LookupError:
        raise SessionStateError(pick_one(path, json_session_ids(Path(path)),
                                          f"no OpenCode session {session!r}")) from None
    except OSError as exc:
        raise SessionStateError(f"cannot read {path}: {exc}") from exc
    for message_id, unit in decisions:
        yield {"message": message_id, "session": session, "human": unit.human,
               "reason": unit.reason}


READING = Reading(baseline=_baseline, scan=_scan, classify=_classify, project=_project,
                  units_in=units_in,
                  sample=sample, type_turn=type_turn, poll=sequences, problem=store_problem)
"""OpenCode's :class:`~actors.upstream.reading.Reading`."""
