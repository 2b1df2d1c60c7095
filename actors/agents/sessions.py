"""The sessions a prompt hook can see: every tool's catalog, with each session's directory.

``ssa hook`` watches, by default, the other sessions of the manager's
project, so it must know each session's working directory. A file source
writes it in the transcript's head (its ``head``: the JSONL tools' ``cwd``);
a store source keeps it in its session rows (its ``rows``). Reading a
file's head at every prompt would cost one open per session, so the
directory of each transcript is kept in a small cache file beside the
signal log, keyed by path and inode (a file replaced under the same name
is read again). The sources are the registry's (:mod:`actors.upstream.sources`).

Standard library and APSW only (no msgspec): this runs at every prompt.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Mapping

from actors.upstream.source import Source, StoreRow, json_head
from actors.upstream.sources import all_sources
from persistence.lazylog import get_logger
from persistence.record import Record

__all__ = ["CwdCache", "Found", "StoreRow", "find_sessions"]

logger = get_logger(__name__)


class Found(Record):
    """One session in a catalog.

    Attributes:
        source: the source's name (``"claude"``, ...).
        path: the transcript (a store source: the database).
        thread_id: the tool's session id.
        cwd: its working directory, or ``None`` when not written yet.
        started_ms: when the session began (its first row's timestamp, epoch
            ms), or ``None`` when unknown.
        stat: ``(st_ino, st_size)`` of the transcript as listed (``None`` for
            a store source, or a file that vanished): change detection reuses it.
    """

    __slots__ = ("cwd", "path", "source", "started_ms", "stat", "thread_id")

    def __init__(self, source: str, path: str, thread_id: str, cwd: str | None,
                 started_ms: int | None = None, stat: tuple[int, int] | None = None) -> None:
        self.source = source
        self.path = path
        self.thread_id = thread_id
        self.cwd = cwd
        self.started_ms = started_ms
        self.stat = stat


class CwdCache:
    """Working directories of transcripts already looked at, kept in one small file.

    Args:
        path: the cache file (JSON), or ``None`` to keep nothing on disk.

    Not thread-safe (one hook process uses it). :meth:`save` writes only
    when something changed, atomically, with mode 0600; a cache that cannot
    be read or written is only slower, never wrong.
    """

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._entries: dict[str, list[object]] = {}
        self._dirty = False
        if path is not None:
            try:
                with open(path, "rb") as file:
                    data = json.loads(file.read())
                entries = data.get("entries") if isinstance(data, dict) else None
                if isinstance(entries, dict):
                    self._entries = entries
            except (OSError, ValueError):
                pass

    def head(self, path: str, read: Callable[[str], tuple[str | None, int | None]] = json_head,
             ) -> tuple[str | None, int | None, tuple[int, int] | None]:
        """``(cwd, started_ms, (inode, size))`` of the transcript at ``path``.

        ``cwd`` and ``started_ms`` (epoch ms) are what ``read`` finds in the
        transcript's head (default: the first ``cwd`` and ``timestamp``
        fields); either is ``None`` when not written yet
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
        cwd, started = read(path)
        if cwd is not None:  # not written yet: look again next time
            self._entries[path] = [inode, cwd, started]
            self._dirty = True
        return cwd, started, seen

    def save(self) -> None:
        """Write the cache if it changed (atomic replace, mode 0600); never raises."""
        if self._path is None or not self._dirty or not os.path.isdir(os.path.dirname(self._path)):
            return
        import tempfile  # noqa: PLC0415 - only when the cache changed (start-up cost)

        try:
            fd, tmp = tempfile.mkstemp(prefix=".hook-cwd-", dir=os.path.dirname(self._path))
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


def find_sessions(catalogs: Mapping[str, Iterable[str]], cache: CwdCache,
                  stores: dict[str, list[StoreRow]] | None = None) -> list[Found]:
    """Every session in ``catalogs`` with its working directory.

    Args:
        catalogs: ``{source: [catalog roots]}`` (as
            :func:`actors.upstream.catalog.default_catalogs` gives them).
        cache: where known transcripts' directories are kept.
        stores: filled with each store's rows, by database path (the caller
            reuses them for change detection).

    Returns:
        The sessions, file sources' first, in registry and discovery order, each path with the
        catalog's root resolved (as adoption stores it). Blocks on directory
        listings and one query per store.
    """
    found: list[Found] = []
    files = [s for s in all_sources() if s.rows is None]
    for source in files + [s for s in all_sources() if s.rows is not None]:  # files first
        for root in catalogs.get(source.name, ()):
            if source.rows is not None:
                for db in _store_files(source, root):
                    rows = source.rows(db, 500)
                    real = os.path.realpath(db)
                    if stores is not None:
                        stores[real] = rows
                    found.extend(Found(source=source.name, path=real,
                                       thread_id=row.session_id, cwd=row.directory,
                                       started_ms=row.created_ms) for row in rows)
                continue
            given, real = str(root), os.path.realpath(root)  # once per catalog, not per file
            for candidate in source.discover(root):
                path = candidate.path
                if path.startswith(given):
                    path = real + path[len(given):]
                cwd, started, seen = cache.head(path, source.head)
                found.append(Found(source=source.name, path=path,
                                   thread_id=candidate.thread_id, cwd=cwd,
                                   started_ms=started, stat=seen))
    return found


def _store_files(source: Source, root: str) -> list[str]:
    """The database files a store source's catalog root names: the root itself, or,
    for a directory (a project, or a folder of projects), the stores its discovery
    finds there, each once. Blocks on a directory listing; never raises."""
    if not os.path.isdir(root):
        return [root]
    return list(dict.fromkeys(candidate.path for candidate in source.discover(root)))
