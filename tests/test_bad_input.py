"""Bad input to the API (issue 5, item 4): hypothesis properties over every argument.

Every call either succeeds, and what it stored round-trips exactly through
``session_status(changes_since=...)`` (summary, payload, actor_id, run_id,
session_id, occurred_at after clamping, the key itself), or raises the documented
``ValueError``/``TypeError`` subclass from ``actors.errors`` naming the argument,
never another exception type. The oracle (``tests/_sec_support.py``) is written
from the documented rules, not from the library's validators.

Each test opens one gateway on its own database, runs one property against it
(bounded, derandomized: the same examples every run), prints how many examples it
tried, then checks the database invariants (``check_database``) while the gateway
is open and again after it is closed.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors import Gateway, GatewayConfig
from actors.errors import (
    ArgumentTypeError,
    InvalidArgument,
    InvalidKind,
    InvalidOutcome,
    InvalidSessionKey,
)
from actors.facade.values import SessionStateEventInput
from persistence.records import SessionStateEvent
from tests._sec_support import (
    ACTOR_TYPES,
    FAILED_OUTCOMES,
    KINDS,
    MAX_DEDUPE_KEY_BYTES,
    NON_STR,
    NON_STR_HASHABLE,
    OK,
    OUTCOMES,
    Verdict,
    agent_ids,
    agent_of,
    all_of,
    any_payloads,
    assert_session_gone,
    attempt,
    bad,
    bad_agent_ids,
    changes_since_values,
    changes_since_verdict,
    check_database,
    choice_verdict,
    clamp,
    features,
    good_payloads,
    int_verdict,
    is_qualified,
    key_like,
    key_verdict,
    payload_verdict,
    read_only,
    same,
    storable_texts,
    text_verdict,
    texts,
    valid_keys,
)
from tests._upstream_rows import claude_user
from tests.conftest import DAY_MS, ManualClock, SignalLogDb

MAX_EXAMPLES = int(__import__("os").environ.get("SEC_EXAMPLES", "200"))
SETTINGS = settings(
    max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much, HealthCheck.large_base_example])
WATCHER = "agent:main:main"
OTHER_WATCHER = "agent:ops:main"
GOAL_ACTIONS = ("set", "updated", "removed")
CHAT_TYPES = ("direct", "group", "channel")
SOURCES = ("claude", "codex", "opencode", "pi")
RUN_SUMMARIES = {"ok": "child run completed", "error": "child run failed",
                 "timeout": "child run timed out", "cancelled": "child run cancelled"}
HEX64 = re.compile(r"[0-9a-f]{64}")

Key = tuple[str, str]


@dataclass
class Model:
    """What the tests know was stored: entry session ids, dedupe hits, deletions."""

    session_ids: dict[Key, str] = field(default_factory=dict)
    dedupe: dict[tuple[str, str, str], SessionStateEvent] = field(default_factory=dict)
    deleted: set[Key] = field(default_factory=set)
    tally: Counter[str] = field(default_factory=Counter)

    def touched(self, key: str) -> None:
        """``key`` was used again after a deletion: it may exist anew."""
        self.deleted = {d for d in self.deleted if d[0] != key}


def report(name: str, model: Model, counts: dict[str, int]) -> None:
    tally = model.tally
    extra = ", ".join(f"{k} {v}" for k, v in sorted(tally.items())
                      if k not in ("examples", "accepted", "rejected"))
    print(f"\n[bad-input] {name}: {tally['examples']} examples tried, "
          f"{tally['accepted']} accepted, {tally['rejected']} rejected"
          f"{'; ' + extra if extra else ''}; rows {counts}")


@pytest.fixture
def fuzz_gateway(open_gateway: Callable[..., Gateway], db: SignalLogDb,
                 clock: ManualClock) -> Iterator[tuple[Gateway, Model]]:
    """A gateway for one property; its database is checked open and after close."""
    gw = open_gateway(config=GatewayConfig(changes_limit=5))
    model = Model()
    yield gw, model
    check_database(db.location, deleted=model.deleted)
    gw.close()
    check_database(db.location, deleted=model.deleted)


def opt(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


BAD_TEXTS = st.one_of(texts(), st.sampled_from(NON_STR))
BAD_CHOICES = st.one_of(texts(), st.sampled_from(NON_STR_HASHABLE),
                        st.sampled_from(["Human", "agent ", "GOAL_CHANGED", "ok\x00", "set\n",
                                         "run_failed ", "Claude", "group\u200b"]))


def status_after(gw: Gateway, key: str, agent: str, before: int,
                 event: SessionStateEvent | None, expect: dict[str, Any]) -> None:
    """``event`` is the session's only change after ``before`` and holds ``expect`` exactly."""
    assert event is not None, "a valid producer call on a healthy database returned None"
    status = gw.session_status(key, changes_since=before, agent_id=agent)
    changes = status.state_changes
    assert changes is not None
    assert status.state_version == event.sequence > before
    assert not changes.history_gap
    assert not changes.truncated
    assert len(changes.events) == 1
    stored = changes.events[0]
    assert stored == event
    assert same(stored.payload, event.payload)
    for name, value in {"session_key": key, "agent_id": agent, **expect}.items():
        got = getattr(stored, name)
        assert same(got, value), f"{name}: stored {got!r:.120} != given {value!r:.120}"


