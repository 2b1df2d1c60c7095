"""``ssa status`` and ``ssa list``: an existing signal log, opened read-only.

Never creates a database; refuses (one line, :class:`SessionStateError`) a
file that is missing, not ours, newer, incomplete or damaged, and a
PostgreSQL schema that is missing or not readable. Caller's thread; blocks
on the database.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw

from actors.errors import SessionStateError
from actors.facade.gateway import default_state_path
from persistence import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    StorageError,
    check_integrity,
    open_backend,
    open_connection,
)
from persistence.errors import DatabaseCorrupt, InvalidLocation, recovery_hint
from persistence.locations import utf8_problem

__all__ = ["DB_ENV", "open_existing"]

DB_ENV = "SSA_DB"
"""The environment variable that names the database when ``--db`` is not given."""

_SIGNAL_LOG_TABLES = ("session_state_events", "session_state_heads", "sessions")
"""The tables ``ssa status`` and ``ssa list`` read."""


def open_existing(db: Path | str | None, named_by: str | None = None) -> tuple[Any, str]:
    """A read-only connection to an existing signal log and where it is (never creates one).

    ``named_by``: what named ``db`` (``"--db"`` or ``"$SSA_DB"``; ``None``: the
    default location), for the message when there is no file.

    Returns:
        ``(connection, location for messages)``.

    Raises:
        SessionStateError: there is no signal log there, or it cannot be
            read (one line, in the user's terms).
    """
    if isinstance(db, str):
        try:
            backend = open_backend(db)
        except InvalidLocation as exc:
            raise SessionStateError(str(exc)) from None
        conn = backend.connect(writer=False)
        try:
            schema = str(conn.execute("SELECT current_setting('search_path')").get).strip('"')
            if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = ?", (schema,)).get is None:
                problem = "no signal log at {} (open it with a gateway first)"
            elif not conn.execute("SELECT has_schema_privilege(?, 'USAGE')", (schema,)).get:
                problem = f"this role may not read {{}}: GRANT USAGE ON SCHEMA {schema} TO it"
            else:
                conn.execute("SELECT version FROM ssa_schema")
                return conn, backend.location
        except StorageError as exc:
            problem = f"cannot read {{}}: {str(exc).splitlines()[0]}"
        conn.close()
        raise SessionStateError(problem.format(backend.location))
    path = db if db is not None else default_state_path()
    not_utf8 = utf8_problem(path)
    if not_utf8 is not None:
        raise SessionStateError(not_utf8)
    if not path.is_file():
        raise SessionStateError(_no_database(path, named_by))
    try:
        conn = open_connection(str(path))
        try:
            app_id = conn.pragma("application_id")
            version = int(conn.pragma("user_version"))
            tables = {str(name) for (name,) in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table'")}
        except apsw.Error:
            conn.close()
            raise
    except apsw.CorruptError as exc:
        raise SessionStateError(f"{path} is corrupt ({exc}); "
                                f"{recovery_hint(str(path))}") from exc
    except apsw.Error as exc:
        raise SessionStateError(f"cannot read {path}: {exc}") from exc
    refusal = _refusal(conn, path, app_id, version, tables)
    if refusal is not None:
        conn.close()
        raise SessionStateError(refusal)
    return conn, str(path)


def _no_database(path: Path, named_by: str | None) -> str:
    """The one line for a missing SQLite file, in the terms of what named it (pure)."""
    if path.exists():
        return f"{path} is not a database file"
    if named_by is None:
        return (f"no database at {path}, the default location (pass --db PATH or set "
                f"${DB_ENV}). It is made when a session first becomes a manager (ssa "
                "manage, run inside that session), or by ssa watch or a gateway; until then "
                "no session is known")
    return f"no database at {path} (given by {named_by}: check the path)"


def _refusal(conn: Any, path: Path, app_id: int, version: int, tables: set[str]) -> str | None:
    """Why ``ssa status``/``list`` must not read this SQLite file, or ``None``."""
    refusal: str | None = None
    if app_id != APPLICATION_ID:
        refusal = f"{path} is not a session-state database"
    elif version > SCHEMA_VERSION:
        refusal = (f"{path} has schema version {version}; this release reads up to "
                   f"{SCHEMA_VERSION}: upgrade session-state-awareness")
    elif not tables.issuperset(_SIGNAL_LOG_TABLES):
        refusal = (f"{path} is an incomplete session-state database (its tables are "
                   "missing); open it with a gateway to set it up")
    if refusal is None:
        try:
            check_integrity(conn, str(path))  # never answer from a damaged file
        except DatabaseCorrupt as exc:
            refusal = str(exc)
    return refusal
