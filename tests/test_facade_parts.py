"""The facade's collaborators, each built alone (no ``Gateway``), and how ``Gateway`` delegates.

The request paths a collaborator is given are fakes that record what they
are asked (a fake persistence ``write``/``record``, fake actor asks), or a
real signal log on a temporary SQLite file where a collaborator reads. The
:class:`~actors.facade.core.Runtime` is started alone by
:func:`~actors.facade.lifecycle.open_runtime` with the injected clock.
Nothing here sleeps or polls.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from actors import AsyncGateway, Gateway, GatewayConfig
from actors.engine.messages import (
    Deliver,
    Drain,
    DrainOutcome,
    EnqueueEvent,
    PendingTexts,
    Register,
    Reset,
)
from actors.errors import (
    ArgumentTypeError,
    GatewayClosed,
    InvalidArgument,
    InvalidSessionKey,
    StorageError,
    StorageUnavailable,
)
from actors.facade.core import Runtime
from actors.facade.hosting_api import HostingApi
from actors.facade.lifecycle import open_runtime
from actors.facade.notices import NoticesApi
from actors.facade.recording import RecordingApi
from actors.facade.sessions import SessionsApi
from actors.facade.upstream_api import UpstreamApi
from actors.facade.values import SessionStateEventInput
from actors.testing import ManualClock
from persistence import (
    DeleteOutcome,
    DeleteSession,
    NoticeDescriptor,
    ReadPool,
    RecordEvent,
    SessionStateEvent,
    Unwatch,
    UpsertSession,
    open_backend,
)

WATCHER = "agent:main:main"
TARGET = "agent:main:worker"
START_MS = 1_700_000_000_000


class Calls:
    """A recorder of the calls a collaborator makes through what it was given."""

    def __init__(self) -> None:
        self.log: list[tuple[str, tuple[Any, ...]]] = []

    def named(self, name: str, answer: Any = None) -> Callable[..., Any]:
        """A fake that records ``(name, args)`` and returns ``answer`` (or raises it)."""
        def fake(*args: Any, **kwargs: Any) -> Any:
            self.log.append((name, args + tuple(sorted(kwargs.items()))))
            if isinstance(answer, BaseException):
                raise answer
            return answer
        return fake

    def of(self, name: str) -> list[tuple[Any, ...]]:
        """The arguments of every call to ``name``, in order."""
        return [args for called, args in self.log if called == name]


def best_effort(call: Callable[[], Any], what: str) -> Any:
    """The runtime's own best-effort path (a static method: no runtime needed)."""
    return Runtime.best_effort(call, what)


class FakeUpstream:
    """The few upstream-service methods the collaborators call."""

    def __init__(self, calls: Calls, *, linked: bool = False) -> None:
        self.has_link = calls.named("has_link", linked)
        self.note_own_text = calls.named("note_own_text")
        self.track_link = calls.named("track_link")
        self.forget = calls.named("forget")
        self.adopt = calls.named("adopt", "a link")
        self.scan_cycle = calls.named("scan_cycle", StorageError("disk gone"))
        self.start_notifications = calls.named("start_notifications", True)


class FakePool:
    """An actor pool's ``discard_where``: records which keys the predicate drops."""

    def __init__(self, keys: list[Any], calls: Calls, name: str) -> None:
        self.keys, self.calls, self.name = keys, calls, name

    def discard_where(self, predicate: Callable[[Any], bool], wait: bool = False) -> None:
        self.calls.log.append((self.name, tuple(k for k in self.keys if predicate(k))))


@pytest.fixture
def reads(tmp_path: Path) -> Iterator[ReadPool]:
    """Read connections to a real, migrated, empty signal log."""
    backend = open_backend(tmp_path / "state.sqlite")
    backend.prepare()
    backend.connect(writer=True, migrate=True).close()
    pool = ReadPool(backend, size=1)
    yield pool
    pool.close()


# --- RecordingApi -------------------------------------------------------------


def recording(calls: Calls, *, group_scope: str = "per-group", linked: bool = False,
              deliver_answer: object = True) -> RecordingApi:
    event = SessionStateEvent(sequence=1, session_key=TARGET, agent_id="main",
                              session_id=None, kind="compacted", actor_type="system",
                              actor_id=None, run_id=None, occurred_at=START_MS,
                              summary="s", payload=None)
    return RecordingApi(
        config=GatewayConfig(group_scope=group_scope),  # type: ignore[arg-type]
        guard=calls.named("guard"), record=calls.named("record", event),
        ask_session=calls.named("ask_session", deliver_answer), best_effort=best_effort,
        upstream=FakeUpstream(calls, linked=linked),  # type: ignore[arg-type]
        watch=calls.named("watch", True))


