"""The gateway's machinery: construction, shutdown and the internal request paths.

:class:`actors.Gateway` builds on this; users never touch it directly.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import apsw
import pykka

from actors.config import GatewayConfig
from actors.engine.cursor import CursorActor, should_wake
from actors.engine.exit import forget, track
from actors.engine.hosting import Hosting
from actors.engine.late import LatePublisher, late_sink
from actors.engine.messages import Wake
from actors.engine.registry import ActorPool
from actors.engine.rewake import Rewakes
from actors.engine.session import Handoff, SessionActor
from actors.engine.waker import WakerActor
from actors.errors import (
    GatewayClosed,
    GatewayUnavailable,
    ReentrantCall,
    SessionStateError,
    StorageError,
)
from actors.monitors.filefeed import ChangeFeed
from actors.monitors.service import UpstreamService
from persistence import (
    Backend,
    NoticeDescriptor,
    PersistenceActor,
    Presence,
    ReadPool,
    RecordEvent,
    RecordOutcome,
    ReleaseLeases,
    SessionStateEvent,
    has_waking_notice,
    is_epoch_ms,
    submit,
)
from persistence.keys import is_subagent_key
from persistence.runtime import Dispatcher, on_our_thread

__all__ = ["GatewayCore", "wall_clock"]

logger = logging.getLogger("actors.gateway")

Clock = Callable[[], int]
_ACTOR_FAILURES = (StorageError, GatewayUnavailable, pykka.Timeout, pykka.ActorDeadError,
                   apsw.Error)
"""Failures of internal requests (PostgreSQL's driver errors arrive as
:class:`~persistence.errors.DriverError`, a StorageError)."""


def wall_clock() -> int:
    """The system clock in epoch milliseconds."""
    return time.time_ns() // 1_000_000


class SaneClock:
    """The injected clock as the gateway reads it: epoch ms, whatever the clock does.

    Its answer when it is epoch milliseconds (an ``int`` from 0 to 2**53 - 1),
    else the system clock; the first bad answer (or exception) is logged once
    at ERROR. So a broken clock never stops a thread that reads it (the
    upstream cadence, hosting leases). Any thread; non-blocking.

    Args:
        clock: ``() -> int`` epoch milliseconds.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._logged = False

    def __call__(self) -> int:
        """The time in epoch milliseconds."""
        try:
            now: object = self._clock()
        except Exception as exc:  # a clock that raises is a bad clock too
            now = exc
        if is_epoch_ms(now):
            return now  # type: ignore[return-value]
        if not self._logged:
            self._logged = True
            logger.error("the injected clock %s, not epoch milliseconds; using the system "
                         "clock", f"raised {type(now).__name__}" if isinstance(now, Exception)
                         else f"returned {type(now).__name__}")
        return wall_clock()


