"""Whether the hooks could open the signal log ``ssa install --db`` names (issue 33 item 4).

A ``--db`` the hooks cannot open would make every hook fail at every prompt
with one stderr line the terminal never shows, so ``ssa install`` asks before
it writes anything: a file that exists must be empty or a signal log of this
release or an older one (read-only look: application id, schema version, a
readable header); a missing file is fine (the first hook makes it: the
location rule already checked its folder). A ``postgresql://`` URL must
connect within :data:`CONNECT_TIMEOUT_S` and answer a query.
``--no-db-check`` skips this (installing before the server is up).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import apsw

from persistence import APPLICATION_ID, SCHEMA_VERSION, StorageError, is_url, open_backend
from persistence.errors import InvalidLocation

__all__ = ["CONNECT_TIMEOUT_S", "db_problem"]

CONNECT_TIMEOUT_S = 10.0
"""How long ``ssa install`` waits for a PostgreSQL server to answer, in seconds."""


def db_problem(db: str, *, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why the hooks could not open ``db`` (a path made absolute, or a URL), or ``None``.

    Main thread; blocks on one read-only open of the file, or on one connection and
    query to the server (at most ``timeout_s`` seconds: a server that does not
    answer by then is a problem). Never raises.
    """
    if is_url(db):
        return _url_problem(db, timeout_s)
    return _file_problem(Path(db))


def _file_problem(path: Path) -> str | None:
    try:
        if not path.exists() or path.stat().st_size == 0:
            return None
    except OSError as exc:
        return f"cannot look at {path}: {exc.strerror or exc}"
    if not os.access(path, os.R_OK | os.W_OK):
        return f"{path} cannot be read and written by this user"
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        return f"{path} cannot be opened: {exc}"
    try:
        app_id = int(conn.pragma("application_id"))
        version = int(conn.pragma("user_version"))
        tables = conn.execute("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").get
    except apsw.Error as exc:
        return f"{path} is not a readable SQLite database ({type(exc).__name__}: damaged?)"
    finally:
        conn.close()
    if app_id != APPLICATION_ID and (app_id != 0 or tables):
        return f"{path} is not a session-state database (another program's file?)"
    if version > SCHEMA_VERSION:
        return (f"{path} has schema version {version}; this ssa knows {SCHEMA_VERSION}: "
                "upgrade session-state-awareness")
    return None


def _url_problem(url: str, timeout_s: float) -> str | None:
    answer: list[str | None] = []

    def probe() -> None:
        try:
            conn = open_backend(url).connect(writer=False)
            try:
                conn.execute("SELECT 1").fetchone()
            finally:
                conn.close()
            answer.append(None)
        except (StorageError, InvalidLocation) as exc:
            answer.append(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        except Exception as exc:  # the driver's own error: one line
            answer.append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")

    worker = threading.Thread(target=probe, name="ssa-install-db-check", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if not answer:
        return f"the server did not answer within {timeout_s:g} s"
    problem = answer[0]
    return None if problem is None else f"cannot connect: {problem}"
