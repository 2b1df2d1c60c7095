"""The anchor's acceptance scenarios, ported to this library's public API.

Source: ``anchor-openclaw-behaviour.md`` §4.1 items 1-30 (store-path items 22,
31-33, the ``created`` kind and actor classification, item 20, have no
equivalent here) and §4.2 item 38 with this library's notice text, which has
no ``Open: [session]`` link (``api-contract.md``, "Notices").

Where this library deliberately differs from the anchor, the tests check our
behaviour: cursor targets are ``(target_key, target_agent_id)`` pairs, a
pair's notice holds one queue slot, and ``on_wake`` has run by the time a
producer returns (no 20 s coalescing).

"Clearing the queue" without acknowledging is done the way a real watcher
loses a notice: by overflowing its bounded queue with ordinary system events.
A restart sweep is a close and reopen; a forced prune runs at every open.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw

from actors import Gateway, GatewayConfig, SessionStateEventInput
from persistence import open_backend
from tests.conftest import (
    CHILD,
    GROUP,
    NESTED_WATCHER,
    RETENTION_MS,
    START_MS,
    WATCHER,
    ManualClock,
    WakeRecorder,
)

OpenGateway = Callable[..., Gateway]
Cursor = tuple[int, int, int, str]

CHILD_2 = "agent:main:subagent:child-2"
COORDINATOR = "agent:main:coordinator"
DORMANT = "agent:main:slack:channel:dormant"
QUEUE_LIMIT = GatewayConfig().queue_limit


# --- helpers ---------------------------------------------------------------


@contextmanager
def _db(db_path: Path, *, write: bool = False) -> Iterator[apsw.Connection]:
    """A separate connection to the test database, closed on exit."""
    flags = apsw.SQLITE_OPEN_READWRITE if write else apsw.SQLITE_OPEN_READONLY
    conn = apsw.Connection(str(db_path), flags=flags)
    conn.set_busy_timeout(5000)
    try:
        yield conn
    finally:
        conn.close()


def _rows(location: Path | str, sql: str,
          params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of one query on either backend (``location``: ``gateway.location``)."""
    conn = open_backend(location).connect(writer=False)
    try:
        return [tuple(r) for r in conn.execute(sql, params).fetchall()]
    finally:
        conn.close()


def _cursor(db_path: Path | str, watcher: str, target: str,
            agent_id: str = "main") -> Cursor | None:
    """``(last_seen, notified, material, provenance)`` of one durable cursor."""
    rows = _rows(
        db_path,
        "SELECT last_seen_sequence, notified_sequence, material_sequence, provenance"
        " FROM session_watch_cursors WHERE watcher_session_key = ?"
        " AND target_session_key = ? AND target_agent_id = ?",
        (watcher, target, agent_id),
    )
    assert len(rows) <= 1
    return rows[0] if rows else None


def _cursor_rows(db_path: Path | str) -> list[tuple[Any, ...]]:
    return _rows(
        db_path,
        "SELECT watcher_session_key, target_session_key, target_agent_id, last_seen_sequence,"
        " notified_sequence, material_sequence, provenance, updated_at"
        " FROM session_watch_cursors ORDER BY 1, 2, 3",
    )


def _event_count(db_path: Path | str) -> int:
    return int(_rows(db_path, "SELECT count(*) FROM session_state_events")[0][0])


def _notice(target: str, last_seen: int) -> str:
    """The contract's exact notice line."""
    return (
        f'Session "{target}" changed (other actor). Reconcile before acting: '
        f'session_status sessionKey "{target}" changesSince {last_seen}.'
    )


def _notices(texts: Iterable[str]) -> list[str]:
    """The session-state notices among queued system-event texts."""
    return [t for t in texts if t.startswith('Session "') and "changesSince" in t]


def _evict_queue(gw: Gateway, watcher: str) -> None:
    """Lose every queued notice of ``watcher`` without acknowledging it (queue overflow)."""
    for i in range(QUEUE_LIMIT):
        assert gw.enqueue_system_event(watcher, f"filler {i}", context_key=f"filler:{i}")
    assert _notices(gw.pending_notices(watcher)) == []


def _event(summary: str = "human message via test", **fields: Any) -> SessionStateEventInput:
    """The anchor's default test event, on ``CHILD``."""
    fields.setdefault("session_key", CHILD)
    fields.setdefault("kind", "human_direct_message")
    fields.setdefault("actor_type", "human")
    return SessionStateEventInput(summary=summary, **fields)


def _seed(gw: Gateway, watcher: str = WATCHER, child: str = CHILD,
          run_id: str = "run-seed") -> int:
    """Spawn ``child`` from ``watcher`` (the anchor's ``seedChild``); returns the seed."""
    spawned = gw.spawn_subagent(watcher, child, run_id=run_id)
    assert spawned is not None
    return spawned.sequence


