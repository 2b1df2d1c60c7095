"""File notifications for upstream links: which files to watch, and the watching thread.

Where the OS offers file notifications (Linux inotify, macOS FSEvents,
Windows), a change to an adopted transcript triggers a scan of that link
alone, within about ``step_ms`` of the write, instead of waiting for the next
cadence. The watching is done by ``watchfiles`` (Rust's ``notify``), not by
us. Notifications can be lost (network file systems, an overflowed kernel
queue, a directory re-created while its watch was being set up), so the
periodic fallback scan still runs; it is cheap because unchanged sources
are skipped after one ``stat`` (:mod:`actors.monitors.changes`).

:class:`FileIndex` maps files to links (pure bookkeeping, thread-safe);
:class:`WatchfilesFeed` is the default :class:`ChangeFeed`. Tests inject
their own feed to drive the notification path deterministically.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

from actors.monitors.changes import watch_paths
from persistence import UpstreamLink
from persistence.runtime import mark_thread

__all__ = ["READY_MS", "ChangeFeed", "FileIndex", "OnChange", "WatchfilesFeed"]

logger = logging.getLogger(__name__)

UNDECODABLE_RETRY_S = 0.5
"""Wait before re-watching after an event for a file whose name is not UTF-8, in s."""

READY_MS = 250
"""Idle wake-up of the watching thread, in ms: it bounds how soon a new watch
is known to be established (then one whole cycle covers the gap before it)."""

OnChange = Callable[[set[str] | None], None]
"""Called with the paths that changed, or ``None`` when events may have been lost."""

Ident = tuple[str, str]


def _absolute(path: str) -> str:
    # Adopted paths are stored absolute; only relative ones need the (costly) fix-up.
    return path if os.path.isabs(path) else os.path.abspath(path)


class ChangeFeed(Protocol):
    """A source of file-change events for a set of directories.

    Built by a factory called as ``factory(on_change, on_tick=...)``: it
    reports changes to ``on_change`` and calls ``on_tick`` now and then for
    timed work (or never; the cadence also calls it).
    """

    def watch(self, directories: frozenset[str]) -> None:
        """Watch exactly these directories from now on (any thread; non-blocking)."""

    def close(self, timeout: float) -> int:
        """Stop watching; returns how many threads did not stop in time (blocks)."""


class FileIndex:
    """Which links each file belongs to, and the directories that hold them.

    :meth:`track` is called with the watched links at each scan cycle (and
    after adoptions); when the set of directories changes, the feed is told
    to watch the new set. Thread-safe; non-blocking.

    Args:
        feed: the notification feed, or ``None`` (then only the map is kept).
    """

    def __init__(self, feed: ChangeFeed | None = None) -> None:
        self._lock = threading.Lock()
        self._by_path: dict[str, frozenset[Ident]] = {}
        self._links: dict[Ident, UpstreamLink] = {}
        self._directories: frozenset[str] = frozenset()
        self._feed = feed

    def attach(self, feed: ChangeFeed | None) -> None:
        """Use ``feed`` from now on and tell it what to watch."""
        with self._lock:
            self._feed = feed
            directories = self._directories
        if feed is not None:
            feed.watch(directories)

    def track(self, links: Iterable[UpstreamLink]) -> None:
        """Replace the map with the files of ``links``."""
        by_path: dict[str, set[Ident]] = {}
        by_ident: dict[Ident, UpstreamLink] = {}
        for link in links:
            by_ident[(link.session_key, link.agent_id)] = link
            for path in watch_paths(link):
                by_path.setdefault(_absolute(path), set()).add((link.session_key, link.agent_id))
        directories = frozenset(os.path.dirname(p) for p in by_path)
        with self._lock:
            self._by_path = {p: frozenset(i) for p, i in by_path.items()}
            self._links = by_ident
            changed = directories != self._directories
            self._directories = directories
            feed = self._feed
        if changed and feed is not None:
            feed.watch(directories)

    def add(self, link: UpstreamLink) -> None:
        """Also follow ``link``'s files (until the next :meth:`track`)."""
        ident = (link.session_key, link.agent_id)
        paths = [_absolute(p) for p in watch_paths(link)]
        with self._lock:
            for path in paths:
                self._by_path[path] = self._by_path.get(path, frozenset()) | {ident}
            self._links[ident] = link
            directories = self._directories | {os.path.dirname(p) for p in paths}
            changed = directories != self._directories
            self._directories = directories
            feed = self._feed
        if changed and feed is not None:
            feed.watch(directories)

    def links_of(self, paths: Iterable[str]) -> set[Ident]:
        """The links whose files are among ``paths`` (absolute or relative)."""
        with self._lock:
            found: set[Ident] = set()
            for path in paths:
                found |= self._by_path.get(_absolute(path), frozenset())
            return found

    def link(self, ident: Ident) -> UpstreamLink | None:
        """The link ``ident`` as last tracked (its source path is what matters), or ``None``."""
        with self._lock:
            return self._links.get(ident)

    @property
    def directories(self) -> frozenset[str]:
        """The directories that hold tracked files."""
        with self._lock:
            return self._directories


