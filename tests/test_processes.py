"""Many gateway processes on one signal log (issues 9 and 10), with real processes.

Every test runs on SQLite (one file) and on PostgreSQL (one schema of the
test server; the processes stand for gateways on several hosts, each with
its own connections).

Each child is a ``spawn``-started process holding its own ``Gateway`` on the
same file (:mod:`tests._proc_worker`); the test sends it one call at a time,
so every interleaving below is exact. Every wait is bounded (the worker's
``REPLY_TIMEOUT_S``, below pytest-timeout's limit), and every child is closed
or killed and joined before the test ends.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.engine.notices import notice_text
from persistence import open_backend
from scripts.procs import Worker
from tests._upstream_rows import CLAUDE_SESSION, claude_assistant, claude_user
from tests.conftest import SignalLogDb

WATCHER = "agent:main:main"
TARGET = "agent:main:worker"


@pytest.fixture
def db(db: SignalLogDb) -> Path | str:
    """The signal log's location (a SQLite file or a PostgreSQL URL), for the workers."""
    return db.location


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.close()
    assert not any(w.process.is_alive() for w in started)


def _start(workers: list[Worker], db: Path | str, **options: object) -> Worker:
    worker = Worker(db, **options)
    workers.append(worker)
    return worker


def _transcript(tmp_path: Path, session: str) -> Path:
    """A Claude Code transcript ``<projects>/-work/<session>.jsonl`` with one old turn."""
    path = tmp_path / "projects" / "-work" / f"{session}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(claude_user("before") + claude_assistant("ok"))
    return path


def _cursor(db: Path | str, watcher: str, target: str) -> tuple[int, int, int] | None:
    conn = open_backend(db).connect(writer=False)
    try:
        row = conn.execute(
            "SELECT last_seen_sequence, notified_sequence, material_sequence"
            " FROM session_watch_cursors WHERE watcher_session_key = ?"
            " AND target_session_key = ?", (watcher, target)).fetchone()
    finally:
        conn.close()
    return None if row is None else (int(row[0]), int(row[1]), int(row[2]))


def test_three_producer_processes_give_one_notice_and_one_wake_in_the_hosting_process(
    db: Path | str, workers: list[Worker],
) -> None:
    host = _start(workers, db, hosts=[WATCHER])
    assert host.call("watch", WATCHER, TARGET) is True
    base = host.call("version", TARGET)
    producers = [_start(workers, db) for _ in range(3)]
    for producer in producers:
        producer.send("burst", TARGET, 20)  # twenty rapid changes each, all at once
    returned = [s for p in producers for s in p.recv()[1]]
    assert None not in returned
    assert len(set(returned)) == 60
    notice = notice_text(TARGET, base)

    # One notice, the same bytes, in every process; one wake, in the host.
    for worker in (host, *producers):
        assert worker.call("pending", WATCHER) == [notice]
    assert [w for w, _t in host.call("wait_wakes", 1, 10.0)] == [WATCHER]
    assert all(p.call("wakes") == [] for p in producers)

    # changesSince from any process returns every event.
    for worker in (host, *producers):
        assert worker.call("status", TARGET, base) == sorted(returned)

    # Drain in the host: the changes after the first one interleaved (the notice
    # froze at the first), so exactly one follow-up opens, seen everywhere.
    assert host.call("drain", WATCHER) == [notice]
    follow_up = notice_text(TARGET, min(returned))
    for worker in (host, *producers):
        assert worker.call("pending", WATCHER) == [follow_up]

    # A process opened afterwards drains it; no process shows it again.
    late = _start(workers, db)
    assert late.call("drain", WATCHER) == [follow_up]
    for worker in (host, *producers, late):
        assert worker.call("pending", WATCHER) == []
        assert worker.call("drain", WATCHER) == []

    # More changes from another process: exactly one new notice, everywhere.
    again = producers[0].call("burst", TARGET, 5)
    for worker in (host, *producers, late):
        assert worker.call("pending", WATCHER) == [notice_text(TARGET, max(returned))]
    assert len(again) == 5
    # Three notices were opened in all (the first, the follow-up, the last): one
    # wake each, all in the hosting process.
    woken = [w for w, _t in host.call("wait_wakes", 3, 10.0)]
    assert woken == [WATCHER] * 3
    assert all(w.call("wakes") == [] for w in (*producers, late))
    print("processes: 3 producers x 20 changes -> 1 notice, 1 follow-up, 1 more notice, "
          "3 wakes, all in the hosting process")


