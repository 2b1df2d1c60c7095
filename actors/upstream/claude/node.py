"""Claude Code sessions on a paired node: the host reads, we classify (anchor §3.17).

The gateway cannot read a remote node's files; the host supplies a
:class:`NodeTranscriptReader` returning the newest transcript items. Each scan
classifies the latest :data:`NODE_SCAN_LIMIT` items against a UUID marker.
A remote read cannot prove a thread was deleted, so these links never report
``upstream_missing``.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from actors.upstream.claude.classify import classify_claude_message
from actors.upstream.common import OwnTexts
from actors.upstream.scanning import ScanResult, count_turns

__all__ = ["NODE_SCAN_LIMIT", "NODE_SOURCE", "NodeTranscriptReader", "ReaderPool",
           "node_baseline", "scan_node"]

logger = logging.getLogger(__name__)

NODE_SOURCE = "claude"
"""The source of every paired-node link (the host reads Claude Code's rows)."""
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


class ReaderPool:
    """A few daemon threads that run the host's node readers, reused across scans.

    A reader call runs on a pool thread so a reader that never returns is
    abandoned (a daemon thread cannot keep the process alive) instead of
    stalling the monitor and ``close()``; threads are started on demand, at
    most ``most``, and reused, so no thread is started per scan. While every
    thread is stuck in a hung reader, further calls wait their timeout.

    Args:
        most: most threads.

    Thread-safe; :meth:`call` blocks up to its timeout.
    """

    def __init__(self, most: int = 8) -> None:
        self._most = most
        self._tasks: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._closed = False

    def call(self, fn: Callable[[], list[Mapping[str, Any]]],
             timeout: float) -> list[Mapping[str, Any]]:
        """Run ``fn`` on a pool thread and return its result.

        Raises:
            TimeoutError: no answer within ``timeout`` seconds (or the pool is closed).
            BaseException: whatever ``fn`` raised.
        """
        box: dict[str, Any] = {}
        done = threading.Event()

        def task() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # host code: handed to the caller
                box["error"] = exc
            finally:
                done.set()

        with self._lock:
            if self._closed:
                raise TimeoutError("the paired-node reader pool is closed")
            self._tasks.put(task)
            if self._idle == 0 and self._threads < self._most:
                self._threads += 1
                self._idle += 1
                threading.Thread(target=self._work, name=f"ssa-node-reader-{self._threads}",
                                 daemon=True).start()
        if not done.wait(timeout):
            raise TimeoutError(f"the paired-node reader did not answer within {timeout:.1f}s")
        if "error" in box:
            raise box["error"]
        value: list[Mapping[str, Any]] = box["value"]
        return value

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            with self._lock:
                self._idle -= 1
            if task is None:
                return
            task()
            with self._lock:
                self._idle += 1

    def close(self) -> None:
        """Let idle threads exit (non-blocking); threads stuck in a reader are abandoned."""
        with self._lock:
            self._closed = True
            count = self._threads
        for _ in range(count):
            self._tasks.put(None)


def _bounded(reader: NodeTranscriptReader, thread_id: str, limit: int,
             timeout: float, pool: ReaderPool | None) -> list[Mapping[str, Any]]:
    """Call the host's reader on ``pool`` (or a one-off daemon thread), bounded by ``timeout``.

    Raises:
        TimeoutError: the reader did not answer in time.
        BaseException: whatever the reader raised.
    """
    def read() -> list[Mapping[str, Any]]:
        return list(reader.read_latest(thread_id, limit))

    if pool is not None:
        return pool.call(read, timeout)
    one_off = ReaderPool(1)
    try:
        return one_off.call(read, timeout)
    finally:
        one_off.close()


def node_baseline(reader: NodeTranscriptReader, thread_id: str, *,
                  timeout: float = 10.0, pool: ReaderPool | None = None,
                  ) -> dict[str, Any] | None:
    """The starting marker ``{"uuid": newest uuid or None}``; ``None`` means no link.

    A newest item without a ``uuid`` cannot anchor a marker (anchor §4.5 item
    78); a failing reader gives no link either.
    """
    try:
        items = _bounded(reader, thread_id, 1, timeout, pool)
    except BaseException:  # host code
        logger.warning("the paired-node reader failed while baselining a thread", exc_info=True)
        return None
    if not items:
        return {"uuid": None}
    newest = items[0].get("uuid") if isinstance(items[0], Mapping) else None
    return {"uuid": newest} if isinstance(newest, str) and newest else None


def scan_node(reader: NodeTranscriptReader, thread_id: str, marker: dict[str, Any], *,
              own_texts: OwnTexts, now: int, timeout: float = 10.0,
              pool: ReaderPool | None = None) -> ScanResult:
    """Classify the items newer than the marker among the latest 50 (anchor §3.17).

    Items before the marker's uuid are new (all 50 when the marker is
    ``None`` or not among them). Never reports missing. Never raises; a
    reader that fails or takes longer than ``timeout`` seconds is transient.
    """
    try:
        items = _bounded(reader, thread_id, NODE_SCAN_LIMIT, timeout, pool)
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
                                   if isinstance(item, Mapping)), own_texts)
    return ScanResult(
        kind="activity", reason="scanned", human_turns=turns, next_marker={"uuid": newest},
        occurred_at=(occurred if occurred is not None else now) if turns else None,
        dedupe_id=newest if turns else None)
