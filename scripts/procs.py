"""A gateway in a child process, driven over a pipe (real-process tests and benchmarks).

The parent starts :func:`serve` with the ``spawn`` start method (through
:class:`Worker`) and sends ``(verb, *args)`` tuples; the child answers each
with ``("ok", value)`` or ``("error", "ExceptionType: message")``. Every verb
runs one gateway call (or one measured loop), so a test chooses the exact
interleaving of calls across processes and a benchmark times them. Used by
``tests/test_processes.py`` and section 8 of ``scripts/bench.py``.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from actors import Gateway, GatewayConfig, SessionStateEventInput
from actors.facade.gateway import hosting_of

CTX = multiprocessing.get_context("spawn")
REPLY_TIMEOUT_S = 30.0
"""Longest a parent waits for one answer (below pytest-timeout's limit)."""


class Wakes:
    """The child's ``on_wake`` log: wall time of each call, waitable."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []
        self.cond = threading.Condition()

    def __call__(self, watcher: str) -> None:
        with self.cond:
            self.calls.append((watcher, time.time()))
            self.cond.notify_all()

    def wait_for(self, count: int, timeout: float) -> list[tuple[str, float]]:
        with self.cond:
            self.cond.wait_for(lambda: len(self.calls) >= count, timeout)
            return list(self.calls)


def _event(key: str, actor_id: str | None) -> SessionStateEventInput:
    return SessionStateEventInput(session_key=key, kind="human_direct_message",
                                  actor_type="human", actor_id=actor_id,
                                  summary="human message via proc")


def serve(conn: Connection, db: str, options: dict[str, Any]) -> None:
    """Open a gateway on ``db`` and answer commands until ``close`` (child process)."""
    wakes = Wakes()
    config = GatewayConfig(**options.get("config", {}))
    offset = int(options.get("clock_offset_ms", 0))

    def clock() -> int:  # the wall clock, moved: another process's leases look lapsed
        return time.time_ns() // 1_000_000 + offset

    gw = Gateway.open(db, config=config, monitor=options.get("monitor", False), clock=clock,
                      on_wake=wakes if options.get("on_wake", True) else None,
                      hosts=tuple(options.get("hosts", ())))
    verbs: dict[str, Callable[..., Any]] = {
        "pid": os.getpid,
        "human": lambda key, actor=None: _seq(gw.record(_event(key, actor))),
        "burst": lambda key, n: [_seq(gw.record(_event(key, None))) for _ in range(n)],
        "burst_report": lambda key, n: _burst_report(gw, conn, key, n),
        "spawn": lambda parent, child, run: _seq(gw.spawn_subagent(parent, child, run_id=run)),
        "watch": gw.watch,
        "pending": gw.pending_notices,
        "drain": gw.drain,
        "reset": gw.reset_session,
        "delete": gw.delete_session,
        "status": lambda key, since: [e.sequence for e in _changes(gw, key, since)],
        "version": lambda key: gw.session_status(key).state_version,
        "host": gw.host,
        "unhost": gw.unhost,
        "wakes": lambda: list(wakes.calls),
        "wait_wakes": wakes.wait_for,
        "adopt": lambda key, source, path, watcher: gw.adopt_many(
            [_request(key, source, path)], watcher=watcher) and None,
        "scan": lambda: [e.sequence for e in gw.scan_upstream()],
        "start_feed": gw.start_upstream_notifications,
        "probes": lambda: hosting_of(gw).probes,
        "cpu": time.process_time,
        "record_threads": lambda prefix, threads, per_thread, go: _record_threads(
            gw, prefix, threads, per_thread, go),
        "timed_record": lambda key: _timed(lambda: gw.record(_event(key, None))),
        "await_wake": lambda count, timeout: _await_wake(wakes, count, timeout),
        "spin_until_visible": lambda watcher, timeout: _spin(gw, watcher, timeout),
        "timed_drain": lambda watcher: _timed(lambda: gw.drain(watcher)),
        "first_without": lambda watcher, text: _first_without(gw, watcher, text),
        "idle_cpu": _idle_cpu,
    }
    try:
        conn.send(("ok", "ready"))
        while True:
            verb, *args = conn.recv()
            if verb == "close":
                break
            try:
                value = verbs[verb](*args)
            except Exception as exc:  # answered, so the parent sees it
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
            else:
                conn.send(("ok", value))
    finally:
        gw.close()
        conn.send(("ok", "closed"))


def _timed(call: Callable[[], Any]) -> tuple[float, float, Any]:
    """``(wall time before, wall time after, result)`` of one call (``time.time()``)."""
    before = time.time()
    result = call()
    return before, time.time(), _seq(result) if hasattr(result, "sequence") else result


def _record_threads(gw: Gateway, prefix: str, threads: int, per_thread: int,
                    go: float) -> tuple[int, float, float]:
    """Record ``per_thread`` events from each of ``threads`` threads, each on its own pair.

    Each thread waits for the wall time ``go`` first, so several processes
    start together. Returns ``(events recorded, first start, last end)`` in
    wall seconds.
    """
    targets = [f"agent:bench:{prefix}-t{i}" for i in range(threads)]
    for i, target in enumerate(targets):
        if not gw.watch(f"agent:bench:{prefix}-w{i}", target):
            raise RuntimeError(f"watch of {target} failed")
        gw.record(_event(target, None))  # warm-up
    counts = [0] * threads
    ends = [0.0] * threads

    def produce(i: int) -> None:
        delay = go - time.time()
        if delay > 0:
            threading.Event().wait(delay)
        for _ in range(per_thread):
            if gw.record(_event(targets[i], None)) is not None:
                counts[i] += 1
        ends[i] = time.time()

    workers = [threading.Thread(target=produce, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(counts), go, max(ends)


def _await_wake(wakes: Wakes, count: int, timeout: float) -> float | None:
    """Wait until ``count`` wakes happened in all; the wall time of wake number ``count``."""
    calls = wakes.wait_for(count, timeout)
    return calls[count - 1][1] if len(calls) >= count else None


def _spin(gw: Gateway, watcher: str, timeout: float) -> tuple[float | None, int]:
    """Read ``pending_notices`` until one shows: ``(wall time seen, reads)`` (benchmark)."""
    deadline = time.monotonic() + timeout
    reads = 0
    while time.monotonic() < deadline:
        reads += 1
        if gw.pending_notices(watcher):
            return time.time(), reads
    return None, reads


def _first_without(gw: Gateway, watcher: str, text: str) -> tuple[float, int]:
    """Read until ``text`` is gone from ``pending_notices``: ``(wall time, stale reads)``."""
    stale = 0
    while text in gw.pending_notices(watcher):
        stale += 1
        if stale > 100_000:
            break
    return time.time(), stale


def _idle_cpu(seconds: float) -> tuple[float, float]:
    """CPU seconds this process spent while idle for ``seconds`` wall seconds, and the wall."""
    cpu, wall = time.process_time(), time.monotonic()
    threading.Event().wait(seconds)
    return time.process_time() - cpu, time.monotonic() - wall


def _request(key: str, source: str, path: str) -> Any:
    from actors import AdoptRequest
    return AdoptRequest(key=key, source=source, path=path)


def _burst_report(gw: Gateway, conn: Connection, key: str, n: int) -> int:
    # Each returned sequence is reported before the next call: what the parent
    # saw is exactly what the child had returned when it was killed.
    for _ in range(n):
        conn.send(("seq", _seq(gw.record(_event(key, None)))))
    return n


def _seq(event: Any) -> int | None:
    return None if event is None else int(event.sequence)


def _changes(gw: Gateway, key: str, since: int) -> Any:
    changes = gw.session_status(key, changes_since=since).state_changes
    assert changes is not None
    return changes.events


class Worker:
    """The parent's handle on one child gateway process."""

    def __init__(self, db: Path | str, **options: Any) -> None:
        self.conn, child = CTX.Pipe()
        self.process = CTX.Process(target=serve, args=(child, str(db), options), daemon=True)
        self.process.start()
        child.close()
        assert self._answer() == "ready"

    def _answer(self, timeout: float = REPLY_TIMEOUT_S) -> Any:
        if not self.conn.poll(timeout):
            raise TimeoutError("the child gateway did not answer")
        status, value = self.conn.recv()
        if status == "error":
            raise RuntimeError(value)
        return value

    def call(self, verb: str, *args: Any, timeout: float = REPLY_TIMEOUT_S) -> Any:
        """Run one verb in the child and return its value (blocks, bounded)."""
        self.conn.send((verb, *args))
        return self._answer(timeout)

    def send(self, verb: str, *args: Any) -> None:
        """Start a verb without waiting for its answer."""
        self.conn.send((verb, *args))

    def recv(self, timeout: float = REPLY_TIMEOUT_S) -> tuple[str, Any]:
        """The next raw message from the child (bounded)."""
        if not self.conn.poll(timeout):
            raise TimeoutError("the child gateway did not answer")
        message: tuple[str, Any] = self.conn.recv()
        return message

    def close(self) -> None:
        """Close the child's gateway and join the process (bounded)."""
        if self.process.is_alive():
            try:
                self.conn.send(("close",))
                self._answer()
            except (OSError, EOFError, TimeoutError, RuntimeError):
                pass
        self.process.join(REPLY_TIMEOUT_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(REPLY_TIMEOUT_S)
        self.conn.close()

    def kill(self) -> None:
        """SIGKILL the child and reap it."""
        self.process.kill()
        self.process.join(REPLY_TIMEOUT_S)
        self.conn.close()