@pytest.mark.parametrize(("scope", "shape"), [("per-group", "human-per-group"),
                                               ("main", "human")])
def test_human_message_records_the_shape_of_the_group_scope(scope: str, shape: str) -> None:
    calls = Calls()
    event = recording(calls, group_scope=scope).human_message(TARGET, channel=" webchat ")
    assert event is not None
    assert event.sequence == 1
    assert [name for name, _ in calls.log] == ["guard", "record"]
    (command,), = calls.of("record")
    assert isinstance(command, RecordEvent)
    assert (command.kind, command.actor_type, command.shape) == (
        "human_direct_message", "human", shape)
    assert command.summary == "human message via webchat"


def test_producers_check_before_they_record_and_the_guard_comes_first() -> None:
    calls = Calls()
    api = recording(calls)
    with pytest.raises(InvalidArgument):
        api.spawn_subagent(TARGET, TARGET, run_id="r")
    with pytest.raises(InvalidArgument):
        api.set_goal(TARGET, action="moved")
    with pytest.raises(ArgumentTypeError):
        api.record("not an event")  # type: ignore[arg-type]
    assert calls.of("record") == []
    assert len(calls.of("guard")) == 3
    closed = RecordingApi(config=GatewayConfig(), guard=Calls().named("guard", GatewayClosed()),
                          record=calls.named("record"), ask_session=calls.named("ask"),
                          best_effort=best_effort,
                          upstream=FakeUpstream(calls),  # type: ignore[arg-type]
                          watch=calls.named("watch"))
    with pytest.raises(GatewayClosed):
        closed.compacted(TARGET, operation_id="op")
    assert calls.of("record") == []


def test_spawn_finish_and_record_build_their_commands() -> None:
    calls = Calls()
    api = recording(calls)
    api.spawn_subagent(WATCHER, "agent:main:subagent:c", run_id="r1")
    api.finish_run(TARGET, run_id="r1", outcome="timeout")
    api.record(SessionStateEventInput(session_key=TARGET, kind="goal_changed",
                                      actor_type="agent", summary="goal set"))
    spawned, finished, recorded = (args[0] for args in calls.of("record"))
    assert (spawned.kind, spawned.watcher_keys, spawned.dedupe_key) == (
        "child_spawned", (WATCHER,), "child-spawned:r1")
    assert (finished.kind, finished.payload_json) == ("run_failed", '{"outcome":"timeout"}')
    assert (recorded.kind, recorded.agent_id, recorded.shape) == (
        "goal_changed", "main", "entry-watchers")


def test_sessions_send_notes_own_text_only_for_a_linked_target_and_watches_on_success() -> None:
    calls = Calls()
    result = recording(calls, linked=True).sessions_send(WATCHER, TARGET, "hi", watch=True)
    assert (result.accepted, result.watched) == (True, True)
    assert calls.of("ask_session") == [((TARGET, "main"), Deliver(text="hi"))]
    assert calls.of("note_own_text") == [(TARGET, "main", "hi")]
    assert calls.of("watch") == [(WATCHER, TARGET)]

    calls = Calls()
    result = recording(calls).sessions_send(WATCHER, TARGET, "hi")
    assert (result.accepted, result.watched) == (True, None)
    assert calls.of("note_own_text") == []


def test_sessions_send_counts_a_raising_dispatcher_as_not_accepted_and_does_not_watch() -> None:
    calls = Calls()

    def deliver(sender: str, target: str, text: str) -> bool:
        raise RuntimeError("host dispatcher down")

    result = recording(calls, linked=True).sessions_send(WATCHER, TARGET, "hi", watch=True,
                                                         deliver=deliver)
    assert (result.accepted, result.watched) == (False, False)
    assert calls.of("watch") == []
    assert calls.of("has_link") == []


def test_message_tools_ask_the_target_session_actor() -> None:
    calls = Calls()
    api = recording(calls, deliver_answer=["a", "b"])
    assert api.take_messages(TARGET) == ["a", "b"]
    assert api.enqueue_system_event(TARGET, "note", context_key="c") is True
    assert calls.of("ask_session")[1] == ((TARGET, "main"),
                                          EnqueueEvent(text="note", context_key="c"))


