"""The persistence actor: the only writer, with group commit."""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

import apsw
import pykka

from persistence import _leases, _prune, _upstream, _writes
from persistence._messages import (
    Acknowledge,
    ClaimLink,
    ClaimWakes,
    Command,
    CommitScan,
    DeleteSession,
    HostWatchers,
    NoteOwnText,
    Prune,
    RecordEvent,
    RegisterWatch,
    ReleaseLeases,
    ResetWatcher,
    UpsertLink,
    UpsertSession,
    WriteRequest,
)
from persistence._reply import PENDING, Reply
from persistence._runtime import Dispatcher, InlineActor, Mailbox, scheduling
from persistence._schema import open_connection
from persistence.errors import StorageError, StorageUnavailable

__all__ = ["BATCH_LIMIT", "PersistenceActor", "collect", "send_many", "submit", "submit_many"]

logger = logging.getLogger(__name__)

BATCH_LIMIT = 512
"""Most write commands applied in one transaction (bounds commit latency)."""

FAULT_ERRORS: tuple[type[apsw.Error], ...] = (
    apsw.FullError, apsw.IOError, apsw.ReadOnlyError, apsw.BusyError, apsw.LockedError,
    apsw.CantOpenError, apsw.CorruptError, apsw.NotADBError,
)
"""SQLite errors that are storage faults, not programming errors."""

FATAL_ERRORS: tuple[type[apsw.Error], ...] = (apsw.CorruptError, apsw.NotADBError)
"""SQLite errors after which the database cannot be trusted: the gateway shuts down."""

FLAP_QUIET_S = 60.0
"""A fault that returns this soon after recovering is not logged as a new episode."""

_MAX_CLOCK_MS = 2**53


def is_epoch_ms(value: object) -> bool:
    """Whether an injected clock's answer is usable epoch milliseconds (pure)."""
    return type(value) is int and 0 <= value < _MAX_CLOCK_MS
"""Clock readings at or above this are not plausible epoch milliseconds."""

PRUNE_INTERVAL_MS = 60 * 60 * 1000
"""Producer-triggered prunes run at most this often, in ms (anchor §2.5)."""


class Ping:
    """Ask this to learn that ``on_start`` finished (answers ``True``)."""


