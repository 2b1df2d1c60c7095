"""The gateway's runtime: its actors and pools, their shutdown, and the shared request paths.

:class:`Runtime` is the lifecycle collaborator of :class:`actors.Gateway`:
it starts every actor, thread pool and service one open gateway runs, stops
them in :meth:`Runtime.close`, and offers the request paths the other
collaborators share (the guard, asking an actor, best-effort writes,
recording, publishing wakes, read-fault bookkeeping). Users never touch it.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

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
from actors.monitors.service import UpstreamService
from persistence import (
    Backend,
    Command,
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

__all__ = ["Runtime", "SaneClock", "wall_clock"]

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


class Runtime:
    """One open gateway's actors, pools and services, and the request paths they share.

    Built by :func:`actors.facade.lifecycle.open_runtime` (after the restart
    sweep); :class:`actors.Gateway` hands its parts to its collaborators.
    Thread-safe: every method may be called from many threads at once.

    Args:
        backend: the opened, migrated signal-log backend.
        config: the validated settings.
        clock: ``() -> int`` epoch milliseconds (already a :class:`SaneClock`).
        on_wake: the host's ``(watcher_key) -> None``, or ``None``.
        presence: this gateway's joined presence marker (released at close).
        host_id: this gateway's id in hosting and scan leases.

    Attributes (the engine's handles, shared with the collaborators):
        persistence, reads, dispatcher, waker, late, handoff, sessions,
        cursors, upstream, hosting, rewakes; and ``config``, ``timeout``
        (``config.ask_timeout_s``), ``host_id``, ``path``, ``location``,
        ``shared_at_open``.
    """

    def __init__(self, backend: Backend, config: GatewayConfig, clock: Clock,
                 on_wake: Callable[[str], None] | None, presence: Presence,
                 host_id: str) -> None:
        """Start the actors (calling thread; non-blocking apart from thread starts)."""
        self.backend = backend
        self.presence = presence
        self.shared_at_open = False
        """Whether another gateway had the database open at open (set by the opener)."""
        self.host_id = host_id
        self.path: Path | None = backend.path
        self.location = backend.location
        self.config = config
        self.clock = clock
        """The gateway's clock, epoch ms (facade parts read it for their defaults)."""
        self.timeout = config.ask_timeout_s
        self._closed = False
        self._close_lock = threading.Lock()
        self._read_fault = False
        self.reads = ReadPool(backend, size=config.read_connections)
        self.fatal = threading.Event()
        self.dispatcher = Dispatcher("ssa-worker", config.worker_threads)
        self.persistence: pykka.ActorRef[Any] = PersistenceActor.start(
            backend, clock=clock, versions=itertools.count(1),
            retention_days=config.retention_days, max_rows=config.max_rows,
            prune_interval_ms=config.prune_interval_ms, fatal=self.fatal,
            dispatcher=self.dispatcher, host_id=host_id,
        )
        self.waker: pykka.ActorRef[Any] | None = (
            WakerActor.start(on_wake, dispatcher=self.dispatcher) if on_wake is not None
            else None
        )
        self.late_ref: pykka.ActorRef[Any] = LatePublisher.start(
            self.publish, dispatcher=self.dispatcher)
        self.late = late_sink(self.late_ref)
        self.handoff = Handoff(wait_s=config.ask_timeout_s)
        self.sessions: ActorPool[tuple[str, str]] = ActorPool(
            self._start_session, cap=config.max_session_actors, name="session",
            join_timeout=config.ask_timeout_s, on_retire=self.handoff.expect)
        self.cursors: ActorPool[tuple[str, str, str]] = ActorPool(
            self._start_cursor, cap=config.max_cursor_actors, name="cursor")
        self.upstream = UpstreamService(persistence=self.persistence, reads=self.reads,
                                        config=config, clock=clock, publish=self.publish,
                                        late=self.late, dispatcher=self.dispatcher,
                                        lease_owner=host_id)
        self.hosting = Hosting(
            backend=backend, persistence=self.persistence, host_id=host_id, clock=clock,
            lease_ms=config.lease_ms, probe_interval_ms=config.probe_interval_ms,
            timeout=self.timeout, wake=self.wake)
        self.rewakes = Rewakes(self.wake, self.owes_wake)
        track(self)  # closed at interpreter exit if the program never closes it

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has begun (any thread; non-blocking)."""
        return self._closed

    def close(self, timeout: float = 10.0) -> None:
        """Stop every actor this runtime started, and nothing else (see ``Gateway.close``).

        Args:
            timeout: seconds to wait for each actor to stop.

        Idempotent; each step is isolated (one failing step never skips the
        others). Blocks the calling thread while the actors stop.

        Raises:
            ReentrantCall: called from ``on_wake`` or another gateway thread.
        """
        if on_our_thread() and not self.fatal.is_set():
            raise ReentrantCall("close() must not be called from on_wake or our actors")
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        forget(self)
        stuck = 0
        steps: list[Callable[[], int | None]] = [
            partial(self.rewakes.close, timeout), partial(self.hosting.stop, timeout),
            partial(self.upstream.stop, timeout),
            self.release_leases, partial(self.cursors.stop_all, timeout),
            partial(self.sessions.stop_all, timeout)]
        steps += [partial(self._stop_ref, ref, timeout)
                  for ref in (self.late_ref, self.waker, self.persistence) if ref is not None]
        steps += [partial(self.dispatcher.close, timeout), self.reads.close,
                  self.presence.release]
        for step in steps:
            try:
                stuck += step() or 0
            except Exception:
                logger.exception("a step of close() failed; continuing")
        if stuck:
            logger.error("%d gateway actors were still running after close()", stuck)

    def release_leases(self) -> None:
        """Drop this gateway's scan and hosting leases now (best effort; logged on failure).

        Others take over this process's watchers and links at once, not after
        ``lease_ms``. Calling thread; blocks on one write (at most 2 s).
        """
        if self.fatal.is_set() or not self.persistence.is_alive():
            return
        try:
            submit(self.persistence, ReleaseLeases(host_id=self.host_id),
                   timeout=min(self.timeout, 2.0))
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

    # --- request paths --------------------------------------------------------

    def guard(self) -> None:
        """Refuse a public call that must not run now (calling thread; non-blocking).

        Closes the gateway first when its database or its writer became unusable.

        Raises:
            ReentrantCall: called from ``on_wake`` or one of our actors.
            GatewayClosed: the gateway is closed.
        """
        if on_our_thread():
            raise ReentrantCall("gateway methods must not be called from on_wake or our actors")
        if not self._closed and (self.fatal.is_set() or not self.persistence.is_alive()):
            logger.error("closing the gateway: its database or its writer is unusable")
            self.close()
        if self._closed:
            raise GatewayClosed("the gateway is closed")

    def note_read_fault(self, exc: BaseException, what: str) -> None:
        """Log a failed read (one WARNING per episode); corruption makes the gateway fatal.

        Args:
            exc: what the read raised.
            what: the public method that read (for the log).

        Any thread; non-blocking.
        """
        fatal = self.backend.is_fatal
        if fatal(exc) or (exc.__cause__ is not None and fatal(exc.__cause__)):
            logger.error("a read found the signal-log database corrupt: %s", exc)
            self.fatal.set()
        level = logging.DEBUG if self._read_fault else logging.WARNING
        self._read_fault = True
        logger.log(level, "%s read failed (reads degrade until this clears): %s", what, exc)

    def note_read_ok(self) -> None:
        """Note a successful read; ends a read-fault episode (any thread; non-blocking)."""
        if self._read_fault:
            self._read_fault = False
            logger.warning("signal-log reads recovered")

    def has_session_state(self, key: tuple[str, str]) -> bool:
        """Whether ``(session_key, agent_id)`` has a session actor or handed-off state here."""
        return self.sessions.peek(key) is not None or self.handoff.has(key)

    def _start_session(self, key: tuple[str, str]) -> pykka.ActorRef[Any]:
        return SessionActor.start(
            key[0], key[1], persistence=self.persistence, reads=self.reads,
            queue_limit=self.config.queue_limit,
            timeout=self.timeout, handoff=self.handoff, late=self.late,
            dispatcher=self.dispatcher)

    def _start_cursor(self, key: tuple[str, str, str]) -> pykka.ActorRef[Any]:
        return CursorActor.start(
            key[0], (key[1], key[2]), persistence=self.persistence, timeout=self.timeout,
            dispatcher=self.dispatcher)

    def ask_session(self, key: tuple[str, str], message: object) -> Any:
        """Ask the session actor of ``(session_key, agent_id)``; see :meth:`ask`."""
        return self.ask(self.sessions, key, message)

    def ask_cursor(self, key: tuple[str, str, str], message: object) -> Any:
        """Ask the cursor actor of ``(watcher, target, agent)``; see :meth:`ask`."""
        return self.ask(self.cursors, key, message)

    def ask(self, pool: ActorPool[Any], key: Any, message: object) -> Any:
        """Ask ``pool``'s actor for ``key`` (started on demand; restarted once if it died).

        Returns:
            The actor's answer.

        Raises:
            GatewayClosed: the gateway was closed during the call.
            GatewayUnavailable: no answer within twice ``ask_timeout_s``, or
                the actor failed.
            SessionStateError, StorageError: as the actor raised them.

        Calling thread; blocks on the actor.
        """
        # Actor asks wait on inner requests of up to `timeout`, so allow two.
        for _attempt in (1, 2):
            try:
                return pool.get(key).ask(message, timeout=2 * self.timeout)
            except pykka.ActorDeadError:
                if self._closed:
                    raise GatewayClosed("the gateway was closed during the call") from None
            except pykka.Timeout:
                raise GatewayUnavailable(
                    f"no answer within {2 * self.timeout:.1f}s ({type(message).__name__})"
                ) from None
            except (SessionStateError, StorageError):
                raise
            except Exception as exc:  # a bug in an actor: logged there at ERROR
                raise GatewayUnavailable(
                    f"{type(message).__name__} failed: {type(exc).__name__}") from exc
        raise GatewayUnavailable(f"the actor stopped twice ({type(message).__name__})")

    @staticmethod
    def best_effort(call: Callable[[], Any], what: str) -> Any:
        """``call()``, or ``None`` when it fails with a storage or actor fault (logged).

        Args:
            call: the request.
            what: what it does (for the log).

        Calling thread; blocks as ``call`` does. Other exceptions propagate.
        """
        try:
            return call()
        except StorageError as exc:
            # The persistence actor logs each storage-fault episode once.
            logger.debug("%s failed: %s", what, exc)
            return None
        except _ACTOR_FAILURES as exc:
            logger.warning("%s failed: %s: %s", what, type(exc).__name__, exc)
            return None

    def write(self, command: Command) -> Any:
        """Submit ``command`` to the persistence actor and return its answer.

        Raises:
            StorageError, GatewayUnavailable: as :func:`persistence.submit`.

        Calling thread; blocks until the write committed (``ask_timeout_s`` at most).
        """
        return submit(self.persistence, command, timeout=self.timeout)

    def record(self, command: RecordEvent) -> SessionStateEvent | None:
        """Record one event and run the wakes of the notices it opened.

        Returns:
            The event, or ``None`` on a storage fault (logged).

        Calling thread; blocks until committed and published.
        """
        outcome = self.best_effort(
            lambda: submit(self.persistence, command, timeout=self.timeout,
                           on_late=self.late),
            f"recording {command.kind}")
        if not isinstance(outcome, RecordOutcome):
            return None
        self.publish(outcome.notices)
        return outcome.event

    def publish(self, notices: Iterable[NoticeDescriptor]) -> None:
        """Run the wakes of committed notices that this process runs (calling thread).

        The notices themselves need no publishing: they are the durable open
        cursors, read by every process's session actors.
        """
        for descriptor in notices:
            if should_wake(descriptor):
                self.wake(descriptor.watcher_key)

    def owes_wake(self, watcher_key: str) -> bool:
        """Whether ``watcher_key`` has an open notice that wakes (a read; any thread)."""
        if self._closed or is_subagent_key(watcher_key):
            return False
        with self.reads.connection(self.timeout) as conn:
            return has_waking_notice(conn, watcher_key)

    def wake(self, watcher_key: str) -> None:
        """Call ``on_wake(watcher_key)`` through the waker actor (a failure is logged).

        Calling thread; blocks while ``on_wake`` runs.
        """
        if self.waker is None:
            return
        try:
            self.waker.ask(Wake(watcher_key=watcher_key), timeout=2 * self.timeout)
        except Exception as exc:  # the notice stays open; the watcher sees it next turn
            logger.warning("waking %s failed: %s: %s", watcher_key, type(exc).__name__, exc)
