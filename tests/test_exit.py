"""A gateway the program never closes does not hang interpreter exit, and loses nothing.

Each case runs a child interpreter that opens a gateway with every thread it
can start (the cadence, the file feed, hosting, dispatcher workers), keeps a
daemon thread of its own producing, and then raises or simply ends without
``close()``. The child must exit within the test's bound; every event a
producer call returned must be in the database; and the close at exit must
have run (it releases the hosting lease at once, which lapsing never does
within the test).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import apsw
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXIT_BOUND_S = 40.0
"""Longest the child may take, below pytest-timeout's 60 s."""

CHILD = textwrap.dedent('''
    import os, sys, threading
    from actors import Gateway, GatewayConfig
    from actors.errors import GatewayClosed
    from actors.testing import ClaudeCodeTranscript, Typed

    db, side_path, how, home = sys.argv[1:5]
    gw = Gateway.open(db, config=GatewayConfig(upstream_initial_delay_s=0.0),
                      on_wake=lambda watcher: None, hosts=["agent:main:main"])
    for i in range(8):
        transcript = ClaudeCodeTranscript(os.path.join(home, f"s{i}.jsonl"))
        transcript.append(Typed("before adoption"))
        gw.adopt(f"agent:main:claude:s{i}", source="claude", path=transcript.path)
        gw.watch("agent:main:main", f"agent:main:claude:s{i}")
        transcript.append(Typed("typed directly"))
    gw.scan_upstream()  # a fan-out on the dispatcher: its workers start
    side = open(side_path, "a", buffering=1)
    enough = threading.Event()

    def produce():
        n = 0
        while True:
            try:
                event = gw.human_message(f"agent:main:worker-{n % 4}", channel="exit")
            except GatewayClosed:
                return
            if event is not None:
                side.write(f"{event.sequence}\\n")
                n += 1
                if n == 50:
                    enough.set()

    for n in range(4):  # a session nobody watches records nothing
        gw.watch("agent:main:main", f"agent:main:worker-{n}")
    threading.Thread(target=produce, daemon=True).start()
    assert enough.wait(20), "the producer never got going"
    print(" ".join(sorted(t.name for t in threading.enumerate())), flush=True)
    if how == "raise":
        raise RuntimeError("the program failed before closing its gateway")
''')


@pytest.mark.parametrize(("how", "code"), [("raise", 1), ("end", 0)])
def test_an_unclosed_gateway_is_closed_at_exit_without_losing_a_returned_event(
    tmp_path: Path, how: str, code: int,
) -> None:
    script, db, side, home = (tmp_path / "child.py", tmp_path / "state.sqlite",
                              tmp_path / "returned.txt", tmp_path / "home")
    script.write_text(CHILD)
    home.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, str(script), str(db), str(side), how, str(home)],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=EXIT_BOUND_S, check=False)
    assert done.returncode == code, done.stderr
    threads = done.stdout.split()
    assert "ssa-upstream-cadence" in threads
    assert "ssa-hosting" in threads
    assert any(name.startswith("ssa-worker-") for name in threads)
    if how == "raise":
        assert "RuntimeError: the program failed before closing its gateway" in done.stderr
    assert done.stderr.count("Traceback") == (1 if how == "raise" else 0), done.stderr
    returned = [int(line) for line in side.read_text().split()]
    assert len(returned) >= 50
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        stored = {int(s) for (s,) in conn.execute("SELECT sequence FROM session_state_events")}
        hosts = conn.execute("SELECT count(*) FROM session_hosts").get
    finally:
        conn.close()
    assert set(returned) <= stored  # committed before it returned, still there
    assert hosts == 0  # the at-exit close released the hosting lease