def test_a_drain_in_one_process_is_gone_from_every_other_at_once(
    db: Path | str, workers: list[Worker],
) -> None:
    a, b = _start(workers, db), _start(workers, db)
    assert a.call("watch", WATCHER, TARGET)
    first = b.call("human", TARGET)
    for _ in range(2):
        assert b.call("human", TARGET) is not None
    shown = a.call("pending", WATCHER)
    assert shown == [notice_text(TARGET, 0)]
    assert b.call("drain", WATCHER) == shown
    # The very next call in A (no wait at all) shows only the follow-up.
    assert a.call("pending", WATCHER) == [notice_text(TARGET, first)]


def test_concurrent_drains_in_two_processes_consume_each_notice_once(
    db: Path | str, workers: list[Worker],
) -> None:
    a, b = _start(workers, db), _start(workers, db)
    targets = [f"agent:main:t{i}" for i in range(6)]
    for target in targets:
        assert a.call("watch", WATCHER, target)
    consumed: list[str] = []
    for _round in range(15):
        for target in targets:
            assert (a if _round % 2 else b).call("human", target) is not None
        a.send("drain", WATCHER)
        b.send("drain", WATCHER)  # both drains race for the same open notices
        for worker in (a, b):
            status, texts = worker.recv()
            assert status == "ok"
            consumed.extend(texts)
    consumed.extend(a.call("drain", WATCHER))
    assert len(consumed) == len(set(consumed)), "a notice was consumed twice"
    assert a.call("pending", WATCHER) == b.call("pending", WATCHER) == []
    print(f"processes: 2 racing drains x 15 rounds x 6 pairs: {len(consumed)} notices, "
          "each consumed once")


def test_killing_a_producer_mid_burst_loses_nothing_it_returned(
    db: Path | str, workers: list[Worker],
) -> None:
    watcher = _start(workers, db)
    assert watcher.call("watch", WATCHER, TARGET)
    base = watcher.call("version", TARGET)
    victim = Worker(db)
    victim.send("burst_report", TARGET, 500)
    seen: list[int] = []
    while len(seen) < 25:
        kind, value = victim.recv()
        assert kind == "seq"
        seen.append(value)
    victim.kill()
    stored = watcher.call("status", TARGET, base)
    assert set(seen) <= set(stored)
    assert watcher.call("pending", WATCHER) == [notice_text(TARGET, base)]
    other = _start(workers, db)  # a process opened after the kill sees the same
    assert other.call("pending", WATCHER) == [notice_text(TARGET, base)]
    print(f"processes: SIGKILL after {len(seen)} returned records ({len(stored)} stored): "
          "none lost, one notice")


def test_wakes_follow_the_hosting_lease_and_return_to_the_producer_when_it_lapses(
    db: Path | str, workers: list[Worker],
) -> None:
    host = Worker(db, hosts=[WATCHER])
    producer = _start(workers, db)
    assert producer.call("watch", WATCHER, TARGET)
    assert producer.call("human", TARGET) is not None
    assert [w for w, _t in host.call("wait_wakes", 1, 10.0)] == [WATCHER]
    assert producer.call("wakes") == []
    assert producer.call("drain", WATCHER) != []
    host.kill()  # its lease stays in the log until it lapses
    # A producer whose clock is past the lease's expiry wakes locally again.
    later = _start(workers, db, clock_offset_ms=60_000)
    assert later.call("human", TARGET) is not None
    assert [w for w, _t in later.call("wakes")] == [WATCHER]
    # A producer that still sees the dead host's lease addresses the wake to it;
    # the next process that hosts the watcher takes that wake over.
    assert later.call("drain", WATCHER) != []
    assert producer.call("human", TARGET) is not None
    assert producer.call("wakes") == []
    successor = _start(workers, db, hosts=[WATCHER])
    assert [w for w, _t in successor.call("wait_wakes", 1, 10.0)] == [WATCHER]


