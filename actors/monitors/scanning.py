"""The scan driver: which watched links a cycle scans, and the scans it asks for.

What lives here: :class:`ScanDriver`, owned by the upstream service. One
scan cycle lists the watched links, keeps those whose source changed
(:mod:`actors.monitors.changes`), asks their monitors to scan with one
batched store hint per store, follows a backlog a scan cap at a time, and
collects the events. Soon scans (a file event, a backlog, a settling scan)
are queued here too, at most one per link.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import pykka

from actors.engine.registry import ActorPool
from actors.errors import GatewayClosed
from actors.monitors.changes import StatCache, fingerprint
from actors.monitors.link_monitor import (
    LinkMemory,
    MonitorReport,
    MonitorSettings,
    ScanLink,
    ScanSoon,
    SoonSet,
    hint_of,
    store_sequences,
)
from actors.upstream.scan import StoreHint
from actors.upstream.source import Source
from actors.upstream.sources import find_source
from persistence import ReadPool, SessionStateEvent, UpstreamLink, list_links, list_watched_links
from persistence.runtime import scheduling

__all__ = ["BACKLOG_ROUNDS", "ScanDriver"]

logger = logging.getLogger(__name__)

BACKLOG_ROUNDS = 4_096
"""Most scans one cycle runs of one link while it has more bytes to read than one scan
takes (a backlog of lines, or a line longer than the scan cap; each scan reads at most
the cap); the next cycle goes on."""

Ident = tuple[str, str]
Pending = list[tuple[UpstreamLink, pykka.Future[Any]]]


class ScanDriver:
    """Scan cycles and soon scans over the monitors of the watched links.

    Thread-safe; scan cycles never overlap.

    Args:
        monitors: the monitor actors, one per ``(session_key, agent_id)``.
        memory: the monitors' shared memory of each link (its last settled scan).
        soon: the links whose soon scan is queued.
        reads: read connections.
        settings: the monitors' settings (``busy_timeout_ms`` for store hints).
        timeout: seconds a read or a scan may take.
        track: called with the watched links each cycle lists (the file index).
    """

    def __init__(self, *, monitors: ActorPool[Ident], memory: LinkMemory, soon: SoonSet,
                 reads: ReadPool, settings: MonitorSettings, timeout: float,
                 track: Callable[[list[UpstreamLink]], None]) -> None:
        self._monitors = monitors
        self._memory = memory
        self._soon = soon
        self._reads = reads
        self._settings = settings
        self._timeout = timeout
        self._track = track
        self._cycle_lock = threading.Lock()
        self._ambiguous_logged: set[str] = set()
        self._inflight: dict[Ident, pykka.Future[Any]] = {}
        self._failing_stores: set[str] = set()

    def scan_cycle(self, *, follow_backlog: bool = True,
                   only: frozenset[str] | None = None) -> list[SessionStateEvent]:
        """One cycle over the watched links, or the links of the keys ``only`` names,
        watched or not (see :meth:`UpstreamService.scan_cycle`).

        Returns the new events; blocks until every scan answered or timed
        out (logged). Never overlaps another cycle.
        """
        with self._cycle_lock:
            with self._reads.connection(self._timeout) as conn:
                links, ambiguous = (list_watched_links(conn) if only is None
                                    else _named_links(conn, only))
            for key in ambiguous:
                if key not in self._ambiguous_logged:
                    self._ambiguous_logged.add(key)
                    logger.warning("not scanning %s: it is adopted under more than one agent",
                                   key)
            self._track(links)  # which files the notifications follow
            stats: StatCache = {}  # a file several links share is stat'ed once a cycle
            due = [link for link in links if self._due(link, stats)]
            hints = self._store_hints(due)
            pending: Pending = []
            for link in due:
                ident = (link.session_key, link.agent_id)
                if self._still_scanning(ident):
                    logger.info("upstream scan of %s is still running; skipped this cadence",
                                link.session_key)
                    continue
                message = ScanLink(hint=hints.get(ident))
                with scheduling():  # scans run concurrently on the dispatcher's workers
                    future = self._monitors.get(ident).ask(message, block=False)
                self._inflight[ident] = future
                pending.append((link, future))
            events: list[SessionStateEvent] = []
            for _ in range(BACKLOG_ROUNDS if follow_backlog else 1):
                pending = self._collect(pending, events, ask_again=follow_backlog)
                if not pending:
                    break
            return events

    def _collect(self, pending: Pending, events: list[SessionStateEvent], *,
                 ask_again: bool) -> Pending:
        """Wait for a round of scans; go on with those that have more to read.

        With ``ask_again`` they are asked again and returned (each reads at
        most the scan cap); otherwise they are left to soon scans.
        """
        again: Pending = []
        deadline = time.monotonic() + 2 * self._timeout
        for link, future in pending:
            try:
                report: MonitorReport = future.get(
                    timeout=max(0.0, deadline - time.monotonic()))
            except Exception as exc:  # one link's failure never stops the cycle
                logger.warning("upstream scan of %s failed: %s: %s", link.session_key,
                               type(exc).__name__, exc)
                continue
            events.extend(report.events)
            ident = (link.session_key, link.agent_id)
            if report.dropped:
                self.forget(ident)
            elif report.more and not ask_again:
                self.scan_soon((ident,))
            elif report.more:
                with scheduling():
                    next_scan = self._monitors.get(ident).ask(ScanLink(), block=False)
                self._inflight[ident] = next_scan
                again.append((link, next_scan))
        return again

    def _due(self, link: UpstreamLink, stats: StatCache) -> bool:
        state = self._memory.peek((link.session_key, link.agent_id))
        settled = state.settled if state is not None else None
        if settled is None:
            return True
        seen = fingerprint(link, stats)
        return seen is None or (seen, link.updated_at) != settled

    def scan_soon(self, idents: Iterable[Ident]) -> int:
        """Queue one soon scan of each of these links not queued yet; returns how many.

        Any thread; non-blocking.
        """
        queued = 0
        for ident in idents:
            if not self._soon.add(ident):
                continue
            try:
                with scheduling():
                    self._monitors.get(ident).tell(ScanSoon())
            except (pykka.ActorDeadError, GatewayClosed):
                self._soon.discard(ident)
                continue
            queued += 1
        return queued

    def unchanged_since_settled(self, ident: Ident, link: UpstreamLink | None) -> bool:
        """Whether ``link``'s source still has the fingerprint its last settled scan saw.

        ``False`` for an unknown link or one whose last scan did not settle.
        One or two ``stat`` calls; any thread; never raises.
        """
        state = self._memory.peek(ident)
        settled = state.settled if state is not None else None
        if settled is None or link is None:
            return False
        seen = fingerprint(link)
        return seen is not None and seen == settled[0]

    def forget(self, ident: Ident) -> None:
        """Stop ``ident``'s monitor and forget its streak (any thread; non-blocking)."""
        self._monitors.discard_where(lambda k: k == ident)
        self._memory.forget(ident)

    def _still_scanning(self, ident: Ident) -> bool:
        future = self._inflight.get(ident)
        if future is None:
            return False
        try:
            future.get(timeout=0)
        except pykka.Timeout:
            return True
        except Exception:  # noqa: S110 - the failure was reported by its own cycle
            pass
        del self._inflight[ident]
        return False

    def _store_hints(self, links: list[UpstreamLink]) -> dict[Ident, StoreHint]:
        """One batched change query per store this cycle scans (its sources' ``poll``)."""
        by_store: dict[tuple[str, str], tuple[Source, list[UpstreamLink]]] = {}
        for link in links:
            path = link.upstream_ref.get("path")
            source = find_source(link.source)
            if source is None or source.reading().poll is None or not isinstance(path, str):
                continue
            by_store.setdefault((source.name, path), (source, []))[1].append(link)
        hints: dict[Ident, StoreHint] = {}
        for (_, path), (source, store_links) in by_store.items():
            try:
                sequences = store_sequences(source, path, [x.thread_id for x in store_links],
                                            self._settings.busy_timeout_ms)
            except Exception as exc:  # apsw errors, undecodable rows: proves nothing
                level = logging.DEBUG if path in self._failing_stores else logging.WARNING
                self._failing_stores.add(path)
                logger.log(level, "cannot read the %s store %s: %s; its sessions get no "
                           "news until it can be read again", source.title, path,
                           source.reading().problem(exc))
                logger.debug("the %s sequence query on %s failed: %s: %s", source.title, path,
                             type(exc).__name__, exc)
                sequences = None
            else:
                if path in self._failing_stores:
                    self._failing_stores.discard(path)
                    logger.info("%s sequence query on %s works again", source.title, path)
            for link in store_links:
                hints[(link.session_key, link.agent_id)] = hint_of(sequences, link.thread_id)
        return hints


def _named_links(conn: Any, keys: frozenset[str]) -> tuple[list[UpstreamLink], list[str]]:
    """The links of ``keys``, watched or not, and those keys linked under several agents.

    A caller about to watch a session scans it first, so what was typed
    before the watch began is recorded before its cursor exists (issue 34
    item 10). Caller's thread; one query.
    """
    named = [link for link in list_links(conn) if link.session_key in keys]
    agents = Counter(link.session_key for link in named)
    ambiguous = sorted(key for key, count in agents.items() if count > 1)
    return [link for link in named if agents[link.session_key] == 1], ambiguous
