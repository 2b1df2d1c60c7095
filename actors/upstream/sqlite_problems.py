"""Why a tool's SQLite store could not be read, in a user's words (no SQL, no driver
internals).

``ssa classify``, ``ssa watch``'s discovery and adoption report an unreadable
store with :func:`sqlite_store_problem` instead of SQLite's own message (``no
such table: session``, ``no such column: parent_id``), which names our queries
rather than what is wrong with the file. Each store source gives its own
:class:`StoreWords`. Pure; any thread.
"""

from __future__ import annotations

import apsw

from persistence.record import Record

__all__ = ["StoreWords", "sqlite_store_problem"]


class StoreWords(Record):
    """The tool's phrases for :func:`sqlite_store_problem`.

    Attributes:
        store: the file to give instead (``"OpenCode's opencode.db"``).
        not_ours: a SQLite database without the tool's tables.
        old_layout: the tool's tables without a column we read (``None``: ``not_ours``).
        mismatch: rows of a type we cannot read (``None``: SQLite's generic phrase).
    """

    __slots__ = ("mismatch", "not_ours", "old_layout", "store")

    def __init__(self, store: str, not_ours: str, old_layout: str | None = None,
                 mismatch: str | None = None) -> None:
        self.store = store
        self.not_ours = not_ours
        self.old_layout = old_layout
        self.mismatch = mismatch


def sqlite_store_problem(exc: BaseException, words: StoreWords) -> str:
    """What is wrong with a store, given the error reading it raised.

    Args:
        exc: the exception (usually an :class:`apsw.Error`) from opening or
            querying the store.
        words: the tool's phrases.

    Returns:
        A short phrase that completes "cannot read PATH: ...", e.g. ``"not a
        SQLite database (give OpenCode's opencode.db)"``. Pure; never raises.
    """
    message = str(exc)
    if isinstance(exc, apsw.NotADBError):
        return f"not a SQLite database (give {words.store})"
    if isinstance(exc, apsw.CantOpenError):
        return "it cannot be opened (missing, or not readable by this user)"
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return "another process holds it locked (try again)"
    if isinstance(exc, apsw.CorruptError):
        return "the database is damaged (SQLite reports it corrupt)"
    if isinstance(exc, apsw.SQLError) and "no such column" in message:
        return words.old_layout or words.not_ours
    if isinstance(exc, apsw.SQLError) and "no such table" in message:
        return words.not_ours
    if isinstance(exc, apsw.MismatchError) and words.mismatch is not None:
        return words.mismatch
    if isinstance(exc, apsw.Error):
        return f"SQLite could not read it ({type(exc).__name__.removesuffix('Error')})"
    return f"it could not be read ({type(exc).__name__})"