def head_or_none(gw: Gateway, key: object, agent: object) -> int | None:
    """The session's head, or ``None`` when the key or agent is refused (look-alikes)."""
    try:
        return gw.session_status(key, agent_id=agent).state_version  # type: ignore[arg-type]
    except (InvalidSessionKey, ArgumentTypeError):
        return None


def latest_time(gw: Gateway, key: str, agent: str, head: int) -> int:
    """The time of the session's newest event (0: none): a new one is never dated before it."""
    if not head:
        return 0
    changes = gw.session_status(key, changes_since=head - 1, agent_id=agent).state_changes
    return changes.events[-1].occurred_at if changes is not None and changes.events else 0


def dedupe_or_new(gw: Gateway, model: Model, key: str, agent: str, dedupe: str | None,
                  before: int, event: SessionStateEvent | None,
                  expect: dict[str, Any]) -> None:
    """A repeated dedupe key returns the stored event and changes nothing; else round trip."""
    if dedupe is not None and (key, agent, dedupe) in model.dedupe:
        model.tally["dedupe repeats"] += 1
        stored = model.dedupe[(key, agent, dedupe)]
        assert event == stored
        assert event is not None
        assert same(event.payload, stored.payload)
        assert gw.session_status(key, agent_id=agent).state_version == before
        return
    status_after(gw, key, agent, before, event, expect)
    assert event is not None
    if dedupe is not None:
        model.dedupe[(key, agent, dedupe)] = event


# --- record(): every field of SessionStateEventInput ---------------------------------

FIELDS = ("session_key", "kind", "actor_type", "summary", "agent_id", "session_id", "actor_id",
          "run_id", "occurred_at", "payload", "dedupe_key")


