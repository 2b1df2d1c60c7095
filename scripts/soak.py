"""Soak: mixed load from 16 threads for a given time, then the crash-consistency invariants.

Issue 5, item 8. One gateway, real clock, real SQLite durability (``synchronous=FULL``)
and small actor caps (so idle actors keep being stopped and restarted from SQLite).
Sixteen threads run mixed load until ``--seconds`` have passed:

* 7 producers: ``human_message``, ``set_goal``, ``compacted`` and ``finish_run`` on
  watched targets, spawned children, group sessions (ambient watchers) and
  sessions nobody watches (more sessions than the caps allow actors for);
* 3 drainers: ``pending_notices`` and ``drain`` of every watcher;
* 2 watchers: re-register watches and read ``session_status(changes_since=N)``;
* 2 upstream writers: append Claude Code rows (typed and assistant) to four
  adopted transcripts and call ``scan_upstream()``;
* 2 readers: ``session_status``, ``sessions_list`` and ``pending_notices``.

Every interval it prints one line: operations and operations per second by kind,
the resident set size (``VmRSS``) and the thread count. At the end it checks that
memory and threads stayed flat (last interval's RSS at most 1.5 x the second
interval's; threads never above the configured actor caps + 20), closes the
gateway, reopens it (the restart sweep) and checks the invariants of the crash
suite (``check_after_reopen``, ``check_upstream``): no returned record is
missing; heads never go backwards and equal each session's newest event;
``last_seen <= notified <= material``; every pending pair has exactly one queued
notice; every typed upstream row completely written is counted exactly once.

Run from the repository root::

    python scripts/soak.py [--seconds 600] [--threads 16] [--interval S] [--db PATH]

Exit status 0 when every check passed, 1 on a violation (printed), 2 on bad
arguments. ``tests/test_soak.py`` runs ``main(["--seconds", "30"])``.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import threading
import time
import uuid
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a file from a checkout that is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import apsw

from actors import Gateway, GatewayConfig, SessionStateEvent
from actors.upstream.scan import line_classifier

JOIN_TIMEOUT_S = 30.0
"""Longest the script waits for one load thread to stop after the deadline."""
SETTLE_SCANS = 50
"""Most ``scan_upstream`` calls used to catch up with the transcripts at the end."""
RSS_GROWTH_LIMIT = 1.5
THREAD_MARGIN = 20

Cursor = tuple[int, int, int]


# --- the invariants (shared with tests/test_crash_mixed.py) --------------------------------


def notice_text(target: str, since: int) -> str:
    """The contract's exact notice line."""
    return (
        f'Session "{target}" changed (other actor). Reconcile before acting: '
        f'session_status sessionKey "{target}" changesSince {since}.'
    )


def _int(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"expected an integer column, got {value!r}")


@dataclass(frozen=True)
class Snapshot:
    """The durable state the invariants look at, read in one transaction.

    Attributes:
        events: ``{sequence: session_key}`` of every stored event.
        heads: ``{session_key: (last_sequence, pruned_max_sequence)}``.
        cursors: ``{(watcher, target): (last_seen, notified, material)}``.
        sessions: session keys with an entry.
    """

    events: dict[int, str]
    heads: dict[str, tuple[int, int]]
    cursors: dict[tuple[str, str], Cursor]
    sessions: frozenset[str]

    @property
    def max_sequence(self) -> int:
        return max([*self.events, *(h for h, _ in self.heads.values())], default=0)


