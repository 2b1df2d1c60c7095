"""The gateway's upstream side: adoption, own texts, scan cycles and the cadence."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import msgspec
import pykka

from actors.config import GatewayConfig
from actors.engine.registry import ActorPool
from actors.errors import GatewayClosed
from actors.monitors.changes import fingerprint
from actors.monitors.filefeed import ChangeFeed, FileIndex, WatchfilesFeed
from actors.monitors.link_monitor import (
    LinkMemory,
    MonitorReport,
    MonitorSettings,
    ScanLink,
    ScanSoon,
    SoonSet,
    UpstreamMonitor,
    hint_of,
    store_sequences,
)
from actors.upstream.baseline import Baseline, source_key_of
from actors.upstream.claude_node import (
    NODE_SOURCE,
    NodeTranscriptReader,
    ReaderPool,
    node_baseline,
)
from actors.upstream.common import text_hash
from actors.upstream.scan import StoreHint
from actors.upstream.source import Source
from actors.upstream.sources import find_source, source_names
from persistence import (
    Command,
    LinkOutcome,
    NoteOwnText,
    NoticeDescriptor,
    ReadPool,
    RecordEvent,
    Reply,
    SessionStateEvent,
    UpsertLink,
    UpstreamLink,
    collect,
    keyed_hash,
    list_watched_links,
    read_link,
    read_secret,
    send_many,
    submit,
)
from persistence.keys import agent_id_of
from persistence.runtime import Dispatcher, scheduling

__all__ = ["ADOPT_CHUNK", "SOURCES", "AdoptRequest", "UpstreamService"]

logger = logging.getLogger(__name__)

SOURCES = frozenset(source_names())
"""The built-in sources' names (the registry, :mod:`actors.upstream.sources`, is the list;
``adopt`` checks against it at each call)."""
SETTLE_MS = 500
"""How soon after a transcript was seen cut short its settling scan runs, in ms."""
ADOPT_CHUNK = 256
"""Sessions whose baselines are read before their commands are committed together."""
BACKLOG_ROUNDS = 4_096
"""Most scans one cycle runs of one link while it has more bytes to read than one scan
takes (a backlog of lines, or a line longer than the scan cap; each scan reads at most
the cap); the next cycle goes on."""


class AdoptRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One session to adopt with :meth:`actors.Gateway.adopt_many` (fields as for ``adopt``)."""

    key: str
    source: str
    path: str | os.PathLike[str]
    thread_id: str | None = None
    agent_id: str | None = None
    from_start: bool = False
Publish = Callable[[Iterable[NoticeDescriptor]], None]
Clock = Callable[[], int]


