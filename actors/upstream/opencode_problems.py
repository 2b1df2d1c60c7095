"""Why an OpenCode store could not be read, in a user's words (no SQL, no driver internals).

``ssa classify``, ``ssa watch``'s discovery and adoption report an unreadable
``opencode.db`` with :func:`store_problem` instead of SQLite's own message
(``no such table: session``, ``no such column: parent_id``), which names our
queries rather than what is wrong with the file. Pure; any thread.
"""

from __future__ import annotations

import apsw

__all__ = ["store_problem"]


def store_problem(exc: BaseException) -> str:
    """What is wrong with an OpenCode database, given the error reading it raised.

    Args:
        exc: the exception (usually an :class:`apsw.Error`) from opening or
            querying the store.

    Returns:
        A short phrase that completes "cannot read PATH: ...", e.g. ``"not
        a SQLite database"``.
    """
    message = str(exc)
    if isinstance(exc, apsw.NotADBError):
        return "not a SQLite database (give OpenCode's opencode.db)"
    if isinstance(exc, apsw.CantOpenError):
        return "it cannot be opened (missing, or not readable by this user)"
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return "another process holds it locked (try again)"
    if isinstance(exc, apsw.CorruptError):
        return "the database is damaged (SQLite reports it corrupt)"
    if isinstance(exc, apsw.SQLError) and "no such table" in message:
        return "not an OpenCode database (it has no OpenCode session tables)"
    if isinstance(exc, apsw.SQLError) and "no such column" in message:
        return ("an OpenCode database of a layout this release does not read "
                "(OpenCode 1.2 or newer is read)")
    if isinstance(exc, apsw.MismatchError):
        return "an OpenCode database whose rows this release does not understand"
    if isinstance(exc, apsw.Error):
        return f"SQLite could not read it ({type(exc).__name__.removesuffix('Error')})"
    return f"it could not be read ({type(exc).__name__})"