# --- SessionsApi --------------------------------------------------------------


def sessions(calls: Calls, reads: ReadPool | Any, *, write_answer: object = None,
             cursor_answer: object = True) -> SessionsApi:
    return SessionsApi(
        config=GatewayConfig(), guard=calls.named("guard"),
        write=calls.named("write", write_answer), best_effort=best_effort,
        ask_session=calls.named("ask_session"),
        ask_cursor=calls.named("ask_cursor", cursor_answer),
        sessions=FakePool([(TARGET, "main"), (WATCHER, "main")], calls,
                          "sessions"),  # type: ignore[arg-type]
        cursors=FakePool([(WATCHER, TARGET, "main"), (TARGET, WATCHER, "main"),
                          ("agent:main:x", WATCHER, "main")], calls,
                         "cursors"),  # type: ignore[arg-type]
        handoff=SimpleNamespace(discard=calls.named("handoff.discard")),  # type: ignore[arg-type]
        upstream=FakeUpstream(calls),  # type: ignore[arg-type]
        reads=reads, note_read_ok=calls.named("read_ok"),
        note_read_fault=calls.named("read_fault"), clock=lambda: 1_000)


def test_create_session_writes_its_patch_and_a_storage_fault_is_logged_not_raised(
    reads: ReadPool,
) -> None:
    calls = Calls()
    sessions(calls, reads).create_session(TARGET, chat_type="group", spawned_by=WATCHER)
    assert calls.of("write") == [(UpsertSession(session_key=TARGET, agent_id="main",
                                                session_id=None, spawned_by=WATCHER,
                                                chat_type="group"),)]
    failing = sessions(Calls(), reads, write_answer=StorageError("disk full"))
    failing.create_session(TARGET)  # does not raise
    with pytest.raises(InvalidArgument):
        sessions(calls, reads).create_session(TARGET, spawned_by=TARGET)


def test_delete_session_discards_the_actors_that_name_it(reads: ReadPool) -> None:
    calls = Calls()
    deleted = DeleteOutcome(version=1, watchers=())
    sessions(calls, reads, write_answer=deleted).delete_session(TARGET)
    assert calls.of("write") == [(DeleteSession(session_key=TARGET, agent_id="main"),)]
    assert calls.of("cursors") == [((WATCHER, TARGET, "main"), (TARGET, WATCHER, "main"))]
    assert calls.of("forget") == [(TARGET, "main")]
    assert calls.of("sessions") == [((TARGET, "main"),)]
    assert calls.of("handoff.discard") == [((TARGET, "main"),)]


def test_watch_registers_then_tracks_the_link_and_unwatch_drops_the_cursor(
    reads: ReadPool,
) -> None:
    calls = Calls()
    api = sessions(calls, reads, write_answer=True)
    assert api.watch(WATCHER, TARGET, since=0) is True
    assert calls.of("ask_cursor") == [((WATCHER, TARGET, "main"), Register(since=0))]
    assert calls.of("track_link") == [(TARGET, "main")]
    assert api.watch(WATCHER, WATCHER) is False  # a self-watch asks nothing
    assert api.watch("global", TARGET) is False
    assert len(calls.of("ask_cursor")) == 1
    assert api.unwatch(WATCHER, TARGET) is True
    assert calls.of("write") == [(Unwatch(watcher_key=WATCHER, target_key=TARGET,
                                          target_agent_id="main"),)]
    assert calls.of("cursors") == [((WATCHER, TARGET, "main"),)]
    api.reset_session(TARGET, session_id="s2")
    assert calls.of("ask_session") == [((TARGET, "main"), Reset(session_id="s2"))]


def test_session_reads_answer_from_the_log_and_degrade_on_a_read_fault(
    reads: ReadPool,
) -> None:
    calls = Calls()
    api = sessions(calls, reads)
    status = api.session_status(TARGET, changes_since=0)
    assert status.state_version == 0
    assert status.state_changes is not None
    assert status.state_changes.history_gap is False
    assert api.sessions_list() == []
    assert len(calls.of("read_ok")) == 2
    reads.close()  # every read now fails
    status = api.session_status(TARGET, changes_since=0)
    assert status.state_changes is not None
    assert status.state_changes.history_gap is True
    assert api.sessions_list() == []
    faults = calls.of("read_fault")
    assert [what for _exc, what in faults] == ["session_status", "sessions_list"]
    assert all(isinstance(exc, StorageUnavailable) for exc, _what in faults)


