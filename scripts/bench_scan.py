"""Classification throughput on the real upstream fixtures, next to a json.loads baseline.

For each JSONL source, one run measures (best of ``--repeat`` passes over the
fixture files read into memory):

* the baseline: split the same bytes into lines and ``json.loads`` every line;
* ours: the monitor's line classifier on every line.

It prints MB/s for both and their ratio (goal: ratio >= 1.0). OpenCode is
measured as messages classified per second on the generated store, next to
decoding the same rows' JSON with ``json.loads``.

Usage, from a checkout: ``python -m scripts.bench_scan [--repeat N] [--fixtures DIR]
[--check]``. Exit status 0 whether or not the goal was met; with ``--check``,
3 (``scripts.bench.GOAL_MISSED``) when a source's ratio is below
:data:`GOAL_RATIO`, each named on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import apsw

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from actors.upstream.opencode.store import classify_messages, load_messages, open_opencode_db  # noqa: E402
from actors.upstream.scan import line_classifier  # noqa: E402

DIRS = {"claude": "claude-code", "codex": "codex", "pi": "pi"}
GOAL_RATIO = 1.0
"""Goal: the classifier reads at least as many MB/s as ``json.loads`` (each JSONL source)."""
GOAL_MISSED = 3
"""Exit status with ``--check`` when a goal was missed (the same as ``scripts/bench.py``'s)."""


def missed_goals(ratios: dict[str, float]) -> list[str]:
    """The JSONL sources whose ``classify / json.loads`` ratio is below :data:`GOAL_RATIO`.

    Args:
        ratios: ``{source: ratio}`` as measured.

    Returns:
        One line per missed goal, in the order of ``ratios`` (pure).
    """
    return [f"goal missed: {source} classify/json.loads ratio {ratio:.2f}, goal >= "
            f"{GOAL_RATIO:g}" for source, ratio in ratios.items() if not ratio >= GOAL_RATIO]


def _best(repeat: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def _jsonl(source: str, fixtures: Path, repeat: int) -> tuple[float, float, int]:
    data = b"".join(p.read_bytes().rstrip(b"\n") + b"\n"
                    for p in sorted((fixtures / DIRS[source]).glob("*.jsonl")))
    classify = line_classifier(source)

    def baseline() -> None:
        for line in data.split(b"\n"):
            if line.strip():
                json.loads(line)

    def ours() -> None:
        for line in data.split(b"\n"):
            if line.strip():
                classify(line)

    mb = len(data) / 1e6
    return mb / _best(repeat, baseline), mb / _best(repeat, ours), len(data)


def _opencode(fixtures: Path, repeat: int) -> tuple[float, float, int]:
    db = fixtures / "opencode" / "opencode-1.18.33-generated.db"
    conn = open_opencode_db(db)
    try:
        sessions = [str(s) for (s,) in conn.execute("SELECT id FROM session")]
        loaded = [load_messages(conn, s) for s in sessions]
        rows = [str(d) for (d,) in conn.execute("SELECT data FROM part")]
        rows += [str(d) for (d,) in conn.execute("SELECT data FROM message")]
    finally:
        conn.close()
    count = sum(len(m) for m in loaded)

    def baseline() -> None:
        for row in rows:
            json.loads(row)

    def ours() -> None:
        for messages in loaded:
            classify_messages(messages, last_human_message_id=None)

    return len(rows) / _best(repeat, baseline), count / _best(repeat, ours), count


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line (argparse exits 2 on a usage error)."""
    parser = argparse.ArgumentParser(prog="bench_scan", description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--fixtures", type=Path,
                        default=ROOT.parent / "shared" / "fixtures" / "upstream")
    parser.add_argument("--check", action="store_true",
                        help=f"exit {GOAL_MISSED} when a ratio is below {GOAL_RATIO:g} "
                        "(default: exit 0 whether or not the goal is met)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one table.

    Returns:
        0, or with ``--check`` :data:`GOAL_MISSED` when a goal was missed.
        Blocks for the whole run.
    """
    args = parse_args(argv)
    print(f"{'source':8} {'bytes':>9} {'json.loads MB/s':>16} {'classify MB/s':>14} {'ratio':>6}")
    ratios: dict[str, float] = {}
    for source in DIRS:
        base, ours, size = _jsonl(source, args.fixtures, args.repeat)
        ratios[source] = ours / base
        print(f"{source:8} {size:9d} {base:16.1f} {ours:14.1f} {ours / base:6.2f}")
    try:
        base, ours, count = _opencode(args.fixtures, args.repeat)
    except apsw.Error as exc:
        print(f"opencode: skipped ({exc})")
    else:
        print(f"opencode {count:6d} msgs  json.loads rows/s {base:10.0f}  "
              f"classified msgs/s {ours:10.0f}  (messages include their parts)")
    missed = missed_goals(ratios) if args.check else []
    for line in missed:
        print(f"bench_scan: {line}", file=sys.stderr)
    return GOAL_MISSED if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
