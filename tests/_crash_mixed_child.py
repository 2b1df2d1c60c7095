"""Child process of ``tests/test_crash_mixed.py``: mixed load until SIGKILL.

Usage::

    python -m tests._crash_mixed_child DB SIDE_DIR TRANSCRIPT SEED

It writes ``S`` to stdout when it starts and ``O`` once its gateway is open,
then runs five threads and writes one byte to stdout after every completed
step, so the parent can kill it after a random amount of progress:

* two producers (``human_message``, ``set_goal``, ``compacted``, ``finish_run``
  on several targets): after each call that returned an event, the line
  ``"<sequence> <session_key>"`` is appended to ``SIDE_DIR/returned.txt`` and
  fsynced (``p``);
* a drainer (``pending_notices`` + ``drain`` of every watcher; ``d``);
* a watcher that re-registers the watches (``w``);
* an upstream writer: appends one to three Claude Code rows (typed prompts
  and assistant replies) to the adopted ``TRANSCRIPT`` in two writes (so a
  kill can leave half a row), fsyncs it, appends ``"<typed> <end offset>"`` to
  ``SIDE_DIR/appends.txt`` (fsynced; ``a``), then calls ``scan_upstream()``
  (``s``).

A row left half-written by the previous child is first terminated with a
newline: it becomes one line that is not JSON, which no classifier counts,
as when a tool resumes a transcript after a crash. If nobody kills it, the
child stops by itself after ``LIFETIME_S`` and exits with status 3.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from actors import Gateway
from actors.upstream.scan import line_classifier
from tests._upstream_rows import claude_assistant, claude_user

LIFETIME_S = 30.0
"""Longest the child runs when nobody kills it (longer than the parent waits)."""

WATCHERS = ("agent:main:main", "agent:ops:main", "agent:main:subagent:lead")
TARGETS = tuple(f"agent:main:worker:t{i}" for i in range(5))
CHILD = "agent:main:subagent:child"
GROUP = "agent:main:telegram:group:room-1"
UPSTREAM = "agent:main:adopted:claude"
"""Adopted by the parent before the first child; watched by ``agent:main:main``."""
PRODUCED = (*TARGETS, CHILD, GROUP)


class Progress:
    """One byte per completed step on stdout (the parent counts them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, mark: bytes) -> None:
        with self._lock:
            os.write(1, mark)


class SideFile:
    """Durable appends to a side file, shared by threads."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._lock = threading.Lock()

    def append(self, line: str) -> None:
        with self._lock:
            os.write(self._fd, f"{line}\n".encode())
            os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


def repair(transcript: Path) -> None:
    """Terminate a row the previous child left half-written (it stays not-JSON)."""
    data = transcript.read_bytes()
    if data and not data.endswith(b"\n"):
        fd = os.open(transcript, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)


def loop(deadline: float, step: Callable[[], None]) -> None:
    while time.monotonic() < deadline:
        step()


def main(argv: list[str]) -> int:
    db, side_dir, transcript, seed = Path(argv[0]), Path(argv[1]), Path(argv[2]), int(argv[3])
    progress = Progress()
    progress(b"S")
    rng = random.Random(seed)
    deadline = time.monotonic() + LIFETIME_S
    returned = SideFile(side_dir / "returned.txt")
    appends = SideFile(side_dir / "appends.txt")
    repair(transcript)
    classify = line_classifier("claude")
    gw = Gateway.open(db, monitor=False, on_wake=lambda _watcher: None)
    progress(b"O")
    counter = iter(range(1, 10**9))

    def produce(r: random.Random) -> Callable[[], None]:
        def step() -> None:
            key = r.choice(PRODUCED)
            roll = r.random()
            if roll < 0.45:
                event = gw.human_message(key, channel="crash")
            elif roll < 0.85:
                event = gw.set_goal(key, action=r.choice(("set", "updated", "removed")))
            elif roll < 0.95:
                event = gw.compacted(key, operation_id=f"op-{seed}-{next(counter)}")
            else:
                event = gw.finish_run(key, run_id=f"run-{seed}-{next(counter)}",
                                      outcome=r.choice(("ok", "error")))
            if event is not None:
                returned.append(f"{event.sequence} {event.session_key}")
            progress(b"p")
        return step

    def drain(r: random.Random) -> Callable[[], None]:
        def step() -> None:
            watcher = r.choice(WATCHERS)
            gw.pending_notices(watcher)
            gw.drain(watcher)
            progress(b"d")
        return step

    def rewatch(r: random.Random) -> Callable[[], None]:
        def step() -> None:
            gw.watch(r.choice(WATCHERS[:2]), r.choice(TARGETS))
            progress(b"w")
        return step

    def upstream(r: random.Random) -> Callable[[], None]:
        def step() -> None:
            n = next(counter)
            rows = b"".join(
                (claude_user if r.random() < 0.6 else claude_assistant)(f"crash {seed} {n} {i}")
                for i in range(r.randint(1, 3)))
            typed = sum(classify(line).human for line in rows.split(b"\n") if line)
            fd = os.open(transcript, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, rows[: len(rows) // 2])
                os.fsync(fd)  # a slow writer: kills often land between the two halves
                progress(b"h")
                os.write(fd, rows[len(rows) // 2:])
                os.fsync(fd)
                end = os.fstat(fd).st_size
            finally:
                os.close(fd)
            appends.append(f"{typed} {end}")
            progress(b"a")
            gw.scan_upstream()
            progress(b"s")
        return step

    try:
        for watcher in WATCHERS[:2]:
            for target in TARGETS:
                gw.watch(watcher, target)
        gw.watch(WATCHERS[0], UPSTREAM)
        gw.spawn_subagent(WATCHERS[2], CHILD, run_id=f"crash-{seed}")
        makers = (produce, produce, drain, rewatch, upstream)
        threads = [threading.Thread(target=loop, name=f"mixed-{i}",
                                    args=(deadline, make(random.Random(rng.random()))))
                   for i, make in enumerate(makers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=LIFETIME_S + 10)
    finally:
        gw.close()
        returned.close()
        appends.close()
    return 3


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