# --- NoticesApi ---------------------------------------------------------------


def notices(calls: Calls, reads: ReadPool, *, has_state: bool,
            outcome: DrainOutcome | None = None) -> NoticesApi:
    rewakes = SimpleNamespace(later=calls.named("later"), settled=calls.named("settled"))
    return NoticesApi(
        guard=calls.named("guard"), has_session_state=calls.named("has_state", has_state),
        ask_session=calls.named("ask_session", outcome if outcome is not None else ["n1"]),
        publish=calls.named("publish"), rewakes=rewakes,  # type: ignore[arg-type]
        reads=reads, timeout=1.0, queue_limit=10, note_read_ok=calls.named("read_ok"),
        note_read_fault=calls.named("read_fault"))


def test_an_empty_queue_needs_no_session_actor(reads: ReadPool) -> None:
    calls = Calls()
    api = notices(calls, reads, has_state=False)
    assert api.pending_notices(WATCHER) == []
    assert api.drain(WATCHER) == []
    assert calls.of("ask_session") == []
    assert calls.of("publish") == []
    assert len(calls.of("read_ok")) == 2  # it read the open notices (none)


def test_drain_publishes_follow_ups_and_schedules_a_rewake_for_kept_back_notices(
    reads: ReadPool,
) -> None:
    follow_up = NoticeDescriptor(watcher_key=WATCHER, target_key=TARGET,
                                 target_agent_id="main", last_seen=3, queue_only=False,
                                 pending=True, version=1, wake=True)
    calls = Calls()
    kept = DrainOutcome(texts=("a",), follow_ups=(follow_up,), unacknowledged=1)
    assert notices(calls, reads, has_state=True, outcome=kept).drain(
        WATCHER, only=["a"]) == ["a"]
    assert calls.of("ask_session") == [((WATCHER, "main"), Drain(only=("a",)))]
    assert calls.of("publish") == [((follow_up,),)]
    assert calls.of("later") == [(WATCHER,)]
    assert calls.of("settled") == []

    calls = Calls()
    done = DrainOutcome(texts=("a", "b"), follow_ups=())
    assert notices(calls, reads, has_state=True, outcome=done).drain(WATCHER) == ["a", "b"]
    assert calls.of("settled") == [(WATCHER,)]
    assert calls.of("later") == []
    assert notices(calls, reads, has_state=True, outcome=done).drain(WATCHER, only=[]) == []
    assert notices(calls, reads, has_state=True).pending_notices(WATCHER) == ["n1"]
    assert calls.of("ask_session")[-1] == ((WATCHER, "main"), PendingTexts())
    with pytest.raises(ArgumentTypeError):
        notices(calls, reads, has_state=True).drain(WATCHER, only="a")


def test_a_read_fault_shows_no_open_notices_and_is_noted(reads: ReadPool) -> None:
    calls = Calls()
    reads.close()
    assert notices(calls, reads, has_state=False).pending_notices(WATCHER) == []
    assert [what for _exc, what in calls.of("read_fault")] == ["pending_notices"]


# --- HostingApi ---------------------------------------------------------------


class FakeHosting:
    def __init__(self, calls: Calls) -> None:
        self.watchers = frozenset({WATCHER})
        self.host = calls.named("host", 0)
        self.unhost = calls.named("unhost")


def test_hosting_checks_keys_and_needs_on_wake() -> None:
    calls = Calls()
    api = HostingApi(guard=calls.named("guard"), hosting=FakeHosting(calls),  # type: ignore[arg-type]
                     waker=object(), release_leases=calls.named("release"))
    api.host(WATCHER, WATCHER, TARGET)
    assert calls.of("host") == [((WATCHER, TARGET),)]
    api.host()
    api.unhost()
    assert len(calls.of("host")) == 1
    assert calls.of("unhost") == []
    api.unhost(TARGET)
    assert calls.of("unhost") == [((TARGET,),)]
    with pytest.raises(InvalidSessionKey):
        api.host("global")
    api.release_leases()
    assert len(calls.of("release")) == 1
    assert api.hosted == frozenset({WATCHER})
    no_wake = HostingApi(guard=calls.named("guard"), hosting=FakeHosting(calls),  # type: ignore[arg-type]
                         waker=None, release_leases=calls.named("release"))
    with pytest.raises(InvalidArgument):
        no_wake.host(WATCHER)


