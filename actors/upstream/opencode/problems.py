"""Why an OpenCode store could not be read, in a user's words (no SQL, no driver internals).

OpenCode's phrases for :func:`actors.upstream.sqlite_problems.sqlite_store_problem`
(``ssa classify``, ``ssa watch``'s discovery and adoption). Pure; any thread.
"""

from __future__ import annotations

from actors.upstream.sqlite_problems import StoreWords, sqlite_store_problem

__all__ = ["WORDS", "store_problem"]

WORDS = StoreWords(
    store="OpenCode's opencode.db",
    not_ours="not an OpenCode database (it has no OpenCode session tables)",
    old_layout=("an OpenCode database of a layout this release does not read "
                "(OpenCode 1.2 or newer is read)"),
    mismatch="an OpenCode database whose rows this release does not understand")
"""OpenCode's phrases."""


def store_problem(exc: BaseException) -> str:
    """What is wrong with an OpenCode database, given the error reading it raised.

    Args:
        exc: the exception (usually an :class:`apsw.Error`) from opening or
            querying the store.

    Returns:
        A short phrase that completes "cannot read PATH: ...", e.g. ``"not
        a SQLite database (give OpenCode's opencode.db)"``. Pure; never raises.
    """
    return sqlite_store_problem(exc, WORDS)