class GatewayCore:
    """Actors, pools, lifecycle and the request paths shared by the public methods.

    Thread-safe; see :class:`actors.Gateway` for the public contract.
    """

    _feed_factory: Callable[..., ChangeFeed] | None = None
    """Builds the file-notification feed (``None``: ``watchfiles``); tests inject one."""

    def __init__(self, backend: Backend, config: GatewayConfig, clock: Clock,
                 on_wake: Callable[[str], None] | None, presence: Presence,
                 host_id: str) -> None:
        """Internal: use :meth:`open`."""
        self._backend = backend
        self._presence = presence
        self._shared_at_open = False
        self.host_id = host_id
        """This gateway's id in hosting and scan leases (random per open)."""
        self.path: Path | None = backend.path
        """The SQLite file (``None`` on PostgreSQL)."""
        self.location = backend.location
        """Where the signal log lives: the SQLite file, or the URL without its password."""
        self.config = config
        self._clock = clock
        self._timeout = config.ask_timeout_s
        self._closed = False
        self._close_lock = threading.Lock()
        self._read_fault = False
        self._reads = ReadPool(backend, size=config.read_connections)
        self._fatal = threading.Event()
        self._dispatcher = Dispatcher("ssa-worker", config.worker_threads)
        self._persistence: pykka.ActorRef[Any] = PersistenceActor.start(
            backend, clock=clock, versions=itertools.count(1),
            retention_days=config.retention_days, max_rows=config.max_rows,
            prune_interval_ms=config.prune_interval_ms, fatal=self._fatal,
            dispatcher=self._dispatcher, host_id=host_id,
        )
        self._waker: pykka.ActorRef[Any] | None = (
            WakerActor.start(on_wake, dispatcher=self._dispatcher) if on_wake is not None
            else None
        )
        self._late_ref: pykka.ActorRef[Any] = LatePublisher.start(
            self._publish, dispatcher=self._dispatcher)
        self._late = late_sink(self._late_ref)
        self._handoff = Handoff(wait_s=config.ask_timeout_s)
        self._sessions: ActorPool[tuple[str, str]] = ActorPool(
            self._start_session, cap=config.max_session_actors, name="session",
            join_timeout=config.ask_timeout_s, on_retire=self._handoff.expect)
        self._cursors: ActorPool[tuple[str, str, str]] = ActorPool(
            self._start_cursor, cap=config.max_cursor_actors, name="cursor")
        self._upstream = UpstreamService(persistence=self._persistence, reads=self._reads,
                                         config=config, clock=clock, publish=self._publish,
                                         late=self._late, dispatcher=self._dispatcher,
                                         lease_owner=host_id)
        self._hosting = Hosting(
            backend=backend, persistence=self._persistence, host_id=host_id, clock=clock,
            lease_ms=config.lease_ms, probe_interval_ms=config.probe_interval_ms,
            timeout=self._timeout, wake=self._wake)
        self._rewakes = Rewakes(self._wake, self._owes_wake)
        track(self)  # closed at interpreter exit if the program never closes it

    def close(self, timeout: float = 10.0) -> None:
        """Stop every actor this gateway started, and nothing else.

        Args:
            timeout: seconds to wait for each actor to stop.

        Idempotent; safe from any thread but the gateway's own. Pending
        notices are durable and come back at the next :meth:`open`. A
        gateway still open when the interpreter exits is closed then
        (:mod:`actors.engine.exit`).

        Raises:
            ReentrantCall: called from ``on_wake`` or another gateway thread
                (it would wait for itself); hand it to another thread.
        """
        if on_our_thread() and not self._fatal.is_set():
            raise ReentrantCall("close() must not be called from on_wake or our actors")
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        forget(self)
        stuck = 0
        # Each step is isolated: one failing step never skips the others.
        steps: list[Callable[[], int | None]] = [
            partial(self._rewakes.close, timeout), partial(self._hosting.stop, timeout),
            partial(self._upstream.stop, timeout),
            self._release_leases, partial(self._cursors.stop_all, timeout),
            partial(self._sessions.stop_all, timeout)]
        steps += [partial(self._stop_ref, ref, timeout)
                  for ref in (self._late_ref, self._waker, self._persistence) if ref is not None]
        steps += [partial(self._dispatcher.close, timeout), self._reads.close,
                  self._presence.release]
        for step in steps:
            try:
                stuck += step() or 0
            except Exception:
                logger.exception("a step of close() failed; continuing")
        if stuck:
            logger.error("%d gateway actors were still running after close()", stuck)

    def _release_leases(self) -> None:
        # Others take over this process's watchers and links at once, not after lease_ms.
        if self._fatal.is_set() or not self._persistence.is_alive():
            return
        try:
            submit(self._persistence, ReleaseLeases(host_id=self.host_id),
                   timeout=min(self._timeout, 2.0))
        except Exception as exc:  # they lapse by themselves
            logger.info("releasing leases at close failed (they lapse in %d ms): %s",
                        self.config.lease_ms, exc)

    @staticmethod
    def _stop_ref(ref: pykka.ActorRef[Any], timeout: float) -> int:
        try:
            ref.stop(block=True, timeout=timeout)
        except pykka.Timeout:
            logger.error("an actor did not stop within %.1fs", timeout)
            return 1
        return 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- internals -----------------------------------------------------------

    def _guard(self) -> None:
        if on_our_thread():
            raise ReentrantCall("gateway methods must not be called from on_wake or our actors")
        if not self._closed and (self._fatal.is_set() or not self._persistence.is_alive()):
            logger.error("closing the gateway: its database or its writer is unusable")
            self.close()
        if self._closed:
            raise GatewayClosed("the gateway is closed")

    def _note_read_fault(self, exc: BaseException, what: str) -> None:
        # Corruption met by a read is as fatal as one met by a write.
        fatal = self._backend.is_fatal
        if fatal(exc) or (exc.__cause__ is not None and fatal(exc.__cause__)):
            logger.error("a read found the signal-log database corrupt: %s", exc)
            self._fatal.set()
        # One WARNING per read-fault episode, like the writer's.
        level = logging.DEBUG if self._read_fault else logging.WARNING
        self._read_fault = True
        logger.log(level, "%s read failed (reads degrade until this clears): %s", what, exc)

    def _note_read_ok(self) -> None:
        if self._read_fault:
            self._read_fault = False
            logger.warning("signal-log reads recovered")

    def _has_session_state(self, key: tuple[str, str]) -> bool:
        return self._sessions.peek(key) is not None or self._handoff.has(key)

    def _start_session(self, key: tuple[str, str]) -> pykka.ActorRef[Any]:
        return SessionActor.start(
            key[0], key[1], persistence=self._persistence, reads=self._reads,
            queue_limit=self.config.queue_limit,
            timeout=self._timeout, handoff=self._handoff, late=self._late,
            dispatcher=self._dispatcher)

    def _start_cursor(self, key: tuple[str, str, str]) -> pykka.ActorRef[Any]:
        return CursorActor.start(
            key[0], (key[1], key[2]), persistence=self._persistence, timeout=self._timeout,
            dispatcher=self._dispatcher)

    def _ask_session(self, key: tuple[str, str], message: object) -> Any:
        return self._ask(self._sessions, key, message)

    def _ask_cursor(self, key: tuple[str, str, str], message: object) -> Any:
        return self._ask(self._cursors, key, message)

    def _ask(self, pool: ActorPool[Any], key: Any, message: object) -> Any:
        # Actor asks wait on inner requests of up to `timeout`, so allow two.
        for _attempt in (1, 2):
            try:
                return pool.get(key).ask(message, timeout=2 * self._timeout)
            except pykka.ActorDeadError:
                if self._closed:
                    raise GatewayClosed("the gateway was closed during the call") from None
            except pykka.Timeout:
                raise GatewayUnavailable(
                    f"no answer within {2 * self._timeout:.1f}s ({type(message).__name__})"
                ) from None
            except (SessionStateError, StorageError):
                raise
            except Exception as exc:  # a bug in an actor: logged there at ERROR
                raise GatewayUnavailable(
                    f"{type(message).__name__} failed: {type(exc).__name__}") from exc
        raise GatewayUnavailable(f"the actor stopped twice ({type(message).__name__})")

    def _best_effort(self, call: Callable[[], Any], what: str) -> Any:
        try:
            return call()
        except StorageError as exc:
            # The persistence actor logs each storage-fault episode once.
            logger.debug("%s failed: %s", what, exc)
            return None
        except _ACTOR_FAILURES as exc:
            logger.warning("%s failed: %s: %s", what, type(exc).__name__, exc)
            return None

    def _record(self, command: RecordEvent) -> SessionStateEvent | None:
        outcome = self._best_effort(
            lambda: submit(self._persistence, command, timeout=self._timeout,
                           on_late=self._late),
            f"recording {command.kind}")
        if not isinstance(outcome, RecordOutcome):
            return None
        self._publish(outcome.notices)
        return outcome.event

    def _publish(self, notices: Iterable[NoticeDescriptor]) -> None:
        """Run the wakes of committed notices that this process runs (calling thread).

        The notices themselves need no publishing: they are the durable open
        cursors, read by every process's session actors.
        """
        for descriptor in notices:
            if should_wake(descriptor):
                self._wake(descriptor.watcher_key)

    def _owes_wake(self, watcher_key: str) -> bool:
        """Whether ``watcher_key`` has an open notice that wakes (a read; any thread)."""
        if self._closed or is_subagent_key(watcher_key):
            return False
        with self._reads.connection(self._timeout) as conn:
            return has_waking_notice(conn, watcher_key)

    def _wake(self, watcher_key: str) -> None:
        if self._waker is None:
            return
        try:
            self._waker.ask(Wake(watcher_key=watcher_key), timeout=2 * self._timeout)
        except Exception as exc:  # the notice stays open; the watcher sees it next turn
            logger.warning("waking %s failed: %s: %s", watcher_key, type(exc).__name__, exc)
