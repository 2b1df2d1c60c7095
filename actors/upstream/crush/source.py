"""Crush as an upstream source: sessions are rows of a project's ``.crush/crush.db``
(docs/upstream-crush.md).

Crush keeps its store in the project's data directory, so there is no
standard home location: ``ssa watch --crush PATH`` names a store, a project
(its ``.crush/crush.db``) or a folder of projects. A session's change
indicator is the largest ``rowid`` of its messages (a message is inserted
once; assistant rows are updated while they stream, but are never typed).

The light half is here (APSW only: ``ssa hook`` may list stores at every
prompt); the heavy half is :mod:`actors.upstream.crush.reading`
(classification: :mod:`actors.upstream.crush.classify`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping

import apsw

from actors.upstream.crush.db import TOP_LEVEL, open_store, store_problem
from actors.upstream.source import (
    Candidate,
    Source,
    StoreRow,
    in_subfolders,
    named_by,
    note_store_problem,
)
from persistence.lazylog import get_logger

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from actors.upstream.reading import Reading

__all__ = ["CRUSH", "store_rows"]

logger = get_logger(__name__)

NAME = "crush"
def locations(env: Mapping[str, str], home: str) -> list[str]:
    """None: stores live in projects (pass ``--crush PATH``). Pure."""
    return []


def _stores(root: str) -> list[str]:
    """The stores a ``--crush`` path names: itself, its ``.crush/crush.db``, or its
    projects' (``*/.crush/crush.db``)."""
    if os.path.isfile(root):
        return [root]
    found = [os.path.join(root, ".crush", "crush.db"), *in_subfolders(root, ".crush", "crush.db")]
    return [db for db in found if os.path.isfile(db)]


def discover(root: str) -> Iterator[Candidate]:
    """The top-level sessions of the stores under ``root``, oldest first.

    An unreadable store is logged once per reason; caller's thread; blocks on
    one query per store; never raises.
    """
    for db in _stores(root):
        try:
            conn = open_store(db)
            try:
                ids = [str(i) for (i,) in conn.execute(
                    f"SELECT id FROM sessions WHERE {TOP_LEVEL}"  # noqa: S608 - a constant
                    " ORDER BY created_at, rowid")]
            finally:
                conn.close()
        except apsw.Error as exc:
            why = store_problem(exc)
            if note_store_problem(db, why):  # rediscovery every interval must not repeat it
                logger.warning("cannot list Crush sessions in %s: %s", db, why)
            continue
        note_store_problem(db, None)
        for session_id in ids:
            yield Candidate(source=NAME, path=db, thread_id=session_id)


def store_rows(db: str, busy_timeout_ms: int = 500) -> list[StoreRow]:
    """Every top-level session of the store ``db`` with its project and change indicator.

    ``[]`` for a missing or unreadable store. Caller's thread; blocks on one query.
    """
    if not os.path.isfile(db):
        return []
    try:
        conn = open_store(db, busy_timeout_ms)
    except apsw.Error:
        return []
    try:
        rows = conn.execute(
            "SELECT s.id, coalesce(max(m.rowid), 0), s.created_at FROM sessions AS s"
            " LEFT JOIN messages AS m ON m.session_id = s.id"
            " WHERE (s.parent_session_id IS NULL OR s.parent_session_id = '')"
            " AND s.id NOT LIKE 'title-%' AND instr(s.id, '$$') = 0"
            " GROUP BY s.id").fetchall()
    except apsw.Error as exc:
        logger.debug("cannot list Crush sessions in %s: %s", db, type(exc).__name__)
        return []
    finally:
        conn.close()
    project = os.path.dirname(os.path.dirname(os.path.realpath(db)))
    return [StoreRow(session_id=str(sid), directory=project,
                     seq=seq if isinstance(seq, int) else 0,
                     created_ms=created * 1000 if isinstance(created, int) else None)
            for sid, seq, created in rows]


def with_wal(path: str) -> tuple[str, ...]:
    """The store and its write-ahead log: a commit changes one of them (pure)."""
    return (path, path + "-wal")


@functools.cache
def reading() -> Reading:
    """Crush's heavy half (loaded once, on first use; any thread)."""
    from actors.upstream.crush.reading import READING  # noqa: PLC0415 - ssa hook's cold path (bench_hook) loads only the light half

    return READING


CRUSH = Source(name=NAME, title="Crush", flag=NAME, metavar="PATH", holds="store",
               locations=locations, discover=discover,
               no_link="Crush sub-agent or title session", reading=reading,
               watch_files=with_wal, rows=store_rows,
               session_name=named_by("actors.upstream.crush.title"))
"""Crush: sub-agents' task sessions and title sessions get no link."""
