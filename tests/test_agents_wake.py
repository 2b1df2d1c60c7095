"""Push into running sessions, end to end with the real tools (issue 35).

A manager runs in the real Claude Code TUI with ``ssa install claude-code``
(its prompt hooks and the waiting ``Stop`` hook with ``asyncRewake``); it
becomes the manager in one step from inside: its model runs ``ssa manage``
with the Bash tool (no key copied). Workers run in other real tools of the
same project. A person types into a worker; the idle manager must send the
fake model a request carrying the notice without anyone typing into it,
exactly once, and its next turn must carry nothing new. A person typing into
the manager tells no worker (workers are workers). Every transcript is then
decided through ``ssa classify``'s code path: the woken turn's row is never a
typed prompt.

The fake models record every request (:mod:`tests.harness`), so "woken"
is read off the wire: a main request that no typed prompt caused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness import Agent, Harness, Home, Text, compare, merge_json

pytestmark = [pytest.mark.agents, pytest.mark.timeout(300)]

NOTICE_MARK = "changed (other actor). Reconcile before acting: session_status sessionKey"
SSA = str(Path(sys.executable).with_name("ssa"))
WAKE_TIMEOUT_S = 30.0


def _ssa_install(tool: str, home: Home) -> None:
    env = {**home.env(), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "CODEX_HOME": str(home.root / ".codex")}
    done = subprocess.run([SSA, "install", tool], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _install_codex(home: Home, project: Path) -> None:
    del project
    _ssa_install("codex", home)


def _install_claude(home: Home, project: Path) -> None:
    del project
    _ssa_install("claude-code", home)
    settings = home.root / ".claude" / "settings.json"
    allow = json.loads(settings.read_text())["permissions"]["allow"]
    merge_json(settings, {"permissions": {"allow": [*allow, "mcp__ssa__session_status"]}})


def _notices(text: str, key: str) -> int:
    return text.count(f'Session "{key}" {NOTICE_MARK}')


def _worker_key(worker: Agent, managers: set[Path], source: str) -> str:
    transcripts = sorted(set(worker.transcripts()) - managers)
    assert len(transcripts) == 1, transcripts
    stem = transcripts[0].stem
    if source == "codex":
        return f"agent:main:codex:{stem[-36:]}"
    return f"agent:main:{source}:{stem}"


def _install_opencode(home: Home, project: Path) -> None:
    del project
    _ssa_install("opencode", home)


def _install_pi(home: Home, project: Path) -> None:
    del project
    _ssa_install("pi", home)


MANAGERS: dict[str, tuple[Callable[[Home, Path], None], tuple[str, ...]]] = {
    "claude": (_install_claude, ()),
    "opencode": (_install_opencode, ()),
    "pi": (_install_pi, ()),
    # A person trusts a new hook once, in Codex's /hooks; automation skips that.
    "codex": (_install_codex, ("--dangerously-bypass-hook-trust",)),
}


def _manager(harness: Harness, home: Home, project: Path, nonce: str,
             tool: str = "claude") -> Agent:
    """A session that made itself the manager with its shell tool."""
    setup, args = MANAGERS[tool]
    manager = harness.start(tool, name="manager", home=home, project=project,
                            setup=setup, args=args)
    manager.script_shell(f"{SSA} manage", then=f"I am the manager now {nonce}")
    manager.prompt(f"make yourself the manager {nonce}")
    request = manager.model.main_requests()[-1].text()
    assert "is now a manager" in request, request[-2000:]
    return manager


def test_an_idle_codex_manager_is_woken_once_through_codex_queue(
        agent_harness: Harness, require_tool: Callable[[str], None]) -> None:
    """Codex: its prompt hook (here the async PostToolUse after ``ssa manage``) starts the
    waiting hook detached; it delivers with ``codex queue``, which the TUI runs at its
    next 10 s tick."""
    require_tool("codex")
    require_tool("claude")
    nonce = os.urandom(4).hex()
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    manager = _manager(agent_harness, home, project, nonce, tool="codex")
    manager_files = set(manager.transcripts())
    worker = agent_harness.start("claude", name="worker", home=home, project=project)
    worker.script(Text(f"worker answer {nonce}"))
    manager.script(Text(f"noted {nonce}"))
    before = len(manager.model.main_requests())
    worker.prompt(f"a person typed into the worker {nonce}")
    key = _worker_key(worker, manager_files, "claude")
    request = manager.model.wait_main(before + 1, timeout_s=WAKE_TIMEOUT_S)
    manager.wait_turn()
    assert _notices(request.text(), key) == 1, request.text()[-3000:]
    time.sleep(3.0)
    assert len(manager.model.main_requests()) == before + 1  # once
    for agent in (manager, worker):
        result = compare(agent.decided_rows(), agent_harness.log.actions(tool=agent.tool.name))
        assert (result.precision, result.recall) == (1.0, 1.0), result.report()


def _woken(manager: Agent, before: int, started: float) -> tuple[str, float]:
    """Wait for the manager's woken turn: its first main request after ``before``."""
    request = manager.model.wait_main(before + 1, timeout_s=WAKE_TIMEOUT_S)
    took = time.monotonic() - started
    manager.wait_turn()
    return request.text(), took


