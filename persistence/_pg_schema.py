"""The signal log's tables in PostgreSQL, and their migrations.

The same tables, columns and indexes as on SQLite (:mod:`persistence._schema`,
version 3), in PostgreSQL's types: epoch milliseconds and sequences are
``BIGINT``, the two ``AUTOINCREMENT`` keys are identity columns. The
``ssa_schema`` table holds the application name and the schema version.
A trigger sends the wake ``NOTIFY`` (see :mod:`persistence._postgres`).
"""

from __future__ import annotations

import logging
from typing import Any

from psycopg import sql as pgsql

from persistence._schema import SCHEMA_VERSION
from persistence._secret import make_secret, rekey_own_texts
from persistence.errors import SchemaError, StorageError

__all__ = ["APPLICATION", "TABLES", "migrate"]

logger = logging.getLogger(__name__)

APPLICATION = "session-state-awareness"

TABLES = (
    "session_state_events", "session_state_heads", "session_watch_cursors", "sessions",
    "session_upstream_links", "session_own_texts", "session_hosts", "session_wakes",
    "ssa_secrets", "session_roles", "session_activity",
)
"""Every table the gateway reads and writes (the privileges of docs/deployment.md)."""

_SCHEMA_V3 = """
CREATE TABLE ssa_schema (
    application TEXT NOT NULL,
    version INTEGER NOT NULL
);

CREATE TABLE session_state_events (
    sequence BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dedupe_key TEXT,
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_id TEXT,
    kind TEXT NOT NULL,
    actor_type TEXT NOT NULL,
    actor_id TEXT,
    run_id TEXT,
    occurred_at BIGINT NOT NULL,
    summary TEXT NOT NULL,
    payload_json TEXT
);
CREATE UNIQUE INDEX idx_session_state_events_dedupe
    ON session_state_events (session_key, agent_id, dedupe_key);
CREATE INDEX idx_session_state_events_session_sequence
    ON session_state_events (session_key, agent_id, sequence);
CREATE INDEX idx_session_state_events_time
    ON session_state_events (occurred_at, sequence);

CREATE TABLE session_state_heads (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    last_sequence BIGINT NOT NULL,
    pruned_max_sequence BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (session_key, agent_id)
);

CREATE TABLE session_watch_cursors (
    watcher_session_key TEXT NOT NULL,
    target_session_key TEXT NOT NULL,
    target_agent_id TEXT NOT NULL,
    last_seen_sequence BIGINT NOT NULL DEFAULT 0,
    notified_sequence BIGINT NOT NULL DEFAULT 0,
    material_sequence BIGINT NOT NULL DEFAULT 0,
    provenance TEXT NOT NULL DEFAULT 'explicit'
        CHECK (provenance IN ('explicit', 'ambient-group')),
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (watcher_session_key, target_session_key, target_agent_id)
);
CREATE INDEX idx_session_watch_cursors_target
    ON session_watch_cursors (target_session_key, target_agent_id);

CREATE TABLE sessions (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_id TEXT,
    spawned_by TEXT,
    chat_type TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (session_key, agent_id)
);

CREATE TABLE session_upstream_links (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    source TEXT NOT NULL,
    host_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    upstream_ref_json TEXT NOT NULL,
    source_key TEXT NOT NULL,
    marker_json TEXT NOT NULL,
    last_scanned_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    lease_owner TEXT,
    lease_expires_at BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (session_key, agent_id)
);
CREATE INDEX idx_session_upstream_links_source ON session_upstream_links (source);

CREATE TABLE session_own_texts (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    text_hash TEXT NOT NULL,
    PRIMARY KEY (session_key, agent_id, position)
);

CREATE TABLE session_hosts (
    watcher_session_key TEXT NOT NULL,
    host_id TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (watcher_session_key, host_id)
);
CREATE INDEX idx_session_hosts_host ON session_hosts (host_id);

CREATE TABLE session_wakes (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    watcher_session_key TEXT NOT NULL,
    target_session_key TEXT NOT NULL,
    target_agent_id TEXT NOT NULL,
    last_seen_sequence BIGINT NOT NULL,
    claimed_by TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX idx_session_wakes_watcher ON session_wakes (watcher_session_key);
"""

