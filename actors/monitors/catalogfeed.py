"""Directory events of the session catalogs: a new transcript is adopted at once.

``ssa watch`` links the sessions it found; a session created while it runs
used to wait for the next fallback scan (``--interval``) to be discovered.
:class:`CatalogFeed` watches each JSONL catalog root (Claude Code's
``projects``, Codex's ``sessions``, Pi's ``sessions``) recursively with
``watchfiles`` and reports which roots saw a file or folder appear (created
or moved in), so the watch rediscovers those roots within about ``step_ms``.
A new project or date folder is covered: its watch is added as it appears,
and whatever was written into it before that is found by the rediscovery
the folder's own event triggers, and once the watch is established the
roots are reported once (whatever appeared between the caller's listing and
the watch). Appends to known transcripts are not its
business (the gateway's own feed follows those) and are filtered out in the
feed's thread.

OpenCode's sessions are rows of one database, not files: a new one is found
by the fallback scan's rediscovery. Roots that do not exist are not watched
(the fallback covers them too). A root ``watchfiles`` cannot watch (a folder
under it whose name is not UTF-8 fails the whole watch) is found by watching
each root alone once the shared watch fails, and left to the fallback scan,
so the other catalogs keep their notifications.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["CatalogFeed", "OnNew"]

logger = logging.getLogger(__name__)

OnNew = Callable[[set[Path]], None]
"""Called with the catalog roots in which something appeared."""


class CatalogFeed:
    """Watches catalog roots recursively and reports where files or folders appeared.

    Args:
        roots: the catalog directories; missing ones are skipped.
        on_new: called in the feed's thread with the roots that saw a new
            entry; must not block for long.
        step_ms: quiet time that ends a burst of events, in ms.
        retry_s: wait before watching again after a watch error, in s.

    The thread starts at construction and is a daemon holding no state
    (stopping it loses nothing: the fallback scan rediscovers everything).
    Thread-safe; :meth:`close` blocks up to its timeout.
    """

    def __init__(self, roots: Iterable[Path], on_new: OnNew, *, step_ms: int = 50,
                 retry_s: float = 5.0) -> None:
        self._roots = sorted({Path(os.path.abspath(r)) for r in roots})
        self._on_new = on_new
        self._step_ms = step_ms
        self._retry_s = retry_s
        self._stop = threading.Event()
        self._unwatchable: set[Path] = set()
        self.ready = threading.Event()
        """Set once the first watch is established (tests wait on it)."""
        self._thread = threading.Thread(target=self._run, name="ssa-catalog-feed", daemon=True)
        self._thread.start()

    def close(self, timeout: float) -> int:
        """Stop watching (blocks up to ``timeout`` s); returns 1 if the thread still runs."""
        self._stop.set()
        self._thread.join(timeout)
        return int(self._thread.is_alive())

    def _root_of(self, path: str) -> Path | None:
        for root in self._roots:
            if path == str(root) or path.startswith(str(root) + os.sep):
                return root
        return None

    def _run(self) -> None:
        failing = False
        while not self._stop.is_set():
            roots = [r for r in self._roots if r not in self._unwatchable and r.is_dir()]
            if not roots:
                self.ready.set()
                return  # nothing to watch; the fallback rediscovery covers them
            try:
                self._watch(roots)
            except Exception as exc:
                bad = {r for r in roots if not _watchable(r)} if len(roots) > 1 else set()
                if bad and len(bad) < len(roots):
                    self._unwatchable |= bad
                    logger.warning("directory notifications of %s failed (%s); its new "
                                   "sessions are found by the periodic scan",
                                   ", ".join(map(str, sorted(bad))), type(exc).__name__)
                    continue  # the other roots at once
                if not failing:
                    failing = True
                    logger.warning("directory notifications of the catalogs failed (%s: %s); "
                                   "new sessions are found by the periodic scan",
                                   type(exc).__name__, exc)
                self._stop.wait(self._retry_s)
            else:
                return

    def _watch(self, roots: list[Path]) -> None:
        import watchfiles  # noqa: PLC0415

        added = watchfiles.Change.added

        def appeared(change: watchfiles.Change, path: str) -> bool:
            return change == added

        for changes in watchfiles.watch(
                *roots, watch_filter=appeared, step=self._step_ms, debounce=500,
                stop_event=self._stop, rust_timeout=250, yield_on_timeout=True,
                raise_interrupt=False, recursive=True, ignore_permission_denied=True):
            found = {root for _, path in changes if (root := self._root_of(path)) is not None}
            if not self.ready.is_set():
                # The first yield proves the watches exist; what appeared after the
                # caller's own listing and before that is found by one more now.
                found |= set(roots)
                self.ready.set()
            if found:
                try:
                    self._on_new(found)
                except Exception:
                    logger.exception("handling a new catalog entry failed")


def _watchable(root: Path) -> bool:
    """Whether ``watchfiles`` can watch ``root`` by itself: one watch set up and closed.

    The feed's thread; blocks for about a millisecond plus the set-up's directory
    walk; never raises.
    """
    import watchfiles  # noqa: PLC0415

    changes = watchfiles.watch(root, rust_timeout=1, yield_on_timeout=True, debounce=1, step=1,
                               raise_interrupt=False, recursive=True,
                               ignore_permission_denied=True)
    try:
        next(changes)
    except Exception:
        return False
    finally:
        changes.close()
    return True