@pytest.mark.parametrize(("manager_tool", "worker_tool"), [
    ("claude", "codex"), ("claude", "claude"), ("opencode", "codex"), ("pi", "codex")])
def test_an_idle_manager_is_woken_once_by_a_typed_turn_in_a_worker(
        agent_harness: Harness, require_tool: Callable[[str], None], manager_tool: str,
        worker_tool: str) -> None:
    require_tool(manager_tool)
    require_tool(worker_tool)
    nonce = os.urandom(4).hex()
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    manager = _manager(agent_harness, home, project, nonce, tool=manager_tool)
    manager_files = set(manager.transcripts())
    worker = agent_harness.start(worker_tool, name="worker", home=home, project=project)
    worker.script(Text(f"worker answer {nonce}"), Text(f"worker answer two {nonce}"))
    manager.script(Text(f"noted {nonce}"))
    before = len(manager.model.main_requests())
    started = time.monotonic()
    worker.prompt(f"a person typed into the worker {nonce}", answers_left=1)
    key = _worker_key(worker, manager_files, worker_tool)
    text, took = _woken(manager, before, started)
    assert _notices(text, key) == 1, text[-3000:]
    if manager_tool == "claude":
        assert "SYSTEM NOTIFICATION - NOT USER INPUT" in text
    assert took < WAKE_TIMEOUT_S
    print(f"wake latency (typed in the worker -> the manager's request): {took:.2f} s")
    # Nothing more: no second wake within a few seconds, and the next prompt has no notice.
    time.sleep(3.0)
    assert len(manager.model.main_requests()) == before + 1
    manager.script(Text(f"plain turn {nonce}"))
    manager.prompt(f"manager typed turn {nonce}")
    assert _notices(manager.model.main_requests()[-1].text(), key) == 1  # history only
    # A second typed turn in the worker wakes it exactly once more.
    before = len(manager.model.main_requests())
    manager.script(Text(f"noted again {nonce}"))
    worker.prompt(f"the person typed again {nonce}")
    text, _ = _woken(manager, before, time.monotonic())
    assert _notices(text, key) == 2  # the earlier one in history, one new
    assert not manager.model.problems, manager.model.problems
    for agent in {manager.tool.name: manager, worker.tool.name: worker}.values():
        result = compare(agent.decided_rows(), agent_harness.log.actions(tool=agent.tool.name))
        assert (result.precision, result.recall) == (1.0, 1.0), result.report()


def test_a_person_typing_into_the_manager_notifies_no_worker(
        agent_harness: Harness, require_tool: Callable[[str], None]) -> None:
    require_tool("claude")
    nonce = os.urandom(4).hex()
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    worker = agent_harness.start("claude", name="worker", home=home, project=project,
                                 setup=_install_claude)
    worker.script(Text(f"worker ready {nonce}"))
    worker.prompt(f"worker first turn {nonce}")
    manager = _manager(agent_harness, home, project, nonce)
    manager.script(Text(f"manager answer {nonce}"))
    manager.prompt(f"a person typed into the manager {nonce}")
    worker.script(Text(f"worker again {nonce}"))
    before = len(worker.model.main_requests())
    worker.prompt(f"worker second turn {nonce}")
    requests = worker.model.main_requests()
    assert len(requests) == before + 1  # no wake, and no notice in its turn
    assert 'Session "agent:main:claude:' not in requests[-1].text()  # no notice line
