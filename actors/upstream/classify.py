"""``ssa classify``: the monitor's own decisions over a whole transcript."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import Any, BinaryIO

import apsw

from actors.errors import InvalidArgument, SessionStateError
from actors.upstream.baseline import jsonl_baseline
from actors.upstream.files import file_state
from actors.upstream.longline import LineReducer
from actors.upstream.opencode_problems import store_problem
from actors.upstream.scan import classify_long_line, line_classifier

__all__ = ["classify_units"]


def classify_units(source: str, path: str, *, session: str | None = None,
                   scan_cap_bytes: int = 1 << 20) -> Iterator[dict[str, Any]]:
    """Yield the monitor's decision for each unit of a transcript.

    JSONL sources yield ``{"line": n, "human": ..., "reason": ...}`` per
    non-blank line (0-based index), exactly as a monitor scanning the file
    from its start would decide: a final line without a newline is
    ``partial_line`` (it waits), a line longer than ``scan_cap_bytes`` is
    read in pieces and classified on its reduced copy (see
    :mod:`actors.upstream.longline`; memory stays bounded whatever its
    length), every line behind a line that stops a scan (``"stop": true``)
    is ``not_reached``; for a source that gets no upstream link (legacy Pi,
    a Codex thread not started by a user) every line is
    ``not_monitored: <why>``. OpenCode yields
    ``{"message": id, "session": id, "human": ..., "reason": ...}`` per message;
    ``path`` may also be a JSON-era (≤ 1.1) ``storage`` directory.
    Runs in the caller's thread; reads the file lazily.

    Raises:
        InvalidArgument: OpenCode without ``session`` (the message lists the
            store's session ids), ``session`` for another source (its
            transcripts hold one session each), or an unknown source.
        SessionStateError: the file cannot be read (the message says why in
            a user's terms).
    """
    if session is not None and source != "opencode":
        raise InvalidArgument(f"--session is only for --source opencode (a {source} "
                              "transcript holds one session: give its file)")
    if source == "opencode" and os.path.isdir(path):
        yield from _opencode_json(path, session)
        return
    state = file_state(path)
    if state.kind != "ok":
        why = "not found" if state.reason == "not_found" else state.reason.replace("_", " ")
        raise SessionStateError(f"cannot read {path}: {why}")
    if source == "opencode":
        yield from _opencode(path, session)
        return
    try:
        classify = line_classifier(source, path)
    except KeyError:
        raise InvalidArgument(f"unknown source {source!r}") from None
    baseline = jsonl_baseline(source, path, thread_id=None, from_start=True)
    refusal = baseline.refusal if baseline is not None else None
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
                if len(line) > scan_cap_bytes:
                    reducer, complete = _read_long_line(handle, line, scan_cap_bytes)
                elif not line.strip():
                    continue
                entry: dict[str, Any] = {"line": index, "human": False}
                if blocked_by is not None:
                    entry["reason"] = "not_reached"
                elif not complete:
                    entry["reason"] = "partial_line"
                else:
                    unit = (classify_long_line(classify, reducer) if reducer is not None
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


def _read_long_line(handle: BinaryIO, first: bytes, cap: int) -> tuple[LineReducer, bool]:
    """Feed a line longer than ``cap`` to a reducer, ``cap`` bytes at a time.

    Returns the reducer and whether the line ended with a newline (a final
    line without one is partial: the monitor waits for it).
    """
    reducer = LineReducer()
    piece = first
    while True:
        reducer.feed(piece.rstrip(b"\n"))
        if piece.endswith(b"\n"):
            return reducer, True
        piece = handle.readline(cap)
        if not piece:
            return reducer, False


SHOWN_IDS = 10
"""Session ids an error message lists at most (the rest are counted)."""


def _pick_one(path: str, ids: list[str], what: str) -> str:
    """The message for a missing or unknown ``--session``: the ids the store holds."""
    if not ids:
        return f"{what}, but {path} holds no sessions"
    shown = ", ".join(ids[:SHOWN_IDS])
    more = f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else ""
    return f"{what}; {path} holds {len(ids)} sessions: {shown}{more}"


def _db_session_ids(path: str) -> list[str]:
    """The store's session ids, oldest first (top-level sessions before child sessions).

    Raises:
        SessionStateError: the store cannot be read (said in a user's terms).
    """
    from actors.upstream.opencode import open_opencode_db  # noqa: PLC0415

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
        raise InvalidArgument(_pick_one(path, _db_session_ids(path),
                                        "--session ID is required for opencode"))
    from actors.upstream.opencode import classify_db_session  # noqa: PLC0415

    try:
        decisions = classify_db_session(path, session)
    except LookupError:
        raise SessionStateError(_pick_one(path, _db_session_ids(path),
                                          f"no OpenCode session {session!r}")) from None
    except apsw.Error as exc:
        raise SessionStateError(f"cannot read {path}: {store_problem(exc)}") from None
    for message_id, unit in decisions:
        yield {"message": message_id, "session": session, "human": unit.human,
               "reason": unit.reason}


def _opencode_json(path: str, session: str | None) -> Iterator[dict[str, Any]]:
    from pathlib import Path  # noqa: PLC0415

    from actors.upstream.opencode_json import (  # noqa: PLC0415
        classify_json_session,
        is_json_storage,
        json_session_ids,
    )

    if not is_json_storage(Path(path)):
        raise SessionStateError(f"{path} is not an OpenCode database or JSON storage directory")
    if not session:
        raise InvalidArgument(_pick_one(path, json_session_ids(Path(path)),
                                        "--session ID is required for opencode"))
    try:
        decisions = classify_json_session(Path(path), session)
    except LookupError:
        raise SessionStateError(_pick_one(path, json_session_ids(Path(path)),
                                          f"no OpenCode session {session!r}")) from None
    except OSError as exc:
        raise SessionStateError(f"cannot read {path}: {exc}") from exc
    for message_id, unit in decisions:
        yield {"message": message_id, "session": session, "human": unit.human,
               "reason": unit.reason}