class PersistenceActor(InlineActor):
    """Owns the only APSW write connection and serializes every write.

    Group commit (architecture notes): each :class:`WriteRequest` joins the
    pending batch; when the inbox holds nothing more (or the batch reached
    :data:`BATCH_LIMIT`, or another kind of message is next) the batch is
    applied in one ``BEGIN IMMEDIATE`` transaction, one savepoint per command
    when there are several (a failing command rolls back alone and its
    caller gets the error), committed once, and each reply resolved. No
    message is told to self.

    It runs on the actor runtime (:mod:`persistence._runtime`), which makes
    this a leader/follower group commit: a requester that finds the actor
    idle commits its own request in its own thread (no thread hop at all);
    requests that arrive meanwhile queue up, and after each commit the rest
    of the mailbox goes to a dispatcher worker, which commits them as the
    next batch. One connection, used by one thread at a time. A leaf: it
    answers and resolves futures, it never asks another actor.

    Args:
        path: database file.
        clock: ``() -> int`` epoch milliseconds.
        versions: shared counter giving each command its commit-order stamp.
        synchronous: SQLite durability, ``"FULL"`` or ``"NORMAL"``.
        busy_timeout_ms: wait for a foreign lock, in ms.
        retention_days: event and dormant-cursor retention.
        max_rows: signal-log row cap.
        prune_interval_ms: throttle of producer-triggered prunes.
        vfs: SQLite VFS name (``None``: the default), e.g. for fault injection.
        fatal: set by this actor when the database proves unusable.
        dispatcher: the worker pool that takes over queued requests after a
            commit (``None``: the committing thread goes on with them).
        host_id: this process's id for hosting and scan leases (``None``:
            every wake runs here unless another process hosts the watcher).

    Storage faults (full disk, a foreign lock held past the busy timeout, a
    read-only or vanished file) fail the affected commands with
    :class:`StorageError` and are logged once per episode; writing resumes
    by itself when the fault clears. A corrupt database is fatal.

    All methods run in the thread that drives the actor (one at a time).
    """

    def __init__(
        self,
        path: str,
        *,
        clock: Callable[[], int],
        versions: itertools.count[int],
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        busy_timeout_ms: int = 5000,
        retention_days: int = 30,
        max_rows: int = 50_000,
        prune_interval_ms: int = PRUNE_INTERVAL_MS,
        vfs: str | None = None,
        fatal: threading.Event | None = None,
        dispatcher: Dispatcher | None = None,
        host_id: str | None = None,
    ) -> None:
        super().__init__(dispatcher=dispatcher)
        self._host_id = host_id
        self._path = path
        self._clock = clock
        self._versions = versions
        self._synchronous = synchronous
        self._busy_timeout_ms = busy_timeout_ms
        self._retention_days = retention_days
        self._max_rows = max_rows
        self._prune_interval_ms = prune_interval_ms
        self._pending: list[WriteRequest] = []
        self._last_batch = 0
        self._conn: apsw.Connection | None = None
        self._last_prune_at: int | None = None
        self._bad_clock_logged = False
        self._vfs = vfs
        self._identity: tuple[int, int] = (0, 0)
        self._in_fault = False
        self._failed_commands = 0
        self._flaps = 0
        self._recovered_at = -FLAP_QUIET_S
        self.fatal = fatal if fatal is not None else threading.Event()
        """Set when the database proved unusable (corrupt); the gateway then closes."""

    def on_start(self) -> None:
        """Open the write connection (driving thread; the gateway migrated the schema)."""
        self._conn = open_connection(
            self._path, synchronous=self._synchronous, busy_timeout_ms=self._busy_timeout_ms,
            writer=True, vfs=self._vfs,
        )
        st = os.stat(self._path)
        self._identity = (st.st_dev, st.st_ino)

    def on_stop(self) -> None:
        """Commit the requests already taken, then close the connection (driving thread)."""
        try:
            while self._pending and self._conn is not None:
                self._flush()
        except Exception:
            logger.exception("the last batch before stopping failed")
        self._fail_all(self._pending, StorageUnavailable("the persistence actor stopped"))
        self._pending = []
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                conn.close()  # the last connection's close checkpoints the WAL
            except apsw.Error as exc:
                logger.warning("closing the signal-log database failed: %s", exc)

    def on_failure(self, *args: object) -> None:
        """Close the connection after an unexpected error (driving thread)."""
        self.on_stop()

    def on_receive(self, message: Any) -> Any:
        """Dispatch one inbox message (driving thread)."""
        match message:
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
        problem = self._file_problem()
        if problem is not None:
            self._fault(batch, StorageError(problem))
            return
        now = self._now()
        changes_before = conn.total_changes()
        try:
            results = self._apply_batch(conn, batch, now)
        except BaseException as exc:
            if not isinstance(exc, apsw.Error):
                # Ctrl-C in the committing thread, or a bug: nothing half-done stays.
                self._rollback(conn)
                self._fail_all(batch, StorageError(f"write transaction interrupted: "
                                                   f"{type(exc).__name__}"))
                raise
            self._rollback(conn)
            if isinstance(exc, FATAL_ERRORS):
                self._go_fatal(exc)
            self._fault(batch, StorageError(f"write transaction failed: {exc}"), exc)
            return
        faults = [e for _, _, e in results if isinstance(e, FAULT_ERRORS)]
        if faults:
            self._note_fault(faults[0], len(faults))
        elif conn.total_changes() > changes_before:
            self._recovered()  # only a batch that really wrote proves the fault cleared
        for request, value, error in results:
            if error is None:
                request.reply.set(value)
            else:
                if not isinstance(error, FAULT_ERRORS):
                    logger.warning("%s failed: %s", type(request.command).__name__, error)
                wrapped = StorageError(f"{type(request.command).__name__} failed: {error}")
                wrapped.__cause__ = error
                request.reply.set_exception((StorageError, wrapped, None))
        if any(isinstance(r.command, RecordEvent) for r in batch):
            self._maybe_prune(now)

    def _apply_batch(self, conn: apsw.Connection, batch: list[WriteRequest], now: int
                     ) -> list[tuple[WriteRequest, Any, BaseException | None]]:
        """One transaction, one savepoint per command; a failing command rolls back alone."""
        # Optimistic first: no savepoints (two statements per command saved);
        # if any command fails, roll back and redo the batch with savepoints.
        conn.execute("BEGIN IMMEDIATE")
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
        return [(request, value, None) for request, value in zip(batch, values, strict=True)]

    def _top_up(self, batch: list[WriteRequest]) -> None:
        inbox = self.actor_inbox
        room = BATCH_LIMIT - len(batch)
        if room > 0 and isinstance(inbox, Mailbox):
            batch.extend(inbox.take_told(lambda m: isinstance(m, WriteRequest), room))
            self._last_batch = len(batch)

    def _apply_isolated(self, conn: apsw.Connection, batch: list[WriteRequest], now: int
                        ) -> list[tuple[WriteRequest, Any, BaseException | None]]:
        results: list[tuple[WriteRequest, Any, BaseException | None]] = []
        conn.execute("BEGIN IMMEDIATE")
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
        return results

    def _note_command_error(self, request: WriteRequest, exc: Exception) -> None:
        if isinstance(exc, FATAL_ERRORS):
            self._go_fatal(exc)
        elif not isinstance(exc, apsw.Error | ValueError):
            logger.error("a %s command raised unexpectedly",
                         type(request.command).__name__, exc_info=True)

    def _file_problem(self) -> str | None:
        # SQLite keeps writing to an unlinked file; refuse instead, so nothing
        # is "recorded" into a database that is gone (issue 5, storage faults).
        try:
            st = os.stat(self._path)
        except OSError:
            return "the database file is missing (was its directory removed or renamed?)"
        if (st.st_dev, st.st_ino) != self._identity:
            return "the database file was replaced by another file"
        return None

    def _fault(self, batch: list[WriteRequest], error: StorageError,
               cause: BaseException | None = None) -> None:
        self._note_fault(cause or error, len(batch))
        self._fail_all(batch, error, cause)

    def _note_fault(self, error: BaseException, commands: int) -> None:
        # One WARNING per fault episode, not one per failed write (no log flood);
        # an episode that starts within a minute of the last one ended is the same
        # flapping fault and stays quiet (counted for the recovery line).
        self._failed_commands += commands
        if self._in_fault:
            return
        self._in_fault = True
        if time.monotonic() - self._recovered_at < FLAP_QUIET_S:
            self._flaps += 1
            logger.debug("signal-log writes failing again: %s", error)
            return
        logger.warning("signal-log writes are failing (%s: %s); producers return None "
                       "until this clears", type(error).__name__, error)

    def _recovered(self) -> None:
        if self._in_fault:
            self._in_fault = False
            self._recovered_at = time.monotonic()
            if self._flaps and self._flaps % 100:
                return  # a flapping fault: one recovery line per 100 flaps
            logger.warning("signal-log writes recovered after %d failed commands",
                           self._failed_commands)
            self._failed_commands = 0

    def _go_fatal(self, error: BaseException) -> None:
        if not self.fatal.is_set():
            logger.error("the signal-log database is unusable (%s: %s); the gateway shuts "
                         "down", type(error).__name__, error)
            self.fatal.set()

    def _apply(self, conn: apsw.Connection, command: Command, now: int) -> Any:
        version = next(self._versions)
        match command:
            case RecordEvent():
                return _writes.record_event(conn, command, now, version, host=self._host_id)
            case RegisterWatch():
                return _writes.register_watch(conn, command, now, version)
            case Acknowledge():
                return _writes.acknowledge(conn, command, now, version, host=self._host_id)
            case UpsertSession():
                return _writes.upsert_session(conn, command, now)
            case ResetWatcher():
                _writes.reset_watcher(conn, command, now)
                return version
            case DeleteSession():
                return _writes.delete_session(conn, command, version)
            case UpsertLink():
                return _upstream.upsert_link(conn, command, now, version, host=self._host_id)
            case CommitScan():
                return _upstream.commit_scan(conn, command, now, version, host=self._host_id)
            case HostWatchers(host_id=host_id, watchers=watchers, expires_at=expires_at,
                              release=release):
                return _leases.set_hosts(conn, host_id, watchers, expires_at, release=release)
            case ClaimWakes(host_id=host_id, watchers=watchers, expires_at=expires_at):
                return _leases.claim_wakes(conn, host_id, now, expires_at, watchers)
            case ClaimLink(session_key=key, agent_id=agent, owner=owner,
                           expires_at=expires_at):
                return _leases.claim_link(conn, key, agent, owner, now, expires_at)
            case ReleaseLeases(host_id=host_id):
                return _leases.release_leases(conn, host_id)
            case NoteOwnText():
                return _upstream.note_own_text(conn, command)
            case Prune(force=force):
                if force or self._prune_due(now):
                    self._last_prune_at = now
                    return _prune.prune(conn, now, retention_days=self._retention_days,
                                        max_rows=self._max_rows)
                return (0, 0)
        raise ValueError(f"unknown command {type(command).__name__}")

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
        if not self._prune_due(now):
            return
        conn = self._conn
        assert conn is not None
        self._last_prune_at = now
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                deleted = _prune.prune(conn, now, retention_days=self._retention_days,
                                       max_rows=self._max_rows)
            except BaseException:
                self._rollback(conn)
                raise
            conn.execute("COMMIT")
        except apsw.Error as exc:
            self._rollback(conn)
            logger.warning("signal-log prune failed: %s", exc)
        else:
            logger.debug("pruned %d events and %d dormant cursors", *deleted)

    @staticmethod
    def _rollback(conn: apsw.Connection) -> None:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except apsw.Error:
                logger.debug("rollback after a failed write also failed", exc_info=True)

    @staticmethod
    def _fail_all(
        batch: list[WriteRequest], error: StorageError, cause: BaseException | None = None
    ) -> None:
        if cause is not None:
            error.__cause__ = cause
        for request in batch:
            request.reply.set_exception((StorageError, error, None))


