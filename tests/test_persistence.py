"""The signal log's transactions and the persistence actor, tested directly.

Transaction functions run on a plain APSW connection (no threads); the
persistence actor is tested for group commit and per-command rollback.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pykka
import pytest

from persistence import (
    Acknowledge,
    PersistenceActor,
    RecordEvent,
    RecordOutcome,
    RegisterWatch,
    open_backend,
    open_connection,
    prepare_path,
    read_changes,
    read_version,
    submit,
)
from persistence._messages import WriteRequest
from persistence._prune import prune
from persistence._writes import acknowledge, clamp_occurred_at, record_event, register_watch
from persistence.errors import SchemaError, StorageError
from tests.conftest import DAY_MS, START_MS

W = "agent:main:main"
T = ("agent:main:worker", "main")
TIMEOUT = 5.0


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    path = tmp_path / "db" / "s.sqlite"
    prepare_path(path)
    connection = open_connection(str(path), writer=True, migrate=True)
    yield connection
    connection.close()


def _event(kind: str = "human_direct_message", **kw: Any) -> RecordEvent:
    fields: dict[str, Any] = {"session_key": T[0], "agent_id": T[1], "kind": kind,
                              "actor_type": "human", "summary": "human message via test"}
    fields.update(kw)
    return RecordEvent(**fields)


def _cursor(conn: apsw.Connection, watcher: str = W) -> tuple[int, int, int] | None:
    row = conn.execute(
        "SELECT last_seen_sequence, notified_sequence, material_sequence"
        " FROM session_watch_cursors WHERE watcher_session_key = ? AND target_session_key = ?",
        (watcher, T[0]),
    ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), int(row[2]))


def test_database_file_is_private_and_directory_is_0700(tmp_path: Path) -> None:
    path = tmp_path / "new" / "s.sqlite"  # a path given gets its own folder (not a tree)
    prepare_path(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


def test_a_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "foreign.sqlite"
    other = apsw.Connection(str(path))
    other.execute("CREATE TABLE t (x)")
    other.close()
    with pytest.raises(SchemaError):
        open_connection(str(path), writer=True, migrate=True)


def test_a_newer_schema_is_refused(conn: apsw.Connection, tmp_path: Path) -> None:
    conn.pragma("user_version", 99)
    with pytest.raises(SchemaError, match="schema version 99"):
        open_connection(conn.filename, writer=True, migrate=True)


def test_occurred_at_is_clamped_to_the_last_24_hours() -> None:
    assert clamp_occurred_at(None, START_MS) == START_MS
    assert clamp_occurred_at(START_MS + 5, START_MS) == START_MS
    assert clamp_occurred_at(0, START_MS) == START_MS - DAY_MS
    assert clamp_occurred_at(START_MS - 10, START_MS) == START_MS - 10


def test_a_record_inserts_bumps_the_head_and_opens_a_notice(conn: apsw.Connection) -> None:
    with conn:
        register_watch(conn, RegisterWatch(watcher_key=W, target_key=T[0],
                                           target_agent_id=T[1]), START_MS, 1)
        outcome = record_event(conn, _event(), START_MS, 2)
    assert outcome.inserted
    assert outcome.event is not None
    seq = outcome.event.sequence
    assert read_version(conn, *T) == seq
    assert _cursor(conn) == (0, seq, seq)
    assert [(n.watcher_key, n.last_seen, n.pending) for n in outcome.notices] == [(W, 0, True)]


def test_a_dedupe_repeat_returns_the_stored_row_and_changes_nothing(conn: apsw.Connection) -> None:
    with conn:
        register_watch(conn, RegisterWatch(watcher_key=W, target_key=T[0],
                                           target_agent_id=T[1]), START_MS, 1)
        first = record_event(conn, _event(dedupe_key="d-1"), START_MS, 2)
        cursor = _cursor(conn)
        again = record_event(conn, _event(dedupe_key="d-1", summary="other"), START_MS + 1, 3)
    assert not again.inserted
    assert again.event == first.event
    assert again.notices == ()
    assert _cursor(conn) == cursor


def test_only_if_watched_skips_unwatched_sessions(conn: apsw.Connection) -> None:
    with conn:
        outcome = record_event(conn, _event(only_if_watched=True), START_MS, 1)
    assert outcome.event is None
    assert read_version(conn, *T) == 0


def test_acknowledge_uses_the_frozen_watermark(conn: apsw.Connection) -> None:
    with conn:
        register_watch(conn, RegisterWatch(watcher_key=W, target_key=T[0],
                                           target_agent_id=T[1]), START_MS, 1)
        e1 = record_event(conn, _event(), START_MS, 2).event
        e2 = record_event(conn, _event(), START_MS, 3).event
        assert e1 is not None
        assert e2 is not None
        ack = acknowledge(conn, Acknowledge(watcher_key=W, targets=(T,)), START_MS, 4)
    assert _cursor(conn) == (e1.sequence, e2.sequence, e2.sequence)
    assert [(n.last_seen, n.version) for n in ack.notices] == [(e1.sequence, 4)]


def test_changes_since_pages_and_reports_truncation(conn: apsw.Connection) -> None:
    with conn:
        for name in ("first", "second", "third"):
            record_event(conn, _event(summary=name), START_MS, 1)
    version, changes = read_changes(conn, *T, 0, 2)
    assert version == 3
    assert [e.summary for e in changes.events] == ["first", "second"]
    assert changes.truncated
    assert changes.earliest_available_sequence == 1
    assert not changes.history_gap


def test_pruning_stamps_the_watermark_before_deleting(conn: apsw.Connection) -> None:
    with conn:
        old = record_event(conn, _event(summary="old"), START_MS, 1).event
        later = START_MS + 31 * DAY_MS
        fresh = record_event(conn, _event(summary="fresh"), later, 2).event
        assert old is not None
        assert fresh is not None
        assert prune(conn, later, retention_days=30, max_rows=50_000) == (1, 0)
    version, changes = read_changes(conn, *T, 0, 200)
    assert version == fresh.sequence
    assert changes.history_gap
    assert [e.summary for e in changes.events] == ["fresh"]
    _, exact = read_changes(conn, *T, old.sequence, 200)
    assert not exact.history_gap


def test_the_row_cap_keeps_the_newest_rows_and_heads_stay_monotonic(
    conn: apsw.Connection,
) -> None:
    with conn:
        for _ in range(5):
            record_event(conn, _event(), START_MS, 1)
        assert prune(conn, START_MS, retention_days=30, max_rows=3) == (2, 0)
        newest = record_event(conn, _event(), START_MS, 2).event
    assert newest is not None
    assert newest.sequence == 6
    _, changes = read_changes(conn, *T, 0, 200)
    assert [e.sequence for e in changes.events] == [3, 4, 5, 6]
    assert changes.history_gap


class _GatedPersistence(PersistenceActor):
    """Counts flushed batches; a `(entered, gate)` pair of events holds the actor."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[int] = []

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, tuple):
            entered, gate = message
            entered.set()
            assert gate.wait(TIMEOUT)
            return None
        return super().on_receive(message)

    def _flush_batch(self, batch: list[Any]) -> None:
        if batch:
            self.batches.append(len(batch))
        super()._flush_batch(batch)


