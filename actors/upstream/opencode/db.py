"""Opening ``opencode.db`` read-only (formats doc §4.1, §6): APSW and the standard library only.

Light on purpose: discovery (``ssa hook`` at every prompt) opens stores
with it, as do the heavy readers. Pure apart from the open itself.
"""

from __future__ import annotations

import os

import apsw

__all__ = ["open_opencode_db"]


def open_opencode_db(path: str | os.PathLike[str], *,
                     busy_timeout_ms: int = 1000) -> apsw.Connection:
    """Open ``opencode.db`` read-only (formats doc §4.1, §6).

    The file is opened by its real path (not a ``file:`` URI, so nothing in
    its name is read as a URI part) with ``SQLITE_OPEN_READONLY`` and
    ``PRAGMA query_only``, so
    the connection can neither write nor checkpoint. It reads safely while
    OpenCode writes in WAL mode: it sees the last committed transaction and
    never blocks a writer. (SQLite may create the ``-wal``/``-shm`` side files
    of a WAL database, as every reader does; the database is not changed.)
    ``trusted_schema`` is off, so the foreign schema cannot run functions.

    Args:
        path: the database file (``~/.local/share/opencode/opencode.db``).
        busy_timeout_ms: how long a statement waits for another process's
            lock before raising :class:`apsw.BusyError`.

    Returns:
        The connection; the caller closes it. Use it from one thread at a time.

    Raises:
        apsw.Error: the file cannot be opened (``CantOpenError`` when missing).
        ValueError: ``busy_timeout_ms`` is negative.
    """
    if busy_timeout_ms < 0:
        raise ValueError(f"busy_timeout_ms must be >= 0, got {busy_timeout_ms}")
    conn = apsw.Connection(os.path.realpath(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA trusted_schema = OFF")
    except BaseException:
        conn.close()
        raise
    return conn
