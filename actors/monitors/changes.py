"""Change detection before any monitor is touched: one ``stat`` per link (pure, no threads).

A scan cycle over thousands of adopted sessions must cost about what it
costs to look at each file, not a scan of each. So every link carries the
*fingerprint* of its source as of the last scan that settled it (device,
inode, size and modification time of each file its source's
``watch_files`` names: a transcript, or a store and its WAL) together
with the link's ``updated_at``. A cycle
scans a link only when either differs; anything that could make a scan
find news (bytes appended, the file replaced, rotated, truncated or
rewritten, the marker rebased by a re-adoption) changes one of them.

A source that cannot be stat'ed has no fingerprint and is always scanned
(that is how a vanished source is counted as missing). Paired-node links
are read through the host's reader and are always scanned.
"""

from __future__ import annotations

import os
import stat

from actors.upstream.source import only_itself
from actors.upstream.sources import find_source
from persistence import UpstreamLink

__all__ = ["Fingerprint", "StatCache", "fingerprint", "watch_paths"]

Fingerprint = tuple[int, ...]
"""``(st_dev, st_ino, st_size, st_mtime_ns, ...)`` of the files a scan reads."""


StatCache = dict[str, "Fingerprint | None"]
"""One cycle's ``stat`` results by path. Several links share a file (a Crush or
OpenCode store and its WAL, a Gemini CLI project's ``logs.json``): within one
cycle each is stat'ed once. A change after that ``stat`` is seen by the next
cycle, as a change after any ``stat`` is."""


def _stat_key(path: str, cache: StatCache | None = None) -> Fingerprint | None:
    if cache is not None:
        if path in cache:
            return cache[path]
        cache[path] = found = _stat_key(path)
        return found
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def fingerprint(link: UpstreamLink, cache: StatCache | None = None) -> Fingerprint | None:
    """The fingerprint of ``link``'s source now, or ``None`` (always scan it).

    Args:
        link: an upstream link as stored.
        cache: one cycle's :data:`StatCache` (filled as it goes; not
            thread-safe: one caller at a time), or ``None`` to stat afresh.

    Returns:
        A tuple that changes whenever the source could hold news; ``None``
        for paired-node links, links without a local path, and sources that
        are missing or not regular files.

    Any thread; blocks for one or two ``stat`` calls; never raises.
    """
    if link.host_id.startswith("node:"):
        return None
    path = link.upstream_ref.get("path")
    if not isinstance(path, str):
        return None
    first, *rest = _files(link.source, path)
    main = _stat_key(first, cache)
    if main is None:
        return None
    for other in rest:  # a side file (a WAL) may come and go: absent is zeros
        main += _stat_key(other, cache) or (0, 0, 0, 0)
    return main


def _files(source: str, path: str) -> tuple[str, ...]:
    found = find_source(source)
    return (found.watch_files if found is not None else only_itself)(path)


def watch_paths(link: UpstreamLink) -> tuple[str, ...]:
    """The files whose change events should trigger a scan of ``link`` (may be empty).

    A transcript is its own file; a store is its database and WAL (the
    source's ``watch_files``). Pure; any thread.
    """
    if link.host_id.startswith("node:"):
        return ()
    path = link.upstream_ref.get("path")
    if not isinstance(path, str):
        return ()
    return _files(link.source, path)
