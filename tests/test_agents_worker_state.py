"""Where a worker stands, with the real Claude Code CLI (issue 33 item 2, Done when).

A Claude Code manager and a Claude Code worker run in one project, with ``ssa
install claude-code --permission-wait 0.05`` (3 s, so the test is short). The
worker's own hooks (``Stop``, ``Notification``) say where it stands:

* a turn that ends logs ``run_completed`` and shows the worker as finished,
  and it never gives the manager a notice;
* a worker left on a permission prompt shows as waiting (permission) in ``ssa
  list``, and, opted in, gives the manager exactly one notice.

The hooks run asynchronously in the tool, so the checks wait (bounded) for what
they wrote, woken by the signal log's file changes.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import watchfiles

from tests.harness import Agent, Harness, Home, Text, ToolUse, merge_json
from tests.test_agents_watchers import SSA, _notices, _worker_key

pytestmark = [pytest.mark.agents, pytest.mark.timeout(300)]

WAIT_S = 45.0
"""Longest wait for what a worker's asynchronous hook writes."""


def _ssa(home: Home, *args: str) -> str:
    env = {**home.env(), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    done = subprocess.run([SSA, *args], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _install(home: Home, project: Path) -> None:
    del project
    _ssa(home, "install", "claude-code", "--no-wake", "--permission-wait", "0.05")
    settings = home.root / ".claude" / "settings.json"
    allow = json.loads(settings.read_text())["permissions"]["allow"]
    merge_json(settings, {"permissions": {"allow": [*allow, "mcp__ssa__session_status"]}})


def _listed(home: Home, key: str) -> dict[str, Any]:
    rows = [json.loads(line) for line in _ssa(home, "list", "--json").splitlines()]
    return next((r for r in rows if r["sessionKey"] == key), {})


def _events(home: Home, key: str) -> list[str]:
    status = json.loads(_ssa(home, "status", key, "--changes-since", "0"))
    return [e["kind"] for e in status.get("stateChanges", {}).get("events", [])]


def _until(home: Home, check: Callable[[], bool], what: str) -> None:
    """Wait (bounded) until ``check()`` holds: an asynchronous hook of the tool wrote to the
    signal log. Woken by the log's own file changes (watchfiles); at most :data:`WAIT_S`."""
    deadline = time.monotonic() + WAIT_S
    if check():
        return
    changes = watchfiles.watch(home.state, rust_timeout=1000, yield_on_timeout=True,
                               debounce=50)
    try:
        for _batch in changes:
            if check():
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"not within {WAIT_S} s: {what}")
    finally:
        changes.close()  # the watcher stops with the generator


def _start(harness: Harness) -> tuple[Home, Agent, Agent, str]:
    nonce = secrets.token_hex(4)
    home = harness.home()
    project = harness.project(git=True)
    manager = harness.start("claude", name="manager", home=home, project=project,
                            setup=_install)
    worker = harness.start("claude", name="worker", home=home, project=project)
    manager.script_shell(f"{SSA} manage", then=f"manager ready {nonce}")
    manager.prompt(f"manager first turn {nonce}")
    assert "is now a manager" in manager.model.main_requests()[-1].text()
    return home, manager, worker, nonce


def _worker_turn(manager: Agent, worker: Agent, text: str, answer: str) -> str:
    """A person's turn in the worker (answered with ``answer``); returns the worker's key."""
    managers = set(manager.transcripts())
    worker.script(Text(answer))
    worker.prompt(text)
    return _worker_key(worker, managers, "claude")


def test_a_finished_worker_logs_run_completed_and_never_a_notice(
        agent_harness: Harness, require_tool: Callable[[str], None]) -> None:
    require_tool("claude")
    home, manager, worker, nonce = _start(agent_harness)
    key = _worker_turn(manager, worker, f"a person asks the worker {nonce}",
                       f"worker done {nonce}")
    manager.script(Text("noted"), Text("nothing new"))
    manager.prompt(f"manager second turn {nonce}", answers_left=1)
    assert _notices(manager, key) == 1  # the typed prompt: one notice
    _until(home, lambda: "run_completed" in _events(home, key), "the worker's Stop hook")
    assert _listed(home, key).get("workerState", {}).get("state") == "finished"
    manager.prompt(f"manager third turn {nonce}")
    assert _notices(manager, key) == 1  # still the one in history: run_completed told nobody
    assert "run_completed" not in manager.model.main_requests()[-1].text()


def test_a_worker_on_a_permission_prompt_shows_waiting_and_its_manager_is_told_once(
        agent_harness: Harness, require_tool: Callable[[str], None]) -> None:
    require_tool("claude")
    home, manager, worker, nonce = _start(agent_harness)
    key = _worker_turn(manager, worker, f"a person starts the worker {nonce}",
                       f"worker ready {nonce}")
    manager.script(Text("noted"))
    manager.prompt(f"manager second turn {nonce}")  # adopts the worker; its notice goes
    told = _notices(manager, key)
    assert told == 1
    # A file write the settings do not allow: Claude Code asks the person, who is away.
    worker.script(ToolUse("Write", {"file_path": str(worker.project / f"{nonce}.txt"),
                                    "content": "x"}), Text(f"written {nonce}"))
    before = len(worker.model.main_requests())
    worker.type(f"please write the file {nonce}")
    worker.wait_request(f"please write the file {nonce}", after=before)

    def waiting() -> bool:
        state = _listed(home, key).get("workerState", {})
        return (state.get("state"), state.get("detail")) == ("waiting", "permission")

    _until(home, waiting, "the worker's Notification (permission_prompt) hook")
    assert "waiting (permission)" in _ssa(home, "list")  # the table says so too
    _until(home, lambda: "worker_waiting" in _events(home, key), "the permission-wait timer")
    manager.script(Text("noted"), Text("nothing new"), Text("still nothing"))
    manager.prompt(f"manager third turn {nonce}", answers_left=2)
    request = manager.model.main_requests()[-1].text()
    assert request.count("worker_waiting by system") == 1, request[-3000:]
    assert "now waiting for permission since" in request
    # The typed prompt of that turn comes as its own notice, in this turn or the next
    # (only the manager's hook scans the worker here: it may be read after the wait).
    manager.prompt(f"manager fourth turn {nonce}", answers_left=1)
    seen = _notices(manager, key)
    assert seen == told + 2, manager.model.main_requests()[-1].text()[-3000:]
    manager.prompt(f"manager fifth turn {nonce}")
    assert _notices(manager, key) == seen  # each told once: nothing new
    assert manager.model.main_requests()[-1].text().count("worker_waiting by system") == 1
    assert _events(home, key).count("worker_waiting") == 1
