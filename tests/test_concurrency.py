"""Sixteen threads at once on one gateway, then the notice invariants at rest.

The threads record, watch, spawn, drain, peek and reconcile concurrently for
a bounded number of operations (and a wall-clock budget). Once every thread
has joined, the durable cursors and the in-memory queues must agree exactly:

* every cursor satisfies ``last_seen <= notified <= material``;
* a pair with pending work (``material > last_seen``) has exactly one queued
  notice, whose ``changesSince`` is the cursor's ``last_seen``; a pair without
  has none, and no watcher holds any other line;
* one drain of every watcher consumes exactly those lines and opens exactly
  one follow-up for each pair whose material moved past its frozen watermark
  (``changesSince`` = that watermark), and none for the others: no follow-up
  is lost and none is invented;
* a second drain leaves every cursor synced at its material watermark and
  every queue empty.

The load script's own test is here too: a small ``load_twenty`` run passes.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import apsw
import pytest

from actors import Gateway, SessionStateEvent
from scripts import load_twenty
from tests.conftest import WakeRecorder

THREADS = 16
OPS_PER_THREAD = 250
ROUNDS = 2
BUDGET_S = 2.5
"""Wall-clock budget of one round; each thread stops at whichever comes first."""
BARRIER_TIMEOUT_S = 10.0
JOIN_TIMEOUT_S = 30.0
SEED = 20_261_130

MAIN_WATCHERS = ("agent:main:main", "agent:ops:main", "agent:qa:main")
NESTED_WATCHER = "agent:main:subagent:lead"
WATCHERS = (*MAIN_WATCHERS, NESTED_WATCHER)
GROUP = "agent:main:telegram:group:room-1"
TARGETS = (*(f"agent:main:worker:t{i:02d}" for i in range(10)), "agent:ops:subagent:child",
           GROUP)
"""At most 12 targets per watcher, well inside the 20-entry queue limit."""

NOTICE = re.compile(
    r'^Session "(?P<target>[^"]+)" changed \(other actor\)\. Reconcile before acting: '
    r'session_status sessionKey "(?P=target)" changesSince (?P<since>\d+)\.$'
)

Cursor = tuple[int, int, int]
Pair = tuple[str, str]


def notice_text(target: str, since: int) -> str:
    return (
        f'Session "{target}" changed (other actor). Reconcile before acting: '
        f'session_status sessionKey "{target}" changesSince {since}.'
    )


def read_cursors(db: Path) -> dict[Pair, Cursor]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {
            (str(w), str(t)): (int(ls), int(nt), int(mt))
            for w, t, ls, nt, mt in conn.execute(
                "SELECT watcher_session_key, target_session_key, last_seen_sequence,"
                " notified_sequence, material_sequence FROM session_watch_cursors")
        }
    finally:
        conn.close()


def read_log(db: Path) -> tuple[dict[int, str], dict[str, int]]:
    """Return ``({sequence: session_key}, {session_key: head})``."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        events = {int(s): str(k) for s, k in conn.execute(
            "SELECT sequence, session_key FROM session_state_events")}
        heads = {str(k): int(h) for k, h in conn.execute(
            "SELECT session_key, last_sequence FROM session_state_heads")}
        return events, heads
    finally:
        conn.close()


def expected_queues(cursors: dict[Pair, Cursor]) -> dict[str, Counter[str]]:
    """One notice per pending pair, at the cursor's ``last_seen``; nothing else."""
    queues: dict[str, Counter[str]] = {w: Counter() for w in WATCHERS}
    for (w, t), (last_seen, _, material) in cursors.items():
        if material > last_seen:
            queues.setdefault(w, Counter())[notice_text(t, last_seen)] += 1
    return queues


def assert_at_rest(gw: Gateway, db: Path) -> dict[Pair, Cursor]:
    """Check the cursor invariant and that the queues mirror the pending pairs exactly."""
    cursors = read_cursors(db)
    broken = {p: c for p, c in cursors.items() if not c[0] <= c[1] <= c[2]}
    assert not broken, f"cursors break last_seen <= notified <= material: {broken}"
    assert {w for w, _ in cursors} <= set(WATCHERS), "a cursor names an unknown watcher"
    for w, expected in expected_queues(cursors).items():
        queued = Counter(gw.pending_notices(w))
        assert queued == expected, (
            f"{w}: queued notices differ from one per pending pair\n"
            f"  missing: {sorted((expected - queued).elements())}\n"
            f"  unexpected: {sorted((queued - expected).elements())}")
    return cursors


