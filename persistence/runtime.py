"""The actor runtime: Pykka actors without a thread each.

Pykka's ``ThreadingActor`` gives every actor an OS thread, so a gateway with
10,000 watcher/target pairs paid for thousands of threads and every hand-off
between two actors cost a cross-CPU wake-up (about 30 µs here). An actor is
only a mailbox plus state handled one message at a time; this module keeps
exactly that and drops the thread, through Pykka's documented extension
points (``_create_actor_inbox``, ``_create_future``, ``_start_actor_loop``):

* **Calling-thread dispatch.** A message put into an *idle* actor's mailbox
  is handled at once by the thread that put it, before ``tell``/``ask``
  returns. A message put while another thread is driving the actor waits in
  the mailbox; the driving thread handles it before it lets go. So an actor
  still handles one message at a time, in FIFO order per sender, and a chain
  ``cursor -> session -> waker`` costs function calls, not thread hops.
* **Dispatcher.** Threads that must not run actor code (the persistence
  actor's writer thread, the file-notification thread, a scan fan-out that
  wants concurrency) hand the mailbox to a :class:`Dispatcher`, a small
  bounded pool of worker threads started on demand. A thread that puts a
  message into a mailbox that is *scheduled* but not yet picked up drives it
  itself, so a waiter never waits for a free worker: with an acyclic ask
  graph no wait can deadlock, whatever the pool size.

Waking an idle actor costs a lock and a deque append; starting one costs no
thread. The ask graph must stay acyclic (an actor that asks, directly or
through others, an actor already running further up the same thread's stack
would wait for itself).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pykka
from pykka import ActorDeadError, messages
from pykka._envelope import Envelope

__all__ = [
    "Dispatcher",
    "InlineActor",
    "InlineFuture",
    "Mailbox",
    "mark_thread",
    "on_our_thread",
    "scheduling",
]

logger = logging.getLogger(__name__)

BUDGET = 64
"""Messages one thread handles in a row before it hands the rest to the dispatcher."""

_IDLE, _SCHEDULED, _RUNNING = 0, 1, 2


class _ThreadFlags(threading.local):
    """Per-thread runtime state."""

    depth = 0
    """How many actors this thread is driving right now (nested calls)."""
    ours = False
    """The thread belongs to the gateway (a worker, a scanner, a notification thread)."""
    worker = False
    """The thread is a dispatcher worker."""
    inline = True
    """Whether puts from this thread may run actor code in it."""


_flags = _ThreadFlags()


def on_our_thread() -> bool:
    """Whether the calling thread is running gateway actor code or is a gateway thread.

    Host callbacks (``on_wake``, node readers) run inside actors, so a
    gateway call from them is re-entrant and must be refused. Any thread;
    non-blocking.
    """
    return _flags.depth > 0 or _flags.ours


def mark_thread(*, inline: bool) -> None:
    """Mark the calling thread as a gateway thread.

    Args:
        inline: ``False`` for threads that must never run actor code (the
            persistence writer, a notification thread): their puts go to
            the mailbox's dispatcher.

    Call it first thing in the thread; non-blocking.
    """
    _flags.ours = True
    _flags.inline = inline


@contextlib.contextmanager
def scheduling() -> Iterator[None]:
    """Within the block, puts from this thread go to the dispatcher instead of running inline.

    Used by a fan-out that wants its messages handled concurrently on the
    dispatcher's workers (an upstream scan cycle). Any thread; non-blocking.
    """
    previous = _flags.inline
    _flags.inline = False
    try:
        yield
    finally:
        _flags.inline = previous


def _reject(envelope: Envelope[Any], actor: object) -> None:
    """Answer a message that reached a stopped actor (Pykka's teardown semantics)."""
    reply = envelope.reply_to
    if reply is None:
        return
    if isinstance(envelope.message, messages._ActorStop):
        reply.set(None)
    else:
        reply.set_exception(exc_info=(ActorDeadError, ActorDeadError(
            f"{actor} stopped before handling the message"), None))


class InlineFuture(pykka.Future[Any]):
    """A Pykka future that costs almost nothing when it is resolved before ``get``.

    With calling-thread dispatch most asks are answered before the asker
    calls ``get``; then ``get`` reads the result without taking a lock. A
    waiter on another thread blocks on a held lock that ``set`` releases
    (the cheapest cross-thread signal in CPython). Same contract as
    ``pykka.ThreadingFuture``: one ``set``/``set_exception``, any number of
    ``get``s, get hooks (used by ``ActorRef.stop``).

    Thread-safe; ``get`` blocks up to its timeout.
    """

    def __init__(self) -> None:
        super().__init__()
        self._result: tuple[Any, Any] | None = None
        self._signal = threading.Lock()
        self._signal.acquire()

    def get(self, *, timeout: float | None = None) -> Any:
        """The value, or raise the exception, waiting up to ``timeout`` s.

        Raises:
            pykka.Timeout: no result within ``timeout`` seconds.
            BaseException: the exception that was set.
        """
        if self._get_hook is not None:
            return super().get(timeout=timeout)
        result = self._result
        if result is None:
            wait = -1.0 if timeout is None else max(0.0, timeout)
            if not self._signal.acquire(timeout=wait):
                raise pykka.Timeout(f"{timeout} seconds")
            self._signal.release()  # later gets return at once
            result = self._result
            assert result is not None
        value, exc_info = result
        if exc_info is not None:
            exc_type, exc_value, exc_traceback = exc_info
            if exc_value is None:
                exc_value = exc_type()
            if exc_value.__traceback__ is not exc_traceback:
                raise exc_value.with_traceback(exc_traceback)
            raise exc_value
        return value

    def set(self, value: Any = None) -> None:
        """Resolve with ``value`` (once).

        Raises:
            queue.Full: the future was already resolved or has a get hook.
        """
        if self._result is not None or self._get_hook is not None:
            raise queue.Full
        self._result = (value, None)
        self._signal.release()

    def set_exception(self, exc_info: Any = None) -> None:
        """Resolve with an exception: ``(type, value, traceback)``, default ``sys.exc_info()``.

        Raises:
            queue.Full: the future was already resolved or has a get hook.
        """
        if exc_info is None:
            exc_info = sys.exc_info()
        if self._result is not None or self._get_hook is not None:
            raise queue.Full
        self._result = (None, exc_info)
        self._signal.release()

    def release_waiters(self) -> None:
        """Wake waiters of a future whose ``set`` was interrupted after storing its result."""
        if self._result is not None and self._signal.locked():
            with contextlib.suppress(RuntimeError):
                self._signal.release()

    def set_get_hook(self, func: Any) -> None:
        """Have ``get`` return ``func(timeout)`` (Pykka's converted futures).

        Raises:
            queue.Full: the future was already resolved.
        """
        if self._result is not None:
            raise queue.Full
        super().set_get_hook(func)


class Dispatcher:
    """A bounded pool of worker threads that drive scheduled mailboxes.

    Workers start on demand, up to ``workers``, and then stay (an idle worker
    blocks on a queue and costs no CPU). Each worker is marked as a gateway
    thread that may run actor code inline. Workers are daemon threads, so a
    program that never calls :meth:`close` does not hang the interpreter at
    exit; whoever owns the dispatcher closes it before then (the gateway
    does, at the latest from an ``atexit`` hook, :mod:`actors.engine.exit`), so
    queued work is done, not dropped.

    Args:
        name: thread-name prefix.
        workers: most worker threads (at least 1).

    Thread-safe. :meth:`submit` never blocks; :meth:`close` blocks up to its
    timeout per worker.
    """

    def __init__(self, name: str, workers: int) -> None:
        if workers < 1:
            raise ValueError("a dispatcher needs at least one worker")
        self._name = name
        self._max = workers
        self._ready: queue.SimpleQueue[Mailbox | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._closed = False

    def has_capacity(self) -> bool:
        """Whether a worker is idle or could be started (any thread; non-blocking)."""
        with self._lock:
            return not self._closed and (self._idle > 0 or len(self._threads) < self._max)

    @property
    def thread_count(self) -> int:
        """Worker threads started so far."""
        with self._lock:
            return len(self._threads)

    def submit(self, mailbox: Mailbox) -> None:
        """Have a worker drive ``mailbox`` (any thread; non-blocking).

        After :meth:`close` the mailbox is driven in the calling thread.
        """
        with self._lock:
            closed = self._closed
            if not closed:
                self._ready.put(mailbox)
                if self._idle == 0 and len(self._threads) < self._max:
                    thread = threading.Thread(  # a daemon: see the class doc
                        target=self._work, name=f"{self._name}-{len(self._threads)}",
                        daemon=True)
                    self._threads.append(thread)
                    self._idle += 1
                    thread.start()
        if closed:
            mailbox.run_scheduled()

    def _work(self) -> None:
        mark_thread(inline=True)
        _flags.worker = True
        while True:
            mailbox = self._ready.get()
            with self._lock:
                self._idle -= 1
            if mailbox is None:
                return
            try:
                mailbox.run_scheduled()
            except BaseException:  # a worker must survive whatever an actor did
                logger.exception("a dispatcher worker caught an error from an actor")
            with self._lock:
                self._idle += 1

    def close(self, timeout: float) -> int:
        """Stop the workers after the work already queued (caller's thread; blocks).

        Args:
            timeout: seconds to wait for each worker.

        Returns:
            How many workers were still running afterwards (logged at ERROR).
        """
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._ready.put(None)
        stuck = 0
        for thread in threads:
            thread.join(timeout)
            if thread.is_alive():
                stuck += 1
                logger.error("dispatcher worker %s did not stop within %.1fs",
                             thread.name, timeout)
        return stuck


class Mailbox:
    """An actor's inbox that is driven by the threads that put into it.

    Implements Pykka's ``ActorInbox`` protocol (``put``, ``get``, ``empty``).
    States: idle (nobody drives it), scheduled (handed to a dispatcher, not
    yet picked up) and running (one thread is handling its messages).

    Thread-safe. :meth:`put` blocks only while the calling thread handles
    the messages itself (it then runs actor code).
    """

    __slots__ = ("_actor", "_closed", "_dispatcher", "_lock", "_queue", "_state")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Envelope[Any]] = deque()
        self._state = _IDLE
        self._actor: InlineActor | None = None
        self._dispatcher: Dispatcher | None = None
        self._closed = False

    def bind(self, actor: InlineActor, dispatcher: Dispatcher | None) -> None:
        """Attach the owning actor and its dispatcher (``None``: always inline)."""
        self._actor = actor
        self._dispatcher = dispatcher

    def put(self, envelope: Envelope[Any], /) -> None:
        """Deliver one envelope; handle it now in this thread if the actor is idle."""
        dispatcher = self._dispatcher
        inline = _flags.inline or dispatcher is None
        with self._lock:
            if self._closed:
                closed = True
            else:
                closed = False
                self._queue.append(envelope)
                state = self._state
                if state == _RUNNING or (state == _SCHEDULED and not inline):
                    return
                self._state = _RUNNING if inline else _SCHEDULED
        if closed:
            _reject(envelope, self._actor)
        elif inline:
            self._drive()
        else:
            assert dispatcher is not None
            dispatcher.submit(self)

    def get(self) -> Envelope[Any]:
        """Remove and return the oldest envelope (Pykka's protocol; non-blocking).

        Raises:
            IndexError: the mailbox is empty.
        """
        with self._lock:
            return self._queue.popleft()

    def empty(self) -> bool:
        """Whether no envelope is waiting."""
        with self._lock:
            return not self._queue

    def take_told(self, accept: Callable[[Any], bool], limit: int) -> list[Any]:
        """Remove and return the messages at the front that were told and ``accept`` takes.

        Lets the actor that is handling a message fold the next ones into the
        same piece of work (the writer's group commit, once it holds the
        write lock). Stops at the first envelope that was asked (it needs
        its own answer) or that ``accept`` refuses, and after ``limit``.
        Thread-safe; never blocks on anything but the mailbox lock.
        """
        taken: list[Any] = []
        with self._lock:
            while self._queue and len(taken) < limit:
                head = self._queue[0]
                if head.reply_to is not None or not accept(head.message):
                    break
                taken.append(self._queue.popleft().message)
        return taken

    def run_scheduled(self) -> None:
        """Drive the mailbox if it is still scheduled (a worker's entry point; blocks)."""
        with self._lock:
            if self._state != _SCHEDULED:
                return  # another thread took it over meanwhile
            self._state = _RUNNING
        self._drive()

    def _drive(self) -> None:
        actor = self._actor
        assert actor is not None
        _flags.depth += 1
        handled = 0
        requeue = False
        envelope: Envelope[Any] | None = None
        try:
            while True:
                envelope = None
                with self._lock:
                    if not self._queue:
                        self._state = _IDLE
                        return
                    if requeue or (handled >= BUDGET and self._dispatcher is not None
                                   and self._dispatcher.has_capacity()):
                        self._state = _SCHEDULED  # the rest goes to a (free) worker
                        break
                    envelope = self._queue.popleft()
                handled += 1
                actor._process(envelope)
                envelope = None
                if actor.actor_stopped.is_set():
                    self._teardown()
                    return
                if actor.runtime_requeue:
                    actor.runtime_requeue = False
                    requeue = self._dispatcher is not None  # to the back of the queue
                if actor.runtime_yield:
                    actor.runtime_yield = False
                    if (not _flags.worker and self._dispatcher is not None
                            and self._dispatcher.has_capacity()):
                        handled = BUDGET  # hand the rest to a free worker (below)
        except BaseException:
            # A KeyboardInterrupt in the thread that drove us: leave the
            # mailbox consistent (the rest to a worker, or for the next put).
            if envelope is not None and envelope.reply_to is not None:
                reply = envelope.reply_to  # popped but maybe not answered: answer it
                with contextlib.suppress(queue.Full):
                    reply.set_exception(exc_info=(RuntimeError, RuntimeError(
                        "interrupted in the thread that drove the actor"), None))
            with self._lock:
                resume = bool(self._queue) and self._dispatcher is not None
                self._state = _SCHEDULED if resume else _IDLE
            if resume:
                assert self._dispatcher is not None
                self._dispatcher.submit(self)
            raise
        finally:
            _flags.depth -= 1
        assert self._dispatcher is not None
        self._dispatcher.submit(self)  # the budget ran out: fairness to this thread's caller

    def _teardown(self) -> None:
        with self._lock:
            self._closed = True
            self._state = _IDLE
            left, self._queue = list(self._queue), deque()
        for envelope in left:
            _reject(envelope, self._actor)


_START: Any = object()
"""The first envelope of every inline actor: runs ``on_start``."""


class InlineActor(pykka.Actor):
    """A Pykka actor that runs on the threads that message it (see the module doc).

    Same life cycle and failure semantics as ``pykka.ThreadingActor``:
    ``on_start`` runs before the first message, an exception while serving
    an ``ask`` goes to the caller's future, one while serving a ``tell`` is
    logged at ERROR and stops the actor (``on_failure`` runs), and messages
    still queued when it stops are answered with ``ActorDeadError``.
    Differences: ``on_start``, handlers and ``on_stop`` run in whichever
    thread drives the mailbox (never concurrently); a message that reaches a
    stopped actor is answered at once instead of waiting forever; a
    ``BaseException`` that is not an ``Exception`` (Ctrl-C in the driving
    thread) propagates to that thread and leaves the actor running.

    Args:
        dispatcher: where puts from non-inline threads go (``None``: every
            put runs inline).
    """

    runtime_yield: bool = False
    """Set by a handler to have a calling thread (not a worker) hand the rest
    of the mailbox to the dispatcher after this message, when a worker is
    free, so the caller returns as soon as its own work is done (the
    persistence actor sets it after each commit). With every worker busy the
    calling thread goes on, so queued work never waits for a worker."""

    runtime_requeue: bool = False
    """Set by a handler to send the rest of the mailbox to the back of the
    dispatcher's queue after this message, whatever thread drives it and
    whether or not a worker is free: an actor that queues itself more work
    (an upstream monitor reading a long backlog a scan at a time) then takes
    turns with every other actor instead of keeping its worker."""

    def __init__(self, *, dispatcher: Dispatcher | None = None) -> None:
        super().__init__()
        inbox = self.actor_inbox
        assert isinstance(inbox, Mailbox)
        inbox.bind(self, dispatcher)

    @staticmethod
    def _create_actor_inbox() -> Mailbox:
        return Mailbox()

    @staticmethod
    def _create_future() -> pykka.Future[Any]:
        return InlineFuture()

    def _start_actor_loop(self) -> None:
        self.actor_inbox.put(Envelope(_START))

    def _process(self, envelope: Envelope[Any]) -> None:
        """Handle one envelope like Pykka's actor loop does (driving thread)."""
        message, reply = envelope.message, envelope.reply_to
        if message is _START:
            self._actor_loop_setup()
            return
        try:
            response = self._handle_receive(message)
            if reply is not None:
                reply.set(response)
        except Exception:
            if reply is not None:
                logger.debug("exception returned from %s to its caller", self, exc_info=True)
                reply.set_exception()
            else:
                info = sys.exc_info()
                self._handle_failure(*info)
                try:
                    self.on_failure(*info)
                except Exception:
                    self._handle_failure(*sys.exc_info())
        except BaseException as exc:
            # Ctrl-C (or SystemExit) in the driving thread: it propagates there;
            # the message's requester, maybe another thread, gets a plain error.
            if reply is not None:
                failure = RuntimeError(f"{type(exc).__name__} interrupted the handling of "
                                       f"this message in the thread that drove {self}")
                try:
                    reply.set_exception(exc_info=(RuntimeError, failure, None))
                except queue.Full:  # interrupted inside set(): the result is there
                    if isinstance(reply, InlineFuture):
                        reply.release_waiters()
            raise
