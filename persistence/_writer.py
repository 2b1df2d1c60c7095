"""The persistence actor: the only writer, with group commit.

What lives here: :class:`PersistenceActor` (it batches the write requests
of its inbox into one write transaction, one savepoint per command when one
fails, and runs the throttled prunes) and :class:`Ping`. Which transaction
function a command runs is :mod:`persistence._dispatch`; the logging of
fault episodes :mod:`persistence._episodes`; sending commands and waiting
for their commits :mod:`persistence._submit`.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from persistence import _prune
from persistence._backend import Backend, write_transaction
from persistence._dispatch import apply_command
from persistence._episodes import FaultEpisodes, fatal_hint
from persistence._messages import Acknowledge, Command, Prune, RecordEvent, WriteRequest
from persistence.errors import StorageError, StorageUnavailable
from persistence.lazylog import quiet_package
from persistence.runtime import Dispatcher, InlineActor, Mailbox

__all__ = ["BATCH_LIMIT", "PersistenceActor", "Ping", "after_acknowledgement", "is_epoch_ms"]

logger = logging.getLogger(__name__)
quiet_package("persistence")  # direct imports of the engine get the NullHandler too

BATCH_LIMIT = 512
"""Most write commands applied in one transaction (bounds commit latency)."""

_AFTER_ACK: dict[str, Callable[[], None]] = {}


def after_acknowledgement(watcher_key: str, then: Callable[[], None] | None) -> None:
    """Call ``then`` in the writer thread the moment an acknowledgement of ``watcher_key``'s
    notices commits, before the drain that asked for it is answered (``None``: forget it).

    For a short-lived process whose output counts only if it exits 0 (``ssa hook``,
    issue 34 item 3): it ends the process there, so nothing runs between the
    acknowledgement and the exit, where a kill would lose the printed notices. Any
    thread; never blocks.
    """
    if then is None:
        _AFTER_ACK.pop(watcher_key, None)
    else:
        _AFTER_ACK[watcher_key] = then


def _after_commit(commands: list[Command]) -> None:
    """Run the :func:`after_acknowledgement` callbacks of the committed acknowledgements."""
    if not _AFTER_ACK:
        return
    for command in commands:
        if isinstance(command, Acknowledge):
            then = _AFTER_ACK.get(command.watcher_key)
            if then is not None:
                then()

_MAX_CLOCK_MS = 2**53
"""Clock readings at or above this are not plausible epoch milliseconds."""


def is_epoch_ms(value: object) -> bool:
    """Whether an injected clock's answer is usable epoch milliseconds (pure)."""
    return type(value) is int and 0 <= value < _MAX_CLOCK_MS

PRUNE_INTERVAL_MS = 60 * 60 * 1000
"""Producer-triggered prunes run at most this often, in ms (anchor §2.5)."""

PRUNE_CHUNKS_PER_PASS = 8
"""Most prune transactions after one producer batch; the rest waits for the next batch."""


def _joins_batch(message: object) -> bool:
    """Whether a told message may join the group commit (a prune runs on its own)."""
    return isinstance(message, WriteRequest) and not isinstance(message.command, Prune)


class Ping:
    """Ask this to learn that ``on_start`` finished (answers ``True``)."""


