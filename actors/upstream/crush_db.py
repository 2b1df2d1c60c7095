"""Opening a Crush store read-only, and which of its sessions are top-level.

APSW only: the light half (:mod:`actors.upstream.crush_source`) and the
heavy half (:mod:`actors.upstream.crush_reading`) both use it.
"""

from __future__ import annotations

from pathlib import Path

import apsw

__all__ = ["TOP_LEVEL", "open_store", "store_problem"]

TOP_LEVEL = ("(parent_session_id IS NULL OR parent_session_id = '')"
             " AND id NOT LIKE 'title-%' AND instr(id, '$$') = 0")
"""SQL: a session that is neither a sub-agent's task session nor the title generator's."""


def open_store(db: Path | str, busy_timeout_ms: int = 1000) -> apsw.Connection:
    """Open a ``crush.db`` read-only (``mode=ro`` URI, ``query_only``).

    Raises:
        apsw.Error: it cannot be opened.
    """
    uri = Path(db).resolve().as_uri() + "?mode=ro"
    conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    conn.set_busy_timeout(busy_timeout_ms)
    conn.execute("PRAGMA query_only = ON")
    return conn


def store_problem(exc: BaseException) -> str:
    """What is wrong with a Crush store, given the error reading it raised (pure).

    Returns a short phrase completing "cannot read PATH: ...", in a user's
    words rather than SQLite's (``"not a SQLite database (give Crush's
    .crush/crush.db)"``).
    """
    if isinstance(exc, apsw.NotADBError):
        return "not a SQLite database (give Crush's .crush/crush.db)"
    if isinstance(exc, apsw.CantOpenError):
        return "it cannot be opened (missing, or not readable by this user)"
    if isinstance(exc, apsw.SQLError):
        return "not a Crush database (no sessions or messages table)"
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return "another process holds it locked (try again)"
    if isinstance(exc, apsw.CorruptError):
        return "the database is damaged (SQLite reports it corrupt)"
    return f"it could not be read ({type(exc).__name__})"