def _material(gw: Gateway, child: str = CHILD, channel: str = "test") -> int:
    event = gw.human_message(child, channel=channel)
    assert event is not None
    return event.sequence


def _reopen(gw: Gateway, open_gateway: OpenGateway, **kwargs: Any) -> Gateway:
    """Restart: close ``gw`` and open a new gateway (restart sweep + forced prune)."""
    gw.close()
    return open_gateway(**kwargs)


# --- 4.1 core log, cursors, notices ---------------------------------------


def test_the_head_survives_pruning_of_every_event_of_the_session(
    gateway: Gateway, open_gateway: OpenGateway, clock: ManualClock
) -> None:
    """§4.1 item 1."""
    event = gateway.record(_event())
    assert event is not None
    assert gateway.session_status(CHILD).state_version == event.sequence

    clock.advance(RETENTION_MS + 1)
    gw = _reopen(gateway, open_gateway)

    status = gw.session_status(CHILD, changes_since=0)
    assert status.state_version == event.sequence
    assert status.state_changes is not None
    assert status.state_changes.events == ()
    assert status.state_changes.history_gap is True
    assert status.state_changes.earliest_available_sequence == event.sequence + 1
    assert _event_count(gw.location) == 0


def test_a_burst_of_material_events_queues_one_notice_frozen_at_the_first(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 2: the frozen watermark."""
    seed = _seed(gateway)
    e1, _e2, e3 = (_material(gateway) for _ in range(3))

    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, seed)]
    assert _cursor(gateway.location, WATCHER, CHILD) == (seed, e1, e3, "explicit")
    assert wakes.calls == [WATCHER]


def test_draining_acks_only_the_frozen_watermark_and_reopens_for_interleaved_work(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 3."""
    seed = _seed(gateway)
    e1 = _material(gateway)
    e2 = _material(gateway)

    assert gateway.drain(WATCHER) == [_notice(CHILD, seed)]

    assert _cursor(gateway.location, WATCHER, CHILD) == (e1, e2, e2, "explicit")
    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, e1)]
    assert wakes.calls == [WATCHER, WATCHER]