def submit_many(ref: pykka.ActorRef[Any], commands: list[Command], *, timeout: float,
                on_late: Callable[[Any], None] | None = None) -> list[Any]:
    """Send several commands at once so they share group commits; wait for all of them.

    The commands are queued together (on the dispatcher, not run one by one
    in this thread), so up to :data:`BATCH_LIMIT` of them commit in one
    transaction, each in its own savepoint when one fails.

    Args:
        ref: the persistence actor.
        commands: the write commands, applied in this order.
        timeout: seconds to wait for all of them.
        on_late: as for :func:`submit`, for each command still pending at the timeout.

    Returns:
        One entry per command, in order: its result, or the
        :class:`StorageError` it failed with (a timed-out command gets a
        :class:`StorageUnavailable`; it may still be applied later).

    Caller's thread; blocks until all committed or ``timeout``.

    Raises:
        StorageUnavailable: the actor is not running.
    """
    return collect(send_many(ref, commands), timeout=timeout, on_late=on_late)


def send_many(ref: pykka.ActorRef[Any], commands: list[Command]) -> list[Reply]:
    """Queue ``commands`` for one group commit without waiting (see :func:`collect`).

    Caller's thread; non-blocking (the commit runs on a dispatcher worker).

    Raises:
        StorageUnavailable: the actor is not running.
    """
    replies = [Reply() for _ in commands]
    try:
        with scheduling():
            for command, reply in zip(commands, replies, strict=True):
                ref.tell(WriteRequest(command=command, reply=reply))
    except pykka.ActorDeadError as exc:
        raise StorageUnavailable("the persistence actor is not running") from exc
    return replies