def test_an_unhosted_watcher_is_woken_in_the_process_of_the_producer(
    db: Path | str, workers: list[Worker],
) -> None:
    a, b = _start(workers, db), _start(workers, db)
    assert a.call("watch", WATCHER, TARGET)
    assert b.call("human", TARGET) is not None
    assert [w for w, _t in b.call("wakes")] == [WATCHER]
    assert a.call("wakes") == []


def test_two_monitoring_processes_count_each_typed_turn_once(
    db: Path | str, workers: list[Worker], tmp_path: Path,
) -> None:
    transcript = _transcript(tmp_path, CLAUDE_SESSION)
    key = "agent:main:claude:one"
    # Leases of 10 ms pass the link back and forth between the two monitors,
    # whose scans are sent at the same moment: whichever scans, and however
    # they overlap, the compare-and-set commit counts each turn once.
    a = _start(workers, db, config={"lease_ms": 10, "probe_interval_ms": 1})
    b = _start(workers, db, config={"lease_ms": 10, "probe_interval_ms": 1})
    a.call("adopt", key, "claude", str(transcript), WATCHER)
    b.call("adopt", key, "claude", str(transcript), WATCHER)
    turns = 12
    counted: list[int] = []
    for i in range(turns):
        with transcript.open("ab") as handle:
            handle.write(claude_user(f"typed {i}") + claude_assistant("ok"))
        a.send("scan")
        b.send("scan")
        for worker in (a, b):
            status, events = worker.recv()
            assert status == "ok"
            counted.extend(events)
    counted.extend(a.call("scan"))
    counted.extend(b.call("scan"))
    assert len(counted) == len(set(counted)) == turns
    stored = a.call("status", key, 0)
    assert len(stored) == turns + 1  # the adoption event, then one per typed turn
    print(f"processes: 2 monitors racing over {turns} typed turns: counted {len(counted)}")


def test_a_scan_lease_keeps_the_second_monitor_off_the_link(
    db: Path | str, workers: list[Worker], tmp_path: Path,
) -> None:
    transcript = _transcript(tmp_path, CLAUDE_SESSION)
    key = "agent:main:claude:two"
    a, b = _start(workers, db), _start(workers, db)
    a.call("adopt", key, "claude", str(transcript), WATCHER)
    assert a.call("scan") == []  # a scans it first: a holds the link's scan lease now
    b.call("adopt", key, "claude", str(transcript), WATCHER)
    with transcript.open("ab") as handle:
        handle.write(claude_user("typed") + claude_assistant("ok"))
    assert b.call("scan") == []  # leased to a, which is alive
    assert len(a.call("scan")) == 1
    assert b.call("scan") == []
    # a dies mid-life holding the lease; once it lapses, b takes the link over.
    a.kill()
    workers.remove(a)
    c = _start(workers, db, clock_offset_ms=3_600_000)
    with transcript.open("ab") as handle:
        handle.write(claude_user("typed again") + claude_assistant("ok"))
    assert len(c.call("scan")) == 1
    assert len(c.call("status", key, 0)) == 3


OPS = st.lists(st.tuples(
    st.sampled_from(["record", "record", "record", "drain", "drain", "reset", "delete",
                     "watch"]),
    st.integers(0, 2),  # which process
    st.integers(0, 1),  # which watcher
    st.integers(0, 1),  # which target
), min_size=1, max_size=30)