def test_log_only_events_neither_reopen_a_drained_notice_nor_come_back_at_restart(
    gateway: Gateway, open_gateway: OpenGateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 4."""
    seed = _seed(gateway)
    e1 = _material(gateway)
    done = gateway.finish_run(CHILD, run_id="run-log-only", outcome="ok")
    assert done is not None
    assert done.kind == "run_completed"
    assert done.actor_type == "system"

    assert gateway.drain(WATCHER) == [_notice(CHILD, seed)]
    assert _cursor(gateway.location, WATCHER, CHILD) == (e1, e1, e1, "explicit")
    assert gateway.pending_notices(WATCHER) == []

    gw = _reopen(gateway, open_gateway)
    assert gw.pending_notices(WATCHER) == []
    assert _cursor(gw.location, WATCHER, CHILD) == (e1, e1, e1, "explicit")
    assert wakes.calls == [WATCHER]


def test_a_nested_subagent_watcher_is_notified_without_a_wake(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 5, nested part."""
    seed = _seed(gateway, NESTED_WATCHER, CHILD)
    _material(gateway, CHILD)

    assert gateway.pending_notices(NESTED_WATCHER) == [_notice(CHILD, seed)]
    assert wakes.calls == []


def test_a_main_session_watcher_is_woken_before_the_producer_returns(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 5, main part (our wake is synchronous, not coalesced over 20 s)."""
    _seed(gateway, NESTED_WATCHER, CHILD, run_id="run-nested")
    _seed(gateway, WATCHER, CHILD_2, run_id="run-main")
    assert wakes.calls == []

    _material(gateway, CHILD)
    assert wakes.calls == []
    _material(gateway, CHILD_2)
    assert wakes.calls == [WATCHER]


def test_an_agent_is_never_notified_of_its_own_change(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 6: self-suppression."""
    seed = _seed(gateway)
    event = gateway.record(_event(actor_type="agent", actor_id=WATCHER))
    assert event is not None
    assert event.sequence > seed

    assert _cursor(gateway.location, WATCHER, CHILD) == (seed, seed, seed, "explicit")
    assert gateway.pending_notices(WATCHER) == []
    assert wakes.calls == []


def test_a_compaction_is_logged_but_queues_nothing(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 7."""
    seed = _seed(gateway)
    event = gateway.compacted(CHILD, operation_id="op-1")
    assert event is not None
    assert (event.kind, event.actor_type, event.summary) == (
        "compacted", "system", "session compacted")

    assert gateway.session_status(CHILD).state_version == event.sequence
    assert gateway.pending_notices(WATCHER) == []
    assert _cursor(gateway.location, WATCHER, CHILD) == (seed, seed, seed, "explicit")
    assert wakes.calls == []


def test_upstream_missing_notifies_the_watcher(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 8."""
    seed = _seed(gateway)
    event = gateway.record(_event("upstream missing via claude", kind="upstream_missing",
                                  actor_type="system", payload={"channel": "claude"}))
    assert event is not None
    assert (event.kind, event.actor_type) == ("upstream_missing", "system")

    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, seed)]
    assert wakes.calls == [WATCHER]


def test_a_repeated_dedupe_key_returns_the_existing_row(gateway: Gateway) -> None:
    """§4.1 item 9."""
    first = gateway.finish_run(CHILD, run_id="run-1", outcome="error")
    second = gateway.finish_run(CHILD, run_id="run-1", outcome="error")
    assert first is not None
    assert second is not None

    assert second.sequence == first.sequence
    assert first.payload == {"outcome": "error"}
    changes = gateway.session_status(CHILD, changes_since=0).state_changes
    assert changes is not None
    assert [e.sequence for e in changes.events] == [first.sequence]


def test_the_restart_sweep_requeues_a_lost_notice_and_refreezes_to_cover_all_pending_work(
    gateway: Gateway, open_gateway: OpenGateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 10 (with two pending events, so the re-freeze is visible)."""
    seed = _seed(gateway)
    e1 = _material(gateway)
    e2 = _material(gateway)
    assert _cursor(gateway.location, WATCHER, CHILD) == (seed, e1, e2, "explicit")

    gw = _reopen(gateway, open_gateway)  # the in-memory queue is lost

    assert gw.pending_notices(WATCHER) == [_notice(CHILD, seed)]
    assert _cursor(gw.location, WATCHER, CHILD) == (seed, e2, e2, "explicit")
    assert wakes.calls == [WATCHER, WATCHER]


def test_the_restart_sweep_requeues_ambient_and_nested_notices_without_a_wake(
    gateway: Gateway, open_gateway: OpenGateway, wakes: WakeRecorder
) -> None:
    """§3.8 step 4: swept notices keep the queue-only and no-wake rules."""
    seed = _seed(gateway, NESTED_WATCHER, CHILD)
    _material(gateway, CHILD)
    assert gateway.human_message(GROUP, channel="telegram") is not None
    assert wakes.calls == []

    gw = _reopen(gateway, open_gateway)

    assert gw.pending_notices(NESTED_WATCHER) == [_notice(CHILD, seed)]
    assert gw.pending_notices(WATCHER) == [_notice(GROUP, 0)]
    assert wakes.calls == []


def test_the_restart_sweep_skips_a_watcher_whose_session_does_not_exist(
    gateway: Gateway, open_gateway: OpenGateway, db_path: Path
) -> None:
    """§3.8 step 2: only cursors of existing watcher sessions are swept."""
    ghost = "agent:main:ghost"
    event = gateway.record(_event())
    assert event is not None
    gateway.close()
    with _db(db_path, write=True) as conn, conn:
        conn.execute(
            "INSERT INTO session_watch_cursors (watcher_session_key, target_session_key,"
            " target_agent_id, last_seen_sequence, notified_sequence, material_sequence,"
            " provenance, updated_at) VALUES (?, ?, 'main', 0, 0, ?, 'explicit', ?)",
            (ghost, CHILD, event.sequence, START_MS),
        )

    gw = open_gateway()

    assert gw.pending_notices(ghost) == []
    assert _cursor(db_path, ghost, CHILD) == (0, 0, event.sequence, "explicit")


def test_a_lost_notice_heals_itself_on_the_next_material_event(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 11."""
    seed = _seed(gateway)
    _material(gateway)
    _evict_queue(gateway, WATCHER)

    _material(gateway)

    assert _notices(gateway.pending_notices(WATCHER)) == [_notice(CHILD, seed)]
    assert gateway.pending_notices(WATCHER)[-1] == _notice(CHILD, seed)
    # Wakes are decided by the transaction that opened the notice, once across all
    # processes; re-queueing it here after an overflow is not a new notice.
    assert wakes.calls == [WATCHER]


def test_pruning_by_row_cap_keeps_the_newest_rows_and_sequences_monotonic(
    gateway: Gateway, open_gateway: OpenGateway, db_path: Path
) -> None:
    """§4.1 item 12: 50,001 rows are cut to 50,000; sequences are never reused."""
    gateway.close()
    count = 50_001
    with _db(db_path, write=True) as conn, conn:
        conn.executemany(
            "INSERT INTO session_state_events (dedupe_key, session_key, agent_id,"
            " session_id, kind, actor_type, actor_id, run_id, occurred_at, summary,"
            " payload_json) VALUES (NULL, 'bulk', 'main', NULL, 'compacted', 'system',"
            " NULL, NULL, ?, 'session compacted', NULL)",
            ((START_MS,) for _ in range(count)),
        )
        bounds = conn.execute(
            "SELECT min(sequence), max(sequence) FROM session_state_events").fetchone()
        assert bounds is not None
        first, last = int(bounds[0]), int(bounds[1])
        conn.execute(
            "INSERT INTO session_state_heads (session_key, agent_id, last_sequence,"
            " updated_at) VALUES ('bulk', 'main', ?, ?)", (last, START_MS))
    assert last - first + 1 == count

    gw = open_gateway()

    assert _event_count(db_path) == 50_000
    assert _rows(db_path, "SELECT min(sequence) FROM session_state_events") == [(first + 1,)]
    bulk = gw.session_status("bulk", changes_since=0)
    assert bulk.state_version == last
    assert bulk.state_changes is not None
    assert bulk.state_changes.history_gap is True
    assert bulk.state_changes.earliest_available_sequence == first + 1
    assert gw.session_status("bulk", changes_since=first).state_changes.history_gap is False  # type: ignore[union-attr]

    event = gw.compacted(CHILD, operation_id="after-cap")
    assert event is not None
    assert event.sequence > last
    assert gw.session_status(CHILD).state_version == event.sequence


def test_pruning_stamps_every_existing_composite_head_and_creates_none(
    gateway: Gateway, open_gateway: OpenGateway, db_path: Path
) -> None:
    """§4.1 item 13: 257 (key, agent) pairs, two old events each, varied prior watermarks.

    (The anchor's invalid-UTF-8 key part has no equivalent: keys are validated str.)
    """
    gateway.close()
    pairs = [(f"session-{i % 100}", f"agent-{i // 100}") for i in range(257)]
    old = START_MS - RETENTION_MS - 100
    with _db(db_path, write=True) as conn, conn:
        conn.executemany(
            "INSERT INTO session_state_events (session_key, agent_id, kind, actor_type,"
            " occurred_at, summary) VALUES (?, ?, 'compacted', 'system', ?, 'old')",
            [(key, agent, old) for _round in range(2) for key, agent in pairs],
        )
        seqs = {
            (str(k), str(a)): (int(lo), int(hi)) for k, a, lo, hi in conn.execute(
                "SELECT session_key, agent_id, min(sequence), max(sequence)"
                " FROM session_state_events GROUP BY 1, 2")
        }
        expected: dict[tuple[str, str], tuple[int, int, int]] = {}
        for i, pair in enumerate(pairs):
            lo, hi = seqs[pair]
            prior = (None, 0, lo, 999_999)[i % 4]
            if prior is None:
                continue  # no head: pruning must not create one
            conn.execute(
                "INSERT INTO session_state_heads (session_key, agent_id, last_sequence,"
                " pruned_max_sequence, updated_at) VALUES (?, ?, 1000000, ?, 7)",
                (*pair, prior),
            )
            expected[pair] = (1_000_000, max(prior, hi), START_MS if hi > prior else 7)

    gw = open_gateway()

    heads_sql = (
        "SELECT session_key, agent_id, last_sequence, pruned_max_sequence, updated_at"
        " FROM session_state_heads ORDER BY 1, 2"
    )
    heads = {(str(r[0]), str(r[1])): (r[2], r[3], r[4]) for r in _rows(db_path, heads_sql)}
    assert heads == expected
    assert _event_count(db_path) == 0
    sample = gw.session_status("session-1", agent_id="agent-0", changes_since=0)
    assert sample.state_version == 1_000_000
    assert sample.state_changes is not None
    assert sample.state_changes.history_gap is True

    before = _rows(db_path, heads_sql)
    _reopen(gw, open_gateway)
    assert _rows(db_path, heads_sql) == before


def test_changes_since_pages_and_truncates_and_a_deleted_row_is_not_a_gap(
    open_gateway: OpenGateway, db_path: Path
) -> None:
    """§4.1 item 14 (the page size is ``changes_limit``)."""
    gw = open_gateway(GatewayConfig(changes_limit=2))
    first = gw.record(_event("first"))
    second = gw.record(_event("second", payload={"status": "active"}))
    third = gw.record(_event("third"))
    assert first is not None
    assert second is not None
    assert third is not None

    changes = gw.session_status(CHILD, changes_since=0).state_changes
    assert changes is not None
    assert [e.summary for e in changes.events] == ["first", "second"]
    assert changes.events[1].payload == {"status": "active"}
    assert changes.truncated is True
    assert changes.history_gap is False
    assert changes.earliest_available_sequence == first.sequence

    with _db(db_path, write=True) as conn:
        conn.execute("DELETE FROM session_state_events WHERE sequence = ?", (first.sequence,))

    changes = gw.session_status(CHILD, changes_since=0).state_changes
    assert changes is not None
    assert [e.summary for e in changes.events] == ["second", "third"]
    assert changes.history_gap is False
    assert changes.truncated is False
    assert changes.earliest_available_sequence == second.sequence


def test_history_gap_comes_only_from_real_pruning(
    gateway: Gateway, open_gateway: OpenGateway, clock: ManualClock
) -> None:
    """§4.1 item 15."""
    for i in range(3):
        assert gateway.compacted("agent:main:noise", operation_id=f"noise-{i}") is not None
    old = gateway.record(_event("old"))
    assert old is not None
    assert old.sequence > 1
    changes = gateway.session_status(CHILD, changes_since=0).state_changes
    assert changes is not None
    assert changes.history_gap is False

    clock.advance(RETENTION_MS + 1)
    fresh = gateway.record(_event("fresh"))
    assert fresh is not None
    gw = _reopen(gateway, open_gateway)

    since_zero = gw.session_status(CHILD, changes_since=0)
    assert since_zero.state_changes is not None
    assert since_zero.state_changes.history_gap is True
    assert [e.summary for e in since_zero.state_changes.events] == ["fresh"]
    since_old = gw.session_status(CHILD, changes_since=old.sequence)
    assert since_old.state_changes is not None
    assert since_old.state_changes.history_gap is False
    assert [e.summary for e in since_old.state_changes.events] == ["fresh"]
    assert since_old.state_version == fresh.sequence


def test_a_bare_global_watcher_gets_no_cursor_and_no_notice(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 16."""
    spawned = gateway.spawn_subagent("global", CHILD, run_id="run-global")
    assert spawned is not None
    gateway.create_session(CHILD, spawned_by="global")
    event = gateway.human_message(CHILD, channel="test")
    assert event is not None
    assert event.sequence > spawned.sequence > 0

    assert gateway.pending_notices("global") == []
    assert gateway.pending_notices("agent:main:global") == []
    assert _cursor_rows(gateway.location) == []
    assert wakes.calls == []


def test_same_keyed_global_sessions_of_two_agents_are_independent(gateway: Gateway) -> None:
    """§4.1 item 17."""
    main = gateway.record(SessionStateEventInput(
        session_key="global", kind="goal_changed", actor_type="human", summary="goal set"))
    ops = gateway.record(SessionStateEventInput(
        session_key="global", kind="goal_changed", actor_type="human", summary="goal set",
        agent_id="ops"))
    assert main is not None
    assert ops is not None
    assert (main.agent_id, ops.agent_id) == ("main", "ops")
    assert main.sequence != ops.sequence

    assert gateway.session_status("global").state_version == main.sequence
    assert gateway.session_status("global", agent_id="ops").state_version == ops.sequence
    changes = gateway.session_status("global", changes_since=0).state_changes
    assert changes is not None
    assert [(e.sequence, e.agent_id) for e in changes.events] == [(main.sequence, "main")]
    assert [(r.session_key, r.state_version) for r in gateway.sessions_list(agent_id="ops")] == [
        ("global", ops.sequence)]

    gateway.delete_session("global", agent_id="ops")

    assert gateway.session_status("global", agent_id="ops").state_version == 0
    assert gateway.session_status("global").state_version == main.sequence
    assert gateway.sessions_list(agent_id="ops") == []


def test_one_agents_global_events_never_notify_a_watcher_of_another_agents_global(
    gateway: Gateway, wakes: WakeRecorder, db_path: Path
) -> None:
    """Our deliberate difference: cursor targets are (key, agent) pairs (anchor §3.14)."""
    ops_watcher = "agent:ops:main"
    assert gateway.watch(WATCHER, "global") is True  # main's global (the bare key's agent)
    assert gateway.watch(ops_watcher, "global", agent_id="ops") is True

    ops = gateway.record(SessionStateEventInput(
        session_key="global", kind="human_direct_message", actor_type="human",
        summary="human message via test", agent_id="ops"))
    assert ops is not None

    assert gateway.pending_notices(WATCHER) == []
    assert _cursor(db_path, WATCHER, "global") == (0, 0, 0, "explicit")
    assert gateway.pending_notices(ops_watcher) == [_notice("global", 0)]
    assert _cursor(db_path, ops_watcher, "global", "ops") == (0, ops.sequence, ops.sequence,
                                                              "explicit")
    assert wakes.calls == [ops_watcher]

    main = gateway.record(SessionStateEventInput(
        session_key="global", kind="human_direct_message", actor_type="human",
        summary="human message via test"))
    assert main is not None
    assert gateway.pending_notices(WATCHER) == [_notice("global", 0)]
    assert _cursor(db_path, WATCHER, "global") == (0, main.sequence, main.sequence, "explicit")
    assert _cursor(db_path, ops_watcher, "global", "ops") == (0, ops.sequence, ops.sequence,
                                                              "explicit")
    assert wakes.calls == [ops_watcher, WATCHER]


def test_draining_acknowledges_only_session_state_notices(gateway: Gateway) -> None:
    """§4.1 item 18."""
    seed = _seed(gateway)
    e1 = _material(gateway)
    assert gateway.enqueue_system_event(WATCHER, "Cron completed", context_key="cron:job-1")

    assert gateway.drain(WATCHER) == [_notice(CHILD, seed), "Cron completed"]
    assert _cursor(gateway.location, WATCHER, CHILD) == (e1, e1, e1, "explicit")

    e2 = _material(gateway)
    _evict_queue(gateway, WATCHER)
    assert gateway.enqueue_system_event(WATCHER, "Exec completed", context_key="exec:job-1")
    drained = gateway.drain(WATCHER)

    assert drained[-1] == "Exec completed"
    assert _notices(drained) == []
    assert _cursor(gateway.location, WATCHER, CHILD) == (e1, e2, e2, "explicit")
    # Our improvement: the notice overflow dropped comes back once the drain made room.
    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, e1)]


def test_reset_drops_the_watchers_cursors_and_delete_drops_the_targets_history(
    gateway: Gateway
) -> None:
    """§4.1 item 19."""
    seed = _seed(gateway)
    e1 = _material(gateway)
    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, seed)]

    gateway.reset_session(WATCHER)

    assert _cursor(gateway.location, WATCHER, CHILD) is None
    assert gateway.pending_notices(WATCHER) == []
    kept = gateway.session_status(CHILD, changes_since=0)
    assert kept.state_version == e1
    assert kept.state_changes is not None
    assert [e.sequence for e in kept.state_changes.events] == [seed, e1]

    assert gateway.watch(COORDINATOR, CHILD) is True
    _material(gateway)
    assert gateway.pending_notices(COORDINATOR) == [_notice(CHILD, e1)]

    gateway.delete_session(CHILD, agent_id="main")

    gone = gateway.session_status(CHILD, changes_since=0)
    assert gone.state_version == 0
    assert gone.state_changes is not None
    assert gone.state_changes.events == ()
    assert _cursor_rows(gateway.location) == []
    assert gateway.pending_notices(COORDINATOR) == []


def test_an_explicit_watch_starts_at_the_targets_head_and_reregistering_keeps_the_cursor(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 21."""
    pre = gateway.record(_event("before registration"))
    assert pre is not None
    p = pre.sequence

    assert gateway.watch(CHILD, CHILD) is False
    assert gateway.watch("global", CHILD) is False
    assert gateway.watch(WATCHER, CHILD) is True
    assert gateway.pending_notices(WATCHER) == []
    assert _cursor(gateway.location, WATCHER, CHILD) == (p, p, p, "explicit")

    a = _material(gateway)
    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, p)]

    assert gateway.watch(WATCHER, CHILD) is True
    assert _cursor(gateway.location, WATCHER, CHILD) == (p, a, a, "explicit")
    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, p)]
    assert wakes.calls == [WATCHER]
    assert len(_cursor_rows(gateway.location)) == 1


