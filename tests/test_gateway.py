"""Gateway behaviour beyond the anchor scenarios: tools, lifecycle, actor-level races."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import msgspec
import pytest

from actors import Gateway, GatewayConfig, SessionStateEventInput
from actors.engine.notices import notice_text
from actors.errors import (
    ArgumentTypeError,
    GatewayClosed,
    InvalidArgument,
    InvalidChangesSince,
    InvalidSessionKey,
    ReentrantCall,
)
from tests.conftest import CHILD, GROUP, WATCHER, ManualClock, WakeRecorder

TIMEOUT = 5.0
COORDINATOR = "agent:main:coordinator"
PEER = "agent:main:peer"


def test_sessions_send_delivers_to_the_inbox_and_watches_only_when_asked(
    gateway: Gateway,
) -> None:
    plain = gateway.sessions_send(COORDINATOR, PEER, "do the thing")
    assert plain.accepted is True
    assert plain.watched is None
    assert msgspec.json.encode(plain) == b'{"accepted":true}'
    assert gateway.take_messages(PEER) == ["do the thing"]
    assert gateway.take_messages(PEER) == []
    gateway.human_message(PEER, channel="telegram")
    assert gateway.pending_notices(COORDINATOR) == []

    watched = gateway.sessions_send(COORDINATOR, PEER, "and watch", watch=True)
    assert (watched.accepted, watched.watched) == (True, True)
    event = gateway.human_message(PEER, channel="telegram")
    assert event is not None
    assert gateway.pending_notices(COORDINATOR) == [notice_text(PEER, event.sequence - 1)]


def test_a_failed_dispatch_registers_no_watch(gateway: Gateway) -> None:
    def refuse(sender: str, target: str, text: str) -> bool:
        return False

    def explode(sender: str, target: str, text: str) -> bool:
        raise RuntimeError("dispatcher down")

    for deliver in (refuse, explode):
        result = gateway.sessions_send(COORDINATOR, PEER, "x", watch=True, deliver=deliver)
        assert (result.accepted, result.watched) == (False, False)
    assert gateway.human_message(PEER, channel="telegram") is None  # still unwatched
    assert gateway.pending_notices(COORDINATOR) == []


def test_self_watch_and_bare_global_watchers_are_refused(gateway: Gateway) -> None:
    assert gateway.watch(PEER, PEER) is False
    assert gateway.watch("global", PEER) is False
    assert gateway.sessions_send(PEER, PEER, "x", watch=True).watched is False


def test_calling_the_gateway_from_on_wake_is_refused_not_deadlocked(
    open_gateway: Callable[..., Gateway],
) -> None:
    errors: list[BaseException] = []
    holder: dict[str, Gateway] = {}

    def reenter(watcher: str) -> None:
        try:
            holder["gw"].drain(watcher)
        except ReentrantCall as exc:
            errors.append(exc)

    gw = open_gateway(on_wake=reenter)
    holder["gw"] = gw
    gw.watch(WATCHER, PEER)
    assert gw.human_message(PEER, channel="telegram") is not None
    assert len(errors) == 1
    assert len(gw.pending_notices(WATCHER)) == 1


def test_an_on_wake_that_raises_is_logged_and_survived(
    open_gateway: Callable[..., Gateway], caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(watcher: str) -> None:
        raise RuntimeError("host bug")

    gw = open_gateway(on_wake=broken)
    gw.watch(WATCHER, PEER)
    with caplog.at_level(logging.ERROR, logger="actors"):
        assert gw.human_message(PEER, channel="telegram") is not None
    assert "on_wake raised" in caplog.text
    gw.set_goal(PEER, action="set")
    assert len(gw.pending_notices(WATCHER)) == 1


def test_a_closed_gateway_refuses_calls_and_close_is_idempotent(gateway: Gateway) -> None:
    gateway.close()
    gateway.close()
    with pytest.raises(GatewayClosed):
        gateway.human_message(PEER, channel="x")
    with pytest.raises(GatewayClosed):
        gateway.session_status(PEER)


def test_bad_arguments_raise_documented_errors_naming_the_argument(gateway: Gateway) -> None:
    with pytest.raises(InvalidSessionKey, match="watcher_key"):
        gateway.watch("", PEER)
    with pytest.raises(InvalidChangesSince):
        gateway.session_status(PEER, changes_since=-1)
    with pytest.raises(ArgumentTypeError, match="changes_since"):
        gateway.session_status(PEER, changes_since=1.5)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="text"):
        gateway.sessions_send(PEER, COORDINATOR, 5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="action"):
        gateway.set_goal(PEER, action="created")
    with pytest.raises(InvalidArgument, match="chat_type"):
        gateway.create_session(PEER, chat_type="room")
    with pytest.raises(ArgumentTypeError, match="event"):
        gateway.record({"session_key": PEER})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        GatewayConfig(changes_limit=500)


def test_status_json_uses_the_seeds_camel_case_names(gateway: Gateway, clock: ManualClock) -> None:
    gateway.watch(WATCHER, CHILD)
    event = gateway.human_message(CHILD, channel="telegram")
    assert event is not None
    encoded = msgspec.json.decode(msgspec.json.encode(
        gateway.session_status(CHILD, changes_since=0)))
    assert encoded == {
        "stateVersion": event.sequence,
        "stateChanges": {
            "events": [{"sequence": event.sequence, "sessionKey": CHILD, "agentId": "main",
                        "kind": "human_direct_message", "actorType": "human",
                        "summary": "human message via telegram", "occurredAt": clock.now}],
            "historyGap": False, "truncated": False,
            "earliestAvailableSequence": event.sequence,
        },
    }
    assert msgspec.json.encode(gateway.session_status(CHILD)) == (
        b'{"stateVersion":%d}' % event.sequence)


def test_record_round_trips_every_field(gateway: Gateway, clock: ManualClock) -> None:
    event = gateway.record(SessionStateEventInput(
        session_key=CHILD, kind="run_failed", actor_type="system", summary="child run failed",
        session_id="s-1", actor_id="agent:main:runner", run_id="r-9",
        occurred_at=clock.now - 1000, payload={"outcome": "timeout"}, dedupe_key="k-1"))
    assert event is not None
    status = gateway.session_status(CHILD, changes_since=0)
    assert status.state_changes is not None
    assert status.state_changes.events == (event,)
    assert (event.session_id, event.actor_id, event.run_id, event.occurred_at, event.payload) == (
        "s-1", "agent:main:runner", "r-9", clock.now - 1000, {"outcome": "timeout"})


def test_delete_withdraws_queued_notices_about_the_deleted_session(gateway: Gateway) -> None:
    gateway.watch(WATCHER, PEER)
    gateway.human_message(PEER, channel="telegram")
    assert len(gateway.pending_notices(WATCHER)) == 1
    gateway.delete_session(PEER)
    assert gateway.pending_notices(WATCHER) == []
    assert gateway.session_status(PEER).state_version == 0


def test_reset_withdraws_the_watchers_queued_notices(gateway: Gateway) -> None:
    gateway.watch(WATCHER, PEER)
    gateway.human_message(PEER, channel="telegram")
    gateway.enqueue_system_event(WATCHER, "Cron completed", context_key="cron:job-1")
    gateway.reset_session(WATCHER, session_id="new")
    assert gateway.pending_notices(WATCHER) == ["Cron completed"]
    assert gateway.human_message(PEER, channel="telegram") is None  # no watcher left


def test_ambient_group_notices_never_wake_until_promoted(
    gateway: Gateway, wakes: WakeRecorder,
) -> None:
    gateway.human_message(GROUP, channel="telegram", actor_id="human-1")
    gateway.human_message(GROUP, channel="telegram", actor_id="human-2")
    assert len(gateway.pending_notices(WATCHER)) == 1
    assert wakes.calls == []
    gateway.drain(WATCHER)
    assert gateway.watch(WATCHER, GROUP) is True
    gateway.drain(WATCHER)
    gateway.human_message(GROUP, channel="telegram")
    assert wakes.calls == [WATCHER]


def test_group_scope_main_registers_no_ambient_watch(
    open_gateway: Callable[..., Gateway],
) -> None:
    gw = open_gateway(GatewayConfig(group_scope="main"))
    assert gw.human_message(GROUP, channel="telegram") is None
    assert gw.pending_notices(WATCHER) == []


def test_evicted_cursor_actors_restart_without_losing_notices(
    open_gateway: Callable[..., Gateway],
) -> None:
    gw = open_gateway(GatewayConfig(max_cursor_actors=2))
    targets = [f"agent:main:t{i}" for i in range(6)]
    for target in targets:
        assert gw.watch(WATCHER, target)
    for _ in range(3):
        for target in targets:
            gw.human_message(target, channel="telegram")
    # Each pair was registered at head 0, so each notice says changesSince 0.
    assert sorted(gw.pending_notices(WATCHER)) == sorted(notice_text(t, 0) for t in targets)
    assert len(gw.drain(WATCHER)) == 6
    assert len(gw.pending_notices(WATCHER)) == 6  # one follow-up per pair


def test_producers_from_many_threads_each_return_their_own_event(gateway: Gateway) -> None:
    gateway.watch(WATCHER, PEER)
    results: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8, timeout=TIMEOUT)

    def produce() -> None:
        barrier.wait()
        for _ in range(10):
            event = gateway.human_message(PEER, channel="x")
            assert event is not None
            with lock:
                results.append(event.sequence)

    threads = [threading.Thread(target=produce) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive()
    assert len(set(results)) == 80
    assert gateway.session_status(PEER).state_version == max(results)
    assert len(gateway.pending_notices(WATCHER)) == 1


def test_the_longest_keys_and_dedupe_keys_work_on_every_backend(gateway: Gateway) -> None:
    wide = "\U00020000"  # four bytes of UTF-8, incompressible in an index
    agent = wide * 60
    watcher = f"agent:{agent}:{wide * 130}"  # 767 bytes
    target = f"agent:{agent}:subagent:{wide * 128}"  # 768 bytes: the limit
    assert len(target.encode()) == 768
    spawn = gateway.spawn_subagent(watcher, target, run_id="r")
    assert spawn is not None
    event = gateway.record(SessionStateEventInput(
        session_key=target, kind="goal_changed", actor_type="human", summary="s",
        dedupe_key=wide * 250))  # 1,000 bytes: the limit
    assert event is not None
    assert len(gateway.drain(watcher)) == 1
    with pytest.raises(InvalidSessionKey, match="768 bytes"):
        gateway.watch(watcher, target + wide)
    with pytest.raises(InvalidArgument, match="1000 bytes"):
        gateway.record(SessionStateEventInput(
            session_key=target, kind="goal_changed", actor_type="human", summary="s",
            dedupe_key=wide * 251))


def test_drain_only_consumes_exactly_what_was_shown(gateway: Gateway) -> None:
    """``drain(only=...)``: a notice opened after the watcher was shown its notices stays."""
    assert gateway.watch(COORDINATOR, PEER)
    assert gateway.watch(COORDINATOR, CHILD)
    first = gateway.human_message(PEER, channel="tui")
    assert first is not None
    shown = gateway.pending_notices(COORDINATOR)
    assert shown == [notice_text(PEER, first.sequence - 1)]
    later = gateway.human_message(CHILD, channel="tui")  # after showing, before acknowledging
    assert later is not None
    assert gateway.drain(COORDINATOR, only=shown) == shown
    opened = [notice_text(CHILD, 0)]  # watched while its version was 0
    assert gateway.pending_notices(COORDINATOR) == opened
    assert gateway.drain(COORDINATOR, only=shown) == []  # already consumed: nothing twice
    assert gateway.drain(COORDINATOR, only=[]) == []
    assert gateway.pending_notices(COORDINATOR) == opened


def test_drain_only_skips_a_notice_replaced_since_it_was_shown(gateway: Gateway) -> None:
    """A shown text whose notice another drain consumed (and a follow-up replaced) stays."""
    assert gateway.watch(COORDINATOR, PEER)
    first = gateway.human_message(PEER, channel="tui")
    assert first is not None
    shown = gateway.pending_notices(COORDINATOR)
    assert gateway.drain(COORDINATOR) == shown  # consumed elsewhere meanwhile
    second = gateway.human_message(PEER, channel="tui")
    assert second is not None
    assert gateway.drain(COORDINATOR, only=shown) == []
    assert gateway.pending_notices(COORDINATOR) == [notice_text(PEER, first.sequence)]


@pytest.mark.parametrize("bad", ["one text", b"bytes", 5, [1]])
def test_drain_only_refuses_what_is_not_texts(gateway: Gateway, bad: object) -> None:
    with pytest.raises(ArgumentTypeError, match="only"):
        gateway.drain(COORDINATOR, only=bad)  # type: ignore[arg-type]


def test_unwatch_drops_the_cursor_and_its_open_notice(gateway: Gateway) -> None:
    assert gateway.watch(COORDINATOR, PEER)
    assert gateway.human_message(PEER, channel="tui") is not None
    assert gateway.pending_notices(COORDINATOR) != []
    assert gateway.unwatch(COORDINATOR, PEER) is True
    assert gateway.pending_notices(COORDINATOR) == []
    assert gateway.human_message(PEER, channel="tui") is None  # nobody watches it now
    assert gateway.unwatch(COORDINATOR, PEER) is False
    assert gateway.watch(COORDINATOR, PEER)  # watching again starts at the head
    assert gateway.pending_notices(COORDINATOR) == []


def test_watch_since_opens_one_notice_for_what_is_already_logged(gateway: Gateway) -> None:
    first = gateway.human_message(PEER, channel="tui")  # no watcher yet: not recorded
    assert first is None
    assert gateway.watch("agent:main:other", PEER)
    typed = [gateway.human_message(PEER, channel="tui") for _ in range(3)]
    assert all(e is not None for e in typed)
    assert gateway.watch(COORDINATOR, PEER, since=0)
    assert gateway.pending_notices(COORDINATOR) == [notice_text(PEER, 0)]
    assert gateway.drain(COORDINATOR) == [notice_text(PEER, 0)]
    assert gateway.pending_notices(COORDINATOR) == []  # one notice covered all three
    assert gateway.watch(COORDINATOR, PEER, since=0)  # an existing watch is kept
    assert gateway.pending_notices(COORDINATOR) == []


def test_watch_since_skips_the_watchers_own_events(gateway: Gateway) -> None:
    assert gateway.watch("agent:main:other", PEER)
    gateway.set_goal(PEER, action="set", actor_type="agent", actor_id=COORDINATOR)
    assert gateway.watch(COORDINATOR, PEER, since=0)
    assert gateway.pending_notices(COORDINATOR) == []


@pytest.mark.parametrize("bad", [-1, 1.5, True, "0"])
def test_watch_since_refuses_what_is_not_a_version(gateway: Gateway, bad: object) -> None:
    with pytest.raises((InvalidChangesSince, ArgumentTypeError), match="since"):
        gateway.watch(COORDINATOR, PEER, since=bad)  # type: ignore[arg-type]
