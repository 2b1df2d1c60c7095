"""Twenty rapid changes, under load: one notice per watcher/target pair, however many land.

Each of ``--watchers`` main sessions watches ``--targets`` target sessions of its
own (so there are ``watchers * targets`` pairs and no target is shared). The
script then checks the seed's "Notices: one, not many" promises on a real
gateway, with the real clock and real SQLite durability:

1. burst: ``--changes`` material events (alternating ``human_message`` and
   ``set_goal``) per target, fired from ``--threads`` threads at once so the
   changes to one target race each other. Every pair must hold exactly one
   queued notice (``changesSince`` = the registration version, 0).
2. drain: every watcher drains once. The notice was frozen at the target's
   first change, so the other changes arrived between queueing and draining:
   exactly one follow-up per pair (``changesSince`` = that first sequence).
   A second drain consumes the follow-ups; with nothing interleaved since,
   no notice may remain.
3. quiet: one change per target, drain: nothing interleaved, so no follow-up.
4. interleaved: per target, one change (notice queued, watermark frozen) then
   one more before the drain: exactly one follow-up per pair
   (``changesSince`` = the first of the two), and none after draining it.

Finally every durable cursor of the run must be synced
(``last_seen == notified == material``) and ``on_wake`` must have been called
once per newly queued notice. Latency is the producer call latency: the
contract queues every notice before a producer returns (each phase checks the
queues right after its calls return, without waiting), so the call latency
bounds the time until the notice is visible in ``pending_notices``.

Run from the repository root (after ``pip install -e .``, or as is)::

    python scripts/load_twenty.py [--watchers 10] [--targets 20] [--threads 8]

Exit status 0 when every check passed, 1 on a violation (printed to stderr),
2 on bad arguments.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

if __package__ in (None, ""):  # run as a file from a checkout that is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import apsw

from actors import Gateway, GatewayConfig, SessionStateEvent

CALL_TIMEOUT_S = 60.0
"""Longest the script waits for any one batch of producer calls to finish."""


class Violation(Exception):
    """A checked promise did not hold."""


def notice_text(target: str, since: int) -> str:
    """The contract's exact notice line (``api-contract.md``, "Notices")."""
    return (
        f'Session "{target}" changed (other actor). Reconcile before acting: '
        f'session_status sessionKey "{target}" changesSince {since}.'
    )


@dataclass
class WakeCounter:
    """The ``on_wake`` callback: counts calls per watcher (called from a gateway thread)."""

    counts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, watcher_key: str) -> None:
        with self.lock:
            self.counts[watcher_key] = self.counts.get(watcher_key, 0) + 1

    def total(self) -> int:
        with self.lock:
            return sum(self.counts.values())


