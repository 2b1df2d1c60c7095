"""OpenCode as an upstream source: sessions are rows of ``opencode.db`` (upstream-formats.md §4).

The light half is here: the store's standard location, listing its
top-level sessions (APSW, no msgspec: ``ssa hook`` lists stores at every
prompt; opened by :mod:`actors.upstream.opencode.db`). The heavy half is
:mod:`actors.upstream.opencode.reading` (classification:
:mod:`actors.upstream.opencode.store`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping

import apsw

from actors.upstream.opencode.db import open_opencode_db
from actors.upstream.opencode.problems import store_problem
from actors.upstream.source import Candidate, Source, StoreRow, named_by, note_store_problem
from persistence.lazylog import get_logger

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from actors.upstream.reading import Reading

__all__ = ["OPENCODE", "open_opencode_db", "store_rows"]

logger = get_logger(__name__)

NAME = "opencode"


def locations(env: Mapping[str, str], home: str) -> list[str]:
    """``$OPENCODE_DB`` (absolute; relative: under the data directory), else
    ``$XDG_DATA_HOME/opencode/opencode.db``, else ``~/.local/share/opencode/opencode.db``
    (pure; an in-memory ``:memory:`` store has nothing on disk to watch)."""
    data = os.path.join(os.path.expanduser(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME")
                        else os.path.join(home, ".local", "share"), "opencode")
    given = env.get("OPENCODE_DB", "")
    if given == ":memory:":
        given = ""
    return [given if given and os.path.isabs(given)
            else os.path.join(data, given or "opencode.db")]


def discover(db: str) -> Iterator[Candidate]:
    """The store's top-level sessions (no parent), oldest first.

    An unreadable store is logged once per reason
    (:func:`~actors.upstream.source.unreadable_store` tells why); a missing
    one holds none. Caller's thread; blocks on one query; never raises.
    """
    if not os.path.isfile(db):
        return
    try:
        conn = open_opencode_db(db)
        try:
            ids = [str(i) for (i,) in conn.execute(
                "SELECT id FROM session WHERE parent_id IS NULL ORDER BY time_created")]
        finally:
            conn.close()
    except apsw.Error as exc:
        why = store_problem(exc)
        if note_store_problem(db, why):  # rediscovery every interval must not repeat it
            logger.warning("cannot list OpenCode sessions in %s: %s", db, why)
        return
    note_store_problem(db, None)
    for session_id in ids:
        yield Candidate(source=NAME, path=db, thread_id=session_id)


def store_rows(db: str, busy_timeout_ms: int = 500) -> list[StoreRow]:
    """Every top-level session of the store with its directory and event sequence.

    Opened as :func:`open_opencode_db` opens it. Returns ``[]`` for a
    missing or unreadable store (the monitor reports those). Caller's
    thread; blocks on one query.
    """
    if not os.path.isfile(db):
        return []
    try:
        conn = open_opencode_db(db, busy_timeout_ms=busy_timeout_ms)
    except apsw.Error:
        return []
    try:
        rows = conn.execute(
            "SELECT s.id, s.directory, coalesce(es.seq, 0), s.time_created FROM session AS s"
            " LEFT JOIN event_sequence AS es ON es.aggregate_id = s.id"
            " WHERE s.parent_id IS NULL").fetchall()
    except apsw.Error as exc:
        logger.debug("cannot list OpenCode sessions in %s: %s", db, type(exc).__name__)
        return []
    finally:
        conn.close()
    found: list[StoreRow] = []
    for session_id, directory, seq, created in rows:
        if isinstance(session_id, str) and session_id:
            found.append(StoreRow(session_id=session_id,
                                  directory=directory if isinstance(directory, str) else None,
                                  seq=seq if isinstance(seq, int) else 0,
                                  created_ms=created if isinstance(created, int) else None))
    return found


def with_wal(path: str) -> tuple[str, ...]:
    """The store and its write-ahead log: a commit changes one of them (pure)."""
    return (path, path + "-wal")


@functools.cache
def reading() -> Reading:
    """OpenCode's heavy half (loaded once, on first use; any thread)."""
    from actors.upstream.opencode.reading import READING  # noqa: PLC0415 - ssa hook's cold path (bench_hook) loads only the light half

    return READING


OPENCODE = Source(name=NAME, title="OpenCode", flag=NAME, metavar="DB", holds="store",
                  locations=locations, discover=discover,
                  no_link="OpenCode child or opencode-run session", reading=reading,
                  watch_files=with_wal, rows=store_rows,
                  session_name=named_by("actors.upstream.opencode.title"))
"""OpenCode: child sessions and ``opencode run`` sessions get no link."""