def _start_gated(path: Path) -> pykka.ActorRef[Any]:
    prepare_path(path)
    open_connection(str(path), writer=True, migrate=True).close()
    return _GatedPersistence.start(open_backend(path), clock=lambda: START_MS,
                                   versions=itertools.count(1))


def test_waiting_writes_share_one_transaction_and_a_failing_one_rolls_back_alone(
    tmp_path: Path,
) -> None:
    ref = _start_gated(tmp_path / "g.sqlite")
    holder = None
    try:
        # Another thread drives the actor and is held inside it by the gate,
        # so the writes below queue up behind it (the runtime is inline).
        entered, gate = threading.Event(), threading.Event()
        holder = threading.Thread(target=ref.tell, args=((entered, gate),))
        holder.start()
        assert entered.wait(TIMEOUT)
        futures = []
        for i in range(50):
            # Command 7 is broken on purpose: summary is NOT NULL.
            summary: Any = None if i == 7 else "human message via test"
            future: pykka.ThreadingFuture[Any] = pykka.ThreadingFuture()
            command = _event(session_key=f"agent:main:s{i}", summary=summary)
            ref.tell(WriteRequest(command=command, reply=future))
            futures.append(future)
        gate.set()
        results = []
        for i, future in enumerate(futures):
            if i == 7:
                with pytest.raises(StorageError):
                    future.get(timeout=TIMEOUT)
            else:
                results.append(future.get(timeout=TIMEOUT))
        assert ref.proxy().batches.get(timeout=TIMEOUT) == [50]
        assert all(isinstance(r, RecordOutcome) and r.inserted for r in results)
        assert len({r.event.sequence for r in results}) == 49
        last = submit(ref, _event(session_key="agent:main:after"), timeout=TIMEOUT)
        assert last.event.sequence == 50
    finally:
        gate.set()
        if holder is not None:
            holder.join(TIMEOUT)
        ref.stop(block=True, timeout=TIMEOUT)