_NOTIFY_TRIGGER = """
CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify({channel}, NEW.watcher_session_key);
    RETURN NULL;
END
$$;
CREATE TRIGGER session_wakes_notify AFTER INSERT ON session_wakes
    FOR EACH ROW EXECUTE FUNCTION {function}();
"""
"""The wake ``NOTIFY``: sent by the transaction that adds the row, delivered at its commit."""


_OBJECTS = """
SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
 WHERE n.nspname = ? AND c.relkind NOT IN ('i', 'I')
   AND NOT (c.relkind = 'S' AND EXISTS (
       SELECT 1 FROM pg_depend AS d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')))
UNION SELECT p.proname FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
 WHERE n.nspname = ?
UNION SELECT t.typname FROM pg_type AS t JOIN pg_namespace AS n ON n.oid = t.typnamespace
 WHERE n.nspname = ? AND t.typrelid = 0 AND t.typcategory <> 'A'
"""
"""Every object in a schema that is not part of another (indexes, identity
sequences, row and array types are): relations, functions, types."""

_UNGRANTED = """
SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
 WHERE n.nspname = ? AND c.relkind = 'r'
   AND NOT (has_table_privilege(c.oid, 'SELECT') AND has_table_privilege(c.oid, 'INSERT')
            AND has_table_privilege(c.oid, 'UPDATE') AND has_table_privilege(c.oid, 'DELETE'))
 ORDER BY c.relname
"""
"""Our tables on which the role lacks one of the privileges a gateway needs."""


def migrate(conn: Any, schema: str) -> None:
    """Create ``schema`` and its tables, or check and upgrade their version.

    Args:
        conn: a :class:`~persistence._postgres.PgConnection` inside a write
            transaction (holding the log's advisory write lock, so two
            openers never migrate at once).
        schema: the schema name (already validated as an identifier).

    Raises:
        SchemaError: the schema holds objects of something else (tables,
            views, sequences, functions, types), or a newer version than
            this release knows.
        StorageError: the role may not use the schema or its tables (the
            message names the missing grant).
        DriverError: the server refused (``42501``: the role may not create).
    """
    exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = ?", (schema,)).get
    if exists is None:
        conn.script(pgsql.SQL("CREATE SCHEMA {}").format(pgsql.Identifier(schema)).as_string())
    elif not conn.execute("SELECT has_schema_privilege(?, 'USAGE')", (schema,)).get:
        raise StorageError(f"this role may not use schema {schema!r}: GRANT USAGE ON SCHEMA "
                           f"{schema} TO it (docs/deployment.md, privileges)")
    objects = {str(name) for (name,) in conn.execute(_OBJECTS, (schema, schema, schema))}
    if "ssa_schema" not in objects:
        if objects:
            raise SchemaError(f"schema {schema!r} holds objects that are not a signal log "
                              f"({', '.join(sorted(objects)[:5])})")
        _create(conn, schema)
        return
    foreign = objects - set(TABLES) - {"ssa_schema", "session_wakes_notify"}
    columns = {str(name) for (name,) in conn.execute(  # whatever the role may read
        "SELECT a.attname FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid"
        " JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = ?"
        " AND c.relname = 'ssa_schema' AND a.attnum > 0 AND NOT a.attisdropped", (schema,))}
    if foreign or not {"application", "version"} <= columns:
        raise SchemaError(f"schema {schema!r} is not a session-state signal log"
                          + (f" (it also holds {', '.join(sorted(foreign)[:5])})" if foreign
                             else ""))
    missing = [str(name) for (name,) in conn.execute(_UNGRANTED, (schema,))]
    if missing:
        raise StorageError(
            f"this role lacks SELECT, INSERT, UPDATE or DELETE on {', '.join(missing[:3])} in "
            f"schema {schema!r}: GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "
            f"{schema} TO it (docs/deployment.md, privileges)")
    row = conn.execute("SELECT application, version FROM ssa_schema").fetchone()
    if row is None or row[0] != APPLICATION:
        raise SchemaError(f"schema {schema!r} is not a session-state signal log")
    version = int(row[1])
    if version > SCHEMA_VERSION:
        raise SchemaError(f"schema {schema!r} has version {version}; this release knows "
                          f"{SCHEMA_VERSION}. Upgrade session-state-awareness.")
    # Version 3 is the first PostgreSQL version: later ones add their steps here.
    if version < 4:
        _to_v4(conn, schema)
    if version < 5:
        _to_v5(conn, schema)
    if version < 6:
        _to_v6(conn, schema)
    if version < 7:
        _to_v7(conn, schema)


