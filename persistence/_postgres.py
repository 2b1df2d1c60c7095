"""The PostgreSQL backend (psycopg 3): one signal log shared by gateways on several hosts.

The shared transaction functions run unchanged: :class:`PgConnection` gives
them the APSW shape they are written against (``?`` placeholders, a cursor
with ``get``). What is PostgreSQL's own:

* **Ordering and race freedom.** Every write transaction takes one
  transaction-scoped advisory lock of the schema first
  (``pg_advisory_xact_lock``), so write transactions of all processes on all
  hosts run one at a time, exactly as SQLite's write lock makes them: the
  cursor transitions read and write their rows without a race, and
  sequence numbers are committed in order (a reader that saw sequence *n*
  never later finds a smaller one appear). Each process still commits its
  writes in groups, so the lock is taken once per batch, not per event.
  Reads take no lock (MVCC); a multi-statement read runs in one
  ``REPEATABLE READ`` snapshot.
* **Wakes are pushed.** A trigger on ``session_wakes`` sends ``NOTIFY``
  inside the transaction that adds a wake row; the payload is the watcher
  key (no message text). Every hosting process ``LISTEN``\\ s; after a lost
  connection it reconnects with backoff and claims again, which re-sweeps
  everything owed to its watchers, so no wake is lost across a reconnect.
* **Presence** is a session-level shared advisory lock on a connection held
  for the gateway's life; the opener that can take it exclusively (inside
  the write lock) is alone and runs the restart sweep.
* **Faults** are classified by SQLSTATE: a lost connection, an unreachable
  server, a statement or lock timeout, a read-only standby, a full disk are
  storage faults (producers log and return ``None``); the next transaction
  reconnects.

The connection adapter, its reconnection and the error classification live
in :mod:`persistence._pg_connection`; the presence lock and the wake
listener in :mod:`persistence._pg_signals`; the schema in
:mod:`persistence._pg_schema`. This module holds the backend itself and the
parsing of its URL, and is the only way in: it turns a missing psycopg into
:class:`~persistence.errors.BackendNotInstalled`.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from persistence._schema import SCHEMA_VERSION
from persistence._transaction import write_transaction
from persistence.errors import (
    BackendNotInstalled,
    DriverError,
    InvalidLocation,
    SchemaError,
    StorageError,
)

try:
    import psycopg
    from psycopg import sql as pgsql
except ImportError as exc:  # pragma: no cover - exercised by the no-extra test in a subprocess
    raise BackendNotInstalled(
        "a postgresql:// database needs the PostgreSQL extra (psycopg 3): "
        "python -m pip install '.[postgres]' in the project's checkout") from exc

from persistence._pg_connection import (
    PgConnection,
    first_line,
    is_fatal_state,
    is_fault_state,
    sqlstate_of,
)
from persistence._pg_schema import APPLICATION, migrate
from persistence._pg_signals import PgListener, PgPresence

__all__ = ["DEFAULT_SCHEMA", "PostgresBackend", "parse_location"]

DEFAULT_SCHEMA = "ssa"
CONNECT_TIMEOUT_S = 3
"""libpq ``connect_timeout``: how long one connection attempt may take, in s."""
LIBPQ_DEFAULTS: dict[str, str] = {
    "connect_timeout": str(CONNECT_TIMEOUT_S),
    "keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2",
    "keepalives_count": "3", "tcp_user_timeout": "5000",
}
"""Connection parameters used unless the URL sets them: a server that stopped
answering (a network partition, a host gone) is given up on after about 11 s
of silence (keepalives) or 5 s of unacknowledged data (``tcp_user_timeout``,
ms), instead of the kernel's 15 minutes; the connection then reconnects. A
producer call caught in a partition so returns ``None`` within about 8 s (5 s
and one connection attempt), inside ``ask_timeout_s``."""
STALL_TIMEOUT_FLOOR_MS = 5000
"""The shortest ``idle_in_transaction_session_timeout`` we set, in ms: a
busy process may idle that long between two statements of its own
transaction without the server ending it."""
_IDLE_SESSION_TIMEOUT_SINCE = 140000
"""``idle_session_timeout`` exists from PostgreSQL 14."""
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,47}")


def _query_key(item: str) -> str:
    return unquote(item.split("=", 1)[0])


def parse_location(url: str) -> tuple[str, str, str]:
    """Split a ``postgresql://`` URL into ``(conninfo, schema, shown)``.

    ``schema`` comes from the URL's ``schema`` query parameter (ours, not
    libpq's; default ``ssa``); ``conninfo`` is the URL without it, otherwise
    exactly as given (libpq reads it: empty hosts, socket directories and
    percent escapes keep their meaning); ``shown`` is the URL without any
    password (in the user part or as ``?password=``), for messages.

    Raises:
        InvalidLocation: libpq refuses the URL, it names more than one
            schema, or the schema name is not a lower-case identifier of at
            most 48 characters.
    """
    scheme, _, rest_of_url = url.partition("://")
    base, has_query, query = f"{scheme.lower()}://{rest_of_url}".partition("?")
    items = [item for item in query.split("&") if item] if has_query else []
    schemas = [unquote(item.split("=", 1)[1]) if "=" in item else ""
               for item in items if _query_key(item) == "schema"]
    if len(schemas) > 1:
        raise InvalidLocation("the PostgreSQL URL names more than one schema")
    schema = schemas[0] if schemas else DEFAULT_SCHEMA
    if not _SCHEMA_NAME.fullmatch(schema):
        raise InvalidLocation(
            f"schema {schema!r} in the PostgreSQL URL must be a lower-case identifier "
            "(letters, digits, underscores; at most 48 characters)")
    kept = [item for item in items if _query_key(item) != "schema"]
    conninfo = base + ("?" + "&".join(kept) if kept else "")
    try:
        psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.Error as exc:
        raise InvalidLocation(f"not a valid PostgreSQL URL: {first_line(str(exc))}") from None
    scheme, _, after = base.partition("://")
    netloc, slash, path = after.partition("/")
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        netloc = f"{user.split(':', 1)[0]}@{host}"
    shown_items = [item for item in items if "password" not in _query_key(item).lower()]
    shown = f"{scheme}://{netloc}{slash}{path}" + (
        "?" + "&".join(shown_items) if shown_items else "")
    return conninfo, schema, shown


def _lock_id(kind: str, schema: str) -> int:
    """The advisory lock ``kind`` (``write``, ``presence``) of ``schema``: a signed 64-bit id.

    A 64-bit hash, so two schemas (of one database) never share a lock in
    practice (about 2**-64 per pair); stable across processes and versions.
    """
    digest = hashlib.blake2b(f"session-state-awareness/{kind}/{schema}".encode(),
                             digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresBackend:
    """The signal log in a PostgreSQL schema, shared by gateways on any number of hosts.

    Args:
        url: a libpq ``postgresql://`` URL; its ``schema`` query parameter
            names the schema (default ``ssa``).
        busy_timeout_ms: how long a write transaction waits for the log's
            write lock (``lock_timeout``), in ms.

    Raises:
        InvalidLocation: the URL or the schema name is not valid.

    See :class:`persistence._backend.Backend` for the methods. Thread-safe.
    """

    name: str = "postgresql"
    shares_hosts = True

    def __init__(self, url: str, *, busy_timeout_ms: int = 5000) -> None:
        self._conninfo, self.schema, self.location = parse_location(url)
        self.path: Path | None = None
        self._busy_timeout_ms = max(1, busy_timeout_ms)  # 0 is "never time out" to the server
        self.stall_timeout_ms = max(2 * busy_timeout_ms, STALL_TIMEOUT_FLOOR_MS)
        """How long the server lets one of our sessions idle inside a
        transaction before it ends it (``idle_in_transaction_session_timeout``,
        ms): a stalled process frees the write lock for the others."""
        self._presence_lock = _lock_id("presence", self.schema)
        self._presences: list[PgPresence] = []
        self.channel = f"{self.schema}_wakes"
        """The ``NOTIFY`` channel of wake rows."""
        self._begin = f"BEGIN; SELECT pg_advisory_xact_lock({_lock_id('write', self.schema)})"
        given = psycopg.conninfo.conninfo_to_dict(self._conninfo)
        self._conninfo = psycopg.conninfo.make_conninfo(
            self._conninfo, **{k: v for k, v in LIBPQ_DEFAULTS.items() if k not in given})

    def raw_connect(self, *, writer: bool, keep_idle: bool = False) -> psycopg.Connection[Any]:
        """A configured psycopg connection (autocommit, our schema on the search path).

        Args:
            writer: it may write (else every transaction is a read-only
                ``REPEATABLE READ`` snapshot).
            keep_idle: exempt it from the server's ``idle_session_timeout``
                (the presence and listening connections idle by design).

        Every session also sends TCP keepalives from the server's side, so
        the server ends a session whose client vanished (and drops its
        locks) within about 11 s, not the system's two hours.

        Raises:
            psycopg.Error: the server refused or did not answer.
        """
        conn = psycopg.connect(self._conninfo, autocommit=True, application_name=APPLICATION)
        try:
            settings: list[pgsql.Composable] = [
                pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(self.schema)),
                pgsql.SQL("SET lock_timeout = {}").format(pgsql.Literal(self._busy_timeout_ms)),
                # A client that stops mid-transaction (frozen, partitioned, gone)
                # must not hold the log's write lock: the server ends its session.
                pgsql.SQL("SET idle_in_transaction_session_timeout = {}").format(
                    pgsql.Literal(self.stall_timeout_ms)),
                pgsql.SQL("SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2;"
                          " SET tcp_keepalives_count = 3"),
            ]
            if keep_idle and conn.info.server_version >= _IDLE_SESSION_TIMEOUT_SINCE:
                settings.append(pgsql.SQL("SET idle_session_timeout = 0"))
            if not writer:
                settings.append(pgsql.SQL(
                    "SET default_transaction_isolation = 'repeatable read'"))
                settings.append(pgsql.SQL("SET default_transaction_read_only = on"))
            conn.execute(pgsql.SQL("; ").join(settings))
        except BaseException:
            conn.close()
            raise
        return conn

    def prepare(self) -> None:
        """Nothing: the schema is created by the first :meth:`connect` with ``migrate``."""

    def connect(self, *, writer: bool, migrate: bool = False) -> PgConnection:
        """A :class:`PgConnection`; with ``migrate`` the schema is created or upgraded first."""
        try:
            conn = PgConnection(self, writer=writer)
        except DriverError as exc:
            raise StorageError(f"cannot connect to {self.location}: {exc}") from exc
        if migrate:
            try:
                self._migrate(conn)
            except BaseException:
                conn.close()
                raise
        return conn

    def _migrate(self, conn: PgConnection) -> None:
        try:
            with write_transaction(self, conn):
                migrate(conn, self.schema)
        except DriverError as exc:
            if exc.sqlstate == "42501":
                raise SchemaError(
                    f"{self.location}: the role may not create schema {self.schema!r} or its "
                    f"tables at version {SCHEMA_VERSION} ({exc}); open it once as a role that "
                    "may (the schema's owner), see the PostgreSQL privileges in docs/deployment.md"
                ) from exc
            raise StorageError(f"cannot set up schema {self.schema!r} at {self.location}: "
                               f"{exc}") from exc

    def begin_write(self, conn: Any) -> None:
        """``BEGIN`` and the schema's advisory write lock, in one round trip.

        First the gateway's presence lock is taken again if the server
        dropped it (:meth:`PgPresence.refresh`: one poll of its socket when
        it holds), so a gateway that writes is seen as present.
        """
        for presence in self._presences:
            presence.refresh()
        conn.script(self._begin)

    def is_driver_error(self, exc: BaseException) -> bool:
        """Whether ``exc`` is psycopg's (raw or as a :class:`DriverError`)."""
        return isinstance(exc, DriverError | psycopg.Error)

    def is_fault(self, exc: BaseException) -> bool:
        """A lost or refused connection, a timeout, a standby, a full disk, I/O."""
        if not self.is_driver_error(exc):
            return False
        return is_fault_state(sqlstate_of(exc))

    def is_fatal(self, exc: BaseException) -> bool:
        """Data or index corruption reported by the server."""
        return self.is_driver_error(exc) and is_fatal_state(sqlstate_of(exc))

    def storage_problem(self) -> None:
        """Nothing to check before a write: the server reports its faults."""
        return

    def write_count(self, conn: Any) -> int:
        """Rows changed through ``conn`` so far."""
        return int(conn.total_changes())

    def presence(self) -> PgPresence:
        """A shared session-level advisory lock on a connection of its own.

        The backend keeps it, and refreshes it before each write transaction.
        """
        presence = PgPresence(self, self._presence_lock)
        self._presences.append(presence)
        return presence

    def wake_signal(self, stop: threading.Event, interval_s: float,
                    interested: Callable[[str], bool]) -> PgListener:
        """``LISTEN`` on the wake channel, on a connection of its own."""
        return PgListener(self, stop, interested)