class _Model:
    """What the property test checks after every step, from the database itself."""

    def __init__(self, db: Path, prefix: str) -> None:
        self.db = db
        self.watchers = [f"agent:main:{prefix}w{i}" for i in range(2)]
        self.targets = [f"agent:main:{prefix}t{i}" for i in range(2)]
        self.acked: dict[tuple[str, str], int] = {}
        self.drained: set[tuple[str, str]] = set()
        """``(watcher, text)`` drained so far: a second drain of one is a double delivery."""

    def forget_watcher(self, watcher: str) -> None:
        for pair in [p for p in self.acked if p[0] == watcher]:
            del self.acked[pair]
        self.drained = {d for d in self.drained if d[0] != watcher}

    def forget_target(self, target: str) -> None:
        # Its history is gone: a new watch may start from version 0 again.
        for pair in [p for p in self.acked if p[1] == target]:
            del self.acked[pair]
        self.drained = {d for d in self.drained if f'"{target}"' not in d[1]}

    def check(self, procs: list[Worker]) -> None:
        for watcher in self.watchers:
            for proc in procs:
                texts = proc.call("pending", watcher)
                per_target = [t for t in self.targets
                              if any(f'"{t}"' in text for text in texts)]
                assert len(texts) == len(per_target), texts  # at most one per pair
            for target in self.targets:
                cursor = _cursor(self.db, watcher, target)
                if cursor is None:
                    continue
                before = self.acked.get((watcher, target), 0)
                assert cursor[0] >= before, "an acknowledged position went back"
                self.acked[(watcher, target)] = cursor[0]


@pytest.fixture(scope="module")
def trio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Worker]]]:
    db = tmp_path_factory.mktemp("property") / "state.sqlite"
    procs = [Worker(db) for _ in range(3)]
    yield db, procs
    for proc in procs:
        proc.close()


_examples = iter(range(1_000_000))


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_random_interleavings_across_processes_keep_the_cursor_invariants(
    trio: tuple[Path, list[Worker]], ops: list[tuple[str, int, int, int]],
) -> None:
    db, procs = trio
    model = _Model(db, f"p{next(_examples)}")
    for watcher, target in zip(model.watchers, model.targets, strict=True):
        assert procs[0].call("watch", watcher, target)
    for verb, which, w, t in ops:
        proc, watcher, target = procs[which], model.watchers[w], model.targets[t]
        if verb == "record":
            assert proc.call("human", target) is not None
        elif verb == "drain":
            drained = {(watcher, text) for text in proc.call("drain", watcher)}
            assert not drained & model.drained, "a notice was drained twice"
            model.drained |= drained
        elif verb == "reset":
            proc.call("reset", watcher)
            model.forget_watcher(watcher)
        elif verb == "delete":
            proc.call("delete", target)
            model.forget_target(target)
        else:
            proc.call("watch", watcher, target)
        model.check(procs)


