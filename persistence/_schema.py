"""Schema, migrations and connection setup for the signal-log database."""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import apsw

from persistence._secret import make_secret, rekey_own_texts
from persistence.errors import DatabaseCorrupt, InvalidLocation, SchemaError, recovery_hint
from persistence.locations import folders_to_create, sqlite_location_problem

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "check_integrity", "open_connection",
           "prepare_path", "set_wal", "wal_problem"]

logger = logging.getLogger(__name__)

APPLICATION_ID = 0x53534131  # "SSA1"
SCHEMA_VERSION = 7

_SCHEMA_V1 = """
CREATE TABLE session_state_events (
    sequence INTEGER PRIMARY KEY AUTOINCREMENT,
    dedupe_key TEXT,
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_id TEXT,
    kind TEXT NOT NULL,
    actor_type TEXT NOT NULL,
    actor_id TEXT,
    run_id TEXT,
    occurred_at INTEGER NOT NULL,
    summary TEXT NOT NULL,
    payload_json TEXT
) STRICT;
CREATE UNIQUE INDEX idx_session_state_events_dedupe
    ON session_state_events (session_key, agent_id, dedupe_key);
CREATE INDEX idx_session_state_events_session_sequence
    ON session_state_events (session_key, agent_id, sequence);
CREATE INDEX idx_session_state_events_time
    ON session_state_events (occurred_at, sequence);

CREATE TABLE session_state_heads (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    last_sequence INTEGER NOT NULL,
    pruned_max_sequence INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (session_key, agent_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE session_watch_cursors (
    watcher_session_key TEXT NOT NULL,
    target_session_key TEXT NOT NULL,
    target_agent_id TEXT NOT NULL,
    last_seen_sequence INTEGER NOT NULL DEFAULT 0,
    notified_sequence INTEGER NOT NULL DEFAULT 0,
    material_sequence INTEGER NOT NULL DEFAULT 0,
    provenance TEXT NOT NULL DEFAULT 'explicit'
        CHECK (provenance IN ('explicit', 'ambient-group')),
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (watcher_session_key, target_session_key, target_agent_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_session_watch_cursors_target
    ON session_watch_cursors (target_session_key, target_agent_id);

CREATE TABLE sessions (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_id TEXT,
    spawned_by TEXT,
    chat_type TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (session_key, agent_id)
) STRICT, WITHOUT ROWID;
"""

_SCHEMA_V2 = """
CREATE TABLE session_upstream_links (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    source TEXT NOT NULL,
    host_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    upstream_ref_json TEXT NOT NULL,
    source_key TEXT NOT NULL,
    marker_json TEXT NOT NULL,
    last_scanned_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (session_key, agent_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_session_upstream_links_source ON session_upstream_links (source);

CREATE TABLE session_own_texts (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    text_hash TEXT NOT NULL,
    PRIMARY KEY (session_key, agent_id, position)
) STRICT, WITHOUT ROWID;
"""

_SCHEMA_V3 = """
CREATE TABLE session_hosts (
    watcher_session_key TEXT NOT NULL,
    host_id TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (watcher_session_key, host_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_session_hosts_host ON session_hosts (host_id);

CREATE TABLE session_wakes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    watcher_session_key TEXT NOT NULL,
    target_session_key TEXT NOT NULL,
    target_agent_id TEXT NOT NULL,
    last_seen_sequence INTEGER NOT NULL,
    claimed_by TEXT,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX idx_session_wakes_watcher ON session_wakes (watcher_session_key);

ALTER TABLE session_upstream_links ADD COLUMN lease_owner TEXT;
ALTER TABLE session_upstream_links ADD COLUMN lease_expires_at INTEGER NOT NULL DEFAULT 0;
"""
"""Version 3 (many processes): hosting leases, wakes addressed to hosts, scan leases."""

_SCHEMA_V4 = """
CREATE TABLE ssa_secrets (
    name TEXT PRIMARY KEY,
    secret BLOB NOT NULL
) STRICT;
"""
"""Version 4 (issue 25): the per-database secret keying the own-text hashes
(:mod:`persistence._secret`); the migration re-keys the hashes stored before."""

_SCHEMA_V5 = """
CREATE TABLE session_roles (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('manager')),
    wake INTEGER NOT NULL DEFAULT 1 CHECK (wake IN (0, 1)),
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (session_key, agent_id)
) STRICT, WITHOUT ROWID;
"""
"""Version 5 (issue 35): which sessions are managers (a session without a row is a
worker: never notified, never woken), and whether a manager is woken."""

_SCHEMA_V6 = """
ALTER TABLE session_own_texts ADD COLUMN noted_at INTEGER NOT NULL DEFAULT 0;
"""
"""Version 6 (issue 34 item 1): when each own text was noted, so a record matches only
a row written after it and expires unmatched; a record is consumed by the row it
matches. Records kept before have ``noted_at`` 0, "unknown": they match as before
(no time check, no expiry) until a row uses them up or newer texts push them out."""

