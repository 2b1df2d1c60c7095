"""Crash consistency under mixed load (issue 5, item 3): record, watch, drain and upstream.

A child process (``tests/_crash_mixed_child.py``) records on several targets,
re-registers watches, drains, and appends typed Claude Code rows to an adopted
transcript and scans it, reporting each completed step as one byte on a pipe.
The parent SIGKILLs it after a seeded-random number of steps plus a random
bounded wait (so kills land inside calls, between the two writes of a row,
inside a scan's commit, during ``Gateway.open``), reopens the database and
checks, after every kill (``scripts/soak.py``'s ``check_after_reopen`` and
``check_upstream``, the same checks the soak ends with):

* every record the child saw return (logged with fsync) is stored under its
  session; heads never go backwards and equal each session's newest event;
  sequences are never reused;
* every cursor satisfies ``last_seen <= notified <= material``; the restart
  sweep re-froze every pending pair and queued exactly one notice for it;
* after one more scan, the recorded upstream turns equal the typed rows
  completely written to the transcript (counted with the classifier on its
  complete lines; never fewer than the appends the child logged as done):
  none lost, none counted twice, and the marker sits at the end of the
  complete lines (a half-written row is never passed).

The seed is printed; ``SSA_CRASH_SEED`` replays one. CI runs 50 kills;
``SSA_SLOW=1`` runs 200.
"""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from actors import Gateway
from scripts import soak
from tests import _crash_mixed_child as child
from tests import conftest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = conftest.FIXTURES / "claude-code" / "cc-2.1.37-cli-prompt-tools-exit.jsonl"
SEED = int(os.environ.get("SSA_CRASH_SEED", "20261206"))
KILLS = 50
SLOW_KILLS = 200
MAX_STEPS = 120
"""Most progress bytes (steps) the parent waits for before it kills."""
MAX_EXTRA_WAIT_S = 0.03
"""Most extra time the child runs after the wanted step (a bounded wait on the process)."""
STARTUP_KILLS = 0.15
"""Share of kills aimed at the child's ``Gateway.open`` (after its first byte)."""
STARTUP_WAIT_S = 0.04
HALF_ROW_KILLS = 0.2
"""Share of kills sent as soon as the child wrote the first half of a row."""
PROGRESS_TIMEOUT_S = 20.0
KILL_TIMEOUT_S = 10.0






def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def complete_lines(path: Path) -> list[str]:
    """The side file's complete lines (a line cut by the kill is ignored)."""
    if not path.exists():
        return []
    text = path.read_text()
    return text[: text.rfind("\n") + 1].splitlines()


def read_progress(proc: subprocess.Popen[bytes], want: int, log: Path,
                  mark: bytes | None = None) -> bytes:
    """Block on the child's progress pipe until ``want`` steps (or ``mark`` bytes) came."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    got = b""
    deadline = time.monotonic() + PROGRESS_TIMEOUT_S
    while (got.count(mark) if mark else len(got)) < want:
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"the child reported {len(got)} of {want} steps in "
                        f"{PROGRESS_TIMEOUT_S}s:\n{log.read_text()}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                status = proc.wait(timeout=KILL_TIMEOUT_S)
                pytest.fail(f"the child exited with {status} before it was killed:\n"
                            f"{log.read_text()}")
            got += chunk
    return got


def drain_pipe(proc: subprocess.Popen[bytes]) -> bytes:
    """What the killed child wrote after the parent stopped counting (up to EOF)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    rest = b""
    while True:
        ready, _, _ = select.select([fd], [], [], KILL_TIMEOUT_S)
        assert ready, "the pipe of a killed child stayed open"
        chunk = os.read(fd, 65536)
        if not chunk:
            return rest
        rest += chunk