def test_a_watch_race_between_processes_registers_one_cursor(
    db: Path | str, workers: list[Worker],
) -> None:
    procs = [_start(workers, db) for _ in range(3)]
    barrier = threading.Barrier(3, timeout=10)
    answers: list[object] = []

    def watch(proc: Worker) -> None:
        barrier.wait()
        answers.append(proc.call("watch", WATCHER, TARGET))

    threads = [threading.Thread(target=watch, args=(p,)) for p in procs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert answers == [True, True, True]
    assert _cursor(db, WATCHER, TARGET) == (0, 0, 0)


def _lines(stream: IO[bytes]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for raw in stream:
            lines.put(raw.decode())

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _ssa(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "actors", *args], capture_output=True,
                          text=True, timeout=60, check=False, env=_ENV)


_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def test_ssa_watch_status_and_list_work_beside_a_running_gateway(
    db: Path | str, workers: list[Worker], tmp_path: Path,
) -> None:
    claude = tmp_path / "claude" / "-work"
    claude.mkdir(parents=True)
    (claude / "abc.jsonl").write_bytes(claude_user("history"))
    gateway = _start(workers, db)
    assert gateway.call("watch", WATCHER, TARGET)
    # Fallback scans only every 60 s: what ssa watch prints sooner came through
    # its hosting lease, from the gateway's process.
    proc = subprocess.Popen(
        [sys.executable, "-m", "actors", "watch", "--db", str(db), "--claude",
         str(claude.parent), "--interval", "60", "--poll-only", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_ENV)
    try:
        assert proc.stdout is not None
        lines = _lines(proc.stdout)
        summary = json.loads(lines.get(timeout=30))
        assert summary["adopted"] == {"claude": 1}
        changed = gateway.call("human", TARGET)
        notice = json.loads(lines.get(timeout=30))
        assert notice["sessionKey"] == TARGET
        assert [e["sequence"] for e in notice["events"]] == [changed]
        status = _ssa("status", TARGET, "--db", str(db), "--changes-since", "0")
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["stateVersion"] == changed
        listed = _ssa("list", "--db", str(db), "--json")
        assert listed.returncode == 0, listed.stderr
        assert TARGET in listed.stdout
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert proc.stderr is not None
        # It said it shares the default watcher with a gateway, and how not to.
        assert "--watcher agent:main:ssa-watch" in proc.stderr.read().decode()
        # ssa watch drained it after printing: no process shows it any more.
        assert gateway.call("pending", WATCHER) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_drains_while_another_process_holds_the_write_lock_hand_out_nothing_twice(
    db: Path | str, workers: list[Worker],
) -> None:
    fast = {"busy_timeout_ms": 200}
    a, b = _start(workers, db, config=fast), _start(workers, db, config=fast)
    assert a.call("watch", WATCHER, TARGET)
    assert b.call("human", TARGET) is not None
    shown = a.call("pending", WATCHER)
    assert len(shown) == 1
    assert b.call("pending", WATCHER) == shown
    backend = open_backend(db)
    blocker = backend.connect(writer=True)
    try:
        backend.begin_write(blocker)  # the log's write lock, longer than their busy timeout
        assert a.call("drain", WATCHER) == []  # not acknowledged, so not handed out
        assert b.call("drain", WATCHER) == []
        blocker.execute("ROLLBACK")
    finally:
        blocker.close()
    # Their wakes were spent on turns that got nothing: each is woken again
    # (after 1 s), since the notice is still open.
    assert [w for w, _t in a.call("wait_wakes", 1, 10.0)] == [WATCHER]
    drained = a.call("drain", WATCHER) + b.call("drain", WATCHER)
    assert drained == shown


def test_a_replacement_host_is_woken_for_the_notices_its_dead_predecessor_left(
    db: Path | str, workers: list[Worker],
) -> None:
    producer = _start(workers, db)
    host = Worker(db, hosts=[WATCHER])
    assert producer.call("watch", WATCHER, TARGET)
    assert producer.call("human", TARGET) is not None
    assert len(host.call("wait_wakes", 1, 10.0)) == 1
    host.kill()  # woken, but killed before its agent loop drained
    # The successor's clock is past the dead host's lease: it takes the watcher over.
    successor = _start(workers, db, hosts=[WATCHER], clock_offset_ms=60_000)
    assert [w for w, _t in successor.call("wakes")] == [WATCHER]
    assert successor.call("pending", WATCHER) == [notice_text(TARGET, 0)]
    assert producer.call("wakes") == []


def test_a_process_that_only_adopts_leaves_the_link_to_the_monitoring_one(
    db: Path | str, workers: list[Worker], tmp_path: Path,
) -> None:
    transcript = _transcript(tmp_path, CLAUDE_SESSION)
    key = "agent:main:claude:three"
    web, scheduler = _start(workers, db), _start(workers, db)
    assert scheduler.call("scan") == []  # it monitors (nothing linked yet)
    web.call("adopt", key, "claude", str(transcript), WATCHER)  # a web request adopts
    with transcript.open("ab") as handle:
        handle.write(claude_user("typed") + claude_assistant("ok"))
    assert len(scheduler.call("scan")) == 1  # no lease of the web worker in its way