def read_snapshot(db: Path) -> Snapshot:
    """Read the signal log with its own read-only connection."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.set_busy_timeout(5000)
        with conn:
            events = {_int(s): str(k) for s, k in conn.execute(
                "SELECT sequence, session_key FROM session_state_events")}
            heads = {str(k): (_int(h), _int(p)) for k, h, p in conn.execute(
                "SELECT session_key, last_sequence, pruned_max_sequence"
                " FROM session_state_heads")}
            cursors = {
                (str(w), str(t)): (_int(ls), _int(nt), _int(mt))
                for w, t, ls, nt, mt in conn.execute(
                    "SELECT watcher_session_key, target_session_key, last_seen_sequence,"
                    " notified_sequence, material_sequence FROM session_watch_cursors")
            }
            sessions = frozenset(str(k) for (k,) in conn.execute(
                "SELECT session_key FROM sessions"))
    finally:
        conn.close()
    return Snapshot(events, heads, cursors, sessions)


def check_after_reopen(
    gw: Gateway, db: Path, *, returned: Iterable[tuple[int, str]], before: Snapshot | None,
    queue_limit: int,
) -> tuple[Snapshot, list[str]]:
    """The crash invariants, right after ``Gateway.open`` and before anything else ran.

    Args:
        gw: the freshly opened gateway (its restart sweep has run).
        db: its database file.
        returned: ``(sequence, session_key)`` of every record call that returned
            an event before the crash or close.
        before: the snapshot taken after the previous reopen (heads must not go
            backwards, sequences must not be reused), or ``None``.
        queue_limit: the gateway's ``queue_limit`` (a watcher's queue holds at
            most that many notices).

    Returns:
        The new snapshot and the violations found (empty when all hold).
    """
    now = read_snapshot(db)
    problems: list[str] = []
    returned = list(returned)

    def pruned(key: str) -> int:
        return now.heads.get(key, (0, 0))[1]

    lost = [(s, k) for s, k in returned if now.events.get(s) != k and s > pruned(k)]
    if lost:
        problems.append(f"{len(lost)} returned records are missing, e.g. {lost[:3]}")
    newest: dict[str, int] = {}
    for seq, key in now.events.items():
        newest[key] = max(newest.get(key, 0), seq)
    for key, (head, _) in (before.heads.items() if before else ()):
        if now.heads.get(key, (0, 0))[0] < head:
            problems.append(f"the head of {key} went backwards: {head} -> {now.heads.get(key)}")
    behind = [(s, k) for s, k in returned if now.heads.get(k, (0, 0))[0] < s]
    if behind:
        problems.append(f"{len(behind)} heads are behind a returned record, e.g. {behind[:3]}")
    for key, (head, watermark) in now.heads.items():
        if key in newest and newest[key] != head:
            problems.append(f"the head of {key} is {head}, its newest event {newest[key]}")
        if key not in newest and head > watermark:
            problems.append(f"the head of {key} is {head} but it has no event")
    if before is not None:
        reused = sorted(s for s in set(now.events) - set(before.events)
                        if s <= before.max_sequence)
        if reused:
            problems.append(f"sequences were reused: {reused[:5]}")
    broken = {p: c for p, c in now.cursors.items() if not c[0] <= c[1] <= c[2]}
    if broken:
        problems.append(f"cursors break last_seen <= notified <= material: "
                        f"{dict(list(broken.items())[:3])}")
    pending = {p: c for p, c in now.cursors.items() if c[2] > c[0]}
    unfrozen = {p: c for p, c in pending.items() if c[1] != c[2]}
    if unfrozen:
        problems.append(f"the restart sweep did not re-freeze {dict(list(unfrozen.items())[:3])}")
    if not {w for w, _ in now.cursors} <= now.sessions:
        problems.append("a watcher has no session entry")
    for watcher in sorted({w for w, _ in now.cursors}):
        expected = Counter(notice_text(t, c[0]) for (w, t), c in pending.items() if w == watcher)
        queued = Counter(gw.pending_notices(watcher))
        if sum(expected.values()) <= queue_limit:
            ok = queued == expected
        else:  # more pending pairs than queue slots: a full queue of distinct, expected lines
            ok = (not queued - expected and sum(queued.values()) == queue_limit
                  and max(queued.values()) == 1)
        if not ok:
            problems.append(f"{watcher}: queued notices are not one per pending pair; missing "
                            f"{sorted((expected - queued).elements())[:3]}, unexpected "
                            f"{sorted((queued - expected).elements())[:3]}")
    return now, problems


def typed_rows(path: Path, start: int, end: int | None = None,
               source: str = "claude") -> tuple[int, int]:
    """Rows in bytes ``[start, end)`` on complete lines that ``source``'s classifier counts.

    Returns ``(typed rows, offset just past the last complete line)``.
    """
    data = path.read_bytes()[start:end]
    complete = data[: data.rfind(b"\n") + 1]
    classify = line_classifier(source)
    turns = sum(classify(line).human for line in complete.split(b"\n")[:-1] if line.strip())
    return turns, start + len(complete)


def recorded_turns(db: Path, key: str) -> int:
    """Sum of ``turns`` (1 when absent) over the session's ``human_direct_message`` events."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.set_busy_timeout(5000)
        payloads = [p for (p,) in conn.execute(
            "SELECT payload_json FROM session_state_events WHERE session_key = ?"
            " AND kind = 'human_direct_message'", (key,))]
    finally:
        conn.close()
    return sum(1 if p is None else int(json.loads(str(p)).get("turns", 1)) for p in payloads)


