"""Child process of ``tests/test_crash.py``: records and acknowledges until killed.

Usage::

    python -m tests._crash_child DB SIDE_FILE SEED

It opens a gateway on ``DB``, registers the watches below, then runs three
producer threads and one draining thread. After each producer call returns
an event, the thread appends ``"<sequence> <session_key>\\n"`` to
``SIDE_FILE`` and fsyncs it, so the parent knows which records had returned
when it killed the process. The parent ends it with SIGKILL; if nobody does,
it stops by itself after ``LIFETIME_S`` and exits with status 3.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from pathlib import Path

from actors import Gateway

LIFETIME_S = 40.0
"""Longest the child runs when nobody kills it (longer than the parent waits)."""

MAIN_WATCHERS = ("agent:main:main", "agent:ops:main")
NESTED_WATCHER = "agent:main:subagent:lead"
WATCHERS = (*MAIN_WATCHERS, NESTED_WATCHER)
TARGETS = tuple(f"agent:main:worker:t{i}" for i in range(6))
CHILD = "agent:main:subagent:child"
GROUP = "agent:main:telegram:group:room-1"
"""Watched ambiently by ``agent:main:main`` after its first human turn, never explicitly."""
PRODUCED = (*TARGETS, CHILD, GROUP)


class SideFile:
    """Appends returned sequences durably; shared by the producer threads."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._lock = threading.Lock()

    def append(self, sequence: int, key: str) -> None:
        with self._lock:
            os.write(self._fd, f"{sequence} {key}\n".encode())
            os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


def produce(gw: Gateway, side: SideFile, rng: random.Random, deadline: float) -> None:
    n = 0
    while time.monotonic() < deadline:
        n += 1
        key = rng.choice(PRODUCED)
        roll = rng.random()
        if roll < 0.5:
            event = gw.human_message(key, channel="crash")
        elif roll < 0.9:
            event = gw.set_goal(key, action=rng.choice(("set", "updated", "removed")))
        else:
            event = gw.compacted(key, operation_id=f"op-{rng.random()}-{n}")
        if event is not None:
            side.append(event.sequence, event.session_key)


def acknowledge(gw: Gateway, rng: random.Random, deadline: float) -> None:
    while time.monotonic() < deadline:
        watcher = rng.choice(WATCHERS)
        gw.pending_notices(watcher)
        gw.drain(watcher)


def main(argv: list[str]) -> int:
    db, side_path, seed = Path(argv[0]), Path(argv[1]), int(argv[2])
    rng = random.Random(seed)
    deadline = time.monotonic() + LIFETIME_S
    side = SideFile(side_path)
    gw = Gateway.open(db, monitor=False, on_wake=lambda _watcher: None)
    try:
        for watcher in WATCHERS:
            for target in TARGETS:
                gw.watch(watcher, target)
        gw.spawn_subagent(NESTED_WATCHER, CHILD, run_id=f"crash-{seed}")
        threads = [
            threading.Thread(target=produce, name=f"produce-{i}",
                             args=(gw, side, random.Random(rng.random()), deadline))
            for i in range(3)
        ]
        threads.append(threading.Thread(target=acknowledge, name="acknowledge",
                                        args=(gw, random.Random(rng.random()), deadline)))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=LIFETIME_S + 10)
    finally:
        gw.close()
        side.close()
    return 3


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