@dataclass
class Worker:
    """One of the sixteen threads: a seeded operation mix and what it observed."""

    index: int
    seed: int
    gw: Gateway
    barrier: threading.Barrier
    deadline_box: list[float]
    recorded: dict[int, str] = field(default_factory=dict)
    ops: Counter[str] = field(default_factory=Counter)
    error: BaseException | None = None

    def run(self) -> None:
        rng = random.Random(self.seed)
        try:
            self.barrier.wait(timeout=BARRIER_TIMEOUT_S)
            for n in range(OPS_PER_THREAD):
                if time.monotonic() > self.deadline_box[0]:
                    break
                self.step(rng, n)
        except BaseException as exc:  # reported by the main thread
            self.error = exc

    def step(self, rng: random.Random, n: int) -> None:
        gw = self.gw
        w = rng.choice(WATCHERS)
        t = rng.choice(TARGETS)
        roll = rng.random()
        if roll < 0.30:
            self.ops["human_message"] += 1
            self.keep(gw.human_message(t, channel=f"thread-{self.index}"), t)
        elif roll < 0.50:
            self.ops["set_goal"] += 1
            # Sometimes an agent watcher changes the goal itself (self-suppressed).
            actor = rng.choice((None, *WATCHERS))
            event = gw.set_goal(t, action=rng.choice(("set", "updated", "removed")),
                                actor_type="human" if actor is None else "agent",
                                actor_id=actor)
            assert event is not None, f"set_goal({t}) was not recorded"
            self.keep(event, t)
        elif roll < 0.65:
            if rng.random() < 0.5:
                self.ops["watch"] += 1
                assert gw.watch(w, t) is True, f"watch({w}, {t}) returned False"
            else:
                self.ops["sessions_send"] += 1
                sent = gw.sessions_send(w, t, f"note {n}", watch=True)
                assert (sent.accepted, sent.watched) == (True, True), sent
        elif roll < 0.82:
            self.ops["drain"] += 1
            for line in gw.drain(w):
                match = NOTICE.match(line)
                assert match is not None, f"drain({w}) returned a foreign line {line!r}"
                assert match["target"] in TARGETS
        elif roll < 0.87:
            self.ops["pending_notices"] += 1
            lines = gw.pending_notices(w)
            targets = [m["target"] for m in map(NOTICE.match, lines) if m is not None]
            assert len(targets) == len(lines), f"{w} holds a foreign line: {lines}"
            assert len(set(targets)) == len(targets), f"{w} holds two notices for one target"
        elif roll < 0.91:
            self.ops["spawn_subagent"] += 1
            event = gw.spawn_subagent(w, t, run_id=f"run-{self.seed}-{n}")
            assert event is not None, f"spawn_subagent({w}, {t}) was not recorded"
            self.keep(event, t)
        elif roll < 0.95:
            self.ops["log_only"] += 1
            if rng.random() < 0.5:
                event = gw.compacted(t, operation_id=f"op-{self.seed}-{n}")
            else:
                event = gw.finish_run(t, run_id=f"fin-{self.seed}-{n}",
                                      outcome=rng.choice(("ok", "error", "timeout")))
            assert event is not None, f"a log-only event for {t} was not recorded"
            self.keep(event, t)
        else:
            self.ops["session_status"] += 1
            since = rng.randrange(0, 50)
            status = gw.session_status(t, changes_since=since)
            assert status.state_changes is not None
            assert all(e.sequence > since and e.session_key == t
                       for e in status.state_changes.events)
            assert all(e.sequence <= status.state_version for e in status.state_changes.events)

    def keep(self, event: SessionStateEvent | None, target: str) -> None:
        if event is None:  # human_message on a session nobody watches yet
            return
        assert event.session_key == target
        self.recorded[event.sequence] = target


