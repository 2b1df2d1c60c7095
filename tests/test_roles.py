"""Managers and workers (issue 35): sessions are workers until ``ssa manage`` makes them managers.

A worker is never notified: its prompt hook adopts and watches nothing and
prints nothing, so a person typing into the manager tells no worker. ``ssa
manage --off`` makes a manager a worker again and drops its watches. ``ssa
manage`` finds the session it runs in from the records the hooks keep
(:mod:`actors.agents.caller`), so nobody copies a key.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from actors import Gateway
from actors.agents import caller
from actors.agents import hook as hook_mod
from actors.agents.manage import resolve_self, run_manage
from actors.errors import InvalidArgument, SessionStateError
from actors.testing import ClaudeCodeTranscript, CodexRollout, Reply, Typed
from persistence import peek

SUBPROCESS_TIMEOUT_S = 30


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "home"
    (root / "proj" / ".git").mkdir(parents=True)
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME", "OPENCODE_DB",
                 "PI_CODING_AGENT_DIR", "SSA_DB", "XDG_STATE_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(root))
    monkeypatch.setenv("SSA_STATE_DIR", str(root / "state"))
    (root / "state").mkdir()
    return root


def _claude(root: Path) -> ClaudeCodeTranscript:
    project = root / "proj"
    directory = root / ".claude" / "projects" / str(project).replace("/", "-")
    directory.mkdir(parents=True, exist_ok=True)
    session = ClaudeCodeTranscript(directory / f"{uuid.uuid4()}.jsonl", cwd=str(project))
    session.append(Typed("plan the work"), Reply("ok"))
    return session


def _codex(root: Path) -> CodexRollout:
    thread = str(uuid.uuid4())
    directory = root / ".codex" / "sessions" / "2026" / "12" / "02"
    directory.mkdir(parents=True, exist_ok=True)
    rollout = CodexRollout(directory / f"rollout-2026-12-02T01-00-00-{thread}.jsonl",
                           thread_id=thread, cwd=str(root / "proj"))
    rollout.append(Typed("an earlier prompt"), Reply("ok"))
    return rollout


def _hook(tool: str, session_id: str, root: Path, transcript: Path) -> str:
    raw = json.dumps({"session_id": session_id, "cwd": str(root / "proj"),
                      "hook_event_name": "UserPromptSubmit",
                      "transcript_path": str(transcript)}).encode()
    out, err = io.StringIO(), io.StringIO()
    assert hook_mod.main([tool, "--timeout", "0"], stdin=io.BytesIO(raw), stdout=out,
                         stderr=err) == 0
    assert err.getvalue() == ""
    return out.getvalue()


def _db(root: Path) -> Path:
    return root / "state" / "state.sqlite"


def test_a_worker_is_never_notified_and_a_person_typing_into_the_manager_tells_no_worker(
        home: Path) -> None:
    manager, worker = _claude(home), _codex(home)
    manager_key = f"agent:main:claude:{manager.session_id}"
    worker_key = f"agent:main:codex:{worker.thread_id}"
    run_manage(_db(home), manager_key, off=False, wake=True, out=io.StringIO())
    assert _hook("claude-code", manager.session_id, home, manager.path) == ""
    assert _hook("codex", worker.thread_id, home, worker.path) == ""
    manager.append(Typed("a person types into the manager"), Reply("ok"))
    assert _hook("codex", worker.thread_id, home, worker.path) == ""  # told nothing
    assert _hook("claude-code", manager.session_id, home, manager.path) == ""  # own turn
    conn = peek.open_peek(str(_db(home)))
    try:
        assert peek.watched_targets(conn, worker_key) == set()  # a worker watches nothing
        assert peek.watched_targets(conn, manager_key) == {worker_key}
        assert peek.role(conn, worker_key) == ("worker", False)
    finally:
        conn.close()
    worker.append(Typed("a person types into the worker"), Reply("ok"))
    assert worker_key in _hook("claude-code", manager.session_id, home, manager.path)


def test_manage_off_makes_a_worker_again_and_drops_its_watches(home: Path) -> None:
    manager, worker = _claude(home), _codex(home)
    manager_key = f"agent:main:claude:{manager.session_id}"
    out = io.StringIO()
    run_manage(_db(home), manager_key, off=False, wake=False, out=out)
    assert "is now a manager" in out.getvalue()
    assert "no wakes" in out.getvalue()
    _hook("claude-code", manager.session_id, home, manager.path)
    worker.append(Typed("typed while a manager"), Reply("ok"))
    out = io.StringIO()
    run_manage(_db(home), manager_key, off=True, wake=True, out=out)
    assert "is a worker again" in out.getvalue()
    assert _hook("claude-code", manager.session_id, home, manager.path) == ""
    with Gateway.open(_db(home), monitor=False) as gw:
        assert gw.role(manager_key) == ("worker", False)
        with gw.read_pool.connection() as conn:
            assert peek.watches(conn, manager_key) == []
        assert gw.pending_notices(manager_key) == []
        assert gw.set_role(manager_key, "worker") is False  # nothing changed
        assert gw.set_role(manager_key, "manager", wake=False) is True
        assert gw.set_role(manager_key, "manager", wake=False) is False
        assert gw.role(manager_key) == ("manager", False)
        with pytest.raises(InvalidArgument):
            gw.set_role(manager_key, "boss")


def test_without_a_signal_log_the_hook_makes_none(home: Path) -> None:
    worker = _codex(home)
    assert _hook("codex", worker.thread_id, home, worker.path) == ""
    assert not _db(home).exists()  # no manager anywhere: nothing to record


_RECORD = ("import sys; from pathlib import Path; from actors.agents import caller; "
           "caller.record_caller(Path(sys.argv[1]), sys.argv[2])")
_FIND = ("import sys; from pathlib import Path; from actors.agents import caller; "
         "print(caller.find_caller(Path(sys.argv[1])))")


def _via_shell(shell: str, code: str, *args: str) -> str:
    """Run ``python -c code`` through ``shell -c`` (as a tool runs hooks and commands)."""
    command = " ".join([sys.executable, "-c", repr(code), *args])
    done = subprocess.run([shell, "-c", command], capture_output=True, text=True,
                          timeout=SUBPROCESS_TIMEOUT_S, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    return done.stdout.strip()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_a_command_run_in_the_tool_finds_the_session_its_hook_recorded(tmp_path: Path) -> None:
    """The hook and a later command share the first non-shell ancestor: here, this process."""
    _via_shell("sh", _RECORD, str(tmp_path), "agent:main:claude:abc")
    record = json.loads((Path(caller.records_dir(tmp_path)) / f"{os.getpid()}.json").read_text())
    assert record["key"] == "agent:main:claude:abc"
    assert oct(Path(caller.records_dir(tmp_path)).stat().st_mode & 0o777) == "0o700"
    assert oct((Path(caller.records_dir(tmp_path)) / f"{os.getpid()}.json").stat().st_mode
               & 0o777) == "0o600"
    assert _via_shell("bash", _FIND, str(tmp_path)) == "agent:main:claude:abc"
    # A record of an earlier process that had the same pid does not match.
    path = Path(caller.records_dir(tmp_path)) / f"{os.getpid()}.json"
    path.write_text(json.dumps({"key": "agent:main:claude:old", "started": 1}))
    assert _via_shell("bash", _FIND, str(tmp_path)) == "None"


def test_manage_outside_a_session_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(SessionStateError, match="with --session KEY"):
        resolve_self(tmp_path / "state.sqlite", None)
    # ssa send names its own option (adversary: it said --session, which send refuses)
    with pytest.raises(SessionStateError, match="with --from KEY"):
        resolve_self(tmp_path / "state.sqlite", None, option="--from KEY")
    assert resolve_self(tmp_path / "state.sqlite", "agent:main:pi:x") == "agent:main:pi:x"


def test_the_manage_command_line(home: Path) -> None:
    env = {**os.environ, "HOME": str(home), "SSA_STATE_DIR": str(home / "state")}
    ssa = [sys.executable, "-m", "actors"]
    done = subprocess.run([*ssa, "manage"], capture_output=True, text=True, env=env,
                          timeout=SUBPROCESS_TIMEOUT_S, check=False)
    assert done.returncode == 1
    assert "--session KEY" in done.stderr
    done = subprocess.run([*ssa, "manage", "--session", "agent:main:codex:t1"],
                          capture_output=True, text=True, env=env,
                          timeout=SUBPROCESS_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr
    assert "agent:main:codex:t1 is now a manager" in done.stdout
    done = subprocess.run([*ssa, "manage", "--off", "--no-wake", "--session",
                           "agent:main:codex:t1"], capture_output=True, text=True, env=env,
                          timeout=SUBPROCESS_TIMEOUT_S, check=False)
    assert done.returncode == 1
    assert "--no-wake" in done.stderr


def test_manage_refuses_a_key_that_is_no_sessions_and_notes_an_unknown_one(home: Path) -> None:
    """Review finding: `ssa manage --session bogus` said "bogus is now a manager"."""
    with pytest.raises(InvalidArgument, match="not a coding-agent session's key"):
        run_manage(_db(home), "bogus", off=False, wake=True, out=io.StringIO())
    with pytest.raises(InvalidArgument):
        run_manage(_db(home), "agent:main:nosuchtool:x", off=False, wake=True,
                   out=io.StringIO())
    out, err = io.StringIO(), io.StringIO()
    assert run_manage(_db(home), "agent:main:claude:not-yet-seen", off=False, wake=True,
                      out=out, err=err) == 0
    assert "has not seen session agent:main:claude:not-yet-seen yet" in err.getvalue()


_TOOL = '''
import json, subprocess, sys
role, python, hook_input_path, child_input_path = sys.argv[1:5]
# As a tool runs its hook: through a shell, the hook input on stdin.
with open(hook_input_path, "rb") as stdin:
    subprocess.run(["sh", "-c", python + " -m actors hook claude-code"], stdin=stdin,
                   check=True, timeout=20)
if role == "manager":
    # Its agent runs another session from its shell tool (say, a tool's headless mode).
    subprocess.run(["bash", "-c", " ".join([python, sys.argv[0], "child", python,
                                            child_input_path, "-"])], check=True, timeout=40)
'''


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_a_session_a_manager_spawns_from_its_shell_tool_is_watched_from_its_start(
        home: Path) -> None:
    """A spawn edge: the child's hook finds the manager's record on its tool process's
    ancestors; the manager watches the child from state version 0, wherever it runs."""
    manager = _claude(home)
    elsewhere = home / "elsewhere"
    elsewhere.mkdir()
    directory = home / ".claude" / "projects" / str(elsewhere).replace("/", "-")
    directory.mkdir(parents=True)
    child = ClaudeCodeTranscript(directory / f"{uuid.uuid4()}.jsonl", cwd=str(elsewhere))
    child.append(Typed("the task the manager gave"), Reply("working"))
    manager_key = f"agent:main:claude:{manager.session_id}"
    child_key = f"agent:main:claude:{child.session_id}"
    run_manage(_db(home), manager_key, off=False, wake=True, out=io.StringIO())
    inputs = {}
    for name, session, cwd in (("manager", manager, home / "proj"),
                               ("child", child, elsewhere)):
        inputs[name] = home / f"{name}-input.json"
        inputs[name].write_text(json.dumps({
            "session_id": session.session_id, "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit", "transcript_path": str(session.path)}))
    script = home / "tool.py"
    script.write_text(_TOOL)
    env = {**os.environ, "HOME": str(home), "SSA_STATE_DIR": str(home / "state"),
           "PYTHONPATH": str(Path(__file__).parents[1])}
    subprocess.run([sys.executable, str(script), "manager", sys.executable,
                    str(inputs["manager"]), str(inputs["child"])], env=env, check=True,
                   timeout=SUBPROCESS_TIMEOUT_S)
    conn = peek.open_peek(str(_db(home)))
    try:
        assert child_key in peek.watched_targets(conn, manager_key)  # another project
        assert peek.role(conn, child_key) == ("worker", False)  # still a worker
        assert peek.watched_targets(conn, child_key) == set()
    finally:
        conn.close()
    child.append(Typed("a person typed into the spawned session"), Reply("ok"))
    assert child_key in _hook("claude-code", manager.session_id, home, manager.path)
