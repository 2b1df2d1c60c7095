"""How ``ssa hook --wait`` waits: file notifications and the session's end, no polling.

A waiting hook must learn of a change the moment it lands and cost nothing
while nothing does. :class:`ChangeWaiter` blocks in one ``poll`` on:

* an inotify descriptor (``inotify_simple``, Linux) watching the signal
  log's directory (every commit of any process appends to its ``-wal``) and
  the directories of the transcripts the manager watches (a person's turn
  appends to one; a new session of the project appears beside them);
* a ``pidfd`` of the tool process the session runs in
  (:func:`actors.agents.caller.tool_process`): readable when it ends, so
  the waiter ends with its session.

Changes to the hook's own files (its cache, its lock and caller records)
are ignored, so a check never wakes the next one. Where inotify is missing
(not Linux), :meth:`ChangeWaiter.wait` returns after ``fallback_s`` instead:
a slow poll.

Used from the hook's main thread only; not thread-safe.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from persistence.lazylog import get_logger

__all__ = ["IGNORED_NAMES", "ChangeWaiter", "Outcome"]

logger = get_logger(__name__)

Outcome = Literal["change", "ended", "timeout", "input"]
IGNORED_NAMES = frozenset({"hook-cwd-cache.json", "hooks"})
"""Names in the state directory that are the hook's own bookkeeping."""
_IGNORED_PREFIXES = (".hook-cwd-",)
_SQLITE_SIDE = ("-shm", "-journal")
_MODIFY = 0x2
"""inotify's ``IN_MODIFY``."""


def _inotify() -> Any:
    try:
        from inotify_simple import INotify  # noqa: PLC0415 - Linux only; wait mode only
    except (ImportError, OSError):
        return None
    try:
        return INotify(nonblocking=True)
    except OSError as exc:  # e.g. the user's inotify instance limit
        logger.info("no file notifications for ssa hook --wait: %s", exc)
        return None