class UpstreamService:
    """Adoption, own-text hashes, one scan cycle over every watched link, and the cadence.

    Owned by a :class:`~actors.Gateway`; its methods run in the caller's
    thread (or the cadence thread) and block on bounded I/O and on the
    monitors' scans. Thread-safe; scan cycles never overlap.

    Args:
        persistence: the persistence actor.
        reads: read connections.
        config: the gateway's settings.
        clock: epoch-ms clock; the cadence's due times use it.
        publish: the gateway's notice publisher.
        late: ``on_late`` for write commands whose caller timed out.
        dispatcher: runs the monitors' scans concurrently (bounded threads).
        lease_owner: this gateway's id for upstream scan leases (``None``: scan
            without leases, e.g. a test that drives one process only).
    """

    def __init__(self, *, persistence: pykka.ActorRef[Any], reads: ReadPool,
                 config: GatewayConfig, clock: Clock, publish: Publish,
                 late: Callable[[Any], None] | None = None,
                 dispatcher: Dispatcher | None = None,
                 lease_owner: str | None = None) -> None:
        self._dispatcher = dispatcher
        self._persistence = persistence
        self._reads = reads
        self._config = config
        self._clock = clock
        self._publish = publish
        self._late = late
        self._timeout = config.ask_timeout_s
        self._settings = MonitorSettings(
            scan_cap_bytes=config.scan_cap_bytes, missing_threshold=config.missing_threshold,
            replay_window=config.opencode_replay_window,
            human_shape="human-per-group" if config.group_scope == "per-group" else "human",
            timeout=config.ask_timeout_s, busy_timeout_ms=min(config.busy_timeout_ms, 1000),
            lease_owner=lease_owner, lease_ms=config.lease_ms)
        self._monitors: ActorPool[tuple[str, str]] = ActorPool(
            self._start_monitor, cap=config.max_monitor_actors, name="monitor")
        self._cycle_lock = threading.Lock()
        self._ambiguous_logged: set[str] = set()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._cycles_failing = False  # a storage fault episode of the cadence (logged once)
        self._memory = LinkMemory()
        self._monitoring = False
        self._inflight: dict[tuple[str, str], pykka.Future[Any]] = {}
        self._failing_stores: set[str] = set()
        self._node_readers: dict[str, NodeTranscriptReader] = {}
        self._node_lock = threading.Lock()
        self._soon = SoonSet()
        self._settle_lock = threading.Lock()
        self._settles: dict[tuple[str, str], int] = {}
        self._lease_waits: dict[tuple[str, str], int] = {}
        self._node_pool = ReaderPool()
        self._files = FileIndex()
        self._feed: ChangeFeed | None = None
        self._secret: bytes | None = None

    # --- adoption ------------------------------------------------------------

    def adopt(self, key: str, agent_id: str, *, source: str, path: str,
              thread_id: str | None, from_start: bool) -> UpstreamLink | None:
        """Baseline the source, upsert the link and record ``adopted`` (anchor §3.15).

        Returns ``None`` (and records ``adopted`` without a link) for a
        source that cannot be trusted; ``None`` without recording anything
        for an unreadable one.
        """
        command = self._adoption(key, agent_id, source=source, path=path, thread_id=thread_id,
                                 from_start=from_start)
        if command is None:
            return None
        return self._adopted(command, submit(self._persistence, command, timeout=self._timeout))

    def adopt_many(self, requests: list[AdoptRequest], *, watcher: str | None
                   ) -> list[UpstreamLink | None]:
        """Adopt many sessions, sharing group commits; optionally watch each linked one.

        Baselines are read in this thread, :data:`ADOPT_CHUNK` at a time, and
        each chunk's commands (link upsert, ``adopted`` and the watch in one
        command per session) are committed together. Returns one entry per
        request, as :meth:`adopt` would (``None`` also for a storage fault,
        logged). Caller's thread; blocks on disk.
        """
        results: list[UpstreamLink | None] = []
        # Measured: overlapping a chunk's reads with the previous chunk's commit
        # is slower here (both hold the GIL most of the time), so chunks go in turn.
        for start in range(0, len(requests), ADOPT_CHUNK):
            commands = [self._adoption(r.key, r.agent_id or agent_id_of(r.key),
                                       source=r.source, path=os.fspath(r.path),
                                       thread_id=r.thread_id, from_start=r.from_start,
                                       watcher=watcher)
                        for r in requests[start:start + ADOPT_CHUNK]]
            todo: list[Command] = [c for c in commands if c is not None]
            results += self._finish_chunk(commands, send_many(self._persistence, todo))
        return results

    def _finish_chunk(self, commands: list[UpsertLink | RecordEvent | None],
                      replies: list[Reply]) -> list[UpstreamLink | None]:
        outcomes = iter(collect(replies, timeout=self._timeout))
        results: list[UpstreamLink | None] = []
        for command in commands:
            if command is None:
                results.append(None)
                continue
            outcome = next(outcomes)
            if isinstance(outcome, Exception):
                logger.debug("adopting %s failed: %s", command.session_key, outcome)
                results.append(None)
                continue
            results.append(self._adopted(command, outcome))
        return results

    def _adopted(self, command: UpsertLink | RecordEvent, outcome: Any) -> UpstreamLink | None:
        if not isinstance(command, UpsertLink):
            return None  # adopted without a link (a refused source)
        assert isinstance(outcome, LinkOutcome)
        if outcome.rebased:
            ident = (command.session_key, command.agent_id)
            self._monitors.discard_where(lambda k: k == ident)
        if command.watcher_key is not None and self._feed is not None:
            self._files.add(outcome.link)
        return outcome.link

    def _adoption(self, key: str, agent_id: str, *, source: str, path: str,
                  thread_id: str | None, from_start: bool, watcher: str | None = None,
                  ) -> UpsertLink | RecordEvent | None:
        """The command that adopts one session (``None``: its source is unreadable)."""
        kind = find_source(source)
        if kind is None:
            logger.warning("cannot adopt %s: no source %r is registered", key, source)
            return None
        found = kind.reading().baseline(path, thread_id, from_start, 1000)
        baseline = found if isinstance(found, Baseline) else None
        if baseline is None:
            if isinstance(found, str):
                logger.warning("cannot adopt %s: %s", key, found)
            elif kind.reading().waiting(path):
                logger.info("not adopting %s yet: its %s transcript has no complete first "
                            "line", key, source)
            else:
                logger.warning("cannot adopt %s: its %s source is unreadable", key, source)
            return None
        source_key = source_key_of(baseline.host_id, baseline.thread_id, baseline.upstream_ref)
        adopted = RecordEvent(
            session_key=key, agent_id=agent_id, kind="adopted", actor_type="system",
            summary=f"session adopted from {source}",
            dedupe_key=f"adopted:{key}:{agent_id}:{source_key}",
            payload_json=msgspec.json.encode({"channel": source}).decode())
        if baseline.refusal is not None:
            logger.info("adopted %s without an upstream link: %s", key, baseline.refusal)
            return adopted
        return UpsertLink(
            session_key=key, agent_id=agent_id, source=source, host_id=baseline.host_id,
            thread_id=baseline.thread_id,
            upstream_ref_json=msgspec.json.encode(baseline.upstream_ref, order="sorted").decode(),
            source_key=source_key, marker_json=msgspec.json.encode(baseline.marker).decode(),
            adopted=adopted, watcher_key=watcher, **self._new_lease())

    def mark_monitoring(self) -> None:
        """This process scans its links: links it adopts from now on start leased to it.

        Set by the cadence, the notifications and the first scan; a process
        that only adopts (a web worker beside a monitoring scheduler) leaves
        new links free, so the monitoring process scans them at once.
        Any thread; non-blocking.
        """
        self._monitoring = True

    def _new_lease(self) -> dict[str, Any]:
        """The scan lease a link this process creates starts with (no claim write later)."""
        if self._settings.lease_owner is None or not self._monitoring:
            return {}
        return {"lease_owner": self._settings.lease_owner,
                "lease_expires_at": self._clock() + self._settings.lease_ms}

    def register_node_reader(self, node_id: str, reader: NodeTranscriptReader) -> None:
        """Use ``reader`` for every paired-node link of ``node_id`` (replaces any other)."""
        with self._node_lock:
            self._node_readers[node_id] = reader

    def node_reader(self, node_id: str) -> NodeTranscriptReader | None:
        """The registered reader of ``node_id``, or ``None`` (called by monitors)."""
        with self._node_lock:
            return self._node_readers.get(node_id)

    def adopt_remote(self, key: str, agent_id: str, *, node_id: str, thread_id: str,
                     reader: NodeTranscriptReader) -> UpstreamLink | None:
        """Adopt a Claude Code thread on a paired node (anchor §3.17, paired node).

        Registers ``reader`` for the node, baselines at the newest item's uuid,
        upserts the link and records ``adopted``. Returns ``None`` (``adopted``
        still recorded) when the newest item has no uuid or the reader fails.
        """
        self.register_node_reader(node_id, reader)
        host_id = f"node:{node_id}"
        ref = {"nodeId": node_id, "threadId": thread_id}
        source_key = source_key_of(host_id, thread_id, ref)
        adopted = RecordEvent(
            session_key=key, agent_id=agent_id, kind="adopted", actor_type="system",
            summary=f"session adopted from {NODE_SOURCE}",
            dedupe_key=f"adopted:{key}:{agent_id}:{source_key}",
            payload_json=msgspec.json.encode({"channel": NODE_SOURCE, "node": node_id}).decode())
        marker = node_baseline(reader, thread_id, timeout=self._timeout, pool=self._node_pool)
        if marker is None:
            logger.info("adopted %s without an upstream link: no anchoring uuid", key)
            submit(self._persistence, adopted, timeout=self._timeout)
            return None
        outcome: LinkOutcome = submit(self._persistence, UpsertLink(
            session_key=key, agent_id=agent_id, source=NODE_SOURCE, host_id=host_id,
            thread_id=thread_id,
            upstream_ref_json=msgspec.json.encode(ref, order="sorted").decode(),
            source_key=source_key, marker_json=msgspec.json.encode(marker).decode(),
            adopted=adopted, **self._new_lease()), timeout=self._timeout)
        if outcome.rebased:
            self._monitors.discard_where(lambda k: k == (key, agent_id))
        return outcome.link

    def note_own_text(self, key: str, agent_id: str, text: str) -> None:
        """Remember the keyed hash of a text the gateway forwarded into ``key`` (self-echo).

        Only ``HMAC-SHA256(database secret, sha256(text))`` is stored
        (:mod:`persistence._secret`). Blocks on one read (the first time) and
        the commit; raises ``StorageError`` as the producers do.
        """
        digest = keyed_hash(self._own_secret(), text_hash(text))
        submit(self._persistence, NoteOwnText(
            session_key=key, agent_id=agent_id, text_hash=digest,
            window=self._config.own_text_window), timeout=self._timeout)

    def _own_secret(self) -> bytes:
        """The database's own-text secret (read once; it never changes)."""
        if self._secret is None:
            with self._reads.connection(self._timeout) as conn:
                self._secret = read_secret(conn)
        return self._secret

    def track_link(self, key: str, agent_id: str) -> None:
        """Follow the files of ``(key, agent_id)``'s link with notifications (if on).

        Called after a watch is registered, so a newly watched adopted
        session is notified without waiting for the next cycle. Caller's
        thread; one indexed read when notifications are on, else nothing.
        """
        if self._feed is None:
            return
        with self._reads.connection(self._timeout) as conn:
            link = read_link(conn, key, agent_id)
        if link is not None:
            self._files.add(link)

    def has_link(self, key: str, agent_id: str) -> bool:
        """Whether ``(key, agent_id)`` has an upstream link (one indexed read)."""
        with self._reads.connection(self._timeout) as conn:
            return read_link(conn, key, agent_id) is not None

    def link_of(self, key: str, agent_id: str) -> UpstreamLink | None:
        """The upstream link of ``(key, agent_id)``, or ``None`` (one indexed read; blocks)."""
        with self._reads.connection(self._timeout) as conn:
            return read_link(conn, key, agent_id)

    def forget(self, key: str, agent_id: str) -> None:
        """Stop the monitor of a deleted or unlinked session and forget its streak."""
        self._monitors.discard_where(lambda k: k == (key, agent_id))
        self._memory.forget((key, agent_id))

    # --- scanning ------------------------------------------------------------

    def scan_cycle(self, *, follow_backlog: bool = True,
                   only: frozenset[str] | None = None) -> list[SessionStateEvent]:
        """One cadence: scan every watched link whose source changed, publish, return new events.

        A link is scanned only when its fingerprint (one ``stat``) or its
        ``updated_at`` differs from the last scan that settled it, so an idle
        cycle costs about one ``stat`` per link and touches no actor
        (:mod:`actors.monitors.changes`). Scans run concurrently on the
        dispatcher's workers; each publishes its notices as soon as its own
        commit lands. A link whose scan stopped at the scan cap with bytes left
        (a backlog, or a line longer than the cap) is scanned again, a cap at a
        time, until they are read: within this call (at most
        :data:`BACKLOG_ROUNDS` scans) with ``follow_backlog``, else by a
        chain of soon scans on the dispatcher (:meth:`more_soon`), so a
        background cadence never waits for a long backlog. Blocks until every
        scan answered or timed out (logged). Never overlaps another cycle.
        ``only``: scan just the links of these session keys (``None``: all).
        """
        self.mark_monitoring()
        with self._cycle_lock:
            with self._reads.connection(self._timeout) as conn:
                links, ambiguous = list_watched_links(conn)
            if only is not None:
                links = [link for link in links if link.session_key in only]
            for key in ambiguous:
                if key not in self._ambiguous_logged:
                    self._ambiguous_logged.add(key)
                    logger.warning("not scanning %s: it is adopted under more than one agent",
                                   key)
            if self._feed is not None:
                self._files.track(links)  # which files the notifications follow
            due = [link for link in links if self._due(link)]
            hints = self._store_hints(due)
            pending: list[tuple[UpstreamLink, pykka.Future[Any]]] = []
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

    def _collect(self, pending: list[tuple[UpstreamLink, pykka.Future[Any]]],
                 events: list[SessionStateEvent], *, ask_again: bool
                 ) -> list[tuple[UpstreamLink, pykka.Future[Any]]]:
        """Wait for a round of scans; go on with those that have more to read.

        With ``ask_again`` they are asked again and returned (each reads at
        most the scan cap); otherwise they are left to :meth:`more_soon`.
        """
        again: list[tuple[UpstreamLink, pykka.Future[Any]]] = []
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
                self.forget(link.session_key, link.agent_id)
            elif report.more and not ask_again:
                self.more_soon(ident)
            elif report.more:
                with scheduling():
                    next_scan = self._monitors.get(ident).ask(ScanLink(), block=False)
                self._inflight[ident] = next_scan
                again.append((link, next_scan))
        return again

    def _due(self, link: UpstreamLink) -> bool:
        state = self._memory.peek((link.session_key, link.agent_id))
        settled = state.settled if state is not None else None
        if settled is None:
            return True
        seen = fingerprint(link)
        return seen is None or (seen, link.updated_at) != settled

    def scan_soon(self, idents: Iterable[tuple[str, str]]) -> int:
        """Scan these links once more, soon, on the dispatcher (any thread; non-blocking).

        A link whose scan is already queued is not queued again, so a burst
        of file events costs one scan (plus at most one for what arrived
        during it). Each scan publishes its own notices. Returns how many
        scans were queued.
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

    def more_soon(self, ident: tuple[str, str]) -> None:
        """Scan ``ident`` once more, soon: it has more bytes to read than one scan takes.

        Each scan reads at most the scan cap, so a backlog or a line of many
        megabytes is read by a chain of such scans, each one queued behind the work
        already waiting on the dispatcher (any thread; non-blocking).
        """
        self.scan_soon((ident,))

    def settle_later(self, ident: tuple[str, str]) -> None:
        """Scan ``ident`` again :data:`SETTLE_MS` from now (its file shrank: see below).

        A transcript cut short may be mid-rewrite, so the scan after the one
        that saw it shrink re-baselines once more without counting (never
        counting old turns written back twice). Run that scan soon, before a
        person could plausibly type into the file, instead of on the next
        event (which would be the person's turn). Any thread; non-blocking.
        """
        with self._settle_lock:
            self._settles[ident] = self._clock() + SETTLE_MS

    def after_lease(self, ident: tuple[str, str], expires_at: int, updated_at: int) -> None:
        """A scan of ``ident`` was refused: another live process holds its scan lease.

        Scan it again just after that lease lapses, in case its holder died
        with the change unscanned. If by then the link moved on (``updated_at``
        changed: the holder scanned it), the retry stops there. Any thread;
        non-blocking.
        """
        with self._settle_lock:
            first = self._lease_waits.setdefault(ident, updated_at)
            if first != updated_at:
                del self._lease_waits[ident]  # the holder handled it
                return
            at = expires_at + 1
            self._settles[ident] = min(self._settles.get(ident, at), at)

    def scanned(self, ident: tuple[str, str]) -> None:
        """``ident`` was scanned here: no retry after a lease is owed (non-blocking)."""
        with self._settle_lock:
            self._lease_waits.pop(ident, None)

    def tick(self) -> int:
        """Queue the settling scans that are due (feed or cadence thread; non-blocking).

        Returns:
            How many were queued.
        """
        now = self._clock()
        with self._settle_lock:
            due = [ident for ident, at in self._settles.items() if at <= now]
            for ident in due:
                del self._settles[ident]
        return self.scan_soon(due) if due else 0

    def on_files_changed(self, paths: set[str] | None) -> None:
        """The file-notification feed saw ``paths`` change (``None``: events were lost).

        Runs in the feed's thread. It queues scans of the links those files
        belong to (non-blocking); for lost events it runs a whole cycle
        (blocking, cheap when little changed).
        """
        if paths is None:
            self._request_cycle()
            return
        self.scan_soon(ident for ident in self._files.links_of(paths)
                       if not self._unchanged_since_settled(ident))

    def _unchanged_since_settled(self, ident: tuple[str, str]) -> bool:
        """Whether ``ident``'s source still has the fingerprint its last settled scan saw.

        Such an event is noise, not news: our own read of an OpenCode store
        touches its ``-wal``/``-shm`` (which the notifications report), and a
        scan for it would read the store again and cause the next event, a
        loop that kept an idle ``ssa watch`` busy. Anything that could hold
        news (bytes written, the file replaced) changes the fingerprint, and
        a link whose last scan did not settle is always scanned. One or two
        ``stat`` calls; any thread; never raises.
        """
        state = self._memory.peek(ident)
        settled = state.settled if state is not None else None
        link = self._files.link(ident)
        if settled is None or link is None:
            return False
        seen = fingerprint(link)
        return seen is not None and seen == settled[0]

    def _request_cycle(self) -> None:
        # In the feed's thread: events buffer meanwhile; a cycle is cheap when idle.
        try:
            self.scan_cycle(follow_backlog=False)
        except Exception:
            logger.exception("an upstream rescan after lost file events failed")

    def _still_scanning(self, ident: tuple[str, str]) -> bool:
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

    def _store_hints(
        self, links: list[UpstreamLink]
    ) -> dict[tuple[str, str], StoreHint]:
        """One batched change query per store this cycle scans (its sources' ``poll``)."""
        by_store: dict[tuple[str, str], tuple[Source, list[UpstreamLink]]] = {}
        for link in links:
            path = link.upstream_ref.get("path")
            source = find_source(link.source)
            if source is None or source.reading().poll is None or not isinstance(path, str):
                continue
            by_store.setdefault((source.name, path), (source, []))[1].append(link)
        hints: dict[tuple[str, str], StoreHint] = {}
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

    def _start_monitor(self, key: tuple[str, str]) -> pykka.ActorRef[Any]:
        return UpstreamMonitor.start(key[0], key[1], persistence=self._persistence,
                                     reads=self._reads, settings=self._settings,
                                     memory=self._memory, publish=self._publish,
                                     late=self._late,
                                     node_readers=self.node_reader, clock=self._clock,
                                     dispatcher=self._dispatcher, soon=self._soon,
                                     node_pool=self._node_pool, settle_later=self.settle_later,
                                     after_lease=self.after_lease, scanned=self.scanned,
                                     more_soon=self.more_soon)

    # --- cadence -------------------------------------------------------------

    def start_cadence(self) -> None:
        """Start the cadence thread: first cycle after the initial delay, then every interval."""
        self.mark_monitoring()
        # A daemon: an unclosed gateway must not hang interpreter exit (actors.engine.exit
        # closes it there, which stops this thread first).
        self._ticker = threading.Thread(target=self._run_cadence, name="ssa-upstream-cadence",
                                        daemon=True)
        self._ticker.start()

    def _run_cadence(self) -> None:
        interval_ms = int(self._config.upstream_interval_s * 1000)
        due = self._clock() + int(self._config.upstream_initial_delay_s * 1000)
        poll = min(1.0, self._config.upstream_interval_s)
        last = self._clock()
        while not self._stop.wait(poll):
            self.tick()
            now = self._clock()
            if last <= now < due:
                continue  # not due yet (a clock that went backwards makes it due now)
            last = now
            due = now + interval_ms  # from the cycle's start: set before anyone sees it run
            self.cadence_cycle()
            if self._stop.is_set():
                return

    def cadence_cycle(self) -> None:
        """One cycle of the cadence: :meth:`scan_cycle`, its failure logged, never raised.

        A storage fault is logged once per episode (a warning, then an info
        line when cycles work again); anything else with its traceback.
        A backlog is left to soon scans (``follow_backlog=False``), so the
        cadence keeps its interval. Cadence thread (tests call it directly);
        blocks as :meth:`scan_cycle`.
        """
        try:
            self.scan_cycle(follow_backlog=False)
        except Exception as exc:
            if self._stop.is_set():
                return
            if not self._reads.is_fault(exc):
                logger.exception("an upstream scan cycle failed")
            elif not self._cycles_failing:
                self._cycles_failing = True
                logger.warning("upstream scan cycles are failing (retried every interval): "
                               "%s: %s", type(exc).__name__, exc)
        else:
            if self._cycles_failing:
                self._cycles_failing = False
                logger.info("upstream scan cycles work again")

    def start_notifications(self, feed: Callable[..., ChangeFeed] | None = None) -> bool:
        """Scan a link as soon as its files change (file notifications; idempotent).

        Args:
            feed: builds the :class:`~actors.monitors.filefeed.ChangeFeed` from an
                ``on_change`` callback (default: ``watchfiles``); tests pass
                their own.

        Returns:
            ``False`` when no feed could be started (``watchfiles`` missing
            or failing; logged): the periodic scan still finds everything.

        Caller's thread; non-blocking apart from one read of the links.
        """
        self.mark_monitoring()
        if self._feed is not None:
            return True
        try:
            self._feed = (feed or WatchfilesFeed)(self.on_files_changed, on_tick=self.tick)
        except Exception as exc:
            logger.warning("file notifications are unavailable (%s: %s); relying on the "
                           "periodic scan", type(exc).__name__, exc)
            return False
        with self._reads.connection(self._timeout) as conn:
            links, _ambiguous = list_watched_links(conn)
        self._files.track(links)
        self._files.attach(self._feed)
        return True

    def stop(self, timeout: float) -> int:
        """Stop the feed, the cadence and every monitor; returns how many did not stop in time."""
        self._stop.set()
        stuck = 0
        if self._feed is not None:
            stuck += self._feed.close(timeout)
        stuck += self._monitors.stop_all(timeout)
        self._node_pool.close()
        if self._ticker is not None:
            self._ticker.join(timeout)
            if self._ticker.is_alive():
                stuck += 1
                logger.error("the upstream cadence thread did not stop within %.1fs", timeout)
        return stuck

