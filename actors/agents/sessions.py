"""The sessions a prompt hook can see: every tool's catalog, with each session's directory.

``ssa hook`` watches, by default, the other sessions of the manager's
project, so it must know each session's working directory. Claude Code,
Codex and Pi write it in the transcript's first rows (``cwd``); OpenCode
keeps it in its ``session`` table (``directory``). Reading a file's head
at every prompt would cost one open per session, so the directory of each
transcript is kept in a small cache file beside the signal log, keyed by
path and inode (a file replaced under the same name is read again).

Standard library and APSW only (no msgspec): this runs at every prompt.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

import apsw

from actors.upstream.catalog import discover
from persistence.lazylog import get_logger

__all__ = ["CwdCache", "Found", "OpenCodeRow", "find_sessions", "read_opencode"]

logger = get_logger(__name__)

HEAD_BYTES = 256 * 1024
"""How much of a transcript's start is searched for its ``cwd``."""
_CWD = re.compile(rb'"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')
_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*("(?:[^"\\]|\\.)*")')
_JSONL_SOURCES = ("claude", "codex", "pi")


class Found(NamedTuple):
    """One session in a catalog.

    Attributes:
        source: ``"claude"``, ``"codex"``, ``"opencode"`` or ``"pi"``.
        path: the transcript (OpenCode: the database).
        thread_id: the tool's session id.
        cwd: its working directory, or ``None`` when not written yet.
        started_ms: when the session began (its first row's timestamp, epoch
            ms), or ``None`` when unknown.
        stat: ``(st_ino, st_size)`` of the transcript as listed (``None`` for
            OpenCode, or a file that vanished): change detection reuses it.
    """

    source: str
    path: str
    thread_id: str
    cwd: str | None
    started_ms: int | None = None
    stat: tuple[int, int] | None = None


class OpenCodeRow(NamedTuple):
    """One top-level OpenCode session: its directory and event sequence (change indicator)."""

    session_id: str
    directory: str | None
    seq: int
    created_ms: int | None = None


