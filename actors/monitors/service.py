"""The upstream service: the gateway's upstream side, composed of its parts.

What lives here: :class:`UpstreamService`, which a gateway owns. It builds
the monitor actors (one per upstream link) and composes the parts that live
in their own modules: adoption (:mod:`actors.monitors.adoption`), the
paired-node path (:mod:`actors.monitors.paired`), scan leases and owed scans
(:mod:`actors.monitors.leases`) and the scan driver
(:mod:`actors.monitors.scanning`). It keeps the own-text hashes, the file
notifications, the cadence thread and the stop. ``AdoptRequest``,
``ADOPT_CHUNK``, ``SOURCES``, ``SETTLE_MS`` and ``BACKLOG_ROUNDS`` stay
importable from here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

import pykka

from actors.config import GatewayConfig
from actors.engine.registry import ActorPool
from actors.monitors.adoption import ADOPT_CHUNK, SOURCES, Adopter, AdoptRequest
from actors.monitors.filefeed import ChangeFeed, FileIndex, WatchfilesFeed
from actors.monitors.leases import SETTLE_MS, LeaseKeeper
from actors.monitors.link_monitor import LinkMemory, MonitorSettings, SoonSet, UpstreamMonitor
from actors.monitors.paired import PairedNodes
from actors.monitors.scanning import BACKLOG_ROUNDS, ScanDriver
from actors.upstream.claude.node import NodeTranscriptReader
from actors.upstream.common import text_hash
from persistence import (
    NoteOwnText,
    NoticeDescriptor,
    ReadPool,
    SessionStateEvent,
    UpstreamLink,
    keyed_hash,
    list_watched_links,
    read_link,
    read_secret,
    submit,
)
from persistence.runtime import Dispatcher

__all__ = ["ADOPT_CHUNK", "BACKLOG_ROUNDS", "SETTLE_MS", "SOURCES", "AdoptRequest",
           "UpstreamService"]

logger = logging.getLogger(__name__)

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
            lease_owner=lease_owner, lease_ms=config.lease_ms,
            own_text_ttl_ms=config.own_text_ttl_ms, own_text_skew_ms=config.own_text_skew_ms,
            long_line_max_bytes=config.long_line_max_bytes)
        self._monitors: ActorPool[tuple[str, str]] = ActorPool(
            self._start_monitor, cap=config.max_monitor_actors, name="monitor")
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._cycles_failing = False  # a storage fault episode of the cadence (logged once)
        self._memory = LinkMemory()
        self._soon = SoonSet()
        self._files = FileIndex()
        self._feed: ChangeFeed | None = None
        self._secret: bytes | None = None
        self._leases = LeaseKeeper(lease_owner=lease_owner, lease_ms=config.lease_ms,
                                   clock=clock)
        self._adopter = Adopter(persistence=persistence, timeout=self._timeout,
                                new_lease=self._leases.new_lease, rebased=self._restart,
                                watched=self._follow)
        self._nodes = PairedNodes(persistence=persistence, timeout=self._timeout,
                                  new_lease=self._leases.new_lease, rebased=self._restart)
        self._driver = ScanDriver(monitors=self._monitors, memory=self._memory,
                                  soon=self._soon, reads=reads, settings=self._settings,
                                  timeout=self._timeout, track=self._track)

    def _start_monitor(self, key: tuple[str, str]) -> pykka.ActorRef[Any]:
        return UpstreamMonitor.start(key[0], key[1], persistence=self._persistence,
                                     reads=self._reads, settings=self._settings,
                                     memory=self._memory, publish=self._publish,
                                     late=self._late,
                                     node_readers=self.node_reader, clock=self._clock,
                                     dispatcher=self._dispatcher, soon=self._soon,
                                     node_pool=self._nodes.pool,
                                     settle_later=self.settle_later,
                                     after_lease=self.after_lease, scanned=self.scanned,
                                     more_soon=self.more_soon)

    def _restart(self, ident: tuple[str, str]) -> None:
        """A link was re-baselined: its monitor starts afresh."""
        self._monitors.discard_where(lambda k: k == ident)

    def _follow(self, link: UpstreamLink) -> None:
        """A link adopted with a watcher: notifications (if on) follow its files."""
        if self._feed is not None:
            self._files.add(link)

    def _track(self, links: list[UpstreamLink]) -> None:
        """A cycle's watched links: the files notifications (if on) follow."""
        if self._feed is not None:
            self._files.track(links)

    # --- adoption ------------------------------------------------------------

    def adopt(self, key: str, agent_id: str, *, source: str, path: str,
              thread_id: str | None, from_start: bool) -> UpstreamLink | None:
        """Baseline the source, upsert the link and record ``adopted`` (anchor §3.15).

        Returns ``None`` (and records ``adopted`` without a link) for a
        source that cannot be trusted; ``None`` without recording anything
        for an unreadable one. Caller's thread; blocks on disk.
        """
        return self._adopter.adopt(key, agent_id, source=source, path=path,
                                   thread_id=thread_id, from_start=from_start)

    def adopt_many(self, requests: list[AdoptRequest], *, watcher: str | None
                   ) -> list[UpstreamLink | None]:
        """Adopt many sessions, sharing group commits; optionally watch each linked one.

        As :meth:`actors.monitors.adoption.Adopter.adopt_many`: one entry per
        request, :data:`ADOPT_CHUNK` committed at a time. Caller's thread;
        blocks on disk.
        """
        return self._adopter.adopt_many(requests, watcher=watcher)

    def mark_monitoring(self) -> None:
        """This process scans its links: links it adopts from now on start leased to it.

        Set by the cadence, the notifications and the first scan; a process
        that only adopts (a web worker beside a monitoring scheduler) leaves
        new links free, so the monitoring process scans them at once.
        Any thread; non-blocking.
        """
        self._leases.mark_monitoring()

    def register_node_reader(self, node_id: str, reader: NodeTranscriptReader) -> None:
        """Use ``reader`` for every paired-node link of ``node_id`` (replaces any other)."""
        self._nodes.register(node_id, reader)

    def node_reader(self, node_id: str) -> NodeTranscriptReader | None:
        """The registered reader of ``node_id``, or ``None`` (called by monitors)."""
        return self._nodes.reader(node_id)

    def adopt_remote(self, key: str, agent_id: str, *, node_id: str, thread_id: str,
                     reader: NodeTranscriptReader) -> UpstreamLink | None:
        """Adopt a Claude Code thread on a paired node (anchor §3.17, paired node).

        Registers ``reader`` for the node, baselines at the newest item's uuid,
        upserts the link and records ``adopted``. Returns ``None`` (``adopted``
        still recorded) when the newest item has no uuid or the reader fails.
        """
        return self._nodes.adopt(key, agent_id, node_id=node_id, thread_id=thread_id,
                                 reader=reader)

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
        self._driver.forget((key, agent_id))

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
        return self._driver.scan_cycle(follow_backlog=follow_backlog, only=only)

    def scan_soon(self, idents: Iterable[tuple[str, str]]) -> int:
        """Scan these links once more, soon, on the dispatcher (any thread; non-blocking).

        A link whose scan is already queued is not queued again, so a burst
        of file events costs one scan (plus at most one for what arrived
        during it). Each scan publishes its own notices. Returns how many
        scans were queued.
        """
        return self._driver.scan_soon(idents)

    def more_soon(self, ident: tuple[str, str]) -> None:
        """Scan ``ident`` once more, soon: it has more bytes to read than one scan takes.

        Each scan reads at most the scan cap, so a backlog or a line of many
        megabytes is read by a chain of such scans, each one queued behind the work
        already waiting on the dispatcher (any thread; non-blocking).
        """
        self.scan_soon((ident,))

    def settle_later(self, ident: tuple[str, str]) -> None:
        """Scan ``ident`` again :data:`SETTLE_MS` from now (its file shrank: see below;
        or a scan's decision waits on a write that may still be in flight,
        ``ScanResult.recheck``, and nothing more may ever be written).

        A transcript cut short may be mid-rewrite, so the scan after the one
        that saw it shrink re-baselines once more without counting (never
        counting old turns written back twice). Run that scan soon, before a
        person could plausibly type into the file, instead of on the next
        event (which would be the person's turn). Any thread; non-blocking.
        """
        self._leases.settle_later(ident)

    def after_lease(self, ident: tuple[str, str], expires_at: int, updated_at: int) -> None:
        """A scan of ``ident`` was refused: another live process holds its scan lease.

        Scan it again just after that lease lapses, in case its holder died
        with the change unscanned. If by then the link moved on (``updated_at``
        changed: the holder scanned it), the retry stops there. Any thread;
        non-blocking.
        """
        self._leases.after_lease(ident, expires_at, updated_at)

    def scanned(self, ident: tuple[str, str]) -> None:
        """``ident`` was scanned here: no retry after a lease is owed (non-blocking)."""
        self._leases.scanned(ident)

    def tick(self) -> int:
        """Queue the settling scans that are due (feed or cadence thread; non-blocking).

        Returns:
            How many were queued.
        """
        due = self._leases.due()
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
        return self._driver.unchanged_since_settled(ident, self._files.link(ident))

    def _request_cycle(self) -> None:
        # In the feed's thread: events buffer meanwhile; a cycle is cheap when idle.
        try:
            self.scan_cycle(follow_backlog=False)
        except Exception:
            logger.exception("an upstream rescan after lost file events failed")

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
        self._nodes.close()
        if self._ticker is not None:
            self._ticker.join(timeout)
            if self._ticker.is_alive():
                stuck += 1
                logger.error("the upstream cadence thread did not stop within %.1fs", timeout)
        return stuck

