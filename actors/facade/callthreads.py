"""Blocking calls for an event loop: a bounded set of daemon threads, and one-off threads.

:class:`CallThreads` runs the blocking ``Gateway`` calls of an
:class:`~actors.AsyncGateway`; :func:`in_thread` runs one blocking step (a
close) on a thread of its own and awaits it, so it never waits behind busy
call threads and never needs the loop's default executor.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from actors.errors import GatewayClosed

__all__ = ["CallThreads", "in_thread"]

T = TypeVar("T")


class CallThreads:
    """A bounded set of daemon threads running blocking calls for the loop.

    Threads start on demand, up to ``limit``, and are reused; a call beyond
    that waits in the queue. Daemon threads, so a call stuck in user code (a
    ``deliver`` that never returns) cannot hold up interpreter exit.
    Thread-safe; :meth:`submit` never blocks.
    """

    def __init__(self, name: str, limit: int) -> None:
        self._name = name
        self._limit = limit
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = \
            queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a call
        self._pending = 0  # calls queued, not yet taken
        self._closed = False

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Run ``fn()`` on one of the threads; its result or exception lands in the future.

        Raises:
            GatewayClosed: the threads were closed.
        """
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise GatewayClosed("the gateway is closed")
            self._pending += 1
            self._queue.put((fn, future))
            if self._pending > self._idle and len(self._threads) < self._limit:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self._name}-{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
        return future

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            job = self._queue.get()
            with self._lock:
                self._idle -= 1
                if job is not None:
                    self._pending -= 1
            if job is None:
                return
            fn, future = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # handed to the awaiting task
                    future.set_exception(exc)

    def close(self, timeout: float) -> list[str]:
        """Let queued calls finish, stop the threads; the names of those still busy after
        ``timeout`` seconds (they are daemons and end with their call). Blocks."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._queue.put(None)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [thread.name for thread in threads if thread.is_alive()]


async def in_thread(fn: Callable[[], T]) -> T:
    """Run a blocking ``fn`` on a short-lived thread of its own and await it (no executor)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def deliver(outcome: Future[T]) -> None:
        if not done.done():
            if outcome.exception() is not None:
                done.set_exception(outcome.exception())  # type: ignore[arg-type]
            else:
                done.set_result(outcome.result())

    def run() -> None:
        outcome: Future[T] = Future()
        try:
            outcome.set_result(fn())
        except BaseException as exc:
            outcome.set_exception(exc)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(deliver, outcome)

    thread = threading.Thread(target=run, name="ssa-async-close")
    thread.start()
    try:
        return await asyncio.shield(done)
    finally:
        if done.done():
            thread.join()
