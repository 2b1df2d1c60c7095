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
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from actors.testing import CodexRollout, Reply, Typed
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
    if source == "pi":
        return f"agent:main:pi:{stem.rsplit('_', 1)[-1]}"
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
    ("claude", "codex"), ("claude", "claude"), ("opencode", "codex"), ("pi", "codex"),
    ("codex", "claude"), ("qwen", "codex")])
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


WORKER_INSTALLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "claude": ("claude-code", ()),
    "codex": ("codex", ("--dangerously-bypass-hook-trust",)),
    "opencode": ("opencode", ()),
    "pi": ("pi", ()),
}


def _session_key(agent: Agent, source: str) -> str:
    if source == "opencode":
        sessions = {r.session for r in agent.decided_rows() if r.session is not None}
        assert len(sessions) == 1, sessions
        return f"agent:main:opencode:{sessions.pop()}"
    return _worker_key(agent, set(), source)


@pytest.mark.parametrize("worker_tool", ["claude", "codex", "opencode", "pi", "qwen"])
def test_sessions_send_into_an_idle_worker_is_delivered_not_typed_and_watched(
        agent_harness: Harness, require_tool: Callable[[str], None], worker_tool: str) -> None:
    """``ssa send --watch`` from a manager's key into a worker of each tool: the worker's
    model gets the text without anyone typing, its reader does not count it as typed, and
    the sender watches the worker."""
    require_tool(worker_tool)
    nonce = os.urandom(4).hex()
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    tool, args = WORKER_INSTALLS[worker_tool]
    worker = agent_harness.start(worker_tool, name="worker", home=home, project=project,
                                 setup=lambda h, p: _ssa_install(tool, h), args=args)
    worker.script(Text(f"worker ready {nonce}"))
    worker.prompt(f"worker first turn {nonce}")
    key = _session_key(worker, worker_tool)
    sender = "agent:main:claude:the-manager"
    worker.script(Text(f"got the message {nonce}"))
    before = len(worker.model.main_requests())
    env = {**home.env(), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "CODEX_HOME": str(home.root / ".codex")}
    text = f"please run the tests {nonce}"
    started = time.monotonic()
    done = subprocess.run([SSA, "send", key, text, "--from", sender, "--watch"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    expected = "queued" if worker_tool == "codex" else "delivered"
    assert done.stdout.startswith(f"{expected}: "), done.stdout
    assert "watching it" in done.stdout
    request = worker.model.wait_main(before + 1, timeout_s=WAKE_TIMEOUT_S)
    took = time.monotonic() - started
    worker.wait_turn()
    assert text in request.text()
    print(f"sessions_send -> {worker_tool} request: {took:.2f} s")
    result = compare(worker.decided_rows(), agent_harness.log.actions(tool=worker.tool.name))
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    listed = subprocess.run([SSA, "watches", "list", sender], env=env, capture_output=True,
                            text=True, timeout=60, check=True)
    assert key in listed.stdout


def test_two_managers_that_watch_each_other_give_one_wake_and_no_more(
        agent_harness: Harness, require_tool: Callable[[str], None]) -> None:
    """A person types into manager A; manager B, idle, is woken once. B's woken turn is
    not typed by a person, so A is told nothing, and nothing wakes anyone for 60 s."""
    require_tool("claude")
    nonce = os.urandom(4).hex()
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    first = _manager(agent_harness, home, project, nonce)
    (first_file,) = first.transcripts()
    first_key = f"agent:main:claude:{first_file.stem}"
    second = agent_harness.start("claude", name="second", home=home, project=project,
                                 setup=None)
    second.script_shell(f"{SSA} manage", then=f"second is a manager {nonce}")
    second.prompt(f"make yourself a manager too {nonce}")
    second.script(Text(f"noted {nonce}"))
    first.script(Text(f"answer {nonce}"))
    before_first = len(first.model.main_requests())
    before_second = len(second.model.main_requests())
    first.prompt(f"a person typed into the first manager {nonce}")
    request = second.model.wait_main(before_second + 1, timeout_s=WAKE_TIMEOUT_S)
    second.wait_turn()
    assert _notices(request.text(), first_key) == 1, request.text()[-3000:]
    time.sleep(60.0)
    assert len(first.model.main_requests()) == before_first + 1  # its typed turn only
    assert len(second.model.main_requests()) == before_second + 1  # one wake


def _our_waiting_hooks(home: Home) -> list[int]:
    """Pids of waiting hooks (``ssa hook ... --wait``) whose HOME is ``home``'s."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--wait" in argv and b"hook" in argv \
                and f"HOME={home.root}".encode() in environ:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize(("tool", "how"), [
    ("claude", "SIGKILL"), ("claude", "SIGTERM"), ("codex", "SIGKILL"), ("opencode", "SIGKILL"),
    ("pi", "SIGKILL"), ("qwen", "SIGKILL")])
def test_killing_a_managers_session_leaves_no_process_of_ours(
        agent_harness: Harness, require_tool: Callable[[str], None], tool: str,
        how: str) -> None:
    """The tool's processes are killed (its process group, as a closed terminal does; the
    waiting hooks Codex and Qwen Code get are in sessions of their own): nothing of ours
    runs 5 s later (each waiting hook watches a pidfd of its tool process)."""
    require_tool(tool)
    nonce = os.urandom(4).hex()
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    manager = _manager(agent_harness, home, project, nonce, tool=tool)
    deadline = time.monotonic() + 10.0
    while not _our_waiting_hooks(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _our_waiting_hooks(home), "the waiting hook did not start"
    os.killpg(os.getpgid(manager.pane.pid()), getattr(signal, how))
    deadline = time.monotonic() + 5.0
    while _our_waiting_hooks(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _our_waiting_hooks(home) == []  # within 5 s of the session's end


@pytest.mark.parametrize("manager_tool", ["claude", "opencode", "pi"])
def test_a_busy_manager_sees_the_notice_before_its_next_model_request(
        agent_harness: Harness, require_tool: Callable[[str], None], manager_tool: str) -> None:
    """Mid-turn: the manager runs a slow shell command when a person's turn lands in a
    worker (a Codex rollout the test kit writes, so no second TUI's timing is involved);
    the request that follows the command's result already carries the notice (Claude Code
    absorbs the waiting hook's exit mid-turn, OpenCode's synthetic part and Pi's steer join
    the next request), and no further turn follows for it."""
    require_tool(manager_tool)
    nonce = os.urandom(4).hex()
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    manager = _manager(agent_harness, home, project, nonce, tool=manager_tool)
    thread = str(uuid.uuid4())
    day = home.root / ".codex" / "sessions" / "2026" / "12" / "06"
    day.mkdir(parents=True, exist_ok=True)
    worker = CodexRollout(day / f"rollout-2026-12-06T04-00-00-{thread}.jsonl",
                          thread_id=thread, cwd=str(project))
    worker.append(Typed("an earlier prompt"), Reply("ok"))
    key = f"agent:main:codex:{thread}"
    time.sleep(2.0)  # the manager's waiting hook links the worker at its end
    manager.script_shell("sleep 6", then=f"slept {nonce}")
    before = len(manager.model.main_requests())
    manager.type(f"run the slow command {nonce}")
    manager.wait_request(f"run the slow command {nonce}", after=before)
    worker.append(Typed(f"a person typed into the worker {nonce}"), Reply("ok"))
    follow_up = manager.model.wait_main(before + 2, timeout_s=WAKE_TIMEOUT_S)
    manager.wait_turn()
    assert _notices(follow_up.text(), key) == 1, follow_up.text()[-3000:]
    time.sleep(3.0)
    assert len(manager.model.main_requests()) == before + 2  # no extra turn for it


def _install_gemini(home: Home, project: Path) -> None:
    del project
    _ssa_install("gemini", home)


MANAGERS["gemini"] = (_install_gemini, ())


def test_a_gemini_manager_is_told_once_at_its_next_prompt(
        agent_harness: Harness, require_tool: Callable[[str], None]) -> None:
    """Gemini CLI offers no way in from outside, so no wake: its BeforeAgent hook carries the
    notice into the next prompt's request, once."""
    require_tool("gemini")
    require_tool("codex")
    nonce = os.urandom(4).hex()
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    manager = _manager(agent_harness, home, project, nonce, tool="gemini")
    worker = agent_harness.start("codex", name="worker", home=home, project=project)
    worker.script(Text(f"worker answer {nonce}"))
    before = len(manager.model.main_requests())
    worker.prompt(f"a person typed into the worker {nonce}")
    key = _worker_key(worker, set(), "codex")
    time.sleep(3.0)
    assert len(manager.model.main_requests()) == before  # no wake
    manager.script(Text(f"noted {nonce}"), Text(f"nothing new {nonce}"))
    manager.prompt(f"manager next turn {nonce}", answers_left=1)
    assert _notices(manager.model.main_requests()[-1].text(), key) == 1
    manager.prompt(f"manager turn after {nonce}")
    assert _notices(manager.model.main_requests()[-1].text(), key) == 1  # history only
    result = compare(manager.decided_rows(), agent_harness.log.actions(tool="gemini"))
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()


def _install_qwen(home: Home, project: Path) -> None:
    del project
    _ssa_install("qwen", home)


MANAGERS["qwen"] = (_install_qwen, ())
WORKER_INSTALLS["qwen"] = ("qwen", ())


def test_an_idle_qwen_manager_is_woken_once_through_its_messaging_socket(
        agent_harness: Harness, require_tool: Callable[[str], None]) -> None:
    """Qwen Code: the prompt hook starts the waiting hook detached; it writes the notice to
    the session's cross-session messaging socket, and Qwen Code starts a turn with it."""
    require_tool("qwen")
    require_tool("codex")
    nonce = os.urandom(4).hex()
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    manager = _manager(agent_harness, home, project, nonce, tool="qwen")
    worker = agent_harness.start("codex", name="worker", home=home, project=project)
    worker.script(Text(f"worker answer {nonce}"))
    manager.script(Text(f"noted {nonce}"))
    before = len(manager.model.main_requests())
    worker.prompt(f"a person typed into the worker {nonce}")
    key = _worker_key(worker, set(), "codex")
    request = manager.model.wait_main(before + 1, timeout_s=WAKE_TIMEOUT_S)
    manager.wait_turn()
    assert _notices(request.text(), key) == 1, request.text()[-3000:]
    time.sleep(3.0)
    assert len(manager.model.main_requests()) == before + 1
    result = compare(manager.decided_rows(), agent_harness.log.actions(tool="qwen"))
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()


@pytest.mark.parametrize("manager_tool", ["claude", "opencode", "pi", "qwen", "codex"])
def test_twenty_rapid_changes_wake_a_manager_once_and_at_most_once_more(
        agent_harness: Harness, require_tool: Callable[[str], None], manager_tool: str) -> None:
    """Review finding: a waiting hook that stays (OpenCode, Pi, Codex, Qwen Code) pushed
    one turn per change. Twenty typed turns 10 ms apart in a worker (written by the test
    kit) now give one wake, and at most one follow-up for the work that landed meanwhile.
    The fake model takes a second per answer, as a real one takes longer: with instant
    answers each woken turn ends within milliseconds, and changes after it are new
    notices, one wake each, as the seed says (each turn took its notice)."""
    require_tool(manager_tool)
    nonce = os.urandom(4).hex()
    home = agent_harness.home()
    project = agent_harness.project(git=True)
    manager = _manager(agent_harness, home, project, nonce, tool=manager_tool)
    thread = str(uuid.uuid4())
    day = home.root / ".codex" / "sessions" / "2026" / "12" / "06"
    day.mkdir(parents=True, exist_ok=True)
    worker = CodexRollout(day / f"rollout-2026-12-06T05-00-00-{thread}.jsonl",
                          thread_id=thread, cwd=str(project))
    worker.append(Typed("an earlier prompt"), Reply("ok"))
    time.sleep(2.0)  # the manager's waiting hook links the worker at its end
    manager.script(*(Text(f"noted {i} {nonce}", delay_s=1.0) for i in range(4)))
    before = len(manager.model.main_requests())
    for i in range(20):
        worker.append(Typed(f"rapid change {i} {nonce}"), Reply("ok"))
        time.sleep(0.01)
    key = f"agent:main:codex:{thread}"
    manager.model.wait_main(before + 1, timeout_s=WAKE_TIMEOUT_S)
    time.sleep(25.0 if manager_tool == "codex" else 12.0)  # room for a follow-up, or more
    # A delivery is a request that carries more notices than the one before it (a tool
    # may make several requests for one delivery; history repeats the earlier ones).
    counts = [_notices(r.text(), key) for r in manager.model.main_requests()[before:]]
    deliveries = sum(1 for previous, now in zip([0, *counts], counts, strict=False)
                     if now > previous)
    assert 1 <= deliveries <= 2, counts
