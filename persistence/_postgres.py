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
"""

from __future__ import annotations

import hashlib
import logging
import re
import select
import threading
import time
from collections.abc import Callable, Iterator, Sequence
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
    from psycopg.pq import TransactionStatus
except ImportError as exc:  # pragma: no cover - exercised by the no-extra test in a subprocess
    raise BackendNotInstalled(
        "a postgresql:// database needs the PostgreSQL extra (psycopg 3): "
        "python -m pip install '.[postgres]' in the project's checkout") from exc

from persistence._pg_schema import APPLICATION, migrate

__all__ = ["DEFAULT_SCHEMA", "Backoff", "PgConnection", "PostgresBackend", "parse_location"]

logger = logging.getLogger(__name__)

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
RECONNECT_FIRST_S = 0.05
RECONNECT_LONGEST_S = 5.0
"""Backoff between connection attempts after a failure, in s (doubling)."""

_IDLE_SESSION_TIMEOUT_SINCE = 140000
"""``idle_session_timeout`` exists from PostgreSQL 14."""
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,47}")

_FAULT_CLASSES = ("08", "53", "57", "58", "40")
"""SQLSTATE classes that are storage faults: connection exception, insufficient
resources (disk full), operator intervention (shutdown, statement timeout),
system error (I/O), transaction rollback (serialization, deadlock)."""
_FAULT_STATES = frozenset({"25006", "55P03", "55006", "42501"})
"""Read-only transaction (a standby), lock not available (lock timeout),
object in use, insufficient privilege (a role revoked meanwhile)."""
_FATAL_STATES = frozenset({"XX001", "XX002"})
"""Data or index corrupted: the database cannot be trusted."""


class Backoff:
    """When the next connection attempt may run after failures: doubling delays, capped.

    Args:
        first_s: the delay after the first failure, in s (default
            :data:`RECONNECT_FIRST_S`).
        longest_s: the longest delay, in s (default :data:`RECONNECT_LONGEST_S`).
        monotonic: the clock, in s from any origin (default ``time.monotonic``).

    Pure but for the clock; one thread at a time; never blocks.
    """

    def __init__(self, first_s: float | None = None, longest_s: float | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._first = RECONNECT_FIRST_S if first_s is None else first_s
        self._longest = RECONNECT_LONGEST_S if longest_s is None else longest_s
        self._monotonic = monotonic
        self._delay = self._first
        self._next = 0.0

    def remaining(self) -> float:
        """Seconds until the next attempt may run (``0.0``: now)."""
        return max(0.0, self._next - self._monotonic())

    def failed(self) -> float:
        """Note a failed attempt; returns the delay before the next one, in s."""
        delay, self._delay = self._delay, min(self._delay * 2, self._longest)
        self._next = self._monotonic() + delay
        return delay

    def succeeded(self) -> None:
        """Note a successful attempt: the next failure waits ``first_s`` again."""
        self._delay = self._first
        self._next = 0.0


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
        raise InvalidLocation(f"not a valid PostgreSQL URL: {_first_line(str(exc))}") from None
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


def _sqlstate(exc: BaseException) -> str | None:
    if isinstance(exc, DriverError):
        return exc.sqlstate
    if isinstance(exc, psycopg.Error):
        return exc.sqlstate
    return None


_HINTS = {"25006": " (the server is read-only: a standby? Open the gateway on the primary)"}
"""What to add to the server's message for SQLSTATEs whose cause is not plain."""


def _first_line(text: str) -> str:
    """libpq's messages carry ``LINE n:`` context and hints on further lines."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _wrap(exc: psycopg.Error) -> DriverError:
    error = DriverError(f"{type(exc).__name__}: {_first_line(str(exc))}"
                        f"{_HINTS.get(exc.sqlstate or '', '')}", exc.sqlstate)
    error.__cause__ = exc
    return error


_TRANSLATED: dict[str, str] = {}


def _translate(statement: str) -> str:
    """``?`` placeholders to psycopg's ``%s`` (and a literal ``%`` doubled); cached."""
    done = _TRANSLATED.get(statement)
    if done is None:
        done = statement.replace("%", "%%").replace("?", "%s")
        if len(_TRANSLATED) < 4096:
            _TRANSLATED[statement] = done
    return done