class ChangeWaiter:
    """Blocks until a watched directory changes, the tool process ends, or a timeout.

    Args:
        tool_pid: the tool process whose end ends the wait, or ``None``.
        fallback_s: without inotify, how long :meth:`wait` sleeps (seconds).

    Close it with :meth:`close` (or use it as a context manager).
    """

    def __init__(self, tool_pid: int | None, *, fallback_s: float = 1.0) -> None:
        self._inotify = _inotify()
        self.fallback_s = fallback_s
        """Seconds between checks when changes are not (all) notified."""
        self.degraded = self._inotify is None
        """Whether some folder could not be watched (no inotify, or its limits): then
        :meth:`wait` returns after :attr:`fallback_s` at the latest."""
        self._watched: dict[str, int] = {}
        self._only: dict[int, set[str]] = {}
        """Watches of a missing directory's ancestor: the names that count there."""
        self._pidfd: int | None = None
        self._input: int | None = None
        self._poll = select.poll()
        if tool_pid is not None:
            with contextlib.suppress(OSError, AttributeError):
                self._pidfd = os.pidfd_open(tool_pid)
                self._poll.register(self._pidfd, select.POLLIN)
        if self._inotify is not None:
            self._poll.register(self._inotify.fileno(), select.POLLIN)

    def watch_fd(self, fd: int) -> None:
        """Also wake when ``fd`` is readable (:meth:`wait` returns ``"input"``). Non-blocking."""
        self._input = fd
        self._poll.register(fd, select.POLLIN | select.POLLHUP)

    def unwatch_fd(self) -> None:
        """Stop polling the descriptor of :meth:`watch_fd` (it reached its end)."""
        if self._input is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._poll.unregister(self._input)
            self._input = None

    @property
    def notified(self) -> bool:
        """Whether changes are notified (inotify); otherwise :meth:`wait` sleeps."""
        return self._inotify is not None

    def watch(self, directories: Iterable[Path]) -> None:
        """Watch these directories too (idempotent).

        A missing one is waited for: its nearest existing ancestor is watched
        for the creation of the next directory on the way (only that name
        counts there), and the caller watches again after each change.
        Non-blocking.
        """
        if self._inotify is None:
            return
        wanted: list[Path] = []
        for directory in directories:
            if directory.is_dir():
                wanted.append(directory)
                continue
            child, parent = directory, directory.parent
            while parent != child and not parent.is_dir():
                child, parent = parent, parent.parent
            if parent == child:
                continue
            self._add(parent, only=child.name)
        for directory in wanted:
            self._add(directory)

    def _add(self, directory: Path, *, only: str | None = None) -> None:
        """Watch ``directory`` (``only``: just for that name, unless watched whole)."""
        from inotify_simple import flags  # noqa: PLC0415 - Linux only

        key = str(directory)
        if key in self._watched:
            wd = self._watched[key]
            if only is not None and wd in self._only:
                self._only[wd].add(only)
            elif only is None:
                self._only.pop(wd, None)  # wanted whole now
            return
        # No CLOSE_WRITE: a reader that opened a file read-write closes it so too.
        mask = flags.MODIFY | flags.CREATE | flags.MOVED_TO | flags.DELETE
        try:
            wd = self._inotify.add_watch(key, mask)
        except FileNotFoundError:
            return
        except OSError:  # ENOSPC: the user's inotify watch limit; check periodically
            self.degraded = True
            return
        self._watched[key] = wd
        if only is not None:
            self._only[wd] = {only}

    def _relevant(self, events: Iterable[Any]) -> bool:
        """Whether any event may be news: not the hook's own files, and of a SQLite
        database only a write (a reader's open and close make and remove ``-wal`` and
        ``-shm`` files, and write the ``-shm`` index: those are not news)."""
        for event in events:
            name = str(event.name)
            only = self._only.get(event.wd)
            if only is not None and name not in only:
                continue
            if name in IGNORED_NAMES or name.startswith(_IGNORED_PREFIXES) \
                    or name.endswith(_SQLITE_SIDE):
                continue
            if name.endswith("-wal") and not event.mask & _MODIFY:
                continue
            return True
        return False

    def drain(self) -> None:
        """Drop the changes seen so far (the check about to run covers them). Non-blocking."""
        if self._inotify is not None:
            with contextlib.suppress(OSError, BlockingIOError):
                self._inotify.read(timeout=0)

    def wait(self, timeout_s: float | None = None, *, settle_s: float = 0.05) -> Outcome:
        """Block until a relevant change, the tool's end, or ``timeout_s`` (``None``: none).

        A change is followed by ``settle_s`` more seconds of collecting, so a
        burst of writes (a reply being appended) makes one check.

        Returns:
            ``"change"``, ``"ended"`` (the tool process is gone), ``"input"`` (the
            descriptor of :meth:`watch_fd` is readable) or ``"timeout"``.

        The calling thread; blocks.
        """
        if self.degraded and self._inotify is not None:
            timeout_s = self.fallback_s if timeout_s is None else min(timeout_s,
                                                                      self.fallback_s)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if self._inotify is None:
                left = self.fallback_s if deadline is None else min(
                    self.fallback_s, max(0.0, deadline - time.monotonic()))
                ended = self._poll.poll(left * 1000) if self._pidfd is not None else None
                if ended:
                    return "ended"
                if self._pidfd is None:
                    time.sleep(left)
                return "timeout" if deadline is not None and time.monotonic() >= deadline \
                    else "change"
            left_ms = None if deadline is None else max(0, int((deadline - time.monotonic())
                                                               * 1000))
            ready = self._poll.poll(left_ms)
            if not ready:
                return "timeout"
            fds = {fd for fd, _ in ready}
            if self._pidfd is not None and self._pidfd in fds:
                return "ended"
            if self._input is not None and self._input in fds:
                return "input"
            try:
                events = self._inotify.read(timeout=0)
            except (OSError, BlockingIOError):
                events = []
            if not self._relevant(events):
                continue
            if settle_s > 0:  # collect the rest of a burst (blocks at most settle_s)
                with contextlib.suppress(OSError, BlockingIOError):
                    self._inotify.read(timeout=int(settle_s * 1000))
            return "change"

    def close(self) -> None:
        """Release the descriptors (idempotent)."""
        if self._inotify is not None:
            with contextlib.suppress(OSError):
                self._inotify.close()
            self._inotify = None
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._pidfd = None

    def __enter__(self) -> ChangeWaiter:
        """The waiter itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """:meth:`close`."""
        self.close()
