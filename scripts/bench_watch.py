"""What a user of ``ssa watch`` feels: idle CPU over an OpenCode store, new sessions.

One run prints one table (the helpers of ``scripts/bench.py``); every figure
stands next to a baseline measured in the same run, with the ratio and the
goal. Each ``ssa watch --json`` runs as its own subprocess (``python -m
actors watch``); its CPU is read from ``/proc/PID/stat`` (Linux).

1. idle CPU of ``ssa watch`` over one OpenCode store of N sessions (default
   50), nobody writing, for S seconds after it settled, with file
   notifications on, next to the same watch with ``--poll-only`` on the same
   store (goal: at most 2 % of a core); then K times a typed user turn is
   committed into a random one of those sessions (as OpenCode 1.18 commits
   it) and the time until the notice naming it is printed is taken: p50 and
   p95 next to the ``--interval`` (goal: p95 at most 1 s).
2. new sessions: a watch over empty Claude Code, Codex and Pi catalogs; K
   times per tool a new transcript holding a typed first prompt is written
   into a *new* folder (a new project folder, a new date folder, a new Pi
   working-directory folder) and the times until its ``adoptedSession`` line
   and until the notice naming it are taken: p50 and p95 next to the
   ``--interval`` (the fallback scan that used to adopt it; goal: notice p50
   at most 1 s), and the same-run latency of a typed turn appended to a
   session known from the start.

Usage, from a checkout: ``python -m scripts.bench_watch [--quick] [--sessions N]
[--json] [--dir DIR] [--only SECTION...] [--check]``. Exit status 0 whether or
not a goal was met; 1 when a checked promise broke (a notice never came, a
subprocess failed); with ``--check``, 3 (``scripts.bench.GOAL_MISSED``) when a
goal was missed, each missed goal named on stderr.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from actors.testing import (  # noqa: E402
    ClaudeCodeTranscript,
    CodexRollout,
    OpenCodeTranscript,
    PiSession,
    Reply,
    Typed,
)
from scripts.bench import (  # noqa: E402
    BenchError,
    Row,
    pct,
    print_report,
    row,
)
from scripts.bench_scale import WatchProcess  # noqa: E402

SECTIONS = (1, 2)
IDLE_CPU_BOUND_PCT = 2.0
"""Goal: idle CPU of ``ssa watch`` over the OpenCode store, % of one core (section 1)."""
LATENCY_BOUND_S = 1.0
"""Goal: a typed turn's notice p95 (section 1) and a new session's notice p50 (section 2)."""
SOURCES = ("claude", "codex", "pi")


@dataclass(frozen=True)
class Sizes:
    """How much work each section does.

    Attributes:
        sessions: OpenCode sessions in section 1's store.
        idle_s: seconds of idle CPU measured per watch (section 1).
        settle_s: seconds a watch runs before its idle CPU is measured.
        turns: typed turns timed in section 1.
        new_sessions: new transcripts per tool in section 2.
        interval: the ``--interval`` of every watch, s.
        wait_s: how long one notice is waited for before it counts as missing.
    """

    sessions: int
    idle_s: float
    settle_s: float
    turns: int
    new_sessions: int
    interval: float
    wait_s: float


def sizes_for(quick: bool, sessions: int | None) -> Sizes:
    """The sizes of a full or quick run (pure)."""
    if quick:
        return Sizes(sessions=sessions or 10, idle_s=2.0, settle_s=1.0, turns=3,
                     new_sessions=2, interval=10.0, wait_s=15.0)
    return Sizes(sessions=sessions or 50, idle_s=20.0, settle_s=3.0, turns=10,
                 new_sessions=10, interval=10.0, wait_s=30.0)


@dataclass
class Report:
    """The rows measured so far and the checked promises that broke."""

    rows: list[Row] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)

    def check(self, holds: bool, what: str) -> None:
        """Record ``what`` as a broken promise unless ``holds``. Never raises."""
        if not holds:
            self.broken.append(what)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds process ``pid`` used so far (Linux ``/proc``).

    Raises:
        BenchError: ``/proc/PID/stat`` cannot be read (not Linux, or the process ended).
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError) as exc:
        raise BenchError(f"cannot read the CPU time of process {pid}: {exc}") from exc
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def watch_command(db: Path, catalogs: dict[str, Path], *, interval: float,
                  poll_only: bool = False) -> list[str]:
    """``python -m actors watch --db DB --json ...`` for these catalogs. Pure."""
    command = [sys.executable, "-m", "actors", "watch", "--db", str(db), "--json",
               "--interval", f"{interval:g}"]
    for source, path in catalogs.items():
        command += [f"--{source}", str(path)]
    return command + (["--poll-only"] if poll_only else [])


def started(proc: WatchProcess, sizes: Sizes) -> dict[str, object]:
    """The summary line of a watch that just started (blocks up to a minute).

    Raises:
        BenchError: no summary came.
    """
    first = proc.next_json(time.perf_counter() + 60.0)
    if first is None or "adopted" not in first[1]:
        raise BenchError(f"ssa watch printed no summary: {proc.stderr_tail()}")
    return first[1]


def wait_for(proc: WatchProcess, since: float, sizes: Sizes,
             match: Callable[[dict[str, object]], bool]) -> float | None:
    """Seconds from ``since`` (a ``perf_counter``) to the first line ``match`` accepts."""
    deadline = since + sizes.wait_s
    while (line := proc.next_json(deadline)) is not None:
        if match(line[1]):
            return line[0] - since
    return None


def names(key: str) -> Callable[[dict[str, object]], bool]:
    """A matcher of the ``--json`` notice line about session ``key``. Pure."""
    return lambda line: line.get("sessionKey") == key


# --- 1: idle CPU over an OpenCode store --------------------------------------------


def write_store(path: Path, sessions: int) -> list[str]:
    """An OpenCode 1.18 store of ``sessions`` top-level sessions, one exchange each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ids = []
    for i in range(sessions):
        transcript = OpenCodeTranscript(path, title=f"session {i}", directory="/home/user/w")
        transcript.append(Typed(f"first prompt {i}"), Reply("done"))
        ids.append(transcript.session_id)
    return ids


