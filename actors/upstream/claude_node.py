"""Claude Code sessions on a paired node: the host reads, we classify (anchor §3.17).

The gateway cannot read a remote node's files; the host supplies a
:class:`NodeTranscriptReader` returning the newest transcript items. Each scan
classifies the latest :data:`NODE_SCAN_LIMIT` items against a UUID marker.
A remote read cannot prove a thread was deleted, so these links never report
``upstream_missing``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from actors.upstream._scan import ScanResult, count_turns
from actors.upstream.claude import classify_claude_message

__all__ = ["NODE_SCAN_LIMIT", "NodeTranscriptReader", "node_baseline", "scan_node"]

logger = logging.getLogger(__name__)

NODE_SCAN_LIMIT = 50
"""Items classified per scan; a larger burst between scans can be missed (seed limits)."""


@runtime_checkable
class NodeTranscriptReader(Protocol):
    """Host-supplied access to Claude Code transcripts on a paired node."""

    def read_latest(self, thread_id: str, limit: int) -> Sequence[Mapping[str, Any]]:
        """Return up to ``limit`` of the thread's newest transcript rows, newest first.

        Each row is a decoded Claude Code JSONL row (``type``, ``message``,
        ``uuid``, ``timestamp``, ...). Called from an upstream monitor's
        thread; it may block (bounded by the host) and may raise: a failure
        counts as no news.
        """
        ...


def _bounded(reader: NodeTranscriptReader, thread_id: str, limit: int,
             timeout: float) -> list[Mapping[str, Any]]:
    """Call the host's reader in a daemon thread, giving up after ``timeout`` seconds.

    A reader that never returns is abandoned (its daemon thread cannot keep
    the process alive) instead of stalling the monitor and ``close()``.

    Raises:
        TimeoutError: the reader did not answer in time.
        BaseException: whatever the reader raised.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = list(reader.read_latest(thread_id, limit))
        except BaseException as exc:  # host code: handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=run, name="ssa-node-reader", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"the paired-node reader did not answer within {timeout:.1f}s")
    if "error" in box:
        raise box["error"]
    value: list[Mapping[str, Any]] = box["value"]
    return value


def node_baseline(reader: NodeTranscriptReader, thread_id: str, *,
                  timeout: float = 10.0) -> dict[str, Any] | None:
    """The starting marker ``{"uuid": newest uuid or None}``; ``None`` means no link.

    A newest item without a ``uuid`` cannot anchor a marker (anchor §4.5 item
    78); a failing reader gives no link either.
    """
    try:
        items = _bounded(reader, thread_id, 1, timeout)
    except BaseException:  # host code
        logger.warning("the paired-node reader failed while baselining a thread", exc_info=True)
        return None
    if not items:
        return {"uuid": None}
    newest = items[0].get("uuid") if isinstance(items[0], Mapping) else None
    return {"uuid": newest} if isinstance(newest, str) and newest else None


def scan_node(reader: NodeTranscriptReader, thread_id: str, marker: dict[str, Any], *,
              own_hashes: frozenset[str], now: int, timeout: float = 10.0) -> ScanResult:
    """Classify the items newer than the marker among the latest 50 (anchor §3.17).

    Items before the marker's uuid are new (all 50 when the marker is
    ``None`` or not among them). Never reports missing. Never raises; a
    reader that fails or takes longer than ``timeout`` seconds is transient.
    """
    try:
        items = _bounded(reader, thread_id, NODE_SCAN_LIMIT, timeout)
    except BaseException:  # host code: nothing it raises may stop the monitor
        logger.warning("the paired-node reader failed", exc_info=True)
        return ScanResult(kind="transient", reason="reader_failed")
    seen = marker.get("uuid")
    # A row that is not a mapping (a host bug) is kept in place, never classified.
    uuids = [item.get("uuid") if isinstance(item, Mapping) else None for item in items]
    fresh = items[: uuids.index(seen)] if seen in uuids else items
    if not fresh:
        return ScanResult(kind="no_news", reason="no_new_items")
    newest = uuids[0]
    if not isinstance(newest, str) or not newest:
        return ScanResult(kind="no_news", reason="newest_item_without_uuid")
    turns, occurred = count_turns((classify_claude_message(item) for item in fresh
                                   if isinstance(item, Mapping)), own_hashes)
    return ScanResult(
        kind="activity", reason="scanned", human_turns=turns, next_marker={"uuid": newest},
        occurred_at=(occurred if occurred is not None else now) if turns else None,
        dedupe_id=newest if turns else None)
