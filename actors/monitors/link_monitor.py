"""The upstream monitor actor: one per adopted, linked session."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

import msgspec
import pykka

from actors.engine.base import GatewayActor
from actors.monitors.changes import Fingerprint, fingerprint
from actors.monitors.storehints import hint_of, store_hint, store_sequences
from actors.upstream.claude.node import NodeTranscriptReader, ReaderPool, scan_node
from actors.upstream.common import OwnTextClaims, OwnTextRecord, OwnTexts
from actors.upstream.reading import ScanContext
from actors.upstream.scan import LONG_LINE_MAX_BYTES, PendingLine, ScanResult, StoreHint
from actors.upstream.source import MISSING
from actors.upstream.sources import find_source
from actors.upstream.typedtext import payload_of
from persistence import (
    ClaimLink,
    CommitScan,
    NoticeDescriptor,
    ReadPool,
    RecordEvent,
    ScanOutcome,
    SessionStateEvent,
    UpstreamLink,
    keyed_hash,
    link_lease,
    read_link,
    read_own_texts,
    read_secret,
    submit,
)
from persistence.runtime import Dispatcher

__all__ = [
    "LinkMemory",
    "LinkState",
    "MonitorReport",
    "MonitorSettings",
    "ScanLink",
    "ScanSoon",
    "SoonSet",
    "UpstreamMonitor",
    "hint_of",
    "scan_source",
    "store_sequences",
]

logger = logging.getLogger(__name__)

NodeReaders = Callable[[str], NodeTranscriptReader | None]
Publish = Callable[[Iterable[NoticeDescriptor]], None]


class ScanLink(msgspec.Struct, frozen=True, kw_only=True, tag="monitor.scan"):
    """Scan the link once now (answers a :class:`MonitorReport`)."""

    hint: StoreHint | None = None
    """This cadence's change answer for a store source's session (``None``: ask alone)."""


class ScanSoon(msgspec.Struct, frozen=True, kw_only=True, tag="monitor.scan-soon"):
    """Scan the link once now, without an answer (a file event asked for it)."""


class MonitorReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one scan recorded (its notices are already published) and whether the link is gone.

    ``more`` says the scan stopped at the scan cap with bytes left (a backlog,
    or the rest of a line longer than the cap): the next scan goes on.
    """

    events: tuple[SessionStateEvent, ...] = ()
    dropped: bool = False
    more: bool = False


@dataclass
class LinkState:
    """What the gateway remembers about one link between scans (survives monitor restarts).

    Attributes:
        streak: consecutive scans that proved the source gone.
        token: the link's ``updated_at`` the streak belongs to.
        logged: ``(reason, position)`` of the last condition logged, so a
            long line or a stopped cursor is reported once, not every cadence.
        settled: ``(fingerprint, updated_at)`` of the source and link as of
            the last scan that settled them; a cycle skips the link while
            both are unchanged (see :mod:`actors.monitors.changes`).
        pending: a line longer than the scan cap that earlier scans read part
            of (JSONL sources; see :class:`~actors.upstream.scan.PendingLine`).
        invalid_logged: a line that is not a JSON object was logged as a
            warning (later ones are logged at debug level only).
    """

    streak: int = 0
    token: int | None = None
    logged: tuple[str, object] | None = None
    settled: tuple[Fingerprint, int] | None = None
    pending: PendingLine | None = None
    invalid_logged: bool = False