class CwdCache:
    """Working directories of transcripts already looked at, kept in one small file.

    Args:
        path: the cache file (JSON), or ``None`` to keep nothing on disk.

    Not thread-safe (one hook process uses it). :meth:`save` writes only
    when something changed, atomically, with mode 0600; a cache that cannot
    be read or written is only slower, never wrong.
    """

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._entries: dict[str, list[object]] = {}
        self._dirty = False
        if path is not None:
            try:
                data = json.loads(path.read_bytes())
                entries = data.get("entries") if isinstance(data, dict) else None
                if isinstance(entries, dict):
                    self._entries = entries
            except (OSError, ValueError):
                pass

    def head(self, path: str) -> tuple[str | None, int | None, tuple[int, int] | None]:
        """``(cwd, started_ms, (inode, size))`` of the transcript at ``path``.

        ``cwd`` is the first ``cwd`` written, ``started_ms`` the first
        ``timestamp`` (epoch ms); either is ``None`` when not written yet
        (both are read once per file and inode). The last is the file's
        ``stat`` now, ``None`` when it is gone. Blocks on one ``stat``, and
        on reading at most :data:`HEAD_BYTES` when the file is new to the
        cache. Never raises.
        """
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None, None, None
        inode, seen = st.st_ino, (st.st_ino, st.st_size)
        entry = self._entries.get(path)
        if isinstance(entry, list) and len(entry) == 3 and entry[0] == inode:
            cwd, started = entry[1], entry[2]
            return (cwd if isinstance(cwd, str) else None,
                    started if isinstance(started, int) else None, seen)
        cwd, started = _read_head(path)
        if cwd is not None:  # not written yet: look again next time
            self._entries[path] = [inode, cwd, started]
            self._dirty = True
        return cwd, started, seen

    def save(self) -> None:
        """Write the cache if it changed (atomic replace, mode 0600); never raises."""
        if self._path is None or not self._dirty or not self._path.parent.is_dir():
            return
        import tempfile  # noqa: PLC0415 - only when the cache changed (start-up cost)

        try:
            fd, tmp = tempfile.mkstemp(prefix=".hook-cwd-", dir=self._path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as file:
                    json.dump({"v": 1, "entries": self._entries}, file)
                os.replace(tmp, self._path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            logger.debug("the hook's directory cache was not saved: %s", exc)
            return
        self._dirty = False


def _string(pattern: re.Pattern[bytes], head: bytes) -> str | None:
    match = pattern.search(head)
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, str) and value else None


def _read_head(path: str) -> tuple[str | None, int | None]:
    try:
        with open(path, "rb") as file:
            head = file.read(HEAD_BYTES)
    except (OSError, ValueError):
        return None, None
    stamp = _string(_TIMESTAMP, head)
    started: int | None = None
    if stamp is not None:
        from datetime import UTC, datetime  # noqa: PLC0415 - only for a transcript new to the cache

        try:
            moment = datetime.fromisoformat(stamp)
        except ValueError:
            moment = None
        if moment is not None:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            started = int(moment.timestamp() * 1000)
    return _string(_CWD, head), started


def read_opencode(db: Path, *, busy_timeout_ms: int = 500) -> list[OpenCodeRow]:
    """Every top-level session of an OpenCode store with its directory and sequence.

    Opened read-only (``mode=ro``, ``query_only``, untrusted schema), as the
    monitor opens it. Returns ``[]`` for a missing or unreadable store (the
    monitor reports those). Caller's thread; blocks on one query.
    """
    if not db.is_file():
        return []
    try:
        conn = apsw.Connection(db.resolve().as_uri() + "?mode=ro",
                               flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    except apsw.Error:
        return []
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA trusted_schema = OFF")
        rows = conn.execute(
            "SELECT s.id, s.directory, coalesce(es.seq, 0), s.time_created FROM session AS s"
            " LEFT JOIN event_sequence AS es ON es.aggregate_id = s.id"
            " WHERE s.parent_id IS NULL").fetchall()
    except apsw.Error as exc:
        logger.debug("cannot list OpenCode sessions in %s: %s", db, type(exc).__name__)
        return []
    finally:
        conn.close()
    found: list[OpenCodeRow] = []
    for session_id, directory, seq, created in rows:
        if isinstance(session_id, str) and session_id:
            found.append(OpenCodeRow(session_id=session_id,
                                     directory=directory if isinstance(directory, str) else None,
                                     seq=seq if isinstance(seq, int) else 0,
                                     created_ms=created if isinstance(created, int) else None))
    return found


def find_sessions(catalogs: Mapping[str, Iterable[Path]], cache: CwdCache,
                  opencode: dict[str, list[OpenCodeRow]] | None = None) -> list[Found]:
    """Every session in ``catalogs`` with its working directory.

    Args:
        catalogs: ``{source: [catalog roots]}`` (as
            :func:`actors.upstream.catalog.default_catalogs` gives them).
        cache: where known transcripts' directories are kept.
        opencode: filled with each OpenCode store's rows, by database path
            (the caller reuses them for change detection).

    Returns:
        The sessions, in discovery order, each path with the catalog's root
        resolved (as adoption stores it). Blocks on directory listings.
    """
    found: list[Found] = []
    for source in _JSONL_SOURCES:
        for root in catalogs.get(source, ()):
            given, real = str(root), os.path.realpath(root)  # once per catalog, not per file
            for candidate in discover(source, root):
                path = candidate.path
                if path.startswith(given):
                    path = real + path[len(given):]
                cwd, started, seen = cache.head(path)
                found.append(Found(source=source, path=path, thread_id=candidate.thread_id,
                                   cwd=cwd, started_ms=started, stat=seen))
    for db in catalogs.get("opencode", ()):
        rows = read_opencode(db)
        real = os.path.realpath(db)
        if opencode is not None:
            opencode[real] = rows
        found.extend(Found(source="opencode", path=real, thread_id=row.session_id,
                           cwd=row.directory, started_ms=row.created_ms) for row in rows)
    return found
