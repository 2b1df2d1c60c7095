"""``ssa watch``'s adoption: which sessions of the catalogs it adopts, and how it says so.

:class:`Adopter` adopts candidates in batches (``Gateway.adopt_many``),
counting what it adopted and why the rest got no link; :func:`announce`
prints a session that appeared while watching. Both run on the watch's main
thread and block on the gateway's writes.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from collections.abc import Callable
from typing import Protocol, TextIO

import msgspec

from actors.errors import SessionStateError
from actors.facade.gateway import Gateway
from actors.monitors.adoption import AdoptRequest
from actors.monitors.where import in_store
from actors.upstream.baseline import first_line_pending
from actors.upstream.catalog import Candidate
from actors.upstream.sources import find_source
from persistence.keys import agent_id_of, key_problem

__all__ = ["ADOPT_BATCH", "NEW_FILE_SLACK_MS", "Adopter", "Announce", "Stopping", "announce",
           "is_new_since"]

Announce = Callable[[Candidate, str, str | None, bool], None]
"""``(candidate, key, why not monitored or None, read from its start)``."""


class Stopping(Protocol):
    """What :class:`Adopter` asks of its ``stop``: a ``threading.Event`` or the
    watch loop's :class:`~actors.cli.wakeup.StopFlag`."""

    def is_set(self) -> bool:
        """Whether to stop adopting (any thread; never blocks)."""
        ...


ADOPT_BATCH = 512
"""Candidates handed to ``Gateway.adopt_many`` at once (progress is shown per batch)."""
NEW_FILE_SLACK_MS = 1000
"""A transcript last written at most this long before watching began still counts
as new when it is first seen later (file system timestamps are coarse)."""


def is_new_since(candidate: Candidate, started_ms: int) -> bool:
    """Whether a session first seen after watching began holds only new activity.

    A JSONL transcript counts as new when it was last written after watching
    began (less :data:`NEW_FILE_SLACK_MS`): it was created since, so all of it
    is new. A file moved in with an old modification time is not. A store
    source's sessions are rows of one database: a session id first seen
    later is new. Blocks on one ``stat``; never raises.
    """
    if in_store(candidate.source):
        return True
    try:
        written_ms = os.stat(candidate.path).st_mtime_ns // 1_000_000
    except OSError:
        return False
    return written_ms >= started_ms - NEW_FILE_SLACK_MS


def _real(path: str) -> str:
    """``path`` with its symbolic links resolved (itself when that fails). Never raises."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _no_link(source: str) -> str:
    """Why a session of ``source`` adopted without a link gets none, in a person's words."""
    found = find_source(source)
    return found.no_link if found is not None else "not monitorable"


