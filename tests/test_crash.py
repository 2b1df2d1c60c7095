"""Crash safety: SIGKILL a busy gateway process, reopen, and check what survived.

A child process (``tests/_crash_child.py``) records and acknowledges under
load and appends every sequence a producer call returned to a side file
(flushed with ``fsync``). The parent kills it with SIGKILL once the side
file holds a seeded-random number of new lines, then reopens the database
with its own gateway and checks:

* every sequence listed in the side file is in ``session_state_events``
  under the session it was recorded for (a returned record is durable);
* heads never go backwards and each equals the newest event of its session;
  sequences are never reused;
* every cursor satisfies ``last_seen <= notified <= material``;
* the restart sweep re-froze every pending pair (``notified == material``)
  and queued exactly one notice for it, at its ``last_seen``; no other
  notice is queued; ``on_wake`` ran once per swept explicit notice of a main
  watcher, never for the nested or the ambient one.

The seed is printed; set ``SSA_CRASH_SEED`` to replay one. The 50-kill
variant runs only with ``SSA_SLOW=1``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from actors import Gateway
from tests import _crash_child as child
from tests.conftest import WakeRecorder

ROOT = Path(__file__).resolve().parent.parent
SEED = int(os.environ.get("SSA_CRASH_SEED", "20261130"))
KILLS = 5
SLOW_KILLS = 50
MAX_NEW_LINES = 60
PROGRESS_TIMEOUT_S = 20.0
"""Longest the parent waits for the child to write the lines it kills at."""
POLL_S = 0.01
KILL_TIMEOUT_S = 10.0

Cursor = tuple[int, int, int, str]


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def notice_text(target: str, since: int) -> str:
    return (
        f'Session "{target}" changed (other actor). Reconcile before acting: '
        f'session_status sessionKey "{target}" changesSince {since}.'
    )


def side_lines(side: Path) -> list[tuple[int, str]]:
    """The complete lines of the side file (a line cut by the kill is ignored)."""
    if not side.exists():
        return []
    text = side.read_text()
    complete = text[: text.rfind("\n") + 1]
    return [(int(seq), key) for seq, key in (line.split(" ", 1)
                                              for line in complete.splitlines())]


def kill_after(proc: subprocess.Popen[bytes], side: Path, want: int, log: Path) -> None:
    """SIGKILL ``proc`` as soon as the side file holds ``want`` complete lines.

    The poll between reads is a bounded wait on the process itself, so a child
    that dies early is noticed at once.
    """
    deadline = time.monotonic() + PROGRESS_TIMEOUT_S
    while len(side_lines(side)) < want:
        try:
            status = proc.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait(timeout=KILL_TIMEOUT_S)
                pytest.fail(f"the child wrote fewer than {want} lines in "
                            f"{PROGRESS_TIMEOUT_S}s:\n{log.read_text()}")
            continue
        pytest.fail(f"the child exited with {status} before it was killed:\n{log.read_text()}")
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=KILL_TIMEOUT_S) == -signal.SIGKILL


def read_state(db: Path) -> tuple[dict[int, str], dict[str, int], dict[tuple[str, str], Cursor],
                                  set[str]]:
    """Return events ``{sequence: key}``, heads, cursors and the session keys."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        events = {int(s): str(k) for s, k in conn.execute(
            "SELECT sequence, session_key FROM session_state_events")}
        heads = {str(k): int(h) for k, h in conn.execute(
            "SELECT session_key, last_sequence FROM session_state_heads")}
        cursors = {
            (str(w), str(t)): (int(ls), int(nt), int(mt), str(prov))
            for w, t, ls, nt, mt, prov in conn.execute(
                "SELECT watcher_session_key, target_session_key, last_seen_sequence,"
                " notified_sequence, material_sequence, provenance FROM session_watch_cursors")
        }
        sessions = {str(k) for (k,) in conn.execute("SELECT session_key FROM sessions")}
        return events, heads, cursors, sessions
    finally:
        conn.close()