class _Rows:
    """The result of :meth:`PgConnection.execute`, shaped like an APSW cursor."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: psycopg.Cursor[Any] | None) -> None:
        self._cursor = cursor

    def _has_rows(self) -> bool:
        return self._cursor is not None and self._cursor.description is not None

    @property
    def get(self) -> Any:
        """APSW's ``get``: ``None``, the one value, the one row, or a list of rows."""
        if not self._has_rows():
            return None
        rows = self.fetchall()
        if not rows:
            return None
        if len(rows) == 1:
            row = rows[0]
            return row[0] if len(row) == 1 else row
        return [r[0] if len(r) == 1 else r for r in rows]

    def fetchone(self) -> Any:
        """The next row, or ``None``."""
        return self._cursor.fetchone() if self._cursor is not None and self._has_rows() else None

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        return self._cursor.fetchall() if self._cursor is not None and self._has_rows() else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class PgConnection:
    """A psycopg connection with the APSW shape the shared transactions use.

    The connection runs in autocommit mode and the callers issue ``BEGIN``,
    ``SAVEPOINT``, ``COMMIT`` and ``ROLLBACK`` themselves, as on SQLite.
    When the server connection was lost it is re-opened (with backoff) at
    the next statement issued outside a transaction, never in the middle of
    one. Driver errors are raised as :class:`~persistence.errors.DriverError`.

    Args:
        backend: the backend that opens the server connection.
        writer: open for writing (else every transaction is a read-only
            ``REPEATABLE READ`` snapshot).

    One thread at a time; every method blocks on the network.

    Raises:
        DriverError: the first connection failed.
    """

    def __init__(self, backend: PostgresBackend, *, writer: bool) -> None:
        self._backend = backend
        self._writer = writer
        self._conn: psycopg.Connection[Any] | None = None
        self._changes = 0
        self._total = 0
        self._lost = False
        self._backoff = Backoff()
        self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        wait = self._backoff.remaining()
        if wait > 0.0:
            raise DriverError(
                f"the PostgreSQL server is unreachable; reconnecting in {wait:.2f}s", None)
        try:
            conn = self._backend.raw_connect(writer=self._writer)
        except psycopg.Error as exc:
            self._backoff.failed()
            raise _wrap(exc) from exc
        self._backoff.succeeded()
        self._conn = conn
        return conn

    def _live(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            if self._lost:
                raise DriverError("the PostgreSQL connection was lost in this transaction; "
                                  "roll it back", "08006")
            if conn is not None:
                logger.info("reconnecting to PostgreSQL at %s", self._backend.location)
                self._conn = None
            conn = self._connect()
        return conn

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (or was lost with the connection, until rolled back)."""
        if self._lost:
            return True
        conn = self._conn
        return (conn is not None and not conn.broken
                and conn.info.transaction_status != TransactionStatus.IDLE)

    def _run(self, query: Any, params: Sequence[Any] | None, *, prepare: bool | None
             ) -> psycopg.Cursor[Any]:
        conn = self._live()
        fresh = not self.in_transaction
        try:
            return conn.execute(query, params, prepare=prepare)
        except psycopg.Error as exc:
            if not conn.broken:
                raise _wrap(exc) from exc
            if not fresh:
                self._lost = True  # the server rolled it back; only ROLLBACK clears this
                raise _wrap(exc) from exc
            # The connection died before this statement, which opens a
            # transaction or runs on its own (a read): nothing of it ran, so
            # it is safe to say it again once, on a new connection.
            logger.info("the PostgreSQL connection was lost (%s); reconnecting", exc)
        try:
            return self._live().execute(query, params, prepare=prepare)
        except psycopg.Error as exc:
            raise _wrap(exc) from exc

    def execute(self, statement: str, params: Sequence[Any] = (), /) -> _Rows:
        """Run one statement with ``?`` placeholders; returns its rows.

        Raises:
            DriverError: the server refused it or the connection failed.
        """
        if self._lost and statement == "ROLLBACK":
            self._lost = False  # the transaction died with the connection already
            self.close()
            return _Rows(None)
        cursor = self._run(_translate(statement), params, prepare=None)
        count = cursor.rowcount
        self._changes = count if count > 0 else 0
        self._total += self._changes
        return _Rows(cursor)

    def script(self, statements: str) -> None:
        """Run several ``;``-separated statements without parameters (one round trip).

        Raises:
            DriverError: the server refused one or the connection failed.
        """
        self._run(statements.encode(), None, prepare=False)

    def changes(self) -> int:
        """Rows the last statement inserted, updated or deleted."""
        return self._changes

    def total_changes(self) -> int:
        """Rows changed through this connection since it was made."""
        return self._total

    def close(self) -> None:
        """Close the server connection (idempotent)."""
        self._lost = False
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


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
                    "may (the schema's owner), see the README's PostgreSQL privileges"
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
        state = _sqlstate(exc)
        return (state is None or state in _FAULT_STATES or state in _FATAL_STATES
                or state.startswith(_FAULT_CLASSES))

    def is_fatal(self, exc: BaseException) -> bool:
        """Data or index corruption reported by the server."""
        return self.is_driver_error(exc) and _sqlstate(exc) in _FATAL_STATES

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


def _close_quietly(conn: psycopg.Connection[Any] | None) -> None:
    """Close a connection of our own; a failure is only logged (it may be dead already)."""
    if conn is not None:
        try:
            conn.close()
        except psycopg.Error:
            logger.debug("closing a PostgreSQL connection failed", exc_info=True)


class PgPresence:
    """A gateway's presence: a shared advisory lock held on a dedicated connection.

    The server drops it when the connection ends (the process died, the
    network dropped it, the server restarted or ended the session), so a
    dead gateway never looks present. A live gateway whose connection was
    dropped takes the lock again at its next write transaction
    (:meth:`refresh`; a hosting gateway writes at least every third of
    ``lease_ms``). The connection is exempt from ``idle_session_timeout``.

    Args:
        backend: the backend.
        lock: the schema's presence lock id.

    :meth:`join` runs on the opening thread, :meth:`refresh` on the writer's;
    both block on the network.
    """

    def __init__(self, backend: PostgresBackend, lock: int) -> None:
        self._backend = backend
        self._lock = lock
        self._conn: psycopg.Connection[Any] | None = None
        self._joined = False
        self._backoff = Backoff()
        self._guard = threading.Lock()  # refresh (writer) against release (closing thread)
        self.rejoins = 0
        """How often the lock was taken again after a loss (for tests)."""

    def _connect(self) -> psycopg.Connection[Any]:
        conn = self._backend.raw_connect(writer=False, keep_idle=True)
        self._conn = conn
        return conn

    def join(self) -> bool:
        """Hold the lock shared; whether nobody else held it (call inside the write lock).

        Raises:
            StorageError: the server could not be reached.
        """
        try:
            conn = self._connect()
            alone = bool(conn.execute("SELECT pg_try_advisory_lock(%s)",
                                      (self._lock,)).fetchone()[0])  # type: ignore[index]
            conn.execute("SELECT pg_advisory_lock_shared(%s)", (self._lock,))
            if alone:
                conn.execute("SELECT pg_advisory_unlock(%s)", (self._lock,))
        except psycopg.Error as exc:
            self.release()
            raise StorageError(f"cannot join {self._backend.location}: "
                               f"{_first_line(str(exc))}") from exc
        self._joined = True
        return alone

    def _holds(self) -> bool:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return False
        try:
            readable, _, _ = select.select([conn.fileno()], [], [], 0)
        except (OSError, ValueError):
            return False
        if not readable:
            return True  # an idle session: nothing arrived, so nothing ended it
        try:  # the server said something (ending the session, or a notice): ask it
            conn.execute("SELECT 1")
        except psycopg.Error:
            return False
        return True

    def refresh(self) -> None:
        """Take the lock again (shared, never waiting) if its connection was lost.

        Never raises: a server that cannot be reached is tried again at a
        later write, after the backoff. Writer thread; one ``select`` on the
        socket when the lock is held, a connection otherwise.
        """
        with self._guard:
            self._refresh()

    def _refresh(self) -> None:
        if not self._joined or self._holds() or self._backoff.remaining() > 0.0:
            return
        _close_quietly(self._conn)
        self._conn = None
        try:
            conn = self._connect()
            taken = bool(conn.execute("SELECT pg_try_advisory_lock_shared(%s)",
                                      (self._lock,)).fetchone()[0])  # type: ignore[index]
        except psycopg.Error as exc:
            self._backoff.failed()
            _close_quietly(self._conn)
            self._conn = None
            logger.debug("the presence lock cannot be taken again yet: %s", exc)
            return
        if not taken:  # another gateway is joining right now: try at the next write
            _close_quietly(self._conn)
            self._conn = None
            return
        self._backoff.succeeded()
        self.rejoins += 1
        logger.info("the presence lock on %s was lost with its connection; taken again",
                    self._backend.location)

    def release(self) -> None:
        """Close the connection, which drops the lock (idempotent; any thread)."""
        with self._guard:
            self._joined = False
            conn, self._conn = self._conn, None
        _close_quietly(conn)


class PgListener:
    """The hosting thread's wake signal: ``LISTEN`` on the wake channel.

    A wait returns ``True`` when a wake row was added for a watcher this
    process may host, or right after (re)connecting, since wakes may have
    been added while it listened nowhere: the claim that follows then
    re-sweeps everything owed. Connection failures back off from 50 ms to
    5 s. Hosting thread.

    Args:
        backend: the backend.
        stop: set when the gateway closes.
        interested: whether a wake for this watcher key may be claimed here
            (notifications for watchers this process does not host are
            ignored, so N hosting processes do not all claim every wake).
    """

    def __init__(self, backend: PostgresBackend, stop: threading.Event,
                 interested: Callable[[str], bool]) -> None:
        self._backend = backend
        self._stop = stop
        self._interested = interested
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._backoff = Backoff()
        self.reconnects = 0
        """Connections made after the first (for tests and benchmarks)."""
        self._connected_once = False

    def wait(self, timeout_s: float) -> bool:
        """Block up to ``timeout_s`` for a wake notification (see the class doc).

        Raises:
            StorageError: the server could not be reached (the caller retries).
        """
        with self._lock:
            conn = self._conn
            if conn is None or conn.closed or conn.broken:
                return self._reconnect()
        try:
            got = False
            deadline = time.monotonic() + max(0.0, timeout_s)
            while not got:
                left = deadline - time.monotonic()
                notified = list(conn.notifies(timeout=max(0.0, left), stop_after=1))
                if not notified:
                    return False
                notified += conn.notifies(timeout=0.0)  # what else is queued, without waiting
                got = any(self._interested(n.payload) for n in notified)
            return got
        except psycopg.Error as exc:
            with self._lock:
                self._drop()
            raise StorageError("the wake listener lost its connection: "
                               f"{_first_line(str(exc))}") from exc

    def _reconnect(self) -> bool:
        self._drop()
        if self._stop.is_set():
            return False
        try:
            conn = self._backend.raw_connect(writer=False, keep_idle=True)
            conn.execute(pgsql.SQL("LISTEN {}").format(pgsql.Identifier(self._backend.channel)))
        except psycopg.Error as exc:
            self._stop.wait(self._backoff.failed())
            raise StorageError("the wake listener cannot connect: "
                               f"{_first_line(str(exc))}") from exc
        self._conn = conn
        self._backoff.succeeded()
        if self._connected_once:
            self.reconnects += 1
            logger.info("the wake listener reconnected to %s; claiming what is owed",
                        self._backend.location)
        self._connected_once = True
        return True

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        _close_quietly(conn)

    def close(self) -> None:
        """Close the listening connection (idempotent; any thread)."""
        with self._lock:
            self._drop()