class Adopter:
    """Adopts newly discovered sessions; remembers what it adopted and skipped.

    Sessions found at start are adopted at their current end. Sessions that
    appear later (:meth:`adopt` with ``later``) are read from their beginning
    when :func:`is_new_since` says they are new, and each is announced.
    """

    def __init__(self, gw: Gateway, watcher: str, stop: Stopping, err: TextIO,
                 announce: Announce | None = None) -> None:
        self.gw = gw
        self.watcher = watcher
        self.agent = agent_id_of(watcher)
        self.stop = stop
        self.err = err
        self.announce = announce
        self.started_ms = time.time_ns() // 1_000_000
        self.seen: set[tuple[str, str]] = set()
        self.real_seen: set[tuple[str, str]] = set()
        """``seen`` by real path: a file reached through a link is not adopted again."""
        self.keys: set[str] = set()
        self.adopted: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.linked: list[str] = []
        """Keys linked by the last :meth:`adopt` call."""

    def _key(self, candidate: Candidate) -> str:
        key = f"agent:{self.agent}:{candidate.source}:{candidate.thread_id}"
        if key in self.keys:  # the same session id in two files (a copied transcript)
            digest = hashlib.sha256(candidate.path.encode("utf-8", "surrogateescape"))
            key += ":" + digest.hexdigest()[:8]
        return key

    def adopt(self, candidates: list[Candidate], *, progress: bool, later: bool = False) -> int:
        """Adopt and watch each candidate not seen before; returns how many were new.

        Uses ``Gateway.adopt_many`` in chunks, so the adoptions and their
        watch registrations share group commits. With ``later`` (sessions
        that appeared while watching) new transcripts are read from their
        start and every outcome is announced. Blocks until done or ``stop``
        is set.
        """
        self.linked = []
        fresh = [c for c in candidates if (c.source, c.path + "\0" + c.thread_id) not in self.seen]
        keyed: list[tuple[Candidate, str]] = []
        for candidate in fresh:  # keys first, in discovery order (duplicates get a suffix)
            self.seen.add((candidate.source, candidate.path + "\0" + candidate.thread_id))
            # The same file reached through a symbolic link (a catalog holding a link
            # to a repository, or given twice) is one session, adopted once.
            real = (candidate.source, _real(candidate.path) + "\0" + candidate.thread_id)
            if real in self.real_seen:
                continue
            self.real_seen.add(real)
            key = self._key(candidate)
            self.keys.add(key)
            if key_problem(key) is not None:
                self.skipped["unusable session id"] += 1
                continue
            keyed.append((candidate, key))
        if keyed and not later:
            # Sessions another process linked may hold turns it has not read yet:
            # typed before this watch began, they are recorded before it watches.
            self.gw.scan_upstream(keys=[key for _, key in keyed])
        done = 0
        for start in range(0, len(keyed), ADOPT_BATCH):
            if self.stop.is_set():
                break
            chunk = keyed[start:start + ADOPT_BATCH]
            fresh_flags = [later and is_new_since(c, self.started_ms) for c, _ in chunk]
            links = self._adopt_chunk(chunk, fresh_flags)
            for (candidate, key), link, from_start in zip(chunk, links, fresh_flags,
                                                          strict=True):
                why: str | None = None
                if link is False:
                    why = "unusable file name"  # e.g. not valid UTF-8
                elif link is not None:
                    self.adopted[candidate.source] += 1
                    self.linked.append(key)
                elif self.gw.session_status(key).state_version:
                    why = _no_link(candidate.source)
                else:
                    if first_line_pending(candidate.source, candidate.path):
                        # Its header is still being written: nothing was recorded.
                        # Try again at the next interval; say so once it is decided.
                        self.seen.discard((candidate.source,
                                           candidate.path + "\0" + candidate.thread_id))
                        self.real_seen.discard((candidate.source, _real(candidate.path)
                                                + "\0" + candidate.thread_id))
                        self.keys.discard(key)
                        if later:
                            continue
                    why = "unreadable"
                if why is not None:
                    self.skipped[why] += 1
                if later and self.announce is not None:
                    self.announce(candidate, key, why, from_start)
            done += len(chunk)
            if progress:
                self.err.write(f"\radopting {done}/{len(keyed)}")
                self.err.flush()
        if progress and fresh:
            self.err.write("\n")
        return len(fresh)

    def _adopt_chunk(self, chunk: list[tuple[Candidate, str]],
                     from_start: list[bool]) -> list[object]:
        """Links (or ``None``) per candidate; ``False`` for one the gateway refused."""
        requests = [AdoptRequest(key=key, source=c.source, path=c.path, thread_id=c.thread_id,
                                 from_start=whole)
                    for (c, key), whole in zip(chunk, from_start, strict=True)]
        try:
            return list(self.gw.adopt_many(requests, watcher=self.watcher))
        except (SessionStateError, ValueError, TypeError):
            # One bad request refuses the whole call: adopt these one by one.
            results: list[object] = []
            for request in requests:
                try:
                    results.append(self.gw.adopt_many([request], watcher=self.watcher)[0])
                except (SessionStateError, ValueError, TypeError):
                    results.append(False)
            return results


def announce(candidate: Candidate, key: str, why: str | None, from_start: bool, *,
              as_json: bool, out: TextIO) -> None:
    """Say that a session which appeared while watching is now watched, or why not."""
    if as_json:
        record: dict[str, object] = {"source": candidate.source, "sessionKey": key,
                                     "path": candidate.path}
        if why is None:
            out.write(msgspec.json.encode({"adoptedSession": {
                **record, "fromStart": from_start}}).decode() + "\n")
        else:
            out.write(msgspec.json.encode({"notMonitoredSession": {
                **record, "reason": why}}).decode() + "\n")
    elif why is None:
        where = "from its start" if from_start else "from its current end"
        out.write(f"new {candidate.source} session {key} ({candidate.path}): watched, "
                  f"read {where}\n")
    else:
        out.write(f"new {candidate.source} session {candidate.path}: not monitored ({why})\n")
    out.flush()