_SCHEMA_V7 = """
CREATE TABLE IF NOT EXISTS session_activity (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('busy', 'idle', 'waiting', 'finished', 'failed')),
    detail TEXT,
    since INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (session_key, agent_id)
) STRICT, WITHOUT ROWID;
"""
"""Version 7 (issue 33 item 2): where each adopted session's tool stands, as its own hooks
last told (busy, idle, waiting for permission or input, finished, failed) and since when."""

_MIGRATIONS: dict[int, str] = {1: _SCHEMA_V1, 2: _SCHEMA_V2, 3: _SCHEMA_V3, 4: _SCHEMA_V4,
                               5: _SCHEMA_V5, 6: _SCHEMA_V6, 7: _SCHEMA_V7}


def _after_v4(conn: apsw.Connection) -> None:
    rekeyed = rekey_own_texts(conn, make_secret(conn))
    if rekeyed:
        logger.info("keyed %d stored own-text hashes with the new database secret", rekeyed)


_AFTER: dict[int, Callable[[apsw.Connection], None]] = {4: _after_v4}
"""Steps of a migration that are Python, run after its SQL in the same transaction."""


def prepare_path(path: Path) -> None:
    """Create ``path``'s folders as the location rule allows (mode 0700) and the file (0600).

    The rule (:mod:`persistence.locations`): the default location's missing
    directories are all created; for another path only the file's own folder,
    when its parent exists. Every directory this call creates is 0700
    whatever the umask; existing directories keep their modes, and an
    existing database file of this user (and its side files) is made private
    (:func:`tighten_modes`). Runs in the caller's thread; blocks on
    file-system calls only.

    Raises:
        InvalidLocation: the location breaks the rule (the message is
            :func:`~persistence.locations.sqlite_location_problem`'s).
        OSError: a directory or the file cannot be created.
    """
    problem = sqlite_location_problem(path)
    if problem is not None:
        raise InvalidLocation(problem)
    for created in folders_to_create(path):
        try:
            os.mkdir(created, 0o700)
        except FileExistsError:
            continue
        os.chmod(created, 0o700)  # mkdir's mode is filtered by the umask
    if not path.exists():
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process or thread opening the same new file made it first
        else:
            os.fchmod(fd, 0o600)
            os.close(fd)
    tighten_modes(path)


SIDE_FILES = ("", "-wal", "-shm", ".lock")
"""The database file and the files SQLite and the presence lock keep beside it."""


def tighten_modes(path: Path) -> list[str]:
    """Make the database and its side files private (0600) when this user owns them.

    A file the user pre-created (``touch`` gives 0644) would leave the signal
    log, and SQLite's ``-wal``/``-shm`` (which copy the database's mode),
    readable by every local user. Files of this user lose their group and
    other bits, with one WARNING each; a file another user owns is left as it
    is, with a WARNING. Symbolic links and missing files are skipped.
    Caller's thread; a few ``stat``/``chmod`` calls; never raises.

    Returns:
        The files whose modes were changed.
    """
    changed: list[str] = []
    for side in SIDE_FILES:
        name = f"{path}{side}"
        try:
            st = os.lstat(name)
            if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o077:
                continue
            mode = stat.S_IMODE(st.st_mode)
            if st.st_uid != os.geteuid():
                logger.warning("%s is readable or writable by other users (mode %04o) and "
                               "belongs to another user; leaving it as it is", name, mode)
                continue
            os.chmod(name, mode & 0o700)
        except OSError as exc:
            logger.debug("cannot check the mode of %s: %s", name, exc)
            continue
        logger.warning("%s was readable or writable by other users (mode %04o); made it "
                       "private (%04o): the signal log is the user's", name, mode, mode & 0o700)
        changed.append(name)
    return changed


class BusyWait:
    """A busy handler for the write connection: short sleeps, then backing off.

    SQLite's own busy timeout sleeps 1, 2, 5, 10, ... ms between attempts, so a
    process that meets another's write lock (held for a fraction of a
    millisecond per group commit) loses milliseconds each time. This handler
    retries after 50 µs, doubling up to 0.5 ms, until ``timeout_ms`` has passed
    since the first attempt; SQLite then reports ``SQLITE_BUSY`` as before.
    Called by SQLite in the thread that uses the connection; it sleeps
    (releasing the GIL).

    Args:
        timeout_ms: how long to keep retrying one lock attempt, in ms.
    """

    FIRST_S = 0.00005
    LONGEST_S = 0.0005

    def __init__(self, timeout_ms: int) -> None:
        self._timeout_s = timeout_ms / 1000
        self._started = 0.0

    def __call__(self, prior_calls: int) -> bool:
        """Sleep before the next attempt; ``False`` gives up (SQLite raises busy)."""
        now = time.monotonic()
        if prior_calls == 0:
            self._started = now
        remaining = self._timeout_s - (now - self._started)
        if remaining <= 0:
            return False
        time.sleep(min(self.FIRST_S * (2 ** min(prior_calls, 16)), self.LONGEST_S, remaining))
        return True