def test_repeated_group_turns_keep_one_ambient_row_without_reseeding(gateway: Gateway) -> None:
    """§4.1 item 23 (ambient registration happens on a human group turn here)."""
    e1 = gateway.human_message(GROUP, channel="telegram")
    assert e1 is not None
    rows = _cursor_rows(gateway.location)
    assert [(r[0], r[1], r[2], r[6]) for r in rows] == [(WATCHER, GROUP, "main", "ambient-group")]
    assert _cursor(gateway.location, WATCHER, GROUP) == (
        0, e1.sequence, e1.sequence, "ambient-group")

    e2 = gateway.human_message(GROUP, channel="telegram")
    assert e2 is not None

    assert len(_cursor_rows(gateway.location)) == 1
    assert _cursor(gateway.location, WATCHER, GROUP) == (
        0, e1.sequence, e2.sequence, "ambient-group")


def test_a_group_chat_routed_into_the_main_session_does_not_watch_itself(
    gateway: Gateway
) -> None:
    """§4.1 item 24: the main session itself, marked as a group chat, gets no ambient watch."""
    gateway.create_session(WATCHER, chat_type="group")

    assert gateway.human_message(WATCHER, channel="telegram") is None

    assert _cursor_rows(gateway.location) == []
    assert gateway.session_status(WATCHER).state_version == 0
    rows = gateway.sessions_list()
    assert [(r.session_key, r.chat_type, r.state_version) for r in rows] == [
        (WATCHER, "group", None)]


