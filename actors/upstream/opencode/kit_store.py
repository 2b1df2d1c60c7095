"""The OpenCode 1.18 store the builder writes into: its tables and a short-lived connection."""

from __future__ import annotations

from pathlib import Path

import apsw

from actors.upstream.opencode.classify import unwrapped_id

__all__ = ["SCHEMA", "Store", "newest_id_value"]

_BUSY_MS = 5000

SCHEMA = (  # the 1.18.33 tables the builder writes, as OpenCode's migrations create them
    "CREATE TABLE IF NOT EXISTS `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL,"
    " `vcs` text, `name` text, `icon_url` text, `icon_url_override` text, `icon_color` text,"
    " `time_created` integer NOT NULL, `time_updated` integer NOT NULL,"
    " `time_initialized` integer, `sandboxes` text NOT NULL, `commands` text)",
    "CREATE TABLE IF NOT EXISTS `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL,"
    " `workspace_id` text, `parent_id` text, `slug` text NOT NULL, `directory` text NOT NULL,"
    " `path` text, `title` text NOT NULL, `version` text NOT NULL, `share_url` text,"
    " `summary_additions` integer, `summary_deletions` integer, `summary_files` integer,"
    " `summary_diffs` text, `metadata` text, `cost` real DEFAULT 0 NOT NULL,"
    " `tokens_input` integer DEFAULT 0 NOT NULL, `tokens_output` integer DEFAULT 0 NOT NULL,"
    " `tokens_reasoning` integer DEFAULT 0 NOT NULL,"
    " `tokens_cache_read` integer DEFAULT 0 NOT NULL,"
    " `tokens_cache_write` integer DEFAULT 0 NOT NULL, `revert` text, `permission` text,"
    " `agent` text, `model` text, `time_created` integer NOT NULL,"
    " `time_updated` integer NOT NULL, `time_compacting` integer, `time_archived` integer,"
    " CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`)"
    " REFERENCES `project`(`id`) ON DELETE CASCADE)",
    "CREATE INDEX IF NOT EXISTS `session_project_idx` ON `session` (`project_id`)",
    "CREATE INDEX IF NOT EXISTS `session_parent_idx` ON `session` (`parent_id`)",
    "CREATE TABLE IF NOT EXISTS `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL,"
    " `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL,"
    " CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`)"
    " REFERENCES `session`(`id`) ON DELETE CASCADE)",
    "CREATE INDEX IF NOT EXISTS `message_session_time_created_id_idx`"
    " ON `message` (`session_id`,`time_created`,`id`)",
    "CREATE TABLE IF NOT EXISTS `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL,"
    " `session_id` text NOT NULL, `time_created` integer NOT NULL,"
    " `time_updated` integer NOT NULL, `data` text NOT NULL,"
    " CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`)"
    " REFERENCES `message`(`id`) ON DELETE CASCADE)",
    "CREATE INDEX IF NOT EXISTS `part_message_id_id_idx` ON `part` (`message_id`,`id`)",
    "CREATE INDEX IF NOT EXISTS `part_session_idx` ON `part` (`session_id`)",
    "CREATE TABLE IF NOT EXISTS `event_sequence` (`aggregate_id` text PRIMARY KEY,"
    " `seq` integer NOT NULL, `owner_id` text)",
)
"""The 1.18.33 tables the builder writes (one statement each)."""


class Store:
    """A short-lived write connection to the store (WAL, as OpenCode keeps it).

    Use as ``with Store(path) as conn:``; the caller's thread, one block at a time.

    Args:
        path: the ``opencode.db`` file (created if missing).
    """

    def __init__(self, path: Path) -> None:
        """Remember ``path``; opens nothing yet."""
        self._path = path
        self._conn: apsw.Connection | None = None

    def __enter__(self) -> apsw.Connection:
        """Open the connection (busy timeout 5 s, WAL) and return it.

        Raises:
            apsw.Error: the file cannot be opened. Blocks at most the busy timeout.
        """
        conn = apsw.Connection(str(self._path))
        conn.set_busy_timeout(_BUSY_MS)
        conn.pragma("journal_mode", "wal")
        self._conn = conn
        return conn

    def __exit__(self, *exc: object) -> None:
        """Close the connection (whatever the block raised, which propagates)."""
        assert self._conn is not None
        self._conn.close()
        self._conn = None


def newest_id_value(conn: apsw.Connection) -> int:
    """The full ``ms * 0x1000 + counter`` of the store's newest message id (0: none)."""
    row = conn.execute("SELECT id, time_created FROM message"
                       " ORDER BY time_created DESC, id DESC LIMIT 1").get
    if not isinstance(row, tuple):
        return 0
    value = unwrapped_id(str(row[0]), int(row[1]))
    return 0 if value is None else value