_SCHEMA_V4 = """
CREATE TABLE ssa_secrets (
    name TEXT PRIMARY KEY,
    secret BYTEA NOT NULL
);
"""
"""Version 4: the per-database secret keying the own-text hashes (persistence._secret)."""


def _to_v4(conn: Any, schema: str) -> None:
    """Add the own-text secret and re-key the hashes stored before (one transaction)."""
    conn.script(pgsql.SQL("SET LOCAL search_path TO {}").format(
        pgsql.Identifier(schema)).as_string() + ";" + _SCHEMA_V4)
    rekeyed = rekey_own_texts(conn, make_secret(conn))
    conn.execute("UPDATE ssa_schema SET version = ?", (4,))
    logger.info("migrated signal-log schema %r to version 4 (keyed %d own-text hashes)",
                schema, rekeyed)


_SCHEMA_V5 = """
CREATE TABLE session_roles (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('manager')),
    wake INTEGER NOT NULL DEFAULT 1 CHECK (wake IN (0, 1)),
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (session_key, agent_id)
);
"""
"""Version 5: which sessions are managers (persistence._schema's version 5)."""


def _to_v5(conn: Any, schema: str) -> None:
    """Add the managers' table (one transaction)."""
    conn.script(pgsql.SQL("SET LOCAL search_path TO {}").format(
        pgsql.Identifier(schema)).as_string() + ";" + _SCHEMA_V5)
    conn.execute("UPDATE ssa_schema SET version = ?", (5,))
    logger.info("migrated signal-log schema %r to version 5 (session roles)", schema)


_SCHEMA_V6 = """
ALTER TABLE session_own_texts ADD COLUMN noted_at BIGINT NOT NULL DEFAULT 0;
"""
"""Version 6: when each own text was noted (persistence._schema's version 6)."""


def _to_v6(conn: Any, schema: str) -> None:
    """Add the own texts' noted times (one transaction)."""
    conn.script(pgsql.SQL("SET LOCAL search_path TO {}").format(
        pgsql.Identifier(schema)).as_string() + ";" + _SCHEMA_V6)
    conn.execute("UPDATE ssa_schema SET version = ?", (6,))
    logger.info("migrated signal-log schema %r to version 6 (own texts' times)", schema)


_SCHEMA_V7 = """
CREATE TABLE IF NOT EXISTS session_activity (
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('busy', 'idle', 'waiting', 'finished', 'failed')),
    detail TEXT,
    since BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (session_key, agent_id)
);
"""
"""Version 7: where each adopted session's tool stands (persistence._schema's version 7)."""


def _to_v7(conn: Any, schema: str) -> None:
    """Add the sessions' activity table (one transaction)."""
    conn.script(pgsql.SQL("SET LOCAL search_path TO {}").format(
        pgsql.Identifier(schema)).as_string() + ";" + _SCHEMA_V7)
    conn.execute("UPDATE ssa_schema SET version = ?", (7,))
    logger.info("migrated signal-log schema %r to version 7 (session activity)", schema)


def _create(conn: Any, schema: str) -> None:
    identifier = pgsql.Identifier(schema)
    conn.script(pgsql.SQL("SET LOCAL search_path TO {}").format(identifier).as_string()
                + ";" + _SCHEMA_V3)
    function = pgsql.Identifier(schema, "session_wakes_notify")
    conn.script(pgsql.SQL(_NOTIFY_TRIGGER).format(
        function=function, channel=pgsql.Literal(f"{schema}_wakes")).as_string())
    conn.script(_SCHEMA_V4)
    conn.script(_SCHEMA_V5)
    conn.script(_SCHEMA_V6)
    conn.script(_SCHEMA_V7)
    make_secret(conn)
    conn.execute("INSERT INTO ssa_schema (application, version) VALUES (?, ?)",
                 (APPLICATION, SCHEMA_VERSION))
    logger.info("created signal-log schema %r at version %d", schema, SCHEMA_VERSION)