def idle_cpu_pct(directory: Path, store: Path, sizes: Sizes, *, poll_only: bool,
                 report: Report) -> float:
    """Idle CPU % of one core of a watch over ``store``; the process is stopped after."""
    label = "poll" if poll_only else "notify"
    db = directory / f"idle-{label}.sqlite"
    with WatchProcess(watch_command(db, {"opencode": store}, interval=sizes.interval,
                                    poll_only=poll_only),
                      directory / f"idle-{label}.stderr") as proc:
        summary = started(proc, sizes)
        report.check(summary.get("adopted") == {"opencode": sizes.sessions},
                     f"section 1: ssa watch adopted {summary.get('adopted')}")
        pid = proc.pid
        time.sleep(sizes.settle_s)  # its first whole cycle reads every session once
        before, at = cpu_s(pid), time.perf_counter()
        time.sleep(sizes.idle_s)
        used, wall = cpu_s(pid) - before, time.perf_counter() - at
    report.check(proc.returncode == 0, f"section 1: ssa watch ({label}) exited "
                 f"{proc.returncode}")
    return 100 * used / wall


def opencode_section(directory: Path, sizes: Sizes, report: Report,
                     rng: random.Random) -> None:
    """Section 1: idle CPU with notifications against ``--poll-only``; typed-turn latency."""
    store = directory / "opencode" / "opencode.db"
    ids = write_store(store, sizes.sessions)
    ours = idle_cpu_pct(directory, store, sizes, poll_only=False, report=report)
    baseline = idle_cpu_pct(directory, store, sizes, poll_only=True, report=report)
    latencies: list[float] = []
    missing = 0
    db = directory / "typed.sqlite"
    with WatchProcess(watch_command(db, {"opencode": store}, interval=sizes.interval),
                      directory / "typed.stderr") as proc:
        started(proc, sizes)
        time.sleep(sizes.settle_s)
        for i in range(sizes.turns):
            time.sleep(rng.uniform(0, 1))
            session = rng.choice(ids)
            key = f"agent:main:opencode:{session}"
            proc.discard_pending()
            OpenCodeTranscript.resume(store, session).append(Typed(f"typed turn {i}"))
            latency = wait_for(proc, time.perf_counter(), sizes, names(key))
            if latency is None:
                missing += 1
            latencies.append(sizes.wait_s if latency is None else latency)
    report.check(missing == 0, f"section 1: {missing} of {sizes.turns} typed OpenCode turns "
                 f"were never reported within {sizes.wait_s:g} s")
    n = sizes.sessions
    report.rows += [
        row(1, f"idle CPU % of a core, ssa watch, OpenCode store of {n}", ours,
            "the same, --poll-only, %", baseline, at_most_value=IDLE_CPU_BOUND_PCT, unit="%"),
        row(1, f"typed OpenCode turn to notice p50 s, {n} sessions", pct(latencies, 50),
            "the --interval, s", sizes.interval),
        row(1, f"typed OpenCode turn to notice p95 s, {sizes.turns} turns",
            pct(latencies, 95), "the --interval, s", sizes.interval,
            at_most_value=LATENCY_BOUND_S, unit="s"),
    ]