# --- UpstreamApi --------------------------------------------------------------


def test_upstream_api_checks_requests_and_never_raises_a_scan_fault(tmp_path: Path) -> None:
    calls = Calls()
    api = UpstreamApi(guard=calls.named("guard"), best_effort=best_effort,
                      upstream=FakeUpstream(calls))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        api.adopt(TARGET, source="nonesuch", path=tmp_path / "t.jsonl")
    with pytest.raises(InvalidArgument):
        api.adopt(TARGET, source="opencode", path=tmp_path / "opencode.db")
    assert calls.of("adopt") == []
    assert api.adopt(TARGET, source="claude", path=tmp_path / "t.jsonl") is None  # not a link
    (adopted,) = calls.of("adopt")
    assert adopted[:2] == (TARGET, "main")
    assert ("path", str(tmp_path / "t.jsonl")) in adopted
    assert api.scan_upstream(keys=[TARGET]) == []  # the service's StorageError is logged
    assert calls.of("scan_cycle") == [(("only", frozenset({TARGET})),)]
    with pytest.raises(ArgumentTypeError):
        api.scan_upstream(keys=TARGET)  # one key: pass a list

    def factory(**_: object) -> None:
        return None

    api._feed_factory = factory  # type: ignore[assignment]
    assert api.start_upstream_notifications() is True
    assert calls.of("start_notifications") == [(factory,)]


# --- Runtime ------------------------------------------------------------------


def test_the_runtime_alone_records_wakes_and_closes(tmp_path: Path) -> None:
    woken: list[str] = []
    runtime = open_runtime(tmp_path / "state.sqlite", config=None, clock=ManualClock(START_MS),
                           on_wake=woken.append, monitor=False, hosts=())
    try:
        assert runtime.shared_at_open is False
        runtime.guard()
        assert runtime.ask_cursor((WATCHER, TARGET, "main"), Register(since=None)) is True
        event = runtime.record(RecordEvent(session_key=TARGET, agent_id="main",
                                           kind="human_direct_message", actor_type="human",
                                           summary="human message via test", shape="human"))
        assert event is not None
        assert event.occurred_at == START_MS
        assert woken == [WATCHER]
        assert runtime.owes_wake(WATCHER) is True
        assert Runtime.best_effort(lambda: runtime.write(
            DeleteSession(session_key="agent:main:none", agent_id="main")), "delete") is not None
    finally:
        runtime.close(timeout=5.0)
    runtime.close(timeout=5.0)  # idempotent
    assert runtime.closed
    with pytest.raises(GatewayClosed):
        runtime.guard()


def test_best_effort_swallows_storage_faults_and_nothing_else() -> None:
    def storage() -> None:
        raise StorageError("disk full")

    def bug() -> None:
        raise KeyError("bug")

    assert Runtime.best_effort(storage, "x") is None
    with pytest.raises(KeyError):
        Runtime.best_effort(bug, "x")


# --- Gateway: delegations and its asyncio mirror ------------------------------

_PUBLIC = sorted(name for name in dir(Gateway) if not name.startswith("_")
                 and not isinstance(getattr(Gateway, name), property)
                 and name not in {"open", "close", "config"})
_COLLABORATORS = (SessionsApi, RecordingApi, NoticesApi, HostingApi, UpstreamApi)


@pytest.mark.parametrize("name", _PUBLIC)
def test_each_gateway_method_delegates_with_its_collaborators_signature_and_docstring(
    name: str,
) -> None:
    (owner,) = [c for c in _COLLABORATORS if name in vars(c)]
    mine, theirs = getattr(Gateway, name), getattr(owner, name)
    assert inspect.signature(mine) == inspect.signature(theirs)
    assert mine.__doc__
    assert mine.__doc__ == theirs.__doc__


def test_async_gateway_mirrors_every_public_gateway_name_and_signature() -> None:
    def public(cls: type) -> set[str]:
        return {n for n in dir(cls) if not n.startswith("_")}

    assert public(AsyncGateway) == public(Gateway)
    for name in sorted(public(Gateway)):
        mine, theirs = getattr(AsyncGateway, name), getattr(Gateway, name)
        if isinstance(theirs, property):
            assert isinstance(mine, property), name
            continue
        assert inspect.iscoroutinefunction(mine), name
        ours, base = inspect.signature(mine), inspect.signature(theirs)
        assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
            (p.name, p.kind, p.default) for p in base.parameters.values()], name