class LinkMemory:
    """Thread-safe :class:`LinkState` per ``(session_key, agent_id)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[tuple[str, str], LinkState] = {}

    def get(self, key: tuple[str, str]) -> LinkState:
        """The state of ``key`` (created empty); mutate it from one monitor only."""
        with self._lock:
            return self._states.setdefault(key, LinkState())

    def peek(self, key: tuple[str, str]) -> LinkState | None:
        """The state of ``key`` if any (never creates one)."""
        with self._lock:
            return self._states.get(key)

    def forget(self, key: tuple[str, str]) -> None:
        """Drop the state of a link that is gone."""
        with self._lock:
            self._states.pop(key, None)


class SoonSet:
    """Links with a :class:`ScanSoon` queued and not yet started (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idents: set[tuple[str, str]] = set()

    def add(self, ident: tuple[str, str]) -> bool:
        """Mark ``ident`` queued; ``False`` if it already was."""
        with self._lock:
            if ident in self._idents:
                return False
            self._idents.add(ident)
            return True

    def discard(self, ident: tuple[str, str]) -> None:
        """The queued scan of ``ident`` starts (or was dropped)."""
        with self._lock:
            self._idents.discard(ident)


class MonitorSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The gateway settings a monitor needs (see ``GatewayConfig``)."""

    scan_cap_bytes: int
    missing_threshold: int
    replay_window: int
    """Earlier user messages that mark a repeated text a replay (store sources)."""
    human_shape: str
    timeout: float
    busy_timeout_ms: int
    lease_owner: str | None = None
    """This process's id for scan leases (``None``: no leases)."""
    lease_ms: int = 10_000
    own_text_ttl_ms: int = 900_000
    """How long an own text waits for its echo (``GatewayConfig.own_text_ttl_ms``)."""
    own_text_skew_ms: int = 30_000
    """How much earlier an echo may be dated (``GatewayConfig.own_text_skew_ms``)."""
    long_line_max_bytes: int = LONG_LINE_MAX_BYTES
    """A longer line is never typed (``GatewayConfig.long_line_max_bytes``)."""


def scan_source(link: UpstreamLink, hint: StoreHint | None, *, settings: MonitorSettings,
                own_texts: OwnTexts, node_readers: NodeReaders | None = None,
                now: int = 0, node_pool: ReaderPool | None = None,
                pending: PendingLine | None = None) -> ScanResult:
    """Scan ``link``'s source once (blocking, bounded reads; never raises).

    Paired-node links (``host_id`` ``node:<id>``) are read through the host's
    registered reader; without one the scan is no news. ``pending`` is the
    long line the last scan of a JSONL link left part-way (see
    :func:`~actors.upstream.scan.scan_jsonl`).
    """
    if link.host_id.startswith("node:"):
        reader = node_readers(link.host_id[5:]) if node_readers else None
        if reader is None:
            return ScanResult(kind="no_news", reason="no_node_reader")
        return scan_node(reader, link.thread_id, link.marker, own_texts=own_texts, now=now,
                         timeout=settings.timeout, pool=node_pool)
    path = link.upstream_ref.get("path")
    if not isinstance(path, str):
        return ScanResult(kind="no_news", reason="no_local_path")
    source = find_source(link.source)
    if source is None:
        return ScanResult(kind="no_news", reason="unknown_source")
    context = ScanContext(cap=settings.scan_cap_bytes, own_texts=own_texts, pending=pending,
                          replay_window=settings.replay_window,
                          busy_timeout_ms=settings.busy_timeout_ms,
                          max_line=settings.long_line_max_bytes)
    return source.reading().scan(path, link.thread_id, link.marker, hint, context)


def _settles(result: ScanResult, hint: StoreHint | None) -> bool:
    """Whether a scan's outcome holds until the source changes (then cycles may skip it).

    Not after a failure, a source found gone, a re-baseline that must be
    followed by a settling one, a scan that stopped at the byte cap with
    more bytes left to read (``result.more``), or one whose decision waits
    on time (``result.recheck``).
    """
    if result.kind in ("transient", "missing") or result.recheck:
        return False
    if hint is not None and hint.state != "ok":
        return False
    if result.kind == "no_news" and result.reason in (
            "sequence_query_failed", "no_node_reader", "no_local_path", "unknown_source",
            "invalid_marker"):
        return False
    if (result.next_marker or {}).get("settling"):
        return False
    return not result.more


class UpstreamMonitor(GatewayActor):
    """Scans one adopted session's upstream source for direct human turns.

    Each :class:`ScanLink` re-reads the link (its marker and compare-and-set
    token) and the session's own-text hashes, scans the source in this
    actor's thread (blocking, bounded reads), commits the result through the
    persistence actor in one transaction (the event, if any, and the marker
    advance together, only if the link did not change meanwhile), then
    publishes the resulting notices itself, so one slow source never delays
    another's notices. Three consecutive scans that prove the source gone
    record one ``upstream_missing`` and drop the link (anchor §3.16).

    Args:
        key: the adopted session key.
        agent_id: its agent.
        persistence: the persistence actor (asked; a leaf).
        reads: read connections.
        settings: scan cap, missing threshold, replay window, timeouts.
        memory: the gateway's per-link memory (missing streaks, what was
            logged), which outlives this actor.
        publish: the gateway's notice publisher (asks cursor actors, which
            never ask a monitor).
        node_readers: looks up the host's reader of a paired node by node id.
        clock: epoch-ms clock (fallback time of paired-node turns).
        late: ``on_late`` for a scan commit that lands after this actor gave up.
        dispatcher: the gateway's dispatcher (see :mod:`persistence.runtime`).
        soon: where queued :class:`ScanSoon` requests are marked (cleared here).
        node_pool: the threads that run paired-node readers.
        after_lease: asks for a scan just after another process's scan lease
            lapses (``(ident, expires_at, link updated_at)``).
        scanned: tells the service this process scanned the link.
        settle_later: asks for a soon scan of a link whose marker now awaits
            settling (its file was seen cut short).
        more_soon: asks for one more scan, soon, of a link with more bytes to
            read than one scan takes (each scan reads at most the scan cap).
    """

    def __init__(self, key: str, agent_id: str, *, persistence: pykka.ActorRef[Any],
                 reads: ReadPool, settings: MonitorSettings, memory: LinkMemory,
                 publish: Publish, node_readers: NodeReaders | None = None,
                 clock: Callable[[], int] | None = None,
                 late: Callable[[Any], None] | None = None,
                 dispatcher: Dispatcher | None = None,
                 soon: SoonSet | None = None,
                 node_pool: ReaderPool | None = None,
                 settle_later: Callable[[tuple[str, str]], None] | None = None,
                 after_lease: Callable[[tuple[str, str], int, int], None] | None = None,
                 scanned: Callable[[tuple[str, str]], None] | None = None,
                 more_soon: Callable[[tuple[str, str]], None] | None = None) -> None:
        self._more_soon = more_soon
        self._after_lease = after_lease
        self._scanned = scanned
        self._keyer: Callable[[str], str] = str  # set from the database at each scan's load
        super().__init__(dispatcher=dispatcher)
        self._settle_later = settle_later
        self._soon = soon
        self._node_pool = node_pool
        self._late = late
        self._key = key
        self._agent_id = agent_id
        self._persistence = persistence
        self._reads = reads
        self._settings = settings
        self._state = memory.get((key, agent_id))
        self._memory = memory
        self._publish = publish
        self._node_readers = node_readers
        self._clock = clock

    def handle(self, message: Any) -> Any:
        """Run one scan (driving thread; blocks on bounded I/O and persistence)."""
        match message:
            case ScanLink(hint=hint):
                return self._scan(hint)
            case ScanSoon():
                if self._soon is not None:
                    self._soon.discard((self._key, self._agent_id))
                try:
                    report = self._scan(None)
                except Exception as exc:  # a told scan must not stop the actor
                    logger.warning("upstream scan of %s after a file event failed: %s: %s",
                                   self._key, type(exc).__name__, exc)
                    return None
                if report.dropped:
                    self._memory.forget((self._key, self._agent_id))
                if report.more and self._more_soon is not None:
                    self._more_soon((self._key, self._agent_id))
                    self.runtime_requeue = True  # the next scan waits its turn behind others
                return None
        return super().handle(message)

    def _long_line_waits(self, result: ScanResult, position: object, source: str) -> bool:
        """For a long line at ``position``: log once (INFO, no text) that it is read over
        several scans (``long_line``) or decided not typed unread (``line_too_long``),
        and say whether the scan ends there (no marker to commit yet)."""
        reason, settings = result.reason, self._settings
        if reason not in ("long_line", "line_too_long"):
            return False
        if reason == "line_too_long":
            self._log_once(logging.INFO, reason, position,
                           "upstream scan of %s: a %s line is longer than %d bytes; decided "
                           "not typed without reading it, only its end is searched for",
                           source, max(settings.long_line_max_bytes, settings.scan_cap_bytes))
        else:
            self._log_once(logging.INFO, reason, position,
                           "upstream scan of %s: a %s line is longer than the %d-byte scan "
                           "cap; reading it over several scans", source, settings.scan_cap_bytes)
        return result.kind != "activity"

    def _log_once(self, level: int, reason: str, position: object, text: str,
                  *args: object) -> None:
        if self._state.logged != (reason, position):
            self._state.logged = (reason, position)
            logger.log(level, text, self._key, *args)

    def _load(self) -> tuple[UpstreamLink | None, OwnTextClaims, tuple[str | None, int]]:
        """The link, the session's own texts and the link's scan lease, in one read
        (and the database's text-hash keying, kept for the events' source pointers)."""
        with self._reads.connection(self._settings.timeout) as conn:
            link = read_link(conn, self._key, self._agent_id)
            self._keyer = partial(keyed_hash, read_secret(conn))
            own = OwnTextClaims(
                (OwnTextRecord(*row) for row in read_own_texts(conn, self._key, self._agent_id)),
                key=self._keyer, now=self._now(),
                ttl_ms=self._settings.own_text_ttl_ms, skew_ms=self._settings.own_text_skew_ms)
            lease = (link_lease(conn, self._key, self._agent_id)
                     if self._settings.lease_owner is not None else (None, 0))
        return link, own, lease

    def _scan(self, hint: StoreHint | None) -> MonitorReport:
        self._state.settled = None  # until this scan settles the link again
        link, own, lease = self._load()
        if link is None:
            self._memory.forget((self._key, self._agent_id))
            return MonitorReport(dropped=True)
        if not self._hold_lease(lease):
            # Another live process scans it. Should it die with the change
            # unscanned, look again as soon as its lease lapses.
            if self._after_lease is not None:
                self._after_lease((self._key, self._agent_id), lease[1], link.updated_at)
            return MonitorReport()
        if self._scanned is not None:
            self._scanned((self._key, self._agent_id))
        source = find_source(link.source)
        if hint is None and source is not None and source.reading().poll is not None:
            hint = store_hint(source, link, self._settings.busy_timeout_ms)
        seen = fingerprint(link)  # before reading: a later append changes it
        gone_since = link.marker.get(MISSING)
        if gone_since is not None:
            # Told missing before: should the source be back (moved back, restored,
            # ``git stash pop``), read it on from where it was. A restore is a new
            # inode: the bytes before the marker decide whether it is the same history.
            link = msgspec.structs.replace(link, marker={
                k: v for k, v in link.marker.items() if k not in (MISSING, "inode")})
        result = scan_source(link, hint, settings=self._settings, own_texts=own,
                             node_readers=self._node_readers,
                             now=self._clock() if self._clock else 0, node_pool=self._node_pool,
                             pending=self._state.pending)
        self._state.pending = result.pending
        if result.recheck and self._settle_later is not None:
            self._settle_later((self._key, self._agent_id))  # no change may ever come
        if result.kind == "missing":
            return MonitorReport() if gone_since is not None else self._missed(link, result)
        self._state.streak = 0
        if gone_since is not None:
            logger.info("upstream source of %s is back; read on from where it was", self._key)
            if result.kind != "activity" or result.next_marker is None:
                # Nothing new yet: the link is no longer missing all the same.
                return self._commit(link, CommitScan(
                    session_key=self._key, agent_id=self._agent_id,
                    expected_updated_at=link.updated_at, source_key=link.source_key,
                    marker_json=msgspec.json.encode(link.marker).decode()))
        if result.invalid_lines:
            level = logging.DEBUG if self._state.invalid_logged else logging.WARNING
            self._state.invalid_logged = True
            logger.log(level, "upstream scan of %s: %d complete %s line(s) are not JSON "
                       "objects; decided not typed, reading goes on after them", self._key,
                       result.invalid_lines, link.source)
        if seen is not None and _settles(result, hint):
            self._state.settled = (seen, link.updated_at)
        position = link.marker.get("offset", link.marker.get("seq"))
        if self._long_line_waits(result, position, link.source):
            return MonitorReport(more=result.more)
        if result.kind == "no_news" and result.reason == "sequence_query_failed":
            self._log_once(logging.WARNING, result.reason, position,
                           "upstream scan of %s: its %s store cannot be queried (locked, "
                           "corrupt or of an unknown schema); not counted as missing",
                           source.title if source is not None else link.source)
            return MonitorReport()
        if result.kind == "no_news" and result.reason.startswith("stopped:"):
            why = result.reason.removeprefix("stopped:")
            # A pending decision (evidence that may still be written) is routine.
            level = logging.INFO if why.endswith("_pending") else logging.WARNING
            self._log_once(level, result.reason, position,
                           "upstream scan of %s waits before a %s line it cannot decide yet "
                           "(%s); it is read again at the session's next change",
                           link.source, why)
            return MonitorReport()
        if result.kind == "transient":
            self._log_once(logging.INFO, result.reason, position,
                           "upstream scan of %s: %s (not counted as missing)", result.reason)
            return MonitorReport()
        if result.kind != "activity" or result.next_marker is None:
            return MonitorReport()
        if result.reason.startswith("rewritten") or result.reason == "shrunk":
            logger.info("upstream source of %s was rewritten; re-baselined without counting",
                        self._key)
        record = None
        if result.human_turns > 0:
            payload = payload_of(link, result, self._keyer)
            record = RecordEvent(
                session_key=self._key, agent_id=self._agent_id, kind="human_direct_message",
                actor_type="human", summary=f"human message via {link.source}",
                dedupe_key=f"upstream:{self._key}:{link.source_key}:{result.dedupe_id}",
                payload_json=payload, occurred_at=result.occurred_at,
                shape=self._settings.human_shape,  # type: ignore[arg-type]
            )
        report = self._commit(link, CommitScan(
            session_key=self._key, agent_id=self._agent_id,
            expected_updated_at=link.updated_at, source_key=link.source_key,
            marker_json=msgspec.json.encode(result.next_marker).decode(), record=record,
            lease_owner=self._settings.lease_owner,
            lease_expires_at=self._now() + self._settings.lease_ms,
            own_texts_used=own.claimed, own_texts_expired_before=own.expired_before()),
            settling=bool(result.next_marker.get("settling")))
        # Applied or not (the link changed meanwhile), bytes left past the cap are
        # read by the next scan, which comes soon (see UpstreamService).
        return msgspec.structs.replace(report, more=result.more) if result.more else report

    def _now(self) -> int:
        return self._clock() if self._clock is not None else time.time_ns() // 1_000_000

    def _hold_lease(self, lease: tuple[str | None, int]) -> bool:
        """Whether this process may scan the link now, taking its lease if needed.

        A live lease of another process means it scans the link; a lapsed
        one (its holder died, maybe mid-scan) is taken over. The scan's
        compare-and-set commit keeps a turn from counting twice regardless.
        """
        owner = self._settings.lease_owner
        if owner is None:
            return True
        holder, expires_at = lease
        now = self._now()
        if holder == owner and expires_at - now > self._settings.lease_ms // 2:
            return True
        if holder is not None and holder != owner and expires_at > now:
            self._log_once(logging.DEBUG, "leased", holder,
                           "upstream link of %s is scanned by another process")
            return False
        granted: bool = submit(self._persistence, ClaimLink(
            session_key=self._key, agent_id=self._agent_id, owner=owner,
            expires_at=now + self._settings.lease_ms), timeout=self._settings.timeout)
        return granted

    def _missed(self, link: UpstreamLink, result: ScanResult) -> MonitorReport:
        state = self._state
        if state.token != link.updated_at:
            state.streak, state.token = 0, link.updated_at
        state.streak += 1
        logger.info("upstream source of %s looks gone (%s), miss %d of %d", self._key,
                    result.reason, state.streak, self._settings.missing_threshold)
        if state.streak < self._settings.missing_threshold:
            return MonitorReport()
        record = RecordEvent(
            session_key=self._key, agent_id=self._agent_id, kind="upstream_missing",
            actor_type="system", summary=f"upstream missing via {link.source}",
            payload_json=msgspec.json.encode({"channel": link.source}).decode(),
            dedupe_key=f"upstream-missing:{self._key}:{link.source_key}:{link.updated_at}")
        try:
            # Kept, marked missing: a source that comes back is read on from its marker.
            report = self._commit(link, CommitScan(
                session_key=self._key, agent_id=self._agent_id,
                expected_updated_at=link.updated_at, source_key=link.source_key,
                record=record,
                marker_json=msgspec.json.encode({**link.marker, MISSING: self._now()}).decode()))
        except Exception:
            state.streak = self._settings.missing_threshold - 1  # retry on the next scan
            raise
        state.streak = 0
        return report

    def _commit(self, link: UpstreamLink, command: CommitScan, *,
                settling: bool = False) -> MonitorReport:
        outcome: ScanOutcome = submit(self._persistence, command, timeout=self._settings.timeout,
                                      on_late=self._late)
        if not outcome.applied:
            logger.info("upstream link of %s changed during its scan; result dropped", self._key)
            self._state.settled = None
            return MonitorReport()
        if settling and self._settle_later is not None:
            self._settle_later((self._key, self._agent_id))
        settled = self._state.settled
        if settled is not None:
            self._state.settled = ((settled[0], outcome.updated_at)
                                   if outcome.updated_at is not None else None)
        recorded = outcome.record
        if recorded is not None and recorded.notices:
            self._publish(recorded.notices)
        events = (recorded.event,) if recorded and recorded.inserted and recorded.event else ()
        if command.drop_link:
            self._memory.forget((self._key, self._agent_id))
        return MonitorReport(events=events, dropped=command.drop_link)