# --- 2: new sessions --------------------------------------------------------------


def new_transcript(source: str, root: Path, tag: str) -> tuple[str, Path]:
    """Write a new session of ``source`` with a typed first prompt in a new folder.

    Returns ``(session or thread id, path)``.
    """
    session = str(uuid.uuid4())
    if source == "claude":
        path = root / f"-home-user-{tag}" / f"{session}.jsonl"
        path.parent.mkdir(parents=True)
        ClaudeCodeTranscript(path, session_id=session, cwd=f"/home/user/{tag}").append(
            Typed("first prompt of a new session"))
    elif source == "codex":
        day = root / "2027" / tag[:2] / tag[2:4]
        path = day / f"rollout-2027-01-01T08-00-00-{session}.jsonl"
        day.mkdir(parents=True)
        CodexRollout(path, thread_id=session).append(Typed("first prompt of a new session"))
    else:
        path = root / f"--home-user-{tag}--" / f"2027-01-01T08-00-00-000Z_{session}.jsonl"
        path.parent.mkdir(parents=True)
        PiSession(path, session_id=session).append(Typed("first prompt of a new session"))
    return session, path


def new_sessions_section(directory: Path, sizes: Sizes, report: Report,
                         rng: random.Random) -> None:
    """Section 2: a new transcript in a new folder, to its adoption and its notice."""
    roots = {s: directory / "new" / s for s in SOURCES}
    for root in roots.values():
        root.mkdir(parents=True)
    known_id, known = new_transcript("claude", roots["claude"], "known")
    adopted: list[float] = []
    noticed: list[float] = []
    appended: list[float] = []
    missing = 0
    db = directory / "new.sqlite"
    with WatchProcess(watch_command(db, dict(roots), interval=sizes.interval),
                      directory / "new.stderr") as proc:
        started(proc, sizes)
        time.sleep(sizes.settle_s)
        for i in range(sizes.new_sessions):
            for source in SOURCES:
                time.sleep(rng.uniform(0, 1))
                proc.discard_pending()
                at = time.perf_counter()
                session, _path = new_transcript(source, roots[source], f"{i:02d}{i:02d}x{i}")
                key = f"agent:main:{source}:{session}"
                seen_adopted: float | None = None
                seen_notice: float | None = None
                deadline = at + sizes.wait_s
                while seen_notice is None and (line := proc.next_json(deadline)) is not None:
                    value = line[1]
                    new = value.get("adoptedSession")
                    if isinstance(new, dict) and new.get("sessionKey") == key:
                        seen_adopted = line[0] - at
                    elif value.get("sessionKey") == key:
                        seen_notice = line[0] - at
                if seen_notice is None:
                    missing += 1
                adopted.append(sizes.wait_s if seen_adopted is None else seen_adopted)
                noticed.append(sizes.wait_s if seen_notice is None else seen_notice)
            time.sleep(rng.uniform(0, 1))
            proc.discard_pending()
            at = time.perf_counter()
            ClaudeCodeTranscript(known, session_id=known_id, cwd="/home/user/known").append(
                Typed(f"typed turn {i}"))
            key = f"agent:main:claude:{known_id}"
            latency = wait_for(proc, at, sizes, names(key))
            appended.append(sizes.wait_s if latency is None else latency)
            missing += latency is None
    report.check(missing == 0, f"section 2: {missing} notices never came within "
                 f"{sizes.wait_s:g} s")
    n = sizes.new_sessions * len(SOURCES)
    report.rows += [
        row(2, f"new session to adoptedSession p50 s, {n} new folders", pct(adopted, 50),
            "the --interval, s", sizes.interval),
        row(2, "new session's first prompt to notice p50 s", pct(noticed, 50),
            "the --interval, s", sizes.interval, at_most_value=LATENCY_BOUND_S, unit="s"),
        row(2, "new session's first prompt to notice p95 s", pct(noticed, 95),
            "the --interval, s", sizes.interval),
        row(2, "new session's first prompt to notice p50 s", pct(noticed, 50),
            "typed turn into a known session p50 s", pct(appended, 50)),
    ]