def link_markers(db: Path) -> dict[str, str]:
    """``{session_key: marker_json}`` of every upstream link."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.set_busy_timeout(5000)
        return {str(k): str(m) for k, m in conn.execute(
            "SELECT session_key, marker_json FROM session_upstream_links")}
    finally:
        conn.close()


def check_upstream(gw: Gateway, db: Path,
                   transcripts: Mapping[str, tuple[Path, int]]) -> tuple[int, list[str]]:
    """Scan until no marker moves, then every typed row written is counted exactly once.

    Args:
        transcripts: ``{session_key: (transcript, offset its link started at)}``.

    Returns:
        ``(typed rows counted in all transcripts, violations)``.
    """
    before = link_markers(db)
    for _ in range(SETTLE_SCANS):
        gw.scan_upstream()
        after = link_markers(db)
        if after == before:
            break
        before = after
    problems: list[str] = []
    total = 0
    for key, (path, start) in transcripts.items():
        typed, end = typed_rows(path, start)
        total += typed
        recorded = recorded_turns(db, key)
        if recorded != typed:
            problems.append(f"{key}: {recorded} upstream turns recorded, {typed} typed rows "
                            f"completely written ({'lost' if recorded < typed else 'double'})")
        marker = json.loads(before.get(key, "null"))
        if not isinstance(marker, dict) or marker.get("offset") != end:
            problems.append(f"{key}: the marker {marker} is not at the end of the complete "
                            f"lines ({end})")
    return total, problems


# --- the load --------------------------------------------------------------------------------


def claude_row(text: str, *, typed: bool) -> bytes:
    """A Claude Code row: a typed prompt, or an assistant reply."""
    common: dict[str, object] = {
        "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/work",
        "sessionId": "5e0c1a6f-0000-4000-8000-000000000001", "version": "2.1.37",
        "uuid": str(uuid.uuid4()), "timestamp": "2026-07-13T10:05:00.000Z"}
    row: dict[str, object]
    if typed:
        row = {**common, "type": "user", "message": {"role": "user", "content": text}}
    else:
        row = {**common, "type": "assistant",
               "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}
    return json.dumps(row).encode() + b"\n"


@dataclass(frozen=True)
class Layout:
    """Who watches what: at most ``queue_limit`` pairs per watcher, more sessions than caps."""

    watchers: tuple[str, ...]
    watched: dict[str, tuple[str, ...]]
    producers: tuple[str, ...]
    upstream: tuple[str, ...]
    lead: str
    children: tuple[str, ...]

    @classmethod
    def build(cls, tag: str) -> Layout:
        watchers = tuple(f"agent:main:soak-{tag}:w{i}" for i in range(8))
        targets = tuple(f"agent:main:soak-{tag}:t{j:02d}" for j in range(64))
        upstream = tuple(f"agent:main:soak-{tag}:up{k}" for k in range(4))
        watched = {w: tuple(targets[(8 * i + k) % len(targets)] for k in range(16))
                   + ((upstream[i],) if i < len(upstream) else ())
                   for i, w in enumerate(watchers)}
        loose = tuple(f"agent:main:soak-{tag}:loose{j:02d}" for j in range(96))
        groups = tuple(f"agent:main:telegram:group:soak-{tag}-{j}" for j in range(4))
        children = tuple(f"agent:main:subagent:soak-{tag}-c{j}" for j in range(4))
        return cls(watchers=watchers, watched=watched,
                   producers=(*targets, *loose, *groups, *children), upstream=upstream,
                   lead=f"agent:main:subagent:soak-{tag}-lead", children=children)

    def all_watchers(self) -> tuple[str, ...]:
        return (*self.watchers, self.lead, "agent:main:main")


@dataclass
class Stats:
    """Operation counts by kind (each thread adds to its own counter; read by the sampler)."""

    per_thread: list[Counter[str]]
    returned_seq: array[int] = field(default_factory=lambda: array("q"))
    returned_key: array[int] = field(default_factory=lambda: array("l"))
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    max_latency_s: float = 0.0

    def total(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for counter in self.per_thread:
            out.update(counter.copy())
        return out

    def error(self, message: str) -> None:
        with self.lock:
            if len(self.errors) < 20:
                self.errors.append(message)


class Load:
    """The sixteen threads' bodies; each runs until ``stop`` is set."""

    def __init__(self, gw: Gateway, layout: Layout, stats: Stats, stop: threading.Event,
                 transcripts: dict[str, Path], keys: list[str]) -> None:
        self.gw = gw
        self.layout = layout
        self.stats = stats
        self.stop = stop
        self.transcripts = transcripts
        self.keys = keys
        self.key_index = {k: i for i, k in enumerate(keys)}
        self.transcript_locks = {k: threading.Lock() for k in transcripts}

    def timed(self, call: Callable[[], object]) -> object:
        started = time.perf_counter()
        value = call()
        elapsed = time.perf_counter() - started
        self.stats.max_latency_s = max(self.stats.max_latency_s, elapsed)
        return value

    def run(self, role: str, index: int, rng: random.Random) -> None:
        body = getattr(self, role)
        counter = self.stats.per_thread[index]
        while not self.stop.is_set():
            try:
                body(rng, counter)
            except Exception as exc:  # any exception from the gateway is a finding
                self.stats.error(f"{role}-{index}: {type(exc).__name__}: {exc}")
                counter["errors"] += 1

    def produce(self, rng: random.Random, counter: Counter[str]) -> None:
        key = rng.choice(self.layout.producers)
        roll = rng.random()
        event: object
        if roll < 0.45:
            event = self.timed(lambda: self.gw.human_message(key, channel="soak"))
            if event is None and ":loose" not in key:
                self.stats.error(f"human_message({key}) returned None")
        elif roll < 0.8:
            event = self.timed(lambda: self.gw.set_goal(
                key, action=rng.choice(("set", "updated", "removed"))))
        elif roll < 0.9:
            event = self.timed(lambda: self.gw.compacted(key, operation_id=uuid.uuid4().hex))
        else:
            event = self.timed(lambda: self.gw.finish_run(
                key, run_id=uuid.uuid4().hex,
                outcome=rng.choice(("ok", "error", "timeout", "cancelled"))))
        if isinstance(event, SessionStateEvent):
            self.stats.returned_seq.append(event.sequence)
            self.stats.returned_key.append(self.key_index[event.session_key])
        elif roll >= 0.45:
            self.stats.error(f"a producer on {key} returned None")
        counter["record"] += 1

    def drain(self, rng: random.Random, counter: Counter[str]) -> None:
        watcher = rng.choice(self.layout.all_watchers())
        self.timed(lambda: self.gw.pending_notices(watcher))
        self.timed(lambda: self.gw.drain(watcher))
        counter["drain"] += 1

    def rewatch(self, rng: random.Random, counter: Counter[str]) -> None:
        watcher = rng.choice(self.layout.watchers)
        target = rng.choice(self.layout.watched[watcher])
        if not self.timed(lambda: self.gw.watch(watcher, target)):
            self.stats.error(f"watch({watcher}, {target}) returned False")
        self.timed(lambda: self.gw.session_status(target, changes_since=rng.randrange(1000)))
        counter["watch"] += 1

    def upstream(self, rng: random.Random, counter: Counter[str]) -> None:
        key = rng.choice(self.layout.upstream)
        rows = b"".join(claude_row(f"soak {uuid.uuid4().hex}", typed=rng.random() < 0.6)
                        for _ in range(rng.randint(1, 3)))
        with self.transcript_locks[key], self.transcripts[key].open("ab") as handle:
            handle.write(rows)
        counter["append"] += 1
        if rng.random() < 0.3:
            self.timed(self.gw.scan_upstream)
            counter["scan"] += 1

    def read(self, rng: random.Random, counter: Counter[str]) -> None:
        roll = rng.random()
        if roll < 0.6:
            self.timed(lambda: self.gw.session_status(rng.choice(self.layout.producers)))
        elif roll < 0.7:
            self.timed(self.gw.sessions_list)
        else:
            self.timed(lambda: self.gw.pending_notices(rng.choice(self.layout.all_watchers())))
        counter["read"] += 1