def run_threads(gw: Gateway, round_: int) -> list[Worker]:
    barrier = threading.Barrier(THREADS + 1)
    deadline_box = [float("inf")]
    workers = [Worker(i, SEED + 1000 * round_ + i, gw, barrier, deadline_box)
               for i in range(THREADS)]
    threads = [threading.Thread(target=w.run, name=f"concurrency-{w.index}") for w in workers]
    for thread in threads:
        thread.start()
    deadline_box[0] = time.monotonic() + BUDGET_S + BARRIER_TIMEOUT_S
    barrier.wait(timeout=BARRIER_TIMEOUT_S)
    deadline_box[0] = time.monotonic() + BUDGET_S
    join_by = time.monotonic() + JOIN_TIMEOUT_S
    for thread in threads:
        thread.join(timeout=max(0.0, join_by - time.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    assert not stuck, f"threads still running after {JOIN_TIMEOUT_S}s: {stuck}"
    errors = [(w.index, w.error) for w in workers if w.error is not None]
    if errors:
        raise AssertionError(f"{len(errors)} threads failed; first: thread {errors[0][0]}"
                             ) from errors[0][1]
    return workers


def test_sixteen_threads_leave_exactly_one_notice_per_pending_pair_and_lose_no_follow_up(
    open_gateway: Callable[..., Gateway], db_path: Path, wakes: WakeRecorder,
) -> None:
    print(f"seed {SEED}")
    gw = open_gateway()
    workers: list[Worker] = []
    for round_ in range(ROUNDS):
        workers += run_threads(gw, round_)
        # At rest after each round: the invariant, and queues that mirror the
        # pending pairs exactly; the next round starts from this state.
        before = assert_at_rest(gw, db_path)
    ops: Counter[str] = sum((w.ops for w in workers), Counter())
    assert sum(ops.values()) >= ROUNDS * THREADS * 10, f"too little work was done: {ops}"
    assert min(ops[op] for op in ("drain", "human_message", "set_goal", "watch")) > 0, ops

    # The log: every returned event is stored under its session, heads are the maxima.
    recorded = {seq: key for w in workers for seq, key in w.recorded.items()}
    events, heads = read_log(db_path)
    assert {s: events.get(s) for s in recorded} == recorded
    for key, head in heads.items():
        assert head == max(s for s, k in events.items() if k == key), key

    pending = {p: c for p, c in before.items() if c[2] > c[0]}
    assert pending, "the run ended with no pending pair; nothing was checked under load"
    assert all(heads.get(t, 0) >= c[2] for (_, t), c in before.items())
    assert set(wakes.calls) <= set(MAIN_WATCHERS), "a subagent: watcher was woken"

    # First drain: each watcher gets exactly its pending notices, and a follow-up
    # opens exactly for pairs whose material moved past the frozen watermark.
    for w in WATCHERS:
        drained = Counter(gw.drain(w))
        assert drained == expected_queues(before)[w], f"drain({w}) returned the wrong lines"
    after_first = assert_at_rest(gw, db_path)
    for pair, (last_seen, notified, material) in before.items():
        if material > last_seen:
            assert after_first[pair] == (notified, material, material), pair
        else:
            assert after_first[pair] == (last_seen, notified, material), pair
    follow_ups = {p for p, c in before.items() if c[2] > c[1]}
    print(f"ops {dict(ops)}; {len(before)} cursors, {len(pending)} pending, "
          f"{len(follow_ups)} needing a follow-up")
    assert follow_ups == {p for p, c in after_first.items() if c[2] > c[0]}

    # Second drain: nothing changed since, so everything is synced and quiet.
    for w in WATCHERS:
        gw.drain(w)
    final = assert_at_rest(gw, db_path)
    assert final == {p: (c[2], c[2], c[2]) for p, c in before.items()}
    assert all(gw.pending_notices(w) == [] for w in WATCHERS)


def test_a_small_load_twenty_run_passes_every_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    status = load_twenty.main(["--watchers", "3", "--targets", "4", "--changes", "6",
                               "--threads", "4", "--db", str(tmp_path / "load.sqlite")])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "load_twenty: OK" in out
    assert "pairs             12 " in out
    assert "on_wake calls     60 " in out  # 12 pairs x 5 newly queued notices each


def test_load_twenty_exits_non_zero_when_a_watcher_holds_a_duplicate_notice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = Gateway.pending_notices

    def doubled(self: Gateway, watcher_key: str) -> list[str]:
        lines = real(self, watcher_key)
        return lines + lines[:1]

    monkeypatch.setattr(Gateway, "pending_notices", doubled)
    status = load_twenty.main(["--watchers", "1", "--targets", "2", "--changes", "3",
                               "--threads", "2", "--db", str(tmp_path / "load.sqlite")])
    _, err = capsys.readouterr()
    assert status == 1
    assert "VIOLATION: burst: queued notices differ from one per pair" in err
    assert "1 duplicated" in err
