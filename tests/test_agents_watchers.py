"""Coding agents as watchers, end to end with the real tools (issue 21).

A manager agent runs in one real tool with ``ssa hook`` installed; a worker
runs in another real tool in the same project. A person types into the
worker (``tmux send-keys``); the manager's next prompt must make its tool
send the notice to the (fake) model exactly once, the prompt after that
none, and a second typed prompt in the worker exactly one new notice. The
fake models are the harness's (:mod:`tests.harness`): every request the tool
sends is recorded, so "the notice reached the model" is read off the wire.

The conversation's history is resent with every request, so with Claude
Code, Codex and Pi a notice shows in every later request too (OpenCode puts
it in that request's system prompt only): the checks count notices per
request, which must grow by exactly one where a notice is due and stay put
elsewhere.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.harness import Agent, Harness, Home, Text, ToolUse, compare, merge_json

pytestmark = [pytest.mark.agents, pytest.mark.timeout(300)]

NOTICE_MARK = "changed (other actor). Reconcile before acting: session_status sessionKey"
SSA = str(Path(sys.executable).with_name("ssa"))


def _ssa_install(tool: str, home: Home, *extra: str) -> None:
    """Run ``ssa install <tool>`` as the person would, in the agents' home."""
    env = {**home.env(), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "CODEX_HOME": str(home.root / ".codex")}
    done = subprocess.run([SSA, "install", tool, *extra], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _install_claude(home: Home, project: Path) -> None:
    del project
    _ssa_install("claude-code", home, "--no-wake")
    # The person allows the MCP tool once (Claude Code asks before a tool's first use).
    settings = home.root / ".claude" / "settings.json"
    allow = json.loads(settings.read_text())["permissions"]["allow"]
    merge_json(settings, {"permissions": {"allow": [*allow, "mcp__ssa__session_status"]}})


def _install_codex(home: Home, project: Path) -> None:
    del project
    _ssa_install("codex", home, "--no-wake")


def _install_opencode(home: Home, project: Path) -> None:
    del project
    _ssa_install("opencode", home, "--no-wake")


def _install_pi(home: Home, project: Path) -> None:
    del project
    _ssa_install("pi", home, "--no-wake")


# Each manager is installed with --no-wake: these scenarios check the next-prompt path
# (issue 21); waking an idle manager is test_agents_wake.py's.
MANAGERS: dict[str, tuple[Callable[[Home, Path], None], tuple[str, ...]]] = {
    "claude": (_install_claude, ()),
    # A person trusts a new hook once, in Codex's /hooks; automation skips that.
    "codex": (_install_codex, ("--dangerously-bypass-hook-trust",)),
    "opencode": (_install_opencode, ()),
    "pi": (_install_pi, ()),
}


SYSTEM_ONLY = frozenset({"opencode"})
"""Managers whose tool puts the context in that request's system prompt only (OpenCode's
``experimental.chat.system.transform``): later requests do not carry it."""


def _notices(agent: Agent, key: str) -> int:
    """How many notices about ``key`` the manager's latest main request carries."""
    latest = agent.model.main_requests()[-1]
    return latest.text().count(f'Session "{key}" {NOTICE_MARK}')


def _worker_key(worker: Agent, managers: set[Path], source: str) -> str:
    """The worker session's key (``managers``: the manager's transcripts, which one
    tool's listing holds too when both run it)."""
    if source == "opencode":  # one store: the worker's session is its top-level one
        sessions = {r.session for r in worker.decided_rows() if r.session is not None}
        assert len(sessions) == 1, sessions
        return f"agent:main:opencode:{sessions.pop()}"
    transcripts = sorted(set(worker.transcripts()) - managers)
    assert len(transcripts) == 1, transcripts
    stem = transcripts[0].stem
    if source == "codex":
        return f"agent:main:codex:{stem[-36:]}"
    if source == "pi":
        return f"agent:main:pi:{stem.rsplit('_', 1)[-1]}"
    return f"agent:main:{source}:{stem}"


class WatchProcess:
    """``ssa watch`` running in the agents' home: its notice lines, read as they come."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True, name="ssa-watch-out")
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def close(self) -> None:
        """After the process ended: finish reading its output and close the pipe."""
        self._reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def wait_notices(self, key: str, count: int, timeout_s: float = 30.0) -> None:
        """Block until ``ssa watch`` printed ``count`` notices about ``key``."""
        deadline = time.monotonic() + timeout_s
        while sum(1 for line in self.seen if line.startswith("notice:")
                  and f'"{key}"' in line) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"ssa watch printed no notice {count} for {key}: "
                                   f"{self.seen[-10:]}")
            try:
                self.seen.append(self.lines.get(timeout=left))
            except queue.Empty:
                continue


@contextmanager
def _ssa_watch(home: Home) -> Iterator[WatchProcess]:
    env = {**home.env(), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    process = subprocess.Popen([SSA, "watch", "--interval", "1"], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    watch = WatchProcess(process)
    try:
        yield watch
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
        watch.close()


def _scenario(harness: Harness, worker_tool: str, *, manager_tool: str = "claude",
              before_typing: Callable[[], None] | None = None, daemon: bool = False) -> None:
    home = harness.home()
    if daemon:
        (home.root / ".claude" / "projects").mkdir(parents=True, exist_ok=True)
        with _ssa_watch(home) as watch:
            _run_scenario(harness, home, worker_tool, manager_tool, before_typing, watch)
    else:
        _run_scenario(harness, home, worker_tool, manager_tool, before_typing, None)


def _run_scenario(harness: Harness, home: Home, worker_tool: str, manager_tool: str,
                  before_typing: Callable[[], None] | None, watch: WatchProcess | None) -> None:
    nonce = secrets.token_hex(4)
    project = harness.project(git=True)
    setup, args = MANAGERS[manager_tool]
    manager = harness.start(manager_tool, name="manager", home=home, project=project,
                            setup=setup, args=args)
    worker = harness.start(worker_tool, name="worker", home=home, project=project)
    # Sessions are workers until made managers: its agent runs `ssa manage` (issue 35).
    manager.script_shell(f"{SSA} manage", then=f"manager ready {nonce}")
    manager.prompt(f"manager first turn {nonce}")
    assert "is now a manager" in manager.model.main_requests()[-1].text()
    manager_files = set(manager.transcripts())
    worker.script(Text(f"worker answer {nonce}"), Text(f"worker answer two {nonce}"))
    if before_typing is not None:
        before_typing()
    worker.prompt(f"a person typed into the worker {nonce}", answers_left=1)
    key = _worker_key(worker, manager_files, worker_tool)
    if watch is not None:  # the daemon records it; the hook only reads
        watch.wait_notices(key, 1)

    mcp = manager_tool == "claude"
    if mcp:  # the model reconciles with the MCP tool the notice names
        # Claude Code 2.1.328 defers MCP tools: the model loads the schema first.
        manager.script(ToolUse("ToolSearch", {"query": "select:mcp__ssa__session_status"}))
        manager.script_mcp("ssa", "session_status", {"sessionKey": key, "changesSince": 0},
                           then="noted")
    else:
        manager.script(Text("noted"))
    manager.script(Text("nothing new"), Text("noted again"))
    manager.prompt(f"manager second turn {nonce}", answers_left=2)
    assert _notices(manager, key) == 1, manager.model.main_requests()[-1].text()[-3000:]
    if mcp:  # the tool's answer went back to the model: the changes behind the notice
        result = manager.model.main_requests()[-1].text().replace(" ", "")
        assert '"kind":"human_direct_message"' in result, result[-3000:]
        assert f'"sessionKey":"{key}"' in result, result[-3000:]
        # Issue 33: what the person typed, read from the worker's transcript at the call,
        # and the signal log holds none of it.
        assert '"typedText":[{' in result, result[-3000:]
        assert f"apersontypedintotheworker{nonce}" in result, result[-3000:]
        for stored in home.state.rglob("*.sqlite*"):
            assert f"a person typed into the worker {nonce}".encode() not in \
                stored.read_bytes(), stored
    manager.prompt(f"manager third turn {nonce}", answers_left=1)
    # No new notice: the one delivered stays only where the tool keeps it in history.
    kept = _notices(manager, key)
    assert kept == (0 if manager_tool in SYSTEM_ONLY else 1)

    worker.prompt(f"the person typed again {nonce}")
    if watch is not None:
        watch.wait_notices(key, 2)
    manager.prompt(f"manager fourth turn {nonce}")
    assert _notices(manager, key) == kept + 1  # exactly one new notice
    assert not manager.model.problems, manager.model.problems
    # The context the hook injected is in the manager's own transcript now: deciding
    # every row must still find exactly the prompts the person typed there.
    for agent in {manager.tool.name: manager, worker.tool.name: worker}.values():
        # One tool's listing holds every session of that tool in the home.
        result = compare(agent.decided_rows(), harness.log.actions(tool=agent.tool.name))
        assert (result.precision, result.recall) == (1.0, 1.0), result.report()


def test_claude_code_manager_learns_of_a_person_typing_into_a_codex_worker(
        agent_harness: Harness, require_tool: Callable[[str], None]) -> None:
    require_tool("claude")
    require_tool("codex")
    _scenario(agent_harness, "codex")


def test_claude_code_manager_learns_of_a_person_typing_into_a_claude_code_worker(
        agent_harness: Harness, require_tool: Callable[[str], None]) -> None:
    require_tool("claude")
    _scenario(agent_harness, "claude")


def test_codex_manager_learns_of_a_person_typing_into_a_claude_code_worker(
        agent_harness: Harness, require_tool: Callable[[str], None]) -> None:
    require_tool("claude")
    require_tool("codex")
    _scenario(agent_harness, "claude", manager_tool="codex")


def test_with_ssa_watch_running_the_hook_only_reads_and_the_manager_learns_once(
        agent_harness: Harness, require_tool: Callable[[str], None]) -> None:
    require_tool("claude")
    require_tool("codex")
    _scenario(agent_harness, "codex", daemon=True)


@pytest.mark.parametrize("worker_tool", ["opencode", "pi"])
def test_claude_code_manager_learns_of_a_person_typing_into_an_opencode_or_pi_worker(
        agent_harness: Harness, require_tool: Callable[[str], None], worker_tool: str) -> None:
    require_tool("claude")
    require_tool(worker_tool)
    _scenario(agent_harness, worker_tool)


@pytest.mark.parametrize("manager_tool", ["opencode", "pi"])
def test_an_opencode_or_pi_manager_learns_of_a_person_typing_into_a_codex_worker(
        agent_harness: Harness, require_tool: Callable[[str], None], manager_tool: str) -> None:
    require_tool(manager_tool)
    require_tool("codex")
    _scenario(agent_harness, "codex", manager_tool=manager_tool)