def kill_and_reopen_repeatedly(kills: int, tmp_path: Path, db_path: Path,
                               open_gateway: Callable[..., Gateway]) -> None:
    rng = random.Random(SEED)
    print(f"\nmixed crash seed {SEED} (SSA_CRASH_SEED), {kills} kills")
    started = time.monotonic()
    side = tmp_path / "side"
    side.mkdir()
    transcript = tmp_path / "transcript.jsonl"
    shutil.copyfile(FIXTURE, transcript)
    if not transcript.read_bytes().endswith(b"\n"):
        with transcript.open("ab") as handle:
            handle.write(b"\n")
    gw = open_gateway(clock=wall_ms)
    link = gw.adopt(child.UPSTREAM, source="claude", path=transcript)
    assert link is not None
    assert gw.watch(child.WATCHERS[0], child.UPSTREAM)
    baseline = int(link.marker["offset"])
    gw.close()

    log = tmp_path / "child.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    before = None
    killed_during: Counter[str] = Counter()
    half_rows = 0
    typed = 0
    for round_ in range(kills):
        mark = None
        roll = rng.random()
        if roll < STARTUP_KILLS:  # inside Gateway.open: migration, sweep, prune
            want, extra = 1, rng.uniform(0, STARTUP_WAIT_S)
        elif roll < STARTUP_KILLS + HALF_ROW_KILLS:  # right after half a row was written
            want, extra, mark = rng.randint(1, 4), 0.0, b"h"
        else:
            want, extra = rng.randint(2, MAX_STEPS), rng.uniform(0, MAX_EXTRA_WAIT_S)
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests._crash_mixed_child", str(db_path), str(side),
                 str(transcript), str(rng.randrange(2**32))],
                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err)
            try:
                steps = read_progress(proc, want, log, mark)
                try:
                    status = proc.wait(timeout=extra)
                    pytest.fail(f"the child exited with {status} before it was killed:\n"
                                f"{log.read_text()}")
                except subprocess.TimeoutExpired:
                    pass
                proc.send_signal(signal.SIGKILL)
                assert proc.wait(timeout=KILL_TIMEOUT_S) == -signal.SIGKILL
                steps += drain_pipe(proc)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=KILL_TIMEOUT_S)
                assert proc.stdout is not None
                proc.stdout.close()
        last = chr(steps[-1])
        killed_during[{"S": "Gateway.open", "h": "writing a row", "a": "a scan"}.get(
            last, "load")] += 1
        half_rows += not transcript.read_bytes().endswith(b"\n")
        where = f"seed {SEED}, kill {round_ + 1} after {len(steps)} steps"

        gw = open_gateway(clock=wall_ms)
        try:
            returned = [(int(s), k) for s, k in (line.split(" ", 1) for line in
                                                 complete_lines(side / "returned.txt"))]
            snapshot, problems = soak.check_after_reopen(
                gw, db_path, returned=returned, before=before,
                queue_limit=gw.config.queue_limit)
            assert not problems, f"{where}:\n  " + "\n  ".join(problems)
            pending = sum(1 for c in snapshot.cursors.values() if c[2] > c[0])

            # The child's scans committed each marker with its turns: the turns recorded so
            # far are exactly the typed rows before the marker, which is on a line boundary.
            marker = json.loads(soak.link_markers(db_path)[child.UPSTREAM])["offset"]
            counted, boundary = soak.typed_rows(transcript, baseline, marker)
            assert boundary == marker, f"{where}: the marker {marker} is inside a line"
            assert soak.recorded_turns(db_path, child.UPSTREAM) == counted, (
                f"{where}: {soak.recorded_turns(db_path, child.UPSTREAM)} turns recorded, "
                f"{counted} typed rows before the marker")

            # One more scan: every typed row completely written is counted exactly once.
            logged = sum(int(line.split()[0]) for line in complete_lines(side / "appends.txt"))
            typed, problems = soak.check_upstream(gw, db_path, {child.UPSTREAM: (transcript,
                                                                                 baseline)})
            assert not problems, f"{where}:\n  " + "\n  ".join(problems)
            assert logged <= typed, f"{where}: {logged} typed rows logged, {typed} in the file"
            before = soak.read_snapshot(db_path)
        finally:
            gw.close()
        print(f"{where}: {len(returned)} returned, {len(snapshot.events)} events, "
              f"{pending} pending pairs re-queued, {typed} upstream turns ({logged} logged)")
    elapsed = time.monotonic() - started
    print(f"mixed crash: {kills} kills in {elapsed:.1f}s; killed during "
          f"{dict(killed_during)}; {half_rows} kills left a half-written row; "
          f"{len(returned)} returned records and {typed} upstream turns all accounted for")
    assert len(returned) > kills, "the children recorded almost nothing"
    assert typed > 0, "the children typed nothing upstream"


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_mixed_load_killed_fifty_times_loses_and_duplicates_nothing(
    tmp_path: Path, db_path: Path, open_gateway: Callable[..., Gateway],
) -> None:
    kill_and_reopen_repeatedly(KILLS, tmp_path, db_path, open_gateway)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(os.environ.get("SSA_SLOW") != "1", reason="set SSA_SLOW=1 for 200 kills")
def test_mixed_load_killed_two_hundred_times_loses_and_duplicates_nothing(
    tmp_path: Path, db_path: Path, open_gateway: Callable[..., Gateway],
) -> None:
    kill_and_reopen_repeatedly(SLOW_KILLS, tmp_path, db_path, open_gateway)