@dataclass(frozen=True)
class Layout:
    """The run's sessions: ``targets[w]`` are the targets watcher ``w`` watches."""

    watchers: tuple[str, ...]
    targets: dict[str, tuple[str, ...]]

    @classmethod
    def build(cls, n_watchers: int, n_targets: int, tag: str) -> Layout:
        watchers = tuple(f"agent:load-{tag}-{i:02d}:main" for i in range(n_watchers))
        targets = {
            w: tuple(f"agent:load-{tag}-{i:02d}:worker:t{j:02d}" for j in range(n_targets))
            for i, w in enumerate(watchers)
        }
        return cls(watchers=watchers, targets=targets)

    def all_targets(self) -> list[str]:
        return [t for w in self.watchers for t in self.targets[w]]

    def pairs(self) -> int:
        return sum(len(ts) for ts in self.targets.values())

    def watcher_of(self, target: str) -> str:
        return next(w for w in self.watchers if target in self.targets[w])


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending, non-empty sequence."""
    rank = max(1, min(len(sorted_values), round(pct / 100 * len(sorted_values) + 0.5)))
    return sorted_values[rank - 1]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="load_twenty",
        description="Twenty rapid changes under load: one notice per watcher/target pair.",
    )
    parser.add_argument("--watchers", type=int, default=10, help="main-session watchers")
    parser.add_argument("--targets", type=int, default=20,
                        help="distinct targets per watcher (pairs = watchers * targets)")
    parser.add_argument("--changes", type=int, default=20,
                        help="rapid material changes per target in the burst")
    parser.add_argument("--threads", type=int, default=8, help="producer threads")
    parser.add_argument("--db", type=Path, default=None,
                        help="SQLite file (default: a fresh temporary directory)")
    parser.add_argument("--synchronous", choices=("FULL", "NORMAL"), default="FULL",
                        help="SQLite durability (default FULL)")
    args = parser.parse_args(argv)
    for name in ("watchers", "targets", "changes", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    return args


class Run:
    """One load run over an open gateway; each phase raises :class:`Violation`."""

    def __init__(self, gw: Gateway, layout: Layout, pool: ThreadPoolExecutor,
                 wakes: WakeCounter) -> None:
        self.gw = gw
        self.layout = layout
        self.pool = pool
        self.wakes = wakes
        self.expected_wakes = 0
        self.latencies_ms: list[float] = []

    # --- helpers -------------------------------------------------------------

    def change(self, target: str, k: int) -> SessionStateEvent:
        """One material change; alternates the two material producers."""
        started = time.perf_counter()
        if k % 2 == 0:
            event = self.gw.human_message(target, channel="load")
        else:
            event = self.gw.set_goal(target, action="updated")
        elapsed_ms = (time.perf_counter() - started) * 1000
        if event is None:
            raise Violation(f"a material change to {target} was not recorded (returned None)")
        self.latencies_ms.append(elapsed_ms)  # list.append is atomic under the GIL
        return event

    def change_and_look(self, target: str, k: int, since: int) -> SessionStateEvent:
        """One change, then at once (no waiting) its notice must be in the watcher's queue."""
        event = self.change(target, k)
        watcher = self.layout.watcher_of(target)
        if notice_text(target, since) not in self.gw.pending_notices(watcher):
            raise Violation(f"the notice for {target} was not queued when the producer "
                            f"returned (read-your-writes ordering)")
        return event

    def run_parallel(self, calls: Sequence[Callable[[], SessionStateEvent]],
                     ) -> list[SessionStateEvent]:
        futures = [self.pool.submit(call) for call in calls]
        deadline = time.monotonic() + CALL_TIMEOUT_S
        try:
            return [f.result(timeout=max(0.0, deadline - time.monotonic())) for f in futures]
        except TimeoutError:
            raise Violation(f"{len(calls)} producer calls did not finish within "
                            f"{CALL_TIMEOUT_S:.0f} s") from None

    def expect_queues(self, phase: str, expected: dict[str, set[str]]) -> None:
        """Each watcher's queue must hold exactly the expected notice lines, once each."""
        problems = []
        for w in self.layout.watchers:
            queued = self.gw.pending_notices(w)
            if len(queued) != len(set(queued)) or set(queued) != expected[w]:
                missing = sorted(expected[w] - set(queued))
                extra = sorted(set(queued) - expected[w])
                dupes = len(queued) - len(set(queued))
                problems.append(f"{w}: {len(missing)} missing, {len(extra)} unexpected, "
                                f"{dupes} duplicated; first missing {missing[:1]}, "
                                f"first unexpected {extra[:1]}")
        if problems:
            raise Violation(f"{phase}: queued notices differ from one per pair:\n  "
                            + "\n  ".join(problems[:5]))

    def drain_all(self, phase: str, expected: dict[str, set[str]]) -> None:
        """Drain every watcher; each must return exactly the expected lines."""
        for w in self.layout.watchers:
            drained = self.gw.drain(w)
            if len(drained) != len(set(drained)) or set(drained) != expected[w]:
                raise Violation(f"{phase}: drain({w}) returned {len(drained)} lines, "
                                f"expected the {len(expected[w])} queued notices")

    def expect_wakes(self, phase: str, newly_queued: int) -> None:
        self.expected_wakes += newly_queued
        if self.wakes.total() != self.expected_wakes:
            raise Violation(f"{phase}: on_wake called {self.wakes.total()} times, expected "
                            f"{self.expected_wakes} (one per newly queued notice)")

    def lines(self, since: Callable[[str], int]) -> dict[str, set[str]]:
        return {w: {notice_text(t, since(t)) for t in self.layout.targets[w]}
                for w in self.layout.watchers}

    def nothing(self) -> dict[str, set[str]]:
        return {w: set() for w in self.layout.watchers}

    # --- phases --------------------------------------------------------------

    def register(self) -> None:
        for w in self.layout.watchers:
            for t in self.layout.targets[w]:
                if not self.gw.watch(w, t):
                    raise Violation(f"watch({w}, {t}) returned False")
        self.expect_queues("after registering", self.nothing())

    def burst(self, changes: int) -> tuple[dict[str, int], float, int]:
        """Fire the burst; returns (first sequence per target, seconds, events)."""
        targets = self.layout.all_targets()
        # Change-major order: the threads hit the same target at nearly the same moment.
        calls = [partial(self.change, t, k) for k in range(changes) for t in targets]
        started = time.perf_counter()
        events = self.run_parallel(calls)
        seconds = time.perf_counter() - started
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        for event in events:
            key = event.session_key
            first[key] = min(first.get(key, event.sequence), event.sequence)
            last[key] = max(last.get(key, event.sequence), event.sequence)
        if len({e.sequence for e in events}) != len(events):
            raise Violation("burst: two producer calls returned the same sequence")
        for t in targets:
            status = self.gw.session_status(t, changes_since=0)
            if status.state_version != last[t] or status.state_changes is None \
                    or len(status.state_changes.events) != changes:
                raise Violation(f"burst: session_status({t}) does not show the {changes} "
                                f"changes ending at {last[t]}")
        self.expect_queues("burst", self.lines(lambda t: 0))
        self.expect_wakes("burst", self.layout.pairs())
        return first, seconds, len(events)

    def drain_after_burst(self, first: dict[str, int], changes: int) -> None:
        self.drain_all("first drain", self.lines(lambda t: 0))
        if changes == 1:
            self.expect_queues("first drain (one change: nothing interleaved)", self.nothing())
            return
        # The notice froze at the first change; the rest arrived before the drain.
        self.expect_queues("first drain (follow-ups)", self.lines(first.__getitem__))
        self.expect_wakes("first drain", self.layout.pairs())
        self.drain_all("second drain", self.lines(first.__getitem__))
        self.expect_queues("second drain (nothing interleaved)", self.nothing())

    def quiet(self) -> None:
        heads = {t: self.gw.session_status(t).state_version for t in self.layout.all_targets()}
        self.run_parallel([partial(self.change_and_look, t, 0, heads[t])
                           for t in self.layout.all_targets()])
        self.expect_queues("quiet change", self.lines(heads.__getitem__))
        self.expect_wakes("quiet change", self.layout.pairs())
        self.drain_all("quiet drain", self.lines(heads.__getitem__))
        self.expect_queues("quiet drain (nothing interleaved)", self.nothing())

    def interleaved(self) -> None:
        heads = {t: self.gw.session_status(t).state_version for t in self.layout.all_targets()}
        firsts = self.run_parallel(
            [partial(self.change_and_look, t, 1, heads[t]) for t in self.layout.all_targets()])
        frozen = {e.session_key: e.sequence for e in firsts}
        self.expect_queues("interleaved: first change", self.lines(heads.__getitem__))
        self.expect_wakes("interleaved: first change", self.layout.pairs())
        self.run_parallel([partial(self.change, t, 0) for t in self.layout.all_targets()])
        self.expect_queues("interleaved: second change", self.lines(heads.__getitem__))
        self.expect_wakes("interleaved: second change", 0)
        self.drain_all("interleaved drain", self.lines(heads.__getitem__))
        self.expect_queues("interleaved drain (one follow-up)", self.lines(frozen.__getitem__))
        self.expect_wakes("interleaved drain", self.layout.pairs())
        self.drain_all("follow-up drain", self.lines(frozen.__getitem__))
        self.expect_queues("follow-up drain (nothing interleaved)", self.nothing())

    def check_cursors(self, db: Path) -> None:
        """Every durable cursor of the run is synced once everything was drained."""
        wanted = {(w, t) for w in self.layout.watchers for t in self.layout.targets[w]}
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            rows = {
                (str(w), str(t)): (int(ls), int(nt), int(mt))
                for w, t, ls, nt, mt in conn.execute(
                    "SELECT watcher_session_key, target_session_key, last_seen_sequence,"
                    " notified_sequence, material_sequence FROM session_watch_cursors")
                if (str(w), str(t)) in wanted
            }
        finally:
            conn.close()
        if set(rows) != wanted:
            raise Violation(f"{len(wanted - set(rows))} watched pairs have no durable cursor")
        unsynced = {pair: c for pair, c in rows.items() if not c[0] == c[1] == c[2]}
        if unsynced:
            pair, cursor = next(iter(unsynced.items()))
            raise Violation(f"{len(unsynced)} cursors are not synced after the final drain, "
                            f"e.g. {pair} (last_seen, notified, material) = {cursor}")