class WatchfilesFeed:
    """Watches directories (not recursively) with ``watchfiles`` in one thread.

    A burst of writes is delivered as one call after ``step_ms`` without
    new events (at most ``debounce_ms`` after the first). Each time a watch
    is established (at start, and after the set of directories changed) one
    ``on_change(None)`` follows, since changes made before the watch existed
    were never reported. A watch error is logged once per episode and the
    watch retried after ``retry_s``; meanwhile the fallback scan covers. An
    event for a file whose name is not UTF-8 (``watchfiles`` cannot give it as
    ``str`` and ends the watch) is not an error of the watch: it is logged once
    and the watch re-established after :data:`UNDECODABLE_RETRY_S`, so one such
    file in a watched folder costs one whole cycle per event, not the
    notifications of every other file.

    Args:
        on_change: called in the feed's thread; must not block for long.
        on_tick: called in the feed's thread after every wake-up (at least
            every :data:`READY_MS` ms while watching), for timed work.
        step_ms: quiet time that ends a burst, in ms.
        debounce_ms: longest burst, in ms.
        retry_s: wait before re-watching after an error, in s.

    Thread-safe. The thread is a daemon that holds no state: stopping it
    never loses a change (the fallback scan finds everything).
    """

    def __init__(self, on_change: OnChange, *, on_tick: Callable[[], object] | None = None,
                 step_ms: int = 50, debounce_ms: int = 500, retry_s: float = 5.0) -> None:
        self._on_change = on_change
        self._on_tick = on_tick
        self._step_ms = step_ms
        self._debounce_ms = debounce_ms
        self._retry_s = retry_s
        self._lock = threading.Lock()
        self._directories: frozenset[str] = frozenset()
        self._changed = threading.Event()
        self._restart = threading.Event()
        self._closed = threading.Event()
        self._failing = False
        self._undecodable_seen = False
        self._thread = threading.Thread(target=self._run, name="ssa-file-feed", daemon=True)
        self._thread.start()

    def watch(self, directories: frozenset[str]) -> None:
        """Watch these directories from now on (any thread; non-blocking)."""
        with self._lock:
            if directories == self._directories:
                return
            self._directories = directories
            self._restart.set()  # ends the current watch
            self._changed.set()

    def close(self, timeout: float) -> int:
        """Stop the thread (blocks up to ``timeout`` s); returns 1 if it is still running."""
        with self._lock:
            self._closed.set()
            self._restart.set()
            self._changed.set()
        self._thread.join(timeout)
        return int(self._thread.is_alive())

    def _run(self) -> None:
        mark_thread(inline=True)
        while True:
            with self._lock:
                if self._closed.is_set():
                    return
                # A fresh stop event per watch: a close() or watch() that lands
                # at any moment sets the current one, so none is ever lost.
                self._restart = stop = threading.Event()
                self._changed.clear()
                directories = frozenset(d for d in self._directories if os.path.isdir(d))
            if not directories:
                self._changed.wait()
                continue
            try:
                self._watch(directories, stop)
            except Exception as exc:
                if _undecodable(exc):
                    if not self._undecodable_seen:
                        self._undecodable_seen = True
                        logger.warning("a file whose name is not UTF-8 changed in a watched "
                                       "folder; file notifications are re-established after "
                                       "each of its changes")
                    self._closed.wait(UNDECODABLE_RETRY_S)
                    continue
                if not self._failing:
                    self._failing = True
                    logger.warning("file notifications failed (%s: %s); relying on the "
                                   "periodic scan", type(exc).__name__, exc)
                self._closed.wait(self._retry_s)
            else:
                if self._failing:
                    self._failing = False
                    logger.info("file notifications work again")

    def _watch(self, directories: frozenset[str], stop: threading.Event) -> None:
        import watchfiles  # noqa: PLC0415

        established = False
        for changes in watchfiles.watch(
                *sorted(directories), watch_filter=None, debounce=self._debounce_ms,
                step=self._step_ms, stop_event=stop, rust_timeout=READY_MS,
                yield_on_timeout=True, raise_interrupt=False, recursive=False,
                ignore_permission_denied=True):
            if changes:
                self._deliver({path for _, path in changes})
            if self._on_tick is not None:
                try:
                    self._on_tick()
                except Exception:
                    logger.exception("the file feed's timed work failed")
            if not established:
                # The first yield proves the watches exist; whatever changed
                # before they did (since this watch was asked for) is found by
                # one whole cycle now.
                established = True
                self._deliver(None)
            if stop.is_set():
                return

    def _deliver(self, paths: set[str] | None) -> None:
        try:
            self._on_change(paths)
        except Exception:
            logger.exception("handling file notifications failed")


def _undecodable(exc: Exception) -> bool:
    """Whether ``exc`` is watchfiles' error for an event path that is not UTF-8
    (``WatchfilesRustInternalError: Unable to decode path …``, watchfiles 1.x)."""
    return type(exc).__name__ == "WatchfilesRustInternalError" and "decode path" in str(exc)