def test_record_round_trips_every_field_exactly_or_rejects_it(
    fuzz_gateway: tuple[Gateway, Model], clock: ManualClock,
) -> None:
    gw, model = fuzz_gateway
    now = clock.now

    @SETTINGS
    @given(data=st.data())
    def prop(data: st.DataObject) -> None:
        model.tally["examples"] += 1
        corrupt = data.draw(st.sets(st.sampled_from(FIELDS), max_size=2), label="corrupt")

        def pick(name: str, good: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
            return data.draw(hostile if name in corrupt else good, label=name)

        kind = pick("kind", st.sampled_from(KINDS), BAD_CHOICES)
        payload = pick("payload", good_payloads, any_payloads)
        if kind == "run_failed" and "payload" not in corrupt:
            outcome = data.draw(st.sampled_from([*FAILED_OUTCOMES, *FAILED_OUTCOMES, "ok", None]),
                                label="outcome")
            payload = {**(payload or {}), "outcome": outcome}
        fields: dict[str, Any] = {
            "session_key": pick("session_key", valid_keys, key_like),
            "kind": kind,
            "actor_type": pick("actor_type", st.sampled_from(ACTOR_TYPES), BAD_CHOICES),
            "summary": pick("summary", storable_texts(), BAD_TEXTS),
            "agent_id": pick("agent_id", agent_ids, bad_agent_ids),
            "session_id": pick("session_id", opt(storable_texts()), BAD_TEXTS),
            "actor_id": pick("actor_id", opt(storable_texts()), BAD_TEXTS),
            "run_id": pick("run_id", opt(storable_texts()), BAD_TEXTS),
            "occurred_at": pick("occurred_at", opt(st.integers(now - 3 * DAY_MS, now + DAY_MS)),
                                st.one_of(st.integers(-(2**70), 2**70), st.sampled_from(
                                    [True, False, 1.5, float("nan"), "123", 2**63, -(2**63),
                                     2**63 - 1, -(2**63 - 1), b"1", [1]]))),
            "payload": payload,
            "dedupe_key": pick("dedupe_key", opt(st.one_of(st.sampled_from(["d1", "d2"]),
                                                           storable_texts())), BAD_TEXTS),
        }
        verdict = all_of([
            key_verdict(fields["session_key"], "session_key"),
            key_verdict(fields["agent_id"], "agent_id", optional=True, agent=True),
            choice_verdict(kind, "kind", KINDS, InvalidKind),
            choice_verdict(fields["actor_type"], "actor_type", ACTOR_TYPES, InvalidKind),
            text_verdict(fields["summary"], "summary"),
            *(text_verdict(fields[n], n, optional=True)
              for n in ("session_id", "actor_id", "run_id")),
            text_verdict(fields["dedupe_key"], "dedupe_key", optional=True,
                         max_bytes=MAX_DEDUPE_KEY_BYTES),
            int_verdict(fields["occurred_at"], "occurred_at"),
            payload_verdict(payload),
            run_failed_verdict(kind, payload),
        ])
        key, agent, before = fields["session_key"], None, None
        if not verdict.must_fail:
            agent = fields["agent_id"] or agent_of(key)
            before = head_or_none(gw, key, agent)
        accepted, event = attempt(verdict, lambda: gw.record(SessionStateEventInput(**fields)),
                                  "record")
        if not accepted:
            model.tally["rejected"] += 1
            return
        model.tally["accepted"] += 1
        for name in ("summary", "session_id", "actor_id", "run_id", "session_key"):
            for feature in features(fields[name]):
                model.tally[f"stored {feature}"] += 1
        if payload:
            model.tally["stored payload"] += 1
        assert before is not None
        assert agent is not None
        session_id = fields["session_id"] or model.session_ids.get((key, agent))
        dedupe_or_new(gw, model, key, agent, fields["dedupe_key"], before, event, {
            "kind": kind, "actor_type": fields["actor_type"], "summary": fields["summary"],
            "session_id": session_id, "actor_id": fields["actor_id"], "run_id": fields["run_id"],
            "occurred_at": max(clamp(fields["occurred_at"], now),
                               latest_time(gw, key, agent, before)),
            "payload": payload})
        if fields["session_id"] is not None and event is not None and event.sequence > before:
            model.session_ids[(key, agent)] = fields["session_id"]

    prop()
    report("record(SessionStateEventInput)", model, check_database(gw.location))


def run_failed_verdict(kind: object, payload: object) -> Verdict:
    if kind != "run_failed":
        return OK
    outcome = payload.get("outcome") if isinstance(payload, dict) else None
    return OK if outcome in FAILED_OUTCOMES else bad(InvalidOutcome, "payload")


# --- the other producers: channels, actions, actor types, outcomes, ids ----------------

PRODUCERS = ("human_message", "set_goal", "compacted", "finish_run", "spawn_subagent")


def test_producers_round_trip_channels_actions_outcomes_and_ids_or_reject_them(
    fuzz_gateway: tuple[Gateway, Model], clock: ManualClock,
) -> None:
    gw, model = fuzz_gateway
    now = clock.now

    @SETTINGS
    @given(data=st.data())
    def prop(data: st.DataObject) -> None:
        model.tally["examples"] += 1
        which = data.draw(st.sampled_from(PRODUCERS), label="producer")
        model.tally[which] += 1
        corrupt = data.draw(st.sets(st.sampled_from(("key", "a", "b", "c")), max_size=2),
                            label="corrupt")

        def pick(name: str, good: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
            return data.draw(hostile if name in corrupt else good, label=name)

        key = pick("key", valid_keys, key_like)
        key_name = {"finish_run": "session_key", "spawn_subagent": "child_key"}.get(which, "key")
        verdicts = [key_verdict(key, key_name)]
        call: Callable[[], Any]
        expect: dict[str, Any]
        dedupe: str | None = None
        if which == "human_message":
            channel = pick("a", storable_texts(64), BAD_TEXTS)
            actor_id = pick("b", opt(storable_texts()), BAD_TEXTS)
            verdicts += [text_verdict(channel, "channel", max_length=64),
                         text_verdict(actor_id, "actor_id", optional=True)]
            call = lambda: gw.human_message(key, channel=channel, actor_id=actor_id)  # noqa: E731
            expect = {"kind": "human_direct_message", "actor_type": "human",
                      "actor_id": actor_id, "payload": None, "run_id": None}
            if isinstance(channel, str):
                expect["summary"] = f"human message via {channel.strip() or 'unknown'}"
        elif which == "set_goal":
            action = pick("a", st.sampled_from(GOAL_ACTIONS), BAD_CHOICES)
            actor_type = pick("b", st.sampled_from(ACTOR_TYPES), BAD_CHOICES)
            actor_id = pick("c", opt(storable_texts()), BAD_TEXTS)
            verdicts += [choice_verdict(action, "action", GOAL_ACTIONS, InvalidArgument),
                         choice_verdict(actor_type, "actor_type", ACTOR_TYPES, InvalidKind),
                         text_verdict(actor_id, "actor_id", optional=True)]
            call = lambda: gw.set_goal(key, action=action, actor_type=actor_type,  # noqa: E731
                                       actor_id=actor_id)
            expect = {"kind": "goal_changed", "summary": f"goal {action}",
                      "actor_type": actor_type, "actor_id": actor_id, "payload": None}
        elif which == "compacted":
            operation = pick("a", storable_texts(), BAD_TEXTS)
            verdicts.append(text_verdict(operation, "operation_id"))
            call = lambda: gw.compacted(key, operation_id=operation)  # noqa: E731
            expect = {"kind": "compacted", "summary": "session compacted",
                      "actor_type": "system", "payload": None}
            dedupe = f"compacted:{operation}"
        elif which == "finish_run":
            run_id = pick("a", st.one_of(st.sampled_from(["r1", "r2"]), storable_texts()),
                          BAD_TEXTS)
            outcome = pick("b", st.sampled_from(OUTCOMES), st.one_of(
                texts(), st.sampled_from(NON_STR),
                st.sampled_from(["OK", "ok ", "failed", "error\x00", "cancel"])))
            verdicts += [text_verdict(run_id, "run_id"),
                         choice_verdict(outcome, "outcome", OUTCOMES, InvalidOutcome)]
            call = lambda: gw.finish_run(key, run_id=run_id, outcome=outcome)  # noqa: E731
            expect = {"kind": "run_completed" if outcome == "ok" else "run_failed",
                      "summary": RUN_SUMMARIES.get(outcome, "") if isinstance(outcome, str)
                      else "", "actor_type": "system",
                      "run_id": run_id,
                      "payload": None if outcome == "ok" else {"outcome": outcome}}
            dedupe = f"run-terminal:{run_id}"
        else:
            parent = pick("a", valid_keys, key_like)
            run_id = pick("b", st.one_of(st.sampled_from(["s1", "s2"]), storable_texts()),
                          BAD_TEXTS)
            verdicts = [key_verdict(parent, "parent_key"), *verdicts,
                        text_verdict(run_id, "run_id")]
            if isinstance(parent, str) and parent == key:  # a session is not its own parent
                verdicts.append(bad(InvalidArgument, "parent_key"))
            call = lambda: gw.spawn_subagent(parent, key, run_id=run_id)  # noqa: E731
            expect = {"kind": "child_spawned", "summary": "child session spawned",
                      "actor_type": "agent", "actor_id": parent, "run_id": run_id,
                      "payload": None}
            dedupe = f"child-spawned:{run_id}"
        verdict = all_of(verdicts)
        before = None
        if not verdict.must_fail:
            before = head_or_none(gw, key, agent_of(key))
            if which == "human_message" and before is not None:
                # Recorded only when watched: watch it first (any other watcher will do).
                gw.watch(OTHER_WATCHER if key == WATCHER else WATCHER, key)
        accepted, event = attempt(verdict, call, which)
        if not accepted:
            model.tally["rejected"] += 1
            return
        model.tally["accepted"] += 1
        assert before is not None
        dedupe_or_new(gw, model, key, agent_of(key), dedupe, before, event,
                      {"occurred_at": now, "session_id": None, **expect})

    prop()
    report("human_message/set_goal/compacted/finish_run/spawn_subagent", model,
           check_database(gw.location))


# --- session_status(changes_since=...) -----------------------------------------------


def test_changes_since_accepts_every_non_negative_int_and_rejects_everything_else(
    fuzz_gateway: tuple[Gateway, Model],
) -> None:
    gw, model = fuzz_gateway
    history: dict[Key, list[SessionStateEvent]] = {
        ("agent:main:history", "main"): [], ("global", "ops"): [],
        ("global", "main"): [], ("agent:main:empty", "main"): []}
    for i, (key, agent, n) in enumerate([("agent:main:history", "main", 12),
                                         ("global", "ops", 3)]):
        for j in range(n):
            event = gw.record(SessionStateEventInput(
                session_key=key, agent_id=agent, kind="goal_changed", actor_type="human",
                summary=f"change {i}.{j}"))
            assert event is not None
            history[(key, agent)].append(event)
    limit = gw.config.changes_limit

    @SETTINGS
    @given(target=st.sampled_from(sorted(history)), explicit_agent=st.booleans(),
           hostile=st.integers(0, 4), since=changes_since_values, data=st.data())
    def prop(target: Key, explicit_agent: bool, hostile: int, since: object,
             data: st.DataObject) -> None:
        model.tally["examples"] += 1
        hostile_agent = data.draw(bad_agent_ids, label="agent_id") if hostile == 0 else None
        model.tally[f"changes_since {type(since).__name__}"] += 1
        key, agent = target
        agent_arg = hostile_agent if hostile_agent is not None else (
            agent if explicit_agent or agent != agent_of(key) else None)
        verdict = all_of([key_verdict(agent_arg, "agent_id", optional=True, agent=True),
                          changes_since_verdict(since)])
        accepted, status = attempt(
            verdict,
            lambda: gw.session_status(key, changes_since=since, agent_id=agent_arg),  # type: ignore[arg-type]
            "session_status")
        if not accepted:
            model.tally["rejected"] += 1
            return
        model.tally["accepted"] += 1
        events = history.get((key, str(agent_arg or agent_of(key))), [])
        assert status.state_version == (events[-1].sequence if events else 0)
        if since is None:
            assert status.state_changes is None
            return
        assert isinstance(since, int)
        after = [e for e in events if e.sequence > since]
        changes = status.state_changes
        assert changes is not None
        assert list(changes.events) == after[:limit]
        assert changes.truncated == (len(after) > limit)
        assert not changes.history_gap
        assert changes.earliest_available_sequence == (events[0].sequence if events else 0)

    prop()
    report("session_status(changes_since=...)", model, check_database(gw.location))


# --- session keys in every method that takes one ----------------------------------------

KEY_METHODS = (
    "create_session", "create_session.spawned_by", "create_session.agent_id", "watch.watcher",
    "watch.target", "watch.agent_id", "human_message", "set_goal", "compacted", "finish_run",
    "spawn_subagent.parent", "spawn_subagent.child", "reset_session", "delete_session",
    "delete_session.agent_id", "session_status", "session_status.agent_id",
    "sessions_list.agent_id", "pending_notices", "drain", "take_messages",
    "enqueue_system_event", "note_own_text", "sessions_send.sender", "sessions_send.target",
    "adopt", "adopt.agent_id",
)
ARG_NAMES = {
    "create_session": "key", "create_session.spawned_by": "spawned_by",
    "watch.watcher": "watcher_key", "watch.target": "target_key", "human_message": "key",
    "set_goal": "key", "compacted": "key", "finish_run": "session_key",
    "spawn_subagent.parent": "parent_key", "spawn_subagent.child": "child_key",
    "reset_session": "key", "delete_session": "key", "session_status": "key",
    "pending_notices": "watcher_key", "drain": "watcher_key", "take_messages": "key",
    "enqueue_system_event": "key", "note_own_text": "key", "sessions_send.sender": "sender_key",
    "sessions_send.target": "target_key", "adopt": "key",
}
FIXED_TARGET = "agent:main:fixed-target"
FIXED_CHILD = "agent:main:subagent:fixed-child"


def test_every_key_argument_is_stored_verbatim_or_rejected_as_invalid_session_key(
    fuzz_gateway: tuple[Gateway, Model], tmp_path: Path,
) -> None:
    gw, model = fuzz_gateway
    transcript = tmp_path / "claude.jsonl"
    transcript.write_bytes(claude_user("hello"))
    serial = itertools.count()

    @SETTINGS
    @given(method=st.sampled_from(KEY_METHODS), key=key_like)
    def prop(method: str, key: Any) -> None:
        model.tally["examples"] += 1
        n = next(serial)
        is_agent = method.endswith(".agent_id")
        verdict = key_verdict(key, ARG_NAMES.get(method, "agent_id"), agent=is_agent)
        before = None
        if not verdict.must_fail:
            before = head_or_none(gw, key, None) if not is_agent else 0
        accepted, result = attempt(verdict, lambda: exercise(gw, method, key, n, transcript),
                                   method)
        if not accepted:
            model.tally["rejected"] += 1
            return
        model.tally["accepted"] += 1
        for used in (key, FIXED_TARGET, FIXED_CHILD, WATCHER, OTHER_WATCHER):
            model.touched(used)
        assert before is not None
        check_key_effect(gw, model, method, key, n, before, result)

    prop()
    report("session keys in every method", model, check_database(gw.location,
                                                                  deleted=model.deleted))


def exercise(gw: Gateway, method: str, key: Any, n: int, transcript: Path) -> Any:
    """Call ``method`` with ``key`` in the named position and valid other arguments."""
    match method:
        case "create_session":
            return gw.create_session(key, session_id=f"sid-{n}")
        case "create_session.spawned_by":
            return gw.create_session(FIXED_CHILD if key != FIXED_CHILD else FIXED_TARGET,
                                     spawned_by=key)
        case "create_session.agent_id":
            return gw.create_session(FIXED_TARGET, agent_id=key)
        case "watch.watcher":
            return gw.watch(key, FIXED_TARGET)
        case "watch.target":
            if isinstance(key, str) and key == WATCHER:
                return gw.watch(OTHER_WATCHER, key)
            return gw.watch(WATCHER, key)
        case "watch.agent_id":
            return gw.watch(WATCHER, FIXED_TARGET, agent_id=key)
        case "human_message":
            # Not watched is "nothing to tell anyone": make someone watch it first.
            if isinstance(key, str) and key != WATCHER:
                with contextlib.suppress(InvalidSessionKey):
                    gw.watch(WATCHER, key)
            elif isinstance(key, str):
                gw.watch(OTHER_WATCHER, key)
            return gw.human_message(key, channel="web")
        case "set_goal":
            return gw.set_goal(key, action="set")
        case "compacted":
            return gw.compacted(key, operation_id=f"op-{n}")
        case "finish_run":
            return gw.finish_run(key, run_id=f"run-{n}", outcome="timeout")
        case "spawn_subagent.parent":
            child = FIXED_CHILD if key != FIXED_CHILD else FIXED_TARGET  # never its own parent
            return gw.spawn_subagent(key, child, run_id=f"spawn-{n}")
        case "spawn_subagent.child":
            parent = WATCHER if key != WATCHER else OTHER_WATCHER
            return gw.spawn_subagent(parent, key, run_id=f"spawn-{n}")
        case "reset_session":
            return gw.reset_session(key, session_id=f"reset-{n}")
        case "delete_session":
            return gw.delete_session(key)
        case "delete_session.agent_id":
            return gw.delete_session(FIXED_TARGET, agent_id=key)
        case "session_status":
            return gw.session_status(key, changes_since=0)
        case "session_status.agent_id":
            return gw.session_status(FIXED_TARGET, changes_since=0, agent_id=key)
        case "sessions_list.agent_id":
            return gw.sessions_list(agent_id=key)
        case "pending_notices":
            return gw.pending_notices(key)
        case "drain":
            return gw.drain(key)
        case "take_messages":
            return gw.take_messages(key)
        case "enqueue_system_event":
            return gw.enqueue_system_event(key, f"event {n}")
        case "note_own_text":
            return gw.note_own_text(key, f"own {n}")
        case "sessions_send.sender":
            return gw.sessions_send(key, FIXED_TARGET, f"sent {n}")
        case "sessions_send.target":
            return gw.sessions_send(WATCHER, key, f"sent {n}")
        case "adopt":
            return gw.adopt(key, source="claude", path=transcript)
        case "adopt.agent_id":
            return gw.adopt(FIXED_TARGET, source="claude", path=transcript, agent_id=key)
    raise AssertionError(method)


def check_key_effect(gw: Gateway, model: Model, method: str, key: str, n: int, before: int,
                     result: Any) -> None:
    """What an accepted call stored holds the key verbatim."""
    match method:
        case "create_session" | "reset_session":
            rows = [r for r in gw.sessions_list(agent_id=agent_of(key)) if r.session_key == key]
            assert len(rows) == 1
            prefix = "sid" if method == "create_session" else "reset"
            assert rows[0].session_id == f"{prefix}-{n}"
        case "create_session.spawned_by":
            rows = [r for r in gw.sessions_list(agent_id="main") if r.session_key == FIXED_CHILD]
            assert len(rows) == 1
            assert rows[0].spawned_by == key
        case "create_session.agent_id":
            rows = gw.sessions_list(agent_id=key)
            assert [r.session_key for r in rows if r.session_key == FIXED_TARGET] == [FIXED_TARGET]
            assert all(r.agent_id == key for r in rows)
        case "watch.watcher":
            assert result is (is_qualified(key) and key != FIXED_TARGET)
            if result:
                assert cursor_exists(gw, key, FIXED_TARGET, "main")
        case "watch.target":
            assert result is True
            assert cursor_exists(gw, OTHER_WATCHER if key == WATCHER else WATCHER, key,
                                 agent_of(key))
        case "watch.agent_id":
            assert result is True
            assert cursor_exists(gw, WATCHER, FIXED_TARGET, key)
        case "human_message":
            status_after(gw, key, agent_of(key), before, result,
                         {"kind": "human_direct_message", "summary": "human message via web"})
        case "set_goal":
            status_after(gw, key, agent_of(key), before, result, {"summary": "goal set"})
        case "compacted":
            status_after(gw, key, agent_of(key), before, result, {"kind": "compacted"})
        case "finish_run":
            status_after(gw, key, agent_of(key), before, result,
                         {"run_id": f"run-{n}", "payload": {"outcome": "timeout"}})
        case "spawn_subagent.parent":
            assert result is not None
            assert result.actor_id == key
            assert result.session_key == (FIXED_CHILD if key != FIXED_CHILD else FIXED_TARGET)
        case "spawn_subagent.child":
            status_after(gw, key, agent_of(key), before, result,
                         {"kind": "child_spawned",
                          "actor_id": WATCHER if key != WATCHER else OTHER_WATCHER})
        case "delete_session" | "delete_session.agent_id":
            target = (key, agent_of(key)) if method == "delete_session" else (FIXED_TARGET, key)
            conn = read_only(gw.location)
            try:
                assert_session_gone(conn, *target)
            finally:
                conn.close()
            model.deleted.add(target)
        case "session_status" | "session_status.agent_id":
            assert result.state_changes is not None
            assert [e.session_key for e in result.state_changes.events] == [
                key if method == "session_status" else FIXED_TARGET] * len(
                    result.state_changes.events)
        case "sessions_list.agent_id":
            assert all(r.agent_id == key for r in result)
        case "pending_notices" | "drain" | "take_messages":
            assert isinstance(result, list)
        case "enqueue_system_event":
            assert result is True
            assert f"event {n}" in gw.pending_notices(key)
            assert f"event {n}" in gw.drain(key)
        case "note_own_text":
            hashes = own_hashes(gw, key, agent_of(key))
            assert hashes
            assert all(HEX64.fullmatch(h) for h in hashes)
        case "sessions_send.sender":
            assert result.accepted is True
            assert gw.take_messages(FIXED_TARGET) == [f"sent {n}"]
        case "sessions_send.target":
            assert result.accepted is True
            assert gw.take_messages(key) == [f"sent {n}"]
        case "adopt":
            assert result is not None
            assert result.session_key == key
            status = gw.session_status(key, changes_since=before)
            assert status.state_changes is not None
            assert [(e.kind, e.session_key) for e in status.state_changes.events][-1:] == [
                ("adopted", key)]
        case "adopt.agent_id":
            assert result is not None
            assert (result.session_key, result.agent_id) == (FIXED_TARGET, key)


def cursor_exists(gw: Gateway, watcher: str, target: str, agent: str) -> bool:
    conn = read_only(gw.location)
    try:
        return bool(conn.execute(
            "SELECT count(*) FROM session_watch_cursors WHERE watcher_session_key = ?"
            " AND target_session_key = ? AND target_agent_id = ?", (watcher, target, agent)
        ).get == 1)
    finally:
        conn.close()


def own_hashes(gw: Gateway, key: str, agent: str) -> list[str]:
    conn = read_only(gw.location)
    try:
        return [str(h) for (h,) in conn.execute(
            "SELECT text_hash FROM session_own_texts WHERE session_key = ? AND agent_id = ?",
            (key, agent))]
    finally:
        conn.close()


# --- message texts: sessions_send, enqueue_system_event, note_own_text ------------------

TEXT_METHODS = ("sessions_send", "sessions_send.deliver", "enqueue_system_event",
                "note_own_text")


def test_message_texts_arrive_exactly_or_are_rejected(
    fuzz_gateway: tuple[Gateway, Model],
) -> None:
    gw, model = fuzz_gateway
    sender, target = "agent:main:sender", "agent:main:inbox"

    @SETTINGS
    @given(method=st.sampled_from(TEXT_METHODS), text=st.one_of(texts(), st.sampled_from(NON_STR)),
           context=st.one_of(st.none(), storable_texts(), BAD_TEXTS),
           watch=st.one_of(st.booleans(), st.sampled_from([0, 1, None, "yes"])))
    def prop(method: str, text: Any, context: Any, watch: Any) -> None:
        model.tally["examples"] += 1
        model.tally[method] += 1
        delivered: list[tuple[str, str, str]] = []

        def deliver(s: str, t: str, body: str) -> bool:
            delivered.append((s, t, body))
            return True

        call: Callable[[], Any]
        if method.startswith("sessions_send"):
            verdict = all_of([
                OK if isinstance(text, str) else bad(ArgumentTypeError, "text"),
                OK if isinstance(watch, bool) else bad(ArgumentTypeError, "watch")])
            host = deliver if method.endswith("deliver") else None
            call = lambda: gw.sessions_send(sender, target, text, watch=watch,  # noqa: E731
                                            deliver=host)
        elif method == "enqueue_system_event":
            verdict = all_of([text_verdict(text, "text", max_length=8192),
                              text_verdict(context, "context_key", optional=True)])
            call = lambda: gw.enqueue_system_event(target, text, context_key=context)  # noqa: E731
        else:
            verdict = OK if isinstance(text, str) else bad(ArgumentTypeError, "text")
            call = lambda: gw.note_own_text(target, text)  # noqa: E731
        accepted, result = attempt(verdict, call, method)
        if not accepted:
            model.tally["rejected"] += 1
            return
        model.tally["accepted"] += 1
        if method == "sessions_send":
            assert result.accepted is True
            assert result.watched is (True if watch else None)
            received = gw.take_messages(target)
            assert len(received) == 1
            assert same(received[0], text)
        elif method == "sessions_send.deliver":
            assert result.accepted is True
            assert len(delivered) == 1
            assert delivered[0][:2] == (sender, target)
            assert same(delivered[0][2], text)
            assert gw.take_messages(target) == []
        elif method == "enqueue_system_event":
            # System-event texts are trimmed (as the host's own queue does); a text that is
            # only whitespace is not queued. Nothing else about the text changes.
            drained = gw.drain(target)
            assert result is bool(text.strip())
            assert drained == ([text.strip()] if text.strip() else [])
            assert all(same(d, text.strip()) for d in drained)
        else:
            assert result is None
            hashes = own_hashes(gw, target, "main")
            assert 0 < len(hashes) <= gw.config.own_text_window
            assert all(HEX64.fullmatch(h) for h in hashes)

    prop()
    report("sessions_send/enqueue_system_event/note_own_text texts", model,
           check_database(gw.location))


# --- closed-set arguments of other types ---------------------------------------------


def categorical_call(gw: Gateway, which: str, value: Any, transcript: Path) -> Callable[[], Any]:
    match which:
        case "action":
            return lambda: gw.set_goal("agent:main:goal", action=value)
        case "chat_type":
            return lambda: gw.create_session("agent:main:chat", chat_type=value)
        case "source":
            return lambda: gw.adopt("agent:main:adopted", source=value, path=transcript)
        case "kind":
            return lambda: gw.record(SessionStateEventInput(
                session_key="agent:main:kind", kind=value, actor_type="system", summary="s"))
        case "actor_type":
            return lambda: gw.set_goal("agent:main:goal", action="set", actor_type=value)
        case _:
            return lambda: gw.finish_run("agent:main:run", run_id="r", outcome=value)


CATEGORICAL = {"action": (GOAL_ACTIONS, InvalidArgument),
               "chat_type": (CHAT_TYPES, InvalidArgument),
               "source": (SOURCES, InvalidArgument),
               "kind": (KINDS, InvalidKind),
               "actor_type": (ACTOR_TYPES, InvalidKind),
               "outcome": (OUTCOMES, InvalidOutcome)}


def run_categorical(gw: Gateway, model: Model, transcript: Path,
                    values: Callable[[tuple[str, ...]], st.SearchStrategy[Any]]) -> None:
    @SETTINGS
    @given(which=st.sampled_from(sorted(CATEGORICAL)), data=st.data())
    def prop(which: str, data: st.DataObject) -> None:
        model.tally["examples"] += 1
        allowed, error = CATEGORICAL[which]
        value = data.draw(values(allowed), label="value")
        verdict = choice_verdict(value, which, allowed, error)
        if which == "chat_type" and value is None:
            verdict = OK  # chat_type is optional
        if which == "source" and value == "opencode":
            verdict = bad(InvalidArgument, "thread_id")  # OpenCode needs its session id
        if which == "kind" and value == "run_failed":
            verdict = bad(InvalidOutcome, "payload")  # a run_failed event needs its outcome
        accepted, _ = attempt(verdict, categorical_call(gw, which, value, transcript), which)
        model.tally["accepted" if accepted else "rejected"] += 1

    prop()


def test_closed_set_arguments_of_any_hashable_type_are_rejected_with_documented_errors(
    fuzz_gateway: tuple[Gateway, Model], tmp_path: Path,
) -> None:
    gw, model = fuzz_gateway
    transcript = tmp_path / "claude.jsonl"
    transcript.write_bytes(claude_user("hello"))
    every = sorted({v for allowed, _ in CATEGORICAL.values() for v in allowed})
    run_categorical(gw, model, transcript, lambda allowed: st.one_of(
        st.sampled_from(allowed), st.sampled_from(every), BAD_CHOICES))
    report("kinds/actor types/outcomes/actions/chat types/sources", model,
           check_database(gw.location))


def test_unhashable_closed_set_arguments_raise_argument_type_error(
    fuzz_gateway: tuple[Gateway, Model], tmp_path: Path,
) -> None:
    gw, model = fuzz_gateway
    transcript = tmp_path / "claude.jsonl"
    transcript.write_bytes(claude_user("hello"))
    unhashable = [["set"], {"group": 1}, {"claude"}, bytearray(b"ok"), [], {}]
    try:
        run_categorical(gw, model, transcript, lambda _: st.sampled_from(unhashable))
    finally:
        report("unhashable closed-set arguments", model, check_database(gw.location))