@contextmanager
def database(path: Path | None) -> Iterator[Path]:
    if path is not None:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="load-twenty-") as tmp:
        yield Path(tmp) / "state.sqlite"


def main(argv: list[str] | None = None) -> int:
    """Run the load; returns the exit status (0 ok, 1 violation)."""
    args = parse_args(argv)
    layout = Layout.build(args.watchers, args.targets, uuid.uuid4().hex[:8])
    # One queue slot per target is needed; the contract's default is 20.
    config = GatewayConfig(synchronous=args.synchronous, queue_limit=max(20, args.targets))
    wakes = WakeCounter()
    started = time.perf_counter()
    with database(args.db) as db:
        try:
            gw = Gateway.open(db, config=config, on_wake=wakes, monitor=False)
        except Exception as exc:
            print(f"load_twenty: cannot open {db}: {exc}", file=sys.stderr)
            return 1
        pool = ThreadPoolExecutor(max_workers=args.threads, thread_name_prefix="load")
        run = Run(gw, layout, pool, wakes)
        try:
            run.register()
            first, burst_s, burst_events = run.burst(args.changes)
            run.drain_after_burst(first, args.changes)
            run.quiet()
            run.interleaved()
            run.check_cursors(db)
        except Violation as exc:
            print(f"load_twenty: VIOLATION: {exc}", file=sys.stderr)
            return 1
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            gw.close()
    latencies = sorted(run.latencies_ms)
    total_s = time.perf_counter() - started
    print(f"load_twenty: OK ({args.synchronous}, {args.threads} threads)")
    print(f"  pairs             {layout.pairs()} ({args.watchers} watchers x "
          f"{args.targets} targets)")
    print(f"  burst             {burst_events} events in {burst_s:.2f} s = "
          f"{burst_events / max(burst_s, 1e-9):.0f} events/s")
    print(f"  producer calls    {len(latencies)}; latency (call start to return; the notice "
          f"is queued before return) p50 {percentile(latencies, 50):.2f} ms, "
          f"p99 {percentile(latencies, 99):.2f} ms, max {latencies[-1]:.2f} ms")
    print(f"  notices           one per pair after {args.changes} changes; one follow-up per "
          f"pair after each interleaved drain; none after quiet drains")
    print(f"  on_wake calls     {wakes.total()} (one per newly queued notice)")
    print(f"  total             {total_s:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