def open_connection(
    path: str,
    *,
    synchronous: Literal["FULL", "NORMAL"] = "FULL",
    busy_timeout_ms: int = 5000,
    writer: bool = False,
    migrate: bool = False,
    vfs: str | None = None,
) -> apsw.Connection:
    """Open one APSW connection to the signal-log database.

    Args:
        path: the database file (``":memory:"`` is not supported: readers
            need a shared file).
        synchronous: SQLite ``synchronous`` pragma.
        busy_timeout_ms: how long to wait for another writer's lock, in ms.
        writer: open for writing (WAL mode is set); otherwise the connection
            is ``query_only``.
        migrate: create or upgrade the schema (with ``writer`` only).
        vfs: SQLite VFS name, or ``None`` for the default.

    Returns:
        The open connection. It must be used by one thread at a time.

    Raises:
        SchemaError: the file belongs to another application or to a newer
            schema version.
        apsw.Error: SQLite could not open or set up the file.

    Runs in the calling thread and blocks on disk I/O.
    """
    conn = (apsw.Connection(path, statementcachesize=256) if vfs is None
            else apsw.Connection(path, statementcachesize=256, vfs=vfs))
    try:
        if writer:
            conn.set_busy_handler(BusyWait(busy_timeout_ms))
        else:
            conn.set_busy_timeout(busy_timeout_ms)
        if writer:
            set_wal(conn, busy_timeout_ms)
        conn.pragma("synchronous", synchronous)
        if writer and migrate:
            check_integrity(conn, path)
            _migrate(conn)
        elif not writer:
            conn.pragma("query_only", True)
    except BaseException:
        conn.close()
        raise
    return conn


WAL_RETRY_S = 0.002
"""Pause between attempts to switch a new file to WAL while another connection holds it."""


def set_wal(conn: apsw.Connection, timeout_ms: int) -> None:
    """``PRAGMA journal_mode = wal``, retried while another connection holds the file.

    Switching the journal mode needs the file to itself, and SQLite reports
    ``SQLITE_BUSY`` at once, without calling the busy handler, when another
    connection holds a lock it would otherwise deadlock on: two processes
    opening the same new file together met that. The pragma is idempotent, so
    it is tried again every :data:`WAL_RETRY_S` until ``timeout_ms`` has passed.
    Caller's thread; blocks (sleeps) while it waits.

    Raises:
        apsw.BusyError: the file stayed locked for ``timeout_ms``.
        apsw.Error: any other SQLite failure, at once.
    """
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        try:
            conn.pragma("journal_mode", "wal")
            return
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(WAL_RETRY_S)


QUICK_CHECK_ERRORS = 3
"""Problems ``PRAGMA quick_check`` reports at most (the first one is shown)."""


def check_integrity(conn: apsw.Connection, location: str) -> None:
    """Refuse a damaged file: ``PRAGMA quick_check`` (every page, no index cross-check).

    Run when a gateway opens the file (and by the read-only commands), so a
    corrupted file is never written into and never answers a silently short
    ``changesSince``. It reads the whole file once (about 40 ms for 50,000
    events). Caller's thread; blocks on I/O.

    Raises:
        DatabaseCorrupt: the check found a problem, or SQLite reported the
            file corrupt while checking; the message says how to recover.
    """
    try:
        problems = [str(row[0]) for row in conn.execute(
            f"PRAGMA quick_check({QUICK_CHECK_ERRORS})")]
    except apsw.CorruptError as exc:
        problems = [str(exc)]
    if problems and problems != ["ok"]:
        raise DatabaseCorrupt(f"{location} is corrupt ({problems[0]}); "
                              f"{recovery_hint(location)}")


def wal_problem(location: str) -> str | None:
    """Why ``location`` cannot be read when its ``-wal`` was deleted under a running process.

    SQLite keeps the newest pages in ``<file>-wal`` and their index in
    ``<file>-shm``; a ``-shm`` without its ``-wal`` means the WAL was deleted
    while the database was open (a clean close removes both). Look before
    opening (the open creates a new, empty ``-wal``) and use the answer only
    when the open then fails (a closing process removes the two files one
    after the other). Two ``stat`` calls; pure otherwise.
    """
    if os.path.exists(location + "-shm") and not os.path.exists(location + "-wal"):
        return (f"cannot open {location}: its -wal file is missing while its -shm file "
                "exists, so it was deleted while a process had the database open (the "
                "newest writes were in it). Stop every process using the database; then "
                "it opens again, without what that file held")
    return None


def _migrate(conn: apsw.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        app_id = int(conn.pragma("application_id"))
        version = int(conn.pragma("user_version"))
        if version == 0 and app_id == 0:
            tables = conn.execute(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table'"
            ).get
            if tables:
                raise SchemaError(f"{conn.filename} is not a session-state database")
            conn.pragma("application_id", APPLICATION_ID)
        elif app_id != APPLICATION_ID:
            raise SchemaError(f"{conn.filename} is not a session-state database")
        if version > SCHEMA_VERSION:
            raise SchemaError(
                f"{conn.filename} has schema version {version}; this release knows "
                f"{SCHEMA_VERSION}. Upgrade session-state-awareness."
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            conn.execute(_MIGRATIONS[target])
            if target in _AFTER:
                _AFTER[target](conn)
            conn.pragma("user_version", target)
            logger.debug("migrated signal-log schema to version %d", target)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