def collect(replies: list[Reply], *, timeout: float,
            on_late: Callable[[Any], None] | None = None) -> list[Any]:
    """Wait for the replies of :func:`send_many`; results or errors as :func:`submit_many`.

    Caller's thread; blocks up to ``timeout`` seconds in all.
    """
    deadline = time.monotonic() + timeout
    results: list[Any] = []
    for reply in replies:
        try:
            results.append(reply.get(timeout=max(0.0, deadline - time.monotonic())))
        except StorageError as exc:
            results.append(exc)
        except pykka.Timeout:
            value = reply.abandon(on_late) if on_late is not None else PENDING
            results.append(value if value is not PENDING else StorageUnavailable(
                f"no answer from the persistence actor in {timeout}s"))
    return results


def submit(ref: pykka.ActorRef[Any], command: Command, *, timeout: float,
           on_late: Callable[[Any], None] | None = None) -> Any:
    """Send ``command`` to the persistence actor and wait for its committed result.

    Runs in the caller's thread and blocks until the command's transaction
    committed (or failed), at most ``timeout`` seconds.

    Args:
        ref: the persistence actor.
        command: the write command.
        timeout: seconds to wait.
        on_late: called (in the persistence actor's thread, so it must not
            block) with the result if the command commits after the caller
            gave up; e.g. to publish its notices anyway.

    Raises:
        StorageError: the command or its transaction failed.
        StorageUnavailable: the actor is not running or did not answer in time
            (a timed-out command may still be applied later: see ``on_late``).
    """
    reply = Reply()
    try:
        ref.tell(WriteRequest(command=command, reply=reply))
    except pykka.ActorDeadError as exc:
        raise StorageUnavailable("the persistence actor is not running") from exc
    try:
        return reply.get(timeout=timeout)
    except pykka.Timeout as exc:
        if on_late is not None:
            value = reply.abandon(on_late)
            if value is not PENDING:
                return value  # it arrived just as we gave up
        raise StorageUnavailable(f"no answer from the persistence actor in {timeout}s") from exc