class PersistenceActor(InlineActor):
    """Owns this process's only write connection and serializes its writes.

    Group commit (architecture notes): each :class:`WriteRequest` joins the
    pending batch; when the inbox holds nothing more (or the batch reached
    :data:`BATCH_LIMIT`, or another kind of message is next) the batch is
    applied in one write transaction (``Backend.begin_write``: SQLite's
    ``BEGIN IMMEDIATE``, PostgreSQL's advisory write lock), one savepoint per command
    when there are several (a failing command rolls back alone and its
    caller gets the error), committed once, and each reply resolved. No
    message is told to self.

    It runs on the actor runtime (:mod:`persistence.runtime`), which makes
    this a leader/follower group commit: a requester that finds the actor
    idle commits its own request in its own thread (no thread hop at all);
    requests that arrive meanwhile queue up, and after each commit the rest
    of the mailbox goes to a dispatcher worker, which commits them as the
    next batch. One connection, used by one thread at a time. A leaf: it
    answers and resolves futures, it never asks another actor.

    Args:
        backend: the signal log's backend (it opens the connection).
        clock: ``() -> int`` epoch milliseconds.
        versions: shared counter giving each command its commit-order stamp.
        retention_days: event and dormant-cursor retention.
        max_rows: signal-log row cap.
        prune_interval_ms: throttle of producer-triggered prunes.
        fatal: set by this actor when the database proves unusable.
        dispatcher: the worker pool that takes over queued requests after a
            commit (``None``: the committing thread goes on with them).
        host_id: this process's id for hosting and scan leases (``None``:
            every wake runs here unless another process hosts the watcher).

    Storage faults (full disk, a foreign lock held past the busy timeout, a
    read-only or vanished file, a lost server connection) fail the affected commands with
    :class:`StorageError` and are logged once per episode; writing resumes
    by itself when the fault clears. A corrupt database is fatal.

    All methods run in the thread that drives the actor (one at a time).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        clock: Callable[[], int],
        versions: itertools.count[int],
        retention_days: int = 30,
        max_rows: int = 50_000,
        prune_interval_ms: int = PRUNE_INTERVAL_MS,
        fatal: threading.Event | None = None,
        dispatcher: Dispatcher | None = None,
        host_id: str | None = None,
    ) -> None:
        super().__init__(dispatcher=dispatcher)
        self._host_id = host_id
        self._backend = backend
        self._clock = clock
        self._versions = versions
        self._retention_days = retention_days
        self._max_rows = max_rows
        self._prune_interval_ms = prune_interval_ms
        self._pending: list[WriteRequest] = []
        self._last_batch = 0
        self._conn: Any = None
        self._last_prune_at: int | None = None
        self._bad_clock_logged = False
        self._faults = FaultEpisodes()
        self._prune_failing = False
        self.fatal = fatal if fatal is not None else threading.Event()
        """Set when the database proved unusable (corrupt); the gateway then closes."""

    def on_start(self) -> None:
        """Open the write connection (driving thread; the gateway migrated the schema)."""
        self._conn = self._backend.connect(writer=True)

    def on_stop(self) -> None:
        """Commit the requests already taken, then close the connection (driving thread)."""
        try:
            while self._pending and self._conn is not None:
                self._flush()
        except Exception:
            logger.exception("the last batch before stopping failed")
        if self._faults.recovering:
            self._faults.worked(self._now(), final=True)  # writes worked until the end: say so
        self._fail_all(self._pending, StorageUnavailable("the persistence actor stopped"))
        self._pending = []
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                conn.close()  # SQLite: the last connection's close checkpoints the WAL
            except Exception as exc:
                logger.warning("closing the signal-log database failed: %s", exc)

    def on_failure(self, *args: object) -> None:
        """Close the connection after an unexpected error (driving thread)."""
        self.on_stop()

    def on_receive(self, message: Any) -> Any:
        """Dispatch one inbox message (driving thread)."""
        match message:
            case WriteRequest(command=Prune(force=force)):
                self._flush()
                now = self._now()
                try:
                    result = (self._prune(now, chunks=None) if force or self._prune_due(now)
                              else (0, 0))
                except Exception as exc:
                    logger.error("a prune raised unexpectedly", exc_info=True)
                    message.reply.set_exception((StorageError, StorageError(
                        f"prune failed: {type(exc).__name__}"), None))
                else:
                    message.reply.set(result)
                return None
            case WriteRequest():
                self._pending.append(message)
                if len(self._pending) >= BATCH_LIMIT or self._nothing_queued():
                    self._flush()
                return None
            case Ping():
                self._flush()
                return True
            case _:
                self._flush()
                logger.warning("persistence actor ignored an unexpected %s", type(message).__name__)
                return None

    def _nothing_queued(self) -> bool:
        if not self.actor_inbox.empty():
            return False
        if self._last_batch < 2 or len(self._pending) >= self._last_batch:
            return True  # no sign of other producers, or all of them are already in
        # Several producers are active: let those about to submit run first, so
        # they join this batch instead of each paying a commit of its own.
        os.sched_yield()
        return self.actor_inbox.empty()

    def _flush(self) -> None:
        while len(self._pending) > BATCH_LIMIT:
            batch, self._pending = self._pending[:BATCH_LIMIT], self._pending[BATCH_LIMIT:]
            self._flush_batch(batch)
        batch, self._pending = self._pending, []
        self._flush_batch(batch)
        self.runtime_yield = True  # queued requests: the next batch, on a worker


    def _flush_batch(self, batch: list[WriteRequest]) -> None:
        if not batch:
            return
        self._last_batch = len(batch)
        if self.fatal.is_set():
            self._fail_all(batch, StorageError("the database is unusable; the gateway is closing"))
            return
        conn = self._conn
        assert conn is not None
        backend = self._backend
        problem = backend.storage_problem()
        if problem is not None:
            self._fault(batch, StorageError(problem))
            return
        now = self._now()
        changes_before = backend.write_count(conn)
        try:
            results = self._apply_batch(conn, batch, now)
        except BaseException as exc:
            if not backend.is_driver_error(exc):
                # Ctrl-C in the committing thread, or a bug: nothing half-done stays.
                self._rollback(conn)
                self._fail_all(batch, StorageError(f"write transaction interrupted: "
                                                   f"{type(exc).__name__}"))
                raise
            self._rollback(conn)
            if backend.is_fatal(exc):
                self._go_fatal(exc)
            self._fault(batch, StorageError(f"write transaction failed: {exc}"), exc)
            return
        faults = [e for _, _, e in results if e is not None and backend.is_fault(e)]
        if faults:
            self._faults.failed(faults[0], len(faults))
        elif backend.write_count(conn) > changes_before:
            # Only a batch that really wrote proves the fault cleared.
            self._faults.worked(self._now())
        for request, value, error in results:
            if error is None:
                request.reply.set(value)
            else:
                if not backend.is_fault(error):
                    logger.warning("%s failed: %s", type(request.command).__name__, error)
                wrapped = StorageError(f"{type(request.command).__name__} failed: {error}")
                wrapped.__cause__ = error
                request.reply.set_exception((StorageError, wrapped, None))
        if any(isinstance(r.command, RecordEvent) for r in batch):
            self._maybe_prune(now)

    def _apply_batch(self, conn: Any, batch: list[WriteRequest], now: int
                     ) -> list[tuple[WriteRequest, Any, BaseException | None]]:
        """One transaction, one savepoint per command; a failing command rolls back alone."""
        # Optimistic first: no savepoints (two statements per command saved);
        # if any command fails, roll back and redo the batch with savepoints.
        self._backend.begin_write(conn)
        # Waiting for the write lock (another process held it) let more requests
        # arrive: they join this commit instead of paying one of their own.
        self._top_up(batch)
        values: list[Any] = []
        try:
            for request in batch:
                values.append(self._apply(conn, request.command, now))
        except Exception as exc:
            conn.execute("ROLLBACK")
            if len(batch) == 1:
                self._note_command_error(batch[0], exc)
                return [(batch[0], None, exc)]
            return self._apply_isolated(conn, batch, now)
        conn.execute("COMMIT")
        _after_commit([request.command for request in batch])
        return [(request, value, None) for request, value in zip(batch, values, strict=True)]

    def _top_up(self, batch: list[WriteRequest]) -> None:
        inbox = self.actor_inbox
        room = BATCH_LIMIT - len(batch)
        if room > 0 and isinstance(inbox, Mailbox):
            batch.extend(inbox.take_told(_joins_batch, room))
            self._last_batch = len(batch)

    def _apply_isolated(self, conn: Any, batch: list[WriteRequest], now: int
                        ) -> list[tuple[WriteRequest, Any, BaseException | None]]:
        results: list[tuple[WriteRequest, Any, BaseException | None]] = []
        self._backend.begin_write(conn)
        for request in batch:
            conn.execute("SAVEPOINT command")
            try:
                value = self._apply(conn, request.command, now)
            except Exception as exc:  # one command fails alone, never the actor
                conn.execute("ROLLBACK TO command")
                conn.execute("RELEASE command")
                self._note_command_error(request, exc)
                results.append((request, None, exc))
            else:
                conn.execute("RELEASE command")
                results.append((request, value, None))
        conn.execute("COMMIT")
        _after_commit([request.command for request, _, error in results if error is None])
        return results

    def _note_command_error(self, request: WriteRequest, exc: Exception) -> None:
        if self._backend.is_fatal(exc):
            self._go_fatal(exc)
        elif not (self._backend.is_driver_error(exc) or isinstance(exc, ValueError)):
            logger.error("a %s command raised unexpectedly",
                         type(request.command).__name__, exc_info=True)

    def _fault(self, batch: list[WriteRequest], error: StorageError,
               cause: BaseException | None = None) -> None:
        self._faults.failed(cause or error, len(batch))
        self._fail_all(batch, error, cause)

    def _go_fatal(self, error: BaseException) -> None:
        if not self.fatal.is_set():
            logger.error("the signal-log database %s is unusable (%s: %s); nothing more is "
                         "written into it and the gateway shuts down. %s",
                         self._backend.location, type(error).__name__, error,
                         fatal_hint(self._backend.name, self._backend.location))
            self.fatal.set()

    def _apply(self, conn: Any, command: Command, now: int) -> Any:
        return apply_command(conn, command, now, next(self._versions), host=self._host_id)

    def _prune_due(self, now: int) -> bool:
        last = self._last_prune_at
        # A clock that went backwards (after a forward jump) must not stop pruning.
        return last is None or now < last or now - last >= self._prune_interval_ms

    def _now(self) -> int:
        now = self._clock()
        if not is_epoch_ms(now):
            if not self._bad_clock_logged:
                self._bad_clock_logged = True
                logger.error("the injected clock returned %r, not epoch milliseconds; "
                             "using the system clock", type(now).__name__)
            return time.time_ns() // 1_000_000
        return now

    def _maybe_prune(self, now: int) -> None:
        if self._prune_due(now):
            self._prune(now, chunks=PRUNE_CHUNKS_PER_PASS)

    def _prune(self, now: int, *, chunks: int | None) -> tuple[int, int]:
        """Prune in transactions of at most ``PRUNE_BATCH`` rows each, releasing the lock between.

        ``chunks``: the most transactions this pass (``None``: until done). A
        pass that stops early leaves pruning due, so the next batch goes on.
        """
        conn = self._conn
        assert conn is not None
        total = [0, 0]
        if self.fatal.is_set() or self._backend.storage_problem() is not None:
            return (0, 0)
        done = 0
        while chunks is None or done < chunks:
            done += 1
            try:
                with write_transaction(self._backend, conn):
                    events, cursors = _prune.prune(conn, now, retention_days=self._retention_days,
                                                   max_rows=self._max_rows)
            except Exception as exc:
                if not self._backend.is_driver_error(exc):
                    raise
                if self._backend.is_fatal(exc):
                    self._go_fatal(exc)  # never go on writing into a corrupt file
                elif not self._prune_failing:
                    logger.warning("signal-log pruning is failing (%s: %s); retried with "
                                   "later writes, logged again when it works",
                                   type(exc).__name__, exc)
                self._prune_failing = True
                break
            total[0] += events
            total[1] += cursors
            if self._prune_failing:
                self._prune_failing = False
                logger.warning("signal-log pruning works again")
            if events < _prune.PRUNE_BATCH and cursors < _prune.PRUNE_BATCH:
                self._last_prune_at = now
                break
        logger.debug("pruned %d events and %d dormant cursors", *total)
        return total[0], total[1]

    @staticmethod
    def _rollback(conn: Any) -> None:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except Exception:
                logger.debug("rollback after a failed write also failed", exc_info=True)

    @staticmethod
    def _fail_all(
        batch: list[WriteRequest], error: StorageError, cause: BaseException | None = None
    ) -> None:
        if cause is not None:
            error.__cause__ = cause
        for request in batch:
            request.reply.set_exception((StorageError, error, None))