ROLES = ("produce",) * 7 + ("drain",) * 3 + ("rewatch",) * 2 + ("upstream",) * 2 + ("read",) * 2


def rss_bytes() -> int:
    """The current resident set size (``VmRSS``), else the peak from ``getrusage``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass(frozen=True)
class Sample:
    elapsed_s: float
    ops: int
    rss: int
    threads: int


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="soak", description="Mixed load from many threads; memory, threads and "
        "invariants must hold.")
    parser.add_argument("--seconds", type=float, default=600.0, help="load duration (600)")
    parser.add_argument("--threads", type=int, default=len(ROLES),
                        help=f"load threads ({len(ROLES)}; roles repeat in order)")
    parser.add_argument("--interval", type=float, default=None,
                        help="seconds per report line (default: seconds/10, 1 to 10)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument("--db", type=Path, default=None,
                        help="SQLite file (default: a fresh temporary directory)")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.threads < 1:
        parser.error("--seconds must be positive and --threads at least 1")
    if args.interval is None:
        args.interval = max(1.0, min(10.0, args.seconds / 10))
    if args.interval <= 0:
        parser.error("--interval must be positive")
    return args


@contextmanager
def database(path: Path | None) -> Iterator[Path]:
    if path is not None:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        yield Path(tmp) / "state.sqlite"


def setup(gw: Gateway, layout: Layout, directory: Path,
          rng: random.Random) -> dict[str, tuple[Path, int]]:
    """Register the watches, spawn the children, adopt the transcripts."""
    for watcher in layout.watchers:
        for target in layout.watched[watcher]:
            if target not in layout.upstream and not gw.watch(watcher, target):
                raise RuntimeError(f"watch({watcher}, {target}) failed")
    for child in layout.children:
        gw.spawn_subagent(layout.lead, child, run_id=uuid.uuid4().hex)
    directory.mkdir(parents=True, exist_ok=True)
    links: dict[str, tuple[Path, int]] = {}
    for i, key in enumerate(layout.upstream):
        path = directory / f"transcript-{i}.jsonl"
        path.write_bytes(b"".join(claude_row(f"history {n}", typed=rng.random() < 0.5)
                                  for n in range(5)))
        link = gw.adopt(key, source="claude", path=path)
        if link is None or not gw.watch(layout.watchers[i], key):
            raise RuntimeError(f"cannot adopt and watch {path}")
        links[key] = (path, int(link.marker["offset"]))
    return links


def main(argv: list[str] | None = None) -> int:
    """Run the soak; returns the exit status (0 ok, 1 violation)."""
    args = parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    config = GatewayConfig(max_session_actors=32, max_cursor_actors=48, max_monitor_actors=4,
                           max_rows=10_000_000, synchronous="FULL")
    caps = config.max_session_actors + config.max_cursor_actors + config.max_monitor_actors
    thread_bound = caps + THREAD_MARGIN
    layout = Layout.build(uuid.uuid4().hex[:6])
    keys = list(dict.fromkeys((*layout.producers, *layout.upstream)))
    wakes = [0]

    def on_wake(_watcher: str) -> None:
        wakes[0] += 1

    print(f"soak: {args.threads} threads for {args.seconds:.0f} s, seed {seed}, actor caps "
          f"{config.max_session_actors}/{config.max_cursor_actors}/{config.max_monitor_actors} "
          f"(session/cursor/monitor), thread bound {thread_bound}")
    violations: list[str] = []
    started = time.monotonic()
    with database(args.db) as db:
        gw = Gateway.open(db, config=config, on_wake=on_wake, monitor=False)
        try:
            links = setup(gw, layout, db.parent / "soak-upstream", rng)
            stats = Stats(per_thread=[Counter() for _ in range(args.threads)])
            stop = threading.Event()
            load = Load(gw, layout, stats, stop, {k: p for k, (p, _) in links.items()}, keys)
            threads = [threading.Thread(
                target=load.run, args=(ROLES[i % len(ROLES)], i, random.Random(rng.random())),
                name=f"soak-{ROLES[i % len(ROLES)]}-{i}") for i in range(args.threads)]
            for thread in threads:
                thread.start()
            samples = [Sample(0.0, 0, rss_bytes(), threading.active_count())]
            print(f"  {'t':>7}  {'ops':>8}  {'ops/s':>7}  {'by kind (this interval)':<58} "
                  f"{'rss MiB':>8}  {'threads':>7}")
            previous: Counter[str] = Counter()
            load_start = time.monotonic()
            deadline = load_start + args.seconds
            try:
                while (left := deadline - time.monotonic()) > 1e-3:
                    stop.wait(min(args.interval, left))  # only the deadline ends the load
                    totals = stats.total()
                    delta = totals - previous
                    previous = totals
                    elapsed = time.monotonic() - load_start
                    span = elapsed - samples[-1].elapsed_s
                    ops = sum(v for k, v in delta.items() if k != "errors")
                    sample = Sample(elapsed, ops, rss_bytes(), threading.active_count())
                    samples.append(sample)
                    kinds = " ".join(f"{k} {delta[k]}" for k in
                                     ("record", "drain", "watch", "append", "scan", "read",
                                      "errors") if delta[k])
                    print(f"  {elapsed:6.1f}s  {ops:8d}  {ops / max(span, 1e-9):7.0f}  "
                          f"{kinds:<58} {sample.rss / 2**20:8.1f}  {sample.threads:7d}",
                          flush=True)
            finally:
                stop.set()
                for thread in threads:
                    thread.join(JOIN_TIMEOUT_S)
            stuck = [t.name for t in threads if t.is_alive()]
            if stuck:
                violations.append(f"load threads did not stop: {stuck}")
            violations.extend(stats.errors)
            # Catch up with the transcripts, then the snapshot the reopen must not undercut.
            check_upstream(gw, db, links)
            before = read_snapshot(db)
        finally:
            gw.close()
        returned = [(s, keys[k]) for s, k in zip(stats.returned_seq, stats.returned_key,
                                                 strict=True)]
        gw = Gateway.open(db, config=config, on_wake=on_wake, monitor=False)
        try:
            after, problems = check_after_reopen(gw, db, returned=returned, before=before,
                                                 queue_limit=config.queue_limit)
            violations.extend(problems)
            typed, problems = check_upstream(gw, db, links)
            violations.extend(problems)
        finally:
            gw.close()

    totals = stats.total()
    load_samples = samples[1:]
    if len(load_samples) >= 3:
        second, last = load_samples[1], load_samples[-1]
        if last.rss > RSS_GROWTH_LIMIT * second.rss:
            violations.append(f"memory grew: {last.rss / 2**20:.1f} MiB in the last interval, "
                              f"{second.rss / 2**20:.1f} MiB in the second")
    else:
        violations.append(f"only {len(load_samples)} intervals: too short to judge memory")
    top = max(s.threads for s in samples)
    if top > thread_bound:
        violations.append(f"{top} threads, above the actor caps + {THREAD_MARGIN} "
                          f"({thread_bound})")
    ops_total = sum(v for k, v in totals.items() if k != "errors")
    load_s = load_samples[-1].elapsed_s if load_samples else 0.0
    print(f"soak: {ops_total} operations in {load_s:.1f} s ({ops_total / max(load_s, 1e-9):.0f}/s;"
          f" {', '.join(f'{k} {v}' for k, v in sorted(totals.items()))}); "
          f"{len(returned)} records returned, {len(after.events)} events, "
          f"{len(after.cursors)} cursors ({sum(1 for c in after.cursors.values() if c[2] > c[0])}"
          f" pending after reopen), {typed} upstream turns typed and counted, "
          f"{wakes[0]} wakes; slowest call {stats.max_latency_s * 1000:.0f} ms")
    print(f"soak: rss {samples[0].rss / 2**20:.1f} MiB at start, "
          f"{load_samples[1].rss / 2**20 if len(load_samples) > 1 else 0:.1f} MiB in the second "
          f"interval, {load_samples[-1].rss / 2**20 if load_samples else 0:.1f} MiB in the last; "
          f"threads at most {top} (bound {thread_bound}); total {time.monotonic() - started:.1f} s")
    if violations:
        for problem in violations:
            print(f"soak: VIOLATION: {problem}", file=sys.stderr)
        return 1
    print("soak: OK (memory and threads flat; invariants hold after reopen)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