def test_group_scope_main_registers_no_ambient_watch(
    open_gateway: OpenGateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 24, the ``group_scope="main"`` reading: group turns are not watched."""
    gw = open_gateway(GatewayConfig(group_scope="main"))

    assert gw.human_message(GROUP, channel="telegram") is None

    assert _cursor_rows(gw.location) == []
    assert gw.pending_notices(WATCHER) == []
    assert wakes.calls == []


def test_ambient_group_turns_coalesce_into_one_notice_without_a_wake(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 25."""
    e1 = gateway.human_message(GROUP, channel="telegram", actor_id="human-1")
    e2 = gateway.human_message(GROUP, channel="telegram", actor_id="human-2")
    assert e1 is not None
    assert e2 is not None

    changes = gateway.session_status(GROUP, changes_since=0).state_changes
    assert changes is not None
    assert [(e.actor_id, e.summary) for e in changes.events] == [
        ("human-1", "human message via telegram"), ("human-2", "human message via telegram")]
    assert gateway.pending_notices(WATCHER) == [_notice(GROUP, 0)]
    cursor = _cursor(gateway.location, WATCHER, GROUP)
    assert cursor is not None
    assert cursor[2] > cursor[1]
    assert wakes.calls == []


def test_draining_an_ambient_notice_queues_a_follow_up_without_a_wake(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§3.7 step 4 for an ambient cursor: the follow-up stays queue-only."""
    e1 = gateway.human_message(GROUP, channel="telegram")
    e2 = gateway.human_message(GROUP, channel="telegram")
    assert e1 is not None
    assert e2 is not None

    assert gateway.drain(WATCHER) == [_notice(GROUP, 0)]

    assert gateway.pending_notices(WATCHER) == [_notice(GROUP, e1.sequence)]
    assert _cursor(gateway.location, WATCHER, GROUP) == (e1.sequence, e2.sequence, e2.sequence,
                                                     "ambient-group")
    assert wakes.calls == []


def test_a_dormant_ambient_cursor_is_pruned_and_an_active_one_kept(
    gateway: Gateway, open_gateway: OpenGateway, clock: ManualClock, db_path: Path
) -> None:
    """§4.1 item 26."""
    assert gateway.human_message(GROUP, channel="telegram") is not None
    assert gateway.human_message(DORMANT, channel="slack") is not None
    assert len(gateway.drain(WATCHER)) == 2
    assert {r[1] for r in _cursor_rows(db_path)} == {GROUP, DORMANT}

    clock.advance(RETENTION_MS + 1)
    assert gateway.human_message(GROUP, channel="telegram") is not None
    gw = _reopen(gateway, open_gateway)

    rows = _cursor_rows(db_path)
    assert [(r[0], r[1], r[6]) for r in rows] == [(WATCHER, GROUP, "ambient-group")]
    assert _notices(gw.pending_notices(WATCHER)) != []


def test_an_explicit_agent_to_agent_watch_of_a_group_wakes_the_watcher(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 27."""
    assert gateway.watch(COORDINATOR, GROUP) is True

    assert gateway.human_message(GROUP, channel="telegram") is not None

    assert gateway.pending_notices(COORDINATOR) == [_notice(GROUP, 0)]
    assert wakes.calls == [COORDINATOR]  # the ambient main-session notice does not wake


def test_an_explicit_watch_promotes_an_ambient_one_and_is_never_downgraded(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 28."""
    e1 = gateway.human_message(GROUP, channel="telegram")
    assert e1 is not None
    assert gateway.drain(WATCHER) == [_notice(GROUP, 0)]
    assert _cursor(gateway.location, WATCHER, GROUP) == (e1.sequence, e1.sequence, e1.sequence,
                                                     "ambient-group")

    assert gateway.watch(WATCHER, GROUP) is True
    assert _cursor(gateway.location, WATCHER, GROUP) == (e1.sequence, e1.sequence, e1.sequence,
                                                     "explicit")

    e2 = gateway.human_message(GROUP, channel="telegram")  # re-runs ambient registration
    assert e2 is not None
    assert _cursor(gateway.location, WATCHER, GROUP) == (e1.sequence, e2.sequence, e2.sequence,
                                                     "explicit")
    assert gateway.pending_notices(WATCHER) == [_notice(GROUP, e1.sequence)]
    assert wakes.calls == [WATCHER]


def test_a_human_turn_into_an_unparented_unwatched_session_is_not_recorded(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 29."""
    assert gateway.human_message(CHILD, channel="test") is None
    assert gateway.session_status(CHILD).state_version == 0

    assert gateway.watch(WATCHER, CHILD) is True
    event = gateway.human_message(CHILD, channel="test")

    assert event is not None
    assert (event.kind, event.actor_type, event.summary) == (
        "human_direct_message", "human", "human message via test")
    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, 0)]
    assert wakes.calls == [WATCHER]


def test_the_producer_helpers_record_the_expected_kinds_once_each(
    gateway: Gateway, wakes: WakeRecorder
) -> None:
    """§4.1 item 30 (without the ``created`` kind, which this library does not have)."""
    spawned = gateway.spawn_subagent(WATCHER, CHILD, run_id="run-child")
    ok1 = gateway.finish_run(CHILD, run_id="run-child", outcome="ok")
    ok2 = gateway.finish_run(CHILD, run_id="run-child", outcome="ok")
    cancelled = gateway.finish_run(CHILD, run_id="run-child-cancelled", outcome="cancelled")
    goal = gateway.set_goal(CHILD, action="set")
    compact1 = gateway.compacted(CHILD, operation_id="compact-1")
    compact2 = gateway.compacted(CHILD, operation_id="compact-1")
    assert spawned is not None
    assert ok1 is not None
    assert ok2 is not None
    assert cancelled is not None
    assert goal is not None
    assert compact1 is not None
    assert compact2 is not None
    assert ok2.sequence == ok1.sequence
    assert compact2.sequence == compact1.sequence

    changes = gateway.session_status(CHILD, changes_since=0).state_changes
    assert changes is not None
    assert [e.kind for e in changes.events] == [
        "child_spawned", "run_completed", "run_failed", "goal_changed", "compacted"]
    assert (spawned.actor_type, spawned.actor_id, spawned.run_id, spawned.summary) == (
        "agent", WATCHER, "run-child", "child session spawned")
    assert (ok1.actor_type, ok1.summary, ok1.payload) == ("system", "child run completed", None)
    assert (cancelled.run_id, cancelled.summary, cancelled.payload) == (
        "run-child-cancelled", "child run cancelled", {"outcome": "cancelled"})
    assert (goal.actor_type, goal.summary) == ("human", "goal set")
    # Only the goal change (the spawn parent is its watcher) notifies.
    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, spawned.sequence)]
    assert wakes.calls == [WATCHER]


