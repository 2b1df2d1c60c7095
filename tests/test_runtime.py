"""The actor runtime: calling-thread dispatch, the dispatcher, and Pykka's life cycle.

Deterministic: races are created on purpose with events (an actor is held
inside a handler while other messages queue behind it); every wait has its
own timeout.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pykka
import pytest

from persistence.runtime import (
    BUDGET,
    Dispatcher,
    InlineActor,
    InlineFuture,
    on_our_thread,
    scheduling,
)

TIMEOUT = 5.0


class Recorder(InlineActor):
    """Records which thread handled each message; a tuple ``(entered, gate)`` holds it."""

    def __init__(self, dispatcher: Dispatcher | None = None) -> None:
        super().__init__(dispatcher=dispatcher)
        self.seen: list[tuple[object, str]] = []
        self.started_in: str | None = None
        self.stopped_in: str | None = None

    def on_start(self) -> None:
        self.started_in = threading.current_thread().name

    def on_stop(self) -> None:
        self.stopped_in = threading.current_thread().name

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, tuple):
            entered, gate = message
            entered.set()
            assert gate.wait(TIMEOUT)
            return "released"
        if message == "boom":
            raise ValueError("boom")
        if message == "interrupt":
            raise KeyboardInterrupt
        if message == "ours?":
            return on_our_thread()
        self.seen.append((message, threading.current_thread().name))
        return message


@pytest.fixture
def dispatcher() -> Iterator[Dispatcher]:
    pool = Dispatcher("test-worker", 2)
    yield pool
    assert pool.close(TIMEOUT) == 0


def _hold(ref: pykka.ActorRef[Any]) -> tuple[threading.Thread, threading.Event]:
    """Have another thread drive ``ref`` and stay inside a handler until released."""
    entered, gate = threading.Event(), threading.Event()
    holder = threading.Thread(target=ref.ask, args=((entered, gate),), name="holder")
    holder.start()
    assert entered.wait(TIMEOUT)
    return holder, gate


@contextlib.contextmanager
def _busy_pool(name: str) -> Iterator[tuple[Dispatcher, pykka.ActorRef[Any]]]:
    """A one-worker dispatcher whose only worker is held inside a handler.

    Yields ``(pool, ref)`` with ``ref`` a fresh actor on that pool; at exit the
    worker is released, both actors stopped and the pool closed (all bounded).
    """
    pool = Dispatcher(name, 1)
    blocker, ref = Recorder.start(pool), Recorder.start(pool)
    entered, gate = threading.Event(), threading.Event()
    try:
        with scheduling():
            held = blocker.ask((entered, gate), block=False)
        assert entered.wait(TIMEOUT)  # the only worker is stuck in a handler
        yield pool, ref
    finally:
        gate.set()
        assert held.get(timeout=TIMEOUT) == "released"
        blocker.stop(block=True, timeout=TIMEOUT)
        ref.stop(block=True, timeout=TIMEOUT)
        assert pool.close(TIMEOUT) == 0


def test_an_idle_actor_handles_a_message_in_the_calling_thread_before_ask_returns() -> None:
    before = set(threading.enumerate())
    ref = Recorder.start()
    try:
        me = threading.current_thread().name
        assert ref.ask("a", timeout=TIMEOUT) == "a"
        ref.tell("b")
        actor = ref._actor_weakref()
        assert actor is not None
        assert actor.seen == [("a", me), ("b", me)]  # the tell was handled before it returned
        assert actor.started_in == me
        assert set(threading.enumerate()) == before  # no thread was started for it
    finally:
        assert ref.stop(block=True, timeout=TIMEOUT) is True
    assert not ref.is_alive()


def test_messages_sent_while_another_thread_drives_the_actor_are_handled_there_in_order(
) -> None:
    ref = Recorder.start()
    holder, gate = _hold(ref)
    try:
        futures = [ref.ask(i, block=False) for i in range(5)]
        assert all(not f._result for f in futures)  # queued behind the held handler
        gate.set()
        assert [f.get(timeout=TIMEOUT) for f in futures] == list(range(5))
        actor = ref._actor_weakref()
        assert actor is not None
        assert [m for m, _ in actor.seen] == list(range(5))
        assert {t for _, t in actor.seen} == {"holder"}  # the driving thread handled them
    finally:
        gate.set()
        holder.join(TIMEOUT)
        ref.stop(block=True, timeout=TIMEOUT)


def test_a_scheduled_fan_out_runs_on_the_dispatcher_workers(dispatcher: Dispatcher) -> None:
    refs = [Recorder.start(dispatcher) for _ in range(3)]
    try:
        with scheduling():
            futures = [ref.ask("x", block=False) for ref in refs]
        assert [f.get(timeout=TIMEOUT) for f in futures] == ["x"] * 3
        threads = {t for ref in refs for _, t in ref._actor_weakref().seen}  # type: ignore[union-attr]
        assert threads <= {"test-worker-0", "test-worker-1"}
        assert 1 <= dispatcher.thread_count <= 2
    finally:
        for ref in refs:
            ref.stop(block=True, timeout=TIMEOUT)


def test_a_caller_takes_over_a_scheduled_mailbox_instead_of_waiting_for_a_worker() -> None:
    # One worker, held busy: the scheduled mailbox would wait for it forever.
    with _busy_pool("busy-worker") as (_pool, other):
        with scheduling():
            queued = other.ask("early", block=False)  # scheduled; the only worker is busy
        assert other.ask("late", timeout=TIMEOUT) == "late"  # this thread drives it
        assert queued.get(timeout=TIMEOUT) == "early"
        actor = other._actor_weakref()
        assert actor is not None
        assert [t for _, t in actor.seen] == [threading.current_thread().name] * 2


def test_a_long_mailbox_is_handed_to_a_worker_after_the_budget(dispatcher: Dispatcher) -> None:
    ref = Recorder.start(dispatcher)
    holder, gate = _hold(ref)
    try:
        futures = [ref.ask(i, block=False) for i in range(BUDGET + 10)]
        gate.set()
        assert [f.get(timeout=TIMEOUT) for f in futures] == list(range(BUDGET + 10))
        actor = ref._actor_weakref()
        assert actor is not None
        by_thread = [t for _, t in actor.seen]
        assert by_thread[:BUDGET - 1] == ["holder"] * (BUDGET - 1)
        assert set(by_thread[BUDGET:]) <= {"test-worker-0", "test-worker-1"}
    finally:
        gate.set()
        holder.join(TIMEOUT)
        ref.stop(block=True, timeout=TIMEOUT)


def test_failures_follow_pykka_semantics() -> None:
    ref = Recorder.start()
    with pytest.raises(ValueError, match="boom"):
        ref.ask("boom", timeout=TIMEOUT)
    assert ref.is_alive()  # an ask's exception goes to the caller only
    ref.tell("boom")  # a tell's exception stops the actor (logged at ERROR)
    assert not ref.is_alive()
    with pytest.raises(pykka.ActorDeadError):
        ref.ask("after", timeout=TIMEOUT)
    assert ref.stop(block=True, timeout=TIMEOUT) is False


def test_messages_queued_behind_a_stop_are_answered_with_actor_dead() -> None:
    ref = Recorder.start()
    holder, gate = _hold(ref)
    try:
        stopped = ref.stop(block=False)
        late = ref.ask("late", block=False)
        gate.set()
        assert stopped.get(timeout=TIMEOUT) is True
        with pytest.raises(pykka.ActorDeadError):
            late.get(timeout=TIMEOUT)
        actor = ref._actor_weakref()
        assert actor is None or actor.stopped_in == "holder"
    finally:
        gate.set()
        holder.join(TIMEOUT)


def test_a_keyboard_interrupt_reaches_the_driving_thread_and_the_actor_keeps_working() -> None:
    ref = Recorder.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            ref.ask("interrupt", timeout=TIMEOUT)
        assert ref.is_alive()
        assert ref.ask("next", timeout=TIMEOUT) == "next"
    finally:
        ref.stop(block=True, timeout=TIMEOUT)


def test_handlers_know_they_run_on_a_gateway_thread() -> None:
    ref = Recorder.start()
    try:
        assert on_our_thread() is False
        assert ref.ask("ours?", timeout=TIMEOUT) is True
        assert on_our_thread() is False
    finally:
        ref.stop(block=True, timeout=TIMEOUT)


def test_an_inline_future_times_out_resolves_once_and_wakes_a_waiter() -> None:
    future = InlineFuture()
    with pytest.raises(pykka.Timeout):
        future.get(timeout=0.01)
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(future.get(timeout=TIMEOUT)))
    waiter.start()
    future.set(7)
    waiter.join(TIMEOUT)
    assert got == [7]
    assert future.get(timeout=0) == 7
    with pytest.raises(queue.Full):
        future.set(8)
    failed = InlineFuture()
    try:
        raise RuntimeError("x")
    except RuntimeError:
        failed.set_exception()
    with pytest.raises(RuntimeError, match="x"):
        failed.get(timeout=0)


def test_a_dispatcher_needs_a_worker_and_runs_work_inline_after_close() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        Dispatcher("none", 0)
    pool = Dispatcher("closing", 1)
    assert pool.close(TIMEOUT) == 0
    ref = Recorder.start(pool)
    try:
        with scheduling():
            assert ref.ask("after-close", timeout=TIMEOUT) == "after-close"
        actor = ref._actor_weakref()
        assert actor is not None
        assert actor.seen == [("after-close", threading.current_thread().name)]
    finally:
        ref.stop(block=True, timeout=TIMEOUT)


def test_with_every_worker_busy_the_driving_thread_goes_on_past_the_budget() -> None:
    with _busy_pool("one-worker") as (_pool, ref):
        holder, release = _hold(ref)
        futures = [ref.ask(i, block=False) for i in range(BUDGET + 10)]
        release.set()
        assert [f.get(timeout=TIMEOUT) for f in futures] == list(range(BUDGET + 10))
        holder.join(TIMEOUT)
        actor = ref._actor_weakref()
        assert actor is not None
        assert {t for _, t in actor.seen} == {"holder"}  # nothing waited for the busy worker


def test_ctrl_c_while_driving_another_threads_message_reaches_only_the_driving_thread() -> None:
    ref = Recorder.start()
    entered, gate = threading.Event(), threading.Event()
    theirs: list[Any] = []

    def other_caller() -> None:
        assert entered.wait(TIMEOUT)
        theirs.append(ref.ask("interrupt", block=False))  # queued behind our handler
        gate.set()

    other = threading.Thread(target=other_caller)
    other.start()
    try:
        # We drive the actor; after our message we handle theirs, which raises
        # KeyboardInterrupt here, in the driving thread.
        with pytest.raises(KeyboardInterrupt):
            ref.ask((entered, gate), timeout=TIMEOUT)
        other.join(TIMEOUT)
        with pytest.raises(RuntimeError, match="KeyboardInterrupt interrupted"):
            theirs[0].get(timeout=TIMEOUT)  # a plain error for them, not a Ctrl-C
        assert ref.ask("after", timeout=TIMEOUT) == "after"
    finally:
        gate.set()
        other.join(TIMEOUT)
        ref.stop(block=True, timeout=TIMEOUT)


def test_take_told_takes_only_told_messages_from_the_front() -> None:
    from pykka._envelope import Envelope

    from persistence.runtime import Mailbox

    mailbox = Mailbox()
    asked: Any = pykka.ThreadingFuture()
    for envelope in (Envelope("a"), Envelope(1), Envelope("b", reply_to=asked),
                     Envelope("c")):
        with mailbox._lock:  # queue without driving: no actor is bound
            mailbox._queue.append(envelope)
    assert mailbox.take_told(lambda m: isinstance(m, str), 10) == ["a"]  # 1 refused
    assert mailbox.get().message == 1
    assert mailbox.take_told(lambda m: True, 10) == []  # an asked envelope stops it
    assert mailbox.get().message == "b"
    assert mailbox.take_told(lambda m: True, 0) == []  # the limit
    assert mailbox.take_told(lambda m: True, 5) == ["c"]
    assert mailbox.empty()


class Chain(InlineActor):
    """Tells itself ``n - 1`` after handling ``n`` (like a monitor reading a backlog).

    Every message handled is appended to ``order`` as ``"<name> <message>"``.
    """

    def __init__(self, dispatcher: Dispatcher, name: str, order: list[str], requeue: bool,
                 gate: threading.Event) -> None:
        super().__init__(dispatcher=dispatcher)
        self._name, self._order, self._requeue, self._gate = name, order, requeue, gate
        self.finished = threading.Event()

    def on_receive(self, message: Any) -> Any:
        if message == "start":
            assert self._gate.wait(TIMEOUT)  # until the other actor's message is queued
            message = 5
        self._order.append(f"{self._name} {message}")
        if isinstance(message, int) and message > 0:
            self.actor_ref.tell(message - 1)
            self.runtime_requeue = self._requeue
        elif message == 0:
            self.finished.set()
        return None


@pytest.mark.parametrize("requeue", [True, False])
def test_an_actor_that_requeues_itself_takes_turns_with_the_others(requeue: bool) -> None:
    pool = Dispatcher("one-worker", 1)
    order: list[str] = []
    gate = threading.Event()
    chain = Chain.start(pool, "chain", order, requeue, gate)
    other = Chain.start(pool, "other", order, requeue, gate)
    try:
        with scheduling():
            chain.tell("start")  # the only worker drives the chain ...
            other.tell("turn")  # ... and this waits in the dispatcher's queue
        gate.set()
        actor = chain._actor_weakref()
        assert actor is not None
        assert actor.finished.wait(TIMEOUT)
        other.ask("done", timeout=TIMEOUT)
    finally:
        gate.set()
        chain.stop(block=True, timeout=TIMEOUT)
        other.stop(block=True, timeout=TIMEOUT)
        assert pool.close(TIMEOUT) == 0
    chained = [entry for entry in order if entry.startswith("chain ")]
    assert chained == [f"chain {n}" for n in range(5, -1, -1)]
    if requeue:  # one message of the chain, then the other actor's turn
        assert order[:2] == ["chain 5", "other turn"]
    else:  # the chain keeps the worker until it runs dry
        assert order.index("other turn") == 6
