"""The upstream monitor actor: one per adopted, linked session."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgspec
import pykka

from actors._base import GatewayActor
from actors.upstream._scan import (
    OpenCodeHint,
    ScanResult,
    line_classifier,
    scan_jsonl,
    scan_opencode,
)
from actors.upstream.claude_node import NodeTranscriptReader, scan_node
from persistence import (
    CommitScan,
    NoticeDescriptor,
    ReadPool,
    RecordEvent,
    ScanOutcome,
    SessionStateEvent,
    UpstreamLink,
    read_link,
    read_own_hashes,
    submit,
)

__all__ = ["MonitorReport", "MonitorSettings", "ScanLink", "UpstreamMonitor", "scan_source"]

logger = logging.getLogger(__name__)

NodeReaders = Callable[[str], NodeTranscriptReader | None]


class ScanLink(msgspec.Struct, frozen=True, kw_only=True, tag="monitor.scan"):
    """Scan the link once now (answers a :class:`MonitorReport`)."""

    opencode: OpenCodeHint | None = None


class MonitorReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one scan recorded, the notices to publish, and whether the link is gone."""

    events: tuple[SessionStateEvent, ...] = ()
    notices: tuple[NoticeDescriptor, ...] = ()
    dropped: bool = False


class MonitorSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The gateway settings a monitor needs (see ``GatewayConfig``)."""

    scan_cap_bytes: int
    missing_threshold: int
    opencode_replay_window: int
    human_shape: str
    timeout: float
    busy_timeout_ms: int


def scan_source(link: UpstreamLink, hint: OpenCodeHint | None, *, settings: MonitorSettings,
                own_hashes: frozenset[str], node_readers: NodeReaders | None = None,
                now: int = 0) -> ScanResult:
    """Scan ``link``'s source once (blocking, bounded reads; never raises).

    Paired-node links (``host_id`` ``node:<id>``) are read through the host's
    registered reader; without one the scan is no news.
    """
    if link.host_id.startswith("node:"):
        reader = node_readers(link.host_id[5:]) if node_readers else None
        if reader is None:
            return ScanResult(kind="no_news", reason="no_node_reader")
        return scan_node(reader, link.thread_id, link.marker, own_hashes=own_hashes, now=now)
    path = link.upstream_ref.get("path")
    if not isinstance(path, str):
        return ScanResult(kind="no_news", reason="no_local_path")
    if link.source == "opencode":
        return scan_opencode(path, link.thread_id, link.marker, hint, own_hashes=own_hashes,
                             replay_window=settings.opencode_replay_window,
                             busy_timeout_ms=settings.busy_timeout_ms)
    try:
        classify = line_classifier(link.source)
    except KeyError:
        return ScanResult(kind="no_news", reason="unknown_source")
    return scan_jsonl(path, link.marker, classify=classify, cap=settings.scan_cap_bytes,
                      own_hashes=own_hashes)


class UpstreamMonitor(GatewayActor):
    """Scans one adopted session's upstream source for direct human turns.

    Each :class:`ScanLink` re-reads the link (its marker and compare-and-set
    token) and the session's own-text hashes, scans the source in this
    actor's thread (blocking, bounded reads), and commits the result through
    the persistence actor in one transaction: the event (if any) and the
    marker advance together, only if the link did not change meanwhile.
    Three consecutive scans that prove the source gone record one
    ``upstream_missing`` and drop the link (anchor §3.16).

    Args:
        key: the adopted session key.
        agent_id: its agent.
        persistence: the persistence actor (asked; a leaf).
        reads: read connections.
        settings: scan cap, missing threshold, replay window, timeouts.
        node_readers: looks up the host's reader of a paired node by node id.
        clock: epoch-ms clock (fallback time of paired-node turns).

    Asks only the persistence actor. The missing streak lives in memory: a
    restarted monitor starts counting again (a later, never an extra, signal).
    """

    def __init__(self, key: str, agent_id: str, *, persistence: pykka.ActorRef[Any],
                 reads: ReadPool, settings: MonitorSettings,
                 node_readers: NodeReaders | None = None,
                 clock: Callable[[], int] | None = None) -> None:
        super().__init__()
        self._node_readers = node_readers
        self._clock = clock
        self._key = key
        self._agent_id = agent_id
        self._persistence = persistence
        self._reads = reads
        self._settings = settings
        self._streak = 0
        self._streak_token: int | None = None
        self._blocked_logged_at: int | None = None

    def handle(self, message: Any) -> Any:
        """Run one scan (actor thread; blocks on bounded I/O and persistence)."""
        match message:
            case ScanLink(opencode=hint):
                return self._scan(hint)
        return super().handle(message)

    def _scan(self, hint: OpenCodeHint | None) -> MonitorReport:
        with self._reads.connection(self._settings.timeout) as conn:
            link = read_link(conn, self._key, self._agent_id)
            own = read_own_hashes(conn, self._key, self._agent_id)
        if link is None:
            return MonitorReport(dropped=True)
        result = scan_source(link, hint, settings=self._settings, own_hashes=own,
                             node_readers=self._node_readers,
                             now=self._clock() if self._clock else 0)
        if result.kind == "missing":
            return self._missed(link, result)
        self._streak = 0
        if result.kind == "blocked":
            if self._blocked_logged_at != link.marker.get("offset"):
                self._blocked_logged_at = link.marker.get("offset")
                logger.warning("upstream scan of %s is blocked: one %s line is larger than "
                               "the %d-byte scan cap", self._key, link.source,
                               self._settings.scan_cap_bytes)
            return MonitorReport()
        if result.kind != "activity" or result.next_marker is None:
            if result.kind == "transient":
                logger.info("upstream scan of %s: transient %s", self._key, result.reason)
            return MonitorReport()
        record = None
        if result.human_turns > 0:
            payload = (msgspec.json.encode({"turns": result.human_turns}).decode()
                       if result.human_turns > 1 else None)
            record = RecordEvent(
                session_key=self._key, agent_id=self._agent_id, kind="human_direct_message",
                actor_type="human", summary=f"human message via {link.source}",
                dedupe_key=f"upstream:{self._key}:{link.source_key}:{result.dedupe_id}",
                payload_json=payload, occurred_at=result.occurred_at,
                shape=self._settings.human_shape,  # type: ignore[arg-type]
            )
        return self._commit(link, CommitScan(
            session_key=self._key, agent_id=self._agent_id,
            expected_updated_at=link.updated_at, source_key=link.source_key,
            marker_json=msgspec.json.encode(result.next_marker).decode(), record=record))

    def _missed(self, link: UpstreamLink, result: ScanResult) -> MonitorReport:
        if self._streak_token != link.updated_at:
            self._streak, self._streak_token = 0, link.updated_at
        self._streak += 1
        logger.info("upstream source of %s looks gone (%s), miss %d of %d", self._key,
                    result.reason, self._streak, self._settings.missing_threshold)
        if self._streak < self._settings.missing_threshold:
            return MonitorReport()
        record = RecordEvent(
            session_key=self._key, agent_id=self._agent_id, kind="upstream_missing",
            actor_type="system", summary=f"upstream missing via {link.source}",
            payload_json=msgspec.json.encode({"channel": link.source}).decode(),
            dedupe_key=f"upstream-missing:{self._key}:{link.source_key}:{link.updated_at}")
        try:
            report = self._commit(link, CommitScan(
                session_key=self._key, agent_id=self._agent_id,
                expected_updated_at=link.updated_at, source_key=link.source_key,
                record=record, drop_link=True))
        except Exception:
            self._streak = self._settings.missing_threshold - 1  # retry on the next scan
            raise
        self._streak = 0
        return report

    def _commit(self, link: UpstreamLink, command: CommitScan) -> MonitorReport:
        outcome: ScanOutcome = submit(self._persistence, command, timeout=self._settings.timeout)
        if not outcome.applied:
            logger.info("upstream link of %s changed during its scan; result dropped", self._key)
            return MonitorReport()
        recorded = outcome.record
        events = (recorded.event,) if recorded and recorded.inserted and recorded.event else ()
        return MonitorReport(events=events, notices=recorded.notices if recorded else (),
                             dropped=command.drop_link)