# --- our one-slot-per-target queue ----------------------------------------


def test_each_watched_target_holds_exactly_one_queue_slot(gateway: Gateway) -> None:
    """Many changes on two targets leave two notices, one per target, oldest first."""
    s1 = _seed(gateway, WATCHER, CHILD, run_id="run-1")
    s2 = _seed(gateway, WATCHER, CHILD_2, run_id="run-2")
    for _ in range(3):
        _material(gateway, CHILD)
        _material(gateway, CHILD_2)

    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, s1), _notice(CHILD_2, s2)]


def test_a_respawn_withdraws_the_pending_notice_and_notices_from_the_new_seed(
    gateway: Gateway
) -> None:
    """Anchor §3.3: re-spawning the same child reseeds and discards pending notice state."""
    s1 = _seed(gateway, run_id="run-1")
    _material(gateway)
    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, s1)]

    s2 = _seed(gateway, run_id="run-2")
    assert gateway.pending_notices(WATCHER) == []
    assert _cursor(gateway.location, WATCHER, CHILD) == (s2, s2, s2, "explicit")

    e = _material(gateway)
    assert gateway.pending_notices(WATCHER) == [_notice(CHILD, s2)]
    assert _cursor(gateway.location, WATCHER, CHILD) == (s2, e, e, "explicit")


# --- 4.2 notices -------------------------------------------------------------


def test_the_notice_is_exactly_the_contracts_one_line_text(gateway: Gateway) -> None:
    """§4.2 item 38, adapted: our text has no ``Open: [session](...)`` link."""
    target = "agent:main:dashboard:7ac7cf4b-77b2-409f-8b80-214ca1d9851d"
    for i in range(3):
        assert gateway.compacted("agent:main:noise", operation_id=f"noise-{i}") is not None
    fourth = gateway.compacted(target, operation_id="dash-1")
    assert fourth is not None
    assert fourth.sequence == 4
    assert gateway.watch(WATCHER, target) is True

    assert gateway.human_message(target, channel="webchat") is not None

    expected = (
        'Session "agent:main:dashboard:7ac7cf4b-77b2-409f-8b80-214ca1d9851d" changed '
        "(other actor). Reconcile before acting: session_status sessionKey "
        '"agent:main:dashboard:7ac7cf4b-77b2-409f-8b80-214ca1d9851d" changesSince 4.'
    )
    assert gateway.pending_notices(WATCHER) == [expected]
    assert "\n" not in expected
    assert "Open:" not in expected