# --- the run -----------------------------------------------------------------------


def measure(directory: Path, sizes: Sizes, only: Sequence[int]) -> Report:
    """Run the chosen sections in order (blocks; every subprocess is stopped after).

    Raises:
        BenchError: a section could not produce its figures at all.
    """
    report = Report()
    rng = random.Random(20_261_202)
    if 1 in only:
        opencode_section(directory, sizes, report, rng)
    if 2 in only:
        new_sessions_section(directory, sizes, report, rng)
    return report


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line (argparse exits 2 on a usage error)."""
    parser = argparse.ArgumentParser(
        prog="bench_watch", description="ssa watch as a user feels it: idle CPU over an "
        "OpenCode store and new sessions adopted from directory events, next to baselines "
        "measured in the same run.")
    parser.add_argument("--quick", action="store_true", help="a smoke run of seconds")
    parser.add_argument("--sessions", type=int, default=None, metavar="N",
                        help="OpenCode sessions in section 1's store (default 50)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the temporary files go (default: the system temp dir)")
    parser.add_argument("--only", type=int, nargs="+", choices=SECTIONS, default=None,
                        metavar="SECTION", help="run only these sections (1-2)")
    parser.add_argument("--check", action="store_true",
                        help="exit 3 when a goal is missed, naming each missed goal on stderr")
    return parser.parse_args(list(argv) if argv is not None else None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print one table (or JSON).

    Returns:
        0 whether or not goals were met; 1 when a checked promise broke or a
        section could not run; with ``--check``, 3 when a goal was missed.
        Blocks for the whole run.
    """
    args = parse_args(argv)
    sizes = sizes_for(args.quick, args.sessions)
    only = sorted(set(args.only or SECTIONS))
    began = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="ssa-bench-watch-", dir=args.dir) as tmp:
            report = measure(Path(tmp), sizes, only)
    except BenchError as exc:
        print(f"bench_watch: FAILED: {exc}", file=sys.stderr)
        return 1
    return print_report("bench_watch", "ssa watch as a user feels it",
                        mode="quick" if args.quick else "full", sections=only, sizes=sizes,
                        rows=report.rows, broken=report.broken,
                        total_s=time.perf_counter() - began, as_json=args.json,
                        check=args.check)


if __name__ == "__main__":
    raise SystemExit(main())
