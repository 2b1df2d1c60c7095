"""Opening a Crush store read-only, and which of its sessions are top-level.

APSW only: the light half (:mod:`actors.upstream.crush.source`) and the
heavy half (:mod:`actors.upstream.crush.reading`) both use it.
"""

from __future__ import annotations

import os

import apsw

from actors.upstream.sqlite_problems import StoreWords, sqlite_store_problem

__all__ = ["TOP_LEVEL", "WORDS", "open_store", "store_problem"]

WORDS = StoreWords(store="Crush's .crush/crush.db",
                   not_ours="not a Crush database (no sessions or messages table)")
"""Crush's phrases for :func:`~actors.upstream.sqlite_problems.sqlite_store_problem`."""

TOP_LEVEL = ("(parent_session_id IS NULL OR parent_session_id = '')"
             " AND id NOT LIKE 'title-%' AND instr(id, '$$') = 0")
"""SQL: a session that is neither a sub-agent's task session nor the title generator's."""


def open_store(db: str | os.PathLike[str], busy_timeout_ms: int = 1000) -> apsw.Connection:
    """Open a ``crush.db`` read-only (``SQLITE_OPEN_READONLY``, ``query_only``).

    The file is opened by its real path, not a ``file:`` URI: nothing in
    its name is read as a URI part, and no :mod:`pathlib` (``ssa hook``'s
    start-up) is needed.

    Raises:
        apsw.Error: it cannot be opened.
    """
    conn = apsw.Connection(os.path.realpath(db), flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(busy_timeout_ms)
    conn.execute("PRAGMA query_only = ON")
    return conn


def store_problem(exc: BaseException) -> str:
    """What is wrong with a Crush store, given the error reading it raised (pure).

    Returns a short phrase completing "cannot read PATH: ...", in a user's
    words rather than SQLite's (``"not a SQLite database (give Crush's
    .crush/crush.db)"``); the phrases are :data:`WORDS`.
    """
    return sqlite_store_problem(exc, WORDS)