def kill_and_reopen_repeatedly(
    kills: int, tmp_path: Path, db_path: Path, wakes: WakeRecorder,
    open_gateway: Callable[..., Gateway],
) -> None:
    rng = random.Random(SEED)
    print(f"crash seed {SEED} (SSA_CRASH_SEED), {kills} kills")
    side = tmp_path / "returned-sequences.txt"
    log = tmp_path / "child.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    prev_heads: dict[str, int] = {}
    prev_max = 0
    prev_events: set[int] = set()
    for round_ in range(kills):
        want = len(side_lines(side)) + rng.randint(1, MAX_NEW_LINES)
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests._crash_child", str(db_path), str(side),
                 str(rng.randrange(2**32))],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
            try:
                kill_after(proc, side, want, log)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=KILL_TIMEOUT_S)
        where = f"seed {SEED}, kill {round_ + 1} at {want} lines"

        wakes_before = len(wakes.calls)
        gw = open_gateway(clock=wall_ms)
        try:
            events, heads, cursors, sessions = read_state(db_path)

            # Every record that returned before the kill is durable, under its session.
            returned = side_lines(side)
            lost = [(s, k) for s, k in returned if events.get(s) != k]
            assert not lost, f"{where}: returned records missing after the kill: {lost[:5]}"

            # Heads: monotonic, never behind a returned record, equal to the newest event.
            for key, head in prev_heads.items():
                assert heads.get(key, 0) >= head, f"{where}: head of {key} went backwards"
            for seq, key in returned:
                assert heads[key] >= seq, f"{where}: head of {key} is behind returned {seq}"
            for key, head in heads.items():
                assert head == max(s for s, k in events.items() if k == key), (where, key)
            assert all(s > prev_max for s in set(events) - prev_events), (
                f"{where}: a sequence was reused")

            # Cursors: the invariant, and the sweep re-froze every pending pair.
            broken = {p: c for p, c in cursors.items() if not c[0] <= c[1] <= c[2]}
            assert not broken, f"{where}: cursors break the watermark order: {broken}"
            pending = {p: c for p, c in cursors.items() if c[2] > c[0]}
            assert all(c[1] == c[2] for c in pending.values()), (
                f"{where}: the restart sweep did not re-freeze {pending}")
            assert {w for w, _ in cursors} <= sessions, f"{where}: a watcher has no session"

            # Exactly one notice per pending pair, at its last_seen; nothing else.
            for watcher in child.WATCHERS:
                expected = Counter(notice_text(t, c[0]) for (w, t), c in pending.items()
                                   if w == watcher)
                queued = Counter(gw.pending_notices(watcher))
                assert queued == expected, (
                    f"{where}: {watcher} after reopen\n"
                    f"  missing: {sorted((expected - queued).elements())}\n"
                    f"  unexpected: {sorted((queued - expected).elements())}")

            # The sweep woke main watchers once per explicit notice (not ambient, not nested).
            print(f"{where}: {len(returned)} returned, {len(events)} events, "
                  f"{len(cursors)} cursors, {len(pending)} pending after reopen")
            woken = Counter(wakes.calls[wakes_before:])
            assert woken == Counter(w for (w, _), c in pending.items()
                                    if c[3] == "explicit" and w in child.MAIN_WATCHERS), where
        finally:
            gw.close()
        prev_heads, prev_events = heads, set(events)
        prev_max = max(events, default=0)
    assert len(side_lines(side)) >= kills, "the children recorded almost nothing"
    assert prev_max > 0


def test_a_killed_gateway_loses_no_returned_record_and_requeues_every_pending_notice(
    tmp_path: Path, db_path: Path, wakes: WakeRecorder,
    open_gateway: Callable[..., Gateway],
) -> None:
    kill_and_reopen_repeatedly(KILLS, tmp_path, db_path, wakes, open_gateway)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(os.environ.get("SSA_SLOW") != "1", reason="set SSA_SLOW=1 for 50 kills")
def test_fifty_kills_in_a_row_lose_no_returned_record_and_requeue_every_pending_notice(
    tmp_path: Path, db_path: Path, wakes: WakeRecorder,
    open_gateway: Callable[..., Gateway],
) -> None:
    kill_and_reopen_repeatedly(SLOW_KILLS, tmp_path, db_path, wakes, open_gateway)
