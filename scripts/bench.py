"""Gateway throughput, latency and scale, each next to a baseline measured in the same run.

One run prints one table. Every figure of ours stands next to a baseline taken
in the same process, on the same machine and file system, a moment apart, so
the ratios are what matter (absolute numbers move with the disk and the CPU):

1. durable recording (``synchronous=FULL``): events/s through ``Gateway``
   (``human_message`` on targets that each have one watcher registered with
   ``gw.watch``, one warm-up call per target first) with 1 and with 8
   producer threads, each thread its own target, against two baselines:

   - the synchronous peer (:class:`SyncPeer`): the same durable work with no
     actors. One ``threading.Lock`` guards one APSW write connection opened
     with ``persistence.open_connection(path, synchronous="FULL",
     busy_timeout_ms=5000, writer=True, migrate=True)``; each call takes the
     lock and runs ``BEGIN IMMEDIATE``, ``persistence._writes.record_event``
     (append the event, bump the head, freeze the watcher cursor: what the
     gateway's transaction does) and ``COMMIT``, so one fsync per call and no
     group commit; then, in the producer's thread after the lock, it turns each
     notice descriptor into ``actors.engine.notices.notice_text``, deduplicates it in
     a dict keyed by (watcher, target, agent) and calls ``on_wake`` once per
     newly queued, pending, not queue-only notice. Its watches (the same pairs
     as the gateway run) are registered with ``register_watch`` in one
     transaction first; then the same warm-up call, thread counts, per-thread
     calls and per-call latencies. The runs interleave (peer 1 thread, gateway
     1 thread, peer 8, gateway 8) so drift hits both alike. Goals: 8 threads
     >= 1.5x the peer, 1 thread >= 0.7x the peer;
   - a naive loop: ``record_event`` called directly, one ``with conn:``
     transaction per event, on one APSW connection from one thread (ratios
     printed, no goal);
2. the physical ceiling: the 8-thread run's rows inserted with one
   ``executemany`` in one transaction; our 8-thread rate as a fraction of it;
3. notice latency under 8-thread load: a notice is queued before its producer
   returns (checked on every call), so the producer call latency p50/p99 is
   reported, and the time from call start to the ``on_wake`` callback p50/p99
   (each thread drains its watcher after every change, so every change wakes);
   baseline: the naive transaction's own latency; the producer call p99 also
   next to the synchronous peer's 8-thread call p99 (goal: ours <= 3 ms,
   absolute, whatever the peer's);
4. ``session_status(key, changes_since=...)`` p50 (ten changes back) with
   50,000 retained rows against 1,000 (goal: ratio <= 1.5);
5. pruning with ``persistence._prune.prune`` on a connection: 50,001 -> 50,000
   rows, and 50,000 expired rows at once (clock 31 days ahead), next to the
   bare ``DELETE`` that removes the same rows without pruned watermarks;
6. the load script's burst (``scripts/load_twenty.py``): 20 rapid changes on
   each of 1,000 watcher/target pairs (50 watchers x 20 targets, 8 threads,
   checked to leave exactly 1,000 notices), next to recording the same 20,000
   events on targets nobody watches;
7. scale: ``Gateway.open`` on a file holding 10,000 target sessions watched in
   10,000 pairs (1,000 watchers x 10 targets, written directly, then opened),
   next to opening an empty file; each pair touched once (one
   ``human_message`` per target, 8 threads); live threads
   (``threading.active_count()``) and peak RSS (``ru_maxrss``, KiB) next to
   their values before the open. It runs first, so the RSS is its own.

``--quick`` runs much smaller sizes (a smoke test, a few seconds); ``--json``
prints the same figures as one JSON object.

With ``--db postgresql://...`` it measures the PostgreSQL backend instead:
sections 1, 3 and 8 on the server (each run in a fresh schema), each next to
the synchronous peer on the same server (one transaction per event:
``BEGIN``, the advisory write lock, ``record_event``, ``COMMIT``) and to the
same SQLite run, measured in the same run.

Usage, from a checkout: ``python -m scripts.bench [--quick] [--json] [--dir DIR]
[--db URL] [--check]`` (or ``python scripts/bench.py ...``). Exit status 0
whether or not a goal was met, 1 when a checked promise broke; with
``--check``, :data:`GOAL_MISSED` (3) when a goal was missed (each missed goal
is named on stderr).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import apsw  # noqa: E402

from actors import Gateway, GatewayConfig, SessionStateEventInput  # noqa: E402
from actors.engine.notices import notice_text  # noqa: E402
from persistence import (  # noqa: E402
    NoticeDescriptor,
    RecordEvent,
    RegisterWatch,
    SessionStateEvent,
    UpsertSession,
    open_backend,
    open_connection,
    prepare_path,
)
from persistence.keys import agent_id_of  # noqa: E402
from persistence.transactions import (  # noqa: E402
    DAY_MS,
    PRUNE_BATCH,
    prune,
    record_event,
    register_watch,
    upsert_session,
)
from scripts import load_twenty  # noqa: E402
from scripts.procs import Worker  # noqa: E402

THREADS = 8
"""Producer threads of the concurrent runs."""
CHANGES = 20
"""Rapid changes per target in the load burst (section 6)."""
STATUS_BACK = 10
"""How many changes back ``session_status`` asks for (section 4)."""
FILL_SESSIONS = 50
"""Sessions the prebuilt rows of sections 4 and 5 are spread over."""
RETENTION_DAYS = 30
WAIT_S = 300.0
"""Longest any one batch of threads may take before the run is declared stuck."""
SUMMARY = "human message via bench"

_INSERT_EVENT = (
    "INSERT INTO session_state_events (dedupe_key, session_key, agent_id, session_id, kind,"
    " actor_type, actor_id, run_id, occurred_at, summary, payload_json)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

class BenchError(Exception):
    """A promise the benchmark relies on did not hold (the figures would be wrong)."""


GOAL_MISSED = 3
"""Exit status with ``--check`` when at least one goal was missed (1 is a broken promise)."""


@dataclass(frozen=True)
class Sizes:
    """How much work each section does."""

    naive_events: int
    one_thread_events: int
    events_per_thread: int
    wake_rounds_per_thread: int
    status_rows_small: int
    status_rows_large: int
    status_calls: int
    prune_rows: int
    prune_repeat: int
    load_watchers: int
    load_targets: int
    scale_watchers: int
    scale_targets: int
    proc_events_per_thread: int
    latency_rounds: int
    idle_s: float


FULL = Sizes(naive_events=8000, one_thread_events=4000, events_per_thread=1000,
             wake_rounds_per_thread=300, status_rows_small=1000, status_rows_large=50_000,
             status_calls=2000, prune_rows=50_000, prune_repeat=3, load_watchers=50,
             load_targets=20, scale_watchers=1000, scale_targets=10,
             proc_events_per_thread=400, latency_rounds=200, idle_s=5.0)
QUICK = Sizes(naive_events=200, one_thread_events=100, events_per_thread=25,
              wake_rounds_per_thread=10, status_rows_small=1000, status_rows_large=5000,
              status_calls=100, prune_rows=5000, prune_repeat=1, load_watchers=5,
              load_targets=4, scale_watchers=20, scale_targets=10,
              proc_events_per_thread=10, latency_rounds=8, idle_s=0.5)


@dataclass(frozen=True)
class Row:
    """One line of the table: our figure, its baseline and their ratio."""

    section: int
    figure: str
    ours: float
    baseline_figure: str
    baseline: float | None
    ratio: float | None
    goal: str | None = None
    met: bool | None = None


def row(section: int, figure: str, ours: float, baseline_figure: str,
        baseline: float | None, *, at_least: float | None = None,
        at_most: float | None = None, equal: bool = False,
        at_most_value: float | None = None, unit: str = "") -> Row:
    """Build one table row; at most one goal.

    Args:
        section: the section number (1-8).
        figure, ours: what we measured and its value.
        baseline_figure, baseline: the baseline measured in the same run.
        at_least, at_most: a goal on the ratio ``ours / baseline``.
        equal: the goal ``ours == baseline``.
        at_most_value: an absolute goal ``ours <= at_most_value``, whatever the
            baseline (the ratio is still printed).
        unit: the unit shown after ``at_most_value`` in the goal (e.g. ``"ms"``).

    Returns:
        The row; ``goal``/``met`` are ``None`` without a goal.

    Raises:
        ValueError: more than one goal was given.

    Pure (any thread, never blocks).
    """
    goals = [equal, at_least is not None, at_most is not None, at_most_value is not None]
    if sum(goals) > 1:
        raise ValueError(f"row {figure!r}: at most one goal")
    ratio = ours / baseline if baseline else None
    goal: str | None = None
    met: bool | None = None
    if equal:
        goal, met = f"= {fmt(baseline)}", ours == baseline
    elif at_least is not None:
        goal, met = f">= {at_least:g}", ratio is not None and ratio >= at_least
    elif at_most is not None:
        goal, met = f"<= {at_most:g}", ratio is not None and ratio <= at_most
    elif at_most_value is not None:
        goal, met = f"<= {at_most_value:g} {unit}".rstrip(), ours <= at_most_value
    return Row(section, figure, ours, baseline_figure, baseline, ratio, goal, met)


def missed_goals(rows: Sequence[Row]) -> list[Row]:
    """The rows that state a goal and did not meet it, in their order (pure)."""
    return [r for r in rows if r.goal is not None and not r.met]


def exit_status(rows: Sequence[Row], *, check: bool, broken: bool = False) -> int:
    """The script's exit status for the measured ``rows`` (pure).

    Args:
        rows: the table's rows.
        check: ``--check`` was given: a missed goal fails the run.
        broken: a checked promise broke (the figures cannot be trusted).

    Returns:
        1 when ``broken``; :data:`GOAL_MISSED` when ``check`` and a goal was
        missed; else 0.
    """
    if broken:
        return 1
    return GOAL_MISSED if check and missed_goals(rows) else 0


def describe_missed(row: Row) -> str:
    """One line naming a missed goal: its section, figure, values and goal (pure)."""
    return (f"goal missed: section {row.section}, {row.figure} = {fmt(row.ours)} "
            f"({row.baseline_figure} = {fmt(row.baseline)}, ratio {fmt(row.ratio)}); "
            f"goal {row.goal}")


def report_missed(rows: Sequence[Row], prog: str, *, check: bool) -> None:
    """With ``check``, name each missed goal on stderr (caller's thread)."""
    if check:
        for missed in missed_goals(rows):
            print(f"{prog}: {describe_missed(missed)}", file=sys.stderr)


# --- helpers -----------------------------------------------------------------


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def pct(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (the load script's definition)."""
    if not values:
        raise BenchError("no samples")
    return load_twenty.percentile(sorted(values), p)


def ms(seconds: float) -> float:
    return seconds * 1000


def pair(name: str, i: int, j: int = 0) -> tuple[str, str]:
    """``(watcher, target)``: each watcher is the main session of its own agent."""
    return f"agent:{name}{i:04d}:main", f"agent:{name}{i:04d}:worker:t{j:02d}"


def human_command(target: str) -> RecordEvent:
    """Exactly what ``Gateway.human_message(target, channel="bench")`` submits."""
    return RecordEvent(session_key=target, agent_id=agent_id_of(target),
                       kind="human_direct_message", actor_type="human", summary=SUMMARY,
                       shape="human-per-group")


def event_row(target: str, occurred_at: int) -> tuple[str | int | None, ...]:
    """The event columns ``record_event`` inserts for :func:`human_command`."""
    return (None, target, agent_id_of(target), None, "human_direct_message", "human", None,
            None, occurred_at, SUMMARY, None)


def new_connection(path: Path) -> apsw.Connection:
    """A fresh write connection as the persistence actor opens it (WAL, FULL)."""
    prepare_path(path)
    return open_connection(str(path), writer=True, migrate=True, synchronous="FULL")


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


class Place:
    """Where the runs' databases live: fresh SQLite files in a directory, or fresh
    schemas on a PostgreSQL server (``--db``), each removed after its run.

    Args:
        directory: the directory for SQLite files.
        url: a ``postgresql://`` URL (``None``: SQLite files).
    """

    def __init__(self, directory: Path, url: str | None = None) -> None:
        self.directory = directory
        self.url = url

    @property
    def name(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return "sqlite" if self.url is None else "postgresql"

    def new(self, name: str) -> Path | str:
        """The location of a new, empty database for one run."""
        if self.url is None:
            return self.directory / f"{name}.sqlite"
        schema = "bench_" + "".join(c if c.isalnum() else "_" for c in name).lower()
        schema = f"{schema[:32]}_{uuid.uuid4().hex[:8]}"
        return f"{self.url}{'&' if '?' in self.url else '?'}schema={schema}"

    def remove(self, location: Path | str) -> None:
        """Remove a run's database (the file and its WAL, or the schema)."""
        if isinstance(location, Path):
            remove_db(location)
            return
        import psycopg
        from psycopg import sql

        base, _, query = location.partition("?")
        rest = [kv for kv in query.split("&") if kv and not kv.startswith("schema=")]
        schema = query.rsplit("schema=", 1)[1].split("&", 1)[0]
        with psycopg.connect(base + ("?" + "&".join(rest) if rest else ""),
                             autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                sql.Identifier(schema)))


def run_threads(count: int, work: Callable[[int], None]) -> float:
    """Run ``work(0..count-1)`` on ``count`` threads started together; wall seconds."""
    barrier = threading.Barrier(count + 1, timeout=WAIT_S)

    def start(i: int) -> None:
        barrier.wait()
        work(i)

    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="bench") as pool:
        futures = [pool.submit(start, i) for i in range(count)]
        barrier.wait()
        started = time.perf_counter()
        for future in futures:
            future.result(timeout=WAIT_S)
        return time.perf_counter() - started


def fill(conn: apsw.Connection, rows: int, occurred_at: int) -> list[str]:
    """Insert ``rows`` events spread over :data:`FILL_SESSIONS` sessions, with heads,
    entries and one watcher per session, in one transaction; returns the session keys."""
    keys = [pair("fill", 0, j)[1] for j in range(FILL_SESSIONS)]
    watcher = pair("fill", 0)[0]
    with conn:
        conn.executemany(_INSERT_EVENT,
                         [event_row(keys[n % len(keys)], occurred_at) for n in range(rows)])
        conn.execute(
            "INSERT INTO session_state_heads (session_key, agent_id, last_sequence, updated_at)"
            " SELECT session_key, agent_id, max(sequence), ? FROM session_state_events"
            " GROUP BY session_key, agent_id", (occurred_at,))
        for key in keys:
            upsert_session(conn, UpsertSession(session_key=key, agent_id=agent_id_of(key)),
                           occurred_at)
            register_watch(conn, RegisterWatch(watcher_key=watcher, target_key=key,
                                               target_agent_id=agent_id_of(key)),
                           occurred_at, 0)
    return keys


# --- 1, 2, 3: recording ------------------------------------------------------


@dataclass
class Recording:
    events: int
    seconds: float
    latencies: list[float]

    @property
    def rate(self) -> float:
        return self.events / self.seconds


def naive_recording(directory: Path, events: int) -> Recording:
    """Section 1 baseline: ``record_event`` in its own transaction per event."""
    path = directory / "naive.sqlite"
    conn = new_connection(path)
    try:
        versions = itertools.count(1)
        watcher, target = pair("naive", 0)
        with conn:
            register_watch(conn, RegisterWatch(watcher_key=watcher, target_key=target,
                                               target_agent_id=agent_id_of(target)),
                           now_ms(), next(versions))
        command = human_command(target)
        latencies: list[float] = []
        started = time.perf_counter()
        for _ in range(events):
            call = time.perf_counter()
            with conn:
                outcome = record_event(conn, command, now_ms(), next(versions))
            latencies.append(time.perf_counter() - call)
            if not outcome.inserted or len(outcome.notices) > 1:
                raise BenchError("naive record_event did not record the watched event")
        seconds = time.perf_counter() - started
    finally:
        conn.close()
        remove_db(path)
    return Recording(events, seconds, latencies)


def gateway_recording(place: Place, threads: int, per_thread: int) -> Recording:
    """Section 1: ``human_message`` from ``threads`` threads, each on its own watched target."""
    path = place.new(f"gateway-{threads}")
    gw = Gateway.open(path, monitor=False, on_wake=load_twenty.WakeCounter())
    try:
        pairs = [pair(f"rec{threads}t", i) for i in range(threads)]
        for watcher, target in pairs:
            if not gw.watch(watcher, target):
                raise BenchError(f"watch({watcher}, {target}) returned False")
            gw.human_message(target, channel="bench")  # warm-up: start the pair's actors
        latencies: list[list[float]] = [[] for _ in pairs]

        def produce(i: int) -> None:
            target, out = pairs[i][1], latencies[i]
            for _ in range(per_thread):
                call = time.perf_counter()
                if gw.human_message(target, channel="bench") is None:
                    raise BenchError(f"human_message({target}) was not recorded")
                out.append(time.perf_counter() - call)

        seconds = run_threads(threads, produce)
    finally:
        gw.close()
        place.remove(path)
    return Recording(threads * per_thread, seconds, [x for xs in latencies for x in xs])


class SyncPeer:
    """Section 1 baseline: the gateway's durable work done synchronously, no actors.

    One ``threading.Lock`` serialises one APSW write connection (WAL,
    ``synchronous=FULL``, opened as ``open_connection(..., writer=True,
    migrate=True)``). :meth:`human_message` records the event exactly as the
    gateway's transaction does (``record_event``: append, bump the head, freeze
    the watcher cursor) in its own ``BEGIN IMMEDIATE`` ... ``COMMIT``, one fsync
    per call (no group commit), then queues the notice text and calls
    ``on_wake`` in the caller's thread.

    The notice queue is one dict ``(watcher_key, target_key, target_agent_id) ->
    text``. Its check-and-set runs outside the lock (as the gateway's queueing
    runs outside its persistence transaction), so it is exact only while each
    pair has one producer thread, as in every run of this script.

    On PostgreSQL (``--db``) the same: one connection, ``Backend.begin_write``
    (``BEGIN`` and the log's advisory write lock), ``record_event``, ``COMMIT``.

    Args:
        path: the database file (created and migrated; its directory is made),
            or a ``postgresql://`` URL of a fresh schema.
        on_wake: called with the watcher key once per newly queued, waking
            notice, in the producer's thread.

    Blocks on disk I/O while opening.
    """

    def __init__(self, path: Path | str, on_wake: Callable[[str], None]) -> None:
        self._backend = open_backend(path, synchronous="FULL", busy_timeout_ms=5000)
        self._backend.prepare()
        self._conn = self._backend.connect(writer=True, migrate=True)
        self._lock = threading.Lock()
        self._versions = itertools.count(1)
        self._queued: dict[tuple[str, str, str], str] = {}
        self._on_wake = on_wake

    def register(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Register every ``(watcher, target)`` watch in one transaction.

        Args:
            pairs: the watches to register (explicit, at each target's head).

        Any thread; takes the lock and blocks on the commit's fsync.
        """
        with self._lock:
            self._backend.begin_write(self._conn)
            for watcher, target in pairs:
                register_watch(self._conn, RegisterWatch(
                    watcher_key=watcher, target_key=target,
                    target_agent_id=agent_id_of(target)), now_ms(), next(self._versions))
            self._conn.execute("COMMIT")

    def human_message(self, target: str) -> SessionStateEvent | None:
        """Record what ``Gateway.human_message(target, channel="bench")`` records.

        Args:
            target: a session key that has watchers (unwatched, nothing is stored).

        Returns:
            The stored event, or ``None`` when nothing was recorded.

        Raises:
            apsw.Error: SQLite failed (the transaction is rolled back).

        The producer's thread: waits for the lock, then for one transaction's
        fsync; ``on_wake`` runs in this thread after the lock is released.
        """
        command = human_command(target)
        with self._lock:
            self._backend.begin_write(self._conn)  # SQLite: BEGIN IMMEDIATE
            try:
                outcome = record_event(self._conn, command, now_ms(), next(self._versions))
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        for descriptor in outcome.notices:
            if self._queue(descriptor):
                self._on_wake(descriptor.watcher_key)
        return outcome.event if outcome.inserted else None

    def _queue(self, descriptor: NoticeDescriptor) -> bool:
        """Queue one descriptor's notice; whether it must wake (caller's thread, no I/O).

        As the gateway's watcher queue: a pending descriptor sets the pair's text
        (newly queued when it differs from the stored one), one that is no
        longer pending withdraws it; only a newly queued, pending, not
        ``queue_only`` notice wakes.
        """
        key = (descriptor.watcher_key, descriptor.target_key, descriptor.target_agent_id)
        if not descriptor.pending:
            self._queued.pop(key, None)
            return False
        text = notice_text(descriptor.target_key, descriptor.last_seen)
        if self._queued.get(key) == text:
            return False
        self._queued[key] = text
        return not descriptor.queue_only

    def drain(self, watcher: str) -> list[str]:
        """Remove and return ``watcher``'s queued notice texts (in queueing order).

        Unlike ``Gateway.drain`` it acknowledges nothing durably (the cursors
        stay frozen). Call it while no producer is queueing for ``watcher``.

        Any thread; never blocks.
        """
        keys = [key for key in tuple(self._queued) if key[0] == watcher]
        return [self._queued.pop(key) for key in keys]

    def close(self) -> None:
        """Close the connection (checkpoints the WAL); blocks on disk I/O."""
        with self._lock:
            self._conn.close()


def peer_recording(place: Place, threads: int, per_thread: int) -> Recording:
    """Section 1 baseline: :class:`SyncPeer` driven exactly as :func:`gateway_recording`
    drives the gateway (same pairs, warm-up call, counts and per-call latencies).

    Args:
        place: where the temporary database goes (removed afterwards).
        threads: producer threads, each on its own target with one watcher.
        per_thread: timed ``human_message`` calls per thread.

    Returns:
        The run's events, wall seconds and per-call latencies.

    Raises:
        BenchError: a call recorded nothing, or the pairs did not end with
            exactly one queued notice and one wake each.

    The calling thread blocks until all ``threads`` producers finish.
    """
    path = place.new(f"peer-{threads}")
    wakes = load_twenty.WakeCounter()
    peer = SyncPeer(path, wakes)
    try:
        pairs = [pair(f"peer{threads}t", i) for i in range(threads)]
        peer.register(pairs)
        for _watcher, target in pairs:
            if peer.human_message(target) is None:  # warm-up, as the gateway run
                raise BenchError(f"peer human_message({target}) was not recorded")
        latencies: list[list[float]] = [[] for _ in pairs]

        def produce(i: int) -> None:
            target, out = pairs[i][1], latencies[i]
            for _ in range(per_thread):
                call = time.perf_counter()
                if peer.human_message(target) is None:
                    raise BenchError(f"peer human_message({target}) was not recorded")
                out.append(time.perf_counter() - call)

        seconds = run_threads(threads, produce)
        for watcher, target in pairs:  # nobody drained: one notice and one wake per pair
            if peer.drain(watcher) != [load_twenty.notice_text(target, 0)] \
                    or wakes.counts.get(watcher) != 1:
                raise BenchError(f"the peer did not leave one notice and one wake for "
                                 f"({watcher}, {target})")
    finally:
        peer.close()
        place.remove(path)
    return Recording(threads * per_thread, seconds, [x for xs in latencies for x in xs])


def ceiling(directory: Path, events: int) -> float:
    """Section 2: the same rows with one ``executemany`` in one transaction; rows/s."""
    path = directory / "ceiling.sqlite"
    conn = new_connection(path)
    try:
        now = now_ms()
        targets = [pair(f"rec{THREADS}t", i)[1] for i in range(THREADS)]
        rows = [event_row(targets[n % THREADS], now) for n in range(events)]
        started = time.perf_counter()
        with conn:
            conn.executemany(_INSERT_EVENT, rows)
        seconds = time.perf_counter() - started
        count = conn.execute("SELECT count(*) FROM session_state_events").get
        if count != events:
            raise BenchError(f"executemany stored {count} rows, not {events}")
    finally:
        conn.close()
        remove_db(path)
    return events / seconds


@dataclass
class WakeRun:
    wakes: list[float]
    rounds: int
    violations: int


def wake_latency(directory: Path, threads: int, rounds: int) -> WakeRun:
    """Section 3: change, then drain, per thread; every change queues a notice and wakes."""
    woke_at: dict[str, float] = {}

    def on_wake(watcher: str) -> None:
        woke_at[watcher] = time.perf_counter()  # one dict store: atomic under the GIL

    path = directory / "wake.sqlite"
    gw = Gateway.open(path, monitor=False, on_wake=on_wake)
    try:
        pairs = [pair("wake", i) for i in range(threads)]
        for watcher, target in pairs:
            if not gw.watch(watcher, target):
                raise BenchError(f"watch({watcher}, {target}) returned False")
        wakes: list[list[float]] = [[] for _ in pairs]
        violations = [0] * threads

        def produce(i: int) -> None:
            (watcher, target), since = pairs[i], 0
            for _ in range(rounds):
                woke_at.pop(watcher, None)
                call = time.perf_counter()
                event = gw.human_message(target, channel="bench")
                woke = woke_at.get(watcher)  # on_wake runs before the producer returns
                drained = gw.drain(watcher)  # the notice must already be queued
                if event is None or woke is None \
                        or drained != [load_twenty.notice_text(target, since)]:
                    violations[i] += 1
                else:
                    wakes[i].append(woke - call)
                if event is not None:
                    since = event.sequence

        run_threads(threads, produce)
    finally:
        gw.close()
        remove_db(path)
    return WakeRun([x for xs in wakes for x in xs], threads * rounds, sum(violations))


# --- 4: session_status -----------------------------------------------------------


def status_latency(directory: Path, rows: int, calls: int) -> float:
    """Section 4: p50 seconds of ``session_status(key, changes_since=<10 back>)``."""
    path = directory / f"status-{rows}.sqlite"
    conn = new_connection(path)
    try:
        key = fill(conn, rows, now_ms())[0]
        since = conn.execute(
            "SELECT sequence FROM session_state_events WHERE session_key = ?"
            " ORDER BY sequence DESC LIMIT 1 OFFSET ?", (key, STATUS_BACK)).get
    finally:
        conn.close()
    if not isinstance(since, int):
        raise BenchError(f"{rows} rows leave fewer than {STATUS_BACK + 1} events per session")
    gw = Gateway.open(path, monitor=False)
    try:
        status = gw.session_status(key, changes_since=since)
        if status.state_changes is None or len(status.state_changes.events) != STATUS_BACK:
            raise BenchError(f"session_status did not return {STATUS_BACK} changes")
        for _ in range(min(50, calls)):
            gw.session_status(key, changes_since=since)
        latencies = []
        for _ in range(calls):
            call = time.perf_counter()
            gw.session_status(key, changes_since=since)
            latencies.append(time.perf_counter() - call)
    finally:
        gw.close()
        remove_db(path)
    return pct(latencies, 50)


# --- 5: pruning ------------------------------------------------------------------


@dataclass
class PruneTimes:
    one: float
    one_baseline: float
    expired: float
    expired_baseline: float


def prune_times(directory: Path, rows: int, repeat: int) -> PruneTimes:
    """Section 5: best-of-``repeat`` seconds, each trial on a fresh copy of one file."""
    base = directory / "prune-base.sqlite"
    occurred_at = now_ms()
    conn = new_connection(base)
    try:
        keys = fill(conn, rows, occurred_at)
    finally:
        conn.close()  # checkpoints the WAL: the file alone is the database

    extra = RecordEvent(session_key=keys[0], agent_id=agent_id_of(keys[0]),
                        kind="human_direct_message", actor_type="human", summary=SUMMARY)

    def trial(work: Callable[[apsw.Connection], object], *, add_one: bool,
              expect: int) -> float:
        best = float("inf")
        for _ in range(repeat):
            path = directory / "prune-trial.sqlite"
            shutil.copyfile(base, path)
            trial_conn = open_connection(str(path), writer=True, synchronous="FULL")
            try:
                if add_one:  # 50,001 rows: one over the cap
                    with trial_conn:
                        record_event(trial_conn, extra, occurred_at, 0)
                started = time.perf_counter()
                with trial_conn:
                    work(trial_conn)
                best = min(best, time.perf_counter() - started)
                left = trial_conn.execute("SELECT count(*) FROM session_state_events").get
                if left != expect:
                    raise BenchError(f"pruning left {left} rows, not {expect}")
            finally:
                trial_conn.close()
                remove_db(path)
        return best

    def _prune_all(conn: apsw.Connection, now: int, cap: int) -> None:
        # The writer prunes in chunks of PRUNE_BATCH rows (one transaction each).
        while max(prune(conn, now, retention_days=RETENTION_DAYS, max_rows=cap)) >= PRUNE_BATCH:
            pass

    later = occurred_at + (RETENTION_DAYS + 1) * DAY_MS
    cutoff = later - RETENTION_DAYS * DAY_MS
    try:
        return PruneTimes(
            one=trial(lambda c: prune(c, occurred_at, retention_days=RETENTION_DAYS,
                                      max_rows=rows), add_one=True, expect=rows),
            one_baseline=trial(lambda c: c.execute(
                "DELETE FROM session_state_events"
                " WHERE sequence = (SELECT min(sequence) FROM session_state_events)"),
                add_one=True, expect=rows),
            expired=trial(lambda c: _prune_all(c, later, rows), add_one=False, expect=0),
            expired_baseline=trial(lambda c: c.execute(
                "DELETE FROM session_state_events WHERE occurred_at < ?", (cutoff,)),
                add_one=False, expect=0),
        )
    finally:
        remove_db(base)


# --- 6: twenty rapid changes -------------------------------------------------------


@dataclass
class LoadRun:
    pairs: int
    events: int
    seconds: float
    notices: int
    baseline_seconds: float


def load_burst(directory: Path, watchers: int, targets: int) -> LoadRun:
    """Section 6: the load script's burst, then the same events with nobody watching."""
    layout = load_twenty.Layout.build(watchers, targets, uuid.uuid4().hex[:8])
    config = GatewayConfig(queue_limit=max(20, targets))  # as the load script sets it
    path = directory / "load.sqlite"
    wakes = load_twenty.WakeCounter()
    gw = Gateway.open(path, config=config, on_wake=wakes, monitor=False)
    pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="bench-load")
    try:
        run = load_twenty.Run(gw, layout, pool, wakes)
        run.register()
        _first, seconds, events = run.burst(CHANGES)  # checks one notice and one wake per pair
        notices = sum(len(gw.pending_notices(w)) for w in layout.watchers)
    except load_twenty.Violation as exc:
        raise BenchError(f"load burst: {exc}") from exc
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        gw.close()
        remove_db(path)
    if notices != layout.pairs():
        raise BenchError(f"load burst left {notices} notices for {layout.pairs()} pairs")
    return LoadRun(layout.pairs(), events, seconds, notices,
                   unwatched_burst(directory, layout.pairs(), config))


def unwatched_burst(directory: Path, targets: int, config: GatewayConfig) -> float:
    """Section 6 baseline: the burst's calls, in its order, on targets nobody watches."""
    keys = [pair("unwatched", j // CHANGES, j % CHANGES)[1] for j in range(targets)]

    def change(target: str, k: int) -> None:
        if k % 2 == 0:  # human_message records nothing unwatched: record() the same kind
            event = gw.record(SessionStateEventInput(
                session_key=target, kind="human_direct_message", actor_type="human",
                summary="human message via load"))
        else:
            event = gw.set_goal(target, action="updated")
        if event is None:
            raise BenchError(f"an unwatched change to {target} was not recorded")

    path = directory / "unwatched.sqlite"
    gw = Gateway.open(path, config=config, on_wake=load_twenty.WakeCounter(), monitor=False)
    try:
        with ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="bench-load") as pool:
            started = time.perf_counter()
            futures = [pool.submit(change, t, k) for k in range(CHANGES) for t in keys]
            for future in futures:
                future.result(timeout=WAIT_S)
            return time.perf_counter() - started
    finally:
        gw.close()
        remove_db(path)


# --- 7: scale ------------------------------------------------------------------------


@dataclass
class ScaleRun:
    sessions: int
    pairs: int
    open_s: float
    empty_open_s: float
    touch_rate: float
    threads_before: int
    threads_after: int
    rss_before_kib: int
    rss_after_kib: int


def scale(directory: Path, watchers: int, targets: int) -> ScaleRun:
    """Section 7: open a file with many sessions and pairs, touch every pair once."""
    empty_open_s = float("inf")
    for _ in range(3):  # best of three: the first open of the process pays for warm-up
        empty = directory / "empty.sqlite"
        started = time.perf_counter()
        opened = Gateway.open(empty, monitor=False)
        empty_open_s = min(empty_open_s, time.perf_counter() - started)
        opened.close()
        remove_db(empty)

    path = directory / "scale.sqlite"
    layout = [pair("scale", i, j) for i in range(watchers) for j in range(targets)]
    conn = new_connection(path)
    try:
        now, versions = now_ms(), itertools.count(1)
        with conn:
            for watcher, target in layout:
                agent = agent_id_of(target)
                upsert_session(conn, UpsertSession(session_key=target, agent_id=agent), now)
                register_watch(conn, RegisterWatch(watcher_key=watcher, target_key=target,
                                                   target_agent_id=agent), now, next(versions))
        sessions = conn.execute("SELECT count(*) FROM sessions").get
        pairs = conn.execute("SELECT count(*) FROM session_watch_cursors").get
    finally:
        conn.close()
    if not isinstance(sessions, int) or not isinstance(pairs, int) or pairs != len(layout):
        raise BenchError(f"the scale file holds {pairs} pairs, not {len(layout)}")

    threads_before = threading.active_count()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wakes = load_twenty.WakeCounter()
    started = time.perf_counter()
    gw = Gateway.open(path, monitor=False, on_wake=wakes)
    open_s = time.perf_counter() - started
    try:
        def touch(i: int) -> None:
            for _watcher, target in layout[i::THREADS]:
                if gw.human_message(target, channel="bench") is None:
                    raise BenchError(f"human_message({target}) was not recorded")

        touch_s = run_threads(THREADS, touch)
        threads_after = threading.active_count()
        notices = sum(len(gw.pending_notices(pair("scale", i)[0])) for i in range(watchers))
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    finally:
        gw.close()
        remove_db(path)
    if notices != len(layout) or wakes.total() != len(layout):
        raise BenchError(f"touching {len(layout)} pairs queued {notices} notices and "
                         f"{wakes.total()} wakes")
    return ScaleRun(sessions, pairs, open_s, empty_open_s, len(layout) / touch_s,
                    threads_before, threads_after, rss_before, rss_after)


# --- the run ---------------------------------------------------------------------------


PROC_THREADS = 4
"""Producer threads per process in section 8 (4 processes x 4 threads vs 1 x 16)."""
ALL_THREADS = 16


def process_recording(place: Place, processes: int, threads: int,
                      per_thread: int) -> Recording:
    """Section 8: ``processes`` gateway processes on one file, ``threads`` producers each.

    Every process is a ``spawn``-started child (:class:`scripts.procs.Worker`)
    holding its own ``Gateway``; each thread records on its own watched pair.
    All threads start at one agreed wall time; the figure runs from it to the
    last thread's end. Blocks until every child answered (bounded).

    Raises:
        BenchError: a call recorded nothing.
    """
    path = place.new(f"procs-{processes}x{threads}")
    workers: list[Worker] = []
    try:
        workers = [Worker(path) for _ in range(processes)]
        go = time.time() + 0.5  # after every child set its pairs up
        for i, worker in enumerate(workers):
            worker.send("record_threads", f"p{i}", threads, per_thread, go)
        results = []
        for worker in workers:
            status, value = worker.recv(timeout=WAIT_S)
            if status != "ok":
                raise BenchError(f"a recording process failed: {value}")
            results.append(value)
    finally:
        for worker in workers:
            worker.close()
        place.remove(path)
    events = sum(r[0] for r in results)
    if events != processes * threads * per_thread:
        raise BenchError(f"{processes} processes recorded {events} events, not "
                         f"{processes * threads * per_thread}")
    return Recording(events, max(r[2] for r in results) - go, [])


@dataclass(frozen=True)
class CrossRun:
    """Section 8 latencies across processes, in seconds, one entry per round."""

    wakes: list[float]
    wakes_after_return: list[float]
    notices: list[float]
    withdrawals: list[float]
    stale_reads: list[int]
    round_trips: list[float]


def cross_latency(place: Place, rounds: int, load_threads: int = 0) -> CrossRun:
    """Section 8: a notice and its wake crossing from a producer process to others.

    Three children on one file: a host (``hosts=[watcher]``, its ``on_wake``
    stamps the wall time), a producer and an observer. Each round the
    observer spins on ``pending_notices``, the producer records one change
    (wall time before the call), the observer stamps when the notice shows
    and the host when ``on_wake`` runs; then the observer drains and the host
    reads until the notice is gone (withdrawal: drain's return to that read).
    Baseline: a bare pipe round trip to a child. With ``load_threads``, a
    fourth child records on its own pairs from that many threads all the
    while (write-lock contention and CPU load). Blocks (bounded).
    """
    path = place.new(f"cross-{load_threads}")
    watcher, target = pair("cross", 0)
    host = producer = observer = loader = None
    result = CrossRun([], [], [], [], [], [])
    try:
        host = Worker(path, hosts=[watcher])
        producer, observer = Worker(path), Worker(path)
        if not host.call("watch", watcher, target):
            raise BenchError("the cross-process watch failed")
        if load_threads:
            loader = Worker(path)
            # Enough to outlast the rounds (about 15 ms each) at ~2,000 events/s.
            loader.send("record_threads", "load", load_threads,
                        max(50, rounds * 40 // load_threads), time.time())
        for r in range(rounds):
            observer.send("spin_until_visible", watcher, 10.0)
            started, returned, _seq = producer.call("timed_record", target)
            seen, _reads = observer.recv()[1]
            woke = host.call("await_wake", r + 1, 10.0)
            if seen is None or woke is None:
                raise BenchError(f"round {r}: the notice or its wake never crossed")
            _before, drained_at, texts = observer.call("timed_drain", watcher)
            if len(texts) != 1:
                raise BenchError(f"round {r}: the observer drained {texts!r}")
            gone_at, stale = host.call("first_without", watcher, texts[0])
            ping = time.perf_counter()
            host.call("pid")
            result.round_trips.append(time.perf_counter() - ping)
            result.wakes.append(woke - started)
            result.wakes_after_return.append(max(0.0, woke - returned))
            result.notices.append(seen - started)
            result.withdrawals.append(max(0.0, gone_at - drained_at))
            result.stale_reads.append(stale)
        if len(host.call("wakes")) != rounds or producer.call("wakes") \
                or observer.call("wakes"):
            raise BenchError("a cross-process notice did not wake exactly once, in the host")
        if loader is not None:
            status, value = loader.recv(timeout=WAIT_S)
            if status != "ok":
                raise BenchError(f"the load process failed: {value}")
    finally:
        for worker in (host, producer, observer, loader):
            if worker is not None:
                worker.close()
        place.remove(path)
    return result


@dataclass(frozen=True)
class IdleRun:
    """Section 8: CPU share of an idle process, hosting (probe running) or not."""

    hosting: float
    plain: float
    probes_per_s: float


def idle_probe(directory: Path, seconds: float) -> IdleRun:
    """Section 8: idle CPU of a hosting process (its change probe) next to a plain one.

    Both are gateway children on one file, idle side by side for ``seconds``;
    the figure is process CPU time over wall time (all threads). Blocks.
    """
    path = directory / "idle.sqlite"
    hosting = plain = None
    try:
        hosting = Worker(path, hosts=["agent:bench:idle-host"])
        plain = Worker(path)
        probes = hosting.call("probes")
        hosting.send("idle_cpu", seconds)
        plain.send("idle_cpu", seconds)
        (_s1, (cpu_h, wall_h)), (_s2, (cpu_p, wall_p)) = (
            hosting.recv(timeout=seconds + WAIT_S), plain.recv(timeout=seconds + WAIT_S))
        probed = hosting.call("probes") - probes
    finally:
        for worker in (hosting, plain):
            if worker is not None:
                worker.close()
        remove_db(path)
    return IdleRun(cpu_h / wall_h, cpu_p / wall_p, probed / wall_h)


def measure(directory: Path, sizes: Sizes) -> list[Row]:
    """Run every section (7 first, so its peak RSS is its own) and build the rows."""
    place = Place(directory)
    big = scale(directory, sizes.scale_watchers, sizes.scale_targets)
    naive = naive_recording(directory, sizes.naive_events)
    # Peer and gateway interleaved, so drift in the disk or the CPU hits both alike.
    peer_one = peer_recording(place, 1, sizes.one_thread_events)
    one = gateway_recording(place, 1, sizes.one_thread_events)
    peer_eight = peer_recording(place, THREADS, sizes.events_per_thread)
    eight = gateway_recording(place, THREADS, sizes.events_per_thread)
    roof = ceiling(directory, eight.events)
    wake = wake_latency(directory, THREADS, sizes.wake_rounds_per_thread)
    small_p50 = status_latency(directory, sizes.status_rows_small, sizes.status_calls)
    large_p50 = status_latency(directory, sizes.status_rows_large, sizes.status_calls)
    pruned = prune_times(directory, sizes.prune_rows, sizes.prune_repeat)
    load = load_burst(directory, sizes.load_watchers, sizes.load_targets)
    per = sizes.proc_events_per_thread
    per_all = per * PROC_THREADS * 4 // ALL_THREADS
    peer_all = peer_recording(place, ALL_THREADS, per_all)
    one_proc = process_recording(place, 1, ALL_THREADS, per_all)
    four_procs = process_recording(place, 4, PROC_THREADS, per)
    cross = cross_latency(place, sizes.latency_rounds)
    loaded = cross_latency(place, sizes.latency_rounds, load_threads=PROC_THREADS)
    idle = idle_probe(directory, sizes.idle_s)

    naive_what = "naive record_event, 1 txn/event"
    p = f"{sizes.prune_rows:,}"
    return [
        row(1, f"events/s, Gateway, {THREADS} threads", eight.rate,
            f"synchronous peer, {THREADS} threads, ev/s", peer_eight.rate, at_least=1.5),
        row(1, "events/s, Gateway, 1 thread", one.rate,
            "synchronous peer, 1 thread, ev/s", peer_one.rate, at_least=0.7),
        row(1, f"events/s, Gateway, {THREADS} threads", eight.rate,
            f"{naive_what}, ev/s", naive.rate),
        row(1, "events/s, Gateway, 1 thread", one.rate,
            f"{naive_what}, ev/s", naive.rate),
        row(2, f"events/s, Gateway, {THREADS} threads", eight.rate,
            "one executemany, 1 txn (ceiling), rows/s", roof),
        row(3, f"producer call p50 ms, {THREADS}-thread load", ms(pct(eight.latencies, 50)),
            "naive txn p50 ms", ms(pct(naive.latencies, 50))),
        row(3, f"producer call p99 ms, {THREADS}-thread load", ms(pct(eight.latencies, 99)),
            "naive txn p99 ms", ms(pct(naive.latencies, 99))),
        row(3, f"producer call p99 ms, {THREADS}-thread load", ms(pct(eight.latencies, 99)),
            f"synchronous peer call p99 ms, {THREADS} threads", ms(pct(peer_eight.latencies, 99)),
            at_most_value=3.0, unit="ms"),
        row(3, f"on_wake after call start p50 ms, {THREADS}-thread", ms(pct(wake.wakes, 50)),
            "naive txn p50 ms", ms(pct(naive.latencies, 50))),
        row(3, f"on_wake after call start p99 ms, {THREADS}-thread", ms(pct(wake.wakes, 99)),
            "naive txn p99 ms", ms(pct(naive.latencies, 99))),
        row(3, f"calls whose notice/wake was late, of {wake.rounds:,}", wake.violations,
            "the contract: none", 0, equal=True),
        row(4, f"session_status p50 ms, {sizes.status_rows_large:,} rows", ms(large_p50),
            f"session_status p50 ms, {sizes.status_rows_small:,} rows", ms(small_p50),
            at_most=1.5),
        row(5, f"prune {sizes.prune_rows + 1:,} -> {p} rows, ms", ms(pruned.one),
            "DELETE the oldest row, ms", ms(pruned.one_baseline)),
        row(5, f"prune {p} expired rows, ms", ms(pruned.expired),
            "DELETE WHERE occurred_at < cutoff, ms", ms(pruned.expired_baseline)),
        row(6, f"{CHANGES} changes x {load.pairs:,} pairs, s ({load.notices:,} notices)",
            load.seconds, f"same {load.events:,} events, no watchers, s", load.baseline_seconds),
        row(7, f"Gateway.open, {big.sessions:,} sessions {big.pairs:,} pairs, s", big.open_s,
            "Gateway.open, empty file, s", big.empty_open_s),
        row(7, f"touch each of {big.pairs:,} pairs once, ev/s", big.touch_rate,
            f"section 1, {THREADS} threads, ev/s", eight.rate),
        row(7, "live threads after touching", big.threads_after,
            "live threads before open", big.threads_before),
        row(7, "peak RSS KiB after touching", big.rss_after_kib,
            "peak RSS KiB before open", big.rss_before_kib),
        row(8, f"events/s, 4 processes x {PROC_THREADS} threads", four_procs.rate,
            f"1 process x {ALL_THREADS} threads, ev/s", one_proc.rate),
        row(8, f"events/s, 4 processes x {PROC_THREADS} threads", four_procs.rate,
            f"synchronous peer, {ALL_THREADS} threads, ev/s", peer_all.rate),
        row(8, "cross-process wake p50 ms (call start to on_wake)", ms(pct(cross.wakes, 50)),
            "pipe round trip p50 ms", ms(pct(cross.round_trips, 50))),
        row(8, "cross-process wake p99 ms (call start to on_wake)", ms(pct(cross.wakes, 99)),
            "pipe round trip p99 ms", ms(pct(cross.round_trips, 99)),
            at_most_value=50.0, unit="ms"),
        row(8, f"same, p99 ms, 1 more process x {PROC_THREADS} threads writing",
            ms(pct(loaded.wakes, 99)), "pipe round trip p99 ms, same load",
            ms(pct(loaded.round_trips, 99)), at_most_value=50.0, unit="ms"),
        row(8, "same load, wake p99 ms after the producer returned",
            ms(pct(loaded.wakes_after_return, 99)), "pipe round trip p99 ms, same load",
            ms(pct(loaded.round_trips, 99))),
        row(8, "cross-process notice p50 ms (call start to seen)", ms(pct(cross.notices, 50)),
            "pipe round trip p50 ms", ms(pct(cross.round_trips, 50))),
        row(8, "cross-process notice p99 ms (call start to seen)", ms(pct(cross.notices, 99)),
            "pipe round trip p99 ms", ms(pct(cross.round_trips, 99))),
        row(8, "withdrawal p99 ms (drain return to gone elsewhere)",
            ms(pct(cross.withdrawals, 99)), "pipe round trip p99 ms",
            ms(pct(cross.round_trips, 99)), at_most_value=50.0, unit="ms"),
        row(8, f"reads still showing a drained notice, of {len(cross.wakes)}",
            sum(cross.stale_reads), "the contract: none", 0, equal=True),
        row(8, "idle CPU % of a core, hosting (change probe)", 100 * idle.hosting,
            "idle CPU %, not hosting", 100 * idle.plain),
        row(8, "change probes per second while idle", idle.probes_per_s,
            "configured: 1000 / probe_interval_ms", 1000 / GatewayConfig().probe_interval_ms),
    ]


def measure_postgres(directory: Path, url: str, sizes: Sizes) -> list[Row]:
    """``--db postgresql://...``: the recording and cross-process figures on the server,
    each next to its synchronous peer on the same server and to SQLite in the same run.

    Every run gets a fresh schema on the server (dropped afterwards); the SQLite
    runs use files in ``directory``. Blocks (bounded).
    """
    pg, lite = Place(directory, url), Place(directory)
    peer_one = peer_recording(pg, 1, sizes.one_thread_events)
    one = gateway_recording(pg, 1, sizes.one_thread_events)
    peer_eight = peer_recording(pg, THREADS, sizes.events_per_thread)
    eight = gateway_recording(pg, THREADS, sizes.events_per_thread)
    lite_eight = gateway_recording(lite, THREADS, sizes.events_per_thread)
    per = sizes.proc_events_per_thread
    per_all = per * PROC_THREADS * 4 // ALL_THREADS
    peer_all = peer_recording(pg, ALL_THREADS, per_all)
    four_procs = process_recording(pg, 4, PROC_THREADS, per)
    lite_four = process_recording(lite, 4, PROC_THREADS, per)
    cross = cross_latency(pg, sizes.latency_rounds)
    lite_cross = cross_latency(lite, sizes.latency_rounds)
    return [
        row(1, f"PG events/s, Gateway, {THREADS} threads", eight.rate,
            f"PG synchronous peer (1 txn/event), {THREADS} threads", peer_eight.rate,
            at_least=1.0),
        row(1, "PG events/s, Gateway, 1 thread", one.rate,
            "PG synchronous peer (1 txn/event), 1 thread", peer_one.rate),
        row(1, f"PG events/s, Gateway, {THREADS} threads", eight.rate,
            f"SQLite events/s, Gateway, {THREADS} threads", lite_eight.rate),
        row(3, f"PG producer call p99 ms, {THREADS} threads", ms(pct(eight.latencies, 99)),
            f"PG synchronous peer call p99 ms, {THREADS} threads",
            ms(pct(peer_eight.latencies, 99))),
        row(8, f"PG events/s, 4 processes x {PROC_THREADS} threads", four_procs.rate,
            f"PG synchronous peer, {ALL_THREADS} threads", peer_all.rate),
        row(8, f"PG events/s, 4 processes x {PROC_THREADS} threads", four_procs.rate,
            f"SQLite events/s, 4 processes x {PROC_THREADS} threads", lite_four.rate),
        row(8, "PG cross-process notice p50 ms (call start to seen)", ms(pct(cross.notices, 50)),
            "SQLite, same, p50 ms", ms(pct(lite_cross.notices, 50))),
        row(8, "PG cross-process notice p99 ms (call start to seen)", ms(pct(cross.notices, 99)),
            "SQLite, same, p99 ms", ms(pct(lite_cross.notices, 99)),
            at_most_value=50.0, unit="ms"),
        row(8, "PG cross-process wake p50 ms (call start to on_wake)", ms(pct(cross.wakes, 50)),
            "SQLite, same, p50 ms", ms(pct(lite_cross.wakes, 50))),
        row(8, "PG cross-process wake p99 ms (call start to on_wake)", ms(pct(cross.wakes, 99)),
            "SQLite, same, p99 ms", ms(pct(lite_cross.wakes, 99)),
            at_most_value=50.0, unit="ms"),
        row(8, "PG withdrawal p99 ms (drain return to gone elsewhere)",
            ms(pct(cross.withdrawals, 99)), "SQLite, same, p99 ms",
            ms(pct(lite_cross.withdrawals, 99)), at_most_value=50.0, unit="ms"),
        row(8, f"PG reads still showing a drained notice, of {len(cross.wakes)}",
            sum(cross.stale_reads), "the contract: none", 0, equal=True),
    ]


def fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value == int(value) and abs(value) < 1e7:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def table(rows: list[Row]) -> str:
    header = ("§", "ours", "value", "baseline (same run)", "value", "ratio", "goal")
    lines = [(str(r.section), r.figure, fmt(r.ours), r.baseline_figure, fmt(r.baseline),
              fmt(r.ratio),
              "" if r.goal is None else f"{r.goal} {'ok' if r.met else 'MISSED'}")
             for r in rows]
    widths = [max(len(x[c]) for x in [header, *lines]) for c in range(len(header))]
    right = {2, 4, 5}

    def render(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return "\n".join([render(header), *(render(x) for x in lines)])


def redact(url: str) -> str:
    """``url`` without its password (for the printed header)."""
    scheme, sep, rest = url.partition("://")
    user, at, host = rest.rpartition("@")
    return f"{scheme}{sep}{user.split(':', 1)[0]}{at}{host}" if at else url


def print_report(prog: str, tagline: str, *, mode: str, sections: list[int], sizes: object,
                 rows: list[Row], broken: list[str], total_s: float, as_json: bool,
                 check: bool) -> int:
    """Print a section benchmark's table (or JSON), its broken promises and missed goals.

    The closing of ``bench_scale`` and ``bench_watch``: ``sizes`` is their
    sizes dataclass. Returns :func:`exit_status`'s code. Caller's thread.
    """
    if as_json:
        print(json.dumps({"mode": mode, "sections": sections, "machine": machine(),
                          "sizes": asdict(sizes),  # type: ignore[call-overload]
                          "rows": [asdict(r) for r in rows], "broken": broken,
                          "total_s": total_s}, indent=2))
    else:
        info = machine()
        print(f"{prog} ({mode}): {tagline}; Python {info['python']}, {info['cpus']} CPUs, "
              f"SQLite {info['sqlite']}; ratio = ours / baseline; {total_s:.1f} s")
        print(table(rows))
    for what in broken:
        print(f"{prog}: BROKEN: {what}", file=sys.stderr)
    report_missed(rows, prog, check=check)
    return exit_status(rows, check=check, broken=bool(broken))


def machine() -> dict[str, str | int | None]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "platform": platform.platform(), "sqlite": apsw.sqlite_lib_version(),
            "apsw": apsw.apsw_version()}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench", description="Gateway throughput, latency and scale next to baselines "
        "measured in the same run (synchronous=FULL).")
    parser.add_argument("--quick", action="store_true",
                        help="much smaller sizes (a smoke test of a few seconds)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the temporary databases go (default: the system temp "
                        "directory; pick a directory on the disk you want to measure)")
    parser.add_argument("--check", action="store_true",
                        help=f"exit {GOAL_MISSED} when a goal is missed (default: exit 0 "
                        "whether or not goals are met), naming each missed goal on stderr")
    parser.add_argument("--db", metavar="URL", default=None,
                        help="a postgresql:// URL: measure the PostgreSQL backend there (each "
                        "run in a fresh schema, dropped afterwards) next to its synchronous "
                        "peer on the same server and to SQLite in the same run")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one table (or JSON); returns the exit status.

    Args:
        argv: arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        0, or 1 when a checked promise broke, or with ``--check``
        :data:`GOAL_MISSED` when a goal was missed (:func:`exit_status`).
        Blocks for the whole run.
    """
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="ssa-bench-", dir=args.dir) as tmp:
            rows = (measure(Path(tmp), sizes) if args.db is None
                    else measure_postgres(Path(tmp), args.db, sizes))
    except BenchError as exc:
        print(f"bench: FAILED: {exc}", file=sys.stderr)
        return 1
    total_s = time.perf_counter() - started
    mode = "quick" if args.quick else "full"
    if args.json:
        print(json.dumps({"mode": mode, "synchronous": "FULL", "threads": THREADS,
                          "machine": machine(), "sizes": asdict(sizes),
                          "rows": [asdict(r) for r in rows], "total_s": total_s}, indent=2))
    else:
        info = machine()
        backend = "" if args.db is None else f", PostgreSQL at {redact(args.db)} and SQLite"
        print(f"bench ({mode}{backend}): synchronous=FULL, {THREADS} producer threads; "
              f"Python {info['python']}, {info['cpus']} CPUs, SQLite {info['sqlite']}; "
              f"ratio = ours / baseline; {total_s:.1f} s")
        print(table(rows))
    report_missed(rows, "bench", check=args.check)
    return exit_status(rows, check=args.check)


if __name__ == "__main__":
    raise SystemExit(main())
