"""The paired-node path: Claude Code threads read through a node's transcript reader.

What lives here: :class:`PairedNodes`, owned by the upstream service. It
keeps the registered :class:`~actors.upstream.claude.node.NodeTranscriptReader`
of each paired node (the monitors look theirs up), the bounded pool their
reads run on, and adopts a thread on a node (anchor §3.17).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import msgspec
import pykka

from actors.upstream.baseline import source_key_of
from actors.upstream.claude.node import (
    NODE_SOURCE,
    NodeTranscriptReader,
    ReaderPool,
    node_baseline,
)
from persistence import LinkOutcome, RecordEvent, UpsertLink, UpstreamLink, submit

__all__ = ["PairedNodes"]

logger = logging.getLogger(__name__)


class PairedNodes:
    """The paired nodes' transcript readers and the adoption of their threads.

    Thread-safe.

    Args:
        persistence: the persistence actor.
        timeout: seconds each commit or node read may take.
        new_lease: the lease keyword arguments a new link starts with.
        rebased: called with ``(session_key, agent_id)`` when a link was re-baselined.
    """

    def __init__(self, *, persistence: pykka.ActorRef[Any], timeout: float,
                 new_lease: Callable[[], dict[str, Any]],
                 rebased: Callable[[tuple[str, str]], None]) -> None:
        self._persistence = persistence
        self._timeout = timeout
        self._new_lease = new_lease
        self._rebased = rebased
        self._readers: dict[str, NodeTranscriptReader] = {}
        self._lock = threading.Lock()
        self.pool = ReaderPool()
        """The bounded threads the node reads run on (shared with the monitors)."""

    def register(self, node_id: str, reader: NodeTranscriptReader) -> None:
        """Use ``reader`` for every paired-node link of ``node_id`` (replaces any other).

        Any thread; non-blocking.
        """
        with self._lock:
            self._readers[node_id] = reader

    def reader(self, node_id: str) -> NodeTranscriptReader | None:
        """The registered reader of ``node_id``, or ``None`` (any thread; non-blocking)."""
        with self._lock:
            return self._readers.get(node_id)

    def adopt(self, key: str, agent_id: str, *, node_id: str, thread_id: str,
              reader: NodeTranscriptReader) -> UpstreamLink | None:
        """Adopt a Claude Code thread on a paired node (anchor §3.17, paired node).

        Registers ``reader`` for the node, baselines at the newest item's uuid,
        upserts the link and records ``adopted``. Returns ``None`` (``adopted``
        still recorded) when the newest item has no uuid or the reader fails.
        Caller's thread; blocks on the node read and the commit; raises
        ``StorageError`` as :func:`persistence.submit`.
        """
        self.register(node_id, reader)
        host_id = f"node:{node_id}"
        ref = {"nodeId": node_id, "threadId": thread_id}
        source_key = source_key_of(host_id, thread_id, ref)
        adopted = RecordEvent(
            session_key=key, agent_id=agent_id, kind="adopted", actor_type="system",
            summary=f"session adopted from {NODE_SOURCE}",
            dedupe_key=f"adopted:{key}:{agent_id}:{source_key}",
            payload_json=msgspec.json.encode({"channel": NODE_SOURCE, "node": node_id}).decode())
        marker = node_baseline(reader, thread_id, timeout=self._timeout, pool=self.pool)
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
            self._rebased((key, agent_id))
        return outcome.link

    def close(self) -> None:
        """Stop the node reads' pool (caller's thread)."""
        self.pool.close()
